"""Selector tokens (catalog §5.2, SEL-10…SEL-18).

Tokens are taken longest-first. Whitespace is exactly space, tab, form feed, LF and CR
(SEL-11); identifiers follow Java's rules stated in Unicode general categories (SEL-12);
keywords match ASCII case-insensitively (SEL-10); string literals know only the ``''``
escape (SEL-13); numeric literals follow Java's integer and decimal floating-point syntax
(SEL-14, SEL-15, A-18). Anything else is an :class:`InvalidSelectorException` at its offset.
"""

from __future__ import annotations

import math
import re
import unicodedata
from typing import Final, Literal, NamedTuple

from ternmq.errors import InvalidSelectorException
from ternmq.selector._values import decimal_to_f32

__all__ = ["KEYWORDS", "Token", "TokenKind", "describe", "invalid", "tokenize"]

TokenKind = Literal["ident", "keyword", "string", "exact", "approx", "symbol", "eof"]

KEYWORDS: Final = frozenset(
    {"NOT", "AND", "OR", "BETWEEN", "LIKE", "IN", "IS", "ESCAPE", "NULL", "TRUE", "FALSE"}
)
WHITESPACE: Final = frozenset(" \t\f\n\r")
_SYMBOLS: Final = frozenset("(),=<>+-*/")
_START_CATEGORIES: Final = frozenset({"Lu", "Ll", "Lt", "Lm", "Lo", "Nl", "Sc", "Pc"})
_PART_CATEGORIES: Final = _START_CATEGORIES | {"Nd", "Mn", "Mc", "Cf"}
_ASCII_ID_RUN: Final = re.compile(r"[A-Za-z0-9_$]*")
_DIGITS: Final = frozenset("0123456789")
_HEX_DIGITS: Final = frozenset("0123456789abcdefABCDEF")
_EXCERPT: Final = 24


class Token(NamedTuple):
    """One token: its kind, source text, value and 0-based offset.

    ``value`` is: the name (ident), the upper-case word (keyword), the unescaped text
    (string), ``(magnitude, has_L_suffix)`` (exact), ``(value, is_float)`` (approx), the
    symbol (symbol), ``None`` (eof).
    """

    kind: TokenKind
    text: str
    value: object
    pos: int


def _excerpt(text: str, pos: int) -> str:
    lo = max(0, pos - _EXCERPT)
    hi = min(len(text), pos + _EXCERPT)
    head = ("…" if lo > 0 else "") + text[lo:pos]
    tail = text[pos:hi] + ("…" if hi < len(text) else "")
    return f"{head!r} ⟨here⟩ {tail!r}" if tail else f"{head!r} ⟨here, at the end⟩"


def invalid(text: str, pos: int, problem: str) -> InvalidSelectorException:
    """Build the exception for a selector error at ``pos`` (SEL-07)."""
    return InvalidSelectorException(
        f"invalid message selector at position {pos}: {problem}; near {_excerpt(text, pos)}. "
        "Correct the selector (JMS 2.0 §3.8.1.1 syntax).",
        selector=text,
        position=pos,
    )


def describe(tok: Token) -> str:
    """Name a token for an error message."""
    if tok.kind == "eof":
        return "the end of the selector"
    if tok.kind == "keyword":
        return f"keyword {tok.value}"
    if tok.kind == "ident":
        name = tok.text if len(tok.text) <= 40 else tok.text[:40] + "…"
        return f"identifier {name!r}"
    if tok.kind == "string":
        return "a string literal"
    if tok.kind in ("exact", "approx"):
        return f"number {tok.text}"
    return f"{tok.text!r}"


def _is_start(ch: str) -> bool:
    return unicodedata.category(ch) in _START_CATEGORIES


def _is_part(ch: str) -> bool:
    o = ord(ch)
    if o <= 0x08 or 0x0E <= o <= 0x1B or 0x7F <= o <= 0x9F:
        return True  # Java's identifier-ignorable controls (SEL-12)
    return unicodedata.category(ch) in _PART_CATEGORIES


def _char_name(ch: str) -> str:
    name = unicodedata.name(ch, "")
    return f"{ch!r} (U+{ord(ch):04X}{' ' + name if name else ''})"


def tokenize(text: str) -> list[Token]:
    """Split ``text`` into tokens, ending with an ``eof`` token.

    Raises:
        InvalidSelectorException: on a character that no token allows, an unterminated
            string, or a malformed or out-of-range numeric literal.
    """
    out: list[Token] = []
    n = len(text)
    i = 0
    while i < n:
        ch = text[i]
        if ch in WHITESPACE:
            i += 1
            continue
        if ch == "'":
            i = _string(text, i, out)
        elif ch in _DIGITS or (ch == "." and i + 1 < n and text[i + 1] in _DIGITS):
            i = _number(text, i, out)
        elif ch in _SYMBOLS:
            two = text[i : i + 2]
            if two in ("<>", "<=", ">="):
                out.append(Token("symbol", two, two, i))
                i += 2
            else:
                out.append(Token("symbol", ch, ch, i))
                i += 1
        elif (ch.isascii() and (ch.isalpha() or ch in "_$")) or (
            not ch.isascii() and _is_start(ch)
        ):
            i = _identifier(text, i, out)
        else:
            raise invalid(text, i, _bad_char_problem(text, i))
    out.append(Token("eof", "", None, n))
    return out


