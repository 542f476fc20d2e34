"""ObjectMessage and its restricted unpickler (catalog BODY-36 … BODY-38, vector B-28)."""

from __future__ import annotations

import collections
import datetime
import io
import pickle
import pickletools

import pytest

from ternmq.errors import MessageFormatException, MessageNotWriteableException
from ternmq.message import ObjectMessage


class Point:
    """A user class living in this test module (untrusted by default)."""

    def __init__(self, x: int, y: int) -> None:
        self.x, self.y = x, y

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Point) and (self.x, self.y) == (other.x, other.y)

    def __hash__(self) -> int:
        return hash((self.x, self.y))


class Evil:
    """Unpickling this would call os.system if the unpickler allowed it."""

    def __reduce__(self) -> tuple[object, ...]:
        import os

        return (os.system, ("echo pwned > /dev/null",))


def test_body_36_object_is_serialized_at_set_vector_b28() -> None:
    """BODY-36, B-28: later changes do not reach the message; each read is a new copy."""
    m = ObjectMessage()
    assert m.object is None
    obj = [1]
    m.object = obj
    obj.append(2)
    assert m.object == [1]
    assert m.object is not m.object
    first = m.object
    assert isinstance(first, list)
    first.append(3)
    assert m.object == [1]
    assert isinstance(m._payload, bytes)


def test_body_36_constructor_and_builtin_values() -> None:
    """BODY-36, BODY-38: builtin containers and scalars round-trip under the default
    allow-list (builtins only)."""
    value = {
        "a": [1, 2.5, "x", b"y", None, True],
        "s": {1, 2},
        "f": frozenset({3}),
        "t": (1, (2,)),
        "ba": bytearray(b"z"),
        "c": 1 + 2j,
        "r": range(3),
        "e": ValueError("boom"),
    }
    m = ObjectMessage(value)
    got = m.object
    assert isinstance(got, dict)
    assert {k: v for k, v in got.items() if k != "e"} == {
        k: v for k, v in value.items() if k != "e"
    }
    assert isinstance(got["e"], ValueError) and got["e"].args == ("boom",)


def test_body_37_unpicklable_value_raises_at_set() -> None:
    """BODY-37: a value that cannot be pickled raises MessageFormatException when set; the
    previous body stays."""
    m = ObjectMessage(5)
    with pytest.raises(MessageFormatException):
        m.object = lambda: None
    with pytest.raises(MessageFormatException):
        ObjectMessage(x for x in [1])
    assert m.object == 5


def test_body_38_untrusted_class_raises_on_read() -> None:
    """BODY-38: a class outside the allow-list raises MessageFormatException on read, the
    message is intact, and trusting its module makes it readable."""
    m = ObjectMessage(Point(1, 2))
    with pytest.raises(MessageFormatException):
        _ = m.object
    assert m.is_body_assignable_to(object) is False  # BODY-40
    with pytest.raises(MessageFormatException):
        m.get_body(Point)
    m._trusted_modules = frozenset({__name__})
    assert m.object == Point(1, 2)
    assert m.get_body(Point) == Point(1, 2)
    package = __name__.rpartition(".")[0]
    if package:  # a trusted package also trusts its submodules
        m._trusted_modules = frozenset({package})
        assert m.object == Point(1, 2)


def test_body_38_never_runs_untrusted_code() -> None:
    """BODY-38: a pickle that calls os.system is refused, even when its creator's module is
    trusted, and even if 'builtins' is listed."""
    data = pickle.dumps(Evil())
    assert b"system" in data
    m = ObjectMessage()
    m._payload = data
    for trusted in (None, frozenset({__name__}), frozenset({"builtins", __name__})):
        m._trusted_modules = trusted
        with pytest.raises(MessageFormatException):
            _ = m.object


@pytest.mark.parametrize(
    "module, name",
    [
        ("builtins", "eval"),
        ("builtins", "exec"),
        ("builtins", "getattr"),
        ("builtins", "__import__"),
        ("builtins", "open"),
        ("os", "system"),
        ("subprocess", "Popen"),
        (__name__, "pytest"),  # a module object reached through a trusted module
        (__name__, "pickle.loads"),  # dotted path to a function of another module
        (__name__, "Point.__init__.__globals__"),
    ],
)
def test_body_38_dangerous_globals_are_refused(module: str, name: str) -> None:
    """BODY-38: GLOBAL opcodes naming dangerous callables fail before anything runs."""
    payload = (  # PROTO 4, SHORT_BINUNICODE module, MEMOIZE, … name, MEMOIZE, STACK_GLOBAL, STOP
        b"\x80\x04"
        + b"\x8c"
        + bytes([len(module)])
        + module.encode()
        + b"\x94\x8c"
        + bytes([len(name)])
        + name.encode()
        + b"\x94\x93."
    )
    pickletools.dis(payload, out=io.StringIO())  # a well-formed pickle
    m = ObjectMessage()
    m._payload = payload
    m._trusted_modules = frozenset({__name__})
    with pytest.raises(MessageFormatException):
        _ = m.object


def test_body_38_trusted_stdlib_modules() -> None:
    """BODY-38: stdlib classes need their module on the allow-list."""
    value = {"when": datetime.date(2024, 1, 2), "od": collections.OrderedDict(a=1)}
    m = ObjectMessage(value)
    with pytest.raises(MessageFormatException):
        _ = m.object
    m._trusted_modules = frozenset({"datetime", "collections"})
    assert m.object == value


def test_body_38_foreign_body_is_opaque() -> None:
    """BODY-37, BODY-38: a body that is not a Python pickle (e.g. Java serialization)
    raises MessageFormatException on read but stays intact."""
    java = bytes.fromhex("ACED0005737200")
    m = ObjectMessage()
    m._payload = java
    m._freeze()
    with pytest.raises(MessageFormatException):
        _ = m.object
    assert m._payload == java
    assert m._copy()._payload == java


def test_body_05_received_object_read_only() -> None:
    """BODY-05, BODY-07, BODY-04: readable always; not writable until clear_body."""
    m = ObjectMessage([1])
    m._freeze()
    assert m.object == [1]
    with pytest.raises(MessageNotWriteableException):
        m.object = [2]
    m.clear_body()
    assert m.object is None
    m.object = [2]
    assert m.object == [2]
    m.object = None
    assert m._payload is None
