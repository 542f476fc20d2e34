"""The embedded durable store: SQLite in WAL mode, one writer thread, group commit.

Theory of operation
-------------------
What lives where: this module is SQLite's part, the schema, the SQL of one transaction
(:meth:`SqliteStore.apply`), the checkpoints, recovery (:meth:`SqliteStore.load`) and the
``LOCK`` file. The queue of submitted batches, the writer thread, group commit, owner commits
and completion reporting are the store-independent ``GroupCommitWriter`` of
``store/_writer.py``; ``SqliteStore`` is its ``Backend`` and hands ``submit``,
``set_completion``, ``set_owner_commits``, ``commit_due`` and ``close`` to it.

The broker hands batches of operations to :meth:`SqliteStore.submit` and goes on; the
writer thread takes *every* batch queued at that moment and applies them in one SQLite
transaction, so one commit (one fsync of the write-ahead log with ``fsync="always"``) makes
them all durable — group commit. Then it reports the tokens of all those batches, in order,
to the completion callback in one call; the broker releases the replies that waited for
them. Within one write, a message
added and removed again (a fast consumer) never reaches the disk. Copying the log into the
database (a checkpoint) is the writer's job too, once it has logged ``CHECKPOINT_BYTES``, and
*after* it has reported the completions: a large commit's reply does not wait for it.

Durability settings (``fsync``):
- ``"always"`` (default): ``PRAGMA synchronous=FULL``: a batch is on stable storage before its
  completion is reported, hence before any receipt. Nothing that was confirmed is lost.
- ``"batch"``: ``PRAGMA synchronous=NORMAL`` plus an explicit fsync of the log at most every
  ``batch_interval`` seconds. Faster; a power loss (not a process crash) can lose the batches
  confirmed during the last interval.

Small writes on the submitting thread (:meth:`set_owner_commits`; the server and the
embedded broker turn it on). With one producer waiting for each receipt, every send paid two
thread hand-overs around its commit: the writer woken for the batch, the broker's thread
woken for the completion (strace of ``ternmq serve``: seven futex calls, a self-pipe write
and read and three polls per send). Instead, the owner is told (``due()``) when a batch
waits for an *idle* writer and calls :meth:`commit_due` when it is ready to block for one
commit: the server once it has read what its clients sent, the embedded broker on the thread
whose request made the batch, once it has let go of the broker lock; both only for a request
that awaits its reply, never for a one-way acknowledgement, which nobody waits for. If the
queue holds at most ``INLINE_OPS`` operations and ``INLINE_BYTES`` of messages, that thread
writes them, one commit, and reports them itself; batches submitted meanwhile only queue and
go to the writer afterwards, in one group commit; anything larger, or queued while the
writer works, stays the writer's, so under load the broker keeps working while the disk
does. Every write runs under one lock (``_db_lock``, the writer's ``lock``), in submission
order: one thread at a time owns the database. Checkpoints stay on the writer thread.

A lock file (``LOCK``, ``fcntl.flock``) keeps a second process off the same directory.
The writer thread exists only while there is work, so an idle broker holds no thread.

A full disk. The data dir holds a reserve file (``RESERVE``, ``RESERVE_MAX`` at most) of
blocks allocated in advance, and the writer copies the log into the database once it holds
a quarter of the reserve's worth (or ``CHECKPOINT_BYTES``, the smaller; on a small volume
SQLite itself at a half): what a checkpoint adds to the database fits in the reserve. A
checkpoint that finds the volume low (less room than the reserve twice over) also gives free
pages back. When a write fails because the volume is full (``SQLITE_FULL``, ``ENOSPC``),
the store enters *full mode*: it deletes the reserve, copies
the log into the database and truncates it, and writes the failed transaction again if it
adds no message (an acknowledgement, a purge, a delivery count, a consumer's subscription).
In full mode a batch that adds messages is refused at once (:class:`StoreFullError`) without
touching SQLite, so the room is kept for what frees space; after every other commit the
store gives free pages back to the volume (``auto_vacuum=INCREMENTAL``, set on databases it
creates; ``PRAGMA incremental_vacuum``), truncates the log, and leaves full mode once the
volume has room for the reserve twice over, re-creating it. A group commit that fails is
tried again batch by batch (``store/_writer.py``), so a refused send does not take an
acknowledgement down with it. Deletes are not secure (``secure_delete=FAST``): with SQLite's
secure delete (on by default in some builds) the freed pages of a removed message are zeroed
through the log. Log pages per one-row commit, 2,000 commits: an 8 KB message's insert 5.1,
its delete 8.0 with secure delete and 6.0 without; ``auto_vacuum=INCREMENTAL`` adds one
(its pointer-map page): 6.2 and 7.0; a 100-byte message's 2.2 and 2.3 either way. (On a
20 MiB tmpfs without these, deletes failed as soon as sends filled the volume, since the log
must grow or be checkpointed first and a checkpoint of new pages must grow the database;
with them, the volume is drained.)

With ``batch_scheduling`` (the server and the embedded broker set it; ``ternmq._sched``) the
writer runs under Linux's ``SCHED_BATCH`` policy: its wake-ups (an fsync done, the GIL free)
no longer preempt the thread that runs the broker. On the default policy each commit cost
about eight context switches, the writer preempting the event loop only to find the GIL held
and sleep again; deferred, it wakes when the loop waits or its time slice ends, finds more
batches queued, and one fsync serves twice as many sends (64 producers over TCP: 8 -> 17
sends per commit, about 0.9 -> 0.25 context switches and 43 -> 36 us of server CPU per
send). An idle loop leaves it the CPU at once, so a lone producer waits no longer. It is no
lower priority: the same nice value, the same share of the CPU.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import itertools
import logging
import os
import pathlib
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal

import msgspec

from ternmq.errors import JMSException
from ternmq.protocol.commands import StagedSend
from ternmq.store._base import (
    AddDuplicateId,
    AddMessage,
    AddStaged,
    AddSubscription,
    Op,
    Recovered,
    RemoveDestination,
    RemoveRange,
    RemoveStaged,
    RemoveSubscription,
    ReserveSeq,
    SetDeliveryCount,
    SetSinkBatch,
    StoredMessage,
    StoreFullError,
    staged_records,
)
from ternmq.store._plan import Rows, evictions, plan
from ternmq.store._writer import GroupCommitWriter, WriterFront

__all__ = ["SqliteStore"]

log = logging.getLogger("ternmq.store")

SCHEMA_VERSION = "4"
# Schema 2 added the sequences, staged and sinks tables; schema 3 keeps staged messages as
# one row per Stage request (staged_chunks: a msgpack list of StagedSend) instead of one row
# per message; schema 4 added duplicate_ids (PSF-09). Older directories are upgraded in
# place: the new tables start empty, and a schema-2 staged table is copied into staged_chunks
# (one chunk per transaction), then dropped.
_UPGRADABLE = ("1", "2", "3")
_STAGED_ENCODER = msgspec.msgpack.Encoder()
_STAGED_DECODER = msgspec.msgpack.Decoder(list[StagedSend])
# Message inserts and deletes go to SQLite as multi-row statements of up to MAX_ROWS rows:
# each statement lets go of the GIL while SQLite works and must win it back from the threads
# running meanwhile (hundreds of microseconds with 64 busy producers), so the writer makes
# one statement per chunk of rows, not one per row (see _Transaction.rows).
MAX_ROWS = 256
ROWS_STEP = 8  # statement sizes: 1 to ROWS_STEP rows, then multiples of ROWS_STEP
STATEMENT_CACHE = 256  # prepared statements kept by the writer's connection (default 128)
_ROW_ADDED = "(?,?,?,?,?,?,?,0)"  # an AddMessage's fields in order (msgspec.structs.astuple)
_ROW_COUNTED = "(?,?,?,?,?,?,?,?)"  # the table's column order, with the delivery count
_INSERT_ROWS = (
    "INSERT OR REPLACE INTO messages(dest, seq, data, priority, expiration, delivery_time, "
    "group_id, delivery_count) VALUES"
)
_INSERT_COUNTED_ROWS = "INSERT OR REPLACE INTO messages VALUES"
# a lone send, and one with its delivery count (see SqliteStore._apply)
_INSERT_ONE = f"{_INSERT_ROWS} {_ROW_ADDED}"
_INSERT_COUNTED_ONE = f"{_INSERT_COUNTED_ROWS} {_ROW_COUNTED}"
_ROW_BYTES = 64  # log bytes of a row besides its body (the checkpoint estimate)
# The join keeps the primary-key search per row (a row-value IN list would scan the table).
_DELETE_ROWS = (
    "DELETE FROM messages WHERE rowid IN (SELECT m.rowid FROM (VALUES {rows}) v "
    "JOIN messages m ON m.dest = v.column1 AND m.seq = v.column2)"
)
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS messages(
    dest TEXT NOT NULL,
    seq INTEGER NOT NULL,
    priority INTEGER NOT NULL,
    expiration INTEGER NOT NULL,
    delivery_time INTEGER NOT NULL,
    group_id TEXT,
    delivery_count INTEGER NOT NULL DEFAULT 0,
    data BLOB NOT NULL,
    PRIMARY KEY(dest, seq)
);
CREATE TABLE IF NOT EXISTS subscriptions(
    dest TEXT PRIMARY KEY,
    client_id TEXT,
    name TEXT NOT NULL,
    topic TEXT NOT NULL,
    selector TEXT,
    no_local INTEGER NOT NULL,
    shared INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS sequences(dest TEXT PRIMARY KEY, reserved INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS staged_chunks(
    txid TEXT NOT NULL,
    first INTEGER NOT NULL,
    sink_id TEXT NOT NULL,
    batch_id INTEGER NOT NULL,
    messages BLOB NOT NULL,
    PRIMARY KEY(txid, first)
);
CREATE TABLE IF NOT EXISTS sinks(sink_id TEXT PRIMARY KEY, batch_id INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS duplicate_ids(
    dest TEXT NOT NULL,
    n INTEGER NOT NULL,
    dup_id TEXT NOT NULL,
    PRIMARY KEY(dest, n)
) WITHOUT ROWID;
"""

