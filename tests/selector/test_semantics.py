"""Identifiers, values and evaluation (SEL-01…SEL-05, SEL-09, SEL-30…SEL-62).

``check`` asserts one three-valued outcome both through the reference evaluator and
through the compiled predicate (the selector and its negation), so every test below holds
for both implementations.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

import pytest

from ternmq.selector import compile_selector, evaluate, parse
from ternmq.selector._values import (
    ERR,
    arith,
    compare,
    decimal_to_f32,
    float_div,
    int_to_f32,
    negate,
    to_f32,
)

from ._support import TAGS, Msg, f32


def check(selector: str, msg: Msg, want: bool | None) -> None:
    assert evaluate(parse(selector), msg) is want, ("reference", selector, msg)
    sel = compile_selector(selector)
    neg = compile_selector(f"NOT ({selector})")
    assert sel is not None and neg is not None
    assert sel.matches(msg) is (want is True), ("compiled", selector, msg)
    assert neg.matches(msg) is (want is False), ("compiled NOT", selector, msg)


def typed(**props: tuple[str, Any]) -> Msg:
    """Msg(name=(jms_type, value)); float values are rounded to binary32."""
    values = {k: (f32(v) if t == "float" else v) for k, (t, v) in props.items()}
    return Msg(values, {k: TAGS[t] for k, (t, _) in props.items()})


# -- SEL-01…SEL-05: where selectors apply (the selector-side part) --------------------------


def test_sel_01_match_only_when_true_on_headers_and_properties() -> None:
    """SEL-01: evaluated against header fields and properties; a match needs TRUE."""
    sel = compile_selector("JMSPriority > 3 AND color = 'blue'")
    assert sel is not None
    assert sel.matches(Msg({"color": "blue"}, jms_priority=4))
    assert not sel.matches(Msg({"color": "blue"}, jms_priority=3))
    assert not sel.matches(Msg({}, jms_priority=9))  # UNKNOWN


def test_sel_02_body_is_invisible() -> None:
    """SEL-02: no identifier resolves to body content."""
    m = Msg({}, body={"color": "blue"}, color="blue")
    check("color = 'blue'", m, None)
    check("color IS NULL", m, True)


def test_sel_03_evaluation_leaves_the_message_untouched() -> None:
    """SEL-03 (selector side): rejecting a message neither consumes nor alters it, so it
    stays available for other consumers with other selectors."""
    m = Msg({"color": "red", "n": 1}, {"n": 5})
    before = (dict(m._properties), dict(m._property_types), vars(m).copy())
    blue = compile_selector("color = 'blue' OR n + 1 > 5 OR JMSType LIKE 'x%'")
    red = compile_selector("color = 'red'")
    assert blue is not None and red is not None
    assert not blue.matches(m)
    assert red.matches(m)
    assert (m._properties, m._property_types, vars(m)) == before


def test_sel_04_none_empty_and_blank_mean_no_selector() -> None:
    """SEL-04, A-21: None, "" and whitespace-only give no selector; NBSP is not blank."""
    for text in (None, "", " ", "\t\r\n\x0c "):
        assert compile_selector(text) is None
    with pytest.raises(Exception) as info:
        compile_selector("\xa0")
    assert type(info.value).__name__ == "InvalidSelectorException"


def test_sel_05_same_selector_only_if_strings_equal() -> None:
    """SEL-05: None and "" both mean absent; other selectors are the same only when their
    strings are equal character for character (the cache never conflates spacings)."""
    assert compile_selector(None) is compile_selector("")
    s1 = compile_selector("a = 1")
    s2 = compile_selector("a = 1")
    s3 = compile_selector("a  = 1")
    s4 = compile_selector("A = 1")
    assert s1 is s2
    assert s1 is not None and s3 is not None and s4 is not None
    assert s1.text != s3.text and s3.text == "a  = 1"
    assert s4.text == "A = 1"


def test_sel_62_text_is_kept_exactly() -> None:
    """SEL-62 (selector side): the Selector keeps the string exactly as given."""
    text = "  color\t=\r\n'x'  "
    sel = compile_selector(text)
    assert sel is not None and sel.text == text


def test_sel_60_each_message_judged_on_its_own() -> None:
    """SEL-60 (selector side): a verdict depends only on the message judged, so a consumer
    can take a matching message from behind any number of non-matching ones."""
    sel = compile_selector("n = 7")
    assert sel is not None
    queue = [Msg({"n": i}) for i in range(10)]
    assert [m._properties["n"] for m in queue if sel.matches(m)] == [7]
    assert [sel.matches(m) for m in reversed(queue)][2] is True


# -- SEL-09: never raises -------------------------------------------------------------------------


class _Weird:
    def __eq__(self, other: object) -> bool:
        raise RuntimeError("boom")

    __hash__ = object.__hash__


@pytest.mark.parametrize(
    "selector",
    [
        "i / 0 > 0",
        "l / 0 = 1 OR d / 0 > 0 OR d * 1e308 * 1e308 > 0",
        "s + 1 > 0",
        "-s = 1",
        "w = 'x' OR w IN ('a', 'b') OR w LIKE 'a%' OR w > 1 OR w + 1 > 1",
        "huge + 1 > 0 OR huge = 1.5 OR huge = 1.5f",
        "missing * 2 BETWEEN huge AND w",
        "i * 2147483647 * 2147483647 < 0",
        "b LIKE '%a%b%c'",
    ],
)
def test_sel_09_evaluation_never_raises(selector: str) -> None:
    """SEL-09: no outcome (division by zero, overflow, odd values) escapes evaluation."""
    m = Msg(
        {"i": 1, "l": 2**62, "d": 1.0, "s": "x", "w": _Weird(), "huge": 10**400, "b": b"abc"},
        {"i": 5},
    )
    sel = compile_selector(selector)
    assert sel is not None
    assert sel.matches(m) in (True, False)


# -- SEL-30…SEL-36: identifiers -------------------------------------------------------------------


def test_sel_30_header_fields_and_types() -> None:
    """SEL-30: the six header identifiers and their selector types."""
    m = Msg(
        jms_delivery_mode=1,
        jms_priority=7,
        jms_message_id="ID:x-9",
        jms_timestamp=1_700_000_000_123,
        jms_correlation_id="corr",
        jms_type="car",
    )
    check("JMSDeliveryMode = 'NON_PERSISTENT'", m, True)
    check("JMSPriority = 7 AND JMSPriority + 1 = 8", m, True)
    check("JMSMessageID = 'ID:x-9'", m, True)
    check("JMSTimestamp = 1700000000123", m, True)
    check("JMSTimestamp > 1700000000122.5", m, True)
    check("JMSCorrelationID = 'corr'", m, True)
    check("JMSType = 'car'", m, True)
    check("JMSPriority = '7'", m, False)  # an int, not a String
    check("JMSTimestamp IS NULL", Msg(jms_timestamp=0), False)
    check("JMSTimestamp = 0", Msg(jms_timestamp=0), True)
    check("JMSMessageID IS NULL", Msg(jms_message_id=None), True)
    check("JMSType IS NULL AND JMSCorrelationID IS NULL", Msg(), True)


def test_sel_30_int_priority_wraps_like_int() -> None:
    """SEL-30: JMSPriority is an int, so int arithmetic applies (SEL-45)."""
    check("JMSPriority * 2147483647 = 2147483641", Msg(jms_priority=7), True)
    check("JMSTimestamp * 2 < 0", Msg(jms_timestamp=2**62), True)  # long wraps


def test_sel_30_correlation_id_bytes_is_null() -> None:
    """SEL-30, A-26: a correlation ID held as bytes is NULL."""
    m = Msg(jms_correlation_id=b"\x01\x02")
    check("JMSCorrelationID IS NULL", m, True)
    check("JMSCorrelationID = 'AQI='", m, None)
    check("JMSCorrelationID LIKE '%'", m, None)


def test_sel_30_headers_are_not_properties() -> None:
    """SEL-30: a property named like a header does not shadow the header."""
    m = Msg({"JMSType": "prop", "JMSPriority": 1}, jms_type="hdr", jms_priority=4)
    check("JMSType = 'hdr' AND JMSPriority = 4", m, True)


def test_sel_31_delivery_mode_is_a_string() -> None:
    """SEL-31: JMSDeliveryMode compares as 'PERSISTENT' / 'NON_PERSISTENT' only."""
    persistent, non = Msg(jms_delivery_mode=2), Msg(jms_delivery_mode=1)
    check("JMSDeliveryMode = 'PERSISTENT'", persistent, True)
    check("JMSDeliveryMode = 'NON_PERSISTENT'", non, True)
    check("JMSDeliveryMode <> 'PERSISTENT'", non, True)
    check("JMSDeliveryMode = 2", persistent, False)
    check("JMSDeliveryMode <> 2", persistent, False)
    check("JMSDeliveryMode IN ('PERSISTENT', 'X')", persistent, True)
    check("JMSDeliveryMode LIKE 'NON%'", non, True)
    check("JMSDeliveryMode IS NULL", persistent, False)


@pytest.mark.parametrize(
    "name",
    [
        "JMSRedelivered",
        "JMSExpiration",
        "JMSDestination",
        "JMSReplyTo",
        "JMSDeliveryTime",
        "JMSX_Custom",
        "JMS_acme_x",
        "jmstype",
        "JMSTYPE",
    ],
)
def test_sel_32_other_names_are_properties(name: str) -> None:
    """SEL-32, A-14: other names (non-selectable headers included) are properties."""
    m = Msg(
        jms_redelivered=True,
        jms_expiration=5,
        jms_destination="q",
        jms_reply_to="r",
        jms_delivery_time=1,
        jms_type="car",
    )
    check(f"{name} IS NULL", m, True)
    check(f"{name} = TRUE OR {name} > 0 OR {name} = 'car'", m, None)
    check(f"{name} = 3", Msg({name: 3}), True)


def test_sel_32_property_set_to_null() -> None:
    """SEL-32, A-24: a property holding null is NULL."""
    check("s IS NULL", Msg({"s": None}), True)
    check("s = 'x'", Msg({"s": None}), None)


def test_sel_33_jmsx_properties() -> None:
    """SEL-33: any JMSX name may be selected; absent means NULL."""
    m = Msg({"JMSXGroupID": "g1", "JMSXGroupSeq": 1}, {"JMSXGroupSeq": TAGS["int"]})
    check("JMSXGroupID = 'g1' AND JMSXGroupSeq = 1", m, True)
    check("JMSXUserID IS NULL AND JMSXAppID IS NULL", m, True)
    check("JMSXUnknown = 1", m, None)


def test_sel_34_delivery_count_is_read_as_supplied() -> None:
    """SEL-34 (selector side): JMSXDeliveryCount is the value the broker supplies."""
    check("JMSXDeliveryCount > 1", Msg({"JMSXDeliveryCount": 1}), False)
    check("JMSXDeliveryCount > 1", Msg({"JMSXDeliveryCount": 2}), True)


def test_sel_34_the_count_a_broker_supplies_beside_the_message() -> None:
    """SEL-34: a selector that names JMSXDeliveryCount says so (wherever it sits in the
    expression), and ``with_delivery_count`` lends a message the count of a delivery, typed
    int, without changing it; other fields read through."""
    from ternmq.selector import compile_selector, with_delivery_count

    for text in ["JMSXDeliveryCount > 1", "NOT (a = 1 OR JMSXDeliveryCount BETWEEN 2 AND 3)"]:
        assert compile_selector(text).reads_delivery_count  # type: ignore[union-attr]
    assert not compile_selector("a = 1 AND b BETWEEN 1 AND 2").reads_delivery_count  # type: ignore[union-attr]
    m = Msg({"a": 1})
    sel = compile_selector("a = 1 AND JMSXDeliveryCount = 2 AND JMSPriority = 4")
    assert sel is not None
    assert not sel.matches(m)
    assert sel.matches(with_delivery_count(m, 2))
    assert "JMSXDeliveryCount" not in m._properties
    wraps = compile_selector("JMSXDeliveryCount + 0.5 = 2.5")  # an int, not a float
    assert wraps is not None and wraps.matches(with_delivery_count(m, 2))


def test_sel_35_no_getter_conversions() -> None:
    """SEL-35: a String '2' stays a String; a boolean stays a boolean; no coercion."""
    check("NumberOfOrders > 1", Msg({"NumberOfOrders": "2"}), False)
    check("NumberOfOrders = 2", Msg({"NumberOfOrders": "2"}), False)
    check("NumberOfOrders = '2'", Msg({"NumberOfOrders": "2"}), True)
    check("n = '2'", Msg({"n": 2}), False)
    check("b = 'true'", Msg({"b": True}), False)
    check("s = TRUE", Msg({"s": "true"}), False)
    check("d = 2", Msg({"d": 2.0}), True)  # numbers compare across kinds (SEL-44)


def test_sel_36_dates_are_long_millis() -> None:
    """SEL-36: times compare as long epoch milliseconds."""
    m = Msg({"due": 1_700_000_000_000})
    check("due > 1699999999999 AND due < 1700000000001", m, True)
    check("due - JMSTimestamp = 0", m, True)
    check("due = '2023-11-14'", m, False)


# -- SEL-40…SEL-48: values ------------------------------------------------------------------------


def test_sel_40_null_propagation() -> None:
    """SEL-40: NULL in arithmetic -> NULL; comparisons, IN, LIKE -> UNKNOWN; NULL first."""
    m = Msg({"s": "x", "b": True, "n": 1})
    for sel in (
        "missing + 1 > 0",
        "1 + missing = 2",
        "-missing < 0",
        "missing = 1",
        "1 = missing",
        "missing <> 'a'",
        "'a' <> missing",
        "s = missing",
        "missing = s",
        "b = missing",
        "missing IN ('a')",
        "missing NOT IN ('a')",
        "missing LIKE 'a%'",
        "missing NOT LIKE 'a%'",
        "s + missing = 1",
        "missing + s = 1",
        "s + 1 = missing",
        "n / 0 = 1",
        "n BETWEEN missing AND missing",
    ):
        check(sel, m, None)


def test_sel_41_unlike_types_are_false_for_every_operator() -> None:
    """SEL-41: String vs number, boolean vs number, boolean vs String: FALSE, <> too."""
    m = Msg({"s": "5", "n": 5, "b": True, "d": 5.0})
    for left, right in (("s", "n"), ("b", "n"), ("b", "s"), ("s", "d"), ("d", "b")):
        for op in ("=", "<>"):
            check(f"{left} {op} {right}", m, False)
            check(f"{right} {op} {left}", m, False)
    for sel in ("s <> 5", "s = 5", "n <> '5'", "b <> 1", "b = 1", "n = TRUE", "b <> 'true'"):
        check(sel, m, False)
    for op in ("<", "<=", ">", ">="):
        check(f"s {op} n", m, False)
        check(f"b {op} n", m, False)


def test_sel_42_strings_and_booleans_only_equality() -> None:
    """SEL-42: ordering two Strings or two booleans is FALSE; = and <> work."""
    m = Msg({"s1": "b", "s2": "a", "t": True, "f": False})
    for op in ("<", "<=", ">", ">="):
        check(f"s1 {op} s2", m, False)
        check(f"t {op} f", m, False)
    check("s1 <> s2 AND t <> f AND s1 = s1 AND t = t", m, True)
    check("s1 BETWEEN s2 AND s1", m, False)
    check("s1 NOT BETWEEN s2 AND s2", m, False)


def test_sel_43_string_equality_is_exact() -> None:
    """SEL-43: case-sensitive, no trimming, no normalization."""
    check("s = 'blue'", Msg({"s": "Blue"}), False)
    check("s = 'blue'", Msg({"s": "blue "}), False)
    check("s = 'café'", Msg({"s": "cafe\u0301"}), False)
    check("s = 'ß'", Msg({"s": "SS"}), False)
    check("s = '😀'", Msg({"s": "😀"}), True)
    check("s = 'a\x00b'", Msg({"s": "a\x00b"}), True)


def test_sel_44_numeric_comparison_after_promotion() -> None:
    """SEL-44: promotion then Java's primitive comparison (-0.0 = 0, NaN, rounding)."""
    check("d = 0", typed(d=("double", -0.0)), True)
    check("f = 1.1", typed(f=("float", 1.1)), False)
    check("f > 1.1", typed(f=("float", 1.1)), True)
    check("f = 1.1f", typed(f=("float", 1.1)), True)
    check("d = 1.1f", typed(d=("double", 1.1)), False)
    check("l = 9007199254740992.0", typed(l=("long", 9007199254740993)), True)
    check("l > 9007199254740992.0", typed(l=("long", 9007199254740993)), False)
    check("l = 9007199254740993", typed(l=("long", 9007199254740993)), True)
    check("l > 9007199254740992", typed(l=("long", 9007199254740993)), True)
    check("i = f", typed(i=("int", 16777217), f=("float", 16777216.0)), True)
    check("i = d", typed(i=("int", 16777217), d=("double", 16777216.0)), False)
    check("f = 16777217", typed(f=("float", 16777216.0)), True)
    check("d = 16777217", typed(d=("double", 16777216.0)), False)
    check("16777217 = f", typed(f=("float", 16777216.0)), True)
    check("f < 16777217", typed(f=("float", 16777216.0)), False)
    check("f BETWEEN 16777217 AND 16777217", typed(f=("float", 16777216.0)), True)
    lv, fv = 1152921573326323713, 1152921642045800448.0
    check("l = f", typed(l=("long", lv), f=("float", fv)), True)
    check("l = 1152921642045800448.0f", typed(l=("long", lv)), True)
    nan = float("nan")
    for op, want in (("=", False), ("<>", True), ("<", False), (">=", False)):
        check(f"d {op} d", typed(d=("double", nan)), want)
        check(f"d {op} 1", typed(d=("double", nan)), want)
        check(f"d {op} 1.5", typed(d=("double", nan)), want)
    check("d NOT BETWEEN 0 AND 1", typed(d=("double", nan)), False)
    check("d BETWEEN 0 AND 1", typed(d=("double", nan)), False)
    check("d > 1e308", typed(d=("double", math.inf)), True)
    check("d * 0 = 0", typed(d=("double", math.inf)), False)  # inf * 0 is NaN


