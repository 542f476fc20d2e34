"""Lexical rules: keywords, whitespace, identifiers, literals, symbols (SEL-10…SEL-18)."""

from __future__ import annotations

import pytest

from ternmq.errors import InvalidSelectorException
from ternmq.selector import Identifier, Literal, compile_selector, evaluate, parse

from ._support import Msg, f32


def _eval(selector: str, props: dict[str, object] | None = None, **types: int) -> bool | None:
    return evaluate(parse(selector), Msg(props or {}, types or None))


def _invalid(selector: str) -> InvalidSelectorException:
    with pytest.raises(InvalidSelectorException) as info:
        compile_selector(selector)
    return info.value


# -- SEL-10 keywords -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "selector",
    [
        "a = 1 and b = 2",
        "a = 1 AnD b = 2",
        "NOT a <> 1 And b = 2",
        "a between 0 AND 1 and b in ('2') Or FALSE",
        "c like 'x%' escape '!' and a is not null",
        "a IS NOT NULL AND c Like 'x%' AND flag = tRuE",
    ],
)
def test_sel_10_keywords_any_case(selector: str) -> None:
    """SEL-10: the eleven keywords match in any mix of letter case."""
    props = {"a": 1, "b": "2", "c": "xy", "flag": True}
    if "b = 2" in selector:
        props["b"] = 2
    assert _eval(selector, props) is True


@pytest.mark.parametrize("word", ["NOT", "and", "Or", "between", "LIKE", "in", "Is", "escape"])
def test_sel_10_keywords_are_not_identifiers(word: str) -> None:
    """SEL-10, SEL-12: a keyword cannot be used as an identifier."""
    _invalid(f"{word} = 1")


def test_sel_10_keyword_matching_is_ascii_only() -> None:
    """SEL-10: a dotless ı makes 'ın' an identifier, not IN; likewise 'ſ' (long s) in 'IS'."""
    assert parse("ın = 1") == parse("ın = 1")
    node = parse("ın = 1")
    assert node.left == Identifier("ın")  # type: ignore[union-attr]
    assert _eval("ın = 1", {"ın": 1}) is True
    assert _eval("Iſ = 'x'", {"Iſ": "x"}) is True


# -- SEL-11 whitespace --------------------------------------------------------------------------


@pytest.mark.parametrize("ws", [" ", "\t", "\x0c", "\n", "\r", "\r\n", " \t\r\n\x0c "])
def test_sel_11_java_whitespace_separates_tokens(ws: str) -> None:
    """SEL-11: space, tab, form feed, LF, CR and CR LF are whitespace."""
    assert _eval(f"{ws}a{ws}={ws}1{ws}AND{ws}b{ws}IS{ws}NULL{ws}", {"a": 1}) is True


@pytest.mark.parametrize(
    "ch", ["\x0b", "\x1c", "\x1d", "\x1e", "\x1f", "\xa0", "\u2028", "\u2029", "\u3000", "\u2003"]
)
def test_sel_11_other_spaces_are_invalid(ch: str) -> None:
    """SEL-11: VT, U+001C–U+001F, NBSP and other Unicode spaces are not whitespace."""
    exc = _invalid(f"a{ch}= 1")
    assert exc.position == 1
    assert "space, tab, form feed" in str(exc)


def test_sel_11_other_spaces_allowed_inside_strings() -> None:
    """SEL-11: inside a string literal any character stands for itself."""
    assert _eval("s = 'a\x0b\xa0b'", {"s": "a\x0b\xa0b"}) is True


# -- SEL-12 identifiers -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "$price",
        "_qty",
        "€uro",
        "größe",
        "a1",
        "x_y$z",
        "ǅx",
        "ⅷ",
        "a\u0301",
        "a\u200d",
        "‿x",
        "日本",
    ],
)
def test_sel_12_java_identifiers(name: str) -> None:
    """SEL-12: start = letters, Nl, Sc ($, €), Pc (_); part adds digits, marks, Cf."""
    assert _eval(f"{name} = 5", {name: 5}) is True


def test_sel_12_identifier_ignorable_controls_are_parts() -> None:
    """SEL-12: U+0000–U+0008, U+000E–U+001B, U+007F–U+009F are identifier parts."""
    for ch in ("\x00", "\x08", "\x0e", "\x1b", "\x7f", "\x9f"):
        name = f"a{ch}b"
        assert _eval(f"{name} = 1", {name: 1}) is True
        _invalid(f"{ch}a = 1")  # but not starts


