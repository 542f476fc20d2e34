"""Persistent throughput over tcp:// on the PostgreSQL store beside the SQLite store, in one run.

Scenarios (256-byte TextMessages, PERSISTENT, synchronous send: each returns once its
message committed; a ``ternmq serve`` subprocess per store, fsync "always"; the clients are
threads of this process, one connection each; ``bench_tcp.py``'s server and producer loop):
  sqlite   P producers   ``ternmq serve --data-dir`` (a fresh temporary directory)
  postgres P producers   ``ternmq serve --store postgresql://...`` (a fresh database)
for P in --producers (default 1 and 64). Each run first sends for one second to size itself,
then sends about --seconds worth of messages (at most --count).

Columns: msg/s; commits/s and msgs/commit of the measured run (the probe left out), from
the store's own commit counter (``ternmq_store_commits`` of the server's ``/metrics``, read
before and after the run): one group commit is one transaction, for either store.

PostgreSQL: --pg URL (a database the user may create other databases from: each run gets a
fresh one), or none to start a temporary server from the PostgreSQL binaries here
(``initdb`` in a temporary directory; ``tests/_postgres.py``), with its default durability
(``fsync = on``, ``synchronous_commit = on``).

Run: .venv/bin/python benchmarks/bench_postgres.py [--seconds S] [--count N]
     [--producers 1,64] [--pg URL]
"""

from __future__ import annotations

import argparse
import contextlib
import pathlib
import shutil
import sys
import tempfile
import urllib.request
import uuid
from collections.abc import Callable, Iterator

import psycopg

import bench_tcp
from bench_scrape import free_port, wait_http
from bench_tcp import run_persistent, server
from ternmq import ConnectionFactory

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))
from _postgres import PgServer, bindir

PROBE_S = 1.0
# run_persistent drains its queue (acknowledgements: commits too); here nothing is consumed,
# so that the commits counted are the sends' (each run has a server and a store of its own).
bench_tcp._drain = lambda factory, q: None  # type: ignore[assignment]


@contextlib.contextmanager
def postgres(url: str | None) -> Iterator[Callable[[], str]]:
    """A function that makes a fresh database and returns its URL: on ``url``'s server, or
    on a temporary PostgreSQL started here."""
    if url is not None:
        yield lambda: _new_database(url)
        return
    binaries = bindir()
    if binaries is None:
        raise SystemExit("no PostgreSQL binaries here: give --pg URL")
    directory = pathlib.Path(tempfile.mkdtemp(prefix="ternmq-pg-"))
    pg = PgServer(directory, binaries)
    try:
        pg.start()
        yield pg.new_database
    finally:
        pg.stop()
        shutil.rmtree(directory, ignore_errors=True)


def _new_database(url: str) -> str:
    name = f"bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    base, _, _ = url.rpartition("/")
    return f"{base}/{name}"


def _commits(metrics: str) -> int:
    """The server's store commits so far (``ternmq_store_commits`` at ``metrics``)."""
    with urllib.request.urlopen(metrics, timeout=10) as reply:
        text = reply.read().decode()
    for line in text.splitlines():
        if line.startswith("ternmq_store_commits"):
            return int(float(line.split()[-1]))
    raise AssertionError(f"no ternmq_store_commits in {metrics}")


def measure(
    store: tuple[str, ...], producers: int, seconds: float, count: int
) -> tuple[float, float]:
    """(msg/s, store commits/s) of ``producers`` synchronous PERSISTENT producers on a
    ``ternmq serve`` with ``store`` arguments: a probe sizes the run to about ``seconds``;
    the commits are the store's counter's over the measured run."""
    port = free_port()
    with server((*store, "--http-port", str(port), "--stomp-port", "-1")) as url:
        metrics = f"http://127.0.0.1:{port}/metrics"
        wait_http(metrics)
        factory = ConnectionFactory(url)
        n = max(1, int(200 * PROBE_S) // producers)
        probe = run_persistent(factory, producers, n)
        per_producer = max(1, min(count, int(probe * seconds)) // producers)
        before = _commits(metrics)
        rate = run_persistent(factory, producers, per_producer)
        commits = _commits(metrics) - before
    elapsed = producers * per_producer / rate
    return rate, commits / elapsed


def main(argv: list[str] | None = None) -> None:
    """Run every scenario and print one table."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--seconds", type=float, default=10.0, help="about how long each run sends")
    ap.add_argument("--count", type=int, default=200_000, help="messages per run (a cap)")
    ap.add_argument("--producers", default="1,64", help="producer counts, comma-separated")
    ap.add_argument("--pg", default=None, help="a PostgreSQL URL (default: a temporary server)")
    args = ap.parse_args(argv)
    counts = [int(p) for p in args.producers.split(",") if p.strip()]
    print(
        f"{'scenario':24s} {'msg/s':>9s} {'commits/s':>10s} {'msgs/commit':>11s}  "
        f"(256-byte PERSISTENT sends over tcp://, ~{args.seconds:g} s each)"
    )
    with postgres(args.pg) as new_database:
        for p in counts:
            for name in ("sqlite", "postgres"):
                with tempfile.TemporaryDirectory(prefix="ternmq-bench-") as data:
                    where = (
                        ("--data-dir", data) if name == "sqlite" else ("--store", new_database())
                    )
                    rate, commits = measure(where, p, args.seconds, args.count)
                print(
                    f"{f'{name:8s} {p:>3d} producers':24s} {rate:>9,.0f} {commits:>10,.0f} "
                    f"{rate / max(commits, 1e-9):>11.1f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
