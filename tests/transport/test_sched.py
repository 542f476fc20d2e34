"""Deferred wake-ups (``ternmq._sched``): a thread that blocks for a reply a GIL holder of this
process will give runs under SCHED_BATCH while it blocks, and under its own policy otherwise.

The development and CI machines run Linux, which has the policy; the assertions say so rather
than skip elsewhere."""

from __future__ import annotations

import functools
import os
import pathlib
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, cast

import pytest

from conformance._helpers import wait_for
from ternmq import ConnectionFactory, EmbeddedBroker, Queue, _sched
from ternmq.transport._pending import PendingReply

LINUX = sys.platform.startswith("linux")
WAIT_S = 5.0


def _policy_of(thread: threading.Thread) -> int:
    assert thread.native_id is not None
    return os.sched_getscheduler(thread.native_id)


class _Waiter:
    """A thread that runs ``block()`` and records its own policy once it returns."""

    def __init__(self, block: Callable[[], object], before: Callable[[], None] = lambda: None):
        self.after: int | None = None
        self.result: object = None

        def run() -> None:
            before()
            self.result = block()
            self.after = os.sched_getscheduler(0)

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def finished(self, result: object, policy: int) -> None:
        """Assert that the thread ended, ``block()`` returned ``result`` and the thread ran on
        ``policy`` afterwards."""
        self.thread.join(WAIT_S)
        assert not self.thread.is_alive()
        assert self.result == result
        assert self.after == policy


def test_a_deferred_wait_blocks_under_sched_batch_and_returns_on_the_default_policy() -> None:
    assert LINUX and _sched.waits_deferred()
    lock = threading.Lock()
    lock.acquire()
    waiter = _Waiter(lambda: _sched.wait_deferred(lock, WAIT_S))
    assert wait_for(lambda: _policy_of(waiter.thread) == os.SCHED_BATCH)
    lock.release()
    waiter.finished(True, os.SCHED_OTHER)


def test_a_deferred_wait_that_times_out_also_restores_the_policy() -> None:
    lock = threading.Lock()
    lock.acquire()
    waiter = _Waiter(lambda: _sched.wait_deferred(lock, 0.05))
    waiter.finished(False, os.SCHED_OTHER)


def test_a_thread_on_a_policy_of_its_own_keeps_it() -> None:
    """Only a thread on SCHED_OTHER is touched: one the application put under SCHED_BATCH
    itself is not switched back to SCHED_OTHER after the wait."""
    lock = threading.Lock()
    lock.acquire()

    def batch() -> None:
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))

    waiter = _Waiter(lambda: _sched.wait_deferred(lock, WAIT_S), before=batch)
    time.sleep(0.05)
    lock.release()
    waiter.finished(True, os.SCHED_BATCH)


def test_a_system_that_refuses_the_policy_leaves_waits_working_and_stops_asking(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[int] = []

    def refuse(pid: int, policy: int, param: object) -> None:
        calls.append(policy)
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(_sched, "_set", refuse)
    monkeypatch.setattr(_sched, "_waits", True)
    lock = threading.Lock()
    assert _sched.wait_deferred(lock, 1.0) is True  # free: acquired at once
    assert calls == [os.SCHED_BATCH]
    assert not _sched.waits_deferred()
    lock.release()
    assert _sched.wait_deferred(lock, 1.0) is True
    assert calls == [os.SCHED_BATCH]  # not asked again


def test_the_environment_turns_deferred_waits_off() -> None:
    code = (
        "from ternmq import _sched; import sys; sys.exit(0 if not _sched.waits_deferred() else 3)"
    )
    env = dict(os.environ, TERNMQ_SCHED_BATCH="0")
    assert subprocess.run([sys.executable, "-c", code], env=env, timeout=60).returncode == 0
    env["TERNMQ_SCHED_BATCH"] = "1"
    assert subprocess.run([sys.executable, "-c", code], env=env, timeout=60).returncode == 3


def test_only_a_pending_reply_made_to_defer_blocks_under_sched_batch() -> None:
    """The embedded transport's replies defer (a thread of this process that holds the GIL
    resolves them); a socket transport's do not (measured: 64 tcp producers at half speed)."""
    plain, deferred = PendingReply(), PendingReply(defer_wakeup=True)
    waiters = [_Waiter(functools.partial(p.wait, WAIT_S)) for p in (plain, deferred)]
    assert wait_for(lambda: _policy_of(waiters[1].thread) == os.SCHED_BATCH)
    seen = set()
    for _ in range(50):  # the plain one blocks all along, on the default policy
        seen.add(_policy_of(waiters[0].thread))
        time.sleep(0.002)
    assert seen == {os.SCHED_OTHER}
    assert not plain.done
    for p in (plain, deferred):
        p.resolve(None)
    for w in waiters:
        w.finished(True, os.SCHED_OTHER)


def test_an_embedded_producer_waiting_for_a_group_commit_waits_under_sched_batch(
    tmp_path: pathlib.Path,
) -> None:
    """A persistent send whose batch waits behind another commit blocks under SCHED_BATCH
    (the store's writer, which holds the GIL when it reports the commit, wakes it) and returns
    to the application on its own policy; the store writer runs under SCHED_BATCH too."""
    with EmbeddedBroker("sched-e2e", str(tmp_path / "data")) as broker:
        store: Any = cast(Any, broker.broker).store
        factory = ConnectionFactory(broker.url)
        conns = [factory.create_connection() for _ in range(2)]
        sessions = [c.create_session() for c in conns]
        producers = [s.create_producer(Queue("q")) for s in sessions]
        texts = [s.create_text_message(t) for s, t in zip(sessions, "ab", strict=True)]
        writer_policies: list[int] = []
        original = store._writer._completion

        def completion(tokens: list[int], error: BaseException | None) -> None:
            if threading.current_thread().name == "ternmq-store-writer":
                writer_policies.append(os.sched_getscheduler(0))
            original(tokens, error)

        store.set_completion(completion)
        try:
            with store._db_lock:  # holds the first send's owner commit, as a slow disk would
                first = _Waiter(lambda: producers[0].send(texts[0]))
                assert wait_for(lambda: store._writer._inline_busy)
                second = _Waiter(lambda: producers[1].send(texts[1]))
                assert wait_for(lambda: _policy_of(second.thread) == os.SCHED_BATCH)
            for w in (first, second):
                w.finished(None, os.SCHED_OTHER)
            assert writer_policies and set(writer_policies) == {os.SCHED_BATCH}
        finally:
            for c in conns:
                c.close()
