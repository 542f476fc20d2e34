"""Conformance: message producers, including asynchronous send (PROD).

Every test names the catalog IDs it proves (requirements-api-a.md, "PROD"). Only the public
client API and the shared fixtures are used; time-dependent rules run on the fake clock.
"""

from __future__ import annotations

import itertools
import re
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from ternmq.broker.config import DestinationPolicy
from ternmq.client import Connection, ConnectionFactory, Session
from ternmq.destination import Queue
from ternmq.errors import (
    IllegalStateException,
    IllegalStateRuntimeException,
    InvalidDestinationException,
    InvalidDestinationRuntimeException,
    JMSException,
    MessageFormatException,
    ResourceAllocationException,
    TransactionRolledBackException,
    UnsupportedOperationException,
)
from ternmq.message import DeliveryMode, Message, TextMessage
from ternmq.testing import FakeClock

from ._helpers import (
    Q2,
    CrashBroker,
    MakeBroker,
    Q,
    T,
    Worker,
    browse_via,
    drain,
    drain_messages_via,
    drain_via,
    marks,
    text,
    wait_for,
)

NOTHING = 0.05  # seconds a receive waits when nothing must arrive
WAIT = 5.0  # upper bound for something that must arrive (returns as soon as it does)


# ---- helpers ----------------------------------------------------------------------------------


class Recorder:
    """A completion listener recording (thread, kind, text, start, end) of every callback."""

    def __init__(self, action: Callable[[Message], None] | None = None, sleep: float = 0.0) -> None:
        self.action = action
        self.sleep = sleep
        self.calls: list[tuple[int, str, str | None, float, float]] = []
        self.messages: list[Message] = []
        self.exceptions: list[Exception] = []
        self.errors: list[BaseException] = []
        self.event = threading.Event()
        self._lock = threading.Lock()

    def _record(self, kind: str, message: Message, start: float) -> None:
        if self.sleep:
            time.sleep(self.sleep)
        with self._lock:
            self.calls.append((threading.get_ident(), kind, text(message), start, time.monotonic()))
            self.messages.append(message)
        self.event.set()

    def on_completion(self, message: Message) -> None:
        start = time.monotonic()
        try:
            if self.action is not None:
                self.action(message)
        except Exception as exc:
            self.errors.append(exc)
        self._record("completion", message, start)

    def on_exception(self, message: Message, exception: Exception) -> None:
        start = time.monotonic()
        self.exceptions.append(exception)
        self._record("exception", message, start)

    def kinds(self) -> list[str]:
        return [k for _, k, _, _, _ in self.calls]

    def texts(self) -> list[str | None]:
        return [t for _, _, t, _, _ in self.calls]


# ---- creation, defaults, validation ---------------------------------------------------------


def test_prod_01_bound_and_anonymous_producers(connection: Connection) -> None:
    """PROD-01: create_producer(dest) is bound to dest; create_producer()/(None) is anonymous
    with destination None."""
    session = connection.create_session()
    assert session.create_producer(Q).destination == Q
    assert session.create_producer(T).destination == T
    assert session.create_producer().destination is None
    assert session.create_producer(None).destination is None


def test_s_prod_2_destination_rules(connection: Connection, factory: ConnectionFactory) -> None:
    """S-PROD-2 (PROD-02): an anonymous producer needs a destination on every send; a bound
    producer refuses a different one and accepts its own. The refusal is
    UnsupportedOperationException (a JMSException and a TypeError; API.md, A-04)."""
    session = connection.create_session()
    m = session.create_text_message("m")
    anon = session.create_producer(None)
    with pytest.raises(UnsupportedOperationException) as info:
        anon.send(m)
    assert isinstance(info.value, JMSException) and isinstance(info.value, TypeError)
    anon.send(session.create_text_message("kw"), destination=Q)
    anon.send(Q, session.create_text_message("positional"))
    bound = session.create_producer(Q)
    with pytest.raises(UnsupportedOperationException):
        bound.send(m, destination=Q2)
    with pytest.raises(UnsupportedOperationException):
        bound.send(Q2, m)
    bound.send(session.create_text_message("own-kw"), destination=Q)
    bound.send(Q, session.create_text_message("own-positional"))
    assert drain_via(factory, Q) == ["kw", "positional", "own-kw", "own-positional"]
    assert drain_via(factory, Q2) == []


def test_s_prod_3_defaults_and_invalid_settings(connection: Connection) -> None:
    """S-PROD-3 (PROD-03, PROD-04): defaults of a new producer; invalid settings raise
    JMSException and leave the previous value in force."""
    session = connection.create_session()
    p = session.create_producer(Q)
    assert p.delivery_mode == DeliveryMode.PERSISTENT == 2
    assert p.priority == 4
    assert p.time_to_live == 0
    assert p.delivery_delay == 0
    assert p.disable_message_id is False
    assert p.disable_message_timestamp is False
    for bad in (10, -1, 100):
        with pytest.raises(JMSException):
            p.priority = bad
    assert p.priority == 4
    for bad_mode in (0, 3):
        with pytest.raises(JMSException):
            p.delivery_mode = bad_mode
    assert p.delivery_mode == 2
    with pytest.raises(JMSException):
        p.time_to_live = -1
    assert p.time_to_live == 0
    with pytest.raises(JMSException):
        p.delivery_delay = -1
    assert p.delivery_delay == 0
    p.priority = 9
    with pytest.raises(JMSException):
        p.priority = 10  # never clamped
    assert p.priority == 9


@pytest.mark.parametrize(
    "kwargs",
    [
        {"priority": -1},
        {"priority": 10},
        {"delivery_mode": 3},
        {"delivery_mode": 0},
        {"time_to_live": -1.0},
    ],
)
def test_prod_04_invalid_per_send_arguments(
    connection: Connection, factory: ConnectionFactory, kwargs: dict[str, Any]
) -> None:
    """PROD-04, S-PROD-3: an invalid per-send argument raises JMSException and nothing is
    sent; the producer's values stay in force."""
    session = connection.create_session()
    p = session.create_producer(Q)
    with pytest.raises(JMSException):
        p.send(session.create_text_message("bad"), **kwargs)
    assert (p.priority, p.delivery_mode, p.time_to_live) == (4, 2, 0)
    p.send(session.create_text_message("good"))
    got = drain_messages_via(factory, Q)
    assert [(text(m), m.jms_priority, m.jms_delivery_mode) for m in got] == [("good", 4, 2)]


