"""Conformance: sessions — modes, threading, order, acknowledgement, recovery, closing (SESS).

Every test names the catalog IDs it proves (requirements-api-a.md, "SESS"). Only the public
client API and the shared fixtures are used, so the suite runs unchanged over every transport.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable

import pytest

from ternmq.client import Connection, ConnectionFactory, JMSContext, Session
from ternmq.destination import Queue, Topic
from ternmq.errors import IllegalStateException, JMSException
from ternmq.message import DeliveryMode, Message, TextMessage
from ternmq.testing import FakeClock

from ._helpers import (
    Q2,
    Completion,
    Q,
    browse_via,
    delivery_count,
    drain_via,
    join_thread,
    marks,
    receive,
    receive_texts,
    send,
    send_async_slowly,
    send_via,
    text,
)

pytestmark = pytest.mark.also_failover  # also over failover:(tcp://...)

NOTHING = 0.05  # seconds a receive waits when nothing must arrive
WAIT = 5.0  # upper bound for something that must arrive (returns as soon as it does)

Q1 = Queue("Q1")


# ---- helpers ----------------------------------------------------------------------------------


class Collector:
    """A message listener that records what it gets and signals after ``n`` messages."""

    def __init__(self, n: int, action: Callable[[Message], None] | None = None) -> None:
        self.n = n
        self.action = action
        self.messages: list[Message] = []
        self.errors: list[BaseException] = []
        self.done = threading.Event()
        self._lock = threading.Lock()

    def __call__(self, m: Message) -> None:
        with self._lock:
            self.messages.append(m)
            if len(self.messages) >= self.n:
                self.done.set()
        if self.action is not None:
            try:
                self.action(m)
            except Exception as exc:  # recorded for the test to assert on
                self.errors.append(exc)

    @property
    def texts(self) -> list[str | None]:
        return [text(m) for m in self.messages]


def _listen(
    factory: ConnectionFactory,
    session: Session,
    queue: Queue,
    texts: list[str],
    n: int,
    on_message: Callable[[Message], None] | None = None,
) -> Collector:
    """Put ``Collector(n, on_message)`` as listener on a consumer of ``queue`` in ``session``,
    send ``texts`` to ``queue`` from a connection of their own, wait until the listener has
    had ``n`` messages, then ``NOTHING`` seconds more (for anything extra to show)."""
    listener = Collector(n, on_message)
    session.create_consumer(queue).message_listener = listener
    send_via(factory, queue, *texts)
    assert listener.done.wait(WAIT)
    time.sleep(NOTHING)
    return listener


# ---- creation and modes -------------------------------------------------------------------


def test_sess_01_mode_constants() -> None:
    """SESS-01: session modes keep their JMS values."""
    assert Session.SESSION_TRANSACTED == 0
    assert Session.AUTO_ACKNOWLEDGE == 1
    assert Session.CLIENT_ACKNOWLEDGE == 2
    assert Session.DUPS_OK_ACKNOWLEDGE == 3
    for name in (
        "SESSION_TRANSACTED",
        "AUTO_ACKNOWLEDGE",
        "CLIENT_ACKNOWLEDGE",
        "DUPS_OK_ACKNOWLEDGE",
    ):
        assert getattr(JMSContext, name) == getattr(Session, name)


def test_s_sess_8_create_session_forms(connection: Connection) -> None:
    """S-SESS-8 (SESS-02, SESS-03, SESS-04): both create_session forms, exact-type dispatch."""
    assert connection.create_session(True).acknowledge_mode == 0
    assert connection.create_session(True).transacted is True
    assert connection.create_session(0).transacted is True
    assert connection.create_session(0).acknowledge_mode == 0
    assert connection.create_session(2).acknowledge_mode == 2
    assert connection.create_session(2).transacted is False
    assert connection.create_session(False).acknowledge_mode == 1
    assert connection.create_session().acknowledge_mode == 1
    assert connection.create_session().transacted is False
    assert connection.create_session(False, 3).acknowledge_mode == 3
    assert connection.create_session(1).acknowledge_mode == 1
    assert connection.create_session(3).acknowledge_mode == 3
    assert connection.create_session(session_mode=2).acknowledge_mode == 2  # the JMS 2.0 name
    assert connection.create_session(session_mode=0).transacted is True
    with pytest.raises(JMSException, match="session_mode alone"):
        connection.create_session(True, session_mode=1)
    with pytest.raises(JMSException):
        connection.create_session(7)


def test_sess_02_sess_03_transacted_ignores_acknowledge_mode(connection: Connection) -> None:
    """SESS-02, SESS-03: with transacted=True the acknowledge mode is ignored and reported as 0."""
    for mode in (1, 2, 3):
        s = connection.create_session(True, mode)
        assert s.transacted is True
        assert s.acknowledge_mode == Session.SESSION_TRANSACTED
    s = connection.create_session(transacted=False, acknowledge_mode=Session.CLIENT_ACKNOWLEDGE)
    assert (s.transacted, s.acknowledge_mode) == (False, 2)


def test_sess_04_invalid_modes(connection: Connection) -> None:
    """SESS-04: a mode outside 0..3 raises JMSException; (False, 0) yields AUTO (A-13)."""
    for bad in (-1, 4, 7, 99):
        with pytest.raises(JMSException):
            connection.create_session(bad)
    for bad in (-1, 4, 7):
        with pytest.raises(JMSException):
            connection.create_session(False, bad)
    s = connection.create_session(False, 0)
    assert s.transacted is False
    assert s.acknowledge_mode == Session.AUTO_ACKNOWLEDGE


def test_sess_05_message_not_tied_to_its_session(factory: ConnectionFactory) -> None:
    """SESS-05: a message made by one session is sent by a producer of another connection;
    a received message can be re-sent by yet another session."""
    with factory.create_connection() as c1, factory.create_connection() as c2:
        c2.start()
        s1 = c1.create_session()
        s2 = c2.create_session()
        m = s1.create_text_message("made-by-s1")
        m.set_string_property("origin", "s1")
        s1.close()  # the creating session is even gone
        s2.create_producer(Q).send(m)
        received = s2.create_consumer(Q).receive(WAIT)
        assert text(received) == "made-by-s1"
        assert received is not None and received.get_string_property("origin") == "s1"
        # the received message, sent on by a third session to another queue
        s3 = c1.create_session()
        s3.create_producer(Q2).send(received)
        again = s2.create_consumer(Q2).receive(WAIT)
        assert text(again) == "made-by-s1"
        assert again is not None and again.jms_destination == Q2


# ---- threading ----------------------------------------------------------------------------


def test_sess_06_close_from_other_thread_while_receiving(connection: Connection) -> None:
    """SESS-06: session.close() may be called from another thread while the session is in use
    (a receive blocked in it) and must work."""
    session = connection.create_session()
    consumer = session.create_consumer(Q)
    result: list[object] = []
    entered = threading.Event()

    def run() -> None:
        entered.set()
        result.append(consumer.receive())

    t = threading.Thread(target=run)
    t.start()
    entered.wait(WAIT)
    time.sleep(0.1)  # let the receive block
    session.close()
    join_thread(t)
    assert result == [None]
    assert session.closed is True


def test_sess_06_connection_close_from_other_thread(factory: ConnectionFactory) -> None:
    """SESS-06: conn.close() from another thread ends a blocked receive with None."""
    conn = factory.create_connection()
    conn.start()
    consumer = conn.create_session(Session.CLIENT_ACKNOWLEDGE).create_consumer(Q)
    result: list[object] = []
    t = threading.Thread(target=lambda: result.append(consumer.receive()))
    t.start()
    time.sleep(0.1)
    conn.close()
    join_thread(t)
    assert result == [None]


def test_sess_07_listener_uses_session_producer_and_acknowledge(
    connection: Connection, factory: ConnectionFactory
) -> None:
    """SESS-07: a listener may use its session's producers and acknowledge() (CLIENT mode)."""
    session = connection.create_session(Session.CLIENT_ACKNOWLEDGE)
    reply_producer = session.create_producer(Q2)

    def on_message(m: Message) -> None:
        reply_producer.send(session.create_text_message(f"re:{text(m)}"))
        m.acknowledge()

    listener = _listen(factory, session, Q1, ["a", "b"], 2, on_message)
    assert listener.errors == []
    assert drain_via(factory, Q2) == ["re:a", "re:b"]
    session.close()
    assert drain_via(factory, Q1) == []  # acknowledged inside the listener


