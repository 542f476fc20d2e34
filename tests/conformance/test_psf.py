"""Provider-specific features conformance (catalog section "Provider-specific features every
serious provider offers", PSF): dead-letter queue, redelivery delay and back-off, message
groups, exclusive consumers, expiry queue, auto-created destinations, memory limits with the
``fail`` policy, prefetch, inactive durable subscriptions.

Broker settings come from ``make_broker(**settings)`` (``BrokerConfig`` / ``DestinationPolicy``
fields). Time is driven with the fake clock; a "receives nothing" check waits ``NOTHING`` s.
"""

from __future__ import annotations

import threading

import pytest

from ternmq.broker.config import DestinationPolicy
from ternmq.broker.embedded import EmbeddedBroker
from ternmq.client import Connection, ConnectionFactory, MessageConsumer, Session
from ternmq.destination import Queue, Topic
from ternmq.errors import (
    InvalidDestinationException,
    JMSException,
    ResourceAllocationException,
    TransactionRolledBackException,
)
from ternmq.message import Message, TextMessage
from ternmq.testing import FakeClock

from ._helpers import (
    CLIENT,
    NP,
    TRANSACTED,
    MakeBroker,
    P,
    browse,
    delivery_count,
    drain,
    marks,
    new_session,
    queue_depth,
    receive,
    send,
    text_message,
    text_or_none,
    texts,
)

NOTHING = 0.1  # seconds a "receives nothing" check waits (drain() waits as long)
WAIT = 2.0  # seconds a "receives a message" check may wait (receive() too)


# ---------------------------------------------------------------------------- helpers


def _grouped(session: Session, text: str, group: str, seq: int) -> TextMessage:
    m = session.create_text_message(text)
    m.set_string_property("JMSXGroupID", group)
    m.set_int_property("JMSXGroupSeq", seq)
    return m


def _open(broker: EmbeddedBroker, **factory_options: object) -> Connection:
    conn = ConnectionFactory(broker.url, **factory_options).create_connection()  # type: ignore[arg-type]
    conn.start()
    return conn


def _fill(session: Session, dest: Queue, body: str, limit: int = 500) -> int:
    """Send ``body`` until the broker refuses with ResourceAllocationException; return how
    many sends succeeded."""
    p = session.create_producer(dest)
    for i in range(limit):
        try:
            p.send(text_message(session, f"{i}:{body}"))
        except ResourceAllocationException:
            return i
    raise AssertionError(f"{limit} sends never filled {dest}")


# ------------------------------------------------------- broker state (one place)
# Only for requirements about broker state that no JMS API shows: the admin Stat request.
def _depth(broker: EmbeddedBroker, name: str) -> int:
    """Messages a queue holds (waiting, scheduled, in flight) as the broker sees them."""
    return queue_depth(broker, Queue(name))


# ---------------------------------------------------------------------------- PSF-01
def test_psf_01_dead_letter_after_ten_attempts(broker: EmbeddedBroker) -> None:
    """PSF-01 (REL-17): with the default max_delivery_attempts = 10, a listener that always
    raises sees the message exactly 10 times (counts 1..10); then queue DLQ holds a copy with
    the body, headers and properties, JMS_TernMQ_OriginalDestination and
    JMS_TernMQ_DeadLetterReason."""
    q = Queue("orders")
    with _open(broker) as conn:
        s = conn.create_session()
        sent = text_message(s, "poison")
        sent.set_int_property("p", 7)
        sent.jms_type = "order"
        s.create_producer(q).send(sent, priority=6)
        seen: list[tuple[str | None, bool, int]] = []
        tenth = threading.Event()

        def listener(m: Message) -> None:
            seen.append(marks(m))
            if len(seen) == 10:
                tenth.set()
            raise RuntimeError("always fails (expected by the test)")

        c = s.create_consumer(q)
        c.message_listener = listener
        assert tenth.wait(5.0)
        dlq = conn.create_session().create_consumer(Queue("DLQ"))
        dead = receive(dlq)
        c.close()
        assert seen == [("poison", False, 1)] + [("poison", True, n) for n in range(2, 11)]
        assert text_or_none(dead) == "poison"
        assert dead.get_int_property("p") == 7
        assert dead.jms_type == "order"
        assert dead.jms_priority == 6
        assert dead.jms_message_id == sent.jms_message_id
        assert dead.get_string_property("JMS_TernMQ_OriginalDestination") == "queue://orders"
        reason = dead.get_string_property("JMS_TernMQ_DeadLetterReason")
        assert isinstance(reason, str) and reason
        assert browse(s, q) == []
        assert dlq.receive(NOTHING) is None


