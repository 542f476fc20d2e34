"""Message headers, properties and bodies through a real broker (HDR, PROP, BODY items that
need a send and a receive; the message-level halves are in tests/message/). Runs over every
transport, and over tls:// as well (every body type and header through the TLS layer)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from ternmq import (
    BytesMessage,
    ConnectionFactory,
    DeliveryMode,
    IllegalStateException,
    MapMessage,
    Message,
    MessageFormatException,
    ObjectMessage,
    Queue,
    Session,
    StreamMessage,
    TextMessage,
    Topic,
)
from ternmq.client import Connection
from ternmq.testing import FakeClock

# also over tls:// (the server's TLS listener) and failover:(tcp://...) (automatic reconnect)
pytestmark = [pytest.mark.also_tls, pytest.mark.also_failover]


def _pair(conn: Connection, dest: Queue | Topic, mode: int = Session.AUTO_ACKNOWLEDGE) -> Any:
    s = conn.create_session(False, mode)
    return s, s.create_producer(dest), s.create_consumer(dest)


def test_hdr_02_hdr_22_complete_header_arrives_unchanged(connection: Connection) -> None:
    """HDR-02, HDR-22: client- and send-assigned header values arrive unchanged."""
    q = Queue("h02")
    reply = Queue("replies")
    s, p, k = _pair(connection, q)
    m = s.create_text_message("x")
    m.jms_correlation_id = "corr-1"
    m.jms_type = "order"
    m.jms_reply_to = reply
    p.send(m, priority=7, delivery_mode=DeliveryMode.NON_PERSISTENT, time_to_live=60.0)
    r = k.receive(1.0)
    assert r is not None
    for attr in (
        "jms_message_id",
        "jms_timestamp",
        "jms_correlation_id",
        "jms_type",
        "jms_reply_to",
        "jms_destination",
        "jms_delivery_mode",
        "jms_expiration",
        "jms_delivery_time",
        "jms_priority",
    ):
        assert getattr(r, attr) == getattr(m, attr), attr
    assert r.jms_reply_to == reply and r.jms_priority == 7


def test_hdr_02_correlation_id_bytes_survive(connection: Connection) -> None:
    """HDR-02: a byte correlation id arrives as the same bytes."""
    q = Queue("h02b")
    s, p, k = _pair(connection, q)
    m = s.create_message()
    m.set_jms_correlation_id_as_bytes(b"\x00\x01\xff")
    p.send(m)
    r = k.receive(1.0)
    assert r is not None and r.get_jms_correlation_id_as_bytes() == b"\x00\x01\xff"


def test_hdr_03_destination_overwritten_by_send(connection: Connection) -> None:
    """HDR-03, HDR-20: jms_destination set before a send is ignored; the topic is shown."""
    t = Topic("h03")
    s, p, k = _pair(connection, t)
    m = s.create_message()
    m.jms_destination = Queue("elsewhere")
    p.send(m)
    assert m.jms_destination == t
    r = k.receive(1.0)
    assert r is not None and r.jms_destination == t


def test_hdr_04_hdr_17_hdr_23_mode_and_priority_come_from_the_producer(
    connection: Connection,
) -> None:
    """HDR-04, HDR-17, HDR-20, HDR-23: header values set on the message do not choose them."""
    q = Queue("h04")
    s, p, k = _pair(connection, q)
    p.delivery_mode = DeliveryMode.NON_PERSISTENT
    p.priority = 2
    m = s.create_message()
    m.jms_delivery_mode = DeliveryMode.PERSISTENT
    m.jms_priority = 9
    p.send(m)
    assert (m.jms_delivery_mode, m.jms_priority) == (DeliveryMode.NON_PERSISTENT, 2)
    r = k.receive(1.0)
    assert r is not None
    assert (r.jms_delivery_mode, r.jms_priority) == (DeliveryMode.NON_PERSISTENT, 2)
    p.send(m, priority=8, delivery_mode=DeliveryMode.PERSISTENT)
    r = k.receive(1.0)
    assert r is not None and (r.jms_delivery_mode, r.jms_priority) == (2, 8)


def test_hdr_05_hdr_06_message_ids(connection: Connection) -> None:
    """HDR-05, HDR-06: an ``ID:`` id is assigned at send; resending gives a new one."""
    q = Queue("h05")
    s, p, k = _pair(connection, q)
    m = s.create_message()
    m.jms_message_id = "ID:mine"
    p.send(m)
    first = m.jms_message_id
    p.send(m)
    second = m.jms_message_id
    assert first is not None and first.startswith("ID:") and first != "ID:mine"
    assert second is not None and second.startswith("ID:") and second != first
    got = [k.receive(1.0), k.receive(1.0)]
    assert [g.jms_message_id for g in got if g is not None] == [first, second]
    other = connection.create_session().create_producer(q)
    m2 = s.create_message()
    other.send(m2)
    assert m2.jms_message_id not in (first, second)


def test_hdr_08_timestamp_is_the_send_time(connection: Connection) -> None:
    """HDR-08: jms_timestamp lies within the send call, in epoch ms."""
    q = Queue("h08")
    s, p, k = _pair(connection, q)
    m = s.create_message()
    m.jms_timestamp = 5
    before = time.time_ns() // 1_000_000
    p.send(m)
    after = time.time_ns() // 1_000_000
    assert before <= m.jms_timestamp <= after
    r = k.receive(1.0)
    assert r is not None and r.jms_timestamp == m.jms_timestamp


def test_hdr_08_hdr_15_transacted_send_uses_send_time_not_commit_time(
    fake_factory: ConnectionFactory, clock: FakeClock
) -> None:
    """HDR-08, HDR-15: for a transacted send, timestamp and expiration come from send()."""
    with fake_factory.create_connection() as conn:
        conn.start()
        tx = conn.create_session(True)
        p = tx.create_producer(Queue("h08tx"))
        m = tx.create_message()
        p.send(m, time_to_live=100.0)
        sent_at = clock.now_ms()
        clock.advance(5.0)
        tx.commit()
        k = tx.create_consumer(Queue("h08tx"))
        r = k.receive(1.0)
        assert r is not None
        assert r.jms_timestamp == sent_at
        assert r.jms_expiration == sent_at + 100_000


def test_hdr_13_redelivered_ignored_on_send_and_set_on_delivery(connection: Connection) -> None:
    """HDR-13, HDR-27: the sender's jms_redelivered is untouched and ignored; redelivery sets
    it with a higher JMSXDeliveryCount."""
    q = Queue("h13")
    s, p, k = _pair(connection, q, Session.CLIENT_ACKNOWLEDGE)
    m = s.create_message()
    m.jms_redelivered = True
    p.send(m)
    assert m.jms_redelivered is True
    r = k.receive(1.0)
    assert r is not None and r.jms_redelivered is False
    assert r.get_int_property("JMSXDeliveryCount") == 1
    s.recover()
    r = k.receive(1.0)
    assert r is not None and r.jms_redelivered is True
    assert r.get_int_property("JMSXDeliveryCount") == 2
    r.acknowledge()


def test_hdr_15_expiration_and_sub_millisecond_ttl(
    fake_factory: ConnectionFactory, clock: FakeClock
) -> None:
    """HDR-15: expiration = send time + ttl; 0 for ttl 0; a tiny positive ttl is >= 1 ms."""
    with fake_factory.create_connection() as conn:
        s = conn.create_session()
        p = s.create_producer(Queue("h15"))
        m = s.create_message()
        p.send(m, time_to_live=2.5)
        assert m.jms_expiration == m.jms_timestamp + 2500
        p.send(m)
        assert m.jms_expiration == 0
        p.send(m, time_to_live=0.0001)
        assert m.jms_expiration == m.jms_timestamp + 1


def test_hdr_16_expired_messages_never_dispatched(
    fake_factory: ConnectionFactory, clock: FakeClock
) -> None:
    """HDR-16: a message whose expiration passed is never dispatched."""
    with fake_factory.create_connection() as conn:
        conn.start()
        s = conn.create_session()
        q = Queue("h16")
        p = s.create_producer(q)
        p.send(s.create_text_message("short"), time_to_live=1.0)
        p.send(s.create_text_message("long"))
        clock.advance(2.0)
        k = s.create_consumer(q)
        r = k.receive(1.0)
        assert r is not None and r.text == "long"  # type: ignore[attr-defined]
        assert k.receive_no_wait() is None


def test_hdr_19_delivery_time_and_no_early_delivery(
    fake_factory: ConnectionFactory, clock: FakeClock
) -> None:
    """HDR-19: jms_delivery_time = send time + delay (= send time without delay); nobody
    receives the message before it."""
    with fake_factory.create_connection() as conn:
        conn.start()
        s = conn.create_session()
        q = Queue("h19")
        p = s.create_producer(q)
        k = s.create_consumer(q)
        now = s.create_message()
        p.send(now)
        assert now.jms_delivery_time == now.jms_timestamp
        later = s.create_text_message("later")
        p.send(later, delivery_delay=3.0)
        assert later.jms_delivery_time == later.jms_timestamp + 3000
        assert k.receive(1.0) is not None
        assert k.receive_no_wait() is None
        clock.advance(2.9)
        assert k.receive_no_wait() is None
        clock.advance(0.2)
        r = k.receive(1.0)
        assert r is not None and r.jms_delivery_time == later.jms_delivery_time


def test_hdr_21_async_send_headers_defined_at_completion(connection: Connection) -> None:
    """HDR-21: after on_completion the sender's object shows the assigned headers."""
    q = Queue("h21")
    s, p, _k = _pair(connection, q)
    seen: list[str | None] = []

    class Listener:
        def on_completion(self, message: Message) -> None:
            seen.append(message.jms_message_id)

        def on_exception(self, message: Message, exception: Exception) -> None:
            seen.append("failed")

    m = s.create_message()
    p.send(m, completion_listener=Listener())
    p.close()  # waits for the completion listener
    assert seen and seen[0] is not None and seen[0].startswith("ID:")