def test_sel_44_untyped_values_are_long_and_double() -> None:
    """SEL-44, catalog §1.1: without a type tag an int is a long and a float a double."""
    check("i + 1 < 0", Msg({"i": 2147483647}), False)
    check("i + 1 < 0", Msg({"i": 2147483647}, {"i": TAGS["int"]}), True)
    check("f = 16777217", Msg({"f": 16777216.0}), False)
    check("f = 16777217", Msg({"f": 16777216.0}, {"f": TAGS["float"]}), True)
    check("b + 1 = 128", Msg({"b": 127}, {"b": TAGS["byte"]}), True)
    check("sh * sh = 1073676289", Msg({"sh": 32767}, {"sh": TAGS["short"]}), True)


def test_sel_45_java_arithmetic() -> None:
    """SEL-45: wrap-around, truncating division, binary32 rounding, IEEE division."""
    check("i + i < 0", typed(i=("int", 2147483647)), True)
    check("i * 1000000 = -1294967296", typed(i=("int", 3000)), True)
    check("i + 1L = 2147483648", typed(i=("int", 2147483647)), True)
    check("l + 1 < 0", typed(l=("long", 9223372036854775807)), True)
    check("-i = i", typed(i=("int", -2147483648)), True)
    check("-l = l", typed(l=("long", -(2**63))), True)
    check("i / -1 = i", typed(i=("int", -2147483648)), True)
    check("i / 2 = -3 AND i / -2 = 3 AND -i / 2 = 3", typed(i=("int", -7)), True)
    check("i / 2.0 = -3.5", typed(i=("int", -7)), True)
    check("f * f = 1.2100000381469727", typed(f=("float", 1.1)), True)
    check("d * d = 1.2100000000000002", typed(d=("double", 1.1)), True)
    check("f + 1 = 16777216", typed(f=("float", 16777216.0)), True)  # 16777217 -> f32
    check("d + 1 = 16777216", typed(d=("double", 16777216.0)), False)
    check("f + 1 = 16777216f", typed(f=("float", 16777215.0)), True)
    check("f * 1e30f = f * 1e30f", typed(f=("float", 1e20)), True)  # inf = inf
    check("f * 1e30f > 3.5e38", typed(f=("float", 1e20)), True)  # binary32 overflow
    check("d / 0 > 0 AND -d / 0 < 0", typed(d=("double", 1.0)), True)
    check("d / -0.0 < 0", typed(d=("double", 1.0)), True)
    check("d / 0 = d / 0", typed(d=("double", 0.0)), False)  # NaN
    check("+i = 5 AND +-i = -5", typed(i=("int", 5)), True)
    check("7 / 2 = 3 AND -7 / 2 = -3 AND 7 / -2 = -3", Msg(), True)


