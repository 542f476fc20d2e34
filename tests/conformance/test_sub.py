"""Conformance: publish/subscribe and the four subscription kinds (catalog group SUB).

Every test names the catalog IDs it proves. Messages are TextMessages whose text identifies
them; "receives nothing" is a short ``receive(QUIET)`` that must return None. Broker state is
read only where a requirement is about it and no public API shows it (see "broker state").
Durability across a broker *restart* (SUB-17's last sentence, REL-09) belongs to the durable
store's suite; here a durable subscription outlives its connections while the broker runs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from ternmq.broker.embedded import EmbeddedBroker
from ternmq.client import Connection, ConnectionFactory, MessageConsumer, Session
from ternmq.destination import Queue, Topic
from ternmq.errors import (
    IllegalStateException,
    IllegalStateRuntimeException,
    InvalidDestinationException,
    InvalidDestinationRuntimeException,
    InvalidSelectorException,
    JMSException,
    JMSRuntimeException,
)
from ternmq.message import DeliveryMode, Message

from ._helpers import (
    Connect,
    broker_stats,
    delivery_count,
    drain_texts,
    held_bytes,
    marks,
    receive_texts,
    stored_counts,
    subscriptions,
    text_message,
    text_or_none,
)

WAIT = 2.0  # seconds to wait for a message that must arrive (receive_texts() too)
QUIET = 0.1  # seconds to wait when nothing may arrive (drain_texts() too)


# ---------------------------------------------------------------------------- helpers


def _publish(conn: Connection, topic: Topic | Queue, *texts: str, **props: Any) -> None:
    """Publish ``texts`` (in order) through a fresh session of ``conn``; ``props`` go on each."""
    session = conn.create_session()
    producer = session.create_producer(topic)
    for text in texts:
        producer.send(text_message(session, text, **props))
    session.close()


Kind = str
KINDS: list[Kind] = ["nondurable", "shared", "durable", "shared_durable"]


def _subscribe(
    session: Session, topic: Topic, kind: Kind, name: str = "sub", selector: str | None = None
) -> MessageConsumer:
    if kind == "nondurable":
        return session.create_consumer(topic, selector)
    if kind == "shared":
        return session.create_shared_consumer(topic, name, selector)
    if kind == "durable":
        return session.create_durable_consumer(topic, name, selector)
    return session.create_shared_durable_consumer(topic, name, selector)


# ---------------------------------------------------------------------------- broker state
# Only for requirements about what the broker holds, which no JMS API shows: the admin Stat
# request (what ``ternmq stat`` shows).
def _subscription_depths(broker: EmbeddedBroker, topic: Topic) -> list[int]:
    """Messages held by each subscription of ``topic`` (in the order of their names)."""
    return [sub.depth for sub in subscriptions(broker, topic)]


def _durable_names(broker: EmbeddedBroker) -> set[tuple[str | None, str]]:
    """(client id or None, name) of the durable subscriptions the broker holds."""
    names: set[tuple[str | None, str]] = set()
    for dest in broker_stats(broker):
        for sub in dest.subscriptions:
            if sub.kind in ("durable", "shared_durable"):
                client_id, colon, name = sub.name.partition(":")
                names.add((client_id, name) if colon else (None, sub.name))
    return names


# ---------------------------------------------------------------------------- general
def test_sub_01_every_subscription_gets_an_independent_copy(connect: Connect) -> None:
    """SUB-01: each subscription receives its own copy; recovering, rolling back or
    acknowledging one copy leaves the other copies alone."""
    t = Topic("news")
    conn = connect("c1")
    client = conn.create_session(Session.CLIENT_ACKNOWLEDGE)
    tx = conn.create_session(True)
    auto = conn.create_session()
    k_client = client.create_consumer(t)
    k_tx = tx.create_durable_consumer(t, "d")
    k_auto = auto.create_shared_consumer(t, "s")
    _publish(connect(), t, "m1")

    first = [k.receive(WAIT) for k in (k_client, k_tx, k_auto)]
    assert [text_or_none(m) for m in first] == ["m1", "m1", "m1"]
    assert [(m.jms_redelivered, delivery_count(m)) for m in first if m] == [(False, 1)] * 3

    client.recover()
    again = k_client.receive(WAIT)
    assert text_or_none(again) == "m1" and again is not None
    assert (again.jms_redelivered, delivery_count(again)) == (True, 2)
    assert k_tx.receive(QUIET) is None  # the transacted copy was not touched by recover
    tx.rollback()
    again_tx = k_tx.receive(WAIT)
    assert again_tx is not None and text_or_none(again_tx) == "m1"
    assert (again_tx.jms_redelivered, delivery_count(again_tx)) == (True, 2)
    assert k_auto.receive(QUIET) is None  # the auto-acknowledged copy is gone for good
    again.acknowledge()
    tx.commit()
    assert k_client.receive(QUIET) is None
    assert k_tx.receive(QUIET) is None


def test_sub_01_slow_or_inactive_subscription_does_not_delay_others(
    connect: Connect, broker: EmbeddedBroker
) -> None:
    """SUB-01: a subscription that does not consume (a full prefetch window, an inactive
    durable subscription) never delays delivery to the other subscriptions."""
    t = Topic("ticks")
    slow_conn = connect("slow", via=ConnectionFactory(broker.url, prefetch=1))
    slow_session = slow_conn.create_session()
    slow = slow_session.create_consumer(t)  # never receives
    slow_session.create_durable_consumer(t, "idle").close()  # inactive from now on
    fast = connect().create_session().create_consumer(t)
    texts = [f"m{i}" for i in range(20)]
    _publish(connect(), t, *texts)
    assert receive_texts(fast, 20) == texts
    assert drain_texts(fast) == []
    # The slow ones still hold their copies (1 prefetched + 19 waiting, and 20 waiting).
    assert _subscription_depths(broker, t).count(20) == 2
    assert receive_texts(slow, 20) == texts


def test_sub_02_two_consumers_of_one_session_are_two_subscriptions(connect: Connect) -> None:
    """SUB-02: two consumers on the same topic in the same session both get each message."""
    t = Topic("t")
    session = connect().create_session()
    k1 = session.create_consumer(t)
    k2 = session.create_consumer(t, "n > 0")
    _publish(connect(), t, "a", "b", n=1)
    assert receive_texts(k1, 2) == ["a", "b"]
    assert receive_texts(k2, 2) == ["a", "b"]
    assert drain_texts(k1) == [] and drain_texts(k2) == []


def test_sub_03_selector_decides_what_is_added(connect: Connect, broker: EmbeddedBroker) -> None:
    """SUB-03: a message that does not match a subscription's selector is never stored for it
    and can never be delivered from it later."""
    t = Topic("t")
    conn = connect("c1")
    session = conn.create_session()
    session.create_durable_consumer(t, "d", "x = 1").close()
    _publish(connect(), t, "no", x=2)
    _publish(connect(), t, "yes", x=1)
    _publish(connect(), t, "none")  # no x at all: unknown, not selected
    assert _subscription_depths(broker, t) == [1]
    k = session.create_durable_consumer(t, "d", "x = 1")
    assert receive_texts(k, 1) == ["yes"]
    assert drain_texts(k) == []


def test_sub_s11_selector_and_independent_acknowledgement(connect: Connect) -> None:
    """SUB-S11 (SUB-03, SUB-01): an unfiltered and a filtered consumer; the filtered one gets
    only the matching message; acknowledging in one session does not affect the other."""
    t = Topic("t")
    conn = connect()
    s_all = conn.create_session(Session.CLIENT_ACKNOWLEDGE)
    s_sel = conn.create_session(Session.CLIENT_ACKNOWLEDGE)
    k_all = s_all.create_consumer(t)
    k_sel = s_sel.create_consumer(t, "k = 'a'")
    _publish(connect(), t, "first", k="b")
    _publish(connect(), t, "second", k="a")
    assert receive_texts(k_all, 2) == ["first", "second"]
    got = k_sel.receive(WAIT)
    assert text_or_none(got) == "second" and got is not None
    assert k_sel.receive(QUIET) is None
    got.acknowledge()  # acknowledges s_sel's message only
    s_all.recover()  # s_all's two messages are still unacknowledged
    again = [k_all.receive(WAIT) for _ in range(2)]
    assert [(text_or_none(m), m.jms_redelivered) for m in again if m] == [
        ("first", True),
        ("second", True),
    ]
    s_sel.recover()
    assert k_sel.receive(QUIET) is None


@pytest.mark.parametrize("kind", KINDS)
def test_sub_04_subscription_exists_when_the_call_returns(connect: Connect, kind: Kind) -> None:
    """SUB-04: a subscription is registered before the creating call returns: everything
    published afterwards is captured, nothing published before is delivered."""
    t = Topic(f"t-{kind}")
    publisher = connect()
    _publish(publisher, t, "before")
    k = _subscribe(connect("c1").create_session(), t, kind)
    _publish(publisher, t, "after-1", "after-2")
    assert receive_texts(k, 2) == ["after-1", "after-2"]
    assert drain_texts(k) == []


def test_sub_05_client_id_names_only_subscription_identity(connect: Connect) -> None:
    """SUB-05, SUB-13: shared subscriptions work without a client id; the client id is part
    of the key, so the same name under different client ids names different subscriptions."""
    t = Topic("t")
    anon_a = connect().create_session().create_shared_consumer(t, "s")
    anon_b = connect().create_session().create_shared_consumer(t, "s")  # joins anon_a's
    c1 = connect("c1").create_session().create_shared_consumer(t, "s")
    c2 = connect("c2").create_session().create_shared_durable_consumer(t, "s")
    _publish(connect(), t, "m1", "m2")
    assert receive_texts(c1, 2) == ["m1", "m2"]
    assert receive_texts(c2, 2) == ["m1", "m2"]
    anon = drain_texts(anon_a) + drain_texts(anon_b)
    assert sorted(anon) == ["m1", "m2"]  # type: ignore[type-var]  # one subscription: each message once
    assert drain_texts(c1) == [] and drain_texts(c2) == []


# ---------------------------------------------------------------------------- non-durable
def test_sub_06_each_create_consumer_is_a_new_nameless_subscription(
    connect: Connect, broker: EmbeddedBroker
) -> None:
    """SUB-06: every create_consumer on a topic makes a new subscription (no client id
    needed), each with its own copy."""
    t = Topic("t")
    session = connect().create_session()
    consumers = [session.create_consumer(t) for _ in range(3)]
    assert len(_subscription_depths(broker, t)) == 3
    _publish(connect(), t, "m")
    assert [receive_texts(k, 1) for k in consumers] == [["m"], ["m"], ["m"]]


@pytest.mark.parametrize("closing", ["consumer", "session", "connection"])
def test_sub_06_closing_deletes_the_subscription_and_its_messages(
    connect: Connect, broker: EmbeddedBroker, closing: str
) -> None:
    """SUB-06: closing the consumer (or its session or connection) deletes a non-durable
    subscription together with its undelivered messages; a new consumer starts empty."""
    t = Topic("t")
    conn = connect(start=False)  # stopped: the messages stay undelivered
    session = conn.create_session()
    k = session.create_consumer(t)
    _publish(connect(), t, "m1", "m2")
    assert _subscription_depths(broker, t) == [2]
    {"consumer": k, "session": session, "connection": conn}[closing].close()
    assert _subscription_depths(broker, t) == []
    assert held_bytes(broker) == 0
    k2 = connect().create_session().create_consumer(t)
    _publish(connect(), t, "m3")
    assert receive_texts(k2, 1) == ["m3"]
    assert drain_texts(k2) == []


def test_sub_07_no_local_on_a_non_durable_subscription(connect: Connect) -> None:
    """SUB-07: with no_local=True messages published through the same connection (any of its
    sessions) are not added; other connections' are; the default is False."""
    t = Topic("t")
    conn = connect()
    session = conn.create_session()
    k_nolocal = session.create_consumer(t, no_local=True)
    k_default = session.create_consumer(t)
    assert k_nolocal.no_local is True and k_default.no_local is False
    _publish(conn, t, "local")  # another session of the same connection
    producer = session.create_producer(t)
    producer.send(session.create_text_message("local-same-session"))
    _publish(connect(), t, "remote")
    assert receive_texts(k_nolocal, 1) == ["remote"]
    assert drain_texts(k_nolocal) == []
    assert receive_texts(k_default, 3) == ["local", "local-same-session", "remote"]


