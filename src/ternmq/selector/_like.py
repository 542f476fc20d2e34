"""LIKE patterns compiled to the cheapest test that decides them (catalog SEL-53).

A pattern becomes one of: string equality, ``startswith``, ``endswith``, ``in``, a prefix
and suffix pair, a length test, "any string", a regular expression with at most one
``.*`` (whose matching time is linear in the value per pattern position), or a segment
matcher for patterns with several ``%``: the literal pieces between ``%`` signs have fixed
lengths, so matching the first piece at the start, the last at the end and each middle
piece at its leftmost place decides the match in O(len(value) x len(pattern)) with no
backtracking blow-up, whatever pattern a client sends.

``_`` matches exactly one code point and both wildcards match line terminators (A-17,
V-145, V-146); every other character is literal (``re.escape``); matching is anchored at
both ends (``fullmatch``, not ``$``, so a trailing line feed is not forgiven, V-147). The
escape character before ``_``, ``%`` or itself makes that character literal; before
anything else, or at the end, it has its ordinary meaning (A-16).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

__all__ = ["LikePlan", "plan_like"]

LikeKind = Literal[
    "eq", "any", "prefix", "suffix", "contains", "prefix_suffix", "length", "regex", "segments"
]

_Item = str | None  # one literal character, or None for the '_' wildcard


class _Percent:
    """The '%' wildcard (distinct from a literal '%' written with the escape)."""

    __slots__ = ()


_PCT = _Percent()


@dataclass(frozen=True, slots=True)
class LikePlan:
    """How to test a String against a LIKE pattern.

    ``args`` depends on ``kind``: ``eq``/``prefix``/``suffix``/``contains``: (text,);
    ``prefix_suffix``: (prefix, suffix, min_length); ``length``: (n,); ``regex``: (compiled
    pattern,); ``segments``: (matcher function,); ``any``: ().
    """

    kind: LikeKind
    args: tuple[object, ...]


def _segments(pattern: str, escape: str | None) -> list[list[_Item]]:
    """Split the pattern on its '%' wildcards into pieces of literal characters and '_'."""
    items: list[_Item | _Percent] = []
    i = 0
    n = len(pattern)
    while i < n:
        c = pattern[i]
        if escape is not None and c == escape and i + 1 < n and pattern[i + 1] in ("_", "%", c):
            items.append(pattern[i + 1])  # literal, even when it is '%' or '_'
            i += 2
            continue
        items.append(_PCT if c == "%" else None if c == "_" else c)
        i += 1
    segments: list[list[_Item]] = [[]]
    for it in items:
        if isinstance(it, _Percent):
            segments.append([])
        else:
            segments[-1].append(it)
    return segments


def _regex(items: list[_Item]) -> str:
    return "".join("." if it is None else re.escape(it) for it in items)


def plan_like(pattern: str, escape: str | None) -> LikePlan:
    """Plan the test of a LIKE ``pattern`` with an optional one-character ``escape``."""
    segments = _segments(pattern, escape)
    has_any = any(it is None for seg in segments for it in seg)
    texts = ["".join(it for it in seg if it is not None) for seg in segments]
    if len(segments) == 1:
        seg = segments[0]
        if not has_any:
            return LikePlan("eq", (texts[0],))
        if all(it is None for it in seg):
            return LikePlan("length", (len(seg),))
        return LikePlan("regex", (re.compile(_regex(seg), re.DOTALL),))
    if all(not seg for seg in segments):
        return LikePlan("any", ())
    if not has_any:
        first, last, middle = texts[0], texts[-1], [t for t in texts[1:-1] if t]
        if not middle:
            if not last:
                return LikePlan("prefix", (first,))
            if not first:
                return LikePlan("suffix", (last,))
            return LikePlan("prefix_suffix", (first, last, len(first) + len(last)))
        if not first and not last and len(middle) == 1:
            return LikePlan("contains", (middle[0],))
    if len(segments) == 2:
        rx = _regex(segments[0]) + ".*" + _regex(segments[1])
        return LikePlan("regex", (re.compile(rx, re.DOTALL),))
    return LikePlan("segments", (_segment_matcher(segments),))


_Piece = Callable[[str, int, int], int]


def _piece_finder(seg: list[_Item]) -> tuple[int, _Piece, Callable[[str, int], bool]]:
    """(length, find leftmost in s[lo:hi] -> index or -1, match at index -> bool)."""
    length = len(seg)
    if all(it is not None for it in seg):
        text = "".join(it for it in seg if it is not None)

        def find(s: str, lo: int, hi: int) -> int:
            return s.find(text, lo, hi)

        def at(s: str, i: int) -> bool:
            return s.startswith(text, i)

        return length, find, at
    rx = re.compile(_regex(seg), re.DOTALL)

    def find_rx(s: str, lo: int, hi: int) -> int:
        m = rx.search(s, lo, hi)
        return -1 if m is None else m.start()

    def at_rx(s: str, i: int) -> bool:
        return rx.match(s, i) is not None

    return length, find_rx, at_rx


def _segment_matcher(segments: list[list[_Item]]) -> Callable[[str], bool]:
    """Matcher for ``seg0 % seg1 % … % segk`` (k >= 2)."""
    first_len, _, first_at = _piece_finder(segments[0])
    last_len, _, last_at = _piece_finder(segments[-1])
    middle = [_piece_finder(seg) for seg in segments[1:-1] if seg]
    min_len = first_len + last_len + sum(m[0] for m in middle)

    def match(s: str) -> bool:
        n = len(s)
        if n < min_len or not first_at(s, 0):
            return False
        end = n - last_len
        if not last_at(s, end):
            return False
        pos = first_len
        for length, find, _at in middle:
            i = find(s, pos, end)
            if i < 0:
                return False
            pos = i + length
        return True

    return match
