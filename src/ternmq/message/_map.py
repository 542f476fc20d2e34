"""MapMessage: name -> typed value (JMS 2.0 §3.11; catalog BODY-30 … BODY-35).

The body is ``_map``: name -> ``(T, value)``. Setters validate through ``_convert`` exactly as
StreamMessage writes do; getters convert per table 4.4, an absent name reading as null
(BODY-32).
"""

from __future__ import annotations

from typing import ClassVar, TypeVar

from ternmq.errors import MessageFormatException, MessageNotWriteableException
from ternmq.message import _convert as cv
from ternmq.message._message import Message
from ternmq.message._types import T, Value

__all__ = ["MapMessage"]

_B = TypeVar("_B")


class MapMessage(Message):
    """A message whose body maps names to typed values (JMS ``MapMessage``).

    Always readable; writable except while received (until ``clear_body()``).
    """

    __slots__ = ("_map",)
    body_type: ClassVar[str] = "map"

    _map: dict[str, tuple[T, Value]]

    def __init__(self) -> None:
        super().__init__()
        self._map = {}

    def clear_body(self) -> None:
        """Remove every entry and make the body writable (BODY-04, BODY-35). Never raises."""
        self._map = {}
        self._read_only_body = False

    # ------------------------------------------------------------------ writes

    def _check_name(self, name: object) -> str:
        if self._read_only_body:
            raise MessageNotWriteableException(
                "the body of a received MapMessage is read-only; call clear_body() first"
            )
        if name is None or name == "":
            raise ValueError("a MapMessage name must not be None or empty")
        if not isinstance(name, str):
            raise TypeError(f"a MapMessage name is a str, not {type(name).__name__}")
        try:
            cv.check_string(name)
        except MessageFormatException:
            raise ValueError(f"the name {name!r:.60} holds an unpaired surrogate") from None
        return name

    def _set(self, name: str, tag: T, value: object) -> None:
        key = self._check_name(name)
        stored = cv.check_value(tag, value)
        self._map[key] = (T.NULL, None) if stored is None else (tag, stored)

    def set_boolean(self, name: str, value: bool) -> None:
        """Set a boolean value.

        Raises:
            MessageNotWriteableException: the body is read-only.
            ValueError: the name is None or empty (BODY-30).
            TypeError: ``value`` is not a bool.
        """
        self._set(name, T.BOOLEAN, value)

    def set_byte(self, name: str, value: int) -> None:
        """Set a byte value (-128 … 127).

        Raises:
            MessageNotWriteableException: the body is read-only.
            ValueError: the name is None or empty (BODY-30), or the value is out of range.
            TypeError: ``value`` is not an int (or is a bool).
        """
        self._set(name, T.BYTE, value)

    def set_short(self, name: str, value: int) -> None:
        """Set a short value (16-bit).

        Raises:
            MessageNotWriteableException: the body is read-only.
            ValueError: the name is None or empty (BODY-30), or the value is out of range.
            TypeError: ``value`` is not an int (or is a bool).
        """
        self._set(name, T.SHORT, value)

    def set_char(self, name: str, value: str) -> None:
        """Set a char value: one character in U+0000 … U+FFFF.

        Raises:
            MessageNotWriteableException: the body is read-only.
            ValueError: the name is None or empty (BODY-30), or not one BMP character.
            TypeError: ``value`` is not a str.
        """
        self._set(name, T.CHAR, value)

    def set_int(self, name: str, value: int) -> None:
        """Set an int value (32-bit).

        Raises:
            MessageNotWriteableException: the body is read-only.
            ValueError: the name is None or empty (BODY-30), or the value is out of range.
            TypeError: ``value`` is not an int (or is a bool).
        """
        self._set(name, T.INT, value)

    def set_long(self, name: str, value: int) -> None:
        """Set a long value (64-bit).

        Raises:
            MessageNotWriteableException: the body is read-only.
            ValueError: the name is None or empty (BODY-30), or the value is out of range.
            TypeError: ``value`` is not an int (or is a bool).
        """
        self._set(name, T.LONG, value)

    def set_float(self, name: str, value: float) -> None:
        """Set a float value (rounded to the nearest binary32 value).

        Raises:
            MessageNotWriteableException: the body is read-only.
            ValueError: the name is None or empty (BODY-30), or a finite value overflows
                binary32.
            TypeError: ``value`` is not a float or int (or is a bool).
        """
        self._set(name, T.FLOAT, value)

    def set_double(self, name: str, value: float) -> None:
        """Set a double value.

        Raises:
            MessageNotWriteableException: the body is read-only.
            ValueError: the name is None or empty (BODY-30).
            TypeError: ``value`` is not a float or int (or is a bool).
        """
        self._set(name, T.DOUBLE, value)

    def set_string(self, name: str, value: str | None) -> None:
        """Set a String value; None stores null.

        Raises:
            MessageNotWriteableException: the body is read-only.
            ValueError: the name is None or empty (BODY-30).
            TypeError: ``value`` is not a str or None.
            MessageFormatException: an unpaired surrogate (A-33).
        """
        self._set(name, T.STRING, value)

    def set_bytes(
        self,
        name: str,
        value: bytes | bytearray | memoryview | None,
        offset: int = 0,
        length: int | None = None,
    ) -> None:
        """Set a byte[] value: a copy of ``value[offset:offset + length]``; None stores null
        (BODY-33).

        Raises:
            MessageNotWriteableException: the body is read-only.
            ValueError: the name is None or empty (BODY-30).
            TypeError: ``value`` is not bytes-like or None.
            IndexError: the range lies outside ``value``.
        """
        key = self._check_name(name)
        if value is None:
            self._map[key] = (T.NULL, None)
        else:
            self._map[key] = (T.BYTES, cv.slice_bytes(value, offset, length))

    def set_object(
        self, name: str, value: bool | int | float | str | bytes | bytearray | memoryview | None
    ) -> None:
        """Set a value typed by its Python type (BODY-33): bool -> boolean, int -> long,
        float -> double, str -> String, bytes-like -> byte[] (copied), None -> null.

        Raises:
            MessageNotWriteableException: the body is read-only.
            ValueError: the name is None or empty (BODY-30).
            MessageFormatException: any other type, or an int outside 64 bits.
        """
        key = self._check_name(name)
        self._map[key] = cv.from_object(value, body=True)

    # ------------------------------------------------------------------ reads

    def _get(self, name: str) -> tuple[T, Value]:
        entry = self._map.get(name) if isinstance(name, str) else None
        return (T.NULL, None) if entry is None else entry

    def get_boolean(self, name: str) -> bool:
        """The value as boolean (table 4.4); absent or null gives False (BODY-32).

        Raises:
            MessageFormatException: the stored type does not convert.
        """
        return cv.to_boolean(*self._get(name))

    def get_byte(self, name: str) -> int:
        """The value as byte (table 4.4).

        Raises:
            MessageFormatException: the stored type does not convert.
            ValueError: absent, null, or a String that is not a byte.
        """
        return cv.to_integral(*self._get(name), T.BYTE)

    def get_short(self, name: str) -> int:
        """The value as short (table 4.4).

        Raises:
            MessageFormatException: the stored type does not convert.
            ValueError: absent, null, or a String that is not a short.
        """
        return cv.to_integral(*self._get(name), T.SHORT)

    def get_char(self, name: str) -> str:
        """The value as char; only a char converts (table 4.4).

        Raises:
            MessageFormatException: the stored value is not a char.
            TypeError: absent or null (BODY-32).
        """
        return cv.to_char(*self._get(name))

    def get_int(self, name: str) -> int:
        """The value as int (table 4.4).

        Raises:
            MessageFormatException: the stored type does not convert.
            ValueError: absent, null, or a String that is not an int.
        """
        return cv.to_integral(*self._get(name), T.INT)

    def get_long(self, name: str) -> int:
        """The value as long (table 4.4).

        Raises:
            MessageFormatException: the stored type does not convert.
            ValueError: absent, null, or a String that is not a long.
        """
        return cv.to_integral(*self._get(name), T.LONG)

    def get_float(self, name: str) -> float:
        """The value as float (table 4.4).

        Raises:
            MessageFormatException: the stored type does not convert.
            ValueError: a String that is not a Java float.
            TypeError: absent or null.
        """
        return cv.to_float(*self._get(name))

    def get_double(self, name: str) -> float:
        """The value as double (table 4.4).

        Raises:
            MessageFormatException: the stored type does not convert.
            ValueError: a String that is not a Java double.
            TypeError: absent or null.
        """
        return cv.to_double(*self._get(name))

    def get_string(self, name: str) -> str | None:
        """The value as String in Java's text forms; absent or null gives None.

        Raises:
            MessageFormatException: a byte[] value.
        """
        return cv.to_string(*self._get(name))

    def get_bytes(self, name: str) -> bytes | None:
        """A copy of a byte[] value; absent or null gives None (BODY-33).

        Raises:
            MessageFormatException: any other type.
        """
        return cv.to_bytes(*self._get(name))

    def get_object(self, name: str) -> bool | int | float | str | bytes | None:
        """The value in its stored type (``bytes`` for byte[], a one-character str for
        char), or None when absent or null. Never raises."""
        return self._get(name)[1]

    def item_exists(self, name: str) -> bool:
        """True when the name is present, also with a null value (BODY-31). Never raises."""
        return isinstance(name, str) and name in self._map

    def get_map_names(self) -> set[str]:
        """A new set of every name, in no defined order (BODY-31). Never raises."""
        return set(self._map)

    # ------------------------------------------------------------------ get_body

    def _has_body(self) -> bool:
        return bool(self._map)

    def _body_as(self, cls: type[_B]) -> _B:
        if not issubclass(dict, cls):
            raise MessageFormatException(
                f"a MapMessage body is a dict, which is not assignable to {cls.__name__}"
            )
        body = {name: value for name, (_, value) in self._map.items()}
        assert isinstance(body, cls)
        return body

    def _copy_body(self, dup: Message) -> None:
        assert isinstance(dup, MapMessage)
        dup._map = self._map.copy()
