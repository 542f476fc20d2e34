"""Giving the memory of a drained backlog back to the operating system.

Theory of operation
-------------------
When a backlog drains, the broker drops its messages (and a queue rebuilds its tables,
``MessageQueue._compact``), but the process's resident size does not fall by itself:
CPython hands small objects back to its own arenas and message bytes (large blocks) back to
the C allocator, and glibc's ``malloc`` keeps freed pages in its heaps for reuse. A server
that held a 500 MB backlog once would keep that RSS for ever. ``malloc_trim(0)`` returns the
free pages of every heap to the kernel.

:class:`MemoryReturn` decides when, from two figures the server's periodic sweep reads:
what the broker holds (``Broker.total_bytes`` plus staged bytes, per-copy overhead
included) and the process's resident size. Their difference is the *floor*: what the
process needs besides held messages (code, connections, caches), first taken at start. When
the resident size is more than ``threshold`` above floor plus held, a backlog drained and left
free memory behind: it trims. Memory that a trim could not give back (something the broker
does not count) raises the floor to what is left, so it does not trim again for it; a trim
costs a few milliseconds per GB of heap and runs only after a large drain, never per
message. Where the C library has no ``malloc_trim`` (musl, macOS) or there is no ``/proc``,
it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from collections.abc import Callable
from typing import Final

__all__ = ["TRIM_THRESHOLD", "MemoryReturn", "libc_malloc_trim", "proc_rss"]

TRIM_THRESHOLD: Final = 16 * 1024 * 1024


def libc_malloc_trim() -> Callable[[], None] | None:
    """``malloc_trim(0)`` of the C library as a callable, or None where it has none."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        trim = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int

    def call() -> None:
        trim(0)

    return call


def proc_rss() -> int | None:
    """Resident size of this process, bytes (None without ``/proc``)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return None


_PAGE: Final = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


class MemoryReturn:
    """Trims the C heap when the process holds ``threshold`` bytes more than its floor plus
    what the broker holds (see the module doc).

    Args:
        trim: what gives free memory back (None: nothing can).
        rss: the process's resident size, bytes (None: unknown).
        threshold: how far above floor plus held the resident size may be, bytes.
    """

    def __init__(
        self,
        trim: Callable[[], None] | None,
        rss: Callable[[], int | None],
        threshold: int = TRIM_THRESHOLD,
    ) -> None:
        self._trim = trim
        self._rss = rss
        self.threshold = threshold
        self.floor: int | None = None
        self.trims = 0

    @classmethod
    def for_this_process(cls) -> MemoryReturn:
        """One that reads ``/proc/self/statm`` and calls the C library's ``malloc_trim``."""
        return cls(libc_malloc_trim(), proc_rss)

    def note(self, held: int) -> int | None:
        """The broker holds ``held`` bytes now: trim if the process holds ``threshold`` more
        than its floor plus that. The bytes the trim gave back (None if it did not run)."""
        if self._trim is None:
            return None
        rss = self._rss()
        if rss is None:
            return None
        floor = self.floor
        if floor is None or rss - held < floor:
            self.floor = rss - held
            return None
        if rss - held - floor < self.threshold:
            return None
        self._trim()
        self.trims += 1
        after = self._rss() or rss
        self.floor = max(floor, after - held)  # what a trim cannot give back stays
        return rss - after