def test_sess_07_listener_commits_and_rolls_back(
    connection: Connection, factory: ConnectionFactory
) -> None:
    """SESS-07, TX-11: a listener of a transacted session may commit and roll back."""
    session = connection.create_session(True)
    producer = session.create_producer(Q2)
    seen: list[tuple[str | None, int]] = []

    def on_message(m: Message) -> None:
        seen.append((text(m), delivery_count(m)))
        if text(m) == "a" and delivery_count(m) == 1:
            producer.send(session.create_text_message("discarded"))
            session.rollback()
        else:
            producer.send(session.create_text_message(f"re:{text(m)}"))
            session.commit()

    listener = _listen(factory, session, Q1, ["a", "b"], 3, on_message)
    assert listener.errors == []
    assert seen == [("a", 1), ("a", 2), ("b", 1)]
    assert drain_via(factory, Q2) == ["re:a", "re:b"]
    session.close()
    assert drain_via(factory, Q1) == []


def test_sess_07_listener_recovers(connection: Connection, factory: ConnectionFactory) -> None:
    """SESS-07, SESS-22: a listener of a CLIENT session may call recover(): the unacknowledged
    messages come back flagged."""
    session = connection.create_session(Session.CLIENT_ACKNOWLEDGE)
    seen: list[tuple[str | None, int, bool]] = []

    def on_message(m: Message) -> None:
        seen.append((text(m), delivery_count(m), m.jms_redelivered))
        if text(m) == "b" and delivery_count(m) == 1:
            session.recover()
        elif text(m) == "b":
            m.acknowledge()

    listener = _listen(factory, session, Q, ["a", "b"], 4, on_message)
    assert listener.errors == []
    assert seen == [("a", 1, False), ("b", 1, False), ("a", 2, True), ("b", 2, True)]
    session.close()
    assert drain_via(factory, Q) == []


def test_sess_08_receive_on_listener_consumer_raises(connection: Connection) -> None:
    """SESS-08: receive()/receive_no_wait() on a consumer with a listener raise
    IllegalStateException."""
    consumer = connection.create_session().create_consumer(Q)
    consumer.message_listener = lambda m: None
    with pytest.raises(IllegalStateException):
        consumer.receive(NOTHING)
    with pytest.raises(IllegalStateException):
        consumer.receive_no_wait()


