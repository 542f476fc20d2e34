"""Sequence-number access: a queue or durable subscription read as a log, cumulative
acknowledgement, and a staged two-phase publish that is idempotent per (sink, batch).

Theory of operation
-------------------
Every message a queue or subscription takes gets that destination's next sequence number
(``Entry.seq``). Positions are *monotonic, not dense*: numbers are consumed by messages that
were later acknowledged, expired or went to another consumer, and a durable destination
reserves numbers ahead in the store (:class:`~ternmq.store.ReserveSeq`) so that after a
restart it continues above everything it may have handed out, persistent or not. A position
``p`` means "every message with ``seq <= p``".

These requests serve stream processors (the Spark source, ``ternmq.spark``), but any client
may use them:

- ``GetBounds``: ``(earliest, latest]`` covers every message held now. A scheduled message
  (delivery delay, JMS 2.0 §4.12) is held but not yet visible: ``latest`` stays below it until
  it is due, so a reader never moves past a message it could not see. With ``after`` and
  ``max_messages`` the answer is capped for admission control.
- ``ReadRange``: the held, visible messages with ``after < seq <= upto`` in sequence order,
  without consuming them; repeatable (the same answer) until they are acknowledged.
- ``AckUpto``: the cumulative acknowledgement of a reader that owns the queue or subscription:
  removes every ready message with ``seq <= upto`` (matching a selector if given). Messages in
  flight to ordinary consumers stay theirs.
- ``Stage`` / ``CommitStaged`` / ``AbortStaged``: messages staged under a transaction id are
  stored (durable, invisible) at once; ``CommitStaged(sink, batch, txids)`` routes them all in
  one atomic store batch that also records ``batch`` as the sink's last committed batch, so a
  replayed batch (``batch <=`` the recorded one) publishes nothing. Staged transactions of the
  same sink with a batch at or below the committed one that the commit does not name are
  orphans of failed or killed attempts and are dropped with it.

Staged messages are held in broker memory as well as in the store until their batch is
committed or aborted, and count against ``max_memory_bytes`` (``Broker.staged_bytes``): a
``Stage`` that would pass it is refused with ResourceAllocationException, and sends see the
broker as fuller by that much. A commit frees its transactions' share before it publishes
their messages, which then count as held messages. A staged transaction
that goes ``staged_timeout`` seconds without a ``Stage`` (its writer died and its sink never
commits again) is aborted by the reaper (:func:`sweep_staged`), reported through
``Broker.on_warning`` (the server and the embedded broker log it).
"""

from __future__ import annotations

import bisect
import gc
import heapq
import itertools
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Final

from ternmq.broker._ports import SequencedEngine
from ternmq.broker._queue import SCHEDULED, Entry, MessageQueue
from ternmq.broker._records import BrokerConnection, StagedTx
from ternmq.destination import Destination
from ternmq.errors import (
    IllegalStateException,
    InvalidDestinationException,
    JMSException,
    ResourceAllocationException,
)
from ternmq.protocol import commands as c
from ternmq.selector import compile_selector
from ternmq.store import AddStaged, RemoveMessage, RemoveRange, RemoveStaged, SetSinkBatch

__all__ = ["HANDLERS", "SEQ_RESERVE_BLOCK", "StagedTx", "sweep_staged"]

# Sequence numbers a durable destination reserves in the store at a time; a new reservation
# is written when half of the previous one is used, long before it runs out.
SEQ_RESERVE_BLOCK = 1 << 20
# Messages one staged transaction may hold (they are kept in broker memory until committed).
MAX_STAGE_MESSAGES = 2_000_000
# A commit of at least this many messages runs with the cyclic garbage collector paused.
GC_PAUSE_MESSAGES = 10_000
# In an encoded message only if a property has the name: the client's value is removed.
_USER_ID: Final = b"JMSXUserID"


