"""Malformed input: whatever the octets, only the codec's MessageDecodeError (a
MessageFormatException) escapes ``decode_message``, never a msgspec or Python exception.

Random octets, mutated and truncated valid encodings (on the generic and on the specialised
property path), and hand-made encodings that are well-formed MessagePack but break one rule
of the format each. A message that does decode must be a valid model state: it re-encodes
and decodes to itself.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ternmq.errors import MessageFormatException
from ternmq.message import Message, StreamMessage, TextMessage
from ternmq.message._types import T
from ternmq.message.codec import (
    MessageCodecError,
    MessageDecodeError,
    decode_message,
    encode_message,
)

from ._support import content_differences, messages


def decode_or_error(data: bytes) -> Message | None:
    """Decode; a failure must be a MessageDecodeError. A success must be re-encodable."""
    try:
        msg = decode_message(data)
    except MessageDecodeError as exc:
        assert isinstance(exc, MessageFormatException)
        assert str(exc)
        return None
    again = decode_message(encode_message(msg))
    assert content_differences(msg, again) == []
    return msg


@settings(max_examples=300)
@given(st.binary(max_size=200))
def test_random_octets(data: bytes) -> None:
    decode_or_error(data)


@settings(max_examples=300)
@given(st.sampled_from("ntbmsoxT1"), st.binary(max_size=120))
def test_random_octets_after_a_valid_lead(letter: str, rest: bytes) -> None:
    decode_or_error(b"\x9f\xa4TQ1" + letter.encode() + rest)


@settings(max_examples=60)
@given(messages(), st.data())
def test_mutated_valid_encodings(msg: Message, data: st.DataObject) -> None:
    """Flip, insert, delete and overwrite octets of valid encodings, before and after the
    property decoder for that message was specialised."""
    good = encode_message(msg)
    for warm in range(3):
        if warm:
            decode_message(good)  # the second decode specialises
        for _ in range(10):
            buf = bytearray(good)
            for _ in range(data.draw(st.integers(1, 3))):
                i = data.draw(st.integers(0, len(buf) - 1))
                op = data.draw(st.sampled_from(["flip", "set", "insert", "delete"]))
                if op == "flip":
                    buf[i] ^= 1 << data.draw(st.integers(0, 7))
                elif op == "set":
                    buf[i] = data.draw(st.sampled_from([0x00, 0x7F, 0x80, 0xC0, 0xC1, 0xFF]))
                elif op == "insert":
                    buf.insert(i, data.draw(st.integers(0, 255)))
                elif len(buf) > 1:
                    del buf[i]
            decode_or_error(bytes(buf))


@given(messages())
def test_every_truncation_and_trailing_garbage(msg: Message) -> None:
    good = encode_message(msg)
    for end in range(len(good)):
        with pytest.raises(MessageDecodeError):
            decode_message(good[:end])
    with pytest.raises(MessageDecodeError):
        decode_message(good + b"\x00")


@pytest.mark.parametrize(
    "data",
    ["not bytes", 42, None, [1, 2], memoryview(b"\x00" * 8)[::2]],
    ids=["str", "int", "None", "list", "non-contiguous"],
)
def test_non_octet_input(data: Any) -> None:
    with pytest.raises(MessageDecodeError):
        decode_message(data)


# --------------------------------------------------------------------------- hand-made


def wire(letter: str = "t", **changes: Any) -> bytes:
    """A valid version-1 array (a TextMessage "x" unless changed), with elements replaced."""
    fields: dict[str, Any] = {
        "lead": f"TQ1{letter}",
        "message_id": "ID:1",
        "timestamp": 0,
        "correlation_id": None,
        "reply_to": None,
        "destination": "queue://q",
        "delivery_mode": 2,
        "redelivered": False,
        "type": None,
        "expiration": 0,
        "delivery_time": 0,
        "priority": 4,
        "properties": {},
        "types": {},
        "body": "x",
    }
    unknown = set(changes) - set(fields)
    assert not unknown, unknown
    fields.update(changes)
    return msgspec.msgpack.encode(list(fields.values()))


def props(**values: tuple[int, Any]) -> dict[str, Any]:
    """properties= and types= for wire() from name=(tag, value)."""
    return {
        "properties": {k: v for k, (_, v) in values.items()},
        "types": {k: t for k, (t, _) in values.items()},
    }


def test_wire_helper_builds_a_valid_message() -> None:
    back = decode_message(wire(**props(n=(5, 7))))
    assert isinstance(back, TextMessage) and back.text == "x"
    assert back._properties == {"n": 7} and back._property_types == {"n": T.INT}


MALFORMED: list[tuple[str, bytes, str]] = [
    ("correlation id of two bins", wire(correlation_id=[b"a", b"b"]), "correlation_id"),
    ("correlation id as int", wire(correlation_id=5), "correlation_id"),
    ("delivery mode 3", wire(delivery_mode=3), "delivery_mode"),
    ("delivery mode True", wire(delivery_mode=True), "delivery_mode"),
    ("priority 10", wire(priority=10), "priority"),
    ("priority -1", wire(priority=-1), "priority"),
    ("timestamp 2**63", wire(timestamp=2**63), "timestamp"),
    ("expiration as float", wire(expiration=1.0), "expiration"),
    ("redelivered as 1", wire(redelivered=1), "redelivered"),
    ("message id as bin", wire(message_id=b"ID:1"), "message_id"),
    ("reply-to without kind", wire(reply_to="q"), "reply_to"),
    ("reply-to with empty name", wire(reply_to="queue://"), "reply_to"),
    ("destination of unknown kind", wire(destination="file://x"), "destination"),
    ("destination with a space", wire(destination="topic://a b"), "destination"),
    ("text body as bin", wire(body=b"x"), "body"),
    ("bytes body as str", wire("b", body="x"), "body"),
    ("map body as array", wire("m", body=[]), "body"),
    ("stream body as map", wire("s", body={}), "body"),
    ("plain message with a body", wire("n", body="x"), "body"),
    ("object body as str", wire("o", body="x"), "body"),
    ("properties as array", wire(properties=[], types=[]), "properties"),
    ("property value as bin", wire(**props(b=(10, b"x"))), "propert"),
    ("property value as array", wire(**props(a=(9, ["x"]))), "propert"),
    ("property tag 11", wire(**props(a=(11, 1))), "propert"),
    ("property tag -1", wire(**props(a=(-1, 1))), "propert"),
    ("property of type CHAR", wire(**props(c=(4, "c"))), "CHAR"),
    ("property of type BYTES", wire(**props(c=(10, "c"))), "BYTES"),
    ("INT property out of range", wire(**props(i=(5, 2**31))), "range"),
    ("BYTE property out of range", wire(**props(i=(2, -129))), "range"),
    ("SHORT property out of range", wire(**props(i=(3, 32768))), "range"),
    ("LONG property out of range", wire(**props(i=(6, 2**63))), "propert"),
    ("BYTE property holding a bool", wire(**props(i=(2, True))), "bool"),
    ("BOOLEAN property holding 1", wire(**props(i=(1, 1))), "int"),
    ("STRING property holding 1", wire(**props(s=(9, 1))), "int"),
    ("NULL property holding a str", wire(**props(s=(0, "x"))), "str"),
    ("FLOAT property not binary32", wire(**props(f=(7, 0.1))), "binary32"),
    ("FLOAT property beyond binary32", wire(**props(f=(7, 1e300))), "binary32"),
    (
        "value without a type",
        wire(properties={"a": 1, "b": 2}, types={"a": 6}),
        "property 'b' has no type",
    ),
    ("type without a value", wire(properties={}, types={"a": 6}), "property 'a' has no value"),
    ("property name as int", wire(properties={1: 1}, types={1: 6}), "propert"),
    ("map value with bad tag", wire("m", body={"k": [11, 1]}), "body"),
    ("map value without value", wire("m", body={"k": [1]}), "body"),
    ("map value with extra element", wire("m", body={"k": [1, True, 3]}), "body"),
    ("map BYTE out of range", wire("m", body={"k": [2, 128]}), "body"),
    ("map CHAR of two characters", wire("m", body={"k": [4, "ab"]}), "body"),
    ("map CHAR outside the BMP", wire("m", body={"k": [4, "\U0001f600"]}), "body"),
    ("map CHAR empty", wire("m", body={"k": [4, ""]}), "body"),
    ("map FLOAT not binary32", wire("m", body={"k": [7, 0.1]}), "binary32"),
    ("map NULL holding 0", wire("m", body={"k": [0, 0]}), "body"),
    ("map BYTES holding nil", wire("m", body={"k": [10, None]}), "body"),
    ("map STRING holding nil", wire("m", body={"k": [9, None]}), "body"),
    ("stream INT out of range", wire("s", body=[[5, 2**31]]), "body"),
    ("stream value not an array", wire("s", body=[5]), "body"),
    ("stream FLOAT not binary32", wire("s", body=[[7, 1.1]]), "binary32"),
    ("stream LONG as bool", wire("s", body=[[6, False]]), "body"),
    ("invalid UTF-8 in a str", wire().replace(b"\xa4ID:1", b"\xa4\xed\xa0\x80!"), "message"),
    ("fifteen elements plus one", msgspec.msgpack.encode([*msgspec.msgpack.decode(wire()), 1]), ""),
]


@pytest.mark.parametrize(("case", "data", "words"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_encodings_raise_a_clear_decode_error(case: str, data: bytes, words: str) -> None:
    """Each breaks one rule; the error is a MessageDecodeError whose text points at it, on
    the generic property path and on the specialised one alike."""
    for _ in range(3):
        with pytest.raises(MessageDecodeError) as caught:
            decode_message(data)
        assert words.lower() in str(caught.value).lower(), str(caught.value)
        assert isinstance(caught.value, MessageFormatException)


def test_specialised_property_decoder_rejects_what_the_generic_one_rejects() -> None:
    """Once a property set is specialised, a value of the wrong type or range, a missing,
    extra or repeated name is still refused."""
    good = wire(**props(a=(5, 1), b=(9, "s")))
    for _ in range(3):
        decode_message(good)
    bad_cases = [
        wire(**props(a=(5, 2**31), b=(9, "s"))),
        wire(**props(a=(5, "1"), b=(9, "s"))),
        wire(properties={"a": 1}, types={"a": 5, "b": 9}),
        wire(properties={"a": 1, "b": "s", "c": 1}, types={"a": 5, "b": 9}),
        wire(properties={"a": 1, "c": "s"}, types={"a": 5, "b": 9}),
        msgspec.msgpack.encode(msgspec.msgpack.decode(good)).replace(b"\xa1b\xa1s", b"\xa1a\xa1s"),
    ]
    for data in bad_cases:
        with pytest.raises(MessageDecodeError):
            decode_message(data)


@pytest.mark.parametrize("tag", [7, 8])
def test_an_int_for_a_float_property_or_value_becomes_a_float(tag: int) -> None:
    """Documented leniency: an integer sent where a float or double is expected is read as
    the equal float (msgspec's rule), on both property paths and in bodies."""
    for _ in range(3):
        back = decode_message(wire(**props(f=(tag, 5))))
        assert back._properties == {"f": 5.0} and type(back._properties["f"]) is float
    stream = decode_message(wire("s", body=[[tag, 5]]))
    assert isinstance(stream, StreamMessage)
    assert stream._items == [(T(tag), 5.0)] and type(stream._items[0][1]) is float


# --------------------------------------------------------------------------- encoding


def test_encoding_refuses_what_cannot_be_carried() -> None:
    """A foreign reply-to object, an unpaired surrogate or a non-message raise
    MessageCodecError (a MessageFormatException), never a Python exception."""
    m = TextMessage("x")
    m._reply_to = "queue://x"  # type: ignore[assignment]
    with pytest.raises(MessageCodecError, match="reply_to"):
        encode_message(m)
    m = TextMessage("x")
    m._text = "\ud800"
    with pytest.raises(MessageCodecError):
        encode_message(m)
    m = TextMessage("x")
    m._properties["p"] = 1
    with pytest.raises(MessageCodecError, match="property types"):
        encode_message(m)
    m = TextMessage("x")
    m._timestamp = 2**64
    with pytest.raises(MessageCodecError):
        encode_message(m)
    with pytest.raises(MessageCodecError):
        encode_message("not a message")  # type: ignore[arg-type]


def test_fast_path_errors_read_like_the_generic_ones() -> None:
    """Once a property set has a specialised decoder (seen twice), a bad value in that set
    is still reported with the generic explanation: the text does not depend on the cache."""
    good = wire(**props(warm=(5, 7)))
    decode_message(good)
    decode_message(good)
    decode_message(good)  # now decoded by the specialised decoder
    with pytest.raises(MessageDecodeError) as caught:
        decode_message(wire(**props(warm=(5, 2**31))))
    assert "range" in str(caught.value).lower(), str(caught.value)
