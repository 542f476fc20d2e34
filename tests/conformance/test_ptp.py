"""Point-to-point conformance: queues, several consumers, QueueBrowser (catalog PTP).

Every test uses only the public API and the shared fixtures, so the file runs unchanged over
every transport, and over tls:// as well. Time is driven with the fake clock; a "receives
nothing" check waits ``NOTHING`` seconds of real time.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from ternmq.broker.embedded import EmbeddedBroker
from ternmq.client import Connection, ConnectionFactory
from ternmq.destination import Queue, Topic
from ternmq.errors import (
    IllegalStateException,
    InvalidDestinationException,
    InvalidSelectorException,
)
from ternmq.testing import FakeClock

from ._helpers import (
    CLIENT,
    browse,
    delivery_count,
    drain,
    exists,
    lose_link,
    marks,
    new_session,
    receive,
    receive_texts,
    send,
    text_message,
    text_or_none,
    texts,
)

# also over tls:// (the server's TLS listener) and failover:(tcp://...) (automatic reconnect)
pytestmark = [pytest.mark.also_tls, pytest.mark.also_failover]

NOTHING = 0.1  # seconds a "receives nothing" check waits (drain() waits as long)
WAIT = 2.0  # seconds a "receives a message" check may wait (receive() too)


# ------------------------------------------------------- broker state (one place)
# Only for requirements about broker state that no JMS API shows: the admin Stat request.
def _broker_knows_queue(broker: EmbeddedBroker, name: str) -> bool:
    return exists(broker, Queue(name))


# ---------------------------------------------------------------------------- PTP-01, 02
def test_ptp_s1_queue_keeps_messages_without_consumers(
    fake_broker: EmbeddedBroker, fake_factory: ConnectionFactory, clock: FakeClock
) -> None:
    """PTP-S1 (PTP-01, PTP-02): messages sent with no consumer anywhere wait in the queue and
    come out in send order to the first consumer; a second consumer then gets nothing."""
    conn = fake_factory.create_connection()
    try:
        s = conn.create_session()
        q = Queue("q1")
        assert not _broker_knows_queue(fake_broker, "q1")
        send(s, q, *[f"m{i}" for i in range(5)])
        clock.advance(1.0)
        conn.start()
        c1 = s.create_consumer(q)
        got = [receive(c1) for _ in range(5)]
        assert texts(got) == ["m0", "m1", "m2", "m3", "m4"]
        assert [m.jms_redelivered for m in got] == [False] * 5
        assert [delivery_count(m) for m in got] == [1] * 5
        c2 = s.create_consumer(q)
        assert c2.receive(NOTHING) is None
        assert c1.receive(NOTHING) is None
    finally:
        conn.close()


def test_ptp_01_acknowledged_message_is_delivered_once(factory: ConnectionFactory) -> None:
    """PTP-01: a message stays on the queue until a consumer acknowledges it; once acknowledged
    it is delivered to nobody else, ever."""
    q = Queue("ptp01")
    with factory.create_connection() as conn:
        conn.start()
        s = new_session(conn, CLIENT)
        send(s, q, "a", "b")
        c = s.create_consumer(q)
        first = receive(c)
        assert text_or_none(first) == "a"
        s.recover()  # not acknowledged: still on the queue
        again = receive(c)
        assert (text_or_none(again), again.jms_redelivered) == ("a", True)
        again.acknowledge()
        assert text_or_none(receive(c)) == "b"  # b was delivered but not acknowledged
        c.close()
        s.close()
    with factory.create_connection() as conn:
        conn.start()
        s = new_session(conn)
        c = s.create_consumer(q)
        m = receive(c)
        assert marks(m) == ("b", True, 2)
        assert c.receive(NOTHING) is None
        assert browse(s, q) == []


def test_ptp_02_queue_reference_creates_nothing(make_broker: Callable[..., EmbeddedBroker]) -> None:
    """PTP-02: Queue(name) and session.create_queue(name) only build references: they create
    nothing in the broker and do not fail when the queue does not exist."""
    broker = make_broker(auto_create=False, queues=("a",))
    factory = ConnectionFactory(broker.url)
    with factory.create_connection() as conn:
        s = conn.create_session()
        ref = s.create_queue("absent")
        assert ref == Queue("absent")
        assert ref.queue_name == "absent"
        assert str(ref) == "queue://absent"
        assert not _broker_knows_queue(broker, "absent")
        # using it is what fails, because auto-creation is off here (PSF-06)
        with pytest.raises(InvalidDestinationException):
            s.create_consumer(ref)
        assert not _broker_knows_queue(broker, "absent")


def test_ptp_03_queue_and_topic_of_same_name_are_unrelated(connection: Connection) -> None:
    """PTP-03: nothing sent to queue://X reaches subscribers of topic://X, and vice versa."""
    s = connection.create_session()
    qc = s.create_consumer(Queue("X"))
    tc = s.create_consumer(Topic("X"))
    send(s, Queue("X"), "to-queue")
    send(s, Topic("X"), "to-topic")
    assert texts(drain(qc)) == ["to-queue"]
    assert texts(drain(tc)) == ["to-topic"]
    assert browse(s, Queue("X")) == []


