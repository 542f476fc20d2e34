"""Java value semantics in Python: ranges, binary32 rounding, text forms, conversion tables.

One module for every idea that properties, MapMessage and StreamMessage share (catalog §1.1,
§1.3, table 3.1 = PROP-08 and table 4.4 = BODY-34):

* ``check_*`` validate what a typed setter receives (PROP-02, §1.1) and return the value to
  store; :func:`from_object` maps a plain Python value to a typed value (PROP-13, BODY-28).
* ``to_*`` read a stored typed value as another type. The property table is the body table
  without its char and byte[] rows and columns, so one set of functions serves both.
* The text conversions emulate ``Boolean/Long/Double/Float.valueOf`` and ``toString`` of the
  JDK (>= 19 for floating point, A-20), not Python's built-ins, which differ in many corners.

Exceptions follow catalog §1.2: ``MessageFormatException`` for an unsupported conversion,
``ValueError`` for Java's NumberFormatException and for out-of-range arguments, ``TypeError``
for Java's NullPointerException and for arguments of the wrong Python type.
"""

from __future__ import annotations

import math
import re
import struct
from decimal import Decimal
from fractions import Fraction
from typing import Final

from ternmq.errors import MessageFormatException
from ternmq.message._types import T, Value

__all__ = [
    "INTEGRAL_RANGES",
    "TYPE_NAMES",
    "check_boolean",
    "check_bytes",
    "check_char",
    "check_double",
    "check_float",
    "check_integral",
    "check_string",
    "check_value",
    "convert",
    "from_object",
    "java_double_to_string",
    "java_float_to_string",
    "parse_java_boolean",
    "parse_java_double",
    "parse_java_float",
    "parse_java_integral",
    "slice_bytes",
    "to_boolean",
    "to_bytes",
    "to_char",
    "to_double",
    "to_float",
    "to_float32",
    "to_integral",
    "to_string",
]

#: The Java name of each type tag, as used in messages and by ``get_property_type``.
TYPE_NAMES: Final[dict[T, str]] = {
    T.NULL: "null",
    T.BOOLEAN: "boolean",
    T.BYTE: "byte",
    T.SHORT: "short",
    T.CHAR: "char",
    T.INT: "int",
    T.LONG: "long",
    T.FLOAT: "float",
    T.DOUBLE: "double",
    T.STRING: "String",
    T.BYTES: "byte[]",
}

#: Inclusive ranges of Java's integral types.
INTEGRAL_RANGES: Final[dict[T, tuple[int, int]]] = {
    T.BYTE: (-(2**7), 2**7 - 1),
    T.SHORT: (-(2**15), 2**15 - 1),
    T.INT: (-(2**31), 2**31 - 1),
    T.LONG: (-(2**63), 2**63 - 1),
}

# Widening order of the integral types (byte -> short -> int -> long).
_RANK: Final[dict[T, int]] = {T.BYTE: 0, T.SHORT: 1, T.INT: 2, T.LONG: 3}

_F32 = struct.Struct(">f")
_U32 = struct.Struct(">I")


# --------------------------------------------------------------------------- binary32


def to_float32(x: float) -> float:
    """Round ``x`` to the nearest IEEE 754 binary32 value (ties to even), widened back.

    A finite value beyond the binary32 range becomes ±infinity; NaN, ±infinity and -0.0 are
    kept. Never raises.
    """
    try:
        return float(_F32.unpack(_F32.pack(x))[0])
    except OverflowError:
        return math.copysign(math.inf, x)


def _fraction_to_float32(q: Fraction) -> float:
    """Round a non-negative exact rational to binary32 (ties to even), without double rounding."""
    if q == 0:
        return 0.0
    n, d = q.numerator, q.denominator
    e = n.bit_length() - d.bit_length()  # q lies in [2**(e-1), 2**(e+1))
    if (n << max(0, -e)) < (d << max(0, e)):
        e -= 1
    e = max(e, -126)  # subnormals share the exponent of the smallest normal
    shift = 23 - e
    num, den = (n << shift, d) if shift >= 0 else (n, d << -shift)
    m, rem = divmod(num, den)
    if 2 * rem > den or (2 * rem == den and m & 1):
        m += 1
    if m == 1 << 24:
        m >>= 1
        e += 1
    if e > 127:
        return math.inf
    return math.ldexp(m, e - 23)