def test_prod_05_per_send_arguments_apply_once(
    fake_factory: ConnectionFactory, clock: FakeClock
) -> None:
    """PROD-05: per-send delivery_mode, priority and time_to_live apply to that send only."""
    with fake_factory.create_connection() as conn:
        conn.start()
        session = conn.create_session()
        p = session.create_producer(Q)
        now = clock.now_ms()
        m1 = session.create_text_message("once")
        p.send(m1, delivery_mode=DeliveryMode.NON_PERSISTENT, priority=9, time_to_live=30.0)
        assert (m1.jms_delivery_mode, m1.jms_priority, m1.jms_expiration) == (1, 9, now + 30_000)
        assert (p.delivery_mode, p.priority, p.time_to_live) == (2, 4, 0)
        m2 = session.create_text_message("default")
        p.send(m2)
        assert (m2.jms_delivery_mode, m2.jms_priority, m2.jms_expiration) == (2, 4, 0)
        got = drain(session.create_consumer(Q), timeout=NOTHING)
        assert [(text(m), m.jms_delivery_mode, m.jms_priority) for m in got] == [
            ("once", 1, 9),
            ("default", 2, 4),
        ]


def test_prod_06_send_of_a_non_message(connection: Connection, factory: ConnectionFactory) -> None:
    """PROD-06: sending a str or None on a MessageProducer raises MessageFormatException."""
    session = connection.create_session()
    bound = session.create_producer(Q)
    anon = session.create_producer()
    with pytest.raises(MessageFormatException):
        bound.send("text")  # type: ignore[arg-type]
    with pytest.raises(MessageFormatException):
        bound.send(None)  # type: ignore[arg-type]
    with pytest.raises(MessageFormatException):
        anon.send("text", destination=Q)  # type: ignore[arg-type]
    with pytest.raises(MessageFormatException):
        anon.send(Q, b"bytes")
    assert drain_via(factory, Q) == []


# ---- what a send does to the message ----------------------------------------------------------


def test_s_prod_1_headers_set_by_send(fake_factory: ConnectionFactory, clock: FakeClock) -> None:
    """S-PROD-1 (PROD-07, PROD-08, PROD-11): send overwrites the provider-set headers with
    exact values (fake clock), keeps the application's ones, and the receiver sees the same."""
    with fake_factory.create_connection() as conn:
        conn.start()
        session = conn.create_session()
        producer = session.create_producer(Q)
        m = session.create_text_message("x")
        m.jms_message_id = "ID:fake"
        m.jms_priority = 0
        m.jms_timestamp = 1
        m.jms_expiration = 2
        m.jms_delivery_time = 3
        m.jms_delivery_mode = DeliveryMode.NON_PERSISTENT
        m.jms_destination = Q2
        m.jms_correlation_id = "corr-1"
        m.jms_reply_to = Q2
        m.jms_type = "kind"
        m.set_int_property("n", 7)
        t0 = clock.now_ms()
        producer.send(m, priority=7, time_to_live=60.0)
        assert m.jms_message_id is not None
        assert m.jms_message_id.startswith("ID:") and m.jms_message_id != "ID:fake"
        assert m.jms_priority == 7
        assert m.jms_delivery_mode == DeliveryMode.PERSISTENT
        assert m.jms_timestamp == t0
        assert m.jms_expiration == t0 + 60_000
        assert m.jms_delivery_time == t0  # no delay: the send time, not 0
        assert m.jms_destination == Q
        assert m.jms_redelivered is False
        assert producer.priority == 4
        got = session.create_consumer(Q).receive(WAIT)
        assert got is not None
        assert (
            got.jms_message_id,
            got.jms_timestamp,
            got.jms_expiration,
            got.jms_delivery_time,
            got.jms_priority,
            got.jms_delivery_mode,
            got.jms_destination,
        ) == (m.jms_message_id, t0, t0 + 60_000, t0, 7, 2, Q)
        assert (got.jms_correlation_id, got.jms_reply_to, got.jms_type) == ("corr-1", Q2, "kind")
        assert got.get_int_property("n") == 7
        assert got.jms_redelivered is False


def test_prod_07_ids_unique_and_expiration_zero_without_ttl(connection: Connection) -> None:
    """PROD-07: each send assigns a new unique "ID:" id; time_to_live 0 gives expiration 0."""
    session = connection.create_session()
    producer = session.create_producer(Q)
    ids = set()
    for i in range(50):
        m = session.create_text_message(str(i))
        producer.send(m)
        assert m.jms_message_id is not None and m.jms_message_id.startswith("ID:")
        assert m.jms_expiration == 0
        ids.add(m.jms_message_id)
    other = connection.create_session().create_producer(Q)
    m = session.create_text_message("other")
    other.send(m)
    ids.add(m.jms_message_id)
    assert len(ids) == 51


def test_prod_07_delivery_time_with_delay(
    fake_factory: ConnectionFactory, clock: FakeClock
) -> None:
    """PROD-07: jms_delivery_time is send time + delivery_delay."""
    with fake_factory.create_connection() as conn:
        session = conn.create_session()
        producer = session.create_producer(Q)
        producer.delivery_delay = 1.5
        m = session.create_text_message("d")
        t0 = clock.now_ms()
        producer.send(m)
        assert (m.jms_timestamp, m.jms_delivery_time) == (t0, t0 + 1500)


def test_prod_08_redelivered_not_assigned_by_send(
    connection: Connection, factory: ConnectionFactory
) -> None:
    """PROD-08: jms_redelivered is not assigned by a send; the receiver sees False (first
    delivery) whatever the sender set."""
    session = connection.create_session()
    m = session.create_text_message("m")
    m.jms_redelivered = True
    session.create_producer(Q).send(m)
    assert m.jms_redelivered is True
    got = drain_messages_via(factory, Q)
    assert [marks(x) for x in got] == [("m", False, 1)]


def test_s_prod_4_disabled_id_and_timestamp(
    fake_factory: ConnectionFactory, clock: FakeClock
) -> None:
    """S-PROD-4 (PROD-09, PROD-10): ternmq honours the hints: no id, timestamp 0, on sender
    and receiver; expiration still comes from the real send time."""
    with fake_factory.create_connection() as conn:
        conn.start()
        session = conn.create_session()
        p = session.create_producer(Q)
        p.disable_message_id = True
        p.disable_message_timestamp = True
        assert (p.disable_message_id, p.disable_message_timestamp) == (True, True)
        m = session.create_text_message("m")
        t0 = clock.now_ms()
        p.send(m, time_to_live=5.0)
        assert m.jms_message_id is None
        assert m.jms_timestamp == 0
        assert m.jms_expiration == t0 + 5000
        assert m.jms_delivery_time == t0
        got = session.create_consumer(Q).receive(WAIT)
        assert got is not None
        assert (got.jms_message_id, got.jms_timestamp, got.jms_expiration) == (None, 0, t0 + 5000)
        p.disable_message_id = False
        p.disable_message_timestamp = False
        m2 = session.create_text_message("m2")
        p.send(m2)
        assert m2.jms_message_id is not None and m2.jms_timestamp == t0


