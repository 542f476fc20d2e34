"""Concurrent store and dispatch: a consumer that counts a message consumed once it is sent
(``CreateConsumer.acked_when_sent``, STOMP's ``ack:auto``) takes a PERSISTENT message as it
is sent, and the message is then never written, when nothing else of the request is to be
written and no earlier batch is still waiting. Otherwise everything is written and
acknowledged as before: the store sees the insert and, after the consumer's ``Ack``, the
removal. A consumer without the flag always has the message written first."""

from __future__ import annotations

from _later_store import LaterStore, text_send
from ternmq.broker.engine import BrokerConnection
from ternmq.protocol import commands as c
from ternmq.store import AddMessage, RemoveMessage
from ternmq.testing import EngineHarness

Q = "queue://sent"


def _send(corr: int, n: int, *, dest: str = Q, persistent: bool = True, **kw: object) -> c.Send:
    return text_send(corr, n, dest, persistent=persistent, **kw)


def _engine(
    acked_when_sent: bool = True, dest: str = Q, **settings: object
) -> tuple[EngineHarness, LaterStore, list[c.Command], BrokerConnection]:
    """An engine on a :class:`LaterStore` store with a producer session (1) and a consumer
    session (2) holding one consumer (20) on ``dest``; the queue's positions are reserved
    (its first write) before the test starts."""
    store = LaterStore()
    h = EngineHarness(store=store, **settings)
    out: list[c.Command] = []
    conn = h.broker.connect(out.append)
    for req in [
        c.Connect(corr=1),
        c.CreateSession(corr=2, session_id=1),
        c.CreateSession(corr=3, session_id=2),
        _send(4, 0, dest="queue://other"),  # a write, committed below
    ]:
        h.broker.handle(conn, req)
    h.broker.handle(
        conn,
        c.CreateConsumer(
            corr=5,
            session_id=2,
            consumer_id=20,
            destination=dest,
            prefetch=10,
            acked_when_sent=acked_when_sent,
        ),
    )
    store.commit()
    # The queue's first message reserves its positions (a write of its own): done here, and
    # its delivery acknowledged, so that every test starts from a queue that needs none.
    h.broker.handle(conn, _send(6, 0, dest=dest))
    store.commit()
    first = next(x for x in out if isinstance(x, c.Deliver))
    h.broker.handle(conn, c.Ack(corr=7, session_id=2, delivery_ids=[first.delivery_id]))
    store.commit()
    store.handed.clear()
    out.clear()
    return h, store, out, conn


def _depth(h: EngineHarness, dest: str = Q) -> int:
    stat = h.broker.stat(h.broker.resolve(dest))
    return stat.depth


def test_a_message_taken_as_it_is_sent_is_never_written() -> None:
    h, store, out, conn = _engine()
    submitted = h.broker.submitted
    h.broker.handle(conn, _send(10, 1))
    # nothing was handed to the store, and the receipt and delivery left at once
    assert store.handed == []
    assert h.broker.submitted == submitted
    assert [type(x) for x in out] == [c.Deliver, c.Ok]
    assert _depth(h) == 0
    # the consumer's acknowledgement (as the STOMP gateway sends it) finds nothing to do
    deliver = out[0]
    assert isinstance(deliver, c.Deliver)
    h.broker.handle(conn, c.Ack(corr=11, session_id=2, delivery_ids=[deliver.delivery_id]))
    assert store.handed == []
    assert isinstance(out[-1], c.Ok) and out[-1].corr == 11


def test_a_consumer_that_acknowledges_later_has_the_message_written_first() -> None:
    h, store, out, conn = _engine(acked_when_sent=False)
    h.broker.handle(conn, _send(10, 1))
    assert store.kinds() == [["AddMessage", "SetDeliveryCount"]]
    assert out == []  # the receipt and delivery wait for the commit
    store.commit()
    assert [type(x) for x in out] == [c.Deliver, c.Ok]
    deliver = out[0]
    assert isinstance(deliver, c.Deliver)
    h.broker.handle(conn, c.Ack(corr=11, session_id=2, delivery_ids=[deliver.delivery_id]))
    assert store.kinds()[-1] == ["RemoveMessage"]


def test_behind_an_earlier_batch_the_message_is_written_and_acknowledged_as_before() -> None:
    h, store, out, conn = _engine()
    h.broker.handle(conn, _send(10, 1, dest="queue://other"))
    assert len(store.handed) == 1  # not yet durable
    h.broker.handle(conn, _send(11, 2))
    assert len(store.handed) == 2
    assert [type(op).__name__ for op in store.handed[1]] == ["AddMessage", "SetDeliveryCount"]
    assert out == []
    store.commit()
    deliver = next(x for x in out if isinstance(x, c.Deliver))
    h.broker.handle(conn, c.Ack(corr=12, session_id=2, delivery_ids=[deliver.delivery_id]))
    removal = store.handed[-1]
    assert len(removal) == 1 and isinstance(removal[0], RemoveMessage)
    store.commit()
    assert _depth(h) == 0


