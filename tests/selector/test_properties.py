"""Property-based tests: compiled predicate == reference evaluator; fuzzing.

Random syntax trees that obey the static rules are rendered to text, parsed back (which
must give the same tree), compiled, and evaluated against random messages (mixed types,
widths, missing names, null properties, NaN and infinities, bytes correlation IDs). The
compiled predicate for the selector and for ``NOT (selector)`` must reproduce the
reference evaluator's TRUE / FALSE / UNKNOWN exactly (SEL-49, SEL-55, SEL-56). Fuzzing
feeds arbitrary strings and token soups: only InvalidSelectorException may escape
(SEL-06, SEL-09).
"""

from __future__ import annotations

import math
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ternmq.errors import InvalidSelectorException
from ternmq.selector import (
    And,
    Between,
    BinaryOp,
    Comparison,
    Identifier,
    InList,
    IsNull,
    Like,
    Literal,
    Node,
    Not,
    Or,
    UnaryOp,
    compile_selector,
    evaluate,
    parse,
)
from ternmq.selector._evaluate import like_match

from ._support import TAGS, Msg, f32

NAMES = ["a", "b", "s", "f", "n", "€x", "JMSPriority", "JMSTimestamp", "JMSType"]
HEADER_NAMES = ["JMSDeliveryMode", "JMSMessageID", "JMSCorrelationID"]
ALPHABET = "ab%_!'\n"

# Edge values shared by literals and message values, so that comparisons often meet the
# cases where promotion and rounding matter (2**24 + 1 vs binary32, 2**53 + 1 vs binary64).
INTS = [0, 1, -1, 2, 7, 100, 2**24, 2**24 + 1, 2**31 - 1, -(2**31), 2**53, 2**53 + 1, 2**63 - 1]
INTS += [-(2**63), 1152921573326323713]
DOUBLES = [0.0, -0.0, 0.5, 1.1, 2.5, -7.25, 16777216.0, 9007199254740992.0, 1e300, 1e-300]
DOUBLES += [float(i) for i in INTS]
FLOATS = sorted({f32(x) for x in (1.1, -3.75, 1e20, 3.4e38, *DOUBLES)} - {math.inf})

# -- syntax trees ----------------------------------------------------------------------------

identifiers = st.sampled_from(NAMES + HEADER_NAMES).map(Identifier)


def _int_literal(v: int, long_: bool) -> Literal:
    fits = -(2**31) <= v <= 2**31 - 1
    return Literal(v, "long" if long_ or not fits else "int")


numeric_literals = st.one_of(
    st.builds(
        _int_literal, st.sampled_from(INTS) | st.integers(-(2**63), 2**63 - 1), st.booleans()
    ),
    st.builds(
        Literal,
        st.sampled_from(DOUBLES) | st.floats(allow_nan=False, allow_infinity=False),
        st.just("double"),
    ),
    st.builds(Literal, st.sampled_from(FLOATS), st.just("float")),
)
string_literals = st.builds(Literal, st.text(ALPHABET, max_size=4), st.just("string"))
bool_literals = st.builds(Literal, st.booleans(), st.just("boolean"))

arith = st.recursive(
    identifiers | numeric_literals,
    lambda inner: st.one_of(
        st.builds(UnaryOp, st.sampled_from(["+", "-"]), inner),
        st.builds(BinaryOp, st.sampled_from(["+", "-", "*", "/"]), inner, inner),
    ),
    max_leaves=4,
)
equality_operand = arith | string_literals | bool_literals


def _like(ident: Identifier, pattern: str, escape: str | None, negated: bool) -> Like:
    return Like(ident, pattern, escape, negated)


leaf_conditions = st.one_of(
    st.builds(Comparison, st.sampled_from(["=", "<>"]), equality_operand, equality_operand),
    st.builds(Comparison, st.sampled_from(["<", "<=", ">", ">="]), arith, arith),
    st.builds(Between, arith, arith, arith, st.booleans()),
    st.builds(
        InList,
        identifiers,
        st.lists(st.text(ALPHABET, max_size=3), min_size=1, max_size=4).map(tuple),
        st.booleans(),
    ),
    st.builds(
        _like,
        identifiers,
        st.text(ALPHABET, max_size=6),
        st.none() | st.sampled_from(["!", "%", "_", "a", "'"]),
        st.booleans(),
    ),
    st.builds(IsNull, identifiers, st.booleans()),
    identifiers,
    bool_literals,
)


