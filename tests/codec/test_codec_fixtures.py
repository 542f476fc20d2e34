"""Byte fixtures of format version 1: an accidental change of the encoding fails here.

The expected octets are written out by hand from the format described in the module
docstring of ``ternmq.message.codec``; they also pin the numbers of the type tags ``T``.
"""

from __future__ import annotations

import pytest

from ternmq.destination import Queue, TemporaryQueue
from ternmq.message import (
    BytesMessage,
    MapMessage,
    Message,
    ObjectMessage,
    StreamMessage,
    TextMessage,
)
from ternmq.message._types import T
from ternmq.message.codec import (
    FORMAT_VERSION,
    MAGIC,
    MessageDecodeError,
    decode_message,
    encode_message,
)

from ._support import content_differences

# The 14 header and property elements of a new message: message_id nil, timestamp 0,
# correlation_id nil, reply_to nil, destination nil, delivery_mode 2, redelivered false,
# type nil, expiration 0, delivery_time 0, priority 4, properties {}, property types {}.
DEFAULT_HEADERS = "c0 00 c0 c0 c0 02 c2 c0 00 00 04 80 80"


def test_version_and_magic_constants() -> None:
    """The leading octets: fixarray of 15, fixstr of 4, "TQ", version "1"."""
    assert FORMAT_VERSION == 1
    assert bytes.fromhex("9f a4 54 51") == MAGIC


@pytest.mark.parametrize(
    ("msg", "letter"),
    [
        (Message(), "n"),
        (TextMessage(), "t"),
        (BytesMessage(), "b"),
        (MapMessage(), "m"),
        (StreamMessage(), "s"),
        (ObjectMessage(), "o"),
    ],
    ids=lambda v: type(v).__name__ if not isinstance(v, str) else v,
)
def test_body_02_leading_octets_name_version_and_class(msg: Message, letter: str) -> None:
    """BODY-02: every encoding starts 9F A4 "TQ1" and the letter of its class."""
    data = encode_message(msg)
    assert data[:6] == bytes.fromhex("9f a4 54 51 31") + letter.encode()


FIXTURES: list[tuple[str, Message, str]] = []


def _fixture(name: str, msg: Message, octets: str) -> None:
    FIXTURES.append((name, msg, octets))


_fixture(
    "empty Message",
    Message(),
    f"9f a4 54 51 31 6e {DEFAULT_HEADERS} c0",
)

_text = TextMessage("hi")
_text.jms_message_id = "ID:1"
_text.jms_timestamp = 1_700_000_000_000
_text.set_jms_correlation_id_as_bytes(b"\x01\x02")
_text.jms_reply_to = TemporaryQueue("r")
_text.jms_destination = Queue("q")
_text.jms_delivery_mode = 1
_text.jms_redelivered = True
_text.jms_type = "t"
_text.jms_expiration = -1
_text.jms_delivery_time = 2**63 - 1
_text.jms_priority = 9
_text.set_int_property("n", -5)
_text.set_float_property("f", 1.5)
_text.set_string_property("z", None)
_fixture(
    "TextMessage with every header and three properties",
    _text,
    "9f a4 54 51 31 74"  # "TQ1t"
    " a4 49 44 3a 31"  # message_id "ID:1"
    " cf 00 00 01 8b cf e5 68 00"  # timestamp 1700000000000
    " 91 c4 02 01 02"  # correlation_id as bytes: [bin 01 02]
    " ae 74 65 6d 70 2d 71 75 65 75 65 3a 2f 2f 72"  # reply_to "temp-queue://r"
    " a9 71 75 65 75 65 3a 2f 2f 71"  # destination "queue://q"
    " 01 c3 a1 74"  # delivery_mode 1, redelivered true, type "t"
    " ff cf 7f ff ff ff ff ff ff ff 09"  # expiration -1, delivery_time 2**63-1, priority 9
    " 83 a1 6e fb a1 66 cb 3f f8 00 00 00 00 00 00 a1 7a c0"  # {n: -5, f: 1.5, z: nil}
    " 83 a1 6e 05 a1 66 07 a1 7a 00"  # {n: INT 5, f: FLOAT 7, z: NULL 0}
    " a2 68 69",  # body "hi"
)

_stream = StreamMessage()
_stream.write_byte(-1)
_stream.write_char("A")
_stream.write_bytes(b"\x00")
_stream.write_bytes(None)
_stream.write_double(-0.0)
_fixture(
    "StreamMessage",
    _stream,
    f"9f a4 54 51 31 73 {DEFAULT_HEADERS}"
    " 95 92 02 ff 92 04 a1 41 92 0a c4 01 00 92 00 c0"  # [BYTE -1] [CHAR "A"] [BYTES 00] [NULL]
    " 92 08 cb 80 00 00 00 00 00 00 00",  # [DOUBLE -0.0]
)

_map = MapMessage()
_map.set_short("s", 300)
_map.set_boolean("b", False)
_fixture(
    "MapMessage",
    _map,
    f"9f a4 54 51 31 6d {DEFAULT_HEADERS} 82 a1 73 92 03 cd 01 2c a1 62 92 01 c2",
)

_bytes = BytesMessage()
_bytes.write_short(-2)
_fixture(
    "BytesMessage (big-endian octets as written)",
    _bytes,
    f"9f a4 54 51 31 62 {DEFAULT_HEADERS} c4 02 ff fe",
)

_fixture("ObjectMessage without object", ObjectMessage(), f"9f a4 54 51 31 6f {DEFAULT_HEADERS} c0")


@pytest.mark.parametrize(("name", "msg", "octets"), FIXTURES, ids=[f[0] for f in FIXTURES])
def test_hdr_02_prop_01_body_15_format_v1_fixtures(name: str, msg: Message, octets: str) -> None:
    """HDR-02, PROP-01, BODY-15, BODY-21: the exact octets of version 1, both ways."""
    expected = bytes.fromhex(octets)
    assert encode_message(msg) == expected
    back = decode_message(expected)
    assert type(back) is type(msg)
    assert content_differences(msg, back) == []


def test_type_tag_numbers_are_pinned() -> None:
    """The numbers of T are part of the encoding (see the fixtures above)."""
    assert [(t.name, int(t)) for t in T] == [
        ("NULL", 0),
        ("BOOLEAN", 1),
        ("BYTE", 2),
        ("SHORT", 3),
        ("CHAR", 4),
        ("INT", 5),
        ("LONG", 6),
        ("FLOAT", 7),
        ("DOUBLE", 8),
        ("STRING", 9),
        ("BYTES", 10),
    ]


@pytest.mark.parametrize(
    ("octets", "words"),
    [
        ("9f a4 54 51 32 74", "unsupported message encoding version '2'"),
        ("9f a4 54 51 39 6e c0", "unsupported message encoding version '9'"),
        ("dc 00 10 a4 54 51 32 74", "unsupported message encoding version '2'"),
        ("dc 00 10 a4 54 51 31 74", "array of 15 elements"),
        ("9e a4 54 51 31 74", "array of 15 elements"),
        ("9f a4 54 51 31 78", "unknown body kind 'x'"),
        ("", "truncated"),
        ("9f a4 54", "truncated"),
        ("7b 7d", "not a ternmq message encoding"),
        ("9f a4 54 52 31 74", "not a ternmq message encoding"),
    ],
)
def test_unknown_versions_and_foreign_data_are_clear_errors(octets: str, words: str) -> None:
    """A future format version (or another layout) is recognised and reported as such."""
    with pytest.raises(MessageDecodeError, match=words):
        decode_message(bytes.fromhex(octets))