def test_hdr_26_prop_30_redelivered_copy_is_the_original(connection: Connection) -> None:
    """HDR-26, PROP-30: changes to a received copy are not in the redelivered copy."""
    q = Queue("h26")
    s, p, k = _pair(connection, q, Session.CLIENT_ACKNOWLEDGE)
    m = s.create_text_message("a")
    m.set_int_property("p", 1)
    p.send(m)
    r = k.receive(1.0)
    assert isinstance(r, TextMessage)
    r.clear_body()
    r.text = "b"
    r.clear_properties()
    r.jms_type = "changed"
    s.recover()
    again = k.receive(1.0)
    assert isinstance(again, TextMessage)
    assert again.text == "a" and again.get_int_property("p") == 1 and again.jms_type is None
    again.acknowledge()


def test_hdr_29_acknowledge_is_a_noop_outside_client_mode(connection: Connection) -> None:
    """HDR-29: acknowledge() does nothing in AUTO, DUPS_OK and transacted sessions, nor on a
    message that was never received."""
    q = Queue("h29")
    tx = connection.create_session(True)
    p = tx.create_producer(q)
    p.send(tx.create_message())
    tx.commit()
    k = tx.create_consumer(q)
    r = k.receive(1.0)
    assert r is not None
    r.acknowledge()  # transacted: no effect
    tx.rollback()
    again = k.receive(1.0)
    assert again is not None and again.jms_redelivered
    tx.commit()
    connection.create_session().create_message().acknowledge()  # never received: no-op


