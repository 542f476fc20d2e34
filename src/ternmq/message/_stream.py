"""StreamMessage: an ordered sequence of typed values (JMS 2.0 §3.11; BODY-21 … BODY-29).

The body is ``_items``, a list of ``(T, value)`` fields; ``_pos`` is the index of the next
field to read. ``_partial`` is the number of octets already handed out of the byte[] field at
``_pos`` while it is being read in pieces (None otherwise, A-29).

A read converts the current field per table 4.4 (``_convert``) and advances only when the
conversion succeeded, so a failed read (MessageFormatException, ValueError, TypeError,
MessageEOFException) leaves the position where it was and the field can be read again as
another type (BODY-23).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar, TypeVar

from ternmq.errors import (
    MessageEOFException,
    MessageFormatException,
    MessageNotReadableException,
    MessageNotWriteableException,
)
from ternmq.message import _convert as cv
from ternmq.message._message import Message
from ternmq.message._types import T, Value

__all__ = ["StreamMessage"]

_B = TypeVar("_B")
_R = TypeVar("_R")


class StreamMessage(Message):
    """A message whose body is a sequence of typed fields, written and read in order
    (JMS ``StreamMessage``).

    A new message is write-only until :meth:`reset`; a received one is read-only.
    """

    __slots__ = ("_items", "_partial", "_pos")
    body_type: ClassVar[str] = "stream"

    _items: list[tuple[T, Value]]
    _pos: int
    _partial: int | None

    def __init__(self) -> None:
        super().__init__()
        self._items = []
        self._pos = 0
        self._partial = None

    # ------------------------------------------------------------------ modes

    def reset(self) -> None:
        """Make the body read-only and move to the first field (BODY-06).

        On a read-only body this just rewinds. Never raises.
        """
        self._read_only_body = True
        self._rewind()

    def _rewind(self) -> None:
        self._pos = 0
        self._partial = None

    def clear_body(self) -> None:
        """Remove every field and make the body write-only (BODY-04). Never raises."""
        self._items = []
        self._rewind()
        self._read_only_body = False

    # ------------------------------------------------------------------ writes

    def _check_writable(self) -> None:
        if self._read_only_body:
            raise MessageNotWriteableException(
                "this StreamMessage body is read-only; call clear_body() to write a new one"
            )

    def _append(self, tag: T, value: object) -> None:
        self._check_writable()
        stored = cv.check_value(tag, value)
        self._items.append((T.NULL, None) if stored is None else (tag, stored))

    def write_boolean(self, value: bool) -> None:
        """Append a boolean field.

        Raises:
            MessageNotWriteableException: the body is read-only.
            TypeError: ``value`` is not a bool.
        """
        self._append(T.BOOLEAN, value)

    def write_byte(self, value: int) -> None:
        """Append a byte field (-128 … 127).

        Raises:
            MessageNotWriteableException: the body is read-only.
            TypeError: ``value`` is not an int (or is a bool).
            ValueError: ``value`` is out of range.
        """
        self._append(T.BYTE, value)

    def write_short(self, value: int) -> None:
        """Append a short field (16-bit).

        Raises:
            MessageNotWriteableException: the body is read-only.
            TypeError: ``value`` is not an int (or is a bool).
            ValueError: ``value`` is out of range.
        """
        self._append(T.SHORT, value)

    def write_char(self, value: str) -> None:
        """Append a char field: one character in U+0000 … U+FFFF (BODY-28).

        Raises:
            MessageNotWriteableException: the body is read-only.
            TypeError: ``value`` is not a str.
            ValueError: not exactly one BMP character.
        """
        self._append(T.CHAR, value)

    def write_int(self, value: int) -> None:
        """Append an int field (32-bit).

        Raises:
            MessageNotWriteableException: the body is read-only.
            TypeError: ``value`` is not an int (or is a bool).
            ValueError: ``value`` is out of range.
        """
        self._append(T.INT, value)

    def write_long(self, value: int) -> None:
        """Append a long field (64-bit).

        Raises:
            MessageNotWriteableException: the body is read-only.
            TypeError: ``value`` is not an int (or is a bool).
            ValueError: ``value`` is out of range.
        """
        self._append(T.LONG, value)

    def write_float(self, value: float) -> None:
        """Append a float field (rounded to the nearest binary32 value).

        Raises:
            MessageNotWriteableException: the body is read-only.
            TypeError: ``value`` is not a float or int (or is a bool).
            ValueError: a finite value that overflows binary32.
        """
        self._append(T.FLOAT, value)

    def write_double(self, value: float) -> None:
        """Append a double field.

        Raises:
            MessageNotWriteableException: the body is read-only.
            TypeError: ``value`` is not a float or int (or is a bool).
            ValueError: an int too large for a double.
        """
        self._append(T.DOUBLE, value)

    def write_string(self, value: str | None) -> None:
        """Append a String field; None appends a null field (BODY-21).

        Raises:
            MessageNotWriteableException: the body is read-only.
            TypeError: ``value`` is not a str or None.
            MessageFormatException: an unpaired surrogate (A-33).
        """
        self._append(T.STRING, value)

    def write_bytes(
        self,
        data: bytes | bytearray | memoryview | None,
        offset: int = 0,
        length: int | None = None,
    ) -> None:
        """Append ``data[offset:offset + length]`` as one byte[] field (a copy); None
        appends a null field (BODY-21).

        Raises:
            MessageNotWriteableException: the body is read-only.
            TypeError: ``data`` is not bytes-like or None.
            IndexError: the range lies outside ``data``.
        """
        self._check_writable()
        if data is None:
            self._items.append((T.NULL, None))
        else:
            self._items.append((T.BYTES, cv.slice_bytes(data, offset, length)))

    def write_object(
        self, value: bool | int | float | str | bytes | bytearray | memoryview | None
    ) -> None:
        """Append a field typed by the Python value (BODY-28): bool -> boolean, int -> long,
        float -> double, str -> String (never char), bytes-like -> byte[], None -> null.

        Raises:
            MessageNotWriteableException: the body is read-only.
            MessageFormatException: any other type, or an int outside 64 bits.
        """
        self._check_writable()
        tag, stored = cv.from_object(value, body=True)
        self._items.append((tag, stored))

    # ------------------------------------------------------------------ reads

    def _current(self) -> tuple[T, Value]:
        if not self._read_only_body:
            raise MessageNotReadableException(
                "this StreamMessage body is write-only; call reset() before reading"
            )
        if self._pos >= len(self._items):
            raise MessageEOFException(
                f"no field left to read: the stream has {len(self._items)} fields"
            )
        return self._items[self._pos]

    def _read(self, convert: Callable[[T, Value], _R]) -> _R:
        tag, value = self._current()
        if self._partial is not None:
            raise MessageFormatException(
                "a byte[] field is partly read; finish it with read_bytes() first (BODY-26)"
            )
        result = convert(tag, value)  # may raise: the position does not move (BODY-23)
        self._pos += 1
        return result

    def read_boolean(self) -> bool:
        """Read the next field as boolean (table 4.4); null gives False.

        Raises:
            MessageNotReadableException: the body is write-only.
            MessageEOFException: no field is left.
            MessageFormatException: the field's type does not convert.
        """
        return self._read(cv.to_boolean)

    def read_byte(self) -> int:
        """Read the next field as byte (table 4.4).

        Raises:
            MessageNotReadableException: the body is write-only.
            MessageEOFException: no field is left.
            MessageFormatException: the field's type does not convert.
            ValueError: null, or a String that is not a byte.
        """
        return self._read(lambda t, v: cv.to_integral(t, v, T.BYTE))

    def read_short(self) -> int:
        """Read the next field as short (table 4.4).

        Raises:
            MessageNotReadableException: the body is write-only.
            MessageEOFException: no field is left.
            MessageFormatException: the field's type does not convert.
            ValueError: null, or a String that is not a short.
        """
        return self._read(lambda t, v: cv.to_integral(t, v, T.SHORT))

    def read_char(self) -> str:
        """Read the next field as char; only a char field converts (table 4.4).

        Raises:
            MessageNotReadableException: the body is write-only.
            MessageEOFException: no field is left.
            MessageFormatException: the field is not a char.
            TypeError: a null field.
        """
        return self._read(cv.to_char)

    def read_int(self) -> int:
        """Read the next field as int (table 4.4).

        Raises:
            MessageNotReadableException: the body is write-only.
            MessageEOFException: no field is left.
            MessageFormatException: the field's type does not convert.
            ValueError: null, or a String that is not an int.
        """
        return self._read(lambda t, v: cv.to_integral(t, v, T.INT))

    def read_long(self) -> int:
        """Read the next field as long (table 4.4).

        Raises:
            MessageNotReadableException: the body is write-only.
            MessageEOFException: no field is left.
            MessageFormatException: the field's type does not convert.
            ValueError: null, or a String that is not a long.
        """
        return self._read(lambda t, v: cv.to_integral(t, v, T.LONG))

    def read_float(self) -> float:
        """Read the next field as float (table 4.4).

        Raises:
            MessageNotReadableException: the body is write-only.
            MessageEOFException: no field is left.
            MessageFormatException: the field's type does not convert.
            ValueError: a String that is not a Java float.
            TypeError: a null field.
        """
        return self._read(cv.to_float)

    def read_double(self) -> float:
        """Read the next field as double (table 4.4).

        Raises:
            MessageNotReadableException: the body is write-only.
            MessageEOFException: no field is left.
            MessageFormatException: the field's type does not convert.
            ValueError: a String that is not a Java double.
            TypeError: a null field.
        """
        return self._read(cv.to_double)

    def read_string(self) -> str | None:
        """Read the next field as String in Java's text forms; null gives None.

        Raises:
            MessageNotReadableException: the body is write-only.
            MessageEOFException: no field is left.
            MessageFormatException: a byte[] field.
        """
        return self._read(cv.to_string)

    def read_object(self) -> bool | int | float | str | bytes | None:
        """Read the next field in its written type (a new ``bytes`` for byte[], a
        one-character str for char, None for null).

        Raises:
            MessageNotReadableException: the body is write-only.
            MessageEOFException: no field is left.
            MessageFormatException: a byte[] field is partly read (BODY-26).
        """
        return self._read(lambda t, v: v)

    def read_bytes(self, n: int) -> bytes | None:
        """Read up to ``n`` octets of the current byte[] field (BODY-25, A-29).

        A return shorter than ``n``, or a following call that returns ``b""``, ends the
        field; an empty field returns ``b""`` and is consumed; a null field returns None and
        is consumed. ``read_bytes(0)`` returns ``b""`` without consuming anything (except an
        empty or null field).

        Raises:
            MessageNotReadableException: the body is write-only.
            MessageEOFException: no field is left.
            MessageFormatException: the field is neither byte[] nor null.
            ValueError: ``n`` is negative.
            TypeError: ``n`` is not an int.
        """
        if not isinstance(n, int) or isinstance(n, bool):
            raise TypeError(f"read_bytes takes an int count, not {type(n).__name__}")
        if n < 0:
            raise ValueError(f"read_bytes count must not be negative, got {n}")
        tag, value = self._current()
        if tag is T.NULL:
            self._pos += 1
            return None
        if tag is not T.BYTES:
            cv.to_bytes(tag, value)  # raises MessageFormatException
        assert isinstance(value, bytes)
        done = self._partial or 0
        rest = len(value) - done
        if rest == 0:  # an empty field, or the end of a field filled exactly before
            self._pos += 1
            self._partial = None
            return b""
        if n == 0:
            return b""
        chunk = value[done : done + n]
        if len(chunk) < n:
            self._pos += 1
            self._partial = None
        else:
            self._partial = done + n
        return chunk

    # ------------------------------------------------------------------ get_body

    def _has_body(self) -> bool:
        return True  # a StreamMessage is never "without body" (4.8)

    def _body_as(self, cls: type[_B]) -> _B:
        raise MessageFormatException(
            "get_body is not available for StreamMessage; read its fields with read_*()"
        )

    def _copy_body(self, dup: Message) -> None:
        assert isinstance(dup, StreamMessage)
        dup._items = self._items.copy()
        dup._pos = self._pos
        dup._partial = self._partial
