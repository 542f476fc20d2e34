"""TextMessage: a body of one ``str`` (JMS 2.0 §3.11; catalog BODY-14)."""

from __future__ import annotations

from typing import ClassVar, TypeVar

from ternmq.errors import MessageFormatException, MessageNotWriteableException
from ternmq.message import _convert as cv
from ternmq.message._message import Message

__all__ = ["TextMessage"]

_B = TypeVar("_B")


class TextMessage(Message):
    """A message whose body is a ``str`` or None (JMS ``TextMessage``).

    Args:
        text: the initial body (None = no body).

    Raises:
        TypeError: ``text`` is neither a ``str`` nor None.
        MessageFormatException: ``text`` holds an unpaired surrogate (A-33).
    """

    __slots__ = ("_text",)
    body_type: ClassVar[str] = "text"

    _text: str | None

    def __init__(self, text: str | None = None) -> None:
        # Every message sent is built here: the base called directly (no super() object) and
        # ASCII text taken as is (check_string's own first test) save ~0.2 us of ~0.6.
        Message.__init__(self)
        self._text = text if type(text) is str and text.isascii() else cv.check_string(text)

    @property
    def text(self) -> str | None:
        """The body text, or None (BODY-14); always readable (BODY-07).

        Setting raises ``MessageNotWriteableException`` on a received message until
        ``clear_body()`` (BODY-05), ``TypeError`` for a non-str other than None, and
        ``MessageFormatException`` for a string with an unpaired surrogate.
        """
        return self._text

    @text.setter
    def text(self, value: str | None) -> None:
        if self._read_only_body:
            raise MessageNotWriteableException(
                "the body of a received message is read-only; call clear_body() first"
            )
        self._text = cv.check_string(value)

    def clear_body(self) -> None:
        """Set the text to None and make the body writable (BODY-04). Never raises."""
        self._text = None
        self._read_only_body = False

    def _has_body(self) -> bool:
        return self._text is not None

    def _body_as(self, cls: type[_B]) -> _B:
        if isinstance(self._text, cls):
            return self._text
        raise MessageFormatException(
            f"a TextMessage body is a str, which is not assignable to {cls.__name__}"
        )

    def _copy_body(self, dup: Message) -> None:
        assert isinstance(dup, TextMessage)
        dup._text = self._text