def test_sess_09_second_listener_on_started_connection(
    connection: Connection, factory: ConnectionFactory
) -> None:
    """SESS-09: adding listeners while the connection is started and messages flow is safe:
    every message reaches exactly one listener call, once."""
    send_via(factory, Q1, *[f"a{i}" for i in range(20)])
    send_via(factory, Q2, *[f"b{i}" for i in range(20)])
    session = connection.create_session()
    c1 = session.create_consumer(Q1)
    c2 = session.create_consumer(Q2)
    l1 = Collector(20, lambda m: time.sleep(0.001))
    l2 = Collector(20)
    c1.message_listener = l1
    c2.message_listener = l2
    assert l1.done.wait(WAIT) and l2.done.wait(WAIT)
    time.sleep(NOTHING)
    assert l1.texts == [f"a{i}" for i in range(20)]
    assert l2.texts == [f"b{i}" for i in range(20)]


def _intervals(sessions: list[Session], n: int) -> list[tuple[float, float]]:
    """Listeners on Q1 and Q2 (consumers of ``sessions[0]`` and ``sessions[-1]``) that sleep."""
    lock = threading.Lock()
    intervals: list[tuple[float, float]] = []
    done = threading.Event()

    def on_message(m: Message) -> None:
        start = time.monotonic()
        time.sleep(0.03)
        end = time.monotonic()
        with lock:
            intervals.append((start, end))
            if len(intervals) == 2 * n:
                done.set()

    sessions[0].create_consumer(Q1).message_listener = on_message
    sessions[-1].create_consumer(Q2).message_listener = on_message
    return intervals if done.wait(WAIT) else []


def test_s_sess_5_listeners_of_one_session_never_overlap(factory: ConnectionFactory) -> None:
    """S-SESS-5 (SESS-10): listeners of one session run one at a time; listeners of two
    sessions run concurrently."""
    n = 5
    send_via(factory, Q1, *[str(i) for i in range(n)])
    send_via(factory, Q2, *[str(i) for i in range(n)])
    with factory.create_connection() as conn:
        conn.start()
        one = _intervals([conn.create_session()], n)
    assert len(one) == 2 * n
    one.sort()
    for (_, end), (start, _) in itertools.pairwise(one):
        assert start >= end, f"overlapping listener calls in one session: {one}"

    send_via(factory, Q1, *[str(i) for i in range(n)])
    send_via(factory, Q2, *[str(i) for i in range(n)])
    with factory.create_connection() as conn:
        conn.start()
        two = _intervals([conn.create_session(), conn.create_session()], n)
    assert len(two) == 2 * n
    two.sort()
    assert any(start < end for (_, end), (start, _) in itertools.pairwise(two)), (
        f"listeners of two sessions never overlapped: {two}"
    )


# ---- message order --------------------------------------------------------------------------


def test_s_sess_6_order_and_priority(connection: Connection, factory: ConnectionFactory) -> None:
    """S-SESS-6 (SESS-11, SESS-12): 100 messages arrive in send order; a later higher-priority
    message overtakes a waiting lower-priority one."""
    session = connection.create_session()
    send(
        session, Q, *[str(i) for i in range(100)], priority=4, delivery_mode=DeliveryMode.PERSISTENT
    )
    consumer = session.create_consumer(Q)
    assert receive_texts(consumer, 100, timeout=WAIT) == [str(i) for i in range(100)]
    assert consumer.receive(NOTHING) is None

    producer = session.create_producer(Q2)
    producer.send(session.create_text_message("low"), priority=4)
    producer.send(session.create_text_message("high"), priority=9)
    c2 = session.create_consumer(Q2)
    assert receive_texts(c2, 2, timeout=WAIT) == ["high", "low"]


def test_sess_11_order_with_listener(connection: Connection, factory: ConnectionFactory) -> None:
    """SESS-11: order is kept for a listener too."""
    send_via(factory, Q, *[str(i) for i in range(50)])
    listener = Collector(50)
    connection.create_session().create_consumer(Q).message_listener = listener
    assert listener.done.wait(WAIT)
    assert listener.texts == [str(i) for i in range(50)]


def test_sess_12_delivery_mode_mix_keeps_order_per_mode(connection: Connection) -> None:
    """SESS-12: NON_PERSISTENT messages never overtake earlier NON_PERSISTENT ones of the same
    priority; PERSISTENT ones keep their order too."""
    session = connection.create_session()
    producer = session.create_producer(Q)
    sent = []
    for i in range(20):
        mode = DeliveryMode.NON_PERSISTENT if i % 3 else DeliveryMode.PERSISTENT
        producer.send(session.create_text_message(str(i)), delivery_mode=mode)
        sent.append((str(i), mode))
    got = receive_texts(session.create_consumer(Q), 20, timeout=WAIT)
    for mode in (DeliveryMode.NON_PERSISTENT, DeliveryMode.PERSISTENT):
        expected = [t for t, md in sent if md == mode]
        assert [t for t in got if t in expected] == expected


def test_sess_12_later_delivery_time_comes_later(
    fake_factory: ConnectionFactory, clock: FakeClock
) -> None:
    """SESS-12: a message with a later delivery time comes after one sent later with an
    earlier delivery time (fake clock)."""
    with fake_factory.create_connection() as conn:
        conn.start()
        session = conn.create_session()
        producer = session.create_producer(Q)
        producer.delivery_delay = 2.0
        producer.send(session.create_text_message("late"))
        producer.delivery_delay = 0
        producer.send(session.create_text_message("early"))
        consumer = session.create_consumer(Q)
        assert text(consumer.receive(WAIT)) == "early"
        assert consumer.receive(NOTHING) is None
        clock.advance(2.0)
        assert text(consumer.receive(WAIT)) == "late"


