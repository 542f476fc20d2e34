"""Conformance: duplicate detection for resends (catalog PSF-09, the REL-06 ambiguity).

A send carrying the String property ``JMS_TernMQ_DuplicateID`` whose id the destination
already accepted (within its last ``id_cache_size`` ids) is acknowledged, but not enqueued and
delivered to nobody; caches are per destination; a transaction with a repeated id is rolled
back whole at commit (TransactionRolledBackException); a rolled-back send records nothing;
the ids of PERSISTENT sends survive a restart and a crash, those of NON_PERSISTENT sends live
in memory only. Every test runs over vm, vm+sqlite and tcp (a real ``ternmq serve``).
"""

from __future__ import annotations

import pytest

from ternmq.broker.config import DestinationPolicy
from ternmq.broker.embedded import EmbeddedBroker
from ternmq.client import ConnectionFactory, Session
from ternmq.destination import Queue, Topic
from ternmq.errors import JMSException, MessageFormatException, TransactionRolledBackException
from ternmq.message import TextMessage

from ._helpers import (
    NP,
    TRANSACTED,
    Completion,
    Connect,
    CrashBroker,
    MakeBroker,
    broker_stats,
    drain_texts,
    drain_via,
    new_session,
    receive,
    text,
    wait_for,
)

DUP = "JMS_TernMQ_DuplicateID"


def _msg(session: Session, body: str, dup_id: str | None) -> TextMessage:
    m = session.create_text_message(body)
    if dup_id is not None:
        m.set_string_property(DUP, dup_id)
    return m


def _send(
    session: Session, dest: Queue | Topic, *pairs: tuple[str, str | None], **kw: object
) -> None:
    """Send ``(body, duplicate id or None)`` pairs in order through one producer."""
    producer = session.create_producer(dest)
    for body, dup_id in pairs:
        producer.send(_msg(session, body, dup_id), **kw)  # type: ignore[arg-type]
    producer.close()


def _send_via(
    factory: ConnectionFactory, dest: Queue | Topic, *pairs: tuple[str, str | None], **kw: object
) -> None:
    with factory.create_connection() as conn:
        _send(conn.create_session(), dest, *pairs, **kw)


def _duplicates(broker: EmbeddedBroker, dest: Queue | Topic) -> int:
    return next((d.duplicates for d in broker_stats(broker) if d.name == str(dest)), 0)


# ---- queues, topics, separate caches -----------------------------------------------------------
def test_psf_09_repeated_id_on_a_queue_is_acknowledged_not_enqueued(
    broker: EmbeddedBroker, factory: ConnectionFactory, connect: Connect
) -> None:
    """PSF-09: a send repeating an id the queue accepted returns normally (and a completion
    listener's on_completion runs), but the queue holds and delivers only the first; sends
    without the property or with other ids are untouched; ``ternmq stat`` counts the drops."""
    q = Queue("psf09q")
    conn = connect()
    s = conn.create_session()
    _send(s, q, ("first", "A"), ("again", "A"), ("plain", None), ("plain", None), ("other", "B"))
    listener = Completion()
    producer = s.create_producer(q)
    producer.send(_msg(s, "async-again", "A"), completion_listener=listener)
    assert listener.done.wait(5.0)
    assert [text(m) for m in listener.completed] == ["async-again"] and not listener.failed
    _send(s, q, ("np-again", "B"), delivery_mode=NP)
    assert drain_texts(s.create_consumer(q)) == ["first", "plain", "plain", "other"]
    assert _duplicates(broker, q) == 3


def test_psf_09_repeated_publish_reaches_no_subscriber(
    broker: EmbeddedBroker, connect: Connect
) -> None:
    """PSF-09 on a topic: the id belongs to the topic, so a repeated publish is dropped whole:
    neither of two subscribers (a plain one and a durable one) gets a second copy."""
    t = Topic("psf09t")
    conn = connect("psf09-client")
    s = conn.create_session()
    plain = s.create_consumer(t)
    durable = s.create_durable_consumer(t, "d")
    _send(s, t, ("one", "X"), ("one-again", "X"), ("two", "Y"), ("two-again", "Y"))
    _send(s, t, ("two-np-again", "Y"), delivery_mode=NP)
    assert drain_texts(plain) == ["one", "two"]
    assert drain_texts(durable) == ["one", "two"]
    assert _duplicates(broker, t) == 3


