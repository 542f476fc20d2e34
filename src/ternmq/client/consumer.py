"""Message consumers and queue browsers (JMS 2.0 §4.5, §5.9; catalogs CONS, PTP).

``receive_no_wait`` is the primitive: take the next buffered delivery and hand it over.
``receive(timeout)`` waits on the same buffer (STYLE rule 4). With prefetch 0 a receive asks
the broker for exactly one message (``Pull``); otherwise the broker keeps the buffer filled up
to the prefetch window, and every message handed to the application returns one credit.

A consumer holds its session's collaborators directly (STYLE rule 4, and per message no trip
through the session): the :class:`~ternmq.client._ledger.DeliveryLedger` (the session's lock,
the buffers, the hand-over path and the acknowledgements, cached as bound methods; the
per-message work is there, compiled, and ``receive`` first tries its fast path) and the
:class:`~ternmq.client._listener.ListenerThread`. What it needs of the session itself is the
small :class:`ConsumerSession` protocol, so this module does not import the session's.
"""

from __future__ import annotations

import collections
import functools
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Protocol

from ternmq.client._types import MessageListener, SessionState
from ternmq.client._util import check_reply
from ternmq.destination import Destination, Queue
from ternmq.errors import IllegalStateException, JMSException
from ternmq.message import Message, ObjectMessage
from ternmq.message.codec import decode_message
from ternmq.protocol import commands as c

if TYPE_CHECKING:
    from ternmq.client._ledger import DeliveryLedger
    from ternmq.client._listener import ListenerThread
    from ternmq.client._types import Link

__all__ = ["ConsumerSession", "MessageConsumer", "MessageListener", "QueueBrowser"]


class ConsumerSession(SessionState, Protocol):
    """What a consumer or browser needs of its session (a ``Session``)."""

    @property
    def _connection(self) -> Link:
        """The session's connection."""
        ...

    def _check_open(self) -> None:
        """Raise IllegalStateException if the session or its connection is closed."""
        ...

    def _remove_consumer(self, consumer: MessageConsumer) -> None:
        """Forget ``consumer`` (it closed)."""
        ...