def test_sel_46_integral_division_by_zero_is_null() -> None:
    """SEL-46: int or long division by zero yields NULL (UNKNOWN comparisons)."""
    check("i / 0 > 0", typed(i=("int", 1)), None)
    check("(i / 0) * 0 = 0", typed(i=("int", 1)), None)
    check("i / 0.0 > 0", typed(i=("int", 1)), True)
    check("1 / 0 = 1", Msg(), None)
    check("l / (l - l) < 1", typed(l=("long", 5)), None)


def test_sel_47_literal_types() -> None:
    """SEL-47: int when it fits without L, else long; approx is double, f makes float."""
    check("i + 1 < 0", typed(i=("int", 2147483647)), True)
    check("i + 1L < 0", typed(i=("int", 2147483647)), False)
    check("i + 2147483648 > 0", typed(i=("int", 1)), True)
    check("2147483647 + 1 < 0", Msg(), True)
    check("2147483647L + 1 > 0", Msg(), True)
    check("0.1f + 0.2f = 0.30000001192092896", Msg(), True)
    check("0.1 + 0.2 = 0.30000000000000004", Msg(), True)


def test_sel_48_type_error_in_arithmetic() -> None:
    """SEL-48: arithmetic on a String or boolean makes comparisons FALSE (NULL wins)."""
    check("s + 1 > 0", Msg({"s": "1"}), False)
    check("b * 2 = 2", Msg({"b": True}), False)
    check("-s = 1", Msg({"s": "1"}), False)
    check("s + 1 <> 0", Msg({"s": "1"}), False)
    check("s + 1 BETWEEN 0 AND 9", Msg({"s": "1"}), False)
    check("s + 1 NOT BETWEEN 0 AND 9", Msg({"s": "1"}), False)
    check("s + missing > 0", Msg({"s": "1"}), None)


