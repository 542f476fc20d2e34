"""A dead letter keeps the delivery count it reached, and dead-lettering is reported to the
host's log."""

from __future__ import annotations

from ternmq.message import TextMessage
from ternmq.message.codec import decode_message, encode_message
from ternmq.protocol import commands as c
from ternmq.testing import EngineHarness


def test_a_dead_letter_keeps_its_delivery_count_and_is_logged() -> None:
    h = EngineHarness(max_delivery_attempts=3)
    producer = h.connect()
    producer.request(c.CreateSession(session_id=1))
    m = TextMessage()
    m.text = "poison"
    producer.request(c.Send(session_id=1, destination="queue://work", message=encode_message(m)))
    consumer = h.connect()
    consumer.request(c.CreateSession(session_id=1, transacted=True))
    consumer.request(c.CreateConsumer(session_id=1, consumer_id=1, destination="queue://work"))
    for attempt in (1, 2, 3):
        (deliver,) = consumer.take_events()
        assert isinstance(deliver, c.Deliver) and deliver.delivery_count == attempt
        consumer.request(c.Rollback(session_id=1, delivered=[deliver.delivery_id]))
    assert consumer.take_events() == []
    (event, fields) = h.warnings[-1]
    assert event == "dead_lettered"
    assert fields["destination"] == "queue://work"
    assert fields["dead_letter_queue"] == "DLQ"
    assert fields["delivery_count"] == 3
    assert "max_delivery_attempts=3" in str(fields["reason"])
    dlq = h.connect()
    dlq.request(c.CreateSession(session_id=1))
    dlq.request(c.CreateConsumer(session_id=1, consumer_id=1, destination="queue://DLQ"))
    (copy,) = dlq.take_events()
    assert isinstance(copy, c.Deliver)
    msg = decode_message(copy.message)
    assert msg.get_long_property("JMS_TernMQ_DeliveryCount") == 3
    assert msg.get_string_property("JMS_TernMQ_OriginalDestination") == "queue://work"
    assert copy.delivery_count == 1  # the copy's own attempts start again in the DLQ


def test_a_nack_with_dead_letter_sends_it_to_the_dlq_at_once() -> None:
    """An OpenWire client's poison acknowledgement: the message is dead-lettered on the
    first such Nack, whatever max_delivery_attempts says; a plain Nack only counts."""
    h = EngineHarness(max_delivery_attempts=10)
    producer = h.connect()
    producer.request(c.CreateSession(session_id=1))
    for text in ("counted", "poison"):
        m = TextMessage()
        m.text = text
        producer.request(
            c.Send(session_id=1, destination="queue://work", message=encode_message(m))
        )
    consumer = h.connect()
    consumer.request(c.CreateSession(session_id=1))
    consumer.request(
        c.CreateConsumer(session_id=1, consumer_id=1, destination="queue://work", prefetch=1)
    )
    (first,) = consumer.take_events()
    assert isinstance(first, c.Deliver)
    consumer.request(c.Nack(session_id=1, delivery_ids=[first.delivery_id]))
    consumer.request(c.Credit(consumer_id=1, messages=1))
    (again,) = consumer.take_events()
    assert isinstance(again, c.Deliver) and again.delivery_count == 2  # counted, redelivered
    consumer.request(c.Ack(session_id=1, delivery_ids=[again.delivery_id]))
    consumer.request(c.Credit(consumer_id=1, messages=1))
    (poison,) = consumer.take_events()
    assert isinstance(poison, c.Deliver)
    assert decode_message(poison.message).text == "poison"  # type: ignore[attr-defined]
    consumer.request(c.Nack(session_id=1, delivery_ids=[poison.delivery_id], dead_letter=True))
    consumer.request(c.Credit(consumer_id=1, messages=1))
    assert consumer.take_events() == []
    (event, fields) = h.warnings[-1]
    assert event == "dead_lettered" and fields["delivery_count"] == 1  # one attempt
    assert "poison" in str(fields["reason"])
    dlq = h.connect()
    dlq.request(c.CreateSession(session_id=1))
    dlq.request(c.CreateConsumer(session_id=1, consumer_id=1, destination="queue://DLQ"))
    (copy,) = dlq.take_events()
    assert decode_message(copy.message).text == "poison"  # type: ignore[attr-defined]