def test_sess_13_transaction_keeps_order_per_destination(
    connection: Connection, factory: ConnectionFactory
) -> None:
    """SESS-13: the order of sends to each destination in a transaction is kept after commit."""
    session = connection.create_session(True)
    producer = session.create_producer(None)
    for i in range(10):
        producer.send(session.create_text_message(f"a{i}"), destination=Q1)
        producer.send(session.create_text_message(f"b{i}"), destination=Q2)
    session.commit()
    assert drain_via(factory, Q1) == [f"a{i}" for i in range(10)]
    assert drain_via(factory, Q2) == [f"b{i}" for i in range(10)]


def test_sess_13_mixed_sync_and_async_sends_keep_order(
    connection: Connection, factory: ConnectionFactory
) -> None:
    """SESS-13, PROD-26: synchronous and asynchronous sends mixed on one producer keep order."""
    session = connection.create_session()
    producer = session.create_producer(Q)
    listener = Completion()
    for i in range(20):
        m = session.create_text_message(str(i))
        if i % 2:
            producer.send(m, completion_listener=listener)
        else:
            producer.send(m)
    producer.close()
    assert len(listener.completed) == 10
    assert drain_via(factory, Q) == [str(i) for i in range(20)]


def test_sess_14_order_across_producers_of_one_session(
    connection: Connection, factory: ConnectionFactory
) -> None:
    """SESS-14: ternmq keeps send order across all producers of one session."""
    session = connection.create_session()
    p1 = session.create_producer(Q)
    p2 = session.create_producer(None)
    for i in range(20):
        m = session.create_text_message(str(i))
        if i % 2:
            p1.send(m)
        else:
            p2.send(m, destination=Q)
    assert drain_via(factory, Q) == [str(i) for i in range(20)]


# ---- acknowledgement ------------------------------------------------------------------------


def test_s_sess_1_client_ack_covers_all_consumers(
    connection: Connection, factory: ConnectionFactory
) -> None:
    """S-SESS-1 (SESS-16): acknowledge() on the first message acknowledges every message the
    session delivered, through both consumers, including later ones."""
    session = connection.create_session(Session.CLIENT_ACKNOWLEDGE)
    send(session, Q1, "a1", "a2")
    send(session, Q2, "b1")
    c1 = session.create_consumer(Q1)
    c2 = session.create_consumer(Q2)
    a1 = c1.receive(WAIT)
    b1 = c2.receive(WAIT)
    a2 = c1.receive(WAIT)
    assert [text(a1), text(b1), text(a2)] == ["a1", "b1", "a2"]
    assert a1 is not None
    a1.acknowledge()
    session.recover()
    assert c1.receive(NOTHING) is None
    assert c2.receive(NOTHING) is None
    session.close()
    assert drain_via(factory, Q1) == []
    assert drain_via(factory, Q2) == []


def test_s_sess_2_recover_then_acknowledge_middle(
    connection: Connection, factory: ConnectionFactory
) -> None:
    """S-SESS-2 (SESS-16, SESS-22): recover() redelivers every unacknowledged message in order,
    flagged, count 2; acknowledging the 2nd then acknowledges all three."""
    session = connection.create_session(Session.CLIENT_ACKNOWLEDGE)
    send(session, Q, "m1", "m2", "m3")
    consumer = session.create_consumer(Q)
    first = [consumer.receive(WAIT) for _ in range(3)]
    assert [text(m) for m in first] == ["m1", "m2", "m3"]
    assert [(m.jms_redelivered, delivery_count(m)) for m in first if m] == [(False, 1)] * 3
    session.recover()
    again = [consumer.receive(WAIT) for _ in range(3)]
    assert [text(m) for m in again] == ["m1", "m2", "m3"]
    assert [(m.jms_redelivered, delivery_count(m)) for m in again if m] == [(True, 2)] * 3
    assert [m.jms_message_id for m in again if m] == [m.jms_message_id for m in first if m]
    assert again[1] is not None
    again[1].acknowledge()
    session.recover()
    assert consumer.receive(NOTHING) is None
    session.close()
    assert drain_via(factory, Q) == []


def test_sess_16_prefetched_messages_are_not_acknowledged(
    connection: Connection, factory: ConnectionFactory
) -> None:
    """SESS-16: acknowledge() does not cover messages prefetched into the client but never
    handed to the application; they come back unflagged with count 1."""
    send_via(factory, Q, "m1", "m2", "m3")
    session = connection.create_session(Session.CLIENT_ACKNOWLEDGE)
    consumer = session.create_consumer(Q)  # default prefetch buffers all three
    m1 = consumer.receive(WAIT)
    assert text(m1) == "m1"
    assert m1 is not None
    m1.acknowledge()
    session.close()
    s2 = connection.create_session(Session.CLIENT_ACKNOWLEDGE)
    c2 = s2.create_consumer(Q)
    rest = [c2.receive(WAIT) for _ in range(2)]
    assert [marks(m) for m in rest if m] == [
        ("m2", False, 1),
        ("m3", False, 1),
    ]