Fsync = Literal["always", "batch"]
# The writer copies the write-ahead log into the database (a checkpoint) itself once about
# this many bytes were logged, *after* reporting the completions of the batch that logged
# them, so that no reply waits for it (SQLite's automatic checkpoint runs inside the commit).
CHECKPOINT_BYTES = 4 * 1024 * 1024
# What one commit adds to the log besides its rows: whole pages, at least a table page and an
# index page (a 4 KiB page and its 24-byte frame header each). Without counting them, a
# producer of small messages, one commit each, grew the log to tens of MiB before the writer
# checkpointed, and an fsync of a growing file costs about twice one of a file overwritten in
# place (here a one-row commit took 0.30 ms against 0.13 ms; benchmarks/bench_persistent.py,
# 1 producer: 2,773 -> 3,429 msg/s with this estimate).
COMMIT_FRAMES = 2
# SQLite's own checkpoint stays on as a bound on the log (in pages) should the estimate miss.
AUTO_CHECKPOINT_PAGES = 16_384
# With owner commits, the most operations and message bytes the submitting thread writes
# itself (a send or an acknowledgement is one or two operations; a transaction's commit of
# many messages, or a large message, goes to the writer).
INLINE_OPS = 16
INLINE_BYTES = 64 * 1024
# The room kept for a full disk (see "A full disk" in the module doc): a file of this many
# bytes in the data dir, 1/32 of the volume's size within these bounds, deleted when the
# volume fills so that acknowledgements, purges and the checkpoints that free space can
# still write.
RESERVE_FILE = "RESERVE"
RESERVE_MAX = 16 * 1024 * 1024
RESERVE_MIN = 256 * 1024
RESERVE_SHARE = 32
# The most steps of an incremental vacuum after one commit (see SqliteStore._vacuum).
VACUUM_STEPS = 16
# The operations that make the store grow: refused while the volume is full.
_GROWS = (AddMessage, AddStaged)