# ---------------------------------------------------------------------------- PTP-04
def test_ptp_s2_two_consumers_share_a_queue(factory: ConnectionFactory) -> None:
    """PTP-S2 (PTP-04): two consumers in different connections receiving in a loop; 100 sent
    messages are each received exactly once overall, and each consumer gets at least one."""
    q = Queue("ptps2")
    conns = [factory.create_connection() for _ in range(2)]
    try:
        consumers = []
        for conn in conns:
            conn.start()
            consumers.append(conn.create_session().create_consumer(q))
        got: list[list[str | None]] = [[], []]
        total = 100
        done = threading.Event()
        lock = threading.Lock()
        seen = [0]

        def run(i: int) -> None:
            while not done.is_set():
                m = consumers[i].receive(0.05)
                if m is not None:
                    got[i].append(text_or_none(m))
                    with lock:
                        seen[0] += 1
                        if seen[0] >= total:
                            done.set()

        threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        with factory.create_connection() as pconn:
            send(pconn.create_session(), q, *[f"m{i}" for i in range(total)])
        done.wait(10)
        done.set()
        for t in threads:
            t.join(5)
            assert not t.is_alive()
        everything = got[0] + got[1]
        assert len(everything) == total
        assert sorted(everything) == sorted(f"m{i}" for i in range(total))
        assert len(got[0]) >= 1 and len(got[1]) >= 1
        # each consumer still sees its share in send order (REL-19)
        for share in got:
            assert share == sorted(share, key=lambda t: int(t[1:]))  # type: ignore[index]
    finally:
        for conn in conns:
            conn.close()


def test_ptp_04_round_robin_among_consumers_with_credit(connection: Connection) -> None:
    """PTP-04: ternmq dispatches round-robin among consumers with free credit: six messages
    sent to two idle consumers are split three and three, alternating."""
    q = Queue("ptp04rr")
    s1 = connection.create_session()
    s2 = connection.create_session()
    a = s1.create_consumer(q)
    b = s2.create_consumer(q)
    send(connection.create_session(), q, *[f"m{i}" for i in range(6)])
    got_a = texts(drain(a))
    got_b = texts(drain(b))
    assert sorted([got_a, got_b]) == [["m0", "m2", "m4"], ["m1", "m3", "m5"]]


def test_ptp_04_idle_consumer_is_not_starved(factory: ConnectionFactory) -> None:
    """PTP-04: a consumer holding a backlog (full prefetch) does not starve an idle one: with
    prefetch 1, consumer A holds m0 unread while B receives m1..m4 in order."""
    f1 = ConnectionFactory(factory.url, prefetch=1)
    q = Queue("ptp04idle")
    with f1.create_connection() as conn:
        conn.start()
        a = conn.create_session().create_consumer(q)
        send(conn.create_session(), q, "m0")
        b = conn.create_session().create_consumer(q)
        send(conn.create_session(), q, "m1", "m2", "m3", "m4")
        assert receive_texts(b, 4) == ["m1", "m2", "m3", "m4"]
        assert b.receive(NOTHING) is None
        assert texts(drain(a)) == ["m0"]


# ---------------------------------------------------------------------------- PTP-05
def test_ptp_s3_selector_consumer_takes_only_matches(connection: Connection) -> None:
    """PTP-S3 (PTP-05): a consumer with selector c = 'b' receives m2 only; the non-matching
    messages stay in place, and a selector-less consumer then receives m1 then m3."""
    q = Queue("ptps3")
    s = connection.create_session()
    p = s.create_producer(q)
    p.send(text_message(s, "m1", c="r"))
    p.send(text_message(s, "m2", c="b"))
    p.send(text_message(s, "m3", c="r"))
    sel = s.create_consumer(q, "c = 'b'")
    assert texts(drain(sel)) == ["m2"]
    assert browse(s, q) == ["m1", "m3"]
    sel.close()
    plain = s.create_consumer(q)
    assert texts(drain(plain)) == ["m1", "m3"]


