"""What a wake-up costs here: the figure behind docs/operations.md "CPU affinity".

Two threads hand a turn back and forth through two locks (a blocking ``acquire`` woken by the
other thread's ``release``: the shape of a synchronous send waiting for its reply); two
processes do the same through two pipes. Each pair runs with both sides on one CPU, on two
different CPUs, and where the operating system puts them. Prints the median round trip (two
wake-ups) of --repeat runs of --count round trips.

Run: .venv/bin/python benchmarks/bench_wakeup.py [--count N] [--repeat R]
Needs Linux (``os.sched_setaffinity``) and two CPUs for the "two CPUs" rows.
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time

from _common import cpus


def _pin(cpu: int | None) -> None:
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})  # this thread only (Linux: pid 0 = the caller)


def threads(count: int, mine: int | None, other: int | None) -> float:
    """Median-ready: microseconds per round trip between two threads."""
    ping, pong = threading.Lock(), threading.Lock()
    ping.acquire()
    pong.acquire()
    before = os.sched_getaffinity(0)

    def echo() -> None:
        _pin(other)
        for _ in range(count):
            ping.acquire()
            pong.release()

    t = threading.Thread(target=echo)
    t.start()
    _pin(mine)
    try:
        start = time.perf_counter()
        for _ in range(count):
            ping.release()
            pong.acquire()
        elapsed = time.perf_counter() - start
    finally:
        os.sched_setaffinity(0, before)
        t.join()
    return elapsed / count * 1e6


def processes(count: int, mine: int | None, other: int | None) -> float:
    """Microseconds per round trip between two processes through two pipes."""
    r1, w1 = os.pipe()
    r2, w2 = os.pipe()
    before = os.sched_getaffinity(0)
    pid = os.fork()
    if pid == 0:  # the echo side
        try:
            _pin(other)
            for _ in range(count):
                os.read(r1, 1)
                os.write(w2, b"x")
        finally:
            os._exit(0)
    _pin(mine)
    try:
        start = time.perf_counter()
        for _ in range(count):
            os.write(w1, b"x")
            os.read(r2, 1)
        elapsed = time.perf_counter() - start
    finally:
        os.sched_setaffinity(0, before)
        os.waitpid(pid, 0)
        for fd in (r1, w1, r2, w2):
            os.close(fd)
    return elapsed / count * 1e6


def main(argv: list[str] | None = None) -> None:
    """Print the round trips, median of --repeat runs."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--count", type=int, default=5000, help="round trips per run")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    mine = cpus()
    placements: dict[str, tuple[int | None, int | None]] = {"one CPU": (mine[0], mine[0])}
    if len(mine) > 1:
        placements["two CPUs"] = (mine[0], mine[1])
    placements["not pinned"] = (None, None)
    for kind, fn in (("threads", threads), ("processes", processes)):
        for where, (a, b) in placements.items():
            runs = [fn(args.count, a, b) for _ in range(args.repeat)]
            print(f"{kind:9s} {where:10s} round trip median {statistics.median(runs):6.1f} us")


if __name__ == "__main__":
    main()
