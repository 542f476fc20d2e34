"""The store-independent group-commit writer (``store/_writer.py``) over a fake backend.

``FakeBackend`` is the smallest :class:`~ternmq.store._writer.Backend`: it records each
transaction (its batches, its thread, whether the writer's lock was held), can hold a
transaction until released, fail the next ones, and announce a checkpoint. The tests prove
what every transactional store then gets for free: submission order, group commit of the
batches queued during a write, owner commits (small on the caller's thread, large on the
writer's), a failed commit reported to every batch of it, checkpoints after completions, the
writer thread only while there is work, and ``close()``.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence

import pytest

from ternmq.errors import JMSException
from ternmq.store import AddMessage, Op, RemoveMessage
from ternmq.store import _writer as writer_module
from ternmq.store._writer import GroupCommitWriter

WAIT = 5.0
INLINE_OPS = 4
INLINE_BYTES = 100


def add(seq: int, data: bytes = b"x") -> AddMessage:
    return AddMessage("queue://Q", seq, data, 4, 0, 0)


class FakeBackend:
    """A backend in memory: ``committed`` holds each transaction's batches, in order."""

    write_errors: tuple[type[BaseException], ...] = (OSError,)

    def __init__(self) -> None:
        self.writer: GroupCommitWriter | None = None
        self.committed: list[list[Sequence[Op]]] = []
        self.threads: list[int] = []  # the thread of each transaction
        self.locked: list[bool] = []  # whether the writer's lock was held, per transaction
        self.fail: BaseException | None = None  # raised by the transactions while set
        self.refuse: set[Op] = set()  # a transaction with one of these raises OSError
        self.inside = threading.Event()  # a held transaction has started
        self.hold = False  # hold the next transaction until release()
        self._gate = threading.Event()
        self.checkpoint_wanted = False
        self.checkpoints: list[int] = []  # the thread of each checkpoint
        self.events: list[str] = []  # "apply", "checkpoint", "release", in order
        self.released = 0

    def apply(self, batches: list[Sequence[Op]]) -> None:
        assert self.writer is not None
        self.locked.append(self.writer.lock.locked())
        self.threads.append(threading.get_ident())
        self.events.append("apply")
        if self.hold:
            self.hold = False
            self.inside.set()
            assert self._gate.wait(WAIT)
        if self.fail is not None:
            raise self.fail
        if any(op in self.refuse for ops in batches for op in ops):
            raise OSError(f"refused: {sorted(map(repr, self.refuse))}")
        self.committed.append(list(batches))

    def release_held(self) -> None:
        self._gate.set()

    def checkpoint_due(self) -> bool:
        return self.checkpoint_wanted

    def checkpoint(self) -> None:
        assert self.writer is not None and self.writer.lock.locked()
        self.checkpoint_wanted = False
        self.checkpoints.append(threading.get_ident())
        self.events.append("checkpoint")

    def release(self) -> None:
        self.released += 1
        self.events.append("release")


class Completions:
    """Records each completion call: its tokens, its error, its thread."""

    def __init__(self, backend: FakeBackend) -> None:
        self.backend = backend
        self.calls: list[tuple[list[int], BaseException | None]] = []
        self.threads: list[int] = []
        self._cond = threading.Condition()

    def __call__(self, tokens: list[int], error: BaseException | None) -> None:
        self.backend.events.append("completion")
        with self._cond:
            self.calls.append((list(tokens), error))
            self.threads.append(threading.get_ident())
            self._cond.notify_all()

    def tokens(self) -> list[int]:
        return [t for tokens, _ in self.calls for t in tokens]

    def wait_for(self, n: int) -> list[int]:
        with self._cond:
            assert self._cond.wait_for(lambda: len(self.tokens()) >= n, WAIT), self.calls
        return self.tokens()


@pytest.fixture
def backend() -> FakeBackend:
    return FakeBackend()


@pytest.fixture
def writer(backend: FakeBackend) -> Iterator[GroupCommitWriter]:
    w = GroupCommitWriter(backend, inline_ops=INLINE_OPS, inline_bytes=INLINE_BYTES)
    backend.writer = w
    yield w
    w.close()


def _wait_until(predicate: Callable[[], object], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.001)


