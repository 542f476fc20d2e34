"""Recursive-descent parser and static rules (catalog §5.3, §5.4).

Theory of operation: the grammar of §5.3 is parsed top-down with one function per
precedence level. Chains (``OR``, ``AND``, ``+ -``, ``* /``) and prefix runs (``NOT``,
unary signs) are loops, so only parentheses recurse, and their depth is bounded by
:data:`MAX_DEPTH`. The static rules S1–S8 are checked while nodes are built, where the
offending operand's offset is at hand. After parsing, the depth of the tree is bounded by
:data:`MAX_DEPTH` as well, which bounds every later recursive walk (checks, evaluation,
code generation, and the nesting of the generated Python source).
"""

from __future__ import annotations

from typing import Final, Literal, cast

from ternmq.errors import InvalidSelectorException
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
from ternmq.selector._lexer import Token, describe, invalid, tokenize
from ternmq.selector._values import INT_MAX, INT_MIN, LONG_MAX

__all__ = ["MAX_DEPTH", "parse"]

MAX_DEPTH: Final = 64
"""Deepest nesting accepted: parentheses, and the depth of the syntax tree (chains of AND
and OR count once). Deeper selectors raise :class:`InvalidSelectorException`."""

_COMPARISON_OPS: Final = frozenset({"=", "<>", "<", "<=", ">", ">="})
_ORDERING_OPS: Final = frozenset({"<", "<=", ">", ">="})

_Class = Literal["cond", "bool", "ident", "num", "str"]


def _cls(node: Node) -> _Class:
    """The static class of a node (§5.4): conditional, boolean literal, identifier,
    numeric or string."""
    if isinstance(node, Lit):
        if node.type == "boolean":
            return "bool"
        if node.type == "string":
            return "str"
        return "num"
    if isinstance(node, Identifier):
        return "ident"
    if isinstance(node, UnaryOp | BinaryOp):
        return "num"
    return "cond"


_CLASS_WORDS: Final = {
    "cond": "a condition",
    "bool": "a boolean literal",
    "ident": "an identifier",
    "num": "an arithmetic expression",
    "str": "a string literal",
}


def parse(text: str) -> Node:
    """Parse a selector into its syntax tree, applying the static rules S1–S8.

    Args:
        text: the selector; it must contain an expression (``compile_selector`` is the
            entry point that treats empty and blank selectors as "no selector").

    Raises:
        InvalidSelectorException: the text is not a valid selector; ``position`` is the
            0-based offset of the problem and the message says what was expected.
        TypeError: ``text`` is not a ``str``.
    """
    if not isinstance(text, str):
        raise TypeError(f"a selector is a str, not {type(text).__name__}")
    parser = _Parser(text, tokenize(text))
    node = parser.or_expr()
    tok = parser.peek()
    if tok.kind != "eof":
        raise parser.unexpected(tok, _after_predicate_hint(tok))
    parser.require_condition(node, "a selector must be a condition")
    _check_depth(text, node)
    return node


def _after_predicate_hint(tok: Token) -> str:
    if tok.kind == "symbol" and tok.value in _COMPARISON_OPS:
        return "AND, OR, ')' or the end (comparisons do not chain: use AND)"
    if tok.kind == "symbol" and tok.value == ")":
        return "AND, OR or the end (this ')' has no matching '(')"
    return "AND, OR, ')' or the end of the selector"


def _children(node: Node) -> tuple[Node, ...]:
    if isinstance(node, UnaryOp | Not):
        return (node.operand,)
    if isinstance(node, BinaryOp | Comparison):
        return (node.left, node.right)
    if isinstance(node, Between):
        return (node.operand, node.low, node.high)
    if isinstance(node, And | Or):
        return node.operands
    return ()


