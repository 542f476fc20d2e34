"""The ``ternmq`` data source end to end: a local SparkSession against a network broker.

Batch read (a snapshot, consumes nothing), batch write (every row lands; atomic; idempotent
with a sink id), streaming queue -> queue with ``availableNow`` (exactly once across a
restart from the checkpoint), a topic read through a shared durable subscription, and the
``latest`` starting position.
"""

from __future__ import annotations

import datetime as dt
import pathlib
from typing import Any

import pytest

from ternmq.client import Connection, ConnectionFactory
from ternmq.client.sequenced import ensure_subscription, log_bounds, read_range
from ternmq.destination import Queue, Topic
from ternmq.message import BytesMessage, MapMessage, Message, TextMessage
from ternmq.message.codec import decode_message

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]


def _connect(url: str) -> Connection:
    return ConnectionFactory(url).create_connection()


def _send(url: str, dest: str, messages: list[Message]) -> None:
    conn = _connect(url)
    try:
        session = conn.create_session()
        kind, _, name = dest.partition("://")
        producer = session.create_producer(Queue(name) if kind == "queue" else Topic(name))
        for m in messages:
            producer.send(m)
    finally:
        conn.close()


def _texts(n: int, prefix: str = "m", start: int = 0) -> list[Message]:
    out: list[Message] = []
    for i in range(start, start + n):
        m = TextMessage(f"{prefix}-{i:05d}")
        m.set_int_property("i", i)
        m.set_string_property("region", "eu" if i % 2 else "us")
        out.append(m)
    return out


def _held(url: str, dest: str, subscription: str | None = None) -> list[tuple[int, Message]]:
    """Every message the destination holds now, in sequence order (not consumed)."""
    conn = _connect(url)
    try:
        b = log_bounds(conn, dest, subscription=subscription)
        return [
            (rec.seq, decode_message(rec.data))
            for chunk in read_range(conn, dest, b.earliest, b.latest, subscription=subscription)
            for rec in chunk
        ]
    finally:
        conn.close()


def _bodies(url: str, dest: str) -> list[str]:
    return [m.get_body(str) or "" for _, m in _held(url, dest)]


def _reader(spark: Any, url: str, dest: str, **options: object) -> Any:
    r = spark.read.format("ternmq").option("url", url).option("destination", dest)
    for k, v in options.items():
        r = r.option(k, str(v))
    return r.load()


# ---- schema ---------------------------------------------------------------------------------


def test_schema_ddl_is_the_schema(spark: Any) -> None:
    from ternmq.spark import SCHEMA, SCHEMA_DDL

    assert spark.createDataFrame([], SCHEMA_DDL).schema == SCHEMA


def test_register_on_import_uses_the_active_session(spark: Any, monkeypatch: Any) -> None:
    import ternmq.spark

    seen: list[Any] = []
    monkeypatch.setattr(ternmq.spark, "register", seen.append)
    ternmq.spark._register_active()
    assert len(seen) == 1 and seen[0]._jsparkSession.equals(spark._jsparkSession)


# ---- batch read -----------------------------------------------------------------------------


def test_batch_read_is_a_snapshot_and_consumes_nothing(spark: Any, broker_url: str) -> None:
    extra: list[Message] = []
    b = BytesMessage()
    b.write_bytes(b"\x00\x01")
    extra.append(b)
    mp = MapMessage()
    mp.set_int("qty", 3)
    extra.append(mp)
    _send(broker_url, "queue://orders", _texts(300) + extra)
    before = [(seq, m.jms_message_id) for seq, m in _held(broker_url, "queue://orders")]

    df = _reader(spark, broker_url, "queue://orders", messagesPerPartition=100)
    assert df.rdd.getNumPartitions() == 4  # 302 messages in runs of 100
    rows = df.collect()
    again = _reader(spark, broker_url, "queue://orders", messagesPerPartition=100).collect()
    assert sorted(map(tuple, rows)) == sorted(map(tuple, again)) and len(rows) == 302
    after = [(seq, m.jms_message_id) for seq, m in _held(broker_url, "queue://orders")]
    assert after == before  # nothing consumed

    assert sorted((r["sequence"], r["message_id"]) for r in rows) == before
    by_body = {r["text_body"]: r for r in rows if r["body_type"] == "text"}
    r = by_body["m-00007"]
    assert r["destination"] == "queue://orders" and r["delivery_mode"] == "PERSISTENT"
    assert r["message_id"].startswith("ID:") and r["timestamp"] is not None
    assert r["properties"] == {"i": "7", "region": "eu"}
    assert r["typed_properties"]["i"]["type"] == "int"
    assert r["typed_properties"]["i"]["long_value"] == 7
    assert (r["delivery_count"], r["redelivered"], r["priority"]) == (1, False, 4)
    odd = sorted((r for r in rows if r["body_type"] != "text"), key=lambda r: r["sequence"])
    assert [(x["body_type"], x["bytes_body"], x["text_body"]) for x in odd] == [
        ("bytes", bytearray(b"\x00\x01"), None),
        ("map", None, '{"qty": 3}'),
    ]

    eu = _reader(spark, broker_url, "queue://orders", selector="region = 'eu'", partitions=3)
    assert eu.rdd.getNumPartitions() == 3
    assert sorted(r["text_body"] for r in eu.select("text_body").collect()) == [
        f"m-{i:05d}" for i in range(1, 300, 2)
    ]
    assert len(_held(broker_url, "queue://orders")) == 302