# --------------------------------------------------------------------------- setters


def _type_error(expected: str, value: object) -> TypeError:
    return TypeError(f"expected {expected}, got {type(value).__name__} ({value!r:.60})")


def check_boolean(value: object) -> bool:
    """Validate a boolean argument. Raises ``TypeError`` unless ``value`` is a ``bool``."""
    if not isinstance(value, bool):
        raise _type_error("a bool", value)
    return value


def check_integral(tag: T, value: object) -> int:
    """Validate an argument for the integral type ``tag`` (byte, short, int or long).

    Raises:
        TypeError: ``value`` is not an ``int``, or is a ``bool``.
        ValueError: ``value`` is outside the Java range of ``tag``.
    """
    if not isinstance(value, int) or isinstance(value, bool):
        raise _type_error(f"an int for a Java {TYPE_NAMES[tag]}", value)
    lo, hi = INTEGRAL_RANGES[tag]
    if not lo <= value <= hi:
        raise ValueError(
            f"{value} is outside the Java {TYPE_NAMES[tag]} range {lo} … {hi}; use a wider type"
        )
    return int(value)


def _check_real(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _type_error(f"a float or int for a Java {what}", value)
    try:
        return float(value)
    except OverflowError:
        raise ValueError(f"{value} is too large for a Java {what}") from None


def check_float(value: object) -> float:
    """Validate a Java float argument and round it to the nearest binary32 value (PROP-03).

    Raises:
        TypeError: ``value`` is not a ``float`` or ``int`` (or is a ``bool``).
        ValueError: a finite value whose rounded magnitude overflows binary32.
    """
    x = _check_real(value, "float")
    f = to_float32(x)
    if math.isinf(f) and math.isfinite(x):
        raise ValueError(f"{value} overflows a Java float (binary32); use a double")
    return f


def check_double(value: object) -> float:
    """Validate a Java double argument.

    Raises:
        TypeError: ``value`` is not a ``float`` or ``int`` (or is a ``bool``).
        ValueError: an ``int`` too large for a double.
    """
    return _check_real(value, "double")


def check_string(value: object, *, nullable: bool = True) -> str | None:
    """Validate a Java String argument (A-33).

    Raises:
        TypeError: ``value`` is not a ``str`` (nor ``None`` when ``nullable``).
        MessageFormatException: the string holds an unpaired surrogate, which no wire
            encoding can carry.
    """
    if value is None and nullable:
        return None
    if not isinstance(value, str):
        raise _type_error("a str", value)
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise MessageFormatException(
                f"string holds an unpaired surrogate at index {exc.start}; "
                "only well-formed Unicode text can be sent",
                linked_exception=exc,
            ) from None
    return str(value)


def check_char(value: object) -> str:
    """Validate a Java char argument: one character in U+0000 … U+FFFF (BODY-28).

    Raises:
        TypeError: ``value`` is not a ``str``.
        ValueError: not exactly one character, or a character outside the BMP.
    """
    if not isinstance(value, str):
        raise _type_error("a one-character str", value)
    if len(value) != 1 or ord(value) > 0xFFFF:
        raise ValueError(
            f"a Java char is one UTF-16 code unit (U+0000 … U+FFFF), not {value!r:.40}"
        )
    return str(value)


def check_bytes(value: object) -> bytes:
    """Validate a byte[] argument and return a copy as ``bytes``.

    Raises:
        TypeError: ``value`` is not ``bytes``, ``bytearray`` or ``memoryview`` (``None``
            included: Java's NullPointerException).
    """
    if not isinstance(value, bytes | bytearray | memoryview):
        raise _type_error("bytes, bytearray or memoryview", value)
    return bytes(value)


def slice_bytes(data: object, offset: int, length: int | None) -> bytes:
    """Copy ``data[offset:offset + length]`` (all the rest when ``length`` is None).

    Raises:
        TypeError: ``data`` is not bytes-like, or offset/length are not ints.
        IndexError: the range is not inside ``data``.
    """
    raw = check_bytes(data)
    if not isinstance(offset, int) or not (length is None or isinstance(length, int)):
        raise TypeError("offset and length must be ints")
    if length is None:
        length = len(raw) - offset
    if offset < 0 or length < 0 or offset + length > len(raw):
        raise IndexError(
            f"offset {offset} and length {length} select outside the {len(raw)} octets given"
        )
    return raw[offset : offset + length]


def check_value(tag: T, value: object) -> Value:
    """Validate ``value`` as an argument of the typed setter for ``tag``; return what to store.

    Raises what the ``check_*`` function for ``tag`` raises.
    """
    if tag is T.BOOLEAN:
        return check_boolean(value)
    if tag in _RANK:
        return check_integral(tag, value)
    if tag is T.FLOAT:
        return check_float(value)
    if tag is T.DOUBLE:
        return check_double(value)
    if tag is T.STRING:
        return check_string(value)
    if tag is T.CHAR:
        return check_char(value)
    if tag is T.BYTES:
        return check_bytes(value)
    raise ValueError(f"no setter for type {tag!r}")


def from_object(value: object, *, body: bool) -> tuple[T, Value]:
    """Map a plain Python value to a typed value (catalog §1.1, PROP-13, BODY-28).

    ``bool`` -> boolean, ``int`` -> long, ``float`` -> double, ``str`` -> String,
    ``None`` -> null; with ``body`` also ``bytes``/``bytearray``/``memoryview`` -> byte[]
    (copied).

    Raises:
        MessageFormatException: any other type, an ``int`` outside the 64-bit range, or a
            string with an unpaired surrogate.
    """
    if value is None:
        return T.NULL, None
    if isinstance(value, bool):
        return T.BOOLEAN, value
    if isinstance(value, int):
        lo, hi = INTEGRAL_RANGES[T.LONG]
        if not lo <= value <= hi:
            raise MessageFormatException(
                f"{value} does not fit a Java long (64 bits); send it as a str"
            )
        return T.LONG, int(value)
    if isinstance(value, float):
        return T.DOUBLE, float(value)
    if isinstance(value, str):
        return T.STRING, check_string(value)
    if body and isinstance(value, bytes | bytearray | memoryview):
        return T.BYTES, bytes(value)
    allowed = "bool, int, float, str, bytes or None" if body else "bool, int, float, str or None"
    raise MessageFormatException(
        f"values of type {type(value).__name__} are not supported here; use {allowed}"
    )


# --------------------------------------------------------------------------- text -> value

_ASCII_TRUE = "true"


def parse_java_boolean(text: str | None) -> bool:
    """``Boolean.valueOf(String)``: True exactly for "true" in any ASCII case. Never raises."""
    return text is not None and len(text) == 4 and text.isascii() and text.lower() == _ASCII_TRUE


_INT_RE = re.compile(r"[+-]?\d+")  # \d: Unicode decimal digits, as Character.digit(c, 10)


def parse_java_integral(text: str | None, tag: T) -> int:
    """``Byte/Short/Integer/Long.valueOf(String)`` (radix 10).

    Raises:
        ValueError: null, not an optionally signed run of decimal digits, or out of range
            (Java's NumberFormatException).
    """
    if text is None:
        raise ValueError(f"null cannot be read as a Java {TYPE_NAMES[tag]}")
    if not _INT_RE.fullmatch(text):
        raise ValueError(f"{text!r:.60} is not a Java {TYPE_NAMES[tag]} (decimal digits only)")
    value = int(text)
    lo, hi = INTEGRAL_RANGES[tag]
    if not lo <= value <= hi:
        raise ValueError(f"{text!r:.60} is outside the Java {TYPE_NAMES[tag]} range {lo} … {hi}")
    return value


_FLOAT_RE = re.compile(
    r"""(?P<sign>[+-]?)(?:
        (?P<nan>NaN)
      | (?P<inf>Infinity)
      | (?P<dec>(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)[fFdD]?
      | (?P<hex>0[xX](?:[0-9a-fA-F]+\.?|[0-9a-fA-F]*\.[0-9a-fA-F]+)[pP][+-]?[0-9]+)[fFdD]?
    )""",
    re.VERBOSE | re.ASCII,
)
_JAVA_TRIM = "".join(chr(c) for c in range(0x21))  # String.trim(): every char <= U+0020


def _parse_real(text: str | None, single: bool) -> float:
    what = "float" if single else "double"
    if text is None:
        raise TypeError(f"null cannot be read as a Java {what}")
    m = _FLOAT_RE.fullmatch(text.strip(_JAVA_TRIM))
    if m is None:
        raise ValueError(f"{text!r:.60} is not a Java {what} literal")
    negative = m["sign"] == "-"
    if m["nan"]:
        return math.nan
    if m["inf"]:
        return -math.inf if negative else math.inf
    if m["dec"] is not None:
        core = m["dec"]
        d = float(core)  # correctly rounded binary64; overflow -> inf, underflow -> 0.0
        exact: Fraction | None = Fraction(Decimal(core)) if single and d and d != math.inf else None
    else:
        core = m["hex"]
        try:
            d = float.fromhex(core)
        except OverflowError:
            d = math.inf
        exact = _hex_fraction(core) if single and d and d != math.inf else None
    if single:
        # Round the exact value directly to binary32 (Float.valueOf does not round twice).
        d = _fraction_to_float32(exact) if exact is not None else d
    return -d if negative else d


def _hex_fraction(core: str) -> Fraction:
    mantissa, _, exp = core[2:].lower().partition("p")
    whole, _, frac = mantissa.partition(".")
    digits = int((whole + frac) or "0", 16)
    return Fraction(digits) * Fraction(2) ** (int(exp) - 4 * len(frac))


def parse_java_double(text: str | None) -> float:
    """``Double.valueOf(String)`` (catalog §1.3).

    Raises:
        TypeError: ``text`` is None (Java's NullPointerException).
        ValueError: not a Java floating-point literal (Java's NumberFormatException).
    """
    return _parse_real(text, single=False)


def parse_java_float(text: str | None) -> float:
    """``Float.valueOf(String)``: the decimal is rounded directly to binary32 (catalog §1.3).

    Raises:
        TypeError: ``text`` is None (Java's NullPointerException).
        ValueError: not a Java floating-point literal (Java's NumberFormatException).
    """
    return _parse_real(text, single=True)


# --------------------------------------------------------------------------- value -> text


def _floor_log10(q: Fraction) -> int:
    """The exponent E with 10**E <= q < 10**(E+1), for q > 0."""
    e = len(str(q.numerator)) - len(str(q.denominator))
    while Fraction(10) ** e > q:
        e -= 1
    while Fraction(10) ** (e + 1) <= q:
        e += 1
    return e


def _neighbours(x: float, single: bool) -> tuple[Fraction, Fraction]:
    """The adjacent values below and above a positive finite ``x`` in its type."""
    if single:
        bits = _U32.unpack(_F32.pack(x))[0]
        below = _F32.unpack(_U32.pack(bits - 1))[0] if bits > 0 else 0.0
        above_bits = bits + 1
        above = (
            Fraction(2) ** 128
            if above_bits == 0x7F800000
            else Fraction(_F32.unpack(_U32.pack(above_bits))[0])
        )
        return Fraction(below), above
    nxt = math.nextafter(x, math.inf)
    above = Fraction(2) ** 1024 if math.isinf(nxt) else Fraction(nxt)
    return Fraction(math.nextafter(x, 0.0)), above


def _shortest_decimal(x: float, single: bool) -> tuple[str, int]:
    """Java's (JDK >= 19) decimal for a positive finite ``x``: (digits, exponent E).

    Among the decimals that round to ``x`` in its type, take those of minimal length (also
    those of length 2 when the minimum is 1), then the one closest to ``x``, ties to an even
    last digit. The result is ``digits[0].digits[1:] × 10**E`` without trailing zeros.
    """
    fx = Fraction(x)
    below, above = _neighbours(x, single)
    lo, hi = (fx + below) / 2, (fx + above) / 2
    if single:
        inclusive = _U32.unpack(_F32.pack(x))[0] % 2 == 0
    else:
        inclusive = struct.unpack(">Q", struct.pack(">d", x))[0] % 2 == 0

    def rounds_to_x(c: Fraction) -> bool:
        return lo < c < hi or (inclusive and c in (lo, hi))

    ex = _floor_log10(fx)
    if single:
        start = 1
    else:  # repr() gives the minimal length of a round-tripping decimal
        start = len(repr(x).partition("e")[0].replace(".", "").lstrip("0").rstrip("0")) or 1
    found: list[tuple[Fraction, int]] = []  # (candidate, grid exponent)
    p = start
    while True:
        g_exp = ex - p + 1
        g = Fraction(10) ** g_exp
        k = math.floor(fx / g)
        for c in (k * g, (k + 1) * g):
            if rounds_to_x(c):
                found.append((c, g_exp))
        if found and p >= 2:
            break
        if found and p == 1:
            p = 2  # Java also weighs the two-digit decimals when one digit suffices
            continue
        p += 1

    def key(item: tuple[Fraction, int]) -> tuple[Fraction, int]:
        c, g_exp = item
        last_digit = int(c / Fraction(10) ** g_exp) % 10
        return abs(c - fx), last_digit % 2

    best, g_exp = min(found, key=key)
    mantissa = int(best / Fraction(10) ** g_exp)
    digits = str(mantissa)
    stripped = digits.rstrip("0") or "0"
    e = g_exp + len(digits) - 1
    return stripped, e


def _java_real_to_string(x: float, single: bool) -> str:
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    sign = "-" if x < 0 else ""
    digits, e = _shortest_decimal(abs(x), single)
    if -3 <= e < 7:
        if e >= 0:
            padded = digits.ljust(e + 1, "0")
            return f"{sign}{padded[: e + 1]}.{padded[e + 1 :] or '0'}"
        return f"{sign}0.{'0' * (-e - 1)}{digits}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{e}"


def java_double_to_string(x: float) -> str:
    """``Double.toString`` of the JDK >= 19 (catalog §1.3, A-20). Never raises."""
    return _java_real_to_string(x, single=False)


def java_float_to_string(x: float) -> str:
    """``Float.toString`` of the JDK >= 19 for the binary32 value ``x``. Never raises.

    ``x`` is rounded to binary32 first, so any Python float is accepted.
    """
    return _java_real_to_string(to_float32(x), single=True)


# --------------------------------------------------------------------------- conversions


def _unsupported(tag: T, target: T) -> MessageFormatException:
    return MessageFormatException(
        f"a {TYPE_NAMES[tag]} value cannot be read as {TYPE_NAMES[target]}; "
        "read it with a getter its type converts to (JMS conversion table)"
    )


def to_boolean(tag: T, value: Value) -> bool:
    """Read a typed value as boolean: boolean as is, String by ``Boolean.valueOf``, null False.

    Raises:
        MessageFormatException: any other type.
    """
    if tag is T.BOOLEAN or tag is T.STRING or tag is T.NULL:
        if tag is T.BOOLEAN:
            return bool(value)
        return parse_java_boolean(value if isinstance(value, str) else None)
    raise _unsupported(tag, T.BOOLEAN)


def to_integral(tag: T, value: Value, target: T) -> int:
    """Read a typed value as the integral type ``target`` (widening only, or from String).

    Raises:
        MessageFormatException: a type that does not widen to ``target``.
        ValueError: null, or a String that ``valueOf`` of ``target`` rejects.
    """
    rank = _RANK.get(tag)
    if rank is not None and rank <= _RANK[target]:
        assert isinstance(value, int)
        return value
    if tag is T.STRING or tag is T.NULL:
        return parse_java_integral(value if isinstance(value, str) else None, target)
    raise _unsupported(tag, target)


def to_float(tag: T, value: Value) -> float:
    """Read a typed value as a Java float.

    Raises:
        MessageFormatException: any type but float or String.
        ValueError: a String that ``Float.valueOf`` rejects.
        TypeError: null.
    """
    if tag is T.FLOAT:
        assert isinstance(value, float)
        return value
    if tag is T.STRING or tag is T.NULL:
        return parse_java_float(value if isinstance(value, str) else None)
    raise _unsupported(tag, T.FLOAT)


def to_double(tag: T, value: Value) -> float:
    """Read a typed value as a Java double (float widens exactly).

    Raises:
        MessageFormatException: any type but float, double or String.
        ValueError: a String that ``Double.valueOf`` rejects.
        TypeError: null.
    """
    if tag is T.FLOAT or tag is T.DOUBLE:
        assert isinstance(value, float)
        return value
    if tag is T.STRING or tag is T.NULL:
        return parse_java_double(value if isinstance(value, str) else None)
    raise _unsupported(tag, T.DOUBLE)


def to_string(tag: T, value: Value) -> str | None:
    """Read a typed value as String with Java's ``toString`` forms; null gives None.

    Raises:
        MessageFormatException: a byte[] value.
    """
    if tag is T.STRING or tag is T.CHAR:
        assert isinstance(value, str)
        return value
    if tag is T.NULL:
        return None
    if tag is T.BOOLEAN:
        return "true" if value else "false"
    if tag in _RANK:
        return str(value)
    if tag is T.FLOAT:
        assert isinstance(value, float)
        return java_float_to_string(value)
    if tag is T.DOUBLE:
        assert isinstance(value, float)
        return java_double_to_string(value)
    raise _unsupported(tag, T.STRING)


def to_char(tag: T, value: Value) -> str:
    """Read a typed value as a Java char (body values only).

    Raises:
        MessageFormatException: any type but char (String -> char is not supported).
        TypeError: null (Java's NullPointerException).
    """
    if tag is T.CHAR:
        assert isinstance(value, str)
        return value
    if tag is T.NULL:
        raise TypeError("a null value cannot be read as a Java char")
    raise _unsupported(tag, T.CHAR)


def to_bytes(tag: T, value: Value) -> bytes | None:
    """Read a typed value as byte[] (body values only); null gives None.

    Raises:
        MessageFormatException: any type but byte[].
    """
    if tag is T.BYTES:
        assert isinstance(value, bytes)
        return bytes(value)
    if tag is T.NULL:
        return None
    raise _unsupported(tag, T.BYTES)


def convert(tag: T, value: Value, target: T) -> Value:
    """Read the typed value ``(tag, value)`` as ``target`` (tables 3.1 and 4.4).

    Raises what the ``to_*`` function of ``target`` raises.
    """
    if target is T.BOOLEAN:
        return to_boolean(tag, value)
    if target in _RANK:
        return to_integral(tag, value, target)
    if target is T.FLOAT:
        return to_float(tag, value)
    if target is T.DOUBLE:
        return to_double(tag, value)
    if target is T.STRING:
        return to_string(tag, value)
    if target is T.CHAR:
        return to_char(tag, value)
    if target is T.BYTES:
        return to_bytes(tag, value)
    raise ValueError(f"cannot convert to {target!r}")
