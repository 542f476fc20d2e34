"""Message producers (JMS 2.0 §4.6, §7.3; catalog PROD).

A send stamps the provider-set headers on the application's message object (HDR-03,
PROD-07), encodes it once (so later changes to the object do not touch what was sent,
PROD-29), and hands the bytes to the broker. A synchronous send returns after the broker's
receipt; an asynchronous one returns at once and its completion listener runs later on the
session's completion thread, in send order. By default (``block_on_non_persistent_send``
false, a factory option, catalog A-08) a synchronous NON_PERSISTENT send does not wait
either: it is pipelined, and a failure the broker reports is raised by the session's next
send, its commit, or the close of the session (context, connection).
At most :data:`~ternmq.client._send_window.SEND_WINDOW` sends of a session are in flight;
past that the sender waits for the oldest, so a broker that holds receipts back (a full
destination under the "block" policy) slows its producers down.

A producer holds its session's :class:`~ternmq.client._send_window.SendWindow` (sends in
flight) and :class:`~ternmq.client._ledger.DeliveryLedger` (whether the transaction did work,
whether it is doomed) directly; what it needs of the session itself is the small
:class:`ProducerSession` protocol, so this module does not import the session's. ``send``
checks its arguments and the closed flags (the ``_check_open`` chain runs only to raise),
then makes one call: a synchronous send is :class:`~ternmq.client._hot.Sender`'s (compiled),
a send with a completion listener stays here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from ternmq.client._foreign import adopt, is_foreign_message, write_back
from ternmq.client._hot import Sender
from ternmq.client._types import Link
from ternmq.client._util import check_reply
from ternmq.destination import Destination
from ternmq.errors import (
    IllegalStateException,
    InvalidDestinationException,
    JMSException,
    MessageFormatException,
    UnsupportedOperationException,
)
from ternmq.message import DeliveryMode, Message

if TYPE_CHECKING:
    from ternmq.client._hot import MessageIds
    from ternmq.client._ledger import DeliveryLedger
    from ternmq.client._send_window import SendWindow
    from ternmq.transport._pending import PendingReply

__all__ = ["CompletionListener", "MessageProducer", "ProducerLink", "ProducerSession"]


class CompletionListener(Protocol):
    """Receives the outcome of an asynchronous send (JMS 2.0 §7.3)."""

    def on_completion(self, message: Message) -> None:
        """The send succeeded."""

    def on_exception(self, message: Message, exception: Exception) -> None:
        """The send failed with ``exception``."""


class ProducerLink(Link, Protocol):
    """What a producer needs of its connection beyond a :class:`Link`."""

    _closed: bool  # closed or failed (``_check_open`` then raises)
    _message_ids: MessageIds


class ProducerSession(Protocol):
    """What a producer needs of its session (a ``Session``)."""

    _id: int
    _closed: bool

    @property
    def _connection(self) -> ProducerLink:
        """The session's connection."""
        ...

    def _check_open(self) -> None:
        """Raise IllegalStateException if the session or its connection is closed."""
        ...

    def _check_not_in_completion(self, what: str) -> None:
        """Raise IllegalStateException when called from a completion listener."""
        ...


