"""The simplified API: ``JMSContext``, ``JMSProducer``, ``JMSConsumer`` (JMS 2.0 §11.2;
catalog CTX).

Theory of operation
-------------------
A context is a thin façade over the classic objects (STYLE rule 3): one
:class:`~ternmq.client.connection.Connection` (shared by every context made from it with
:meth:`JMSContext.create_context`) plus one :class:`~ternmq.client.session.Session` of its own.
Every semantic rule — acknowledgement, transactions, listener serialisation, close ordering,
asynchronous sends — is the classic objects' rule; this module only adds what JMS 2.0 gives the
simplified API and the classic API lacks:

* **Runtime flavours** (EXC-03, CTX-25). Every public method is wrapped by
  :func:`~ternmq.errors.runtime_api`, so a checked ``X`` leaves as ``XRuntimeException``.
* **Shared connection, counted** (CTX-03, CTX-04). :class:`_SharedConnection` counts the open
  contexts of a connection; closing the last one closes the connection, which deletes its
  temporary destinations (TMP-05).
* **Client id as the first action** (CTX-07, A-23). A context is a small state machine
  (:data:`_TRANSITIONS`): ``FRESH`` (made by ``ConnectionFactory.create_context``, nothing done
  yet) -> ``IN_USE`` (any call or attribute assignment but ``client_id = ...``) -> ``CLOSED``.
  The session is created lazily on the first call that needs it, so that a fresh context's
  connection still accepts a client id.
* **Auto-start** (CTX-08, A-06): each consumer-creating call starts the connection while
  ``auto_start`` is true.
* **receive_body** (CTX-35, CTX-36). The session's single hand-over path
  (``DeliveryLedger.hand_over``: buffer -> application) is wrapped once per context. When the thread
  is inside ``receive_body(cls)``, the wrapper checks the body there: in a transacted or
  CLIENT_ACKNOWLEDGE context the message already counts as delivered and unacknowledged (the
  classic path put it there), so the check simply raises; in AUTO/DUPS_OK the delivery goes
  back to the head of the consumer's buffer *before* the automatic acknowledgement, so it is
  handed over again next with unchanged redelivery markers. The same wrapper routes
  ``message.acknowledge()`` on a message from a closed context to
  ``IllegalStateRuntimeException`` (CTX-06).
* **Producer settings** (CTX-26..CTX-33). A :class:`JMSProducer` holds its settings and a
  template message for properties and headers; all producers of a context send through one
  anonymous classic ``MessageProducer`` with per-send overrides.
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Protocol, TypeVar

from ternmq.client._jms_consumer import JMSConsumer
from ternmq.client._jms_producer import JMSProducer
from ternmq.client.consumer import MessageConsumer, QueueBrowser
from ternmq.client.producer import (
    MessageProducer,
)
from ternmq.client.session import Session
from ternmq.destination import Destination, Queue, TemporaryQueue, TemporaryTopic, Topic
from ternmq.errors import (
    IllegalStateException,
    IllegalStateRuntimeException,
    JMSException,
    JMSRuntimeException,
    MessageFormatException,
    MessageFormatRuntimeException,
    runtime_api,
    to_runtime,
)
from ternmq.message import (
    BytesMessage,
    MapMessage,
    Message,
    ObjectMessage,
    StreamMessage,
    TextMessage,
)

if TYPE_CHECKING:
    from ternmq.client._metadata import ConnectionMetaData
    from ternmq.client._types import ConsumerPort
    from ternmq.protocol import commands as c

__all__ = ["JMSConsumer", "JMSContext", "JMSProducer"]

ExceptionListener = Callable[[JMSRuntimeException], object]
MessageListener = Callable[[Message], object]

_T = TypeVar("_T")


class ContextConnection(Protocol):
    """What a context needs of its connection (a ``Connection``; this module does not import
    the connection's, which imports this one for ``ConnectionFactory.create_context``)."""

    exception_listener: Callable[[JMSException], object] | None

    @property
    def client_id(self) -> str | None:
        """The client identifier, or None."""
        ...

    @client_id.setter
    def client_id(self, value: str) -> None:
        """Set the client identifier (the first action only)."""
        ...

    @property
    def metadata(self) -> ConnectionMetaData:
        """Provider and JMS version information."""
        ...

    def create_session(self, transacted: bool | int = False, acknowledge_mode: int = 1) -> Session:
        """Create a session.

        Raises:
            IllegalStateException: the connection is closed.
        """
        ...

    def start(self) -> None:
        """Start delivery.

        Raises:
            IllegalStateException: the connection is closed.
        """
        ...

    def stop(self) -> None:
        """Pause delivery.

        Raises:
            IllegalStateException: the connection is closed, or called from a listener.
        """
        ...

    def close(self) -> None:
        """Close the connection.

        Raises:
            IllegalStateException: called from a listener of this connection.
        """
        ...

    def _check_open(self) -> None:
        """Raise IllegalStateException if the connection is closed or failed."""
        ...


class ContextFactory(Protocol):
    """What a context needs of its connection factory (a ``ConnectionFactory``)."""

    def create_connection(
        self, user: str | None = None, password: str | None = None
    ) -> ContextConnection:
        """Open a connection.

        Raises:
            JMSException: the broker cannot be reached or refused the credentials.
        """
        ...


_MODES = (
    Session.SESSION_TRANSACTED,
    Session.AUTO_ACKNOWLEDGE,
    Session.CLIENT_ACKNOWLEDGE,
    Session.DUPS_OK_ACKNOWLEDGE,
)


def _check_session_mode(mode: object) -> int:
    """Return ``mode`` if it is one of the four JMS session modes (A-15)."""
    if isinstance(mode, bool) or not isinstance(mode, int) or mode not in _MODES:
        raise JMSRuntimeException(
            f"invalid session mode {mode!r}: use JMSContext.SESSION_TRANSACTED (0), "
            "AUTO_ACKNOWLEDGE (1), CLIENT_ACKNOWLEDGE (2) or DUPS_OK_ACKNOWLEDGE (3)"
        )
    return mode


class _State(enum.Enum):
    FRESH = "fresh"  # made by ConnectionFactory.create_context, nothing done yet
    IN_USE = "in use"
    CLOSED = "closed"


# Legal state changes of a context (STYLE rule 2). "act" is any call or attribute assignment
# other than setting the client id; a pair not listed is refused with
# IllegalStateRuntimeException.
_TRANSITIONS: dict[tuple[_State, str], _State] = {
    (_State.FRESH, "act"): _State.IN_USE,
    (_State.IN_USE, "act"): _State.IN_USE,
    (_State.FRESH, "set_client_id"): _State.IN_USE,
    (_State.FRESH, "close"): _State.CLOSED,
    (_State.IN_USE, "close"): _State.CLOSED,
    (_State.CLOSED, "close"): _State.CLOSED,
}


class _SharedConnection:
    """The connection behind one or more sibling contexts, with their count (CTX-03, CTX-04)."""

    def __init__(self, connection: ContextConnection) -> None:
        self.connection = connection
        self.lock = threading.Lock()
        self.open_contexts = 1
        self.exception_listener: ExceptionListener | None = None

    def acquire(self) -> None:
        with self.lock:
            if self.open_contexts == 0:
                raise IllegalStateRuntimeException("the connection of this context is closed")
            self.open_contexts += 1

    def release(self) -> bool:
        """Count one context less; True when it was the last one."""
        with self.lock:
            self.open_contexts -= 1
            return self.open_contexts == 0

    def relay(self, exc: JMSException) -> None:
        """The connection's exception listener: pass the runtime flavour on (CTX-10, A-25)."""
        listener = self.exception_listener
        if listener is not None:
            listener(to_runtime(exc))


class _BodyRequest:
    """What a thread inside ``receive_body`` wants from the hand-over."""

    __slots__ = ("body", "cls", "consumer")

    def __init__(self, consumer: MessageConsumer, cls: type[object]) -> None:
        self.consumer = consumer
        self.cls = cls
        self.body: object = None


class JMSContext:
    """One connection and one session, for the simplified API (JMS 2.0 §11.2, CTX).

    Create it with :meth:`ConnectionFactory.create_context` or :meth:`create_context`; use it
    as a context manager. Every method raises only runtime exceptions
    (``JMSRuntimeException`` and its subclasses, each also an instance of its classic twin);
    Python argument errors stay ``ValueError`` / ``TypeError``.
    """

    SESSION_TRANSACTED = Session.SESSION_TRANSACTED
    AUTO_ACKNOWLEDGE = Session.AUTO_ACKNOWLEDGE
    CLIENT_ACKNOWLEDGE = Session.CLIENT_ACKNOWLEDGE
    DUPS_OK_ACKNOWLEDGE = Session.DUPS_OK_ACKNOWLEDGE

    def __init__(self, shared: _SharedConnection, session_mode: int, fresh: bool) -> None:
        """Internal: use :meth:`ConnectionFactory.create_context` or :meth:`create_context`."""
        self._shared = shared
        self._mode = session_mode
        self._state = _State.FRESH if fresh else _State.IN_USE
        self._lock = threading.RLock()
        self._close_lock = threading.Lock()
        self._session: Session | None = None
        self._producer: MessageProducer | None = None
        self._send_lock = threading.RLock()
        self._auto_start = True
        self._body_requests = threading.local()

    @classmethod
    def _create(
        cls,
        factory: ContextFactory,
        user: str | None,
        password: str | None,
        session_mode: int,
    ) -> JMSContext:
        """Open a connection for a new context (``ConnectionFactory.create_context``).

        Raises:
            JMSRuntimeException: an invalid session mode, or the broker cannot be reached.
            JMSSecurityRuntimeException: bad credentials.
        """
        mode = _check_session_mode(session_mode)
        try:
            connection = factory.create_connection(user, password)
        except JMSException as exc:
            raise to_runtime(exc) from exc
        return cls(_SharedConnection(connection), mode, fresh=True)

    # ---- state ---------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._state is _State.CLOSED:
            raise IllegalStateRuntimeException("the JMSContext is closed")
        self._shared.connection._check_open()

    def _transition(self, event: str) -> None:
        with self._lock:
            nxt = _TRANSITIONS.get((self._state, event))
            if nxt is None:
                if self._state is _State.CLOSED:
                    raise IllegalStateRuntimeException("the JMSContext is closed")
                raise IllegalStateRuntimeException(
                    "the client id of a JMSContext can only be set as the very first action "
                    "on a context made by ConnectionFactory.create_context (configure it on "
                    "the factory, or set it before anything else)"
                )
            self._state = nxt

    def _act(self) -> None:
        """Check the context is open and record that it has been used (A-23)."""
        self._check_open()
        self._transition("act")

    def _use(self) -> Session:
        """``_act`` and return the session, creating it on first use."""
        self._act()
        with self._lock:
            session = self._session
            if session is None:
                session = self._shared.connection.create_session(self._mode)
                self._install_hand_over(session)
                self._session = session
            return session

    def _install_hand_over(self, session: Session) -> None:
        """Wrap the session's one hand-over path (see the module docstring)."""
        ledger = session._ledger
        original = ledger.hand_over

        def hand_over(consumer: ConsumerPort, d: c.Deliver, epoch: int) -> Message | None:
            msg = original(consumer, d, epoch)
            if msg is None:
                return None
            ack = msg._ack_hook
            if ack is not None:
                msg._ack_hook = self._wrap_acknowledge(ack)
            request: _BodyRequest | None = getattr(self._body_requests, "request", None)
            if request is not None and request.consumer is consumer:
                self._take_body(session, request.consumer, d, msg, request)
            return msg

        ledger.hand_over = hand_over

    def _take_body(
        self,
        session: Session,
        consumer: MessageConsumer,
        d: c.Deliver,
        msg: Message,
        request: _BodyRequest,
    ) -> None:
        """Check and extract the body for ``receive_body`` (CTX-35, CTX-36)."""
        cls = request.cls
        try:
            body = msg.get_body(cls)
            problem = None if body is not None else "it has no body"
        except MessageFormatException as exc:
            body, problem = None, str(exc)
        if problem is None:
            request.body = body
            return
        if self._mode in (self.AUTO_ACKNOWLEDGE, self.DUPS_OK_ACKNOWLEDGE):
            # Not consumed: back to the head of the buffer before the automatic
            # acknowledgement, so it comes next with unchanged markers (CTX-36, HDR-28).
            with session._cond:
                if not consumer._closed:
                    consumer._buffer.appendleft(d)
                    if consumer._prefetch:
                        consumer._consumed -= 1  # its credit was returned by the hand-over
        raise MessageFormatRuntimeException(
            f"receive_body({cls.__name__}): the next {type(msg).__name__} cannot be returned "
            f"as {cls.__name__}: {problem}; use receive() to get the message itself"
        )

    def _wrap_acknowledge(self, ack: Callable[[], None]) -> Callable[[], None]:
        def acknowledge() -> None:
            if self._state is _State.CLOSED:
                raise IllegalStateRuntimeException(
                    "cannot acknowledge: the JMSContext that received this message is closed"
                )
            try:
                ack()
            except IllegalStateException as exc:
                raise to_runtime(exc) from exc

        return acknowledge

    # ---- attributes ------------------------------------------------------------------------
    @property
    @runtime_api
    def session_mode(self) -> int:
        """The session mode given at creation (CTX-02).

        Raises:
            IllegalStateRuntimeException: the context is closed.
        """
        self._check_open()
        return self._mode

    @property
    @runtime_api
    def transacted(self) -> bool:
        """True exactly when the mode is ``SESSION_TRANSACTED`` (CTX-02).

        Raises:
            IllegalStateRuntimeException: the context is closed.
        """
        self._check_open()
        return self._mode == self.SESSION_TRANSACTED

    @property
    @runtime_api
    def client_id(self) -> str | None:
        """The connection's client id, or None (CTX-07). Reading it (like reading any other
        attribute) is not an action.

        Setting it is allowed only as the first action on a context made by
        ``ConnectionFactory.create_context``.

        Raises:
            IllegalStateRuntimeException: the context is closed; or, when setting, it is not
                the first action, the context was made by ``create_context``, or the id was
                configured on the factory.
            InvalidClientIDRuntimeException: the id is invalid or used by another connection.
        """
        self._check_open()
        return self._shared.connection.client_id

    @client_id.setter
    @runtime_api
    def client_id(self, value: str) -> None:
        self._check_open()
        with self._lock:
            if (self._state, "set_client_id") not in _TRANSITIONS:
                self._transition("set_client_id")  # raises, naming the rule
            # A refused id (duplicate, invalid) leaves the context fresh: try another one.
            self._shared.connection.client_id = value
            self._transition("set_client_id")

    @property
    @runtime_api
    def auto_start(self) -> bool:
        """Whether consumer-creating calls start the connection (default True, CTX-08).

        Assigning it neither starts nor stops anything.

        Raises:
            IllegalStateRuntimeException: the context is closed.
        """
        self._check_open()
        return self._auto_start

    @auto_start.setter
    @runtime_api
    def auto_start(self, value: bool) -> None:
        self._act()
        self._auto_start = bool(value)

    @property
    @runtime_api
    def exception_listener(self) -> ExceptionListener | None:
        """The connection's exception listener, shared with sibling contexts (CTX-10).

        It is called on its own thread, one call at a time, with a ``JMSRuntimeException``
        for failures that could not be raised from an API call.

        Raises:
            IllegalStateRuntimeException: the context is closed.
        """
        self._check_open()
        return self._shared.exception_listener

    @exception_listener.setter
    @runtime_api
    def exception_listener(self, listener: ExceptionListener | None) -> None:
        self._act()
        if listener is not None and not callable(listener):
            raise TypeError("exception_listener must be callable or None")
        shared = self._shared
        shared.exception_listener = listener
        shared.connection.exception_listener = None if listener is None else shared.relay

    @property
    @runtime_api
    def metadata(self) -> ConnectionMetaData:
        """The connection's metadata (CTX-11).

        Raises:
            IllegalStateRuntimeException: the context is closed.
        """
        self._check_open()
        return self._shared.connection.metadata

    # ---- connection life cycle ------------------------------------------------------------------
    @runtime_api
    def start(self) -> None:
        """Start (or resume) delivery on the shared connection; repeated calls are ignored
        (CTX-09).

        Raises:
            IllegalStateRuntimeException: the context is closed.
        """
        self._act()
        self._shared.connection.start()

    @runtime_api
    def stop(self) -> None:
        """Pause delivery on the shared connection; returns once no listener of the
        connection runs (CTX-09). Sending still works.

        Raises:
            IllegalStateRuntimeException: the context is closed, or called from a message
                listener of any context of this connection (CTX-22).
        """
        self._act()
        self._shared.connection.stop()

    @runtime_api
    def close(self) -> None:
        """Close the context (CTX-04, CTX-05).

        Closes its session (rolling back a transaction, not acknowledging CLIENT messages,
        closing its consumers and browsers) after its running listeners, pending receives and
        asynchronous sends have finished; closes the connection when no other context shares
        it, which deletes its temporary destinations. A second call does nothing.

        Raises:
            IllegalStateRuntimeException: called from a message listener or a completion
                listener of this context (CTX-22, CTX-23).
            JMSRuntimeException: the broker refused a pipelined NON_PERSISTENT send that no
                later send reported (A-08); the context is closed all the same.
        """
        session = self._session
        if session is not None:
            # Refuse before taking the lock: the closing thread may be waiting for this very
            # callback to return.
            me = threading.get_ident()
            if me == session._listener_thread.ident:
                raise IllegalStateRuntimeException(
                    "a JMSContext cannot be closed from one of its own message listeners "
                    "(hand the close to another thread)"
                )
            if me == session._window.completion_ident:
                raise IllegalStateRuntimeException(
                    "a JMSContext cannot be closed from a completion listener of its own sends"
                )
        with self._close_lock:
            with self._lock:
                if self._state is _State.CLOSED:
                    return
                session = self._session
            refusal = session._close(from_connection=False) if session is not None else None
            with self._lock:
                self._transition("close")
            if self._shared.release():
                self._shared.connection.close()
            if refusal is not None:
                raise refusal

    def __enter__(self) -> JMSContext:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @runtime_api
    def create_context(self, session_mode: int = AUTO_ACKNOWLEDGE) -> JMSContext:
        """A new context with its own session on this context's connection (CTX-03).

        It shares the client id, started state, exception listener and metadata, and
        does not start the connection. May be called from any thread.

        Raises:
            IllegalStateRuntimeException: the context is closed.
            JMSRuntimeException: an invalid session mode.
        """
        mode = _check_session_mode(session_mode)
        self._act()
        self._shared.acquire()
        sibling = JMSContext(self._shared, mode, fresh=False)
        try:
            sibling._use()
        except BaseException:
            sibling._state = _State.CLOSED
            if self._shared.release():
                self._shared.connection.close()
            raise
        return sibling

    # ---- session-level members ---------------------------------------------------------------
    @runtime_api
    def commit(self) -> None:
        """Commit the transaction, after incomplete asynchronous sends (CTX-12).

        Raises:
            IllegalStateRuntimeException: not transacted, closed, or called from a completion
                listener of this context.
            TransactionRolledBackRuntimeException: the transaction was rolled back instead.
        """
        self._use().commit()

    @runtime_api
    def rollback(self) -> None:
        """Roll the transaction back, after incomplete asynchronous sends (CTX-12).

        Raises:
            IllegalStateRuntimeException: not transacted, closed, or called from a completion
                listener of this context.
        """
        self._use().rollback()

    @runtime_api
    def recover(self) -> None:
        """Redeliver every delivered but unacknowledged message, oldest first (CTX-13).

        Raises:
            IllegalStateRuntimeException: the context is transacted or closed.
        """
        self._use().recover()

    @runtime_api
    def acknowledge(self) -> None:
        """Acknowledge every message the context's session has consumed (CLIENT_ACKNOWLEDGE);
        does nothing in the other modes (CTX-14).

        Raises:
            IllegalStateRuntimeException: the context is closed.
        """
        self._use().acknowledge()

    # ---- message factories (CTX-15) ----------------------------------------------------------
    @runtime_api
    def create_message(self) -> Message:
        """A message with no body.

        Raises:
            IllegalStateRuntimeException: the context is closed.
        """
        return self._use().create_message()

    @runtime_api
    def create_text_message(self, text: str | None = None) -> TextMessage:
        """A TextMessage.

        Raises:
            IllegalStateRuntimeException: the context is closed.
        """
        return self._use().create_text_message(text)

    @runtime_api
    def create_bytes_message(self) -> BytesMessage:
        """A BytesMessage (write-only until ``reset()``).

        Raises:
            IllegalStateRuntimeException: the context is closed.
        """
        return self._use().create_bytes_message()

    @runtime_api
    def create_map_message(self) -> MapMessage:
        """A MapMessage.

        Raises:
            IllegalStateRuntimeException: the context is closed.
        """
        return self._use().create_map_message()

    @runtime_api
    def create_stream_message(self) -> StreamMessage:
        """A StreamMessage (write-only until ``reset()``).

        Raises:
            IllegalStateRuntimeException: the context is closed.
        """
        return self._use().create_stream_message()

    @runtime_api
    def create_object_message(self, obj: object = None) -> ObjectMessage:
        """An ObjectMessage holding a pickled copy of ``obj``.

        Raises:
            IllegalStateRuntimeException: the context is closed.
            MessageFormatRuntimeException: ``obj`` cannot be pickled.
        """
        return self._use().create_object_message(obj)

    # ---- destinations (CTX-16) ---------------------------------------------------------------
    @runtime_api
    def create_queue(self, name: str) -> Queue:
        """A reference to queue ``name``; creates nothing in the broker.

        Raises:
            IllegalStateRuntimeException: the context is closed.
            InvalidDestinationRuntimeException: an invalid name.
        """
        return self._use().create_queue(name)

    @runtime_api
    def create_topic(self, name: str) -> Topic:
        """A reference to topic ``name``; creates nothing in the broker.

        Raises:
            IllegalStateRuntimeException: the context is closed.
            InvalidDestinationRuntimeException: an invalid name.
        """
        return self._use().create_topic(name)

    @runtime_api
    def create_temporary_queue(self) -> TemporaryQueue:
        """A queue living as long as the shared connection (TMP-01).

        Raises:
            IllegalStateRuntimeException: the context is closed.
        """
        return self._use().create_temporary_queue()

    @runtime_api
    def create_temporary_topic(self) -> TemporaryTopic:
        """A topic living as long as the shared connection (TMP-01).

        Raises:
            IllegalStateRuntimeException: the context is closed.
        """
        return self._use().create_temporary_topic()

    # ---- producers, consumers, browsers ----------------------------------------------------------
    @runtime_api
    def create_producer(self) -> JMSProducer:
        """A new producer with default settings; it never starts the connection (CTX-26).

        Raises:
            IllegalStateRuntimeException: the context is closed.
        """
        self._classic_producer()
        return JMSProducer(self)

    def _classic_producer(self) -> MessageProducer:
        session = self._use()
        with self._lock:
            if self._producer is None:
                self._producer = session.create_producer(None)
            return self._producer

    def _consumer(self, make: Callable[[Session], MessageConsumer]) -> JMSConsumer:
        consumer = JMSConsumer(self, make(self._use()))
        if self._auto_start:
            self._shared.connection.start()  # CTX-08: also after an explicit stop()
        return consumer

    @runtime_api
    def create_consumer(
        self,
        destination: Destination,
        message_selector: str | None = None,
        no_local: bool = False,
    ) -> JMSConsumer:
        """A consumer of a queue, or of a new non-durable subscription on a topic (CTX-17).
        Starts the connection when ``auto_start`` is true.

        Raises:
            IllegalStateRuntimeException: the context is closed.
            InvalidDestinationRuntimeException: None, not a destination, deleted, or another
                connection's temporary destination.
            InvalidSelectorRuntimeException: a malformed selector.
        """
        return self._consumer(lambda s: s.create_consumer(destination, message_selector, no_local))

    @runtime_api
    def create_durable_consumer(
        self,
        topic: Topic,
        name: str,
        message_selector: str | None = None,
        no_local: bool = False,
    ) -> JMSConsumer:
        """A consumer of the unshared durable subscription ``name`` (CTX-18).
        Starts the connection when ``auto_start`` is true.

        Raises:
            IllegalStateRuntimeException: no client id is set, or the context is closed.
            InvalidDestinationRuntimeException: not a non-temporary topic, or a bad name.
            InvalidSelectorRuntimeException: a malformed selector.
            JMSRuntimeException: the subscription is in use or conflicts with another one.
        """
        return self._consumer(
            lambda s: s.create_durable_consumer(topic, name, message_selector, no_local)
        )

    @runtime_api
    def create_shared_consumer(
        self, topic: Topic, name: str, message_selector: str | None = None
    ) -> JMSConsumer:
        """A consumer of the shared non-durable subscription ``name`` (CTX-18).
        Starts the connection when ``auto_start`` is true.

        Raises:
            IllegalStateRuntimeException: the context is closed.
            InvalidDestinationRuntimeException: not a topic, or a bad name.
            InvalidSelectorRuntimeException: a malformed selector.
            JMSRuntimeException: the subscription conflicts with an existing one.
        """
        return self._consumer(lambda s: s.create_shared_consumer(topic, name, message_selector))

    @runtime_api
    def create_shared_durable_consumer(
        self, topic: Topic, name: str, message_selector: str | None = None
    ) -> JMSConsumer:
        """A consumer of the shared durable subscription ``name`` (CTX-18).
        Starts the connection when ``auto_start`` is true.

        Raises:
            IllegalStateRuntimeException: the context is closed.
            InvalidDestinationRuntimeException: not a non-temporary topic, or a bad name.
            InvalidSelectorRuntimeException: a malformed selector.
            JMSRuntimeException: the subscription conflicts with an existing one.
        """
        return self._consumer(
            lambda s: s.create_shared_durable_consumer(topic, name, message_selector)
        )

    @runtime_api
    def create_browser(self, queue: Queue, message_selector: str | None = None) -> QueueBrowser:
        """A browser over ``queue`` (CTX-19, PTP-08..PTP-14); it never starts the connection.
        The browser raises runtime flavours too.

        Raises:
            IllegalStateRuntimeException: the context is closed.
            InvalidDestinationRuntimeException: None or not a queue.
            InvalidSelectorRuntimeException: a malformed selector.
        """
        browser = self._use().create_browser(queue, message_selector)
        browser.__class__ = _ContextQueueBrowser
        return browser

    @runtime_api
    def unsubscribe(self, name: str) -> None:
        """Delete the durable subscription ``name`` of this client id (CTX-20, SUB-27..31).

        Raises:
            IllegalStateRuntimeException: the context is closed, or the subscription has an
                active consumer or unacknowledged messages in this context.
            InvalidDestinationRuntimeException: no such subscription.
        """
        self._use().unsubscribe(name)

    # ---- receive_body (CTX-35, CTX-36) ---------------------------------------------------------
    def _receive_body(
        self, consumer: MessageConsumer, cls: type[_T], timeout: float | None
    ) -> _T | None:
        if not isinstance(cls, type):
            raise TypeError(f"receive_body needs a class such as str or object, not {cls!r}")
        request = _BodyRequest(consumer, cls)
        self._body_requests.request = request
        try:
            msg = consumer.receive(timeout)
        finally:
            self._body_requests.request = None
        return None if msg is None else request.body  # type: ignore[return-value]

    def __repr__(self) -> str:
        return f"<JMSContext mode={self._mode} {self._state.value}>"


class _ContextQueueBrowser(QueueBrowser):
    """A QueueBrowser made by a context: the same object, raising runtime flavours (CTX-19)."""

    @property
    @runtime_api
    def queue(self) -> Queue:
        """The queue browsed.

        Raises:
            IllegalStateRuntimeException: the browser or its context is closed.
        """
        return super().queue

    @property
    @runtime_api
    def message_selector(self) -> str | None:
        """The selector (None for none or an empty one).

        Raises:
            IllegalStateRuntimeException: the browser or its context is closed.
        """
        return super().message_selector

    def __iter__(self) -> Iterator[Message]:
        """A fresh scan from the head of the queue.

        Raises:
            IllegalStateRuntimeException: the browser or its context is closed.
        """
        try:
            scan = super().__iter__()
        except JMSException as exc:
            raise to_runtime(exc) from exc
        return _runtime_iter(scan)


def _runtime_iter(it: Iterator[Message]) -> Iterator[Message]:
    try:
        yield from it
    except JMSException as exc:
        if isinstance(exc, JMSRuntimeException):
            raise
        raise to_runtime(exc) from exc