# -- SEL-49…SEL-56: conditions --------------------------------------------------------------------

_TV = {"T": "t = TRUE", "F": "t = FALSE", "U": "u = TRUE"}
_M3 = Msg({"t": True})


@pytest.mark.parametrize(
    ("a", "b", "and_", "or_"),
    [
        ("T", "T", True, True),
        ("T", "F", False, True),
        ("T", "U", None, True),
        ("F", "T", False, True),
        ("F", "F", False, False),
        ("F", "U", False, None),
        ("U", "T", None, True),
        ("U", "F", False, None),
        ("U", "U", None, None),
    ],
)
def test_sel_49_three_valued_tables(a: str, b: str, and_: bool | None, or_: bool | None) -> None:
    """SEL-49: the AND and OR tables of JMS 2.0 Tables 3.4 and 3.5."""
    check(f"{_TV[a]} AND {_TV[b]}", _M3, and_)
    check(f"{_TV[a]} OR {_TV[b]}", _M3, or_)


def test_sel_49_not_table() -> None:
    """SEL-49: NOT T = F, NOT F = T, NOT U = U (Table 3.6)."""
    check(f"NOT {_TV['T']}", _M3, False)
    check(f"NOT {_TV['F']}", _M3, True)
    check(f"NOT {_TV['U']}", _M3, None)
    check("NOT NOT (u = 1)", _M3, None)