def test_psf_01_rollbacks_count_for_both_delivery_modes(make_broker: MakeBroker) -> None:
    """PSF-01: rollbacks count as delivery attempts; after max_delivery_attempts=3 a PERSISTENT
    and a NON_PERSISTENT message both move to DLQ, keeping their delivery mode."""
    broker = make_broker(max_delivery_attempts=3)
    q = Queue("psf01tx")
    with _open(broker) as conn:
        s = new_session(conn, TRANSACTED)
        p = conn.create_session().create_producer(q)
        p.send(text_message(s, "p"), delivery_mode=P)
        p.send(text_message(s, "n"), delivery_mode=NP)
        c = s.create_consumer(q)
        for attempt in (1, 2, 3):
            got = [receive(c), receive(c)]
            assert [(text_or_none(m), delivery_count(m)) for m in got] == [
                ("p", attempt),
                ("n", attempt),
            ]
            s.rollback()
        assert c.receive(NOTHING) is None
        dead = drain(conn.create_session().create_consumer(Queue("DLQ")))
        assert [(text_or_none(m), m.jms_delivery_mode) for m in dead] == [("p", P), ("n", NP)]


def test_psf_01_recover_and_lost_consumers_count(make_broker: MakeBroker) -> None:
    """PSF-01: recover() and a session closed with the message unacknowledged count as
    attempts too (max_delivery_attempts=3)."""
    broker = make_broker(max_delivery_attempts=3)
    q = Queue("psf01mix")
    with _open(broker) as conn:
        send(conn.create_session(), q, "m")
        s = new_session(conn, CLIENT)
        c = s.create_consumer(q)
        assert delivery_count(receive(c)) == 1
        s.recover()
        assert delivery_count(receive(c)) == 2
        s.close()
        s2 = new_session(conn, CLIENT)
        c2 = s2.create_consumer(q)
        assert delivery_count(receive(c2)) == 3
        s2.close()
        assert drain(conn.create_session().create_consumer(q)) == []
        assert texts(drain(conn.create_session().create_consumer(Queue("DLQ")))) == ["m"]


def test_psf_01_unlimited_attempts_and_other_targets(make_broker: MakeBroker) -> None:
    """PSF-01: max_delivery_attempts=-1 never dead-letters; dead_letter_queue names the target
    queue; dead_letter_queue=None drops dead letters."""
    unlimited = make_broker(max_delivery_attempts=-1)
    with _open(unlimited) as conn:
        q = Queue("psf01inf")
        send(conn.create_session(), q, "m")
        s = new_session(conn, TRANSACTED)
        c = s.create_consumer(q)
        for attempt in range(1, 16):
            assert delivery_count(receive(c)) == attempt
            s.rollback()
        assert marks(receive(c)) == ("m", True, 16)
        s.commit()
        assert drain(conn.create_session().create_consumer(Queue("DLQ"))) == []
    named = make_broker(max_delivery_attempts=1, dead_letter_queue="dead")
    dropped = make_broker(max_delivery_attempts=1, dead_letter_queue=None)
    for b, target in ((named, "dead"), (dropped, None)):
        with _open(b) as conn:
            q = Queue("psf01target")
            send(conn.create_session(), q, "m")
            s = new_session(conn, TRANSACTED)
            c = s.create_consumer(q)
            assert delivery_count(receive(c)) == 1
            s.rollback()
            assert c.receive(NOTHING) is None
            other = conn.create_session()
            assert browse(other, Queue("DLQ")) == []
            if target is not None:
                assert browse(other, Queue(target)) == ["m"]


