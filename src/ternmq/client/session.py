"""Sessions: acknowledgement, recovery, local transactions, listener delivery (JMS 2.0 §4.4,
§6; catalogs SESS and TX).

Theory of operation
-------------------
A session is the hub of three small collaborators it creates and its consumers and producers
hold directly (no per-message trip through the session):

- :class:`~ternmq.client._ledger.DeliveryLedger`: the session's one lock, the hand-over from
  buffer to application, acknowledgements, the failover *epoch*, and the state of the
  transaction in progress (did it work, is it doomed);
- :class:`~ternmq.client._send_window.SendWindow`: pipelined and asynchronous sends in flight,
  the completion thread, refusals kept for the next send;
- :class:`~ternmq.client._listener.ListenerThread`: message listeners of the session, one at a
  time on its own delivery thread (SESS-06).

The session itself keeps the life cycle (open, closing, closed), creates consumers,
producers and browsers, and drives the transaction and recovery verbs (commit, rollback,
recover, acknowledge, close), which report exactly the ids in the ledger to the broker.
``commit``, ``rollback`` and ``close`` first wait for every send in flight (a quiet one the
broker holds for room holds the connection's ``Disconnect`` instead: docs/protocol.md).
The session reaches its connection through the :class:`SessionLink` protocol, so this module
does not import the connection's.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Protocol

from ternmq.client._ledger import DeliveryLedger
from ternmq.client._listener import ListenerThread
from ternmq.client._send_window import SendWindow
from ternmq.client._util import check_reply
from ternmq.client.consumer import MessageConsumer, QueueBrowser
from ternmq.client.producer import MessageProducer, ProducerLink
from ternmq.destination import (
    Destination,
    Queue,
    TemporaryOwner,
    TemporaryQueue,
    TemporaryTopic,
    Topic,
)
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
from ternmq.protocol import commands as c
from ternmq.selector import compile_selector

if TYPE_CHECKING:
    from ternmq.broker.clock import Clock

__all__ = ["Session", "SessionLink"]

log = logging.getLogger("ternmq.client")


class SessionLink(ProducerLink, TemporaryOwner, Protocol):
    """What a session needs of its connection (a :class:`~ternmq.client.connection.Connection`)."""

    clock: Clock
    _temporaries: set[Destination]
    _consumers: dict[int, MessageConsumer]

    @property
    def client_id(self) -> str | None:
        """The client identifier, or None."""
        ...

    def next_id(self) -> int:
        """A connection-unique number for sessions and consumers."""
        ...

    def _check_open(self) -> None:
        """Raise IllegalStateException if the connection is closed or failed."""
        ...

    def _lock_client_id(self) -> None:
        """The client id can no longer be set."""
        ...

    def _remove_session(self, session: Session) -> None:
        """Forget ``session`` (it closed)."""
        ...


class Session:
    """A single-threaded context for producing and consuming messages (classic API)."""

    SESSION_TRANSACTED = 0
    AUTO_ACKNOWLEDGE = 1
    CLIENT_ACKNOWLEDGE = 2
    DUPS_OK_ACKNOWLEDGE = 3

    def __init__(self, connection: SessionLink, sid: int, mode: int) -> None:
        self._connection = connection
        self._id = sid
        self._mode = mode
        self._closed = False
        self._closing = False
        self._consumers: dict[int, MessageConsumer] = {}
        self._producers: list[MessageProducer] = []
        self._browsers: list[QueueBrowser] = []
        self._ledger = ledger = DeliveryLedger(self, mode, connection, self._consumers)
        self._listener_thread = ListenerThread(self, ledger)
        self._window = SendWindow(
            sid,
            mode == self.SESSION_TRANSACTED,
            connection._failing_over,
            lambda: self._closed or connection._failure is not None,
            ledger.doom,
        )
        # the ledger's lock (and its Condition) guard the consumers' buffers: see _ledger
        self._lock = ledger.lock
        self._cond = ledger.cond

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
    def connection(self) -> SessionLink:
        """The connection that created this session."""
        return self._connection

    @property
    def closed(self) -> bool:
        """True once closed."""
        return self._closed

    # ---- message factories (SESS, BODY) ----------------------------------------------------
    def create_message(self) -> Message:
        """A message with no body. Raises IllegalStateException if the session is closed."""
        if self._closed or self._connection._closed:
            self._check_open()  # raises, saying which is closed
        return Message()

    def create_text_message(self, text: str | None = None) -> TextMessage:
        """A TextMessage. Raises IllegalStateException if the session is closed."""
        if self._closed or self._connection._closed:
            self._check_open()  # raises, saying which is closed
        return TextMessage(text)

    def create_bytes_message(self) -> BytesMessage:
        """A BytesMessage (write-only until ``reset()``). Raises IllegalStateException if closed."""
        if self._closed or self._connection._closed:
            self._check_open()  # raises, saying which is closed
        return BytesMessage()

    def create_map_message(self) -> MapMessage:
        """A MapMessage. Raises IllegalStateException if the session is closed."""
        if self._closed or self._connection._closed:
            self._check_open()  # raises, saying which is closed
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
        msg._pickle_budget = self._connection.pickle_budget
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
        self._check_open()
        if destination is not None and not isinstance(destination, Destination):
            raise InvalidDestinationException(f"{destination!r} is not a ternmq Queue or Topic")
        producer = MessageProducer(self, destination, self._window, self._ledger)
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
        consumer = MessageConsumer(
            self,
            cid,
            destination,
            selector,
            no_local,
            prefetch,
            self._ledger,
            self._listener_thread,
        )
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
        ledger = self._ledger
        self._window.wait()
        failed, ledger.rollback_only = ledger.rollback_only, None
        self._window.forget_failure()  # reported as the rollback below
        if failed is not None:  # TX-06, PROD-32: the outcome is a rollback (TX-04)
            ledger.tx_work = False
            self._release(c.Rollback)
            raise TransactionRolledBackException(
                f"the transaction was rolled back: {failed}", linked_exception=failed
            )
        with self._cond:
            ids = ledger.delivered_ids()
            epoch = ledger.epoch
        try:
            reply = self._connection.request(
                c.Commit(session_id=self._id, delivered=ids), ledger, epoch
            )
        except JMSException:
            ledger.tx_work = False
            self._forget_lost_transaction(epoch)
            raise
        ledger.tx_work = False
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
            ledger.unacked = [(d, k) for d, k in ledger.unacked if d not in set(ids)]
        check_reply(reply)

    def _forget_lost_transaction(self, epoch: int) -> None:
        """commit() failed with the link: once the reconnect has made this session drop the
        old link's state, the transaction it marked rollback-only is over (committed or not,
        the caller was told); the next one starts clean."""
        if not self._connection._failing_over:
            return
        ledger = self._ledger
        with self._cond:
            self._cond.wait_for(lambda: ledger.epoch != epoch or self._closed, timeout=30)
        ledger.rollback_only = None

    def rollback(self) -> None:
        """Roll back: sends are discarded, received messages come back (redelivered) (TX).

        Raises:
            IllegalStateException: not transacted, closed, or called from a completion listener.
        """
        self._check_open()
        self._check_not_in_completion("rollback()")
        if self._mode != self.SESSION_TRANSACTED:
            raise IllegalStateException("rollback() is only for transacted sessions")
        self._window.wait()
        self._ledger.rollback_only = None
        self._window.forget_failure()  # rolled back with the transaction
        self._ledger.tx_work = False
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
        listener = self._listener_thread
        if threading.get_ident() == listener.ident and listener.current_delivery is not None:
            listener.recovered = True
        self._ledger.flush_dups()
        self._release(c.Release)

    def _release(self, cmd: type[c.Release] | type[c.Rollback]) -> None:
        ledger = self._ledger
        listener = self._listener_thread
        with self._cond:
            delivered = ledger.delivered_ids()
            cur = listener.current_delivery
            if cur is not None and listener.recovered and cur not in delivered:
                delivered.append(cur)
            epoch = ledger.epoch
        ledger.release_ids(cmd(session_id=self._id, delivered=delivered), epoch)

    def _on_link_lost(self) -> None:
        """Failover, before the new link exists: forget every delivery of the old one."""
        self._ledger.link_lost()

    def _on_send_failed(self, event: c.SendFailed) -> None:
        """Reader thread: the broker refused a quiet send of this session."""
        self._window.on_send_failed(event)

    def acknowledge(self) -> None:
        """Acknowledge every message consumed in this session (CLIENT_ACKNOWLEDGE; a no-op in
        other modes).

        Raises:
            IllegalStateException: the session is closed.
        """
        self._check_open()
        if self._mode == self.CLIENT_ACKNOWLEDGE:
            self._ledger.acknowledge_all()

    # ---- stop / close ----------------------------------------------------------------------
    def _on_connection_started(self) -> None:
        for consumer in list(self._consumers.values()):
            consumer._grant_initial_credit()
        with self._cond:
            self._cond.notify_all()

    def _wait_listener_idle(self) -> None:
        self._listener_thread.wait_idle()

    def _check_open(self) -> None:
        if self._closed:
            self._connection._check_open()  # a failed connection links its failure
            raise IllegalStateException("the session is closed")
        self._connection._check_open()

    def _check_not_in_completion(self, what: str) -> None:
        if threading.get_ident() == self._window.completion_ident:
            raise IllegalStateException(
                f"{what} cannot be called from a completion listener of its own session"
            )

    def close(self) -> None:
        """Close the session: wait for a running listener, roll back a transaction, return
        unacknowledged messages, close consumers, producers and browsers (SESS-27..SESS-30).

        Raises:
            IllegalStateException: called from one of this session's message listeners or
                completion listeners.
            JMSException: the broker refused a pipelined NON_PERSISTENT send of this session
                that no later send reported (A-08); the session is closed all the same.
        """
        if threading.get_ident() == self._listener_thread.ident:
            raise IllegalStateException(
                "a session cannot be closed from one of its own message listeners"
            )
        self._check_not_in_completion("close()")
        refusal = self._close(from_connection=False)
        if refusal is not None:
            raise refusal

    def _close(self, from_connection: bool) -> JMSException | None:
        """Close; return the refusal of a pipelined send not reported yet (A-08: the caller
        raises it once the close is done), None in a transacted session (rolled back)."""
        ledger = self._ledger
        with self._cond:
            if self._closed or self._closing:
                return None
            self._closing = True
            self._cond.notify_all()
        self._listener_thread.wait_idle()
        with self._cond:  # pending receives return before close does (CONN-18, SESS-27)
            ledger.wait_closing(lambda: not any(k._receiving for k in self._consumers.values()))
        self._window.wait()
        ledger.flush_dups()
        with self._cond:
            delivered = ledger.delivered_ids() if self._mode != self.AUTO_ACKNOWLEDGE else []
            consumers = list(self._consumers.values())
            epoch = ledger.epoch
        try:
            if not self._connection._failure:
                reply = self._connection.request(
                    c.CloseSession(session_id=self._id, delivered=delivered), ledger, epoch
                )
                check_reply(reply)
        except JMSException:
            log.debug("closing session %s on a failed link", self._id)
        # the CloseSession reply follows every SendFailed event of this session's quiet sends
        refusal = None if self._mode == self.SESSION_TRANSACTED else self._window.failure
        self._window.forget_failure()
        with self._cond:
            self._closed = True
            ledger.unacked = []
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
        self._window.close()
        if not from_connection:
            self._connection._remove_session(self)
        return refusal

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

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Session {self._id} mode={self._mode}{' closed' if self._closed else ''}>"
