"""What one group commit writes, whatever the database: the batches reduced to steps.

Theory of operation
-------------------
A transactional store's writer takes every batch queued at that moment and writes them in
one transaction (``store/_writer.py``). Much of what those batches say cancels out or can be
written together, and none of that depends on SQL: :func:`plan` reduces them, once, to

- the *steps* of the transaction, in order: runs of message inserts and deletes of messages
  written earlier (:class:`Rows`, one multi-row statement or two each), and every other
  operation on its own. Any operation other than a message insert, a message delete or a
  staged chunk (which has its own table) ends a run, so that the order of operations on the
  same rows is kept: a ``RemoveRange`` or ``RemoveDestination`` sees the inserts before it;
- a message added and removed again within the group (a fast consumer) is in no step: it
  never reaches the database;
- delivery counts (``SetDeliveryCount``): the last one of each message; those of messages
  inserted in the group go with their insert (:attr:`Rows.counts`), the others are left in
  :attr:`Plan.counts` for one update at the end;
- duplicate-detection ids (PSF-09) are written last, in order (:attr:`Plan.dup_ids`), with one
  eviction bound per destination (:func:`evictions`).

A backend (``store/sqlite.py``, ``store/postgres.py``) turns the plan into its statements.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from ternmq.store._base import (
    AddDuplicateId,
    AddMessage,
    AddStaged,
    Op,
    RemoveMessage,
    SetDeliveryCount,
)

__all__ = ["Plan", "Rows", "evictions", "plan"]


@dataclasses.dataclass(slots=True)
class Rows:
    """A run of message writes: ``deletes`` (messages of earlier transactions) then
    ``inserts``, ``counts[i]`` the delivery count of ``inserts[i]``."""

    inserts: list[AddMessage] = dataclasses.field(default_factory=list)
    counts: list[int] = dataclasses.field(default_factory=list)
    deletes: list[RemoveMessage] = dataclasses.field(default_factory=list)


@dataclasses.dataclass(slots=True)
class Plan:
    """The reduced group commit (see the module doc)."""

    steps: list[Rows | Op] = dataclasses.field(default_factory=list)
    counts: dict[tuple[str, int], int] = dataclasses.field(default_factory=dict)
    dup_ids: list[AddDuplicateId] = dataclasses.field(default_factory=list)
    body_bytes: int = 0  # bytes of the message bodies inserted


def plan(batches: list[Sequence[Op]]) -> Plan:
    """Reduce the batches of one group commit to the steps of its transaction."""
    # The common group under load is sends only (synchronous producers, no consumer yet):
    # one run of inserts in order, nothing to reduce. Taken without the general pass's two
    # dicts and second loop (about half the writer's Python per message at 32 sends a
    # commit); anything else, or a message added twice, takes the general pass.
    inserts: list[AddMessage] = []
    last: dict[str, int] = {}
    size = 0
    for ops in batches:
        for op in ops:
            if type(op) is not AddMessage or op.seq <= last.get(op.dest, -1):
                return _reduce(batches)
            last[op.dest] = op.seq
            inserts.append(op)
            size += len(op.data)
    if not inserts:
        return Plan()
    return Plan(steps=[Rows(inserts, [0] * len(inserts))], body_bytes=size)


def _reduce(batches: list[Sequence[Op]]) -> Plan:
    """The general pass of :func:`plan` (see the module doc)."""
    out = Plan()
    # Keyed by destination, then sequence number: no tuple per message.
    adds: dict[str, dict[int, AddMessage]] = {}
    counts = out.counts
    actions: list[Op] = []
    for ops in batches:
        for op in ops:
            if isinstance(op, AddMessage):
                adds.setdefault(op.dest, {})[op.seq] = op
                actions.append(op)
            elif isinstance(op, RemoveMessage):
                added = adds.get(op.dest)
                if added is not None and added.pop(op.seq, None) is not None:
                    counts.pop((op.dest, op.seq), None)  # added and removed: no write
                else:
                    actions.append(op)
            elif isinstance(op, SetDeliveryCount):
                counts[(op.dest, op.seq)] = op.count
            elif isinstance(op, AddDuplicateId):
                out.dup_ids.append(op)
            else:
                actions.append(op)
    run = Rows()
    for op in actions:
        if isinstance(op, AddMessage):
            if adds[op.dest].get(op.seq) is op:
                run.inserts.append(op)
                run.counts.append(counts.pop((op.dest, op.seq), 0))
                out.body_bytes += len(op.data)
        elif isinstance(op, RemoveMessage):
            run.deletes.append(op)
        elif isinstance(op, AddStaged):
            out.steps.append(op)
        else:
            if run.inserts or run.deletes:
                out.steps.append(run)
                run = Rows()
            out.steps.append(op)
    if run.inserts or run.deletes:
        out.steps.append(run)
    return out


def evictions(ops: list[AddDuplicateId]) -> dict[str, int]:
    """Per destination, the highest ``evict_upto`` of ``ops``: its ids numbered that or lower
    are forgotten."""
    evict: dict[str, int] = {}
    for op in ops:
        evict[op.dest] = max(op.evict_upto, evict.get(op.dest, op.evict_upto))
    return evict
