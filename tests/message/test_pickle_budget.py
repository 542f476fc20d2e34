"""The size budget of ObjectMessage unpickling (issue 17, item 6; catalog BODY-37, BODY-38):
pickle bombs that the allow-list lets through (no code runs, but little data builds much)
are refused with a MessageFormatException naming the limit, within the budget's memory
(tracemalloc's peak, not timing); ordinary objects, cycles and shared references still
load, and the budget can be raised or lowered per message."""

from __future__ import annotations

import pickle
import random
import tracemalloc
from collections.abc import Callable

import pytest

from ternmq.errors import MessageFormatException
from ternmq.message import ObjectMessage
from ternmq.message._pickle import DEFAULT_BUDGET, PickleBudget, loads
from ternmq.message.codec import decode_message, encode_message

_PEAK_LIMIT = 32 * 1024 * 1024  # far below what any bomb here would build


class _Call:
    """Pickles as ``func(*args)``: how an attacker writes a REDUCE of an allowed builtin."""

    def __init__(self, func: object, *args: object) -> None:
        self.func, self.args = func, args

    def __reduce__(self) -> tuple[object, ...]:
        return (self.func, self.args)


class Node:
    """A tree node pointing at its parent: a cycle per child (trusted via this module)."""

    def __init__(self, parent: Node | None = None) -> None:
        self.parent = parent
        self.children: list[Node] = []


def _nested(kind: Callable[[list[object]], object], levels: int, fan: int) -> bytes:
    x: object = "lol"
    for _ in range(levels):
        x = {str(i): x for i in range(fan)} if kind is dict else kind([x] * fan)
    return pickle.dumps(x, protocol=5)


def _deep_lists(depth: int) -> bytes:
    # PROTO 5, EMPTY_LIST * depth, APPEND * (depth - 1), STOP: pickle.dumps would recurse.
    return b"\x80\x05" + b"]" * depth + b"a" * (depth - 1) + b"."


def _memo_index(index: int) -> bytes:
    # PROTO 5, NONE, LONG_BINPUT index, STOP: the C unpickler sizes its memo to the index.
    return b"\x80\x05Nr" + index.to_bytes(4, "little") + b"."


BOMBS: dict[str, tuple[bytes, str]] = {
    "list(range(30_000_000))": (
        pickle.dumps(_Call(list, _Call(range, 30_000_000)), protocol=5),
        "max_objects",
    ),
    "tuple(range(10**18))": (pickle.dumps(_Call(tuple, range(10**18)), protocol=5), "max_objects"),
    "set(range(10**7))": (pickle.dumps(_Call(set, range(10**7)), protocol=5), "max_objects"),
    "bytes(10**10)": (pickle.dumps(_Call(bytes, 10**10), protocol=5), "max_bytes"),
    "bytearray(10**9)": (pickle.dumps(_Call(bytearray, 10**9), protocol=5), "max_bytes"),
    "nested lists, depth 100,000": (_deep_lists(100_000), "max_depth"),
    "billion laughs, lists": (_nested(list, 9, 10), "max_objects"),
    "billion laughs, tuples": (_nested(tuple, 9, 10), "max_objects"),
    "dict bomb": (_nested(dict, 9, 10), "max_objects"),
    "memo index 2**27": (_memo_index(2**27), "max_objects"),
}


@pytest.mark.parametrize("name", list(BOMBS))
def test_pickle_bomb_is_refused_within_budget(name: str) -> None:
    """Each bomb raises MessageFormatException naming the limit and how to raise it, while
    the process allocates far less than the bomb would build."""
    data, limit = BOMBS[name]
    assert len(data) < 250_000
    msg = decode_message(encode_message(ObjectMessage()))
    msg._payload = data
    tracemalloc.start()
    try:
        with pytest.raises(MessageFormatException) as info:
            _ = msg.object
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert limit in str(info.value) and "PickleBudget" in str(info.value)
    assert peak < _PEAK_LIMIT, f"{name}: {peak} bytes allocated"


