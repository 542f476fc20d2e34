"""What a client needs of its link to a broker: the :class:`Transport` protocol.

Theory of operation
-------------------
A transport carries the native protocol's requests to one broker and hands every event that
is not a reply (``Deliver``, ``SendFailed``, one final ``ConnectionFailed``) to the callback
it was built with. :class:`~ternmq.transport.vm.VmTransport` (an embedded broker in this
process) and :class:`~ternmq.transport.tcp.TcpTransport` (a server over TCP or TLS) both
satisfy it structurally; the client (``ternmq.client``) is written against this protocol
only, never against either class, so a new transport is a sibling module that offers these
methods. A request is either awaited (:meth:`Transport.request`), submitted for a later wait
(:meth:`Transport.submit`, a :class:`~ternmq.transport._pending.PendingReply`), or sent
without a reply (:meth:`Transport.send_oneway`, ``corr`` 0). ``lazy`` lets a network
transport hold a frame back a moment for company (fewer writes); :meth:`Transport.flush`
writes what is held, before a thread blocks.

This module imports nothing from ``ternmq.client`` (transports sit below the client).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ternmq.broker.clock import Clock
    from ternmq.protocol import commands as c
    from ternmq.transport._pending import PendingReply

__all__ = ["NetworkTransport", "Transport"]


class Transport(Protocol):
    """A client's link to one broker (see the module docstring)."""

    clock: Clock
    """The broker's clock as the client must read it (expiry, timestamps)."""

    def request(self, req: c.Request, timeout: float | None = None) -> c.Reply:
        """Send ``req`` and wait for its reply (at most ``timeout`` seconds; None: no limit).

        Raises:
            JMSException: the link is lost or closed, or no reply came in time.
        """
        ...

    def submit(self, req: c.Request, lazy: bool = False) -> PendingReply:
        """Send ``req`` without waiting; its reply (or the link's failure) resolves the
        returned handle. ``lazy``: the frame may wait a moment for company.

        Raises:
            JMSException: the link is already lost or closed.
        """
        ...

    def send_oneway(self, req: c.Request, lazy: bool = False) -> None:
        """Send ``req`` expecting no reply (its ``corr`` is 0); dropped on a lost link, whose
        loss is reported once as ``ConnectionFailed``. Raises nothing."""
        ...

    def flush(self) -> None:
        """Write what ``lazy`` sends left waiting, now. Raises nothing."""
        ...

    def next_corr(self) -> int:
        """A fresh correlation number for a request built by the caller."""
        ...

    def close(self) -> None:
        """Drop the link; requests still waiting wake with a JMSException. Idempotent."""
        ...


class NetworkTransport(Transport, Protocol):
    """A transport over a network link, which can be lost (what failover reconnects)."""

    address: str
    """``host:port`` of the peer, for messages."""

    @property
    def lost(self) -> bool:
        """True once the link is gone (lost or closed)."""
        ...

    @property
    def failure_cause(self) -> BaseException | None:
        """The exception behind a lost link, or None."""
        ...