# ---------------------------------------------------------------------------- PSF-02
def test_psf_02_redelivery_delay_lets_later_messages_pass(
    make_broker: MakeBroker, clock: FakeClock
) -> None:
    """PSF-02 (REL-16, REL-19): with redelivery_delay = 1 s a rolled-back message is set aside
    for exactly 1 s while later messages flow past it; then it comes back marked."""
    broker = make_broker(clock=clock, redelivery_delay=1.0)
    q = Queue("psf02")
    with _open(broker) as conn:
        send(conn.create_session(), q, "m1", "m2")
        s = new_session(conn, TRANSACTED)
        c = s.create_consumer(q)
        assert marks(receive(c)) == ("m1", False, 1)
        s.rollback()
        assert marks(receive(c)) == ("m2", False, 1)
        s.commit()
        assert c.receive(NOTHING) is None
        clock.advance(0.999)
        assert c.receive(NOTHING) is None
        clock.advance(0.001)
        assert marks(receive(c)) == ("m1", True, 2)
        s.commit()


def _check_redelivery_delays(
    c: MessageConsumer, s: Session, clock: FakeClock, delays_ms: list[int]
) -> None:
    """Receive the message, then roll back once per entry of ``delays_ms`` and check that the
    message stays away exactly that many milliseconds each time."""
    assert delivery_count(receive(c)) == 1
    for attempt, delay in enumerate(delays_ms, start=2):
        s.rollback()
        clock.advance((delay - 1) / 1000)
        assert c.receive(NOTHING) is None, f"back before {delay} ms"
        clock.advance(0.001)
        assert marks(receive(c)) == ("m", True, attempt)


def test_psf_02_back_off_multiplier_and_cap(make_broker: MakeBroker, clock: FakeClock) -> None:
    """PSF-02: the delay grows by redelivery_multiplier per attempt up to max_redelivery_delay
    (1 s, 2 s, then capped at 3 s); the default cap is 10 x redelivery_delay."""
    broker = make_broker(
        clock=clock, redelivery_delay=1.0, redelivery_multiplier=2.0, max_redelivery_delay=3.0
    )
    with _open(broker) as conn:
        q = Queue("psf02backoff")
        send(conn.create_session(), q, "m")
        s = new_session(conn, TRANSACTED)
        c = s.create_consumer(q)
        _check_redelivery_delays(c, s, clock, [1000, 2000, 3000, 3000])
    default_cap = make_broker(clock=clock, redelivery_delay=0.5, redelivery_multiplier=10.0)
    with _open(default_cap) as conn:
        q = Queue("psf02cap")
        send(conn.create_session(), q, "m")
        s = new_session(conn, TRANSACTED)
        c = s.create_consumer(q)
        _check_redelivery_delays(c, s, clock, [500, 5000, 5000])


# ---------------------------------------------------------------------------- PSF-03
def test_psf_03_group_sticks_to_one_consumer(factory: ConnectionFactory) -> None:
    """PSF-03: all messages of a group go to the consumer chosen at its first message, even
    while another consumer is free; other groups and ungrouped messages spread out."""
    q = Queue("psf03")
    with ConnectionFactory(factory.url, prefetch=1).create_connection() as conn:
        conn.start()
        s = conn.create_session()
        p = s.create_producer(q)
        c1 = conn.create_session().create_consumer(q)
        p.send(_grouped(s, "A1", "A", 1))  # only c1 exists: c1 owns A
        c2 = conn.create_session().create_consumer(q)
        p.send(_grouped(s, "A2", "A", 2))  # c1's buffer is full; free c2 must not get it
        assert c2.receive(NOTHING) is None
        p.send(text_message(s, "free"))  # ungrouped: goes to the free consumer
        assert text_or_none(receive(c2)) == "free"
        assert text_or_none(receive(c1)) == "A1"
        assert text_or_none(receive(c1)) == "A2"
        p.send(_grouped(s, "A3", "A", 3))
        assert text_or_none(receive(c1)) == "A3"
        assert c2.receive(NOTHING) is None


def test_psf_03_negative_sequence_closes_the_group(factory: ConnectionFactory) -> None:
    """PSF-03: a message with a negative JMSXGroupSeq closes its group after that message, so
    the next message of that group id may go to another consumer."""
    q = Queue("psf03close")
    with ConnectionFactory(factory.url, prefetch=1).create_connection() as conn:
        conn.start()
        s = conn.create_session()
        p = s.create_producer(q)
        c1 = conn.create_session().create_consumer(q)
        p.send(_grouped(s, "A1", "A", 1))
        c2 = conn.create_session().create_consumer(q)
        p.send(_grouped(s, "A-last", "A", -1))
        assert c2.receive(NOTHING) is None  # still c1's group
        assert text_or_none(receive(c1)) == "A1"  # c1 takes A-last into its buffer: group closed
        p.send(_grouped(s, "A-new", "A", 1))
        assert text_or_none(receive(c2)) == "A-new"  # c1 is busy; the closed group may move
        assert text_or_none(receive(c1)) == "A-last"