class MessageProducer:
    """Sends messages to a destination (classic API); create with ``session.create_producer``."""

    def __init__(
        self,
        session: ProducerSession,
        destination: Destination | None,
        window: SendWindow,
        ledger: DeliveryLedger,
    ) -> None:
        self._session = session
        self._window = window
        self._ledger = ledger
        self._transacted = window.transacted
        conn = session._connection
        self._conn = conn
        # the synchronous send after the argument checks: one compiled call (client/_hot.py)
        self._sender = Sender(conn, session._id, window, ledger, conn._message_ids, conn.clock)
        self._destination = destination
        self._closed = False
        self._delivery_mode: int = DeliveryMode.PERSISTENT
        self._priority = 4
        self._time_to_live = 0.0
        self._delivery_delay = 0.0
        self._disable_id = False
        self._disable_ts = False

    def _check_open(self) -> None:
        if self._closed:
            raise IllegalStateException("the producer is closed")
        self._session._check_open()

    # ---- settings (PROD-03, PROD-04) ------------------------------------------------------
    @property
    def destination(self) -> Destination | None:
        """The destination this producer is bound to (None: anonymous)."""
        self._check_open()
        return self._destination

    @property
    def delivery_mode(self) -> int:
        """DeliveryMode.PERSISTENT (default) or NON_PERSISTENT."""
        self._check_open()
        return self._delivery_mode

    @delivery_mode.setter
    def delivery_mode(self, value: int) -> None:
        self._check_open()
        self._delivery_mode = _check_mode(value)

    @property
    def priority(self) -> int:
        """0..9, default 4."""
        self._check_open()
        return self._priority

    @priority.setter
    def priority(self, value: int) -> None:
        self._check_open()
        self._priority = _check_priority(value)

    @property
    def time_to_live(self) -> float:
        """Seconds a sent message lives; 0 (default) = forever."""
        self._check_open()
        return self._time_to_live

    @time_to_live.setter
    def time_to_live(self, value: float) -> None:
        self._check_open()
        self._time_to_live = _check_seconds("time_to_live", value)

    @property
    def delivery_delay(self) -> float:
        """Seconds before a sent message may be delivered; default 0."""
        self._check_open()
        return self._delivery_delay

    @delivery_delay.setter
    def delivery_delay(self, value: float) -> None:
        self._check_open()
        self._delivery_delay = _check_seconds("delivery_delay", value)

    @property
    def disable_message_id(self) -> bool:
        """When True, sent messages get no JMSMessageID (a hint the provider honours)."""
        self._check_open()
        return self._disable_id

    @disable_message_id.setter
    def disable_message_id(self, value: bool) -> None:
        self._check_open()
        self._disable_id = bool(value)

    @property
    def disable_message_timestamp(self) -> bool:
        """When True, sent messages get JMSTimestamp 0."""
        self._check_open()
        return self._disable_ts

    @disable_message_timestamp.setter
    def disable_message_timestamp(self, value: bool) -> None:
        self._check_open()
        self._disable_ts = bool(value)

    # ---- sending ----------------------------------------------------------------------------
    def send(
        self,
        *args: object,
        destination: Destination | None = None,
        delivery_mode: int | None = None,
        priority: int | None = None,
        time_to_live: float | None = None,
        delivery_delay: float | None = None,
        completion_listener: CompletionListener | None = None,
    ) -> None:
        """Send a message: ``send(message)``, ``send(message, destination=d)`` or
        ``send(d, message)``; keyword overrides apply to this send only.

        Raises:
            IllegalStateException: the producer or session is closed.
            UnsupportedOperationException: a destination given to a producer bound to
                another one, or none given to an anonymous producer.
            InvalidDestinationException: a destination that is not a ternmq one, or deleted.
            MessageFormatException: ``message`` is not a ternmq Message, or its
                ``JMS_TernMQ_DuplicateID`` property is not a String.
            JMSException: an invalid delivery mode, priority, time-to-live or delay, or the
                broker refused the message (ResourceAllocationException when full), or
                refused an earlier pipelined NON_PERSISTENT send of this session (raised
                once, here, unless ``block_on_non_persistent_send`` is on).
            TypeError: ``completion_listener`` lacks ``on_completion`` or ``on_exception``.
        """
        bound = self._destination
        first = args[0] if len(args) == 1 else None
        if destination is None and bound is not None and isinstance(first, Message):
            message, dest = first, bound  # send(message) on a bound producer: nothing to parse
        else:
            message, dest = self._parse_args(args, destination)
        if completion_listener is not None and not (
            callable(getattr(completion_listener, "on_completion", None))
            and callable(getattr(completion_listener, "on_exception", None))
        ):
            raise TypeError(  # PROD-31
                "completion_listener needs on_completion(message) and "
                "on_exception(message, exception) methods; pass None for a synchronous send"
            )
        if self._closed or self._session._closed or self._conn._closed:
            self._check_open()  # raises, saying which is closed
        mode = self._delivery_mode if delivery_mode is None else _check_mode(delivery_mode)
        prio = self._priority if priority is None else _check_priority(priority)
        ttl = (
            self._time_to_live
            if time_to_live is None
            else _check_seconds("time_to_live", time_to_live)
        )
        delay = (
            self._delivery_delay
            if delivery_delay is None
            else _check_seconds("delivery_delay", delivery_delay)
        )
        native = message if isinstance(message, Message) else adopt(message)  # BODY-10
        if completion_listener is None:
            self._sender.send(
                native, dest, mode, prio, ttl, delay, not self._disable_ts, not self._disable_id
            )
        else:
            self._send_async(native, dest, mode, prio, ttl, delay, completion_listener)
        if native is not message:
            write_back(native, message)  # a message object ternmq did not create

    def _parse_args(
        self, args: tuple[object, ...], destination: Destination | None
    ) -> tuple[Message, Destination]:
        if len(args) == 2 and not isinstance(args[0], Message):
            if destination is not None:
                raise TypeError("send(destination, message) got a destination= keyword too")
            destination = args[0]  # type: ignore[assignment]
            message = args[1]
        elif len(args) == 1:
            message = args[0]
        else:
            raise TypeError("send() takes a message, optionally preceded by a destination")
        if destination is not None and not isinstance(destination, Destination):
            raise InvalidDestinationException(f"{destination!r} is not a ternmq Queue or Topic")
        bound = self._destination
        if bound is not None:
            if destination is not None and destination != bound:
                raise UnsupportedOperationException(
                    f"this producer is bound to {bound}; create an anonymous producer "
                    "(create_producer(None)) to choose the destination per send"
                )
            dest = bound
        else:
            if destination is None:
                raise UnsupportedOperationException(
                    "this producer has no destination: pass one, send(message, destination=q)"
                )
            dest = destination
        if not isinstance(message, Message) and not is_foreign_message(message):
            raise MessageFormatException(
                f"cannot send {type(message).__name__}: create messages with the session's "
                "create_*_message methods"
            )
        return message, dest  # type: ignore[return-value]

    def _send_async(
        self,
        message: Message,
        dest: Destination,
        mode: int,
        prio: int,
        ttl: float,
        delay: float,
        listener: CompletionListener,
    ) -> None:
        conn = self._session._connection
        window = self._window
        req = self._sender.request(  # always answered: not pipelined
            message, dest, mode, prio, ttl, delay, not self._disable_ts, not self._disable_id, False
        )
        try:
            pending: PendingReply | None = conn.submit(req)
            error: Exception | None = None
        except JMSException as exc:
            pending, error = None, exc

        def complete() -> None:
            failure = error
            if pending is not None:  # waits on the completion thread, not the sender's
                try:
                    check_reply(pending.result())
                except JMSException as exc:
                    failure = exc
                    if pending.error is not None and conn._failing_over and conn._resendable(req):
                        try:  # failover + JMS_TernMQ_DuplicateID: the resend is safe (PSF-09)
                            check_reply(conn.request(req))
                            failure = None
                        except JMSException as again:
                            failure = again
            if isinstance(failure, JMSException):  # PROD-33: say so, keep the type, no retry
                failure = type(failure)(
                    f"asynchronous send to {dest} failed: {failure}; whether the message was "
                    "delivered is undefined (JMS 2.0 §4.6.2.2) and ternmq does not retry it",
                    failure.error_code,
                    failure,
                )
                if self._transacted:
                    self._ledger.rollback_only = failure  # the next commit() rolls back (TX-06)
            if failure is None:
                listener.on_completion(message)
            else:
                listener.on_exception(message, failure)

        window.complete_later(complete)

    def close(self) -> None:
        """Close the producer; waits for its asynchronous sends to complete. Idempotent.

        Raises:
            IllegalStateException: called from a completion listener of this session.
        """
        if self._closed:
            return
        self._session._check_not_in_completion("close()")
        self._window.wait()
        self._closed = True

    def __enter__(self) -> MessageProducer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _check_mode(value: int) -> int:
    if value not in (DeliveryMode.NON_PERSISTENT, DeliveryMode.PERSISTENT) or isinstance(
        value, bool
    ):
        raise JMSException(
            f"invalid delivery mode {value!r}: use DeliveryMode.PERSISTENT or NON_PERSISTENT"
        )
    return int(value)


def _check_priority(value: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 9:
        raise JMSException(f"invalid priority {value!r}: use an int from 0 to 9")
    return value


def _check_seconds(what: str, value: float) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or value < 0
        or value != value
    ):
        raise JMSException(f"invalid {what} {value!r}: use seconds >= 0")
    return float(value)