def test_sess_16_acknowledge_in_listener_covers_earlier_messages(
    connection: Connection, factory: ConnectionFactory
) -> None:
    """SESS-16: acknowledging the last message in a listener acknowledges every earlier one
    of the session."""
    session = connection.create_session(Session.CLIENT_ACKNOWLEDGE)

    def on_message(m: Message) -> None:
        if text(m) == "m3":
            m.acknowledge()

    _listen(factory, session, Q, ["m1", "m2", "m3"], 3, on_message)
    session.close()
    assert drain_via(factory, Q) == []


def test_s_sess_3_auto_receive_is_acknowledged(
    connection: Connection, factory: ConnectionFactory
) -> None:
    """S-SESS-3 (SESS-15): in AUTO mode a message returned by receive() is acknowledged:
    neither recover() nor close brings it back."""
    session = connection.create_session()
    send(session, Q, "m1")
    consumer = session.create_consumer(Q)
    assert text(consumer.receive(WAIT)) == "m1"
    session.recover()
    assert consumer.receive(NOTHING) is None
    session.close()
    assert drain_via(factory, Q) == []
    assert browse_via(factory, Q) == []


def test_sess_15_auto_listener_return_acknowledges(
    connection: Connection, factory: ConnectionFactory
) -> None:
    """SESS-15: in AUTO mode a message counts as acknowledged once its listener returns."""
    session = connection.create_session()
    listener = _listen(factory, session, Q, ["m1", "m2"], 2)
    session.close()
    assert listener.texts == ["m1", "m2"]
    assert [delivery_count(m) for m in listener.messages] == [1, 1]
    assert drain_via(factory, Q) == []


@pytest.mark.parametrize(
    "mode", [Session.AUTO_ACKNOWLEDGE, Session.DUPS_OK_ACKNOWLEDGE, Session.SESSION_TRANSACTED]
)
def test_sess_17_acknowledge_is_a_no_op_outside_client_mode(
    connection: Connection, factory: ConnectionFactory, mode: int
) -> None:
    """SESS-17: message.acknowledge() in AUTO, DUPS_OK and transacted sessions has no effect
    and raises nothing (a transacted rollback still returns the message)."""
    send_via(factory, Q, "m1")
    session = connection.create_session(mode)
    consumer = session.create_consumer(Q)
    m = consumer.receive(WAIT)
    assert text(m) == "m1"
    assert m is not None
    m.acknowledge()
    m.acknowledge()
    if mode == Session.SESSION_TRANSACTED:
        session.rollback()
        back = consumer.receive(WAIT)
        assert (text(back), back and back.jms_redelivered) == ("m1", True)
        session.commit()
    session.close()
    assert drain_via(factory, Q) == []


@pytest.mark.parametrize(
    "mode",
    [
        Session.CLIENT_ACKNOWLEDGE,
        Session.AUTO_ACKNOWLEDGE,
        Session.DUPS_OK_ACKNOWLEDGE,
        Session.SESSION_TRANSACTED,
    ],
)
def test_sess_18_acknowledge_after_session_close_raises(
    connection: Connection, factory: ConnectionFactory, mode: int
) -> None:
    """SESS-18 (SESS-17 exception): acknowledge() on a message whose session is closed raises
    IllegalStateException, in every mode; the rest of the message stays usable (SESS-30)."""
    send_via(factory, Q, "m1")
    session = connection.create_session(mode)
    m = session.create_consumer(Q).receive(WAIT)
    assert m is not None
    session.close()
    with pytest.raises(IllegalStateException):
        m.acknowledge()
    assert text(m) == "m1"
    assert delivery_count(m) == 1


def test_sess_18_acknowledge_after_connection_close_raises(factory: ConnectionFactory) -> None:
    """SESS-18: closing the connection closes the session: acknowledge() raises
    IllegalStateException, and the message is redelivered later (SESS-29)."""
    send_via(factory, Q, "m1")
    conn = factory.create_connection()
    conn.start()
    m = conn.create_session(Session.CLIENT_ACKNOWLEDGE).create_consumer(Q).receive(WAIT)
    assert m is not None
    conn.close()
    with pytest.raises(IllegalStateException):
        m.acknowledge()
    with factory.create_connection() as c2:
        c2.start()
        back = receive(c2.create_session().create_consumer(Q), timeout=WAIT)
        assert marks(back) == ("m1", True, 2)


def test_s_sess_9_acknowledge_after_consumer_close(
    connection: Connection, factory: ConnectionFactory
) -> None:
    """S-SESS-9 (SESS-19): a message of a closed consumer can still be acknowledged, which
    acknowledges it."""
    send_via(factory, Q, "m1")
    session = connection.create_session(Session.CLIENT_ACKNOWLEDGE)
    consumer = session.create_consumer(Q)
    m1 = consumer.receive(WAIT)
    assert m1 is not None
    consumer.close()
    m1.acknowledge()
    fresh = session.create_consumer(Q)
    assert fresh.receive(NOTHING) is None
    session.close()
    assert drain_via(factory, Q) == []


def test_sess_19_acknowledge_after_consumer_close_covers_other_consumers(
    connection: Connection, factory: ConnectionFactory
) -> None:
    """SESS-19: acknowledging through a closed consumer's message also acknowledges what the
    session's other consumers delivered."""
    send_via(factory, Q1, "a")
    send_via(factory, Q2, "b")
    session = connection.create_session(Session.CLIENT_ACKNOWLEDGE)
    c1 = session.create_consumer(Q1)
    c2 = session.create_consumer(Q2)
    a = c1.receive(WAIT)
    assert text(c2.receive(WAIT)) == "b"
    c1.close()
    assert a is not None
    a.acknowledge()
    session.close()
    assert drain_via(factory, Q1) == []
    assert drain_via(factory, Q2) == []