def test_psf_03_group_moves_when_owner_closes(factory: ConnectionFactory) -> None:
    """PSF-03: when the owning consumer's session closes, its unacknowledged group messages go to
    the new owner (the one seen marked redelivered), and so do later ones."""
    q = Queue("psf03move")
    with factory.create_connection() as conn:
        conn.start()
        s = conn.create_session()
        p = s.create_producer(q)
        s1 = new_session(conn, CLIENT)
        c1 = s1.create_consumer(q)
        p.send(_grouped(s, "A1", "A", 1))
        p.send(_grouped(s, "A2", "A", 2))
        c2 = conn.create_session().create_consumer(q)
        p.send(_grouped(s, "A3", "A", 3))
        assert c2.receive(NOTHING) is None
        assert text_or_none(receive(c1)) == "A1"
        s1.close()
        p.send(_grouped(s, "A4", "A", 4))
        assert [marks(m) for m in drain(c2)] == [
            ("A1", True, 2),
            ("A2", False, 1),
            ("A3", False, 1),
            ("A4", False, 1),
        ]


def test_psf_03_groups_on_shared_subscription_and_selectors(factory: ConnectionFactory) -> None:
    """PSF-03: groups also bind on shared subscriptions; JMSXGroupID / JMSXGroupSeq are usable in
    selectors and listed in the metadata."""
    t = Topic("psf03shared")
    with ConnectionFactory(factory.url, prefetch=1).create_connection() as conn:
        conn.start()
        assert {"JMSXGroupID", "JMSXGroupSeq"} <= set(conn.metadata.jmsx_property_names)
        s = conn.create_session()
        p = s.create_producer(t)
        c1 = conn.create_session().create_shared_consumer(t, "sh")
        p.send(_grouped(s, "A1", "A", 1))
        c2 = conn.create_session().create_shared_consumer(t, "sh")
        p.send(_grouped(s, "A2", "A", 2))
        assert c2.receive(NOTHING) is None
        assert texts([receive(c1), receive(c1)]) == ["A1", "A2"]
        q = Queue("psf03sel")
        qp = s.create_producer(q)
        qp.send(_grouped(s, "B1", "B", 1))
        qp.send(_grouped(s, "A1", "A", 1))
        qp.send(_grouped(s, "A2", "A", 2))
        sel = s.create_consumer(q, "JMSXGroupID = 'A' AND JMSXGroupSeq >= 2")
        assert texts(drain(sel)) == ["A2"]


def test_psf_03_groups_can_be_switched_off(make_broker: MakeBroker) -> None:
    """PSF-03: with the broker setting groups=False, JMSXGroupID has no dispatch meaning."""
    broker = make_broker(groups=False)
    with _open(broker, prefetch=1) as conn:
        q = Queue("psf03off")
        s = conn.create_session()
        p = s.create_producer(q)
        c1 = conn.create_session().create_consumer(q)
        p.send(_grouped(s, "A1", "A", 1))
        c2 = conn.create_session().create_consumer(q)
        p.send(_grouped(s, "A2", "A", 2))
        assert text_or_none(receive(c2)) == "A2"
        assert text_or_none(receive(c1)) == "A1"


# ---------------------------------------------------------------------------- PSF-04
def test_psf_04_exclusive_queue_uses_oldest_consumer(make_broker: MakeBroker) -> None:
    """PSF-04: on an exclusive queue every message goes to the oldest open consumer; when it
    closes the next-oldest takes over, in strict order; a queue without the setting still
    round-robins."""
    broker = make_broker(policies={"queue://excl": DestinationPolicy(exclusive=True)})
    with _open(broker) as conn:
        q = Queue("excl")
        s = conn.create_session()
        first = conn.create_session().create_consumer(q)
        second = conn.create_session().create_consumer(q)
        send(s, q, *[f"m{i}" for i in range(6)])
        assert second.receive(NOTHING) is None
        assert texts([receive(first), receive(first)]) == ["m0", "m1"]
        first.close()
        third = conn.create_session().create_consumer(q)
        send(s, q, "m6", "m7")
        assert texts(drain(second)) == [f"m{i}" for i in range(2, 8)]
        assert third.receive(NOTHING) is None
        second.close()
        send(s, q, "m8")
        assert texts(drain(third)) == ["m8"]
        shared = Queue("not-exclusive")
        a = conn.create_session().create_consumer(shared)
        b = conn.create_session().create_consumer(shared)
        send(s, shared, "x0", "x1", "x2", "x3")
        assert len(drain(a)) == 2
        assert len(drain(b)) == 2


