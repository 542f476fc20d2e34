"""The store interface: what the broker writes so that durable state survives it.

Theory of operation
-------------------
The broker keeps its working state in memory and describes every durable change as a small
operation value (a frozen msgspec Struct that the garbage collector does not track: a busy
broker makes one or more per message, so they must be cheap to make and to keep). The
operations of one broker request (a send, an ack, a commit) form one *batch*, written
atomically by :meth:`Store.write` before the request's reply leaves the broker; a durable
store may join concurrent batches into one transaction and one fsync (group commit: the
store-independent ``GroupCommitWriter`` of ``store/_writer.py``, which a transactional store
plugs into as its ``Backend``). On start, :meth:`Store.load` returns what survived, in order.

Only state that must survive is written: PERSISTENT messages on queues and durable
subscriptions, durable subscription definitions, delivery counts, the sequence numbers each
destination has reserved (so that positions stay monotonic across restarts), staged
transactions and the last committed batch of each sink (the two-phase publish of
``broker/_sequenced.py``), and the latest duplicate-detection ids of each destination
(PSF-09: written in the batch of the send that used the id). Non-persistent messages,
temporary destinations and non-durable subscriptions never reach the store.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Final, Protocol

import msgspec

from ternmq.protocol.commands import StagedSend

__all__ = [
    "COMMIT_BUCKETS",
    "CommitTimes",
    "AddDuplicateId",
    "AddMessage",
    "AddStaged",
    "Completion",
    "AddSubscription",
    "MemoryStore",
    "Op",
    "Recovered",
    "RemoveDestination",
    "RemoveMessage",
    "RemoveRange",
    "RemoveStaged",
    "RemoveSubscription",
    "ReserveSeq",
    "SetDeliveryCount",
    "SetSinkBatch",
    "StagedRecord",
    "Store",
    "StoredMessage",
    "staged_records",
]


class AddMessage(msgspec.Struct, frozen=True, gc=False):
    """A persistent message entered ``dest`` (``queue://NAME``, or ``sub:u:CLIENT:NAME`` /
    ``sub:s:CLIENT:NAME`` for an unshared / shared durable subscription). The SQLite store
    inserts the fields in this order."""

    dest: str
    seq: int
    data: bytes
    priority: int
    expiration: int
    delivery_time: int
    group_id: str | None = None


class RemoveMessage(msgspec.Struct, frozen=True, gc=False):
    """Message ``seq`` left ``dest`` (acknowledged, expired, dead-lettered or purged)."""

    dest: str
    seq: int


class RemoveRange(msgspec.Struct, frozen=True, gc=False):
    """Every stored message of ``dest`` with ``first <= seq <= last`` left it (a cumulative
    acknowledgement: the broker names only ranges that hold nothing it keeps)."""

    dest: str
    first: int
    last: int


class SetDeliveryCount(msgspec.Struct, frozen=True, gc=False):
    """Message ``seq`` of ``dest`` has been delivered ``count`` times."""

    dest: str
    seq: int
    count: int


class AddSubscription(msgspec.Struct, frozen=True, gc=False):
    """A durable subscription was created (its key is ``dest``)."""

    dest: str
    client_id: str | None
    name: str
    topic: str
    selector: str | None
    no_local: bool
    shared: bool


class RemoveSubscription(msgspec.Struct, frozen=True, gc=False):
    """A durable subscription and all its messages were deleted."""

    dest: str


class RemoveDestination(msgspec.Struct, frozen=True, gc=False):
    """A queue and all its messages were deleted."""

    dest: str


class ReserveSeq(msgspec.Struct, frozen=True, gc=False):
    """Sequence numbers of ``dest`` up to ``upto`` may have been used: after a restart the
    destination continues above ``upto`` (positions never repeat, even for messages that
    were never stored)."""

    dest: str
    upto: int


@dataclasses.dataclass(frozen=True, slots=True)
class StagedRecord:
    """One message of a staged transaction (invisible until its batch is committed)."""

    txid: str
    n: int
    sink_id: str
    batch_id: int
    destination: str
    data: bytes
    persistent: bool
    priority: int
    expiration: int
    delivery_time: int
    group_id: str | None
    group_seq: int


class AddStaged(msgspec.Struct, frozen=True, gc=False):
    """Messages joined a staged transaction: ``messages[i]`` is its message ``first + i``.

    One operation per ``Stage`` request (not per message): a store keeps the list as one
    record, since staged messages are only ever written, read back whole at recovery, and
    dropped whole."""

    txid: str
    sink_id: str
    batch_id: int
    first: int
    messages: list[StagedSend]


class RemoveStaged(msgspec.Struct, frozen=True, gc=False):
    """A staged transaction was published or dropped."""

    txid: str


class SetSinkBatch(msgspec.Struct, frozen=True, gc=False):
    """Batch ``batch_id`` of sink ``sink_id`` is committed (later replays publish nothing)."""

    sink_id: str
    batch_id: int


class AddDuplicateId(msgspec.Struct, frozen=True, gc=False):
    """Destination ``dest`` accepted a send with duplicate-detection id ``dup_id``, its
    ``n``-th id (PSF-09); its ids numbered ``evict_upto`` or lower are forgotten (the cache
    holds the latest ``n - evict_upto``)."""

    dest: str
    n: int
    dup_id: str
    evict_upto: int


Op = (
    AddMessage
    | RemoveMessage
    | RemoveRange
    | SetDeliveryCount
    | AddSubscription
    | RemoveSubscription
    | RemoveDestination
    | ReserveSeq
    | AddStaged
    | RemoveStaged
    | SetSinkBatch
    | AddDuplicateId
)


@dataclasses.dataclass(slots=True)
class StoredMessage:
    """A message as recovered from the store (``data`` None when loaded without bodies)."""

    seq: int
    data: bytes | None
    priority: int
    expiration: int
    delivery_time: int
    group_id: str | None
    delivery_count: int = 0
    size: int = 0


@dataclasses.dataclass
class Recovered:
    """Everything :meth:`Store.load` found: subscriptions and messages per destination key,
    reserved sequence numbers, staged messages (by txid, then position), sink batches and the
    remembered duplicate-detection ids per destination (``(n, id)``, oldest first)."""

    subscriptions: list[AddSubscription] = dataclasses.field(default_factory=list)
    messages: dict[str, list[StoredMessage]] = dataclasses.field(default_factory=dict)
    sequences: dict[str, int] = dataclasses.field(default_factory=dict)
    staged: list[StagedRecord] = dataclasses.field(default_factory=list)
    sinks: dict[str, int] = dataclasses.field(default_factory=dict)
    duplicate_ids: dict[str, list[tuple[int, str]]] = dataclasses.field(default_factory=dict)


# ``callback(tokens, error)``: the batches of ``tokens`` (their submission order) finished
# together, durable if ``error`` is None, none of them written otherwise. One call per group
# commit, not one per batch: the host enters its broker once for the whole group.
Completion = Callable[[list[int], BaseException | None], None]


def staged_records(ops: Iterable[AddStaged]) -> Iterator[StagedRecord]:
    """The messages of staged-transaction operations, one record each, in the given order."""
    for op in ops:
        for i, m in enumerate(op.messages, op.first):
            yield StagedRecord(
                op.txid,
                i,
                op.sink_id,
                op.batch_id,
                m.destination,
                m.message,
                m.persistent,
                m.priority,
                m.expiration,
                m.delivery_time,
                m.group_id,
                m.group_seq,
            )


# Upper bounds (seconds) of the commit-latency histogram's buckets: an fsync on an SSD takes
# ~0.1-2 ms, on a disk or a network volume tens of ms.
COMMIT_BUCKETS: Final = (
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
)


class CommitTimes:
    """The count and latency histogram of a store's commits (read by the HTTP metrics).

    ``record`` is called by whoever commits (under the store's write lock, so never twice at
    once); a reader on another thread may see one commit counted in ``count`` a moment before
    its bucket, which a scrape tolerates.
    """

    __slots__ = ("buckets", "count", "total")

    def __init__(self) -> None:
        self.buckets = [0] * (len(COMMIT_BUCKETS) + 1)  # the last one: above every bound
        self.count = 0
        self.total = 0.0

    def record(self, seconds: float) -> None:
        """Count one commit that took ``seconds``."""
        i = 0
        for bound in COMMIT_BUCKETS:
            if seconds <= bound:
                break
            i += 1
        self.buckets[i] += 1
        self.count += 1
        self.total += seconds

    def snapshot(self) -> tuple[list[tuple[str, int]], float]:
        """Cumulative buckets ``[(upper bound, count), ..., ("+Inf", count)]`` and the sum of
        the latencies, the shape of a Prometheus histogram."""
        out: list[tuple[str, int]] = []
        running = 0
        for bound, n in zip(COMMIT_BUCKETS, self.buckets):
            running += n
            out.append((repr(bound), running))
        out.append(("+Inf", running + self.buckets[-1]))
        return out, self.total


class Store(Protocol):
    """Durable state of a broker.

    A *synchronous* store (``synchronous = True``) is written with :meth:`write`, which is
    durable when it returns. An asynchronous one takes batches with :meth:`submit` and reports
    them, in submission order, to the completion callback set with :meth:`set_completion`
    (from its own thread): that is where group commit happens, and each call reports every
    batch of one commit (``callback([token, ...], error)``).
    """

    synchronous: bool

    @property
    def commit_times(self) -> CommitTimes | None:
        """The count and latency of this store's commits, if it commits (else None)."""
        ...

    @property
    def batches(self) -> int:
        """How many batches :meth:`submit` has taken: a request that made one awaits its
        commit (the hosts' owner commits compare it before and after a request)."""
        ...

    def write(self, ops: Sequence[Op]) -> None:
        """Apply one batch atomically; durable when it returns.

        Raises:
            OSError: the store could not write (the broker fails the request).
        """
        ...

    def submit(self, ops: Sequence[Op], token: int) -> None:
        """Queue one batch; its completion is reported later: ``token`` is in the ``tokens``
        of one ``callback(tokens, error)``."""
        ...

    def set_completion(self, callback: Completion) -> None:
        """Where :meth:`submit` reports finished batches, a group commit per call."""
        ...

    def load(self, with_data: bool = True) -> Recovered:
        """Everything that survived, messages ordered by sequence number; without their
        bodies (``data`` None, read later with :meth:`read_message`) if ``with_data`` is
        False."""
        ...

    def read_message(self, dest: str, seq: int) -> bytes | None:
        """The stored bytes of one message (a paged-out body), or None if absent."""
        ...

    def close(self) -> None:
        """Finish queued batches and release the store's resources."""
        ...

    def set_owner_commits(self, due: Callable[[], None] | None) -> bool:
        """Offer to let the broker's owner write small batches on its own thread (owner
        commits, ``store/_writer.py``). Returns False if this store has no such capability;
        then ``due`` is never called and :meth:`commit_due` does nothing."""
        ...

    def commit_due(self, here: bool = True) -> None:
        """Write what :meth:`set_owner_commits`'s ``due()`` announced (see there)."""
        ...


