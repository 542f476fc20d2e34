"""Spark figures: the ``ternmq`` data source against a ``ternmq serve`` subprocess over tcp.

Scenarios (256-byte TextMessage bodies with two string properties; Spark ``local[2]`` in this
process, its Python workers in their own processes; the broker a separate process on a fresh
data directory, fsync "always"):
  batch read     ``spark.read.format("ternmq")`` of a queue holding N messages into the
                 ``noop`` sink (a snapshot: nothing is consumed, so every repeat reads the same)
  batch write    ``df.write.format("ternmq")`` of N rows (``body`` string column) into a queue:
                 staged by the tasks, published by the driver's commit; the queue is purged
                 between repeats
  stream read    ``spark.readStream.format("ternmq")`` with ``maxMessagesPerTrigger`` 10,000
                 (N/10,000 micro-batches) into ``noop`` with ``trigger(availableNow=True)``;
                 the source acknowledges as Spark commits, so the queue is refilled each repeat

Messages per second are N over the wall time of the Spark action (or query), so they include
Spark's fixed costs (planning ~0.1 s per batch query, ~0.25 s per micro-batch, ~1 s per
streaming query; see ../shared/notes/spark-datasource-facts.md). Seeding the broker is not
timed. Prints the median of R repeats after one warm-up.

Run: .venv/bin/python benchmarks/bench_spark.py [--count N] [--repeat R] [--only SCENARIO]
[--url tcp://HOST:PORT] (--only read|write|stream, repeatable; --url uses a running broker,
e.g. one under a profiler, instead of starting one). The stream scenario also prints Spark's
median per-micro-batch durations (``durationMs`` of ``query.recentProgress``).
Needs the spark extra (``pip install -e '.[spark]'``) and Java 17.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

from bench_tcp import server
from ternmq import ConnectionFactory
from ternmq.client import Connection
from ternmq.client._admin import purge, stat
from ternmq.client.sequenced import commit_staged, stage
from ternmq.message import TextMessage

BODY = "x" * 256
SCENARIOS = ("read", "write", "stream")


def _seed(conn: Connection, dest: str, n: int, tag: str) -> None:
    def messages() -> Any:
        for i in range(n):
            m = TextMessage()
            m.text = BODY
            m.set_string_property("region", ("EU", "US", "APAC")[i % 3])
            m.set_string_property("amount", str(i % 200))
            yield dest, m

    stage(conn, f"bench-seed-{tag}", 0, tag, messages())
    result = commit_staged(conn, f"bench-seed-{tag}", 0, [tag])
    assert result.published == n, result


def _median_rate(n: int, runs: list[float]) -> str:
    med = statistics.median(runs)
    return (
        f"{n / med:>10,.0f} msg/s   (median {med:.2f} s of {len(runs)}: "
        + ", ".join(f"{r:.2f}" for r in runs)
        + ")"
    )


def _timed(
    fn: Callable[[], None], repeat: int, before: Callable[[], None] | None = None
) -> list[float]:
    out = []
    for i in range(repeat + 1):  # the first is a warm-up
        if before is not None:
            before()
        t0 = time.perf_counter()
        fn()
        took = time.perf_counter() - t0
        if i:
            out.append(took)
    return out


def main(argv: list[str] | None = None) -> None:
    """Run the three scenarios and print messages/s."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--only", choices=SCENARIOS, action="append", help="run this scenario (repeatable)"
    )
    parser.add_argument(
        "--url", help="use this running broker (e.g. one under a profiler) instead of a new one"
    )
    args = parser.parse_args(argv)
    n, repeat = args.count, args.repeat
    only = set(args.only or SCENARIOS)
    import ternmq.spark

    spark = ternmq.spark.local_session("ternmq-bench")
    with contextlib.ExitStack() as stack:
        url = args.url or stack.enter_context(server())
        conn = stack.enter_context(ConnectionFactory(url).create_connection())
        print(f"broker {url}; {n:,} messages of {len(BODY)} bytes; Spark {spark.version}")
        _scenarios(spark, url, conn, n, repeat, only)
    spark.stop()


def _scenarios(spark: Any, url: str, conn: Connection, n: int, repeat: int, only: set[str]) -> None:
    if "read" in only:
        _batch_read(spark, url, conn, n, repeat)
    if "write" in only:
        _batch_write(spark, url, conn, n, repeat)
    if "stream" in only:
        _stream_read(spark, url, conn, n, repeat)


def _batch_read(spark: Any, url: str, conn: Connection, n: int, repeat: int) -> None:
    _seed(conn, "queue://bench-read", n, "read")

    def batch_read() -> None:
        df = (
            spark.read.format("ternmq")
            .option("url", url)
            .option("destination", "queue://bench-read")
            .load()
        )
        df.write.format("noop").mode("overwrite").save()

    runs = _timed(batch_read, repeat)
    assert stat(conn, "queue://bench-read")[0].depth == n  # nothing consumed
    print(f"batch read    {_median_rate(n, runs)}")


def _batch_write(spark: Any, url: str, conn: Connection, n: int, repeat: int) -> None:
    rows = spark.range(n).selectExpr(f"concat('{BODY[:-8]}', lpad(id, 8, '0')) AS body")
    rows = rows.persist()
    rows.count()

    def batch_write() -> None:
        (
            rows.write.format("ternmq")
            .mode("append")
            .option("url", url)
            .option("destination", "queue://bench-write")
            .save()
        )

    def empty_write_queue() -> None:
        try:
            purge(conn, "queue://bench-write")
        except Exception:  # not created yet
            pass

    runs = _timed(batch_write, repeat, empty_write_queue)
    assert stat(conn, "queue://bench-write")[0].depth == n
    print(f"batch write   {_median_rate(n, runs)}")
    rows.unpersist()


def _stream_read(spark: Any, url: str, conn: Connection, n: int, repeat: int) -> None:
    counter = iter(range(1 << 30))
    durations: list[list[dict[str, int]]] = []  # per run, per micro-batch

    def refill() -> None:
        try:
            purge(conn, "queue://bench-stream")  # what a previous run left unacknowledged
        except Exception:  # not created yet
            pass
        _seed(conn, "queue://bench-stream", n, f"stream-{next(counter)}")

    def stream_read() -> None:
        with tempfile.TemporaryDirectory(prefix="ternmq-bench-ckpt-") as ckpt:
            query = (
                spark.readStream.format("ternmq")
                .option("url", url)
                .option("destination", "queue://bench-stream")
                .option("maxMessagesPerTrigger", "10000")
                .load()
                .writeStream.format("noop")
                .option("checkpointLocation", ckpt)
                .trigger(availableNow=True)
                .start()
            )
            query.awaitTermination()
        progress = [p for p in query.recentProgress if int(p.get("numInputRows", 0))]
        read = sum(int(p["numInputRows"]) for p in progress)
        assert read == n, (read, n)
        durations.append([p["durationMs"] for p in progress])

    runs = _timed(stream_read, repeat, refill)
    print(f"stream read   {_median_rate(n, runs)}   ({n // 10_000} micro-batches each)")
    timed = [d for run in durations[1:] for d in run]  # not the warm-up
    keys = sorted({k for d in timed for k in d}, key=lambda k: -sum(d.get(k, 0) for d in timed))
    print(
        "  per micro-batch, median ms: "
        + ", ".join(f"{k} {statistics.median(d.get(k, 0) for d in timed):.0f}" for k in keys)
    )


if __name__ == "__main__":
    main()