def test_sub_07_no_local_covers_contexts_sharing_the_connection(
    factory: ConnectionFactory,
) -> None:
    """SUB-07: for a JMSContext consumer with no_local=True, messages published through any
    context sharing its connection are local; another connection's are not."""
    t = Topic("t")
    with factory.create_context() as a, factory.create_context() as remote:
        b = a.create_context(Session.AUTO_ACKNOWLEDGE)
        try:
            k = a.create_consumer(t, None, True)
            a.create_producer().send(t, "from-a")
            b.create_producer().send(t, "from-b")
            remote.create_producer().send(t, "remote")
            assert text_or_none(k.receive(WAIT)) == "remote"
            assert k.receive(QUIET) is None
        finally:
            b.close()


def test_sub_07_no_local_is_ignored_on_a_queue(connect: Connect) -> None:
    """SUB-07 (A-24): no_local on a queue consumer has no effect and raises nothing."""
    q = Queue("q")
    conn = connect()
    k = conn.create_session().create_consumer(q, no_local=True)
    _publish(conn, q, "own")
    assert receive_texts(k, 1) == ["own"]


def test_sub_08_non_durable_messages_are_recoverable_while_open(
    connect: Connect, broker: EmbeddedBroker
) -> None:
    """SUB-08: unacknowledged messages of an open non-durable subscription come back on
    recover and rollback (marked redelivered); once the consumer closes they are gone."""
    t = Topic("t")
    conn = connect()
    s_client = conn.create_session(Session.CLIENT_ACKNOWLEDGE)
    s_tx = conn.create_session(True)
    k_client = s_client.create_consumer(t)
    k_tx = s_tx.create_consumer(t)
    _publish(connect(), t, "m1", "m2")
    assert receive_texts(k_client, 2) == ["m1", "m2"]
    assert receive_texts(k_tx, 2) == ["m1", "m2"]
    s_client.recover()
    s_tx.rollback()
    for k in (k_client, k_tx):
        again = [k.receive(WAIT) for _ in range(2)]
        assert [marks(m) for m in again if m] == [
            ("m1", True, 2),
            ("m2", True, 2),
        ]
    k_client.close()
    k_tx.close()
    s_client.close()
    s_tx.close()
    assert _subscription_depths(broker, t) == []
    assert held_bytes(broker) == 0