def _check_depth(text: str, root: Node) -> None:
    stack: list[tuple[Node, int]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise invalid(
                text, node.pos, f"the selector nests more than {MAX_DEPTH} levels deep; simplify it"
            )
        stack.extend((child, depth + 1) for child in _children(node))


class _Parser:
    __slots__ = ("depth", "i", "text", "tokens")

    def __init__(self, text: str, tokens: list[Token]) -> None:
        self.text = text
        self.tokens = tokens
        self.i = 0
        self.depth = 0

    # -- token helpers -------------------------------------------------------------

    def peek(self) -> Token:
        return self.tokens[self.i]

    def take(self) -> Token:
        tok = self.tokens[self.i]
        if tok.kind != "eof":
            self.i += 1
        return tok

    def at_keyword(self, word: str) -> bool:
        tok = self.tokens[self.i]
        return tok.kind == "keyword" and tok.value == word

    def at_symbol(self, sym: str) -> bool:
        tok = self.tokens[self.i]
        return tok.kind == "symbol" and tok.value == sym

    def unexpected(self, tok: Token, expected: str) -> InvalidSelectorException:
        return invalid(self.text, tok.pos, f"expected {expected}, found {describe(tok)}")

    def expect_keyword(self, word: str, expected: str) -> Token:
        tok = self.take()
        if tok.kind != "keyword" or tok.value != word:
            raise self.unexpected(tok, expected)
        return tok

    def expect_symbol(self, sym: str, expected: str) -> Token:
        tok = self.take()
        if tok.kind != "symbol" or tok.value != sym:
            raise self.unexpected(tok, expected)
        return tok

    # -- static rules ----------------------------------------------------------------

    def require_condition(self, node: Node, why: str) -> None:
        """S1: a condition, a boolean literal or an identifier."""
        c = _cls(node)
        if c not in ("cond", "bool", "ident"):
            raise invalid(self.text, node.pos, f"{why}; found {_CLASS_WORDS[c]}")

    def require_arith_operand(self, node: Node, op_text: str) -> None:
        """S2: operands of arithmetic are numeric expressions or identifiers."""
        c = _cls(node)
        if c not in ("num", "ident"):
            raise invalid(
                self.text,
                node.pos,
                f"expected a number or identifier as operand of '{op_text}', "
                f"found {_CLASS_WORDS[c]}",
            )

    def require_comparable(self, node: Node, op_text: str) -> None:
        """S3 and S4: comparison and BETWEEN operands."""
        c = _cls(node)
        if c == "cond":
            raise invalid(
                self.text,
                node.pos,
                f"expected an identifier, literal or arithmetic expression as operand of "
                f"{op_text}, found a condition (a comparison's result cannot be compared)",
            )
        if op_text not in ("'='", "'<>'") and c in ("str", "bool"):
            raise invalid(
                self.text,
                node.pos,
                f"{_CLASS_WORDS[c]} cannot be an operand of {op_text}: strings and "
                "booleans only support = and <>",
            )

    # -- grammar -----------------------------------------------------------------------

    def or_expr(self) -> Node:
        first = self.and_expr()
        if not self.at_keyword("OR"):
            return first
        operands = [first]
        self.require_condition(first, "the operands of OR must be conditions")
        while self.at_keyword("OR"):
            self.take()
            node = self.and_expr()
            self.require_condition(node, "the operands of OR must be conditions")
            operands.append(node)
        return Or(tuple(operands), first.pos)

    def and_expr(self) -> Node:
        first = self.not_expr()
        if not self.at_keyword("AND"):
            return first
        operands = [first]
        self.require_condition(first, "the operands of AND must be conditions")
        while self.at_keyword("AND"):
            self.take()
            node = self.not_expr()
            self.require_condition(node, "the operands of AND must be conditions")
            operands.append(node)
        return And(tuple(operands), first.pos)

    def not_expr(self) -> Node:
        nots: list[int] = []
        while self.at_keyword("NOT"):
            nots.append(self.take().pos)
        node = self.predicate()
        for pos in reversed(nots):
            self.require_condition(node, "the operand of NOT must be a condition")
            node = Not(node, pos)
        return node

    def predicate(self) -> Node:
        start = self.i
        left = self.sum()
        bare_identifier = self.i == start + 1 and self.tokens[start].kind == "ident"
        tok = self.peek()
        if tok.kind == "symbol" and tok.value in _COMPARISON_OPS:
            self.take()
            op = cast(Literal["=", "<>", "<", "<=", ">", ">="], tok.value)
            right = self.sum()
            what = f"'{op}'"
            self.require_comparable(left, what)
            self.require_comparable(right, what)
            return Comparison(op, left, right, left.pos)
        negated = False
        if tok.kind == "keyword" and tok.value == "NOT":
            self.take()
            tok = self.peek()
            if tok.kind != "keyword" or tok.value not in ("BETWEEN", "IN", "LIKE"):
                raise self.unexpected(tok, "BETWEEN, IN or LIKE after NOT")
            negated = True
        if tok.kind != "keyword":
            return left
        word = tok.value
        if word == "BETWEEN":
            self.take()
            low = self.sum()
            self.expect_keyword("AND", "AND between the bounds of BETWEEN")
            high = self.sum()
            for node in (left, low, high):
                self.require_comparable(node, "BETWEEN")
            return Between(left, low, high, negated, left.pos)
        if word in ("IN", "LIKE", "IS"):
            if not bare_identifier:
                raise invalid(
                    self.text,
                    left.pos,
                    f"the left operand of {word} must be a bare identifier "
                    "(no sign, arithmetic, literal or parentheses)",
                )
            ident = cast(Identifier, left)
            self.take()
            if word == "IN":
                return self.in_tail(ident, negated)
            if word == "LIKE":
                return self.like_tail(ident, negated)
            is_not = self.at_keyword("NOT")
            if is_not:
                self.take()
            self.expect_keyword("NULL", "NULL after IS" if not is_not else "NULL after IS NOT")
            return IsNull(ident, is_not, left.pos)
        return left

    def in_tail(self, ident: Identifier, negated: bool) -> Node:
        self.expect_symbol("(", "'(' after IN")
        values: list[str] = []
        while True:
            tok = self.take()
            if tok.kind != "string":
                raise self.unexpected(tok, "a string literal in the IN list")
            values.append(cast(str, tok.value))
            tok = self.take()
            if tok.kind == "symbol" and tok.value == ")":
                return InList(ident, tuple(values), negated, ident.pos)
            if tok.kind != "symbol" or tok.value != ",":
                raise self.unexpected(tok, "',' or ')' in the IN list")

    def like_tail(self, ident: Identifier, negated: bool) -> Node:
        tok = self.take()
        if tok.kind != "string":
            raise self.unexpected(tok, "a string literal as the LIKE pattern")
        pattern = cast(str, tok.value)
        escape: str | None = None
        if self.at_keyword("ESCAPE"):
            self.take()
            etok = self.take()
            if etok.kind != "string":
                raise self.unexpected(etok, "a one-character string literal after ESCAPE")
            escape = cast(str, etok.value)
            if len(escape) != 1:
                raise invalid(
                    self.text,
                    etok.pos,
                    f"the ESCAPE literal must hold exactly one character, not {len(escape)}",
                )
        return Like(ident, pattern, escape, negated, ident.pos)

    def sum(self) -> Node:
        node = self.product()
        while True:
            tok = self.peek()
            if tok.kind != "symbol" or tok.value not in ("+", "-"):
                return node
            self.take()
            right = self.product()
            self.require_arith_operand(node, tok.text)
            self.require_arith_operand(right, tok.text)
            op = cast(Literal["+", "-"], tok.text)
            node = BinaryOp(op, node, right, node.pos)

    def product(self) -> Node:
        node = self.unary()
        while True:
            tok = self.peek()
            if tok.kind != "symbol" or tok.value not in ("*", "/"):
                return node
            self.take()
            right = self.unary()
            self.require_arith_operand(node, tok.text)
            self.require_arith_operand(right, tok.text)
            op = cast(Literal["*", "/"], tok.text)
            node = BinaryOp(op, node, right, node.pos)

    def unary(self) -> Node:
        signs: list[Token] = []
        while True:
            tok = self.peek()
            if tok.kind == "symbol" and tok.value in ("+", "-"):
                signs.append(self.take())
            else:
                break
        tok = self.peek()
        node: Node
        if signs and tok.kind in ("exact", "approx"):
            # Fold the innermost sign into the literal (SEL-17), which is what lets
            # -9223372036854775808 and -2147483648 be written (SEL-14, SEL-47).
            sign = signs.pop()
            self.take()
            node = self.number(tok, negative=sign.value == "-", pos=sign.pos)
        else:
            node = self.primary()
        for sign in reversed(signs):
            self.require_arith_operand(node, f"unary {sign.text}")
            op = cast(Literal["+", "-"], sign.value)
            node = UnaryOp(op, node, sign.pos)
        return node

    def number(self, tok: Token, negative: bool, pos: int) -> Lit:
        if tok.kind == "approx":
            value, is_float = cast(tuple[float, bool], tok.value)
            return Lit(-value if negative else value, "float" if is_float else "double", pos)
        magnitude, has_l = cast(tuple[int, bool], tok.value)
        v = -magnitude if negative else magnitude
        if v > LONG_MAX or v < -LONG_MAX - 1:
            extra = (
                " (9223372036854775808 is only valid right after a unary minus)"
                if magnitude == LONG_MAX + 1
                else ""
            )
            raise invalid(
                self.text, tok.pos, f"numeric literal {tok.text} is outside the long range{extra}"
            )
        typ: Literal["int", "long"] = "int" if not has_l and INT_MIN <= v <= INT_MAX else "long"
        return Lit(v, typ, pos)

    def primary(self) -> Node:
        tok = self.take()
        kind = tok.kind
        if kind == "ident":
            return Identifier(cast(str, tok.value), tok.pos)
        if kind == "exact" or kind == "approx":
            return self.number(tok, negative=False, pos=tok.pos)
        if kind == "string":
            return Lit(cast(str, tok.value), "string", tok.pos)
        if kind == "keyword":
            if tok.value == "TRUE":
                return Lit(True, "boolean", tok.pos)
            if tok.value == "FALSE":
                return Lit(False, "boolean", tok.pos)
            if tok.value == "NULL":
                raise invalid(
                    self.text,
                    tok.pos,
                    "NULL is not a value: it may only appear in 'IS NULL' / 'IS NOT NULL'",
                )
        if kind == "symbol" and tok.value == "(":
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise invalid(
                    self.text, tok.pos, f"parentheses nest more than {MAX_DEPTH} levels deep"
                )
            node = self.or_expr()
            close = self.peek()
            if not (close.kind == "symbol" and close.value == ")"):
                raise self.unexpected(close, "')' or an operator")
            self.take()
            self.depth -= 1
            return node
        expected = "an operand (identifier, literal, TRUE, FALSE or '(')"
        prev = self.tokens[self.i - 2] if self.i >= 2 else None
        if tok.text == "=" and prev is not None and prev.text == "=" and prev.pos + 1 == tok.pos:
            raise invalid(self.text, prev.pos, "'==' is not an operator; use '=' to compare")
        raise self.unexpected(tok, expected)
