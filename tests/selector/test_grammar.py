"""Grammar, precedence, static rules and error reporting (SEL-06…SEL-08, SEL-20…SEL-22)."""

from __future__ import annotations

import pytest

from ternmq.errors import InvalidSelectorException
from ternmq.selector import (
    MAX_DEPTH,
    And,
    Between,
    BinaryOp,
    Comparison,
    Identifier,
    InList,
    IsNull,
    Like,
    Literal,
    Not,
    Or,
    UnaryOp,
    compile_selector,
    evaluate,
    parse,
)

from ._support import Msg

a, b, c, x, y, z = (Identifier(n) for n in "abcxyz")
ONE, TWO = Literal(1, "int"), Literal(2, "int")


def _invalid(selector: str) -> InvalidSelectorException:
    with pytest.raises(InvalidSelectorException) as info:
        compile_selector(selector)
    return info.value


# -- SEL-20 precedence ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "tree"),
    [
        ("x OR y AND z", Or((x, And((y, z))))),
        ("x AND y OR z", Or((And((x, y)), z))),
        ("NOT x AND y", And((Not(x), y))),
        ("NOT a = 1", Not(Comparison("=", a, ONE))),
        ("NOT NOT x", Not(Not(x))),
        ("NOT a IS NULL", Not(IsNull(a))),
        (
            "a = 1 + 2 * 3",
            Comparison("=", a, BinaryOp("+", ONE, BinaryOp("*", TWO, Literal(3, "int")))),
        ),
        ("-a * b = 1", Comparison("=", BinaryOp("*", UnaryOp("-", a), b), ONE)),
        ("a BETWEEN 1 AND 2 AND x", And((Between(a, ONE, TWO), x))),
        ("a NOT BETWEEN 1 AND 2", Between(a, ONE, TWO, negated=True)),
        ("a BETWEEN -1 AND b + 1", Between(a, Literal(-1, "int"), BinaryOp("+", b, ONE))),
        ("a NOT IN ('x', 'y')", InList(a, ("x", "y"), negated=True)),
        ("a NOT LIKE 'x' ESCAPE '!'", Like(a, "x", "!", negated=True)),
        ("a IS NOT NULL OR x", Or((IsNull(a, negated=True), x))),
        ("x OR y OR z", Or((x, y, z))),
        ("(x OR y) OR z", Or((Or((x, y)), z))),
    ],
)
def test_sel_20_precedence_and_tree_shape(text: str, tree: object) -> None:
    """SEL-20: NOT applies to a whole predicate, binds tighter than AND, AND than OR."""
    assert parse(text) == tree


def test_sel_20_not_precedence_changes_outcomes() -> None:
    """SEL-20, A-01: NOT a = 1 is NOT (a = 1), not (NOT a) = 1."""
    assert evaluate(parse("NOT a = 1"), Msg({"a": 2})) is True
    assert evaluate(parse("NOT x AND y"), Msg({"x": False, "y": False})) is False


@pytest.mark.parametrize(
    ("bad", "pos", "expected"),
    [
        ("(a = 1", 6, "')' or an operator"),
        ("a = 1)", 5, "no matching '('"),
        ("a = 1 AND", 9, "an operand"),
        ("a IS NOT", 8, "NULL after IS NOT"),
        ("a IS", 4, "NULL after IS"),
        ("a BETWEEN 1", 11, "AND between the bounds"),
        ("a BETWEEN 1 OR 2", 12, "AND between the bounds"),
        ("NOT", 3, "an operand"),
        ("a < b < c", 6, "comparisons do not chain"),
        ("a = b = c", 6, "comparisons do not chain"),
        ("a NOT IS NULL", 6, "BETWEEN, IN or LIKE after NOT"),
        ("a IN 'x'", 5, "'(' after IN"),
        ("a IN ('x' 'y')", 10, "',' or ')'"),
        ("a IN ('x',)", 10, "a string literal in the IN list"),
        ("a LIKE b", 7, "a string literal as the LIKE pattern"),
        ("a LIKE 'x' ESCAPE", 17, "one-character string literal after ESCAPE"),
        ("a = ()", 5, "an operand"),
        ("", 0, "an operand"),
        ("a =", 3, "an operand"),
        ("a TRUE", 2, "AND, OR"),
    ],
)
def test_sel_07_error_position_and_expectation(bad: str, pos: int, expected: str) -> None:
    """SEL-07, SEL-20: errors name the 0-based offset and what was expected there."""
    with pytest.raises(InvalidSelectorException) as info:
        parse(bad)
    exc = info.value
    assert exc.position == pos
    assert exc.selector == bad
    assert f"position {pos}" in str(exc)
    assert expected in str(exc)


