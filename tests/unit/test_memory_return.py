"""When the server gives the C heap back to the system (``server/_memory.py``)."""

from __future__ import annotations

import platform

from ternmq.server._memory import MemoryReturn, libc_malloc_trim, proc_rss

MB = 1024 * 1024


class _Process:
    """A fake process: its RSS, and how much of it a trim can give back."""

    def __init__(self, rss: int) -> None:
        self.rss = rss
        self.freeable = 0
        self.trims = 0

    def trim(self) -> None:
        self.trims += 1
        self.rss -= self.freeable
        self.freeable = 0


def test_trims_when_rss_is_well_above_floor_plus_held() -> None:
    p = _Process(40 * MB)
    mr = MemoryReturn(p.trim, lambda: p.rss, threshold=32 * MB)
    assert mr.note(0) is None and mr.floor == 40 * MB  # the floor, at start
    p.rss += 100 * MB  # a backlog of 100 MB held: nothing to give back
    assert mr.note(100 * MB) is None
    p.freeable = 90 * MB  # drained; its memory is free but still resident
    assert mr.note(0) == 90 * MB
    assert (p.trims, p.rss, mr.floor) == (1, 50 * MB, 50 * MB)
    assert mr.note(0) is None  # nothing more to give back: no trim per sweep


def test_memory_a_trim_cannot_return_raises_the_floor() -> None:
    p = _Process(40 * MB)
    mr = MemoryReturn(p.trim, lambda: p.rss, threshold=32 * MB)
    mr.note(0)
    p.rss += 50 * MB  # not counted by the broker (e.g. connections), not freeable
    assert mr.note(0) == 0
    assert mr.floor == 90 * MB
    assert mr.note(0) is None and p.trims == 1


def test_without_malloc_trim_or_proc_nothing_is_done() -> None:
    assert MemoryReturn(None, lambda: 10**9).note(0) is None
    p = _Process(0)
    assert MemoryReturn(p.trim, lambda: None).note(0) is None
    assert p.trims == 0


def test_glibc_linux_has_what_it_needs() -> None:
    """On glibc the trim is found (elsewhere, e.g. musl, it may be missing: None)."""
    trim = libc_malloc_trim()
    if platform.libc_ver()[0] == "glibc":
        assert trim is not None
        trim()
        rss = proc_rss()
        assert rss is not None and rss > MB
