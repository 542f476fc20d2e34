"""A stub message for selector tests, and the catalog's message notation (§6.1)."""

from __future__ import annotations

import ast
import math
import struct
from typing import Any

# JMS type tags, numbered as ternmq.message._types.T (not imported: these tests do not
# depend on the message package).
TAGS = {"bool": 1, "byte": 2, "short": 3, "int": 5, "long": 6, "float": 7, "double": 8, "str": 9}


def f32(x: float) -> float:
    """The nearest binary32 value, as a float property stores it (±inf past its range)."""
    try:
        return float(struct.unpack("<f", struct.pack("<f", x))[0])
    except OverflowError:
        return math.copysign(math.inf, x)


class Msg:
    """Just what a selector reads, with the catalog's default headers (§6.1)."""

    def __init__(
        self,
        properties: dict[str, Any] | None = None,
        types: dict[str, int] | None = None,
        **headers: Any,
    ) -> None:
        self._properties: dict[str, Any] = dict(properties or {})
        if types is not None:
            self._property_types = dict(types)
        self.jms_delivery_mode = 2
        self.jms_priority = 4
        self.jms_message_id: str | None = "ID:v-1"
        self.jms_timestamp = 1700000000000
        self.jms_correlation_id: str | bytes | None = None
        self.jms_type: str | None = None
        for k, v in headers.items():
            setattr(self, k, v)

    def __repr__(self) -> str:
        extra = {k: v for k, v in vars(self).items() if k != "_properties"}
        return f"Msg({self._properties!r}, {extra!r})"


_HEADER_ATTRS = {
    "JMSDeliveryMode": "jms_delivery_mode",
    "JMSPriority": "jms_priority",
    "JMSMessageID": "jms_message_id",
    "JMSTimestamp": "jms_timestamp",
    "JMSCorrelationID": "jms_correlation_id",
    "JMSType": "jms_type",
    "JMSRedelivered": "jms_redelivered",
    "JMSExpiration": "jms_expiration",
    "body": "body",
}


def message(notation: str) -> Msg:
    """Build a stub from ``name:type=value; @Header=value`` (catalog §6.1)."""
    props: dict[str, Any] = {}
    types: dict[str, int] = {}
    headers: dict[str, Any] = {}
    for item in filter(None, (p.strip() for p in notation.split("; "))):
        if item.startswith("@"):
            field, _, raw = item[1:].partition("=")
            headers[_HEADER_ATTRS[field]] = ast.literal_eval(raw)
            continue
        head, _, raw = item.partition("=")
        name, _, typ = head.rpartition(":")
        value = ast.literal_eval(raw) if raw not in ("float('nan')",) else float("nan")
        if typ == "float" and value is not None:
            value = f32(float(value))
        elif typ in ("double",) and value is not None:
            value = float(value)
        props[name] = value
        types[name] = TAGS[typ]
    return Msg(props, types, **headers)
