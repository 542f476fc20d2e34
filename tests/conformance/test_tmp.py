"""Conformance: temporary destinations and request/reply (catalog group TMP).

Every test names the catalog IDs it proves. Messages are TextMessages whose text identifies
them; "receives nothing" is a short ``receive(QUIET)`` that must return None. Broker state is
read only where a requirement is about it and no public API shows it (see "broker state").
"""

from __future__ import annotations

import pytest

from ternmq.broker.embedded import EmbeddedBroker
from ternmq.client import ConnectionFactory, MessageConsumer, Session
from ternmq.destination import Queue, TemporaryQueue, TemporaryTopic, Topic, destination
from ternmq.errors import (
    IllegalStateException,
    InvalidDestinationException,
    JMSException,
)
from ternmq.message import DeliveryMode, TextMessage

from ._helpers import Connect, held_bytes, receive, receive_texts, stored_counts, text_or_none

WAIT = 2.0  # seconds to wait for a message that must arrive (receive() too)
QUIET = 0.1  # seconds to wait when nothing may arrive


# ---------------------------------------------------------------------------- helpers


def _send(
    session: Session, dest: Queue | Topic, text: str, reply_to: Queue | Topic | None = None
) -> TextMessage:
    msg = session.create_text_message(text)
    msg.jms_reply_to = reply_to
    session.create_producer(None).send(msg, destination=dest)
    return msg


def _nothing(consumer: MessageConsumer) -> bool:
    return consumer.receive(QUIET) is None


# ---------------------------------------------------------------------------- broker state
# Only for requirements about what the broker holds, which no public API shows.


# ---------------------------------------------------------------------------- temporaries
def test_tmp_01_creation_types_and_unique_names(connect: Connect) -> None:
    """TMP-01: create_temporary_queue / _topic return TemporaryQueue / TemporaryTopic (also a
    Queue / Topic) with provider-generated names, unique across the broker and not reused
    after deletion or after the owning connection closed."""
    seen: set[str] = set()
    for _ in range(3):
        conn = connect()
        for session in (conn.create_session(), conn.create_session()):
            for _ in range(3):
                tq = session.create_temporary_queue()
                tt = session.create_temporary_topic()
                assert type(tq) is TemporaryQueue and isinstance(tq, Queue)
                assert type(tt) is TemporaryTopic and isinstance(tt, Topic)
                assert tq.queue_name and tt.topic_name
                assert tq.queue_name not in seen and tt.topic_name not in seen
                seen |= {tq.queue_name, tt.topic_name}
                tq.delete()
        conn.close()
    assert len(seen) == 36
    later = connect().create_session()
    assert {later.create_temporary_queue().queue_name for _ in range(5)}.isdisjoint(seen)


def test_tmp_s1_any_session_of_the_connection_may_consume(connect: Connect) -> None:
    """TMP-S1 (TMP-01, TMP-02): session 1 creates tq; a consumer in session 2 of the same
    connection receives what session 1 sends; the destination belongs to the connection, so
    it outlives the creating session."""
    conn = connect()
    s1, s2 = conn.create_session(), conn.create_session()
    tq = s1.create_temporary_queue()
    k = s2.create_consumer(tq)
    _send(s1, tq, "m")
    assert text_or_none(receive(k)) == "m"
    s1.close()  # TMP-01: the creating session is irrelevant
    _send(connect().create_session(), tq, "after-session-close")
    assert text_or_none(receive(k)) == "after-session-close"


def test_tmp_02_browsers_and_topic_consumers_of_the_owner(connect: Connect) -> None:
    """TMP-02: any session of the owning connection may browse a temporary queue and consume
    from a temporary topic."""
    conn = connect()
    s1, s2, s3 = conn.create_session(), conn.create_session(), conn.create_session()
    tq = s1.create_temporary_queue()
    tt = s1.create_temporary_topic()
    _send(s1, tq, "q1")
    _send(s1, tq, "q2")
    assert [text_or_none(m) for m in s2.create_browser(tq)] == ["q1", "q2"]
    k = s3.create_consumer(tt)
    _send(s1, tt, "t1")
    assert text_or_none(receive(k)) == "t1"
    assert receive_texts(s3.create_consumer(tq), 2) == ["q1", "q2"]


