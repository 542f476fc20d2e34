"""The simplified API's producer: :class:`JMSProducer` (JMS 2.0 §11.2.4; CTX-26..CTX-33).

Theory of operation
-------------------
A ``JMSProducer`` is settings and a template, nothing more (STYLE rule 3): its setters keep
a delivery mode, priority, time-to-live, delay, completion listener and a template message
(properties, correlation id, type, reply-to) whose checks and conversions are the
``Message`` ones. ``send`` turns the body into a message, applies the template and sends it
through the context's one anonymous classic :class:`~ternmq.client.producer.MessageProducer`
with per-send overrides, under the context's send lock. What it needs of its context is the
small :class:`ProducerContext` protocol, so this module does not import the context.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Protocol

from ternmq.client.producer import (
    CompletionListener,
    MessageProducer,
    _check_mode,
    _check_priority,
    _check_seconds,
)
from ternmq.destination import Destination
from ternmq.errors import (
    InvalidDestinationRuntimeException,
    MessageFormatRuntimeException,
    runtime_api,
)
from ternmq.message import Message

if TYPE_CHECKING:
    from ternmq.client.session import Session

__all__ = ["JMSProducer", "ProducerContext"]


class ProducerContext(Protocol):
    """What a :class:`JMSProducer` needs of its context (a ``JMSContext``)."""

    _send_lock: threading.RLock

    def _act(self) -> None:
        """Check the context is open and record that it was used.

        Raises:
            IllegalStateRuntimeException: the context is closed.
        """
        ...

    def _use(self) -> Session:
        """``_act`` and return the context's session.

        Raises:
            IllegalStateRuntimeException: the context is closed.
        """
        ...

    def _classic_producer(self) -> MessageProducer:
        """The context's one anonymous classic producer.

        Raises:
            IllegalStateRuntimeException: the context is closed.
        """
        ...


class JMSProducer:
    """Sends messages for a :class:`JMSContext` (JMS 2.0 §11.2.4; CTX-26..CTX-33).

    Made by :meth:`JMSContext.create_producer`; cheap, with no destination and no ``close()``.
    Every setter returns the producer, and its value stays in force for later sends.
    """

    def __init__(self, context: ProducerContext) -> None:
        """Internal: use :meth:`JMSContext.create_producer`."""
        self._context = context
        self._delivery_mode = 2
        self._priority = 4
        self._time_to_live = 0.0
        self._delivery_delay = 0.0
        self._disable_id = False
        self._disable_ts = False
        self._listener: CompletionListener | None = None
        # Properties and the correlation id, type and reply-to set on the producer; their
        # checks and conversions are the Message ones (CTX-28, CTX-29).
        self._template = Message()

    def _check_open(self) -> None:
        self._context._act()

    # ---- settings (CTX-27) -------------------------------------------------------------------
    @runtime_api
    def set_delivery_mode(self, delivery_mode: int) -> JMSProducer:
        """Use ``DeliveryMode.PERSISTENT`` (default) or ``NON_PERSISTENT``.

        Raises:
            IllegalStateRuntimeException: the context is closed.
            JMSRuntimeException: any other value.
        """
        self._check_open()
        self._delivery_mode = _check_mode(delivery_mode)
        return self

    @runtime_api
    def get_delivery_mode(self) -> int:
        """The delivery mode. Raises IllegalStateRuntimeException if the context is closed."""
        self._check_open()
        return self._delivery_mode

    @runtime_api
    def set_priority(self, priority: int) -> JMSProducer:
        """Use ``priority`` (0..9, default 4).

        Raises:
            IllegalStateRuntimeException: the context is closed.
            JMSRuntimeException: not an int from 0 to 9.
        """
        self._check_open()
        self._priority = _check_priority(priority)
        return self

    @runtime_api
    def get_priority(self) -> int:
        """The priority. Raises IllegalStateRuntimeException if the context is closed."""
        self._check_open()
        return self._priority

    @runtime_api
    def set_time_to_live(self, time_to_live: float) -> JMSProducer:
        """Seconds a sent message lives; 0 (default) means forever.

        Raises:
            IllegalStateRuntimeException: the context is closed.
            JMSRuntimeException: a negative or non-numeric value.
        """
        self._check_open()
        self._time_to_live = _check_seconds("time_to_live", time_to_live)
        return self

    @runtime_api
    def get_time_to_live(self) -> float:
        """Time to live in seconds. Raises IllegalStateRuntimeException if the context is
        closed."""
        self._check_open()
        return self._time_to_live

    @runtime_api
    def set_delivery_delay(self, delivery_delay: float) -> JMSProducer:
        """Seconds before a sent message may be delivered (default 0).

        Raises:
            IllegalStateRuntimeException: the context is closed.
            JMSRuntimeException: a negative or non-numeric value.
        """
        self._check_open()
        self._delivery_delay = _check_seconds("delivery_delay", delivery_delay)
        return self

    @runtime_api
    def get_delivery_delay(self) -> float:
        """Delivery delay in seconds. Raises IllegalStateRuntimeException if the context is
        closed."""
        self._check_open()
        return self._delivery_delay

    @runtime_api
    def set_disable_message_id(self, value: bool) -> JMSProducer:
        """When true, sent messages get no JMSMessageID.

        Raises:
            IllegalStateRuntimeException: the context is closed.
        """
        self._check_open()
        self._disable_id = bool(value)
        return self

    @runtime_api
    def get_disable_message_id(self) -> bool:
        """Whether message ids are disabled. Raises IllegalStateRuntimeException if the
        context is closed."""
        self._check_open()
        return self._disable_id

    @runtime_api
    def set_disable_message_timestamp(self, value: bool) -> JMSProducer:
        """When true, sent messages get JMSTimestamp 0.

        Raises:
            IllegalStateRuntimeException: the context is closed.
        """
        self._check_open()
        self._disable_ts = bool(value)
        return self

    @runtime_api
    def get_disable_message_timestamp(self) -> bool:
        """Whether timestamps are disabled. Raises IllegalStateRuntimeException if the
        context is closed."""
        self._check_open()
        return self._disable_ts

    @runtime_api
    def set_async(self, completion_listener: CompletionListener | None) -> JMSProducer:
        """Send asynchronously, reporting to ``completion_listener``; None restores
        synchronous sends (CTX-32).

        Raises:
            IllegalStateRuntimeException: the context is closed.
            TypeError: the listener lacks ``on_completion`` / ``on_exception``.
        """
        self._check_open()
        if completion_listener is not None and not (
            callable(getattr(completion_listener, "on_completion", None))
            and callable(getattr(completion_listener, "on_exception", None))
        ):
            raise TypeError("a completion listener needs on_completion() and on_exception()")
        self._listener = completion_listener
        return self

    @runtime_api
    def get_async(self) -> CompletionListener | None:
        """The completion listener, or None for synchronous sends. Raises
        IllegalStateRuntimeException if the context is closed."""
        self._check_open()
        return self._listener

    # ---- properties (CTX-28, CTX-29) ---------------------------------------------------------
    @runtime_api
    def set_property(self, name: str, value: bool | int | float | str | None) -> JMSProducer:
        """Set a property for every message sent: ``bool`` -> boolean, ``int`` -> long,
        ``float`` -> double, ``str`` -> String, ``None`` -> null. It replaces a property of
        the same name on a message passed to :meth:`send`.

        Raises:
            IllegalStateRuntimeException: the context is closed.
            ValueError: the name is None, empty or not a valid property name.
            MessageFormatRuntimeException: any other value type, or an int beyond 64 bits.
        """
        self._check_open()
        self._template.set_object_property(name, value)
        return self

    @runtime_api
    def get_property(self, name: str) -> bool | int | float | str | None:
        """The value set for ``name``, or None. Raises IllegalStateRuntimeException if the
        context is closed."""
        self._check_open()
        return self._template.get_object_property(name)

    @runtime_api
    def get_boolean_property(self, name: str) -> bool:
        """The property as boolean (conversion table of PROP-08).

        Raises:
            IllegalStateRuntimeException: the context is closed.
            MessageFormatRuntimeException: the value does not convert.
        """
        self._check_open()
        return self._template.get_boolean_property(name)

    @runtime_api
    def get_byte_property(self, name: str) -> int:
        """The property as byte.

        Raises:
            IllegalStateRuntimeException: the context is closed.
            MessageFormatRuntimeException: the value does not convert.
            ValueError: absent, null, or a string that is not a byte.
        """
        self._check_open()
        return self._template.get_byte_property(name)

    @runtime_api
    def get_short_property(self, name: str) -> int:
        """The property as short.

        Raises:
            IllegalStateRuntimeException: the context is closed.
            MessageFormatRuntimeException: the value does not convert.
            ValueError: absent, null, or a string that is not a short.
        """
        self._check_open()
        return self._template.get_short_property(name)

    @runtime_api
    def get_int_property(self, name: str) -> int:
        """The property as int.

        Raises:
            IllegalStateRuntimeException: the context is closed.
            MessageFormatRuntimeException: the value does not convert.
            ValueError: absent, null, or a string that is not an int.
        """
        self._check_open()
        return self._template.get_int_property(name)

    @runtime_api
    def get_long_property(self, name: str) -> int:
        """The property as long.

        Raises:
            IllegalStateRuntimeException: the context is closed.
            MessageFormatRuntimeException: the value does not convert.
            ValueError: absent, null, or a string that is not a long.
        """
        self._check_open()
        return self._template.get_long_property(name)

    @runtime_api
    def get_float_property(self, name: str) -> float:
        """The property as float.

        Raises:
            IllegalStateRuntimeException: the context is closed.
            MessageFormatRuntimeException: the value does not convert.
            ValueError: a string that is not a float.
            TypeError: absent or null.
        """
        self._check_open()
        return self._template.get_float_property(name)

    @runtime_api
    def get_double_property(self, name: str) -> float:
        """The property as double.

        Raises:
            IllegalStateRuntimeException: the context is closed.
            MessageFormatRuntimeException: the value does not convert.
            ValueError: a string that is not a double.
            TypeError: absent or null.
        """
        self._check_open()
        return self._template.get_double_property(name)

    @runtime_api
    def get_string_property(self, name: str) -> str | None:
        """The property as string, or None. Raises IllegalStateRuntimeException if the
        context is closed."""
        self._check_open()
        return self._template.get_string_property(name)

    @runtime_api
    def property_exists(self, name: str) -> bool:
        """True when a property ``name`` is set. Raises IllegalStateRuntimeException if the
        context is closed."""
        self._check_open()
        return self._template.property_exists(name)

    @runtime_api
    def get_property_names(self) -> set[str]:
        """A new set of the names of the properties set. Raises IllegalStateRuntimeException
        if the context is closed."""
        self._check_open()
        return self._template.get_property_names()

    @runtime_api
    def clear_properties(self) -> JMSProducer:
        """Remove every property set on the producer. Raises IllegalStateRuntimeException if
        the context is closed."""
        self._check_open()
        self._template.clear_properties()
        return self

    # ---- headers (CTX-27, CTX-29) -------------------------------------------------------------
    @runtime_api
    def set_jms_correlation_id(self, correlation_id: str | None) -> JMSProducer:
        """JMSCorrelationID for every message sent (None: leave the message's own).

        Raises:
            IllegalStateRuntimeException: the context is closed.
            TypeError: not a str or None.
        """
        self._check_open()
        self._template.jms_correlation_id = correlation_id
        return self

    @runtime_api
    def get_jms_correlation_id(self) -> str | None:
        """The correlation id set as a string, or None. Raises IllegalStateRuntimeException
        if the context is closed."""
        self._check_open()
        return self._template.jms_correlation_id

    @runtime_api
    def set_jms_correlation_id_as_bytes(
        self, correlation_id: bytes | bytearray | memoryview | None
    ) -> JMSProducer:
        """JMSCorrelationID as bytes for every message sent (None: leave the message's own).

        Raises:
            IllegalStateRuntimeException: the context is closed.
            TypeError: not bytes-like or None.
        """
        self._check_open()
        self._template.set_jms_correlation_id_as_bytes(correlation_id)
        return self

    @runtime_api
    def get_jms_correlation_id_as_bytes(self) -> bytes | None:
        """The correlation id set, as bytes, or None. Raises IllegalStateRuntimeException if
        the context is closed."""
        self._check_open()
        return self._template.get_jms_correlation_id_as_bytes()

    @runtime_api
    def set_jms_type(self, jms_type: str | None) -> JMSProducer:
        """JMSType for every message sent (None: leave the message's own).

        Raises:
            IllegalStateRuntimeException: the context is closed.
            TypeError: not a str or None.
        """
        self._check_open()
        self._template.jms_type = jms_type
        return self

    @runtime_api
    def get_jms_type(self) -> str | None:
        """The JMSType set, or None. Raises IllegalStateRuntimeException if the context is
        closed."""
        self._check_open()
        return self._template.jms_type

    @runtime_api
    def set_jms_reply_to(self, reply_to: Destination | None) -> JMSProducer:
        """JMSReplyTo for every message sent (None: leave the message's own).

        Raises:
            IllegalStateRuntimeException: the context is closed.
            TypeError: not a ternmq destination or None.
        """
        self._check_open()
        self._template.jms_reply_to = reply_to
        return self

    @runtime_api
    def get_jms_reply_to(self) -> Destination | None:
        """The JMSReplyTo set, or None. Raises IllegalStateRuntimeException if the context
        is closed."""
        self._check_open()
        return self._template.jms_reply_to

    # ---- sending (CTX-30..CTX-33) ---------------------------------------------------------------
    @runtime_api
    def send(self, destination: Destination, body: object) -> JMSProducer:
        """Send ``body`` to ``destination`` with this producer's settings and return the
        producer.

        ``body`` may be a :class:`Message` (sent as given, plus the producer's properties and
        headers), a ``str`` (TextMessage), ``bytes``/``bytearray`` (BytesMessage), a ``dict``
        with str keys (MapMessage), None (TextMessage without text) or any other picklable
        object (ObjectMessage). With :meth:`set_async` the call returns without waiting and
        the listener is told the outcome on another thread.

        Raises:
            IllegalStateRuntimeException: the context is closed.
            InvalidDestinationRuntimeException: None, not a destination, or deleted.
            MessageFormatRuntimeException: a dict with a non-str key or a value MapMessage
                cannot hold, an unpicklable object, a message too large to encode.
            MessageNotWriteableRuntimeException: producer properties on a read-only message.
            ResourceAllocationRuntimeException: the destination is full.
            JMSRuntimeException: the broker refused the message.
        """
        context = self._context
        session = context._use()
        if not isinstance(destination, Destination):
            raise InvalidDestinationRuntimeException(
                f"send needs a ternmq Queue or Topic as destination, not {destination!r}"
            )
        message = self._message_for(session, body)
        self._apply(message)
        producer = context._classic_producer()
        with context._send_lock:
            producer.disable_message_id = self._disable_id
            producer.disable_message_timestamp = self._disable_ts
            producer.send(
                message,
                destination=destination,
                delivery_mode=self._delivery_mode,
                priority=self._priority,
                time_to_live=self._time_to_live,
                delivery_delay=self._delivery_delay,
                completion_listener=self._listener,
            )
        return self

    @staticmethod
    def _message_for(session: Session, body: object) -> Message:
        """The message a ``send`` body stands for (CTX-30, A-16)."""
        if isinstance(body, Message):
            return body
        if body is None or isinstance(body, str):
            return session.create_text_message(body)
        if isinstance(body, bytes | bytearray | memoryview):
            msg = session.create_bytes_message()
            msg.write_bytes(bytes(body))
            return msg
        if isinstance(body, dict):
            mm = session.create_map_message()
            for key, value in body.items():
                if not isinstance(key, str):
                    raise MessageFormatRuntimeException(
                        f"a dict sent as a MapMessage needs str keys, not {type(key).__name__}"
                    )
                mm.set_object(key, value)
            return mm
        return session.create_object_message(body)

    def _apply(self, message: Message) -> None:
        """Put the producer's headers and properties on ``message`` (CTX-28)."""
        t = self._template
        if t._correlation_id is not None:
            message._correlation_id = t._correlation_id
        if t._type is not None:
            message.jms_type = t._type
        if t._reply_to is not None:
            message.jms_reply_to = t._reply_to
        for name in t.get_property_names():
            message.set_object_property(name, t.get_object_property(name))

    def __repr__(self) -> str:
        return f"<JMSProducer priority={self._priority} async={self._listener is not None}>"
