"""ternmq.spark without Spark running: options, range splits, the read schema and the
message <-> Arrow conversions of readers and writers."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
import pickle
from dataclasses import dataclass

import pyarrow as pa  # tests/spark/conftest.py says what to install when this is missing
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    DoubleType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from ternmq.broker.embedded import EmbeddedBroker
from ternmq.client import ConnectionFactory
from ternmq.client._admin import stat
from ternmq.client.sequenced import commit_staged, log_bounds, stage
from ternmq.destination import Queue, Topic
from ternmq.message import (
    BytesMessage,
    MapMessage,
    Message,
    ObjectMessage,
    StreamMessage,
    TextMessage,
)
from ternmq.message import _convert as cv
from ternmq.message._types import T
from ternmq.message.codec import encode_message
from ternmq.spark._options import (
    DEFAULT_MESSAGES_PER_PARTITION,
    OptionError,
    ReadOptions,
    WriteOptions,
    parse_delivery_mode,
    split_by_count,
    split_even,
)
from ternmq.spark._schema import (
    ARROW_SCHEMA,
    SCHEMA,
    _property_text,
    records_to_batch,
)
from ternmq.spark._source import SeqRange, StagedWrite, StreamReader, make_txid
from ternmq.spark._write import (
    RowError,
    SchemaError,
    batch_to_messages,
    check_write_schema,
)

pytestmark = pytest.mark.spark

URL = "tcp://127.0.0.1:61616"


@dataclass(frozen=True)
class Rec:
    """A stand-in for ``ternmq.client.sequenced.LogRecord``."""

    seq: int
    delivery_count: int
    data: bytes


def _batch(*msgs: Message, first_seq: int = 1) -> list[dict[str, object]]:
    recs = [Rec(first_seq + i, 1, encode_message(m)) for i, m in enumerate(msgs)]
    batch = records_to_batch(recs)
    assert batch.schema.equals(ARROW_SCHEMA)
    rows: list[dict[str, object]] = batch.to_pylist()
    return rows


# ---- options --------------------------------------------------------------------------------


def test_read_options_defaults_and_case_insensitive_keys() -> None:
    opts = ReadOptions.parse({"URL": URL, "Destination": " queue://orders "})
    assert opts.url == URL and opts.destination == "queue://orders"
    assert opts.subscription is None and opts.selector is None and not opts.is_topic
    assert opts.starting_position == "earliest" and opts.max_messages_per_trigger is None
    assert opts.partitions is None
    assert opts.messages_per_partition == DEFAULT_MESSAGES_PER_PARTITION
    opts = ReadOptions.parse(
        {
            "url": URL,
            "destination": "topic://events",
            "subscription": "s1",
            "selector": "region = 'eu'",
            "maxmessagespertrigger": "500",
            "STARTINGPOSITION": "Latest",
            "partitions": "3",
            "messagesPerPartition": "7",
            "readChunkSize": "11",
            "user": "u",
            "password": "p",
        }
    )
    assert opts.is_topic and opts.subscription == "s1" and opts.selector == "region = 'eu'"
    assert (opts.max_messages_per_trigger, opts.starting_position) == (500, "latest")
    assert (opts.partitions, opts.messages_per_partition, opts.read_chunk) == (3, 7, 11)
    assert (opts.user, opts.password) == ("u", "p")
    assert pickle.loads(pickle.dumps(opts)) == opts


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"destination": "queue://q"}, "url is required"),
        ({"url": "vm://x", "destination": "queue://q"}, "tcp://HOST:PORT"),
        ({"url": "http://x", "destination": "queue://q"}, "tcp://HOST:PORT"),
        ({"url": URL}, "destination is required"),
        ({"url": URL, "destination": "orders"}, "queue://NAME"),
        ({"url": URL, "destination": "temp-queue://x"}, "temporary"),
        ({"url": URL, "destination": "topic://t"}, "subscription"),
        ({"url": URL, "destination": "queue://q", "subscription": "s"}, "topics only"),
        ({"url": URL, "destination": "queue://q", "startingPosition": "middle"}, "earliest"),
        ({"url": URL, "destination": "queue://q", "maxMessagesPerTrigger": "x"}, "integer"),
        ({"url": URL, "destination": "queue://q", "maxMessagesPerTrigger": "0"}, "at least 1"),
        ({"url": URL, "destination": "queue://q", "partitions": "-2"}, "at least 1"),
    ],
)
def test_read_options_errors_name_the_option(options: dict[str, str], fragment: str) -> None:
    with pytest.raises(OptionError, match=fragment):
        ReadOptions.parse(options)


def test_write_options() -> None:
    opts = WriteOptions.parse({"url": URL})
    assert opts.destination is None and opts.sink_id is None and opts.batch_id == 0
    assert (opts.delivery_mode, opts.priority, opts.time_to_live) == (2, 4, 0)
    opts = WriteOptions.parse(
        {
            "url": URL,
            "destination": "topic://t",
            "deliveryMode": "non-persistent",
            "priority": "9",
            "timeToLive": "60000",
            "sinkId": "sink",
            "batchId": "7",
            "checkpointlocation": "/tmp/ck",
        }
    )
    assert opts.destination == "topic://t" and opts.sink_id == "sink" and opts.batch_id == 7
    assert (opts.delivery_mode, opts.priority, opts.time_to_live) == (1, 9, 60000)
    assert opts.checkpoint_location == "/tmp/ck"
    with pytest.raises(OptionError, match="0 … 9"):
        WriteOptions.parse({"url": URL, "priority": "10"})
    with pytest.raises(OptionError, match="PERSISTENT"):
        WriteOptions.parse({"url": URL, "deliveryMode": "sometimes"})


def test_parse_delivery_mode() -> None:
    for value in ("PERSISTENT", "persistent", "2", 2):
        assert parse_delivery_mode(value) == 2
    for value in ("NON_PERSISTENT", "Non-Persistent", "1", 1):
        assert parse_delivery_mode(value) == 1
    for bad in ("3", 0, True, "durable"):
        with pytest.raises(OptionError):
            parse_delivery_mode(bad)  # type: ignore[arg-type]


# ---- range splits ---------------------------------------------------------------------------


@given(st.integers(-5, 1000), st.integers(0, 1000), st.integers(1, 20))
def test_split_even_covers_the_range_exactly(after: int, width: int, parts: int) -> None:
    ranges = split_even(after, after + width, parts)
    assert len(ranges) == min(parts, width)
    cursor = after
    for lo, hi in ranges:
        assert lo == cursor and hi > lo
        cursor = hi
    assert cursor == (after + width if width else after)


@given(
    st.lists(st.integers(1, 500), unique=True, max_size=80).map(sorted),
    st.integers(0, 100),
    st.integers(0, 600),
    st.integers(1, 12),
    st.integers(1, 10),
)
def test_split_by_count_partitions_hold_at_most_n_messages(
    held: list[int], after: int, width: int, per: int, max_parts: int
) -> None:
    upto = after + width

    def next_cut(cursor: int, n: int) -> int:  # log_bounds(after=cursor, max_messages=n).latest
        later = [s for s in held if s > cursor]
        if not later:
            return held[-1] if held else 0
        return later[min(n, len(later)) - 1]

    ranges = split_by_count(after, upto, per, next_cut, max_partitions=max_parts)
    cursor = after
    for lo, hi in ranges:
        assert lo == cursor and hi > lo
        cursor = hi
    assert cursor == max(after, upto)
    assert len(ranges) <= max_parts
    inside = [s for s in held if after < s <= upto]
    counts = [sum(1 for s in inside if lo < s <= hi) for lo, hi in ranges]
    assert sum(counts) == len(inside)
    if len(ranges) < max_parts:
        assert all(c <= per for c in counts)
        assert all(c == per for c in counts[:-1])


# ---- read schema and message -> row ---------------------------------------------------------


def test_arrow_schema_is_what_spark_expects() -> None:
    assert ARROW_SCHEMA.equals(to_arrow_schema(SCHEMA, timezone="UTC"))
    assert [f.name for f in SCHEMA.fields] == [
        "message_id",
        "destination",
        "sequence",
        "timestamp",
        "delivery_mode",
        "priority",
        "expiration",
        "correlation_id",
        "type",
        "reply_to",
        "redelivered",
        "delivery_count",
        "properties",
        "typed_properties",
        "body_type",
        "text_body",
        "bytes_body",
    ]


def test_text_message_row_has_every_header() -> None:
    m = TextMessage("hello")
    m.jms_destination = Queue("orders")
    m.jms_message_id = "ID:abc-1"
    m.jms_timestamp = 1_700_000_000_123
    m.jms_expiration = 1_700_000_060_000
    m.jms_priority = 7
    m.jms_delivery_mode = 1
    m.jms_correlation_id = "corr-1"
    m.jms_type = "order"
    m.jms_reply_to = Topic("replies")
    (row,) = _batch(m, first_seq=42)
    utc = dt.UTC
    assert row["message_id"] == "ID:abc-1"
    assert row["destination"] == "queue://orders"
    assert row["sequence"] == 42
    assert row["timestamp"] == dt.datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=utc)
    assert row["expiration"] == dt.datetime(2023, 11, 14, 22, 14, 20, tzinfo=utc)
    assert (row["delivery_mode"], row["priority"]) == ("NON_PERSISTENT", 7)
    assert (row["correlation_id"], row["type"], row["reply_to"]) == (
        "corr-1",
        "order",
        "topic://replies",
    )
    assert (row["redelivered"], row["delivery_count"]) == (False, 1)
    assert (row["body_type"], row["text_body"], row["bytes_body"]) == ("text", "hello", None)
    assert row["properties"] == [] and row["typed_properties"] == []


def test_unset_headers_are_null_and_redelivery_counts() -> None:
    m = Message()
    m.set_jms_correlation_id_as_bytes(b"\xffab")
    rec = Rec(3, 2, encode_message(m))
    (row,) = records_to_batch([rec]).to_pylist()
    assert row["timestamp"] is None and row["expiration"] is None  # 0 = unset / never
    assert row["destination"] is None and row["message_id"] is None
    assert row["correlation_id"] == "\\xffab"
    assert (row["redelivered"], row["delivery_count"]) == (True, 2)
    assert (row["body_type"], row["text_body"], row["bytes_body"]) == ("message", None, None)


def test_timestamps_are_clamped_to_the_spark_range() -> None:
    late, early = Message(), Message()
    late.jms_timestamp, late.jms_expiration = 1, 2**63 - 1
    early.jms_expiration = -(2**63)
    rows = records_to_batch([Rec(1, 1, encode_message(late)), Rec(2, 1, encode_message(early))])
    micros = rows.select(["timestamp", "expiration"]).cast(
        pa.schema([("timestamp", pa.int64()), ("expiration", pa.int64())])
    )
    assert micros.column("timestamp").to_pylist() == [1000, None]
    assert micros.column("expiration").to_pylist() == [
        253_402_300_799_999_000,
        -62_135_596_800_000_000,
    ]


def test_bodies_of_every_type() -> None:
    b = BytesMessage()
    b.write_bytes(b"\x00\x01\x02")
    mp = MapMessage()
    mp.set_int("n", 3)
    mp.set_bytes("raw", b"\x00\xff")
    mp.set_string("s", "x")
    mp.set_boolean("ok", True)
    sm = StreamMessage()
    sm.write_double(1.5)
    sm.write_string(None)
    sm.write_char("c")
    om = ObjectMessage({"k": [1, 2], "t": (3,)})
    empty_object = ObjectMessage()
    rows = _batch(b, mp, sm, om, empty_object, TextMessage(None))
    assert [r["body_type"] for r in rows] == ["bytes", "map", "stream", "object", "object", "text"]
    assert (rows[0]["text_body"], rows[0]["bytes_body"]) == (None, b"\x00\x01\x02")
    assert json.loads(rows[1]["text_body"]) == {"n": 3, "raw": "AP8=", "s": "x", "ok": True}
    assert json.loads(rows[2]["text_body"]) == [1.5, None, "c"]
    assert json.loads(rows[3]["text_body"]) == {"k": [1, 2], "t": [3]}
    assert pickle.loads(rows[3]["bytes_body"]) == {"k": [1, 2], "t": (3,)}
    assert (rows[4]["text_body"], rows[4]["bytes_body"]) == (None, None)
    assert (rows[5]["text_body"], rows[5]["bytes_body"]) == (None, None)


class _Custom:
    pass


def test_object_body_of_an_untrusted_class_keeps_only_the_octets() -> None:
    (row,) = _batch(ObjectMessage(_Custom()))
    assert row["text_body"] is None and isinstance(row["bytes_body"], bytes)


_SETTERS = {
    "boolean": ("set_boolean_property", st.booleans()),
    "byte": ("set_byte_property", st.integers(-128, 127)),
    "short": ("set_short_property", st.integers(-(2**15), 2**15 - 1)),
    "int": ("set_int_property", st.integers(-(2**31), 2**31 - 1)),
    "long": ("set_long_property", st.integers(-(2**63), 2**63 - 1)),
    "float": ("set_float_property", st.floats(width=32)),
    "double": ("set_double_property", st.floats()),
    "String": ("set_string_property", st.text(st.characters(exclude_categories=("Cs",)))),
    "null": ("set_string_property", st.none()),
}

_property = st.sampled_from(sorted(_SETTERS)).flatmap(
    lambda kind: _SETTERS[kind][1].map(lambda v: (kind, v))
)
_names = st.from_regex(r"[a-z][a-zA-Z0-9_]{0,8}", fullmatch=True).filter(
    lambda n: (
        n.upper()
        not in {
            "NOT",
            "AND",
            "OR",
            "BETWEEN",
            "LIKE",
            "IN",
            "IS",
            "NULL",
            "ESCAPE",
            "TRUE",
            "FALSE",
        }
    )
)


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


@given(st.dictionaries(_names, _property, max_size=6))
def test_properties_and_typed_properties_match_the_message(
    props: dict[str, tuple[str, object]],
) -> None:
    m = TextMessage("x")
    for name, (kind, value) in props.items():
        getattr(m, _SETTERS[kind][0])(name, value)
    (row,) = _batch(m)
    strings = dict(row["properties"])  # type: ignore[arg-type]
    typed = dict(row["typed_properties"])  # type: ignore[arg-type]
    assert set(strings) == set(typed) == set(props)
    for name in props:
        assert strings[name] == m.get_string_property(name)
        spec = typed[name]
        kind = m.get_property_type(name)
        assert spec["type"] == kind
        fields = {k: v for k, v in spec.items() if k != "type" and v is not None}
        value = m.get_object_property(name)
        if value is None:
            assert fields == {}
        else:
            field = {
                "boolean": "boolean_value",
                "String": "string_value",
                "float": "double_value",
                "double": "double_value",
            }.get(kind, "long_value")
            assert list(fields) == [field] and _same(fields[field], value)


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_double_text_fast_path_matches_java(x: float) -> None:
    assert _property_text(T.DOUBLE, x) == cv.to_string(T.DOUBLE, x)


# ---- writer schema and row -> message -------------------------------------------------------


def _schema(*fields: tuple[str, object]) -> StructType:
    return StructType([StructField(n, t) for n, t in fields])  # type: ignore[arg-type]


def test_write_schema_rejects_what_does_not_map() -> None:
    with pytest.raises(SchemaError, match="'value' does not map"):
        check_write_schema(
            _schema(("body", StringType()), ("value", StringType())),
            default_destination="queue://q",
        )
    with pytest.raises(SchemaError, match="needs a 'body' column"):
        check_write_schema(_schema(("destination", StringType())), default_destination=None)
    with pytest.raises(SchemaError, match="no destination"):
        check_write_schema(_schema(("body", StringType())), default_destination=None)
    with pytest.raises(SchemaError, match="'body' has type int"):
        check_write_schema(_schema(("body", IntegerType())), default_destination="queue://q")
    with pytest.raises(SchemaError, match="'priority' has type string"):
        check_write_schema(
            _schema(("body", StringType()), ("priority", StringType())),
            default_destination="queue://q",
        )
    with pytest.raises(SchemaError, match="'properties'"):
        check_write_schema(
            _schema(("body", StringType()), ("properties", MapType(StringType(), BinaryType()))),
            default_destination="queue://q",
        )
    with pytest.raises(SchemaError, match="'typed_properties'"):
        bad = StructType([StructField("string_value", StringType())])  # no type field
        check_write_schema(
            _schema(("body", StringType()), ("typed_properties", MapType(StringType(), bad))),
            default_destination="queue://q",
        )
    with pytest.raises(SchemaError, match="same role"):
        check_write_schema(
            _schema(("body", StringType()), ("BODY", StringType())), default_destination="queue://q"
        )


def test_write_layout() -> None:
    layout = check_write_schema(
        _schema(
            ("Body", BinaryType()),
            ("Destination", StringType()),
            ("correlation_id", BinaryType()),
            ("expiration", LongType()),
            ("properties", MapType(StringType(), DoubleType())),
        ),
        default_destination=None,
    )
    assert layout.body == "bytes" and layout.correlation_bytes
    assert not layout.expiration_timestamp and layout.property_type == "double"
    assert layout.columns["body"] == "Body" and layout.columns["destination"] == "Destination"


_TYPED = pa.map_(
    pa.string(),
    pa.struct(
        [
            ("type", pa.string()),
            ("string_value", pa.string()),
            ("long_value", pa.int64()),
            ("double_value", pa.float64()),
            ("boolean_value", pa.bool_()),
        ]
    ),
)


def test_batch_to_messages_sets_every_header() -> None:
    opts = WriteOptions.parse(
        {"url": URL, "destination": "queue://default", "priority": "6", "timeToLive": "1000"}
    )
    schema = _schema(
        ("body", StringType()),
        ("destination", StringType()),
        ("correlation_id", StringType()),
        ("type", StringType()),
        ("reply_to", StringType()),
        ("priority", IntegerType()),
        ("delivery_mode", StringType()),
        ("expiration", TimestampType()),
        ("time_to_live", LongType()),
        ("properties", MapType(StringType(), StringType())),
    )
    layout = check_write_schema(schema, default_destination=opts.destination)
    exp = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)
    batch = pa.RecordBatch.from_pydict(
        {
            "body": ["a", None, "c"],
            "destination": [None, "topic://t", "queue://q2"],
            "correlation_id": ["c1", None, None],
            "type": ["t1", None, None],
            "reply_to": ["queue://r", None, None],
            "priority": pa.array([None, 9, 0], type=pa.int32()),
            "delivery_mode": ["NON_PERSISTENT", None, "2"],
            "expiration": pa.array([exp, None, None], type=pa.timestamp("us", tz="UTC")),
            "time_to_live": pa.array([None, None, 5], type=pa.int64()),
            "properties": pa.array(
                [[("region", "eu"), ("n", None)], None, []], type=pa.map_(pa.string(), pa.string())
            ),
        }
    )
    out = batch_to_messages(batch, layout, opts, now_ms=10_000)
    assert [d for d, _ in out] == ["queue://default", "topic://t", "queue://q2"]
    m0, m1, m2 = (m for _, m in out)
    assert isinstance(m0, TextMessage) and m0.text == "a" and m1.text is None  # type: ignore[attr-defined]
    assert (m0.jms_correlation_id, m0.jms_type, str(m0.jms_reply_to)) == ("c1", "t1", "queue://r")
    assert [m.jms_priority for m in (m0, m1, m2)] == [6, 9, 0]
    assert [m.jms_delivery_mode for m in (m0, m1, m2)] == [1, 2, 2]
    assert m0.jms_expiration == int(exp.timestamp() * 1000)
    assert m1.jms_expiration == 11_000 and m2.jms_expiration == 10_005
    assert m0.get_property_type("region") == "String" and m0.get_string_property("region") == "eu"
    assert m0.property_exists("n") and m0.get_property_type("n") == "null"
    assert m1.get_property_names() == set() and m2.get_property_names() == set()


def test_batch_to_messages_bytes_bodies_and_typed_properties() -> None:
    opts = WriteOptions.parse({"url": URL, "destination": "queue://q"})
    typed_type = StructType(
        [
            StructField("type", StringType()),
            StructField("string_value", StringType()),
            StructField("long_value", LongType()),
            StructField("double_value", DoubleType()),
            StructField("boolean_value", BooleanType()),
        ]
    )
    layout = check_write_schema(
        _schema(
            ("body", BinaryType()),
            ("correlation_id", BinaryType()),
            ("expiration", LongType()),
            ("typed_properties", MapType(StringType(), typed_type)),
        ),
        default_destination=opts.destination,
    )
    spec = {"string_value": None, "long_value": None, "double_value": None, "boolean_value": None}
    batch = pa.RecordBatch.from_pydict(
        {
            "body": pa.array([b"\x01\x02", None], type=pa.binary()),
            "correlation_id": pa.array([b"\xff", None], type=pa.binary()),
            "expiration": pa.array([123, 0], type=pa.int64()),
            "typed_properties": pa.array(
                [
                    [
                        ("b", {**spec, "type": "byte", "long_value": 5}),
                        ("i", {**spec, "type": "int", "long_value": 70000}),
                        ("f", {**spec, "type": "float", "double_value": 0.5}),
                        ("ok", {**spec, "type": "BOOLEAN", "boolean_value": True}),
                        ("s", {**spec, "type": "String", "string_value": "x"}),
                        ("z", {**spec, "type": "null"}),
                    ],
                    None,
                ],
                type=_TYPED,
            ),
        }
    )
    (_, m0), (_, m1) = batch_to_messages(batch, layout, opts, now_ms=0)
    assert isinstance(m0, BytesMessage) and m0.get_body(bytes) == b"\x01\x02"
    assert isinstance(m1, BytesMessage) and m1.get_body(bytes) is None
    assert m0.get_jms_correlation_id_as_bytes() == b"\xff" and m0.jms_expiration == 123
    assert m1.jms_expiration == 0
    types = {n: m0.get_property_type(n) for n in m0.get_property_names()}
    assert types == {
        "b": "byte",
        "i": "int",
        "f": "float",
        "ok": "boolean",
        "s": "String",
        "z": "null",
    }
    assert m0.get_int_property("i") == 70000 and m0.get_float_property("f") == 0.5


@pytest.mark.parametrize(
    ("column", "values", "fragment"),
    [
        ("priority", pa.array([4, 12], type=pa.int32()), "row 1 .*'priority'"),
        ("destination", ["queue://ok", "nowhere"], "row 1 .*'destination'"),
        ("delivery_mode", ["PERSISTENT", "sometimes"], "row 1 .*'delivery_mode'"),
        ("time_to_live", pa.array([None, -1], type=pa.int64()), "row 1 .*'time_to_live'"),
        (
            "properties",
            pa.array([[("ok", "1")], [("bad name", "1")]], type=pa.map_(pa.string(), pa.string())),
            "row 1 .*'properties'",
        ),
    ],
)
def test_row_errors_name_row_and_column(column: str, values: object, fragment: str) -> None:
    opts = WriteOptions.parse({"url": URL, "destination": "queue://q"})
    batch = pa.RecordBatch.from_pydict({"body": ["a", "b"], column: values})
    spark_types = {
        "priority": IntegerType(),
        "destination": StringType(),
        "delivery_mode": StringType(),
        "time_to_live": LongType(),
        "properties": MapType(StringType(), StringType()),
    }
    layout = check_write_schema(
        _schema(("body", StringType()), (column, spark_types[column])),
        default_destination=opts.destination,
    )
    with pytest.raises(RowError, match=fragment):
        batch_to_messages(batch, layout, opts, now_ms=0)


@given(st.dictionaries(_names, _property, max_size=5), st.integers(0, 9), st.booleans())
def test_read_rows_write_back_to_the_same_message(
    props: dict[str, tuple[str, object]], priority: int, persistent: bool
) -> None:
    """A read row's columns, selected as writer input, rebuild an equivalent message."""
    m = TextMessage("body")
    m.jms_priority = priority
    m.jms_delivery_mode = 2 if persistent else 1
    m.jms_correlation_id = "cid"
    m.jms_type = "kind"
    m.jms_expiration = 1_900_000_000_000
    for name, (kind, value) in props.items():
        getattr(m, _SETTERS[kind][0])(name, value)
    batch = records_to_batch([Rec(1, 1, encode_message(m))])
    read_names = ["text_body", "correlation_id", "type", "priority", "delivery_mode"]
    read_names += ["expiration", "typed_properties"]
    inputs = batch.select(read_names).rename_columns(["body", *read_names[1:]])
    fields = {f.name: f.dataType for f in SCHEMA.fields}
    spark_schema = _schema(("body", StringType()), *((n, fields[n]) for n in read_names[1:]))
    opts = WriteOptions.parse({"url": URL, "destination": "queue://q"})
    layout = check_write_schema(spark_schema, default_destination=opts.destination)
    ((_, back),) = batch_to_messages(inputs, layout, opts, now_ms=0)
    assert back.text == "body"  # type: ignore[attr-defined]
    for attr in (
        "jms_priority",
        "jms_delivery_mode",
        "jms_correlation_id",
        "jms_type",
        "jms_expiration",
    ):
        assert getattr(back, attr) == getattr(m, attr)
    assert back.get_property_names() == m.get_property_names()
    for name in props:
        assert back.get_property_type(name) == m.get_property_type(name)
        assert _same(back.get_object_property(name), m.get_object_property(name))


