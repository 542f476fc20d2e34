"""A message sent to a queue whose consumers keep up goes to one of them as it is enqueued
(``Broker._hand_over``), without waiting for the dispatch pass after the request: the
consumer it reaches must be the one that pass would pick (round-robin among those with
credit, PTP-04; selectors, PTP-05; an exclusive queue's first consumer; message groups,
PSF-03; an expired message never delivered, PSF-05). Each scenario runs twice, once with
plain sends (the hand-over) and once with every send committed in a transaction of its own
(a commit's messages always go through the dispatch pass), and the deliveries must be the
same. And the per-destination send route (``Broker._routes``) never sends to a queue that
was deleted."""

from __future__ import annotations

import pytest

from ternmq.broker.engine import Broker, BrokerConnection
from ternmq.errors import InvalidDestinationException
from ternmq.message import TextMessage
from ternmq.message.codec import decode_message, encode_message
from ternmq.protocol import commands as c
from ternmq.testing import EngineHarness

Q = "queue://ho"


def _msg(n: int, group: str | None = None) -> bytes:
    m = TextMessage(f"m{n}")
    m.set_int_property("n", n)
    if group is not None:
        m.set_string_property("JMSXGroupID", group)
    return encode_message(m)


def _deliveries(
    transacted: bool,
    consumers: list[tuple[str | None, int]],
    sends: list[dict[str, object]],
    **settings: object,
) -> list[tuple[int, str]]:
    """Open ``consumers`` (selector, prefetch) on Q in that order, then send ``sends`` (Send
    fields besides the message number ``n``) one request each, plain or committed one by
    one; return (consumer id, text) of every delivery in order. Nothing is acknowledged, so
    a consumer's prefetch is its credit for the whole run."""
    h = EngineHarness(**settings)
    broker: Broker = h.broker
    got: list[tuple[int, str]] = []

    def emit(cmd: c.Command) -> None:
        if isinstance(cmd, c.Deliver):
            body = decode_message(cmd.message)
            assert isinstance(body, TextMessage)
            got.append((cmd.consumer_id, body.text or ""))

    consumer_conn = broker.connect(emit)
    producer: BrokerConnection = broker.connect(lambda cmd: None)
    broker.handle(consumer_conn, c.Connect(corr=1))
    broker.handle(consumer_conn, c.CreateSession(corr=2, session_id=1))
    for i, (selector, prefetch) in enumerate(consumers, start=1):
        broker.handle(
            consumer_conn,
            c.CreateConsumer(
                corr=10 + i,
                session_id=1,
                consumer_id=i,
                destination=Q,
                selector=selector,
                prefetch=prefetch,
            ),
        )
    broker.handle(producer, c.Connect(corr=1))
    broker.handle(producer, c.CreateSession(corr=2, session_id=1, transacted=transacted))
    for n, fields in enumerate(sends):
        group = fields.pop("group", None)
        assert group is None or isinstance(group, str)
        send = c.Send(
            corr=100 + n,
            session_id=1,
            destination=Q,
            message=_msg(n, group),
            persistent=False,
            group_id=group,
            **fields,  # type: ignore[arg-type]
        )
        broker.handle(producer, send)
        if transacted:
            broker.handle(producer, c.Commit(corr=1000 + n, session_id=1))
    return got


