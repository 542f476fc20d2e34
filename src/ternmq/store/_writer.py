"""Group commit for any transactional store: the queue, the writer thread, owner commits.

Theory of operation
-------------------
A durable store that commits transactions (SQLite today, PostgreSQL tomorrow) is slow per
commit (an fsync, a round trip) and fast per row. :class:`GroupCommitWriter` turns that into
throughput, whatever the database: the broker hands it batches with :meth:`submit` and goes
on; its writer thread takes *every* batch queued at that moment and has the store apply them
in one transaction (:meth:`Backend.apply`) — one commit for all of them, group commit. Then
it reports the tokens of those batches, in submission order, in one call of the completion
callback (``store/_base.py``'s ``Completion``), with the error if the transaction failed.
A failed group commit of several batches is tried again one batch per transaction, each
reported on its own: a batch that cannot be written (a send on a full disk, refused by the
store) fails alone, and the others (the acknowledgements that free space) go through.
After the completions, not before, it asks the store whether a checkpoint is due
(:meth:`Backend.checkpoint_due`) and runs it (:meth:`Backend.checkpoint`): no reply waits
for housekeeping.

Owner commits (:meth:`set_owner_commits`): with one producer waiting for each receipt, a
commit on the writer thread costs two thread hand-overs (the writer woken for the batch, the
broker's thread woken for the completion). Instead, when a batch waits for an *idle* writer,
the owner of the broker is told once (``due()``), and calls :meth:`commit_due` when it may
block for one commit: if the queue holds at most ``inline_ops`` operations and
``inline_bytes`` of message bodies, that thread applies them and reports them itself;
batches submitted meanwhile only queue and go to the writer afterwards, in one group commit;
anything larger, or queued while the writer works, stays the writer's, so under load the
broker keeps working while the database does. Checkpoints stay on the writer thread.

Every ``apply``, ``checkpoint`` and the final ``release`` run under one lock (:attr:`lock`),
in submission order: one thread at a time owns the database. A store's own synchronous
writes (``Store.write``) take the same lock. The writer thread exists only while there is
work (it exits after ``IDLE_EXIT_SECONDS`` without any), so an idle broker holds no thread;
with ``batch_scheduling`` it runs under Linux's ``SCHED_BATCH`` (``ternmq._sched``).

Adding a store: see :class:`Backend` (what to implement, what the writer gives);
``store/sqlite.py`` is the example.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

from ternmq._sched import defer_wakeups
from ternmq.errors import JMSException
from ternmq.store._base import AddMessage, CommitTimes, Completion, Op, StoreFullError

__all__ = ["IDLE_EXIT_SECONDS", "Backend", "GroupCommitWriter", "WriterFront"]

log = logging.getLogger("ternmq.store")

# How long the writer thread waits for work before it exits (a new batch starts it again).
IDLE_EXIT_SECONDS = 2.0


class Backend(Protocol):
    """What a transactional store gives its :class:`GroupCommitWriter`.

    To add a store that commits transactions (say PostgreSQL):

    1. Implement these four members: :meth:`apply` turns a list of batches of operations
       (``store/_base.py``) into the statements of *one* transaction and commits it;
       :attr:`write_errors` names what a failed commit raises; :meth:`checkpoint_due` and
       :meth:`checkpoint` are housekeeping after commits (return False if there is none);
       :meth:`release` flushes and closes the connections.
    2. Implement the reading half of ``Store`` yourself: ``load``, ``read_message``, and
       ``write`` (one batch now: ``with writer.lock: self.apply([ops])``);
       ``synchronous = False``.
    3. At the end of the constructor make ``GroupCommitWriter(self, inline_ops=...,
       inline_bytes=...)`` and let ``submit``, ``set_completion``, ``set_owner_commits``,
       ``commit_due`` and ``close`` call the writer's; give the store a scheme in
       ``open_store``.

    What the writer gives: the queue; the writer thread (started on demand, gone when idle);
    group commit of every batch queued during a commit; completion reporting in submission
    order, one callback per commit, the error to every batch of a failed one; owner commits
    of small batches on the broker's thread; checkpoints after completions; ``close()``.

    The writer calls these on its own thread, or on the owner's thread for an owner commit,
    always holding :attr:`GroupCommitWriter.lock` (except :meth:`checkpoint_due`, which only
    reads a counter): the backend needs no locking of its own for writing.
    """

    #: The exceptions of :meth:`apply` that mean "the transaction failed, nothing of it was
    #: written" (for SQLite: ``sqlite3.Error`` and ``OSError``). They are reported to the
    #: completion callback of every batch in the failed commit, and the writer goes on; any
    #: other exception is a bug and propagates.
    write_errors: tuple[type[BaseException], ...]

    def apply(self, batches: list[Sequence[Op]]) -> None:
        """Write every batch of ``batches``, in order, in *one* transaction, durable (as the
        store's fsync setting says) when this returns.

        Raises:
            BaseException: one of :attr:`write_errors` if the transaction failed and was
                rolled back.
        """
        ...

    def checkpoint_due(self) -> bool:
        """Whether housekeeping (SQLite: copying its log into the database) is due; asked
        after each commit, without the lock. Return False if the store has none."""
        ...

    def checkpoint(self) -> None:
        """Do the housekeeping :meth:`checkpoint_due` asked for, on the writer thread. A
        failure should be logged, not raised: the next commit does not depend on it."""
        ...

    def release(self) -> None:
        """Last call, from :meth:`GroupCommitWriter.close` once every queued batch is
        written: make it durable if not yet (a periodic fsync) and close the connections."""
        ...


class GroupCommitWriter:
    """The asynchronous half of a transactional store (see the module doc).

    Args:
        backend: the store whose transactions this writer runs.
        inline_ops: the most operations an owner commit writes on the owner's thread.
        inline_bytes: the most message-body bytes an owner commit writes there.
        batch_scheduling: run the writer thread under ``SCHED_BATCH`` where the system has
            it (``ternmq._sched``), for a process whose broker thread is busy.
        name: the writer thread's name.
    """

    def __init__(
        self,
        backend: Backend,
        *,
        inline_ops: int,
        inline_bytes: int,
        batch_scheduling: bool = False,
        name: str = "ternmq-store-writer",
    ) -> None:
        self.backend = backend
        self.inline_ops = inline_ops
        self.inline_bytes = inline_bytes
        self.batch_scheduling = batch_scheduling
        self.name = name
        self._queue: deque[tuple[Sequence[Op], int]] = deque()
        # Guards the queue only. ``submit`` takes the plain lock (a C call, where the
        # Condition's ``with`` and ``notify`` are Python frames) and notifies only when the
        # writer waits: one send per message comes through here, most while it writes.
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._waiting = False  # the writer waits on _cond (set and read under _lock)
        self._checkpoint_due = False  # an owner commit left the writer a checkpoint to do
        self._due_hook: Callable[[], None] | None = None  # see set_owner_commits
        self._due = False  # the hook was called and commit_due has not run since
        self._inline_busy = False  # commit_due is writing on its caller's thread
        self.inline_commits = 0  # commits made by commit_due on the submitting thread
        #: Held around every backend write: the writer's, an owner commit's, the store's own.
        self.lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._closed = False
        self._completion: Completion | None = None
        self.batches = 0  # batches received
        self.commit_times = CommitTimes()  # recorded under ``lock`` by _commit

    def set_completion(self, callback: Completion) -> None:
        """Where finished batches are reported, one call per group commit (on the writer
        thread, or on the owner's for an owner commit)."""
        self._completion = callback

    def submit(self, ops: Sequence[Op], token: int) -> None:
        """Queue a batch; ``token`` comes back in the completion of its commit.

        Raises:
            JMSException: the writer is closed.
        """
        hook = None
        with self._lock:
            if self._closed:
                raise JMSException("the store is closed")
            self._queue.append((ops, token))
            self.batches += 1
            # While an owner commit runs, batches only queue: it hands them to the writer. A
            # working writer takes the queue next: nothing to wake (under load, most sends).
            if not self._inline_busy and (self._thread is None or self._waiting):
                if self._due_hook is None:
                    self._wake_writer()
                elif not self._due:  # the writer is idle: the owner decides in commit_due
                    self._due = True
                    hook = self._due_hook
        if hook is not None:
            hook()

    def set_owner_commits(self, due: Callable[[], None] | None) -> bool:
        """Let the thread that submits batches write small ones itself while the writer is
        idle (see the module doc). ``due()`` is called, on the submitting thread, when a batch
        is queued for an idle writer, once until :meth:`commit_due` runs; the owner must then
        call ``commit_due()`` soon, on a thread that may block for one commit. ``None``
        turns it off: every batch goes to the writer thread again. Returns True (owner
        commits are available)."""
        with self._lock:
            self._due_hook = due
        return True

    def commit_due(self, here: bool = True) -> None:
        """Write the queued batches on this thread if the writer is idle and they are small
        (``inline_ops``, ``inline_bytes``), reporting them to the completion callback from
        here; larger ones are handed to the writer, and a working writer takes them anyway.
        ``here=False`` hands them to the writer in any case (a caller that would otherwise
        wait for a commit nobody asked it to wait for).

        Raises:
            BaseException: what :meth:`Backend.apply` raised beyond its ``write_errors``.
        """
        with self._lock:
            self._due = False
            if self._closed or not self._queue or self._inline_busy:
                return  # close() writes what is queued; a running owner commit hands it on
            if self._thread is not None and not self._waiting:
                return  # the writer works: it takes the queue next
            if not here or not _small(self._queue, self.inline_ops, self.inline_bytes):
                self._wake_writer()
                return
            items = list(self._queue)
            self._queue.clear()
            self._inline_busy = True  # submits meanwhile only queue: no second writer
        try:
            self.inline_commits += 1
            self._commit(items)
        finally:
            with self._lock:
                self._inline_busy = False
                if not self._closed:  # else close() writes what queued meanwhile
                    if self.backend.checkpoint_due():
                        self._checkpoint_due = True  # the writer's job: no reply waits for it
                    if self._queue or self._checkpoint_due:
                        self._wake_writer()

    def _wake_writer(self) -> None:
        """Start the writer or wake it if it waits. Caller holds ``_lock``."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
            self._thread.start()
        elif self._waiting:
            self._waiting = False  # one notify wakes it; later batches join its commit
            self._cond.notify()

    def _run(self) -> None:
        if self.batch_scheduling:
            defer_wakeups()
        backend = self.backend
        while True:
            with self._cond:
                if not self._queue and not self._closed and not self._checkpoint_due:
                    self._waiting = True
                    self._cond.wait(IDLE_EXIT_SECONDS)
                    self._waiting = False
                if not self._queue and not self._checkpoint_due:
                    self._thread = None
                    return
                self._checkpoint_due = False
                items = list(self._queue)  # everything queued meanwhile: one group commit
                self._queue.clear()
            if items:
                self._commit(items)
            if backend.checkpoint_due():
                with self.lock:
                    backend.checkpoint()

    def _commit(self, items: list[tuple[Sequence[Op], int]]) -> None:
        """Write the queued ``items`` in one transaction (the group commit), then report their
        tokens, in order, with the error if the write failed."""
        backend = self.backend
        results: list[tuple[list[int], BaseException | None]]
        with self.lock:
            started = time.perf_counter()
            try:
                backend.apply([ops for ops, _ in items])
                results = [([token for _, token in items], None)]
            except backend.write_errors as exc:
                if len(items) == 1:
                    _log_failure(exc)
                    results = [([items[0][1]], exc)]
                else:
                    results = self._one_by_one(items)
            self.commit_times.record(time.perf_counter() - started)
        callback = self._completion
        if callback is not None:
            for tokens, error in results:  # in submission order
                callback(tokens, error)

    def _one_by_one(
        self, items: list[tuple[Sequence[Op], int]]
    ) -> list[tuple[list[int], BaseException | None]]:
        """A group commit failed: write its batches again, one transaction each, so that one
        batch that cannot be written (a send on a full disk) does not fail the others (the
        acknowledgements that would free space). Caller holds :attr:`lock`. Returns every
        token (in a list of one) with its error, or None if its batch is written."""
        backend = self.backend
        results: list[tuple[list[int], BaseException | None]] = []
        for ops, token in items:
            try:
                backend.apply([ops])
            except backend.write_errors as exc:
                _log_failure(exc)
                results.append(([token], exc))
            else:
                results.append(([token], None))
        return results

    def close(self) -> bool:
        """Write what is queued (reporting it), stop the writer thread, then
        :meth:`Backend.release` the store. Later :meth:`submit` calls raise. Returns True,
        or False if the writer was closed already (then it does nothing).

        Raises:
            BaseException: what :meth:`Backend.apply` or :meth:`Backend.release` raised.
        """
        with self._cond:
            if self._closed:
                return False
            self._closed = True
            thread = self._thread
            self._cond.notify_all()
        if thread is not None:
            thread.join(60)
        with self._cond:
            items = list(self._queue)  # the writer had gone idle: finish here
            self._queue.clear()
        with self.lock:
            if items:
                self.backend.apply([ops for ops, _ in items])
            self.backend.release()
        callback = self._completion
        if callback is not None and items:
            callback([token for _, token in items], None)
        return True


def _log_failure(exc: BaseException) -> None:
    """Log a failed write; a refusal of a full store is expected (the store logs once that
    its volume is full, and the sender gets the error), so it is not logged per batch."""
    if isinstance(exc, StoreFullError):
        log.debug("store write refused: %s", exc)
    else:
        log.error("store write failed: %s", exc)


def _small(queue: Iterable[tuple[Sequence[Op], int]], max_ops: int, max_bytes: int) -> bool:
    """Whether the queued batches are small enough for an owner commit: at most ``max_ops``
    operations and ``max_bytes`` of message bodies."""
    ops = size = 0
    for batch, _ in queue:
        ops += len(batch)
        if ops > max_ops:
            return False
        for op in batch:
            if isinstance(op, AddMessage):
                size += len(op.data)
    return size <= max_bytes


class WriterFront:
    """The part of the :class:`~ternmq.store.Store` interface a backend store forwards to its
    :class:`GroupCommitWriter` (``self._writer``): one copy for SQLite and PostgreSQL."""

    _writer: GroupCommitWriter

    #: Queue a batch for the writer thread; ``token`` comes back in the completion (raises
    #: JMSException when the store is closed). The writer's own ``submit``, bound by
    #: :meth:`_attach_writer`: the engine calls it once per store batch, without a
    #: forwarding frame.
    submit: Callable[[Sequence[Op], int], None]

    def _attach_writer(self, writer: GroupCommitWriter) -> None:
        """Make ``writer`` this store's writer (the backend store's constructor calls it)."""
        self._writer = writer
        self.submit = writer.submit

    @property
    def batches(self) -> int:
        """Batches received by :meth:`submit`."""
        return self._writer.batches

    @property
    def commit_times(self) -> CommitTimes:
        """The count and latency of the group commits."""
        return self._writer.commit_times

    def set_completion(self, callback: Completion) -> None:
        """Where finished batches are reported, one call per group commit (called on the
        writer thread, or on the owner's for an owner commit)."""
        self._writer.set_completion(callback)