def test_tmp_s2_other_connections_may_send_but_not_consume(connect: Connect) -> None:
    """TMP-S2 (TMP-03, TMP-04): another connection cannot create a consumer on tq (JMSException)
    but can send to it, and the owner's consumer receives the message."""
    owner = connect()
    tq = owner.create_session().create_temporary_queue()
    k = owner.create_session().create_consumer(tq)
    other = connect().create_session()
    with pytest.raises(JMSException):
        other.create_consumer(tq)
    _send(other, tq, "from-other")
    assert text_or_none(receive(k)) == "from-other"


def test_tmp_03_no_foreign_consumer_browser_or_subscription(connect: Connect) -> None:
    """TMP-03: consumers, browsers and shared subscriptions on another connection's temporary
    destination raise JMSException (ternmq: InvalidDestinationException); nothing is taken."""
    owner = connect()
    session = owner.create_session()
    tq = session.create_temporary_queue()
    tt = session.create_temporary_topic()
    _send(session, tq, "kept")
    other = connect().create_session()
    with pytest.raises(JMSException):
        other.create_consumer(tq)
    with pytest.raises(JMSException):
        other.create_consumer(tt)
    with pytest.raises(JMSException):
        other.create_shared_consumer(tt, "n")
    with pytest.raises(JMSException):
        other.create_browser(tq)
    assert receive_texts(session.create_consumer(tq), 1) == ["kept"]


def test_tmp_04_any_connection_may_send(connect: Connect) -> None:
    """TMP-04: any connection may send to a temporary queue or topic while it exists (bound
    and anonymous producers)."""
    owner = connect().create_session()
    tq = owner.create_temporary_queue()
    tt = owner.create_temporary_topic()
    kq, kt = owner.create_consumer(tq), owner.create_consumer(tt)
    other = connect().create_session()
    other.create_producer(tq).send(other.create_text_message("bound-q"))
    other.create_producer(tt).send(other.create_text_message("bound-t"))
    _send(other, tq, "anon-q")
    _send(other, tt, "anon-t")
    assert receive_texts(kq, 2) == ["bound-q", "anon-q"]
    assert receive_texts(kt, 2) == ["bound-t", "anon-t"]


def test_tmp_05_session_close_deletes_nothing_connection_close_deletes_all(
    connect: Connect, broker: EmbeddedBroker
) -> None:
    """TMP-05, TMP-10: closing the creating session deletes nothing; closing the connection
    deletes every temporary destination it created with their (even PERSISTENT) messages."""
    owner = connect()
    creator = owner.create_session()
    tq = creator.create_temporary_queue()
    tt = creator.create_temporary_topic()
    owner.create_session().create_consumer(tt)  # a subscription holding a copy
    creator.close()
    other = connect().create_session()
    _send(other, tq, "m1")
    _send(other, tt, "m2")
    assert held_bytes(broker) > 0
    owner.close()
    assert held_bytes(broker) == 0
    with pytest.raises(InvalidDestinationException):
        _send(other, tq, "too late")
    with pytest.raises(InvalidDestinationException):
        _send(other, tt, "too late")


def test_tmp_s3_delete_in_use_then_deleted(connect: Connect, broker: EmbeddedBroker) -> None:
    """TMP-S3 (TMP-06, TMP-07): with a consumer open on tq, delete() raises JMSException; once
    it is closed delete() succeeds; then sends from any connection and create_consumer raise
    InvalidDestinationException, and delete() again is a no-op."""
    owner = connect()
    session = owner.create_session()
    tq = session.create_temporary_queue()
    k = owner.create_session().create_consumer(tq)  # another session of the owner
    with pytest.raises(JMSException):
        tq.delete()
    _send(session, tq, "still-works")
    assert text_or_none(receive(k)) == "still-works"
    k.close()
    _send(session, tq, "dropped-1")
    _send(session, tq, "dropped-2")
    tq.delete()
    assert held_bytes(broker) == 0  # TMP-06: its messages went with it
    for sender in (session, connect().create_session()):
        with pytest.raises(InvalidDestinationException):
            _send(sender, tq, "x")
    with pytest.raises(InvalidDestinationException):
        session.create_consumer(tq)
    tq.delete()  # no-op
    tq.delete()


