"""MapMessage (catalog BODY-30 … BODY-35, vectors B-15 … B-18, B-22)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ternmq.errors import MessageFormatException, MessageNotWriteableException
from ternmq.message import MapMessage
from ternmq.message._types import T

SETTERS = [
    ("set_boolean", True),
    ("set_byte", 1),
    ("set_short", 1),
    ("set_char", "c"),
    ("set_int", 1),
    ("set_long", 1),
    ("set_float", 1.0),
    ("set_double", 1.0),
    ("set_string", "s"),
    ("set_bytes", b"b"),
    ("set_object", 1),
]


def test_body_34_vector_b15() -> None:
    """BODY-34, B-15."""
    m = MapMessage()
    m.set_int("n", 1)
    with pytest.raises(MessageFormatException):
        m.get_double("n")
    assert m.get_string("n") == "1"
    with pytest.raises(MessageFormatException):
        m.get_char("n")
    assert m.get_long("n") == 1


def test_body_32_absent_name_vector_b16() -> None:
    """BODY-32, BODY-31, B-16: an absent name reads as null."""
    m = MapMessage()
    with pytest.raises(ValueError):
        m.get_int("m")
    with pytest.raises(TypeError):
        m.get_char("m")
    with pytest.raises(TypeError):
        m.get_double("m")
    assert m.get_boolean("m") is False
    assert m.get_string("m") is None
    assert m.get_bytes("m") is None
    assert m.get_object("m") is None
    assert m.item_exists("m") is False


@pytest.mark.parametrize("setter, value", SETTERS)
@pytest.mark.parametrize("name", [None, ""])
def test_body_30_none_or_empty_name_vector_b17(setter: str, value: object, name: object) -> None:
    """BODY-30, B-17: every setter rejects None and "" with ValueError."""
    with pytest.raises(ValueError):
        getattr(MapMessage(), setter)(name, value)


def test_body_33_set_bytes_copies_vector_b18() -> None:
    """BODY-08, BODY-33, B-18: the stored bytes are a copy; getters return bytes."""
    m = MapMessage()
    buf = bytearray(b"ab")
    m.set_bytes("k", buf)
    buf[0] = 0
    assert m.get_bytes("k") == b"ab"
    assert isinstance(m.get_bytes("k"), bytes)
    assert m.get_object("k") == b"ab"
    m.set_bytes("s", b"abcdef", 1, 2)
    assert m.get_bytes("s") == b"bc"
    with pytest.raises(IndexError):
        m.set_bytes("s", b"abc", 2, 5)
    m.set_bytes("n", None)
    assert m.item_exists("n") and m.get_bytes("n") is None


def test_body_30_names_are_case_sensitive_and_replace() -> None:
    """BODY-30, BODY-31: case-sensitive names; setting a name again replaces value and
    type; get_map_names lists every name (null values too)."""
    m = MapMessage()
    m.set_int("a", 1)
    m.set_string("A", "x")
    m.set_string("n", None)
    assert m.get_map_names() == {"a", "A", "n"}
    m.set_string("a", "2")
    assert m._map["a"] == (T.STRING, "2")
    assert m.get_int("a") == 2
    assert m.item_exists("n") and m.item_exists("A") and not m.item_exists("N")
    names = m.get_map_names()
    names.clear()
    assert len(m.get_map_names()) == 3


def test_body_33_set_object_mapping() -> None:
    """BODY-33: set_object accepts what StreamMessage.write_object accepts."""
    m = MapMessage()
    for name, v, tag in [
        ("b", True, T.BOOLEAN),
        ("i", 1, T.LONG),
        ("f", 1.5, T.DOUBLE),
        ("s", "x", T.STRING),
        ("y", bytearray(b"q"), T.BYTES),
        ("n", None, T.NULL),
    ]:
        m.set_object(name, v)
        assert m._map[name][0] is tag
    for bad in ([1], object(), 2**63, {"a": 1}):
        with pytest.raises(MessageFormatException):
            m.set_object("z", bad)  # type: ignore[arg-type]
    assert not m.item_exists("z")
    assert m.get_object("y") == b"q" and type(m.get_object("y")) is bytes


def test_body_35_received_map_read_only_until_cleared() -> None:
    """BODY-35, BODY-05, BODY-04, BODY-07: readable always, read-only when received,
    empty and writable after clear_body."""
    m = MapMessage()
    m.set_int("a", 1)
    m._freeze()
    assert m.get_int("a") == 1
    for setter, value in SETTERS:
        with pytest.raises(MessageNotWriteableException):
            getattr(m, setter)("k", value)
    m.clear_body()
    assert m.get_map_names() == set()
    m.set_int("b", 2)
    assert m.get_int("b") == 2


def test_body_34_typed_setters_check_values() -> None:
    """BODY-34, §1.1: range and type checks as for properties."""
    m = MapMessage()
    with pytest.raises(ValueError):
        m.set_byte("k", 200)
    with pytest.raises(TypeError):
        m.set_int("k", True)
    with pytest.raises(ValueError):
        m.set_char("k", "ab")
    with pytest.raises(MessageFormatException):
        m.set_string("k", "\ud800")
    assert not m.item_exists("k")
    m.set_float("f", 1.1)
    assert m.get_double("f") == 1.100000023841858
    assert m.get_string("f") == "1.1"


VALUES = st.dictionaries(
    st.text(min_size=1, max_size=5),
    st.one_of(
        st.booleans(),
        st.integers(-(2**63), 2**63 - 1),
        st.floats(allow_nan=False),
        st.text(max_size=5),
        st.binary(max_size=5),
        st.none(),
    ),
    max_size=6,
)


@given(VALUES)
def test_body_39_get_body_dict_round_trip(values: dict[str, object]) -> None:
    """BODY-31, BODY-39, BODY-08: set_object for each entry, then get_body(dict) gives a new
    dict equal to the input (None when empty), and changing it leaves the message alone."""
    m = MapMessage()
    for k, v in values.items():
        m.set_object(k, v)  # type: ignore[arg-type]
    got = m.get_body(dict)
    if not values:
        assert got is None
        return
    assert got == values
    assert got is not None
    got.clear()
    assert m.get_map_names() == set(values)