@pytest.mark.parametrize("how", ["session", "connection"])
def test_sess_20_dups_ok_close_flushes_acknowledgements(
    factory: ConnectionFactory, how: str
) -> None:
    """SESS-20: a clean close of a DUPS_OK session flushes its lazy acknowledgements: a
    consumer created afterwards does not see the consumed messages again."""
    send_via(factory, Q, "m1", "m2", "m3")
    conn = factory.create_connection()
    conn.start()
    session = conn.create_session(Session.DUPS_OK_ACKNOWLEDGE)
    assert receive_texts(session.create_consumer(Q), 3, timeout=WAIT) == ["m1", "m2", "m3"]
    if how == "session":
        session.close()
    conn.close()
    assert drain_via(factory, Q) == []


def test_sess_20_dups_ok_listener_close_flushes(
    connection: Connection, factory: ConnectionFactory
) -> None:
    """SESS-20: the same with a listener."""
    session = connection.create_session(Session.DUPS_OK_ACKNOWLEDGE)
    _listen(factory, session, Q, ["m1", "m2", "m3"], 3)
    session.close()
    assert drain_via(factory, Q) == []


# ---- recovery and duplicates -------------------------------------------------------------


def test_sess_22_recover_redelivers_only_unacknowledged(
    connection: Connection, factory: ConnectionFactory
) -> None:
    """SESS-22: recover() restarts from the oldest unacknowledged message; acknowledged ones
    do not come back; delivery counts grow with each recover."""
    send_via(factory, Q, "m1", "m2", "m3", "m4")
    session = connection.create_session(Session.CLIENT_ACKNOWLEDGE)
    consumer = session.create_consumer(Q)
    m1, m2 = consumer.receive(WAIT), consumer.receive(WAIT)
    assert m2 is not None
    m2.acknowledge()  # m1, m2
    assert receive_texts(consumer, 1, timeout=WAIT) == ["m3"]
    session.recover()
    again = [consumer.receive(WAIT) for _ in range(2)]
    assert [(text(m), delivery_count(m), m.jms_redelivered) for m in again if m] == [
        ("m3", 2, True),
        ("m4", 1, False),
    ]
    session.recover()
    third = [consumer.receive(WAIT) for _ in range(2)]
    assert [(text(m), delivery_count(m)) for m in third if m] == [("m3", 3), ("m4", 2)]
    assert third[1] is not None
    third[1].acknowledge()
    session.close()
    assert drain_via(factory, Q) == []
    del m1


def test_s_tx_3_recover_on_transacted_session_raises(connection: Connection) -> None:
    """S-TX-3 (SESS-23, TX-05): recover() on a transacted session raises
    IllegalStateException."""
    session = connection.create_session(True)
    with pytest.raises(IllegalStateException):
        session.recover()
    assert session.transacted is True  # the session stays usable


def test_s_sess_4_recover_inside_auto_listener(
    connection: Connection, factory: ConnectionFactory
) -> None:
    """S-SESS-4 (SESS-24): recover() inside an AUTO listener makes the current message come
    back: seen twice, first unflagged with count 1, then flagged with count 2."""
    session = connection.create_session()
    seen: list[tuple[str | None, bool, int]] = []

    def on_message(m: Message) -> None:
        seen.append(marks(m))
        if len(seen) == 1:
            session.recover()

    listener = _listen(factory, session, Q, ["m1"], 2, on_message)
    assert listener.errors == []
    assert seen == [("m1", False, 1), ("m1", True, 2)]
    session.close()
    assert drain_via(factory, Q) == []


def test_sess_24_recover_inside_dups_ok_listener(
    connection: Connection, factory: ConnectionFactory
) -> None:
    """SESS-24: the same in a DUPS_OK session."""
    session = connection.create_session(Session.DUPS_OK_ACKNOWLEDGE)
    seen: list[tuple[str | None, int]] = []

    def on_message(m: Message) -> None:
        seen.append((text(m), delivery_count(m)))
        if len(seen) == 1:
            session.recover()

    _listen(factory, session, Q, ["m1"], 2, on_message)
    assert seen == [("m1", 1), ("m1", 2)]
    session.close()
    assert drain_via(factory, Q) == []


def test_sess_24_recover_outside_listener_in_auto_has_no_effect(
    connection: Connection, factory: ConnectionFactory
) -> None:
    """SESS-24: outside a listener an AUTO session has nothing to recover: messages not yet
    received still arrive once, unflagged."""
    send_via(factory, Q, "m1", "m2")
    session = connection.create_session()
    consumer = session.create_consumer(Q)
    assert receive_texts(consumer, 1, timeout=WAIT) == ["m1"]
    session.recover()
    m2 = consumer.receive(WAIT)
    assert (text(m2), m2 and m2.jms_redelivered, m2 and delivery_count(m2)) == ("m2", False, 1)
    assert consumer.receive(NOTHING) is None


