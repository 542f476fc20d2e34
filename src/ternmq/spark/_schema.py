"""The row schema of the ``ternmq`` data source and the conversion of messages into Arrow.

A reader decodes each :class:`~ternmq.client.sequenced.LogRecord` with
:func:`~ternmq.message.codec.decode_message` and lays the messages of one ``read_range`` chunk
out column by column (:class:`_Columns`), then builds one ``pyarrow.RecordBatch`` with
exactly the Arrow schema Spark derives from :data:`SCHEMA` (Spark 4.3 rejects any other,
``DATA_SOURCE_RETURN_SCHEMA_MISMATCH``). Maps are built from flat offsets/keys/items arrays,
so no per-row Python objects are handed to Arrow.

The column meanings are documented in the ``ternmq.spark`` package docstring. This module
reads the message model's internal slots (the contract documented in ``ternmq.message``),
as the codec and the selector engine do: it runs once per message read by Spark.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any, Final

import pyarrow as pa
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

from ternmq.message import (
    BytesMessage,
    MapMessage,
    Message,
    ObjectMessage,
    StreamMessage,
    TextMessage,
)
from ternmq.message import _convert as cv
from ternmq.message._types import T, Value
from ternmq.message.codec import decode_message

__all__ = [
    "ARROW_SCHEMA",
    "SCHEMA",
    "SCHEMA_DDL",
    "TYPED_PROPERTY",
    "TYPED_PROPERTY_DDL",
    "epoch_ms_to_micros",
    "messages_to_batch",
    "records_to_batch",
    "render_body",
]

#: The struct of one ``typed_properties`` value (see the package docstring).
TYPED_PROPERTY_DDL: Final = (
    "struct<type: string, string_value: string, long_value: bigint, "
    "double_value: double, boolean_value: boolean>"
)

#: The schema of every row a ``ternmq`` reader produces, as Spark DDL.
SCHEMA_DDL: Final = (
    "message_id string, destination string, sequence bigint, timestamp timestamp, "
    "delivery_mode string, priority int, expiration timestamp, correlation_id string, "
    "type string, reply_to string, redelivered boolean, delivery_count int, "
    "properties map<string, string>, "
    f"typed_properties map<string, {TYPED_PROPERTY_DDL}>, "
    "body_type string, text_body string, bytes_body binary"
)

#: :data:`TYPED_PROPERTY_DDL` as a Spark type.
TYPED_PROPERTY: Final = StructType(
    [
        StructField("type", StringType()),
        StructField("string_value", StringType()),
        StructField("long_value", LongType()),
        StructField("double_value", DoubleType()),
        StructField("boolean_value", BooleanType()),
    ]
)

#: :data:`SCHEMA_DDL` as a Spark type (every field nullable, as the DDL gives).
SCHEMA: Final = StructType(
    [
        StructField("message_id", StringType()),
        StructField("destination", StringType()),
        StructField("sequence", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("delivery_mode", StringType()),
        StructField("priority", IntegerType()),
        StructField("expiration", TimestampType()),
        StructField("correlation_id", StringType()),
        StructField("type", StringType()),
        StructField("reply_to", StringType()),
        StructField("redelivered", BooleanType()),
        StructField("delivery_count", IntegerType()),
        StructField("properties", MapType(StringType(), StringType())),
        StructField("typed_properties", MapType(StringType(), TYPED_PROPERTY)),
        StructField("body_type", StringType()),
        StructField("text_body", StringType()),
        StructField("bytes_body", BinaryType()),
    ]
)

#: The Arrow schema Spark expects of a record batch of :data:`SCHEMA` (timestamps in UTC µs).
ARROW_SCHEMA: Final[Any] = to_arrow_schema(SCHEMA, timezone="UTC")

_FIELD_TYPES: Final = {f.name: f.type for f in ARROW_SCHEMA}
_PROPS_TYPE: Final = _FIELD_TYPES["properties"]
_TYPED_TYPE: Final = _FIELD_TYPES["typed_properties"]
_TYPED_STRUCT: Final = _TYPED_TYPE.item_type
_TS_TYPE: Final = _FIELD_TYPES["timestamp"]

# Spark's TimestampType covers years 0001 … 9999; epoch ms outside are clamped into it.
_MIN_MS: Final = -62_135_596_800_000
_MAX_MS: Final = 253_402_300_799_999

_MODE_NAMES: Final = {1: "NON_PERSISTENT", 2: "PERSISTENT"}

_LONG_TAGS: Final = frozenset({T.BYTE, T.SHORT, T.INT, T.LONG})
_DOUBLE_TAGS: Final = frozenset({T.FLOAT, T.DOUBLE})


def epoch_ms_to_micros(ms: int) -> int | None:
    """Epoch milliseconds as the microseconds of a Spark timestamp; 0 (unset) gives None.

    Values outside Spark's range (years 0001 … 9999) are clamped into it. Never raises.
    """
    if ms == 0:
        return None
    return min(max(ms, _MIN_MS), _MAX_MS) * 1000


def _json_default(value: object) -> object:
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, set | frozenset):
        return sorted(value, key=repr)
    if isinstance(value, complex):
        return str(value)
    return repr(value)


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, default=_json_default)


def _plain(tag: T, value: Value) -> object:
    """A typed body value as JSON-able Python (byte[] as base64 text)."""
    if tag is T.BYTES and isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return value


def render_body(msg: Message) -> tuple[str | None, bytes | None]:
    """``(text_body, bytes_body)`` of a message, as documented in the package docstring.

    Text: the text. Bytes: the octets. Map: a JSON object, Stream: a JSON array (byte[]
    values as base64 text). Object: the pickled octets in ``bytes_body`` and, when the object
    unpickles with the builtins-only unpickler, its JSON rendering in ``text_body``. A plain
    Message (no body) gives ``(None, None)``. Never raises.
    """
    if isinstance(msg, TextMessage):
        return msg._text, None
    if isinstance(msg, BytesMessage):
        return None, bytes(msg._buffer)
    if isinstance(msg, MapMessage):
        return _json({k: _plain(t, v) for k, (t, v) in msg._map.items()}), None
    if isinstance(msg, StreamMessage):
        return _json([_plain(t, v) for t, v in msg._items]), None
    if isinstance(msg, ObjectMessage):
        payload = msg._payload
        if payload is None:
            return None, None
        try:
            rendered: str | None = _json(msg.object)
        except Exception:  # an untrusted class, or not JSON-able: the octets still tell
            rendered = None
        return rendered, payload
    return None, None


def _property_text(tag: T, value: Value) -> str | None:
    """``get_string_property``'s Java text form, with a fast path for common doubles: in
    [1e-3, 1e7) (and zero) Java's shortest ``Double.toString`` equals Python's ``repr``
    (checked by a property test), and the general algorithm costs ~100 µs."""
    if tag is T.STRING:
        return value  # type: ignore[return-value]
    if tag is T.DOUBLE and isinstance(value, float) and (value == 0.0 or 1e-3 <= abs(value) < 1e7):
        return repr(value)
    return cv.to_string(tag, value)


def _correlation_id(cid: str | bytes | None) -> str | None:
    if cid is None or isinstance(cid, str):
        return cid
    return bytes(cid).decode("utf-8", errors="backslashreplace")


class _Columns:
    """Column lists of one record batch, filled one message at a time."""

    __slots__ = (
        "body_type",
        "bytes_body",
        "correlation_id",
        "delivery_count",
        "delivery_mode",
        "destination",
        "expiration",
        "message_id",
        "priority",
        "prop_keys",
        "prop_offsets",
        "prop_values",
        "redelivered",
        "reply_to",
        "sequence",
        "text_body",
        "timestamp",
        "type",
        "typed_bool",
        "typed_double",
        "typed_long",
        "typed_string",
        "typed_type",
    )

    def __init__(self) -> None:
        self.message_id: list[str | None] = []
        self.destination: list[str | None] = []
        self.sequence: list[int] = []
        self.timestamp: list[int | None] = []
        self.delivery_mode: list[str | None] = []
        self.priority: list[int] = []
        self.expiration: list[int | None] = []
        self.correlation_id: list[str | None] = []
        self.type: list[str | None] = []
        self.reply_to: list[str | None] = []
        self.redelivered: list[bool] = []
        self.delivery_count: list[int] = []
        self.prop_offsets: list[int] = [0]
        self.prop_keys: list[str] = []
        self.prop_values: list[str | None] = []
        self.typed_type: list[str] = []
        self.typed_string: list[str | None] = []
        self.typed_long: list[int | None] = []
        self.typed_double: list[float | None] = []
        self.typed_bool: list[bool | None] = []
        self.body_type: list[str] = []
        self.text_body: list[str | None] = []
        self.bytes_body: list[bytes | None] = []

    def add(self, msg: Message, seq: int, delivery_count: int) -> None:
        dest = msg._destination
        reply_to = msg._reply_to
        self.message_id.append(msg._message_id)
        self.destination.append(None if dest is None else str(dest))
        self.sequence.append(seq)
        self.timestamp.append(epoch_ms_to_micros(msg._timestamp))
        self.delivery_mode.append(_MODE_NAMES.get(msg._delivery_mode))
        self.priority.append(msg._priority)
        self.expiration.append(epoch_ms_to_micros(msg._expiration))
        self.correlation_id.append(_correlation_id(msg._correlation_id))
        self.type.append(msg._type)
        self.reply_to.append(None if reply_to is None else str(reply_to))
        self.redelivered.append(bool(msg._redelivered) or delivery_count > 1)
        self.delivery_count.append(delivery_count)
        types = msg._property_types
        if types:
            values = msg._properties
            for name, tag in types.items():
                value = values[name]
                self.prop_keys.append(name)
                self.prop_values.append(_property_text(tag, value))
                self.typed_type.append(cv.TYPE_NAMES[tag])
                self.typed_string.append(value if tag is T.STRING else None)  # type: ignore[arg-type]
                self.typed_long.append(value if tag in _LONG_TAGS else None)  # type: ignore[arg-type]
                self.typed_double.append(value if tag in _DOUBLE_TAGS else None)  # type: ignore[arg-type]
                self.typed_bool.append(value if tag is T.BOOLEAN else None)  # type: ignore[arg-type]
        self.prop_offsets.append(len(self.prop_keys))
        self.body_type.append(msg.body_type)
        text, octets = render_body(msg)
        self.text_body.append(text)
        self.bytes_body.append(octets)

    def batch(self) -> Any:
        offsets = pa.array(self.prop_offsets, type=pa.int32())
        keys = pa.array(self.prop_keys, type=pa.string())
        props = pa.MapArray.from_arrays(
            offsets, keys, pa.array(self.prop_values, type=pa.string()), type=_PROPS_TYPE
        )
        typed_items = pa.StructArray.from_arrays(
            [
                pa.array(self.typed_type, type=pa.string()),
                pa.array(self.typed_string, type=pa.string()),
                pa.array(self.typed_long, type=pa.int64()),
                pa.array(self.typed_double, type=pa.float64()),
                pa.array(self.typed_bool, type=pa.bool_()),
            ],
            fields=list(_TYPED_STRUCT),
        )
        typed = pa.MapArray.from_arrays(offsets, keys, typed_items, type=_TYPED_TYPE)
        arrays = [
            pa.array(self.message_id, type=pa.string()),
            pa.array(self.destination, type=pa.string()),
            pa.array(self.sequence, type=pa.int64()),
            pa.array(self.timestamp, type=_TS_TYPE),
            pa.array(self.delivery_mode, type=pa.string()),
            pa.array(self.priority, type=pa.int32()),
            pa.array(self.expiration, type=_TS_TYPE),
            pa.array(self.correlation_id, type=pa.string()),
            pa.array(self.type, type=pa.string()),
            pa.array(self.reply_to, type=pa.string()),
            pa.array(self.redelivered, type=pa.bool_()),
            pa.array(self.delivery_count, type=pa.int32()),
            props,
            typed,
            pa.array(self.body_type, type=pa.string()),
            pa.array(self.text_body, type=pa.string()),
            pa.array(self.bytes_body, type=pa.binary()),
        ]
        return pa.RecordBatch.from_arrays(arrays, schema=ARROW_SCHEMA)


def messages_to_batch(rows: Sequence[tuple[Message, int, int]]) -> Any:
    """One ``pyarrow.RecordBatch`` of :data:`ARROW_SCHEMA` from ``(message, sequence,
    delivery_count)`` triples, in order.

    Raises:
        pyarrow.ArrowInvalid: a value does not fit its column (a broken message model
            invariant; cannot happen for decoded messages).
    """
    cols = _Columns()
    for msg, seq, count in rows:
        cols.add(msg, seq, count)
    return cols.batch()


def records_to_batch(records: Sequence[Any]) -> Any:
    """One ``pyarrow.RecordBatch`` of :data:`ARROW_SCHEMA` from ``LogRecord``s (``seq``,
    ``delivery_count``, ``data``: the encoded message), in order.

    Raises:
        MessageDecodeError: a record's data is not a valid encoded message.
    """
    cols = _Columns()
    for rec in records:
        cols.add(decode_message(rec.data), rec.seq, rec.delivery_count)
    return cols.batch()
