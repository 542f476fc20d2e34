"""Header fields of every message type (catalog HDR).

Requirements that need a broker are proven here only for their message-level part (the field
exists, has the right type and default, is writable on a received message); the broker and
client suites complete them.
"""

from __future__ import annotations

import pytest

from ternmq.destination import Queue, TemporaryQueue, Topic
from ternmq.errors import IllegalStateException, MessageFormatException
from ternmq.message import (
    BytesMessage,
    DeliveryMode,
    MapMessage,
    Message,
    ObjectMessage,
    StreamMessage,
    TextMessage,
)
from ternmq.message._types import T

ALL_TYPES = [Message, TextMessage, BytesMessage, MapMessage, StreamMessage, ObjectMessage]

DEFAULTS = {
    "jms_destination": None,
    "jms_delivery_mode": 2,
    "jms_message_id": None,
    "jms_timestamp": 0,
    "jms_correlation_id": None,
    "jms_reply_to": None,
    "jms_redelivered": False,
    "jms_type": None,
    "jms_expiration": 0,
    "jms_priority": 4,
    "jms_delivery_time": 0,
}


@pytest.mark.parametrize("cls", ALL_TYPES)
def test_hdr_01_every_type_has_the_eleven_fields_with_defaults(cls: type[Message]) -> None:
    """HDR-01: the eleven header fields, their Python types and new-message values."""
    m = cls()
    for name, value in DEFAULTS.items():
        got = getattr(m, name)
        assert got == value, name
        assert type(got) is type(value), name
    assert len(DEFAULTS) == 11


def test_constants() -> None:
    """HDR-04, HDR-17: Java's numeric constants."""
    assert DeliveryMode.NON_PERSISTENT == 1
    assert DeliveryMode.PERSISTENT == 2
    assert Message.DEFAULT_PRIORITY == 4
    assert Message.DEFAULT_TIME_TO_LIVE == 0
    assert Message.DEFAULT_DELIVERY_DELAY == 0
    assert TextMessage.DEFAULT_PRIORITY == 4


def test_body_type_names() -> None:
    """BODY-01: the six classes and their short body names."""
    assert [c.body_type for c in ALL_TYPES] == [
        "message",
        "text",
        "bytes",
        "map",
        "stream",
        "object",
    ]
    for cls in ALL_TYPES[1:]:
        assert issubclass(cls, Message)


@pytest.mark.parametrize("cls", ALL_TYPES)
def test_hdr_25_headers_stay_writable_on_a_received_message(cls: type[Message]) -> None:
    """HDR-25, HDR-20: every header setter works on a received (frozen) message; the
    provider-assigned setters are public (HDR-03, HDR-04, HDR-05, HDR-08, HDR-13, HDR-15,
    HDR-17, HDR-19, HDR-21)."""
    m = cls()
    m._freeze()
    q = Queue("q")
    t = Topic("t")
    m.jms_destination = q
    m.jms_delivery_mode = DeliveryMode.NON_PERSISTENT
    m.jms_message_id = "ID:abc"
    m.jms_timestamp = 1700000000000
    m.jms_correlation_id = "c"
    m.jms_reply_to = t
    m.jms_redelivered = True
    m.jms_type = "kind"
    m.jms_expiration = 1700000001000
    m.jms_priority = 9
    m.jms_delivery_time = 1700000000500
    assert m.jms_destination == q
    assert m.jms_delivery_mode == 1 and type(m.jms_delivery_mode) is int
    assert m.jms_message_id == "ID:abc"
    assert m.jms_timestamp == 1700000000000
    assert m.jms_correlation_id == "c"
    assert m.jms_reply_to == t
    assert m.jms_redelivered is True
    assert m.jms_type == "kind"
    assert m.jms_expiration == 1700000001000
    assert m.jms_priority == 9
    assert m.jms_delivery_time == 1700000000500
    # the internal contract the codec relies on
    assert m._destination is q and m._priority == 9 and m._delivery_mode == 1
    assert m._correlation_id == "c" and m._type == "kind"