def test_str_of_a_container_is_refused() -> None:
    """str() of a container is its repr, as large as the tree it expands to: refused."""
    data = pickle.dumps(_Call(str, [1, 2, 3]), protocol=5)
    with pytest.raises(MessageFormatException, match="str"):
        loads(data, None)


def test_ordinary_objects_round_trip_within_the_default_budget() -> None:
    """Real objects, builtins the allow-list calls, cycles and shared references load."""
    values: list[object] = [
        list(range(100_000)),
        {"k": [1.5, "x", b"y", None, True], "t": (1, 2), "s": {1, 2}, "f": frozenset({3})},
        bytearray(b"abc") * 1000,
        range(10**18),
        complex(1, 2),
        b"\x00" * (1 << 20),
    ]
    for value in values:
        for protocol in (3, 4, 5):
            assert loads(pickle.dumps(value, protocol=protocol), None) == value
    shared = ["s"] * 10
    assert loads(pickle.dumps([shared] * 1000, protocol=5), None) == [shared] * 1000
    cycle: list[object] = []
    cycle.append(cycle)
    got = loads(pickle.dumps(cycle), None)
    assert isinstance(got, list) and got[0] is got


def test_parent_pointers_are_cycles_not_amplification() -> None:
    """A tree of 2,000 children (and 6,000 grandchildren) pointing at their parents loads:
    a reference to an object still being built counts once."""
    root = Node()
    for _ in range(2000):
        child = Node(root)
        root.children.append(child)
        child.children += [Node(child) for _ in range(3)]
    got = loads(pickle.dumps(root, protocol=5), [__name__])
    assert isinstance(got, Node) and len(got.children) == 2000
    assert got.children[7].parent is got and got.children[7].children[2].parent is got.children[7]


def test_budget_is_configurable_per_message() -> None:
    """A smaller budget refuses what the default allows; a larger one allows more."""
    data = pickle.dumps(list(range(5000)), protocol=5)
    msg = decode_message(encode_message(ObjectMessage()))
    msg._payload = data
    assert msg._pickle_budget is DEFAULT_BUDGET
    assert msg.object == list(range(5000))
    msg._pickle_budget = PickleBudget(max_objects=1000)
    with pytest.raises(MessageFormatException, match="max_objects = 1,000"):
        _ = msg.object
    msg._pickle_budget = PickleBudget(max_bytes=10)
    with pytest.raises(MessageFormatException, match="max_bytes"):
        loads(pickle.dumps("x" * 11), None, PickleBudget(max_bytes=10))
    deep: object = []
    for _ in range(50):
        deep = [deep]
    with pytest.raises(MessageFormatException, match="max_depth"):
        loads(pickle.dumps(deep), None, PickleBudget(max_depth=20))
    assert loads(pickle.dumps(deep), None, PickleBudget(max_depth=60)) == deep
    big = pickle.dumps(_Call(list, range(2_000_000)), protocol=5)
    with pytest.raises(MessageFormatException, match="max_objects"):
        loads(big, None)
    assert loads(big, None, PickleBudget(max_objects=3_000_000)) == list(range(2_000_000))


def test_budget_rejects_limits_below_one() -> None:
    """A limit below 1 is a programming error: ValueError."""
    with pytest.raises(ValueError, match="max_depth"):
        PickleBudget(max_depth=0)


def test_every_protocol_and_damaged_pickles() -> None:
    """The opcode scan reads protocols 0 to 5 (text and binary memo opcodes alike); damaged
    pickles raise MessageFormatException and nothing else."""
    shared = [1, 2]
    values: list[object] = [
        [shared, shared, {"a": shared}],
        {"x": (1, 2.5, "s", None, True)},
        [[[]]],
        "x" * 300,
        10**40,
        (1,),
    ]
    for value in values:
        for protocol in range(6):
            assert loads(pickle.dumps(value, protocol=protocol), None) == value
    base = pickle.dumps(values, protocol=5)
    rng = random.Random(17)
    for _ in range(2000):
        damaged = bytearray(base)
        for _ in range(3):
            damaged[rng.randrange(len(damaged))] = rng.randrange(256)
        try:
            loads(bytes(damaged), None)
        except MessageFormatException:
            continue
