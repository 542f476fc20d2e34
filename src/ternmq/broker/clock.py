"""Clocks: the broker and the client read time only through one of these.

Theory of operation
-------------------
A :class:`Clock` answers two questions: what time it is (:meth:`Clock.now_ms`), and how long
a host should sleep before the work due at some deadline (:meth:`Clock.sleep_time`, the
model is trio's ``Clock.deadline_to_sleep_time``). The broker host (``broker/host.py``)
arms its timer with the second answer and never asks which clock it has.

:class:`SystemClock` is real time: the answer is the time left until the deadline. A fake
clock for tests (:class:`ternmq.testing.FakeClock`) answers "never on your own" (infinity)
and calls its listeners (:meth:`Clock.add_listener`) whenever a test advances it; the host
then runs the due work at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

__all__ = ["Clock", "SystemClock"]


class Clock(Protocol):
    """A source of wall-clock time in epoch milliseconds."""

    def now_ms(self) -> int:
        """Current time, epoch milliseconds."""
        ...

    def add_listener(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` whenever time jumps (fake clocks only; a no-op otherwise)."""
        ...

    def sleep_time(self, deadline_ms: int) -> float:
        """Seconds a host should sleep before running the work due at ``deadline_ms``
        (epoch ms): 0 once it is due; ``math.inf`` if the host must not wake on its own
        because this clock calls its listeners when it moves (a fake clock)."""
        ...


class SystemClock:
    """The real clock."""

    def now_ms(self) -> int:
        """Current time, epoch milliseconds."""
        return time.time_ns() // 1_000_000

    def add_listener(self, callback: Callable[[], None]) -> None:
        """Real time does not jump: nothing to do."""

    def sleep_time(self, deadline_ms: int) -> float:
        """The seconds left until ``deadline_ms`` (0 once it has passed)."""
        return max(0.0, (deadline_ms - self.now_ms()) / 1000)