def test_sub_08_unacknowledged_messages_go_with_the_closed_consumer(
    connect: Connect, broker: EmbeddedBroker
) -> None:
    """SUB-08, SUB-06: a message received but not acknowledged is gone once the non-durable
    consumer closes: recover brings nothing back and acknowledging it is harmless."""
    t = Topic("t")
    session = connect().create_session(Session.CLIENT_ACKNOWLEDGE)
    k = session.create_consumer(t)
    _publish(connect(), t, "m1", "m2")
    msg = k.receive(WAIT)
    assert text_or_none(msg) == "m1" and msg is not None
    k.close()
    assert _subscription_depths(broker, t) == []
    assert held_bytes(broker) == 0
    session.recover()
    msg.acknowledge()
    k2 = session.create_consumer(t)
    assert drain_texts(k2) == []


def test_sub_08_listener_failure_redelivers_on_a_non_durable_subscription(
    connect: Connect,
) -> None:
    """SUB-08: a message listener that raises (AUTO_ACKNOWLEDGE) gets the message again,
    marked redelivered, as on a queue."""
    t = Topic("t")
    session = connect().create_session()
    k = session.create_consumer(t)
    seen: list[tuple[str | None, bool, int]] = []
    done = threading.Event()

    def listener(msg: Message) -> None:
        seen.append(marks(msg))
        if len(seen) == 1:
            raise RuntimeError("first attempt fails")
        done.set()

    k.message_listener = listener
    _publish(connect(), t, "m")
    assert done.wait(WAIT)
    assert seen == [("m", False, 1), ("m", True, 2)]


# ---------------------------------------------------------------------------- shared non-durable
def test_sub_09_shared_consumer_creates_or_joins(connect: Connect, broker: EmbeddedBroker) -> None:
    """SUB-09: create_shared_consumer creates the subscription if absent, else adds a consumer
    to it (with or without a client id)."""
    t = Topic("t")
    k1 = connect().create_session().create_shared_consumer(t, "n")
    k2 = connect().create_session().create_shared_consumer(t, "n")
    assert len(_subscription_depths(broker, t)) == 1
    k3 = connect("c1").create_session().create_shared_consumer(t, "n")
    assert len(_subscription_depths(broker, t)) == 2
    _publish(connect(), t, "a", "b", "c", "d")
    assert sorted(drain_texts(k1) + drain_texts(k2)) == ["a", "b", "c", "d"]  # type: ignore[type-var]
    assert drain_texts(k3) == ["a", "b", "c", "d"]


def test_sub_09_shared_calls_take_no_no_local_argument(connect: Connect) -> None:
    """SUB-09 (A-01): create_shared_consumer / create_shared_durable_consumer have no
    no_local parameter; passing one is a TypeError."""
    t = Topic("t")
    session = connect("c1").create_session()
    with pytest.raises(TypeError):
        session.create_shared_consumer(t, "n", None, True)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        session.create_shared_consumer(t, "n", no_local=True)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        session.create_shared_durable_consumer(t, "n", no_local=True)  # type: ignore[call-arg]


def test_sub_10_unacknowledged_messages_go_to_the_remaining_consumers(
    connect: Connect, broker: EmbeddedBroker
) -> None:
    """SUB-10: each message of a shared subscription goes to one consumer (consumers in
    different connections); when one leaves with unacknowledged messages they go to the
    others, the ones it had seen marked redelivered."""
    t = Topic("t")
    f1 = ConnectionFactory(broker.url, prefetch=1)
    conn_a = connect(via=f1)
    k_a = conn_a.create_session(Session.CLIENT_ACKNOWLEDGE).create_shared_consumer(t, "n")
    k_b = connect(via=f1).create_session().create_shared_consumer(t, "n")
    texts = [f"m{i}" for i in range(6)]
    _publish(connect(), t, *texts)
    seen_by_a = k_a.receive(WAIT)
    assert seen_by_a is not None
    first = drain_texts(k_b)
    conn_a.close()  # not acknowledged: everything A held goes back
    rest = [k_b.receive(WAIT) for _ in range(len(texts) - len(first))]
    assert all(m is not None for m in rest)
    assert sorted(first + [text_or_none(m) for m in rest]) == texts  # type: ignore[type-var]
    assert {text_or_none(m): m.jms_redelivered for m in rest if m} == {
        text_or_none(m): text_or_none(m) == text_or_none(seen_by_a) for m in rest if m
    }
    assert text_or_none(seen_by_a) in [text_or_none(m) for m in rest]
    assert drain_texts(k_b) == []


@pytest.mark.parametrize("shared_durable", [False, True], ids=["shared", "shared_durable"])
def test_sub_s5_shared_subscription_splits_messages(connect: Connect, shared_durable: bool) -> None:
    """SUB-S5 (SUB-10, SUB-24): two connections without client id consume one shared
    subscription; the union of what they get is exactly the 100 messages, none twice;
    ternmq's round-robin gives 50/50."""
    t = Topic("t")
    kind = "shared_durable" if shared_durable else "shared"
    k1 = _subscribe(connect().create_session(), t, kind, "s")
    k2 = _subscribe(connect().create_session(), t, kind, "s")
    texts = [f"m{i:03d}" for i in range(100)]
    _publish(connect(), t, *texts)
    got1, got2 = drain_texts(k1), drain_texts(k2)
    assert sorted(got1 + got2) == texts  # type: ignore[type-var]
    assert not set(got1) & set(got2)
    assert len(got1) >= 1 and len(got2) >= 1
    assert (len(got1), len(got2)) == (50, 50)
    assert got1 == sorted(got1) and got2 == sorted(got2)  # type: ignore[type-var]  # each in send order