@pytest.mark.parametrize("bad", ["a·b = 1", "1a = 1", "٣ = 1", "a\u00b7 = 1", "#a = 1", "a@b = 1"])
def test_sel_12_non_identifier_characters(bad: str) -> None:
    """SEL-12: · (U+00B7), a leading digit (any script), '#', '@' are not identifiers."""
    _invalid(bad)


def test_sel_12_identifiers_case_sensitive_and_keyword_prefixes() -> None:
    """SEL-12: case-sensitive names; names that begin with a keyword are identifiers."""
    assert _eval("Color = 'blue'", {"color": "blue"}) is None
    assert (
        _eval(
            "nulls = 1 AND andy = 2 AND INDEX = 3 AND ORx = 4 AND isa = 5",
            {"nulls": 1, "andy": 2, "INDEX": 3, "ORx": 4, "isa": 5},
        )
        is True
    )


# -- SEL-13 string literals ---------------------------------------------------------------------


def test_sel_13_string_literals() -> None:
    """SEL-13: '' is a quote; backslash and line terminators stand for themselves."""
    assert _eval("s = 'O''Brien'", {"s": "O'Brien"}) is True
    assert _eval("s = ''''", {"s": "'"}) is True
    assert _eval("s = ''", {"s": ""}) is True
    assert _eval("s = 'a\\nb'", {"s": "a\\nb"}) is True
    assert _eval("s = 'a\nb'", {"s": "a\nb"}) is True
    assert _eval("s = 'a\\'", {"s": "a\\"}) is True


def test_sel_13_unterminated_and_double_quoted() -> None:
    """SEL-13: an unterminated literal is invalid at its opening quote; "…" never delimits."""
    exc = _invalid("s = 'abc")
    assert exc.position == 4
    assert "unterminated string" in str(exc)
    exc = _invalid("s = 'O\\'Brien'")
    assert exc.position == 13
    exc = _invalid('s = "abc"')
    assert exc.position == 4
    assert "single quotes" in str(exc)


# -- SEL-14 exact literals ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("literal", "value", "typ"),
    [
        ("0", 0, "int"),
        ("57", 57, "int"),
        ("010", 8, "int"),
        ("0777", 511, "int"),
        ("00", 0, "int"),
        ("0x1F", 31, "int"),
        ("0XfF", 255, "int"),
        ("5L", 5, "long"),
        ("5l", 5, "long"),
        ("0x10L", 16, "long"),
        ("017l", 15, "long"),
        ("2147483647", 2147483647, "int"),
        ("2147483648", 2147483648, "long"),
        ("9223372036854775807", 9223372036854775807, "long"),
        ("0x7fffffffffffffff", 9223372036854775807, "long"),
        ("0xFFFFFFFF", 4294967295, "long"),
    ],
)
def test_sel_14_exact_literal_forms(literal: str, value: int, typ: str) -> None:
    """SEL-14, SEL-47: decimal, octal, hex, L suffix; int when it fits without L."""
    node = parse(f"x = {literal}")
    assert node.right == Literal(value, typ)  # type: ignore[union-attr, arg-type]
    assert node.right.type == typ  # type: ignore[union-attr]


def test_sel_14_long_minimum_only_after_unary_minus() -> None:
    """SEL-14, S7: 9223372036854775808 only right after a unary minus."""
    assert parse("x = -9223372036854775808").right == Literal(-(2**63), "long")  # type: ignore[union-attr]
    assert parse("x = -2147483648").right == Literal(-(2**31), "int")  # type: ignore[union-attr]
    for bad, pos in (
        ("x = 9223372036854775808", 4),
        ("x = -(9223372036854775808)", 6),
        ("x = 9223372036854775808 * -1", 4),
        ("x = -9223372036854775809", 5),
        ("x = 0x10000000000000000", 4),
        ("x = " + "9" * 5000, 4),
    ):
        exc = _invalid(bad)
        assert exc.position == pos, bad
        assert "long range" in str(exc)


@pytest.mark.parametrize(
    ("bad", "pos"),
    [("i = 09", 4), ("i = 0x", 4), ("i = 0b101", 5), ("i = 1_000", 5), ("i = 08L", 4)],
)
def test_sel_14_forms_java_rejects(bad: str, pos: int) -> None:
    """SEL-14, A-18: 09, 0x, binary and underscores are invalid."""
    assert _invalid(bad).position == pos


