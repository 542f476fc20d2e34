"""The reference evaluator: a plain tree walk over the catalog's rules (§5.5, §5.6).

It is written for clarity, not speed: the compiled predicate (``_compile``) must agree with
it on every selector and message, which the property tests check. BETWEEN, IN and NOT IN
are evaluated through their defining expansions (SEL-51, SEL-52), and LIKE through a
dynamic-programming matcher independent of the compiled fast paths.
"""

from __future__ import annotations

from typing import Final, Protocol

from ternmq.selector._ast import (
    And,
    Between,
    BinaryOp,
    Comparison,
    Identifier,
    InList,
    IsNull,
    Like,
    Node,
    Not,
    Or,
    UnaryOp,
)
from ternmq.selector._ast import Literal as Lit
from ternmq.selector._target import SelectorTarget
from ternmq.selector._values import (
    Value,
    arith,
    compare,
    negate,
    plus,
    typed_property,
)

__all__ = ["HEADER_FIELDS", "evaluate", "resolve", "value_of"]

HEADER_FIELDS: Final = frozenset(
    {
        "JMSDeliveryMode",
        "JMSPriority",
        "JMSMessageID",
        "JMSTimestamp",
        "JMSCorrelationID",
        "JMSType",
    }
)


class _Resolver(Protocol):
    def __call__(self, name: str) -> Value: ...


def resolve(message: SelectorTarget, name: str) -> Value:
    """The typed value of identifier ``name`` on ``message`` (SEL-30…SEL-33).

    The six selectable header fields are typed as SEL-30 states; every other name is a
    property (NULL when absent or holding null). A correlation ID held as bytes is NULL
    (A-26).
    """
    if name in HEADER_FIELDS:
        if name == "JMSDeliveryMode":
            mode = "NON_PERSISTENT" if message.jms_delivery_mode == 1 else "PERSISTENT"
            return ("string", mode)
        if name == "JMSPriority":
            return ("int", message.jms_priority)
        if name == "JMSTimestamp":
            return ("long", message.jms_timestamp)
        if name == "JMSMessageID":
            s: object = message.jms_message_id
        elif name == "JMSCorrelationID":
            s = message.jms_correlation_id
        else:
            s = message.jms_type
        return ("string", s) if type(s) is str else None
    types = getattr(message, "_property_types", None)
    return typed_property(message._properties.get(name), types, name)


def value_of(node: Node, lookup: _Resolver) -> Value:
    """Evaluate an arithmetic operand (identifier, literal, unary or binary operation)."""
    if isinstance(node, Lit):
        return (node.type, node.value)
    if isinstance(node, Identifier):
        return lookup(node.name)
    if isinstance(node, UnaryOp):
        v = value_of(node.operand, lookup)
        return negate(v) if node.op == "-" else plus(v)
    if isinstance(node, BinaryOp):
        return arith(node.op, value_of(node.left, lookup), value_of(node.right, lookup))
    raise TypeError(f"not a value node: {type(node).__name__}")


def _and(values: list[bool | None]) -> bool | None:
    if any(v is False for v in values):
        return False
    if any(v is None for v in values):
        return None
    return True


def _or(values: list[bool | None]) -> bool | None:
    if any(v is True for v in values):
        return True
    if any(v is None for v in values):
        return None
    return False


def _not(v: bool | None) -> bool | None:
    return None if v is None else not v


def like_match(s: str, pattern: str, escape: str | None) -> bool:
    """Whole-string LIKE match (SEL-53): ``_`` one code point, ``%`` any run; the escape
    character makes a following ``_``, ``%`` or escape literal and is otherwise itself."""
    items: list[str | None] = []  # None = '_', '' = '%', else one literal character
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == escape and i + 1 < len(pattern) and pattern[i + 1] in ("_", "%", escape):
            items.append(pattern[i + 1])
            i += 2
            continue
        items.append(None if c == "_" else "" if c == "%" else c)
        i += 1
    # reachable[j]: the first i items can match the first j characters of s.
    reachable = [True] + [False] * len(s)
    for item in items:
        nxt = [False] * (len(s) + 1)
        if item == "":
            seen = False
            for j in range(len(s) + 1):
                seen = seen or reachable[j]
                nxt[j] = seen
        else:
            for j in range(len(s)):
                if reachable[j] and (item is None or s[j] == item):
                    nxt[j + 1] = True
        reachable = nxt
    return reachable[len(s)]


def _eval(node: Node, lookup: _Resolver) -> bool | None:
    if isinstance(node, And):
        return _and([_eval(op, lookup) for op in node.operands])
    if isinstance(node, Or):
        return _or([_eval(op, lookup) for op in node.operands])
    if isinstance(node, Not):
        return _not(_eval(node.operand, lookup))
    if isinstance(node, Comparison):
        return compare(node.op, value_of(node.left, lookup), value_of(node.right, lookup))
    if isinstance(node, Between):
        x = value_of(node.operand, lookup)
        lo = value_of(node.low, lookup)
        hi = value_of(node.high, lookup)
        if node.negated:
            return _or([compare("<", x, lo), compare(">", x, hi)])
        return _and([compare(">=", x, lo), compare("<=", x, hi)])
    if isinstance(node, InList):
        x = lookup(node.identifier.name)
        result = _or([compare("=", x, ("string", s)) for s in node.values])
        return _not(result) if node.negated else result
    if isinstance(node, Like):
        x = lookup(node.identifier.name)
        if x is None:
            return None
        matched = x[0] == "string" and like_match(x[1], node.pattern, node.escape)  # type: ignore[index, arg-type]
        return not matched if node.negated else matched
    if isinstance(node, IsNull):
        is_null = lookup(node.identifier.name) is None
        return not is_null if node.negated else is_null
    # A condition that is a value: an identifier or TRUE/FALSE (SEL-50, SEL-16).
    v = value_of(node, lookup)
    if v is None:
        return None
    if isinstance(v, tuple) and v[0] == "boolean":
        return bool(v[1])
    return False


def evaluate(node: Node, message: SelectorTarget | None) -> bool | None:
    """Evaluate a parsed selector against a message with SQL three-valued logic.

    Returns True (TRUE), False (FALSE) or None (UNKNOWN). ``message`` may be None for a
    selector without identifiers. This is the reference the compiled predicate is tested
    against; use :func:`ternmq.selector.compile_selector` for speed.

    Raises:
        TypeError: the selector references an identifier but ``message`` is None, or the
            node is not a selector syntax tree.
    """
    if message is None:

        def lookup(name: str) -> Value:
            raise TypeError(f"identifier {name!r} needs a message to evaluate against")

    else:
        target = message

        def lookup(name: str) -> Value:
            return resolve(target, name)

    return _eval(node, lookup)