def test_sub_s6_shared_subscription_ends_with_its_last_consumer(
    connect: Connect, broker: EmbeddedBroker
) -> None:
    """SUB-S6 (SUB-11): after both consumers of shared "n" close, a message published is
    kept nowhere; a new consumer on "n" receives nothing. Undelivered messages are deleted
    with the subscription."""
    t = Topic("t")
    conn = connect(start=False)
    k1 = conn.create_session().create_shared_consumer(t, "n")
    k2 = conn.create_session().create_shared_consumer(t, "n")
    _publish(connect(), t, "undelivered")
    assert _subscription_depths(broker, t) == [1]
    k1.close()
    assert _subscription_depths(broker, t) == [1]  # still one consumer: still there
    k2.close()
    assert _subscription_depths(broker, t) == []
    _publish(connect(), t, "while-absent")
    assert held_bytes(broker) == 0
    k3 = connect().create_session().create_shared_consumer(t, "n")
    assert drain_texts(k3) == []
    _publish(connect(), t, "after")
    assert receive_texts(k3, 1) == ["after"]


def test_sub_s7_changed_shared_subscription_with_open_consumer(connect: Connect) -> None:
    """SUB-S7 (SUB-12, SUB-25): while a consumer on shared "n" (selector "a = 1") is open,
    another selector or another topic raises JMSException and the existing one is
    untouched; the same holds for a shared durable subscription with an open consumer."""
    t, t2 = Topic("t"), Topic("t2")
    conn = connect()
    k = conn.create_session().create_shared_consumer(t, "n", "a = 1")
    kd = conn.create_session().create_shared_durable_consumer(t, "sd", "a = 1")
    other = connect().create_session()
    for call in (other.create_shared_consumer, other.create_shared_durable_consumer):
        name = "n" if call == other.create_shared_consumer else "sd"
        with pytest.raises(JMSException):
            call(t, name, "a = 2")
        with pytest.raises(JMSException):
            call(t2, name, "a = 1")
        with pytest.raises(JMSException):
            call(t, name)
    _publish(connect(), t, "m", a=1)
    assert receive_texts(k, 1) == ["m"]
    assert receive_texts(kd, 1) == ["m"]


def test_sub_s7_changed_inactive_shared_durable_is_replaced(connect: Connect) -> None:
    """SUB-S7 (SUB-25): shared durable "s" on T holds 2 messages and has no consumer; the
    call with topic T2 replaces it (receives nothing); back on T it is replaced again and
    the old backlog is gone."""
    t, t2 = Topic("t"), Topic("t2")
    session = connect().create_session()
    session.create_shared_durable_consumer(t, "s").close()
    _publish(connect(), t, "old-1", "old-2")
    k = session.create_shared_durable_consumer(t2, "s")
    assert drain_texts(k) == []
    _publish(connect(), t2, "on-t2")
    assert receive_texts(k, 1) == ["on-t2"]
    k.close()
    k = session.create_shared_durable_consumer(t, "s")
    _publish(connect(), t, "new")
    assert receive_texts(k, 1) == ["new"]  # old-1, old-2 would have come first
    assert drain_texts(k) == []


def test_sub_13_same_name_other_client_id_is_another_subscription(connect: Connect) -> None:
    """SUB-13: the same subscription name with a different client id, or none, joins or
    creates a different subscription (shared non-durable and shared durable); no error."""
    t = Topic("t")
    consumers = {}
    for cid in (None, "c1", "c2"):
        session = connect(cid).create_session()
        consumers[(cid, "shared")] = session.create_shared_consumer(t, "x")
        consumers[(cid, "durable")] = session.create_shared_durable_consumer(t, "y")
    _publish(connect(), t, "m")
    for key, k in consumers.items():
        assert receive_texts(k, 1) == ["m"], key


# ---------------------------------------------------------------------------- name spaces
def test_sub_s8_durable_and_shared_non_durable_name_spaces(connect: Connect) -> None:
    """SUB-S8 (SUB-15, SUB-14): with shared durable "x" (client c1), create_durable_consumer
    on "x" raises JMSException; a shared non-durable "x" coexists and both get copies."""
    t = Topic("t")
    session = connect("c1").create_session()
    k_durable = session.create_shared_durable_consumer(t, "x")
    with pytest.raises(JMSException):
        session.create_durable_consumer(t, "x")
    k_shared = session.create_shared_consumer(t, "x")
    _publish(connect(), t, "m1", "m2")
    assert receive_texts(k_durable, 2) == ["m1", "m2"]
    assert receive_texts(k_shared, 2) == ["m1", "m2"]


def test_sub_14_name_spaces_are_independent_without_consumers(connect: Connect) -> None:
    """SUB-14: a shared non-durable subscription and an unshared durable one with the same
    key are independent: closing the non-durable one does not touch the durable backlog."""
    t = Topic("t")
    session = connect("c1").create_session()
    session.create_durable_consumer(t, "x").close()
    k_shared = session.create_shared_consumer(t, "x")
    _publish(connect(), t, "m")
    assert receive_texts(k_shared, 1) == ["m"]
    k_shared.close()
    k_durable = session.create_durable_consumer(t, "x")
    assert receive_texts(k_durable, 1) == ["m"]


def test_sub_15_shared_and_unshared_durable_share_one_name_space(
    connect: Connect, broker: EmbeddedBroker
) -> None:
    """SUB-15: create_shared_durable_consumer on an unshared durable key, or
    create_durable_consumer on a shared durable key, raises JMSException and changes
    nothing (both inactive, each keeps its backlog)."""
    t = Topic("t")
    session = connect("c1").create_session()
    session.create_durable_consumer(t, "u").close()
    session.create_shared_durable_consumer(t, "s").close()
    _publish(connect(), t, "m")
    with pytest.raises(JMSException):
        session.create_shared_durable_consumer(t, "u")
    with pytest.raises(JMSException):
        session.create_durable_consumer(t, "s")
    with pytest.raises(JMSException):
        session.create_durable_subscriber(t, "s")
    assert _durable_names(broker) == {("c1", "u"), ("c1", "s")}
    assert receive_texts(session.create_durable_consumer(t, "u"), 1) == ["m"]
    assert receive_texts(session.create_shared_durable_consumer(t, "s"), 1) == ["m"]


# ---------------------------------------------------------------------------- unshared durable
def test_sub_s4_durable_consumer_needs_a_client_id(
    connect: Connect, broker: EmbeddedBroker
) -> None:
    """SUB-S4 (SUB-16): without a client id create_durable_consumer (and its alias) raises
    IllegalStateException and creates nothing."""
    t = Topic("t")
    session = connect().create_session()
    with pytest.raises(IllegalStateException):
        session.create_durable_consumer(t, "d")
    with pytest.raises(IllegalStateException):
        session.create_durable_subscriber(t, "d", None, False)
    assert _durable_names(broker) == set()
    assert _subscription_depths(broker, t) == []