def test_sel_50_identifier_as_condition() -> None:
    """SEL-50: a boolean is itself, NULL is UNKNOWN, any other type is FALSE."""
    check("flag", Msg({"flag": True}), True)
    check("flag", Msg({"flag": False}), False)
    check("flag", Msg(), None)
    for v in ("true", 1, 1.0, 0):
        check("flag", Msg({"flag": v}), False)
    check("JMSType", Msg(jms_type="x"), False)
    check("JMSDeliveryMode", Msg(), False)
    check("flag AND other", Msg({"flag": True, "other": "x"}), False)


def test_sel_51_between_is_its_expansion() -> None:
    """SEL-51: BETWEEN is >= AND <=; NOT BETWEEN is < OR >; bounds are not reordered."""
    check("x NOT BETWEEN 15 AND hi", Msg({"x": 10}), True)
    check("x BETWEEN 15 AND hi", Msg({"x": 10}), False)
    check("x BETWEEN 15 AND hi", Msg({"x": 17}), None)
    check("x NOT BETWEEN 15 AND hi", Msg({"x": 17}), None)
    check("x BETWEEN lo AND 19", Msg({"x": 20}), False)
    check("x BETWEEN 19 AND 15", Msg({"x": 17}), False)
    check("x NOT BETWEEN 19 AND 15", Msg({"x": 17}), True)
    check("x BETWEEN 15 AND 19", Msg({"x": 15.0}), True)
    check("x BETWEEN lo AND hi", Msg({"x": 3, "lo": 1.5, "hi": 3}), True)
    check("x BETWEEN lo AND hi", Msg({"x": 3, "lo": "1", "hi": 3}), False)
    check("x NOT BETWEEN lo AND hi", Msg({"x": 3, "lo": "1", "hi": 3}), False)
    check("x + 1 BETWEEN lo AND hi", Msg({"x": 3, "lo": 4, "hi": 4}), True)
    check("x * 2 NOT BETWEEN lo AND hi", Msg({"x": 3, "lo": 4, "hi": 5}), True)
    check("x * 2 NOT BETWEEN lo AND hi", Msg({"x": 3, "lo": 7}), True)
    check("x * 2 NOT BETWEEN lo AND hi", Msg({"x": 3, "lo": 4}), None)
    check("x * 2 BETWEEN lo AND hi", Msg({"x": 3, "lo": 4}), None)
    check("x BETWEEN 1 AND 1 / 0", Msg({"x": 0}), False)
    check("x BETWEEN 1 AND 1 / 0", Msg({"x": 2}), None)
    check("5 BETWEEN x AND 9", Msg({"x": 2}), True)


