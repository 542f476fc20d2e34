"""The embedded broker's one-way requests, in a module that mypyc compiles (``setup.py``'s
COMPILED).

Theory of operation
-------------------
The embedded broker (``broker/embedded.py``) is owned by a lock; a one-way request (a
pipelined send, an acknowledgement, credit) must never block on it, or a consumer and a
producer would hand the GIL back and forth for every message (a lock convoy). So
:func:`post` appends the request to the host's posted queue and only *tries* the lock;
whoever holds the lock drains the queue before it handles its own request and checks it again
after releasing, so nothing is stranded and one connection's requests keep their order. When
the lock is free and nothing is queued (the usual case), the request is handled at once,
without being queued.

Every one-way request of every ``vm://`` client passes here, twice a message in a 1 -> 1 run
(the send, the acknowledgement), so this module is compiled while the embedded broker
itself stays interpreted (it subclasses ``broker/host.py``'s ``BrokerHost``, which the
server's host subclasses too). It reads and calls only what :class:`PostingHost` names. The
embedded broker's own draining of the queue (:func:`try_drain`, :func:`drain`) and the
waking of reply waiters (:func:`resolve_replies`) live here too, for the same reason: the
thread that finds the lock taken, and the holder letting go, run them for every message.
"""

from __future__ import annotations

import collections
import functools
from collections.abc import Callable
from typing import Protocol

from ternmq.broker.engine import Broker, BrokerConnection
from ternmq.errors import JMSException
from ternmq.protocol import commands as c

__all__ = [
    "OwnerLock",
    "PostingHost",
    "ReplyWaiter",
    "drain",
    "post",
    "resolve_replies",
    "try_drain",
]


class ReplyWaiter(Protocol):
    """What the embedded broker wakes once it let go of its lock: a client's reply handle
    (``transport/_pending.py``'s ``PendingReply``)."""

    def resolve(self, reply: c.Reply | None, error: JMSException | None = None) -> None:
        """Give the answer and wake whoever waits for it."""
        ...


class OwnerLock(Protocol):
    """The embedded broker's lock (a ``threading.Lock``; this module takes no thread of
    its own: the house rule for ``broker/``)."""

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        """Take the lock; with ``blocking`` False only if it is free. True if taken."""
        ...

    def release(self) -> None:
        """Let go of the lock."""
        ...


class PostingHost(Protocol):
    """What :func:`post` needs of the embedded broker (an ``EmbeddedBroker``)."""

    broker: Broker | None
    _posted: collections.deque[Callable[[], None]]
    _commit_pending: bool

    @property
    def lock(self) -> OwnerLock:
        """The lock that owns the broker."""
        ...

    @property
    def _replies(self) -> collections.deque[tuple[ReplyWaiter, c.Reply]]:
        """Replies made under the lock, to resolve once it is free (:func:`resolve_replies`)."""
        ...

    def _commit_due(self, here: bool) -> None:
        """Hand the store's due batch on (called without the lock)."""
        ...


def post(host: PostingHost, conn: BrokerConnection, req: c.Request) -> None:
    """Have ``host``'s broker handle the one-way ``req`` of ``conn`` (its ``corr`` is 0)
    without ever blocking on the broker lock (see the module docstring). Dropped if the
    broker is stopped.

    Raises:
        whatever the broker's ``handle`` raises, as a drained request would.
    """
    broker = host.broker
    if broker is None:
        return
    posted = host._posted
    lock = host.lock
    if posted or not lock.acquire(False):
        posted.append(functools.partial(broker.handle, conn, req))  # no frame of its own
        try_drain(host)
        return
    try:
        broker = host.broker
        if broker is None:  # stopped meanwhile (as _try_drain)
            posted.clear()
        else:
            if posted:  # by another thread meanwhile: it came first
                drain(posted)
            broker.handle(conn, req)
    finally:
        lock.release()
    if host._replies:
        resolve_replies(host._replies)
    if posted:
        try_drain(host)
    elif host._commit_pending:  # (try_drain looks at it too)
        host._commit_due(False)


def try_drain(host: PostingHost) -> None:
    """Drain ``host``'s posted queue if its lock is free, and again while more arrives; then
    wake the reply waiters and hand on a due store batch (each holder's duty on letting go
    of the lock: posted work relies on it). Never blocks on the lock."""
    posted = host._posted
    lock = host.lock
    while posted and lock.acquire(False):
        try:
            if host.broker is None:
                posted.clear()
            else:
                drain(posted)
        finally:
            lock.release()
        replies = host._replies
        if replies:
            resolve_replies(replies)
    if host._commit_pending:
        host._commit_due(False)


def drain(posted: collections.deque[Callable[[], None]]) -> None:
    """Run everything posted so far, in order (the caller holds the broker lock)."""
    while posted:
        posted.popleft()()


def resolve_replies(replies: collections.deque[tuple[ReplyWaiter, c.Reply]]) -> None:
    """Wake the callers of the replies queued under the lock (called without it). Every
    holder calls this after releasing the lock, so none is left behind; two threads doing so
    at once each wake different callers (deque operations are atomic)."""
    while replies:
        try:
            pending, reply = replies.popleft()
        except IndexError:
            return
        pending.resolve(reply)
