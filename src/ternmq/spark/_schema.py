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
from collections.abc import Iterable, Sequence
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


def _build(rows: Iterable[tuple[Message, int, int]]) -> Any:
    """One record batch of :data:`ARROW_SCHEMA` from ``(message, seq, delivery_count)``.

    One pass over the messages appends to plain lists (bound methods in locals: this loop is
    the reader's per-message cost); maps are laid out as offsets + keys + items.
    """
    message_id: list[str | None] = []
    dest_col: list[str | None] = []
    sequence: list[int] = []
    timestamp: list[int | None] = []
    mode_col: list[str | None] = []
    priority: list[int] = []
    expiration: list[int | None] = []
    cid_col: list[str | None] = []
    type_col: list[str | None] = []
    reply_col: list[str | None] = []
    redelivered: list[bool] = []
    count_col: list[int] = []
    offsets: list[int] = [0]
    keys: list[str] = []
    texts: list[str | None] = []
    t_type: list[str] = []
    t_string: list[Value] = []
    t_long: list[Value] = []
    t_double: list[Value] = []
    t_bool: list[Value] = []
    body_type: list[str] = []
    text_body: list[str | None] = []
    bytes_body: list[bytes | None] = []
    add_key, add_text, add_type = keys.append, texts.append, t_type.append
    add_string, add_long, add_double, add_bool = (
        t_string.append,
        t_long.append,
        t_double.append,
        t_bool.append,
    )
    modes, names, low, high = _MODE_NAMES, cv.TYPE_NAMES, _MIN_MS, _MAX_MS
    dest_text: dict[object, str] = {}
    for msg, seq, delivery_count in rows:
        dest = msg._destination
        if dest is None:
            dest_col.append(None)
        else:
            text = dest_text.get(dest)
            if text is None:
                text = dest_text[dest] = str(dest)
            dest_col.append(text)
        message_id.append(msg._message_id)
        sequence.append(seq)
        ms = msg._timestamp
        timestamp.append(None if ms == 0 else min(max(ms, low), high) * 1000)
        mode_col.append(modes.get(msg._delivery_mode))
        priority.append(msg._priority)
        ms = msg._expiration
        expiration.append(None if ms == 0 else min(max(ms, low), high) * 1000)
        cid = msg._correlation_id
        cid_col.append(cid if cid is None or isinstance(cid, str) else _correlation_id(cid))
        type_col.append(msg._type)
        reply_to = msg._reply_to
        reply_col.append(None if reply_to is None else str(reply_to))
        redelivered.append(msg._redelivered or delivery_count > 1)
        count_col.append(delivery_count)
        types = msg._property_types
        if types:
            values = msg._properties
            for name, tag in types.items():
                value = values[name]
                add_key(name)
                add_text(_property_text(tag, value))
                add_type(names[tag])
                add_string(value if tag is T.STRING else None)
                add_long(value if tag in _LONG_TAGS else None)
                add_double(value if tag in _DOUBLE_TAGS else None)
                add_bool(value if tag is T.BOOLEAN else None)
        offsets.append(len(keys))
        body_type.append(msg.body_type)
        if type(msg) is TextMessage:
            text_body.append(msg._text)
            bytes_body.append(None)
        else:
            text, octets = render_body(msg)
            text_body.append(text)
            bytes_body.append(octets)

    offsets_arr = pa.array(offsets, type=pa.int32())
    keys_arr = pa.array(keys, type=pa.string())
    props = pa.MapArray.from_arrays(
        offsets_arr, keys_arr, pa.array(texts, type=pa.string()), type=_PROPS_TYPE
    )
    typed_items = pa.StructArray.from_arrays(
        [
            pa.array(t_type, type=pa.string()),
            pa.array(t_string, type=pa.string()),
            pa.array(t_long, type=pa.int64()),
            pa.array(t_double, type=pa.float64()),
            pa.array(t_bool, type=pa.bool_()),
        ],
        fields=list(_TYPED_STRUCT),
    )
    typed = pa.MapArray.from_arrays(offsets_arr, keys_arr, typed_items, type=_TYPED_TYPE)
    arrays = [
        pa.array(message_id, type=pa.string()),
        pa.array(dest_col, type=pa.string()),
        pa.array(sequence, type=pa.int64()),
        pa.array(timestamp, type=_TS_TYPE),
        pa.array(mode_col, type=pa.string()),
        pa.array(priority, type=pa.int32()),
        pa.array(expiration, type=_TS_TYPE),
        pa.array(cid_col, type=pa.string()),
        pa.array(type_col, type=pa.string()),
        pa.array(reply_col, type=pa.string()),
        pa.array(redelivered, type=pa.bool_()),
        pa.array(count_col, type=pa.int32()),
        props,
        typed,
        pa.array(body_type, type=pa.string()),
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
    return _build(rows)


def records_to_batch(records: Sequence[Any]) -> Any:
    """One ``pyarrow.RecordBatch`` of :data:`ARROW_SCHEMA` from ``LogRecord``s (``seq``,
    ``delivery_count``, ``data``: the encoded message), in order.

    Raises:
        MessageDecodeError: a record's data is not a valid encoded message.
    """
    return _build((decode_message(rec.data), rec.seq, rec.delivery_count) for rec in records)