# ---------------------------------------------------------------------------- PSF-05
def test_psf_05_expiry_queue_receives_expired_messages(
    make_broker: MakeBroker, clock: FakeClock
) -> None:
    """PSF-05 (REL-24): with expiry_queue = "EXP", an expired message (from a queue or a durable
    subscription) is moved there with JMS_TernMQ_OriginalDestination, JMS_TernMQ_ActualExpiry
    (epoch ms) and jms_expiration 0, so it does not expire again."""
    broker = make_broker(clock=clock, expiry_queue="EXP")
    with ConnectionFactory(broker.url).create_connection() as conn:
        conn.client_id = "psf05"
        conn.start()
        s = conn.create_session()
        s.create_durable_consumer(Topic("psf05t"), "d").close()
        m = text_message(s, "late")
        m.set_int_property("p", 3)
        s.create_producer(Queue("psf05")).send(m, time_to_live=1.0)
        s.create_producer(Topic("psf05t")).send(text_message(s, "late-t"), time_to_live=1.0)
        clock.advance(2.0)
        expired_at = clock.now_ms()
        c = s.create_consumer(Queue("psf05"))
        assert c.receive(NOTHING) is None
        assert s.create_durable_consumer(Topic("psf05t"), "d").receive(NOTHING) is None
        clock.advance(3600.0)
        moved = drain(s.create_consumer(Queue("EXP")))
        assert texts(moved) == ["late", "late-t"]
        first = moved[0]
        assert first.get_int_property("p") == 3
        assert first.jms_message_id == m.jms_message_id
        assert first.get_string_property("JMS_TernMQ_OriginalDestination") == "queue://psf05"
        assert first.get_long_property("JMS_TernMQ_ActualExpiry") == expired_at
        assert first.jms_expiration == 0
        origin = moved[1].get_string_property("JMS_TernMQ_OriginalDestination")
        assert origin == "topic://psf05t"


def test_psf_05_reaper_runs_every_30_seconds(make_broker: MakeBroker, clock: FakeClock) -> None:
    """PSF-05: without any consumer, the expiry reaper (every expiry_scan_interval = 30 s by
    default) moves expired messages to the expiry queue."""
    broker = make_broker(clock=clock, expiry_queue="EXP")
    with _open(broker) as conn:
        s = conn.create_session()
        s.create_producer(Queue("psf05r")).send(text_message(s, "m"), time_to_live=1.0)
        clock.advance(29.9)
        assert _depth(broker, "psf05r") == 1
        assert _depth(broker, "EXP") == 0
        clock.advance(0.1)
        assert _depth(broker, "psf05r") == 0
        assert browse(s, Queue("EXP")) == ["m"]


def test_psf_05_prefetched_expired_message_goes_to_expiry_queue(
    make_broker: MakeBroker, clock: FakeClock
) -> None:
    """PSF-05 (A-27, REL-23): a message that expires in the consumer's prefetch buffer is not
    handed over; it is moved to the expiry queue, not redelivered."""
    broker = make_broker(clock=clock, expiry_queue="EXP")
    with _open(broker) as conn:
        s = conn.create_session()
        c = s.create_consumer(Queue("psf05p"))
        s.create_producer(Queue("psf05p")).send(text_message(s, "m"), time_to_live=1.0)
        clock.advance(1.5)
        assert c.receive(NOTHING) is None
        c.close()
        other = conn.create_session()
        assert drain(other.create_consumer(Queue("psf05p"))) == []
        moved = drain(other.create_consumer(Queue("EXP")))
        assert [marks(m) for m in moved] == [("m", False, 1)]