simple_operand = identifiers | numeric_literals | string_literals | bool_literals
ordered_operand = identifiers | numeric_literals


def _swap(c: Comparison) -> Comparison:
    return Comparison(c.op, c.right, c.left)


# Leaves shaped like the compiled fast paths: an identifier against constants.
fast_leaves = st.one_of(
    st.builds(Comparison, st.sampled_from(["=", "<>"]), identifiers, simple_operand),
    st.builds(Comparison, st.sampled_from(["=", "<>"]), identifiers, simple_operand).map(_swap),
    st.builds(Comparison, st.sampled_from(["<", "<=", ">", ">="]), identifiers, ordered_operand),
    st.builds(
        Comparison, st.sampled_from(["<", "<=", ">", ">="]), identifiers, ordered_operand
    ).map(_swap),
    st.builds(Between, identifiers, ordered_operand, ordered_operand, st.booleans()),
    st.builds(Between, ordered_operand, identifiers, ordered_operand, st.booleans()),
    leaf_conditions,
)


def _tuple(xs: list[Node]) -> tuple[Node, ...]:
    return tuple(xs)


conditions = st.recursive(
    leaf_conditions,
    lambda inner: st.one_of(
        st.builds(Not, inner),
        st.builds(And, st.lists(inner, min_size=2, max_size=3).map(_tuple)),
        st.builds(Or, st.lists(inner, min_size=2, max_size=3).map(_tuple)),
    ),
    max_leaves=8,
)