def test_sel_52_in_is_equality_disjunction() -> None:
    """SEL-52: IN is = OR …; NOT IN is NOT (IN); NULL -> U; non-String -> F / T."""
    check("c IN ('UK', 'US')", Msg({"c": "UK"}), True)
    check("c IN ('UK', 'US')", Msg({"c": "uk"}), False)
    check("c NOT IN ('UK', 'US')", Msg({"c": "FR"}), True)
    check("c NOT IN ('UK')", Msg({"c": "UK"}), False)
    check("c IN ('UK')", Msg(), None)
    check("c NOT IN ('UK')", Msg(), None)
    check("c IN ('1', '2')", Msg({"c": 1}), False)
    check("c NOT IN ('1', '2')", Msg({"c": 1}), True)
    check("c IN ('true')", Msg({"c": True}), False)
    check("c NOT IN ('1.0')", Msg({"c": 1.0}), True)
    check("c IN ('', 'x')", Msg({"c": ""}), True)
    check("c IN ('a', 'a', 'b')", Msg({"c": "a"}), True)


@pytest.mark.parametrize(
    ("pattern", "escape", "value", "want"),
    [
        ("12%3", None, "123", True),
        ("12%3", None, "12993", True),
        ("12%3", None, "1234", False),
        ("l_se", None, "lose", True),
        ("l_se", None, "loose", False),
        ("\\_%", "\\", "_foo", True),
        ("\\_%", "\\", "bar", False),
        ("a%", None, "ABC", False),
        ("%", None, "", True),
        ("_", None, "", False),
        ("a.c", None, "abc", False),
        ("a.c", None, "a.c", True),
        ("a[bc]d", None, "abd", False),
        ("a[bc]d", None, "a[bc]d", True),
        ("^a$", None, "^a$", True),
        ("a\\d", None, "a\\d", True),
        ("a(b)*", None, "a(b)*", True),
        ("a%b", None, "a\nb", True),
        ("a_b", None, "a\nb", True),
        ("%c", None, "abc\n", False),
        ("abc", None, "abcd", False),
        ("100!%", "!", "100%", True),
        ("100!%", "!", "1000", False),
        ("x!!y", "!", "x!y", True),
        ("a!b", "!", "a!b", True),
        ("a!", "!", "a!", True),
        ("_", None, "\U0001f600", True),
        ("__", None, "\U0001f600", False),
        ("_%_", None, "a", False),
        ("_%_", None, "ab", True),
        ("%a%b%c%", None, "xxaxxbxxcxx", True),
        ("%a%b%c%", None, "xxcxxbxxaxx", False),
        ("a%b%c", None, "abc", True),
        ("a%b%c", None, "abcc", True),
        ("a%b%c", None, "abcd", False),
        ("a%b%c", None, "ac", False),
        ("%a_b%", None, "xxa\nbyy", True),
        ("%_%_%", None, "a", False),
        ("%_%_%", None, "ab", True),
        ("%%", None, "anything", True),
        ("a%%b", None, "ab", True),
        ("%ab%", None, "xaby", True),
        ("%ab%", None, "xayb", False),
        ("%!%%", "!", "50%", True),
        ("%!%%", "!", "50", False),
        ("%!_", "!", "a_", True),
        ("%!_", "!", "ab", False),
        ("___", None, "abc", True),
        ("___", None, "ab", False),
        ("%x", "%", "%x", True),
        ("a%_b", None, "ab", False),
        ("a%_b", None, "axb", True),
    ],
)
def test_sel_53_like(pattern: str, escape: str | None, value: str, want: bool) -> None:
    """SEL-53, A-16, A-17: LIKE wildcards, literal metacharacters, anchoring, escapes."""
    esc = "" if escape is None else f" ESCAPE '{escape}'"
    pat = pattern.replace("'", "''")
    check(f"s LIKE '{pat}'{esc}", Msg({"s": value}), want)
    check(f"s NOT LIKE '{pat}'{esc}", Msg({"s": value}), not want)


