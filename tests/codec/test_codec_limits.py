"""Codec limits: documented defaults, validation, and an error naming the limit on both
ends (the encoder refuses to write what the decoder would refuse to read)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest

from ternmq.errors import MessageFormatException
from ternmq.message import (
    BytesMessage,
    MapMessage,
    Message,
    ObjectMessage,
    StreamMessage,
    TextMessage,
)
from ternmq.message.codec import (
    DEFAULT_LIMITS,
    CodecLimitError,
    CodecLimits,
    MessageDecodeError,
    decode_message,
    encode_message,
)


def test_default_limits_are_documented_values() -> None:
    """The defaults named in the CodecLimits docstring."""
    assert (
        CodecLimits(
            max_encoded_size=64 * 2**20,
            max_body_size=63 * 2**20,
            max_properties=1024,
            max_name_length=1024,
            max_map_entries=65536,
            max_stream_items=65536,
        )
        == DEFAULT_LIMITS
    )
    for field in dataclasses.fields(CodecLimits):
        assert field.name in (CodecLimits.__doc__ or "")


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "10", None])
def test_limits_must_be_positive_ints(bad: object) -> None:
    with pytest.raises(ValueError, match="max_properties"):
        CodecLimits(max_properties=bad)  # type: ignore[arg-type]


def test_limits_are_frozen_and_hashable() -> None:
    limits = CodecLimits(max_properties=3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        limits.max_properties = 4  # type: ignore[misc]
    assert hash(limits) == hash(CodecLimits(max_properties=3))


def test_limits_argument_must_be_codec_limits() -> None:
    with pytest.raises(TypeError, match="CodecLimits"):
        decode_message(encode_message(Message()), limits=object())  # type: ignore[arg-type]


def _text(n: int) -> Message:
    return TextMessage("é" * n)


def _bytes(n: int) -> Message:
    m = BytesMessage()
    m.write_bytes(b"\x00" * n)
    return m


def _object(n: int) -> Message:
    m = ObjectMessage()
    m._payload = b"\x80" * n
    return m


def _props(n: int) -> Message:
    m = Message()
    for i in range(n):
        m.set_int_property(f"p{i}", i)
    return m


def _prop_name(n: int) -> Message:
    m = Message()
    m.set_boolean_property("p" * n, True)
    return m


def _map_entries(n: int) -> Message:
    m = MapMessage()
    for i in range(n):
        m.set_int(str(i), i)
    return m


def _map_name(n: int) -> Message:
    m = MapMessage()
    m.set_string("k" * n, "v")
    return m


def _stream_items(n: int) -> Message:
    m = StreamMessage()
    for i in range(n):
        m.write_int(i)
    return m


CASES: list[tuple[str, Callable[[int], Message], int]] = [
    ("max_body_size", _text, 100),
    ("max_body_size", _bytes, 100),
    ("max_body_size", _object, 100),
    ("max_properties", _props, 5),
    ("max_name_length", _prop_name, 40),
    ("max_map_entries", _map_entries, 5),
    ("max_name_length", _map_name, 40),
    ("max_stream_items", _stream_items, 5),
    ("max_encoded_size", _text, 300),
]


@pytest.mark.parametrize(
    ("limit", "make", "bound"), CASES, ids=[f"{c[0]}-{c[1].__name__}" for c in CASES]
)
def test_each_limit_is_enforced_on_both_ends(
    limit: str, make: Callable[[int], Message], bound: int
) -> None:
    """At the bound a message passes both ends; one past it, encoding and decoding each
    raise CodecLimitError (a MessageFormatException) naming the limit."""
    limits = dataclasses.replace(DEFAULT_LIMITS, **{limit: bound})
    if limit == "max_encoded_size":
        n = 0
        while len(encode_message(make(n + 1))) <= bound:
            n += 1
        at, over = make(n), make(n + 1)
    else:
        at, over = make(bound), make(bound + 1)
    data = encode_message(at, limits=limits)
    assert len(data) <= limits.max_encoded_size
    for _ in range(3):  # generic and specialised property decoding
        assert type(decode_message(data, limits=limits)) is type(at)

    with pytest.raises(CodecLimitError) as caught:
        encode_message(over, limits=limits)
    assert caught.value.limit == limit and caught.value.maximum == bound
    assert limit in str(caught.value)
    assert isinstance(caught.value, MessageFormatException)

    data = encode_message(over)  # the default limits let it through
    for _ in range(3):
        with pytest.raises(CodecLimitError) as caught:
            decode_message(data, limits=limits)
        assert caught.value.limit == limit and caught.value.maximum == bound
        assert limit in str(caught.value)
        assert isinstance(caught.value, MessageDecodeError)


def test_a_limit_error_on_decode_does_not_depend_on_earlier_looser_decodes() -> None:
    """Specialised property decoders are kept per CodecLimits: what looser limits accepted
    (and specialised) is still refused under stricter ones."""
    m = _props(6)
    data = encode_message(m)
    for _ in range(3):
        decode_message(data)
    with pytest.raises(CodecLimitError) as caught:
        decode_message(data, limits=CodecLimits(max_properties=5))
    assert caught.value.limit == "max_properties"


def test_the_size_limit_is_checked_before_decoding() -> None:
    """An oversized input is refused from its length alone, whatever it holds."""
    with pytest.raises(CodecLimitError) as caught:
        decode_message(b"\x00" * 101, limits=CodecLimits(max_encoded_size=100))
    assert caught.value.limit == "max_encoded_size" and caught.value.value == 101


def test_huge_declared_lengths_are_refused_without_allocating() -> None:
    """A container header claiming 2**32-1 elements fails fast as truncated/limited input."""
    head = encode_message(StreamMessage())[:-1]
    for body in (b"\xdd\xff\xff\xff\xff", b"\xdf\xff\xff\xff\xff", b"\xc6\xff\xff\xff\xff"):
        with pytest.raises(MessageDecodeError):
            decode_message(head + body)