def test_sub_s4_context_durable_consumer_needs_a_client_id(
    factory: ConnectionFactory, broker: EmbeddedBroker
) -> None:
    """SUB-S4 (SUB-16): ctx.create_durable_consumer on a context without client id raises
    IllegalStateRuntimeException and creates nothing."""
    with factory.create_context() as ctx:
        with pytest.raises(IllegalStateRuntimeException):
            ctx.create_durable_consumer(Topic("t"), "d")
    assert _durable_names(broker) == set()


def test_sub_s1_durable_subscription_accumulates_while_inactive(connect: Connect) -> None:
    """SUB-S1 (SUB-17, SUB-19, SUB-22): a durable subscription outlives its consumer and
    connection; a new connection with the same client id reattaches and gets exactly the
    3 messages published meanwhile, in order, not redelivered, delivery count 1."""
    t = Topic("t")
    first = connect("c1")
    first.create_session().create_durable_consumer(t, "d").close()
    first.close()
    _publish(connect(), t, "m1", "m2", "m3")
    k = connect("c1").create_session().create_durable_consumer(t, "d")
    msgs = [k.receive(WAIT) for _ in range(3)]
    assert [marks(m) for m in msgs if m] == [
        ("m1", False, 1),
        ("m2", False, 1),
        ("m3", False, 1),
    ]
    assert drain_texts(k) == []


def test_sub_17_messages_are_kept_until_acknowledged(
    connect: Connect, broker: EmbeddedBroker
) -> None:
    """SUB-17, SUB-35: a message received but not acknowledged stays in the durable
    subscription across the end of the consumer's connection; acknowledged ones are gone."""
    t = Topic("t")
    conn = connect("c1")
    session = conn.create_session(Session.CLIENT_ACKNOWLEDGE)
    session.create_durable_consumer(t, "d").close()
    _publish(connect(), t, "m1", "m2")
    k = session.create_durable_consumer(t, "d")
    assert receive_texts(k, 2) == ["m1", "m2"]
    conn.close()
    assert _subscription_depths(broker, t) == [2]
    conn = connect("c1", start=True)
    session = conn.create_session(Session.CLIENT_ACKNOWLEDGE)
    k = session.create_durable_consumer(t, "d")
    msgs = [k.receive(WAIT) for _ in range(2)]
    assert [marks(m) for m in msgs if m] == [
        ("m1", True, 2),
        ("m2", True, 2),
    ]
    assert msgs[1] is not None
    msgs[1].acknowledge()
    conn.close()
    assert _subscription_depths(broker, t) == [0]
    k = connect("c1").create_session().create_durable_consumer(t, "d")
    assert drain_texts(k) == []


def test_sub_17_prefetched_but_unreceived_messages_stay(connect: Connect) -> None:
    """SUB-17: messages buffered for a durable consumer but never received by the application
    stay in the subscription when the consumer closes, and come back not redelivered."""
    t = Topic("t")
    session = connect("c1").create_session()
    k = session.create_durable_consumer(t, "d")
    _publish(connect(), t, "m1", "m2", "m3")
    assert receive_texts(k, 1) == ["m1"]
    k.close()
    k = session.create_durable_consumer(t, "d")
    msgs = [k.receive(WAIT) for _ in range(2)]
    assert [marks(m) for m in msgs if m] == [
        ("m2", False, 1),
        ("m3", False, 1),
    ]
    assert drain_texts(k) == []


def test_sub_17_persistent_messages_of_durable_subscriptions_are_stored(
    connect: Connect, broker: EmbeddedBroker
) -> None:
    """SUB-17 (REL-01, in-process part): a durable subscription's PERSISTENT copies are written
    to the broker's store (non-durable subscriptions' and NON_PERSISTENT ones are not) and
    removed from it once acknowledged or unsubscribed. (Reading the store restarts the
    broker, so every step works on new connections.)"""
    t = Topic("t")
    session = connect("c1").create_session()
    session.create_durable_consumer(t, "d").close()
    session.create_shared_durable_consumer(t, "s").close()
    plain = session.create_consumer(t)
    pub = connect().create_session()
    producer = pub.create_producer(t)
    producer.send(pub.create_text_message("p"))
    producer.send(pub.create_text_message("n"), delivery_mode=DeliveryMode.NON_PERSISTENT)
    assert receive_texts(plain, 2) == ["p", "n"]
    assert sorted(stored_counts(broker).values()) == [1, 1]
    conn = connect("c1")
    acking = conn.create_session(Session.CLIENT_ACKNOWLEDGE)
    k = acking.create_durable_consumer(t, "d")
    got = k.receive(WAIT)
    assert text_or_none(got) == "p" and got is not None
    assert drain_texts(k) == []  # "n" was NON_PERSISTENT: the restart dropped it
    got.acknowledge()
    assert sorted(stored_counts(broker).values()) == [1]  # only s's copy is left
    connect("c1").create_session().unsubscribe("s")
    assert stored_counts(broker) == {}


def test_sub_17_inactive_durable_drops_expired_messages(
    connect: Connect, fake_factory: ConnectionFactory, clock: Any
) -> None:
    """SUB-17: an inactive durable subscription keeps a message until it expires; an expired
    message is not delivered on reattach, an unexpired one is."""
    t = Topic("t")
    session = connect("c1", via=fake_factory).create_session()
    session.create_durable_consumer(t, "d").close()
    pub = connect(via=fake_factory).create_session()
    producer = pub.create_producer(t)
    producer.send(pub.create_text_message("short"), time_to_live=5.0)
    producer.send(pub.create_text_message("long"), time_to_live=60.0)
    producer.send(pub.create_text_message("forever"))
    clock.advance(10.0)
    k = session.create_durable_consumer(t, "d")
    assert receive_texts(k, 2) == ["long", "forever"]
    assert drain_texts(k) == []


def test_sub_s3_only_one_consumer_on_an_unshared_durable(connect: Connect) -> None:
    """SUB-S3 (SUB-18): while a consumer on durable "d" is open, a second one (another session,
    either spelling) raises JMSException; the first keeps receiving."""
    t = Topic("t")
    conn = connect("c1")
    k = conn.create_session().create_durable_consumer(t, "d")
    other = conn.create_session()
    with pytest.raises(JMSException):
        other.create_durable_consumer(t, "d")
    with pytest.raises(JMSException):
        other.create_durable_subscriber(t, "d")
    with pytest.raises(JMSException):
        conn.create_session().create_durable_consumer(t, "d", "x = 1")  # even a changed one
    _publish(connect(), t, "next")
    assert receive_texts(k, 1) == ["next"]
    k.close()
    k2 = other.create_durable_consumer(t, "d")  # allowed once the first is closed
    _publish(connect(), t, "after")
    assert receive_texts(k2, 1) == ["after"]