# ---- ordering and group commit -------------------------------------------------------------
def test_batches_are_written_and_reported_in_submission_order(
    writer: GroupCommitWriter, backend: FakeBackend
) -> None:
    """Every batch is written once, in submission order, and reported once, in that order,
    also when batches share commits; every transaction runs under the writer's lock, off the
    submitting thread."""
    done = Completions(backend)
    writer.set_completion(done)
    for t in range(1, 201):
        writer.submit([add(t)], t)
    assert done.wait_for(200) == list(range(1, 201))
    assert [b[0] for tx in backend.committed for b in tx] == [add(t) for t in range(1, 201)]
    assert all(backend.locked)
    assert threading.get_ident() not in backend.threads
    assert writer.batches == 200
    assert all(error is None for _, error in done.calls)


def test_batches_queued_during_a_write_share_the_next_commit(
    writer: GroupCommitWriter, backend: FakeBackend
) -> None:
    """Group commit: while one transaction is held, 50 batches queue; the writer then applies
    them in one transaction and reports them in one call, tokens in order."""
    done = Completions(backend)
    writer.set_completion(done)
    backend.hold = True
    writer.submit([add(0)], 0)
    assert backend.inside.wait(WAIT)
    for t in range(1, 51):
        writer.submit([add(t)], t)
    backend.release_held()
    assert done.wait_for(51) == list(range(51))
    assert [len(tx) for tx in backend.committed] == [1, 50]
    assert [tokens for tokens, _ in done.calls] == [[0], list(range(1, 51))]