def test_sess_25_acknowledged_or_committed_never_redelivered(
    connection: Connection, factory: ConnectionFactory
) -> None:
    """SESS-25: once acknowledged (or committed) a message is never delivered again to the
    queue — not by recover, rollback, close or a new consumer."""
    send_via(factory, Q, "c1", "t1")
    client = connection.create_session(Session.CLIENT_ACKNOWLEDGE)
    m = client.create_consumer(Q).receive(WAIT)
    assert text(m) == "c1" and m is not None
    m.acknowledge()
    client.recover()
    client.close()
    tx = connection.create_session(True)
    tc = tx.create_consumer(Q)
    assert receive_texts(tc, 1, timeout=WAIT) == ["t1"]
    tx.commit()
    tx.rollback()
    assert tc.receive(NOTHING) is None
    tx.close()
    assert drain_via(factory, Q) == []
    assert browse_via(factory, Q) == []


def test_sess_26_one_send_one_delivery(connection: Connection, factory: ConnectionFactory) -> None:
    """SESS-26: one send never produces two deliveries to one queue (two competing consumers)
    or to one subscription; redelivery by recover keeps the message id (not a duplicate)."""
    topic = Topic("T")
    session = connection.create_session()
    k1 = session.create_consumer(Q)
    k2 = connection.create_session().create_consumer(Q)
    s1 = session.create_consumer(topic)
    s2 = connection.create_session().create_consumer(topic)
    sent = send(connection.create_session(), Q, *[str(i) for i in range(40)])
    send(connection.create_session(), topic, *[f"t{i}" for i in range(10)])
    got: list[str | None] = []
    for k in (k1, k2):
        while (m := k.receive(NOTHING)) is not None:
            got.append(m.jms_message_id)
    assert sorted(got) == sorted(m.jms_message_id for m in sent)  # each exactly once
    for sub in (s1, s2):
        ids = []
        while (m := sub.receive(NOTHING)) is not None:
            ids.append(text(m))
        assert ids == [f"t{i}" for i in range(10)]


# ---- closing ------------------------------------------------------------------------------


def test_s_sess_7_close_wakes_blocked_receive(connection: Connection) -> None:
    """S-SESS-7 (SESS-27, SESS-30): a receive blocked in another thread returns None on
    session.close(); afterwards create_consumer raises, close() again is silent and the
    connection is still usable."""
    session = connection.create_session()
    consumer = session.create_consumer(Q)
    result: list[object] = []
    t = threading.Thread(target=lambda: result.append(consumer.receive()))
    t.start()
    time.sleep(0.1)
    session.close()
    join_thread(t)
    assert result == [None]
    with pytest.raises(IllegalStateException):
        session.create_consumer(Q)
    session.close()
    other = connection.create_session()
    assert other.acknowledge_mode == 1
    send(other, Q, "still works")
    assert text(other.create_consumer(Q).receive(WAIT)) == "still works"


def test_sess_27_close_waits_for_running_listener(
    connection: Connection, factory: ConnectionFactory
) -> None:
    """SESS-27: session.close() returns only after the running listener call has returned."""
    session = connection.create_session()
    entered = threading.Event()
    finished = threading.Event()

    def on_message(m: Message) -> None:
        entered.set()
        time.sleep(0.2)
        finished.set()

    session.create_consumer(Q).message_listener = on_message
    send_via(factory, Q, "m1")
    assert entered.wait(WAIT)
    session.close()
    assert finished.is_set()


def test_sess_28_close_own_session_in_listener_raises(
    connection: Connection, factory: ConnectionFactory
) -> None:
    """SESS-28: session.close() inside one of its own listeners raises IllegalStateException;
    closing a different session from the listener works."""
    session = connection.create_session()
    other = connection.create_session()
    outcome: dict[str, object] = {}

    def on_message(m: Message) -> None:
        try:
            session.close()
            outcome["own"] = "closed"
        except IllegalStateException as exc:
            outcome["own"] = exc
        other.close()
        outcome["other"] = other.closed

    listener = _listen(factory, session, Q, ["m1"], 1, on_message)
    assert listener.errors == []
    assert isinstance(outcome["own"], IllegalStateException)
    assert outcome["other"] is True
    assert session.closed is False
    session.close()
    assert session.closed is True


def test_sess_28_close_session_in_completion_listener_raises(connection: Connection) -> None:
    """SESS-28, PROD-28: session.close() inside a completion listener of that session raises
    IllegalStateException."""
    session = connection.create_session()
    listener = Completion(lambda m: session.close())
    session.create_producer(Q).send(session.create_text_message("m"), completion_listener=listener)
    assert listener.done.wait(WAIT)
    time.sleep(NOTHING)
    assert [type(e) for e in listener.errors] == [IllegalStateException]
    assert session.closed is False
    session.close()


def test_sess_29_close_closes_children(connection: Connection) -> None:
    """SESS-29, SESS-30: closing a session closes its producers, consumers and browsers."""
    session = connection.create_session()
    producer = session.create_producer(Q)
    consumer = session.create_consumer(Q)
    browser = session.create_browser(Q)
    m = session.create_text_message("x")
    session.close()
    with pytest.raises(IllegalStateException):
        producer.send(m)
    with pytest.raises(IllegalStateException):
        consumer.receive(NOTHING)
    with pytest.raises(IllegalStateException):
        list(browser)
    producer.close()
    consumer.close()
    browser.close()


def test_sess_29_close_waits_for_async_sends(
    connection: Connection, factory: ConnectionFactory
) -> None:
    """SESS-29, PROD-27: session.close() waits for incomplete asynchronous sends and their
    callbacks; the sends complete normally."""
    session = connection.create_session()
    listener, finished = send_async_slowly(session, Q, "a", "b", "c")
    session.close()
    assert finished == ["a", "b", "c"]
    assert listener.failed == []
    assert drain_via(factory, Q) == ["a", "b", "c"]


