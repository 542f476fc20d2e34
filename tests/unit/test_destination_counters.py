"""Per-destination counters (issue 16): kept as the engine's events happen, read by the
admin ``Stat`` request (``ternmq stat``) without looking at a single message.

Each test drives the engine directly (requests in, emitted commands out) through a scripted
sequence and checks every counter, and checks that the counters agree with a recount of the
messages held (what ``Stat`` scanned before the counters existed).
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence
from types import FrameType
from typing import Any

from ternmq.broker._queue import MessageQueue
from ternmq.broker.config import BrokerConfig, DestinationPolicy
from ternmq.broker.engine import Broker, BrokerConnection
from ternmq.destination import destination
from ternmq.message import TextMessage
from ternmq.message.codec import encode_message
from ternmq.protocol import commands as c
from ternmq.store import MemoryStore, Op, Recovered
from ternmq.testing import FakeClock


def _body(text: str = "x") -> bytes:
    m = TextMessage()
    m.text = text
    return encode_message(m)


class _Client:
    """One connection to an engine driven directly: requests in, emitted commands out."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.out: list[c.Command] = []
        self.conn: BrokerConnection = broker.connect(self.out.append)
        self.corr = 0
        assert isinstance(self.request(c.Connect()), c.Connected)

    def request(self, req: Any) -> c.Command:
        """Handle ``req`` with a fresh ``corr``; its reply (it must have one)."""
        self.corr += 1
        req = _with_corr(req, self.corr)
        self.broker.handle(self.conn, req)
        if isinstance(self.broker.store, _LaterStore):
            self.broker.store.complete()  # the batch is durable: the reply leaves
        reply = next(cmd for cmd in self.out if getattr(cmd, "corr", None) == self.corr)
        assert not isinstance(reply, c.Error), reply
        return reply

    def deliveries(self) -> list[c.Deliver]:
        """The deliveries emitted so far, taken out of ``out``."""
        got = [cmd for cmd in self.out if isinstance(cmd, c.Deliver)]
        self.out = [cmd for cmd in self.out if not isinstance(cmd, c.Deliver)]
        self.conn.emit = self.out.append
        return got

    def send(self, dest: str, n: int = 1, **kw: Any) -> None:
        for i in range(n):
            self.request(c.Send(session_id=1, destination=dest, message=_body(f"m{i}"), **kw))

    def stat(self, dest: str) -> c.DestinationStat:
        reply = self.request(c.Stat(destination=dest))
        assert isinstance(reply, c.StatResult)
        (st,) = reply.destinations
        return st


def _with_corr(req: Any, corr: int) -> Any:
    import msgspec

    return msgspec.structs.replace(req, corr=corr)


def _engine(clock: FakeClock | None = None, store: Any = None, **policy: Any) -> Broker:
    config = BrokerConfig(default_policy=DestinationPolicy(**policy), expiry_scan_interval=1.0)
    return Broker(config, store=store if store is not None else MemoryStore(), clock=clock)


def _client(broker: Broker, transacted: bool = False) -> _Client:
    client = _Client(broker)
    client.request(c.CreateSession(session_id=1, transacted=transacted))
    return client


def _counts(st: c.DestinationStat) -> dict[str, int]:
    return {
        f: getattr(st, f)
        for f in st.__struct_fields__
        if f not in ("name", "kind", "subscriptions", "memory_bytes")
    }


def _recount(q: MessageQueue) -> tuple[int, int, int, int, int]:
    """(held, in flight, scheduled, paged, bytes) of ``q`` by looking at every message: what
    ``Stat`` computed before the counters."""
    ready = list(q.iter_ready())
    scheduled = q.scheduled_entries()
    inflight = list(q.inflight.values())
    held = [*ready, *scheduled, *inflight]
    paged = sum(1 for e in held if e.stored.paged)
    in_memory = sum(e.stored.size for e in held if e.held)
    return len(held), len(inflight), len(scheduled), paged, in_memory


def _agrees(broker: Broker, st: c.DestinationStat) -> None:
    q = broker.queues[destination(st.name)]
    assert _recount(q) == (st.depth, st.in_flight, st.scheduled, st.paged, st.memory_bytes)


def test_send_receive_and_acknowledge() -> None:
    broker = _engine()
    client = _client(broker)
    client.send("queue://q", 3)
    st = client.stat("queue://q")
    assert st.memory_bytes > 0
    assert _counts(st) == dict(
        depth=3, in_flight=0, scheduled=0, consumers=0, enqueued=3, dequeued=0, paged=0,
        duplicates=0, expired=0, dead_lettered=0, redelivered=0,
    )  # fmt: skip
    client.request(
        c.CreateConsumer(session_id=1, consumer_id=1, destination="queue://q", prefetch=2)
    )
    (first, _) = client.deliveries()
    st = client.stat("queue://q")
    assert (st.depth, st.in_flight, st.consumers) == (3, 2, 1)
    _agrees(broker, st)
    client.request(c.Ack(session_id=1, delivery_ids=[first.delivery_id]))
    st = client.stat("queue://q")
    assert (st.depth, st.in_flight, st.enqueued, st.dequeued) == (2, 1, 3, 1)  # no new credit
    _agrees(broker, st)
    client.request(c.CloseConsumer(consumer_id=1))
    st = client.stat("queue://q")
    assert (st.depth, st.in_flight, st.consumers, st.redelivered) == (2, 0, 0, 0)
    _agrees(broker, st)