# ---- finding the log ---------------------------------------------------------------------
def _log(
    broker: SequencedEngine,
    conn: BrokerConnection,
    text: str,
    subscription: str | None,
    action: str,
) -> MessageQueue:
    """The queue, or the durable subscription of a topic, that a request names."""
    try:
        dest = broker.resolve(text)
    except JMSException as exc:
        raise InvalidDestinationException(str(exc)) from exc
    if dest.is_temporary:
        raise InvalidDestinationException(
            f"{dest} is temporary: sequence access needs a queue or a durable subscription"
        )
    broker.authorize(conn, action, dest)
    if not dest.is_topic:
        if subscription is not None:
            raise InvalidDestinationException(
                f"{dest} is a queue: a subscription name needs a topic"
            )
        return broker.queue(dest)
    if subscription is None:
        raise InvalidDestinationException(
            f"{dest} is a topic: name its durable subscription (a topic holds no messages "
            "of its own)"
        )
    sub = broker.durable.get((conn.client_id, subscription))
    if sub is None or sub.topic != dest:
        who = f" for client id {conn.client_id!r}" if conn.client_id else ""
        raise InvalidDestinationException(
            f"no durable subscription {subscription!r} on {dest}{who}: create it first "
            "(a shared durable consumer, or ensure_subscription())"
        )
    return sub.queue


def _held(q: MessageQueue, after: int) -> Iterator[Entry]:
    """Ready and in-flight entries with ``seq > after``, in sequence order."""
    runs: list[Iterable[Entry]] = [
        (e for e in od.values() if e.seq > after) for od in q.ready_buckets() if od
    ]
    if q.inflight:
        runs.append(sorted(e for e in q.inflight.values() if e.seq > after))
    return heapq.merge(*runs)


def _visible_limit(q: MessageQueue) -> int:
    """The highest position a reader may reach now: below the first scheduled message."""
    waiting = [e.seq for _, _, e in q.scheduled if e.state == SCHEDULED]
    return min(q.last_seq, min(waiting) - 1) if waiting else q.last_seq


# ---- handlers ------------------------------------------------------------------------------
def on_get_bounds(broker: SequencedEngine, conn: BrokerConnection, req: c.GetBounds) -> c.Reply:
    q = _log(broker, conn, req.destination, req.subscription, "browse")
    latest = _visible_limit(q)
    first = next(_held(q, 0), None)
    earliest = min(first.seq - 1, latest) if first is not None else latest
    if req.after is not None and req.max_messages is not None:
        if req.max_messages < 1:
            raise JMSException(f"max_messages must be at least 1, not {req.max_messages}")
        after = max(req.after, earliest)
        nth = next(itertools.islice(_held(q, after), req.max_messages - 1, None), None)
        if nth is not None:
            latest = min(latest, nth.seq)
    return c.Bounds(corr=req.corr, earliest=earliest, latest=latest)


def on_read_range(broker: SequencedEngine, conn: BrokerConnection, req: c.ReadRange) -> c.Reply:
    q = _log(broker, conn, req.destination, req.subscription, "browse")
    selector = compile_selector(req.selector)
    if req.limit < 1 or req.max_bytes < 1:
        raise JMSException("limit and max_bytes must be positive")
    now = broker.clock.now_ms()
    seqs: list[int] = []
    counts: list[int] = []
    out: list[bytes] = []
    size = 0
    last = req.after
    done = True
    upto = min(req.upto, _visible_limit(q))
    for e in _held(q, req.after):
        if e.seq > upto:
            break
        if len(out) >= req.limit or size >= req.max_bytes:
            done = False
            break
        last = e.seq
        st = e.stored
        if st.expiration and st.expiration <= now:
            continue
        if selector is not None and not broker.selects(selector, e):
            continue
        data = broker.data(e)
        seqs.append(e.seq)
        counts.append(e.count + 1)
        out.append(data)
        size += len(data)
    if done:
        last = max(last, upto)
    return c.RangeResult(
        corr=req.corr, seqs=seqs, counts=counts, messages=out, after=last, done=done
    )


