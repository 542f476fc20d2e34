"""Clocks: the broker and the client read time only through one of these.

Time-dependent behaviour (time-to-live, delivery delay, redelivery delay, the expiry reaper)
is tested with :class:`FakeClock`, which moves only when a test advances it and then wakes
whoever waits for a deadline (the embedded broker's timer) synchronously.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol

__all__ = ["Clock", "FakeClock", "SystemClock"]


class Clock(Protocol):
    """A source of wall-clock time in epoch milliseconds."""

    def now_ms(self) -> int:
        """Current time, epoch milliseconds."""
        ...

    def add_listener(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` whenever time jumps (fake clocks only; a no-op otherwise)."""
        ...


class SystemClock:
    """The real clock."""

    def now_ms(self) -> int:
        """Current time, epoch milliseconds."""
        return time.time_ns() // 1_000_000

    def add_listener(self, callback: Callable[[], None]) -> None:
        """Real time does not jump: nothing to do."""


class FakeClock:
    """A clock that moves only when told to (for deterministic tests).

    Args:
        start_ms: the initial time, epoch milliseconds.
    """

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self._now = start_ms
        self._lock = threading.Lock()
        self._listeners: list[Callable[[], None]] = []

    def now_ms(self) -> int:
        """Current fake time, epoch milliseconds."""
        return self._now

    def add_listener(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` after every :meth:`advance`."""
        with self._lock:
            self._listeners.append(callback)

    def advance(self, seconds: float) -> None:
        """Move time forward and run every listener (e.g. the broker's timer) at once.

        Raises:
            ValueError: ``seconds`` is negative.
        """
        if seconds < 0:
            raise ValueError("a clock cannot go backwards")
        with self._lock:
            self._now += round(seconds * 1000)
            listeners = list(self._listeners)
        for callback in listeners:
            callback()