def test_s_prod_10_message_reusable_after_send(
    connection: Connection, factory: ConnectionFactory
) -> None:
    """S-PROD-10 (PROD-12): after a send the object may be changed and sent again without
    affecting the first send; each send gets a new id."""
    session = connection.create_session()
    p = session.create_producer(Q)
    m = session.create_text_message("a")
    m.set_string_property("v", "1")
    p.send(m)
    first_id = m.jms_message_id
    m.text = "b"
    m.set_string_property("v", "2")
    p.send(m)
    got = drain_messages_via(factory, Q)
    assert [(text(x), x.get_string_property("v")) for x in got] == [("a", "1"), ("b", "2")]
    assert got[0].jms_message_id == first_id
    assert got[0].jms_message_id != got[1].jms_message_id


# ---- sending, delivery mode, time-to-live, delay, priority -----------------------------------


@pytest.mark.parametrize("mode", [DeliveryMode.PERSISTENT, DeliveryMode.NON_PERSISTENT])
def test_prod_13_send_returns_after_broker_accepted(factory: ConnectionFactory, mode: int) -> None:
    """PROD-13: when a synchronous send returns, the broker holds the message (a browser of
    another connection shows it at once), for both delivery modes (NON_PERSISTENT with
    block_on_non_persistent_send=true; by default such a send is pipelined)."""
    blocking = ConnectionFactory(factory.url, block_on_non_persistent_send=True)
    with blocking.create_connection() as connection:
        session = connection.create_session()
        p = session.create_producer(Q)
        p.delivery_mode = mode
        p.send(session.create_text_message("m"))
        with factory.create_connection() as other:
            assert [text(m) for m in other.create_session().create_browser(Q)] == ["m"]


@pytest.mark.parametrize("mode", [DeliveryMode.PERSISTENT, DeliveryMode.NON_PERSISTENT])
def test_prod_13_broker_errors_raised_from_send(make_broker: MakeBroker, mode: int) -> None:
    """PROD-13, A-08: an unknown destination (auto-create off) and a full destination with the
    "fail" policy are raised from send(), whatever the delivery mode, with
    block_on_non_persistent_send=true (by default NON_PERSISTENT sends are pipelined)."""
    policy = DestinationPolicy(max_bytes=3000, full_policy="fail")
    factory = ConnectionFactory(
        make_broker(auto_create=False, queues=("Q",), policies={"queue://Q": policy}).url,
        block_on_non_persistent_send=True,
    )
    with factory.create_connection() as conn:
        session = conn.create_session()
        p = session.create_producer(None)
        p.delivery_mode = mode
        with pytest.raises(InvalidDestinationException):
            p.send(session.create_text_message("m"), destination=Queue("NOPE"))
        p.send(session.create_text_message("x" * 2000), destination=Q)
        with pytest.raises(ResourceAllocationException):
            p.send(session.create_text_message("y" * 2000), destination=Q)
    assert [len(t or "") for t in drain_via(factory, Q)] == [2000]


def test_prod_14_send_after_close_raises(factory: ConnectionFactory) -> None:
    """PROD-14: send() on a closed producer, or one whose session or connection is closed,
    raises IllegalStateException; producer.close() is idempotent."""
    conn = factory.create_connection()
    s1, s2, s3 = (conn.create_session() for _ in range(3))
    p1, p2, p3 = s1.create_producer(Q), s2.create_producer(Q), s3.create_producer(None)
    m = TextMessage("m")
    p1.close()
    p1.close()
    with pytest.raises(IllegalStateException):
        p1.send(m)
    s2.close()
    with pytest.raises(IllegalStateException):
        p2.send(m)
    p3.send(m, destination=Q)
    conn.close()
    with pytest.raises(IllegalStateException):
        p3.send(m, destination=Q)
    p3.close()
    assert drain_via(factory, Q) == ["m"]


def test_prod_15_persistent_survives_restart_non_persistent_never_twice(
    crash_broker: CrashBroker,
) -> None:
    """PROD-15: after a crash/restart a PERSISTENT message is there exactly once; a
    NON_PERSISTENT one may be lost but never comes twice."""
    factory = ConnectionFactory(crash_broker.url)
    conn = factory.create_connection()
    session = conn.create_session()
    p = session.create_producer(Q)
    p.send(session.create_text_message("persistent"), delivery_mode=DeliveryMode.PERSISTENT)
    p.send(session.create_text_message("transient"), delivery_mode=DeliveryMode.NON_PERSISTENT)
    after = ConnectionFactory(crash_broker.crash())  # recovers the store as it is now
    got = drain_via(after, Q)
    assert got.count("persistent") == 1
    assert got.count("transient") <= 1
    assert drain_via(after, Q) == []
    conn.close()


def test_s_prod_6_expired_messages_are_not_delivered(
    fake_factory: ConnectionFactory, clock: FakeClock
) -> None:
    """S-PROD-6 (PROD-16): a message whose time-to-live passed is not delivered; one with
    time_to_live 0 has expiration 0 and is delivered after any wait."""
    with fake_factory.create_connection() as conn:
        session = conn.create_session()
        p = session.create_producer(Q)
        short = session.create_text_message("short")
        p.send(short, time_to_live=0.5)
        forever = session.create_text_message("forever")
        p.send(forever)
        assert forever.jms_expiration == 0
        clock.advance(1.0)
        conn.start()
        consumer = session.create_consumer(Q)
        got = drain(consumer, timeout=NOTHING)
        assert [text(m) for m in got] == ["forever"]
        assert got[0].jms_expiration == 0
        clock.advance(3600.0)
        p.send(session.create_text_message("late"))
        clock.advance(3600.0)
        assert text(consumer.receive(WAIT)) == "late"


