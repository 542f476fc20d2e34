"""Conversion tables and Java text forms, property-based (catalog §1.1, §1.3, PROP-08 …
PROP-11, BODY-22, BODY-34).

The expected tables are written out here from the catalog (not imported from the code), and
every cell is checked for properties, MapMessage and StreamMessage alike.
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Callable
from fractions import Fraction

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from ternmq.errors import MessageFormatException
from ternmq.message import MapMessage, Message, StreamMessage
from ternmq.message._convert import (
    java_double_to_string,
    java_float_to_string,
    parse_java_double,
    parse_java_float,
    parse_java_integral,
    to_float32,
)
from ternmq.message._types import T

TYPES = ["boolean", "byte", "short", "char", "int", "long", "float", "double", "String", "bytes"]

# Table 4.4 (BODY-34) as printed in the catalog: row = written type, "Y" = converts.
BODY_TABLE = """
boolean  Y . . . . . . . Y .
byte     . Y Y . Y Y . . Y .
short    . . Y . Y Y . . Y .
char     . . . Y . . . . Y .
int      . . . . Y Y . . Y .
long     . . . . . Y . . Y .
float    . . . . . . Y Y Y .
double   . . . . . . . Y Y .
String   Y Y Y . Y Y Y Y Y .
bytes    . . . . . . . . . Y
"""
# Table 3.1 (PROP-08): same shape without char and bytes.
PROP_TABLE = """
boolean  Y . . . . . . Y
byte     . Y Y Y Y . . Y
short    . . Y Y Y . . Y
int      . . . Y Y . . Y
long     . . . . Y . . Y
float    . . . . . Y Y Y
double   . . . . . . Y Y
String   Y Y Y Y Y Y Y Y
"""
PROP_TYPES = ["boolean", "byte", "short", "int", "long", "float", "double", "String"]


def parse_table(text: str, cols: list[str]) -> dict[tuple[str, str], bool]:
    out = {}
    for line in text.strip().splitlines():
        row, *cells = line.split()
        assert len(cells) == len(cols)
        for col, cell in zip(cols, cells):
            out[(row, col)] = cell == "Y"
    return out


BODY = parse_table(BODY_TABLE, TYPES)
PROP = parse_table(PROP_TABLE, PROP_TYPES)


def test_tables_agree_where_they_overlap() -> None:
    """PROP-08, BODY-34: the property table is the body table without char and byte[]."""
    for (row, col), ok in PROP.items():
        assert BODY[(row, col)] == ok


# A value of each type that converts to every supported target (Strings hold numbers).
STRING_SAMPLES = {"boolean": "true", "byte": "7", "short": "7", "int": "7", "long": "7"}
SAMPLES: dict[str, object] = {
    "boolean": True,
    "byte": 7,
    "short": 7,
    "char": "c",
    "int": 7,
    "long": 7,
    "float": 1.5,
    "double": 1.5,
    "String": "7",
    "bytes": b"xy",
}
EXPECTED: dict[tuple[str, str], object] = {
    ("boolean", "String"): "true",
    ("float", "String"): "1.5",
    ("double", "String"): "1.5",
    ("char", "String"): "c",
    ("String", "boolean"): False,  # "7" is not "true"
    ("String", "float"): 7.0,
    ("String", "double"): 7.0,
}


def expected_value(row: str, col: str) -> object:
    if (row, col) in EXPECTED:
        return EXPECTED[(row, col)]
    if col == "String":
        return str(SAMPLES[row])
    if row == "String":
        return 7
    return SAMPLES[row]


PROP_WRITERS = {
    "boolean": "set_boolean_property",
    "byte": "set_byte_property",
    "short": "set_short_property",
    "int": "set_int_property",
    "long": "set_long_property",
    "float": "set_float_property",
    "double": "set_double_property",
    "String": "set_string_property",
}


@pytest.mark.parametrize("row", PROP_TYPES)
@pytest.mark.parametrize("col", PROP_TYPES)
def test_prop_08_every_cell_of_the_property_table(row: str, col: str) -> None:
    """PROP-08, PROP-11: each cell converts or raises MessageFormatException; a read never
    changes the stored type."""
    m = Message()
    getattr(m, PROP_WRITERS[row])("p", SAMPLES[row])
    getter = getattr(m, f"get_{col.lower()}_property")
    if PROP[(row, col)]:
        assert getter("p") == expected_value(row, col)
    else:
        with pytest.raises(MessageFormatException):
            getter("p")
    assert m.get_property_type("p") == row


STREAM_WRITERS = {t: f"write_{t.lower()}" for t in TYPES}
STREAM_WRITERS["String"] = "write_string"
MAP_WRITERS = {t: f"set_{t.lower()}" for t in TYPES}


@pytest.mark.parametrize("row", TYPES)
@pytest.mark.parametrize("col", TYPES)
def test_body_34_every_cell_of_the_body_table(row: str, col: str) -> None:
    """BODY-34, BODY-22, BODY-23: each cell for MapMessage and StreamMessage; a failed stream
    read does not advance (the field is then read as its own type)."""
    mm = MapMessage()
    getattr(mm, MAP_WRITERS[row])("k", SAMPLES[row])
    sm = StreamMessage()
    getattr(sm, STREAM_WRITERS[row])(SAMPLES[row])
    sm.reset()
    map_get = getattr(mm, f"get_{col.lower()}")
    stream_read = getattr(sm, f"read_{col.lower()}")
    if col == "bytes":
        want: object = SAMPLES[row]
        if BODY[(row, col)]:
            assert map_get("k") == want
            assert stream_read(10) == want
        else:
            with pytest.raises(MessageFormatException):
                map_get("k")
            with pytest.raises(MessageFormatException):
                stream_read(10)
    elif BODY[(row, col)]:
        assert map_get("k") == expected_value(row, col)
        assert stream_read() == expected_value(row, col)
    else:
        with pytest.raises(MessageFormatException):
            map_get("k")
        with pytest.raises(MessageFormatException):
            stream_read()
        assert sm.read_object() == SAMPLES[row]  # BODY-23: still at the same field


NULL_OUTCOMES: dict[str, object] = {
    "boolean": False,
    "byte": ValueError,
    "short": ValueError,
    "char": TypeError,
    "int": ValueError,
    "long": ValueError,
    "float": TypeError,
    "double": TypeError,
    "String": None,
    "bytes": None,
}


@pytest.mark.parametrize("col", TYPES)
def test_body_24_null_row_of_the_body_table(col: str) -> None:
    """BODY-24, BODY-32, BODY-34: the null row, for a null Map value, an absent name and a
    null Stream field; failed reads do not advance."""
    mm = MapMessage()
    mm.set_string("k", None)
    sm = StreamMessage()
    sm.write_object(None)
    sm.reset()
    outcome = NULL_OUTCOMES[col]
    args: tuple[object, ...] = (10,) if col == "bytes" else ()
    readers: list[Callable[[], object]] = [
        lambda: getattr(mm, f"get_{col.lower()}")("k"),
        lambda: getattr(mm, f"get_{col.lower()}")("absent"),
        lambda: getattr(sm, f"read_{col.lower()}")(*args),
    ]
    for read in readers:
        if isinstance(outcome, type):
            with pytest.raises(outcome):
                read()
        else:
            assert read() == outcome
    if isinstance(outcome, type):
        assert sm.read_object() is None


# ---------------------------------------------------------------- Hypothesis: ranges


INT_TYPES = {"byte": 8, "short": 16, "int": 32, "long": 64}


@given(st.sampled_from(sorted(INT_TYPES)), st.sampled_from(sorted(INT_TYPES)), st.data())
def test_prop_08_integral_widening_is_exact(src: str, dst: str, data: st.DataObject) -> None:
    """PROP-08, BODY-34: an integral value reads as any wider-or-equal integral type
    unchanged, as a narrower one raises MessageFormatException, and as String in decimal."""
    bits = INT_TYPES[src]
    v = data.draw(st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1))
    m = Message()
    getattr(m, f"set_{src}_property")("p", v)
    get = getattr(m, f"get_{dst}_property")
    if INT_TYPES[dst] >= bits:
        assert get("p") == v
    else:
        with pytest.raises(MessageFormatException):
            get("p")
    assert m.get_string_property("p") == str(v)
    assert int(m.get_string_property("p") or "x") == v


@given(st.sampled_from(sorted(INT_TYPES)), st.integers())
def test_prop_02_range_checks_match_java(kind: str, v: int) -> None:
    """PROP-02: an int is accepted exactly when it fits the Java type."""
    bits = INT_TYPES[kind]
    fits = -(2 ** (bits - 1)) <= v < 2 ** (bits - 1)
    m = Message()
    if fits:
        getattr(m, f"set_{kind}_property")("p", v)
        assert getattr(m, f"get_{kind}_property")("p") == v
    else:
        with pytest.raises(ValueError):
            getattr(m, f"set_{kind}_property")("p", v)


@given(st.sampled_from(sorted(INT_TYPES)), st.integers(-(2**70), 2**70))
def test_prop_09_string_to_integral_round_trip(kind: str, v: int) -> None:
    """PROP-09: decimal text parses as the value when it fits, else ValueError."""
    bits = INT_TYPES[kind]
    tag = {"byte": T.BYTE, "short": T.SHORT, "int": T.INT, "long": T.LONG}[kind]
    text = str(v)
    if -(2 ** (bits - 1)) <= v < 2 ** (bits - 1):
        assert parse_java_integral(text, tag) == v
        assert parse_java_integral("+" + text.lstrip("-"), tag) == abs(v) or v < 0
    else:
        with pytest.raises(ValueError):
            parse_java_integral(text, tag)


@given(st.text(max_size=8))
def test_prop_09_integral_parse_accepts_only_sign_and_digits(text: str) -> None:
    """PROP-09: anything but [+-]digits raises ValueError (whitespace, '_', letters …)."""
    if re.fullmatch(r"[+-]?[0-9]+", text, re.ASCII):
        assert parse_java_integral(text, T.LONG) == int(text)
    elif not re.fullmatch(r"[+-]?\d+", text):
        with pytest.raises(ValueError):
            parse_java_integral(text, T.LONG)


# ---------------------------------------------------------------- Hypothesis: binary32


def f32_bits(x: float) -> int:
    return int(struct.unpack(">I", struct.pack(">f", x))[0])


def f32_from_bits(b: int) -> float:
    return float(struct.unpack(">f", struct.pack(">I", b))[0])


def nearest_f32_reference(q: Fraction) -> float:
    """Exact round-to-nearest-even of a non-negative rational, found by search over the
    binary32 bit patterns (independent of the implementation)."""
    lo, hi = 0, 0x7F800000  # bit patterns are ordered like the values they encode
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if (Fraction(2) ** 128 if mid == 0x7F800000 else Fraction(f32_from_bits(mid))) <= q:
            lo = mid
        else:
            hi = mid
    below = Fraction(f32_from_bits(lo))
    above = Fraction(2) ** 128 if hi == 0x7F800000 else Fraction(f32_from_bits(hi))
    if q - below < above - q or (q - below == above - q and lo % 2 == 0):
        return f32_from_bits(lo)
    return math.inf if hi == 0x7F800000 else f32_from_bits(hi)


@given(st.floats(min_value=0.0, max_value=3.5e38, allow_nan=False))
def test_prop_03_float_rounding_is_nearest_even(x: float) -> None:
    """PROP-03: set_float_property stores the nearest binary32 (ties to even)."""
    want = nearest_f32_reference(Fraction(x))
    assume(math.isfinite(want))
    m = Message()
    m.set_float_property("p", x)
    assert m.get_float_property("p") == want
    m.set_float_property("p", -x)
    assert m.get_double_property("p") == -want
    assert to_float32(x) == want


@given(
    st.integers(0, 10**12),
    st.integers(0, 30),
    st.integers(-60, 45),
    st.booleans(),
)
def test_prop_09_float_parse_rounds_once(
    int_part: int, frac_digits: int, exp: int, f: bool
) -> None:
    """PROP-09, §1.3: Float.valueOf rounds the decimal directly to binary32 (no double
    rounding), checked against an exact reference."""
    text = f"{int_part}.{str(int_part)[::-1][:frac_digits] or '0'}e{exp}" + ("f" if f else "")
    core = text.rstrip("f")
    mantissa, _, e = core.partition("e")
    whole, _, frac = mantissa.partition(".")
    exact = Fraction(int(whole + frac)) * Fraction(10) ** (int(e) - len(frac))
    assert parse_java_float(text) == nearest_f32_reference(exact)
    assert parse_java_double(text) == float(core)


def test_prop_09_float_parse_double_rounding_trap() -> None:
    """PROP-09: a decimal just above a binary32 midpoint whose nearest double IS the
    midpoint must round up (via binary64 it would round to even = down)."""
    # 1 + 2**-24 is the midpoint between 1.0 and the next float; add a tiny amount.
    text = "1.00000005960464477539062500000000000000001"
    assert float(text) == 1 + 2**-24  # the double lands exactly on the midpoint
    assert parse_java_float(text) == 1 + 2**-23
    assert parse_java_float("1.000000059604644775390625") == 1.0  # the exact tie: even


# ---------------------------------------------------------------- Hypothesis: toString

JAVA_NUMBER = re.compile(r"-?(?:\d+\.\d+|\d\.\d+E-?\d+)")


def check_java_layout(text: str, value: float) -> None:
    assert JAVA_NUMBER.fullmatch(text), text
    a = abs(value)
    if 1e-3 <= a < 1e7:
        assert "E" not in text, text
    else:
        assert "E" in text, text
        mant = text.lstrip("-").split("E")[0]
        assert 1 <= float(mant) < 10
    assert not text.endswith("0") or text.endswith(".0") or "E" in text


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_prop_11_double_to_string_round_trips(x: float) -> None:
    """PROP-11: Double.toString text reads back as the same double, with Java's layout and
    no more digits than Python's shortest repr (one more only for the two-digit rule)."""
    assume(x != 0)
    text = java_double_to_string(x)
    assert float(text) == x
    check_java_layout(text, x)
    digits = re.sub(r"E.*|[-.]", "", text).strip("0")
    shortest = re.sub(r"e.*|[-.]", "", repr(x)).strip("0")
    assert len(digits) <= max(len(shortest), 2)