def test_ptp_05_non_matching_messages_stay_for_other_consumers(connection: Connection) -> None:
    """PTP-05: two selector consumers on one queue each get exactly their matches, in order;
    a browser with a selector shows only the matching messages left."""
    q = Queue("ptp05")
    s = connection.create_session()
    p = s.create_producer(q)
    for i in range(6):
        p.send(text_message(s, f"m{i}", kind="even" if i % 2 == 0 else "odd"))
    p.send(text_message(s, "other", kind="none"))
    assert browse(s, q, "kind = 'odd'") == ["m1", "m3", "m5"]
    evens = s.create_consumer(q, "kind = 'even'")
    odds = connection.create_session().create_consumer(q, "kind = 'odd'")
    assert texts(drain(evens)) == ["m0", "m2", "m4"]
    assert texts(drain(odds)) == ["m1", "m3", "m5"]
    assert browse(s, q) == ["other"]


# ---------------------------------------------------------------------------- PTP-06
@pytest.mark.parametrize("how", ["session", "connection", "consumer-then-session"])
def test_ptp_06_unacknowledged_messages_return_on_close(
    factory: ConnectionFactory, how: str
) -> None:
    """PTP-06 (CONS-18): messages received but not acknowledged when the session, the
    connection, or the consumer and then its session close go back to the queue and come
    again with jms_redelivered True and JMSXDeliveryCount 2; a merely prefetched message comes
    back unmarked."""
    q = Queue(f"ptp06-{how}")
    conn = factory.create_connection()
    conn.start()
    s = new_session(conn, CLIENT)
    send(s, q, "seen", "prefetched")
    c = s.create_consumer(q)
    assert text_or_none(receive(c)) == "seen"
    if how == "session":
        s.close()
    elif how == "connection":
        conn.close()
    else:
        c.close()
        s.close()
    conn.close()
    with factory.create_connection() as conn2:
        conn2.start()
        c2 = conn2.create_session().create_consumer(q)
        got = drain(c2)
        assert [marks(m) for m in got] == [
            ("seen", True, 2),
            ("prefetched", False, 1),
        ]


def test_ptp_06_transacted_session_close_returns_messages(factory: ConnectionFactory) -> None:
    """PTP-06: closing a transacted session with received, uncommitted messages returns them
    redelivered with an incremented JMSXDeliveryCount."""
    q = Queue("ptp06tx")
    with factory.create_connection() as conn:
        conn.start()
        s = conn.create_session(True)
        c = s.create_consumer(q)
        send(conn.create_session(), q, "a", "b")
        assert receive_texts(c, 2) == ["a", "b"]
        s.close()
        c2 = conn.create_session().create_consumer(q)
        got = drain(c2)
        assert [marks(m) for m in got] == [
            ("a", True, 2),
            ("b", True, 2),
        ]


def test_ptp_06_lost_connection_returns_messages_marked(
    factory: ConnectionFactory, transport: str
) -> None:
    """PTP-06, REL-10: when the connection is lost, a message that was received but not
    acknowledged goes back to the queue and comes again with jms_redelivered True and
    JMSXDeliveryCount 2 (over failover: to the same consumer, re-created on the new link)."""
    q = Queue("ptp06lost")
    conn = factory.create_connection()
    conn.start()
    s = new_session(conn, CLIENT)
    send(s, q, "seen")
    c = s.create_consumer(q)
    assert text_or_none(receive(c)) == "seen"
    lose_link(conn)
    try:
        if transport == "failover":  # CONN-30: the connection reconnects, its consumer too
            assert marks(receive(c, 10)) == ("seen", True, 2)
            return
        with factory.create_connection() as conn2:
            conn2.start()
            m = receive(conn2.create_session().create_consumer(q))
            assert marks(m) == ("seen", True, 2)
    finally:
        conn.close()


# ---------------------------------------------------------------------------- PTP-07
def test_ptp_07_deleted_and_recreated_destination_has_no_old_messages(
    factory: ConnectionFactory,
) -> None:
    """PTP-07 (PSF-10): a destination deleted and created again under the same name shows none
    of the old messages. ternmq has no administrative delete for queues yet; the deletions it
    offers are unsubscribing a durable subscription and deleting a temporary queue."""
    t = Topic("ptp07")
    with factory.create_connection() as conn:
        conn.client_id = "ptp07-client"
        conn.start()
        s = conn.create_session()
        c = s.create_durable_consumer(t, "d")
        c.close()
        send(s, t, "old-1", "old-2")
        s.unsubscribe("d")
        c = s.create_durable_consumer(t, "d")
        assert c.receive(NOTHING) is None
        send(s, t, "new")
        assert texts(drain(c)) == ["new"]
        c.close()
        s.unsubscribe("d")
        tq = s.create_temporary_queue()
        send(s, tq, "temp-old")
        tq.delete()
        with pytest.raises(InvalidDestinationException):
            s.create_consumer(tq)


