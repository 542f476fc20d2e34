"""Concurrent store and dispatch for consumers that acknowledge (``Broker.enable_deferral``):
a PERSISTENT message sent to a queue whose consumer has nothing outstanding goes to it at
once, while its insert is deferred; the consumer's acknowledgement, if it comes before the
deferral ends, cancels the insert, and neither is written. The sender's reply waits until
the message is durable or acknowledged, whichever comes first."""

from __future__ import annotations

from _later_store import LaterStore
from ternmq.broker.engine import DEFER_SKIP, BrokerConnection
from ternmq.message import TextMessage
from ternmq.message.codec import encode_message
from ternmq.protocol import commands as c
from ternmq.store import AddMessage, RemoveMessage
from ternmq.testing import EngineHarness

Q = "queue://deferred"


def _send(corr: int, n: int, *, dest: str = Q, persistent: bool = True, **kw: object) -> c.Send:
    return c.Send(
        corr=corr,
        session_id=1,
        destination=dest,
        message=encode_message(TextMessage(f"m{n}")),
        persistent=persistent,
        **kw,  # type: ignore[arg-type]
    )


class _Engine:
    """An engine on a :class:`LaterStore` with deferral on (the deferrals it announced are in
    ``deferrals``), a producer session (1) and a consumer session (2) with consumer 20 on
    ``Q``; ``Q`` and ``queue://other`` have their positions reserved before the test starts."""

    def __init__(self, **settings: object) -> None:
        self.store = LaterStore()
        self.h = EngineHarness(store=self.store, **settings)
        self.broker = self.h.broker
        self.deferrals: list[int] = []
        self.broker.enable_deferral(self.deferrals.append)
        self.out: list[c.Command] = []
        self.conn: BrokerConnection = self.broker.connect(self.out.append)
        for req in [
            c.Connect(corr=1),
            c.CreateSession(corr=2, session_id=1),
            c.CreateSession(corr=3, session_id=2),
            c.CreateConsumer(corr=4, session_id=2, consumer_id=20, destination=Q, prefetch=1000),
            _send(5, 0, dest="queue://other"),  # exists (and has its positions) from here on
        ]:
            self.broker.handle(self.conn, req)
        self.store.commit()
        # Positions are reserved by the queue's first message (a write of its own), and the
        # consumer acknowledges it: every test starts from a queue that needs none.
        self.broker.handle(self.conn, _send(6, 0))
        self.store.commit()
        if self.deferrals:
            self.broker.end_deferral(self.deferrals[-1])
            self.store.commit()
        self.ack(self.deliveries()[0], corr=7)
        self.store.commit()
        self.store.handed.clear()
        self.deferrals.clear()
        self.out.clear()

    def handle(self, req: c.Request) -> None:
        self.broker.handle(self.conn, req)

    def deliveries(self) -> list[int]:
        return [x.delivery_id for x in self.out if isinstance(x, c.Deliver)]

    def replies(self) -> list[int]:
        return [x.corr for x in self.out if isinstance(x, c.Ok)]

    def ack(self, did: int, corr: int = 0) -> None:
        self.handle(c.Ack(corr=corr, session_id=2, delivery_ids=[did]))

    def depth(self, dest: str = Q) -> int:
        return self.broker.stat(self.broker.resolve(dest)).depth


def test_an_acknowledgement_before_the_deferral_ends_leaves_nothing_to_write() -> None:
    e = _Engine()
    e.handle(_send(10, 1))
    # the delivery left at once; the reply waits; nothing was handed to the store
    assert [type(x) for x in e.out] == [c.Deliver]
    assert e.store.handed == [] and len(e.deferrals) == 1
    e.ack(e.deliveries()[0])
    assert e.store.handed == []  # the insert and the removal cancelled out
    assert e.replies() == [10]  # consumed: the sender's reply leaves
    assert e.depth() == 0
    e.broker.end_deferral(e.deferrals[0])  # the timer, later: nothing left to do
    assert e.store.handed == []


def test_a_deferral_that_runs_out_writes_the_message_before_the_reply() -> None:
    e = _Engine()
    e.handle(_send(10, 1))
    did = e.deliveries()[0]
    e.broker.end_deferral(e.deferrals[0])
    assert e.store.kinds() == [["AddMessage", "SetDeliveryCount"]]
    assert e.replies() == []  # written, not yet durable
    e.store.commit()
    assert e.replies() == [10]
    e.ack(did)
    assert e.store.kinds()[-1] == ["RemoveMessage"]
    e.store.commit()
    assert e.depth() == 0