def test_prod_16_expired_not_delivered_to_prefetch_listener_or_redelivery(
    fake_factory: ConnectionFactory, clock: FakeClock
) -> None:
    """PROD-16: expiry applies to messages already prefetched by the client, to listeners and
    to redelivery after recover()."""
    with fake_factory.create_connection() as conn:
        conn.start()
        session = conn.create_session(Session.CLIENT_ACKNOWLEDGE)
        p = conn.create_session().create_producer(Q)
        consumer = session.create_consumer(Q)
        p.send(TextMessage("a"), time_to_live=1.0)
        p.send(TextMessage("b"), time_to_live=1.0)
        assert text(consumer.receive(WAIT)) == "a"  # b is now prefetched
        clock.advance(2.0)
        assert consumer.receive(NOTHING) is None  # b expired in the prefetch buffer
        session.recover()  # a is unacknowledged but expired: not redelivered
        assert consumer.receive(NOTHING) is None
        consumer.close()
        # a listener never sees an expired message
        seen: list[str | None] = []
        listener_session = conn.create_session()
        p.send(TextMessage("c"), time_to_live=1.0)
        p.send(TextMessage("d"))
        clock.advance(2.0)
        listener_session.create_consumer(Q).message_listener = lambda m: seen.append(text(m))
        assert wait_for(lambda: len(seen) >= 1), "condition not reached in time"
        time.sleep(NOTHING)
        assert seen == ["d"]


def test_s_prod_5_delivery_delay(fake_factory: ConnectionFactory, clock: FakeClock) -> None:
    """S-PROD-5 (PROD-17, PROD-07): a delayed message is not delivered — nor shown by a
    browser (A-16) — before its delivery time; then it comes with the same delivery time."""
    with fake_factory.create_connection() as conn:
        conn.start()
        session = conn.create_session()
        p = session.create_producer(Q)
        p.delivery_delay = 2.0
        m = session.create_text_message("delayed")
        t0 = clock.now_ms()
        p.send(m)
        assert m.jms_delivery_time == t0 + 2000
        consumer = session.create_consumer(Q)
        assert consumer.receive(NOTHING) is None
        assert list(session.create_browser(Q)) == []
        clock.advance(1.0)
        assert consumer.receive(NOTHING) is None
        clock.advance(0.999)
        assert consumer.receive(NOTHING) is None
        clock.advance(0.001)
        got = consumer.receive(WAIT)
        assert text(got) == "delayed"
        assert got is not None and got.jms_delivery_time == t0 + 2000
        assert clock.now_ms() >= got.jms_delivery_time


def test_prod_17_delayed_message_to_listener(
    fake_factory: ConnectionFactory, clock: FakeClock
) -> None:
    """PROD-17: a listener does not get a delayed message before its delivery time."""
    with fake_factory.create_connection() as conn:
        conn.start()
        session = conn.create_session()
        seen: list[tuple[str | None, int]] = []
        session.create_consumer(Q).message_listener = lambda m: seen.append(
            (text(m), clock.now_ms())
        )
        p = conn.create_session().create_producer(Q)
        p.delivery_delay = 5.0
        t0 = clock.now_ms()
        p.send(TextMessage("m"))
        time.sleep(NOTHING)
        assert seen == []
        clock.advance(5.0)
        assert wait_for(lambda: len(seen) == 1), "condition not reached in time"
        assert seen == [("m", t0 + 5000)]


def test_prod_18_delayed_topic_message_goes_to_subscriptions_at_send_time(
    fake_factory: ConnectionFactory, clock: FakeClock
) -> None:
    """PROD-18: a delayed topic message goes only to subscriptions that existed at send time;
    one created during the delay does not get it."""
    with fake_factory.create_connection() as conn:
        conn.start()
        session = conn.create_session()
        early = session.create_consumer(T)
        p = session.create_producer(T)
        p.delivery_delay = 2.0
        p.send(session.create_text_message("delayed"))
        late = session.create_consumer(T)
        clock.advance(2.0)
        assert text(early.receive(WAIT)) == "delayed"
        assert late.receive(NOTHING) is None


def test_prod_19_priority_order(connection: Connection, factory: ConnectionFactory) -> None:
    """PROD-19: waiting messages are delivered highest priority first, FIFO within one."""
    session = connection.create_session()
    p = session.create_producer(Q)
    sent = []
    for i, prio in enumerate([0, 4, 9, 4, 7, 0, 9, 1]):
        p.send(session.create_text_message(f"{prio}-{i}"), priority=prio)
        sent.append((prio, i))
    expected = [f"{prio}-{i}" for prio, i in sorted(sent, key=lambda x: (-x[0], x[1]))]
    got = drain_messages_via(factory, Q)
    assert [text(m) for m in got] == expected
    assert [m.jms_priority for m in got] == sorted((pr for pr, _ in sent), reverse=True)


def test_prod_20_stopped_connection_sends(factory: ConnectionFactory) -> None:
    """PROD-20: producers of a stopped connection send normally."""
    with factory.create_connection() as conn:
        session = conn.create_session()
        session.create_producer(Q).send(session.create_text_message("while stopped"))
        conn.start()
        conn.stop()
        session.create_producer(Q).send(session.create_text_message("stopped again"))
        assert drain_via(factory, Q) == ["while stopped", "stopped again"]


# ---- asynchronous send ---------------------------------------------------------------------


def test_s_prod_7_fifty_async_sends(connection: Connection, factory: ConnectionFactory) -> None:
    """S-PROD-7 (PROD-22, PROD-23, PROD-24, PROD-25): 50 asynchronous sends: exactly 50
    on_completion calls in send order, none on the sending thread, none overlapping;
    producer.close() returns after the last callback returned; a consumer gets them in order."""
    session = connection.create_session()
    producer = session.create_producer(Q)
    listener = Recorder(sleep=0.002)
    main = threading.get_ident()
    for i in range(50):
        producer.send(session.create_text_message(str(i)), completion_listener=listener)
    producer.close()
    closed_at = time.monotonic()
    assert listener.kinds() == ["completion"] * 50
    assert listener.texts() == [str(i) for i in range(50)]
    assert all(tid != main for tid, *_ in listener.calls)
    spans = [(start, end) for *_, start, end in listener.calls]
    assert all(end <= nxt for (_, end), (nxt, _) in itertools.pairwise(spans))
    assert spans[-1][1] <= closed_at
    assert drain_via(factory, Q) == [str(i) for i in range(50)]


def test_prod_22_on_completion_only_after_broker_holds_message(
    connection: Connection, factory: ConnectionFactory
) -> None:
    """PROD-22: send() returns without waiting for the callback, and on_completion runs only
    once the broker holds the message (a browser of another connection sees it then)."""
    session = connection.create_session()
    seen_in_callback: list[list[str | None]] = []
    gate = threading.Event()

    def check(m: Message) -> None:
        gate.wait(WAIT)  # hold the callback: send() must have returned already
        seen_in_callback.append(browse_via(factory, Q))

    listener = Recorder(check)
    session.create_producer(Q).send(session.create_text_message("m"), completion_listener=listener)
    assert listener.calls == []  # send() returned while the callback could not run yet
    gate.set()
    assert listener.event.wait(WAIT)
    assert listener.errors == []
    assert seen_in_callback == [["m"]]