# ---------------------------------------------------------------------------- PTP-08
def test_ptp_s4_browse_does_not_consume(connection: Connection) -> None:
    """PTP-S4 (PTP-08): browsing yields the three messages in order, twice; a consumer then
    receives them as first deliveries; browsing afterwards yields nothing."""
    q = Queue("ptps4")
    s = connection.create_session()
    send(s, q, "m1", "m2", "m3")
    browser = s.create_browser(q)
    first = list(browser)
    assert texts(first) == ["m1", "m2", "m3"]
    assert [m.jms_redelivered for m in first] == [False] * 3
    assert texts(browser) == ["m1", "m2", "m3"]
    c = s.create_consumer(q)
    got = [receive(c) for _ in range(3)]
    assert [marks(m) for m in got] == [
        ("m1", False, 1),
        ("m2", False, 1),
        ("m3", False, 1),
    ]
    assert texts(browser) == []
    browser.close()


def test_ptp_08_browse_order_is_consumer_order(connection: Connection) -> None:
    """PTP-08 (REL-21): a browser yields messages in the order a selector-less consumer would
    receive them (priority first, FIFO within a priority), with their headers and properties."""
    q = Queue("ptp08order")
    s = connection.create_session()
    p = s.create_producer(q)
    for text, prio in [("a", 0), ("b", 9), ("c", 4), ("d", 9), ("e", 0)]:
        p.send(text_message(s, text, n=text), priority=prio)
    browsed = list(s.create_browser(q))
    assert texts(browsed) == ["b", "d", "c", "a", "e"]
    assert [m.jms_priority for m in browsed] == [9, 9, 4, 0, 0]
    assert [m.get_string_property("n") for m in browsed] == ["b", "d", "c", "a", "e"]
    assert all(m.jms_destination == q for m in browsed)
    c = s.create_consumer(q)
    assert texts(drain(c)) == ["b", "d", "c", "a", "e"]


# ---------------------------------------------------------------------------- PTP-09, 10
def test_ptp_s5_browser_hides_delayed_messages_and_validates(
    fake_factory: ConnectionFactory, clock: FakeClock
) -> None:
    """PTP-S5 (PTP-10, PTP-09): a browser does not show a message before its delivery time;
    after it, it does. Browsing a topic or with a bad selector is refused."""
    with fake_factory.create_connection() as conn:
        s = conn.create_session()
        q = Queue("ptps5")
        p = s.create_producer(q)
        p.send(text_message(s, "m1"), delivery_delay=2.0)
        p.send(text_message(s, "m2"))
        assert browse(s, q) == ["m2"]
        clock.advance(1.999)
        assert browse(s, q) == ["m2"]
        clock.advance(0.501)
        assert browse(s, q) == ["m1", "m2"]
        with pytest.raises(InvalidDestinationException):
            s.create_browser(Topic("t"))  # type: ignore[arg-type]
        with pytest.raises(InvalidSelectorException):
            s.create_browser(q, "a =")


def test_ptp_09_create_browser_argument_checks(connection: Connection) -> None:
    """PTP-09: None, a topic or a temporary topic raise InvalidDestinationException; a bad
    selector raises InvalidSelectorException; "" and None both mean no selector; queue and
    message_selector return what was given."""
    s = connection.create_session()
    q = Queue("ptp09")
    with pytest.raises(InvalidDestinationException):
        s.create_browser(None)  # type: ignore[arg-type]
    with pytest.raises(InvalidDestinationException):
        s.create_browser(Topic("ptp09"))  # type: ignore[arg-type]
    with pytest.raises(InvalidDestinationException):
        s.create_browser(s.create_temporary_topic())  # type: ignore[arg-type]
    with pytest.raises(InvalidSelectorException):
        s.create_browser(q, "x = = 1")
    send(s, q, "m")
    for empty in ("", None):
        b = s.create_browser(q, empty)
        assert b.queue == q
        assert b.message_selector is None
        assert texts(b) == ["m"]
    b = s.create_browser(q, "x = 1")
    assert b.message_selector == "x = 1"
    assert texts(b) == []
    tq = s.create_temporary_queue()
    send(s, tq, "t")
    assert texts(s.create_browser(tq)) == ["t"]