def test_psf_09_each_destination_has_its_own_cache(factory: ConnectionFactory) -> None:
    """PSF-09: the same id is accepted once by each destination: two queues, and a topic
    named like one of them."""
    q1, q2, t = Queue("psf09a"), Queue("psf09b"), Topic("psf09a")
    with factory.create_connection() as conn:
        conn.start()
        s = conn.create_session()
        sub = s.create_consumer(t)
        for dest in (q1, q2, t, q1, q2, t):
            _send(s, dest, (f"to {dest}", "same-id"))
        assert drain_texts(sub) == ["to topic://psf09a"]
    assert drain_via(factory, q1) == ["to queue://psf09a"]
    assert drain_via(factory, q2) == ["to queue://psf09b"]


def test_psf_09_an_evicted_id_is_accepted_again(make_broker: MakeBroker) -> None:
    """PSF-09: a destination remembers its last ``id_cache_size`` ids (a per-destination policy);
    an older one is forgotten and a send with it is accepted again. Other destinations keep
    the default size (20,000)."""
    small, big = Queue("psf09small"), Queue("psf09big")
    broker = make_broker(policies={str(small): DestinationPolicy(id_cache_size=3)})
    factory = ConnectionFactory(broker.url)
    ids = ["a", "b", "c", "d"]
    for q in (small, big):
        _send_via(factory, q, *[(i, i) for i in ids])
        _send_via(factory, q, ("a-again", "a"), ("d-again", "d"))
    assert drain_via(factory, small) == ["a", "b", "c", "d", "a-again"]
    assert drain_via(factory, big) == ["a", "b", "c", "d"]


def test_psf_09_cache_size_zero_turns_detection_off(make_broker: MakeBroker) -> None:
    """PSF-09: ``id_cache_size = 0`` (per destination) switches duplicate detection off."""
    q = Queue("psf09off")
    broker = make_broker(policies={str(q): DestinationPolicy(id_cache_size=0)})
    factory = ConnectionFactory(broker.url)
    _send_via(factory, q, ("one", "A"), ("two", "A"))
    assert drain_via(factory, q) == ["one", "two"]


def test_psf_09_the_id_must_be_a_short_string(connect: Connect) -> None:
    """PSF-09: a non-String ``JMS_TernMQ_DuplicateID`` raises MessageFormatException at send();
    an empty one or one over 1024 characters raises JMSException; nothing is enqueued."""
    q = Queue("psf09bad")
    s = connect().create_session()
    producer = s.create_producer(q)
    m = s.create_text_message("int id")
    m.set_int_property(DUP, 7)
    with pytest.raises(MessageFormatException, match=DUP):
        producer.send(m)
    for bad in ("", "x" * 1025):
        with pytest.raises(JMSException, match="1 to 1024 characters"):
            producer.send(_msg(s, "bad", bad))
    producer.send(_msg(s, "ok", "x" * 1024))
    assert drain_texts(s.create_consumer(q)) == ["ok"]


# ---- transactions ------------------------------------------------------------------------------
def test_psf_09_transaction_with_a_repeated_id_is_rolled_back_whole(connect: Connect) -> None:
    """PSF-09 (as Artemis): a commit whose sends repeat an accepted id rolls the whole
    transaction back: TransactionRolledBackException naming the id; none of its sends is
    delivered, its new ids are not recorded, and what it consumed comes back."""
    q, out = Queue("psf09txq"), Queue("psf09txout")
    conn = connect()
    auto = conn.create_session()
    _send(auto, q, ("done", "order-1"))
    _send(auto, out, ("input", None))
    tx = new_session(conn, TRANSACTED)
    assert text(receive(tx.create_consumer(out))) == "input"
    _send(tx, q, ("new", "order-2"), ("redo", "order-1"))
    with pytest.raises(TransactionRolledBackException, match="'order-1'"):
        tx.commit()
    tx.close()
    in_again = conn.create_session().create_consumer(out)
    m = receive(in_again)
    assert text(m) == "input" and m.jms_redelivered
    _send(auto, q, ("new", "order-2"))  # not recorded by the rolled-back commit
    assert drain_texts(auto.create_consumer(q)) == ["done", "new"]


def test_psf_09_an_id_repeated_within_one_transaction_rolls_it_back(connect: Connect) -> None:
    """PSF-09: two sends of one transaction with the same id to the same destination are a
    duplicate too (the whole transaction rolls back); the same id to two destinations is not."""
    q, q2 = Queue("psf09tx2"), Queue("psf09tx2b")
    conn = connect()
    tx = new_session(conn, TRANSACTED)
    _send(tx, q, ("one", "k"), ("two", "k"))
    with pytest.raises(TransactionRolledBackException, match="'k'"):
        tx.commit()
    _send(tx, q, ("one", "k"))
    _send(tx, q2, ("one", "k"))
    tx.commit()
    s = conn.create_session()
    assert drain_texts(s.create_consumer(q)) == ["one"]
    assert drain_texts(s.create_consumer(q2)) == ["one"]