def test_sel_53_like_null_and_non_string() -> None:
    """SEL-53, A-05: NULL -> UNKNOWN; a non-String is FALSE for LIKE, TRUE for NOT LIKE."""
    for pat in ("a%", "%", "abc", "_", "%a%b%c"):
        check(f"s LIKE '{pat}'", Msg(), None)
        check(f"s NOT LIKE '{pat}'", Msg(), None)
        for v in (123, True, 1.5):
            check(f"s LIKE '{pat}'", Msg({"s": v}), False)
            check(f"s NOT LIKE '{pat}'", Msg({"s": v}), True)


def test_sel_54_is_null_never_unknown() -> None:
    """SEL-54: IS NULL / IS NOT NULL are TRUE or FALSE, never UNKNOWN."""
    check("s IS NULL", Msg(), True)
    check("s IS NOT NULL", Msg(), False)
    check("s IS NULL", Msg({"s": ""}), False)
    check("s IS NOT NULL", Msg({"s": 0}), True)
    check("s IS NOT NULL", Msg({"s": False}), True)
    check("NOT s IS NULL", Msg(), False)


def test_sel_55_only_true_matches() -> None:
    """SEL-55: FALSE and UNKNOWN are both non-matches."""
    sel = compile_selector("a = 1")
    assert sel is not None
    assert sel.matches(Msg({"a": 1})) is True
    assert sel.matches(Msg({"a": 2})) is False
    assert sel.matches(Msg()) is False