def test_ptp_10_browser_hides_expired_messages(
    fake_factory: ConnectionFactory, clock: FakeClock
) -> None:
    """PTP-10 (REL-23): a browser never yields a message whose expiration has passed."""
    with fake_factory.create_connection() as conn:
        s = conn.create_session()
        q = Queue("ptp10exp")
        p = s.create_producer(q)
        p.send(text_message(s, "short"), time_to_live=1.0)
        p.send(text_message(s, "long"), time_to_live=10.0)
        p.send(text_message(s, "forever"))
        assert browse(s, q) == ["short", "long", "forever"]
        clock.advance(1.0)
        assert browse(s, q) == ["long", "forever"]
        clock.advance(9.0)
        assert browse(s, q) == ["forever"]


# ---------------------------------------------------------------------------- PTP-11, 12, 13
def test_ptp_11_each_iteration_is_a_fresh_scan(connection: Connection) -> None:
    """PTP-11: each iter(browser) starts from the head of the queue; a message consumed during
    a scan before the scan reached it is skipped; one arriving during it may or may not
    appear."""
    q = Queue("ptp11")
    s = connection.create_session()
    p = s.create_producer(q)
    n = 250
    for i in range(n):
        p.send(text_message(s, f"m{i}", i=i))
    browser = s.create_browser(q)
    it = iter(browser)
    assert text_or_none(next(it)) == "m0"
    taker = connection.create_session().create_consumer(q, "i = 230")
    assert text_or_none(receive(taker)) == "m230"
    p.send(text_message(s, "late", i=-1))
    rest = texts(it)
    expected = [f"m{i}" for i in range(1, n) if i != 230]
    assert rest in (expected, [*expected, "late"])
    again = texts(browser)
    assert again == ["m0", *expected, "late"]


def test_ptp_12_browser_shows_dispatched_unacknowledged_messages(connection: Connection) -> None:
    """PTP-12 (PSF-08): messages handed to a consumer but not acknowledged, and messages sitting
    in a consumer's prefetch buffer, are still on the queue for a browser."""
    q = Queue("ptp12")
    s = new_session(connection, CLIENT)
    send(s, q, "m1", "m2", "m3")
    c = s.create_consumer(q)
    assert text_or_none(receive(c)) == "m1"  # m2 and m3 sit in the prefetch buffer
    other = connection.create_session()
    assert browse(other, q) == ["m1", "m2", "m3"]
    c.receive(WAIT).acknowledge()  # type: ignore[union-attr]
    assert browse(other, q) == ["m3"]


def test_ptp_13_browsing_works_on_a_stopped_connection(factory: ConnectionFactory) -> None:
    """PTP-13: browsing works whether or not the connection has been started."""
    q = Queue("ptp13")
    with factory.create_connection() as conn:
        s = conn.create_session()
        send(s, q, "a", "b")
        assert browse(s, q) == ["a", "b"]
        conn.start()
        conn.stop()
        assert browse(s, q) == ["a", "b"]


# ---------------------------------------------------------------------------- PTP-14
def test_ptp_14_closed_browser(connection: Connection) -> None:
    """PTP-14: after browser.close() a new iteration raises IllegalStateException, an iteration
    already in progress simply ends, and closing twice is a no-op."""
    q = Queue("ptp14")
    s = connection.create_session()
    send(s, q, "a", "b", "c")
    b = s.create_browser(q)
    it = iter(b)
    assert text_or_none(next(it)) == "a"
    b.close()
    assert list(it) == []
    b.close()
    with pytest.raises(IllegalStateException):
        iter(b)
    with pytest.raises(IllegalStateException):
        _ = b.queue
    with pytest.raises(IllegalStateException):
        _ = b.message_selector


@pytest.mark.parametrize("closer", ["session", "connection"])
def test_ptp_14_browser_of_closed_session_or_connection(
    factory: ConnectionFactory, closer: str
) -> None:
    """PTP-14: closing the browser's session or connection ends an iteration in progress and
    makes a new iteration raise IllegalStateException."""
    q = Queue(f"ptp14-{closer}")
    conn = factory.create_connection()
    s = conn.create_session()
    send(s, q, "a", "b")
    b = s.create_browser(q)
    it = iter(b)
    assert text_or_none(next(it)) == "a"
    if closer == "session":
        s.close()
    else:
        conn.close()
    assert list(it) == []
    with pytest.raises(IllegalStateException):
        iter(b)
    b.close()
    conn.close()
