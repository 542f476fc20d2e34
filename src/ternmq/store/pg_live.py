"""The live lock of a PostgreSQL store: which of the brokers sharing one database is live.

Theory of operation
-------------------
Brokers given the same PostgreSQL database form a live/backup group. The live one holds a
session advisory lock (``pg_try_advisory_lock`` on ``postgres.LIVE_LOCK``, a key of ternmq's
tables: advisory locks are per database, so one database is one group) on a connection of
its own, :class:`LiveLock`, that it keeps open and idle for as long as it is live. PostgreSQL
releases the lock when that session ends: the broker's process died (its socket closed), the
session was terminated, or the network cut it (TCP keepalives and the user timeout of
``postgres.CONNECT_DEFAULTS`` find that in 10 to 25 s).

A backup calls :meth:`LiveLock.try_acquire` every ``POLL_INTERVAL`` seconds. On success it
bumps the epoch (``ternmq_live``, one row) in a transaction of its own and builds the
:class:`~ternmq.store.postgres.Fence` its store will check in every commit: that row still
holds this epoch and this session still holds the lock (``store/postgres.py``). The bump
waits for any commit of the old live that holds the row and fails every later one, so
only then does the new live recover and listen: whatever the old live committed is in
what it recovers, and the old live commits nothing after.

The lock connection is watched (:meth:`LiveLock.watch`): a thread runs ``SELECT 1`` on it
every ``POLL_INTERVAL`` seconds, and at once after a commit the fence refused. When the
session is gone it reconnects at once: if the database answers, the session was ended on
purpose (``pg_terminate_backend``) or a backup may already hold the lock, so the lock is
lost and ``on_lost`` is called (the server stops serving at once). If the database does
not answer (stopped, restarting, unreachable from here), the live stays up refusing
persistent work (every commit fails: no connection, or the fence finds no lock) and tries
again every ``POLL_INTERVAL`` seconds; once the database answers it takes the lock again if
no other broker took it meanwhile (the lock free and the epoch still its own) and carries
on, its fence now naming the new session; otherwise the lock is lost.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg import conninfo

from ternmq.errors import JMSException
from ternmq.store.postgres import (
    CONNECT_DEFAULTS,
    LIVE_LOCK,
    Fence,
    _cause,
    create_schema,
    describe,
)

__all__ = ["POLL_INTERVAL", "LiveLock"]

log = logging.getLogger("ternmq.store")

# Seconds between a backup's attempts to take the lock, and between the live's checks of
# its lock session.
POLL_INTERVAL = 0.5


class LiveLock:
    """The live lock of the PostgreSQL store at ``url`` (see the module doc).

    Args:
        url: the store's ``postgresql://`` URL (as given to ``PostgresStore``).
    """

    def __init__(self, url: str) -> None:
        self.where = describe(url)
        given = conninfo.conninfo_to_dict(url)
        self._conninfo = conninfo.make_conninfo(
            url, **{**CONNECT_DEFAULTS, "application_name": "ternmq-live-lock", **given}
        )
        self._db: psycopg.Connection[Any] | None = None
        self._mutex = threading.Lock()  # one statement at a time on the lock session
        self._stop = threading.Event()
        self._lost = False
        self._check_now = threading.Event()  # a commit was refused: check without waiting
        self._flag = threading.Lock()  # guards _lost (the watcher and the writer may race)
        self._on_lost: Callable[[str], None] | None = None
        self.fence: Fence | None = None  # set once the lock is held

    @property
    def held(self) -> bool:
        """Whether this broker took the lock and has not lost it."""
        return self.fence is not None and not self._lost

    def try_acquire(self) -> bool:
        """Try once to take the lock; on success bump the epoch and set :attr:`fence`.
        Returns whether the lock is held now.

        Raises:
            JMSException: the database cannot be reached (the message names the host and the
                cause; a backup keeps trying).
        """
        if self.fence is not None:
            return not self._lost
        with self._mutex:
            if self._stop.is_set():
                return False  # closed: never take the lock again
            try:
                if self._db is None or self._db.closed or self._db.broken:
                    self._db = psycopg.connect(self._conninfo, autocommit=True)
                    create_schema(self._db, self.where)  # ternmq_live on a fresh database
                db = self._db
                row = db.execute("SELECT pg_try_advisory_lock(%s)", (LIVE_LOCK,)).fetchone()
                if row is None or not row[0]:
                    return False
                with db.transaction():
                    bumped = db.execute(
                        "INSERT INTO ternmq_live VALUES(1, 1) ON CONFLICT (id) DO UPDATE "
                        "SET epoch = ternmq_live.epoch + 1 RETURNING epoch"
                    ).fetchone()
                assert bumped is not None  # INSERT ... RETURNING returns its row
            except psycopg.Error as exc:
                if self._db is not None:
                    self._db.close()  # a half-taken lock goes with its session
                    self._db = None
                raise JMSException(
                    f"cannot take the live lock of the PostgreSQL store at {self.where}: "
                    f"{_cause(exc)}",
                    linked_exception=exc,
                ) from exc
            self.fence = Fence(int(bumped[0]), db.info.backend_pid, self.check_soon)
            return True

    def watch(self, on_lost: Callable[[str], None]) -> None:
        """Check the lock session every ``POLL_INTERVAL`` seconds (at once after a commit
        the fence refused) on a daemon thread; call ``on_lost(reason)`` once, from that
        thread, when the lock is lost (see the module doc)."""
        self._on_lost = on_lost
        threading.Thread(target=self._watch, name="ternmq-live-lock", daemon=True).start()

    def _watch(self) -> None:
        while True:
            self._check_now.wait(POLL_INTERVAL)  # set by check_soon and close
            self._check_now.clear()
            if self._stop.is_set():
                return
            with self._mutex:
                if self._db is None:
                    return  # closed
                reason = self._check()
            if reason is not None:
                self._lose(reason)
                return

    def _check(self) -> str | None:
        """One check of the lock (holding the mutex): None while it is held (regained after
        the database was unreachable), else why it is lost."""
        assert self._db is not None and self.fence is not None
        fence = self.fence
        try:
            self._db.execute("SELECT 1")
            return None
        except psycopg.Error as exc:
            first = exc
        self._db.close()
        try:  # at once: a database that answers ended our session on purpose (or a backup
            # may take the lock before us): this broker is no longer live
            self._db = psycopg.connect(self._conninfo, autocommit=True)
        except psycopg.Error as exc:
            unreachable = exc  # the database went away: wait for it, refuse work meanwhile
        else:
            return (
                f"the live lock's session on the PostgreSQL store at {self.where} ended "
                f"({_cause(first)}) while the database stayed reachable: this broker is no "
                "longer live"
            )
        log.warning(
            "the PostgreSQL store at %s is unreachable (%s): the live lock is held again once "
            "it is back, unless another broker took it",
            self.where,
            _cause(unreachable),
        )
        while not self._stop.wait(POLL_INTERVAL):
            try:
                db = psycopg.connect(self._conninfo, autocommit=True)
            except psycopg.Error:
                continue
            self._db = db
            try:
                got = db.execute("SELECT pg_try_advisory_lock(%s)", (LIVE_LOCK,)).fetchone()
                row = db.execute("SELECT epoch FROM ternmq_live WHERE id = 1").fetchone()
            except psycopg.Error as exc:
                return f"the live lock could not be taken again ({_cause(exc)})"
            if got is None or not got[0] or row is None or row[0] != fence.epoch:
                return (
                    f"another broker took the live lock of the PostgreSQL store at {self.where} "
                    "while it was unreachable from here: this broker is no longer live"
                )
            fence.lock_pid = db.info.backend_pid  # the store's commits check this session now
            log.warning("the live lock of the PostgreSQL store at %s is held again", self.where)
            return None
        return None  # closed meanwhile

    def check_soon(self, reason: str) -> None:
        """The store's fence refused a commit (``Fence.on_breach``): check the lock now."""
        self._check_now.set()

    def _lose(self, reason: str) -> None:
        """The lock is lost: report it once."""
        with self._flag:
            if self._lost:
                return
            self._lost = True
        callback = self._on_lost
        if callback is not None:
            callback(reason)

    def close(self) -> None:
        """Stop watching and end the lock session (releasing the lock). Idempotent."""
        self._stop.set()
        self._check_now.set()  # the watcher wakes and ends
        with self._mutex:
            db, self._db = self._db, None
            if db is not None:
                db.close()
