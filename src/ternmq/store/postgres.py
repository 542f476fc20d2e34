"""The PostgreSQL store: the broker's durable state in a database server, group commit.

Theory of operation
-------------------
What lives where: this module is PostgreSQL's part: the schema and its version, the
statements of one transaction (:meth:`PostgresStore.apply`), recovery
(:meth:`PostgresStore.load`) and the connections. What one group commit writes is reduced by
``store/_plan.py`` (the same for every transactional store); the queue, the writer thread,
group commit, owner commits and completion reporting are ``store/_writer.py``'s
``GroupCommitWriter``, whose ``Backend`` this store is, exactly as ``store/sqlite.py``.

Durability: the writer takes every batch queued at that moment and writes them in *one*
transaction; its ``COMMIT`` returns once PostgreSQL has flushed its write-ahead log
(``synchronous_commit = on``, the server's default, with ``fsync="always"``), and only then
are the batches' completions reported, hence their receipts sent: a persistent send returns
once its transaction committed, as with SQLite. ``fsync="batch"`` sets ``synchronous_commit
= off`` for the store's session: faster; a crash of the *database server* (not of the
broker) can lose the commits of its last ``wal_writer_delay`` (three times that at most).

Every commit runs on the writer thread (no owner commits, :meth:`PostgresStore.set_owner_commits`):
a network round trip, let alone a reconnect, must not hold the server's event loop.

Statements: runs of message inserts and deletes go to the server as one statement each,
their rows as arrays (``unnest``), so a commit of a thousand sends is a handful of
statements; a transaction of more than one statement is sent in pipeline mode (one round
trip for all of them, then ``COMMIT``); one of a single statement runs as its own implicit
transaction.

Schema: tables prefixed ``ternmq_`` (the database may hold others), created on first start
in one transaction under an advisory lock (two servers starting together create it once),
and a ``ternmq_schema_version`` table holding ``SCHEMA_VERSION``; a database of another
version is refused.

The database going away: a failed statement or commit for a lost connection (PostgreSQL
stopped, restarted, the network cut) fails the batches of that commit with
:class:`StoreUnavailable`, a ``JMSException`` whose text names the server and the cause
(their requests get it: persistent sends and acknowledgements are refused, nothing of that
commit was written, nothing acknowledged before is touched). The connection is dropped; the
next commit reconnects, at most once every ``RECONNECT_INTERVAL`` seconds (meanwhile commits
fail at once with the last cause), and work resumes once the server is back. A commit whose
connection broke during ``COMMIT`` itself is in doubt: reported as failed, it may have been
written (a resend with a duplicate id is then dropped, PSF-09). Start-up against a server
that is unreachable or refuses the login fails with a ``JMSException`` naming the host and
the cause; the password is never shown (:func:`describe`).

Fencing (live/backup, ``store/pg_live.py``): a store opened with a :class:`Fence` (the live
broker's) adds one statement to every transaction: it rewrites the single row of
``ternmq_live`` and fails the whole transaction (a check constraint) unless that row still
holds the live's epoch *and* the live's lock session still holds the live lock. A backup
taking over bumps the epoch in its own transaction, which waits for any commit of the old
live holding the row and makes every later one fail: two lives never both commit. A
transaction failed so raises :class:`Fenced` and calls the fence's ``on_breach``.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import msgspec
import psycopg
from psycopg import conninfo

from ternmq.errors import JMSException
from ternmq.protocol.commands import StagedSend
from ternmq.store._base import (
    AddStaged,
    AddSubscription,
    Op,
    Recovered,
    RemoveDestination,
    RemoveRange,
    RemoveStaged,
    RemoveSubscription,
    ReserveSeq,
    SetSinkBatch,
    StoredMessage,
    staged_records,
)
from ternmq.store._plan import Rows, evictions, plan
from ternmq.store._writer import GroupCommitWriter, WriterFront

__all__ = [
    "SCHEMA_VERSION",
    "Fence",
    "Fenced",
    "PostgresStore",
    "StoreUnavailable",
    "create_schema",
    "describe",
]

SCHEMA_VERSION = 1
# Seconds between two attempts to reconnect a lost connection: commits in between fail at
# once with the last cause instead of each waiting for a connect timeout.
RECONNECT_INTERVAL = 0.5
# Connection settings a URL may override: a bounded connect, and keepalives and a TCP user
# timeout (ms) so that a connection cut by the network (no reset) is found dead in 10 to
# 25 s, not hours.
CONNECT_DEFAULTS: dict[str, str] = {
    "connect_timeout": "5",
    "keepalives": "1",
    "keepalives_idle": "10",
    "keepalives_interval": "5",
    "keepalives_count": "3",
    "tcp_user_timeout": "10000",
    "application_name": "ternmq",
}
_SCHEMA_LOCK = 0x7465726E6D71  # advisory lock key held while the schema is created ("ternmq")
LIVE_LOCK = _SCHEMA_LOCK + 1  # the session advisory lock the live broker holds (pg_live.py)
_FENCE_CONSTRAINT = "ternmq_live_fence"
_STAGED_ENCODER = msgspec.msgpack.Encoder()
_STAGED_DECODER = msgspec.msgpack.Decoder(list[StagedSend])

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS ternmq_schema_version(version INTEGER NOT NULL)",
    """CREATE TABLE IF NOT EXISTS ternmq_messages(
        dest TEXT NOT NULL,
        seq BIGINT NOT NULL,
        priority INTEGER NOT NULL,
        expiration BIGINT NOT NULL,
        delivery_time BIGINT NOT NULL,
        group_id TEXT,
        delivery_count INTEGER NOT NULL DEFAULT 0,
        data BYTEA NOT NULL,
        PRIMARY KEY(dest, seq))""",
    """CREATE TABLE IF NOT EXISTS ternmq_subscriptions(
        dest TEXT PRIMARY KEY,
        client_id TEXT,
        name TEXT NOT NULL,
        topic TEXT NOT NULL,
        selector TEXT,
        no_local BOOLEAN NOT NULL,
        shared BOOLEAN NOT NULL)""",
    "CREATE TABLE IF NOT EXISTS ternmq_sequences(dest TEXT PRIMARY KEY, reserved BIGINT NOT NULL)",
    """CREATE TABLE IF NOT EXISTS ternmq_staged_chunks(
        txid TEXT NOT NULL,
        first INTEGER NOT NULL,
        sink_id TEXT NOT NULL,
        batch_id BIGINT NOT NULL,
        messages BYTEA NOT NULL,
        PRIMARY KEY(txid, first))""",
    "CREATE TABLE IF NOT EXISTS ternmq_sinks(sink_id TEXT PRIMARY KEY, batch_id BIGINT NOT NULL)",
    """CREATE TABLE IF NOT EXISTS ternmq_duplicate_ids(
        dest TEXT NOT NULL,
        n BIGINT NOT NULL,
        dup_id TEXT NOT NULL,
        PRIMARY KEY(dest, n))""",
    f"""CREATE TABLE IF NOT EXISTS ternmq_live(
        id INTEGER PRIMARY KEY,
        epoch BIGINT NOT NULL CONSTRAINT {_FENCE_CONSTRAINT} CHECK (epoch > 0))""",
)
_INSERT_MESSAGES = (
    "INSERT INTO ternmq_messages(dest, seq, priority, expiration, delivery_time, group_id, "
    "delivery_count, data) SELECT * FROM unnest(%s::text[], %s::bigint[], %s::int[], "
    "%s::bigint[], %s::bigint[], %s::text[], %s::int[], %s::bytea[]) "
    "ON CONFLICT (dest, seq) DO UPDATE SET priority = EXCLUDED.priority, "
    "expiration = EXCLUDED.expiration, delivery_time = EXCLUDED.delivery_time, "
    "group_id = EXCLUDED.group_id, delivery_count = EXCLUDED.delivery_count, "
    "data = EXCLUDED.data"
)
_DELETE_MESSAGES = (
    "DELETE FROM ternmq_messages m USING unnest(%s::text[], %s::bigint[]) AS v(dest, seq) "
    "WHERE m.dest = v.dest AND m.seq = v.seq"
)
_UPDATE_COUNTS = (
    "UPDATE ternmq_messages m SET delivery_count = v.n "
    "FROM unnest(%s::text[], %s::bigint[], %s::int[]) AS v(dest, seq, n) "
    "WHERE m.dest = v.dest AND m.seq = v.seq"
)
_INSERT_DUP_IDS = (
    "INSERT INTO ternmq_duplicate_ids(dest, n, dup_id) "
    "SELECT * FROM unnest(%s::text[], %s::bigint[], %s::text[]) "
    "ON CONFLICT (dest, n) DO UPDATE SET dup_id = EXCLUDED.dup_id"
)
_EVICT_DUP_IDS = (
    "DELETE FROM ternmq_duplicate_ids d USING unnest(%s::text[], %s::bigint[]) AS v(dest, upto) "
    "WHERE d.dest = v.dest AND d.n <= v.upto"
)

# Every fenced transaction's first statement: keeps the epoch if it is still ours and our lock
# session still holds the live lock (pg_locks: a bigint key is classid:objid, objsubid 1),
# else writes 0, which the check constraint refuses (the transaction fails).
_FENCE = (
    "UPDATE ternmq_live SET epoch = CASE WHEN epoch = %s AND EXISTS (SELECT 1 FROM pg_locks "
    "WHERE locktype = 'advisory' AND pid = %s AND granted AND mode = 'ExclusiveLock' "
    f"AND objsubid = 1 AND classid = {LIVE_LOCK >> 32} AND objid = {LIVE_LOCK & 0xFFFFFFFF}) "
    "THEN epoch ELSE 0 END WHERE id = 1"
)

Statement = tuple[str, tuple[Any, ...]]


@dataclass
class Fence:
    """What a live broker's store checks in every transaction (see the module doc).

    Attributes:
        epoch: the live's epoch (``ternmq_live.epoch`` as its takeover left it).
        lock_pid: the backend pid of the session holding the live lock (a live that took
            the lock again after the database came back updates it).
        on_breach: called (on the writer thread) with the reason when a transaction was
            refused because the live lock or the epoch is not (or no longer) held.
    """

    epoch: int
    lock_pid: int
    on_breach: Callable[[str], None]


class Fenced(JMSException):
    """This broker is no longer live (its lock session is gone, or another broker took
    over): nothing more is written; clients go to the live broker (``failover:`` URLs)."""


class StoreUnavailable(JMSException):
    """The PostgreSQL store cannot be reached (or its connection was lost): persistent work
    is refused until it is back; the broker reconnects on its own."""


def create_schema(db: psycopg.Connection[Any], where: str) -> None:
    """Create the tables on ``db`` if missing and check the version, in one transaction
    (``where`` names the database in the error).

    Raises:
        JMSException: the database holds a ternmq schema of another version.
        psycopg.Error: the statements failed.
    """
    with db.transaction():
        db.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
        for sql in _SCHEMA:
            db.execute(sql)
        row = db.execute("SELECT version FROM ternmq_schema_version").fetchone()
        if row is None:
            db.execute("INSERT INTO ternmq_schema_version VALUES(%s)", (SCHEMA_VERSION,))
        elif row[0] != SCHEMA_VERSION:
            raise JMSException(
                f"the PostgreSQL store at {where} has ternmq schema {row[0]}; this "
                f"ternmq reads schema {SCHEMA_VERSION}"
            )


def describe(url: str) -> str:
    """``host:port/dbname`` of a PostgreSQL URL or conninfo string, without user or password
    (for messages and logs). Returns ``url`` unchanged if it cannot be parsed."""
    try:
        params = conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "a PostgreSQL database (unparsable URL)"
    host = str(params.get("host") or params.get("hostaddr") or "localhost")
    return f"{host}:{params.get('port') or 5432}/{params.get('dbname') or params.get('user') or ''}"


class PostgresStore(WriterFront):
    """A durable store in a PostgreSQL database (schema created on first start).

    Args:
        url: ``postgresql://USER:PASSWORD@HOST:PORT/DB`` (any libpq URL or conninfo string;
            its options override ``CONNECT_DEFAULTS``).
        fsync: ``"always"`` (a commit is flushed before its batches complete) or ``"batch"``
            (``synchronous_commit = off``; see the module doc).
        batch_scheduling: run the writer thread under ``SCHED_BATCH`` (``ternmq._sched``).
        clock: monotonic seconds (spaces reconnect attempts; tests inject one).
        fence: the live broker's fence (``store/pg_live.py``): every transaction checks it.

    Raises:
        JMSException: the database cannot be reached or refuses the login (the message names
            the host and the cause), or holds a ternmq schema of another version.
    """

    synchronous = False
    # What a failed transaction raises (Backend.write_errors): reported to its batches.
    write_errors: tuple[type[BaseException], ...] = (StoreUnavailable, Fenced, psycopg.Error)

    def __init__(
        self,
        url: str,
        fsync: Literal["always", "batch"] = "always",
        *,
        batch_scheduling: bool = False,
        clock: Callable[[], float] = time.monotonic,
        fence: Fence | None = None,
    ) -> None:
        if fsync not in ("always", "batch"):
            raise JMSException(f"fsync must be 'always' or 'batch', not {fsync!r}")
        self.where = describe(url)
        try:
            given = conninfo.conninfo_to_dict(url)
        except psycopg.ProgrammingError as exc:
            raise JMSException(
                f"cannot parse the PostgreSQL store URL ({exc}): write "
                "postgresql://USER:PASSWORD@HOST:PORT/DB",
                linked_exception=exc,
            ) from exc
        self._conninfo = conninfo.make_conninfo(url, **{**CONNECT_DEFAULTS, **given})
        self.fsync = fsync
        self._clock = clock
        self.fence = fence
        self._retry_at = 0.0  # no reconnect before this (clock seconds)
        self._last_error: BaseException | None = None
        self.commits = 0  # transactions committed
        self._db: psycopg.Connection[Any] | None = None
        self._reader: psycopg.Connection[Any] | None = None
        self._read_lock = threading.Lock()
        try:
            self._db = self._connect()
            create_schema(self._db, self.where)
        except psycopg.Error as exc:
            if self._db is not None:
                self._db.close()
            raise JMSException(
                f"cannot open the PostgreSQL store at {self.where}: {_cause(exc)}",
                linked_exception=exc,
            ) from exc
        except BaseException:
            if self._db is not None:
                self._db.close()
            raise
        self._attach_writer(
            GroupCommitWriter(
                self,
                inline_ops=0,  # no owner commits: see set_owner_commits
                inline_bytes=0,
                batch_scheduling=batch_scheduling,
            )
        )

    # ---- connections ----------------------------------------------------------------------
    def _connect(self) -> psycopg.Connection[Any]:
        db = psycopg.connect(self._conninfo, autocommit=True)
        if self.fsync == "batch":
            db.execute("SET synchronous_commit TO off")
        return db

    def _live(self, current: psycopg.Connection[Any] | None) -> psycopg.Connection[Any]:
        """``current`` if usable, else a new connection (at most one attempt per
        ``RECONNECT_INTERVAL``).

        Raises:
            StoreUnavailable: the server cannot be reached now.
        """
        if current is not None and not current.closed and not current.broken:
            return current
        if current is not None:
            current.close()
        now = self._clock()
        if now < self._retry_at and self._last_error is not None:
            raise self._unavailable(self._last_error)
        try:
            db = self._connect()
        except psycopg.Error as exc:
            self._retry_at = now + RECONNECT_INTERVAL
            self._last_error = exc
            raise self._unavailable(exc) from exc
        self._last_error = None
        return db

    def _unavailable(self, cause: BaseException) -> StoreUnavailable:
        return StoreUnavailable(
            f"the PostgreSQL store at {self.where} is unavailable ({_cause(cause)}); "
            "persistent sends and acknowledgements are refused until it is back (the broker "
            "reconnects by itself)",
            linked_exception=cause if isinstance(cause, Exception) else None,
        )

    @contextlib.contextmanager
    def _using(self, conn: psycopg.Connection[Any]) -> Iterator[psycopg.Connection[Any]]:
        """Run statements on ``conn``; a lost connection becomes :class:`StoreUnavailable`
        (and ``conn`` is closed, to be replaced next time)."""
        try:
            yield conn
        except psycopg.OperationalError as exc:
            # A connection lost inside a pipelined transaction may be left in pipeline mode
            # without being marked broken: every later statement would then fail ("not
            # allowed in pipeline mode"). It is replaced like a broken one.
            if conn.closed or conn.broken or conn.pgconn.pipeline_status:
                conn.close()
                self._last_error = exc
                raise self._unavailable(exc) from exc
            raise

    # ---- reading --------------------------------------------------------------------------
    def load(self, with_data: bool = True) -> Recovered:
        """Everything that survived, messages in sequence order per destination; without
        bodies (read later with :meth:`read_message`) if ``with_data`` is False.

        Raises:
            StoreUnavailable: the database cannot be reached.
        """
        with self._writer.lock:
            self._db = db = self._live(self._db)
            with self._using(db), db.transaction():
                return self._load(db, with_data)

    def _load(self, db: psycopg.Connection[Any], with_data: bool) -> Recovered:
        out = Recovered()
        for row in db.execute(
            "SELECT dest, client_id, name, topic, selector, no_local, shared "
            "FROM ternmq_subscriptions"
        ):
            out.subscriptions.append(AddSubscription(*row))
        body = "data" if with_data else "NULL"
        for dest, seq, prio, exp, dtime, gid, count, data, size in db.execute(
            "SELECT dest, seq, priority, expiration, delivery_time, group_id, delivery_count, "
            f"{body}, octet_length(data) FROM ternmq_messages ORDER BY dest, seq"
        ):
            out.messages.setdefault(dest, []).append(
                StoredMessage(
                    seq, None if data is None else bytes(data), prio, exp, dtime, gid, count, size
                )
            )
        out.sequences = dict(db.execute("SELECT dest, reserved FROM ternmq_sequences").fetchall())
        out.sinks = dict(db.execute("SELECT sink_id, batch_id FROM ternmq_sinks").fetchall())
        for dest, n, dup_id in db.execute(
            "SELECT dest, n, dup_id FROM ternmq_duplicate_ids ORDER BY dest, n"
        ):
            out.duplicate_ids.setdefault(dest, []).append((n, dup_id))
        out.staged = list(
            staged_records(
                AddStaged(txid, sink, batch, first, _STAGED_DECODER.decode(data))
                for txid, first, sink, batch, data in db.execute(
                    "SELECT txid, first, sink_id, batch_id, messages FROM ternmq_staged_chunks "
                    "ORDER BY txid, first"
                ).fetchall()
            )
        )
        return out

    def read_message(self, dest: str, seq: int) -> bytes | None:
        """The stored bytes of one message (for paging), or None. Reads go through their own
        connection: they never wait for the writer's commit.

        Raises:
            StoreUnavailable: the database cannot be reached.
        """
        with self._read_lock:
            self._reader = db = self._live(self._reader)
            with self._using(db):
                row = db.execute(
                    "SELECT data FROM ternmq_messages WHERE dest = %s AND seq = %s", (dest, seq)
                ).fetchone()
        return None if row is None else bytes(row[0])

    # ---- writing: the Store interface, through the group-commit writer --------------------
    def write(self, ops: Sequence[Op]) -> None:
        """Apply one batch now, on the calling thread (recovery and tests).

        Raises:
            StoreUnavailable, psycopg.Error: the database could not be written.
        """
        with self._writer.lock:
            self.apply([ops])

    def set_owner_commits(self, due: Callable[[], None] | None) -> bool:
        """No owner commits: every commit is the writer thread's. Returns False.

        An owner commit runs on the broker's thread (the server's event loop); a commit here
        is a network round trip, and a reconnect or a network that stops answering would
        hold that thread (and every client of the server) for up to the connect timeout or
        the TCP user timeout. The hand-over to the writer costs tens of microseconds against
        a commit of milliseconds."""
        return False

    def commit_due(self, here: bool = True) -> None:
        """Nothing to do: this store has no owner commits (see :meth:`set_owner_commits`)."""

    def close(self) -> None:
        """Write what is queued, stop the writer, close the connections. A second call does
        nothing.

        Raises:
            StoreUnavailable, psycopg.Error: the queued batches could not be written.
        """
        self._writer.close()

    # ---- the group-commit writer's backend (store/_writer.py: Backend) --------------------
    def checkpoint_due(self) -> bool:
        """Never: PostgreSQL checkpoints on its own."""
        return False

    def checkpoint(self) -> None:
        """Nothing to do (see :meth:`checkpoint_due`)."""

    def release(self) -> None:
        """Close both connections (the writer calls it last, holding its lock)."""
        for conn in (self._db, self._reader):
            if conn is not None:
                conn.close()

    def apply(self, batches: list[Sequence[Op]]) -> None:
        """One transaction for all ``batches`` (the group commit). Caller holds the writer's
        lock (the writer, an owner commit, or :meth:`write`).

        Raises:
            StoreUnavailable: the connection is lost or cannot be made; nothing was written
                (or, if it broke during the commit itself, the commit is in doubt).
            psycopg.Error: the database refused a statement; nothing was written.
        """
        statements = _statements(batches)
        if not statements:
            return
        fence = self.fence
        if fence is not None:
            statements.insert(0, (_FENCE, (fence.epoch, fence.lock_pid)))
        self._db = db = self._live(self._db)
        try:
            with self._using(db):
                if len(statements) == 1:
                    db.execute(*statements[0])  # an implicit transaction of its own
                else:
                    with db.transaction(), db.pipeline():
                        for sql, params in statements:
                            db.execute(sql, params)
        except psycopg.errors.CheckViolation as exc:
            if fence is None or exc.diag.constraint_name != _FENCE_CONSTRAINT:
                raise
            reason = (
                f"this broker does not hold the live lock of the PostgreSQL store at "
                f"{self.where} (its lock session ended or another broker took over): nothing "
                "was written; a failover: URL reaches the live broker"
            )
            fence.on_breach(reason)
            raise Fenced(reason, linked_exception=exc) from exc
        self.commits += 1


def _statements(batches: list[Sequence[Op]]) -> list[Statement]:
    """The statements of one group commit, in order (see ``store/_plan.py``)."""
    p = plan(batches)
    out: list[Statement] = []
    for step in p.steps:
        if isinstance(step, Rows):
            out.extend(_rows(step))
        elif isinstance(step, AddStaged):
            out.append(
                (
                    "INSERT INTO ternmq_staged_chunks VALUES(%s, %s, %s, %s, %s) "
                    "ON CONFLICT (txid, first) DO UPDATE SET sink_id = EXCLUDED.sink_id, "
                    "batch_id = EXCLUDED.batch_id, messages = EXCLUDED.messages",
                    (
                        step.txid,
                        step.first,
                        step.sink_id,
                        step.batch_id,
                        _STAGED_ENCODER.encode(step.messages),
                    ),
                )
            )
        elif isinstance(step, AddSubscription):
            out.append(
                (
                    "INSERT INTO ternmq_subscriptions VALUES(%s, %s, %s, %s, %s, %s, %s) "
                    "ON CONFLICT (dest) DO UPDATE SET client_id = EXCLUDED.client_id, "
                    "name = EXCLUDED.name, topic = EXCLUDED.topic, "
                    "selector = EXCLUDED.selector, no_local = EXCLUDED.no_local, "
                    "shared = EXCLUDED.shared",
                    (
                        step.dest,
                        step.client_id,
                        step.name,
                        step.topic,
                        step.selector,
                        step.no_local,
                        step.shared,
                    ),
                )
            )
        elif isinstance(step, RemoveSubscription):
            out.append(("DELETE FROM ternmq_subscriptions WHERE dest = %s", (step.dest,)))
            out.append(("DELETE FROM ternmq_messages WHERE dest = %s", (step.dest,)))
        elif isinstance(step, RemoveDestination):
            out.append(("DELETE FROM ternmq_messages WHERE dest = %s", (step.dest,)))
        elif isinstance(step, RemoveRange):
            out.append(
                (
                    "DELETE FROM ternmq_messages WHERE dest = %s AND seq BETWEEN %s AND %s",
                    (step.dest, step.first, step.last),
                )
            )
        elif isinstance(step, ReserveSeq):
            out.append(
                (
                    "INSERT INTO ternmq_sequences VALUES(%s, %s) "
                    "ON CONFLICT (dest) DO UPDATE SET reserved = EXCLUDED.reserved",
                    (step.dest, step.upto),
                )
            )
        elif isinstance(step, RemoveStaged):
            out.append(("DELETE FROM ternmq_staged_chunks WHERE txid = %s", (step.txid,)))
        elif isinstance(step, SetSinkBatch):
            out.append(
                (
                    "INSERT INTO ternmq_sinks VALUES(%s, %s) "
                    "ON CONFLICT (sink_id) DO UPDATE SET batch_id = EXCLUDED.batch_id",
                    (step.sink_id, step.batch_id),
                )
            )
        else:  # plan() leaves no other kind of step
            raise TypeError(f"no statement for {type(step).__name__}")
    if p.counts:
        keys = list(p.counts)
        out.append(
            (
                _UPDATE_COUNTS,
                ([d for d, _ in keys], [s for _, s in keys], list(p.counts.values())),
            )
        )
    if p.dup_ids:
        latest = {(op.dest, op.n): op.dup_id for op in p.dup_ids}  # one row per key
        out.append(
            (
                _INSERT_DUP_IDS,
                ([d for d, _ in latest], [n for _, n in latest], list(latest.values())),
            )
        )
        evict = evictions(p.dup_ids)
        out.append((_EVICT_DUP_IDS, (list(evict), list(evict.values()))))
    return out


def _rows(run: Rows) -> list[Statement]:
    """The delete and insert statements of a run of message writes."""
    out: list[Statement] = []
    if run.deletes:
        out.append(
            (_DELETE_MESSAGES, ([d.dest for d in run.deletes], [d.seq for d in run.deletes]))
        )
    if run.inserts:
        ins = run.inserts
        out.append(
            (
                _INSERT_MESSAGES,
                (
                    [m.dest for m in ins],
                    [m.seq for m in ins],
                    [m.priority for m in ins],
                    [m.expiration for m in ins],
                    [m.delivery_time for m in ins],
                    [m.group_id for m in ins],
                    run.counts,
                    [m.data for m in ins],
                ),
            )
        )
    return out


def _cause(exc: BaseException) -> str:
    """A database error on one line (libpq's message names the host and the reason)."""
    text = str(exc).strip() or type(exc).__name__
    return " ".join(line.strip() for line in text.splitlines() if line.strip())