def on_ack_upto(broker: SequencedEngine, conn: BrokerConnection, req: c.AckUpto) -> c.Reply:
    q = _log(broker, conn, req.destination, req.subscription, "consume")
    selector = compile_selector(req.selector)
    upto = req.upto
    gone: list[Entry] = []
    kept: list[int] = []  # positions up to ``upto`` that stay held
    for od in q.ready_buckets():
        for e in od.values():
            if e.seq > upto:
                break  # each priority's map is in sequence order
            if selector is None or broker.selects(selector, e):
                gone.append(e)
            else:
                kept.append(e.seq)
    if not gone:
        return c.Ok(corr=req.corr, value="0")
    mark = len(broker.ops)
    for e in gone:
        broker.finish(e)
    if q.durable:
        # The store deletes by ranges that hold none of the positions kept (in flight,
        # scheduled, not matching), instead of message by message.
        stored = sorted(e.seq for e in gone if e.stored.persistent)
        if stored:
            kept.extend(seq for seq in q.inflight if seq <= upto)
            kept.extend(seq for _, seq, _ in q.scheduled if seq <= upto)
            kept.sort()
            key = q.key
            broker.ops[mark:] = [  # instead of _finish's RemoveMessage of each one
                op
                for op in broker.ops[mark:]
                if not (isinstance(op, RemoveMessage) and op.dest == key)
            ]
            broker.ops.extend(RemoveRange(key, lo, hi) for lo, hi in _runs(stored, kept))
    return c.Ok(corr=req.corr, value=str(len(gone)))


def _runs(seqs: list[int], kept: list[int]) -> list[tuple[int, int]]:
    """The fewest ranges ``(first, last)`` that cover ``seqs`` (ascending) and hold no
    position of ``kept`` (ascending, disjoint from ``seqs``)."""
    runs: list[tuple[int, int]] = []
    i = bisect.bisect_left(kept, seqs[0])  # the first kept position above the run's start
    lo = prev = seqs[0]
    for seq in seqs:
        if i < len(kept) and kept[i] < seq:  # a kept position lies between prev and seq
            runs.append((lo, prev))
            lo = seq
            i = bisect.bisect_left(kept, seq, i)
        prev = seq
    runs.append((lo, prev))
    return runs


def on_stage(broker: SequencedEngine, conn: BrokerConnection, req: c.Stage) -> c.Reply:
    if not req.sink_id or not req.txid:
        raise JMSException("a staged transaction needs a sink id and a txid")
    tx = broker.staged.get(req.txid)
    if tx is None:
        tx = StagedTx(req.sink_id, req.batch_id)
    elif (tx.sink_id, tx.batch_id) != (req.sink_id, req.batch_id):
        raise IllegalStateException(
            f"staged transaction {req.txid!r} belongs to sink {tx.sink_id!r} batch "
            f"{tx.batch_id}: use a new txid"
        )
    if len(tx.sends) + len(req.messages) > MAX_STAGE_MESSAGES:
        raise ResourceAllocationException(
            f"staged transaction {req.txid!r} would exceed {MAX_STAGE_MESSAGES} messages: "
            "split the work over more transactions"
        )
    checked: set[str] = set()
    for send in req.messages:
        known = send.destination in checked
        dest = broker.check_send(conn, send, dest_ok=known)
        if not known:
            if dest.is_temporary:
                raise InvalidDestinationException(f"{dest} is temporary: it cannot be staged to")
            checked.add(send.destination)
    sends = req.messages
    size = sum(len(send.message) for send in sends)
    limit = broker.config.max_memory_bytes
    if limit and broker.total_bytes + broker.staged_bytes + size > limit:
        raise ResourceAllocationException(
            f"staging {len(sends)} messages ({size} bytes) would take the broker past "
            f"max_memory_bytes ({limit}; {broker.staged_bytes} bytes staged, "
            f"{broker.total_bytes} held): commit or abort staged batches, write smaller "
            "batches, or raise the limit"
        )
    populate = broker.populate_user_id
    if populate or any(_USER_ID in send.message for send in sends):
        # PROP-23: a client's JMSXUserID is removed, or replaced by the connection's user
        sends = [
            broker.stamp_user(conn, send) if populate or _USER_ID in send.message else send
            for send in sends
        ]
    if sends:
        # One store operation for the whole request (a store keeps it as one record).
        broker.ops.append(AddStaged(req.txid, req.sink_id, req.batch_id, len(tx.sends), sends))
        tx.sends.extend(sends)
        tx.bytes += size
        broker.staged_bytes += size
    tx.touched_ms = broker.clock.now_ms()
    broker.staged[req.txid] = tx
    broker.arm_reaper(tx.touched_ms)
    return c.Ok(corr=req.corr, value=str(len(tx.sends)))