def test_sub_19_reattach_with_same_arguments_keeps_the_backlog(connect: Connect) -> None:
    """SUB-19, SUB-20 (A-07): reattaching with the same topic, selector and no_local keeps the
    messages; None and "" both mean "no selector"."""
    t = Topic("t")
    session = connect("c1").create_session()
    session.create_durable_consumer(t, "sel", "x = 1", True).close()
    session.create_durable_consumer(t, "none", None).close()
    _publish(connect(), t, "m", x=1)
    k = session.create_durable_consumer(t, "sel", "x = 1", True)
    assert receive_texts(k, 1) == ["m"]
    k = session.create_durable_consumer(t, "none", "")  # "" is the same as None
    assert receive_texts(k, 1) == ["m"]
    k.close()
    _publish(connect(), t, "m2")
    k = session.create_durable_consumer(t, "none", "   ")  # so is a blank one (SEL-04)
    assert receive_texts(k, 1) == ["m2"]


def test_sub_s2_changed_selector_replaces_the_subscription(connect: Connect) -> None:
    """SUB-S2 (SUB-20): durable "d" with "x = 1" holds 2 messages; reopening with "x = 2"
    receives nothing, then gets a new x=2 message; reopening with "x = 1" receives nothing
    because the old messages were discarded."""
    t = Topic("t")
    session = connect("c1").create_session()
    session.create_durable_consumer(t, "d", "x = 1").close()
    _publish(connect(), t, "old-1", "old-2", x=1)
    k = session.create_durable_consumer(t, "d", "x = 2")
    assert drain_texts(k) == []
    _publish(connect(), t, "new", x=2)
    assert receive_texts(k, 1) == ["new"]
    k.close()
    k = session.create_durable_consumer(t, "d", "x = 1")
    assert drain_texts(k) == []
    _publish(connect(), t, "newest", x=1)
    assert receive_texts(k, 1) == ["newest"]


@pytest.mark.parametrize(
    ("change", "args"),
    [
        ("topic", (Topic("t2"), "x = 1", False)),
        ("selector", (Topic("t"), "x = 2", False)),
        ("selector-spacing", (Topic("t"), "x=1", False)),
        ("no-selector", (Topic("t"), None, False)),
        ("no_local", (Topic("t"), "x = 1", True)),
    ],
)
def test_sub_20_changed_durable_subscription_starts_empty(
    connect: Connect, change: str, args: tuple[Topic, str | None, bool]
) -> None:
    """SUB-20 (A-07): same key with another topic, selector (compared as text: "x=1" differs
    from "x = 1") or no_local, while inactive, deletes the old subscription and its messages."""
    t = Topic("t")
    session = connect("c1").create_session()
    session.create_durable_consumer(t, "d", "x = 1", False).close()
    _publish(connect(), t, "old", x=1)
    topic, selector, no_local = args
    k = session.create_durable_consumer(topic, "d", selector, no_local)
    assert drain_texts(k) == []
    k.close()
    k = session.create_durable_consumer(t, "d", "x = 1", False)  # the original again: empty
    assert drain_texts(k) == []


def test_sub_s10_no_local_on_durable_and_non_durable(connect: Connect) -> None:
    """SUB-S10 (SUB-21, SUB-07): no_local excludes the subscriber's own connection and, for
    a durable subscription, any connection with its client id, also while it is inactive."""
    t = Topic("t")
    conn_a = connect("c1")
    session_a = conn_a.create_session()
    durable = session_a.create_durable_consumer(t, "d", None, True)
    plain = session_a.create_consumer(t, None, True)
    conn_b = connect()
    _publish(conn_a, t, "m1")
    _publish(conn_b, t, "m2")
    assert receive_texts(durable, 1) == ["m2"]
    assert receive_texts(plain, 1) == ["m2"]
    assert drain_texts(durable) == [] and drain_texts(plain) == []
    conn_a.close()
    conn_a2 = connect("c1")
    _publish(conn_a2, t, "m3")  # local by client id although another connection
    _publish(conn_b, t, "m4")
    durable = conn_a2.create_session().create_durable_consumer(t, "d", None, True)
    assert receive_texts(durable, 1) == ["m4"]
    assert drain_texts(durable) == []


def test_sub_21_no_local_durable_keeps_other_clients_messages(connect: Connect) -> None:
    """SUB-21: a no_local durable subscription still takes messages from connections with
    another client id or none."""
    t = Topic("t")
    session = connect("c1").create_session()
    durable = session.create_durable_consumer(t, "d", None, True)
    _publish(connect("c2"), t, "from-c2")
    _publish(connect(), t, "from-anonymous")
    assert receive_texts(durable, 2) == ["from-c2", "from-anonymous"]


@pytest.mark.parametrize("kind", ["durable", "shared_durable"])
def test_sub_23_durable_subscription_on_a_temporary_topic(
    connect: Connect, broker: EmbeddedBroker, kind: Kind
) -> None:
    """SUB-23: a durable subscription (shared or unshared) on a temporary topic raises
    InvalidDestinationException and creates nothing."""
    session = connect("c1").create_session()
    tt = session.create_temporary_topic()
    with pytest.raises(InvalidDestinationException):
        _subscribe(session, tt, kind, "d")
    if kind == "durable":
        with pytest.raises(InvalidDestinationException):
            session.create_durable_subscriber(tt, "d")
    assert _durable_names(broker) == set()


# ---------------------------------------------------------------------------- shared durable
def test_sub_24_shared_durable_with_or_without_client_id(connect: Connect) -> None:
    """SUB-24: create_shared_durable_consumer works with and without a client id; several
    consumers in different sessions and connections may be open at once."""
    t = Topic("t")
    conn = connect()
    k1 = conn.create_session().create_shared_durable_consumer(t, "s")
    k2 = conn.create_session().create_shared_durable_consumer(t, "s")
    k3 = connect().create_session().create_shared_durable_consumer(t, "s")
    k_c1 = connect("c1").create_session().create_shared_durable_consumer(t, "s")
    _publish(connect(), t, "a", "b", "c")
    assert sorted(drain_texts(k1) + drain_texts(k2) + drain_texts(k3)) == ["a", "b", "c"]  # type: ignore[type-var]
    assert drain_texts(k_c1) == ["a", "b", "c"]


def test_sub_25_same_arguments_add_a_consumer(connect: Connect) -> None:
    """SUB-25: the same key, topic and selector adds a consumer to the existing shared durable
    subscription, whether others are open or not; the backlog is kept."""
    t = Topic("t")
    session = connect().create_session()
    k1 = session.create_shared_durable_consumer(t, "s", "n > 0")
    k1.close()
    _publish(connect(), t, "kept", n=1)
    k1 = session.create_shared_durable_consumer(t, "s", "n > 0")
    assert receive_texts(k1, 1) == ["kept"]
    k2 = connect().create_session().create_shared_durable_consumer(t, "s", "n > 0")
    _publish(connect(), t, "x", "y", n=1)
    assert sorted(drain_texts(k1) + drain_texts(k2)) == ["x", "y"]  # type: ignore[type-var]


