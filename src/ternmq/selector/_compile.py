"""Selectors compiled to Python functions (catalog §5.6).

Theory of operation. A selector matches only when it is TRUE (SEL-55), so instead of
computing three-valued results the generator emits, for every condition node, a plain
Python boolean expression that is true exactly when the node is TRUE, or exactly when it
is FALSE, depending on the polarity the parent needs::

    is_true(NOT e)   = is_false(e)          is_false(NOT e)   = is_true(e)
    is_true(a AND b) = is_true(a) and …     is_false(a AND b) = is_false(a) or …
    is_true(a OR b)  = is_true(a) or …      is_false(a OR b)  = is_false(a) and …

Each node is needed in one polarity only (it has one parent), and UNKNOWN is simply
"neither". Leaves that involve an identifier and constants become inline Python tests on
the raw property value (string equality, ``startswith``, frozenset membership, numeric
comparison guarded by an exact ``type()`` check, since ``bool`` is an ``int`` in Python).
Leaves whose outcome depends on the JMS width of a value (arithmetic, two identifiers, a
float literal, an integer a binary32 cannot hold) go through the typed helpers of
``_values``, which state Java's rules once. Constant sub-expressions are folded with the
reference evaluator.

The generated function reads ``message._properties`` once and each identifier once.
Identifier names and string literals enter the source only through ``repr()``; every
other constant (frozensets, compiled patterns, typed tuples, non-finite floats) is passed
in as an argument of the factory function, i.e. through the closure. The body runs inside
``try``/``except Exception`` (free in Python 3.11 when nothing is raised) so that no input,
even one outside the message contract, can make evaluation raise (SEL-09).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Final

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
from ternmq.selector._evaluate import HEADER_FIELDS, evaluate, value_of
from ternmq.selector._like import plan_like
from ternmq.selector._target import SelectorTarget
from ternmq.selector._values import (
    Err,
    Value,
    arith,
    compare,
    int_to_f32,
    negate,
    plus,
    typed_property,
)

__all__ = ["generate"]

Predicate = Callable[[SelectorTarget], bool]

_MIRROR: Final = {"=": "=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_PYOP: Final = {"=": "==", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}

# Names the generated code may use besides its own locals and constants.
_GLOBALS: Final[dict[str, object]] = {
    "__builtins__": {},
    "type": type,
    "float": float,
    "len": len,
    "getattr": getattr,
    "str": str,
    "int": int,
    "Exception": Exception,
}


def _between(x: Value, lo: Value, hi: Value, negated: bool) -> bool | None:
    """BETWEEN through its expansion (SEL-51), for operands that are not identifiers."""
    if negated:
        a, b = compare("<", x, lo), compare(">", x, hi)
        if a is True or b is True:
            return True
        return None if a is None or b is None else False
    a, b = compare(">=", x, lo), compare("<=", x, hi)
    if a is False or b is False:
        return False
    return None if a is None or b is None else True


def _no_lookup(name: str) -> Value:
    raise AssertionError(f"constant folding met identifier {name!r}")


_HELPERS: Final[dict[str, object]] = {
    "_cmp": compare,
    "_arith": arith,
    "_neg": negate,
    "_pos": plus,
    "_tp": typed_property,
    "_btw": _between,
    "_i2f": int_to_f32,
}


def _join(parts: list[str], op: str) -> str:
    """Join boolean code with ``and``/``or``, folding the constants True and False."""
    identity, absorbing = ("True", "False") if op == "and" else ("False", "True")
    out: list[str] = []
    for p in parts:
        if p == absorbing:
            return absorbing
        if p != identity:
            out.append(p)
    if not out:
        return identity
    if len(out) == 1:
        return out[0]
    return "(" + f" {op} ".join(out) + ")"


class _Codegen:
    def __init__(self) -> None:
        self.params: list[str] = []
        self.args: list[object] = []
        self.raw_vars: dict[str, str] = {}
        self.typed_vars: dict[str, str] = {}
        self.const_memo: dict[int, bool] = {}

    # -- constants and variables ---------------------------------------------------------

    def closure(self, value: object) -> str:
        name = f"_k{len(self.args)}"
        self.params.append(name)
        self.args.append(value)
        return name

    def literal(self, value: object) -> str:
        """Source for a constant: repr() for str, bool, int and finite float."""
        t = type(value)
        if t is str or t is bool or t is int or (t is float and math.isfinite(value)):  # type: ignore[arg-type]
            text = repr(value)
            return f"({text})" if text.startswith("-") else text
        return self.closure(value)

    def raw(self, name: str) -> str:
        var = self.raw_vars.get(name)
        if var is None:
            var = self.raw_vars[name] = f"v{len(self.raw_vars)}"
        return var

    def typed(self, name: str) -> str:
        self.raw(name)
        var = self.typed_vars.get(name)
        if var is None:
            var = self.typed_vars[name] = f"t{len(self.typed_vars)}"
        return var

    def prologue(self) -> list[str]:
        lines: list[str] = []
        if any(name not in HEADER_FIELDS for name in self.raw_vars):
            lines.append("_p = message._properties")
        for name, var in self.raw_vars.items():
            if name == "JMSDeliveryMode":
                lines.append(
                    f"{var} = 'NON_PERSISTENT' if message.jms_delivery_mode == 1 else 'PERSISTENT'"
                )
            elif name == "JMSPriority":
                lines.append(f"{var} = message.jms_priority")
            elif name == "JMSTimestamp":
                lines.append(f"{var} = message.jms_timestamp")
            elif name in HEADER_FIELDS:
                attr = {
                    "JMSMessageID": "jms_message_id",
                    "JMSCorrelationID": "jms_correlation_id",
                    "JMSType": "jms_type",
                }[name]
                lines.append(f"{var} = message.{attr}")
                lines.append(f"if type({var}) is not str: {var} = None")  # bytes ID: A-26
            else:
                lines.append(f"{var} = _p.get({name!r})")
        if any(name not in HEADER_FIELDS for name in self.typed_vars):
            lines.append("_tm = getattr(message, '_property_types', None)")
        for name, var in self.typed_vars.items():
            raw = self.raw_vars[name]
            if name == "JMSPriority":
                lines.append(f"{var} = ('int', {raw})")
            elif name == "JMSTimestamp":
                lines.append(f"{var} = ('long', {raw})")
            elif name in HEADER_FIELDS:
                lines.append(f"{var} = None if {raw} is None else ('string', {raw})")
            else:
                lines.append(f"{var} = _tp({raw}, _tm, {name!r})")
        return lines

    # -- constant folding ---------------------------------------------------------------

    def is_const(self, node: Node) -> bool:
        key = id(node)
        known = self.const_memo.get(key)
        if known is not None:
            return known
        if isinstance(node, Identifier | InList | Like | IsNull):
            result = False
        elif isinstance(node, Lit):
            result = True
        elif isinstance(node, UnaryOp | Not):
            result = self.is_const(node.operand)
        elif isinstance(node, BinaryOp | Comparison):
            result = self.is_const(node.left) and self.is_const(node.right)
        elif isinstance(node, Between):
            result = all(self.is_const(n) for n in (node.operand, node.low, node.high))
        else:
            result = all(self.is_const(n) for n in node.operands)
        self.const_memo[key] = result
        return result

    # -- conditions ------------------------------------------------------------------------

    def cond(self, node: Node, want: bool) -> str:
        """Python code that is true exactly when ``node`` evaluates to ``want``."""
        if self.is_const(node):
            return "True" if evaluate(node, None) is want else "False"
        if isinstance(node, Not):
            return self.cond(node.operand, not want)
        if isinstance(node, And):
            parts = [self.cond(op, want) for op in node.operands]
            return _join(parts, "and" if want else "or")
        if isinstance(node, Or):
            parts = [self.cond(op, want) for op in node.operands]
            return _join(parts, "or" if want else "and")
        if isinstance(node, Identifier):  # SEL-50: a boolean is itself, NULL unknown
            v = self.raw(node.name)
            return f"{v} is True" if want else f"({v} is not None and {v} is not True)"
        if isinstance(node, IsNull):
            v = self.raw(node.identifier.name)
            return f"{v} is None" if want != node.negated else f"{v} is not None"
        if isinstance(node, InList):
            return self.in_list(node, want)
        if isinstance(node, Like):
            return self.like(node, want)
        if isinstance(node, Comparison):
            return self.comparison(node.op, node.left, node.right, want)
        if isinstance(node, Between):
            return self.between(node, want)
        raise AssertionError(f"not a condition: {node!r}")  # excluded by the parser (S1)

    def in_list(self, node: InList, want: bool) -> str:
        v = self.raw(node.identifier.name)
        values = frozenset(node.values)
        if len(values) == 1:
            c = self.literal(next(iter(values)))
            is_in, not_in = f"{v} == {c}", f"{v} != {c}"
        else:
            k = self.closure(values)
            is_in, not_in = f"{v} in {k}", f"{v} not in {k}"
        if want != node.negated:  # IN is TRUE / NOT IN is FALSE
            return is_in
        return f"({v} is not None and {not_in})"  # SEL-52: non-String -> IN is FALSE

    def like(self, node: Like, want: bool) -> str:
        v = self.raw(node.identifier.name)
        plan = plan_like(node.pattern, node.escape)
        kind, args = plan.kind, plan.args
        if kind == "eq":
            c = self.literal(args[0])
            true_code, test = f"{v} == {c}", f"{v} == {c}"
        else:
            if kind == "any":
                test = "True"
            elif kind == "prefix":
                test = f"{v}.startswith({self.literal(args[0])})"
            elif kind == "suffix":
                test = f"{v}.endswith({self.literal(args[0])})"
            elif kind == "contains":
                test = f"{self.literal(args[0])} in {v}"
            elif kind == "prefix_suffix":
                a, b, n = (self.literal(x) for x in args)
                test = f"(len({v}) >= {n} and {v}.startswith({a}) and {v}.endswith({b}))"
            elif kind == "length":
                test = f"len({v}) == {self.literal(args[0])}"
            elif kind == "regex":
                pattern = args[0]
                assert isinstance(pattern, re.Pattern)
                test = f"{self.closure(pattern.fullmatch)}({v}) is not None"
            else:
                test = f"{self.closure(args[0])}({v})"
            true_code = f"(type({v}) is str and {test})"
        if want != node.negated:  # LIKE is TRUE / NOT LIKE is FALSE
            return true_code
        # LIKE is FALSE: a non-NULL value that is not a String or does not match (SEL-53).
        return f"({v} is not None and (type({v}) is not str or not {test}))"

    def comparison(self, op: str, left: Node, right: Node, want: bool) -> str:
        if isinstance(left, Identifier) and self.is_const(right):
            return self.compare_const(left, op, value_of(right, _no_lookup), want)
        if isinstance(right, Identifier) and self.is_const(left):
            return self.compare_const(right, _MIRROR[op], value_of(left, _no_lookup), want)
        call = f"_cmp({op!r}, {self.value(left)}, {self.value(right)})"
        return f"({call} is {want})"

    def numeric_test(self, v: str, op: str, c: Value) -> str | None:
        """Inline test of ``v op c`` for a numeric ``v`` when Python's comparison gives
        Java's answer whatever the width of ``v``; None when it does not."""
        if c is None or isinstance(c, Err):
            return None
        tag, val = c
        if tag in ("int", "long") and int_to_f32(val) == val:  # type: ignore[arg-type]
            # Exact in binary32 and binary64: promotion cannot change the outcome.
            return f"{v} {_PYOP[op]} {self.literal(val)}"
        if tag == "double":
            # Promotion to double: a long beyond 2**53 must be rounded first (V-067).
            return f"float({v}) {_PYOP[op]} {self.literal(val)}"
        return None

    def compare_const(self, ident: Identifier, op: str, c: Value, want: bool) -> str:
        v = self.raw(ident.name)
        if c is None:
            return "False"  # NULL operand: UNKNOWN (SEL-40)
        if isinstance(c, Err):
            return "False" if want else f"{v} is not None"  # SEL-48
        tag, val = c
        true_code: str | None = None
        if tag == "string" and op in ("=", "<>"):
            lit = self.literal(val)
            true_code = f"{v} == {lit}" if op == "=" else f"(type({v}) is str and {v} != {lit})"
        elif tag == "boolean" and op in ("=", "<>"):
            true_code = f"{v} is {bool(val) == (op == '=')}"
        elif tag in ("string", "boolean"):
            true_code = "False"  # ordering of Strings/booleans is FALSE (SEL-42)
        else:
            test = self.numeric_test(v, op, c)
            if test is not None:
                true_code = f"((type({v}) is int or type({v}) is float) and {test})"
        if true_code is None:
            t = self.typed(ident.name)
            call = f"_cmp({op!r}, {t}, {self.closure(c)})"
            return f"({call} is {want})"
        if want:
            return true_code
        # The constant is not NULL, so the comparison is UNKNOWN only for a NULL value.
        return f"({v} is not None and not {true_code})"

    def between(self, node: Between, want: bool) -> str:
        x, lo, hi = node.operand, node.low, node.high
        if isinstance(x, Identifier):
            if self.is_const(lo) and self.is_const(hi):
                fast = self.between_fast(x, node, want)
                if fast is not None:
                    return fast
            # SEL-51: exactly the expansion, built from the comparison leaves.
            if node.negated:
                a, b = self.comparison("<", x, lo, want), self.comparison(">", x, hi, want)
                return _join([a, b], "or" if want else "and")
            a, b = self.comparison(">=", x, lo, want), self.comparison("<=", x, hi, want)
            return _join([a, b], "and" if want else "or")
        call = f"_btw({self.value(x)}, {self.value(lo)}, {self.value(hi)}, {node.negated})"
        return f"({call} is {want})"

    def between_fast(self, x: Identifier, node: Between, want: bool) -> str | None:
        v = self.raw(x.name)
        lo = value_of(node.low, _no_lookup)
        hi = value_of(node.high, _no_lookup)
        if node.negated:
            a, b = self.numeric_test(v, "<", lo), self.numeric_test(v, ">", hi)
            if a is None or b is None:
                return None
            test = f"({a} or {b})"
        else:
            a, b = self.numeric_test(v, ">=", lo), self.numeric_test(v, "<=", hi)
            if a is None or b is None:
                return None
            test = f"{a} and {b}"
        true_code = f"((type({v}) is int or type({v}) is float) and {test})"
        return true_code if want else f"({v} is not None and not {true_code})"

    # -- typed values -------------------------------------------------------------------------

    def value(self, node: Node) -> str:
        """Python code computing the typed value of an arithmetic operand."""
        if self.is_const(node):
            return self.closure(value_of(node, _no_lookup))
        if isinstance(node, Identifier):
            return self.typed(node.name)
        if isinstance(node, UnaryOp):
            fn = "_neg" if node.op == "-" else "_pos"
            return f"{fn}({self.value(node.operand)})"
        if isinstance(node, BinaryOp):
            return f"_arith({node.op!r}, {self.value(node.left)}, {self.value(node.right)})"
        raise AssertionError(f"not a value: {node!r}")  # excluded by the parser (S2, S3)


def generate(ast: Node) -> tuple[Predicate, str]:
    """Generate the predicate for a parsed selector; returns it and its Python source."""
    gen = _Codegen()
    body = gen.cond(ast, True)
    params = [*_HELPERS, *gen.params]
    lines = [
        f"def _factory({', '.join(params)}):",
        "    def matches(message):",
        "        try:",
        *(f"            {line}" for line in gen.prologue()),
        f"            return {body}",
        "        except Exception:",
        "            return False",
        "    return matches",
    ]
    source = "\n".join(lines) + "\n"
    namespace: dict[str, object] = {}
    exec(compile(source, "<selector>", "exec"), dict(_GLOBALS), namespace)
    factory = namespace["_factory"]
    assert callable(factory)
    fn: Predicate = factory(*_HELPERS.values(), *gen.args)
    return fn, source