def _bad_char_problem(text: str, i: int) -> str:
    ch = text[i]
    if ch == '"':
        return "double quotes do not delimit strings; write string literals in single quotes"
    if text.startswith(("==", "!="), i):
        return f"{text[i : i + 2]!r} is not an operator; use '=' or '<>'"
    if ch.isspace() or unicodedata.category(ch) in ("Zs", "Zl", "Zp", "Cc"):
        return (
            f"unexpected character {_char_name(ch)}; only space, tab, form feed, "
            "line feed and carriage return separate tokens"
        )
    return (
        f"unexpected character {_char_name(ch)}; expected an identifier, a literal, a keyword "
        "or one of ( ) , = <> < <= > >= + - * /"
    )


def _string(text: str, start: int, out: list[Token]) -> int:
    parts: list[str] = []
    i = start + 1
    n = len(text)
    while True:
        j = text.find("'", i)
        if j < 0:
            raise invalid(text, start, "unterminated string literal: expected a closing quote")
        parts.append(text[i:j])
        if j + 1 < n and text[j + 1] == "'":
            parts.append("'")
            i = j + 2
            continue
        out.append(Token("string", text[start : j + 1], "".join(parts), start))
        return j + 1


def _identifier(text: str, start: int, out: list[Token]) -> int:
    n = len(text)
    i = start + 1
    while True:
        m = _ASCII_ID_RUN.match(text, i)
        assert m is not None
        i = m.end()
        if i < n and _is_part(text[i]):
            i += 1
            continue
        break
    word = text[start:i]
    if word.isascii() and len(word) <= 7 and word.upper() in KEYWORDS:
        out.append(Token("keyword", word, word.upper(), start))
    else:
        out.append(Token("ident", word, word, start))
    return i


def _number(text: str, start: int, out: list[Token]) -> int:
    n = len(text)
    i = start
    if text[i] == "0" and i + 1 < n and text[i + 1] in "xX":
        j = i + 2
        while j < n and text[j] in _HEX_DIGITS:
            j += 1
        if j == i + 2:
            raise invalid(
                text, start, "malformed hexadecimal literal: expected hex digits after 0x"
            )
        digits = text[i + 2 : j]
        has_l = j < n and text[j] in "lL"
        end = j + 1 if has_l else j
        out.append(Token("exact", text[start:end], (int(digits, 16), has_l), start))
        return end
    j = i
    while j < n and text[j] in _DIGITS:
        j += 1
    int_end = j
    approx = False
    if j < n and text[j] == ".":
        approx = True
        j += 1
        while j < n and text[j] in _DIGITS:
            j += 1
    if j < n and text[j] in "eE":
        k = j + 1
        if k < n and text[k] in "+-":
            k += 1
        if k >= n or text[k] not in _DIGITS:
            raise invalid(text, j, "malformed exponent: expected digits after E")
        while k < n and text[k] in _DIGITS:
            k += 1
        approx = True
        j = k
    body_end = j
    suffix = ""
    if j < n and text[j] in "fFdD":
        suffix = text[j]
        approx = True
        j += 1
    elif not approx and j < n and text[j] in "lL":
        suffix = text[j]
        j += 1
    literal = text[start:j]
    if approx:
        body = text[start:body_end]
        is_float = suffix in ("f", "F")
        value = decimal_to_f32(body) if is_float else float(body)
        kind = "float" if is_float else "double"
        if math.isinf(value):
            raise invalid(text, start, f"numeric literal {literal} is outside the {kind} range")
        if value == 0.0 and any(c in "123456789" for c in _mantissa(body)):
            raise invalid(text, start, f"numeric literal {literal} is too small for a {kind}")
        out.append(Token("approx", literal, (value, is_float), start))
        return j
    digits = text[start:int_end]
    if len(digits) > 1 and digits[0] == "0":
        if any(c in "89" for c in digits):
            raise invalid(
                text, start, f"malformed octal literal {literal}: digits 8 and 9 are not octal"
            )
        magnitude = _bounded_int(digits[1:], 8)
    else:
        magnitude = _bounded_int(digits, 10)
    out.append(Token("exact", literal, (magnitude, suffix != ""), start))
    return j


def _mantissa(body: str) -> str:
    e = max(body.find("e"), body.find("E"))
    return body if e < 0 else body[:e]


def _bounded_int(digits: str, base: int) -> int:
    """Parse digits; anything far beyond the long range is returned as 2**64 (out of range)."""
    stripped = digits.lstrip("0")
    if len(stripped) > 30:  # also avoids Python's int() digit limit
        return 1 << 64
    return int(stripped or "0", base)