def test_sel_07_error_names_the_offending_token() -> None:
    """SEL-07: the message names the token found and shows the place."""
    exc = _invalid("color = 'x' AND AND")
    assert "found keyword AND" in str(exc)
    assert "⟨here⟩" in str(exc)
    exc = _invalid("color = 'x' AND weight >")
    assert "the end of the selector" in str(exc)


# -- SEL-21, SEL-22 ----------------------------------------------------------------------------


def test_sel_21_parentheses_group() -> None:
    """SEL-21: parentheses group any sub-expression."""
    m = Msg({"x": True, "y": False, "z": False})
    assert evaluate(parse("(x OR y) AND z"), m) is False
    assert evaluate(parse("x OR (y AND z)"), m) is True
    assert evaluate(parse("(1 + 2) * 3 = 9"), m) is True
    assert evaluate(parse("((((x))))"), m) is True
    assert parse("(a) = (1)") == Comparison("=", a, ONE)


def test_sel_22_left_associativity() -> None:
    """SEL-22: 10 - 5 - 2 is 3 and 8 / 4 / 2 is 1."""
    assert parse("10 - 5 - 2 = 3") == Comparison(
        "=",
        BinaryOp("-", BinaryOp("-", Literal(10, "int"), Literal(5, "int")), TWO),
        Literal(3, "int"),
    )
    assert evaluate(parse("10 - 5 - 2 = 3"), None) is True
    assert evaluate(parse("8 / 4 / 2 = 1"), None) is True
    assert evaluate(parse("2 * 3 / 4 = 1"), None) is True


# -- SEL-08 static rules S1–S8 -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("bad", "pos"),
    [
        # S1: the selector and operands of NOT/AND/OR are conditions or identifiers.
        ("7", 0),
        ("'abc'", 0),
        ("a + 1", 0),
        ("-a", 0),
        ("(a * 2)", 1),
        ("x AND 1", 6),
        ("1 OR x", 0),
        ("NOT 'a'", 4),
        ("NOT (a + 1)", 5),
        # S2: arithmetic operands are numeric or identifiers.
        ("a + 'x' = 1", 4),
        ("'x' * a = 1", 0),
        ("-'x' = 1", 1),
        ("a + TRUE = 1", 4),
        ("-FALSE = 1", 1),
        ("a + (b = 1) = 1", 5),
        # S3: comparison and BETWEEN operands are not conditions.
        ("(a > 1) = TRUE", 1),
        ("a = (b = c)", 5),
        ("(a IS NULL) <> FALSE", 1),
        ("a BETWEEN (b = 1) AND 2", 11),
        # S4: no string or boolean literal in < <= > >= or BETWEEN.
        ("s > 'a'", 4),
        ("'a' <= s", 0),
        ("flag > FALSE", 7),
        ("TRUE >= flag", 0),
        ("age BETWEEN 'a' AND 'z'", 12),
        ("age BETWEEN 1 AND TRUE", 18),
        ("'m' BETWEEN a AND b", 0),
        # S5: IN / LIKE / IS take a bare identifier; IN lists hold string literals.
        ("'UK' IN ('UK')", 0),
        ("1 IS NULL", 0),
        ("(a) IS NULL", 1),
        ("-a IS NULL", 0),
        ("a + 1 IN ('2')", 0),
        ("(s) LIKE 'x'", 1),
        ("i IN (1, 2)", 6),
        ("c IN ()", 6),
        ("c IN (other)", 6),
        ("s LIKE other", 7),
        ("TRUE IS NULL", 0),
        # S6: the ESCAPE literal holds one character.
        ("s LIKE 'a%' ESCAPE 'ab'", 19),
        ("s LIKE 'a%' ESCAPE ''", 19),
        # S8: NULL only in IS [NOT] NULL.
        ("a = NULL", 4),
        ("NULL IS NULL", 0),
        ("a IN (NULL)", 6),
        ("NULL", 0),
    ],
)
def test_sel_08_static_rules(bad: str, pos: int) -> None:
    """SEL-08: ternmq checks S1–S8 at creation and raises InvalidSelectorException."""
    assert _invalid(bad).position == pos


