"""The JMS exception hierarchy (JMS 2.0 §7.2, §7.3; catalog EXC).

Every public exception of ternmq lives here. Checked JMS exceptions mirror Java's
``javax.jms`` names; each runtime twin ``XRuntimeException`` subclasses both
``JMSRuntimeException`` and its checked twin ``X``, so ``except IllegalStateException``
catches the exception whichever API raised it (EXC-02).

Java-native exceptions map onto Python builtins (``ValueError`` for NumberFormatException,
``TypeError`` for NullPointerException, ``IndexError`` for IndexOutOfBoundsException);
ternmq never subclasses those from ``JMSException`` except ``UnsupportedOperationException``,
which API.md makes both a ``JMSException`` and a ``TypeError``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

__all__ = [
    "IllegalStateException",
    "IllegalStateRuntimeException",
    "InvalidClientIDException",
    "InvalidClientIDRuntimeException",
    "InvalidDestinationException",
    "InvalidDestinationRuntimeException",
    "InvalidSelectorException",
    "InvalidSelectorRuntimeException",
    "JMSException",
    "JMSRuntimeException",
    "JMSSecurityException",
    "JMSSecurityRuntimeException",
    "MessageEOFException",
    "MessageFormatException",
    "MessageFormatRuntimeException",
    "MessageNotReadableException",
    "MessageNotWriteableException",
    "MessageNotWriteableRuntimeException",
    "ResourceAllocationException",
    "ResourceAllocationRuntimeException",
    "TransactionInProgressException",
    "TransactionInProgressRuntimeException",
    "TransactionRolledBackException",
    "TransactionRolledBackRuntimeException",
    "UnsupportedOperationException",
    "to_runtime",
]


class JMSException(Exception):
    """Root of every JMS error (EXC-01).

    Args:
        reason: the provider's text; it says what went wrong and what to do.
        error_code: a provider error code, or None.
        linked_exception: the lower-level cause, or None. When given, it is also set as
            ``__cause__`` so tracebacks show it.
    """

    def __init__(
        self,
        reason: str = "",
        error_code: str | None = None,
        linked_exception: BaseException | None = None,
    ) -> None:
        super().__init__(reason)
        self.error_code = error_code
        self.linked_exception = linked_exception
        if linked_exception is not None:
            self.__cause__ = linked_exception

    @property
    def reason(self) -> str:
        """The provider's text (``str(exc)``)."""
        return str(self)

    def set_linked_exception(self, exc: BaseException | None) -> None:
        """Attach (or clear) the lower-level cause; also sets ``__cause__``."""
        self.linked_exception = exc
        self.__cause__ = exc


class IllegalStateException(JMSException):
    """A method was called at a time or in a state that forbids it (EXC-05)."""


class InvalidClientIDException(JMSException):
    """The broker rejects a client id, e.g. one already in use (EXC-07)."""


class InvalidDestinationException(JMSException):
    """A destination is unknown, invalid, deleted, or not usable here (EXC-08)."""


class InvalidSelectorException(JMSException):
    """A message selector has invalid syntax or types (EXC-09).

    Attributes:
        selector: the selector text, when known.
        position: the 0-based character offset of the error, when known.
    """

    def __init__(
        self,
        reason: str = "",
        error_code: str | None = None,
        linked_exception: BaseException | None = None,
        *,
        selector: str | None = None,
        position: int | None = None,
    ) -> None:
        super().__init__(reason, error_code, linked_exception)
        self.selector = selector
        self.position = position


class JMSSecurityException(JMSException):
    """Authentication failed or the user is not authorized for the action (EXC-06)."""


class MessageEOFException(JMSException):
    """Unexpected end of a bytes or stream message body."""


class MessageFormatException(JMSException):
    """A value of an unsupported type, or a read as an incompatible type (EXC-10)."""


class MessageNotReadableException(JMSException):
    """The message body is write-only; call ``reset()`` before reading."""


class MessageNotWriteableException(JMSException):
    """The message (body or properties) is read-only; call ``clear_body()`` /
    ``clear_properties()`` to write again."""


class ResourceAllocationException(JMSException):
    """The provider cannot allocate what the call needs (limits, full destination) (EXC-11)."""


class TransactionInProgressException(JMSException):
    """The operation is invalid while a transaction is in progress (EXC-12)."""


class TransactionRolledBackException(JMSException):
    """``commit()`` resulted in a rollback (EXC-13)."""


