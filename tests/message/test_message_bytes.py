"""BytesMessage: DataOutputStream encodings, modes, positions (catalog BODY-15 … BODY-20,
vectors B-01 … B-07)."""

from __future__ import annotations

import math
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ternmq.errors import (
    JMSException,
    MessageEOFException,
    MessageFormatException,
    MessageNotReadableException,
    MessageNotWriteableException,
)
from ternmq.message import BytesMessage
from ternmq.message._datastream import decode_modified_utf8, encode_modified_utf8


def ref_modified_utf8(s: str) -> bytes:
    """Reference encoder written from the DataOutput.writeUTF javadoc: every UTF-16 code
    unit c on its own; 1 octet for U+0001..U+007F, 2 octets for U+0000 and U+0080..U+07FF,
    3 octets for U+0800..U+FFFF (surrogates included)."""
    units: list[int] = []
    for ch in s:
        cp = ord(ch)
        if cp > 0xFFFF:
            cp -= 0x10000
            units += [0xD800 | (cp >> 10), 0xDC00 | (cp & 0x3FF)]
        else:
            units.append(cp)
    out = bytearray()
    for c in units:
        if 0x0001 <= c <= 0x007F:
            out.append(c)
        elif c <= 0x07FF:
            out += bytes([0xC0 | (0x1F & (c >> 6)), 0x80 | (0x3F & c)])
        else:
            out += bytes([0xE0 | (0x0F & (c >> 12)), 0x80 | (0x3F & (c >> 6)), 0x80 | (0x3F & c)])
    return bytes(out)


def utf16_normalized(s: str) -> str:
    """What a Java String built from s's UTF-16 units reads back as in Python: adjacent
    high+low surrogates become one character."""
    return s.encode("utf-16-be", "surrogatepass").decode("utf-16-be", "surrogatepass")


def readable(m: BytesMessage) -> BytesMessage:
    m.reset()
    return m


def body(m: BytesMessage) -> bytes:
    m.reset()
    return m.read_bytes(m.body_length)


# ---------------------------------------------------------------- vectors


def test_body_06_new_body_is_write_only_vector_b01() -> None:
    """BODY-06, BODY-18, B-01: reads and body_length raise MessageNotReadableException."""
    m = BytesMessage()
    with pytest.raises(MessageNotReadableException):
        m.read_byte()
    with pytest.raises(MessageNotReadableException):
        _ = m.body_length
    with pytest.raises(MessageNotReadableException):
        m.read_bytes(1)
    m.write_byte(1)
    m.reset()
    assert m.body_length == 1
    with pytest.raises(MessageNotWriteableException):
        m.write_byte(2)
    m.reset()  # on a read-only body reset just rewinds
    assert m.read_byte() == 1


def test_body_17_read_bytes_vector_b02() -> None:
    """BODY-15, BODY-17, B-02."""
    m = BytesMessage()
    m.write_int(1)
    m.reset()
    assert m.read_bytes(8) == b"\x00\x00\x00\x01"
    assert m.read_bytes(8) == b""
    with pytest.raises(ValueError):
        m.read_bytes(-1)


def test_body_15_write_utf_vector_b03() -> None:
    """BODY-15, B-03: modified UTF-8 for NUL and an astral character."""
    m = BytesMessage()
    m.write_utf("a\x00\U0001f600")
    assert body(m) == bytes.fromhex("0009 61 C080 EDA0BD EDB880")
    m.reset()
    assert m.read_utf() == "a\x00\U0001f600"


def test_body_15_mixed_encodings_vector_b04() -> None:
    """BODY-15, B-04."""
    m = BytesMessage()
    m.write_float(1.1)
    m.write_boolean(True)
    m.write_char("A")
    m.write_double(1.0)
    m.write_short(-2)
    assert body(m) == bytes.fromhex("3F8CCCCD 01 0041 3FF0000000000000 FFFE")


def test_body_15_read_boolean_non_zero_vector_b05() -> None:
    """BODY-15, B-05: any non-zero octet reads as True."""
    m = BytesMessage()
    m.write_byte(2)
    m.write_byte(0)
    m.write_byte(-1)
    m.reset()
    assert [m.read_boolean(), m.read_boolean(), m.read_boolean()] == [True, False, True]


def test_body_16_eof_leaves_position_vector_b06() -> None:
    """BODY-16, A-41, B-06: MessageEOFException and the position unchanged."""
    m = BytesMessage()
    m.write_bytes(b"abc")
    m.reset()
    with pytest.raises(MessageEOFException):
        m.read_int()
    for reader in (m.read_long, m.read_double, m.read_float):
        with pytest.raises(MessageEOFException):
            reader()
    assert m.read_bytes(10) == b"abc"
    for reader in (m.read_byte, m.read_boolean, m.read_unsigned_byte, m.read_char, m.read_utf):
        with pytest.raises(MessageEOFException):
            reader()