@pytest.mark.parametrize(
    "ok",
    [
        "flag",
        "(flag)",
        "TRUE",
        "NOT flag AND (other)",
        "flag = TRUE",
        "TRUE = flag",
        "'a' = s",
        "1 = 1",
        "'a' = 1",
        "TRUE <> 1",
        "-a = 1",
        "(a) = 1",
        "a BETWEEN b AND c",
        "a + 1 BETWEEN -b AND c * 2",
        "1 BETWEEN a AND 2",
        "s LIKE '😀' ESCAPE '😀'",
    ],
)
def test_sel_08_accepted_forms(ok: str) -> None:
    """SEL-08: forms the static rules allow compile."""
    assert compile_selector(ok) is not None


def test_sel_06_checked_when_presented() -> None:
    """SEL-06: an invalid selector fails at compile time, before any message is seen, and
    is not cached as a success (it fails again on every attempt)."""
    for _ in range(2):
        with pytest.raises(InvalidSelectorException):
            compile_selector("a = ")


# -- bounds ---------------------------------------------------------------------------------------


def test_nesting_within_bound_compiles_and_evaluates() -> None:
    """MAX_DEPTH parentheses and a tree MAX_DEPTH deep compile and evaluate."""
    deep_parens = "(" * MAX_DEPTH + "a = 1" + ")" * MAX_DEPTH
    sel = compile_selector(deep_parens)
    assert sel is not None and sel.matches(Msg({"a": 1}))
    deep_not = "NOT " * (MAX_DEPTH - 3) + "a = 1"
    sel = compile_selector(deep_not)
    assert sel is not None
    assert sel.matches(Msg({"a": 1})) is ((MAX_DEPTH - 3) % 2 == 0)
    deep_arith = "a" + " + 1" * (MAX_DEPTH - 2) + " > 0"
    sel = compile_selector(deep_arith)
    assert sel is not None and sel.matches(Msg({"a": 1}))


@pytest.mark.parametrize(
    "bad",
    [
        "(" * (MAX_DEPTH + 1) + "a = 1" + ")" * (MAX_DEPTH + 1),
        "(" * 100_000,
        "NOT " * 100_000 + "a",
        "- " * 100_000 + "a = 1",
        "a" + " + 1" * 5000 + " > 0",
    ],
)
def test_nesting_beyond_bound_is_invalid_not_a_crash(bad: str) -> None:
    """Deep nesting raises InvalidSelectorException naming the bound (no RecursionError)."""
    exc = _invalid(bad)
    assert str(MAX_DEPTH) in str(exc)


def test_long_flat_or_chain_is_fine() -> None:
    """AND/OR chains are flat: 5000 alternatives compile and evaluate."""
    text = " OR ".join(f"id = {i}" for i in range(5000))
    sel = compile_selector(text)
    assert sel is not None
    assert sel.matches(Msg({"id": 4999}))
    assert not sel.matches(Msg({"id": 5000}))
