"""Selector values and Java's numeric rules (catalog §5.6, SEL-40…SEL-48).

During evaluation a value is NULL (``None``), a type error (:data:`ERR`, SEL-48) or a
*typed value*: a ``(type, value)`` pair whose type is one of ``"boolean"``, ``"string"``,
``"int"``, ``"long"``, ``"float"``, ``"double"`` (byte and short behave as int in every
selector operation: arithmetic and unary signs promote them, comparisons are exact), or
``"other"`` for a value outside the message contract (compares FALSE, is a type error in
arithmetic). A float value is a Python ``float`` holding a binary32 value.

Both the reference evaluator and the generic paths of the compiled predicate use these
functions, so there is one statement of Java's promotion, wrap-around and rounding rules.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping
from decimal import Decimal
from typing import Final, Literal, TypeAlias

__all__ = [
    "ERR",
    "INT_MAX",
    "INT_MIN",
    "LONG_MAX",
    "LONG_MIN",
    "NUMERIC",
    "Err",
    "PyValue",
    "Typed",
    "TypeName",
    "Value",
    "arith",
    "compare",
    "decimal_to_f32",
    "float_div",
    "int_to_f32",
    "negate",
    "plus",
    "to_f32",
    "typed_property",
]

TypeName: TypeAlias = Literal["boolean", "string", "int", "long", "float", "double", "other"]
PyValue: TypeAlias = bool | int | float | str
Typed: TypeAlias = tuple[TypeName, object]


class Err:
    """The type-error outcome of arithmetic on a String or boolean (SEL-48, A-10)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "ERR"


ERR: Final = Err()
Value: TypeAlias = Typed | Err | None

INT_MIN: Final = -(1 << 31)
INT_MAX: Final = (1 << 31) - 1
LONG_MIN: Final = -(1 << 63)
LONG_MAX: Final = (1 << 63) - 1
NUMERIC: Final = frozenset({"int", "long", "float", "double"})

FLT_MAX: Final = struct.unpack("<f", b"\xff\xff\x7f\x7f")[0]
_F32_OVERFLOW_MID: Final = 2.0**128 - 2.0**103  # halfway between FLT_MAX and 2**128
_F32: Final = struct.Struct("<f")
_U32: Final = struct.Struct("<I")

# Type tags of ``ternmq.message._types.T`` (kept numerically equal, not imported, so the
# selector stays independent of the message package): BYTE, SHORT, INT -> "int"; FLOAT.
_INT_TAGS: Final = frozenset({2, 3, 5})
_FLOAT_TAG: Final = 7


def to_f32(x: float) -> float:
    """Round a double to the nearest binary32 value (ties to even); overflow gives ±inf."""
    try:
        return float(_F32.unpack(_F32.pack(x))[0])
    except OverflowError:
        return math.copysign(math.inf, x)


def int_to_f32(n: int) -> float:
    """Round an exact integer to binary32 in one step (JLS §5.1.2; no detour via binary64)."""
    a = -n if n < 0 else n
    if a <= 1 << 24:
        return float(n)
    bits = a.bit_length()
    if bits > 129:
        return math.copysign(math.inf, n)
    shift = bits - 24
    q = a >> shift
    r = a & ((1 << shift) - 1)
    half = 1 << (shift - 1)
    if r > half or (r == half and q & 1):
        q += 1
    res = math.ldexp(q, shift)
    if res > FLT_MAX:
        res = math.inf
    return res if n > 0 else -res


def _f32_neighbour(x: float, toward_larger_magnitude: bool) -> float:
    """The binary32 value next to ``x`` (a non-negative binary32) in magnitude."""
    bits = _U32.unpack(_F32.pack(x))[0]
    bits = bits + 1 if toward_larger_magnitude else bits - 1
    return float(_F32.unpack(_U32.pack(bits))[0])


def decimal_to_f32(text: str) -> float:
    """Round a decimal literal (``digits[.digits][e±digits]``) directly to binary32.

    Java's ``Float.valueOf`` rounds the decimal value once. Going through the nearest
    double first differs only when that double is exactly halfway between two binary32
    values; then the exact decimal decides (compared with :class:`decimal.Decimal`).
    """
    d = float(text)
    if d == 0.0 or math.isinf(d):
        return d
    a = abs(d)
    r = to_f32(a)
    if r == a:
        return math.copysign(r, d)
    # The other binary32 neighbour of ``a``.
    if r > a:
        other = _f32_neighbour(r, toward_larger_magnitude=False)
        lo, hi = other, r
    else:
        other = _f32_neighbour(r, toward_larger_magnitude=True)
        lo, hi = r, other
    mid = _F32_OVERFLOW_MID if math.isinf(hi) else (lo + hi) / 2
    if mid == a:
        exact = Decimal(text).copy_abs()  # exact, unlike abs() which rounds
        if exact > Decimal(a):
            r = hi
        elif exact < Decimal(a):
            r = lo
    return math.copysign(r, d)


def float_div(x: float, y: float) -> float:
    """IEEE 754 division: division by zero gives ±infinity or NaN, never an exception."""
    if y == 0.0:
        if x != x or x == 0.0:
            return math.nan
        return math.copysign(math.inf, x) * math.copysign(1.0, y)
    return x / y