# ---------------------------------------------------------------------------- PSF-06
def test_psf_06_destinations_are_auto_created(factory: ConnectionFactory) -> None:
    """PSF-06: by default a send to an unknown queue creates it and the message waits there; a
    consumer or browser on an unknown queue or topic works; publishing to a topic with no
    subscription is not an error."""
    with factory.create_connection() as conn:
        conn.start()
        s = conn.create_session()
        send(s, Topic("psf06-nobody"), "lost")
        send(s, Queue("psf06-new"), "kept")
        assert browse(s, Queue("psf06-unknown")) == []
        tc = s.create_consumer(Topic("psf06-unknown"))
        assert tc.receive(NOTHING) is None
        assert texts(drain(s.create_consumer(Queue("psf06-new")))) == ["kept"]


def test_psf_06_without_auto_create_unknown_names_fail(make_broker: MakeBroker) -> None:
    """PSF-06: with auto_create = False only declared destinations exist; sending to, consuming
    from or browsing another one raises InvalidDestinationException (also for a transacted
    send), while the dead-letter queue is still created when needed."""
    broker = make_broker(auto_create=False, queues=("a",), topics=("t",), max_delivery_attempts=1)
    with _open(broker) as conn:
        s = conn.create_session()
        for dest in (Queue("b"), Topic("u")):
            with pytest.raises(InvalidDestinationException):
                s.create_producer(dest).send(text_message(s, "x"))
            with pytest.raises(InvalidDestinationException):
                s.create_consumer(dest)
        with pytest.raises(InvalidDestinationException):  # at creation or, latest, iteration
            list(s.create_browser(Queue("b")))
        tx = new_session(conn, TRANSACTED)
        with pytest.raises(InvalidDestinationException):
            tx.create_producer(Queue("b")).send(text_message(tx, "x"))
        tc = s.create_consumer(Topic("t"))
        send(s, Topic("t"), "to-t")
        assert texts(drain(tc)) == ["to-t"]
        send(s, Queue("a"), "to-a")
        c = tx.create_consumer(Queue("a"))
        assert text_or_none(receive(c)) == "to-a"
        tx.rollback()  # attempt 1 of 1: dead-lettered
        assert texts(drain(s.create_consumer(Queue("DLQ")))) == ["to-a"]


# ---------------------------------------------------------------------------- PSF-07
def test_psf_07_full_destination_fails_the_send(make_broker: MakeBroker) -> None:
    """PSF-07, REL-08: with max_bytes and full_policy = "fail" a send to a full queue raises
    ResourceAllocationException at once; nothing is dropped silently; consuming frees room."""
    broker = make_broker(max_bytes=20_000, full_policy="fail")
    body = "x" * 1000
    with _open(broker) as conn:
        s = conn.create_session()
        q = Queue("psf07")
        sent = _fill(s, q, body)
        assert 5 <= sent < 20
        assert len(browse(s, q)) == sent
        with pytest.raises(ResourceAllocationException):
            s.create_producer(q).send(text_message(s, f"{sent}:{body}"))
        c = s.create_consumer(q)
        assert text_or_none(receive(c)) == f"0:{body}"
        s.create_producer(q).send(text_message(s, f"{sent}:{body}"))
        with pytest.raises(ResourceAllocationException):
            s.create_producer(q).send(text_message(s, f"{sent + 1}:{body}"))
        got = texts(drain(c))
        assert got == [f"{i}:{body}" for i in range(1, sent + 1)]


def test_psf_07_broker_wide_limit(make_broker: MakeBroker) -> None:
    """PSF-07, REL-08: the broker-wide max_memory_bytes limit applies across destinations."""
    broker = make_broker(max_memory_bytes=20_000, full_policy="fail")
    body = "y" * 1000
    with _open(broker) as conn:
        s = conn.create_session()
        q1, q2 = Queue("psf07a"), Queue("psf07b")
        n1 = _fill(s, q1, body)
        assert n1 >= 5
        with pytest.raises(ResourceAllocationException):
            s.create_producer(q2).send(text_message(s, body))
        assert text_or_none(receive(s.create_consumer(q1))) == f"0:{body}"
        s.create_producer(q2).send(text_message(s, body))
        assert len(browse(s, q1)) == n1 - 1
        assert len(browse(s, q2)) == 1