def test_hdr_30_messages_usable_after_close_but_not_acknowledge(factory: ConnectionFactory) -> None:
    """HDR-30: a received message stays readable after close; acknowledge() raises."""
    conn = factory.create_connection()
    conn.start()
    s, p, k = _pair(conn, Queue("h30"), Session.CLIENT_ACKNOWLEDGE)
    p.send(s.create_text_message("keep"))
    r = k.receive(1.0)
    assert isinstance(r, TextMessage)
    conn.close()
    assert r.text == "keep" and r.get_int_property("JMSXDeliveryCount") == 1
    with pytest.raises(IllegalStateException):
        r.acknowledge()


def test_hdr_31_selector_sees_assigned_headers(connection: Connection) -> None:
    """HDR-31: selectors see the priority and delivery mode the send assigned."""
    q = Queue("h31")
    s, p, first = _pair(connection, q)
    first.close()
    m = s.create_message()
    m.jms_priority = 0
    p.send(m, priority=6, delivery_mode=DeliveryMode.NON_PERSISTENT)
    k = s.create_consumer(q, "JMSPriority = 6 AND JMSDeliveryMode = 'NON_PERSISTENT'")
    assert k.receive(1.0) is not None
    mid = s.create_message()
    p.send(mid)
    k2 = s.create_consumer(q, f"JMSMessageID = '{mid.jms_message_id}'")
    assert k2.receive(1.0) is not None