def _quote(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def render(node: Node) -> str:
    """Selector text for a tree; every compound operand is parenthesized."""
    if isinstance(node, Literal):
        if node.type == "boolean":
            return "TRUE" if node.value else "FALSE"
        if node.type == "string":
            return _quote(str(node.value))
        if node.type == "double":
            text = repr(node.value)
        elif node.type == "float":
            text = repr(node.value) + "f"
        else:
            text = str(node.value) + ("L" if node.type == "long" else "")
        return f"({text})" if text.startswith("-") else text
    if isinstance(node, Identifier):
        return node.name
    if isinstance(node, UnaryOp):
        return f"{node.op}({render(node.operand)})"
    if isinstance(node, BinaryOp):
        return f"({render(node.left)}) {node.op} ({render(node.right)})"
    if isinstance(node, Comparison):
        return f"({render(node.left)}) {node.op} ({render(node.right)})"
    if isinstance(node, Between):
        neg = "NOT " if node.negated else ""
        return (
            f"({render(node.operand)}) {neg}BETWEEN ({render(node.low)}) AND ({render(node.high)})"
        )
    if isinstance(node, InList):
        neg = "NOT " if node.negated else ""
        return f"{node.identifier.name} {neg}IN ({', '.join(map(_quote, node.values))})"
    if isinstance(node, Like):
        neg = "NOT " if node.negated else ""
        esc = "" if node.escape is None else f" ESCAPE {_quote(node.escape)}"
        return f"{node.identifier.name} {neg}LIKE {_quote(node.pattern)}{esc}"
    if isinstance(node, IsNull):
        return f"{node.identifier.name} IS {'NOT ' if node.negated else ''}NULL"
    if isinstance(node, Not):
        return f"NOT ({render(node.operand)})"
    if isinstance(node, And):
        return " AND ".join(f"({render(op)})" for op in node.operands)
    return " OR ".join(f"({render(op)})" for op in node.operands)


# -- messages ----------------------------------------------------------------------------

_RANGES = {"byte": 2**7, "short": 2**15, "int": 2**31, "long": 2**63}


@st.composite
def typed_values(draw: st.DrawFn) -> tuple[Any, str | None]:
    kind = draw(
        st.sampled_from(["null", "bool", "byte", "short", "int", "long", "float", "double", "str"])
    )
    if kind == "null":
        return None, None
    if kind == "bool":
        return draw(st.booleans()), "bool"
    if kind in _RANGES:
        r = _RANGES[kind]
        v = draw(st.sampled_from([x for x in INTS if -r <= x < r]) | st.integers(-r, r - 1))
        return v, kind
    if kind == "float":
        v = draw(st.sampled_from([*FLOATS, math.nan, math.inf, -math.inf]) | st.floats(width=32))
        return f32(v), kind
    if kind == "double":
        return draw(st.sampled_from([*DOUBLES, math.nan, -math.inf]) | st.floats()), kind
    return draw(st.text(ALPHABET, max_size=4)), "str"


@st.composite
def messages(draw: st.DrawFn) -> Msg:
    props: dict[str, Any] = {}
    types: dict[str, int] = {}
    for name in NAMES:
        if name.startswith("JMS") or draw(st.booleans()) is False:
            continue
        value, kind = draw(typed_values())
        props[name] = value
        if kind is not None and draw(st.integers(0, 4)) > 0:  # sometimes untyped
            types[name] = TAGS[kind]
    return Msg(
        props,
        types,
        jms_delivery_mode=draw(st.sampled_from([1, 2])),
        jms_priority=draw(st.integers(0, 9)),
        jms_message_id=draw(st.none() | st.text(ALPHABET, max_size=3)),
        jms_timestamp=draw(st.sampled_from([0, 1, 2**31, 1700000000000])),
        jms_correlation_id=draw(st.none() | st.text(ALPHABET, max_size=3) | st.binary(max_size=2)),
        jms_type=draw(st.none() | st.text(ALPHABET, max_size=3)),
    )


def _agree(text: str, tree: Node, msgs: list[Msg]) -> None:
    sel = compile_selector(text)
    neg = compile_selector(f"NOT ({text})")
    assert sel is not None and neg is not None
    for m in msgs:
        want = evaluate(tree, m)
        assert want in (True, False, None)
        assert sel.matches(m) is (want is True), (text, m, want, sel.source)
        assert neg.matches(m) is (want is False), (text, m, want, neg.source)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(conditions, st.lists(messages(), min_size=1, max_size=3))
def test_compiled_equals_reference_on_random_trees(tree: Node, msgs: list[Msg]) -> None:
    """SEL-49, SEL-55, SEL-56: generated code agrees with the reference evaluator, and
    rendering then parsing gives the same tree (SEL-20, SEL-21)."""
    text = render(tree)
    assert parse(text) == tree, text
    _agree(text, tree, msgs)


fast_conditions = st.recursive(
    fast_leaves,
    lambda inner: st.one_of(
        st.builds(Not, inner),
        st.builds(And, st.lists(inner, min_size=2, max_size=3).map(_tuple)),
        st.builds(Or, st.lists(inner, min_size=2, max_size=3).map(_tuple)),
    ),
    max_leaves=3,
)


def _edge_values() -> list[tuple[Any, str | None]]:
    """(value, JMS type) pairs; (None, None) is a null property, type "absent" no property."""
    values: list[tuple[Any, str | None]] = [(None, None), (None, "absent")]
    for v in INTS:
        values.append((v, "long"))
        if -(2**31) <= v < 2**31:
            values.append((v, "int"))
    values += [(v, "byte") for v in (-128, 0, 127)] + [(v, "short") for v in (-1, 32767)]
    values += [(v, "float") for v in FLOATS] + [(v, "double") for v in DOUBLES]
    values += [(x, t) for x in (math.nan, math.inf, -math.inf) for t in ("float", "double")]
    values += [(v, "str") for v in ("", "a", "1", "a%", "_b'")] + [(True, "bool"), (False, "bool")]
    return values


EDGE_VALUES = _edge_values()


def _pool() -> list[Msg]:
    """Messages in which every name meets every typed edge value (and absence) once."""
    values = EDGE_VALUES
    pool = []
    for k in range(len(values)):
        props: dict[str, Any] = {}
        types: dict[str, int] = {}
        for i, name in enumerate(NAMES):
            v, t = values[(k + 7 * i) % len(values)]
            if t == "absent":
                continue
            props[name] = v
            if t is not None and (k + i) % 5:  # sometimes untyped
                types[name] = TAGS[t]
        pool.append(
            Msg(
                props,
                types,
                jms_delivery_mode=1 + k % 2,
                jms_priority=k % 10,
                jms_message_id=[None, "a", "ab%"][k % 3],
                jms_timestamp=[0, 1, 2**31, 1700000000000][k % 4],
                jms_correlation_id=[None, "a", b"a"][k % 3],
                jms_type=[None, "a", "", "b'"][k % 4],
            )
        )
    return pool


POOL = _pool()


def _x_messages() -> list[Msg]:
    out = []
    for v, t in EDGE_VALUES:
        if t == "absent":
            out.append(Msg())
        else:
            out.append(Msg({"x": v}, {"x": TAGS[t]} if t else {}))
            if t in ("int", "float"):
                out.append(Msg({"x": v}))  # the same value untyped: long / double
    return out


X_MESSAGES = _x_messages()
EDGE_LITERALS = [
    *(render(_int_literal(v, long_)) for v in INTS[:13] for long_ in (False, True)),
    *(render(Literal(v, "double")) for v in (0.0, -0.0, 0.5, 1.1, 16777217.0, 2.0**53, 1e300)),
    *(render(Literal(float(v), "double")) for v in (2**53 + 1, 1152921573326323713)),
    *(render(Literal(f32(v), "float")) for v in (1.1, 0.5, 16777216.0, 1152921642045800448.0)),
]


def test_numeric_fast_paths_exhaustive() -> None:
    """SEL-44, SEL-51: every edge literal against every typed edge value, each operator,
    both orientations and BETWEEN bounds: compiled (both polarities) == reference."""
    texts = [f"x {op} {lit}" for op in ("=", "<>", "<", "<=", ">", ">=") for lit in EDGE_LITERALS]
    texts += [f"{lit} < x" for lit in EDGE_LITERALS]
    bounds = EDGE_LITERALS[::3]
    texts += [
        f"x {neg}BETWEEN {lo} AND {hi}" for lo in bounds for hi in bounds for neg in ("", "NOT ")
    ]
    for text in texts:
        _agree(text, parse(text), X_MESSAGES)


@settings(max_examples=250, suppress_health_check=[HealthCheck.too_slow])
@given(fast_conditions)
def test_fast_paths_equal_reference(tree: Node) -> None:
    """SEL-40…SEL-44, SEL-51…SEL-54: the inline fast paths (identifier against constants)
    agree with the reference on values of every type, width, NaN, infinity and NULL."""
    _agree(render(tree), tree, POOL)


@settings(max_examples=300)
@given(
    st.text(ALPHABET + "c", max_size=8),
    st.none() | st.sampled_from(["!", "%", "_", "a", "'"]),
    st.lists(st.text(ALPHABET + "c", max_size=10), min_size=1, max_size=5),
)
def test_like_plans_agree_with_reference(
    pattern: str, escape: str | None, values: list[str]
) -> None:
    """SEL-53: every LIKE fast path (prefix, suffix, contains, regex, segments) agrees with
    the plain dynamic-programming matcher."""
    esc = "" if escape is None else f" ESCAPE {_quote(escape)}"
    sel = compile_selector(f"s LIKE {_quote(pattern)}{esc}")
    assert sel is not None
    for v in values:
        want = like_match(v, pattern, escape)
        assert sel.matches(Msg({"s": v})) is want, (pattern, escape, v, sel.source)


# -- fuzzing -----------------------------------------------------------------------------

TOKENS = [
    "a", "b", "s", "JMSType", "'x'", "'", "''", "(", ")", ",", "=", "<>", "<", "<=", ">", ">=",
    "+", "-", "*", "/", "NOT", "AND", "OR", "BETWEEN", "IN", "LIKE", "ESCAPE", "IS", "NULL",
    "TRUE", "FALSE", "1", "0x1F", "010", "09", "1.5", ".5", "7.", "1e3", "1e", "2f", "5L",
    "9223372036854775808", "\t", "\n", "\x0b", "!", "==", "%", '"', "·", "€", "1_0",
]  # fmt: skip


@settings(max_examples=300)
@given(st.lists(st.sampled_from(TOKENS), max_size=12), st.sampled_from([" ", ""]), messages())
def test_fuzz_token_soup(tokens: list[str], sep: str, msg: Msg) -> None:
    """SEL-06, SEL-09: only InvalidSelectorException escapes compilation; whatever compiles
    evaluates without raising and agrees with the reference."""
    text = sep.join(tokens)
    try:
        sel = compile_selector(text)
    except InvalidSelectorException as exc:
        assert exc.position is not None and 0 <= exc.position <= len(text)
        assert exc.selector == text
        return
    if sel is None:
        assert text.strip(" \t\n\r\x0c") == ""
        return
    want = evaluate(sel.ast, msg)
    assert sel.matches(msg) is (want is True)


@settings(max_examples=300)
@given(st.text(max_size=40))
def test_fuzz_arbitrary_text(text: str) -> None:
    """SEL-06: arbitrary text either compiles or raises InvalidSelectorException."""
    try:
        compile_selector(text)
    except InvalidSelectorException as exc:
        assert exc.position is not None and 0 <= exc.position <= len(text)
