"""A request's reply to come, shared by the transports (``vm``, ``tcp``, ``tls``).

A transport's ``submit(req)`` registers a :class:`PendingReply` under the request's ``corr``
before the request leaves, and resolves it exactly once: with the reply, or with the
:class:`~ternmq.errors.JMSException` that ended the link. ``request(req)`` is
``submit(req).result()``. Pipelined sends (``client/producer.py``) keep the handle and look at
it later, so a producer need not wait a round trip per message.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from ternmq._sched import wait_deferred
from ternmq.errors import JMSException
from ternmq.protocol import commands as c

__all__ = ["PendingReply", "await_reply", "fail_all"]


class PendingReply:
    """One request's reply: a lock the transport releases once, when the answer is known."""

    __slots__ = ("_defer", "_lock", "error", "flush", "reply")

    def __init__(self, defer_wakeup: bool = False) -> None:
        """``defer_wakeup``: a thread that blocks in :meth:`wait` does so under
        ``SCHED_BATCH`` (``ternmq._sched.wait_deferred``); for a reply resolved by a thread of
        this process that holds the GIL (the embedded broker), not for one read off a socket
        while other processes compete for the CPU (measured: it halved 64 tcp producers)."""
        self._defer = defer_wakeup
        self._lock = threading.Lock()
        self._lock.acquire()
        self.reply: c.Reply | None = None
        self.error: JMSException | None = None
        self.flush: Callable[[], None] | None = None  # writes the request if it was deferred

    def resolve(self, reply: c.Reply | None, error: JMSException | None = None) -> None:
        """Give the answer (the transport's reader, once): ``reply`` or ``error``."""
        self.reply = reply
        self.error = error
        self._lock.release()

    @property
    def done(self) -> bool:
        """Whether the answer is known (never blocks)."""
        return not self._lock.locked()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds (None: for ever); True once the answer is known."""
        lock = self._lock
        if not lock.acquire(False):
            if self.flush is not None:
                self.flush()
            wait = -1 if timeout is None else timeout
            if self._defer and wait != 0:
                if not wait_deferred(lock, wait):
                    return False
            elif not lock.acquire(timeout=wait):
                return False
        lock.release()  # stays done for any later look
        return True

    def result(self) -> c.Reply:
        """The reply, once known (waits for it).

        Raises:
            JMSException: the link ended before the reply came.
        """
        self.wait()
        if self.error is not None:
            raise self.error
        assert self.reply is not None
        return self.reply


def await_reply(
    pending: dict[int, PendingReply],
    corr: int,
    handle: PendingReply,
    timeout: float | None,
    where: str,
) -> c.Reply:
    """Wait for ``handle`` (registered under ``corr`` in ``pending``) and return its reply.

    Raises:
        JMSException: no reply from ``where`` within ``timeout`` seconds, or the link ended.
    """
    if not handle.wait(timeout):
        pending.pop(corr, None)
        if not handle.done:
            raise JMSException(f"no reply from {where} within {timeout:g} s")
    return handle.result()


def fail_all(pending: dict[int, PendingReply], error: Callable[[], JMSException]) -> None:
    """Resolve every handle in ``pending`` with a fresh ``error()`` and empty the dict (safe
    against handles being added or taken concurrently: dict operations are atomic)."""
    while pending:
        try:
            _, waiter = pending.popitem()
        except KeyError:
            break
        waiter.resolve(None, error())