def test_batch_read_of_an_empty_queue(spark: Any, broker_url: str) -> None:
    _send(broker_url, "queue://empty", [])
    assert _reader(spark, broker_url, "queue://empty").count() == 0


def test_read_option_errors_fail_the_query(spark: Any, broker_url: str) -> None:
    with pytest.raises(Exception, match="subscription"):
        _reader(spark, broker_url, "topic://events").collect()


# ---- batch write ----------------------------------------------------------------------------


def test_batch_write_lands_every_row(spark: Any, broker_url: str) -> None:
    n = 100_000
    df = spark.range(n).selectExpr(
        "format_string('w-%06d', id) AS body",
        "map('id', cast(id AS string)) AS properties",
        "cast(id % 10 AS int) AS priority",
    )
    df.write.format("ternmq").option("url", broker_url).option("destination", "queue://bulk").mode(
        "append"
    ).save()
    held = _held(broker_url, "queue://bulk")
    assert len(held) == n
    assert sorted(m.get_body(str) or "" for _, m in held) == [f"w-{i:06d}" for i in range(n)]
    _, m = held[0]
    assert m.get_property_type("id") == "String"
    assert m.jms_priority == int(m.get_string_property("id") or 0) % 10


def test_batch_write_routes_by_destination_column(spark: Any, broker_url: str) -> None:
    expires = dt.datetime(2040, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    df = spark.createDataFrame(
        [
            ("a", "queue://left", "PERSISTENT", None),
            ("b", None, "NON_PERSISTENT", expires),
            ("c", "topic://t", None, None),
        ],
        "body string, destination string, delivery_mode string, expiration timestamp",
    )
    conn = _connect(broker_url)
    try:
        ensure_subscription(conn, "topic://t", "audit")
    finally:
        conn.close()
    df.write.format("ternmq").option("url", broker_url).option("destination", "queue://right").mode(
        "append"
    ).save()
    assert _bodies(broker_url, "queue://left") == ["a"]
    assert _bodies(broker_url, "queue://right") == ["b"]
    ((_, m),) = _held(broker_url, "topic://t", subscription="audit")
    assert m.get_body(str) == "c"
    ((_, right),) = _held(broker_url, "queue://right")
    assert right.jms_delivery_mode == 1
    assert right.jms_expiration == int(expires.timestamp() * 1000)


def test_batch_write_is_atomic_and_idempotent_with_a_sink_id(spark: Any, broker_url: str) -> None:
    good = spark.range(0, 100, numPartitions=2).selectExpr("cast(id AS string) AS body")
    bad = spark.range(0, 100, numPartitions=2).selectExpr(
        "cast(id AS string) AS body",
        "cast(CASE WHEN id = 99 THEN 12 ELSE 4 END AS int) AS priority",
    )

    def write(df: Any, **options: str) -> None:
        w = df.write.format("ternmq").option("url", broker_url).option("destination", "queue://q")
        for k, v in options.items():
            w = w.option(k, v)
        w.mode("append").save()

    with pytest.raises(Exception, match="priority"):
        write(bad)
    assert _held(broker_url, "queue://q") == []  # the other partition's rows were not published
    write(good, sinkId="nightly", batchId="20240101")
    write(good, sinkId="nightly", batchId="20240101")  # a re-run publishes nothing
    assert len(_held(broker_url, "queue://q")) == 100
    write(good, sinkId="nightly", batchId="20240102")
    assert len(_held(broker_url, "queue://q")) == 200


def test_batch_write_rejects_unknown_columns_and_overwrite(spark: Any, broker_url: str) -> None:
    df = spark.createDataFrame([("a", 1)], "body string, amount int")
    w = df.write.format("ternmq").option("url", broker_url).option("destination", "queue://q")
    with pytest.raises(Exception, match="'amount' does not map"):
        w.mode("append").save()
    with pytest.raises(Exception, match="append"):
        df.select("body").write.format("ternmq").option("url", broker_url).option(
            "destination", "queue://q"
        ).mode("overwrite").save()


# ---- streaming ------------------------------------------------------------------------------


def _stream_copy(
    spark: Any, url: str, source: str, sink: str, checkpoint: pathlib.Path, **options: object
) -> Any:
    """Run one availableNow query source -> sink (body and properties carried over)."""
    r = spark.readStream.format("ternmq").option("url", url).option("destination", source)
    for k, v in options.items():
        r = r.option(k, str(v))
    query = (
        r.load()
        .selectExpr("upper(text_body) AS body", "properties")
        .writeStream.format("ternmq")
        .option("url", url)
        .option("destination", sink)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert not query.isActive
    assert query.exception() is None
    return query


def test_stream_queue_to_queue_exactly_once_across_restart(
    spark: Any, broker_url: str, tmp_path: pathlib.Path
) -> None:
    _send(broker_url, "queue://in", _texts(1000, "in"))
    ckpt = tmp_path / "ckpt"
    q = _stream_copy(
        spark, broker_url, "queue://in", "queue://out", ckpt, maxMessagesPerTrigger=300
    )
    assert [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]] == [
        300,
        300,
        300,
        100,
    ]
    out = _bodies(broker_url, "queue://out")
    assert out == [f"IN-{i:05d}" for i in range(1000)]
    # Every completed batch is acknowledged, the last one when Spark asks for more offsets.
    assert _held(broker_url, "queue://in") == []

    _send(broker_url, "queue://in", _texts(500, "in", start=1000))
    _stream_copy(spark, broker_url, "queue://in", "queue://out", ckpt, maxMessagesPerTrigger=300)
    out = _bodies(broker_url, "queue://out")
    assert out == [f"IN-{i:05d}" for i in range(1500)]  # no duplicate, nothing missing
    _, m = _held(broker_url, "queue://out")[1234]
    assert m.get_string_property("i") == "1234"
    assert _held(broker_url, "queue://in") == []


def test_stream_topic_through_a_shared_durable_subscription(
    spark: Any, broker_url: str, tmp_path: pathlib.Path
) -> None:
    ckpt = tmp_path / "ckpt"
    opts = {"subscription": "spark-events", "selector": "region = 'eu'"}
    _send(broker_url, "topic://events", _texts(10, "early"))  # before the subscription: lost
    _stream_copy(spark, broker_url, "topic://events", "queue://eu", ckpt, **opts)
    assert _bodies(broker_url, "queue://eu") == []
    _send(broker_url, "topic://events", _texts(200, "ev"))
    _stream_copy(spark, broker_url, "topic://events", "queue://eu", ckpt, **opts)
    assert _bodies(broker_url, "queue://eu") == [f"EV-{i:05d}" for i in range(1, 200, 2)]
    # The stream acknowledged what it processed; the subscription keeps what comes later,
    # which a batch read shows (without consuming it).
    _send(broker_url, "topic://events", _texts(4, "late"))
    backlog = _reader(spark, broker_url, "topic://events", subscription="spark-events")
    for _ in range(2):
        late = [r["text_body"] for r in backlog.select("text_body").collect()]
        assert late == ["late-00001", "late-00003"]


def test_stream_starting_position_latest_skips_the_backlog(
    spark: Any, broker_url: str, tmp_path: pathlib.Path
) -> None:
    _send(broker_url, "queue://backlog", _texts(50, "old"))
    ckpt = tmp_path / "ckpt"
    _stream_copy(
        spark, broker_url, "queue://backlog", "queue://new", ckpt, startingPosition="latest"
    )
    assert _bodies(broker_url, "queue://new") == []
    _send(broker_url, "queue://backlog", _texts(20, "new"))
    _stream_copy(
        spark, broker_url, "queue://backlog", "queue://new", ckpt, startingPosition="latest"
    )
    assert _bodies(broker_url, "queue://new") == [f"NEW-{i:05d}" for i in range(20)]