def test_tmp_06_temporary_topic_in_use(connect: Connect, broker: EmbeddedBroker) -> None:
    """TMP-06: a temporary topic with an open consumer (plain or shared) cannot be deleted;
    without one delete() removes it."""
    owner = connect()
    session = owner.create_session()
    tt = session.create_temporary_topic()
    plain = session.create_consumer(tt)
    shared = owner.create_session().create_shared_consumer(tt, "n")
    with pytest.raises(JMSException):
        tt.delete()
    plain.close()
    with pytest.raises(JMSException):
        tt.delete()
    shared.close()
    tt.delete()
    with pytest.raises(InvalidDestinationException):
        _send(session, tt, "x")
    with pytest.raises(InvalidDestinationException):
        session.create_consumer(tt)
    assert held_bytes(broker) == 0


def test_tmp_07_browser_on_a_deleted_temporary_queue(connect: Connect) -> None:
    """TMP-07: creating a browser on a deleted temporary queue raises
    InvalidDestinationException."""
    session = connect().create_session()
    tq = session.create_temporary_queue()
    tq.delete()
    with pytest.raises(InvalidDestinationException):
        session.create_browser(tq)


def test_tmp_07_after_connection_close(connect: Connect) -> None:
    """TMP-07, TMP-05: once deleted with its connection, sends raise
    InvalidDestinationException and delete() is a no-op."""
    owner = connect()
    tq = owner.create_session().create_temporary_queue()
    tt = owner.create_session().create_temporary_topic()
    owner.close()
    other = connect().create_session()
    with pytest.raises(InvalidDestinationException):
        _send(other, tq, "x")
    with pytest.raises(InvalidDestinationException):
        _send(other, tt, "x")
    with pytest.raises(InvalidDestinationException):
        other.create_consumer(tq)
    with pytest.raises(InvalidDestinationException):
        other.create_browser(tq)
    tq.delete()
    tt.delete()


def test_tmp_08_only_the_owner_may_delete(connect: Connect) -> None:
    """TMP-08, TMP-09: delete() on a temporary queue obtained elsewhere (from jms_reply_to, or
    built from its name) raises IllegalStateException and deletes nothing."""
    owner = connect()
    session = owner.create_session()
    tq = session.create_temporary_queue()
    k = session.create_consumer(tq)
    other = connect().create_session()
    inbox = other.create_temporary_queue()
    _send(session, inbox, "request", reply_to=tq)
    received = receive(other.create_consumer(inbox)).jms_reply_to
    assert isinstance(received, TemporaryQueue)
    k.close()  # no consumer: only ownership can stop the delete now
    for foreign in (received, destination(str(tq)), TemporaryQueue(tq.queue_name)):
        assert foreign == tq
        with pytest.raises(IllegalStateException):
            foreign.delete()  # type: ignore[attr-defined]
    _send(other, tq, "still there")
    assert text_or_none(receive(session.create_consumer(tq))) == "still there"


@pytest.mark.parametrize("kind", ["queue", "topic"])
def test_tmp_09_reply_to_is_the_temporary_destination(connect: Connect, kind: str) -> None:
    """TMP-09, TMP-04: a received jms_reply_to naming a temporary destination is a
    TemporaryQueue / TemporaryTopic equal to (and hashing as) the creator's object, and
    another connection can send to it."""
    requester = connect().create_session()
    temp = (
        requester.create_temporary_queue()
        if kind == "queue"
        else requester.create_temporary_topic()
    )
    replies = requester.create_consumer(temp)
    responder = connect().create_session()
    service = Queue("service")
    requests = responder.create_consumer(service)
    _send(requester, service, "req", reply_to=temp)
    reply_to = receive(requests).jms_reply_to
    assert type(reply_to) is type(temp)
    assert reply_to == temp and hash(reply_to) == hash(temp) and str(reply_to) == str(temp)
    assert reply_to is not None
    _send(responder, reply_to, "reply")
    assert text_or_none(receive(replies)) == "reply"