def test_prod_23_problems_in_calling_thread_are_raised(
    connection: Connection, factory: ConnectionFactory
) -> None:
    """PROD-23: problems detectable in the calling thread are raised from send() and the
    listener is never called: closed producer, missing or invalid destination, bad argument,
    not a message."""
    session = connection.create_session()
    listener = Recorder()
    anon = session.create_producer(None)
    m = session.create_text_message("m")
    with pytest.raises(UnsupportedOperationException):
        anon.send(m, completion_listener=listener)
    with pytest.raises(InvalidDestinationException):
        anon.send(m, destination="queue://Q", completion_listener=listener)  # type: ignore[arg-type]
    with pytest.raises(JMSException):
        anon.send(m, destination=Q, priority=11, completion_listener=listener)
    with pytest.raises(MessageFormatException):
        anon.send("text", destination=Q, completion_listener=listener)  # type: ignore[arg-type]
    closed = session.create_producer(Q)
    closed.close()
    with pytest.raises(IllegalStateException):
        closed.send(m, completion_listener=listener)
    time.sleep(NOTHING)
    assert listener.calls == []
    assert drain_via(factory, Q) == []


def test_s_prod_9_broker_refusal_reported_once_through_on_exception(
    make_broker: MakeBroker,
) -> None:
    """S-PROD-9 (PROD-23, PROD-33): a send the broker refuses (here: an unknown destination
    with auto-create off; ternmq has no write ACLs) returns, then on_exception is called
    exactly once with a JMSException and on_completion never; the message is not retried and
    the exception text says the delivery outcome is not known (undefined, JMS 2.0 §4.6.2.2)."""
    factory = ConnectionFactory(make_broker(auto_create=False, queues=("Q",)).url)
    with factory.create_connection() as conn:
        session = conn.create_session()
        listener = Recorder()
        producer = session.create_producer(None)
        m = session.create_text_message("refused")
        producer.send(m, destination=Queue("NOPE"), completion_listener=listener)
        producer.send(
            session.create_text_message("ok"), destination=Q, completion_listener=listener
        )
        producer.close()
        assert listener.kinds() == ["exception", "completion"]
        assert listener.texts() == ["refused", "ok"]
        assert listener.messages[0] is m
        [exc] = listener.exceptions
        assert isinstance(exc, InvalidDestinationException)
        assert re.search(r"unknown|undefined|not known|may or may not", str(exc), re.I), str(exc)
        time.sleep(NOTHING)
        assert len(listener.calls) == 2  # no late second callback, no silent retry
    assert drain_via(factory, Q) == ["ok"]


def test_prod_25_one_session_runs_one_callback_at_a_time(
    connection: Connection, factory: ConnectionFactory
) -> None:
    """PROD-25: callbacks of one producer arrive in send order, and one session never runs two
    completion callbacks at once, across its producers."""
    session = connection.create_session()
    listener = Recorder(sleep=0.005)
    p1 = session.create_producer(Q)
    p2 = session.create_producer(Q2)
    for i in range(10):
        p1.send(session.create_text_message(f"a{i}"), completion_listener=listener)
        p2.send(session.create_text_message(f"b{i}"), completion_listener=listener)
    session.close()
    texts = listener.texts()
    assert [t for t in texts if t and t[0] == "a"] == [f"a{i}" for i in range(10)]
    assert [t for t in texts if t and t[0] == "b"] == [f"b{i}" for i in range(10)]
    spans = sorted((start, end) for *_, start, end in listener.calls)
    assert len(spans) == 20
    assert all(end <= nxt for (_, end), (nxt, _) in itertools.pairwise(spans))


def test_prod_26_mixed_sync_and_async_sends_keep_order(
    connection: Connection, factory: ConnectionFactory
) -> None:
    """PROD-26: asynchronous sends mixed with synchronous ones on one producer keep the
    message order; the application need not wait for callbacks in between."""
    session = connection.create_session()
    producer = session.create_producer(Q)
    listener = Recorder()
    for i in range(30):
        m = session.create_text_message(str(i))
        if i % 3:
            producer.send(m, completion_listener=listener)
        else:
            producer.send(m)
    producer.close()
    assert listener.kinds() == ["completion"] * 20
    assert drain_via(factory, Q) == [str(i) for i in range(30)]


@pytest.mark.parametrize("what", ["producer", "session", "connection", "commit", "rollback"])
def test_prod_27_close_commit_rollback_wait_for_callbacks(
    factory: ConnectionFactory, what: str
) -> None:
    """PROD-27: close() of the producer, session or connection, and commit()/rollback(), block
    until every incomplete send has completed and every callback returned; pending sends finish
    normally, they are not cancelled."""
    conn = factory.create_connection()
    transacted = what in ("commit", "rollback")
    session = conn.create_session(transacted)
    producer = session.create_producer(Q)
    listener = Recorder(sleep=0.03)
    for i in range(3):
        producer.send(session.create_text_message(str(i)), completion_listener=listener)
    target: dict[str, Callable[[], None]] = {
        "producer": producer.close,
        "session": session.close,
        "connection": conn.close,
        "commit": session.commit,
        "rollback": session.rollback,
    }
    target[what]()
    returned_at = time.monotonic()
    assert listener.kinds() == ["completion"] * 3
    assert listener.calls[-1][4] <= returned_at
    conn.close()
    assert drain_via(factory, Q) == ([] if what == "rollback" else ["0", "1", "2"])


@pytest.mark.parametrize("what", ["commit", "producer.close"])
def test_s_prod_8_commit_or_close_in_callback(
    connection: Connection, factory: ConnectionFactory, what: str
) -> None:
    """S-PROD-8 (PROD-27, PROD-28): in a transacted session a callback calling
    session.commit() or producer.close() gets IllegalStateException; the main thread's commit
    returns after the callback and makes the message visible."""
    session = connection.create_session(True)
    producer = session.create_producer(Q)
    actions: dict[str, Callable[[], None]] = {
        "commit": session.commit,
        "producer.close": producer.close,
    }
    listener = Recorder(lambda m: actions[what](), sleep=0.05)
    producer.send(session.create_text_message("m"), completion_listener=listener)
    session.commit()
    assert listener.kinds() == ["completion"]  # the callback had returned
    assert [type(e) for e in listener.errors] == [IllegalStateException]
    assert drain_via(factory, Q) == ["m"]