def on_commit_staged(
    broker: SequencedEngine, conn: BrokerConnection, req: c.CommitStaged
) -> c.Reply:
    last = broker.sinks.get(req.sink_id)
    duplicate = last is not None and req.batch_id <= last
    named = set(req.txids)
    if not duplicate:
        missing = [t for t in req.txids if t not in broker.staged]
        if missing:
            raise IllegalStateException(
                f"staged transactions {missing[:3]} of sink {req.sink_id!r} are unknown "
                "(aborted, or staged on another broker): stage the batch again"
            )
        for t in req.txids:
            tx = broker.staged[t]
            if tx.sink_id != req.sink_id:
                raise IllegalStateException(
                    f"staged transaction {t!r} belongs to sink {tx.sink_id!r}, not {req.sink_id!r}"
                )
    published = 0
    if not duplicate:
        # Checked when staged; the committer needs the send permission on each one as well.
        dests: dict[str, Destination] = {}
        for t in req.txids:
            for send in broker.staged[t].sends:
                if send.destination not in dests:
                    dest = dests[send.destination] = broker.resolve(send.destination)
                    broker.authorize(conn, "send", dest)
        # Publishing makes objects the broker keeps (two per message); while a large commit
        # makes them, the cyclic garbage collector would sweep the whole heap several times
        # (a full collection per quarter of growth: a third of the commit's time). Paused
        # for the commit, it collects once after it (the pause only delays collection).
        pause = (
            gc.isenabled()
            and sum(len(broker.staged[t].sends) for t in req.txids) >= GC_PAUSE_MESSAGES
        )
        if pause:
            gc.disable()
        # The messages leave staging as they are published: their bytes count once.
        freed = {t: broker.staged[t].bytes for t in req.txids}
        broker.staged_bytes -= sum(freed.values())
        try:
            published = broker.publish_all(
                conn,
                (
                    (dests[send.destination], send)
                    for t in req.txids
                    for send in broker.staged[t].sends
                ),
                f"batch {req.batch_id} of sink {req.sink_id!r} was not published",
            )
        except JMSException:
            broker.staged_bytes += sum(freed.values())
            raise
        finally:
            if pause:
                gc.enable()
        for t in req.txids:
            broker.staged[t].bytes = 0
        broker.sinks[req.sink_id] = req.batch_id
        broker.ops.append(SetSinkBatch(req.sink_id, req.batch_id))
    for t, tx in list(broker.staged.items()):
        if t in named or (tx.sink_id == req.sink_id and tx.batch_id <= req.batch_id):
            _drop(broker, t)
    return c.StagedResult(corr=req.corr, published=published, duplicate=duplicate)


def on_abort_staged(broker: SequencedEngine, conn: BrokerConnection, req: c.AbortStaged) -> c.Reply:
    for t in req.txids:
        _drop(broker, t)
    return c.Ok(corr=req.corr)


def _drop(broker: SequencedEngine, txid: str) -> StagedTx | None:
    """Forget a staged transaction, in memory and in the store; the one dropped, if any."""
    tx = broker.staged.pop(txid, None)
    if tx is not None:
        broker.staged_bytes -= tx.bytes
        broker.ops.append(RemoveStaged(txid))
    return tx


def sweep_staged(broker: SequencedEngine, now: int) -> bool:
    """Abort every staged transaction untouched for ``staged_timeout``; True while some
    remain (the reaper comes back for them)."""
    timeout = broker.config.staged_timeout
    if not broker.staged or timeout <= 0:
        return False
    limit = now - round(timeout * 1000)
    for t, tx in list(broker.staged.items()):
        if tx.touched_ms <= limit:
            _drop(broker, t)
            if broker.on_warning is not None:
                broker.on_warning(
                    "staged_transaction_aborted",
                    txid=t,
                    sink=tx.sink_id,
                    batch=tx.batch_id,
                    messages=len(tx.sends),
                    reason=f"no Stage for {timeout:g} s (staged_timeout)",
                )
    return bool(broker.staged)


HANDLERS: dict[type, Callable[[SequencedEngine, BrokerConnection, Any], c.Reply | None]] = {
    c.GetBounds: on_get_bounds,
    c.ReadRange: on_read_range,
    c.AckUpto: on_ack_upto,
    c.Stage: on_stage,
    c.CommitStaged: on_commit_staged,
    c.AbortStaged: on_abort_staged,
}