def test_expired_with_a_fake_clock() -> None:
    clock = FakeClock()
    broker = _engine(clock)
    client = _client(broker)
    now = clock.now_ms()
    client.send("queue://e", 2, expiration=now + 500)
    client.send("queue://e", 1)
    clock.advance(2.0)
    broker.tick()
    st = client.stat("queue://e")
    assert (st.depth, st.enqueued, st.dequeued, st.expired) == (1, 3, 2, 2)
    assert broker.expired == 2  # the broker-wide count stays
    _agrees(broker, st)
    # Expired at dispatch: the consumer skips it, the counter sees it.
    client.send("queue://e", 1, expiration=clock.now_ms() + 500)
    clock.advance(1.0)
    client.request(c.CreateConsumer(session_id=1, consumer_id=1, destination="queue://e"))
    assert len(client.deliveries()) == 1
    st = client.stat("queue://e")
    assert (st.depth, st.in_flight, st.expired, st.dequeued) == (1, 1, 3, 3)
    _agrees(broker, st)


def test_redelivered_then_dead_lettered() -> None:
    broker = _engine(max_delivery_attempts=2)
    client = _client(broker, transacted=True)
    producer = _client(broker)
    producer.send("queue://d", 1)
    client.request(c.CreateConsumer(session_id=1, consumer_id=1, destination="queue://d"))
    (d1,) = client.deliveries()
    client.request(c.Rollback(session_id=1, delivered=[d1.delivery_id]))
    st = client.stat("queue://d")
    assert (st.depth, st.redelivered, st.dead_lettered, st.dequeued) == (1, 1, 0, 0)
    (d2,) = client.deliveries()
    assert d2.delivery_count == 2
    client.request(c.Rollback(session_id=1, delivered=[d2.delivery_id]))
    st = client.stat("queue://d")
    assert (st.depth, st.redelivered, st.dead_lettered, st.dequeued) == (0, 1, 1, 1)
    assert broker.dead_lettered == 1
    dlq = client.stat("queue://DLQ")
    assert (dlq.depth, dlq.enqueued) == (1, 1)
    _agrees(broker, st)
    _agrees(broker, dlq)


def test_a_delivery_the_application_never_saw_is_not_redelivered() -> None:
    broker = _engine()
    client = _client(broker)
    client.send("queue://r", 2)
    client.request(c.CreateConsumer(session_id=1, consumer_id=1, destination="queue://r"))
    first, _ = client.deliveries()
    client.request(c.Release(session_id=1, delivered=[first.delivery_id]))
    st = client.stat("queue://r")
    assert (st.depth, st.in_flight, st.redelivered) == (2, 2, 1)  # both go out again


def test_duplicates_dropped() -> None:
    broker = _engine()
    client = _client(broker)
    for _ in range(3):
        client.send("queue://once", 1, duplicate_id="same")
    st = client.stat("queue://once")
    assert (st.depth, st.enqueued, st.duplicates) == (1, 1, 2)


def test_scheduled_messages() -> None:
    clock = FakeClock()
    broker = _engine(clock)
    client = _client(broker)
    client.send("queue://s", 2, delivery_time=clock.now_ms() + 5_000)
    client.send("queue://s", 1)
    st = client.stat("queue://s")
    assert (st.depth, st.scheduled) == (3, 2)
    _agrees(broker, st)
    assert client.request(c.Purge(destination="queue://s")) == c.Ok(corr=client.corr, value="3")
    client.send("queue://s", 1, delivery_time=clock.now_ms() + 5_000)
    clock.advance(6.0)
    broker.tick()
    st = client.stat("queue://s")
    assert (st.depth, st.scheduled, st.dequeued) == (1, 0, 3)
    _agrees(broker, st)


def _topic_with_two_subscribers() -> _Client:
    """A client of a fresh engine with consumers 1 and 2 on ``topic://t`` (session 1)."""
    client = _client(_engine())
    for cid in (1, 2):
        client.request(
            c.CreateConsumer(session_id=1, consumer_id=cid, destination="topic://t", prefetch=0)
        )
    return client


def test_a_topic_sums_its_subscriptions() -> None:
    client = _topic_with_two_subscribers()
    client.send("topic://t", 2)
    reply = client.request(c.Stat(destination="topic://t"))
    assert isinstance(reply, c.StatResult)
    (st,) = reply.destinations
    assert (st.depth, st.enqueued, st.consumers) == (4, 4, 2)
    assert [(s.depth, s.consumers) for s in st.subscriptions] == [(2, 1), (2, 1)]


