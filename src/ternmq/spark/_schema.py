"""The row schema of the ``ternmq`` data source and the conversion of messages into Arrow.

A reader decodes each :class:`~ternmq.client.sequenced.LogRecord` with
:func:`~ternmq.message.codec.decode_message` and lays the messages of one ``read_range`` chunk
out column by column (one list comprehension per column, several times faster than appending
row by row), then builds one ``pyarrow.RecordBatch`` with exactly the Arrow schema Spark
derives from :data:`SCHEMA` (Spark 4.3 rejects any other, ``DATA_SOURCE_RETURN_SCHEMA_MISMATCH``).
Maps are built from flat offsets/keys/items arrays, so no per-row Python objects are handed to
Arrow.

The column meanings are documented in the ``ternmq.spark`` package docstring. This module
reads the message model's internal slots (the contract documented in ``ternmq.message``),
as the codec and the selector engine do: it runs once per message read by Spark.
"""

from __future__ import annotations

import base64
import itertools
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


def _ms_to_us(values: list[int]) -> list[int | None]:
    """Epoch ms as Arrow timestamp µs: 0 (unset) is null, out-of-range values are clamped."""
    low, high = _MIN_MS, _MAX_MS
    return [
        None if ms == 0 else ms * 1000 if low <= ms <= high else min(max(ms, low), high) * 1000
        for ms in values
    ]


def _texts(values: list[Any]) -> list[str | None]:
    """``str()`` of each value (a destination), None for None, each distinct value once."""
    first = values[0] if values else None
    if all(v is first for v in values):  # the common case: one (cached) destination
        return [None if first is None else str(first)] * len(values)
    text = {v: None if v is None else str(v) for v in set(values)}
    return [text[v] for v in values]


def _build(msgs: Sequence[Message], seqs: Sequence[int], counts: Sequence[int]) -> Any:
    """One record batch of :data:`ARROW_SCHEMA` from parallel lists of messages, sequence
    numbers and delivery counts.

    Built column by column (one comprehension each: this is the reader's per-message cost);
    maps are laid out as offsets + keys + items.
    """
    names, modes = cv.TYPE_NAMES, _MODE_NAMES
    string, longs, doubles, boolean = T.STRING, _LONG_TAGS, _DOUBLE_TAGS, T.BOOLEAN
    all_types = [m._property_types for m in msgs]
    offsets = [0, *itertools.accumulate(len(types) for types in all_types)]
    keys = [name for types in all_types for name in types]
    tags = [tag for types in all_types for tag in types.values()]
    values = [m._properties[name] for m in msgs for name in m._property_types]
    cids = [m._correlation_id for m in msgs]
    if all(type(m) is TextMessage for m in msgs):
        text_body = [m._text for m in msgs]  # type: ignore[attr-defined]
        bytes_body: list[bytes | None] = [None] * len(msgs)
    else:
        bodies = [render_body(m) for m in msgs]
        text_body = [t for t, _ in bodies]
        bytes_body = [b for _, b in bodies]

    offsets_arr = pa.array(offsets, type=pa.int32())
    keys_arr = pa.array(keys, type=pa.string())
    texts = [v if t is string else _property_text(t, v) for t, v in zip(tags, values)]
    props = pa.MapArray.from_arrays(
        offsets_arr, keys_arr, pa.array(texts, type=pa.string()), type=_PROPS_TYPE
    )
    typed_items = pa.StructArray.from_arrays(
        [
            pa.array([names[t] for t in tags], type=pa.string()),
            pa.array([v if t is string else None for t, v in zip(tags, values)], pa.string()),
            pa.array([v if t in longs else None for t, v in zip(tags, values)], pa.int64()),
            pa.array([v if t in doubles else None for t, v in zip(tags, values)], pa.float64()),
            pa.array([v if t is boolean else None for t, v in zip(tags, values)], pa.bool_()),
        ],
        fields=list(_TYPED_STRUCT),
    )
    typed = pa.MapArray.from_arrays(offsets_arr, keys_arr, typed_items, type=_TYPED_TYPE)
    arrays = [
        pa.array([m._message_id for m in msgs], type=pa.string()),
        pa.array(_texts([m._destination for m in msgs]), type=pa.string()),
        pa.array(seqs, type=pa.int64()),
        pa.array(_ms_to_us([m._timestamp for m in msgs]), type=_TS_TYPE),
        pa.array([modes.get(m._delivery_mode) for m in msgs], type=pa.string()),
        pa.array([m._priority for m in msgs], type=pa.int32()),
        pa.array(_ms_to_us([m._expiration for m in msgs]), type=_TS_TYPE),
        pa.array(
            [c if c is None or type(c) is str else _correlation_id(c) for c in cids],
            type=pa.string(),
        ),
        pa.array([m._type for m in msgs], type=pa.string()),
        pa.array(_texts([m._reply_to for m in msgs]), type=pa.string()),
        pa.array([m._redelivered or n > 1 for m, n in zip(msgs, counts)], type=pa.bool_()),
        pa.array(counts, type=pa.int32()),
        props,
        typed,
        pa.array([m.body_type for m in msgs], type=pa.string()),
        pa.array(text_body, type=pa.string()),
        pa.array(bytes_body, type=pa.binary()),
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=ARROW_SCHEMA)


def messages_to_batch(rows: Sequence[tuple[Message, int, int]]) -> Any:
    """One ``pyarrow.RecordBatch`` of :data:`ARROW_SCHEMA` from ``(message, sequence,
    delivery_count)`` triples, in order.

    Raises:
        pyarrow.ArrowInvalid: a value does not fit its column (a broken message model
            invariant; cannot happen for decoded messages).
    """
    return _build([m for m, _, _ in rows], [s for _, s, _ in rows], [n for _, _, n in rows])


def records_to_batch(records: Sequence[Any]) -> Any:
    """One ``pyarrow.RecordBatch`` of :data:`ARROW_SCHEMA` from ``LogRecord``s (``seq``,
    ``delivery_count``, ``data``: the encoded message), in order.

    Raises:
        MessageDecodeError: a record's data is not a valid encoded message.
    """
    return _build(
        [decode_message(rec.data) for rec in records],
        [rec.seq for rec in records],
        [rec.delivery_count for rec in records],
    )