# ---- partitions, commit messages, transaction ids -------------------------------------------


def test_partitions_and_commit_messages_pickle() -> None:
    part = SeqRange(10, 20)
    assert pickle.loads(pickle.dumps(part)) == part
    msg = StagedWrite(txid="t", count=3, batch_id=1, partition=0, attempt=0)
    assert pickle.loads(pickle.dumps(msg)) == msg


def test_txid_is_unique_per_task_attempt_and_call() -> None:
    a = make_txid("/ckpt/" + "x" * 500, 7, 3, 1)
    b = make_txid("/ckpt/" + "x" * 500, 7, 3, 1)
    assert a != b and len(a) < 80
    assert a.startswith("spark-") and "-b7-p3-a1-" in a
    assert a.split("-")[1] == b.split("-")[1]  # the sink digest
    assert make_txid("other", 7, 3, 1).split("-")[1] != a.split("-")[1]


def test_repeated_property_names_keep_their_type() -> None:
    opts = WriteOptions.parse({"url": URL, "destination": "queue://q"})
    layout = check_write_schema(
        _schema(("body", StringType()), ("properties", MapType(StringType(), IntegerType()))),
        default_destination=opts.destination,
    )
    values = [[("n", 1), ("JMSXGroupSeq", 5)], [("n", 2)], [("n", None)], [("bad-name", 3)]]
    batch = pa.RecordBatch.from_pydict(
        {
            "body": ["a", "b", "c", "d"],
            "properties": pa.array(values, type=pa.map_(pa.string(), pa.int32())),
        }
    )
    with pytest.raises(RowError, match=r"row 3 .*'properties'"):
        batch_to_messages(batch, layout, opts, now_ms=0)
    out = batch_to_messages(batch.slice(0, 3), layout, opts, now_ms=0)
    assert [m.get_property_type("n") for _, m in out] == ["int", "int", "null"]
    assert [m.get_object_property("n") for _, m in out] == [1, 2, None]
    assert out[0][1].get_property_type("JMSXGroupSeq") == "int"