def test_tmp_10_persistent_messages_on_temporary_queues(
    connect: Connect, broker: EmbeddedBroker
) -> None:
    """TMP-10: a PERSISTENT send to a temporary queue succeeds and the message arrives as
    PERSISTENT, but the broker keeps it in memory only (nothing in the store, even while it
    is still held unacknowledged)."""
    owner = connect().create_session(False, Session.CLIENT_ACKNOWLEDGE)
    tq = owner.create_temporary_queue()
    producer = connect().create_session().create_producer(tq)
    assert producer.delivery_mode == DeliveryMode.PERSISTENT
    producer.send(owner.create_text_message("p"))
    _send(owner, Queue("durable-q"), "control")  # a real queue's persistent message is stored
    msg = receive(owner.create_consumer(tq))  # held: not acknowledged
    assert text_or_none(msg) == "p" and msg.jms_delivery_mode == DeliveryMode.PERSISTENT
    assert set(stored_counts(broker)) == {"queue://durable-q"}


def test_tmp_11_subscriptions_on_a_temporary_topic(connect: Connect) -> None:
    """TMP-11, SUB-23: the owner may create non-durable and shared non-durable subscriptions
    on a temporary topic; durable ones are refused with InvalidDestinationException."""
    conn = connect()
    session = conn.create_session()
    tt = session.create_temporary_topic()
    plain = session.create_consumer(tt)
    shared_1 = session.create_shared_consumer(tt, "n")
    shared_2 = conn.create_session().create_shared_consumer(tt, "n")
    with pytest.raises(InvalidDestinationException):
        session.create_shared_durable_consumer(tt, "d")
    _send(connect().create_session(), tt, "a")
    _send(connect().create_session(), tt, "b")
    assert receive_texts(plain, 2) == ["a", "b"]
    got = []
    for k in (shared_1, shared_2):
        while (m := k.receive(QUIET)) is not None:
            got.append(text_or_none(m))
    assert sorted(got) == ["a", "b"]  # type: ignore[type-var]


def test_tmp_11_durable_on_temporary_topic_with_client_id(factory: ConnectionFactory) -> None:
    """TMP-11, SUB-23: an unshared durable subscription on a temporary topic is refused with
    InvalidDestinationException even when the client id is set."""
    with factory.create_connection() as conn:
        conn.client_id = "c1"
        session = conn.create_session()
        tt = session.create_temporary_topic()
        with pytest.raises(InvalidDestinationException):
            session.create_durable_consumer(tt, "d")


# ---------------------------------------------------------------------------- request/reply
def test_tmp_12_reply_to_is_carried_unchanged_and_not_acted_upon(connect: Connect) -> None:
    """TMP-12: jms_reply_to reaches every receiver unchanged (also a plain queue), the provider
    sends nothing to it by itself, and None means no reply is expected."""
    requester = connect().create_session()
    tq = requester.create_temporary_queue()
    replies = requester.create_consumer(tq)
    t = Topic("requests")
    receivers = [connect().create_session().create_consumer(t) for _ in range(2)]
    _send(requester, t, "with-temp", reply_to=tq)
    _send(requester, t, "with-queue", reply_to=Queue("replies"))
    _send(requester, t, "no-reply")
    for k in receivers:
        got = [receive(k) for _ in range(3)]
        assert [(text_or_none(m), m.jms_reply_to) for m in got] == [
            ("with-temp", tq),
            ("with-queue", Queue("replies")),
            ("no-reply", None),
        ]
    assert _nothing(replies)


