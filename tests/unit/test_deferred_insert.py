"""Concurrent store and dispatch for consumers that acknowledge (``Broker.enable_deferral``):
a PERSISTENT message sent to a queue whose consumer has nothing outstanding goes to it at
once, while its insert is deferred; the consumer's acknowledgement, if it comes before the
deferral ends, cancels the insert, and neither is written. The sender's reply waits until
the message is durable or acknowledged, whichever comes first."""

from __future__ import annotations

from _later_store import LaterStore, text_send
from ternmq.broker.engine import DEFER_SKIP, BrokerConnection
from ternmq.protocol import commands as c
from ternmq.store import AddMessage, RemoveMessage
from ternmq.testing import EngineHarness

Q = "queue://deferred"
T = "topic://deferred"


def _send(corr: int, n: int, *, dest: str = Q, persistent: bool = True, **kw: object) -> c.Send:
    return text_send(corr, n, dest, persistent=persistent, **kw)


class _Engine:
    """An engine on a :class:`LaterStore` with deferral on (the deferrals it announced are in
    ``deferrals``) and a producer session (1). On ``Q``: consumer 20 of session 2; with
    ``topic``, on ``T``: durable subscriptions "a" (consumer 20, session 2) and "b" (consumer
    30, session 3). Every destination the tests use has its positions reserved before the
    test starts (a queue's first message writes them: not a deferrable batch)."""

    SESSIONS = {20: 2, 30: 3}  # consumer id -> its session

    def __init__(self, *, topic: bool = False) -> None:
        self.store = LaterStore()
        self.h = EngineHarness(store=self.store)
        self.broker = self.h.broker
        self.deferrals: list[int] = []
        self.broker.enable_deferral(self.deferrals.append)
        self.out: list[c.Command] = []
        self.conn: BrokerConnection = self.broker.connect(self.out.append)
        self.dest = T if topic else Q
        reqs: list[c.Request] = [
            c.Connect(corr=1, client_id="cid" if topic else None),
            c.CreateSession(corr=2, session_id=1),
            c.CreateSession(corr=3, session_id=2),
            c.CreateSession(corr=4, session_id=3),
        ]
        if topic:
            reqs += [
                c.CreateConsumer(
                    corr=cid,
                    session_id=self.SESSIONS[cid],
                    consumer_id=cid,
                    destination=T,
                    kind="durable",
                    subscription=name,
                )
                for cid, name in [(20, "a"), (30, "b")]
            ]
        else:
            reqs.append(
                c.CreateConsumer(corr=5, session_id=2, consumer_id=20, destination=Q, prefetch=1000)
            )
        for req in [*reqs, _send(6, 0, dest="queue://other"), _send(7, 0, dest=self.dest)]:
            self.broker.handle(self.conn, req)
        self.store.commit()
        for did, consumer_id in [
            (x.delivery_id, x.consumer_id) for x in self.out if isinstance(x, c.Deliver)
        ]:
            self.ack(did, session=self.SESSIONS[consumer_id])
        self.store.commit()
        assert self.deferrals == []
        self.store.handed.clear()
        self.out.clear()

    def handle(self, req: c.Request) -> None:
        self.broker.handle(self.conn, req)

    def deliveries(self) -> list[int]:
        return [x.delivery_id for x in self.out if isinstance(x, c.Deliver)]

    def replies(self) -> list[int]:
        return [x.corr for x in self.out if isinstance(x, c.Ok)]

    def ack(self, did: int, corr: int = 0, session: int = 2) -> None:
        self.handle(c.Ack(corr=corr, session_id=session, delivery_ids=[did]))

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


def test_an_acknowledgement_still_being_written_does_not_stop_a_deferral() -> None:
    """The removal of an earlier message (no output of its own) is on its way to the disk:
    the next message is deferred all the same, and its reply leaves in its place, after it."""
    e = _Engine()
    e.broker.enable_deferral(None)
    e.handle(_send(10, 1))
    e.store.commit()  # written before delivery, deferral off
    e.broker.enable_deferral(e.deferrals.append)
    e.ack(e.deliveries()[0])  # one-way: its removal waits for a commit, with no output
    e.out.clear()
    e.handle(_send(11, 2))
    assert [type(x) for x in e.out] == [c.Deliver] and len(e.deferrals) == 1
    e.ack(e.deliveries()[0])
    assert e.store.kinds() == [["AddMessage", "SetDeliveryCount"], ["RemoveMessage"]]
    assert e.replies() == []  # consumed, but behind the earlier batch in the gate
    e.store.commit()
    assert e.replies() == [11]
    assert e.depth() == 0


def test_output_of_the_consumers_connection_waiting_in_the_gate_stops_a_deferral() -> None:
    """A reply on the consumer's connection waits for an earlier write: a delivery that left
    now would overtake it, so the message is written first and delivered after it."""
    e = _Engine()
    e.handle(_send(10, 1, dest="queue://other"))  # its reply waits for the commit
    e.handle(_send(11, 2))
    assert e.deferrals == [] and e.out == []
    assert e.store.kinds() == [["AddMessage"], ["AddMessage", "SetDeliveryCount"]]
    e.store.commit()
    assert [x.corr if isinstance(x, c.Ok) else "deliver" for x in e.out] == [10, "deliver", 11]


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
    e = _Engine(topic=True)
    e.handle(_send(41, 1, dest=T))
    a, b = e.deliveries()  # subscription "a" first
    assert e.store.handed == []
    e.ack(a, session=2)
    assert e.replies() == []  # one copy left
    e.ack(b, session=3)
    assert e.replies() == [41]
    assert e.store.handed == []


def test_one_of_two_copies_acknowledged_then_the_deferral_runs_out() -> None:
    e = _Engine(topic=True)
    e.handle(_send(41, 1, dest=T))
    a, b = e.deliveries()
    e.ack(a, session=2)
    e.broker.end_deferral(e.deferrals[0])
    # only the copy of the subscriber that did not acknowledge is written
    (batch,) = e.store.handed
    assert len([op for op in batch if isinstance(op, AddMessage)]) == 1
    e.store.commit()
    assert e.replies() == [41]
    e.ack(b, session=3)
    assert [type(op) for op in e.store.handed[-1]] == [RemoveMessage]


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