class MemoryStore:
    """A store that lives in this process's memory: durable for the life of the process.

    A broker restarted on the same ``MemoryStore`` object recovers its state, which is how the
    recovery path is tested without a disk.
    """

    synchronous = True

    def __init__(self) -> None:
        self._subs: dict[str, AddSubscription] = {}
        self._messages: dict[str, dict[int, StoredMessage]] = {}
        self._sequences: dict[str, int] = {}
        self._staged: dict[str, list[AddStaged]] = {}  # txid -> its requests, in order
        self._sinks: dict[str, int] = {}
        self._dup_ids: dict[str, collections.OrderedDict[int, str]] = {}
        self.batches = 0
        self.commit_times: CommitTimes | None = None  # nothing to commit

    def write(self, ops: Sequence[Op]) -> None:
        """Apply one batch."""
        self.batches += 1
        for op in ops:
            if isinstance(op, AddMessage):
                self._messages.setdefault(op.dest, {})[op.seq] = StoredMessage(
                    op.seq,
                    op.data,
                    op.priority,
                    op.expiration,
                    op.delivery_time,
                    op.group_id,
                    size=len(op.data),
                )
            elif isinstance(op, RemoveMessage):
                self._messages.get(op.dest, {}).pop(op.seq, None)
            elif isinstance(op, RemoveRange):
                msgs = self._messages.get(op.dest, {})
                for seq in [seq for seq in msgs if op.first <= seq <= op.last]:
                    del msgs[seq]
            elif isinstance(op, SetDeliveryCount):
                rec = self._messages.get(op.dest, {}).get(op.seq)
                if rec is not None:
                    rec.delivery_count = op.count
            elif isinstance(op, AddSubscription):
                self._subs[op.dest] = op
            elif isinstance(op, RemoveSubscription):
                self._subs.pop(op.dest, None)
                self._messages.pop(op.dest, None)
            elif isinstance(op, RemoveDestination):
                self._messages.pop(op.dest, None)
            elif isinstance(op, ReserveSeq):
                self._sequences[op.dest] = op.upto
            elif isinstance(op, AddStaged):
                self._staged.setdefault(op.txid, []).append(op)
            elif isinstance(op, RemoveStaged):
                self._staged.pop(op.txid, None)
            elif isinstance(op, AddDuplicateId):
                ids = self._dup_ids.setdefault(op.dest, collections.OrderedDict())
                ids[op.n] = op.dup_id
                while ids and next(iter(ids)) <= op.evict_upto:
                    ids.popitem(last=False)
            else:
                self._sinks[op.sink_id] = op.batch_id

    def submit(self, ops: Sequence[Op], token: int) -> None:
        """Not used: a synchronous store is written with :meth:`write`.

        Raises:
            TypeError: always.
        """
        raise TypeError("MemoryStore is synchronous: use write()")

    def set_completion(self, callback: Completion) -> None:
        """Nothing to report: writes complete when they return."""

    def read_message(self, dest: str, seq: int) -> bytes | None:
        """The bytes of one stored message, or None."""
        rec = self._messages.get(dest, {}).get(seq)
        return None if rec is None else rec.data

    def load(self, with_data: bool = True) -> Recovered:
        """Everything written and not removed, in sequence order (always with bodies: they
        are in memory anyway)."""
        return Recovered(
            subscriptions=list(self._subs.values()),
            messages={
                dest: [dataclasses.replace(m) for _, m in sorted(msgs.items())]
                for dest, msgs in self._messages.items()
                if msgs
            },
            sequences=dict(self._sequences),
            staged=[rec for _, ops in sorted(self._staged.items()) for rec in staged_records(ops)],
            sinks=dict(self._sinks),
            duplicate_ids={dest: list(ids.items()) for dest, ids in self._dup_ids.items() if ids},
        )

    def set_owner_commits(self, due: Callable[[], None] | None) -> bool:
        """A memory store writes synchronously: it has no owner commits (returns False)."""
        return False

    def commit_due(self, here: bool = True) -> None:
        """Nothing is ever queued here: there is nothing to write."""

    def close(self) -> None:
        """Nothing to release."""