@pytest.mark.parametrize(
    "what", ["producer.close", "session.close", "connection.close", "commit", "rollback"]
)
def test_prod_28_close_commit_rollback_from_callback_raise(
    factory: ConnectionFactory, what: str
) -> None:
    """PROD-28, TX-10, SESS-28: inside a completion callback, closing its own producer,
    session or connection, or committing/rolling back its own session, raises
    IllegalStateException (instead of deadlocking)."""
    conn = factory.create_connection()
    transacted = what in ("commit", "rollback")
    session = conn.create_session(transacted)
    producer = session.create_producer(Q)
    actions: dict[str, Callable[[], None]] = {
        "producer.close": producer.close,
        "session.close": session.close,
        "connection.close": conn.close,
        "commit": session.commit,
        "rollback": session.rollback,
    }
    listener = Recorder(lambda m: actions[what]())
    producer.send(session.create_text_message("m"), completion_listener=listener)
    assert listener.event.wait(WAIT)
    assert [type(e) for e in listener.errors] == [IllegalStateException]
    assert session.closed is False and conn.closed is False
    producer.send(session.create_text_message("after"))  # everything still usable
    if transacted:
        session.commit()
    conn.close()
    assert drain_via(factory, Q) == ["m", "after"]


def test_prod_29_headers_after_completion_and_changes_after_send(
    connection: Connection, factory: ConnectionFactory
) -> None:
    """PROD-29: in on_completion the provider-set headers are readable on the sender's object;
    changing the object after send() returned cannot alter what is sent, and raises nothing."""
    session = connection.create_session()
    headers: list[tuple[object, ...]] = []

    def read(m: Message) -> None:
        headers.append((m.jms_message_id, m.jms_destination, m.jms_priority, m.jms_delivery_mode))

    listener = Recorder(read)
    m = session.create_text_message("original")
    producer = session.create_producer(Q)
    producer.send(m, priority=6, completion_listener=listener)
    m.text = "changed"  # undefined for JMS; ternmq encoded at send() and raises nothing
    m.set_string_property("late", "yes")
    producer.close()
    assert listener.errors == []
    assert listener.messages == [m]
    [(mid, dest, prio, mode)] = headers
    assert isinstance(mid, str) and mid.startswith("ID:")
    assert (dest, prio, mode) == (Q, 6, DeliveryMode.PERSISTENT)
    got = drain_messages_via(factory, Q)
    assert [text(x) for x in got] == ["original"]
    assert got[0].property_exists("late") is False
    assert got[0].jms_message_id == mid


def test_prod_30_callback_may_use_the_session(
    connection: Connection, factory: ConnectionFactory
) -> None:
    """PROD-30: the application thread keeps using the session after an asynchronous send, and
    a callback that sends synchronously through the session does not deadlock."""
    session = connection.create_session()
    follow_up = session.create_producer(Q2)
    listener = Recorder(lambda m: follow_up.send(session.create_text_message(f"after-{text(m)}")))
    producer = session.create_producer(Q)
    producer.send(session.create_text_message("m1"), completion_listener=listener)
    assert listener.event.wait(WAIT)
    producer.send(session.create_text_message("m2"))  # the session stays the application's
    session.close()
    assert listener.errors == []
    assert drain_via(factory, Q) == ["m1", "m2"]
    assert drain_via(factory, Q2) == ["after-m1"]


def test_prod_31_none_listener_means_synchronous(
    connection: Connection, factory: ConnectionFactory
) -> None:
    """PROD-31: completion_listener=None is a synchronous send: headers are set and the broker
    holds the message when send() returns."""
    session = connection.create_session()
    m = session.create_text_message("sync")
    session.create_producer(Q).send(m, completion_listener=None)
    assert m.jms_message_id is not None and m.jms_destination == Q
    assert browse_via(factory, Q) == ["sync"]


class _OnlyCompletion:
    def on_completion(self, message: Message) -> None:
        pass


class _OnlyException:
    def on_exception(self, message: Message, exception: Exception) -> None:
        pass


@pytest.mark.parametrize("bad", [_OnlyCompletion(), _OnlyException(), object(), len])
def test_prod_31_incomplete_listener_raises_type_error(
    connection: Connection, factory: ConnectionFactory, bad: object
) -> None:
    """PROD-31: a listener object lacking on_completion or on_exception raises TypeError at
    send(), and nothing is sent."""
    session = connection.create_session()
    with pytest.raises(TypeError):
        session.create_producer(Q).send(
            session.create_text_message("m"),
            completion_listener=bad,  # type: ignore[arg-type]
        )
    assert drain_via(factory, Q) == []


def test_prod_32_transacted_async_send(connection: Connection, factory: ConnectionFactory) -> None:
    """PROD-32: in a transacted session on_completion means the broker holds the message in the
    transaction: it is not visible before commit."""
    session = connection.create_session(True)
    listener = Recorder()
    session.create_producer(Q).send(session.create_text_message("m"), completion_listener=listener)
    assert listener.event.wait(WAIT)
    assert listener.kinds() == ["completion"]
    assert browse_via(factory, Q) == []
    session.commit()
    assert drain_via(factory, Q) == ["m"]


def test_prod_32_failed_async_send_rolls_transaction_back(make_broker: MakeBroker) -> None:
    """PROD-32, TX-06: a failed asynchronous send in a transaction makes the next commit()
    raise TransactionRolledBackException; nothing of the transaction becomes visible."""
    factory = ConnectionFactory(make_broker(auto_create=False, queues=("Q",)).url)
    with factory.create_connection() as conn:
        session = conn.create_session(True)
        producer = session.create_producer(None)
        listener = Recorder()
        producer.send(session.create_text_message("good"), destination=Q)
        producer.send(
            session.create_text_message("bad"),
            destination=Queue("NOPE"),
            completion_listener=listener,
        )
        with pytest.raises(TransactionRolledBackException):
            session.commit()
        assert listener.kinds() == ["exception"]
        producer.send(session.create_text_message("retry"), destination=Q)
        session.commit()
    assert drain_via(factory, Q) == ["retry"]


# ---- pipelined sends (block_on_non_persistent_send=false, catalog A-08) ------------------------
BLOCKING = DestinationPolicy(max_bytes=8_000, full_policy="block", block_timeout=30.0)


def _pipelined(url: str) -> ConnectionFactory:
    """A factory whose synchronous NON_PERSISTENT sends do not wait (set by the URL option)."""
    sep = "&" if "?" in url else "?"
    return ConnectionFactory(f"{url}{sep}block_on_non_persistent_send=false")