def test_the_writer_thread_exists_only_while_there_is_work(
    writer: GroupCommitWriter, backend: FakeBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer thread starts with the first batch and exits once idle; the next batch
    starts a new one."""
    monkeypatch.setattr(writer_module, "IDLE_EXIT_SECONDS", 0.01)
    done = Completions(backend)
    writer.set_completion(done)
    assert writer._thread is None
    writer.submit([add(1)], 1)
    done.wait_for(1)
    _wait_until(lambda: writer._thread is None, "the idle writer thread did not exit")
    writer.submit([add(2)], 2)
    assert done.wait_for(2) == [1, 2]


def test_the_writer_thread_is_named_and_runs_under_sched_batch_when_asked(
    backend: FakeBackend,
) -> None:
    """The thread that writes and reports is named as given; with ``batch_scheduling`` it
    asks for SCHED_BATCH (where the system has it)."""
    w = GroupCommitWriter(
        backend, inline_ops=INLINE_OPS, inline_bytes=INLINE_BYTES, batch_scheduling=True
    )
    backend.writer = w
    names: list[str] = []
    policies: list[int] = []

    def completion(tokens: list[int], error: BaseException | None) -> None:
        names.append(threading.current_thread().name)
        if hasattr(os, "sched_getscheduler"):
            policies.append(os.sched_getscheduler(0))

    w.set_completion(completion)
    try:
        w.submit([add(1)], 1)
        _wait_until(lambda: names, "no completion")
    finally:
        w.close()
    assert names == ["ternmq-store-writer"]
    if hasattr(os, "SCHED_BATCH"):
        assert policies == [os.SCHED_BATCH]


# ---- owner commits ---------------------------------------------------------------------------
class Owner:
    """The owner side of ``set_owner_commits``: counts ``due()`` calls."""

    def __init__(self, writer: GroupCommitWriter) -> None:
        self.due = 0
        assert writer.set_owner_commits(self.on_due) is True

    def on_due(self) -> None:
        self.due += 1


def test_small_batches_for_an_idle_writer_are_written_by_the_owner(
    writer: GroupCommitWriter, backend: FakeBackend
) -> None:
    """With owner commits, small batches for an idle writer are announced once (``due``) and
    written by ``commit_due`` on the calling thread, in one transaction, reported there; no
    writer thread is started."""
    done = Completions(backend)
    writer.set_completion(done)
    owner = Owner(writer)
    for i in range(1, 4):
        writer.submit([add(i)], i)
        writer.submit([RemoveMessage("queue://Q", i)], i + 100)
        assert owner.due == i  # once per commit_due, not once per batch
        writer.commit_due()
        assert writer._thread is None
    assert done.tokens() == [1, 101, 2, 102, 3, 103]
    assert done.threads == [threading.get_ident()] * 3
    assert backend.threads == [threading.get_ident()] * 3 and all(backend.locked)
    assert writer.inline_commits == 3


@pytest.mark.parametrize(
    "batch",
    [
        [add(i) for i in range(INLINE_OPS + 1)],  # too many operations
        [add(1, b"x" * (INLINE_BYTES + 1))],  # too many message bytes
    ],
    ids=["ops", "bytes"],
)
def test_large_batches_are_left_to_the_writer_thread(
    writer: GroupCommitWriter, backend: FakeBackend, batch: list[Op]
) -> None:
    """More than ``inline_ops`` operations or ``inline_bytes`` of message bodies: ``commit_due``
    hands the queue to the writer thread; the caller does not block for a big write."""
    done = Completions(backend)
    writer.set_completion(done)
    owner = Owner(writer)
    writer.submit(batch, 1)
    assert owner.due == 1
    writer.commit_due()
    assert done.wait_for(1) == [1]
    assert threading.get_ident() not in backend.threads + done.threads
    assert writer.inline_commits == 0


def test_commit_due_not_here_hands_even_small_batches_to_the_writer(
    writer: GroupCommitWriter, backend: FakeBackend
) -> None:
    """``commit_due(here=False)``: the caller will not wait for the commit, so the writer
    thread takes it."""
    done = Completions(backend)
    writer.set_completion(done)
    Owner(writer)
    writer.submit([add(1)], 1)
    writer.commit_due(here=False)
    assert done.wait_for(1) == [1]
    assert done.threads != [threading.get_ident()]
    assert writer.inline_commits == 0


def test_no_due_while_the_writer_works_and_batches_during_an_owner_commit_go_to_it(
    writer: GroupCommitWriter, backend: FakeBackend
) -> None:
    """Batches submitted during an owner commit only queue (no second ``due``); when it ends
    the writer thread takes them together in one commit."""
    done = Completions(backend)
    writer.set_completion(done)
    owner = Owner(writer)
    backend.hold = True
    writer.submit([add(1)], 1)

    def submit_during() -> None:
        assert backend.inside.wait(WAIT)
        for t in range(2, 7):
            writer.submit([add(t)], t)
        backend.release_held()

    other = threading.Thread(target=submit_during)
    other.start()
    writer.commit_due()  # held inside apply until the five are queued
    other.join(WAIT)
    assert done.wait_for(6) == list(range(1, 7))
    assert owner.due == 1
    assert [tokens for tokens, _ in done.calls] == [[1], [2, 3, 4, 5, 6]]
    assert done.threads[0] == threading.get_ident() != done.threads[1]


def test_set_owner_commits_none_sends_every_batch_to_the_writer(
    writer: GroupCommitWriter, backend: FakeBackend
) -> None:
    """``set_owner_commits(None)`` turns owner commits off: no ``due()`` any more."""
    done = Completions(backend)
    writer.set_completion(done)
    owner = Owner(writer)
    writer.set_owner_commits(None)
    writer.submit([add(1)], 1)
    assert done.wait_for(1) == [1]
    assert owner.due == 0 and writer.inline_commits == 0


# ---- errors ------------------------------------------------------------------------------------
def _three_behind_a_held_write(writer: GroupCommitWriter, backend: FakeBackend) -> Completions:
    """Batch 0 held inside its write, batches 1 to 3 queued behind it (one group commit
    next); the completions are recorded."""
    done = Completions(backend)
    writer.set_completion(done)
    backend.hold = True
    writer.submit([add(0)], 0)
    assert backend.inside.wait(WAIT)
    for t in (1, 2, 3):
        writer.submit([add(t)], t)
    return done


def test_a_failed_commit_is_reported_to_every_batch_of_it(
    writer: GroupCommitWriter, backend: FakeBackend
) -> None:
    """A transaction that raises one of ``write_errors`` is tried again batch by batch and
    each is reported with its error (here three, queued behind a held write); the writer
    goes on and later commits succeed."""
    done = _three_behind_a_held_write(writer, backend)
    failure = OSError("disk full")
    backend.fail = failure
    backend.release_held()
    assert done.wait_for(4) == [0, 1, 2, 3]
    assert done.calls == [([0], failure), ([1], failure), ([2], failure), ([3], failure)]
    backend.fail = None
    writer.submit([add(4)], 4)
    assert done.wait_for(5)[-1] == 4
    assert done.calls[-1] == ([4], None)
    assert [b[0] for tx in backend.committed for b in tx] == [add(4)]


def test_a_failed_owner_commit_is_reported_to_its_batches(
    writer: GroupCommitWriter, backend: FakeBackend
) -> None:
    """An owner commit that fails reports the error to its batches, from the caller's
    thread, and does not raise there."""
    done = Completions(backend)
    writer.set_completion(done)
    Owner(writer)
    failure = OSError("read-only")
    backend.fail = failure
    writer.submit([add(1)], 1)
    writer.submit([add(2)], 2)
    writer.commit_due()
    assert done.calls == [([1], failure), ([2], failure)]
    assert done.threads == [threading.get_ident()] * 2


# ---- checkpoints -----------------------------------------------------------------------------
def test_the_writer_checkpoints_after_reporting_the_commit(
    writer: GroupCommitWriter, backend: FakeBackend
) -> None:
    """A checkpoint the backend asks for runs on the writer thread, under the lock, after the
    completion of the commit that made it due."""
    done = Completions(backend)
    writer.set_completion(done)
    backend.checkpoint_wanted = True
    writer.submit([add(1)], 1)
    done.wait_for(1)
    _wait_until(lambda: backend.checkpoints, "no checkpoint")
    assert backend.events[:3] == ["apply", "completion", "checkpoint"]


def test_an_owner_commit_leaves_the_checkpoint_to_the_writer(
    writer: GroupCommitWriter, backend: FakeBackend
) -> None:
    """After an owner commit that made a checkpoint due, the writer thread is woken for it:
    the owner never runs one."""
    done = Completions(backend)
    writer.set_completion(done)
    Owner(writer)
    writer.submit([add(1)], 1)
    backend.checkpoint_wanted = True
    writer.commit_due()
    assert done.threads == [threading.get_ident()]
    _wait_until(lambda: backend.checkpoints, "no checkpoint")
    assert threading.get_ident() not in backend.checkpoints


# ---- close -------------------------------------------------------------------------------------
def test_close_writes_the_queue_reports_it_releases_once_and_refuses_more(
    backend: FakeBackend,
) -> None:
    """``close()`` writes and reports every batch submitted before it, then releases the
    backend (once: a second ``close()`` returns False and does nothing); ``submit``
    afterwards raises JMSException."""
    w = GroupCommitWriter(backend, inline_ops=INLINE_OPS, inline_bytes=INLINE_BYTES)
    backend.writer = w
    done = Completions(backend)
    w.set_completion(done)
    for t in range(1, 101):
        w.submit([add(t)], t)
    assert w.close() is True
    assert done.tokens() == list(range(1, 101))
    assert backend.released == 1 and backend.events[-1] == "release"
    assert w._thread is None
    with pytest.raises(JMSException, match="closed"):
        w.submit([add(101)], 101)
    assert w.close() is False
    assert backend.released == 1


def test_close_during_an_owner_commit_writes_the_rest_and_starts_no_writer(
    backend: FakeBackend,
) -> None:
    """``close()`` while an owner commit runs: it waits for the commit (the lock), writes
    what queued meanwhile itself, and the owner commit starts no writer thread afterwards,
    not even for a due checkpoint."""
    w = GroupCommitWriter(backend, inline_ops=INLINE_OPS, inline_bytes=INLINE_BYTES)
    backend.writer = w
    done = Completions(backend)
    w.set_completion(done)
    Owner(w)
    started: list[str] = []
    run = w._run

    def recording_run() -> None:
        started.append(threading.current_thread().name)
        run()

    w._run = recording_run  # type: ignore[method-assign]
    backend.hold = True
    backend.checkpoint_wanted = True
    w.submit([add(1)], 1)
    committer = threading.Thread(target=w.commit_due, name="owner")
    committer.start()
    assert backend.inside.wait(WAIT)
    w.submit([add(2)], 2)
    closer = threading.Thread(target=w.close)
    closer.start()
    _wait_until(lambda: w._closed, "close() did not start")
    backend.release_held()
    committer.join(WAIT)
    closer.join(WAIT)
    assert done.tokens() == [1, 2]
    assert started == [], "a writer thread was started on the closed writer"
    assert backend.released == 1


def test_a_batch_that_cannot_be_written_fails_alone(
    writer: GroupCommitWriter, backend: FakeBackend
) -> None:
    """A group commit that fails because of one batch (a send refused by a full store) is
    written again one batch per transaction: the others (the acknowledgements that free
    space) are written and reported done, in submission order."""
    done = _three_behind_a_held_write(writer, backend)
    backend.refuse = {add(2)}
    backend.release_held()
    assert done.wait_for(4) == [0, 1, 2, 3]
    assert done.calls[0] == ([0], None)
    assert done.calls[1:3] == [([1], None), ([2], done.calls[2][1])]
    assert isinstance(done.calls[2][1], OSError)
    assert done.calls[3] == ([3], None)
    assert [b[0] for tx in backend.committed for b in tx] == [add(0), add(1), add(3)]