class SqliteStore(WriterFront):
    """A durable store in ``data_dir`` (created if missing).

    Args:
        data_dir: the directory that holds ``ternmq.db`` and ``LOCK``.
        fsync: ``"always"`` (durable before every receipt) or ``"batch"`` (see module doc).
        batch_interval: with ``fsync="batch"``, the longest time between two fsyncs, seconds.
        batch_scheduling: run the writer thread under ``SCHED_BATCH`` where the system has
            it (Linux; see the module doc), for a process whose broker thread is busy.
        reserve_bytes: the room kept for a full disk (see the module doc); None: 1/32 of
            the volume, between ``RESERVE_MIN`` and ``RESERVE_MAX``; 0: none.

    Raises:
        JMSException: another process holds the directory, or it cannot be opened.
    """

    synchronous = False
    # What a failed transaction raises (Backend.write_errors): reported to its batches.
    write_errors: tuple[type[BaseException], ...] = (sqlite3.Error, OSError)

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        fsync: Fsync = "always",
        batch_interval: float = 0.05,
        batch_scheduling: bool = False,
        reserve_bytes: int | None = None,
    ) -> None:
        if fsync not in ("always", "batch"):
            raise JMSException(f"fsync must be 'always' or 'batch', not {fsync!r}")
        self.path = pathlib.Path(data_dir)
        self.fsync = fsync
        self.batch_interval = batch_interval
        self.batch_scheduling = batch_scheduling
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            self._lock_fd = os.open(self.path / "LOCK", os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise JMSException(
                f"cannot open data dir {self.path}: {exc}", linked_exception=exc
            ) from exc
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(self._lock_fd)
            raise JMSException(
                f"data dir {self.path} is in use by another ternmq process; stop it or choose "
                "another data_dir",
                linked_exception=exc,
            ) from exc
        os.ftruncate(self._lock_fd, 0)
        os.write(self._lock_fd, f"{os.getpid()}\n".encode())
        self._logged = 0  # bytes written to the log since the last checkpoint (an estimate)
        self._commit_bytes = 0  # log bytes of a commit besides its rows (set below)
        try:
            self._db = sqlite3.connect(
                self.path / "ternmq.db",
                isolation_level=None,
                check_same_thread=False,
                cached_statements=STATEMENT_CACHE,
            )
            # Only a new database takes it (before its first table): free pages can then be
            # given back to a full volume (see "A full disk" in the module doc).
            self._db.execute("PRAGMA auto_vacuum=INCREMENTAL")
            # Many builds (Debian's) delete securely by default: every page a removed message
            # freed is zeroed through the log, so an acknowledgement wrote as much as its
            # send, and on a full volume it could not be written at all. FAST zeroes only
            # what it rewrites anyway; freed pages go back to the volume (incremental vacuum)
            # or are reused.
            self._db.execute("PRAGMA secure_delete=FAST")
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(f"PRAGMA wal_autocheckpoint={AUTO_CHECKPOINT_PAGES}")
            self._reader = sqlite3.connect(
                self.path / "ternmq.db", isolation_level=None, check_same_thread=False
            )
            self._read_lock = threading.Lock()
            self._db.execute(f"PRAGMA synchronous={'FULL' if fsync == 'always' else 'NORMAL'}")
            self._db.executescript(_SCHEMA)
            page = self._db.execute("PRAGMA page_size").fetchone()[0]
            self._commit_bytes = COMMIT_FRAMES * (page + 24)
            row = self._db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
            if row is None:
                self._db.execute("INSERT INTO meta VALUES('schema', ?)", (SCHEMA_VERSION,))
            elif row[0] in _UPGRADABLE:
                self._upgrade()
            elif row[0] != SCHEMA_VERSION:
                raise JMSException(
                    f"data dir {self.path} has store schema {row[0]}; this ternmq "
                    f"reads schema {SCHEMA_VERSION}"
                )
        except BaseException as exc:
            # Leave nothing open: the lock above all, or this process could not open the
            # directory again ("in use") until it exits.
            for conn in (getattr(self, "_db", None), getattr(self, "_reader", None)):
                if conn is not None:
                    conn.close()
            os.close(self._lock_fd)
            if isinstance(exc, sqlite3.Error):
                raise JMSException(
                    f"cannot open the store in {self.path}: {exc}", linked_exception=exc
                ) from exc
            raise
        self._last_sync = time.monotonic()
        self._vacuums = self._db.execute("PRAGMA auto_vacuum").fetchone()[0] == 2
        if reserve_bytes is None:
            st = os.statvfs(self.path)
            share = st.f_blocks * st.f_frsize // RESERVE_SHARE
            reserve_bytes = min(RESERVE_MAX, max(RESERVE_MIN, share))
        self.reserve_bytes = reserve_bytes
        # What a checkpoint adds to the database (new pages: sends, whose log the writer's
        # estimate counts well) stays within the reserve: the writer checkpoints at a quarter
        # of it. On a small volume SQLite's own bound is half the reserve (the estimate can
        # miss an acknowledgement's pages threefold); on a large one it stays where it was,
        # where a checkpoint inside a commit is rare.
        room = max(reserve_bytes, RESERVE_MIN)
        self._checkpoint_bytes = min(CHECKPOINT_BYTES, room // 4)
        if reserve_bytes < RESERVE_MAX:
            pages = room // 2 // (self._commit_bytes // COMMIT_FRAMES)
            self._db.execute(f"PRAGMA wal_autocheckpoint={min(pages, AUTO_CHECKPOINT_PAGES)}")
        #: Full mode: the volume filled, and batches that add messages are refused.
        self.full = False
        if reserve_bytes and not self._make_reserve():
            self.full = True
            log.warning(
                "store volume of %s has no room for its reserve of %d bytes: new messages are "
                "refused until space is freed",
                self.path,
                reserve_bytes,
            )
        self.commits = 0  # transactions written (one fsync each with fsync="always")
        # The queue, the writer thread, owner commits and completions (store/_writer.py);
        # its lock guards the connection (the writer thread, owner commits, write()).
        self._attach_writer(
            GroupCommitWriter(
                self,
                inline_ops=INLINE_OPS,
                inline_bytes=INLINE_BYTES,
                batch_scheduling=batch_scheduling,
            )
        )
        self._db_lock = self._writer.lock

    def _upgrade(self) -> None:
        """Bring an older schema to this one, in one transaction."""
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            old = db.execute(
                "SELECT 1 FROM sqlite_master WHERE type='table' AND name='staged'"
            ).fetchone()
            if old is not None:  # schema 2: one row per staged message
                chunks: dict[str, AddStaged] = {}
                for txid, sink, batch, dest, data, pers, prio, exp, dtime, gid, gseq in db.execute(
                    "SELECT txid, sink_id, batch_id, destination, data, persistent, priority, "
                    "expiration, delivery_time, group_id, group_seq FROM staged ORDER BY txid, n"
                ):
                    op = chunks.get(txid)
                    if op is None:
                        op = chunks[txid] = AddStaged(txid, sink, batch, 0, [])
                    op.messages.append(
                        StagedSend(
                            destination=dest,
                            message=bytes(data),
                            persistent=bool(pers),
                            priority=prio,
                            expiration=exp,
                            delivery_time=dtime,
                            group_id=gid,
                            group_seq=gseq,
                        )
                    )
                for op in chunks.values():
                    self._add_staged(op)
                db.execute("DROP TABLE staged")
            db.execute("UPDATE meta SET value=? WHERE key='schema'", (SCHEMA_VERSION,))
            db.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
            raise

    # ---- reading -------------------------------------------------------------------------
    def load(self, with_data: bool = True) -> Recovered:
        """Everything that survived, messages in sequence order per destination; without
        bodies (read later with :meth:`read_message`) if ``with_data`` is False, so that a
        restart with a deep queue does not pull it all into memory."""
        out = Recovered()
        for dest, client_id, name, topic, selector, no_local, shared in self._db.execute(
            "SELECT dest, client_id, name, topic, selector, no_local, shared FROM subscriptions"
        ):
            out.subscriptions.append(
                AddSubscription(
                    dest, client_id, name, topic, selector, bool(no_local), bool(shared)
                )
            )
        body = "data" if with_data else "NULL"
        for dest, seq, prio, exp, dtime, gid, count, data, size in self._db.execute(
            "SELECT dest, seq, priority, expiration, delivery_time, group_id, delivery_count, "
            f"{body}, length(data) FROM messages ORDER BY dest, seq"
        ):
            out.messages.setdefault(dest, []).append(
                StoredMessage(
                    seq, None if data is None else bytes(data), prio, exp, dtime, gid, count, size
                )
            )
        out.sequences = dict(self._db.execute("SELECT dest, reserved FROM sequences"))
        out.sinks = dict(self._db.execute("SELECT sink_id, batch_id FROM sinks"))
        for dest, n, dup_id in self._db.execute(
            "SELECT dest, n, dup_id FROM duplicate_ids ORDER BY dest, n"
        ):
            out.duplicate_ids.setdefault(dest, []).append((n, dup_id))
        out.staged = list(
            staged_records(
                AddStaged(txid, sink, batch, first, _STAGED_DECODER.decode(data))
                for txid, first, sink, batch, data in self._db.execute(
                    "SELECT txid, first, sink_id, batch_id, messages FROM staged_chunks "
                    "ORDER BY txid, first"
                )
            )
        )
        return out

    def read_message(self, dest: str, seq: int) -> bytes | None:
        """The stored bytes of one message (for paging), or None.

        Reads go through their own connection: in WAL mode a reader never waits for the
        writer's commit (and its fsync)."""
        with self._read_lock:
            row = self._reader.execute(
                "SELECT data FROM messages WHERE dest=? AND seq=?", (dest, seq)
            ).fetchone()
        return None if row is None else bytes(row[0])

    # ---- writing: the Store interface, through the group-commit writer --------------------
    @property
    def inline_commits(self) -> int:
        """Commits made by :meth:`commit_due` on the submitting thread (owner commits)."""
        return self._writer.inline_commits

    def write(self, ops: Sequence[Op]) -> None:
        """Apply one batch now, on the calling thread (recovery and tests).

        Raises:
            sqlite3.Error: the database could not be written.
        """
        with self._db_lock:
            self.apply([ops])

    def set_owner_commits(self, due: Callable[[], None] | None) -> bool:
        """Let the thread that submits batches write small ones itself while the writer is
        idle (see the module doc and ``GroupCommitWriter.set_owner_commits``): ``due()`` is
        called on the submitting thread when a batch waits for an idle writer, once until
        :meth:`commit_due` runs. ``None`` turns it off. Returns True (this store has owner
        commits)."""
        return self._writer.set_owner_commits(due)

    def commit_due(self, here: bool = True) -> None:
        """Write the queued batches on this thread if the writer is idle and they are small
        (``INLINE_OPS``, ``INLINE_BYTES``), reporting them to the completion callback from
        here; larger ones, or all of them with ``here=False``, are handed to the writer
        (``GroupCommitWriter.commit_due``). A failed write is reported to the completion,
        not raised."""
        self._writer.commit_due(here)

    def close(self) -> None:
        """Write what is queued, stop the writer, close the database, release the lock.
        A second call does nothing.

        Raises:
            sqlite3.Error, OSError: the queued batches could not be written.
        """
        if self._writer.close():
            with contextlib.suppress(OSError):
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
                os.close(self._lock_fd)

    # ---- the group-commit writer's backend (store/_writer.py: Backend) --------------------
    def checkpoint_due(self) -> bool:
        """Whether about ``CHECKPOINT_BYTES`` (or half the reserve, the smaller) were logged
        since the last checkpoint."""
        return self._logged >= self._checkpoint_bytes

    def checkpoint(self) -> None:
        """Copy the log into the database as far as readers allow. Caller holds ``_db_lock``
        (the writer thread, after reporting completions). A failure is logged: the log
        stays, and SQLite's own checkpoint still bounds it."""
        self._logged = 0
        try:
            self._db.execute("PRAGMA wal_checkpoint(PASSIVE)")
        except sqlite3.Error as exc:
            log.warning("store checkpoint failed: %s", exc)
            if _is_full(exc) and not self.full:
                self._enter_full(exc)
            return
        if self._vacuums and not self.full and self._low():
            self._vacuum()  # a volume near full gets the pages removals freed

    def release(self) -> None:
        """Sync the log (``fsync="batch"``) and close both connections. Caller holds
        ``_db_lock``; the writer calls it last, from :meth:`close`."""
        if self.fsync == "batch":
            self._sync_log()
        self._db.close()
        with self._read_lock:
            self._reader.close()

    def apply(self, batches: list[Sequence[Op]]) -> None:
        """One transaction for all ``batches`` (the group commit). Caller holds ``_db_lock``
        (the writer, an owner commit, or :meth:`write`). On a full volume, see "A full
        disk" in the module doc.

        Raises:
            StoreFullError: the volume is full and a batch adds messages (nothing written).
            sqlite3.Error, OSError: the transaction failed; nothing of it was written.
        """
        if self.full and _grows(batches):
            raise StoreFullError(str(self.path))
        try:
            self._apply(batches)
        except (sqlite3.Error, OSError) as exc:
            if not _is_full(exc):
                raise
            if not self.full:
                self._enter_full(exc)
            if _grows(batches):
                raise StoreFullError(str(self.path)) from exc
            self._apply(batches)  # in the room the reserve and the checkpoint made
        if self.full:
            self._reclaim()

    def _enter_full(self, exc: BaseException) -> None:
        """The volume filled: refuse new messages, free the reserve, empty the log into the
        database. Caller holds ``_db_lock``."""
        self.full = True
        log.warning(
            "store volume of %s is full (%s): new messages are refused until space is freed; "
            "receiving, acknowledging and purging still work",
            self.path,
            exc,
        )
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path / RESERVE_FILE)
        self._truncate_log()

    def _reclaim(self) -> None:
        """Full mode, after a commit: give free pages back to the volume, truncate the log,
        and leave full mode once the reserve can be made again. Caller holds ``_db_lock``."""
        self._vacuum()
        self._truncate_log()  # the log of the commit, when there was nothing to vacuum
        if self._make_reserve():
            self.full = False
            log.warning("store volume of %s has room again: new messages are accepted", self.path)

    def _low(self) -> bool:
        """Whether the volume has less room than the reserve twice over."""
        return self._low_for(self.reserve_bytes)

    def _low_for(self, size: int) -> bool:
        """Whether the volume has less room than ``size`` twice over."""
        st = os.statvfs(self.path)
        return st.f_bavail * st.f_frsize < 2 * size

    def _vacuum(self) -> None:
        """Give the database's free pages back to the volume (a database this store made:
        ``auto_vacuum=INCREMENTAL``), in steps that each fit in a quarter of the reserve:
        a step moves pages from the end of the file into free ones through the log, and
        the checkpoint after it copies them and shortens the file."""
        if not self._vacuums:
            return
        step = max(1, self.reserve_bytes // 4 // (self._commit_bytes // COMMIT_FRAMES))
        db = self._db
        try:
            for _ in range(VACUUM_STEPS):
                if not db.execute("PRAGMA freelist_count").fetchone()[0]:
                    break
                db.execute(f"PRAGMA incremental_vacuum({step})").fetchall()
                self._truncate_log()
        except sqlite3.Error as exc:
            log.debug("store incremental vacuum failed: %s", exc)

    def _truncate_log(self) -> None:
        """Copy the log into the database and truncate it (as far as readers allow)."""
        self._logged = 0
        try:
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        except sqlite3.Error as exc:
            log.warning("store checkpoint on a full volume failed: %s", exc)

    def _make_reserve(self) -> bool:
        """Make sure the reserve file holds ``reserve_bytes`` of allocated blocks, if the
        volume has room for it twice over (once: the reserve; once more: messages).
        Returns whether the reserve is in place."""
        path = self.path / RESERVE_FILE
        size = self.reserve_bytes
        if not size:
            return not self._low_for(RESERVE_MIN)  # no reserve: room for as much as the least
        try:
            if path.stat().st_size >= size:
                return True
        except FileNotFoundError:
            pass
        if self._low():
            return False
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
            try:
                try:
                    os.posix_fallocate(fd, 0, size)
                except OSError as exc:
                    if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
                        raise
                    os.pwrite(fd, bytes(size), 0)  # a filesystem without fallocate
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            log.debug("store reserve not made: %s", exc)
            with contextlib.suppress(OSError):
                os.unlink(path)
            return False
        return True

    def _apply(self, batches: list[Sequence[Op]]) -> None:
        """The transaction of :meth:`apply`: the steps of ``store/_plan.py``'s reduction of
        the batches (the same as every transactional store's), as SQLite statements.

        A lone send (one batch of one ``AddMessage``, or of one ``AddMessage`` and the
        delivery count of that message, dispatched at once: what a synchronous producer's
        owner commit writes) is the one statement the plan would make, written without the
        plan: 5-8 us less Python around a one-row commit (docs/performance.md)."""
        if len(batches) == 1 and self._lone_send(batches[0]):
            return
        p = plan(batches)
        changes = self._db.total_changes
        with _Transaction(self._db) as db:  # statements run when the block ends
            for step in p.steps:
                if isinstance(step, Rows):
                    self._write_rows(step, db)
                elif isinstance(step, AddStaged):
                    self._add_staged(step, db)
                elif isinstance(step, AddSubscription):
                    db.execute(
                        "INSERT OR REPLACE INTO subscriptions VALUES(?,?,?,?,?,?,?)",
                        (
                            step.dest,
                            step.client_id,
                            step.name,
                            step.topic,
                            step.selector,
                            int(step.no_local),
                            int(step.shared),
                        ),
                    )
                elif isinstance(step, RemoveSubscription):
                    db.execute("DELETE FROM subscriptions WHERE dest=?", (step.dest,))
                    db.execute("DELETE FROM messages WHERE dest=?", (step.dest,))
                elif isinstance(step, RemoveDestination):
                    db.execute("DELETE FROM messages WHERE dest=?", (step.dest,))
                elif isinstance(step, RemoveRange):
                    db.execute(
                        "DELETE FROM messages WHERE dest=? AND seq BETWEEN ? AND ?",
                        (step.dest, step.first, step.last),
                    )
                elif isinstance(step, ReserveSeq):
                    db.execute(
                        "INSERT OR REPLACE INTO sequences VALUES(?,?)", (step.dest, step.upto)
                    )
                elif isinstance(step, RemoveStaged):
                    db.execute("DELETE FROM staged_chunks WHERE txid=?", (step.txid,))
                elif isinstance(step, SetSinkBatch):
                    db.execute(
                        "INSERT OR REPLACE INTO sinks VALUES(?,?)", (step.sink_id, step.batch_id)
                    )
            if p.counts:
                db.executemany(
                    "UPDATE messages SET delivery_count=? WHERE dest=? AND seq=?",
                    [(n, d, s) for (d, s), n in p.counts.items()],
                )
            if p.dup_ids:
                self._add_duplicate_ids(p.dup_ids, db)
        # bodies, row overhead, pages
        rows = self._db.total_changes - changes
        self._committed(p.body_bytes + rows * _ROW_BYTES + self._commit_bytes)

    def _lone_send(self, ops: Sequence[Op]) -> bool:
        """Write ``ops`` as one insert if they are a lone send (see :meth:`_apply`);
        False (nothing written) if they are anything else."""
        n = len(ops)
        if not 0 < n <= 2:
            return False
        op = ops[0]
        if type(op) is not AddMessage:
            return False
        if n == 1:
            self._db.execute(_INSERT_ONE, msgspec.structs.astuple(op))
        else:
            count = ops[1]
            if type(count) is not SetDeliveryCount or (count.seq, count.dest) != (op.seq, op.dest):
                return False
            self._db.execute(_INSERT_COUNTED_ONE, _counted_row(op, count.count))
        self._committed(len(op.data) + _ROW_BYTES + self._commit_bytes)
        return True

    def _committed(self, logged: int) -> None:
        """A transaction of about ``logged`` bytes of log is written: count it, and sync the
        log if ``fsync="batch"`` and ``batch_interval`` has passed."""
        self.commits += 1
        self._logged += logged
        if self.fsync == "batch":
            now = time.monotonic()
            if now - self._last_sync >= self.batch_interval:
                self._sync_log()
                self._last_sync = now

    def _add_duplicate_ids(self, ops: list[AddDuplicateId], db: _Transaction) -> None:
        """Remember the ids and forget those evicted (PSF-09), in the group commit's
        transaction."""
        db.executemany(
            "INSERT OR REPLACE INTO duplicate_ids VALUES(?,?,?)",
            [(op.dest, op.n, op.dup_id) for op in ops],
        )
        db.executemany(
            "DELETE FROM duplicate_ids WHERE dest=? AND n<=?", list(evictions(ops).items())
        )

    def _add_staged(
        self, op: AddStaged, db: sqlite3.Connection | _Transaction | None = None
    ) -> None:
        data = _STAGED_ENCODER.encode(op.messages)
        self._logged += len(data)
        (self._db if db is None else db).execute(
            "INSERT OR REPLACE INTO staged_chunks VALUES(?,?,?,?,?)",
            (op.txid, op.first, op.sink_id, op.batch_id, data),
        )

    def _write_rows(self, run: Rows, db: _Transaction) -> None:
        """A run of message writes: the deletes (keys of earlier writes, so the order among
        them does not matter), then the inserts with their delivery counts."""
        if run.deletes:
            db.rows(_DELETE_ROWS, "(?,?)", [(d.dest, d.seq) for d in run.deletes])
        if not run.inserts:
            return
        if any(run.counts):
            rows: list[tuple[object, ...]] = [
                _counted_row(op, count) for op, count in zip(run.inserts, run.counts, strict=True)
            ]
            db.rows(_INSERT_COUNTED_ROWS + " {rows}", _ROW_COUNTED, rows)
        else:  # the fields in AddMessage's order, made in C
            db.rows(
                _INSERT_ROWS + " {rows}",
                _ROW_ADDED,
                list(map(msgspec.structs.astuple, run.inserts)),
            )

    def _sync_log(self) -> None:
        wal = self.path / "ternmq.db-wal"
        with contextlib.suppress(OSError):
            fd = os.open(wal, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


def _counted_row(op: AddMessage, count: int) -> tuple[object, ...]:
    """The row of ``op`` in the table's column order, with delivery count ``count``."""
    return (
        op.dest,
        op.seq,
        op.priority,
        op.expiration,
        op.delivery_time,
        op.group_id,
        count,
        op.data,
    )


def _grows(batches: list[Sequence[Op]]) -> bool:
    """Whether any batch adds a message (refused on a full volume)."""
    return any(isinstance(op, _GROWS) for ops in batches for op in ops)


def _is_full(exc: BaseException) -> bool:
    """Whether a write failed because the volume (or the process's file size limit) is
    full."""
    if isinstance(exc, sqlite3.Error):
        return getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL
    return isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


@functools.cache
def _statement(sql: str, row: str, k: int) -> str:
    """``sql`` with ``k`` copies of ``row`` for its ``{rows}``."""
    return sql.format(rows=",".join([row] * k))


class _Transaction:
    """The statements of one write: recorded in the ``with`` block, run in one transaction
    when it ends without an exception.

    A write of a single statement (a group commit of sends only) runs without BEGIN and
    COMMIT, as SQLite's autocommit transaction: as durable, and two steps fewer, each a wait
    for the GIL on the writer thread (see MAX_ROWS).

    Raises (leaving the block):
        sqlite3.Error: the database could not be written (nothing of it is).
    """

    __slots__ = ("db", "items")

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        # (sql, parameters, many): ``many`` runs the statement once per parameter tuple
        self.items: list[tuple[str, Any, bool]] = []

    def __enter__(self) -> _Transaction:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        if exc_type is None:
            self._run()

    def execute(self, sql: str, parameters: tuple[object, ...] = ()) -> None:
        self.items.append((sql, parameters, False))

    def executemany(self, sql: str, rows: Iterable[tuple[object, ...]]) -> None:
        self.items.append((sql, rows, True))

    def rows(self, sql: str, row: str, rows: list[tuple[object, ...]]) -> None:
        """``sql`` (whose ``{rows}`` takes a list of ``row`` placeholders) for ``rows``, in
        statements of MAX_ROWS rows; the last one, if longer than ROWS_STEP, repeats its last
        row up to a multiple of ROWS_STEP (a row inserted or deleted twice in one statement
        is written once), so that a few statement texts serve every count, all cached."""
        chain = itertools.chain.from_iterable
        for i in range(0, len(rows), MAX_ROWS):
            chunk = rows[i : i + MAX_ROWS]
            k = -(-len(chunk) // ROWS_STEP) * ROWS_STEP if len(chunk) > ROWS_STEP else len(chunk)
            if k > len(chunk):
                chunk = chunk + [chunk[-1]] * (k - len(chunk))
            self.items.append((_statement(sql, row, k), tuple(chain(chunk)), False))

    def _run(self) -> None:
        db, items = self.db, self.items
        if not items:
            return
        if len(items) == 1 and not items[0][2]:
            db.execute(items[0][0], items[0][1])
            return
        db.execute("BEGIN IMMEDIATE")
        try:
            for sql, parameters, many in items:
                if many:
                    db.executemany(sql, parameters)
                else:
                    db.execute(sql, parameters)
            db.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
            raise