SCENARIOS = {
    "round robin": ([(None, 100), (None, 100), (None, 100)], [{} for _ in range(7)], {}),
    "selectors": (
        [("n > 2", 100), (None, 100), ("n = 1 OR n = 4", 100)],
        [{} for _ in range(8)],
        {},
    ),
    "out of credit": ([(None, 2), (None, 100)], [{} for _ in range(6)], {}),
    "none matches": ([("n > 100", 100)], [{} for _ in range(3)], {}),
    "exclusive": ([(None, 100), (None, 100)], [{} for _ in range(4)], {"exclusive": True}),
    "priorities": (
        [(None, 100), (None, 100)],
        [{"priority": p} for p in (1, 9, 4, 0, 7)],
        {},
    ),
    "groups": (
        [(None, 100), (None, 100)],
        [{"group": g} for g in ("a", "b", "a", "a", "b")] + [{}],
        {"groups": True},
    ),
    "expired": (
        [(None, 100), (None, 100)],
        [{"expiration": 1}, {}, {"expiration": 1}, {}],
        {},
    ),
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_a_sent_message_reaches_the_consumer_the_dispatch_pass_would_pick(name: str) -> None:
    consumers, sends, settings = SCENARIOS[name]
    direct = _deliveries(False, consumers, [dict(s) for s in sends], **settings)
    dispatched = _deliveries(True, consumers, [dict(s) for s in sends], **settings)
    assert direct == dispatched
    if name == "none matches":
        assert direct == []
    elif name == "expired":
        assert [text for _, text in direct] == ["m1", "m3"]
    else:
        assert direct, "the scenario delivers something"


def test_a_send_after_its_queue_was_deleted_goes_to_the_new_queue() -> None:
    h = EngineHarness()
    broker = h.broker
    conn = broker.connect(lambda cmd: None)
    broker.handle(conn, c.Connect(corr=1))
    broker.handle(conn, c.CreateSession(corr=2, session_id=1))
    broker.handle(conn, c.Send(corr=3, session_id=1, destination=Q, message=_msg(0)))
    old = broker.queues[broker.resolve(Q)]
    assert broker.delete_queue(broker.resolve(Q)) == 1
    broker.handle(conn, c.Send(corr=4, session_id=1, destination=Q, message=_msg(1)))
    new = broker.queues[broker.resolve(Q)]
    assert new is not old and old.deleted and not new.deleted
    assert [broker.view(e).get_int_property("n") for e in new.iter_ready()] == [1]
    assert old.depth == 0


def test_a_send_to_a_deleted_temporary_queue_is_refused_after_one_that_was_taken() -> None:
    h = EngineHarness()
    out: list[c.Command] = []
    broker = h.broker
    conn = broker.connect(out.append)
    broker.handle(conn, c.Connect(corr=1))
    broker.handle(conn, c.CreateSession(corr=2, session_id=1))
    broker.handle(conn, c.CreateTemporary(corr=3))
    created = out[-1]
    assert isinstance(created, c.Ok) and created.value
    temp = created.value
    send = c.Send(corr=4, session_id=1, destination=temp, message=_msg(0), persistent=False)
    broker.handle(conn, send)
    assert isinstance(out[-1], c.Ok)
    broker.handle(conn, c.DeleteTemporary(corr=5, destination=temp))
    assert isinstance(out[-1], c.Ok)
    broker.handle(conn, c.Send(corr=6, session_id=1, destination=temp, message=_msg(1)))
    refused = out[-1]
    assert isinstance(refused, c.Error)
    assert refused.kind == InvalidDestinationException.__name__


def _drained(extra_consumer: bool) -> tuple[list[str], int]:
    """Twelve messages of mixed priorities, some already expired, wait in Q before its
    consumer (prefetch 3) opens; it then takes them three at a time (acknowledging and
    granting credit, as a client does). With ``extra_consumer``, a second consumer whose
    selector matches nothing listens too, so the general dispatch pass runs instead of the
    one-consumer one. Returns the texts in delivery order and how many expired."""
    h = EngineHarness()
    broker = h.broker
    got: list[c.Deliver] = []
    conn = broker.connect(lambda cmd: got.append(cmd) if isinstance(cmd, c.Deliver) else None)
    broker.handle(conn, c.Connect(corr=1))
    broker.handle(conn, c.CreateSession(corr=2, session_id=1))
    for n in range(12):
        send = c.Send(
            corr=10 + n,
            session_id=1,
            destination=Q,
            message=_msg(n),
            persistent=False,
            priority=(n * 7) % 10,
            expiration=1 if n % 5 == 2 else 0,
        )
        broker.handle(conn, send)
    if extra_consumer:
        broker.handle(
            conn,
            c.CreateConsumer(corr=3, session_id=1, consumer_id=9, destination=Q, selector="n < 0"),
        )
    broker.handle(
        conn, c.CreateConsumer(corr=4, session_id=1, consumer_id=1, destination=Q, prefetch=3)
    )
    for _ in range(10):
        ids = [d.delivery_id for d in got[-3:]]
        broker.handle(conn, c.Ack(corr=0, session_id=1, delivery_ids=ids))
        broker.handle(conn, c.Credit(corr=0, consumer_id=1, messages=3))
    texts = []
    for d in got:
        body = decode_message(d.message)
        assert isinstance(body, TextMessage) and d.consumer_id == 1
        texts.append(body.text or "")
    return texts, broker.expired


def test_a_waiting_queue_drains_to_its_one_consumer_as_the_general_pass_would() -> None:
    one, expired_one = _drained(False)
    general, expired_general = _drained(True)
    assert one == general
    assert expired_one == expired_general == 2  # n = 2 and 7
    order = [(n * 7) % 10 for n in range(12)]
    expected = sorted(
        (n for n in range(12) if n % 5 != 2), key=lambda n: (-order[n], n)
    )  # priority first (JMS 2.0 §3.4.10), then send order
    assert one == [f"m{n}" for n in expected]
