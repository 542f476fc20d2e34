"""The ordered messages of one queue or one subscription.

Theory of operation
-------------------
A published message becomes one :class:`Stored` value (the encoded bytes plus the header
values the broker routes by); each queue or subscription that takes it holds its own
:class:`Entry` (sequence number, delivery count, state), so topic copies are independent
(SUB-01) while sharing the bytes.

An entry is SCHEDULED until its delivery time (JMS 2.0 §4.12), READY while it waits for a
consumer, INFLIGHT once dispatched and until acknowledged, and GONE after. READY entries are
kept in ten insertion-ordered maps, one per priority (JMS 2.0 §3.4.10: higher first, FIFO
within a priority, REL-21). An entry that comes back (rollback, recover, close) is put back at
its original place by sequence number (REL-16). Scheduled entries wait in a heap keyed by due
time; entries with an expiration are also indexed in a heap for the reaper (PSF-05).

Counters
--------
A queue is its own :class:`Counters` (a slotted base class, so that the per-message paths
count with an integer add on an attribute they already touch, not through one more object):
the figures of ``ternmq stat``, the HTTP API and Prometheus, kept as events happen and read
in O(1) (``_stats.py``). This module counts what happens inside a queue (enqueued, dequeued,
ready, scheduled, paged, bytes); the engine counts what only it knows (expired,
dead-lettered, redelivered).
"""

from __future__ import annotations

import heapq
from collections import OrderedDict
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ternmq.broker.config import DestinationPolicy

if TYPE_CHECKING:
    from ternmq.message import Message

__all__ = ["COPY_OVERHEAD", "Counters", "Entry", "MessageQueue", "Stored"]

SCHEDULED, READY, INFLIGHT, GONE = range(4)

# What one held copy of a message costs the process besides its encoded bytes, counted
# against ``max_memory_bytes`` with them: its Entry, its key and place in the queue's maps,
# its tuple in the expiry heap if it can expire, the Stored it shares with the other copies
# and the header of the bytes object (counted with every copy: the bytes are too). Measured
# with tracemalloc on CPython 3.11 (tests/unit/test_queue_memory.py): 370 B a message in a
# queue, 442 B with an expiration, 851 B for three topic copies, plus 33 B of bytes header;
# rounded up for dict growth and the allocator's slack.
COPY_OVERHEAD = 512

# A queue that held more than this many ready messages rebuilds its maps and heaps once it
# has drained to a sixteenth of that peak (see MessageQueue._compact).
COMPACT_MIN = 4096


class Stored:
    """One published message: its bytes and the header values routing needs."""

    __slots__ = (
        "_view",
        "data",
        "delivery_time",
        "expiration",
        "group_id",
        "group_seq",
        "origin_client",
        "origin_conn",
        "paged",
        "persistent",
        "priority",
        "size",
    )

    def __init__(
        self,
        data: bytes | None,
        persistent: bool,
        priority: int,
        expiration: int,
        delivery_time: int,
        group_id: str | None = None,
        group_seq: int = 0,
        origin_conn: object = None,
        origin_client: str | None = None,
        size: int | None = None,
    ) -> None:
        self.data = data
        self.persistent = persistent
        self.priority = priority
        self.expiration = expiration
        self.delivery_time = delivery_time
        self.group_id = group_id
        self.group_seq = group_seq
        self.origin_conn = origin_conn
        self.origin_client = origin_client
        # Bytes of the encoding. ``data`` is None while the message is paged out: its bytes
        # live only in the store and are read back when needed.
        self.size = len(data) if data is not None else (size or 0)
        self._view: Message | None = None
        # Whether memory pressure pushed the bytes out (PSF-07). A message recovered from a
        # disk store also has no bytes in memory, but nothing pushed it out: it is not paged.
        self.paged = False

    def page_out(self) -> None:
        """Drop the bytes from memory (they are durable in the store): the message is paged."""
        self.data = None
        self._view = None
        self.paged = True

    def view(self) -> Message:
        """The decoded message, for selectors (decoded once, on first use).

        Raises:
            ValueError: the message is paged out (the broker reads it from the store).
        """
        if self._view is None:
            from ternmq.message.codec import decode_message

            if self.data is None:
                raise ValueError("the message is paged out")
            self._view = decode_message(self.data)
        return self._view