def test_hdr_setters_check_types_and_ranges() -> None:
    """HDR-04, HDR-17, HDR-09: header setters reject wrong types and impossible values."""
    m = Message()
    with pytest.raises(ValueError):
        m.jms_priority = 10
    with pytest.raises(ValueError):
        m.jms_priority = -1
    with pytest.raises(TypeError):
        m.jms_priority = True  # type: ignore[assignment]
    with pytest.raises(ValueError):
        m.jms_delivery_mode = 3
    with pytest.raises(TypeError):
        m.jms_timestamp = None  # type: ignore[assignment]
    with pytest.raises(TypeError):
        m.jms_timestamp = 1.5  # type: ignore[assignment]
    with pytest.raises(ValueError):
        m.jms_expiration = 2**63
    with pytest.raises(TypeError):
        m.jms_redelivered = 1  # type: ignore[assignment]
    with pytest.raises(TypeError):
        m.jms_reply_to = "queue://q"  # type: ignore[assignment]
    with pytest.raises(TypeError):
        m.jms_message_id = 5  # type: ignore[assignment]
    m.jms_timestamp = 0  # HDR-09: zero (never None) when timestamps are disabled
    assert m.jms_timestamp == 0
    m.jms_message_id = None  # HDR-07: None when IDs are disabled
    assert m.jms_message_id is None


def test_hdr_05_message_id_keeps_the_id_prefix() -> None:
    """HDR-05, HDR-06: the field holds the provider's "ID:" string unchanged (assignment by
    the send is proven by the broker suite)."""
    m = TextMessage("x")
    m.jms_message_id = "ID:broker-1:42"
    assert m.jms_message_id == "ID:broker-1:42"
    assert m._message_id == "ID:broker-1:42"


def test_hdr_10_correlation_id_any_string_unchanged() -> None:
    """HDR-10, HDR-22: any str (also "ID:…") or None, carried without rewriting."""
    m = Message()
    for value in ["", "ID:not-a-real-id", "order 17", "ünïcødé \U0001f600", None]:
        m.jms_correlation_id = value
        assert m.jms_correlation_id == value
    with pytest.raises(MessageFormatException):
        m.jms_correlation_id = "bad \ud800"


def test_hdr_11_correlation_id_bytes_and_string_are_one_field() -> None:
    """HDR-11 (A-26): bytes form is copied in and out; setting either form replaces the
    other; the string view is None while bytes are held, the bytes view of a string is its
    UTF-8."""
    m = Message()
    assert m.get_jms_correlation_id_as_bytes() is None
    buf = bytearray(b"\x01\x02")
    m.set_jms_correlation_id_as_bytes(buf)
    buf[0] = 9
    got = m.get_jms_correlation_id_as_bytes()
    assert got == b"\x01\x02" and isinstance(got, bytes)
    assert m.jms_correlation_id is None
    assert m._correlation_id == b"\x01\x02"
    m.jms_correlation_id = "é"
    assert m.get_jms_correlation_id_as_bytes() == "é".encode()
    assert m._correlation_id == "é"
    m.set_jms_correlation_id_as_bytes(None)
    assert m.jms_correlation_id is None and m.get_jms_correlation_id_as_bytes() is None
    with pytest.raises(TypeError):
        m.set_jms_correlation_id_as_bytes("text")  # type: ignore[arg-type]


def test_hdr_12_reply_to_holds_any_destination() -> None:
    """HDR-12: reply-to holds a queue, topic, temporary destination or None unchanged."""
    m = Message()
    for d in [Queue("a"), Topic("b"), TemporaryQueue("tmp-1"), None]:
        m.jms_reply_to = d
        assert m.jms_reply_to == d
        assert m.jms_reply_to is d


