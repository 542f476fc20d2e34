"""Recovery: rebuilding what the store kept, when the engine starts (REL-09).

Theory of operation
-------------------
The store gives back everything written and not removed (:class:`~ternmq.store.Recovered`):
durable subscriptions, the PERSISTENT messages of queues and durable subscriptions with their
positions and delivery counts, staged transactions of sequence access, reserved positions,
sinks' last batches and duplicate ids. The engine restores the last three itself (they are
its private state) and hands the rest to :func:`recover`, which sees the engine as a
:class:`~ternmq.broker._ports.RecoveringEngine`.

A message comes back at its position with its delivery count (REL-12: one delivered before a
crash is marked redelivered), scheduled if its delivery time is still ahead, and under the
reaper's eye if it can expire. A disk store recovers an index only (PSF-07): the bytes stay
on disk until a message is delivered. Such a message holds no bytes in memory but is not
counted as *paged*: that figure counts what memory pressure pushed out (``Stored.paged``). Recovered
staged transactions count as touched at the start, so an abandoned one is aborted
``staged_timeout`` after it.
"""

from __future__ import annotations

from ternmq.broker._ports import RecoveringEngine
from ternmq.broker._queue import Stored
from ternmq.broker._records import StagedTx, Subscription
from ternmq.destination import destination
from ternmq.protocol import commands as c
from ternmq.selector import compile_selector
from ternmq.store import Recovered

__all__ = ["recover"]


def recover(engine: RecoveringEngine, state: Recovered) -> None:
    """Rebuild staged transactions, durable subscriptions and persistent messages from
    ``state`` into ``engine``, and set ``engine.recovered`` to what was found (the host logs
    it).

    Raises:
        InvalidSelectorException: a stored subscription's selector no longer parses.
        JMSException: a stored destination name no longer parses.
    """
    now = engine.clock.now_ms()
    for r in state.staged:
        tx = engine.staged.get(r.txid)
        if tx is None:
            tx = engine.staged[r.txid] = StagedTx(r.sink_id, r.batch_id, touched_ms=now)
            engine.arm_reaper(now)
        tx.sends.append(
            c.StagedSend(
                destination=r.destination,
                message=r.data,
                persistent=r.persistent,
                priority=r.priority,
                expiration=r.expiration,
                delivery_time=r.delivery_time,
                group_id=r.group_id,
                group_seq=r.group_seq,
            )
        )
        tx.bytes += len(r.data)
        engine.staged_bytes += len(r.data)
    for rec in state.subscriptions:
        topic = destination(rec.topic)
        selector = compile_selector(rec.selector)
        q = engine.durable_queue(rec.dest, rec.topic)
        sub = Subscription(
            (rec.client_id, rec.name),
            topic,
            rec.selector,
            selector,
            rec.no_local,
            True,
            rec.shared,
            rec.client_id,
            None,
            q,
        )
        engine.durable[(rec.client_id, rec.name)] = sub
        engine.topics.setdefault(topic, []).append(sub)
    engine.recovered = {
        "subscriptions": len(state.subscriptions),
        "destinations": len(state.messages),
        "messages": sum(len(m) for m in state.messages.values()),
        "scheduled": sum(1 for m in state.messages.values() for r in m if r.delivery_time > now),
        "redelivered": sum(1 for m in state.messages.values() for r in m if r.delivery_count > 0),
        "staged transactions": len(engine.staged),
    }
    by_key = {sub.queue.key: sub.queue for sub in engine.durable.values()}
    for key, msgs in state.messages.items():
        q_or_none = by_key.get(key)
        if q_or_none is None:
            if not key.startswith("queue://"):
                continue
            dest = destination(key)
            q_or_none = engine.queues.get(dest) or engine.new_queue(dest)
        for m in msgs:
            stored = Stored(
                m.data,
                True,
                m.priority,
                m.expiration,
                m.delivery_time,
                m.group_id,
                size=m.size,
            )
            e = q_or_none.add(stored, now, count=m.delivery_count, seq=m.seq)
            engine.total_bytes += e.held
            if m.delivery_time > now:
                engine.add_timer(m.delivery_time, q_or_none)
            if m.expiration:
                engine.arm_reaper(now)
