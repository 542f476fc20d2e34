"""Sessions: acknowledgement, recovery, local transactions, listener delivery (JMS 2.0 §4.4,
§6; catalogs SESS and TX).

Theory of operation
-------------------
A session owns one lock (``_cond``) guarding the buffers of all its consumers and its
delivery bookkeeping. Deliveries from the broker are appended under that lock and wake
waiting ``receive`` calls and the session's listener thread. The lock is never held while
calling the broker.

``_unacked`` lists the deliveries handed to the application and not yet acknowledged (CLIENT
mode, a transaction, or an AUTO/DUPS_OK listener call in progress). ``acknowledge``,
``commit``, ``rollback``, ``recover`` and ``close`` report exactly those ids to the broker, so
that only messages the application saw count as delivery attempts (JMSXDeliveryCount, REL-10);
merely prefetched messages go back uncounted and in order (REL-16).

Message listeners of a session run one at a time on the session's own delivery thread
(SESS-06); completion listeners of asynchronous sends run in send order on the session's
completion thread (PROD-22..PROD-28).

Sends in flight: an asynchronous send (completion listener) and, with
``block_on_non_persistent_send=false``, a synchronous NON_PERSISTENT send return before the
broker's receipt. At most :data:`SEND_WINDOW` of each kind are in flight per session; the
next one waits for the oldest. A refused pipelined send is kept in ``_send_failure`` and
raised by the next send (and makes the transaction roll back); ``commit``, ``rollback`` and
``close`` first wait for every send in flight (a quiet one the broker holds for room holds
the connection's ``Disconnect`` instead: docs/protocol.md). Outside a transaction most
pipelined sends are *quiet* (``Send.quiet``: no reply unless refused, then a ``SendFailed``
event); one in every :data:`QUIET_RUN` is an ordinary request whose reply vouches for the
quiet ones before it, and the window counts the sends each reply vouches for. Measured,
pinned, 1 -> 1: a reply per send cost the client ~2.5 µs of its ~21 µs per message.

Failover (see :mod:`ternmq.client.connection`): ``_epoch`` counts the links this session has
lived on. Delivery ids are only meaningful on the link that made them, so every id leaves
with the epoch it was read in (``_unacked`` and the buffers are emptied, and the epoch bumped,
in one critical section by ``_on_link_lost``); the connection drops or scrubs what is stale.
"""

from __future__ import annotations

import collections
import logging
import queue
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

import msgspec

from ternmq.client._util import check_reply, error_of
from ternmq.destination import Destination, Queue, TemporaryQueue, TemporaryTopic, Topic
from ternmq.errors import (
    IllegalStateException,
    InvalidDestinationException,
    JMSException,
    TransactionRolledBackException,
)
from ternmq.message import (
    BytesMessage,
    MapMessage,
    Message,
    ObjectMessage,
    StreamMessage,
    TextMessage,
)
from ternmq.message._types import T
from ternmq.message.codec import decode_message
from ternmq.protocol import commands as c
from ternmq.selector import compile_selector

if TYPE_CHECKING:
    from ternmq.client.connection import Connection
    from ternmq.client.consumer import MessageConsumer, QueueBrowser
    from ternmq.client.producer import MessageProducer
    from ternmq.transport._pending import PendingReply

__all__ = ["Session"]

log = logging.getLogger("ternmq.client")

DUPS_OK_BATCH = 32
SEND_WINDOW = 1000  # sends of one session in flight (pipelined, or awaiting a completion)
QUIET_RUN = 32  # one pipelined send in this many is answered (at most SEND_WINDOW // 2)

# Provider-set JMSX properties ternmq does not set (yet); a sender's values are removed.
_PROVIDER_JMSX = (
    "JMSXUserID",
    "JMSXAppID",
    "JMSXProducerTXID",
    "JMSXConsumerTXID",
    "JMSXRcvTimestamp",
    "JMSXState",
)

_T_INT: Final = T.INT  # per delivery; a global is ~65 ns faster than an Enum member on 3.11


