"""``GET /metrics``: the broker's figures in the Prometheus text format (SERVER.md "HTTP").

Theory of operation
-------------------
A custom ``prometheus_client`` collector reads the counters the broker keeps as events
happen (``Broker.stats()``: per-destination ``Counters``, O(1) each) on every scrape, so a
scrape costs O(destinations) and never looks at a message. The families and their labels
are the contract of SERVER.md; the store's commit count and latency histogram come from the
store's group-commit writer (``store/_writer.py``, ``CommitTimes``), the connections per
gateway protocol from the server's connection set, the process figures from
``prometheus_client``'s ``ProcessCollector``. Each listener has its own registry.
"""

from __future__ import annotations

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

from ternmq.server.http._base import HttpHost
from ternmq.server.http._frontend import HttpFrontend

__all__ = ["BrokerCollector", "setup"]

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


class BrokerCollector(Collector):
    """Reads the broker's counters on each scrape (call it on the broker's owner thread).

    Args:
        host: the server.
    """

    def __init__(self, host: HttpHost) -> None:
        self.host = host

    def collect(self) -> Iterator[Metric]:
        """The families of SERVER.md, from the counters as they are now."""
        host = self.host
        broker = host.broker
        stats = broker.stats() if broker is not None else []
        gauges = [
            (GaugeMetricFamily(name, doc, labels=["destination"]), field)
            for name, doc, field in _GAUGES
        ]
        counters = [
            (CounterMetricFamily(name, doc, labels=["destination"]), field)
            for name, doc, field in _COUNTERS
        ]
        for st in stats:
            label = [st.name]
            for family, field in gauges:
                family.add_metric(label, getattr(st, field))
            for cfamily, field in counters:
                cfamily.add_metric(label, getattr(st, field))
        for family, _ in gauges:
            yield family
        for cfamily, _ in counters:
            yield cfamily
        per_protocol: Counter[str] = Counter({"native": 0})
        for conn in host.connections:
            if conn.conn is not None and not conn.conn.closed:
                per_protocol[conn.protocol] += 1
        conns = GaugeMetricFamily(
            "ternmq_connections", "Open messaging connections.", labels=["protocol"]
        )
        for protocol, n in sorted(per_protocol.items()):
            conns.add_metric([protocol], n)
        yield conns
        store = broker.store if broker is not None else None
        times = store.commit_times if store is not None else None
        commits = CounterMetricFamily("ternmq_store_commits", "Store commits (group commits).")
        commits.add_metric([], times.count if times is not None else 0)
        yield commits
        hist = HistogramMetricFamily("ternmq_store_commit_seconds", "Store commit latency.")
        if times is not None:
            buckets, total = times.snapshot()
            hist.add_metric([], buckets=buckets, sum_value=total)
        else:
            hist.add_metric([], buckets=[("+Inf", 0)], sum_value=0.0)
        yield hist


def setup(app: web.Application, frontend: HttpFrontend) -> None:
    """Add ``GET /metrics``."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(BrokerCollector(frontend.host))
    registry.register(ProcessCollector(registry=None))

    async def metrics(request: web.Request) -> web.StreamResponse:
        body = generate_latest(registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    app.router.add_get("/metrics", metrics)