def test_a_topics_counters_keep_what_its_deleted_subscriptions_counted() -> None:
    """Prometheus counters (``_total``) must not go down: a subscription that goes (its
    consumer closed) leaves its counts with the topic; what it still held counts as dequeued,
    so enqueued - dequeued stays the depth."""
    client = _topic_with_two_subscribers()
    client.send("topic://t", 3)
    client.request(c.CloseConsumer(consumer_id=1))
    st = client.stat("topic://t")
    assert (st.depth, st.enqueued, st.dequeued, st.consumers) == (3, 6, 3, 1)
    client.request(c.CloseConsumer(consumer_id=2))
    client.send("topic://t", 2)  # no subscriber: nobody takes these
    st = client.stat("topic://t")
    assert (st.depth, st.enqueued, st.dequeued, st.consumers) == (0, 6, 6, 0)
    assert st.subscriptions == []


class _LaterStore(MemoryStore):
    """A memory store that answers like a disk store: batches complete when the test says,
    and a restart recovers an index only (no message bytes)."""

    synchronous = False  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.waiting: list[int] = []
        self.done: Any = None

    def submit(self, ops: Sequence[Op], token: int) -> None:
        self.write(ops)
        self.waiting.append(token)

    def set_completion(self, callback: Any) -> None:
        self.done = callback

    def complete(self) -> None:
        tokens, self.waiting = self.waiting, []
        if tokens:
            self.done(tokens, None)

    def load(self, with_data: bool = True) -> Recovered:
        state = super().load()
        if not with_data:
            for msgs in state.messages.values():
                msgs[:] = [dataclasses.replace(m, data=None) for m in msgs]
        return state


def test_paged_messages_and_after_a_restart() -> None:
    store = _LaterStore()
    size = len(_body("m0"))
    broker = _engine(store=store, max_bytes=size * 3)
    client = _client(broker)
    client.send("queue://p", 9)
    st = client.stat("queue://p")
    assert (st.depth, st.paged, st.memory_bytes) == (9, 6, size * 3)
    _agrees(broker, st)
    client.request(c.CreateConsumer(session_id=1, consumer_id=1, destination="queue://p"))
    deliveries = client.deliveries()
    assert len(deliveries) == 9
    client.request(c.Ack(session_id=1, delivery_ids=[d.delivery_id for d in deliveries[:5]]))
    st = client.stat("queue://p")
    assert (st.depth, st.paged, st.dequeued) == (4, 4, 5)
    _agrees(broker, st)
    # After a restart every recovered message is on disk only (no bytes in memory), but no
    # memory pressure pushed it there: none counts as paged (an operator alerting on paging
    # is not paged by a restart).
    again = _engine(store=store, max_bytes=size * 3)
    client = _client(again)
    st = client.stat("queue://p")
    assert (st.depth, st.paged, st.memory_bytes, st.enqueued) == (4, 0, 0, 4)
    _agrees(again, st)
    client.request(c.CreateConsumer(session_id=1, consumer_id=1, destination="queue://p"))
    deliveries = client.deliveries()
    assert len(deliveries) == 4
    client.request(c.Ack(session_id=1, delivery_ids=[d.delivery_id for d in deliveries]))
    st = client.stat("queue://p")
    assert (st.depth, st.paged, st.dequeued) == (0, 0, 4)
    _agrees(again, st)


def _calls_of_stat(held: int) -> int:
    """Python and C calls made while the engine answers a ``Stat`` of a queue of ``held``
    messages (half of them in flight) and a topic of two subscriptions holding as many."""
    client = _topic_with_two_subscribers()
    broker = client.broker
    client.request(
        c.CreateConsumer(session_id=1, consumer_id=3, destination="queue://q", prefetch=held // 2)
    )
    client.send("queue://q", held)
    client.send("topic://t", held)
    calls = 0

    def count(frame: FrameType, event: str, arg: object) -> None:
        nonlocal calls
        if event in ("call", "c_call"):
            calls += 1

    req = c.Stat(corr=10_000)
    sys.setprofile(count)
    try:
        broker.handle(client.conn, req)
    finally:
        sys.setprofile(None)
    reply = client.out[-1]
    assert isinstance(reply, c.StatResult)
    assert sum(d.depth for d in reply.destinations) == 3 * held
    return calls


def test_reading_stats_touches_no_message() -> None:
    """A stat costs the same calls for a destination of 4 messages as for one of 400."""
    assert _calls_of_stat(4) == _calls_of_stat(400)


def test_the_hosts_read_the_same_figures() -> None:
    """``Broker.stats()`` (for the HTTP API and metrics) shows what ``Stat`` shows."""
    broker = _engine()
    client = _client(broker)
    client.send("queue://b", 2)
    client.send("queue://a", 1)
    client.request(c.CreateConsumer(session_id=1, consumer_id=1, destination="topic://t"))
    reply = client.request(c.Stat())
    assert isinstance(reply, c.StatResult)
    assert broker.stats() == reply.destinations
    assert [d.name for d in broker.stats()] == ["queue://a", "queue://b", "topic://t"]