class Session:
    """A single-threaded context for producing and consuming messages (classic API)."""

    SESSION_TRANSACTED = 0
    AUTO_ACKNOWLEDGE = 1
    CLIENT_ACKNOWLEDGE = 2
    DUPS_OK_ACKNOWLEDGE = 3

    def __init__(self, connection: Connection, sid: int, mode: int) -> None:
        self._connection = connection
        self._id = sid
        self._mode = mode
        # _cond's lock, for paths that only need the lock (a Condition's ``with`` is two
        # Python calls, the bare lock's is C).
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        # Threads waiting in close() for pending receive() calls to return (CONS-15): only
        # then does a returning receive() notify (see MessageConsumer.receive).
        self._closers = 0
        self._closed = False
        self._closing = False
        self._consumers: dict[int, MessageConsumer] = {}
        self._producers: list[MessageProducer] = []
        self._browsers: list[QueueBrowser] = []
        self._unacked: list[tuple[int, MessageConsumer]] = []
        self._dups_pending: list[int] = []
        self._listener_thread: threading.Thread | None = None
        self._listener_ident: int | None = None
        self._in_listener: MessageConsumer | None = None
        self._current_delivery: int | None = None
        self._recovered_in_listener = False
        self._rr = 0
        self._completions: queue.SimpleQueue[Callable[[], None] | None] | None = None
        self._completion_ident: int | None = None
        self._pending_sends = 0
        self._sends_done = threading.Condition(threading.Lock())
        self._rollback_only: JMSException | None = None  # a failed async send (TX-06)
        # answered pipelined NON_PERSISTENT sends, oldest first, each with the number of
        # sends its reply vouches for (itself and the quiet ones just before it)
        self._inflight: collections.deque[tuple[PendingReply, Destination, int]] = (
            collections.deque()
        )
        self._inflight_sends = 0  # the sum of those numbers
        self._quiet = 0  # quiet sends since the last answered one
        self._send_failure: JMSException | None = None  # the first pipelined one refused
        self._epoch = 0  # links lost under this session (failover)
        self._tx_work = False  # the transaction in progress sent or received something
        self._dups_epoch = 0

    # ---- attributes ----------------------------------------------------------------------
    @property
    def transacted(self) -> bool:
        """True for a transacted session."""
        self._check_open()
        return self._mode == self.SESSION_TRANSACTED

    @property
    def acknowledge_mode(self) -> int:
        """The session mode (SESSION_TRANSACTED for a transacted session)."""
        self._check_open()
        return self._mode

    @property
    def session_mode(self) -> int:
        """Alias of :attr:`acknowledge_mode`."""
        return self.acknowledge_mode

    @property
    def connection(self) -> Connection:
        """The connection that created this session."""
        return self._connection

    @property
    def closed(self) -> bool:
        """True once closed."""
        return self._closed

    # ---- message factories (SESS, BODY) ----------------------------------------------------
    def create_message(self) -> Message:
        """A message with no body. Raises IllegalStateException if the session is closed."""
        self._check_open()
        return Message()

    def create_text_message(self, text: str | None = None) -> TextMessage:
        """A TextMessage. Raises IllegalStateException if the session is closed."""
        self._check_open()
        return TextMessage(text)

    def create_bytes_message(self) -> BytesMessage:
        """A BytesMessage (write-only until ``reset()``). Raises IllegalStateException if closed."""
        self._check_open()
        return BytesMessage()

    def create_map_message(self) -> MapMessage:
        """A MapMessage. Raises IllegalStateException if the session is closed."""
        self._check_open()
        return MapMessage()

    def create_stream_message(self) -> StreamMessage:
        """A StreamMessage (write-only until ``reset()``).

        Raises:
            IllegalStateException: the session is closed.
        """
        self._check_open()
        return StreamMessage()

    def create_object_message(self, obj: object = None) -> ObjectMessage:
        """An ObjectMessage holding a pickled copy of ``obj``.

        Raises:
            IllegalStateException: the session is closed.
            MessageFormatException: ``obj`` cannot be pickled.
        """
        self._check_open()
        msg = ObjectMessage(obj)
        msg._trusted_modules = self._connection.trusted_modules
        return msg

    # ---- destinations --------------------------------------------------------------------
    def create_queue(self, name: str) -> Queue:
        """A reference to queue ``name`` (creates nothing in the broker, PTP-02).

        Raises:
            IllegalStateException: the session is closed.
            InvalidDestinationException: an invalid name.
        """
        self._check_open()
        return Queue(name)

    def create_topic(self, name: str) -> Topic:
        """A reference to topic ``name``.

        Raises:
            IllegalStateException: the session is closed.
            InvalidDestinationException: an invalid name.
        """
        self._check_open()
        return Topic(name)

    def create_temporary_queue(self) -> TemporaryQueue:
        """A queue living as long as the connection (TMP-01).

        Raises:
            IllegalStateException: the session is closed.
        """
        self._check_open()
        reply = check_reply(self._connection.request(c.CreateTemporary(topic=False)))
        assert isinstance(reply, c.Ok) and reply.value is not None
        dest = TemporaryQueue(reply.value.partition("://")[2], owner=self._connection)
        self._connection._temporaries.add(dest)
        return dest

    def create_temporary_topic(self) -> TemporaryTopic:
        """A topic living as long as the connection (TMP-01).

        Raises:
            IllegalStateException: the session is closed.
        """
        self._check_open()
        reply = check_reply(self._connection.request(c.CreateTemporary(topic=True)))
        assert isinstance(reply, c.Ok) and reply.value is not None
        dest = TemporaryTopic(reply.value.partition("://")[2], owner=self._connection)
        self._connection._temporaries.add(dest)
        return dest

    # ---- producers, consumers, browsers ------------------------------------------------------
    def create_producer(self, destination: Destination | None = None) -> MessageProducer:
        """A producer bound to ``destination``, or anonymous for None (PROD-01).

        Raises:
            IllegalStateException: the session is closed.
            InvalidDestinationException: ``destination`` is not a ternmq destination.
        """
        from ternmq.client.producer import MessageProducer

        self._check_open()
        if destination is not None and not isinstance(destination, Destination):
            raise InvalidDestinationException(f"{destination!r} is not a ternmq Queue or Topic")
        producer = MessageProducer(self, destination)
        self._producers.append(producer)
        return producer

    def create_consumer(
        self,
        destination: Destination,
        message_selector: str | None = None,
        no_local: bool = False,
    ) -> MessageConsumer:
        """A consumer of a queue, or of a new non-durable subscription on a topic (CONS, SUB-06).

        Raises:
            IllegalStateException: the session is closed.
            InvalidDestinationException: None, a foreign object, an unknown or deleted
                destination, or another connection's temporary destination.
            InvalidSelectorException: a malformed selector.
        """
        return self._consumer(destination, message_selector, no_local, "none", None)

    def create_durable_consumer(
        self,
        topic: Topic,
        name: str,
        message_selector: str | None = None,
        no_local: bool = False,
    ) -> MessageConsumer:
        """A consumer of the unshared durable subscription ``name`` (SUB-16..SUB-23).

        Raises:
            IllegalStateException: no client id is set, or the subscription has a consumer.
            InvalidDestinationException: not a (non-temporary) topic, or an invalid name.
            InvalidSelectorException: a malformed selector.
        """
        self._check_topic(topic)
        if self._connection.client_id is None:
            self._check_open()
            raise IllegalStateException(
                "create_durable_consumer needs a client id: set connection.client_id first, "
                "or use create_shared_durable_consumer"
            )
        return self._consumer(topic, message_selector, no_local, "durable", name)

    create_durable_subscriber = create_durable_consumer

    def create_shared_consumer(
        self, topic: Topic, name: str, message_selector: str | None = None
    ) -> MessageConsumer:
        """A consumer of the shared non-durable subscription ``name`` (SUB-09..SUB-13).

        Raises:
            IllegalStateException: the subscription exists with another topic or selector.
            InvalidDestinationException: not a topic, or an invalid name.
            InvalidSelectorException: a malformed selector.
        """
        self._check_topic(topic)
        return self._consumer(topic, message_selector, False, "shared", name)

    def create_shared_durable_consumer(
        self, topic: Topic, name: str, message_selector: str | None = None
    ) -> MessageConsumer:
        """A consumer of the shared durable subscription ``name`` (SUB-24..SUB-26).

        Raises:
            IllegalStateException: the name is an unshared durable subscription, or it has
                consumers with another topic or selector.
            InvalidDestinationException: not a (non-temporary) topic, or an invalid name.
            InvalidSelectorException: a malformed selector.
        """
        self._check_topic(topic)
        return self._consumer(topic, message_selector, False, "shared_durable", name)

    def _check_topic(self, topic: object) -> None:
        self._check_open()
        if not isinstance(topic, Topic):
            raise InvalidDestinationException(f"a topic is required here, not {topic!r}")

    def _consumer(
        self,
        destination: object,
        selector: str | None,
        no_local: bool,
        kind: c.SubscriptionKind,
        name: str | None,
    ) -> MessageConsumer:
        from ternmq.client.consumer import MessageConsumer

        self._check_open()
        if destination is None or not isinstance(destination, Destination):
            raise InvalidDestinationException(
                f"{destination!r} is not a ternmq Queue or Topic: pass one"
            )
        if kind != "none" and (not isinstance(name, str) or not name):
            raise InvalidDestinationException(
                f"invalid subscription name {name!r}: use a non-empty str"
            )
        compiled = compile_selector(selector)
        self._connection._lock_client_id()
        conn = self._connection
        cid = conn.next_id()
        prefetch = conn.prefetch
        consumer = MessageConsumer(self, cid, destination, selector, no_local, prefetch)
        consumer._kind = kind
        consumer._subscription = name
        consumer._selector_text = compiled.text if compiled is not None else None
        conn._consumers[cid] = consumer
        credit = prefetch if conn.started else 0
        try:
            check_reply(conn.request(consumer._create_request(credit)))
        except JMSException:
            conn._consumers.pop(cid, None)
            raise
        consumer._credit_granted = credit > 0 or prefetch == 0
        with self._cond:
            self._consumers[cid] = consumer
        return consumer

    def create_browser(self, queue: Queue, message_selector: str | None = None) -> QueueBrowser:
        """A browser over ``queue`` (PTP-08..PTP-14).

        Raises:
            IllegalStateException: the session is closed.
            InvalidDestinationException: None or a topic, or a temporary queue that is
                deleted or belongs to another connection (TMP-03, TMP-07).
            InvalidSelectorException: a malformed selector.
        """
        from ternmq.client.consumer import QueueBrowser

        self._check_open()
        if not isinstance(queue, Queue):
            raise InvalidDestinationException(f"a queue is required to browse, not {queue!r}")
        compile_selector(message_selector)
        # Ask the broker now: it knows whether the queue exists (auto-create off, deleted
        # temporary queue) and who owns a temporary one (PSF-06, TMP-03, TMP-07).
        check_reply(self._connection.request(c.Browse(destination=str(queue), limit=0)))
        browser = QueueBrowser(self, queue, message_selector)
        self._browsers.append(browser)
        return browser

    def unsubscribe(self, name: str) -> None:
        """Delete the durable subscription ``name`` of this connection's client id (SUB-27..31).

        Raises:
            IllegalStateException: it has an active consumer, or this session holds
                unacknowledged messages of it.
            InvalidDestinationException: no such subscription.
        """
        self._check_open()
        check_reply(self._connection.request(c.Unsubscribe(session_id=self._id, name=name)))

    # ---- acknowledgement, transactions, recovery ---------------------------------------------
    def commit(self) -> None:
        """Commit the transaction: sends become visible, received messages are acknowledged
        (TX-01..TX-04).

        Raises:
            IllegalStateException: not transacted, closed, or called from a completion listener.
            TransactionRolledBackException: the broker rolled the transaction back.
        """
        self._check_open()
        self._check_not_in_completion("commit()")
        if self._mode != self.SESSION_TRANSACTED:
            raise IllegalStateException("commit() is only for transacted sessions")
        self._wait_sends()
        failed, self._rollback_only = self._rollback_only, None
        self._send_failure = None  # reported as the rollback below
        if failed is not None:  # TX-06, PROD-32: the outcome is a rollback (TX-04)
            self._tx_work = False
            self._release(c.Rollback)
            raise TransactionRolledBackException(
                f"the transaction was rolled back: {failed}", linked_exception=failed
            )
        with self._cond:
            ids = [d for d, _ in self._unacked]
            epoch = self._epoch
        try:
            reply = self._connection.request(
                c.Commit(session_id=self._id, delivered=ids), self, epoch
            )
        except JMSException:
            self._tx_work = False
            self._forget_lost_transaction(epoch)
            raise
        self._tx_work = False
        if isinstance(reply, c.Released):  # the link was lost first: rolled back instead
            self._forget_lost_transaction(epoch)
            raise TransactionRolledBackException(
                "the transaction was rolled back: the connection to the broker was lost "
                "before commit() reached it (failover)"
            )
        if isinstance(reply, c.Error) and reply.kind == TransactionRolledBackException.__name__:
            # The broker rolled back: release through the normal path so that the client drops
            # the deliveries the broker takes back (no stale prefetched copies, TX-06).
            self._release(c.Rollback)
            check_reply(reply)
        with self._cond:
            self._unacked = [(d, k) for d, k in self._unacked if d not in set(ids)]
        check_reply(reply)

    def _forget_lost_transaction(self, epoch: int) -> None:
        """commit() failed with the link: once the reconnect has made this session drop the
        old link's state, the transaction it marked rollback-only is over (committed or not,
        the caller was told); the next one starts clean."""
        if self._connection._failover is None:
            return
        with self._cond:
            self._cond.wait_for(lambda: self._epoch != epoch or self._closed, timeout=30)
        self._rollback_only = None

    def rollback(self) -> None:
        """Roll back: sends are discarded, received messages come back (redelivered) (TX).

        Raises:
            IllegalStateException: not transacted, closed, or called from a completion listener.
        """
        self._check_open()
        self._check_not_in_completion("rollback()")
        if self._mode != self.SESSION_TRANSACTED:
            raise IllegalStateException("rollback() is only for transacted sessions")
        self._wait_sends()
        self._rollback_only = None
        self._send_failure = None  # rolled back with the transaction
        self._tx_work = False
        self._release(c.Rollback)

    def recover(self) -> None:
        """Stop and restart delivery from the oldest unacknowledged message (SESS-21..SESS-24).

        Raises:
            IllegalStateException: the session is transacted or closed.
        """
        self._check_open()
        if self._mode == self.SESSION_TRANSACTED:
            raise IllegalStateException(
                "recover() is not allowed in a transacted session: use rollback()"
            )
        if threading.get_ident() == self._listener_ident and self._current_delivery is not None:
            self._recovered_in_listener = True
        self._flush_dups()
        self._release(c.Release)

    def _release(self, cmd: type[c.Release] | type[c.Rollback]) -> None:
        with self._cond:
            delivered = [d for d, _ in self._unacked]
            cur = self._current_delivery
            if cur is not None and self._recovered_in_listener and cur not in delivered:
                delivered.append(cur)
            epoch = self._epoch
        self._release_ids(cmd(session_id=self._id, delivered=delivered), epoch)

    def _release_ids(self, req: c.Release | c.Rollback, epoch: int) -> None:
        reply = check_reply(self._connection.request(req, self, epoch))
        if isinstance(reply, c.Released):
            self._drop_released(reply.delivery_ids)

    def _scrub(self, req: c.Request) -> c.Request | None:
        """Failover: ``req`` carries delivery ids of a lost link. Return what may still go to
        the new link (the broker took those deliveries back already), or None for nothing."""
        if isinstance(req, (c.Ack, c.Expired)):
            return None
        if isinstance(req, c.Commit):  # the transaction died with the link
            return c.Rollback(corr=req.corr, session_id=req.session_id)
        if isinstance(req, (c.Rollback, c.Release, c.CloseSession, c.CloseConsumer)):
            return msgspec.structs.replace(req, delivered=[])
        return req

    def _on_link_lost(self) -> None:
        """Failover, before the new link exists: forget every delivery of the old one (the
        broker returns them to their queues), and doom a transaction that did any work."""
        with self._cond:
            self._epoch += 1
            self._unacked = []
            self._dups_pending = []
            for consumer in self._consumers.values():
                consumer._buffer.clear()
                consumer._consumed = 0
            if self._mode == self.SESSION_TRANSACTED and self._tx_work and not self._rollback_only:
                self._rollback_only = JMSException(
                    "the connection to the broker was lost while it was in progress, and "
                    "the broker rolled back its sends and receives (failover)"
                )
            self._cond.notify_all()

    def _drop_released(self, ids: list[int]) -> None:
        gone = set(ids)
        with self._cond:
            self._unacked = [(d, k) for d, k in self._unacked if d not in gone]
            for consumer in self._consumers.values():
                buf = consumer._buffer
                if buf and any(d.delivery_id in gone for d in buf):
                    kept = [d for d in buf if d.delivery_id not in gone]
                    buf.clear()
                    buf.extend(kept)

    def _acknowledge_all(self) -> None:
        """CLIENT_ACKNOWLEDGE: acknowledge every message this session handed out (SESS-16)."""
        if self._closed:
            raise IllegalStateException("cannot acknowledge: the session is closed")
        with self._cond:
            ids = [d for d, _ in self._unacked]
            self._unacked = []
            epoch = self._epoch
        if ids:
            check_reply(
                self._connection.request(c.Ack(session_id=self._id, delivery_ids=ids), self, epoch)
            )

    def _check_ack_open(self) -> None:
        """AUTO, DUPS_OK, transacted: ``message.acknowledge()`` does nothing (SESS-17) but
        raises IllegalStateException once the session is closed (SESS-18)."""
        if self._closed:
            raise IllegalStateException("cannot acknowledge: the session is closed")

    def acknowledge(self) -> None:
        """Acknowledge every message consumed in this session (CLIENT_ACKNOWLEDGE; a no-op in
        other modes).

        Raises:
            IllegalStateException: the session is closed.
        """
        self._check_open()
        if self._mode == self.CLIENT_ACKNOWLEDGE:
            self._acknowledge_all()

    def _wait_closing(self, done: Callable[[], bool]) -> None:
        """Under ``_cond``: wait until ``done()``, counted in ``_closers`` so that the
        receive() calls it waits for notify when they return."""
        self._closers += 1
        try:
            self._cond.wait_for(done)
        finally:
            self._closers -= 1

    # ---- hand-over: the one path from buffer to application ----------------------------------
    def _hand_over(self, consumer: MessageConsumer, d: c.Deliver, epoch: int) -> Message | None:
        """Turn a delivery read in ``epoch`` into the application's message, or None if it
        expired (REL-23) or came on a link lost since (the broker redelivers it). Called
        without the session lock."""
        conn = self._connection
        if epoch != self._epoch:
            return None
        if d.expiration and conn.clock.now_ms() >= d.expiration:
            conn.oneway(c.Expired(session_id=self._id, delivery_ids=[d.delivery_id]), self, epoch)
            consumer._consumed_one(epoch)
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
        if self._mode == self.CLIENT_ACKNOWLEDGE:
            msg._ack_hook = self._acknowledge_all
        else:  # SESS-17: a no-op in other modes, but SESS-18: refused once closed
            msg._ack_hook = self._check_ack_open
        if self._mode in (self.CLIENT_ACKNOWLEDGE, self.SESSION_TRANSACTED):
            with self._cond:
                if epoch != self._epoch:
                    return None
                self._unacked.append((d.delivery_id, consumer))
                self._tx_work = True
        consumer._consumed_one(epoch)
        return msg

    def _after_receive(self, did: int, epoch: int) -> None:
        """Automatic acknowledgement after ``receive`` returned a message read in ``epoch``."""
        mode = self._mode
        if mode == self.AUTO_ACKNOWLEDGE:
            # Written at once, never lazy: only the last consumed message may come back
            # after a failure (REL-05); DUPS_OK_ACKNOWLEDGE is the batched mode.
            self._connection.oneway(c.Ack(session_id=self._id, delivery_ids=[did]), self, epoch)
        elif mode == self.DUPS_OK_ACKNOWLEDGE:
            if epoch != self._dups_epoch:
                self._dups_pending = []  # ids of a lost link: the broker took them back
                self._dups_epoch = epoch
            self._dups_pending.append(did)
            if len(self._dups_pending) >= DUPS_OK_BATCH:
                self._flush_dups()

    def _flush_dups(self) -> None:
        if self._dups_pending:
            ids, self._dups_pending = self._dups_pending, []
            self._connection.oneway(
                c.Ack(session_id=self._id, delivery_ids=ids), self, self._dups_epoch
            )

    # ---- listener thread ---------------------------------------------------------------------
    def _listener_changed(self) -> None:
        with self._cond:
            if self._listener_thread is None and any(
                k._listener is not None for k in self._consumers.values()
            ):
                self._listener_thread = threading.Thread(
                    target=self._listener_loop, name=f"ternmq-session-{self._id}", daemon=True
                )
                self._listener_thread.start()
            self._cond.notify_all()

    def _next_for_listener(self) -> tuple[MessageConsumer, c.Deliver] | None:
        """Under the lock: the next delivery for a listener, round-robin over consumers."""
        if not self._connection.started:
            return None
        consumers = [k for k in self._consumers.values() if k._listener is not None and k._buffer]
        if not consumers:
            return None
        self._rr = (self._rr + 1) % len(consumers)
        k = consumers[self._rr]
        return k, k._buffer.popleft()

    def _listener_loop(self) -> None:
        self._listener_ident = threading.get_ident()
        conn = self._connection
        conn._listener_threads.add(self._listener_ident)
        try:
            while True:
                with self._cond:
                    item = self._next_for_listener()
                    while item is None:
                        if self._closing or self._closed:
                            return
                        self._cond.wait()
                        item = self._next_for_listener()
                    consumer, d = item
                    self._in_listener = consumer
                    self._current_delivery = d.delivery_id
                    epoch = self._epoch
                try:
                    self._run_listener(consumer, d, epoch)
                finally:
                    with self._cond:
                        self._in_listener = None
                        self._current_delivery = None
                        self._recovered_in_listener = False
                        self._cond.notify_all()
                        idle = not any(k._buffer for k in self._consumers.values())
                if idle:
                    conn.flush()  # nothing to run next: what the listener pipelined goes now
        finally:
            conn._listener_threads.discard(self._listener_ident)
            with self._cond:
                self._listener_thread = None

    def _run_listener(self, consumer: MessageConsumer, d: c.Deliver, epoch: int) -> None:
        msg = self._hand_over(consumer, d, epoch)
        if msg is None:
            return
        listener = consumer._listener
        failed = False
        try:
            if listener is not None:
                listener(msg)
        except Exception:
            failed = True
            log.exception("message listener of consumer %s raised", consumer._id)
        if self._closed or self._recovered_in_listener:
            return
        mode = self._mode
        if mode in (self.AUTO_ACKNOWLEDGE, self.DUPS_OK_ACKNOWLEDGE):
            if failed:  # REL-17: redeliver at once
                self._flush_dups()
                with self._cond:
                    delivered = [x for x, _ in self._unacked] + [d.delivery_id]
                try:
                    self._release_ids(c.Release(session_id=self._id, delivered=delivered), epoch)
                except JMSException:
                    log.exception("could not return a failed message")
            else:
                self._after_receive(d.delivery_id, epoch)

    # ---- stop / close ----------------------------------------------------------------------
    def _on_connection_started(self) -> None:
        for consumer in list(self._consumers.values()):
            consumer._grant_initial_credit()
        with self._cond:
            self._cond.notify_all()

    def _wait_listener_idle(self) -> None:
        if threading.get_ident() == self._listener_ident:
            return
        with self._cond:
            self._cond.wait_for(lambda: self._in_listener is None)

    def _check_open(self) -> None:
        if self._closed:
            self._connection._check_open()  # a failed connection links its failure
            raise IllegalStateException("the session is closed")
        self._connection._check_open()

    def _check_not_in_completion(self, what: str) -> None:
        if threading.get_ident() == self._completion_ident:
            raise IllegalStateException(
                f"{what} cannot be called from a completion listener of its own session"
            )

    def close(self) -> None:
        """Close the session: wait for a running listener, roll back a transaction, return
        unacknowledged messages, close consumers, producers and browsers (SESS-27..SESS-30).

        Raises:
            IllegalStateException: called from one of this session's message listeners or
                completion listeners.
        """
        if threading.get_ident() == self._listener_ident:
            raise IllegalStateException(
                "a session cannot be closed from one of its own message listeners"
            )
        self._check_not_in_completion("close()")
        self._close(from_connection=False)

    def _close(self, from_connection: bool) -> None:
        with self._cond:
            if self._closed or self._closing:
                return
            self._closing = True
            self._cond.notify_all()
        self._wait_listener_idle()
        with self._cond:  # pending receives return before close does (CONN-18, SESS-27)
            self._wait_closing(lambda: not any(k._receiving for k in self._consumers.values()))
        self._wait_sends()
        self._flush_dups()
        with self._cond:
            delivered = [d for d, _ in self._unacked] if self._mode != self.AUTO_ACKNOWLEDGE else []
            consumers = list(self._consumers.values())
            epoch = self._epoch
        try:
            if not self._connection._failure:
                reply = self._connection.request(
                    c.CloseSession(session_id=self._id, delivered=delivered), self, epoch
                )
                check_reply(reply)
        except JMSException:
            log.debug("closing session %s on a failed link", self._id)
        with self._cond:
            self._closed = True
            self._unacked = []
            for k in consumers:
                k._mark_closed()
            self._consumers.clear()
            self._cond.notify_all()
        for k in consumers:
            self._connection._consumers.pop(k._id, None)
        for p in self._producers:
            p._closed = True
        for b in self._browsers:
            b._closed = True
        if self._completions is not None:
            self._completions.put(None)
        if not from_connection:
            self._connection._remove_session(self)

    def _abort(self) -> None:
        """The connection failed: everything ends, receives return None (A-10)."""
        with self._cond:
            self._closed = True
            for k in self._consumers.values():
                k._mark_closed()
            self._cond.notify_all()

    def _remove_consumer(self, consumer: MessageConsumer) -> None:
        with self._cond:
            self._consumers.pop(consumer._id, None)
        self._connection._consumers.pop(consumer._id, None)

    # ---- asynchronous and pipelined sends ----------------------------------------------------
    def _quiet_next(self) -> bool:
        """Whether the next pipelined send may be quiet (then counted as such)."""
        if self._mode == self.SESSION_TRANSACTED:
            return False  # commit() must know every refusal before it asks: all answered
        if self._quiet + 1 < min(QUIET_RUN, SEND_WINDOW // 2):
            self._quiet += 1
            return True
        return False

    def _pipeline(self, pending: PendingReply, dest: Destination) -> None:
        """Track an answered pipelined send (it vouches for the quiet ones before it); past
        the window, wait for the oldest to be answered."""
        covers = self._quiet + 1
        self._quiet = 0
        self._inflight.append((pending, dest, covers))
        self._inflight_sends += covers
        while self._inflight_sends > SEND_WINDOW:
            self._settle_oldest()

    def _settle_oldest(self) -> None:
        pending, dest, covers = self._inflight.popleft()
        self._inflight_sends -= covers
        self._settle(pending, dest)

    def _check_sends(self) -> None:
        """Before a send: settle the pipelined sends already answered, and raise (once) the
        first refusal among them."""
        inflight = self._inflight
        while inflight and inflight[0][0].done:
            self._settle_oldest()
        failure = self._send_failure
        if failure is not None:
            self._send_failure = None
            raise failure

    def _settle(self, pending: PendingReply, dest: Destination | str) -> None:
        reply = pending.reply
        if reply is not None and type(reply) is not c.Error:
            return  # answered and accepted (set once, before the handle is released)
        try:
            check_reply(pending.result())
        except JMSException as exc:
            conn = self._connection
            if conn._failover is not None and pending.error is not None:
                if not self._closed and conn._failure is None:
                    log.warning(
                        "a pipelined NON_PERSISTENT send to %s was lost with the link", dest
                    )
                return  # at most once, as NON_PERSISTENT allows; a transaction is doomed
            self._refused(exc, dest)

    def _on_send_failed(self, event: c.SendFailed) -> None:
        """Reader thread: the broker refused a quiet send of this session."""
        self._refused(error_of(event.kind, event.message), event.destination)

    def _refused(self, exc: JMSException, dest: Destination | str) -> None:
        """Keep the first refusal of a pipelined send for the next send (and the commit)."""
        if self._closed or self._connection._failure is not None:
            return  # the link is gone: at most once, and the loss is reported already
        failure = type(exc)(
            f"a pipelined NON_PERSISTENT send to {dest} failed: {exc} "
            "(block_on_non_persistent_send=false reports it at the next send)",
            exc.error_code,
            exc,
        )
        log.warning("%s", failure)
        if self._send_failure is None:
            self._send_failure = failure
        if self._mode == self.SESSION_TRANSACTED and self._rollback_only is None:
            self._rollback_only = failure  # the next commit() rolls back (TX-06)

    def _complete_later(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` on the completion thread, after earlier completions (PROD-22..PROD-25).
        Past :data:`SEND_WINDOW` completions to come, wait for the oldest (unless called from
        a completion listener, which the wait would deadlock)."""
        if self._completions is None:
            self._completions = queue.SimpleQueue()
            threading.Thread(
                target=self._completion_loop, name=f"ternmq-completion-{self._id}", daemon=True
            ).start()
        with self._sends_done:
            if threading.get_ident() != self._completion_ident:
                self._sends_done.wait_for(lambda: self._pending_sends < SEND_WINDOW)
            self._pending_sends += 1
        self._completions.put(fn)

    def _completion_loop(self) -> None:
        self._completion_ident = threading.get_ident()
        q = self._completions
        assert q is not None
        while True:
            fn = q.get()
            if fn is None:
                return
            try:
                fn()
            except Exception:
                log.exception("a completion listener raised (ignored)")
            finally:
                with self._sends_done:
                    self._pending_sends -= 1
                    self._sends_done.notify_all()

    def _wait_sends(self) -> None:
        """Wait until every pipelined send is answered and every asynchronous send's
        completion listener has run (PROD-27)."""
        while self._inflight:
            try:
                self._settle_oldest()
            except IndexError:  # emptied by another thread meanwhile
                break
        if threading.get_ident() == self._completion_ident:
            return
        with self._sends_done:
            self._sends_done.wait_for(lambda: self._pending_sends == 0)

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Session {self._id} mode={self._mode}{' closed' if self._closed else ''}>"
