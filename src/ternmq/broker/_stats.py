"""What ``ternmq stat`` (the admin ``Stat`` request) shows of a destination: pure functions
of its counters.

Theory of operation
-------------------
Every figure is a counter the queue keeps as events happen
(:class:`~ternmq.broker._queue.Counters`) or the size of a container it holds anyway (in
flight, consumers), so a stat costs the same for an empty queue as for one holding millions
of messages: nothing here looks at a message. A queue's figures are its own; a topic's are
the sums over its subscriptions, each also listed on its own, plus what its deleted
subscriptions had counted (:func:`retire`): a counter never goes down while the broker runs, as
Prometheus expects of a ``_total``. Duplicates dropped are counted
per destination by the duplicate-id cache (``_dedup.py``), which the caller reads.

These functions take records and return protocol values; the engine decides which
destinations a user may see. The HTTP API and the Prometheus endpoint read the same figures.
"""

from __future__ import annotations

from collections.abc import Iterable

from ternmq.broker._queue import MessageQueue
from ternmq.broker._records import Subscription
from ternmq.destination import Destination
from ternmq.protocol import commands as c

__all__ = ["NO_COUNTS", "Counts", "queue_stat", "retire", "topic_stat"]

#: enqueued, dequeued, expired, dead-lettered, redelivered: the cumulative counters of a queue.
Counts = tuple[int, int, int, int, int]
NO_COUNTS: Counts = (0, 0, 0, 0, 0)


def retire(counts: Counts, q: MessageQueue) -> Counts:
    """``counts`` plus the cumulative counters of ``q``, a subscription's queue about to be
    deleted; the messages it still holds count as dequeued (they leave with it)."""
    held = q.ready_count + q.scheduled_count + len(q.inflight)
    return (
        counts[0] + q.enqueued,
        counts[1] + q.dequeued + held,
        counts[2] + q.expired,
        counts[3] + q.dead_lettered,
        counts[4] + q.redelivered,
    )


def queue_stat(dest: Destination, q: MessageQueue, duplicates: int) -> c.DestinationStat:
    """The figures of queue ``dest`` held in ``q``, with ``duplicates`` dropped sends."""
    in_flight = len(q.inflight)
    return c.DestinationStat(
        name=str(dest),
        kind=dest.kind,
        depth=q.ready_count + q.scheduled_count + in_flight,
        in_flight=in_flight,
        scheduled=q.scheduled_count,
        consumers=len(q.consumers),
        enqueued=q.enqueued,
        dequeued=q.dequeued,
        memory_bytes=q.bytes,
        paged=q.paged,
        duplicates=duplicates,
        expired=q.expired,
        dead_lettered=q.dead_lettered,
        redelivered=q.redelivered,
    )


def topic_stat(
    dest: Destination,
    subs: Iterable[Subscription],
    duplicates: int,
    retired: Counts = NO_COUNTS,
) -> c.DestinationStat:
    """The figures of topic ``dest``: the sums over its subscriptions ``subs``, each listed
    (sorted by name), with ``duplicates`` dropped publishes, and the cumulative counters of
    its deleted subscriptions ``retired``."""
    depth = in_flight = scheduled = consumers = held = paged = 0
    enqueued, dequeued, expired, dead_lettered, redelivered = retired
    listed: list[c.SubscriptionStat] = []
    for sub in subs:
        q = sub.queue
        q_in_flight = len(q.inflight)
        q_depth = q.ready_count + q.scheduled_count + q_in_flight
        depth += q_depth
        in_flight += q_in_flight
        scheduled += q.scheduled_count
        consumers += len(q.consumers)
        enqueued += q.enqueued
        dequeued += q.dequeued
        held += q.bytes
        paged += q.paged
        expired += q.expired
        dead_lettered += q.dead_lettered
        redelivered += q.redelivered
        listed.append(
            c.SubscriptionStat(
                name=sub.name,
                kind=sub.kind,
                depth=q_depth,
                in_flight=q_in_flight,
                consumers=len(q.consumers),
            )
        )
    listed.sort(key=lambda s: s.name)
    return c.DestinationStat(
        name=str(dest),
        kind=dest.kind,
        depth=depth,
        in_flight=in_flight,
        scheduled=scheduled,
        consumers=consumers,
        enqueued=enqueued,
        dequeued=dequeued,
        memory_bytes=held,
        paged=paged,
        subscriptions=listed,
        duplicates=duplicates,
        expired=expired,
        dead_lettered=dead_lettered,
        redelivered=redelivered,
    )