def test_prop_01_prop_29_property_types_survive(connection: Connection) -> None:
    """PROP-01, PROP-29, PROP-30: every property keeps its type end to end; selectors use it."""
    q = Queue("p01")
    s, p, k = _pair(connection, q)
    m = s.create_message()
    m.set_boolean_property("b", True)
    m.set_byte_property("y", -5)
    m.set_short_property("s", 300)
    m.set_int_property("i", 70000)
    m.set_long_property("l", 2**40)
    m.set_float_property("f", 1.5)
    m.set_double_property("d", 2.25)
    m.set_string_property("t", "42")
    p.send(m)
    r = k.receive(1.0)
    assert r is not None
    assert r.get_property_names() == {"b", "y", "s", "i", "l", "f", "d", "t", "JMSXDeliveryCount"}
    assert r.get_object_property("y") == -5 and r.get_object_property("l") == 2**40
    with pytest.raises(MessageFormatException):  # float -> byte is not in the table
        r.get_byte_property("f")
    k.close()
    p.send(m)
    typed = s.create_consumer(q, "t = '42' AND f = 1.5 AND y < 0")
    assert typed.receive(1.0) is not None


def test_prop_21_group_properties_delivered(connection: Connection) -> None:
    """PROP-21: JMSXGroupID and JMSXGroupSeq are carried unchanged."""
    q = Queue("p21")
    s, p, k = _pair(connection, q)
    m = s.create_message()
    m.set_string_property("JMSXGroupID", "g1")
    m.set_int_property("JMSXGroupSeq", 3)
    p.send(m)
    r = k.receive(1.0)
    assert r is not None
    assert r.get_string_property("JMSXGroupID") == "g1"
    assert r.get_int_property("JMSXGroupSeq") == 3


def test_prop_23_prop_24_provider_jmsx_not_trusted(connection: Connection) -> None:
    """PROP-23, PROP-24: a sender's JMSXDeliveryCount is overwritten; the sender's object has
    none; other provider-set JMSX values from a sender are removed."""
    q = Queue("p23")
    s, p, k = _pair(connection, q)
    m = s.create_message()
    m.set_int_property("JMSXDeliveryCount", 99)
    m.set_string_property("JMSXUserID", "mallory")
    p.send(m)
    r = k.receive(1.0)
    assert r is not None
    assert r.get_int_property("JMSXDeliveryCount") == 1
    assert not r.property_exists("JMSXUserID")
    plain = s.create_message()
    p.send(plain)
    assert not plain.property_exists("JMSXDeliveryCount")
    assert k.receive(1.0) is not None