def test_body_19_write_object_vector_b07() -> None:
    """BODY-19, BODY-20, B-07: None -> TypeError; unsupported -> MessageFormatException."""
    m = BytesMessage()
    with pytest.raises(TypeError):
        m.write_object(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        m.write_bytes(None)  # type: ignore[arg-type]
    with pytest.raises(MessageFormatException):
        m.write_object([1])  # type: ignore[arg-type]
    with pytest.raises(MessageFormatException):
        m.write_object(2**63)
    m.reset()
    assert m.body_length == 0  # nothing was written by the failed calls


# ---------------------------------------------------------------- encodings


def test_body_19_write_object_by_python_type() -> None:
    """BODY-19: bool -> boolean, int -> long (8 octets), float -> double, str -> UTF,
    bytes-like -> raw octets."""
    m = BytesMessage()
    m.write_object(True)
    m.write_object(1)
    m.write_object(1.0)
    m.write_object("hi")
    m.write_object(b"\x01")
    m.write_object(bytearray(b"\x02"))
    m.write_object(memoryview(b"\x03"))
    assert body(m) == (
        b"\x01" + (1).to_bytes(8, "big") + struct.pack(">d", 1.0) + b"\x00\x02hi\x01\x02\x03"
    )


def test_body_15_unsigned_reads_and_nan_canonical() -> None:
    """BODY-15: unsigned forms; NaN written canonically; a float is written as binary32."""
    m = BytesMessage()
    m.write_byte(-1)
    m.write_short(-1)
    m.write_float(math.nan)
    m.write_double(-math.nan)
    m.write_float(struct.unpack(">f", b"\x7f\xc0\x00\x01")[0])  # a NaN with a payload
    m.reset()
    assert m.read_unsigned_byte() == 255
    assert m.read_unsigned_short() == 65535
    assert m.read_bytes(4) == bytes.fromhex("7FC00000")
    assert m.read_bytes(8) == bytes.fromhex("7FF8000000000000")
    assert m.read_bytes(4) == bytes.fromhex("7FC00000")


def test_body_15_write_checks_arguments() -> None:
    """BODY-15, §1.1: typed writes check type and range; nothing is appended on failure."""
    m = BytesMessage()
    with pytest.raises(ValueError):
        m.write_byte(128)
    with pytest.raises(ValueError):
        m.write_short(-32769)
    with pytest.raises(ValueError):
        m.write_int(2**31)
    with pytest.raises(TypeError):
        m.write_long(True)
    with pytest.raises(TypeError):
        m.write_boolean(1)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        m.write_char("ab")
    with pytest.raises(ValueError):
        m.write_char("\U0001f600")
    with pytest.raises(ValueError):
        m.write_float(1e39)
    with pytest.raises(TypeError):
        m.write_utf(None)  # type: ignore[arg-type]
    m.reset()
    assert m.body_length == 0


def test_body_20_write_bytes_ranges() -> None:
    """BODY-20: offset/length select a slice; outside the data -> IndexError."""
    m = BytesMessage()
    m.write_bytes(b"abcdef", 1, 3)
    m.write_bytes(b"xyz", 2)
    m.write_bytes(b"", 0, 0)
    for offset, length in [(-1, 1), (0, 7), (4, 3), (7, None), (0, -1)]:
        with pytest.raises(IndexError):
            m.write_bytes(b"abcdef", offset, length)
    assert body(m) == b"bcdz"


def test_body_20_utf_length_limit() -> None:
    """BODY-20, A-40: 65535 encoded octets are fine, 65536 raise MessageFormatException."""
    m = BytesMessage()
    m.write_utf("a" * 65535)
    with pytest.raises(MessageFormatException):
        m.write_utf("a" * 65536)
    with pytest.raises(MessageFormatException):
        m.write_utf("\x00" * 32768)  # 2 octets each
    m.reset()
    assert m.body_length == 2 + 65535
    assert m.read_utf() == "a" * 65535


@pytest.mark.parametrize(
    "data",
    [
        b"\x00\x01\x80",  # lone continuation octet
        b"\x00\x02\xc3\x28",  # bad continuation
        b"\x00\x01\xc3",  # truncated 2-octet form
        b"\x00\x02\xe2\x82",  # truncated 3-octet form
        b"\x00\x04\xf0\x9f\x98\x80",  # 4-octet UTF-8 is not modified UTF-8
        b"\x00\x01\xff",
    ],
)
def test_body_20_malformed_utf_leaves_position(data: bytes) -> None:
    """BODY-20: read_utf of malformed data raises MessageFormatException, position kept."""
    m = BytesMessage()
    m.write_bytes(data)
    m.reset()
    with pytest.raises(MessageFormatException):
        m.read_utf()
    assert m.read_bytes(100) == data


def test_body_16_utf_longer_than_body_is_eof() -> None:
    """BODY-16: a UTF length beyond the body raises MessageEOFException, position kept."""
    m = BytesMessage()
    m.write_bytes(b"\x00\x05abc")
    m.reset()
    with pytest.raises(MessageEOFException):
        m.read_utf()
    assert m.read_short() == 5


def test_body_18_body_length_ignores_position() -> None:
    """BODY-18: total octets whatever the read position."""
    m = BytesMessage()
    m.write_long(1)
    m.reset()
    m.read_int()
    assert m.body_length == 8
    m.read_int()
    assert m.body_length == 8


def test_body_15_modified_utf8_of_the_whole_bmp_against_reference() -> None:
    """BODY-15: every BMP code point (U+0000 and lone surrogates included) encodes as the
    reference encoder does, and decodes back."""
    text = "".join(chr(c) for c in range(0x10000))
    encoded = encode_modified_utf8(text)
    assert encoded == ref_modified_utf8(text)
    assert b"\x00" not in encoded
    assert decode_modified_utf8(encoded) == utf16_normalized(text)


@given(
    st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=()))
)
def test_body_15_modified_utf8_hypothesis(s: str) -> None:
    """BODY-15: any string, astral characters and surrogates included, encodes like the
    reference and reads back (as the UTF-16 units Java would hold)."""
    assert encode_modified_utf8(s) == ref_modified_utf8(s)
    m = BytesMessage()
    m.write_utf(s)
    m.reset()
    assert m.read_unsigned_short() == len(ref_modified_utf8(s))
    m.reset()
    assert m.read_utf() == utf16_normalized(s)
    assert m.read_bytes(1) == b""


