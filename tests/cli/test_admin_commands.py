"""``ternmq browse``, ``stat`` and ``purge``."""

from __future__ import annotations

import json
import pathlib
import uuid

import pytest

from ternmq import (
    ConnectionFactory,
    DeliveryMode,
    EmbeddedBroker,
    Queue,
    Session,
    Topic,
)
from ternmq.client import _admin
from ternmq.store import MemoryStore

from ._support import one_line_error, run


def _send(url: str, dest: Queue | Topic, n: int, **kw: object) -> None:
    with ConnectionFactory(url).create_connection() as conn:
        s = conn.create_session()
        p = s.create_producer(dest)
        for i in range(n):
            m = s.create_text_message(f"m{i}")
            m.set_int_property("i", i)
            p.send(m, **kw)  # type: ignore[arg-type]


def _table(out: str) -> dict[str, list[str]]:
    rows = [line.split() for line in out.splitlines()]
    return {r[0] if r[0] != "sub" else f"sub {r[1]}": r for r in rows}


# ---- browse ---------------------------------------------------------------------------------


def test_browse_shows_without_consuming(
    capsys: pytest.CaptureFixture[str], broker: EmbeddedBroker
) -> None:
    _send(broker.url, Queue("b"), 3)
    r = run(capsys, broker.url, "browse", "queue://b")
    assert r.code == 0, r.err
    assert [x for x in r.out.splitlines() if x.startswith("  text:")] == [
        "  text: m0",
        "  text: m1",
        "  text: m2",
    ]
    assert r.out.splitlines()[-1] == "3 messages on queue://b"
    r2 = run(capsys, broker.url, "browse", "queue://b")
    assert r2.out == r.out  # nothing was consumed


def test_browse_limit_and_selector(
    capsys: pytest.CaptureFixture[str], broker: EmbeddedBroker
) -> None:
    _send(broker.url, Queue("bl"), 250)
    r = run(capsys, broker.url, "browse", "queue://bl")
    assert r.out.count("  text: ") == 100  # the default limit
    assert r.out.splitlines()[-1] == (
        "100 messages on queue://bl shown; the queue holds more (raise --limit, or 0 for all)"
    )
    r = run(capsys, broker.url, "browse", "queue://bl", "--limit", "2")
    assert r.out.count("  text: ") == 2
    r = run(capsys, broker.url, "browse", "queue://bl", "--limit", "0")
    assert r.out.count("  text: ") == 250
    assert r.out.splitlines()[-1] == "250 messages on queue://bl"
    r = run(capsys, broker.url, "browse", "queue://bl", "--limit", "250")
    assert r.out.splitlines()[-1] == "250 messages on queue://bl"
    r = run(capsys, broker.url, "browse", "queue://bl", "--selector", "i >= 248")
    assert r.out.count("  text: ") == 2
    assert r.out.splitlines()[-1] == "2 messages on queue://bl matching 'i >= 248'"


def test_browse_empty_and_errors(
    capsys: pytest.CaptureFixture[str], broker: EmbeddedBroker
) -> None:
    _send(broker.url, Queue("none"), 0)
    with ConnectionFactory(broker.url).create_connection() as conn:
        conn.create_session().create_consumer(Queue("none")).close()
    r = run(capsys, broker.url, "browse", "queue://none")
    assert r.code == 0 and r.out == "0 messages on queue://none\n"
    one_line_error(run(capsys, broker.url, "browse", "topic://t"), 2, "only queues")
    one_line_error(run(capsys, broker.url, "browse", "nope"), 2, "cannot parse destination")
    r = run(capsys, broker.url, "browse", "queue://none", "--selector", "((")
    one_line_error(r, 1, "invalid message selector")


# ---- stat -----------------------------------------------------------------------------------


