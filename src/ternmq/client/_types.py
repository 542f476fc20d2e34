"""What the session's parts need of each other: small protocols below every client module.

Theory of operation
-------------------
The client's objects form a tree (connection -> session -> its consumers and producers, and
the session's collaborators: the send window, the delivery ledger, the listener thread), and
each part calls back up it: a consumer returns credit through its connection, the ledger
acknowledges through it, the listener thread runs a consumer's listener. Importing the upper
modules for those calls would close import circles, so each part is written against the
protocols here, which name only what it uses. The upper objects satisfy them structurally:
:class:`~ternmq.client.connection.Connection` is a :class:`Link`,
:class:`~ternmq.client.consumer.MessageConsumer` a :class:`ConsumerPort`,
:class:`~ternmq.client.session.Session` a :class:`SessionState`, and the
:class:`~ternmq.client._ledger.DeliveryLedger` the :class:`Bound` that ties a request to the
link its delivery ids were read on (failover). This module imports no client module.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ternmq.broker.clock import Clock
    from ternmq.errors import JMSException
    from ternmq.message import Message, PickleBudget
    from ternmq.protocol import commands as c
    from ternmq.transport._base import Transport
    from ternmq.transport._pending import PendingReply

__all__ = [
    "Bound",
    "ConsumerPort",
    "Link",
    "MessageListener",
    "OnewayFn",
    "RequestFn",
    "Requests",
    "Route",
    "SessionState",
    "SubmitFn",
]

MessageListener = Callable[["Message"], object]


class Bound(Protocol):
    """Whose delivery ids a request carries: the session's ledger (see the module doc)."""

    epoch: int
    """The links lost under the session so far; ids read in an older epoch are stale."""

    def scrub(self, req: c.Request) -> c.Request | None:
        """What of ``req`` (read in an older epoch) may still go to the new link; None:
        nothing. Raises nothing."""
        ...


class Requests(Protocol):
    """How requests reach the broker: what a connection offers and its route implements."""

    def request(self, req: c.Request, bound: Bound | None = None, epoch: int = 0) -> c.Reply:
        """Send ``req`` and return its reply.

        Raises:
            JMSException: the link is lost or closed.
        """
        ...

    def submit(self, req: c.Request, lazy: bool = False) -> PendingReply:
        """Send ``req`` without waiting.

        Raises:
            JMSException: the link is already lost or closed.
        """
        ...

    def oneway(
        self, req: c.Request, bound: Bound | None = None, epoch: int = 0, lazy: bool = False
    ) -> None:
        """Send ``req`` expecting no reply. Raises nothing."""
        ...

    def flush(self) -> None:
        """Write what lazy requests left waiting. Raises nothing."""
        ...

    def next_corr(self) -> int:
        """A fresh request correlation number."""
        ...


class Link(Requests, Protocol):
    """What a session's parts need of their connection (a ``Connection``)."""

    clock: Clock
    prefetch: int
    block_np_sends: bool
    local: bool
    trusted_modules: frozenset[str] | None
    pickle_budget: PickleBudget
    _failure: JMSException | None
    _listener_threads: set[int]
    _delivering: bool  # ``started`` as a plain attribute, for the per-message paths

    @property
    def started(self) -> bool:
        """True while delivery is on."""
        ...

    def next_message_id(self) -> str:
        """A new JMSMessageID."""
        ...

    def _resendable(self, req: c.Request) -> bool:
        """Whether ``req`` may go again after a failover lost it in flight."""
        ...

    @property
    def _failing_over(self) -> bool:
        """True for a connection with a ``failover:`` URL."""
        ...


class ConsumerPort(Protocol):
    """What the session's ledger and listener thread need of a consumer."""

    _id: int
    _buffer: collections.deque[c.Deliver]
    _consumed: int
    _prefetch: int
    _listener: MessageListener | None
    _closed: bool
    _receiving: bool  # a receive() call is in progress on it


class SessionState(Protocol):
    """What the session's collaborators read of its life cycle (a ``Session``)."""

    _id: int
    _closed: bool
    _closing: bool


class RequestFn(Protocol):
    """``Connection.request``: send a request, return its reply (no error check)."""

    def __call__(self, req: c.Request, bound: Bound | None = None, epoch: int = 0) -> c.Reply:
        """Raises JMSException: the link is lost or closed (with failover: in doubt)."""
        ...


class SubmitFn(Protocol):
    """``Connection.submit``: send a request without waiting for its reply."""

    def __call__(self, req: c.Request, lazy: bool = False) -> PendingReply:
        """Raises JMSException: the link is already lost or closed."""
        ...


class OnewayFn(Protocol):
    """``Connection.oneway``: send a request that needs no reply."""

    def __call__(
        self, req: c.Request, bound: Bound | None = None, epoch: int = 0, lazy: bool = False
    ) -> None:
        """Raises nothing: on a lost link the request is dropped."""
        ...


class Route(Requests, Protocol):
    """How a connection's requests reach the broker: straight over one transport, or over
    whichever link a failover keeps alive. The connection binds these methods as its own
    (no call layer per request)."""

    @property
    def transport(self) -> Transport:
        """The link in use now."""
        ...

    def ready(self) -> None:
        """The connection is set up: from now on a lost link is handled."""
        ...

    def start_close(self) -> None:
        """The connection is closing: a reconnect in progress gives up, waiting calls stop."""
        ...

    def end_close(self) -> tuple[Transport, bool]:
        """The connection is closed: the link to close, and whether a reconnect was in
        progress (then no ``Disconnect`` is said)."""
        ...
