"""``broker/admin.py`` on the engine directly (``EngineHarness``: a memory store, a fake
clock): browse order and paging, finding and deleting, moves all or none, the refusals."""

from __future__ import annotations

import pytest

from ternmq.broker import admin
from ternmq.broker.config import DestinationPolicy
from ternmq.errors import (
    InvalidDestinationException,
    InvalidSelectorException,
    TransactionRolledBackException,
)
from ternmq.message import TextMessage
from ternmq.message.codec import encode_message
from ternmq.protocol import commands as c
from ternmq.testing import EngineHarness

Q = admin.parse("queue://a")


def _fill(h: EngineHarness, dest: str, items: list[tuple[str, int]], **props: object) -> None:
    p = h.connect()
    p.request(c.CreateSession(session_id=1))
    for text, priority in items:
        m = TextMessage(text)
        for k, v in props.items():
            m.set_object_property(k, v)  # type: ignore[arg-type]
        p.request(
            c.Send(session_id=1, destination=dest, message=encode_message(m), priority=priority)
        )


def _done(h: EngineHarness):  # type: ignore[no-untyped-def]
    seen: list[c.Command] = []
    return seen, seen.append


def test_browse_is_in_delivery_order_with_in_flight_merged() -> None:
    h = EngineHarness()
    _fill(h, "queue://a", [("low1", 1), ("high", 8), ("low2", 1), ("mid", 4)])
    consumer = h.connect()
    consumer.request(c.CreateSession(session_id=1))
    consumer.request(
        c.CreateConsumer(session_id=1, consumer_id=1, destination="queue://a", prefetch=1)
    )
    [deliver] = consumer.take_events()  # "high" is in flight now
    assert isinstance(deliver, c.Deliver)
    page, more = admin.browse(h.broker, Q, None, 0, 10)
    texts = [m.text for _, m in page]  # type: ignore[attr-defined]
    assert texts == ["high", "mid", "low1", "low2"] and more is False
    page, more = admin.browse(h.broker, Q, None, 1, 2)
    assert [m.text for _, m in page] == ["mid", "low1"] and more is True  # type: ignore[attr-defined]
    e, msg = page[0]
    assert admin.find_message(h.broker, Q, admin.message_id(e, msg))[0] is e
    assert admin.find_message(h.broker, Q, f"seq:{e.seq}")[0] is e
    with pytest.raises(admin.NotFound):
        admin.find_message(h.broker, Q, "seq:999")
    in_flight = next(e for e, m in admin.browse(h.broker, Q, None, 0, 10)[0] if e.consumer)
    seen, done = _done(h)
    with pytest.raises(admin.Conflict):
        admin.change(
            h.broker, lambda: admin.delete_message(h.broker, Q, f"seq:{in_flight.seq}"), done
        )
    assert seen == []
    with pytest.raises(InvalidSelectorException):
        admin.browse(h.broker, Q, "a ==", 0, 10)
    with pytest.raises(Exception, match="limit"):
        admin.browse(h.broker, Q, None, 0, 0)


def test_expired_messages_are_not_browsed() -> None:
    h = EngineHarness()
    p = h.connect()
    p.request(c.CreateSession(session_id=1))
    data = encode_message(TextMessage("soon gone"))
    p.request(
        c.Send(
            session_id=1, destination="queue://a", message=data, expiration=h.clock.now_ms() + 1000
        )
    )
    assert len(admin.browse(h.broker, Q, None, 0, 10)[0]) == 1
    h.clock.advance(2)
    assert admin.browse(h.broker, Q, None, 0, 10)[0] == []


def test_move_is_all_or_none() -> None:
    small = DestinationPolicy(max_bytes=300, full_policy="fail")
    h = EngineHarness(policies={"queue://small": small})
    _fill(h, "queue://a", [("x" * 100, 4)] * 5, kind="k")
    target = admin.parse("queue://small")
    seen, done = _done(h)
    admin.change(h.broker, lambda: admin.create_destination(h.broker, target), done)
    with pytest.raises(TransactionRolledBackException):
        admin.change(h.broker, lambda: admin.move(h.broker, None, Q, target, None), done)
    assert h.broker.stat(Q).depth == 5 and h.broker.stat(target).depth == 0
    n = admin.change(h.broker, lambda: admin.move(h.broker, None, Q, target, "kind = 'none'"), done)
    assert n == 0 and isinstance(seen[-1], c.Ok)
    with pytest.raises(InvalidDestinationException):
        admin.move(h.broker, None, Q, Q, None)
    with pytest.raises(admin.NotFound):
        admin.move(h.broker, None, Q, admin.parse("queue://absent"), None)


def test_destinations_create_delete_and_refusals() -> None:
    h = EngineHarness()
    seen, done = _done(h)
    t = admin.parse("topic://news")
    admin.change(h.broker, lambda: admin.create_destination(h.broker, t), done)
    with pytest.raises(admin.Conflict):
        admin.create_destination(h.broker, t)
    with pytest.raises(InvalidDestinationException):
        admin.create_destination(h.broker, admin.parse("temp-queue://1.1"))
    with pytest.raises(InvalidDestinationException):
        admin.parse("orders")
    consumer = h.connect()
    consumer.request(c.CreateSession(session_id=1))
    consumer.request(c.CreateConsumer(session_id=1, consumer_id=1, destination="topic://news"))
    assert [conn.id for conn in admin.holders(h.broker, t)] == [consumer.conn.id]
    with pytest.raises(admin.Conflict):
        admin.delete_destination(h.broker, t)
    with pytest.raises(InvalidDestinationException):
        admin.purge(h.broker, t)
    consumer.request(c.CloseConsumer(consumer_id=1))
    admin.change(h.broker, lambda: admin.delete_destination(h.broker, t), done)
    assert t not in h.broker.topics
    assert all(isinstance(x, c.Ok) for x in seen) and len(seen) == 2
