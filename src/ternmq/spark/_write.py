"""What a ``ternmq`` writer accepts, and the conversion of Arrow record batches into messages.

:func:`check_write_schema` runs on the driver when Spark asks for a writer: it maps each input
column (case-insensitively) to its role and rejects unknown columns and unsupported types
there, so a mistake fails the query at once with the list of accepted columns.
:func:`batch_to_messages` runs in the executors: it reads one ``pyarrow.RecordBatch`` column
by column and builds ``(destination text, message)`` pairs with every header the staged
publish sends (delivery mode, priority, expiration) set on the message itself.

Pure module: no I/O (the caller passes the current time).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

import pyarrow as pa
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from ternmq.destination import destination
from ternmq.message import BytesMessage, Message, TextMessage
from ternmq.message._types import T
from ternmq.spark._options import WriteOptions, parse_delivery_mode

__all__ = [
    "WRITE_COLUMNS",
    "RowError",
    "SchemaError",
    "WriteLayout",
    "batch_to_messages",
    "check_write_schema",
]

#: Input columns a writer accepts, with the Spark types each may have.
WRITE_COLUMNS: Final[dict[str, str]] = {
    "body": "string (TextMessage) or binary (BytesMessage); required",
    "destination": "string: queue://NAME or topic://NAME (else the destination option)",
    "correlation_id": "string or binary",
    "type": "string (JMSType)",
    "reply_to": "string: queue://NAME or topic://NAME",
    "priority": "tinyint/smallint/int/bigint, 0 … 9",
    "delivery_mode": "string PERSISTENT / NON_PERSISTENT, or 2 / 1",
    "expiration": "timestamp, or bigint epoch ms (0 = never); wins over time_to_live",
    "time_to_live": "tinyint/smallint/int/bigint ms (0 = never)",
    "properties": "map<string, V>, V one of string, boolean, tinyint, smallint, int, bigint, "
    "float, double (the property gets the JMS type of V)",
    "typed_properties": "map<string, struct<type string, string_value string, long_value "
    "bigint, double_value double, boolean_value boolean>> (any subset of the value fields)",
}

_INTEGRAL = (ByteType, ShortType, IntegerType, LongType)

#: The JMS property type of each accepted ``properties`` map value type.
_PROPERTY_KINDS: Final[tuple[tuple[type[DataType], str], ...]] = (
    (StringType, "String"),
    (BooleanType, "boolean"),
    (ByteType, "byte"),
    (ShortType, "short"),
    (IntegerType, "int"),
    (LongType, "long"),
    (FloatType, "float"),
    (DoubleType, "double"),
)

_TYPED_FIELDS: Final = frozenset(
    {"type", "string_value", "long_value", "double_value", "boolean_value"}
)


class SchemaError(ValueError):
    """The DataFrame written to ``ternmq`` has a column it cannot map onto a message."""


class RowError(ValueError):
    """One row cannot become a message (its index and column are in the message)."""


@dataclass(frozen=True, slots=True)
class WriteLayout:
    """The roles of a written DataFrame's columns (role -> actual column name), checked on
    the driver and shipped to the executors.

    Attributes:
        columns: role (a key of :data:`WRITE_COLUMNS`) -> column name as the DataFrame
            spells it.
        body: ``"text"`` or ``"bytes"``.
        correlation_bytes: the correlation_id column is binary.
        expiration_timestamp: the expiration column is a timestamp (else epoch ms).
        property_type: the JMS type given to ``properties`` values (``"String"``, ...).
    """

    columns: dict[str, str]
    body: Literal["text", "bytes"]
    correlation_bytes: bool = False
    expiration_timestamp: bool = True
    property_type: str = "String"


def _accepted() -> str:
    return "; ".join(f"{name}: {what}" for name, what in WRITE_COLUMNS.items())


def _bad_type(name: str, dtype: DataType) -> SchemaError:
    return SchemaError(
        f"column {name!r} has type {dtype.simpleString()}, but ternmq expects "
        f"{WRITE_COLUMNS[name.lower()]}"
    )


def check_write_schema(schema: StructType, *, default_destination: str | None) -> WriteLayout:
    """Map the columns of a DataFrame to be written onto message parts.

    Args:
        schema: the DataFrame's schema.
        default_destination: the ``destination`` option (None: a destination column is
            required).

    Raises:
        SchemaError: an unknown column, a column of an unsupported type, a duplicate column,
            no ``body`` column, or neither a ``destination`` column nor option.
    """
    columns: dict[str, str] = {}
    types: dict[str, DataType] = {}
    for field in schema.fields:
        role = field.name.lower()
        if role not in WRITE_COLUMNS:
            raise SchemaError(
                f"column {field.name!r} does not map onto a ternmq message; select or rename "
                f"the columns to these ({_accepted()})"
            )
        if role in columns:
            raise SchemaError(f"columns {columns[role]!r} and {field.name!r} are the same role")
        columns[role] = field.name
        types[role] = field.dataType
    if "body" not in columns:
        raise SchemaError(
            "a ternmq writer needs a 'body' column: string (TextMessage) or binary "
            f"(BytesMessage); accepted columns: {_accepted()}"
        )
    if "destination" not in columns and default_destination is None:
        raise SchemaError(
            'no destination: set .option("destination", "queue://NAME") or add a '
            "'destination' column"
        )

    def check(role: str, *allowed: type[DataType]) -> DataType | None:
        dtype = types.get(role)
        if dtype is not None and not isinstance(dtype, allowed):
            raise _bad_type(columns[role], dtype)
        return dtype

    body = check("body", StringType, BinaryType)
    for role in ("destination", "type", "reply_to"):
        check(role, StringType)
    cid = check("correlation_id", StringType, BinaryType)
    check("priority", *_INTEGRAL)
    check("time_to_live", *_INTEGRAL)
    check("delivery_mode", StringType, *_INTEGRAL)
    expiration = check("expiration", TimestampType, TimestampNTZType, *_INTEGRAL)
    property_type = "String"
    props = types.get("properties")
    if props is not None:
        kind = None
        if isinstance(props, MapType) and isinstance(props.keyType, StringType):
            kind = next((k for t, k in _PROPERTY_KINDS if isinstance(props.valueType, t)), None)
        if kind is None:
            raise _bad_type(columns["properties"], props)
        property_type = kind
    typed = types.get("typed_properties")
    if typed is not None:
        value = typed.valueType if isinstance(typed, MapType) else None
        if (
            not isinstance(typed, MapType)
            or not isinstance(typed.keyType, StringType)
            or not isinstance(value, StructType)
            or "type" not in value.fieldNames()
            or not set(value.fieldNames()) <= _TYPED_FIELDS
        ):
            raise _bad_type(columns["typed_properties"], typed)
    return WriteLayout(
        columns=columns,
        body="bytes" if isinstance(body, BinaryType) else "text",
        correlation_bytes=isinstance(cid, BinaryType),
        expiration_timestamp=expiration is None
        or isinstance(expiration, TimestampType | TimestampNTZType),
        property_type=property_type,
    )


def _epoch_ms(column: Any) -> list[int | None]:
    """A timestamp column as epoch ms (whatever its unit and time zone)."""
    divisor = {"s": 1, "ms": 1, "us": 1_000, "ns": 1_000_000}[column.type.unit]
    factor = 1_000 if column.type.unit == "s" else 1
    raw: list[int | None] = column.cast(pa.int64()).to_pylist()
    return [None if v is None else v * factor // divisor for v in raw]


# The typed property setter of each JMS type name, and the struct field its value is in.
_TYPED_SETTERS: Final[dict[str, tuple[str, str | None]]] = {
    "boolean": ("set_boolean_property", "boolean_value"),
    "byte": ("set_byte_property", "long_value"),
    "short": ("set_short_property", "long_value"),
    "int": ("set_int_property", "long_value"),
    "long": ("set_long_property", "long_value"),
    "float": ("set_float_property", "double_value"),
    "double": ("set_double_property", "double_value"),
    "string": ("set_string_property", "string_value"),
    "null": ("set_object_property", None),
}


def _set_typed(msg: Message, name: str, spec: dict[str, Any] | None) -> None:
    if spec is None:
        msg.set_object_property(name, None)
        return
    kind = str(spec.get("type") or "").lower()
    entry = _TYPED_SETTERS.get(kind)
    if entry is None:
        raise ValueError(
            f"typed property {name!r} has type {spec.get('type')!r}; use one of "
            "boolean, byte, short, int, long, float, double, String, null"
        )
    setter, field = entry
    value = None if field is None else spec.get(field)
    if value is None:
        msg.set_object_property(name, None)
    else:
        getattr(msg, setter)(name, value)


_TAGS: Final[dict[str, T]] = {
    "boolean": T.BOOLEAN,
    "byte": T.BYTE,
    "short": T.SHORT,
    "int": T.INT,
    "long": T.LONG,
    "float": T.FLOAT,
    "double": T.DOUBLE,
    "string": T.STRING,
}


def _property_setter(msg_type: str) -> Callable[[Message, str, Any], None]:
    """A setter for the values of a ``properties`` map column of one Spark value type.

    The first value of each name goes through the typed setter (name, JMSX type and value
    checks); later ones are stored directly: a value of a Spark column of that type is
    always valid for its JMS type (Arrow strings are UTF-8, so they hold no surrogates, and
    integral and float columns have exactly the Java widths)."""
    setter = _TYPED_SETTERS[msg_type.lower()][0]
    tag = _TAGS[msg_type.lower()]
    checked: set[str] = set()

    def put(msg: Message, name: str, value: Any) -> None:
        if value is None:
            msg.set_object_property(name, None)
        elif name in checked:
            msg._properties[name] = value
            msg._property_types[name] = tag
        else:
            getattr(msg, setter)(name, value)
            checked.add(name)

    return put


def batch_to_messages(
    batch: Any, layout: WriteLayout, options: WriteOptions, now_ms: int
) -> list[tuple[str, Message]]:
    """Build the ``(destination text, message)`` pairs of one Arrow record batch, in row order.

    Each message gets its body, JMSDestination text, correlation id, type, reply-to,
    properties, and the delivery mode, priority and expiration that the staged publish sends
    (the row's values, else the writer options' defaults; ``time_to_live`` counts from
    ``now_ms``).

    Raises:
        RowError: a row's value is invalid (bad destination, priority out of 0 … 9, an
            invalid property name or type, ...); the message names the row and column.
    """
    cols = layout.columns
    n = batch.num_rows

    def column(role: str) -> Sequence[Any] | None:
        name = cols.get(role)
        if name is None:
            return None
        arr = batch.column(name)
        if role == "expiration" and layout.expiration_timestamp:
            return _epoch_ms(arr)
        values: list[Any] = arr.to_pylist()
        return values

    bodies = column("body")
    assert bodies is not None
    dests = column("destination")
    cids = column("correlation_id")
    types = column("type")
    reply_tos = column("reply_to")
    priorities = column("priority")
    modes = column("delivery_mode")
    expirations = column("expiration")
    ttls = column("time_to_live")
    props = column("properties")
    typed = column("typed_properties")
    put_property = _property_setter(layout.property_type)
    default_dest = options.destination
    dest_cache: dict[str, str] = {}
    text_body = layout.body == "text"
    out: list[tuple[str, Message]] = []
    role = "body"
    for i in range(n):
        try:
            role = "body"
            body = bodies[i]
            msg: Message
            if text_body:
                msg = TextMessage(body)
            else:
                msg = BytesMessage()
                if body:
                    msg.write_bytes(body)
            role = "destination"
            text = dests[i] if dests is not None else None
            if text is None:
                text = default_dest
                if text is None:
                    raise ValueError("no destination: the column is null and no option is set")
            dest = dest_cache.get(text)
            if dest is None:
                dest = dest_cache[text] = str(destination(text))
            if cids is not None and cids[i] is not None:
                role = "correlation_id"
                if layout.correlation_bytes:
                    msg.set_jms_correlation_id_as_bytes(cids[i])
                else:
                    msg.jms_correlation_id = cids[i]
            if types is not None:
                role = "type"
                msg.jms_type = types[i]
            if reply_tos is not None and reply_tos[i] is not None:
                role = "reply_to"
                msg.jms_reply_to = destination(reply_tos[i])
            # A new message already holds priority 4, PERSISTENT and no expiration.
            role = "priority"
            value = priorities[i] if priorities is not None else None
            value = options.priority if value is None else value
            if value != 4:
                msg.jms_priority = value
            role = "delivery_mode"
            value = modes[i] if modes is not None else None
            value = (
                options.delivery_mode
                if value is None
                else parse_delivery_mode(value, "delivery_mode")
            )
            if value != 2:
                msg.jms_delivery_mode = value
            role = "expiration"
            value = expirations[i] if expirations is not None else None
            if value is None or value == 0:
                role = "time_to_live"
                ttl = ttls[i] if ttls is not None else None
                ttl = options.time_to_live if ttl is None else ttl
                if ttl < 0:
                    raise ValueError(f"time_to_live {ttl} is negative")
                value = now_ms + ttl if ttl > 0 else 0
            if value != 0:
                msg.jms_expiration = value
            if props is not None and props[i]:
                role = "properties"
                for name, pvalue in props[i]:
                    put_property(msg, name, pvalue)
            if typed is not None and typed[i]:
                role = "typed_properties"
                for name, spec in typed[i]:
                    _set_typed(msg, name, spec)
        except Exception as exc:
            raise RowError(
                f"row {i} of a written batch, column {cols.get(role, role)!r}: {exc}"
            ) from exc
        out.append((dest, msg))
    return out
