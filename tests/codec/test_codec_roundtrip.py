"""Round trips through the binary codec: every message class, header, property type and body
value arrives unchanged, in the received state.

Catalog items proved here for the codec leg of a transmission: HDR-02 (the complete header
arrives unchanged and re-typed nowhere), HDR-04 (delivery mode values kept on the wire),
HDR-07/HDR-09 (a None message ID and a zero timestamp survive as such), HDR-10/HDR-11
(correlation ID as str and as bytes), HDR-12 (reply-to, temporary destinations included),
PROP-01 and PROP-30 (property names, values and JMS types unchanged), PROP-03 (binary32
values, NaN, ±infinity, -0.0), PROP-15 (a null property still exists), BODY-02 (a message
keeps its class and a StreamMessage its field types), BODY-14 (any Unicode text, U+0000 and
astral characters included), BODY-15 (a BytesMessage's octets, so its byte order, are
unchanged), BODY-25 (empty vs null byte[] fields), BODY-38 (an object body travels as
opaque octets), BODY-05/BODY-06/PROP-07 (a decoded message is received: read-only, reset).
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ternmq.destination import Queue, TemporaryQueue, TemporaryTopic, Topic
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
    CodecLimitError,
    CodecLimits,
    decode_message,
    decode_message_view,
    encode_message,
)

from ._support import (
    ALL_CLASSES,
    LONG_MAX,
    LONG_MIN,
    all_slots,
    assert_received_state,
    content_differences,
    messages,
    same_value,
)


def roundtrip(msg: Message) -> Message:
    data = encode_message(msg)
    back = decode_message(data)
    assert type(back) is type(msg)
    return back


@settings(max_examples=300)
@given(messages())
def test_hdr_02_prop_01_body_02_every_message_round_trips_unchanged(msg: Message) -> None:
    """HDR-02, PROP-01, PROP-30, BODY-02: every content slot arrives identical (same Python
    types, floats bit for bit), in the received state (every slot as ``_freeze()`` leaves a
    copy of the sent message); decoding is repeatable (the specialised property decoder
    agrees with the generic one) and re-encoding the decoded message gives the same octets."""
    data = encode_message(msg)
    received = msg._copy()
    received._freeze()
    for _ in range(3):  # generic, then specialised property decoding
        back = decode_message(data)
        assert type(back) is type(msg)
        assert content_differences(msg, back) == []
        assert_received_state(back)
        # exactly what _freeze() leaves, state slots included
        assert [
            s
            for s in all_slots(type(msg))
            if not same_value(getattr(received, s), getattr(back, s))
        ] == []
        assert encode_message(back) == data


@given(messages())
def test_decoding_accepts_bytearray_and_memoryview(msg: Message) -> None:
    """The same octets as bytes, bytearray or memoryview decode to the same message."""
    data = encode_message(msg)
    for form in (bytearray(data), memoryview(data), memoryview(bytearray(data))):
        assert content_differences(msg, decode_message(form)) == []


@pytest.mark.parametrize("cls", ALL_CLASSES, ids=lambda c: c.__name__)
def test_every_slot_is_set_on_a_decoded_message(cls: type[Message]) -> None:
    """A slot added to the model later must be handled by the decoder: every ``__slots__``
    entry along the MRO is set, and the state slots hold the received state."""
    back = roundtrip(cls())
    missing = [slot for slot in all_slots(cls) if not hasattr(back, slot)]
    assert missing == []
    assert_received_state(back)


@pytest.mark.parametrize("cls", ALL_CLASSES, ids=lambda c: c.__name__)
def test_hdr_01_new_message_defaults_round_trip(cls: type[Message]) -> None:
    """HDR-01, HDR-07, HDR-09: the defaults of a new message (no ID, timestamp 0,
    PERSISTENT, priority 4) arrive as such; a None ID stays None, never ""."""
    back = roundtrip(cls())
    assert back.jms_message_id is None
    assert back.jms_timestamp == 0
    assert back.jms_delivery_mode == 2
    assert back.jms_priority == 4
    assert back.jms_correlation_id is None
    assert back.get_jms_correlation_id_as_bytes() is None
    assert back.jms_reply_to is None and back.jms_destination is None
    assert back.jms_redelivered is False and back.jms_type is None
    assert back.jms_expiration == 0 and back.jms_delivery_time == 0
    assert back.get_property_names() == set()


def test_hdr_10_hdr_11_correlation_id_str_and_bytes_stay_distinct() -> None:
    """HDR-10, HDR-11: a str correlation ID arrives as str, a bytes one as bytes (even when
    the octets are the UTF-8 of the same text)."""
    m = Message()
    m.jms_correlation_id = "abc"
    back = roundtrip(m)
    assert back._correlation_id == "abc" and back.jms_correlation_id == "abc"
    m.set_jms_correlation_id_as_bytes(b"abc")
    back = roundtrip(m)
    assert back._correlation_id == b"abc" and back.jms_correlation_id is None
    assert back.get_jms_correlation_id_as_bytes() == b"abc"
    m.set_jms_correlation_id_as_bytes(b"")
    assert roundtrip(m)._correlation_id == b""
    m.jms_correlation_id = ""
    assert roundtrip(m)._correlation_id == ""


@pytest.mark.parametrize(
    "dest",
    [Queue("q"), Topic("t/x"), TemporaryQueue("ID:abc-1"), TemporaryTopic("tt")],
    ids=str,
)
def test_hdr_03_hdr_12_destinations_keep_kind_and_name(dest: Queue) -> None:
    """HDR-03, HDR-12: reply-to and destination arrive equal, of the same class (temporary
    ones included, without their owner)."""
    m = TextMessage("x")
    m.jms_reply_to = dest
    m.jms_destination = dest
    back = roundtrip(m)
    for got in (back.jms_reply_to, back.jms_destination):
        assert got == dest and type(got) is type(dest) and str(got) == str(dest)
        assert getattr(got, "_owner", None) is None


def test_hdr_02_long_headers_at_their_edges() -> None:
    """HDR-02, HDR-15, HDR-19: the epoch-millisecond headers are Java longs, both edges."""
    m = Message()
    for value in (LONG_MIN, LONG_MAX, 0, -1):
        m.jms_timestamp = m.jms_expiration = m.jms_delivery_time = value
        back = roundtrip(m)
        assert (back.jms_timestamp, back.jms_expiration, back.jms_delivery_time) == (value,) * 3


@pytest.mark.parametrize(
    ("setter", "value", "tag"),
    [
        ("set_byte_property", -128, T.BYTE),
        ("set_byte_property", 127, T.BYTE),
        ("set_short_property", -32768, T.SHORT),
        ("set_short_property", 32767, T.SHORT),
        ("set_int_property", -(2**31), T.INT),
        ("set_int_property", 2**31 - 1, T.INT),
        ("set_long_property", LONG_MIN, T.LONG),
        ("set_long_property", LONG_MAX, T.LONG),
        ("set_float_property", 1.1, T.FLOAT),
        ("set_float_property", float("nan"), T.FLOAT),
        ("set_float_property", float("-inf"), T.FLOAT),
        ("set_float_property", -0.0, T.FLOAT),
        ("set_double_property", 1.1, T.DOUBLE),
        ("set_double_property", float("nan"), T.DOUBLE),
        ("set_double_property", -0.0, T.DOUBLE),
        ("set_double_property", 5e-324, T.DOUBLE),
        ("set_boolean_property", False, T.BOOLEAN),
        ("set_string_property", "", T.STRING),
        ("set_string_property", "a\x00\U0001f600", T.STRING),
        ("set_string_property", None, T.NULL),
    ],
)
def test_prop_01_prop_03_prop_15_typed_property_values(setter: str, value: object, tag: T) -> None:
    """PROP-01, PROP-03, PROP-15: each property keeps its JMS type and exact value; float
    vs double stays distinct (by tag); a null property still exists."""
    m = Message()
    getattr(m, setter)("p", value)
    stored = m._properties["p"]
    for _ in range(3):  # generic, then specialised decoding
        back = roundtrip(m)
        assert back._property_types == {"p": tag}
        assert same_value(back._properties["p"], stored)
        assert back.property_exists("p")
    if tag is T.FLOAT:
        assert back.get_property_type("p") == "float"


def test_prop_03_float_is_kept_apart_from_double() -> None:
    """PROP-03, PROP-08: float 1.1 arrives as float (readable as double 1.100000023841858),
    double 1.1 as double (not readable as float)."""
    m = Message()
    m.set_float_property("f", 1.1)
    m.set_double_property("d", 1.1)
    back = roundtrip(m)
    assert back.get_float_property("f") == 1.100000023841858
    assert back.get_double_property("d") == 1.1
    assert back._property_types == {"f": T.FLOAT, "d": T.DOUBLE}


@pytest.mark.parametrize("text", [None, "", "\x00", "héllo \U0001f600 \uffff", "x" * 70000])
def test_body_14_text_arrives_unchanged(text: str | None) -> None:
    """BODY-14: any Unicode text (U+0000, outside the BMP) arrives unchanged; empty text and
    no text (None) stay distinct."""
    back = roundtrip(TextMessage(text))
    assert isinstance(back, TextMessage)
    assert back.text == text and type(back.text) is type(text)


def test_body_15_bytes_body_octets_and_byte_order() -> None:
    """BODY-15, BODY-06: the octets written (big-endian, DataOutputStream form) arrive
    unchanged and the received body reads from its start."""
    m = BytesMessage()
    m.write_int(0x01020304)
    m.write_double(-0.0)
    m.write_utf("a\x00\U0001f600")
    m.write_float(float("nan"))
    back = roundtrip(m)
    assert isinstance(back, BytesMessage)
    assert bytes(back._buffer) == bytes(m._buffer)
    assert type(back._buffer) is bytearray
    assert back.body_length == len(m._buffer)
    assert back.read_int() == 0x01020304
    assert math.copysign(1.0, back.read_double()) == -1.0
    assert back.read_utf() == "a\x00\U0001f600"
    assert math.isnan(back.read_float())


def test_body_02_body_25_stream_field_types_and_null_vs_empty_bytes() -> None:
    """BODY-02, BODY-21, BODY-25: a StreamMessage keeps the type of every field; an empty
    byte[] field and a null one stay distinct; the received stream reads from its start."""
    m = StreamMessage()
    m.write_byte(-128)
    m.write_short(32767)
    m.write_char("\uffff")
    m.write_int(-(2**31))
    m.write_long(LONG_MAX)
    m.write_float(1.1)
    m.write_double(1.1)
    m.write_string("")
    m.write_string(None)
    m.write_bytes(b"")
    m.write_bytes(None)
    m.write_boolean(True)
    back = roundtrip(m)
    assert isinstance(back, StreamMessage)
    assert [t for t, _ in back._items] == [
        T.BYTE,
        T.SHORT,
        T.CHAR,
        T.INT,
        T.LONG,
        T.FLOAT,
        T.DOUBLE,
        T.STRING,
        T.NULL,
        T.BYTES,
        T.NULL,
        T.BOOLEAN,
    ]
    assert same_value(back._items, m._items)
    assert back.read_byte() == -128


def test_body_02_map_entries_keep_types() -> None:
    """BODY-02, BODY-30, BODY-33: MapMessage entries keep names, types and values, byte[]
    and null included."""
    m = MapMessage()
    m.set_bytes("b", b"\x00\xff")
    m.set_bytes("empty", b"")
    m.set_bytes("null", None)
    m.set_char("c", "\x00")
    m.set_float("f", float("inf"))
    m.set_short("s", -32768)
    m.set_string("a name with spaces and \U0001f600", "v")
    back = roundtrip(m)
    assert isinstance(back, MapMessage)
    assert same_value(back._map, m._map)
    assert back.get_bytes("b") == b"\x00\xff" and back.get_bytes("null") is None


def test_body_38_object_body_is_carried_opaque() -> None:
    """BODY-36, BODY-38: the pickled octets travel unchanged and are never unpickled by the
    codec (a payload that is not a pickle at all is carried too)."""
    m = ObjectMessage({"k": [1, 2.5]})
    back = roundtrip(m)
    assert isinstance(back, ObjectMessage)
    assert back._payload == m._payload and back.object == {"k": [1, 2.5]}
    m._payload = b"\x80\x05 not a pickle \xff"
    back = roundtrip(m)
    assert isinstance(back, ObjectMessage) and back._payload == b"\x80\x05 not a pickle \xff"
    empty = roundtrip(ObjectMessage())
    assert isinstance(empty, ObjectMessage) and empty._payload is None


@given(st.integers(0, 9), st.sampled_from([1, 2]), st.booleans())
def test_hdr_04_hdr_17_mode_priority_redelivered(
    priority: int, mode: int, redelivered: bool
) -> None:
    """HDR-04, HDR-13, HDR-17: delivery mode (1, 2), priority (0 … 9) and the redelivered
    flag arrive unchanged."""
    m = Message()
    m.jms_priority = priority
    m.jms_delivery_mode = mode
    m.jms_redelivered = redelivered
    back = roundtrip(m)
    assert (back.jms_priority, back.jms_delivery_mode, back.jms_redelivered) == (
        priority,
        mode,
        redelivered,
    )


def test_body_05_prop_07_decoded_message_is_read_only_and_writable_after_clear() -> None:
    """BODY-05, PROP-07, BODY-04: the decoded message behaves as a received one."""
    from ternmq.errors import MessageNotWriteableException

    m = TextMessage("x")
    m.set_int_property("n", 1)
    back = roundtrip(m)
    assert isinstance(back, TextMessage)
    with pytest.raises(MessageNotWriteableException):
        back.text = "y"
    with pytest.raises(MessageNotWriteableException):
        back.set_int_property("n", 2)
    back.clear_properties()
    back.set_int_property("n", 2)
    back.clear_body()
    back.text = "y"
    assert m._properties == {"n": 1}  # the sender's dicts are not shared


def test_decoded_messages_do_not_share_mutable_state() -> None:
    """Two messages decoded from the same octets (specialised path included) have their own
    property dicts and bodies."""
    m = MapMessage()
    m.set_int("a", 1)
    m.set_string_property("s", "v")
    data = encode_message(m)
    first, second, third = (decode_message(data) for _ in range(3))
    assert isinstance(first, MapMessage) and isinstance(third, MapMessage)
    third.clear_properties()
    third.clear_body()
    assert first._property_types == {"s": T.STRING} and first._map == {"a": (T.INT, 1)}
    assert second._properties is not first._properties
    assert second._property_types is not first._property_types


@pytest.mark.parametrize("size", [0, 5, 70_000])
def test_decode_message_view_shares_a_bytes_body(size: int) -> None:
    """decode_message_view gives a BytesMessage's body as a view of the encoded octets (no
    copy), the message's own body empty, and every header and property as decode_message."""
    msg = BytesMessage()
    msg.write_bytes(bytes(range(256)) * (size // 256) + b"x" * (size % 256))
    msg.set_string_property("p", "v")
    msg.jms_destination = Queue("q")
    data = encode_message(msg)
    plain = decode_message(data)
    seen, view = decode_message_view(data)
    assert view is not None and view.obj is data and view.readonly
    assert bytes(view) == bytes(plain._buffer)
    assert isinstance(seen, BytesMessage) and seen._buffer == bytearray()
    assert content_differences(plain, seen) == (["_buffer"] if size else [])
    assert_received_state(seen)


@pytest.mark.parametrize("cls", [TextMessage, MapMessage, Message, ObjectMessage, StreamMessage])
def test_decode_message_view_of_other_kinds_is_decode_message(cls: type[Message]) -> None:
    data = encode_message(cls())
    seen, view = decode_message_view(data)
    assert view is None
    assert type(seen) is cls and content_differences(decode_message(data), seen) == []


def test_decode_message_view_keeps_the_body_limit() -> None:
    msg = BytesMessage()
    msg.write_bytes(b"x" * 100)
    data = encode_message(msg)
    with pytest.raises(CodecLimitError, match="max_body_size"):
        decode_message_view(data, limits=CodecLimits(max_body_size=99))
