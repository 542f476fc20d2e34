"""Scheduling hints for threads that wait for another thread holding the GIL (Linux).

Theory of operation
-------------------
CPython runs one thread at a time. Most wake-ups in ternmq come from a thread that holds the
GIL: the store writer reporting a commit wakes the producers whose sends it made durable, a
tcp reader thread wakes the caller whose reply it read, a producer queuing a batch wakes the
store writer. Linux's wake-up preemption then runs the woken thread at once, ahead of the
thread that woke it. The woken thread finds the GIL held and sleeps again, and the waker
resumes: two context switches for nothing, on every wake-up, and with several woken threads
a convoy of them. Measured with 64 producer threads on an embedded broker (unpinned, 2-vCPU
VM): about one involuntary context switch per message.

A thread under ``SCHED_BATCH`` is not run ahead of the current thread when it wakes: it runs
when a CPU is free, or when the current thread blocks or ends its time slice, and by then the
GIL is usually free. It has the same nice value and the same share of the CPU as before; only
its wake-ups wait. Two uses:

- :func:`defer_wakeups`: a thread of ternmq's own that only ever wakes to do work for the
  broker (the store writer) stays under ``SCHED_BATCH``.
- :func:`wait_deferred`: a thread of the application is put under ``SCHED_BATCH`` only while
  it blocks inside ternmq for an embedded broker's reply (``PendingReply(defer_wakeup=True)``,
  made by the vm transport), and goes back to its own policy before it runs another line of
  the application. Only a thread on the default policy (``SCHED_OTHER``) is touched; one the
  application gave another policy is left alone. Two system calls per blocking wait, about
  3 us. Not over tcp: there the woken thread competes with the server *process* for the CPU,
  and deferred waits halved 64 producers (docs/performance.md "Deferred wake-ups").

Elsewhere than Linux, or where the system refuses (a seccomp profile, say), nothing changes.
``TERNMQ_SCHED_BATCH=0`` in the environment turns :func:`wait_deferred` off for the process.
"""

from __future__ import annotations

import logging
import os
import threading

__all__ = ["defer_wakeups", "wait_deferred", "waits_deferred"]

log = logging.getLogger("ternmq")

_set = getattr(os, "sched_setscheduler", None)
_get = getattr(os, "sched_getscheduler", None)
_BATCH = getattr(os, "SCHED_BATCH", None)
_OTHER = getattr(os, "SCHED_OTHER", None)
_PARAM = os.sched_param(0) if hasattr(os, "sched_param") else None
# Whether blocking waits are deferred: the system has the calls, the environment does not
# say no, and no call has failed yet.
_waits = (
    _set is not None
    and _get is not None
    and _BATCH is not None
    and os.environ.get("TERNMQ_SCHED_BATCH", "1") != "0"
)


def waits_deferred() -> bool:
    """Whether :func:`wait_deferred` changes the waiting thread's policy in this process."""
    return _waits


def defer_wakeups() -> None:
    """Put the calling thread under ``SCHED_BATCH`` for good, where the system has it; if the
    system refuses, it stays as it is."""
    if _set is None or _BATCH is None:
        return
    try:
        _set(0, _BATCH, _PARAM)  # 0: the calling thread
    except OSError as exc:
        log.debug("%s keeps its scheduling policy: %s", threading.current_thread().name, exc)


def wait_deferred(lock: threading.Lock, timeout: float) -> bool:
    """``lock.acquire(timeout=timeout)`` with the calling thread under ``SCHED_BATCH`` while it
    blocks, if it runs on the default policy; back on it before this returns."""
    global _waits
    get, set_ = _get, _set
    if not _waits or get is None or set_ is None:
        return lock.acquire(timeout=timeout)
    try:
        deferred = get(0) == _OTHER
        if deferred:
            set_(0, _BATCH, _PARAM)
    except OSError as exc:
        _waits = False  # refused once, refused always: stop asking
        log.debug("blocking waits keep the thread's scheduling policy: %s", exc)
        return lock.acquire(timeout=timeout)
    try:
        return lock.acquire(timeout=timeout)
    finally:
        if deferred:
            try:
                set_(0, _OTHER, _PARAM)
            except OSError as exc:  # it was allowed a moment ago; the wait is over anyway
                log.debug("could not restore the thread's scheduling policy: %s", exc)
