"""``GET /metrics``: the broker's figures in the Prometheus text format (SERVER.md "HTTP").

Theory of operation
-------------------
Each scrape reads the counters the broker keeps as events happen (``Broker.stats()``:
per-destination ``Counters``, O(1) each) into a :class:`Snapshot` on the event loop (the
broker's owner), so a scrape costs O(destinations) and never looks at a message; a custom
``prometheus_client`` collector then writes the snapshot's text in a worker thread, which
with thousands of destinations is most of the cost and should not hold the loop. The
families and their labels are the contract of SERVER.md; the store's commit count and
latency histogram come from the store's group-commit writer (``store/_writer.py``,
``CommitTimes``), the connections per gateway protocol from the server's connection set,
the process figures from ``prometheus_client``'s ``ProcessCollector``. Each scrape has its
own registry.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections import Counter
from collections.abc import Iterator

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

from ternmq.protocol import commands as c
from ternmq.server.http._base import HttpHost
from ternmq.server.http._frontend import HttpFrontend

__all__ = ["BrokerCollector", "Snapshot", "exposition", "setup", "snapshot"]

# (family, help, DestinationStat field) of the per-destination gauges and counters.
_GAUGES = (
    ("ternmq_destination_messages", "Messages held (ready, scheduled and in flight).", "depth"),
    ("ternmq_destination_messages_in_flight", "Messages delivered, not acknowledged.", "in_flight"),
    ("ternmq_destination_consumers", "Consumers attached.", "consumers"),
    ("ternmq_destination_memory_bytes", "Message bytes held in memory.", "memory_bytes"),
)
_COUNTERS = (
    ("ternmq_destination_enqueued", "Messages enqueued.", "enqueued"),
    ("ternmq_destination_dequeued", "Messages acknowledged (consumed).", "dequeued"),
    ("ternmq_destination_expired", "Messages expired.", "expired"),
    ("ternmq_destination_dead_lettered", "Messages dead-lettered.", "dead_lettered"),
    ("ternmq_destination_redelivered", "Deliveries given back for redelivery.", "redelivered"),
)


@dataclasses.dataclass(frozen=True)
class Snapshot:
    """The broker's figures at one moment, read on its owner thread (cheap: counters)."""

    stats: list[c.DestinationStat]
    connections: dict[str, int]  # open connections per gateway protocol
    commits: int
    commit_buckets: list[tuple[str, float]]
    commit_seconds: float


def snapshot(host: HttpHost) -> Snapshot:
    """Read the figures of a scrape from ``host`` (on the broker's owner thread):
    O(destinations), no message looked at."""
    broker = host.broker
    stats = broker.stats() if broker is not None else []
    per_protocol: Counter[str] = Counter({"native": 0})
    for conn in host.connections:
        if conn.conn is not None and not conn.conn.closed:
            per_protocol[conn.protocol] += 1
    times = broker.store.commit_times if broker is not None else None
    if times is None:
        return Snapshot(stats, dict(per_protocol), 0, [("+Inf", 0)], 0.0)
    buckets, total = times.snapshot()
    return Snapshot(
        stats, dict(per_protocol), buckets[-1][1], [(b, float(n)) for b, n in buckets], total
    )


class BrokerCollector(Collector):
    """The families of SERVER.md from one :class:`Snapshot` (safe on any thread).

    Args:
        snap: the figures to expose.
    """

    def __init__(self, snap: Snapshot) -> None:
        self.snap = snap

    def collect(self) -> Iterator[Metric]:
        """The families of SERVER.md, from the snapshot."""
        snap = self.snap
        gauges = [
            (GaugeMetricFamily(name, doc, labels=["destination"]), field)
            for name, doc, field in _GAUGES
        ]
        counters = [
            (CounterMetricFamily(name, doc, labels=["destination"]), field)
            for name, doc, field in _COUNTERS
        ]
        for st in snap.stats:
            label = [st.name]
            for family, field in gauges:
                family.add_metric(label, getattr(st, field))
            for cfamily, field in counters:
                cfamily.add_metric(label, getattr(st, field))
        for family, _ in gauges:
            yield family
        for cfamily, _ in counters:
            yield cfamily
        conns = GaugeMetricFamily(
            "ternmq_connections", "Open messaging connections.", labels=["protocol"]
        )
        for protocol, n in sorted(snap.connections.items()):
            conns.add_metric([protocol], n)
        yield conns
        commits = CounterMetricFamily("ternmq_store_commits", "Store commits (group commits).")
        commits.add_metric([], snap.commits)
        yield commits
        hist = HistogramMetricFamily("ternmq_store_commit_seconds", "Store commit latency.")
        hist.add_metric([], buckets=snap.commit_buckets, sum_value=snap.commit_seconds)
        yield hist


def exposition(snap: Snapshot, process: bool = True) -> bytes:
    """The Prometheus text of ``snap`` (and of this process's figures)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(BrokerCollector(snap))
    if process:
        registry.register(ProcessCollector(registry=None))
    return generate_latest(registry)


def setup(app: web.Application, frontend: HttpFrontend) -> None:
    """Add ``GET /metrics``: the figures are read on the loop (the broker's owner), the text
    written in a worker thread, so a large exposition does not hold the loop."""
    host = frontend.host

    async def metrics(request: web.Request) -> web.StreamResponse:
        snap = snapshot(host)
        body = await asyncio.to_thread(exposition, snap)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    app.router.add_get("/metrics", metrics)