def test_a_message_stored_before_the_consumer_had_credit_is_removed_by_its_ack() -> None:
    h, store, out, conn = _engine()
    h.broker.handle(conn, c.Credit(corr=10, consumer_id=20, messages=-100))
    h.broker.handle(conn, _send(11, 1))
    assert store.kinds() == [["AddMessage"]]
    store.commit()
    assert _depth(h) == 1
    h.broker.handle(conn, c.Credit(corr=12, consumer_id=20, messages=100))
    assert store.kinds()[-1] == ["SetDeliveryCount"]  # delivered before: counted first
    store.commit()
    deliver = next(x for x in out if isinstance(x, c.Deliver))
    h.broker.handle(conn, c.Ack(corr=13, session_id=2, delivery_ids=[deliver.delivery_id]))
    assert any(isinstance(op, RemoveMessage) for ops in store.handed for op in ops)
    store.commit()
    assert _depth(h) == 0


def test_a_send_that_writes_something_else_too_is_written_whole() -> None:
    # a duplicate id is remembered in the store: the request writes more than the insert
    h, store, out, conn = _engine()
    h.broker.handle(conn, _send(10, 1, duplicate_id="d-1"))
    kinds = store.kinds()
    assert len(kinds) == 1 and "AddMessage" in kinds[0] and "AddDuplicateId" in kinds[0]
    store.commit()
    assert [type(x) for x in out] == [c.Deliver, c.Ok]


def test_a_topic_copy_for_another_durable_subscriber_keeps_the_message_written() -> None:
    store = LaterStore()
    h = EngineHarness(store=store)
    out: list[c.Command] = []
    conn = h.broker.connect(out.append)
    t = "topic://sent"
    for req in [
        c.Connect(corr=1, client_id="cid"),
        c.CreateSession(corr=2, session_id=1),
        c.CreateSession(corr=3, session_id=2),
        c.CreateSession(corr=4, session_id=3),
    ]:
        h.broker.handle(conn, req)
    for cid, sid, name, flag in [(20, 2, "a", True), (30, 3, "b", False)]:
        h.broker.handle(
            conn,
            c.CreateConsumer(
                corr=cid,
                session_id=sid,
                consumer_id=cid,
                destination=t,
                kind="durable",
                subscription=name,
                acked_when_sent=flag,
            ),
        )
    store.commit()
    for n in range(2):  # the first send reserves positions; the second is the case
        store.handed.clear()
        h.broker.handle(conn, _send(40 + n, n, dest=t))
        store.commit()
    adds = [op for op in store.handed[0] if isinstance(op, AddMessage)]
    assert len(adds) == 2  # both subscriptions' copies written: the request wrote more
    assert sum(isinstance(x, c.Deliver) for x in out) == 4


def test_a_non_persistent_message_goes_as_before() -> None:
    h, store, out, conn = _engine()
    h.broker.handle(conn, _send(10, 1, persistent=False))
    assert store.handed == []
    assert [type(x) for x in out] == [c.Deliver, c.Ok]
    assert _depth(h) == 1  # delivered, not yet acknowledged: its Ack removes it
    deliver = out[0]
    assert isinstance(deliver, c.Deliver)
    h.broker.handle(conn, c.Ack(corr=11, session_id=2, delivery_ids=[deliver.delivery_id]))
    assert _depth(h) == 0


def test_a_batch_of_sends_in_one_read_each_taken_as_sent() -> None:
    h, store, out, conn = _engine()
    n = h.broker.handle_batch(conn, [_send(10 + i, i) for i in range(5)])
    assert n == 5
    assert store.handed == []
    assert sum(isinstance(x, c.Deliver) for x in out) == 5
    assert [x.corr for x in out if isinstance(x, c.Ok)] == [10, 11, 12, 13, 14]
    assert _depth(h) == 0


def test_a_transacted_session_s_consumer_never_counts_a_message_consumed_when_sent() -> None:
    store = LaterStore()
    h = EngineHarness(store=store)
    out: list[c.Command] = []
    conn = h.broker.connect(out.append)
    for req in [
        c.Connect(corr=1),
        c.CreateSession(corr=2, session_id=1),
        c.CreateSession(corr=3, session_id=2, transacted=True),
        c.CreateConsumer(corr=4, session_id=2, consumer_id=20, destination=Q, acked_when_sent=True),
        _send(5, 0),  # reserves the queue's positions
    ]:
        h.broker.handle(conn, req)
    store.commit()
    store.handed.clear()
    h.broker.handle(conn, _send(10, 1))
    assert store.kinds() == [["AddMessage", "SetDeliveryCount"]]  # written: its commit decides
    store.commit()
    h.broker.handle(conn, c.Rollback(corr=11, session_id=2))
    assert _depth(h) == 2  # both messages back in the queue
