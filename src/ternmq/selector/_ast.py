"""The selector syntax tree (catalog §5.3).

Nodes are frozen, slotted dataclasses. ``pos`` is the 0-based offset of the node's first
character in the selector text; it is excluded from equality, so two trees parsed from
differently spaced texts compare equal. Parentheses leave no node: a parenthesized
expression is its content. Chains of ``AND`` (``OR``) are one node holding all operands in
order, which keeps long generated selectors (``id = 1 OR id = 2 OR …``) shallow.

A numeric literal right after a unary sign is folded into a signed literal (so
``-2147483648`` is the int minimum, ``-9223372036854775808`` the long minimum, SEL-14,
SEL-17); any further signs stay :class:`UnaryOp` nodes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal as _Lit
from typing import TypeAlias

__all__ = [
    "And",
    "Between",
    "BinaryOp",
    "Comparison",
    "Identifier",
    "InList",
    "IsNull",
    "Like",
    "Literal",
    "LiteralType",
    "Node",
    "Not",
    "Or",
    "UnaryOp",
]

LiteralType: TypeAlias = _Lit["boolean", "string", "int", "long", "float", "double"]


@dataclass(frozen=True, slots=True)
class Literal:
    """A literal: ``TRUE``/``FALSE``, a string, or a number typed per SEL-47."""

    value: bool | int | float | str
    type: LiteralType
    pos: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class Identifier:
    """A header field reference (SEL-30) or a property reference (SEL-32)."""

    name: str
    pos: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class UnaryOp:
    """Unary ``+`` or ``-`` applied to an arithmetic operand."""

    op: _Lit["+", "-"]
    operand: Node
    pos: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class BinaryOp:
    """Arithmetic ``+ - * /``."""

    op: _Lit["+", "-", "*", "/"]
    left: Node
    right: Node
    pos: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class Comparison:
    """A comparison ``= <> < <= > >=``."""

    op: _Lit["=", "<>", "<", "<=", ">", ">="]
    left: Node
    right: Node
    pos: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class Between:
    """``operand [NOT] BETWEEN low AND high``."""

    operand: Node
    low: Node
    high: Node
    negated: bool = False
    pos: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class InList:
    """``identifier [NOT] IN ('s1', …)``."""

    identifier: Identifier
    values: tuple[str, ...]
    negated: bool = False
    pos: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class Like:
    """``identifier [NOT] LIKE 'pattern' [ESCAPE 'e']``."""

    identifier: Identifier
    pattern: str
    escape: str | None = None
    negated: bool = False
    pos: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class IsNull:
    """``identifier IS [NOT] NULL``."""

    identifier: Identifier
    negated: bool = False
    pos: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class Not:
    """``NOT operand``."""

    operand: Node
    pos: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class And:
    """``op1 AND op2 AND …`` (two or more operands, left to right)."""

    operands: tuple[Node, ...]
    pos: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class Or:
    """``op1 OR op2 OR …`` (two or more operands, left to right)."""

    operands: tuple[Node, ...]
    pos: int = field(default=0, compare=False)


Node: TypeAlias = (
    Literal
    | Identifier
    | UnaryOp
    | BinaryOp
    | Comparison
    | Between
    | InList
    | Like
    | IsNull
    | Not
    | And
    | Or
)