def test_hdr_14_type_is_any_string() -> None:
    """HDR-14: JMSType is any str or None, not validated."""
    m = Message()
    m.jms_type = "anything at all: 1 2 3"
    assert m.jms_type == "anything at all: 1 2 3"
    m.jms_type = None
    assert m.jms_type is None


def test_hdr_02_copy_keeps_every_header() -> None:
    """HDR-02, HDR-26 (message-level part): ``_copy()`` keeps every header, property and
    body, and later changes to the original do not reach the copy (the redelivered original
    must be unmodified; BODY-12)."""
    m = TextMessage("body")
    m.jms_destination = Queue("q")
    m.jms_message_id = "ID:1"
    m.jms_correlation_id = "c"
    m.jms_reply_to = Topic("r")
    m.jms_type = "t"
    m.jms_priority = 7
    m.jms_timestamp = 5
    m.jms_expiration = 6
    m.jms_delivery_time = 7
    m.jms_delivery_mode = 1
    m.jms_redelivered = True
    m.set_int_property("n", 1)
    dup = m._copy()
    assert type(dup) is TextMessage
    for name in DEFAULTS:
        assert getattr(dup, name) == getattr(m, name), name
    m.jms_priority = 1
    m.set_int_property("n", 2)
    m.text = "changed"
    assert dup.jms_priority == 7
    assert dup.get_int_property("n") == 1
    assert dup.text == "body"


def test_hdr_16_hdr_18_hdr_19_time_fields_are_epoch_ms_ints() -> None:
    """HDR-15, HDR-16, HDR-18, HDR-19, HDR-24 (message-level part): expiration, delivery
    time and priority are plain fields the broker reads; large epoch values fit."""
    m = Message()
    m.jms_expiration = 4102444800000
    m.jms_delivery_time = 4102444800000
    assert m._expiration == m._delivery_time == 4102444800000
    for p in range(10):
        m.jms_priority = p
        assert m._priority == p


def test_hdr_29_acknowledge_calls_the_hook() -> None:
    """HDR-29: acknowledge() delegates to the session hook; a never-received message
    acknowledges nothing and does not fail."""
    m = Message()
    m.acknowledge()  # no hook: no-op
    calls: list[int] = []
    m._ack_hook = lambda: calls.append(1)
    m.acknowledge()
    m.acknowledge()
    assert calls == [1, 1]


def test_hdr_30_acknowledge_after_close_propagates_the_hook_error() -> None:
    """HDR-30: a closed session's hook raises IllegalStateException, which acknowledge()
    passes on; the message itself stays usable."""
    m = TextMessage("still readable")

    def closed() -> None:
        raise IllegalStateException("session closed")

    m._ack_hook = closed
    with pytest.raises(IllegalStateException):
        m.acknowledge()
    assert m.text == "still readable"
    m.set_string_property("p", "v")
    assert m.get_string_property("p") == "v"


def test_hdr_27_hdr_28_redelivery_fields_are_settable_by_the_client() -> None:
    """HDR-13, HDR-27, HDR-28, HDR-31 (message-level part): the client library sets
    jms_redelivered and JMSXDeliveryCount on messages it hands out, even read-only ones."""
    m = TextMessage("x")
    m._freeze()
    m.jms_redelivered = True
    m._properties["JMSXDeliveryCount"] = 2
    m._property_types["JMSXDeliveryCount"] = T.INT
    assert m.jms_redelivered is True
    assert m.get_int_property("JMSXDeliveryCount") == 2


def test_hdr_23_headers_on_message_do_not_choose_qos() -> None:
    """HDR-23 (message-level part): assigning delivery mode or priority on a message only
    changes the local field; the send (broker suite) takes them from the producer."""
    m = Message()
    m.jms_delivery_mode = 1
    m.jms_priority = 0
    assert (m.jms_delivery_mode, m.jms_priority) == (1, 0)
    fresh = Message()
    assert (fresh.jms_delivery_mode, fresh.jms_priority) == (2, 4)
