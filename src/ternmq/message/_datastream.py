"""Java ``DataOutputStream`` / ``DataInputStream`` encodings (catalog §4.3, BODY-15, BODY-20).

Big-endian fixed-width numbers, canonical NaNs (``floatToIntBits``/``doubleToLongBits``), and
Java's *modified UTF-8*: each UTF-16 code unit is encoded on its own, U+0000 as ``C0 80``,
U+0001…U+007F in one octet, up to U+07FF in two, the rest (surrogates included) in three;
characters above U+FFFF therefore become two three-octet surrogate encodings.
"""

from __future__ import annotations

import math
import struct
from typing import Final

__all__ = [
    "MAX_UTF_LENGTH",
    "decode_modified_utf8",
    "encode_modified_utf8",
    "pack_double",
    "pack_float",
]

#: ``writeUTF`` stores the encoded length in an unsigned short.
MAX_UTF_LENGTH: Final = 0xFFFF

_NAN32: Final = b"\x7f\xc0\x00\x00"
_NAN64: Final = b"\x7f\xf8\x00\x00\x00\x00\x00\x00"
_F32 = struct.Struct(">f")
_F64 = struct.Struct(">d")


def pack_float(x: float) -> bytes:
    """The 4 octets of ``writeFloat``: binary32 big-endian, any NaN as 0x7FC00000.

    ``x`` must already be a binary32 value (see ``_convert.check_float``). Never raises for
    such a value.
    """
    return _NAN32 if math.isnan(x) else _F32.pack(x)


def pack_double(x: float) -> bytes:
    """The 8 octets of ``writeDouble``: binary64 big-endian, any NaN canonical. Never raises."""
    return _NAN64 if math.isnan(x) else _F64.pack(x)


def _split_astral(s: str) -> str:
    out = []
    for ch in s:
        o = ord(ch)
        if o > 0xFFFF:
            o -= 0x10000
            out.append(chr(0xD800 + (o >> 10)))
            out.append(chr(0xDC00 + (o & 0x3FF)))
        else:
            out.append(ch)
    return "".join(out)


def encode_modified_utf8(s: str) -> bytes:
    """Encode ``s`` as Java's modified UTF-8 (without the length prefix). Never raises.

    Unpaired surrogates are encoded like any other code unit, as Java does.
    """
    if s.isascii() and "\x00" not in s:
        return s.encode("ascii")
    # UTF-8 with surrogates passed through is modified UTF-8 once astral characters are split
    # into surrogate pairs and NUL is given its two-octet form.
    return _split_astral(s).encode("utf-8", "surrogatepass").replace(b"\x00", b"\xc0\x80")


def decode_modified_utf8(data: bytes) -> str:
    """Decode Java's modified UTF-8 exactly as ``DataInputStream.readUTF`` does.

    Surrogate pairs become one character; unpaired surrogates are kept.

    Raises:
        ValueError: malformed input (a bad lead or continuation octet, or a truncated
            character), Java's UTFDataFormatException.
    """
    if data.isascii():
        return data.decode("ascii")
    units = bytearray()  # UTF-16-BE code units
    i, n = 0, len(data)
    while i < n:
        c = data[i]
        kind = c >> 4
        if kind <= 7:
            unit = c
            i += 1
        elif kind in (12, 13):
            if i + 1 >= n or data[i + 1] & 0xC0 != 0x80:
                raise ValueError(f"malformed modified UTF-8 around octet {i}")
            unit = ((c & 0x1F) << 6) | (data[i + 1] & 0x3F)
            i += 2
        elif kind == 14:
            if i + 2 >= n or data[i + 1] & 0xC0 != 0x80 or data[i + 2] & 0xC0 != 0x80:
                raise ValueError(f"malformed modified UTF-8 around octet {i}")
            unit = ((c & 0x0F) << 12) | ((data[i + 1] & 0x3F) << 6) | (data[i + 2] & 0x3F)
            i += 3
        else:
            raise ValueError(f"malformed modified UTF-8: octet 0x{c:02X} at {i}")
        units += unit.to_bytes(2, "big")
    return units.decode("utf-16-be", "surrogatepass")