# ---- the DataSource's planning methods (driver side, no Spark needed) -----------------------


def test_data_source_planning() -> None:
    from ternmq.spark import SCHEMA as PUBLIC_SCHEMA
    from ternmq.spark import TernmqDataSource
    from ternmq.spark._source import BatchWriter, StreamReader, StreamWriter

    assert TernmqDataSource.name() == "ternmq"
    write_schema = _schema(("body", StringType()))
    ds = TernmqDataSource({"url": URL, "destination": "queue://q"})
    assert ds.schema() is PUBLIC_SCHEMA
    reader = ds.streamReader(PUBLIC_SCHEMA)
    assert isinstance(reader, StreamReader)
    assert pickle.loads(pickle.dumps(reader))._opts == reader._opts
    with pytest.raises(OptionError, match="fixed schema"):
        ds.reader(write_schema)
    with pytest.raises(OptionError, match="append"):
        ds.writer(write_schema, True)
    first, second = ds.writer(write_schema, False), ds.writer(write_schema, False)
    assert isinstance(first, BatchWriter) and isinstance(second, BatchWriter)
    assert first.sink_id != second.sink_id  # a fresh sink per batch write job
    with pytest.raises(OptionError, match="checkpointLocation"):
        ds.streamWriter(write_schema, False)
    ds = TernmqDataSource({"url": URL, "destination": "queue://q", "checkpointLocation": "/ck"})
    stream_writer = ds.streamWriter(write_schema, False)
    assert isinstance(stream_writer, StreamWriter) and stream_writer.sink_id == "/ck"
    ds = TernmqDataSource({"url": URL, "checkpointLocation": "/ck", "sinkId": "orders-out"})
    with pytest.raises(SchemaError, match="no destination"):
        ds.streamWriter(write_schema, False)
    both = _schema(("body", StringType()), ("destination", StringType()))
    assert ds.streamWriter(both, True).sink_id == "orders-out"  # type: ignore[attr-defined]