def test_sess_29_close_rolls_back_transaction(
    connection: Connection, factory: ConnectionFactory
) -> None:
    """SESS-29, TX-08: closing a transacted session rolls its transaction back."""
    send_via(factory, Q, "r1")
    session = connection.create_session(True)
    assert receive_texts(session.create_consumer(Q), 1, timeout=WAIT) == ["r1"]
    send(session, Q2, "s1")
    session.close()
    assert drain_via(factory, Q2) == []
    with factory.create_connection() as conn:
        conn.start()
        back = receive(conn.create_session().create_consumer(Q), timeout=WAIT)
        assert marks(back) == ("r1", True, 2)


def test_sess_29_close_does_not_acknowledge_client_messages(
    connection: Connection, factory: ConnectionFactory
) -> None:
    """SESS-29: closing a CLIENT_ACKNOWLEDGE session does not acknowledge its messages; they
    are redelivered, flagged."""
    send_via(factory, Q, "m1", "m2")
    session = connection.create_session(Session.CLIENT_ACKNOWLEDGE)
    assert receive_texts(session.create_consumer(Q), 2, timeout=WAIT) == ["m1", "m2"]
    session.close()
    s2 = connection.create_session(Session.CLIENT_ACKNOWLEDGE)
    c2 = s2.create_consumer(Q)
    back = [c2.receive(WAIT) for _ in range(2)]
    assert [marks(m) for m in back if m] == [
        ("m1", True, 2),
        ("m2", True, 2),
    ]


def test_sess_30_everything_raises_after_close_except_close(connection: Connection) -> None:
    """SESS-30: after session.close() every method of the session and its producers,
    consumers and browsers raises IllegalStateException, except close() (a silent no-op)."""
    session = connection.create_session(Session.CLIENT_ACKNOWLEDGE)
    producer = session.create_producer(Q)
    anon = session.create_producer()
    consumer = session.create_consumer(Q)
    browser = session.create_browser(Q)
    made = session.create_text_message("made before close")
    session.close()
    msg = TextMessage("x")

    def set_listener() -> None:
        consumer.message_listener = lambda m: None

    def set_priority() -> None:
        producer.priority = 5

    calls: dict[str, Callable[[], object]] = {
        "create_message": session.create_message,
        "create_text_message": session.create_text_message,
        "create_bytes_message": session.create_bytes_message,
        "create_map_message": session.create_map_message,
        "create_stream_message": session.create_stream_message,
        "create_object_message": session.create_object_message,
        "create_producer": session.create_producer,
        "create_consumer": lambda: session.create_consumer(Q),
        "create_durable_consumer": lambda: session.create_durable_consumer(Topic("T"), "d"),
        "create_shared_consumer": lambda: session.create_shared_consumer(Topic("T"), "s"),
        "create_shared_durable_consumer": lambda: session.create_shared_durable_consumer(
            Topic("T"), "sd"
        ),
        "create_browser": lambda: session.create_browser(Q),
        "create_queue": lambda: session.create_queue("Q"),
        "create_topic": lambda: session.create_topic("T"),
        "create_temporary_queue": session.create_temporary_queue,
        "create_temporary_topic": session.create_temporary_topic,
        "unsubscribe": lambda: session.unsubscribe("d"),
        "commit": session.commit,
        "rollback": session.rollback,
        "recover": session.recover,
        "transacted": lambda: session.transacted,
        "acknowledge_mode": lambda: session.acknowledge_mode,
        "producer.send": lambda: producer.send(msg),
        "anon.send": lambda: anon.send(msg, destination=Q),
        "producer.priority": lambda: producer.priority,
        "producer.priority=": set_priority,
        "producer.destination": lambda: producer.destination,
        "consumer.receive": lambda: consumer.receive(NOTHING),
        "consumer.receive_no_wait": consumer.receive_no_wait,
        "consumer.message_listener": lambda: consumer.message_listener,
        "consumer.message_listener=": set_listener,
        "consumer.message_selector": lambda: consumer.message_selector,
        "browser.iter": lambda: list(browser),
        "browser.queue": lambda: browser.queue,
    }
    not_raising = []
    for name, call in calls.items():
        try:
            call()
        except IllegalStateException:
            continue
        except Exception as exc:  # a different exception is a failure too
            not_raising.append(f"{name}: {type(exc).__name__}")
            continue
        not_raising.append(name)
    assert not_raising == []
    session.close()
    producer.close()
    consumer.close()
    browser.close()
    # messages created through it stay usable
    made.text = "changed"
    assert made.text == "changed"


def test_sess_30_received_messages_stay_usable(
    connection: Connection, factory: ConnectionFactory
) -> None:
    """SESS-30: messages received through a closed session stay readable."""
    send_via(factory, Q, "m1")
    session = connection.create_session()
    m = session.create_consumer(Q).receive(WAIT)
    session.close()
    assert text(m) == "m1"
    assert m is not None and m.jms_destination == Q and delivery_count(m) == 1


def test_sess_30_session_is_a_context_manager(connection: Connection) -> None:
    """SESS-30: Session is a context manager that closes on exit."""
    with connection.create_session() as session:
        assert session.acknowledge_mode == 1
    assert session.closed is True
    with pytest.raises(IllegalStateException):
        session.create_producer(Q)