def test_sel_56_order_independent_and_side_effect_free() -> None:
    """SEL-56: the outcome does not depend on operand order or short-circuiting."""
    m = Msg({"a": 2, "s": "x"})
    for left, right in (("a > 1", "missing = 1"), ("s + 1 > 0", "a = 2"), ("a / 0 = 1", "FALSE")):
        for op in ("AND", "OR"):
            r1 = evaluate(parse(f"{left} {op} {right}"), m)
            r2 = evaluate(parse(f"{right} {op} {left}"), m)
            assert r1 is r2
            check(f"{left} {op} {right}", m, r1)
            check(f"{right} {op} {left}", m, r1)
    sel = compile_selector("a = 2")
    assert sel is not None
    assert [sel.matches(m) for _ in range(3)] == [True, True, True]


# -- the value functions ---------------------------------------------------------------------------


def test_value_rounding_helpers() -> None:
    """SEL-44, SEL-45: one-step int -> binary32 rounding (ties to even), overflow to inf."""
    assert int_to_f32(16777217) == 16777216.0
    assert int_to_f32(16777219) == 16777220.0
    assert int_to_f32(-16777217) == -16777216.0
    assert int_to_f32(1152921573326323713) == 1152921642045800448.0
    assert to_f32(float(1152921573326323713)) != 1152921642045800448.0  # double rounding
    assert int_to_f32(2**128) == math.inf and int_to_f32(-(2**200)) == -math.inf
    assert int_to_f32(2**128 - 2**103) == math.inf  # tie rounds to even = 2**128
    assert int_to_f32(2**128 - 2**103 - 1) == 3.4028234663852886e38
    assert to_f32(1e39) == math.inf and to_f32(-1e39) == -math.inf
    assert math.isnan(to_f32(math.nan))
    overflow_tie = str(2**128 - 2**103)
    assert decimal_to_f32(overflow_tie) == math.inf  # tie to even: up to 2**128
    assert decimal_to_f32(overflow_tie[:-1] + "7") == 3.4028234663852886e38
    assert decimal_to_f32("3.4028235677973366e38") == 3.4028234663852886e38
    assert decimal_to_f32("1.4e-45") == 1.401298464324817e-45
    tiny_tie = format(Decimal(2.0**-150), "f")  # halfway between 0 and the least subnormal
    assert decimal_to_f32(tiny_tie) == 0.0  # tie to even
    assert decimal_to_f32(tiny_tie + "1") == 1.401298464324817e-45
    assert decimal_to_f32("0.7e-45") == 0.0
    assert float_div(1.0, 0.0) == math.inf and float_div(-1.0, 0.0) == -math.inf
    assert float_div(1.0, -0.0) == -math.inf and math.isnan(float_div(0.0, 0.0))
    assert math.isnan(float_div(math.nan, 0.0))


def test_value_operations_direct() -> None:
    """SEL-40, SEL-45, SEL-48: the typed operations on their own."""
    assert arith("+", ("int", 2147483647), ("int", 1)) == ("int", -2147483648)
    assert arith("+", ("int", 1), ("long", 1)) == ("long", 2)
    assert arith("*", ("float", f32(1.1)), ("float", f32(1.1))) == ("float", 1.2100000381469727)
    assert arith("/", ("long", -7), ("int", 2)) == ("long", -3)
    assert arith("/", ("int", 1), ("int", 0)) is None
    assert arith("+", ("string", "a"), ("int", 1)) is ERR
    assert arith("+", ("string", "a"), None) is None
    assert negate(("boolean", True)) is ERR
    assert compare("=", ERR, ("int", 1)) is False
    assert compare("=", ERR, None) is None
    assert compare("<", ("other", object()), ("int", 1)) is False