class Entry:
    """One message's place in one queue or subscription."""

    __slots__ = (
        "consumer",
        "count",
        "delivery_id",
        "held",
        "queue",
        "seq",
        "session",
        "state",
        "stored",
    )

    def __init__(self, seq: int, stored: Stored, queue: MessageQueue, count: int = 0) -> None:
        self.seq = seq
        self.stored = stored
        self.count = count  # times handed to the application (JMSXDeliveryCount - 1)
        self.state = SCHEDULED
        self.queue = queue
        self.delivery_id = 0
        self.consumer: Any = None
        self.session: Any = None
        # What this copy counts against max_memory_bytes: its bytes plus COPY_OVERHEAD while
        # they are in memory, else 0 (the queue's ``bytes`` counts the encoded bytes only).
        self.held = 0

    def __lt__(self, other: Entry) -> bool:
        return self.seq < other.seq


class Counters:
    """The counters of one queue or subscription, kept as events happen (O(1) to read).

    Each maps one-to-one to a per-destination metric (``SERVER.md``, "HTTP"):

    - ``enqueued``: messages it took (sent, diverted, or recovered at start);
      ``ternmq_destination_enqueued_total``.
    - ``dequeued``: messages that left it for good: acknowledged, expired, dead-lettered or
      purged; ``ternmq_destination_dequeued_total``.
    - ``expired``: messages that expired while held here (PSF-05);
      ``ternmq_destination_expired_total``.
    - ``dead_lettered``: messages dead-lettered after ``max_delivery_attempts`` (PSF-01);
      ``ternmq_destination_dead_lettered_total``.
    - ``redelivered``: deliveries the application saw that came back for redelivery
      (rollback, recover, closed session or lost connection; REL-10);
      ``ternmq_destination_redelivered_total``.
    - ``ready_count``, ``scheduled_count``: messages waiting for a consumer, and waiting for
      their delivery time; with the in-flight ones they make the depth
      (``ternmq_destination_messages``).
    - ``paged``: held messages whose bytes memory pressure pushed out to disk (PSF-07). A
      message recovered from a disk store at start is on disk only too (its bytes are read
      when it is delivered), but it is not counted here: ``paged`` is the figure to alert on.
    - ``bytes``: message bytes held in memory (``ternmq_destination_memory_bytes``).

    In flight and consumers are the sizes of the queue's ``inflight`` map and ``consumers``
    list; duplicates dropped are counted by the destination's duplicate-id cache.
    """

    __slots__ = (
        "bytes",
        "dead_lettered",
        "dequeued",
        "enqueued",
        "expired",
        "paged",
        "ready_count",
        "redelivered",
        "scheduled_count",
    )

    def __init__(self) -> None:
        self.enqueued = 0
        self.dequeued = 0
        self.expired = 0
        self.dead_lettered = 0
        self.redelivered = 0
        self.ready_count = 0
        self.scheduled_count = 0
        self.paged = 0
        self.bytes = 0


