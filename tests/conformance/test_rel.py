"""Reliability conformance: delivery guarantees, redelivery markers, ordering, priorities,
expiry and delivery delay (catalog REL).

Restart durability on disk (REL-01 "survives a restart", REL-09, REL-S1 with ``data_dir``) is the
durable store's issue; here the broker is restarted with ``stop()`` then ``start()``: an embedded
broker on its memory store or data directory, or a ``ternmq serve`` process stopped with SIGTERM
and started again on its data directory and port.
Time is driven with the fake clock; a "receives nothing" check waits ``NOTHING`` seconds.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from ternmq.broker.embedded import EmbeddedBroker
from ternmq.client import Connection, ConnectionFactory, MessageConsumer
from ternmq.destination import Queue, Topic
from ternmq.errors import InvalidDestinationException
from ternmq.message import Message, TextMessage
from ternmq.testing import FakeClock

from ._helpers import (
    AUTO,
    CLIENT,
    DUPS_OK,
    NP,
    TRANSACTED,
    MakeBroker,
    P,
    browse,
    delivery_count,
    drain,
    lose_link,
    marks,
    new_session,
    receive,
    send,
    text_message,
    text_or_none,
    texts,
)

NOTHING = 0.1  # seconds a "receives nothing" check waits (drain() waits as long)
WAIT = 2.0  # seconds a "receives a message" check may wait (receive() too)


# ---------------------------------------------------------------------------- helpers


class _Recorder:
    """A completion listener that records outcomes."""

    def __init__(self) -> None:
        self.done: list[str | None] = []
        self.failed: list[Exception] = []
        self.event = threading.Event()

    def on_completion(self, message: Message) -> None:
        self.done.append(text_or_none(message))
        self.event.set()

    def on_exception(self, message: Message, exception: Exception) -> None:
        self.failed.append(exception)
        self.event.set()


# ------------------------------------------------------- broker internals (one place)


def _restart(broker: EmbeddedBroker) -> None:
    """Stop the broker and start it again on the same store, at the same URL."""
    broker.stop()
    broker.start()


# ---------------------------------------------------------------------------- REL-01..REL-09
def test_rel_01_persistent_message_delivered_once_and_only_once(
    factory: ConnectionFactory,
) -> None:
    """REL-01 (in-process part): a PERSISTENT message on a queue and on a durable subscription
    outlives every connection until it is acknowledged, and is never delivered again after."""
    q, t = Queue("rel01"), Topic("rel01")
    with factory.create_connection() as conn:
        conn.client_id = "rel01"
        conn.create_session().create_durable_consumer(t, "d").close()
    with factory.create_connection() as conn:
        s = conn.create_session()
        send(s, q, "q-msg", delivery_mode=P)
        send(s, t, "t-msg", delivery_mode=P)
    for _ in range(2):  # unacknowledged receipts do not consume it
        with factory.create_connection() as conn:
            conn.client_id = "rel01"
            conn.start()
            s = new_session(conn, CLIENT)
            assert text_or_none(receive(s.create_consumer(q))) == "q-msg"
            assert text_or_none(receive(s.create_durable_consumer(t, "d"))) == "t-msg"
    with factory.create_connection() as conn:
        conn.client_id = "rel01"
        conn.start()
        s = new_session(conn, AUTO)
        qm = receive(s.create_consumer(q))
        tm = receive(s.create_durable_consumer(t, "d"))
        assert marks(qm) == ("q-msg", True, 3)
        assert marks(tm) == ("t-msg", True, 3)
    with factory.create_connection() as conn:
        conn.client_id = "rel01"
        conn.start()
        s = new_session(conn, CLIENT)
        assert s.create_consumer(q).receive(NOTHING) is None
        assert s.create_durable_consumer(t, "d").receive(NOTHING) is None


def test_rel_s1_restart_keeps_persistent_messages_and_durable_subscriptions(
    broker: EmbeddedBroker, factory: ConnectionFactory
) -> None:
    """REL-S1 (REL-01, REL-03, REL-09), in-process restart on the memory store: after a restart
    the queue yields exactly the 3 PERSISTENT messages and durable subscription "d" of client
    "c1" exactly the 3 PERSISTENT ones published to T; NON_PERSISTENT ones are gone."""
    q, t = Queue("rels1"), Topic("rels1")
    with factory.create_connection() as conn:
        conn.client_id = "c1"
        conn.create_session().create_durable_consumer(t, "d").close()
    with factory.create_connection() as conn:
        s = conn.create_session()
        for i in range(3):
            send(s, q, f"p{i}", delivery_mode=P)
            send(s, q, f"n{i}", delivery_mode=NP)
            send(s, t, f"p{i}", delivery_mode=P)
            send(s, t, f"n{i}", delivery_mode=NP)
    _restart(broker)
    with factory.create_connection() as conn:
        conn.client_id = "c1"
        conn.start()
        s = conn.create_session()
        assert texts(drain(s.create_consumer(q))) == ["p0", "p1", "p2"]
        assert texts(drain(s.create_durable_consumer(t, "d"))) == ["p0", "p1", "p2"]


def test_rel_09_subscription_definition_survives_restart(
    broker: EmbeddedBroker, factory: ConnectionFactory
) -> None:
    """REL-09 (in-process restart): a durable subscription keeps its topic, selector and
    no_local after a restart; a temporary queue does not survive it."""
    t = Topic("rel09")
    with factory.create_connection() as conn:
        conn.client_id = "rel09"
        s = conn.create_session()
        s.create_durable_consumer(t, "sel", "k = 1", no_local=True).close()
        tq = s.create_temporary_queue()
        send(s, tq, "temp")
    _restart(broker)
    with factory.create_connection() as conn:
        conn.client_id = "rel09"
        conn.start()
        s = conn.create_session()
        p = s.create_producer(t)
        p.send(text_message(s, "own", k=1))  # no_local: published by the subscriber's own client id
        with factory.create_connection() as other:
            os_ = other.create_session()
            op = os_.create_producer(t)
            op.send(text_message(os_, "k2", k=2))
            op.send(text_message(os_, "k1", k=1))
        c = s.create_durable_consumer(t, "sel", "k = 1", no_local=True)
        assert texts(drain(c)) == ["k1"]
        with pytest.raises(InvalidDestinationException):
            s.create_producer(tq).send(text_message(s, "x"))


def test_rel_02_non_persistent_is_delivered_at_most_once(connection: Connection) -> None:
    """REL-02: NON_PERSISTENT messages are delivered once; nothing delivers one twice."""
    q = Queue("rel02")
    s = connection.create_session()
    send(s, q, *[f"n{i}" for i in range(5)], delivery_mode=NP)
    c = s.create_consumer(q)
    got = drain(c)
    assert texts(got) == [f"n{i}" for i in range(5)]
    assert [(m.jms_redelivered, delivery_count(m), m.jms_delivery_mode) for m in got] == [
        (False, 1, NP)
    ] * 5
    c.close()
    assert drain(connection.create_session().create_consumer(q)) == []


def test_rel_03_non_persistent_kept_while_broker_runs(
    fake_factory: ConnectionFactory, clock: FakeClock
) -> None:
    """REL-03: a NON_PERSISTENT message on a queue and on an inactive durable subscription is
    kept in memory while the broker runs, however long no consumer is there."""
    q, t = Queue("rel03"), Topic("rel03")
    with fake_factory.create_connection() as conn:
        conn.client_id = "rel03"
        s = conn.create_session()
        s.create_durable_consumer(t, "d").close()
        send(s, q, "nq", delivery_mode=NP)
        send(s, t, "nt", delivery_mode=NP)
    clock.advance(7 * 24 * 3600.0)
    with fake_factory.create_connection() as conn:
        conn.client_id = "rel03"
        conn.start()
        s = conn.create_session()
        assert texts(drain(s.create_consumer(q))) == ["nq"]
        assert texts(drain(s.create_durable_consumer(t, "d"))) == ["nt"]


def test_rel_04_subscription_guarantees(factory: ConnectionFactory) -> None:
    """REL-04: a non-durable subscription receives each PERSISTENT and NON_PERSISTENT message
    once, but only those published while it exists; a durable subscription receives them
    regardless of activity."""
    t = Topic("rel04")
    with factory.create_connection() as conn:
        conn.client_id = "rel04"
        conn.start()
        s = conn.create_session()
        s.create_durable_consumer(t, "d").close()
        send(s, t, "before", delivery_mode=P)
        nd = s.create_consumer(t)
        send(s, t, "p", delivery_mode=P)
        send(s, t, "n", delivery_mode=NP)
        assert texts(drain(nd)) == ["p", "n"]
        nd.close()
        send(s, t, "after", delivery_mode=NP)
        assert texts(drain(s.create_durable_consumer(t, "d"))) == ["before", "p", "n", "after"]
        assert drain(s.create_consumer(t)) == []


def test_rel_05_acknowledged_or_committed_never_delivered_again(factory: ConnectionFactory) -> None:
    """REL-05 (SESS-25): once acknowledged (AUTO, CLIENT) or committed, a message never comes
    back: not after recover, rollback, nor a new connection."""
    q = Queue("rel05")
    with factory.create_connection() as conn:
        conn.start()
        auto = new_session(conn, AUTO)
        send(auto, q, "a1", "a2")
        ca = auto.create_consumer(q)
        assert texts([receive(ca), receive(ca)]) == ["a1", "a2"]
        auto.recover()
        assert ca.receive(NOTHING) is None
        ca.close()
        client = new_session(conn, CLIENT)
        send(client, q, "c1")
        cc = client.create_consumer(q)
        receive(cc).acknowledge()
        client.recover()
        assert cc.receive(NOTHING) is None
        cc.close()
        tx = new_session(conn, TRANSACTED)
        send(auto, q, "t1")
        ct = tx.create_consumer(q)
        assert text_or_none(receive(ct)) == "t1"
        tx.commit()
        tx.rollback()
        assert ct.receive(NOTHING) is None
    with factory.create_connection() as conn:
        conn.start()
        assert drain(conn.create_session().create_consumer(q)) == []


def test_rel_06_one_send_one_copy_per_queue_and_subscription(factory: ConnectionFactory) -> None:
    """REL-06 (SESS-26): one send puts exactly one copy in a queue and one in each matching
    subscription (durable, non-durable, shared with two consumers)."""
    q, t = Queue("rel06"), Topic("rel06")
    with factory.create_connection() as conn:
        conn.client_id = "rel06"
        conn.start()
        s = conn.create_session()
        durable = s.create_durable_consumer(t, "d")
        plain = s.create_consumer(t)
        shared1 = s.create_shared_consumer(t, "sh")
        shared2 = conn.create_session().create_shared_consumer(t, "sh")
        qc = s.create_consumer(q)
        send(s, q, "one")
        send(s, t, "one")
        assert texts(drain(qc)) == ["one"]
        assert texts(drain(durable)) == ["one"]
        assert texts(drain(plain)) == ["one"]
        assert sorted(texts(drain(shared1) + drain(shared2))) == ["one"]  # type: ignore[type-var]


def test_rel_07_non_durable_and_temporary_lose_messages_with_owner(
    factory: ConnectionFactory,
) -> None:
    """REL-07: a non-durable subscription loses its pending messages when its consumer closes;
    a temporary queue loses them with its connection; a queue keeps them."""
    t, q = Topic("rel07"), Queue("rel07")
    with factory.create_connection() as conn:
        s = conn.create_session()  # connection stopped: messages stay pending in the broker
        nd = s.create_consumer(t)
        send(s, t, "pending")
        send(s, q, "kept")
        nd.close()
        tq = s.create_temporary_queue()
        send(s, tq, "temp")
        conn.start()
        assert drain(s.create_consumer(t)) == []
    with factory.create_connection() as conn:
        conn.start()
        s = conn.create_session()
        with pytest.raises(InvalidDestinationException):
            s.create_producer(tq).send(text_message(s, "x"))
        assert texts(drain(s.create_consumer(q))) == ["kept"]


# ---------------------------------------------------------------------------- REL-10..REL-17
CAUSES = [
    "recover",
    "rollback",
    "close-client-session",
    "close-transacted-session",
    "close-client-consumer-then-recover",
    "close-connection",
    "lost-connection",
    "broker-restart",
]


@pytest.mark.parametrize("cause", CAUSES)
def test_rel_10_every_redelivery_is_marked(
    broker: EmbeddedBroker, factory: ConnectionFactory, cause: str
) -> None:
    """REL-10, REL-11, REL-12: whatever returns an unacknowledged message (recover, rollback,
    closing a CLIENT or transacted session, closing the consumer then recovering, closing or
    losing the connection, a broker restart), the next delivery has jms_redelivered True and
    a JMSXDeliveryCount one higher, each time."""
    q = Queue(f"rel10-{cause}")
    mode = TRANSACTED if cause in ("rollback", "close-transacted-session") else CLIENT
    with factory.create_connection() as conn:
        send(conn.create_session(), q, "m")
    conn = factory.create_connection()
    conn.start()
    s = new_session(conn, mode)
    c = s.create_consumer(q)
    assert marks(receive(c)) == ("m", False, 1)
    for expected in (2, 3):
        if cause == "recover":
            s.recover()
        elif cause == "rollback":
            s.rollback()
        elif cause in ("close-client-session", "close-transacted-session"):
            s.close()
        elif cause == "close-client-consumer-then-recover":
            c.close()
            s.recover()
        elif cause == "close-connection":
            conn.close()
        elif cause == "lost-connection":
            lose_link(conn)
            conn.close()
        else:
            _restart(broker)
            conn.close()
        if s.closed or conn.closed:
            if conn.closed:
                conn = factory.create_connection()
                conn.start()
            s = new_session(conn, mode)
        if c._closed:
            c = s.create_consumer(q)
        m = receive(c)
        assert marks(m) == ("m", True, expected)
    conn.close()


def test_rel_11_delivery_count_property(connection: Connection) -> None:
    """REL-11: every received message carries the int JMSXDeliveryCount (1 on a first delivery),
    visible through every property accessor; metadata lists the JMSX names; a value the sender
    put there is overwritten."""
    q = Queue("rel11")
    s = new_session(connection, CLIENT)
    m = text_message(s, "m")
    m.set_int_property("JMSXDeliveryCount", 7)
    s.create_producer(q).send(m)
    c = s.create_consumer(q)
    got = receive(c)
    assert got.jms_redelivered is False
    assert got.get_int_property("JMSXDeliveryCount") == 1
    assert got.get_object_property("JMSXDeliveryCount") == 1
    assert type(got.get_object_property("JMSXDeliveryCount")) is int
    assert got.property_exists("JMSXDeliveryCount")
    assert "JMSXDeliveryCount" in got.get_property_names()
    names = set(connection.metadata.jmsx_property_names)
    assert {"JMSXDeliveryCount", "JMSXGroupID", "JMSXGroupSeq"} <= names
    s.recover()
    again = receive(c)
    assert (again.jms_redelivered, again.get_int_property("JMSXDeliveryCount")) == (True, 2)


def test_rel_12_restart_after_delivery_marks_redelivered(
    broker: EmbeddedBroker, factory: ConnectionFactory
) -> None:
    """REL-12 (A-14): a message handed to the application before a broker restart and not
    acknowledged comes back with jms_redelivered True and a count of at least 2."""
    q = Queue("rel12")
    conn = factory.create_connection()
    conn.start()
    s = new_session(conn, CLIENT)
    send(s, q, "m", delivery_mode=P)
    assert marks(receive(s.create_consumer(q))) == ("m", False, 1)
    _restart(broker)
    conn.close()
    with factory.create_connection() as conn2:
        conn2.start()
        m = receive(conn2.create_session().create_consumer(q))
        assert text_or_none(m) == "m"
        assert m.jms_redelivered is True
        assert delivery_count(m) >= 2


def test_rel_13_sender_redelivered_flag_is_ignored(connection: Connection) -> None:
    """REL-13: jms_redelivered set by the sender is ignored; a first delivery shows False."""
    q = Queue("rel13")
    s = connection.create_session()
    m = text_message(s, "m")
    m.jms_redelivered = True
    s.create_producer(q).send(m)
    got = receive(s.create_consumer(q))
    assert (got.jms_redelivered, delivery_count(got)) == (False, 1)


def test_rel_s8_redelivered_copy_is_the_original(connection: Connection) -> None:
    """REL-S8 (REL-14): changes the consumer made to its copy (clear_body, clear_properties, new
    text) are not visible in the redelivered copy; only the provider-set fields differ."""
    q = Queue("rels8")
    s = new_session(connection, CLIENT)
    sent = text_message(s, "a")
    sent.set_int_property("p", 1)
    s.create_producer(q).send(sent)
    c = s.create_consumer(q)
    m = receive(c)
    assert isinstance(m, TextMessage)
    m.clear_body()
    m.text = "b"
    m.clear_properties()
    assert not m.property_exists("p")
    s.recover()
    again = receive(c)
    assert isinstance(again, TextMessage)
    assert again.text == "a"
    assert again.get_int_property("p") == 1
    assert again.jms_message_id == sent.jms_message_id
    assert again.jms_timestamp == sent.jms_timestamp
    assert (again.jms_redelivered, delivery_count(again)) == (True, 2)


def test_rel_s2_recover_redelivers_from_first_unacknowledged(connection: Connection) -> None:
    """REL-S2 (REL-10, REL-11, REL-15): CLIENT_ACKNOWLEDGE: m1, m2 come first unmarked; after
    recover() both come again marked (count 2); after acknowledging and recovering again,
    nothing comes."""
    q = Queue("rels2")
    s = new_session(connection, CLIENT)
    send(s, q, "m1", "m2")
    c = s.create_consumer(q)
    assert [marks(receive(c)), marks(receive(c))] == [("m1", False, 1), ("m2", False, 1)]
    s.recover()
    m1, m2 = receive(c), receive(c)
    assert [marks(m1), marks(m2)] == [("m1", True, 2), ("m2", True, 2)]
    m2.acknowledge()
    s.recover()
    assert c.receive_no_wait() is None
    assert c.receive(NOTHING) is None


def test_rel_15_recover_sequence_may_change(
    fake_factory: ConnectionFactory, clock: FakeClock
) -> None:
    """REL-15: after recover() the sequence restarts from the oldest unacknowledged message,
    except that expired messages are dropped and a newly arrived higher-priority message and a
    delayed message that has become due may come first."""
    q = Queue("rel15")
    with fake_factory.create_connection() as conn:
        conn.start()
        s = new_session(conn, CLIENT)
        p = s.create_producer(q)
        p.send(text_message(s, "short"), time_to_live=1.0)
        p.send(text_message(s, "m1"))
        p.send(text_message(s, "m2"))
        c = s.create_consumer(q)
        assert texts([receive(c), receive(c)]) == ["short", "m1"]
        other = conn.create_session()
        op = other.create_producer(q)
        op.send(text_message(other, "urgent"), priority=9)
        op.send(text_message(other, "due"), priority=9, delivery_delay=0.5)
        clock.advance(1.0)
        s.recover()
        got = drain(c)
        assert [marks(m) for m in got] == [
            ("urgent", False, 1),
            ("due", False, 1),
            ("m1", True, 2),
            ("m2", False, 1),
        ]


def test_rel_s3_rollback_returns_to_original_position(connection: Connection) -> None:
    """REL-S3 (REL-10, REL-16): a rolled-back message comes back before later messages, with its
    count raised on each rollback; committed, nothing is left."""
    q = Queue("rels3")
    send(connection.create_session(), q, "m1", "m2", "m3")
    s = new_session(connection, TRANSACTED)
    c = s.create_consumer(q)
    assert marks(receive(c)) == ("m1", False, 1)
    s.rollback()
    assert marks(receive(c)) == ("m1", True, 2)
    s.rollback()
    assert marks(receive(c)) == ("m1", True, 3)
    assert [marks(receive(c)), marks(receive(c))] == [("m2", False, 1), ("m3", False, 1)]
    s.commit()
    c.close()
    assert drain(connection.create_session().create_consumer(q)) == []


def test_rel_16_returned_messages_go_ahead_of_later_ones(factory: ConnectionFactory) -> None:
    """REL-16: messages returned by closing a CLIENT session go back to their original place,
    ahead of messages sent after them and of the ones that were only prefetched."""
    q = Queue("rel16")
    with factory.create_connection() as conn:
        conn.start()
        s = new_session(conn, CLIENT)
        send(s, q, "m1", "m2", "m3")
        c = s.create_consumer(q)
        assert texts([receive(c), receive(c)]) == ["m1", "m2"]
        send(conn.create_session(), q, "m4")
        s.close()
        got = drain(conn.create_session().create_consumer(q))
        assert [marks(m) for m in got] == [
            ("m1", True, 2),
            ("m2", True, 2),
            ("m3", False, 1),
            ("m4", False, 1),
        ]


def _listen(
    consumer: MessageConsumer, behaviour: Callable[[Message, int], None], calls: int
) -> list[tuple[str | None, bool, int]]:
    """Install a listener that runs ``behaviour(message, call_index)``; wait for ``calls``
    calls; return what each call saw."""
    seen: list[tuple[str | None, bool, int]] = []
    enough = threading.Event()

    def listener(m: Message) -> None:
        seen.append(marks(m))
        if len(seen) >= calls:
            enough.set()
        behaviour(m, len(seen) - 1)

    consumer.message_listener = listener
    assert enough.wait(WAIT), f"listener called {len(seen)} times, expected {calls}"
    return seen


@pytest.mark.parametrize("mode", [AUTO, DUPS_OK])
def test_rel_s7_failing_listener_in_auto_modes_gets_the_message_again(
    connection: Connection, mode: int
) -> None:
    """REL-S7 (REL-17, REL-10): an AUTO_ACKNOWLEDGE (or DUPS_OK) listener that raises on its
    first call gets the same message at once, marked redelivered with count 2; after it
    returns normally the queue is empty."""
    q = Queue(f"rels7-{mode}")
    s = new_session(connection, mode)
    send(s, q, "m")
    c = s.create_consumer(q)

    def behaviour(m: Message, i: int) -> None:
        if i == 0:
            raise RuntimeError("listener failure (expected by the test)")

    seen = _listen(c, behaviour, 2)
    assert seen == [("m", False, 1), ("m", True, 2)]
    c.close()
    s.close()
    assert drain(connection.create_session().create_consumer(q)) == []
    assert len(seen) == 2


def test_rel_17_failing_listener_client_mode_moves_on(connection: Connection) -> None:
    """REL-17: in CLIENT_ACKNOWLEDGE a listener that raises gets the next message; the failed
    one stays unacknowledged until recover(), which redelivers both."""
    q = Queue("rel17client")
    s = new_session(connection, CLIENT)
    send(connection.create_session(), q, "m1", "m2")
    c = s.create_consumer(q)

    def behaviour(m: Message, i: int) -> None:
        if i == 0:
            raise RuntimeError("listener failure (expected by the test)")
        if i == 1:
            s.recover()
        if i == 3:
            m.acknowledge()

    seen = _listen(c, behaviour, 4)
    assert seen == [("m1", False, 1), ("m2", False, 1), ("m1", True, 2), ("m2", True, 2)]
    c.close()
    s.close()
    assert drain(connection.create_session().create_consumer(q)) == []


def test_rel_17_failing_listener_transacted_moves_on(connection: Connection) -> None:
    """REL-17: in a transacted session a listener that raises gets the next message and nothing
    is rolled back: a later commit consumes both."""
    q = Queue("rel17tx")
    s = new_session(connection, TRANSACTED)
    send(connection.create_session(), q, "m1", "m2")
    c = s.create_consumer(q)

    def behaviour(m: Message, i: int) -> None:
        if i == 0:
            raise RuntimeError("listener failure (expected by the test)")
        s.commit()

    seen = _listen(c, behaviour, 2)
    assert seen == [("m1", False, 1), ("m2", False, 1)]
    c.close()
    s.close()
    assert drain(connection.create_session().create_consumer(q)) == []


# ---------------------------------------------------------------------------- REL-18..REL-21
def test_rel_18_order_per_session_and_destination(connection: Connection) -> None:
    """REL-18: messages one session sends to one destination, through two producers, with
    synchronous and asynchronous sends mixed, reach the consumer in send order."""
    q = Queue("rel18")
    s = connection.create_session()
    p1 = s.create_producer(q)
    p2 = s.create_producer(None)
    rec = _Recorder()
    expected = []
    for i in range(30):
        text = f"m{i}"
        expected.append(text)
        if i % 3 == 0:
            p1.send(text_message(s, text))
        elif i % 3 == 1:
            p2.send(text_message(s, text), destination=q, completion_listener=rec)
        else:
            p1.send(text_message(s, text), completion_listener=rec)
    p1.close()
    p2.close()  # waits for the completion listeners
    assert rec.failed == []
    assert len(rec.done) == 20
    c = connection.create_session().create_consumer(q)
    assert texts(drain(c)) == expected


def test_rel_s6_order_kept_within_delivery_mode(connection: Connection) -> None:
    """REL-S6 (REL-19): N1 (NON_PERSISTENT), P1, N2, P2 at one priority: all four arrive, N1
    before N2 and P1 before P2."""
    q = Queue("rels6")
    s = connection.create_session()
    p = s.create_producer(q)
    for text, mode in [("N1", NP), ("P1", P), ("N2", NP), ("P2", P)]:
        p.send(text_message(s, text), delivery_mode=mode)
    got = texts(drain(s.create_consumer(q)))
    assert sorted(got) == ["N1", "N2", "P1", "P2"]  # type: ignore[type-var]
    assert got.index("N1") < got.index("N2")
    assert got.index("P1") < got.index("P2")


def test_rel_19_permitted_deviations_priority_and_delivery_time(
    fake_factory: ConnectionFactory, clock: FakeClock
) -> None:
    """REL-19: a higher priority overtakes a lower one, and a later delivery time is delivered
    after an earlier one sent later; otherwise send order holds."""
    q = Queue("rel19")
    with fake_factory.create_connection() as conn:
        s = conn.create_session()
        p = s.create_producer(q)
        p.send(text_message(s, "late"), delivery_delay=2.0)
        p.send(text_message(s, "early"), delivery_delay=1.0)
        p.send(text_message(s, "low"), priority=1)
        p.send(text_message(s, "plain"))
        p.send(text_message(s, "high"), priority=8)
        conn.start()
        c = s.create_consumer(q)
        assert texts(drain(c)) == ["high", "plain", "low"]
        clock.advance(1.0)
        assert texts(drain(c)) == ["early"]
        clock.advance(1.0)
        assert texts(drain(c)) == ["late"]


def test_rel_20_transaction_keeps_order_and_is_atomic(connection: Connection) -> None:
    """REL-20: the messages of one transaction to a destination keep their order, become
    visible together at commit, and none after rollback."""
    q, q2 = Queue("rel20"), Queue("rel20-other")
    tx = new_session(connection, TRANSACTED)
    p = tx.create_producer(None)
    reader = connection.create_session()
    c = reader.create_consumer(q)
    c2 = reader.create_consumer(q2)
    for i in range(5):
        p.send(text_message(tx, f"m{i}"), destination=q)
        p.send(text_message(tx, f"x{i}"), destination=q2)
    assert c.receive(NOTHING) is None
    assert browse(reader, q) == []
    tx.commit()
    assert texts(drain(c)) == [f"m{i}" for i in range(5)]
    assert texts(drain(c2)) == [f"x{i}" for i in range(5)]
    p.send(text_message(tx, "r1"), destination=q)
    p.send(text_message(tx, "r2"), destination=q)
    tx.rollback()
    p.send(text_message(tx, "after"), destination=q)
    tx.commit()
    assert texts(drain(c)) == ["after"]


def test_rel_s4_priority_order_before_dispatch(connection: Connection) -> None:
    """REL-S4 (REL-21): with no consumer, a(0), b(0), c(9), d(4) are then received c, d, a, b."""
    q = Queue("rels4")
    s = connection.create_session()
    p = s.create_producer(q)
    for text, prio in [("a", 0), ("b", 0), ("c", 9), ("d", 4)]:
        p.send(text_message(s, text), priority=prio)
    got = drain(s.create_consumer(q))
    assert texts(got) == ["c", "d", "a", "b"]
    assert [m.jms_priority for m in got] == [9, 4, 0, 0]


def test_rel_21_all_priorities_fifo_within_each(connection: Connection) -> None:
    """REL-21: priorities 0..9, highest first, and FIFO among equal priorities."""
    q = Queue("rel21all")
    s = connection.create_session()
    p = s.create_producer(q)
    for rnd in range(2):
        for prio in range(10):
            p.send(text_message(s, f"p{prio}-{rnd}"), priority=prio)
    got = texts(drain(s.create_consumer(q)))
    assert got == [f"p{prio}-{rnd}" for prio in range(9, -1, -1) for rnd in range(2)]


def test_rel_21_prefetched_messages_are_not_reordered(factory: ConnectionFactory) -> None:
    """REL-21 (A-13): a message already in a consumer's prefetch buffer is not overtaken by a
    later higher-priority one; with prefetch 0 nothing is buffered, so priority decides."""
    q1, q2 = Queue("rel21buf"), Queue("rel21pull")
    with factory.create_connection() as conn:
        conn.start()
        s = conn.create_session()
        c = s.create_consumer(q1)
        p = s.create_producer(q1)
        p.send(text_message(s, "low"), priority=0)
        p.send(text_message(s, "high"), priority=9)
        assert texts(drain(c)) == ["low", "high"]
    with ConnectionFactory(factory.url, prefetch=0).create_connection() as conn:
        conn.start()
        s = conn.create_session()
        c = s.create_consumer(q2)
        p = s.create_producer(q2)
        p.send(text_message(s, "low"), priority=0)
        p.send(text_message(s, "high"), priority=9)
        assert texts(drain(c)) == ["high", "low"]


# ---------------------------------------------------------------------------- REL-22..REL-26
def test_rel_s5_expiration_header_and_expiry(
    fake_factory: ConnectionFactory, clock: FakeClock
) -> None:
    """REL-S5 (REL-22, REL-23): jms_expiration = jms_timestamp + 500 for a 0.5 s time-to-live and
    0 for none, on the sent and the received message; once expired, a browser and a consumer
    see only the other message."""
    q = Queue("rels5")
    with fake_factory.create_connection() as conn:
        s = conn.create_session()
        p = s.create_producer(q)
        m1, m2 = text_message(s, "m1"), text_message(s, "m2")
        p.send(m1, time_to_live=0.5)
        p.send(m2)
        assert m1.jms_timestamp == clock.now_ms()
        assert m1.jms_expiration == m1.jms_timestamp + 500
        assert m2.jms_expiration == 0
        b = s.create_browser(q)
        browsed = list(b)
        assert [(m.jms_expiration) for m in browsed] == [m1.jms_expiration, 0]
        clock.advance(1.0)
        assert texts(b) == ["m2"]
        conn.start()
        got = drain(s.create_consumer(q))
        assert texts(got) == ["m2"]
        assert got[0].jms_expiration == 0


def test_rel_22_transacted_send_time_is_the_send_call(
    fake_factory: ConnectionFactory, clock: FakeClock
) -> None:
    """REL-22, REL-25: in a transaction, jms_expiration and jms_delivery_time are based on the
    send() call, not on commit; the receiver sees the same values."""
    q = Queue("rel22tx")
    with fake_factory.create_connection() as conn:
        conn.start()
        tx = new_session(conn, TRANSACTED)
        m = text_message(tx, "m")
        t0 = clock.now_ms()
        tx.create_producer(q).send(m, time_to_live=60.0)
        assert (m.jms_timestamp, m.jms_expiration, m.jms_delivery_time) == (t0, t0 + 60_000, t0)
        clock.advance(5.0)
        tx.commit()
        got = receive(conn.create_session().create_consumer(q))
        assert (got.jms_timestamp, got.jms_expiration, got.jms_delivery_time) == (
            t0,
            t0 + 60_000,
            t0,
        )


def test_rel_23_expired_messages_never_reach_the_application(
    make_broker: MakeBroker, clock: FakeClock
) -> None:
    """REL-23 (A-27): an expired message is dropped by the broker at dispatch and by the client
    from its prefetch buffer (for receive and for a listener); that is not a delivery attempt
    (with max_delivery_attempts=1 nothing is dead-lettered)."""
    broker = make_broker(clock=clock, max_delivery_attempts=1)
    factory = ConnectionFactory(broker.url)
    q = Queue("rel23")
    with factory.create_connection() as conn:
        s = conn.create_session()
        p = s.create_producer(q)
        # 1. waiting in the broker, no consumer
        p.send(text_message(s, "broker-side"), time_to_live=1.0)
        clock.advance(1.0)
        conn.start()
        c = s.create_consumer(q)
        assert c.receive(NOTHING) is None
        # 2. already in the consumer's prefetch buffer, receive()
        p.send(text_message(s, "buffered"), time_to_live=1.0)
        clock.advance(1.5)
        p.send(text_message(s, "fresh"))
        assert texts(drain(c)) == ["fresh"]
        # 3. in the buffer, then a listener is installed
        p.send(text_message(s, "buffered-for-listener"), time_to_live=1.0)
        clock.advance(1.5)
        seen: list[str | None] = []
        got = threading.Event()

        def listener(m: Message) -> None:
            seen.append(text_or_none(m))
            got.set()

        c.message_listener = listener
        p.send(text_message(s, "fresh-for-listener"))
        assert got.wait(WAIT)
        c.close()
        assert seen == ["fresh-for-listener"]
        assert browse(s, q) == []
        assert browse(s, Queue("DLQ")) == []


def test_rel_24_expiry_applies_everywhere(
    fake_factory: ConnectionFactory, clock: FakeClock
) -> None:
    """REL-24: expiry applies to queues, durable, shared and non-durable subscriptions,
    temporary queues and temporary topics; by default expired messages are discarded."""
    q, t = Queue("rel24"), Topic("rel24")
    with fake_factory.create_connection() as conn:
        conn.client_id = "rel24"
        s = conn.create_session()  # stopped: everything waits in the broker
        tq = s.create_temporary_queue()
        tt = s.create_temporary_topic()
        consumers = {
            "queue": s.create_consumer(q),
            "durable": s.create_durable_consumer(t, "d"),
            "shared": s.create_shared_consumer(t, "sh"),
            "non-durable": s.create_consumer(t),
            "temp-queue": s.create_consumer(tq),
            "temp-topic": s.create_consumer(tt),
        }
        for dest in (q, t, tq, tt):
            send(s, dest, "expiring", time_to_live=1.0)
        clock.advance(2.0)
        for dest in (q, t, tq, tt):
            send(s, dest, "live")
        conn.start()
        for kind, c in consumers.items():  # "expiring" was sent first: "live" first proves it
            assert text_or_none(receive(c)) == "live", kind


def test_rel_25_delivery_time(fake_factory: ConnectionFactory, clock: FakeClock) -> None:
    """REL-25: jms_delivery_time = send time + delay; no consumer or browser gets the message
    earlier; on a topic it goes to the subscriptions existing at send time, not to one created
    later, and it disappears with a subscription deleted before the delivery time."""
    q, t = Queue("rel25"), Topic("rel25")
    with fake_factory.create_connection() as conn:
        conn.client_id = "rel25"
        conn.start()
        s = conn.create_session()
        qc = s.create_consumer(q)
        s.create_durable_consumer(t, "early").close()
        s.create_durable_consumer(t, "dropped").close()
        live = s.create_consumer(t)
        p = s.create_producer(None)
        mq, mt = text_message(s, "q"), text_message(s, "t")
        p.send(mq, destination=q, delivery_delay=2.5)
        p.send(mt, destination=t, delivery_delay=2.5)
        assert mq.jms_delivery_time == mq.jms_timestamp + 2500 == clock.now_ms() + 2500
        assert mt.jms_delivery_time == mt.jms_timestamp + 2500
        s.create_durable_consumer(t, "late").close()
        s.unsubscribe("dropped")
        clock.advance(2.499)
        assert qc.receive(NOTHING) is None
        assert live.receive(NOTHING) is None
        assert browse(s, q) == []
        clock.advance(0.001)
        got = receive(qc)
        assert (text_or_none(got), got.jms_delivery_time) == ("q", mq.jms_delivery_time)
        assert texts(drain(live)) == ["t"]
        assert texts(drain(s.create_durable_consumer(t, "early"))) == ["t"]
        assert drain(s.create_durable_consumer(t, "late")) == []
        assert drain(s.create_durable_consumer(t, "dropped")) == []


def test_rel_26_prefetch_bounds_what_a_consumer_holds(factory: ConnectionFactory) -> None:
    """REL-26 (PSF-08): with prefetch 3 an idle consumer is given at most 3 messages; the other
    7 stay on the queue for another consumer."""
    q = Queue("rel26")
    with ConnectionFactory(factory.url, prefetch=3).create_connection() as conn:
        conn.start()
        idle = conn.create_session().create_consumer(q)
        send(conn.create_session(), q, *[f"m{i}" for i in range(10)])
        with factory.create_connection() as other:
            other.start()
            c = other.create_session().create_consumer(q)
            assert texts(drain(c)) == [f"m{i}" for i in range(3, 10)]
        assert texts(drain(idle)) == ["m0", "m1", "m2"]
