"""``broker/_posting.py``: the embedded broker's one-way requests never wait for its lock,
are handled at once when it is free, and keep their order when it is not; and the
consumer's ``receive`` fast path (``DeliveryLedger.receive_buffered``) hands a buffered
message over and acknowledges it in one call."""

from __future__ import annotations

import uuid

from ternmq import ConnectionFactory, DeliveryMode, EmbeddedBroker, Queue, Session, TextMessage
from ternmq.protocol import commands as c


def _depth(broker: EmbeddedBroker, name: str) -> int:
    return next((s.depth for s in broker.stats() if s.name == f"queue://{name}"), 0)


def test_a_one_way_send_is_handled_at_once_when_the_lock_is_free() -> None:
    with EmbeddedBroker(f"post-{uuid.uuid4().hex[:8]}") as broker:
        with ConnectionFactory(broker.url).create_connection() as conn:
            session = conn.create_session(False, Session.AUTO_ACKNOWLEDGE)
            producer = session.create_producer(Queue("now"))
            producer.delivery_mode = DeliveryMode.NON_PERSISTENT  # pipelined: one-way
            producer.send(session.create_text_message("a"))
            assert not broker._posted
            assert _depth(broker, "now") == 1


def test_one_way_requests_wait_in_order_while_the_lock_is_held() -> None:
    """Posted while another thread holds the lock: queued, never blocking; the next holder
    runs them in the order they came, before its own request."""
    with EmbeddedBroker(f"post-{uuid.uuid4().hex[:8]}") as broker:
        with ConnectionFactory(broker.url).create_connection() as conn:
            session = conn.create_session(False, Session.AUTO_ACKNOWLEDGE)
            q = Queue("held")
            producer = session.create_producer(q)
            producer.delivery_mode = DeliveryMode.NON_PERSISTENT
            consumer = session.create_consumer(q)  # before the lock is held: a request
            with broker.lock:
                for text in ("1", "2", "3"):
                    producer.send(session.create_text_message(text))  # returns: not blocked
                assert len(broker._posted) == 3
            assert _depth(broker, "held") == 0  # nothing ran yet
            # stats() held the lock: on letting go it ran what waited (the next holder does)
            assert not broker._posted
            assert _depth(broker, "held") == 3
            conn.start()
            got = [consumer.receive(1) for _ in range(3)]
            assert [m.text for m in got if isinstance(m, TextMessage)] == ["1", "2", "3"]
            assert consumer.receive_no_wait() is None
        assert _depth(broker, "held") == 0  # each one acknowledged (AUTO)


def test_a_one_way_request_to_a_stopped_broker_is_dropped() -> None:
    broker = EmbeddedBroker(f"post-{uuid.uuid4().hex[:8]}").start()
    conn = ConnectionFactory(broker.url).create_connection()
    transport = conn._transport
    broker.stop()
    transport.send_oneway(c.Credit(consumer_id=1, messages=1))  # raises nothing
    assert not broker._posted
    conn.close()


def test_receive_hands_a_buffered_message_over_and_acknowledges_it_in_one_call() -> None:
    """AUTO: acknowledged once receive() returns it; CLIENT: recorded, acknowledged only by
    acknowledge(); either way one credit per message goes back to the broker."""
    with EmbeddedBroker(f"post-{uuid.uuid4().hex[:8]}") as broker:
        with ConnectionFactory(broker.url, prefetch=4).create_connection() as conn:
            for mode, name in (
                (Session.AUTO_ACKNOWLEDGE, "auto"),
                (Session.CLIENT_ACKNOWLEDGE, "client"),
            ):
                session = conn.create_session(False, mode)
                q = Queue(name)
                producer = session.create_producer(q)
                for i in range(6):
                    producer.send(session.create_text_message(str(i)))
                consumer = session.create_consumer(q)
                conn.start()
                ledger = session._ledger
                texts = []
                for _ in range(6):
                    deadline = 100
                    while not consumer._buffer and deadline:  # buffered: the fast path's case
                        deadline -= 1
                        conn.flush()
                    msg = consumer._receive_buffered()
                    assert isinstance(msg, TextMessage)
                    texts.append(msg.text)
                assert texts == [str(i) for i in range(6)]  # 6 > prefetch 4: credit came back
                assert not consumer._receiving
                if mode == Session.CLIENT_ACKNOWLEDGE:
                    assert len(ledger.unacked) == 6
                    assert _depth(broker, name) == 6
                    session.acknowledge()
                assert _depth(broker, name) == 0
                assert consumer._receive_buffered() is None  # nothing buffered: the full path
                session.close()
