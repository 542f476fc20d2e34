"""The admin requests behind ``stat`` and ``purge``: ``Stat``/``StatResult`` and ``Purge``
on the engine, on the wire and through the client helpers."""

from __future__ import annotations

import pytest

from ternmq import (
    ConnectionFactory,
    EmbeddedBroker,
    InvalidDestinationException,
    JMSSecurityException,
    Queue,
    Topic,
)
from ternmq.broker.engine import Broker
from ternmq.client import _admin
from ternmq.protocol import commands as c
from ternmq.protocol import frames


def test_admin_commands_round_trip_on_the_wire() -> None:
    stat = c.StatResult(
        corr=7,
        destinations=[
            c.DestinationStat(
                name="topic://t",
                kind="topic",
                depth=3,
                in_flight=1,
                scheduled=1,
                consumers=2,
                enqueued=9,
                dequeued=6,
                memory_bytes=1234,
                paged=1,
                subscriptions=[c.SubscriptionStat(name="cid:s", kind="durable", depth=3)],
            )
        ],
    )
    cmds: list[frames.WireCommand] = [
        c.Stat(corr=1),
        c.Stat(corr=2, destination="queue://q"),
        c.Purge(corr=3, destination="queue://q"),
        stat,
    ]
    decoder = frames.FrameDecoder()
    assert decoder.feed(b"".join(frames.encode(x) for x in cmds)) == cmds


def test_stat_and_purge_through_the_client(broker: EmbeddedBroker) -> None:
    with ConnectionFactory(broker.url).create_connection() as conn:
        s = conn.create_session()
        s.create_producer(Queue("q")).send(s.create_text_message("x"))
        sub = s.create_consumer(Topic("t"))
        assert [d.name for d in _admin.stat(conn)] == ["queue://q", "topic://t"]
        (q,) = _admin.stat(conn, Queue("q"))
        assert (q.kind, q.depth, q.enqueued) == ("queue", 1, 1)
        (t,) = _admin.stat(conn, "topic://t")
        assert t.kind == "topic" and t.consumers == 1
        assert [x.kind for x in t.subscriptions] == ["none"]
        with pytest.raises(InvalidDestinationException, match="is a topic"):
            _admin.purge(conn, Topic("t"))
        with pytest.raises(InvalidDestinationException, match="does not exist"):
            _admin.purge(conn, "queue://other")
        with pytest.raises(InvalidDestinationException, match="cannot parse"):
            _admin.stat(conn, "bogus")
        assert _admin.purge(conn, Queue("q")) == 1
        sub.close()


def test_temporary_destinations_are_listed(broker: EmbeddedBroker) -> None:
    with ConnectionFactory(broker.url).create_connection() as conn:
        s = conn.create_session()
        tq = s.create_temporary_queue()
        tt = s.create_temporary_topic()
        kinds = {d.name: d.kind for d in _admin.stat(conn)}
        assert kinds[str(tq)] == "temp-queue" and kinds[str(tt)] == "temp-topic"
        s.create_producer(tq).send(s.create_text_message("x"))
        assert _admin.purge(conn, tq) == 1


def test_shared_subscriptions_are_named(broker: EmbeddedBroker) -> None:
    with ConnectionFactory(broker.url).create_connection() as conn:
        s = conn.create_session()
        a = s.create_shared_consumer(Topic("t"), "work")
        b = s.create_shared_durable_consumer(Topic("t"), "keep")
        (t,) = _admin.stat(conn, "topic://t")
        assert {(x.name, x.kind, x.consumers) for x in t.subscriptions} == {
            ("work", "shared", 1),
            ("keep", "shared_durable", 1),
        }
        a.close()
        b.close()
        s.unsubscribe("keep")


def _engine_call(broker: Broker, user: str | None, req: c.Request) -> c.Command:
    out: list[c.Command] = []
    conn = broker.connect(out.append)
    broker.handle(conn, c.Connect(corr=1, user=user))
    broker.handle(conn, req)
    return out[-1]


def test_admin_requests_need_the_admin_permission() -> None:
    """With an authorizer, Stat and Purge need ``admin`` on the destination; a listing shows
    only what the user may administer."""
    allowed = {("root", "queue://a"), ("root", "queue://b"), ("ops", "queue://a")}

    def authorizer(user: str | None, action: str, dest: str) -> bool:
        if action != "admin":
            return True
        return (user or "", dest) in allowed

    broker = Broker(authorizer=authorizer)
    for name in ("a", "b"):
        out: list[c.Command] = []
        conn = broker.connect(out.append)
        broker.handle(conn, c.Connect(corr=1, user="root"))
        broker.handle(conn, c.CreateSession(corr=2, session_id=1))
        broker.handle(
            conn, c.Send(corr=3, session_id=1, destination=f"queue://{name}", message=b"")
        )
    listing = _engine_call(broker, "ops", c.Stat(corr=5))
    assert isinstance(listing, c.StatResult)
    assert [d.name for d in listing.destinations] == ["queue://a"]
    denied = _engine_call(broker, "ops", c.Stat(corr=5, destination="queue://b"))
    assert isinstance(denied, c.Error) and denied.kind == JMSSecurityException.__name__
    assert "'admin' permission" in denied.message
    denied = _engine_call(broker, "ops", c.Purge(corr=5, destination="queue://b"))
    assert isinstance(denied, c.Error) and denied.kind == JMSSecurityException.__name__
    # Refused before existence is revealed: a missing destination looks the same.
    denied = _engine_call(broker, "ops", c.Purge(corr=5, destination="queue://zzz"))
    assert isinstance(denied, c.Error) and denied.kind == JMSSecurityException.__name__
    ok = _engine_call(broker, "root", c.Purge(corr=5, destination="queue://b"))
    assert ok == c.Ok(corr=5, value="1")
    listing = _engine_call(broker, "root", c.Stat(corr=5))
    assert isinstance(listing, c.StatResult)
    assert [d.name for d in listing.destinations] == ["queue://a", "queue://b"]