def test_sub_26_shared_durable_accumulates_after_the_last_consumer(connect: Connect) -> None:
    """SUB-26: when the last consumer of a shared durable subscription closes, it keeps
    accumulating messages, like an unshared one."""
    t = Topic("t")
    k1 = connect().create_session().create_shared_durable_consumer(t, "s")
    k2 = connect().create_session().create_shared_durable_consumer(t, "s")
    k1.close()
    k2.close()
    _publish(connect(), t, "m1", "m2", "m3")
    k = connect().create_session().create_shared_durable_consumer(t, "s")
    assert receive_texts(k, 3) == ["m1", "m2", "m3"]


# ---------------------------------------------------------------------------- unsubscribe
def test_sub_27_unsubscribe_deletes_the_durable_subscription(
    connect: Connect, broker: EmbeddedBroker
) -> None:
    """SUB-27: unsubscribe deletes the durable subscription (unshared, or shared with or
    without client id) and its messages."""
    t = Topic("t")
    with_id = connect("c1").create_session()
    anon = connect().create_session()
    with_id.create_durable_consumer(t, "u").close()
    with_id.create_shared_durable_consumer(t, "s").close()
    anon.create_shared_durable_consumer(t, "s").close()
    _publish(connect(), t, "old")
    assert _durable_names(broker) == {("c1", "u"), ("c1", "s"), (None, "s")}
    with_id.unsubscribe("u")
    with_id.unsubscribe("s")
    assert _durable_names(broker) == {(None, "s")}
    anon.unsubscribe("s")
    assert _durable_names(broker) == set()
    assert held_bytes(broker) == 0
    ku = with_id.create_durable_consumer(t, "u")
    ks = anon.create_shared_durable_consumer(t, "s")
    _publish(connect(), t, "new")
    assert receive_texts(ku, 1) == ["new"]
    assert receive_texts(ks, 1) == ["new"]


def test_sub_27_unsubscribe_never_touches_shared_non_durable(connect: Connect) -> None:
    """SUB-27, SUB-14: unsubscribe of a name that only a shared non-durable subscription has
    raises InvalidDestinationException; with a durable one of the same name, only the durable
    one is deleted."""
    t = Topic("t")
    session = connect("c1").create_session()
    shared = session.create_shared_consumer(t, "x")
    with pytest.raises(InvalidDestinationException):
        session.unsubscribe("x")
    session.create_durable_consumer(t, "x").close()
    session.unsubscribe("x")
    _publish(connect(), t, "m")
    assert receive_texts(shared, 1) == ["m"]


def test_sub_27_context_unsubscribe(factory: ConnectionFactory) -> None:
    """SUB-27, SUB-28, SUB-30, SUB-31: ctx.unsubscribe deletes a durable subscription of the
    context's client id; with its consumer open it raises JMSRuntimeException, for an
    unknown name InvalidDestinationRuntimeException."""
    t = Topic("t")
    with factory.create_context() as ctx, factory.create_context() as pub:
        ctx.client_id = "c1"
        k = ctx.create_durable_consumer(t, "d")
        with pytest.raises(JMSRuntimeException):
            ctx.unsubscribe("d")
        k.close()
        pub.create_producer().send(t, "discarded")
        ctx.unsubscribe("d")
        with pytest.raises(InvalidDestinationRuntimeException):
            ctx.unsubscribe("d")
        k = ctx.create_durable_consumer(t, "d")
        pub.create_producer().send(t, "new")
        assert text_or_none(k.receive(WAIT)) == "new"


def test_sub_s9_unsubscribe_checks(connect: Connect) -> None:
    """SUB-S9 (SUB-28, SUB-30, SUB-31): unsubscribe with the consumer open raises JMSException
    and "d" still delivers; after closing the consumer it succeeds; again, or for a name that
    never existed, raises InvalidDestinationException."""
    t = Topic("t")
    session = connect("c1").create_session()
    k = session.create_durable_consumer(t, "d")
    with pytest.raises(JMSException):
        session.unsubscribe("d")
    _publish(connect(), t, "still")
    assert receive_texts(k, 1) == ["still"]
    k.close()
    session.unsubscribe("d")
    with pytest.raises(InvalidDestinationException):
        session.unsubscribe("d")
    with pytest.raises(InvalidDestinationException):
        session.unsubscribe("never")


def test_sub_28_unsubscribe_with_a_consumer_in_another_client(connect: Connect) -> None:
    """SUB-28: unsubscribe of a shared durable subscription with a consumer open in another
    connection raises JMSException; the subscription and its messages are unchanged."""
    t = Topic("t")
    holder = connect(start=False)
    k = holder.create_session().create_shared_durable_consumer(t, "s")
    _publish(connect(), t, "m")
    with pytest.raises(JMSException):
        connect().create_session().unsubscribe("s")
    holder.start()
    assert receive_texts(k, 1) == ["m"]


@pytest.mark.parametrize("mode", ["client", "transacted"])
def test_sub_29_unsubscribe_with_unacknowledged_messages_in_the_session(
    connect: Connect, mode: str
) -> None:
    """SUB-29: unsubscribe while the calling session holds an unacknowledged (or uncommitted)
    message of that subscription raises IllegalStateException, even with the consumer closed;
    after acknowledge / commit it succeeds."""
    t = Topic("t")
    conn = connect("c1")
    if mode == "client":
        session = conn.create_session(Session.CLIENT_ACKNOWLEDGE)
    else:
        session = conn.create_session(True)
    k = session.create_durable_consumer(t, "d")
    _publish(connect(), t, "m")
    msg = k.receive(WAIT)
    assert text_or_none(msg) == "m" and msg is not None
    k.close()
    with pytest.raises(IllegalStateException):
        session.unsubscribe("d")
    if mode == "client":
        msg.acknowledge()
    else:
        session.commit()
    session.unsubscribe("d")
    with pytest.raises(InvalidDestinationException):
        session.unsubscribe("d")


def test_sub_30_unsubscribe_of_an_unknown_key(connect: Connect) -> None:
    """SUB-30: unsubscribe of a name that has no durable subscription under this connection's
    client id (a name created under another client id, or with none) raises
    InvalidDestinationException; the other client's subscription stays."""
    t = Topic("t")
    owner = connect("c1")
    owner.create_session().create_durable_consumer(t, "d").close()
    with pytest.raises(InvalidDestinationException):
        connect("c2").create_session().unsubscribe("d")
    with pytest.raises(InvalidDestinationException):
        connect().create_session().unsubscribe("d")
    _publish(connect(), t, "kept")
    assert receive_texts(owner.create_session().create_durable_consumer(t, "d"), 1) == ["kept"]