# -- SEL-15 approximate literals -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("literal", "value", "typ"),
    [
        ("7.", 7.0, "double"),
        (".5", 0.5, "double"),
        ("7E3", 7000.0, "double"),
        ("57.9E2", 5790.0, "double"),
        ("1e-3", 0.001, "double"),
        ("1.e5", 100000.0, "double"),
        ("6.2d", 6.2, "double"),
        ("7D", 7.0, "double"),
        ("09.5", 9.5, "double"),
        ("1.1f", f32(1.1), "float"),
        ("2F", 2.0, "float"),
        ("1e+2f", 100.0, "float"),
        ("1.7976931348623157e308", 1.7976931348623157e308, "double"),
        ("3.4028235e38f", f32(3.4028235e38), "float"),
        ("0.0", 0.0, "double"),
        ("0e999999999", 0.0, "double"),
    ],
)
def test_sel_15_approximate_literal_forms(literal: str, value: float, typ: str) -> None:
    """SEL-15, SEL-47: Java decimal floating-point syntax; f/F makes a float."""
    node = parse(f"x = {literal}")
    assert node.right == Literal(value, typ)  # type: ignore[union-attr, arg-type]


@pytest.mark.parametrize(
    ("bad", "pos"),
    [
        ("d = 1e", 5),
        ("d = 1e+", 5),
        ("d = 1.5e-x", 7),
        ("d = 1e999", 4),
        ("d = 3.5e38f", 4),
        ("d = 1e-999", 4),
        ("d = 1e-50f", 4),
        ("d = 0x1p3", 7),
        ("d = 0x1.8p1", 7),
    ],
)
def test_sel_15_malformed_or_out_of_range(bad: str, pos: int) -> None:
    """SEL-15, S7, A-18: malformed exponents, overflow, underflow, hex floats are invalid."""
    assert _invalid(bad).position == pos


def test_sel_15_float_literal_rounds_once() -> None:
    """SEL-15, A-18: a float literal is rounded straight from decimal to binary32.

    1.000000059604644775390625 is exactly halfway between 1.0 and the next binary32;
    a digit more makes it round up, although its nearest double is the halfway point.
    """
    half = "1.000000059604644775390625"
    assert parse(f"x = {half}f").right == Literal(1.0, "float")  # type: ignore[union-attr]
    up = parse(f"x = {half}0000000001f").right  # type: ignore[union-attr]
    assert up == Literal(1.0000001192092896, "float")


# -- SEL-16, SEL-17 --------------------------------------------------------------------------------


def test_sel_16_boolean_literals() -> None:
    """SEL-16: TRUE and FALSE are the boolean literals."""
    assert _eval("TRUE") is True
    assert _eval("FALSE") is False
    assert _eval("flag = TRUE", {"flag": True}) is True
    assert _eval("flag = false", {"flag": False}) is True


def test_sel_17_signed_literals() -> None:
    """SEL-17: a leading sign is the unary operator; the value is the same."""
    assert _eval("-957 = 0 - 957 AND +62 = 62 AND -95.7 < 0 AND +6.2 > 6") is True
    assert _eval("x = -957", {"x": -957}) is True
    assert _eval("- - 5 = 5 AND - + - 5 = 5") is True


# -- SEL-18 symbols ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bad", "pos"),
    [
        ("a == 1", 2),
        ("a != 1", 2),
        ("a = 1; b = 2", 5),
        ("a = 1 % 2", 6),
        ("!a", 0),
        ("a[0] = 1", 1),
        ("a:b = 1", 1),
        ("a . b = 1", 2),
        ("a = 1 /* c */", 7),
        ("a = `x`", 4),
        ("a = 1 & b", 6),
    ],
)
def test_sel_18_other_symbols_invalid(bad: str, pos: int) -> None:
    """SEL-18, A-19: only ( ) , = <> < <= > >= + - * / are symbols; no SQL comments."""
    assert _invalid(bad).position == pos


def test_sel_18_hints_for_foreign_operators() -> None:
    """SEL-18, SEL-07: '==' and '!=' get a hint naming the JMS operator."""
    assert "use '='" in str(_invalid("a == 1"))
    assert "use '=' or '<>'" in str(_invalid("a != 1"))


def test_sel_18_double_minus_is_not_a_comment() -> None:
    """SEL-18, A-19: '--' is two minus signs."""
    assert _eval("a = 1 -- note", {"a": 1}) is None
    assert _eval("a = 1 -- note", {"a": 3, "note": 2}) is True