def test_a_08_pipelined_refusal_is_raised_by_a_later_send(make_broker: MakeBroker) -> None:
    """A-08, PROD-13: with block_on_non_persistent_send=false a refused NON_PERSISTENT send
    returns; the refusal is raised, with its own type, by a later send of the session, before
    that send sends anything (the PERSISTENT send after it waits for its receipt, so by the
    following send the refusal is known). PERSISTENT sends still raise at once."""
    url = make_broker(auto_create=False, queues=("Q",)).url
    factory = _pipelined(url)
    assert factory.block_on_non_persistent_send is False
    assert ConnectionFactory(url).block_on_non_persistent_send is False  # the default
    assert _blocking(url).block_on_non_persistent_send is True
    with factory.create_connection() as conn:
        session = conn.create_session()
        p = session.create_producer(None)
        p.delivery_mode = DeliveryMode.NON_PERSISTENT
        p.send(session.create_text_message("lost"), destination=Queue("NOPE"))  # no raise
        outcomes = []
        for body in ("p1", "p2"):
            try:
                p.send(
                    session.create_text_message(body),
                    destination=Q,
                    delivery_mode=DeliveryMode.PERSISTENT,
                )
                outcomes.append(body)
            except InvalidDestinationException as exc:
                assert "pipelined NON_PERSISTENT send to queue://NOPE" in str(exc)
                outcomes.append("raised")
        assert outcomes in (["raised", "p2"], ["p1", "raised"])
        p.send(session.create_text_message("np"), destination=Q)
        with pytest.raises(InvalidDestinationException):  # persistent: raised by that send
            p.send(
                session.create_text_message("x"),
                destination=Queue("NOPE"),
                delivery_mode=DeliveryMode.PERSISTENT,
            )
    assert drain_via(ConnectionFactory(url), Q) == [o for o in outcomes if o != "raised"] + ["np"]


def test_a_08_default_factory_pipelines_and_reports_at_the_next_send(
    make_broker: MakeBroker,
) -> None:
    """A-08, PROD-13: with no option a NON_PERSISTENT send to a refusing destination returns;
    one of the next two sends raises the refusal (the first PERSISTENT send waits for its
    receipt, which follows the refusal), once; the others go through."""
    url = make_broker(auto_create=False, queues=("Q",)).url
    with ConnectionFactory(url).create_connection() as conn:
        session = conn.create_session()
        p = session.create_producer(None)
        p.delivery_mode = DeliveryMode.NON_PERSISTENT
        p.send(session.create_text_message("lost"), destination=Queue("NOPE"))  # no raise
        outcomes = []
        for body in ("p1", "p2", "np"):
            mode = DeliveryMode.NON_PERSISTENT if body == "np" else DeliveryMode.PERSISTENT
            try:
                p.send(session.create_text_message(body), destination=Q, delivery_mode=mode)
                outcomes.append(body)
            except InvalidDestinationException as exc:
                assert "pipelined NON_PERSISTENT send to queue://NOPE" in str(exc)
                outcomes.append("raised")
        assert outcomes in (["raised", "p2", "np"], ["p1", "raised", "np"])
    assert drain_via(ConnectionFactory(url), Q) == [o for o in outcomes if o != "raised"]


def test_a_08_blocking_option_raises_from_the_send(make_broker: MakeBroker) -> None:
    """A-08, PROD-13: block_on_non_persistent_send=true (URL or factory argument) makes a
    NON_PERSISTENT send wait for its receipt and raise the refusal itself."""
    url = make_broker(auto_create=False, queues=("Q",)).url
    for factory in (_blocking(url), ConnectionFactory(url, block_on_non_persistent_send=True)):
        assert factory.block_on_non_persistent_send is True
        with factory.create_connection() as conn:
            session = conn.create_session()
            p = session.create_producer(Queue("NOPE"))
            p.delivery_mode = DeliveryMode.NON_PERSISTENT
            with pytest.raises(InvalidDestinationException, match="queue://NOPE"):
                p.send(session.create_text_message("x"))
            session.close()  # nothing left to report


def _refused_send(session: Session) -> None:
    p = session.create_producer(Queue("NOPE"))
    p.delivery_mode = DeliveryMode.NON_PERSISTENT
    p.send(session.create_text_message("lost"))  # pipelined: returns


def test_a_08_session_close_raises_an_unreported_refusal(make_broker: MakeBroker) -> None:
    """A-08: a refusal no later send reported is raised by session.close(), after the
    session is closed; the connection goes on working and its close raises nothing more."""
    url = make_broker(auto_create=False, queues=("Q",)).url
    with ConnectionFactory(url).create_connection() as conn:
        session = conn.create_session()
        _refused_send(session)
        with pytest.raises(InvalidDestinationException, match=r"pipelined .* queue://NOPE"):
            session.close()
        assert session.closed
        session.close()  # idempotent, nothing more to report
        other = conn.create_session()
        other.create_producer(Q).send(other.create_text_message("after"))
    assert drain_via(ConnectionFactory(url), Q) == ["after"]


def test_a_08_connection_close_raises_an_unreported_refusal(make_broker: MakeBroker) -> None:
    """A-08: closing the connection closes its sessions and then raises the refusal that no
    send reported; the connection is closed all the same."""
    url = make_broker(auto_create=False, queues=("Q",)).url
    conn = ConnectionFactory(url).create_connection()
    _refused_send(conn.create_session())
    with pytest.raises(InvalidDestinationException, match="queue://NOPE"):
        conn.close()
    assert conn.closed
    conn.close()  # a second call does nothing


def test_a_08_context_close_raises_an_unreported_refusal(make_broker: MakeBroker) -> None:
    """A-08, CTX-04: JMSContext.close() raises the unreported refusal as the runtime form of
    its type, after closing the context (and its connection)."""
    url = make_broker(auto_create=False, queues=("Q",)).url
    ctx = ConnectionFactory(url).create_context()
    ctx.create_producer().set_delivery_mode(DeliveryMode.NON_PERSISTENT).send(Queue("NOPE"), "lost")
    with pytest.raises(InvalidDestinationRuntimeException, match="queue://NOPE"):
        ctx.close()
    ctx.close()  # a second call does nothing
    with pytest.raises(IllegalStateRuntimeException):
        ctx.create_text_message("x")


def test_a_08_transacted_non_persistent_send_waits(make_broker: MakeBroker) -> None:
    """A-08, PROD-13: in a transacted session a NON_PERSISTENT send waits for the broker even
    with the pipelined default, so a refusal is raised by that send(); the transaction goes
    on and commit() keeps what was accepted."""
    url = make_broker(auto_create=False, queues=("Q",)).url
    with ConnectionFactory(url).create_connection() as conn:
        session = conn.create_session(True)
        p = session.create_producer(None)
        p.delivery_mode = DeliveryMode.NON_PERSISTENT
        p.send(session.create_text_message("good"), destination=Q)
        with pytest.raises(InvalidDestinationException, match="queue://NOPE"):
            p.send(session.create_text_message("bad"), destination=Queue("NOPE"))
        session.commit()
        session.close()  # nothing left to report
    assert drain_via(ConnectionFactory(url), Q) == ["good"]


