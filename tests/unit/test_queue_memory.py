"""A queue gives back the memory of a backlog once it drained, and counts what a held copy
costs (issue 17 item 7): driven on ``MessageQueue`` directly."""

from __future__ import annotations

import gc
import sys
import tracemalloc

import msgspec

from ternmq.broker._queue import COMPACT_MIN, COPY_OVERHEAD, GONE, MessageQueue, Stored
from ternmq.broker.config import BrokerConfig, DestinationPolicy
from ternmq.broker.engine import Broker
from ternmq.protocol import commands as c
from ternmq.store import MemoryStore


def _queue() -> MessageQueue:
    return MessageQueue("queue://m", True, DestinationPolicy(), "queue://m")


def _tables(q: MessageQueue) -> int:
    """Bytes of the queue's own containers (not the entries)."""
    return (
        sum(sys.getsizeof(od) for od in q.ready_buckets())
        + sys.getsizeof(q.inflight)
        + sys.getsizeof(q.expiring)
        + sys.getsizeof(q.scheduled)
    )


def test_a_drained_backlog_leaves_no_large_tables() -> None:
    """The dicts of a queue that held 16,384 messages are rebuilt as it drains."""
    q = _queue()
    empty = _tables(q)
    n = 4 * COMPACT_MIN
    entries = [q.add(Stored(b"x" * 10, True, 4, 10**12, 0), 0) for _ in range(n)]
    grown = _tables(q)
    assert grown > empty + n * 8
    for e in entries[: n - 10]:
        q.take(e)
        q.remove(e)
    assert q.depth == 10
    # Rebuilt when a sixteenth was left: tables of at most COMPACT_MIN entries remain.
    assert _tables(q) < grown / 16, (empty, grown, _tables(q))
    for e in entries[n - 10 :]:  # the rest is still there, in order
        assert next(iter(q.iter_ready())) is e
        q.take(e)
        q.remove(e)
    assert q.depth == 0 and q.bytes == 0


def test_acknowledged_messages_leave_the_expiry_heap() -> None:
    """A message with a far expiration that is acknowledged does not wait in the expiry heap
    (with its bytes) until that time: the heap is pruned once most of it is gone."""
    q = _queue()
    for i in range(3 * COMPACT_MIN):
        e = q.add(Stored(b"y" * 100, True, 4, 10**12, 0), 0)
        if i % 100:  # a few stay held
            q.take(e)
            q.remove(e)
    assert len(q.expiring) < 2 * COMPACT_MIN
    held = [t[2] for t in q.expiring if t[2].state != GONE]
    assert len(held) == q.depth == 3 * COMPACT_MIN // 100 + 1


def test_a_held_copy_counts_its_overhead_but_bytes_shows_the_encoding() -> None:
    """``held`` (against max_memory_bytes) is bytes + COPY_OVERHEAD; ``bytes`` the encoding;
    a message recovered on disk only holds nothing and is not paged."""
    q = _queue()
    e = q.add(Stored(b"z" * 1000, True, 4, 0, 0), 0)
    assert e.held == 1000 + COPY_OVERHEAD
    assert q.bytes == 1000
    q.take(e)
    q.remove(e)
    assert q.bytes == 0
    recovered = q.add(Stored(None, True, 4, 0, 0, size=1000), 0)  # on disk only
    assert (recovered.held, q.bytes, q.paged) == (0, 0, 0)


def _measured_cost(subscriptions: int, expiration: int = 0, n: int = 5000) -> float:
    """Bytes of Python heap one message held by an engine costs, beyond its encoding, with
    ``subscriptions`` topic subscribers that take no delivery (0: a queue)."""
    broker = Broker(BrokerConfig(), store=MemoryStore())
    out: list[c.Command] = []
    conn = broker.connect(out.append)
    broker.handle(conn, c.Connect(corr=1))
    broker.handle(conn, c.CreateSession(corr=2, session_id=1))
    dest = "topic://t" if subscriptions else "queue://q"
    for i in range(subscriptions):
        req = c.CreateConsumer(corr=3, session_id=1, consumer_id=i + 1, destination=dest)
        broker.handle(conn, msgspec.structs.replace(req, prefetch=0))
    bodies = [b"%08d" % i * 8 for i in range(n)]  # distinct bytes, as decoded from a socket
    size = len(bodies[0])
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for body in bodies:
        send = c.Send(session_id=1, destination=dest, message=body, expiration=expiration)
        broker.handle(conn, msgspec.structs.replace(send, persistent=False))
    out.clear()
    gc.collect()
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert broker.total_bytes == n * max(subscriptions, 1) * (size + COPY_OVERHEAD)
    return grown / n  # the bodies were allocated before: their bytes are not in ``grown``


def test_copy_overhead_covers_what_a_held_message_costs() -> None:
    """COPY_OVERHEAD (what max_memory_bytes counts per copy besides the bytes) is at least
    what tracemalloc sees a held message cost: one copy in a queue, three in a topic's
    subscriptions, one copy with an expiration (the bytes object's own header, ~33 B, is
    counted in the overhead too)."""
    queue = _measured_cost(0)
    expiring = _measured_cost(0, expiration=2**50)  # also in the expiry heap
    topic = _measured_cost(3)
    assert queue + 33 <= COPY_OVERHEAD, queue
    assert expiring + 33 <= COPY_OVERHEAD, expiring
    assert topic + 33 <= 3 * COPY_OVERHEAD, topic
