"""The delivery ledger of a session: hand-over, acknowledgements, epochs (JMS 2.0 §6.2.10;
catalogs SESS, REL, TX).

Theory of operation
-------------------
The ledger owns the session's one lock (:attr:`DeliveryLedger.cond`, and its bare
:attr:`DeliveryLedger.lock` for paths that only need the lock: a Condition's ``with`` is two
Python calls, the bare lock's is C). It guards the buffers of all the session's consumers
and the bookkeeping here; deliveries are appended under it and wake waiting ``receive``
calls and the listener thread. The lock is never held while calling the broker.

:attr:`DeliveryLedger.unacked` lists the deliveries handed to the application and not yet
acknowledged (CLIENT mode, a transaction, or an AUTO/DUPS_OK listener call in progress).
``acknowledge``, ``commit``, ``rollback``, ``recover`` and ``close`` report exactly those ids
to the broker, so that only messages the application saw count as delivery attempts
(JMSXDeliveryCount, REL-10); merely prefetched messages go back uncounted and in order
(REL-16). :meth:`DeliveryLedger.hand_over` is the one path from buffer to application (an
attribute: a ``JMSContext`` wraps it once for ``receive_body``), and
:meth:`DeliveryLedger.after_receive` the automatic acknowledgement after it.

The per-message work of the consumers is here, compiled with the rest of this module
(``setup.py``'s COMPILED), while the public ``MessageConsumer`` stays interpreted: each
consumer binds :meth:`DeliveryLedger.push` (a delivery into its buffer),
:meth:`DeliveryLedger.take` (the next one out) and :meth:`DeliveryLedger.receive_buffered`
(``receive``'s fast path: take, hand over and acknowledge a buffered delivery in one call,
with one round of the lock) to itself, and :meth:`DeliveryLedger.consumed_one` counts the
credit each hand-over returns.

Failover: :attr:`DeliveryLedger.epoch` counts the links the session has lived on. Delivery
ids are only meaningful on the link that made them, so every id leaves with the epoch it was
read in (``unacked`` and the buffers are emptied, and the epoch bumped, in one critical
section by :meth:`DeliveryLedger.link_lost`); the connection drops or scrubs what is stale
(:meth:`DeliveryLedger.scrub`). The ledger also keeps whether the transaction in progress did
any work and whether it is doomed (rollback-only, TX-06).

Consumers hold the ledger directly and cache its bound methods; nothing here reaches into
the session but its closed flag.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Final

import msgspec

from ternmq.client._util import check_reply
from ternmq.errors import IllegalStateException, JMSException
from ternmq.message import Message, ObjectMessage
from ternmq.message._types import T
from ternmq.message.codec import decode_message
from ternmq.protocol import commands as c

if TYPE_CHECKING:
    from ternmq.client._types import ConsumerPort, Link, SessionState

__all__ = ["DUPS_OK_BATCH", "DeliveryLedger", "HandOver"]

DUPS_OK_BATCH = 32

# The session modes (Session.SESSION_TRANSACTED ... DUPS_OK_ACKNOWLEDGE).
TRANSACTED: Final = 0
AUTO: Final = 1
CLIENT: Final = 2
DUPS_OK: Final = 3

# Provider-set JMSX properties ternmq does not set (yet); a sender's values are removed.
# JMSXUserID is not among them: the broker removes a client's value on every send and sets
# the authenticated user with ``populate_user_id`` (PROP-23), so what arrives is the broker's.
_PROVIDER_JMSX = (
    "JMSXAppID",
    "JMSXProducerTXID",
    "JMSXConsumerTXID",
    "JMSXRcvTimestamp",
    "JMSXState",
)

_T_INT: Final = T.INT  # per delivery; a global is ~65 ns faster than an Enum member on 3.11

HandOver = Callable[["ConsumerPort", c.Deliver, int], "Message | None"]


class DeliveryLedger:
    """What a session handed out and owes the broker (see the module docstring).

    Args:
        session: the session (its id, and its closed flag for ``message.acknowledge()``).
        mode: the session mode, 0 (transacted) to 3 (DUPS_OK).
        link: the connection.
        consumers: the session's consumers by id (the same mapping the session keeps).
    """

    def __init__(
        self,
        session: SessionState,
        mode: int,
        link: Link,
        consumers: Mapping[int, ConsumerPort],
    ) -> None:
        self._session = session
        self._id = session._id
        self.mode = mode
        self.link = link
        self.consumers = consumers
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        # Threads waiting in close() for pending receive() calls to return (CONS-15): only
        # then does a returning receive() notify (see MessageConsumer.receive).
        self.closers = 0
        self.epoch = 0  # links lost under this session (failover)
        self.unacked: list[tuple[int, ConsumerPort]] = []
        self.dups_pending: list[int] = []
        self.dups_epoch = 0
        self.tx_work = False  # the transaction in progress sent or received something
        self.rollback_only: JMSException | None = None  # a failed async send (TX-06)
        self._records = mode in (CLIENT, TRANSACTED)
        self._ack_hook = self.acknowledge_all if mode == CLIENT else self.check_ack_open
        self.hand_over: HandOver = self._hand_over

    # ---- the buffers: deliveries in, buffered ones out ------------------------------------
    def push(self, consumer: ConsumerPort, d: c.Deliver) -> None:
        """Buffer ``d`` for ``consumer`` (the connection's reader: a delivery arrived)."""
        lock = self.lock  # the bare lock: its ``with`` is C; notify_all below needs it held
        with lock:
            if consumer._closed:
                return
            buffer = consumer._buffer
            buffer.append(d)
            # Only a buffer that was empty has waiters to wake: receive() and the listener
            # thread wait for an empty one to fill (a start or a close notifies by itself).
            if len(buffer) == 1:
                self.cond.notify_all()

    def take(self, consumer: ConsumerPort) -> c.Deliver | None:
        """Under the lock: pop ``consumer``'s next buffered delivery if its connection is
        started (and it is open), else None."""
        buffer = consumer._buffer
        if buffer and self.link._delivering and not consumer._closed:
            return buffer.popleft()
        return None

    def receive_buffered(self, consumer: ConsumerPort) -> Message | None:
        """``receive``'s fast path: when ``consumer`` is open, has no listener, nobody else
        receives on it and a delivery is buffered, hand that delivery over and acknowledge
        it automatically (AUTO, DUPS_OK) in one call, with one round of the lock. None in
        every other case (nothing buffered, closed, a listener, another receiver, expired):
        the caller then takes the full path, which raises or waits as it must.

        Raises:
            whatever the hand-over raises (a JMSContext's ``receive_body``).
        """
        if consumer._closed or consumer._listener is not None:
            return None
        if self._session._closed or self.link._failure is not None:
            return None
        lock = self.lock
        with lock:
            if consumer._receiving:
                return None
            d = self.take(consumer)
            if d is None:
                return None
            consumer._receiving = True
            epoch = self.epoch
        try:
            msg = self.hand_over(consumer, d, epoch)
            if msg is not None:
                self.after_receive(d.delivery_id, epoch)
        finally:
            # Outside the lock: a flag write is atomic, and a close() that waits for it
            # counted itself in ``closers`` under the lock before it checked the flag.
            consumer._receiving = False
            if self.closers:  # close() waits for pending receives (CONS-15)
                with self.cond:
                    self.cond.notify_all()
        return msg

    def consumed_one(self, consumer: ConsumerPort, epoch: int) -> None:
        """One message of ``consumer``, read in ``epoch``, was handed out (or expired):
        return its credit, in batches of half the prefetch window."""
        prefetch = consumer._prefetch
        if prefetch == 0:
            return
        n = consumer._consumed + 1
        if n >= max(1, prefetch // 2):
            consumer._consumed = 0
            self.link.oneway(c.Credit(consumer_id=consumer._id, messages=n), self, epoch)
        else:
            consumer._consumed = n

    # ---- hand-over: the one path from buffer to application ------------------------------
    def _hand_over(self, consumer: ConsumerPort, d: c.Deliver, epoch: int) -> Message | None:
        """Turn a delivery read in ``epoch`` into the application's message, or None if it
        expired (REL-23) or came on a link lost since (the broker redelivers it). Called
        without the lock."""
        conn = self.link
        if epoch != self.epoch:
            return None
        if d.expiration and conn.clock.now_ms() >= d.expiration:
            conn.oneway(c.Expired(session_id=self._id, delivery_ids=[d.delivery_id]), self, epoch)
            self.consumed_one(consumer, epoch)
            return None
        msg = decode_message(d.message)
        props = msg._properties
        if props:  # most messages have none: skip the scrub
            for name in _PROVIDER_JMSX:  # PROP-23: values a sender put there are not trusted
                if name in props:
                    del props[name]
                    del msg._property_types[name]
        count = d.delivery_count
        msg._redelivered = count > 1
        msg._properties["JMSXDeliveryCount"] = count
        msg._property_types["JMSXDeliveryCount"] = _T_INT
        if isinstance(msg, ObjectMessage):
            msg._trusted_modules = conn.trusted_modules
            msg._pickle_budget = conn.pickle_budget
        # CLIENT: acknowledges; SESS-17: a no-op in other modes, but SESS-18: refused once closed
        msg._ack_hook = self._ack_hook
        if self._records:
            with self.cond:
                if epoch != self.epoch:
                    return None
                self.unacked.append((d.delivery_id, consumer))
                self.tx_work = True
        self.consumed_one(consumer, epoch)
        return msg

    def after_receive(self, did: int, epoch: int) -> None:
        """Automatic acknowledgement after ``receive`` returned a message read in ``epoch``."""
        mode = self.mode
        if mode == AUTO:
            # Written at once, never lazy: only the last consumed message may come back
            # after a failure (REL-05); DUPS_OK_ACKNOWLEDGE is the batched mode.
            self.link.oneway(c.Ack(session_id=self._id, delivery_ids=[did]), self, epoch)
        elif mode == DUPS_OK:
            if epoch != self.dups_epoch:
                self.dups_pending = []  # ids of a lost link: the broker took them back
                self.dups_epoch = epoch
            self.dups_pending.append(did)
            if len(self.dups_pending) >= DUPS_OK_BATCH:
                self.flush_dups()

    def flush_dups(self) -> None:
        """DUPS_OK: acknowledge the batch collected so far. Raises nothing."""
        if self.dups_pending:
            ids, self.dups_pending = self.dups_pending, []
            self.link.oneway(c.Ack(session_id=self._id, delivery_ids=ids), self, self.dups_epoch)

    # ---- acknowledgement -----------------------------------------------------------------
    def acknowledge_all(self) -> None:
        """CLIENT_ACKNOWLEDGE: acknowledge every message this session handed out (SESS-16).

        Raises:
            IllegalStateException: the session is closed.
            JMSException: the broker refused or the link failed.
        """
        if self._session._closed:
            raise IllegalStateException("cannot acknowledge: the session is closed")
        with self.cond:
            ids = [d for d, _ in self.unacked]
            self.unacked = []
            epoch = self.epoch
        if ids:
            check_reply(
                self.link.request(c.Ack(session_id=self._id, delivery_ids=ids), self, epoch)
            )

    def check_ack_open(self) -> None:
        """AUTO, DUPS_OK, transacted: ``message.acknowledge()`` does nothing (SESS-17) but
        raises IllegalStateException once the session is closed (SESS-18)."""
        if self._session._closed:
            raise IllegalStateException("cannot acknowledge: the session is closed")

    def delivered_ids(self) -> list[int]:
        """Under the lock: the ids handed out and not acknowledged, oldest first."""
        return [d for d, _ in self.unacked]

    def release_ids(self, req: c.Release | c.Rollback, epoch: int) -> None:
        """Send a release or rollback read in ``epoch``; drop what the broker took back.

        Raises:
            JMSException: the broker refused or the link failed.
        """
        reply = check_reply(self.link.request(req, self, epoch))
        if isinstance(reply, c.Released):
            self.drop_released(reply.delivery_ids)

    def drop_released(self, ids: list[int]) -> None:
        """Forget deliveries the broker took back: unacknowledged or still buffered."""
        gone = set(ids)
        with self.cond:
            self.unacked = [(d, k) for d, k in self.unacked if d not in gone]
            for consumer in self.consumers.values():
                buf = consumer._buffer
                if buf and any(d.delivery_id in gone for d in buf):
                    kept = [d for d in buf if d.delivery_id not in gone]
                    buf.clear()
                    buf.extend(kept)

    def doom(self, failure: JMSException) -> None:
        """Mark the transaction rollback-only with ``failure`` unless already doomed (TX-06)."""
        if self.rollback_only is None:
            self.rollback_only = failure

    def wait_closing(self, done: Callable[[], bool]) -> None:
        """Under the lock: wait until ``done()``, counted in ``closers`` so that the
        receive() calls it waits for notify when they return."""
        self.closers += 1
        try:
            self.cond.wait_for(done)
        finally:
            self.closers -= 1

    # ---- failover ------------------------------------------------------------------------
    def scrub(self, req: c.Request) -> c.Request | None:
        """Failover: ``req`` carries delivery ids of a lost link. Return what may still go to
        the new link (the broker took those deliveries back already), or None for nothing."""
        if isinstance(req, (c.Ack, c.Expired)):
            return None
        if isinstance(req, c.Commit):  # the transaction died with the link
            return c.Rollback(corr=req.corr, session_id=req.session_id)
        if isinstance(req, (c.Rollback, c.Release, c.CloseSession, c.CloseConsumer)):
            return msgspec.structs.replace(req, delivered=[])
        return req

    def link_lost(self) -> None:
        """Failover, before the new link exists: forget every delivery of the old one (the
        broker returns them to their queues), and doom a transaction that did any work."""
        with self.cond:
            self.epoch += 1
            self.unacked = []
            self.dups_pending = []
            for consumer in self.consumers.values():
                consumer._buffer.clear()
                consumer._consumed = 0
            if self.mode == TRANSACTED and self.tx_work and not self.rollback_only:
                self.rollback_only = JMSException(
                    "the connection to the broker was lost while it was in progress, and "
                    "the broker rolled back its sends and receives (failover)"
                )
            self.cond.notify_all()