def test_psf_09_the_id_is_recorded_at_commit_never_by_a_rollback(connect: Connect) -> None:
    """PSF-09: a transacted send records its id when the commit takes effect; a rolled-back
    one records nothing, so the id can be sent again; after the commit a repeat is dropped."""
    q = Queue("psf09rb")
    conn = connect()
    tx = new_session(conn, TRANSACTED)
    auto = conn.create_session()
    _send(tx, q, ("rolled back", "r"))
    tx.rollback()
    _send(auto, q, ("after rollback", "r"))
    _send(tx, q, ("committed", "c"))
    _send(auto, q, ("before commit", "c"))  # the transaction's id is not recorded yet
    with pytest.raises(TransactionRolledBackException, match="'c'"):
        tx.commit()
    _send(tx, q, ("committed", "c2"))
    tx.commit()
    _send(auto, q, ("repeat", "c2"), ("repeat", "r"))
    assert drain_texts(auto.create_consumer(q)) == ["after rollback", "before commit", "committed"]


# ---- restart and crash ---------------------------------------------------------------------------
def test_psf_09_ids_survive_a_restart(make_broker: MakeBroker) -> None:
    """PSF-09: the ids of PERSISTENT sends are kept with the store: after a restart a resend to
    the queue and to the topic (durable subscription) is dropped; an evicted id stays
    forgotten (the bound holds on disk too). NON_PERSISTENT ids are remembered in memory only,
    so after a restart such a resend is accepted (documented)."""
    q, t, small = Queue("psf09rs"), Topic("psf09rs"), Queue("psf09rsmall")
    broker = make_broker(policies={str(small): DestinationPolicy(id_cache_size=2)})
    factory = ConnectionFactory(broker.url)
    with factory.create_connection() as conn:
        conn.client_id = "psf09rs"
        conn.create_session().create_durable_consumer(t, "d").close()
    _send_via(factory, q, ("p", "P1"))
    _send_via(factory, q, ("np", "N1"), delivery_mode=NP)
    _send_via(factory, t, ("tp", "T1"))
    _send_via(factory, small, ("1", "s1"), ("2", "s2"), ("3", "s3"))
    assert drain_via(factory, q) == ["p", "np"]
    broker.stop()
    broker.start()
    _send_via(factory, q, ("p-again", "P1"), ("np-again", "N1"))
    _send_via(factory, t, ("tp-again", "T1"))
    _send_via(factory, small, ("1-again", "s1"), ("3-again", "s3"))
    assert drain_via(factory, q) == ["np-again"]
    assert drain_via(factory, small) == ["1", "2", "3", "1-again"]
    with factory.create_connection() as conn:
        conn.client_id = "psf09rs"
        conn.start()
        assert drain_texts(conn.create_session().create_durable_consumer(t, "d")) == ["tp"]


def test_psf_09_resends_after_a_crash_make_no_second_copy(crash_broker: CrashBroker) -> None:
    """PSF-09, REL-06: a PERSISTENT send confirmed before a crash (SIGKILL of the server over
    tcp) is stored with its id; the producer resending it after the crash, as it would when in
    doubt, gets a normal return and the queue still holds one copy."""
    q = Queue("psf09crash")
    factory = ConnectionFactory(crash_broker.url)
    _send_via(factory, q, ("m1", "id-1"), ("m2", "id-2"))
    after = ConnectionFactory(crash_broker.crash())
    _send_via(after, q, ("m2-again", "id-2"), ("m3", "id-3"), ("m1-again", "id-1"))
    assert drain_via(after, q) == ["m1", "m2", "m3"]


def test_psf_09_duplicates_while_blocked_are_dropped(
    make_broker: MakeBroker, connect: Connect
) -> None:
    """PSF-09 with a full destination (policy ``block``): two sends with one id, both held,
    make one message once room frees; the second is acknowledged without a copy."""
    q = Queue("psf09block")
    policy = DestinationPolicy(max_bytes=2_000, full_policy="block", block_timeout=30.0)
    broker = make_broker(policies={str(q): policy})
    factory = ConnectionFactory(broker.url)
    filler = "x" * 1_850
    _send_via(factory, q, (filler, None))
    listener = Completion()
    with factory.create_connection() as conn:
        s = conn.create_session()
        producer = s.create_producer(q)
        for body in ("held", "held-again"):
            producer.send(_msg(s, body, "H"), completion_listener=listener)
        assert not listener.done.wait(0.2)  # both held: the queue is full
        with factory.create_connection() as reader:
            reader.start()
            c = reader.create_session().create_consumer(q)
            assert text(receive(c)) == filler
            assert wait_for(lambda: len(listener.completed) == 2)
            assert drain_texts(c) == ["held"]
        assert not listener.failed
    assert drain_via(factory, q) == []