class MessageConsumer:
    """Receives messages from a queue or a subscription (classic API)."""

    def __init__(
        self,
        session: ConsumerSession,
        cid: int,
        destination: Destination,
        selector: str | None,
        no_local: bool,
        prefetch: int,
        ledger: DeliveryLedger,
        listener_thread: ListenerThread,
    ) -> None:
        self._session = session
        self._link = session._connection
        self._ledger = ledger
        self._lock = ledger.lock  # C-level ``with`` on the hot path
        self._cond = ledger.cond
        # the one hand-over path (a JMSContext wraps it before any consumer exists)
        self._hand_over = ledger.hand_over
        self._after_receive = ledger.after_receive
        # per message, the ledger's (compiled) functions with this consumer bound: no
        # interpreted frame between the connection's reader and the buffer, nor between
        # receive() and a buffered message
        self._push: Callable[[c.Deliver], None] = functools.partial(ledger.push, self)
        self._receive_buffered: Callable[[], Message | None] = functools.partial(
            ledger.receive_buffered, self
        )
        self._take: Callable[[], c.Deliver | None] = functools.partial(ledger.take, self)
        self._listener_thread = listener_thread
        self._id = cid
        self._destination = destination
        self._selector = selector if selector else None
        self._no_local = no_local
        self._prefetch = prefetch
        self._buffer: collections.deque[c.Deliver] = collections.deque()
        self._listener: MessageListener | None = None
        self._closed = False
        self._receiving = False
        self._consumed = 0
        self._credit_granted = False
        self._kind: c.SubscriptionKind = "none"
        self._subscription: str | None = None
        self._selector_text: str | None = None  # as compiled, sent to the broker

    def _create_request(self, credit: int) -> c.CreateConsumer:
        """The request that creates this consumer in the broker (again, after a failover)."""
        return c.CreateConsumer(
            session_id=self._session._id,
            consumer_id=self._id,
            destination=str(self._destination),
            selector=self._selector_text,
            no_local=self._no_local,
            kind=self._kind,
            subscription=self._subscription,
            prefetch=self._prefetch,
            credit=credit,
        )

    # ---- attributes ----------------------------------------------------------------------
    @property
    def message_selector(self) -> str | None:
        """The selector given at creation (None for none or an empty one)."""
        self._check_open()
        return self._selector

    @property
    def no_local(self) -> bool:
        """The ``no_local`` flag given at creation."""
        self._check_open()
        return self._no_local

    @property
    def destination(self) -> Destination:
        """The queue or topic consumed from."""
        return self._destination

    @property
    def message_listener(self) -> MessageListener | None:
        """The callable that receives messages asynchronously, or None (CONS-09..CONS-14)."""
        self._check_open()
        return self._listener

    @message_listener.setter
    def message_listener(self, listener: MessageListener | None) -> None:
        self._check_open()
        if listener is not None and not callable(listener):
            raise TypeError("message_listener must be callable or None")
        self._listener = listener
        self._listener_thread.changed()

    def _check_open(self) -> None:
        if self._closed:
            self._session._check_open()  # a failed connection links its failure
            raise IllegalStateException("the consumer is closed")
        self._session._check_open()

    # ---- buffer --------------------------------------------------------------------------
    # ``_push(d)`` (buffer a delivery: the connection's reader) and ``_take()`` (under the
    # session lock: the next buffered delivery if the connection is started) are the
    # ledger's ``push`` and ``take``, bound in __init__.

    def _grant_initial_credit(self) -> None:
        if not self._credit_granted and not self._closed:
            self._credit_granted = True
            self._link.oneway(c.Credit(consumer_id=self._id, messages=self._prefetch))

    def _mark_closed(self) -> None:
        """Under the session lock: no more deliveries; wake waiting receives."""
        self._closed = True
        self._buffer.clear()

    # ---- receiving ---------------------------------------------------------------------------
    def receive(self, timeout: float | None = None) -> Message | None:
        """The next message; waits up to ``timeout`` seconds (None: until one arrives or the
        consumer closes; 0: do not wait). Returns None on timeout or close (CONS-02..CONS-08).

        Raises:
            ValueError: a negative timeout.
            IllegalStateException: the consumer is closed, has a message listener, or another
                thread is already receiving on it.
        """
        if timeout is not None and timeout < 0:
            raise ValueError("receive timeout must be >= 0 seconds (or None to wait forever)")
        msg = self._receive_buffered()  # a buffered message, handed over and acknowledged
        if msg is not None:
            return msg
        self._check_open()  # the full path: checks, waits, pulls
        if self._listener is not None:
            raise IllegalStateException(
                "this consumer has a message listener: receive() is not allowed"
            )
        ledger = self._ledger
        lock = self._lock  # the session's Condition's lock: C-level with
        with lock:
            if self._receiving:
                raise IllegalStateException("another thread is already receiving on this consumer")
            self._receiving = True
            d = self._take()  # a buffered message: no second round of the lock
            epoch = ledger.epoch
        try:
            if d is not None:
                msg = self._hand_over(self, d, epoch)
                if msg is not None:
                    self._after_receive(d.delivery_id, epoch)
                    return msg
            return self._receive(timeout)
        finally:
            with lock:
                self._receiving = False
                if ledger.closers:  # close() waits for pending receives (CONS-15)
                    self._cond.notify_all()

    def _receive(self, timeout: float | None) -> Message | None:
        session = self._session
        ledger = self._ledger
        conn = self._link
        cond = self._cond
        deadline = None if timeout is None else time.monotonic() + timeout
        pulled: int | None = None  # the session epoch of our open pull (a failover ends it)
        while True:
            conn.flush()  # before blocking: pipelined sends queued on this connection go now
            with cond:
                while True:
                    d = self._take()
                    epoch = ledger.epoch
                    if d is not None:
                        break
                    if self._closed or session._closing:
                        return None
                    if self._prefetch == 0 and pulled != epoch and conn.started:
                        break  # ask the broker for one (outside the lock)
                    remaining = None if deadline is None else deadline - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        break
                    cond.wait(remaining)
            if d is None:
                if self._prefetch == 0 and pulled != epoch and conn.started:
                    pulled = epoch
                    self._pull(1, deadline is None or deadline > time.monotonic())
                    continue
                if timeout == 0 and pulled is None and conn.started and not conn.local:
                    # CONS-06 over a network: what the broker delivered before this call may
                    # still be on the wire. A one-message pull is a barrier: its reply comes
                    # after every delivery it caused or that came before (as Artemis's
                    # receiveNoWait forces a delivery). wait=False: nothing to cancel.
                    pulled = epoch
                    self._pull(1, False)
                    continue
                if pulled is not None and self._prefetch == 0:
                    self._pull(0, False)  # cancel the open pull; a message may have come
                    with cond:
                        d = self._take()
                        epoch = ledger.epoch
                if d is None:
                    return None
            msg = self._hand_over(self, d, epoch)
            if msg is None:  # expired before hand-over (REL-23), or its link was lost
                pulled = None
                continue
            self._after_receive(d.delivery_id, epoch)
            return msg

    def _pull(self, n: int, wait: bool) -> None:
        try:
            self._link.request(c.Pull(consumer_id=self._id, messages=n, wait=wait))
        except JMSException:
            pass

    def receive_no_wait(self) -> Message | None:
        """The next message if one is available now, else None.

        Raises:
            IllegalStateException: as :meth:`receive`.
        """
        return self.receive(0)

    def __iter__(self) -> Iterator[Message]:
        """Yield received messages until the consumer is closed (CONS-09).

        Raises:
            IllegalStateException: the consumer has a message listener, or another thread is
                receiving on it (CONS-07, CONS-08); a closed consumer just ends the loop.
        """
        while True:
            try:
                msg = self.receive()
            except IllegalStateException:
                if self._closed or self._session._closed:
                    return
                raise
            if msg is None:
                return
            yield msg

    # ---- closing ---------------------------------------------------------------------------
    def close(self) -> None:
        """Close the consumer: a running listener call finishes first, a blocked receive
        returns None, buffered messages go back to the broker (CONS-15..CONS-18). Idempotent.

        Raises:
            IllegalStateException: called from this consumer's own message listener.
        """
        session = self._session
        ledger = self._ledger
        lt = self._listener_thread
        if self._closed:
            return
        if threading.get_ident() == lt.ident and lt.running is self:
            raise IllegalStateException("a consumer cannot be closed from its own message listener")
        cond = self._cond
        with cond:
            cond.wait_for(lambda: lt.running is not self or threading.get_ident() == lt.ident)
            self._mark_closed()
            cond.notify_all()
            ledger.wait_closing(lambda: not self._receiving)  # CONS-15
            delivered = [d for d, k in ledger.unacked if k is self]
            epoch = ledger.epoch
        session._remove_consumer(self)
        if not session._closed and self._link._failure is None:
            # DUPS_OK: acknowledge what the application consumed before the broker takes back
            # this consumer's deliveries, or they would come again unmarked (SESS-20, REL-10).
            ledger.flush_dups()
            try:
                check_reply(
                    self._link.request(
                        c.CloseConsumer(consumer_id=self._id, delivered=delivered), ledger, epoch
                    )
                )
            except JMSException:
                if not session._closed:
                    raise

    def __enter__(self) -> MessageConsumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class QueueBrowser:
    """Looks at the messages of a queue without consuming them (PTP-08..PTP-14)."""

    CHUNK = 100

    def __init__(self, session: ConsumerSession, queue: Queue, selector: str | None) -> None:
        self._session = session
        self._queue = queue
        self._selector = selector if selector else None
        self._closed = False

    @property
    def queue(self) -> Queue:
        """The queue browsed."""
        self._check_open()
        return self._queue

    @property
    def message_selector(self) -> str | None:
        """The selector (None for none or an empty one)."""
        self._check_open()
        return self._selector

    def _check_open(self) -> None:
        if self._closed:
            raise IllegalStateException("the browser is closed")
        self._session._check_open()

    def __iter__(self) -> Iterator[Message]:
        """A fresh scan from the head of the queue (PTP-11).

        Raises:
            IllegalStateException: the browser, session or connection is closed.
        """
        self._check_open()
        return self._scan()

    def get_enumeration(self) -> Iterator[Message]:
        """JMS name for ``iter(browser)``."""
        return iter(self)

    def _scan(self) -> Iterator[Message]:
        after: tuple[int, int] | None = None
        conn = self._session._connection
        while not self._closed:
            reply = check_reply(
                conn.request(
                    c.Browse(
                        destination=str(self._queue),
                        selector=self._selector,
                        after=after,
                        limit=self.CHUNK,
                    )
                )
            )
            assert isinstance(reply, c.BrowseResult)
            for data in reply.messages:
                if self._closed:
                    return
                msg = decode_message(data)
                if isinstance(msg, ObjectMessage):
                    msg._trusted_modules = conn.trusted_modules
                    msg._pickle_budget = conn.pickle_budget
                yield msg
            if reply.done or reply.after is None:
                return
            after = reply.after

    def close(self) -> None:
        """Close the browser; a second call does nothing."""
        self._closed = True

    def __enter__(self) -> QueueBrowser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