class MessageQueue(Counters):
    """Messages of one queue or subscription, in dispatch order.

    Args:
        key: the store key (``queue://NAME``, or ``sub:...`` for a durable subscription).
        durable: whether PERSISTENT messages here are written to the store.
        policy: the destination's policy (dead letters, expiry, memory).
        name: the destination text shown in dead-letter and expiry records.
    """

    __slots__ = (
        "_gone_expiring",
        "_peak",
        "_ready",
        "consumers",
        "deleted",
        "durable",
        "expiring",
        "groups",
        "has_groups",
        "inflight",
        "key",
        "last_seq",
        "name",
        "owner",
        "policy",
        "reserved",
        "rr",
        "scheduled",
    )

    def __init__(self, key: str, durable: bool, policy: DestinationPolicy, name: str) -> None:
        super().__init__()
        self.key = key
        self.name = name
        self.durable = durable
        self.policy = policy
        self.last_seq = 0
        self.reserved = 0  # positions reserved in the store (durable queues, _sequenced.py)
        self._ready: list[OrderedDict[int, Entry]] = [OrderedDict() for _ in range(10)]
        self.scheduled: list[tuple[int, int, Entry]] = []
        self.expiring: list[tuple[int, int, Entry]] = []
        self.inflight: dict[int, Entry] = {}
        self._peak = 0  # the most ready entries since the last _compact
        self._gone_expiring = 0  # entries in ``expiring`` that already left (about)
        self.consumers: list[Any] = []
        self.rr = 0
        self.groups: dict[str, Any] = {}
        self.has_groups = False
        self.deleted = False
        self.owner: Any = None  # the connection owning a temporary destination

    # ---- sizes -------------------------------------------------------------------------
    @property
    def depth(self) -> int:
        """Messages held: waiting, scheduled and in flight."""
        return self.ready_count + self.scheduled_count + len(self.inflight)

    def scheduled_entries(self) -> list[Entry]:
        """Entries still waiting for their delivery time."""
        return [e for _, _, e in self.scheduled if e.state == SCHEDULED]

    # ---- entering ----------------------------------------------------------------------
    def add(
        self, stored: Stored, now: int, count: int = 0, seq: int = 0, held: int | None = None
    ) -> Entry:
        """Take a message (new, or recovered with its ``seq`` and delivery ``count``).
        ``held`` is what it counts against ``max_memory_bytes`` (default: its size plus
        :data:`COPY_OVERHEAD`; 0 if its bytes are not in memory)."""
        new = not seq
        if new:
            self.last_seq += 1
            seq = self.last_seq
        else:
            self.last_seq = max(self.last_seq, seq)
        entry = Entry(seq, stored, self, count)
        if held is None:
            held = stored.size + COPY_OVERHEAD if stored.data is not None else 0
        entry.held = held
        if held:
            self.bytes += held - COPY_OVERHEAD
        if stored.paged:
            self.paged += 1
        self.enqueued += 1
        if stored.group_id is not None:
            self.has_groups = True
        if stored.expiration:
            heapq.heappush(self.expiring, (stored.expiration, seq, entry))
        if stored.delivery_time > now:
            heapq.heappush(self.scheduled, (stored.delivery_time, seq, entry))
            self.scheduled_count += 1
        elif new:  # the highest sequence number yet: the end of its priority's order
            entry.state = READY
            self._ready[stored.priority][seq] = entry
            self.ready_count += 1
        else:
            self._make_ready(entry)
        if self.ready_count > self._peak:
            self._peak = self.ready_count
        return entry

    def schedule(self, entry: Entry, due: int) -> None:
        """Hold a returned entry until ``due`` (redelivery delay, PSF-02)."""
        entry.state = SCHEDULED
        heapq.heappush(self.scheduled, (due, entry.seq, entry))
        self.scheduled_count += 1

    def _make_ready(self, entry: Entry) -> None:
        entry.state = READY
        od = self._ready[entry.stored.priority]
        seq = entry.seq
        if not od or seq > next(reversed(od)):
            od[seq] = entry
        elif seq < next(iter(od)):
            od[seq] = entry
            od.move_to_end(seq, last=False)
        else:  # rare: back into the middle (REL-16)
            od[seq] = entry
            items = sorted(od.items())
            od.clear()
            od.update(items)
        self.ready_count += 1

    def promote_due(self, now: int) -> int:
        """Move every scheduled entry whose time has come to READY; return how many."""
        n = 0
        sched = self.scheduled
        while sched and sched[0][0] <= now:
            _, _, entry = heapq.heappop(sched)
            if entry.state == SCHEDULED:
                self._make_ready(entry)
                n += 1
        self.scheduled_count -= n
        return n

    def next_due(self) -> int | None:
        """The earliest delivery time of a scheduled entry, or None."""
        sched = self.scheduled
        while sched and sched[0][2].state != SCHEDULED:
            heapq.heappop(sched)
        return sched[0][0] if sched else None

    # ---- leaving -----------------------------------------------------------------------
    def take(self, entry: Entry) -> None:
        """READY -> INFLIGHT (dispatched to a consumer)."""
        del self._ready[entry.stored.priority][entry.seq]
        self.ready_count -= 1
        entry.state = INFLIGHT
        self.inflight[entry.seq] = entry

    def give_back(self, entry: Entry) -> None:
        """INFLIGHT -> READY at its original place (REL-16)."""
        if entry.state != INFLIGHT:
            return
        del self.inflight[entry.seq]
        entry.consumer = None
        entry.session = None
        self._make_ready(entry)

    def remove(self, entry: Entry) -> None:
        """Drop an entry for good (acknowledged, expired, dead-lettered, purged)."""
        state = entry.state
        if state == GONE:
            return
        if state == READY:
            del self._ready[entry.stored.priority][entry.seq]
            self.ready_count -= 1
        elif state == INFLIGHT:
            del self.inflight[entry.seq]
        else:
            self.scheduled_count -= 1
        entry.state = GONE
        if entry.held:
            self.bytes -= entry.held - COPY_OVERHEAD
        if entry.stored.paged:
            self.paged -= 1
        self.dequeued += 1
        if entry.stored.expiration:
            self._gone_expiring += 1
            gone = self._gone_expiring
            if gone > COMPACT_MIN and 2 * gone > len(self.expiring):
                self._prune_expiring()
        if self._peak > COMPACT_MIN and (self.ready_count + len(self.inflight)) << 4 < self._peak:
            self._compact()

    # ---- giving memory back ----------------------------------------------------------------
    def _prune_expiring(self) -> None:
        """Drop the entries that already left from the expiry heap (an acknowledged message
        waits there until its expiration time otherwise, bytes and all)."""
        self.expiring = [t for t in self.expiring if t[2].state != GONE]
        heapq.heapify(self.expiring)
        self._gone_expiring = 0

    def _compact(self) -> None:
        """Rebuild the maps and heaps after a large backlog drained: a dict keeps the table
        of its largest size after its entries are deleted (CPython never shrinks one on
        deletion), so the memory of a drained backlog would stay with the queue."""
        ready = self._ready
        for p, od in enumerate(ready):
            ready[p] = OrderedDict(od)
        self.inflight = dict(self.inflight)
        self.scheduled = [t for t in self.scheduled if t[2].state == SCHEDULED]
        heapq.heapify(self.scheduled)
        self._prune_expiring()
        self._peak = self.ready_count

    def clear(self) -> list[Entry]:
        """Remove everything; return the entries that were held."""
        out = [e for od in self._ready for e in od.values()]
        out += list(self.inflight.values()) + self.scheduled_entries()
        for e in out:
            e.state = GONE
        for od in self._ready:
            od.clear()
        self.ready_count = 0
        self.scheduled_count = 0
        self.paged = 0
        self.inflight.clear()
        self.scheduled.clear()
        self.expiring.clear()
        self.bytes = 0
        self._gone_expiring = 0
        self._compact()
        return out

    # ---- reading -----------------------------------------------------------------------
    def iter_ready(self) -> Iterator[Entry]:
        """READY entries in dispatch order: priority 9 to 0, FIFO within one."""
        for p in range(9, -1, -1):
            od = self._ready[p]
            if od:
                yield from od.values()

    def ready_buckets(self) -> list[OrderedDict[int, Entry]]:
        """The per-priority maps (index = priority), for the dispatcher's fast path."""
        return self._ready

    def expired_entries(self, now: int) -> list[Entry]:
        """Pop and return every held entry (not in flight) whose expiration has passed."""
        out = []
        heap = self.expiring
        while heap and heap[0][0] <= now:
            _, _, entry = heapq.heappop(heap)
            if entry.state in (READY, SCHEDULED):
                out.append(entry)
            elif entry.state == GONE and self._gone_expiring:
                self._gone_expiring -= 1
        return out

    def browse_order(self) -> list[Entry]:
        """Every visible entry (READY or INFLIGHT) in the order a consumer would get them."""
        entries = [e for od in self._ready for e in od.values()]
        entries += self.inflight.values()
        entries.sort(key=lambda e: (-e.stored.priority, e.seq))
        return entries
