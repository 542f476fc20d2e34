"""The compiled selector object and the cached entry point (catalog SEL-04…SEL-08)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Final

from ternmq.selector._ast import Identifier, Node
from ternmq.selector._compile import generate
from ternmq.selector._parser import parse
from ternmq.selector._target import DELIVERY_COUNT, SelectorTarget

__all__ = ["CACHE_SIZE", "Selector", "compile_selector", "is_blank"]

CACHE_SIZE: Final = 1024
"""How many distinct selector strings :func:`compile_selector` keeps compiled (LRU)."""

_WHITESPACE: Final = " \t\f\n\r"  # SEL-11; str.isspace() is the wrong test

_MATCHES_DOC: Final = """Whether the message matches: True only when the selector is TRUE.

FALSE and UNKNOWN are both non-matches (SEL-55). Never raises (SEL-09).
"""


class Selector:
    """A parsed and compiled message selector.

    Attributes:
        text: the selector exactly as given (SEL-62).
        ast: the syntax tree (:mod:`ternmq.selector` node classes).
        source: the generated Python source of :attr:`matches`, for debugging.
        matches: ``matches(message) -> bool`` (a plain function, so a call costs no method
            binding): True only when the selector evaluates to TRUE for ``message``, a
            :class:`~ternmq.selector.SelectorTarget`; never raises.
        reads_delivery_count: whether it names ``JMSXDeliveryCount``, which the broker sets
            per delivery (:func:`~ternmq.selector.with_delivery_count`).

    Build one with :func:`compile_selector`, which caches by text.
    """

    __slots__ = ("ast", "matches", "reads_delivery_count", "source", "text")

    text: str
    ast: Node
    source: str
    matches: Callable[[SelectorTarget], bool]
    reads_delivery_count: bool

    def __init__(self, text: str) -> None:
        """Parse and compile ``text``.

        Raises:
            InvalidSelectorException: the selector is invalid (see :func:`parse`); this
                includes an empty or blank text, which :func:`compile_selector` maps to
                "no selector" instead.
            TypeError: ``text`` is not a ``str``.
        """
        self.text = text
        self.ast = parse(text)
        fn, self.source = generate(self.ast)
        fn.__doc__ = _MATCHES_DOC
        fn.__qualname__ = "Selector.matches"
        self.matches = fn
        self.reads_delivery_count = DELIVERY_COUNT in _identifiers(self.ast)

    def __repr__(self) -> str:
        return f"Selector({self.text!r})"


def _identifiers(node: Node) -> set[str]:
    """The names of every identifier in the tree under ``node``."""
    out: set[str] = set()
    stack: list[object] = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, Identifier):
            out.add(n.name)
        elif dataclasses.is_dataclass(n):
            for f in dataclasses.fields(n):
                value = getattr(n, f.name)
                stack.extend(value if isinstance(value, (list, tuple)) else [value])
    return out


@functools.lru_cache(maxsize=CACHE_SIZE)
def _compile_cached(text: str) -> Selector:
    return Selector(text)


def is_blank(text: str | None) -> bool:
    """Whether ``text`` means "no selector": None, empty, or only whitespace (SEL-04,
    A-21; whitespace as SEL-11 defines it). Never raises for str or None."""
    return text is None or text.strip(_WHITESPACE) == ""


def compile_selector(text: str | None) -> Selector | None:
    """Compile a message selector, or return None when there is none.

    ``None``, ``""`` and a text of only whitespace (space, tab, form feed, LF, CR) mean
    "no selector" (SEL-04, A-21) and give None: every message qualifies. Otherwise the text
    is parsed and checked once (SEL-06, SEL-08) and compiled to a predicate; results are
    cached by text in a bounded LRU cache of :data:`CACHE_SIZE` entries, so the same string
    yields the same :class:`Selector`.

    Raises:
        InvalidSelectorException: the selector is not valid; ``position`` holds the 0-based
            offset of the problem, ``selector`` the text, and the message says what was
            expected there (SEL-07).
        TypeError: ``text`` is neither a ``str`` nor None.
    """
    if text is None:
        return None
    if not isinstance(text, str):
        raise TypeError(f"a message selector is a str or None, not {type(text).__name__}")
    if text.strip(_WHITESPACE) == "":
        return None
    return _compile_cached(text)