def test_prop_25_metadata_lists_jmsx(connection: Connection) -> None:
    """PROP-25: metadata lists JMSXGroupID, JMSXGroupSeq and JMSXDeliveryCount."""
    names = set(connection.metadata.jmsx_property_names)
    assert {"JMSXGroupID", "JMSXGroupSeq", "JMSXDeliveryCount"} <= names


def test_body_02_every_class_arrives_as_itself(connection: Connection) -> None:
    """BODY-02, BODY-11: each of the six classes arrives as itself, with its body; a message
    created by one session is sent through another."""
    q = Queue("b02")
    s, _, k = _pair(connection, q)
    other = connection.create_session().create_producer(q)
    b = s.create_bytes_message()
    b.write_int(7)
    mm = s.create_map_message()
    mm.set_char("c", "z")
    st = s.create_stream_message()
    st.write_short(5)
    st.write_bytes(b"ab")
    sent = [
        s.create_message(),
        s.create_text_message("t"),
        b,
        mm,
        st,
        s.create_object_message({"k": [1, 2]}),
    ]
    for m in sent:
        other.send(m)
    got = [k.receive(1.0) for _ in sent]
    assert [type(g) for g in got] == [
        Message,
        TextMessage,
        BytesMessage,
        MapMessage,
        StreamMessage,
        ObjectMessage,
    ]
    assert got[1].text == "t"  # type: ignore[union-attr]
    assert got[2].read_int() == 7  # type: ignore[union-attr]
    assert got[3].get_char("c") == "z"  # type: ignore[union-attr]
    assert got[4].read_short() == 5 and got[4].read_bytes(10) == b"ab"  # type: ignore[union-attr]
    assert got[5].object == {"k": [1, 2]}  # type: ignore[union-attr]


def test_body_12_send_takes_a_snapshot(connection: Connection) -> None:
    """BODY-12: changing and resending the object does not change what was sent; the body's
    write mode is unchanged by the send."""
    q = Queue("b12")
    s, p, k = _pair(connection, q)
    m = s.create_bytes_message()
    m.write_byte(1)
    p.send(m)
    m.write_byte(2)  # still writable: the send did not reset it
    p.send(m)
    first, second = k.receive(1.0), k.receive(1.0)
    assert isinstance(first, BytesMessage) and isinstance(second, BytesMessage)
    assert first.body_length == 1 and second.body_length == 2


class _ForeignText:
    """A message class ternmq did not create, offering the public message API."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.props: dict[str, Any] = {"kind": "foreign", "n": 3}
        self.jms_correlation_id: str | None = "c-9"
        self.jms_type: str | None = None
        self.jms_reply_to = None
        self.jms_message_id: str | None = None
        self.jms_timestamp = 0
        self.jms_destination = None
        self.jms_delivery_mode = 0
        self.jms_expiration = 0
        self.jms_delivery_time = 0
        self.jms_priority = 0

    def get_property_names(self) -> set[str]:
        return set(self.props)

    def get_object_property(self, name: str) -> Any:
        return self.props.get(name)


def test_body_10_foreign_message_objects_are_sent(connection: Connection) -> None:
    """BODY-10: a foreign message object is sent through its public API and gets the
    provider-assigned headers written back."""
    q = Queue("b10")
    _s, p, k = _pair(connection, q)
    foreign = _ForeignText("from elsewhere")
    p.send(foreign, priority=6)  # type: ignore[arg-type]
    assert foreign.jms_message_id is not None and foreign.jms_message_id.startswith("ID:")
    assert foreign.jms_priority == 6 and foreign.jms_destination == q
    r = k.receive(1.0)
    assert isinstance(r, TextMessage)
    assert r.text == "from elsewhere" and r.get_string_property("kind") == "foreign"
    assert r.get_long_property("n") == 3 and r.jms_correlation_id == "c-9"