def test_a_08_pipelined_sends_do_not_wait_for_a_blocked_broker(make_broker: MakeBroker) -> None:
    """A-08, PSF-07: pipelined NON_PERSISTENT sends to a full queue under the "block" policy
    return while the broker holds them back, and arrive complete and in order as a consumer
    makes room; past SEND_WINDOW sends in flight the next one waits for the oldest."""
    url = make_broker(policies={"queue://Q": BLOCKING}).url
    body = "b" * 900
    total = 24
    with _pipelined(url).create_connection() as conn:
        session = conn.create_session()
        p = session.create_producer(Q)
        p.delivery_mode = DeliveryMode.NON_PERSISTENT
        for i in range(total):  # a synchronous send would wait here for room
            p.send(session.create_text_message(f"{i:02d}:{body}"))
        assert len(browse_via(ConnectionFactory(url))) < total  # the broker holds some back
        with ConnectionFactory(url).create_connection() as other:
            consumer = other.create_session().create_consumer(Q)
            other.start()
            got = [text(consumer.receive(WAIT)) for _ in range(total)]
        assert got == [f"{i:02d}:{body}" for i in range(total)]


def test_a_08_send_window_bounds_sends_in_flight(
    make_broker: MakeBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A-08: at most SEND_WINDOW pipelined sends of a session are in flight: against a broker
    that holds receipts back, the send past the window waits until the oldest is answered."""
    import ternmq.client._send_window as session_module

    monkeypatch.setattr(session_module, "SEND_WINDOW", 2)
    # 2 stored, 2 held back by the broker (in flight), the 5th send waits for the window
    _window_run(make_broker(policies={"queue://Q": BLOCKING}).url, total=6, first_wave=4)


def test_a_08_quiet_sends_count_in_the_window(
    make_broker: MakeBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A-08: outside a transaction most pipelined sends are quiet (answered only if refused)
    and one in QUIET_RUN is answered for itself and the quiet ones before it; the window
    counts them all. SEND_WINDOW 8, QUIET_RUN 4, the broker holding every send after the
    first two: sends 0-10 return, send 11's answer makes 12 in flight, so it waits for the
    answer to send 3; every message arrives, in order."""
    import ternmq.client._send_window as session_module

    monkeypatch.setattr(session_module, "SEND_WINDOW", 8)
    monkeypatch.setattr(session_module, "QUIET_RUN", 4)
    _window_run(make_broker(policies={"queue://Q": BLOCKING}).url, total=14, first_wave=11)


def test_a_08_close_waits_for_held_quiet_sends(make_broker: MakeBroker) -> None:
    """A-08, PSF-07: quiet pipelined sends that the broker holds for room (a full queue under
    the "block" policy) are not lost when their connection closes: close() waits until they
    are taken (a consumer makes room), as it waits for outstanding sends; the broker answers
    the Disconnect only then."""
    url = make_broker(policies={"queue://Q": BLOCKING}).url
    body = "b" * 3000
    conn = _pipelined(url).create_connection()
    session = conn.create_session()
    p = session.create_producer(Q)
    p.delivery_mode = DeliveryMode.NON_PERSISTENT
    for i in range(3):  # two fit in BLOCKING's 8,000 bytes; the third is held, quietly
        p.send(session.create_text_message(f"{i}:{body}"))
    closer = Worker(conn.close).start()
    assert not closer.done.wait(NOTHING * 4), "close() returned with a send still held"
    with ConnectionFactory(url).create_connection() as other:
        consumer = other.create_session().create_consumer(Q)
        other.start()
        got = [text(consumer.receive(WAIT)) for _ in range(3)]
    closer.join(WAIT)
    assert got == [f"{i}:{body}" for i in range(3)]


def _blocking(url: str) -> ConnectionFactory:
    """A factory whose synchronous NON_PERSISTENT sends wait (set by the URL option)."""
    sep = "&" if "?" in url else "?"
    return ConnectionFactory(f"{url}{sep}block_on_non_persistent_send=true")


def _window_run(url: str, total: int, first_wave: int) -> None:
    """Pipeline ``total`` 3,000-byte NON_PERSISTENT sends to Q (two fit under BLOCKING's
    8,000 bytes, the broker holds the rest back): exactly ``first_wave`` sends return before
    the window stops the producer; a consumer then gets all of them, in order."""
    body = "b" * 3000
    returned: list[int] = []

    def produce() -> None:
        with _pipelined(url).create_connection() as conn:
            session = conn.create_session()
            p = session.create_producer(Q)
            p.delivery_mode = DeliveryMode.NON_PERSISTENT
            for i in range(total):
                p.send(session.create_text_message(f"{i}:{body}"))
                returned.append(i)

    t = threading.Thread(target=produce)
    t.start()
    assert wait_for(lambda: len(returned) == first_wave)
    t.join(NOTHING * 4)
    assert returned == list(range(first_wave))
    with ConnectionFactory(url).create_connection() as other:
        consumer = other.create_session().create_consumer(Q)
        other.start()
        got = [text(consumer.receive(WAIT)) for _ in range(total)]
    t.join(WAIT)
    assert not t.is_alive()
    assert returned == list(range(total))
    assert got == [f"{i}:{body}" for i in range(total)]


def test_prod_22_async_send_returns_before_the_receipt(make_broker: MakeBroker) -> None:
    """PROD-22, PSF-07: an asynchronous send returns without waiting for the broker's
    receipt: to a full queue under the "block" policy it returns at once, and its
    on_completion runs only after a consumer made room and the broker took the message."""
    url = make_broker(policies={"queue://Q": BLOCKING}).url
    body = "b" * 3000
    factory = ConnectionFactory(url)
    with factory.create_connection() as conn:
        session = conn.create_session()
        p = session.create_producer(Q)
        p.send(session.create_text_message(f"0:{body}"))
        p.send(session.create_text_message(f"1:{body}"))
        listener = Recorder()
        p.send(session.create_text_message(f"2:{body}"), completion_listener=listener)
        assert not listener.event.wait(NOTHING * 4)  # held back by the broker
        with factory.create_connection() as other:
            consumer = other.create_session().create_consumer(Q)
            other.start()
            assert text(consumer.receive(WAIT)) == f"0:{body}"
            assert listener.event.wait(WAIT)
            assert listener.kinds() == ["completion"]
            got = [text(consumer.receive(WAIT)) for _ in range(2)]
        assert got == [f"1:{body}", f"2:{body}"]
