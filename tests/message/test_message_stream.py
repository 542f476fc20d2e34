"""StreamMessage (catalog BODY-21 … BODY-29, vectors B-08 … B-14)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ternmq.errors import (
    MessageEOFException,
    MessageFormatException,
    MessageNotReadableException,
    MessageNotWriteableException,
)
from ternmq.message import StreamMessage
from ternmq.message._types import T


def stream(*calls: tuple[str, tuple[object, ...]]) -> StreamMessage:
    m = StreamMessage()
    for name, args in calls:
        getattr(m, name)(*args)
    m.reset()
    return m


def test_body_22_vector_b08() -> None:
    """BODY-22, BODY-23, BODY-27, B-08: String -> char unsupported; then long; then EOF."""
    m = stream(("write_string", ("123",)))
    with pytest.raises(MessageFormatException):
        m.read_char()
    assert m.read_long() == 123
    with pytest.raises(MessageEOFException):
        m.read_string()


def test_body_23_vector_b09() -> None:
    """BODY-22, BODY-23, B-09: ValueError does not advance."""
    m = stream(("write_string", ("abc",)))
    with pytest.raises(ValueError):
        m.read_int()
    assert m.read_string() == "abc"


def test_body_23_vector_b10() -> None:
    """BODY-22, BODY-23, B-10: no int -> double, no int -> short; long works."""
    m = stream(("write_int", (5,)))
    with pytest.raises(MessageFormatException):
        m.read_double()
    with pytest.raises(MessageFormatException):
        m.read_short()
    assert m.read_long() == 5


def test_body_24_vector_b11() -> None:
    """BODY-24, BODY-23, B-11: a null field."""
    m = stream(("write_string", (None,)))
    with pytest.raises(ValueError):
        m.read_int()
    with pytest.raises(TypeError):
        m.read_double()
    assert m.read_string() is None


def test_body_25_vector_b12() -> None:
    """BODY-25, BODY-27, B-12: byte[] in pieces; an exact fill ends with b''."""
    m = stream(("write_bytes", (b"abcd",)))
    assert m.read_bytes(2) == b"ab"
    assert m.read_bytes(2) == b"cd"
    assert m.read_bytes(2) == b""
    with pytest.raises(MessageEOFException):
        m.read_object()


def test_body_26_vector_b13() -> None:
    """BODY-26, B-13: another read inside a partly read byte[] field raises MFE."""
    m = stream(("write_bytes", (b"ab",)), ("write_int", (1,)))
    assert m.read_bytes(1) == b"a"
    for reader in (m.read_int, m.read_object, m.read_string, m.read_boolean):
        with pytest.raises(MessageFormatException):
            reader()
    assert m.read_bytes(5) == b"b"  # short return ends the field
    assert m.read_int() == 1


def test_body_25_vector_b14() -> None:
    """BODY-25, B-14: an empty field gives b'' at once; a null field gives None."""
    m = stream(("write_bytes", (b"",)), ("write_bytes", (None,)))
    assert m.read_bytes(4) == b""
    assert m.read_bytes(4) is None
    with pytest.raises(MessageEOFException):
        m.read_bytes(4)


def test_body_25_two_writes_make_two_fields_and_short_read_ends() -> None:
    """BODY-25: consecutive write_bytes are separate fields; a short return ends a field."""
    m = stream(("write_bytes", (b"abc",)), ("write_bytes", (b"de",)))
    assert m.read_bytes(10) == b"abc"
    assert m.read_bytes(10) == b"de"
    with pytest.raises(MessageEOFException):
        m.read_bytes(1)
    m.reset()
    assert m.read_bytes(0) == b""  # reads nothing, consumes nothing
    assert m.read_object() == b"abc"
    with pytest.raises(MessageFormatException):
        m.read_string()  # byte[] -> String is not supported
    with pytest.raises(ValueError):
        m.read_bytes(-1)


def test_body_26_read_object_on_unread_bytes_returns_whole_copy() -> None:
    """BODY-26, BODY-08: read_object on an unread byte[] gives the whole field as bytes."""
    buf = bytearray(b"xyz")
    m = StreamMessage()
    m.write_bytes(buf)
    buf[0] = 0
    m.reset()
    got = m.read_object()
    assert got == b"xyz" and isinstance(got, bytes)


def test_body_21_write_kinds_and_slices() -> None:
    """BODY-21: each write appends one typed field; slices; bad ranges raise IndexError."""
    m = StreamMessage()
    m.write_boolean(True)
    m.write_byte(-1)
    m.write_short(2)
    m.write_char("c")
    m.write_int(3)
    m.write_long(4)
    m.write_float(1.1)
    m.write_double(1.1)
    m.write_string("s")
    m.write_bytes(b"abcdef", 2, 2)
    m.write_object(None)
    m.write_string(None)
    with pytest.raises(IndexError):
        m.write_bytes(b"ab", 1, 5)
    assert [t for t, _ in m._items] == [
        T.BOOLEAN,
        T.BYTE,
        T.SHORT,
        T.CHAR,
        T.INT,
        T.LONG,
        T.FLOAT,
        T.DOUBLE,
        T.STRING,
        T.BYTES,
        T.NULL,
        T.NULL,
    ]
    m.reset()
    got = [m.read_object() for _ in range(12)]
    assert got == [True, -1, 2, "c", 3, 4, 1.100000023841858, 1.1, "s", b"cd", None, None]


def test_body_28_write_object_mapping() -> None:
    """BODY-28: bool/int/float/str/bytes-like/None mapped; one-char str is a String; others
    raise MFE; write_char needs one BMP character."""
    m = StreamMessage()
    for v in (True, 7, 2.5, "x", b"b", bytearray(b"c"), memoryview(b"d"), None):
        m.write_object(v)
    for bad in ([1], {"a": 1}, object(), 2**64, (1,)):
        with pytest.raises(MessageFormatException):
            m.write_object(bad)  # type: ignore[arg-type]
    for bad_char in ("", "ab", "\U0001f600"):
        with pytest.raises(ValueError):
            m.write_char(bad_char)
    with pytest.raises(TypeError):
        m.write_char(65)  # type: ignore[arg-type]
    assert [t for t, _ in m._items] == [
        T.BOOLEAN,
        T.LONG,
        T.DOUBLE,
        T.STRING,
        T.BYTES,
        T.BYTES,
        T.BYTES,
        T.NULL,
    ]
    m.reset()
    m.read_object()
    m.read_object()
    m.read_object()
    with pytest.raises(MessageFormatException):
        m.read_char()  # "x" was written as a String


def test_body_27_eof_after_last_field() -> None:
    """BODY-27: reading past the last field raises MessageEOFException every time."""
    m = stream(("write_int", (1,)))
    assert m.read_int() == 1
    for reader in (m.read_int, m.read_boolean, m.read_string, m.read_object, m.read_char):
        with pytest.raises(MessageEOFException):
            reader()


def test_body_06_stream_modes() -> None:
    """BODY-06, BODY-05: write-only until reset; read-only after; clear_body restarts."""
    m = StreamMessage()
    m.write_int(1)
    with pytest.raises(MessageNotReadableException):
        m.read_int()
    m.reset()
    with pytest.raises(MessageNotWriteableException):
        m.write_int(2)
    with pytest.raises(MessageNotWriteableException):
        m.write_bytes(b"x")
    with pytest.raises(MessageNotWriteableException):
        m.write_object(1)
    assert m.read_int() == 1
    m.reset()
    assert m.read_int() == 1
    m.clear_body()
    with pytest.raises(MessageNotReadableException):
        m.read_int()
    m.write_int(5)
    m.reset()
    assert m.read_int() == 5


def test_body_29_get_body_unavailable() -> None:
    """BODY-29, BODY-42: get_body raises and is_body_assignable_to is False, even empty."""
    for m in (StreamMessage(), stream(("write_int", (1,)))):
        with pytest.raises(MessageFormatException):
            m.get_body(object)
        assert m.is_body_assignable_to(object) is False


FIELD = st.one_of(
    st.tuples(st.just("write_boolean"), st.booleans()),
    st.tuples(st.just("write_byte"), st.integers(-128, 127)),
    st.tuples(st.just("write_short"), st.integers(-(2**15), 2**15 - 1)),
    st.tuples(st.just("write_int"), st.integers(-(2**31), 2**31 - 1)),
    st.tuples(st.just("write_long"), st.integers(-(2**63), 2**63 - 1)),
    st.tuples(st.just("write_float"), st.floats(width=32, allow_nan=False)),
    st.tuples(st.just("write_double"), st.floats(allow_nan=False)),
    st.tuples(st.just("write_char"), st.characters(max_codepoint=0xFFFF)),
    st.tuples(st.just("write_string"), st.none() | st.text(max_size=10)),
    st.tuples(st.just("write_bytes"), st.none() | st.binary(max_size=10)),
)
READERS = [
    "read_boolean",
    "read_byte",
    "read_short",
    "read_char",
    "read_int",
    "read_long",
    "read_float",
    "read_double",
    "read_string",
]


@given(st.lists(FIELD, min_size=1, max_size=6), st.lists(st.sampled_from(READERS), max_size=5))
def test_body_23_failed_reads_never_advance(
    fields: list[tuple[str, object]], attempts: list[str]
) -> None:
    """BODY-21, BODY-23: at every field, a typed read either succeeds and moves to the next
    field, or raises MessageFormatException/ValueError/TypeError and stays on this one."""
    m = StreamMessage()
    for writer, v in fields:
        getattr(m, writer)(v)
    for i, (_, v) in enumerate(fields):
        for reader in attempts:
            m.reset()
            for _ in range(i):
                m.read_object()
            try:
                getattr(m, reader)()
            except (MessageFormatException, ValueError, TypeError):
                assert m.read_object() == v
                continue
            if i + 1 < len(fields):
                assert m.read_object() == fields[i + 1][1]
            else:
                with pytest.raises(MessageEOFException):
                    m.read_object()