def test_body_15_java_decoder_accepts_overlong_forms() -> None:
    """BODY-15: readUTF decodes like Java's DataInputStream (raw NUL and overlong forms are
    accepted)."""
    assert decode_modified_utf8(b"\x00") == "\x00"
    assert decode_modified_utf8(b"\xc1\x81") == "A"
    assert decode_modified_utf8(b"\xe0\x80\x80") == "\x00"


VALUE = st.one_of(
    st.tuples(st.just("boolean"), st.booleans()),
    st.tuples(st.just("byte"), st.integers(-128, 127)),
    st.tuples(st.just("short"), st.integers(-(2**15), 2**15 - 1)),
    st.tuples(st.just("int"), st.integers(-(2**31), 2**31 - 1)),
    st.tuples(st.just("long"), st.integers(-(2**63), 2**63 - 1)),
    st.tuples(st.just("float"), st.floats(width=32, allow_nan=False)),
    st.tuples(st.just("double"), st.floats(allow_nan=False)),
    st.tuples(st.just("char"), st.characters(max_codepoint=0xFFFF, exclude_categories=())),
    st.tuples(st.just("utf"), st.text(max_size=20)),
    st.tuples(st.just("unsigned_byte"), st.integers(0, 255)),
    st.tuples(st.just("unsigned_short"), st.integers(0, 65535)),
)
STRUCT = {"byte": ">b", "short": ">h", "int": ">i", "long": ">q", "float": ">f", "double": ">d"}


@given(st.lists(VALUE, max_size=12))
def test_body_15_write_reset_read_round_trip(values: list[tuple[str, object]]) -> None:
    """BODY-15: write_* then reset then read_* returns every value, with the octets of
    Java's DataOutputStream (checked against struct)."""
    m = BytesMessage()
    expected = bytearray()
    for kind, v in values:
        if kind == "unsigned_byte":
            m.write_byte(v - 256 if v > 127 else v)  # type: ignore[operator]
            expected += bytes([v])  # type: ignore[list-item]
        elif kind == "unsigned_short":
            m.write_short(v - 65536 if v > 32767 else v)  # type: ignore[operator]
            expected += v.to_bytes(2, "big")  # type: ignore[attr-defined]
        else:
            getattr(m, f"write_{kind}")(v)
            if kind == "boolean":
                expected += b"\x01" if v else b"\x00"
            elif kind == "char":
                expected += ord(v).to_bytes(2, "big")  # type: ignore[arg-type]
            elif kind == "utf":
                enc = ref_modified_utf8(v)  # type: ignore[arg-type]
                expected += len(enc).to_bytes(2, "big") + enc
            else:
                expected += struct.pack(STRUCT[kind], v)
    m.reset()
    assert m.body_length == len(expected)
    for kind, v in values:
        assert getattr(m, f"read_{kind}")() == v
    assert m.read_bytes(1) == b""
    assert body(m) == bytes(expected)


def test_body_17_read_bytes_n_is_an_int() -> None:
    """BODY-17: n < 0 raises ValueError (not a JMSException)."""
    m = readable(BytesMessage())
    with pytest.raises(ValueError) as info:
        m.read_bytes(-5)
    assert not isinstance(info.value, JMSException)
    assert m.read_bytes(0) == b""


def test_body_08_write_copies_the_argument() -> None:
    """BODY-08: a bytearray changed after write_bytes does not change the body."""
    buf = bytearray(b"abc")
    m = BytesMessage()
    m.write_bytes(buf)
    buf[0] = 0x7A
    got = body(m)
    assert got == b"abc" and isinstance(got, bytes)