def test_tmp_s5_request_reply(connect: Connect) -> None:
    """TMP-S5 (TMP-12, TMP-13): the requester sends r with jms_reply_to = tq; the responder
    sees a TemporaryQueue equal to tq and replies through an anonymous producer with
    jms_correlation_id = r.jms_message_id; the requester receives that reply."""
    requester_conn = connect()
    requester = requester_conn.create_session()
    tq = requester.create_temporary_queue()
    replies = requester.create_consumer(tq)
    responder = connect().create_session()
    service = Queue("service")
    requests = responder.create_consumer(service)
    sent = _send(requester, service, "r", reply_to=tq)
    r = receive(requests)
    assert text_or_none(r) == "r" and r.jms_message_id == sent.jms_message_id
    assert r.jms_reply_to == tq and isinstance(r.jms_reply_to, TemporaryQueue)
    reply = responder.create_text_message("answer")
    reply.jms_correlation_id = r.jms_message_id
    responder.create_producer(None).send(reply, destination=r.jms_reply_to)
    got = receive(replies)
    assert text_or_none(got) == "answer"
    assert got.jms_correlation_id == sent.jms_message_id
    assert got.jms_correlation_id is not None and got.jms_correlation_id.startswith("ID:")


def test_tmp_13_correlation_ids_are_not_enforced(connect: Connect) -> None:
    """TMP-13: the provider enforces neither convention: an application correlation id,
    one that does not match any message id, and even one starting with "ID:" arrive as set."""
    session = connect().create_session()
    tq = session.create_temporary_queue()
    k = session.create_consumer(tq)
    producer = session.create_producer(tq)
    values = ["order-17", "ID:not-a-message-id", ""]
    for value in values:
        msg = session.create_text_message(value)
        msg.jms_correlation_id = value
        producer.send(msg)
    assert [receive(k).jms_correlation_id for _ in values] == values


def test_tmp_s5_transacted_requester(connect: Connect) -> None:
    """TMP-S5 (TMP-14): a request sent in a transacted session is invisible to the responder
    until commit, so waiting for the reply before commit gets None; after commit the
    responder answers and the reply arrives."""
    requester = connect().create_session(True)
    tq = requester.create_temporary_queue()
    replies = requester.create_consumer(tq)
    responder = connect().create_session()
    service = Queue("service")
    requests = responder.create_consumer(service)
    _send(requester, service, "r", reply_to=tq)
    assert _nothing(requests)  # not visible before commit
    assert _nothing(replies)  # so no reply can come
    requester.commit()
    r = receive(requests)
    assert text_or_none(r) == "r" and r.jms_reply_to == tq
    reply = responder.create_text_message("answer")
    reply.jms_correlation_id = r.jms_message_id
    responder.create_producer(None).send(reply, destination=r.jms_reply_to)
    got = receive(replies)
    assert text_or_none(got) == "answer" and got.jms_correlation_id == r.jms_message_id
    requester.commit()
    assert _nothing(replies)


def test_tmp_14_rolled_back_request_is_never_seen(connect: Connect) -> None:
    """TMP-14: a request in a transaction that is rolled back never reaches the responder."""
    requester = connect().create_session(True)
    tq = requester.create_temporary_queue()
    responder = connect().create_session()
    service = Queue("service")
    requests = responder.create_consumer(service)
    _send(requester, service, "rolled-back", reply_to=tq)
    requester.rollback()
    _send(requester, service, "committed", reply_to=tq)
    requester.commit()
    assert text_or_none(receive(requests)) == "committed"
    assert _nothing(requests)


# ---------------------------------------------------------------------------- contexts
def test_tmp_s4_temporary_queue_lives_until_the_last_sharing_context_closes(
    factory: ConnectionFactory,
) -> None:
    """TMP-S4 (TMP-05): context X creates tq and y = X.create_context(AUTO_ACKNOWLEDGE);
    after X.close() a send to tq still succeeds and y's consumer receives it; after y.close()
    a send to tq raises InvalidDestinationException."""
    from ternmq.client.context import JMSContext

    x = factory.create_context()
    y = x.create_context(JMSContext.AUTO_ACKNOWLEDGE)
    try:
        tq = x.create_temporary_queue()
        k = y.create_consumer(tq)
        x.close()
        with factory.create_context() as other:
            other.create_producer().send(tq, "after X closed")
            assert text_or_none(k.receive(WAIT)) == "after X closed"
            y.close()
            with pytest.raises(InvalidDestinationException):
                other.create_producer().send(tq, "after y closed")
    finally:
        x.close()
        y.close()
