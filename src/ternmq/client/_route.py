"""A plain connection's route: its requests straight over one transport. Compiled by mypyc
(``setup.py``'s COMPILED).

Theory of operation
-------------------
A :class:`~ternmq.client.connection.Connection` binds its ``request``, ``submit``,
``oneway``, ``flush`` and ``next_corr`` to its route's (no call layer of its own per
request). For a ``failover:`` URL that route is
:class:`~ternmq.client._failover.FailoverRoute`; for every other URL it is
:class:`DirectRoute`, a thin adapter from the client's request functions to one
transport's: every send and acknowledgement goes through it, so it lives in a compiled
module (the frame it adds costs nothing there). A lost link is not its business: the
transport reports it as a ``ConnectionFailed`` event and the connection fails.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ternmq.errors import JMSException
from ternmq.protocol import commands as c

if TYPE_CHECKING:
    from ternmq.client._types import Bound
    from ternmq.transport._base import Transport
    from ternmq.transport._pending import PendingReply

__all__ = ["DirectRoute"]


class DirectRoute:
    """A plain connection's requests: straight over its one transport."""

    def __init__(self, transport: Transport) -> None:
        self.transport = transport
        self._submit: Callable[[c.Request, bool], PendingReply] = transport.submit
        self._send_oneway: Callable[[c.Request, bool], None] = transport.send_oneway
        self.flush: Callable[[], None] = transport.flush
        self.next_corr: Callable[[], int] = transport.next_corr

    def request(self, req: c.Request, bound: Bound | None = None, epoch: int = 0) -> c.Reply:
        """Send a request to the broker and return its reply (no error check); ``bound``
        and ``epoch`` matter to failover only.

        Raises:
            JMSException: the link is lost or closed.
        """
        return self.submit(req).result()

    def submit(self, req: c.Request, lazy: bool = False) -> PendingReply:
        """Send a request without waiting; its reply (or the link's failure) resolves the
        returned handle. ``lazy``: over a network the request may wait a moment for company
        (waiting on the handle writes it at once).

        Raises:
            JMSException: the link is already lost or closed.
        """
        try:
            return self._submit(req, lazy)
        except JMSException:
            raise
        except OSError as exc:
            raise JMSException(f"broker link failed: {exc}", linked_exception=exc) from exc

    def oneway(
        self, req: c.Request, bound: Bound | None = None, epoch: int = 0, lazy: bool = False
    ) -> None:
        """Send a request that needs no reply (dropped if the link is lost); ``lazy`` as for
        :meth:`submit`. Raises nothing."""
        self._send_oneway(req, lazy)

    def ready(self) -> None:
        """Nothing to arm: a lost link fails the connection (``ConnectionFailed``)."""

    def start_close(self) -> None:
        """Nothing waits for a link here."""

    def end_close(self) -> tuple[Transport, bool]:
        """The link to close; never reconnecting."""
        return self.transport, False