def _wrap32(n: int) -> int:
    return ((n + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def _wrap64(n: int) -> int:
    return ((n + (1 << 63)) & 0xFFFFFFFFFFFFFFFF) - (1 << 63)


def _promotion(ta: str, tb: str) -> TypeName:
    """Binary numeric promotion (JLS §5.6.2) of two numeric selector types."""
    if ta == "double" or tb == "double":
        return "double"
    if ta == "float" or tb == "float":
        return "float"
    if ta == "long" or tb == "long":
        return "long"
    return "int"


def _convert(v: object, t: str, kind: str) -> int | float:
    """Convert a numeric value of type ``t`` to the promoted type ``kind``."""
    if kind == "double":
        return float(v)  # type: ignore[arg-type]
    if kind == "float":
        if t == "float":
            return v  # type: ignore[return-value]
        return int_to_f32(v)  # type: ignore[arg-type]
    return v  # type: ignore[return-value]


def compare(op: str, a: Value, b: Value) -> bool | None:
    """Compare two selector values with ``op`` (``= <> < <= > >=``); three-valued.

    NULL on either side gives UNKNOWN (``None``) before any type rule (SEL-40); a type error
    or unlike types give FALSE (SEL-41, SEL-48); Strings and booleans only support ``=`` and
    ``<>`` (SEL-42); numbers compare after promotion with Java's primitive operators, so NaN
    makes everything but ``<>`` FALSE (SEL-44). Never raises.
    """
    if a is None or b is None:
        return None
    if isinstance(a, Err) or isinstance(b, Err):
        return False
    ta, va = a
    tb, vb = b
    if ta in NUMERIC and tb in NUMERIC:
        kind = _promotion(ta, tb)
        x = _convert(va, ta, kind)
        y = _convert(vb, tb, kind)
        if op == "=":
            return x == y
        if op == "<>":
            return x != y
        if op == "<":
            return x < y
        if op == "<=":
            return x <= y
        if op == ">":
            return x > y
        return x >= y
    if ta == tb and ta in ("string", "boolean"):
        if op == "=":
            return va == vb
        if op == "<>":
            return va != vb
    return False


def arith(op: str, a: Value, b: Value) -> Value:
    """Apply binary ``+ - * /`` with Java semantics (SEL-45, SEL-46, SEL-48).

    NULL operand -> NULL; a non-numeric operand -> :data:`ERR`; int wraps at 32 bits and
    long at 64; integral division truncates toward zero and by zero gives NULL; float
    results are rounded to binary32; double division by zero gives ±infinity or NaN.
    Never raises.
    """
    if a is None or b is None:
        return None
    if isinstance(a, Err) or isinstance(b, Err):
        return ERR
    ta, va = a
    tb, vb = b
    if ta not in NUMERIC or tb not in NUMERIC:
        return ERR
    kind = _promotion(ta, tb)
    x = _convert(va, ta, kind)
    y = _convert(vb, tb, kind)
    if kind == "int" or kind == "long":
        assert isinstance(x, int) and isinstance(y, int)
        wrap = _wrap32 if kind == "int" else _wrap64
        if op == "+":
            return (kind, wrap(x + y))
        if op == "-":
            return (kind, wrap(x - y))
        if op == "*":
            return (kind, wrap(x * y))
        if y == 0:
            return None
        q = abs(x) // abs(y)
        return (kind, wrap(-q if (x < 0) != (y < 0) else q))
    fx = float(x)
    fy = float(y)
    if op == "+":
        r = fx + fy
    elif op == "-":
        r = fx - fy
    elif op == "*":
        r = fx * fy
    else:
        r = float_div(fx, fy)
    return (kind, to_f32(r) if kind == "float" else r)


def negate(a: Value) -> Value:
    """Unary minus (SEL-17, SEL-45): int wraps at 32 bits, long at 64; NULL stays NULL."""
    if a is None:
        return None
    if isinstance(a, Err):
        return ERR
    t, v = a
    if t == "int":
        return ("int", _wrap32(-v))  # type: ignore[operator]
    if t == "long":
        return ("long", _wrap64(-v))  # type: ignore[operator]
    if t == "float" or t == "double":
        return (t, -v)  # type: ignore[operator]
    return ERR


def plus(a: Value) -> Value:
    """Unary plus: the operand unchanged when numeric (byte/short already act as int)."""
    if a is None:
        return None
    if isinstance(a, Err) or a[0] not in NUMERIC:
        return ERR
    return a


def typed_property(v: object, types: Mapping[str, int] | None, name: str) -> Value:
    """Type a property's Python value (SEL-32, SEL-35).

    ``types`` is the optional ``_property_types`` map of the message (name -> JMS type tag
    numbered as ``ternmq.message._types.T``). Without a tag, ``int`` is a long and ``float``
    a double (catalog §1.1, object setters); an ``int`` tagged byte/short/int is an int, a
    ``float`` tagged float is a float. Values of any other Python type are ``"other"``.
    """
    if v is None:
        return None
    t = type(v)
    if t is str:
        return ("string", v)
    if t is bool:
        return ("boolean", v)
    if t is int:
        if types is not None and types.get(name) in _INT_TAGS and INT_MIN <= v <= INT_MAX:  # type: ignore[operator]
            return ("int", v)
        return ("long", v)
    if t is float:
        if types is not None and types.get(name) == _FLOAT_TAG:
            return ("float", v)
        return ("double", v)
    return ("other", v)