@pytest.mark.parametrize("closing", ["consumer", "session", "connection"])
def test_sub_31_closing_makes_the_subscription_inactive(connect: Connect, closing: str) -> None:
    """SUB-31: closing the consumer, or the session or connection that created it, makes the
    durable subscription inactive; unsubscribe then succeeds."""
    t = Topic("t")
    conn = connect("c1")
    session = conn.create_session()
    k = session.create_durable_consumer(t, "d")
    {"consumer": k, "session": session, "connection": conn}[closing].close()
    if closing == "connection":
        conn = connect("c1")
    conn.create_session().unsubscribe("d")
    with pytest.raises(InvalidDestinationException):
        conn.create_session().unsubscribe("d")


# ---------------------------------------------------------------------------- names, validation
NAMED_KINDS: list[Kind] = ["shared", "durable", "shared_durable"]
PORTABLE_NAME = ("Az09_.-" * 19)[:128]


@pytest.mark.parametrize("kind", NAMED_KINDS)
@pytest.mark.parametrize(
    "name",
    [PORTABLE_NAME, "ünïcødé_Ωμέγα.2-x", "a b:c/d!$@#%&*", "n" * 255],
    ids=["portable-128", "unicode-letters", "printable", "255-chars"],
)
def test_sub_32_accepted_subscription_names(connect: Connect, kind: Kind, name: str) -> None:
    """SUB-32: names of up to 128 letters, digits, "_", "." and "-" are accepted for every
    named kind, and (ternmq) any printable characters up to 255."""
    t = Topic("t")
    k = _subscribe(connect("c1").create_session(), t, kind, name)
    _publish(connect(), t, "m")
    assert receive_texts(k, 1) == ["m"]


@pytest.mark.parametrize("kind", NAMED_KINDS)
@pytest.mark.parametrize(
    "name",
    [None, "", "n" * 256, "tab\there", "new\nline", "nul\x00", "del\x7f"],
    ids=["none", "empty", "256-chars", "tab", "newline", "nul", "del"],
)
def test_sub_32_refused_subscription_names(
    connect: Connect, broker: EmbeddedBroker, kind: Kind, name: Any
) -> None:
    """SUB-32 (A-10): None, "", control characters or more than 255 characters raise
    InvalidDestinationException and create nothing."""
    t = Topic("t")
    session = connect("c1").create_session()
    with pytest.raises(InvalidDestinationException):
        _subscribe(session, t, kind, name)
    assert _subscription_depths(broker, t) == []


def test_sub_33_validation_before_mutation(connect: Connect) -> None:
    """SUB-33: a None or non-topic destination raises InvalidDestinationException and a bad
    selector InvalidSelectorException; an existing durable subscription with that key keeps
    its messages (the bad request is not a "changed" subscription)."""
    t = Topic("t")
    session = connect("c1").create_session()
    session.create_durable_consumer(t, "d").close()
    session.create_shared_durable_consumer(t, "s").close()
    _publish(connect(), t, "kept")
    bad_dest: list[Any] = [None, Queue("q"), "topic://t"]
    for dest in bad_dest:
        with pytest.raises(InvalidDestinationException):
            session.create_durable_consumer(dest, "d")
        with pytest.raises(InvalidDestinationException):
            session.create_shared_durable_consumer(dest, "s")
        with pytest.raises(InvalidDestinationException):
            session.create_shared_consumer(dest, "n")
    for bad in ("x = = 1", "x IN", "'unterminated"):
        with pytest.raises(InvalidSelectorException):
            session.create_durable_consumer(t, "d", bad)
        with pytest.raises(InvalidSelectorException):
            session.create_shared_durable_consumer(t, "s", bad)
        with pytest.raises(InvalidSelectorException):
            session.create_shared_consumer(t, "n", bad)
        with pytest.raises(InvalidSelectorException):
            session.create_consumer(t, bad)
    with pytest.raises(InvalidDestinationException):
        session.create_consumer(None)  # type: ignore[arg-type]
    assert receive_texts(session.create_durable_consumer(t, "d"), 1) == ["kept"]
    assert receive_texts(session.create_shared_durable_consumer(t, "s"), 1) == ["kept"]


def test_sub_33_unknown_topic_without_auto_creation(
    make_broker: Callable[..., EmbeddedBroker], connect: Connect
) -> None:
    """SUB-33 (PSF-06): with auto-creation off, every subscribing call on an unknown topic
    raises InvalidDestinationException; an existing durable subscription with that key on a
    known topic is left intact."""
    b = make_broker(auto_create=False, topics=("known",))
    f = ConnectionFactory(b.url)
    known, unknown = Topic("known"), Topic("unknown")
    session = connect("c1", via=f).create_session()
    session.create_durable_consumer(known, "d").close()
    _publish(connect(via=f), known, "kept")
    for kind in KINDS:
        with pytest.raises(InvalidDestinationException):
            _subscribe(session, unknown, kind, "d")
    assert receive_texts(session.create_durable_consumer(known, "d"), 1) == ["kept"]


def test_sub_34_only_domain_independent_interfaces(connect: Connect) -> None:
    """SUB-34: ternmq has no TopicSession / QueueSession; topic-only calls check the type of
    the destination instead (a queue is refused with InvalidDestinationException)."""
    import ternmq
    import ternmq.client

    for name in ("TopicSession", "QueueSession", "TopicConnection", "QueueConnection"):
        assert not hasattr(ternmq, name) and not hasattr(ternmq.client, name)
    session = connect("c1").create_session()
    q = Queue("q")
    for call in (
        session.create_durable_consumer,
        session.create_durable_subscriber,
        session.create_shared_consumer,
        session.create_shared_durable_consumer,
    ):
        with pytest.raises(InvalidDestinationException):
            call(q, "name")  # type: ignore[operator]


@pytest.mark.parametrize("closing", ["session", "connection"])
@pytest.mark.parametrize("kind", ["durable", "shared_durable"])
def test_sub_35_unacknowledged_durable_messages_are_redelivered(
    connect: Connect, closing: str, kind: Kind
) -> None:
    """SUB-35 (REL-10): messages a durable subscription delivered but that were not
    acknowledged when the session ended are redelivered to the next consumer, marked
    redelivered with JMSXDeliveryCount 2; later ones are not marked."""
    t = Topic("t")
    conn = connect("c1")
    session = conn.create_session(Session.CLIENT_ACKNOWLEDGE)
    k = _subscribe(session, t, kind, "d")
    _publish(connect(), t, "m1", "m2", "m3")
    assert receive_texts(k, 2) == ["m1", "m2"]
    if closing == "session":
        session.close()
    else:
        conn.close()
        conn = connect("c1")
    k = _subscribe(conn.create_session(), t, kind, "d")
    msgs = [k.receive(WAIT) for _ in range(3)]
    assert [marks(m) for m in msgs if m] == [
        ("m1", True, 2),
        ("m2", True, 2),
        ("m3", False, 1),
    ]
    assert drain_texts(k) == []