def test_psf_07_async_send_to_full_destination_reports_exception(
    make_broker: MakeBroker,
) -> None:
    """PSF-07 (A-20): an asynchronous send refused because the destination is full reports
    ResourceAllocationException to the completion listener's on_exception."""
    broker = make_broker(max_bytes=20_000, full_policy="fail")
    body = "z" * 1000
    with _open(broker) as conn:
        s = conn.create_session()
        q = Queue("psf07async")
        _fill(s, q, body)
        outcome: list[object] = []
        done = threading.Event()

        class Listener:
            def on_completion(self, message: Message) -> None:
                outcome.append("ok")
                done.set()

            def on_exception(self, message: Message, exception: Exception) -> None:
                outcome.append(exception)
                done.set()

        s.create_producer(q).send(text_message(s, body), completion_listener=Listener())
        assert done.wait(WAIT)
        assert len(outcome) == 1
        assert isinstance(outcome[0], ResourceAllocationException)


def test_psf_07_commit_into_full_destination_is_atomic(make_broker: MakeBroker) -> None:
    """PSF-07, REL-08, REL-20: a commit whose messages do not fit raises
    TransactionRolledBackException and none of the transaction's messages become visible."""
    broker = make_broker(max_bytes=5_000, full_policy="fail")
    body = "t" * 1000
    with _open(broker) as conn:
        s = conn.create_session()
        q = Queue("psf07tx")
        tx = new_session(conn, TRANSACTED)
        p = tx.create_producer(q)
        for i in range(8):
            p.send(text_message(tx, f"{i}:{body}"))
        with pytest.raises(TransactionRolledBackException):
            tx.commit()
        assert browse(s, q) == []
        p.send(text_message(tx, "small"))
        tx.commit()
        assert browse(s, q) == ["small"]


def test_psf_07_full_subscription_fails_the_publish_for_all(make_broker: MakeBroker) -> None:
    """PSF-07, REL-06, REL-08: a publish that one full subscription cannot take fails with
    ResourceAllocationException and reaches no subscription (all or nothing)."""
    broker = make_broker(
        policies={"topic://psf07t": DestinationPolicy(max_bytes=8_000, full_policy="fail")}
    )
    body = "s" * 1000
    with ConnectionFactory(broker.url).create_connection() as conn:
        conn.client_id = "psf07t"
        conn.start()
        s = conn.create_session()
        t = Topic("psf07t")
        s.create_durable_consumer(t, "slow").close()
        fast = s.create_durable_consumer(t, "fast")
        p = s.create_producer(t)
        sent = 0
        with pytest.raises(ResourceAllocationException):
            for i in range(100):
                p.send(text_message(s, f"{i}:{body}"))
                assert text_or_none(receive(fast)) == f"{i}:{body}"
                sent += 1
        assert sent >= 3
        assert fast.receive(NOTHING) is None  # the refused message reached no subscription
        fast.close()
        got = texts(drain(s.create_durable_consumer(t, "slow")))
        assert got == [f"{i}:{body}" for i in range(sent)]


def test_psf_07_block_policy_waits_for_room_then_times_out(
    make_broker: MakeBroker, clock: FakeClock
) -> None:
    """PSF-07: with full_policy = "block" a send to a full queue waits; it completes when a
    consumer frees room, and raises ResourceAllocationException after block_timeout."""
    broker = make_broker(
        clock=clock,
        policies={
            "queue://psf07f": DestinationPolicy(max_bytes=8_000, full_policy="fail"),
            "queue://psf07b": DestinationPolicy(
                max_bytes=8_000, full_policy="block", block_timeout=5.0
            ),
        },
    )
    body = "b" * 1000
    with _open(broker) as conn:
        s = conn.create_session()
        fp = s.create_producer(Queue("psf07f"))
        bp = s.create_producer(Queue("psf07b"))
        for p in (fp, bp):
            p.disable_message_id = True  # equal sizes on both queues
        capacity = 0
        while capacity < 100:
            try:
                fp.send(text_message(s, f"{capacity:03d}:{body}"))
            except ResourceAllocationException:
                break
            capacity += 1
        assert 3 <= capacity < 100
        for i in range(capacity):
            bp.send(text_message(s, f"{i:03d}:{body}"))
        outcome: list[object] = []

        def blocked_send(text: str) -> None:
            with ConnectionFactory(broker.url).create_connection() as sc:
                ss = sc.create_session()
                sp = ss.create_producer(Queue("psf07b"))
                sp.disable_message_id = True
                try:
                    sp.send(text_message(ss, text))
                    outcome.append("sent")
                except ResourceAllocationException as exc:
                    outcome.append(exc)

        t1 = threading.Thread(target=blocked_send, args=(f"{capacity:03d}:{body}",))
        t1.start()
        t1.join(NOTHING)
        assert t1.is_alive() and outcome == []  # waiting for room
        c = conn.create_session().create_consumer(Queue("psf07b"))
        assert text_or_none(receive(c)) == f"000:{body}"
        t1.join(WAIT)
        assert not t1.is_alive()
        assert outcome == ["sent"]
        c.close()
        t2 = threading.Thread(target=blocked_send, args=(f"{capacity + 1:03d}:{body}",))
        t2.start()
        t2.join(NOTHING)
        assert t2.is_alive() and outcome == ["sent"]
        clock.advance(5.0)
        t2.join(WAIT)
        assert not t2.is_alive()
        assert len(outcome) == 2 and isinstance(outcome[1], ResourceAllocationException)
        browsed = browse(s, Queue("psf07b"))
        assert browsed == [f"{i:03d}:{body}" for i in range(1, capacity + 1)]