def test_stream_reader_acknowledges_completed_batches_without_waiting() -> None:
    """``latestOffset(start)`` acknowledges the completed batch up to ``start``: without
    waiting while a new batch follows (``partitions`` collects the reply, and the messages
    are gone by then), before returning when nothing new came; the initial offset is never
    acknowledged, and a pickled copy carries no acknowledgement under way."""
    with (
        EmbeddedBroker("spark-stream-ack") as broker,
        ConnectionFactory(broker.url).create_connection() as conn,
    ):
        q = Queue("acks")
        stage(conn, "seed", 0, "t", [(q, TextMessage(f"m{i}")) for i in range(25)])
        commit_staged(conn, "seed", 0, ["t"])
        opts = ReadOptions.parse({"url": URL, "destination": str(q), "maxMessagesPerTrigger": "10"})
        reader = StreamReader(dataclasses.replace(opts, url=broker.url))  # vm:// for the test
        limit = reader.getDefaultReadLimit()
        start = reader.initialOffset()
        end = reader.latestOffset(start, limit)  # the initial offset: nothing acknowledged
        assert stat(conn, str(q))[0].depth == 25
        ends = [start["seq"], end["seq"]]
        while True:
            nxt = reader.latestOffset(end, limit)
            if nxt == end:
                break
            assert reader._ack_reply is not None  # under way
            assert pickle.loads(pickle.dumps(reader))._ack_reply is None
            reader.partitions(end, nxt)
            assert reader._ack_reply is None
            assert log_bounds(conn, q).earliest == end["seq"]  # everything up to it removed
            end = nxt
            ends.append(end["seq"])
        assert len(ends) == 4  # 10 + 10 + 5 messages
        assert stat(conn, str(q))[0].depth == 0  # the last batch: acknowledged on return
        reader.stop()
