"""BytesMessage: a body of uninterpreted octets (JMS 2.0 §3.11; catalog BODY-15 … BODY-20).

The whole body lives in ``_buffer``; ``_pos`` is the read position. A new or cleared body is
write-only (``_read_only_body`` False, writes append); ``reset()`` or ``_freeze()`` switch to
read mode at position 0 (BODY-06). Every read either consumes exactly its encoding or
raises and leaves ``_pos`` where it was (BODY-16, A-41).
"""

from __future__ import annotations

import struct
from typing import ClassVar, TypeVar

from ternmq.errors import (
    MessageEOFException,
    MessageFormatException,
    MessageNotReadableException,
    MessageNotWriteableException,
)
from ternmq.message import _convert as cv
from ternmq.message import _datastream as ds
from ternmq.message._message import Message
from ternmq.message._types import T

__all__ = ["BytesMessage"]

_B = TypeVar("_B")

_H = struct.Struct(">h")
_UH = struct.Struct(">H")
_I = struct.Struct(">i")
_Q = struct.Struct(">q")
_F = struct.Struct(">f")
_D = struct.Struct(">d")


class BytesMessage(Message):
    """A message whose body is a stream of octets written and read with Java's
    ``DataOutputStream`` encodings (JMS ``BytesMessage``).

    A new message is write-only until :meth:`reset`; a received one is read-only.
    """

    __slots__ = ("_buffer", "_pos")
    body_type: ClassVar[str] = "bytes"

    _buffer: bytearray
    _pos: int

    def __init__(self) -> None:
        super().__init__()
        self._buffer = bytearray()
        self._pos = 0

    # ------------------------------------------------------------------ modes

    def _check_writable(self) -> None:
        if self._read_only_body:
            raise MessageNotWriteableException(
                "this BytesMessage body is read-only; call clear_body() to write a new one"
            )

    def _check_readable(self) -> None:
        if not self._read_only_body:
            raise MessageNotReadableException(
                "this BytesMessage body is write-only; call reset() before reading"
            )

    def reset(self) -> None:
        """Make the body read-only and move the read position to the start (BODY-06).

        On a read-only body this just rewinds. Never raises.
        """
        self._read_only_body = True
        self._pos = 0

    def clear_body(self) -> None:
        """Empty the body and make it write-only (BODY-04). Never raises."""
        self._buffer = bytearray()
        self._pos = 0
        self._read_only_body = False

    def _rewind(self) -> None:
        self._pos = 0

    @property
    def body_length(self) -> int:
        """The number of octets in the body, whatever the read position (BODY-18).

        Raises:
            MessageNotReadableException: the body is write-only.
        """
        self._check_readable()
        return len(self._buffer)

    # ------------------------------------------------------------------ reads

    def _take(self, n: int, what: str) -> bytes:
        self._check_readable()
        end = self._pos + n
        if end > len(self._buffer):
            raise MessageEOFException(
                f"{what} needs {n} octets but only {len(self._buffer) - self._pos} remain"
            )
        data = bytes(self._buffer[self._pos : end])
        self._pos = end
        return data

    def read_boolean(self) -> bool:
        """Read one octet; any non-zero value is True (BODY-15).

        Raises:
            MessageNotReadableException: the body is write-only.
            MessageEOFException: no octet remains (the position is unchanged).
        """
        return self._take(1, "read_boolean")[0] != 0

    def read_byte(self) -> int:
        """Read a signed byte (-128 … 127).

        Raises:
            MessageNotReadableException: the body is write-only.
            MessageEOFException: no octet remains (the position is unchanged).
        """
        b = self._take(1, "read_byte")[0]
        return b - 256 if b > 127 else b

    def read_unsigned_byte(self) -> int:
        """Read an unsigned byte (0 … 255).

        Raises:
            MessageNotReadableException: the body is write-only.
            MessageEOFException: no octet remains (the position is unchanged).
        """
        return self._take(1, "read_unsigned_byte")[0]

    def read_short(self) -> int:
        """Read a big-endian signed 16-bit integer.

        Raises:
            MessageNotReadableException: the body is write-only.
            MessageEOFException: fewer than 2 octets remain (the position is unchanged).
        """
        return int(_H.unpack(self._take(2, "read_short"))[0])

    def read_unsigned_short(self) -> int:
        """Read a big-endian unsigned 16-bit integer (0 … 65535).

        Raises:
            MessageNotReadableException: the body is write-only.
            MessageEOFException: fewer than 2 octets remain (the position is unchanged).
        """
        return int(_UH.unpack(self._take(2, "read_unsigned_short"))[0])

    def read_char(self) -> str:
        """Read one UTF-16 code unit (2 octets, big-endian) as a one-character str.

        Raises:
            MessageNotReadableException: the body is write-only.
            MessageEOFException: fewer than 2 octets remain (the position is unchanged).
        """
        return chr(_UH.unpack(self._take(2, "read_char"))[0])

    def read_int(self) -> int:
        """Read a big-endian signed 32-bit integer.

        Raises:
            MessageNotReadableException: the body is write-only.
            MessageEOFException: fewer than 4 octets remain (the position is unchanged).
        """
        return int(_I.unpack(self._take(4, "read_int"))[0])

    def read_long(self) -> int:
        """Read a big-endian signed 64-bit integer.

        Raises:
            MessageNotReadableException: the body is write-only.
            MessageEOFException: fewer than 8 octets remain (the position is unchanged).
        """
        return int(_Q.unpack(self._take(8, "read_long"))[0])

    def read_float(self) -> float:
        """Read a big-endian binary32 value, widened exactly to a Python float.

        Raises:
            MessageNotReadableException: the body is write-only.
            MessageEOFException: fewer than 4 octets remain (the position is unchanged).
        """
        return float(_F.unpack(self._take(4, "read_float"))[0])

    def read_double(self) -> float:
        """Read a big-endian binary64 value.

        Raises:
            MessageNotReadableException: the body is write-only.
            MessageEOFException: fewer than 8 octets remain (the position is unchanged).
        """
        return float(_D.unpack(self._take(8, "read_double"))[0])

    def read_utf(self) -> str:
        """Read a string written by ``write_utf``: a 2-octet length, then modified UTF-8.

        Raises:
            MessageNotReadableException: the body is write-only.
            MessageEOFException: the body ends before the string does.
            MessageFormatException: the octets are not modified UTF-8 (BODY-20).
            In every error case the position is unchanged.
        """
        start = self._pos
        try:
            (length,) = _UH.unpack(self._take(2, "read_utf"))
            data = self._take(length, "read_utf")
            return ds.decode_modified_utf8(data)
        except ValueError as exc:
            self._pos = start
            raise MessageFormatException(
                f"read_utf found malformed modified UTF-8 at octet {start}: {exc}",
                linked_exception=exc,
            ) from exc
        except MessageEOFException:
            self._pos = start
            raise

    def read_bytes(self, n: int) -> bytes:
        """Read the next ``min(n, remaining)`` octets; ``b""`` at the end (BODY-17).

        Raises:
            MessageNotReadableException: the body is write-only.
            ValueError: ``n`` is negative.
            TypeError: ``n`` is not an int.
        """
        if not isinstance(n, int) or isinstance(n, bool):
            raise TypeError(f"read_bytes takes an int count, not {type(n).__name__}")
        if n < 0:
            raise ValueError(f"read_bytes count must not be negative, got {n}")
        self._check_readable()
        end = min(self._pos + n, len(self._buffer))
        data = bytes(self._buffer[self._pos : end])
        self._pos = end
        return data

    # ------------------------------------------------------------------ writes

    def _append(self, data: bytes) -> None:
        self._check_writable()
        self._buffer += data

    def write_boolean(self, value: bool) -> None:
        """Append one octet, 0x01 for True and 0x00 for False (BODY-15).

        Raises:
            MessageNotWriteableException: the body is read-only.
            TypeError: ``value`` is not a bool.
        """
        self._check_writable()
        self._append(b"\x01" if cv.check_boolean(value) else b"\x00")

    def write_byte(self, value: int) -> None:
        """Append a signed byte (-128 … 127).

        Raises:
            MessageNotWriteableException: the body is read-only.
            TypeError: ``value`` is not an int (or is a bool).
            ValueError: ``value`` is out of range.
        """
        self._check_writable()
        self._append((cv.check_integral(T.BYTE, value) & 0xFF).to_bytes(1, "big"))

    def write_short(self, value: int) -> None:
        """Append a big-endian signed 16-bit integer.

        Raises:
            MessageNotWriteableException: the body is read-only.
            TypeError: ``value`` is not an int (or is a bool).
            ValueError: ``value`` is out of range.
        """
        self._check_writable()
        self._append(_H.pack(cv.check_integral(T.SHORT, value)))

    def write_char(self, value: str) -> None:
        """Append one UTF-16 code unit as 2 big-endian octets.

        Raises:
            MessageNotWriteableException: the body is read-only.
            TypeError: ``value`` is not a str.
            ValueError: not one character in U+0000 … U+FFFF.
        """
        self._check_writable()
        self._append(_UH.pack(ord(cv.check_char(value))))

    def write_int(self, value: int) -> None:
        """Append a big-endian signed 32-bit integer.

        Raises:
            MessageNotWriteableException: the body is read-only.
            TypeError: ``value`` is not an int (or is a bool).
            ValueError: ``value`` is out of range.
        """
        self._check_writable()
        self._append(_I.pack(cv.check_integral(T.INT, value)))

    def write_long(self, value: int) -> None:
        """Append a big-endian signed 64-bit integer.

        Raises:
            MessageNotWriteableException: the body is read-only.
            TypeError: ``value`` is not an int (or is a bool).
            ValueError: ``value`` is out of range.
        """
        self._check_writable()
        self._append(_Q.pack(cv.check_integral(T.LONG, value)))

    def write_float(self, value: float) -> None:
        """Append the nearest binary32 value, big-endian (NaN as 0x7FC00000).

        Raises:
            MessageNotWriteableException: the body is read-only.
            TypeError: ``value`` is not a float or int (or is a bool).
            ValueError: a finite value that overflows binary32.
        """
        self._check_writable()
        self._append(ds.pack_float(cv.check_float(value)))

    def write_double(self, value: float) -> None:
        """Append a binary64 value, big-endian (NaN as 0x7FF8000000000000).

        Raises:
            MessageNotWriteableException: the body is read-only.
            TypeError: ``value`` is not a float or int (or is a bool).
            ValueError: an int too large for a double.
        """
        self._check_writable()
        self._append(ds.pack_double(cv.check_double(value)))

    def write_utf(self, value: str) -> None:
        """Append a 2-octet length and the modified UTF-8 of ``value`` (BODY-15, BODY-20).

        Raises:
            MessageNotWriteableException: the body is read-only.
            TypeError: ``value`` is None or not a str.
            MessageFormatException: the encoding exceeds 65535 octets (A-40).
        """
        self._check_writable()
        if not isinstance(value, str):
            raise TypeError(f"write_utf takes a str, not {type(value).__name__}")
        data = ds.encode_modified_utf8(value)
        if len(data) > ds.MAX_UTF_LENGTH:
            raise MessageFormatException(
                f"write_utf: the string encodes to {len(data)} octets, more than the "
                f"{ds.MAX_UTF_LENGTH} a length prefix can hold; use write_bytes instead"
            )
        self._append(_UH.pack(len(data)) + data)

    def write_bytes(
        self,
        data: bytes | bytearray | memoryview,
        offset: int = 0,
        length: int | None = None,
    ) -> None:
        """Append ``data[offset:offset + length]`` (all from ``offset`` when length is None).

        Raises:
            MessageNotWriteableException: the body is read-only.
            TypeError: ``data`` is None or not bytes-like (BODY-20).
            IndexError: the range lies outside ``data``.
        """
        self._check_writable()
        self._append(cv.slice_bytes(data, offset, length))

    def write_object(
        self, value: bool | int | float | str | bytes | bytearray | memoryview
    ) -> None:
        """Append ``value`` by its Python type (BODY-19): bool -> boolean, int -> long,
        float -> double, str -> ``write_utf``, bytes-like -> raw octets.

        Raises:
            MessageNotWriteableException: the body is read-only.
            TypeError: ``value`` is None.
            MessageFormatException: any other type, an int outside 64 bits, or a string
                longer than ``write_utf`` allows.
        """
        self._check_writable()
        if value is None:
            raise TypeError("BytesMessage.write_object(None): a BytesMessage cannot hold null")
        if isinstance(value, str):
            self.write_utf(value)
            return
        tag, v = cv.from_object(value, body=True)
        if tag is T.BOOLEAN:
            self.write_boolean(bool(v))
        elif tag is T.LONG:
            assert isinstance(v, int)
            self.write_long(v)
        elif tag is T.DOUBLE:
            assert isinstance(v, float)
            self.write_double(v)
        else:
            assert isinstance(v, bytes)
            self._append(v)

    # ------------------------------------------------------------------ get_body

    def _has_body(self) -> bool:
        return len(self._buffer) > 0

    def _body_as(self, cls: type[_B]) -> _B:
        if not issubclass(bytes, cls):
            raise MessageFormatException(
                f"a BytesMessage body is bytes, which is not assignable to {cls.__name__}"
            )
        if self._read_only_body:
            self._pos = 0  # a read-only body is left at its start
        body = bytes(self._buffer)
        assert isinstance(body, cls)
        return body

    def _copy_body(self, dup: Message) -> None:
        assert isinstance(dup, BytesMessage)
        dup._buffer = self._buffer.copy()
        dup._pos = self._pos
