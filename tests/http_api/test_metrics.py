"""``GET /metrics`` parsed with prometheus_client's own parser and checked against the
broker's real counts after a scripted load: sends, receives, expiries (a fake clock),
dead letters and redeliveries."""

from __future__ import annotations

import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from ternmq import Queue, Session, TextMessage
from ternmq.broker.config import BrokerConfig, DestinationPolicy
from ternmq.testing import FakeClock

from .conftest import Start, factory

DEST_FAMILIES = {
    "ternmq_destination_messages": "depth",
    "ternmq_destination_messages_in_flight": "in_flight",
    "ternmq_destination_consumers": "consumers",
    "ternmq_destination_enqueued_total": "enqueued",
    "ternmq_destination_dequeued_total": "dequeued",
    "ternmq_destination_expired_total": "expired",
    "ternmq_destination_dead_lettered_total": "dead_lettered",
    "ternmq_destination_redelivered_total": "redelivered",
    "ternmq_destination_memory_bytes": "memory_bytes",
}


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_metrics_match_the_broker_after_a_scripted_load(
    start: Start, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = FakeClock(int(time.time() * 1000))
    monkeypatch.setattr("ternmq.transport.tcp.SystemClock", lambda: clock)  # as conformance
    poison = DestinationPolicy(max_delivery_attempts=2)
    st, http = start(clock=clock, broker=BrokerConfig(policies={"queue://m.poison": poison}))
    conn = factory(st).create_connection()
    conn.start()
    try:
        s = conn.create_session()
        work = s.create_producer(Queue("m.work"))
        for i in range(10):
            work.send(TextMessage(f"w{i}"))
        consumer = s.create_consumer(Queue("m.work"))
        for _ in range(4):
            assert consumer.receive(5) is not None  # AUTO_ACKNOWLEDGE: 4 dequeued
        consumer.close()
        ttl = s.create_producer(Queue("m.ttl"))
        for _ in range(3):
            ttl.send(TextMessage("short"), time_to_live=5)
        clock.advance(61)  # past the TTL and the reaper's interval: 3 expired
        s.create_producer(Queue("m.poison")).send(TextMessage("bad"))
        tx = conn.create_session(True, Session.SESSION_TRANSACTED)
        pc = tx.create_consumer(Queue("m.poison"))
        for _ in range(2):
            assert pc.receive(5) is not None
            tx.rollback()  # 1st: redelivered; 2nd: max_delivery_attempts, dead-lettered
        assert pc.receive(0.2) is None
        reply = http.get("/metrics")
        assert reply.status == 200
        assert reply.headers["Content-Type"].startswith("text/plain")
        samples = _samples(reply.body.decode())
        stats = {d.name: d for d in st.call(lambda: st.server.broker.stats())}  # type: ignore[union-attr]
    finally:
        conn.close()

    expected = {
        ("m.work", "enqueued"): 10,
        ("m.work", "dequeued"): 4,
        ("m.work", "depth"): 6,
        ("m.ttl", "enqueued"): 3,
        ("m.ttl", "expired"): 3,
        ("m.ttl", "depth"): 0,
        ("m.poison", "redelivered"): 1,
        ("m.poison", "dead_lettered"): 1,
        ("DLQ", "enqueued"): 1,
        ("DLQ", "depth"): 1,
    }
    for (name, field), value in expected.items():
        assert getattr(stats[f"queue://{name}"], field) == value, (name, field)
    for name, st_ in stats.items():
        for family, field in DEST_FAMILIES.items():
            key = (family, (("destination", name),))
            assert samples[key] == getattr(st_, field), (family, name)
    assert samples[("ternmq_connections", (("protocol", "native"),))] == 1
    # the store (SQLite) committed the persistent sends; the histogram counts every commit
    commits = samples[("ternmq_store_commits_total", ())]
    assert commits >= 1
    assert samples[("ternmq_store_commit_seconds_count", ())] == commits
    assert samples[("ternmq_store_commit_seconds_bucket", (("le", "+Inf"),))] == commits
    assert samples[("ternmq_store_commit_seconds_sum", ())] > 0
    assert samples[("process_resident_memory_bytes", ())] > 0


def test_connections_gauge_follows_the_connections(start: Start) -> None:
    st, http = start()
    conns = [factory(st).create_connection() for _ in range(3)]
    try:
        samples = _samples(http.get("/metrics").body.decode())
        assert samples[("ternmq_connections", (("protocol", "native"),))] == 3
    finally:
        for c in conns:
            c.close()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        samples = _samples(http.get("/metrics").body.decode())
        if samples[("ternmq_connections", (("protocol", "native"),))] == 0:
            break
        time.sleep(0.02)
    assert samples[("ternmq_connections", (("protocol", "native"),))] == 0


def test_the_grafana_dashboard_uses_only_served_families(start: Start) -> None:
    """docs/grafana-dashboard.json stays on the names /metrics serves."""
    import json
    import pathlib
    import re

    st, http = start()
    factory(st).create_connection().close()
    http.post("/api/destinations", {"name": "queue://g"})
    served = {name for name, _ in _samples(http.get("/metrics").body.decode())}
    path = pathlib.Path(__file__).resolve().parents[2] / "docs" / "grafana-dashboard.json"
    dashboard = json.loads(path.read_text(encoding="utf-8"))
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    used = {m for e in exprs for m in re.findall(r"\b((?:ternmq|process)_[a-z_]+)", e)}
    assert used and used <= served, sorted(used - served)
