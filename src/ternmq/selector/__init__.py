"""JMS message selectors (JMS 2.0 §3.8; catalog SEL).

Parse once, compile to a Python predicate, evaluate per message::

    sel = compile_selector("region = 'EU' AND amount BETWEEN 100 AND 500")
    if sel is None or sel.matches(message):
        deliver(message)

:func:`compile_selector` raises :class:`~ternmq.errors.InvalidSelectorException` for an
invalid selector (syntax and the static rules S1–S8 of catalog §5.4, SEL-06, SEL-08);
everything else is decided per message, and evaluation never raises (SEL-09).
:func:`parse` and :func:`evaluate` expose the syntax tree and a plain reference evaluator
for tools and tests.
"""

from __future__ import annotations

from ternmq.selector._ast import (
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
)
from ternmq.selector._evaluate import evaluate
from ternmq.selector._parser import MAX_DEPTH, parse
from ternmq.selector._selector import CACHE_SIZE, Selector, compile_selector, is_blank
from ternmq.selector._target import (
    DELIVERY_COUNT,
    PropertyValue,
    SelectorTarget,
    with_delivery_count,
)

__all__ = [
    "CACHE_SIZE",
    "DELIVERY_COUNT",
    "MAX_DEPTH",
    "And",
    "Between",
    "BinaryOp",
    "Comparison",
    "Identifier",
    "InList",
    "IsNull",
    "Like",
    "Literal",
    "Node",
    "Not",
    "Or",
    "PropertyValue",
    "Selector",
    "SelectorTarget",
    "UnaryOp",
    "compile_selector",
    "evaluate",
    "is_blank",
    "parse",
    "with_delivery_count",
]