def test_stat_table(capsys: pytest.CaptureFixture[str], broker: EmbeddedBroker) -> None:
    _send(broker.url, Queue("orders"), 5)
    with ConnectionFactory(broker.url, prefetch=0).create_connection() as conn:
        conn.client_id = "audit"
        conn.start()
        s = conn.create_session(False, Session.CLIENT_ACKNOWLEDGE)
        k = s.create_consumer(Queue("orders"))
        assert k.receive(1.0) is not None  # in flight: received, not acknowledged
        durable = s.create_durable_consumer(Topic("prices"), "eu")
        durable.close()
        _send(broker.url, Topic("prices"), 2)
        plain = s.create_consumer(Topic("prices"))
        r = run(capsys, broker.url, "stat")
        assert r.code == 0, r.err
        lines = r.out.splitlines()
        assert lines[0].split() == [
            "destination",
            "kind",
            "depth",
            "in-flight",
            "consumers",
            "enqueued",
            "dequeued",
            "paged",
            "duplicates",
        ]
        t = _table(r.out)
        assert t["queue://orders"] == ["queue://orders", "queue", "5", "1", "1", "5", "0", "0", "0"]
        assert t["topic://prices"] == ["topic://prices", "topic", "2", "0", "1", "2", "0", "0", "0"]
        assert t["sub audit:eu"] == ["sub", "audit:eu", "durable", "2", "0", "0"]
        nd = [v for k2, v in t.items() if k2.startswith("sub nd:")]
        assert len(nd) == 1 and nd[0][2:] == ["none", "0", "0", "1"]
        # Rows are sorted by name, and subscriptions follow their topic.
        names = [x.split()[0] for x in lines[1:] if not x.startswith("  ")]
        assert names == sorted(names)
        assert lines.index(next(x for x in lines if "audit:eu" in x)) > lines.index(
            next(x for x in lines if x.startswith("topic://prices"))
        )
        plain.close()


def test_stat_counts_dropped_duplicates_psf_09(
    capsys: pytest.CaptureFixture[str], broker: EmbeddedBroker
) -> None:
    """PSF-09: ``ternmq stat`` shows how many sends each destination dropped as duplicates."""
    with ConnectionFactory(broker.url).create_connection() as conn:
        s = conn.create_session()
        producer = s.create_producer(Queue("once"))
        for _ in range(3):
            m = s.create_text_message("x")
            m.set_string_property("JMS_TernMQ_DuplicateID", "same")
            producer.send(m)
    r = run(capsys, broker.url, "stat", "queue://once")
    assert r.code == 0, r.err
    assert _table(r.out)["queue://once"] == [
        "queue://once",
        "queue",
        "1",
        "0",
        "0",
        "1",
        "0",
        "0",
        "2",
    ]


def test_stat_one_destination_and_json(
    capsys: pytest.CaptureFixture[str], broker: EmbeddedBroker
) -> None:
    _send(broker.url, Queue("a"), 2)
    _send(broker.url, Queue("b"), 1, delivery_mode=DeliveryMode.NON_PERSISTENT)
    _send(broker.url, Queue("b"), 1, delivery_delay=60.0)
    r = run(capsys, broker.url, "stat", "queue://b")
    assert r.code == 0
    assert [x.split()[0] for x in r.out.splitlines()] == ["destination", "queue://b"]
    r = run(capsys, broker.url, "stat", "--json")
    data = json.loads(r.out)
    assert [d["name"] for d in data] == ["queue://a", "queue://b"]
    b = data[1]
    assert b["kind"] == "queue"
    assert (b["depth"], b["scheduled"], b["in_flight"], b["consumers"]) == (2, 1, 0, 0)
    assert (b["enqueued"], b["dequeued"], b["paged"]) == (2, 0, 0)
    assert b["memory_bytes"] > 0 and b["subscriptions"] == []


def test_stat_empty_and_errors(capsys: pytest.CaptureFixture[str], broker: EmbeddedBroker) -> None:
    r = run(capsys, broker.url, "stat")
    assert r.code == 0 and r.out.splitlines()[-1] == "(no destinations)"
    r = run(capsys, broker.url, "stat", "queue://missing")
    one_line_error(r, 1, "queue://missing does not exist on this broker")
    one_line_error(run(capsys, broker.url, "stat", "missing"), 2, "cannot parse destination")


