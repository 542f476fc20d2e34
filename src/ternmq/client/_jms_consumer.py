"""The simplified API's consumer: :class:`JMSConsumer` (JMS 2.0 §11.2.5; CTX-34..CTX-39).

Theory of operation
-------------------
A ``JMSConsumer`` wraps one classic :class:`~ternmq.client.consumer.MessageConsumer` and
changes nothing of its rules (STYLE rule 3): every call is the classic one, raising the
runtime flavour of its exceptions (``runtime_api``). ``receive_body`` goes through the
context, which checks the body on the session's hand-over path (see
:mod:`ternmq.client.context`); what it needs of the context is the small
:class:`ConsumerContext` protocol, so this module does not import the context.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Protocol, TypeVar

from ternmq.client.consumer import MessageConsumer
from ternmq.errors import IllegalStateException, runtime_api
from ternmq.message import Message

__all__ = ["ConsumerContext", "JMSConsumer"]

MessageListener = Callable[[Message], object]

_T = TypeVar("_T")


class ConsumerContext(Protocol):
    """What a :class:`JMSConsumer` needs of its context (a ``JMSContext``)."""

    def _receive_body(
        self, consumer: MessageConsumer, cls: type[_T], timeout: float | None
    ) -> _T | None:
        """The body of the next message of ``consumer`` as ``cls`` (CTX-35, CTX-36).

        Raises:
            MessageFormatRuntimeException: the body cannot be returned as ``cls``.
            TypeError: ``cls`` is not a class.
        """
        ...


class JMSConsumer:
    """Receives messages for a :class:`JMSContext` (JMS 2.0 §11.2.5; CTX-34..CTX-39).

    Made by the ``create_*consumer`` methods of :class:`JMSContext`; a context manager;
    iterating it yields messages until it is closed.
    """

    def __init__(self, context: ConsumerContext, consumer: MessageConsumer) -> None:
        """Internal: use :meth:`JMSContext.create_consumer` and its siblings."""
        self._context = context
        self._consumer = consumer

    @runtime_api
    def receive(self, timeout: float | None = None) -> Message | None:
        """The next message, waiting up to ``timeout`` seconds (None: until one arrives or
        the consumer or context closes; 0: do not wait). Returns None on timeout or close
        (CTX-34).

        Raises:
            ValueError: a negative timeout.
            IllegalStateRuntimeException: the consumer is closed or has a message listener.
        """
        return self._consumer.receive(timeout)

    @runtime_api
    def receive_no_wait(self) -> Message | None:
        """The next message if one is available at once, else None.

        Raises:
            IllegalStateRuntimeException: as :meth:`receive`.
        """
        return self._consumer.receive_no_wait()

    @runtime_api
    def receive_body(self, cls: type[_T], timeout: float | None = None) -> _T | None:
        """The body of the next message as ``cls`` (CTX-35): TextMessage -> ``str``,
        BytesMessage -> ``bytes``, MapMessage -> ``dict``, ObjectMessage -> the object; None
        only when no message arrived in time or the consumer closed.

        When the body cannot be returned, the message is not lost (CTX-36): in AUTO and
        DUPS_OK contexts it is the next message received, unmarked; in CLIENT_ACKNOWLEDGE
        and transacted contexts it counts as delivered and comes back after ``recover()``
        / ``rollback()``.

        Raises:
            MessageFormatRuntimeException: a plain Message or StreamMessage, a message
                without body, or a body that is not an instance of ``cls``.
            TypeError: ``cls`` is not a class.
            ValueError: a negative timeout.
            IllegalStateRuntimeException: as :meth:`receive`.
        """
        return self._context._receive_body(self._consumer, cls, timeout)

    @runtime_api
    def receive_body_no_wait(self, cls: type[_T]) -> _T | None:
        """:meth:`receive_body` without waiting.

        Raises:
            MessageFormatRuntimeException: as :meth:`receive_body`.
            IllegalStateRuntimeException: as :meth:`receive`.
        """
        return self._context._receive_body(self._consumer, cls, 0)

    @property
    @runtime_api
    def message_listener(self) -> MessageListener | None:
        """The callable that receives messages asynchronously, or None (CTX-37).

        Listeners of one context run one at a time on its delivery thread.

        Raises:
            IllegalStateRuntimeException: the consumer is closed.
            TypeError: (setting) not callable and not None.
        """
        return self._consumer.message_listener

    @message_listener.setter
    @runtime_api
    def message_listener(self, listener: MessageListener | None) -> None:
        self._consumer.message_listener = listener

    @property
    @runtime_api
    def message_selector(self) -> str | None:
        """The selector given, or None for none or ``""`` (CTX-38).

        Raises:
            IllegalStateRuntimeException: the consumer is closed.
        """
        return self._consumer.message_selector

    @runtime_api
    def close(self) -> None:
        """Close the consumer: wait for its running listener, make a pending receive return,
        end its non-durable subscription (CTX-39). Idempotent.

        Raises:
            IllegalStateRuntimeException: called from its own message listener (CTX-22).
        """
        self._consumer.close()

    def __iter__(self) -> Iterator[Message]:
        """Yield received messages until the consumer (or its context) is closed."""
        while True:
            try:
                msg = self.receive()
            except IllegalStateException:
                return
            if msg is None:
                return
            yield msg

    def __enter__(self) -> JMSConsumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<JMSConsumer of {self._consumer.destination}>"