class UnsupportedOperationException(JMSException, TypeError):
    """An operation that this object does not support (Java's UnsupportedOperationException)."""


class JMSRuntimeException(JMSException):
    """Unchecked flavour raised by the simplified API (EXC-02, EXC-03)."""


class IllegalStateRuntimeException(JMSRuntimeException, IllegalStateException):
    """Runtime twin of :class:`IllegalStateException`."""


class InvalidClientIDRuntimeException(JMSRuntimeException, InvalidClientIDException):
    """Runtime twin of :class:`InvalidClientIDException`."""


class InvalidDestinationRuntimeException(JMSRuntimeException, InvalidDestinationException):
    """Runtime twin of :class:`InvalidDestinationException`."""


class InvalidSelectorRuntimeException(JMSRuntimeException, InvalidSelectorException):
    """Runtime twin of :class:`InvalidSelectorException`."""


class JMSSecurityRuntimeException(JMSRuntimeException, JMSSecurityException):
    """Runtime twin of :class:`JMSSecurityException`."""


class MessageFormatRuntimeException(JMSRuntimeException, MessageFormatException):
    """Runtime twin of :class:`MessageFormatException`."""


class MessageNotWriteableRuntimeException(JMSRuntimeException, MessageNotWriteableException):
    """Runtime twin of :class:`MessageNotWriteableException`."""


class ResourceAllocationRuntimeException(JMSRuntimeException, ResourceAllocationException):
    """Runtime twin of :class:`ResourceAllocationException`."""


class TransactionInProgressRuntimeException(JMSRuntimeException, TransactionInProgressException):
    """Runtime twin of :class:`TransactionInProgressException`."""


class TransactionRolledBackRuntimeException(JMSRuntimeException, TransactionRolledBackException):
    """Runtime twin of :class:`TransactionRolledBackException`."""


# Checked type -> runtime twin, most specific first (EXC-02).
_RUNTIME_TWINS: dict[type[JMSException], type[JMSRuntimeException]] = {
    IllegalStateException: IllegalStateRuntimeException,
    InvalidClientIDException: InvalidClientIDRuntimeException,
    InvalidDestinationException: InvalidDestinationRuntimeException,
    InvalidSelectorException: InvalidSelectorRuntimeException,
    JMSSecurityException: JMSSecurityRuntimeException,
    MessageFormatException: MessageFormatRuntimeException,
    MessageNotWriteableException: MessageNotWriteableRuntimeException,
    ResourceAllocationException: ResourceAllocationRuntimeException,
    TransactionInProgressException: TransactionInProgressRuntimeException,
    TransactionRolledBackException: TransactionRolledBackRuntimeException,
}


def to_runtime(exc: JMSException) -> JMSRuntimeException:
    """Return the runtime flavour of a checked JMS exception (EXC-03).

    The runtime twin of ``exc``'s type if one exists, else a plain ``JMSRuntimeException``
    with ``exc`` as ``linked_exception``. A runtime exception is returned unchanged.
    """
    if isinstance(exc, JMSRuntimeException):
        return exc
    twin = None
    for cls in type(exc).__mro__:  # a subclass of a checked type gets its parent's twin
        twin = _RUNTIME_TWINS.get(cls)
        if twin is not None:
            break
    if twin is None:
        return JMSRuntimeException(str(exc), exc.error_code, exc)
    if twin is InvalidSelectorRuntimeException and isinstance(exc, InvalidSelectorException):
        out: JMSRuntimeException = InvalidSelectorRuntimeException(
            str(exc),
            exc.error_code,
            exc.linked_exception,
            selector=exc.selector,
            position=exc.position,
        )
    else:
        out = twin(str(exc), exc.error_code, exc.linked_exception)
    out.__cause__ = exc.__cause__ or exc
    out.__traceback__ = exc.__traceback__
    return out


_F = TypeVar("_F", bound=Callable[..., object])


def runtime_api(func: _F) -> _F:
    """Decorate a simplified-API method so checked JMS exceptions leave as runtime ones."""
    import functools

    @functools.wraps(func)
    def wrapper(*args: object, **kwargs: object) -> object:
        try:
            return func(*args, **kwargs)
        except JMSException as exc:
            if isinstance(exc, JMSRuntimeException):
                raise
            raise to_runtime(exc) from exc

    return wrapper  # type: ignore[return-value]
