"""JMS value type tags, shared by properties, map and stream bodies, and the codec.

Python's ``int``/``float`` carry no width, so the JMS type of every typed value is kept
beside it as one of these tags (catalog §1.1). The numeric values are part of the binary
message encoding: never renumber them.
"""

from __future__ import annotations

import enum

__all__ = ["T", "Value"]

# A typed value's Python form: bool, int (byte/short/int/long), float (float/double),
# str (String, or a 1-character char), bytes (byte[]), or None (null).
Value = bool | int | float | str | bytes | None


class T(enum.IntEnum):
    """The JMS type of a value."""

    NULL = 0
    BOOLEAN = 1
    BYTE = 2
    SHORT = 3
    CHAR = 4
    INT = 5
    LONG = 6
    FLOAT = 7
    DOUBLE = 8
    STRING = 9
    BYTES = 10
