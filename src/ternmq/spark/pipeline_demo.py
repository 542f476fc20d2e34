"""The example pipeline: per-minute revenue by region from ``queue://orders``, with alerts.

Run it with ``ternmq pipeline-demo`` (or ``make pipeline-demo``); it needs the ``spark`` extra
(``pip install 'ternmq[spark]'``) and Java 17.

What it does:

1. starts a network broker in this process (``ternmq serve``'s server on 127.0.0.1, port 0,
   data in ``WORKDIR/broker``) unless ``--url`` names a running one: Spark's Python workers
   are separate processes and reach the broker over tcp;
2. sends a first round of orders to ``queue://orders`` (TextMessages whose properties are
   ``region``, ``amount`` and ``order_time``, the event time in epoch ms, spread over ten
   minutes);
3. runs a Structured Streaming query (trigger ``availableNow``): read the queue with the
   ``ternmq`` source, compute revenue and order count per one-minute window and region with
   a two-minute watermark, and in ``foreachBatch`` write the finished windows to Parquet
   (``WORKDIR/revenue/batch=N``, overwritten when a batch is replayed) and publish an alert
   for every window whose revenue passes a threshold to ``topic://alerts`` (the ``ternmq``
   batch writer with ``sinkId`` and ``batchId``: a replayed batch publishes nothing twice);
4. sends a second round of orders (the next ten minutes) and runs the query again from the
   same checkpoint: it reads only the new orders and emits the windows the first run had
   kept open (the watermark moved on);
5. prints the revenue table read back from Parquet and the alerts from a durable
   subscription of ``topic://alerts``.

Everything is in ``WORKDIR`` (default ``./pipeline-demo``); run the demo again after
deleting it to start from scratch, or keep it to see the checkpoint resume (no new orders
are sent to a broker that already has the demo's orders, see ``--orders``).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import random
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from ternmq.client import Connection, ConnectionFactory
from ternmq.client.sequenced import ensure_subscription, log_bounds, read_range
from ternmq.message.codec import decode_message

__all__ = ["ORDER_REGIONS", "main", "run_demo", "send_orders"]

ORDER_REGIONS = ("EU", "US", "APAC")
BASE_TIME_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z: event times are synthetic
ALERT_FACTOR = 1.15  # alert on windows 15 % above the mean revenue of a window
MEAN_AMOUNT = 102.5  # amounts are uniform in 5..200
ALERTS_SUBSCRIPTION = "pipeline-demo-alerts"


def send_orders(conn: Connection, n: int, first_minute: int, seed: int) -> float:
    """Send ``n`` orders spread over the ten minutes from ``first_minute``; return their
    total amount."""
    rng = random.Random(seed)
    session = conn.create_session()
    producer = session.create_producer(session.create_queue("orders"))
    total = 0.0
    for i in range(n):
        amount = round(rng.uniform(5, 200), 2)
        total += amount
        m = session.create_text_message(f"order {first_minute}-{i}")
        m.set_string_property("region", rng.choice(ORDER_REGIONS))
        m.set_string_property("amount", f"{amount:.2f}")
        at = BASE_TIME_MS + first_minute * 60_000 + (i * 600_000) // n
        m.set_long_property("order_time", at)
        producer.send(m)
    session.close()
    return total


def run_query(spark: Any, url: str, workdir: pathlib.Path, threshold: float) -> int:
    """One run of the streaming query (until caught up); returns the orders it read.
    Windows with revenue above ``threshold`` are published as alerts."""
    from pyspark.sql import functions as F

    parquet = workdir / "revenue"
    orders = (
        spark.readStream.format("ternmq")
        .option("url", url)
        .option("destination", "queue://orders")
        .option("maxMessagesPerTrigger", "5000")
        .load()
    )
    parsed = orders.select(
        F.col("properties")["region"].alias("region"),
        F.col("properties")["amount"].cast("double").alias("amount"),
        (F.col("properties")["order_time"].cast("long") / 1000).cast("timestamp").alias("at"),
    )
    revenue = (
        parsed.withWatermark("at", "2 minutes")
        .groupBy(F.window("at", "1 minute"), "region")
        .agg(F.round(F.sum("amount"), 2).alias("revenue"), F.count("*").alias("orders"))
        .select(F.col("window.start").alias("minute"), "region", "revenue", "orders")
    )

    def publish(batch: Any, batch_id: int) -> None:
        # Both writes are idempotent per batch id, so a replayed batch changes nothing.
        batch.persist()
        batch.write.mode("overwrite").parquet(str(parquet / f"batch={batch_id}"))
        alerts = batch.where(F.col("revenue") > threshold).select(
            F.to_json(F.struct("minute", "region", "revenue", "orders")).alias("body")
        )
        (
            alerts.write.format("ternmq")
            .mode("append")
            .option("url", url)
            .option("destination", "topic://alerts")
            .option("sinkId", f"pipeline-demo:{workdir.resolve()}")
            .option("batchId", str(batch_id))
            .save()
        )
        batch.unpersist()

    query = (
        revenue.writeStream.outputMode("append")
        .foreachBatch(publish)
        .option("checkpointLocation", str(workdir / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    return sum(int(p.get("numInputRows", 0)) for p in query.recentProgress)


def _alerts(conn: Connection) -> list[dict[str, Any]]:
    b = log_bounds(conn, "topic://alerts", subscription=ALERTS_SUBSCRIPTION)
    return [
        json.loads(decode_message(r.data).get_body(str) or "null")
        for chunk in read_range(
            conn, "topic://alerts", b.earliest, b.latest, subscription=ALERTS_SUBSCRIPTION
        )
        for r in chunk
    ]


def run_demo(
    workdir: pathlib.Path,
    url: str | None = None,
    orders: int = 3_000,
    out: Callable[[str], None] = print,
    spark: Any = None,
) -> dict[str, Any]:
    """Run the whole demo (see the module docstring); returns its figures. With ``spark``
    (a SparkSession with the ``ternmq`` format registered) it runs there and leaves the
    session open; otherwise it starts a local one and stops it at the end."""
    workdir.mkdir(parents=True, exist_ok=True)
    server = None
    if url is None:
        from ternmq.server.app import ServerThread
        from ternmq.server.config import ListenerConfig, ServerConfig

        config = ServerConfig(
            listeners=(ListenerConfig(bind="127.0.0.1", port=0),),
            data_dir=str(workdir / "broker"),
            log_level="warning",
        )
        server = ServerThread(config).start()
        url = server.url
        out(f"broker: {url} (data in {workdir / 'broker'})")
    try:
        with ConnectionFactory(url).create_connection() as conn:
            ensure_subscription(conn, "topic://alerts", ALERTS_SUBSCRIPTION)
            own_session = spark is None
            if own_session:
                started = time.perf_counter()
                from ternmq.spark import local_session

                spark = local_session("ternmq-pipeline-demo")
                out(f"spark: session ready in {time.perf_counter() - started:.1f} s")
            # windows are one minute of one region: orders / 10 minutes / 3 regions each
            threshold = round(ALERT_FACTOR * MEAN_AMOUNT * max(orders, 1) / 30, 2)
            figures: dict[str, Any] = {"threshold": threshold}
            for run, first_minute in ((1, 0), (2, 10)):
                if orders:
                    total = send_orders(conn, orders, first_minute, seed=run)
                    out(
                        f"run {run}: sent {orders} orders for minutes {first_minute}.."
                        f"{first_minute + 9} (total {total:,.2f})"
                    )
                started = time.perf_counter()
                read = run_query(spark, url, workdir, threshold)
                out(
                    f"run {run}: the query read {read} orders in "
                    f"{time.perf_counter() - started:.1f} s"
                    + (" (resumed from the checkpoint)" if run == 2 else "")
                )
                figures[f"run{run}_read"] = read
            table = spark.read.parquet(str(workdir / "revenue")).orderBy("minute", "region")
            rows = table.collect()
            out(f"revenue per minute and region ({len(rows)} finished windows):")
            for row in rows[:12]:
                out(
                    f"  {row['minute']:%Y-%m-%d %H:%M}  {row['region']:<5}"
                    f"  {row['revenue']:>10,.2f}  {row['orders']:>5} orders"
                )
            if len(rows) > 12:
                out(f"  ... {len(rows) - 12} more")
            alerts = _alerts(conn)
            out(f"alerts on topic://alerts (revenue > {threshold:,.2f}): {len(alerts)}")
            for a in alerts[:5]:
                out(f"  {a}")
            figures.update(windows=len(rows), alerts=len(alerts))
            figures["orders_in_windows"] = sum(int(r["orders"]) for r in rows)
            figures["alerts_expected"] = sum(1 for r in rows if r["revenue"] > threshold)
            if own_session:
                spark.stop()
            return figures
    finally:
        if server is not None:
            server.stop()


def main(argv: Sequence[str] | None = None) -> int:
    """``ternmq pipeline-demo``: run the example pipeline; 0 on success."""
    parser = argparse.ArgumentParser(
        prog="ternmq pipeline-demo", description="The example Spark pipeline over ternmq."
    )
    parser.add_argument("--url", help="a running broker (default: start one in-process)")
    parser.add_argument(
        "--workdir", default="pipeline-demo", help="checkpoint, Parquet and broker data"
    )
    parser.add_argument("--orders", type=int, default=3_000, help="orders per round (0: send none)")
    args = parser.parse_args(argv)
    run_demo(pathlib.Path(args.workdir), args.url, args.orders)
    return 0


if __name__ == "__main__":
    sys.exit(main())
