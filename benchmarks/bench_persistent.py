"""Persistent-message throughput on the durable embedded store (SQLite WAL, group commit).

Scenarios (256-byte TextMessages, PERSISTENT, one queue, an embedded broker on a data dir):
  disk          raw fsync rate where the data dir lives: write 4 KiB + fsync in a loop, ~1 s
                (appending + os.fsync; and rewriting in place + os.fdatasync, as SQLite does
                once its log is reused: the faster case)
  sqlite        a bare SQLite loop there, one 256-byte row per commit (WAL, synchronous=FULL),
                ~1 s: what one store commit costs without ternmq around it
  P producers   P = 1, 8, 64 threads, each with its own connection, session and producer,
                synchronous send (it returns once the message is durable); nobody consumes
  1 -> 1        1 producer -> 1 consumer on another thread, CLIENT_ACKNOWLEDGE every 100
                messages; messages/s from the first send to the last receive
  1 -> 1 AUTO   the same with AUTO_ACKNOWLEDGE: each message is acknowledged as it is
                received, so with dispatch_hold (the default) its write is cancelled
each with fsync="always" (durable before every receipt) and fsync="batch" (log fsync at most
every --interval s: a power loss can lose that much), plus one reference row: 64 producers
sending NON_PERSISTENT, i.e. the same path without the store.

Columns:
  msg/s         median of --repeat runs (min and max beside it)
  commits/msg   store transactions per message (store.commits / messages); with
                fsync="always" each commit is one fsync of SQLite's log (WAL checkpoints add
                a few more: about 1.12 fsyncs per commit at 64 producers under strace)
  fsyncs/msg    "always": = commits/msg; "batch": the store's own timed log fsyncs per message
  msgs/commit   the group-commit factor (1 / commits/msg)

Run: .venv/bin/python benchmarks/bench_persistent.py [--count N] [--seconds S] [--repeat R]
     [--dir PARENT] [--producers 1,8,64] [--modes always,batch] [--pin] [--idle 0,250,1000]
--idle probes the disk (rewrite + fdatasync) and the bare SQLite commit again with a sleep of
that many microseconds before each one, as a server's loop waits for its next request, and
prints the cost of one write; on the development VM a commit after an idle wait costs about
twice what it costs in a tight loop (docs/performance.md, "A commit after an idle wait").
`--producers "" --modes ""` runs the probes only.
--pin runs this process (producers, embedded broker, store writer) on one CPU: the GIL runs
one thread at a time anyway, and a wake-up across CPUs costs ~20 us on a 2-vCPU VM against
~5 us on the same CPU (docs/operations.md "CPU affinity").
A run stops after --count messages or --seconds, whichever comes first, so the default
settings finish in under 2 minutes whatever the disk (about 75 s on the development VM).
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import sqlite3
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from _common import cpus, pin_self
from ternmq import ConnectionFactory, DeliveryMode, EmbeddedBroker, Queue, Session

BODY = "x" * 256
FSYNC_PROBE_S = 1.0
DRAIN_LIMIT_S = 30.0  # 1 -> 1: how long the consumer may take to catch up after the producer


@dataclass
class Run:
    """One measured run."""

    messages: int
    seconds: float
    commits: int
    syncs: int

    @property
    def rate(self) -> float:
        return self.messages / self.seconds if self.seconds > 0 else 0.0


def fsync_rate(
    parent: str, seconds: float = FSYNC_PROBE_S, overwrite: bool = False, idle: float = 0.0
) -> float:
    """Raw fsyncs/s of the filesystem holding ``parent``: write 4 KiB + fsync in a loop.

    ``overwrite=False`` appends and calls ``os.fsync`` (the file grows, so its metadata is
    synced too); ``overwrite=True`` rewrites 256 preallocated blocks and calls
    ``os.fdatasync``, which is what SQLite does once its log is reused after a checkpoint.
    ``idle``: sleep that many seconds before each write (a server waiting for its next
    request); the rate counts the writes' own time only."""
    probe = tempfile.mkdtemp(prefix="fsync-probe-", dir=parent)
    fd = os.open(os.path.join(probe, "probe"), os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        block = os.urandom(4096)
        sync = os.fsync
        if overwrite:
            os.write(fd, bytes(4096 * 256))
            os.fsync(fd)
            sync = os.fdatasync
        n = 0
        busy = 0.0
        start = time.perf_counter()
        while True:
            if idle:
                time.sleep(idle)
            began = time.perf_counter()
            if overwrite:
                os.pwrite(fd, block, (n % 256) * 4096)
            else:
                os.write(fd, block)
            sync(fd)
            n += 1
            now = time.perf_counter()
            busy += now - began
            if now - start >= seconds:
                return n / busy
    finally:
        os.close(fd)
        shutil.rmtree(probe, ignore_errors=True)


def sqlite_commit_rate(
    parent: str, seconds: float = FSYNC_PROBE_S, idle: float = 0.0
) -> tuple[float, float]:
    """A bare SQLite loop where the data dir lives: one 256-byte row per transaction (WAL,
    ``synchronous=FULL``, as the store's ``fsync="always"``), for ``seconds``. Returns
    (commits/s, CPU microseconds per commit, user + system): the floor of a store commit
    without ternmq around it. ``idle``: sleep that many seconds before each commit; the
    figures count the commits' own time only."""
    probe = tempfile.mkdtemp(prefix="sqlite-probe-", dir=parent)
    db = sqlite3.connect(os.path.join(probe, "probe.db"), isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        db.execute("CREATE TABLE m(dest TEXT, seq INTEGER, data BLOB, PRIMARY KEY(dest, seq))")
        body = os.urandom(256)
        insert = "INSERT INTO m VALUES('queue://probe', ?, ?)"
        for n in range(100):  # warm up: the table's first pages exist
            db.execute(insert, (n, body))
        n = 100
        busy = used = 0.0
        start = time.perf_counter()
        while True:
            if idle:
                time.sleep(idle)
            cpu = time.thread_time()
            began = time.perf_counter()
            db.execute(insert, (n, body))
            n += 1
            now = time.perf_counter()
            busy += now - began
            used += time.thread_time() - cpu
            if now - start >= seconds:
                return (n - 100) / busy, used / (n - 100) * 1e6
    finally:
        db.close()
        shutil.rmtree(probe, ignore_errors=True)


class _Broker:
    """An embedded broker on a fresh data dir under ``parent``, counting the store's fsyncs."""

    def __init__(self, parent: str, fsync: str, interval: float) -> None:
        self.dir = tempfile.mkdtemp(prefix="bench-store-", dir=parent)
        self.embedded = EmbeddedBroker(
            f"bench-p-{uuid.uuid4().hex[:8]}", self.dir, fsync=fsync, fsync_interval=interval
        ).start()
        self.store: Any = cast(Any, self.embedded.broker).store
        self.syncs = 0
        original = getattr(self.store, "_sync_log", None)
        if original is not None:  # the timed log fsync of fsync="batch"

            def counted() -> None:
                self.syncs += 1
                original()

            self.store._sync_log = counted  # instance attribute: this store only
        self.factory = ConnectionFactory(self.embedded.url)

    def counters(self) -> tuple[int, int]:
        return getattr(self.store, "commits", 0), self.syncs

    def close(self) -> None:
        self.embedded.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def run_producers(
    parent: str,
    fsync: str,
    interval: float,
    producers: int,
    count: int,
    limit_s: float,
    mode: int = DeliveryMode.PERSISTENT,
) -> Run:
    """``producers`` threads, each on its own connection, sending synchronously to one queue
    (``count`` messages in all, or ``limit_s`` seconds); nobody consumes."""
    b = _Broker(parent, fsync, interval)
    try:
        q = Queue("bench")
        conns = [b.factory.create_connection() for _ in range(producers)]
        sessions = [conn.create_session(False, Session.AUTO_ACKNOWLEDGE) for conn in conns]
        prods = [s.create_producer(q) for s in sessions]
        msgs = [s.create_text_message(BODY) for s in sessions]
        for p, m in zip(prods, msgs, strict=True):
            p.delivery_mode = mode
            p.send(m)  # warm-up: the queue exists, every connection has been through once
        share = max(1, count // producers)
        sent = [0] * producers
        gate = threading.Barrier(producers + 1)
        deadline = [0.0]

        def work(i: int) -> None:
            p, m = prods[i], msgs[i]
            gate.wait()
            end = deadline[0]
            n = 0
            while n < share:
                p.send(m)
                n += 1
                if n & 15 == 0 and time.perf_counter() >= end:
                    break
            sent[i] = n

        threads = [threading.Thread(target=work, args=(i,)) for i in range(producers)]
        for t in threads:
            t.start()
        c0, s0 = b.counters()
        start = time.perf_counter()
        deadline[0] = start + limit_s
        gate.wait()
        for t in threads:
            t.join(limit_s + DRAIN_LIMIT_S)
        elapsed = time.perf_counter() - start
        c1, s1 = b.counters()
        for conn in conns:
            conn.close()
        return Run(sum(sent), elapsed, c1 - c0, s1 - s0)
    finally:
        b.close()


def run_end_to_end(
    parent: str, fsync: str, interval: float, count: int, limit_s: float, ack_every: int = 100
) -> Run:
    """1 producer -> 1 consumer (CLIENT_ACKNOWLEDGE every ``ack_every``; 0:
    AUTO_ACKNOWLEDGE), first send to last receive. The consumer stops once the producer has
    stopped and everything sent arrived."""
    b = _Broker(parent, fsync, interval)
    try:
        q = Queue("bench")
        ready = threading.Event()
        producing = threading.Event()
        producing.set()
        sent = [0]
        got = [0]
        last = [0.0]

        def consume() -> None:
            conn = b.factory.create_connection()
            mode = Session.CLIENT_ACKNOWLEDGE if ack_every else Session.AUTO_ACKNOWLEDGE
            session = conn.create_session(False, mode)
            consumer = session.create_consumer(q)
            conn.start()
            ready.set()
            n = 0
            hard_stop = time.monotonic() + limit_s + DRAIN_LIMIT_S
            unacked = None
            while time.monotonic() < hard_stop and (producing.is_set() or n < sent[0]):
                m = consumer.receive(0.2)
                if m is None:
                    continue
                n += 1
                last[0] = time.perf_counter()
                if not ack_every:
                    continue
                unacked = m
                if n % ack_every == 0:
                    m.acknowledge()
                    unacked = None
            if unacked is not None:
                unacked.acknowledge()
            got[0] = n
            conn.close()

        t = threading.Thread(target=consume)
        t.start()
        ready.wait(10)
        conn = b.factory.create_connection()
        session = conn.create_session(False, Session.AUTO_ACKNOWLEDGE)
        producer = session.create_producer(q)
        producer.delivery_mode = DeliveryMode.PERSISTENT
        m = session.create_text_message(BODY)
        c0, s0 = b.counters()
        start = time.perf_counter()
        end = start + limit_s
        n = 0
        while n < count:
            producer.send(m)
            n += 1
            if n & 15 == 0 and time.perf_counter() >= end:
                break
        sent[0] = n
        producing.clear()
        t.join(limit_s + DRAIN_LIMIT_S + 10)
        c1, s1 = b.counters()
        conn.close()
        return Run(got[0], last[0] - start, c1 - c0, s1 - s0)
    finally:
        b.close()


def _row(name: str, runs: list[Run], fsync: str | None) -> str:
    rates = [r.rate for r in runs]
    msgs = sum(r.messages for r in runs) or 1
    commits = sum(r.commits for r in runs)
    cols = f"{statistics.median(rates):>9,.0f} {min(rates):>9,.0f} {max(rates):>9,.0f}"
    if fsync is None:
        return f"{name:30s} {cols} {'-':>11s} {'-':>10s} {'-':>11s}"
    syncs = commits if fsync == "always" else sum(r.syncs for r in runs)
    return (
        f"{name:30s} {cols} {commits / msgs:>11.3f} {syncs / msgs:>10.4f}"
        f" {msgs / max(commits, 1):>11.1f}"
    )


def main(argv: list[str] | None = None) -> None:
    """Measure the disk, then every scenario; print one table."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--count", type=int, default=20_000, help="messages per run (a cap)")
    ap.add_argument("--seconds", type=float, default=4.0, help="seconds per run (a cap)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", default=None, help="parent of the data dirs (default: a temp dir)")
    ap.add_argument("--producers", default="1,8,64", help="producer counts, comma-separated")
    ap.add_argument("--modes", default="always,batch", help="fsync modes, comma-separated")
    ap.add_argument("--interval", type=float, default=0.05, help="fsync_interval for 'batch'")
    ap.add_argument("--pin", action="store_true", help="run this process on its first CPU only")
    ap.add_argument(
        "--idle",
        default="",
        help="also probe the disk and SQLite with these idle waits before each write, "
        "microseconds, comma-separated (e.g. 0,120,250,500,1000), and print the cost of one",
    )
    args = ap.parse_args(argv)
    if args.pin:
        pin_self(cpus()[0])
    own_parent = args.dir is None
    parent = tempfile.mkdtemp(prefix="ternmq-bench-") if own_parent else args.dir
    os.makedirs(parent, exist_ok=True)
    counts = [int(p) for p in args.producers.split(",") if p.strip()]
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    try:
        append = fsync_rate(parent)
        rewrite = fsync_rate(parent, overwrite=True)
        bare, bare_cpu = sqlite_commit_rate(parent)
        pinned = f", pinned to CPU {cpus()[0]}" if args.pin else ""
        print(f"data dir parent: {parent}  (cpus: {os.cpu_count()}{pinned})")
        print(
            f"disk: {append:,.0f} fsyncs/s (append 4 KiB + fsync; "
            f"{1000 / append:.2f} ms each), {rewrite:,.0f}/s rewriting in place + fdatasync"
        )
        print(
            f"sqlite: {bare:,.0f} commits/s of one 256-byte row in a bare loop (WAL, "
            f"synchronous=FULL; {bare_cpu:.0f} us of CPU each)"
        )
        for gap in [int(g) for g in args.idle.split(",") if g.strip()]:
            disk = fsync_rate(parent, overwrite=True, idle=gap * 1e-6)
            commit, commit_cpu = sqlite_commit_rate(parent, idle=gap * 1e-6)
            print(
                f"after {gap:>5d} us idle: rewrite + fdatasync {1e6 / disk:4.0f} us, "
                f"sqlite commit {1e6 / commit:4.0f} us ({commit_cpu:.0f} us of CPU)"
            )
        if not counts:
            return  # the probes only
        print(
            f"runs: {args.count:,} messages or {args.seconds:g} s each, median of "
            f"{args.repeat}; 256-byte TextMessages, synchronous send"
        )
        print()
        print(
            f"{'scenario':30s} {'msg/s':>9s} {'min':>9s} {'max':>9s}"
            f" {'commits/msg':>11s} {'fsyncs/msg':>10s} {'msgs/commit':>11s}"
        )
        one: dict[str, float] = {}
        for fsync in modes:
            scenarios: dict[str, Callable[[], Run]] = {}
            for p in counts:
                name = f"{fsync:6s} {p:>3d} producer{'s' if p > 1 else ''}"
                scenarios[name] = functools.partial(
                    run_producers, parent, fsync, args.interval, p, args.count, args.seconds
                )
            scenarios[f"{fsync:6s} 1 -> 1 CLIENT_ACK/100"] = functools.partial(
                run_end_to_end, parent, fsync, args.interval, args.count, args.seconds
            )
            scenarios[f"{fsync:6s} 1 -> 1 AUTO"] = functools.partial(
                run_end_to_end, parent, fsync, args.interval, args.count, args.seconds, 0
            )
            for name, fn in scenarios.items():
                runs = [fn() for _ in range(args.repeat)]
                print(_row(name, runs, fsync), flush=True)
                if name == f"{fsync:6s}   1 producer":
                    one[fsync] = statistics.median(r.rate for r in runs)
        ref = max(counts)
        runs = [
            run_producers(
                parent,
                "always",
                args.interval,
                ref,
                args.count,
                args.seconds,
                mode=DeliveryMode.NON_PERSISTENT,
            )
            for _ in range(args.repeat)
        ]
        print(_row(f"ref {ref:>3d} producers NON_PERSISTENT", runs, None))
        if "always" in one:
            print()
            print(
                f"1 producer, fsync='always': {one['always']:,.0f} msg/s = "
                f"{one['always'] / append:.2f} x the disk's {append:,.0f} fsyncs/s, "
                f"{one['always'] / bare:.2f} x the bare SQLite loop's {bare:,.0f} commits/s "
                "(one commit, one fsync, per send)"
            )
    finally:
        if own_parent:
            shutil.rmtree(parent, ignore_errors=True)


if __name__ == "__main__":
    main()
