"""The driver of the live-server fuzz tests (native: tests/server/test_fuzz_live.py; STOMP:
tests/stomp_gateway/test_fuzz.py; OpenWire: tests/openwire/test_gateway_fuzz.py).

Theory of operation: each test supplies one hostile *connection* (a function of a seeded
``random.Random`` and the port: it connects, sends random bytes, mutated frames and
well-formed frames with random values, and handles the server closing on it as it sees
fit); :func:`run_fuzz` runs it over and over from ``workers`` daemon threads until the run's
time is up, each worker with its own ``random.Random(seed * 1000 + n)``, and fails the test
when a worker raised or hung. :func:`assert_serving` then checks the server outlived it: the
process is alive and its log shows no internal error or traceback. The run lasts
``TERNMQ_FUZZ_SECONDS`` if set (:func:`fuzz_seconds`); the seed is random, printed on
failure (``where``) and fixed with ``TERNMQ_FUZZ_SEED`` (:func:`fuzz_seed`).
"""

from __future__ import annotations

import dataclasses
import os
import random
import threading
import time
from collections.abc import Callable
from typing import Protocol

Connection = Callable[[random.Random, int], None]


def fuzz_seconds(*, ci: float, local: float) -> float:
    """How long a run lasts: ``TERNMQ_FUZZ_SECONDS`` if set, else ``ci`` under CI
    (``CI=true``) and ``local`` otherwise."""
    return float(
        os.environ.get("TERNMQ_FUZZ_SECONDS")
        or (ci if os.environ.get("CI", "").lower() == "true" else local)
    )


def fuzz_seed() -> int:
    """``TERNMQ_FUZZ_SEED`` if set, else a random seed."""
    return int(os.environ.get("TERNMQ_FUZZ_SEED", random.SystemRandom().randrange(2**31)))


@dataclasses.dataclass(frozen=True)
class FuzzRun:
    """What a run did: ``connections`` made in all, and ``where`` to reproduce it."""

    connections: int
    where: str


def run_fuzz(
    connection: Connection, port: int, *, seconds: float, seed: int, workers: int
) -> FuzzRun:
    """Run ``connection`` against ``port`` from ``workers`` threads for ``seconds``.

    Raises:
        AssertionError: a worker raised (its first exceptions named) or hung past the run.
    """
    deadline = time.monotonic() + seconds
    failures: list[str] = []
    counts = [0] * workers

    def worker(n: int) -> None:
        rnd = random.Random(seed * 1000 + n)
        try:
            while time.monotonic() < deadline:
                connection(rnd, port)
                counts[n] += 1
        except BaseException as exc:  # a connect refused would mean the server died
            failures.append(f"worker {n}: {type(exc).__name__}: {exc}")

    # Daemons: a worker stuck past its join could never keep the test process alive.
    threads = [threading.Thread(target=worker, args=(n,), daemon=True) for n in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()) + 30)
    where = f"TERNMQ_FUZZ_SEED={seed}, {sum(counts)} connections"
    assert not any(t.is_alive() for t in threads), f"a fuzz worker hung ({where})"
    assert not failures, f"{failures[:3]} ({where})"
    return FuzzRun(sum(counts), where)


class _Server(Protocol):
    @property
    def proc(self) -> _Process: ...

    def log(self) -> str: ...


class _Process(Protocol):
    def poll(self) -> int | None: ...


def assert_serving(server: _Server, where: str) -> str:
    """Check that ``server`` outlived the fuzz: still running, no ``internal_error`` and no
    ``Traceback`` in its log; answers the log.

    Raises:
        AssertionError: it died or logged an internal error (the lines in the message).
    """
    assert server.proc.poll() is None, f"the server died ({where}):\n{server.log()[-3000:]}"
    log = server.log()
    internal = [ln for ln in log.splitlines() if "internal_error" in ln or "Traceback" in ln]
    assert not internal, f"{where}: " + "\n".join(internal[:5])
    return log