@given(st.floats(width=32, allow_nan=False, allow_infinity=False))
def test_prop_11_float_to_string_round_trips(x: float) -> None:
    """PROP-11: Float.toString text parses back to the same binary32, is no longer than the
    shortest round-tripping digit count, and uses Java's layout."""
    assume(x != 0)
    text = java_float_to_string(x)
    assert parse_java_float(text) == x
    check_java_layout(text, x)
    digits = re.sub(r"E.*|[-.]", "", text).strip("0")
    for p in range(1, len(digits)):  # no shorter decimal reads back as x …
        if p == 1 and len(digits) == 2:
            continue  # … except that Java prefers a closer two-digit form to one digit
        assert parse_java_float(f"{x:.{p - 1}e}") != x


def test_prop_11_known_java_outputs() -> None:
    """PROP-11, A-20: outputs of the JDK >= 19 for well-known values."""
    assert java_double_to_string(5e-324) == "4.9E-324"  # Double.MIN_VALUE
    assert java_double_to_string(1.7976931348623157e308) == "1.7976931348623157E308"
    assert java_double_to_string(1e23) == "1.0E23"  # JDK 17 printed 9.999999999999999E22
    assert java_double_to_string(2e-3) == "0.002"
    assert java_double_to_string(-123.0) == "-123.0"
    assert java_float_to_string(1.4e-45) == "1.4E-45"  # Float.MIN_VALUE
    assert java_float_to_string(3.4028234663852886e38) == "3.4028235E38"  # Float.MAX_VALUE
    assert java_float_to_string(1 / 3) == "0.33333334"
    assert java_float_to_string(0.1) == "0.1"
    assert java_float_to_string(16777216.0) == "1.6777216E7"
    assert java_float_to_string(1.0e10) == "1.0E10"
    assert java_float_to_string(-0.0) == "-0.0"
    assert java_float_to_string(math.inf) == "Infinity"


@given(st.floats(allow_nan=False))
def test_prop_09_double_text_round_trip_through_a_string_property(x: float) -> None:
    """PROP-09, PROP-11: a double read as String and that String read as double give the
    same value (what a Java reader of the same message would see)."""
    m = Message()
    m.set_double_property("p", x)
    m.set_string_property("s", m.get_string_property("p"))
    assert m.get_double_property("s") == x
    assert math.copysign(1, m.get_double_property("s")) == math.copysign(1, x)