def test_a_consumer_slow_to_acknowledge_has_its_next_messages_written_first() -> None:
    e = _Engine()
    e.handle(_send(10, 1))
    e.broker.end_deferral(e.deferrals[0])  # ran out: consumer 20 did not acknowledge in time
    e.store.commit()
    e.ack(e.deliveries()[0])
    e.store.commit()
    e.store.handed.clear()
    for n in range(DEFER_SKIP):
        e.out.clear()
        e.handle(_send(100 + n, n))
        assert e.out == []  # written first: the delivery waits for the commit
        e.store.commit()
        e.ack(e.deliveries()[0])
        e.store.commit()
    assert len(e.deferrals) == 1
    e.out.clear()
    e.handle(_send(999, 9))
    assert len(e.deferrals) == 2  # deferred again
    assert [type(x) for x in e.out] == [c.Deliver]


def test_a_consumer_with_a_delivery_outstanding_has_the_message_written_first() -> None:
    e = _Engine()
    e.handle(_send(10, 1))
    first = e.deliveries()[0]
    e.handle(_send(11, 2))  # a write of its own: the deferred batch is handed over first
    assert e.store.kinds() == [["AddMessage", "SetDeliveryCount"]] * 2
    assert len(e.deferrals) == 1
    assert e.replies() == []
    e.store.commit()
    assert e.replies() == [10, 11]
    assert len(e.deliveries()) == 2
    e.ack(first)
    assert e.store.kinds()[-1] == ["RemoveMessage"]


def test_another_write_hands_the_deferred_batch_over_first_in_order() -> None:
    e = _Engine()
    e.handle(_send(10, 1))
    e.handle(_send(11, 2, dest="queue://other"))
    assert e.store.kinds() == [["AddMessage", "SetDeliveryCount"], ["AddMessage"]]
    e.store.commit()
    assert e.replies() == [10, 11]


def test_output_of_later_requests_waits_behind_the_deferred_reply() -> None:
    e = _Engine()
    e.handle(_send(10, 1))
    e.handle(_send(11, 2, dest="queue://other", persistent=False))
    assert e.replies() == []  # behind the deferred reply, in order
    e.ack(e.deliveries()[0])
    assert e.replies() == [10, 11]
    assert e.store.handed == []


def test_a_deferred_batch_that_fails_fails_the_send_and_pauses_deferral() -> None:
    e = _Engine()
    e.handle(_send(10, 1))
    did = e.deliveries()[0]
    e.handle(_send(11, 2, dest="queue://other"))  # hands the deferred batch over first
    assert e.store.report is not None
    first, second = e.store.tokens
    e.store.tokens = []
    e.store.report([first], OSError("disk full"))
    e.store.report([second], OSError("disk full"))
    errors = [x for x in e.out if isinstance(x, c.Error)]
    assert [x.corr for x in errors] == [10, 11]
    assert "could not make this durable" in errors[0].message
    assert e.depth() == 0
    e.ack(did)  # the consumer had it: its acknowledgement finds nothing left to do
    e.out.clear()
    e.handle(_send(12, 3))  # no deferral until a batch is written again
    assert len(e.deferrals) == 1
    assert e.store.kinds()[-1] == ["AddMessage", "SetDeliveryCount"]
    e.store.commit()
    assert e.replies() == [12]
    e.ack(e.deliveries()[-1])
    e.store.commit()
    e.out.clear()
    e.handle(_send(13, 4))
    assert len(e.deferrals) == 2  # written again: deferral resumed


def test_a_message_for_two_waiting_subscribers_is_settled_by_both_acknowledgements() -> None:
    store = LaterStore()
    h = EngineHarness(store=store)
    deferrals: list[int] = []
    h.broker.enable_deferral(deferrals.append)
    out: list[c.Command] = []
    conn = h.broker.connect(out.append)
    t = "topic://deferred"
    for req in [
        c.Connect(corr=1, client_id="cid"),
        c.CreateSession(corr=2, session_id=1),
        c.CreateSession(corr=3, session_id=2),
        c.CreateSession(corr=4, session_id=3),
    ]:
        h.broker.handle(conn, req)
    for cid, name in [(2, "a"), (3, "b")]:
        h.broker.handle(
            conn,
            c.CreateConsumer(
                corr=cid * 10,
                session_id=cid,
                consumer_id=cid * 10,
                destination=t,
                kind="durable",
                subscription=name,
            ),
        )
    store.commit()
    h.broker.handle(conn, _send(40, 0, dest=t))  # reserves positions: written
    store.commit()
    for x in out:
        if isinstance(x, c.Deliver):
            sid = 2 if x.consumer_id == 20 else 3
            h.broker.handle(conn, c.Ack(corr=0, session_id=sid, delivery_ids=[x.delivery_id]))
    store.commit()
    store.handed.clear()
    out.clear()
    h.broker.handle(conn, _send(41, 1, dest=t))
    copies = [x for x in out if isinstance(x, c.Deliver)]
    assert len(copies) == 2 and store.handed == []
    a, b = copies
    h.broker.handle(conn, c.Ack(corr=0, session_id=2, delivery_ids=[a.delivery_id]))
    assert not any(isinstance(x, c.Ok) and x.corr == 41 for x in out)  # one copy left
    h.broker.handle(conn, c.Ack(corr=0, session_id=3, delivery_ids=[b.delivery_id]))
    assert any(isinstance(x, c.Ok) and x.corr == 41 for x in out)
    assert store.handed == []


