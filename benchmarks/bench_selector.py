"""Selector evaluation speed: compiled selector vs. a hand-written Python function.

Run: ``.venv/bin/python benchmarks/bench_selector.py``. Prints, for a matching and a
non-matching message, the median evaluations per second over several runs of the compiled
selector's ``matches`` and of the hand-written equivalent, and their ratio; then the
parse + compile cost per distinct selector. Bounded to a few seconds.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from ternmq.selector import Selector, compile_selector

SELECTOR = "region = 'EU' AND amount BETWEEN 100 AND 500 AND NOT kind LIKE 'test%'"
REPEATS = 7
LOOPS = 200_000


class Msg:
    """A message record with the attributes a selector reads."""

    __slots__ = (
        "_properties",
        "jms_correlation_id",
        "jms_delivery_mode",
        "jms_message_id",
        "jms_priority",
        "jms_timestamp",
        "jms_type",
    )

    def __init__(self, properties: dict[str, bool | int | float | str]) -> None:
        self._properties = properties
        self.jms_delivery_mode = 2
        self.jms_priority = 4
        self.jms_message_id = "ID:bench-1"
        self.jms_timestamp = 1_700_000_000_000
        self.jms_correlation_id = None
        self.jms_type = None


def hand_written(m: Msg) -> bool:
    """The selector written by hand, as a careful programmer would (same semantics for
    these property types: NULL-safe, no type coercion)."""
    p = m._properties
    amount = p.get("amount")
    kind = p.get("kind")
    return (
        p.get("region") == "EU"
        and (type(amount) is int or type(amount) is float)
        and 100 <= amount <= 500
        and kind is not None
        and not (type(kind) is str and kind.startswith("test"))
    )


def hand_written_naive(m: Msg) -> bool:
    """The quickest plausible hand-written form: NULL-safe but with no type guards (it
    would raise or coerce on a property of an unexpected type)."""
    p = m._properties
    amount = p.get("amount")
    kind = p.get("kind")
    return (
        p.get("region") == "EU"
        and amount is not None
        and 100 <= amount <= 500
        and not (kind is not None and kind.startswith("test"))
    )


def _messages() -> tuple[Msg, Msg]:
    base: dict[str, bool | int | float | str] = {
        "region": "EU",
        "amount": 250,
        "kind": "prod",
        "customer": "c-1842",
        "weight": 12.5,
        "express": True,
        "items": 3,
        "currency": "EUR",
    }
    other = dict(base, kind="test-run")
    return Msg(base), Msg(other)


def _rate(fn: Callable[[Msg], bool], msg: Msg) -> float:
    """Median evaluations per second of ``fn(msg)`` over REPEATS runs of LOOPS calls."""
    rates = []
    loops = range(LOOPS)
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        for _ in loops:
            fn(msg)
        rates.append(LOOPS / (time.perf_counter() - t0))
    return statistics.median(rates)


def _compile_cost() -> float:
    """Mean seconds to parse and compile one distinct selector (cache bypassed)."""
    texts = [f"{SELECTOR} AND n{i} > {i}" for i in range(200)]
    t0 = time.perf_counter()
    for text in texts:
        Selector(text)
    return (time.perf_counter() - t0) / len(texts)


def main() -> None:
    """Run the benchmark and print the figures."""
    sel = compile_selector(SELECTOR)
    assert sel is not None
    matching, non_matching = _messages()
    assert sel.matches(matching) and hand_written(matching)
    assert not sel.matches(non_matching) and not hand_written(non_matching)
    assert hand_written_naive(matching) and not hand_written_naive(non_matching)
    print(f"selector: {SELECTOR}")
    print(f"median of {REPEATS} runs x {LOOPS} evaluations, 8 properties per message")
    for label, msg in (("matching", matching), ("non-matching", non_matching)):
        compiled = _rate(sel.matches, msg)
        hand = _rate(hand_written, msg)
        naive = _rate(hand_written_naive, msg)
        print(
            f"{label:>13}: compiled {compiled:11,.0f}/s | hand-written {hand:11,.0f}/s "
            f"(ratio {compiled / hand:.2f}) | naive hand-written {naive:11,.0f}/s "
            f"(ratio {compiled / naive:.2f})"
        )
    print(f"parse+compile per distinct selector: {_compile_cost() * 1e6:,.0f} µs")


if __name__ == "__main__":
    main()
