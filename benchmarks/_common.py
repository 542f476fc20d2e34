"""Pieces shared by the end-to-end benchmarks."""

from __future__ import annotations

import os
import socket
import threading
import time

import ternmq
from ternmq import ConnectionFactory, Queue, Session, Topic

BODY = "x" * 256  # the 256-byte TextMessage body every throughput figure uses
LIMIT_S = 60.0  # no run waits longer than this for its messages


def free_port() -> int:
    """A loopback TCP port nobody listens on right now (for ``--http-port``)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def variant() -> str:
    """Which ternmq a benchmark measures: its location and the modules that run compiled
    (mypyc: a wheel built with TERNMQ_MYPYC=1) or "pure Python"."""
    mods = ternmq.compiled()
    return f"ternmq from {os.path.dirname(ternmq.__file__)}: " + (
        f"compiled {', '.join(mods)}" if mods else "pure Python"
    )


def consume(
    factory: ConnectionFactory,
    dest: Queue | Topic,
    count: int,
    ready: threading.Event,
    done: list[float],
    mode: int = Session.AUTO_ACKNOWLEDGE,
) -> None:
    """Receive ``count`` messages (or give up after LIMIT_S), then append the finish time."""
    with factory.create_connection() as conn:
        consumer = conn.create_session(False, mode).create_consumer(dest)
        conn.start()
        ready.set()
        deadline = time.monotonic() + LIMIT_S
        got = 0
        while got < count and time.monotonic() < deadline:
            if consumer.receive(1.0) is not None:
                got += 1
        done.append(time.perf_counter())


def cpus() -> list[int]:
    """The CPUs this process may run on, in order."""
    return sorted(os.sched_getaffinity(0))


def pin_self(cpu: int) -> None:
    """Run this process (its threads started from now on) on ``cpu`` only: with ``--pin``
    the benchmarks measure ternmq as docs/operations.md "CPU affinity" deploys it."""
    os.sched_setaffinity(0, {cpu})
