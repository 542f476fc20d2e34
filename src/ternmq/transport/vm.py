"""The in-process ``vm://`` transport: a client's link to an embedded broker.

Theory of operation
-------------------
A :class:`VmTransport` is the client side of an
:class:`~ternmq.broker.embedded.EmbeddedBroker` (``broker/embedded.py``, which has the
broker side and the reasons for its design). It carries the same request values as the
network protocol but hands them to the embedded broker, which runs them on the caller's
thread, under its lock: :meth:`VmTransport.submit` when a reply is awaited,
:meth:`VmTransport.send_oneway` (``broker/_posting.py``'s ``post``: never blocking on the
lock) when none is.

The broker's output comes back through :meth:`VmTransport._emit`, under the broker's lock:
events (deliveries, failures) go to the client's callback, which only appends to buffers; a
reply takes its waiter (a :class:`~ternmq.transport._pending.PendingReply`) out of the table
here, exactly once, and queues the pair on the embedded broker, which wakes the caller once
it let go of the lock.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from ternmq.broker._posting import post
from ternmq.broker.clock import Clock
from ternmq.broker.embedded import EmbeddedBroker
from ternmq.errors import JMSException
from ternmq.protocol import commands as c
from ternmq.protocol.commands import ConnectionFailed, Deliver, SendFailed
from ternmq.transport._pending import PendingReply, await_reply, fail_all

__all__ = ["VmTransport"]


class VmTransport:
    """A client's link to an embedded broker: requests in, replies and events out."""

    def __init__(self, embedded: EmbeddedBroker, on_event: Callable[[c.Command], None]) -> None:
        self.embedded = embedded
        self.clock: Clock = embedded.clock
        self._on_event = on_event
        self._corr = itertools.count(1)
        self._pending: dict[int, PendingReply] = {}
        self._closed = False
        self._conn = embedded._connect(self._emit)

    def _emit(self, cmd: c.Command) -> None:
        t = type(cmd)  # (names of this module: one lookup each, not two, for every message)
        if t is Deliver or t is ConnectionFailed or t is SendFailed:
            self._on_event(cmd)
            return
        pending = self._pending.pop(cmd.corr, None)  # type: ignore[union-attr]
        if pending is not None:  # resolved once the broker lock is free: see the module doc
            self.embedded._replies.append((pending, cmd))  # type: ignore[arg-type]

    def request(self, req: c.Request, timeout: float | None = None) -> c.Reply:
        """Send ``req`` and wait for its reply.

        Raises:
            JMSException: the broker is stopped, or no reply came within ``timeout``.
        """
        if not req.corr:
            req = _with_corr(req, next(self._corr))
        handle = self.submit(req)
        return await_reply(self._pending, req.corr, handle, timeout, self.embedded.url)

    def submit(self, req: c.Request, lazy: bool = False) -> PendingReply:
        """Send ``req`` and return at once; the broker's reply resolves the returned handle
        (often before this returns: the broker runs on the caller's thread when it is free).
        ``lazy`` means nothing in-process.

        Raises:
            JMSException: the connection is closed.
        """
        corr = req.corr
        if not corr:
            corr = next(self._corr)
            req = _with_corr(req, corr)
        pending = PendingReply(defer_wakeup=True)  # resolved by a GIL holder: ternmq._sched
        self._pending[corr] = pending
        if self._closed:
            self._pending.pop(corr, None)
            raise JMSException(f"the connection to {self.embedded.url} is closed")
        try:
            self.embedded._submit(self._conn, req)
        except BaseException:
            self._pending.pop(corr, None)
            raise
        return pending

    def next_corr(self) -> int:
        """A fresh correlation number for a request built by the caller."""
        return next(self._corr)

    def send_oneway(self, req: c.Request, lazy: bool = False) -> None:
        """Send ``req`` without waiting (its ``corr`` is 0: the broker sends no reply).
        ``lazy`` means nothing in-process."""
        post(self.embedded, self._conn, req)  # compiled, as this module

    def flush(self) -> None:
        """Nothing waits here (``lazy`` means nothing in-process)."""

    def close(self) -> None:
        """Drop the link; the broker releases whatever the connection still held. Requests
        still waiting wake with a JMSException."""
        if not self._closed:
            self._closed = True
            self.embedded._drop(self._conn)
            url = self.embedded.url
            fail_all(self._pending, lambda: JMSException(f"the connection to {url} is closed"))


def _with_corr(req: c.Request, corr: int) -> c.Request:
    import msgspec

    return msgspec.structs.replace(req, corr=corr)