# ---------------------------------------------------------------------------- PSF-08
def test_psf_08_prefetch_option(broker: EmbeddedBroker) -> None:
    """PSF-08 (REL-26): prefetch is set by the URL option or the keyword (keyword wins), 100 by
    default; an idle consumer holds at most that many messages; a negative or non-integer
    value is refused."""
    assert ConnectionFactory(broker.url).prefetch == 100
    assert ConnectionFactory(f"{broker.url}?prefetch=2").prefetch == 2
    assert ConnectionFactory(f"{broker.url}?prefetch=2", prefetch=5).prefetch == 5
    for bad in (f"{broker.url}?prefetch=-1", f"{broker.url}?prefetch=abc"):
        with pytest.raises(JMSException):
            ConnectionFactory(bad)
    q = Queue("psf08")
    with ConnectionFactory(f"{broker.url}?prefetch=2").create_connection() as conn:
        conn.start()
        idle = conn.create_session().create_consumer(q)
        with _open(broker) as other:
            s = other.create_session()
            send(s, q, *[f"m{i}" for i in range(150)])
            got = texts(drain(s.create_consumer(q)))
            assert got == [f"m{i}" for i in range(2, 150)]
        assert texts(drain(idle)) == ["m0", "m1"]
    q2 = Queue("psf08default")
    with _open(broker) as conn:
        idle = conn.create_session().create_consumer(q2)
        s = conn.create_session()
        send(s, q2, *[f"m{i}" for i in range(150)])
        rest = texts(drain(s.create_consumer(q2)))
        assert rest == [f"m{i}" for i in range(100, 150)]
        assert len(drain(idle)) == 100


def test_psf_08_prefetch_zero_pulls_one_at_a_time(broker: EmbeddedBroker) -> None:
    """PSF-08: with prefetch 0 a consumer holds nothing it has not asked for: an idle consumer
    takes no message from a busy one, and receive_no_wait fetches one on demand."""
    q = Queue("psf08zero")
    with _open(broker, prefetch=0) as conn:
        idle = conn.create_session().create_consumer(q)
        busy = conn.create_session().create_consumer(q)
        send(conn.create_session(), q, "a", "b", "c")
        assert text_or_none(busy.receive_no_wait()) == "a"
        assert text_or_none(receive(busy)) == "b"
        assert text_or_none(idle.receive_no_wait()) == "c"
        assert busy.receive_no_wait() is None
        assert idle.receive(NOTHING) is None


# ---------------------------------------------------------------------------- PSF-10
def test_psf_10_inactive_durable_subscription_is_kept(
    fake_factory: ConnectionFactory, clock: FakeClock
) -> None:
    """PSF-10: an inactive durable subscription is never removed automatically, however long it
    stays inactive (the expiry reaper runs meanwhile)."""
    t = Topic("psf10")
    with fake_factory.create_connection() as conn:
        conn.client_id = "psf10"
        s = conn.create_session()
        s.create_durable_consumer(t, "d").close()
        send(s, t, "kept")
        send(s, t, "expires", time_to_live=60.0)
    clock.advance(400 * 24 * 3600.0)
    with fake_factory.create_connection() as conn:
        conn.client_id = "psf10"
        conn.start()
        s = conn.create_session()
        assert texts(drain(s.create_durable_consumer(t, "d"))) == ["kept"]