def test_stat_counts_paged_messages(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    with EmbeddedBroker(
        f"clipage-{uuid.uuid4().hex[:8]}", str(tmp_path), max_bytes=5_000
    ) as broker:
        with ConnectionFactory(broker.url).create_connection() as conn:
            tx = conn.create_session(True)
            p = tx.create_producer(Queue("big"))
            for _ in range(40):
                p.send(tx.create_text_message("x" * 1000))
            tx.commit()
        r = run(capsys, broker.url, "stat", "queue://big", "--json")
        (d,) = json.loads(r.out)
        assert d["depth"] == 40
        assert d["paged"] >= 30
        assert d["memory_bytes"] <= 5_000
        r = run(capsys, broker.url, "purge", "queue://big")
        assert r.out == "purged 40 messages from queue://big\n"


# ---- purge ----------------------------------------------------------------------------------


def test_purge_keeps_in_flight_messages(
    capsys: pytest.CaptureFixture[str], broker: EmbeddedBroker
) -> None:
    _send(broker.url, Queue("p"), 4)
    _send(broker.url, Queue("p"), 1, delivery_delay=60.0)
    with ConnectionFactory(broker.url, prefetch=0).create_connection() as conn:
        conn.start()
        s = conn.create_session(False, Session.CLIENT_ACKNOWLEDGE)
        k = s.create_consumer(Queue("p"))
        held = k.receive(1.0)
        assert held is not None
        r = run(capsys, broker.url, "purge", "queue://p")
        assert r.code == 0, r.err
        assert r.out == "purged 4 messages from queue://p\n"  # 3 ready + 1 scheduled
        (st,) = _admin.stat(conn, "queue://p")
        assert (st.depth, st.in_flight, st.scheduled, st.dequeued) == (1, 1, 0, 4)
        s.recover()  # the in-flight one comes back and is still there
        again = k.receive(1.0)
        assert again is not None and again.jms_message_id == held.jms_message_id
        again.acknowledge()
    r = run(capsys, broker.url, "purge", "queue://p")
    assert r.out == "purged 0 messages from queue://p\n"


def test_purge_removes_persistent_messages_from_the_store(
    capsys: pytest.CaptureFixture[str],
) -> None:
    store = MemoryStore()
    b = EmbeddedBroker(f"clistore-{uuid.uuid4().hex[:8]}", store=store).start()
    try:
        _send(b.url, Queue("keep"), 2)
        _send(b.url, Queue("gone"), 3)
        _send(b.url, Queue("gone"), 2, delivery_mode=DeliveryMode.NON_PERSISTENT)
        r = run(capsys, b.url, "purge", "queue://gone")
        assert r.out == "purged 5 messages from queue://gone\n"
        b.stop()
        b.start()  # recovers from the same store
        with ConnectionFactory(b.url).create_connection() as conn:
            stats = {d.name: d.depth for d in _admin.stat(conn)}
        assert stats.get("queue://keep") == 2
        assert stats.get("queue://gone", 0) == 0
    finally:
        b.stop()


def test_purge_one_message(capsys: pytest.CaptureFixture[str], broker: EmbeddedBroker) -> None:
    _send(broker.url, Queue("one"), 1)
    r = run(capsys, broker.url, "purge", "queue://one")
    assert r.code == 0 and r.out == "purged 1 message from queue://one\n"


def test_purge_errors(capsys: pytest.CaptureFixture[str], broker: EmbeddedBroker) -> None:
    one_line_error(run(capsys, broker.url, "purge", "topic://t"), 2, "only queues can be purged")
    r = run(capsys, broker.url, "purge", "queue://missing")
    one_line_error(r, 1, "queue://missing does not exist on this broker")
    one_line_error(run(capsys, broker.url, "purge", "q"), 2, "cannot parse destination 'q'")
    with pytest.raises(SystemExit):
        run(capsys, broker.url, "purge")