def test_one_of_two_copies_acknowledged_then_the_deferral_runs_out() -> None:
    store = LaterStore()
    h = EngineHarness(store=store)
    deferrals: list[int] = []
    h.broker.enable_deferral(deferrals.append)
    out: list[c.Command] = []
    conn = h.broker.connect(out.append)
    t = "topic://deferred2"
    for req in [
        c.Connect(corr=1, client_id="cid2"),
        c.CreateSession(corr=2, session_id=1),
        c.CreateSession(corr=3, session_id=2),
        c.CreateSession(corr=4, session_id=3),
    ]:
        h.broker.handle(conn, req)
    for cid, name in [(2, "a"), (3, "b")]:
        h.broker.handle(
            conn,
            c.CreateConsumer(
                corr=cid * 10,
                session_id=cid,
                consumer_id=cid * 10,
                destination=t,
                kind="durable",
                subscription=name,
            ),
        )
    store.commit()
    h.broker.handle(conn, _send(40, 0, dest=t))
    store.commit()
    if deferrals:
        h.broker.end_deferral(deferrals[-1])
        store.commit()
    for x in out:
        if isinstance(x, c.Deliver):
            sid = 2 if x.consumer_id == 20 else 3
            h.broker.handle(conn, c.Ack(corr=0, session_id=sid, delivery_ids=[x.delivery_id]))
    store.commit()
    store.handed.clear()
    deferrals.clear()
    out.clear()
    h.broker.handle(conn, _send(41, 1, dest=t))
    a, b = [x for x in out if isinstance(x, c.Deliver)]
    h.broker.handle(conn, c.Ack(corr=0, session_id=2, delivery_ids=[a.delivery_id]))
    h.broker.end_deferral(deferrals[0])
    # only the copy of the subscriber that did not acknowledge is written
    (batch,) = store.handed
    adds = [op for op in batch if isinstance(op, AddMessage)]
    assert len(adds) == 1
    store.commit()
    assert any(isinstance(x, c.Ok) and x.corr == 41 for x in out)
    h.broker.handle(conn, c.Ack(corr=0, session_id=3, delivery_ids=[b.delivery_id]))
    assert [type(op) for op in store.handed[-1]] == [RemoveMessage]


def test_shutdown_writes_a_deferred_batch() -> None:
    e = _Engine()
    e.handle(_send(10, 1))
    assert e.store.handed == []
    e.broker.shutdown()
    # written first; then the delivery the closing connection returns counts as one
    assert e.store.kinds() == [["AddMessage", "SetDeliveryCount"], ["SetDeliveryCount"]]


def test_a_stale_deferral_token_does_nothing() -> None:
    e = _Engine()
    e.handle(_send(10, 1))
    first = e.deferrals[0]
    e.ack(e.deliveries()[0])
    e.out.clear()
    e.handle(_send(11, 2))
    assert len(e.deferrals) == 2
    e.broker.end_deferral(first)  # the first deferral's timer fires late
    assert e.store.handed == []
    e.ack(e.deliveries()[0])
    assert e.replies() == [11] and e.store.handed == []


def test_without_deferral_a_persistent_message_is_durable_before_it_is_delivered() -> None:
    e = _Engine()
    e.broker.enable_deferral(None)
    e.handle(_send(10, 1))
    assert e.out == [] and e.store.kinds() == [["AddMessage", "SetDeliveryCount"]]
    e.store.commit()
    assert [type(x) for x in e.out] == [c.Deliver, c.Ok]


def test_a_non_persistent_message_is_not_deferred() -> None:
    e = _Engine()
    e.handle(_send(10, 1, persistent=False))
    assert e.deferrals == [] and [type(x) for x in e.out] == [c.Deliver, c.Ok]
