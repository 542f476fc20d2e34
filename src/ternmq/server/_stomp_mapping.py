"""Between STOMP frames and JMS messages, both ways (SERVER.md "STOMP"; docs/stomp.md).

Theory of operation
-------------------
Pure functions, no I/O and no clock read (the caller passes the time): the STOMP gateway
(``server/stomp.py``) calls them to turn a ``SEND`` into the JMS message and the routing
fields of the engine's :class:`~ternmq.protocol.commands.Send`, and a delivered JMS message
into the headers and body of a ``MESSAGE`` frame. The engine never sees STOMP: a STOMP
producer's message is an ordinary JMS message, so JMS consumers, selectors, dead-lettering
and the store treat it like any other.

It lives in ``server/`` and not in ``protocol/`` because it builds message objects
(``message/`` and ``protocol/`` are sibling layers that do not import each other).

SEND -> JMS: ``persistent`` (default: the listener's, NON_PERSISTENT unless configured),
``priority``, ``expires``, ``correlation-id``, ``type``, ``reply-to``, ``JMSXGroupID``,
``AMQ_SCHEDULED_DELAY``; every other header that is not part of the frame's STOMP meaning
(:data:`FRAME_HEADERS`) becomes a String property. The body is text or bytes by
``amq-msg-type``, else ``content-type``, else the presence of ``content-length``.

JMS -> MESSAGE: the JMS headers under their STOMP names, every property in its Java string
form (null properties are left out: STOMP has no null), ``JMSXDeliveryCount``, and the body
by type: Text as UTF-8 ``text/plain``, Bytes and Object (the pickled octets) as
``application/octet-stream``, Map and Stream as JSON (``application/json``) with
``ternmq-body-type`` naming the JMS type (``bytes`` values in JSON as base64 strings).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterable
from typing import Final

from ternmq.destination import Destination, destination
from ternmq.errors import InvalidDestinationException, MessageFormatException
from ternmq.message import BytesMessage, MapMessage, Message, StreamMessage, TextMessage
from ternmq.message._convert import to_string
from ternmq.message._names import JMSX_TYPES, check_property_name
from ternmq.message._object import ObjectMessage
from ternmq.message._types import T

__all__ = [
    "BODY_TYPE_HEADER",
    "FRAME_HEADERS",
    "jms_destination",
    "message_from_send",
    "message_headers",
    "stomp_destination",
]

#: The header naming a Map, Stream, Object or plain Message body on a MESSAGE frame.
BODY_TYPE_HEADER: Final = "ternmq-body-type"

# STOMP destination prefixes and the JMS kinds they name (ActiveMQ's and RabbitMQ's forms).
_PREFIXES: Final = (
    ("/queue/", "queue://"),
    ("/topic/", "topic://"),
    ("/temp-queue/", "temp-queue://"),
    ("/temp-topic/", "temp-topic://"),
)

#: Headers of a SEND that are part of the frame's STOMP meaning and never become properties.
FRAME_HEADERS: Final = frozenset(
    {
        "destination",
        "transaction",
        "receipt",
        "content-length",
        "content-type",
        "amq-msg-type",
        "persistent",
        "priority",
        "expires",
        "correlation-id",
        "type",
        "reply-to",
        "AMQ_SCHEDULED_DELAY",
        "message-id",
        "timestamp",
        "redelivered",
        "subscription",
        "ack",
        BODY_TYPE_HEADER,
        "JMSXDeliveryCount",
        "JMSXUserID",
    }
)

_TEXT_TYPES: Final = ("application/json", "application/xml")


def jms_destination(text: str) -> str:
    """``/queue/NAME`` -> ``queue://NAME`` (and ``/topic/``, ``/temp-queue/``,
    ``/temp-topic/``).

    Raises:
        InvalidDestinationException: another form, or an invalid name.
    """
    for stomp, jms in _PREFIXES:
        if text.startswith(stomp):
            name = text[len(stomp) :]
            return str(destination(jms + name))  # validates the name
    raise InvalidDestinationException(
        f"destination {text!r} is not one ternmq knows: write /queue/NAME, /topic/NAME, "
        "/temp-queue/NAME or /temp-topic/NAME"
    )


def stomp_destination(dest: Destination | str) -> str:
    """``queue://NAME`` -> ``/queue/NAME`` (the inverse of :func:`jms_destination`)."""
    kind, _, name = str(dest).partition("://")
    return f"/{kind}/{name}"


def _int_header(value: str, name: str, low: int, high: int | None = None) -> int:
    try:
        number = int(value.strip())
    except ValueError:
        number = None
    if number is None or number < low or (high is not None and number > high):
        span = f"{low}..{high}" if high is not None else f"an integer >= {low}"
        raise MessageFormatException(f"header {name}:{value!r} must be {span}")
    return number


def _charset(content_type: str) -> str:
    for part in content_type.split(";")[1:]:
        key, _, value = part.partition("=")
        if key.strip().lower() == "charset" and value.strip():
            return value.strip().strip('"')
    return "utf-8"


def _is_text(headers: dict[str, str]) -> bool:
    kind = headers.get("amq-msg-type")
    if kind is not None:
        if kind not in ("text", "bytes"):
            raise MessageFormatException(
                f"header amq-msg-type:{kind!r} must be text or bytes (or leave it out)"
            )
        return kind == "text"
    ctype = headers.get("content-type")
    if ctype is not None:
        mime = ctype.split(";", 1)[0].strip().lower()
        return mime.startswith("text/") or mime in _TEXT_TYPES
    return "content-length" not in headers


def message_from_send(
    headers: Iterable[tuple[str, str]],
    body: bytes,
    *,
    now_ms: int,
    message_id: str,
    resolve: Callable[[str], Destination],
    persistent_default: bool = False,
) -> Message:
    """The JMS message a SEND frame carries (headers stamped: id, timestamp, destination,
    delivery mode, priority, expiration, delivery time).

    Args:
        headers: the frame's headers in wire order (the first of a repeated name wins).
        body: the frame's body.
        now_ms: the broker's time, epoch milliseconds.
        message_id: the JMSMessageID to give it.
        resolve: a STOMP destination (``destination``, ``reply-to``) -> JMS destination.
        persistent_default: the delivery mode without a ``persistent`` header.

    Raises:
        MessageFormatException: a header value out of range, or a text body that is not in
            its charset.
        InvalidDestinationException: a destination form ternmq does not know.
    """
    first: dict[str, str] = {}
    for name, value in headers:
        first.setdefault(name, value)
    dest_text = first.get("destination")
    if dest_text is None:
        raise InvalidDestinationException("SEND needs a destination header, e.g. /queue/NAME")
    msg: Message
    if _is_text(first):
        charset = _charset(first.get("content-type", ""))
        try:
            text = body.decode(charset)
        except (LookupError, UnicodeDecodeError) as exc:
            raise MessageFormatException(
                f"the body is not text in {charset}: send it as bytes (amq-msg-type:bytes) or "
                f"name its charset in content-type ({exc})"
            ) from exc
        msg = TextMessage()
        msg._text = text
    else:
        bmsg = BytesMessage()
        bmsg._buffer = bytearray(body)
        msg = bmsg
    msg._destination = resolve(dest_text)
    msg._message_id = message_id
    msg._timestamp = now_ms
    persistent = first.get("persistent")
    if persistent is None:
        msg._delivery_mode = 2 if persistent_default else 1
    else:
        msg._delivery_mode = 2 if persistent.strip().lower() == "true" else 1
    if "priority" in first:
        msg._priority = _int_header(first["priority"], "priority", 0, 9)
    if "expires" in first:
        msg._expiration = _int_header(first["expires"], "expires", 0)
    if "AMQ_SCHEDULED_DELAY" in first:
        delay = _int_header(first["AMQ_SCHEDULED_DELAY"], "AMQ_SCHEDULED_DELAY", 0)
        msg._delivery_time = now_ms + delay
    else:
        msg._delivery_time = now_ms
    if "correlation-id" in first:
        msg._correlation_id = first["correlation-id"]
    if "type" in first:
        msg._type = first["type"]
    if "reply-to" in first:
        msg._reply_to = resolve(first["reply-to"])
    for name, value in first.items():
        if name in FRAME_HEADERS:
            continue
        tag = JMSX_TYPES.get(name, T.STRING)
        if tag is T.INT:
            msg._store_property(name, T.INT, _int_header(value, name, -(2**31), 2**31 - 1))
            continue
        try:
            check_property_name(name)
        except ValueError:
            pass  # STOMP header names need not be identifiers: kept, not selectable
        msg._store_property(name, T.STRING, value)
    return msg


def _json_value(tag: T, value: object) -> object:
    if tag is T.BYTES:
        assert isinstance(value, bytes)
        return base64.b64encode(value).decode("ascii")
    return value


def _body(msg: Message) -> tuple[bytes, str | None, str | None]:
    """(octets, content-type, ternmq-body-type) of ``msg``'s body."""
    if isinstance(msg, TextMessage):
        return (msg._text or "").encode("utf-8"), "text/plain;charset=utf-8", None
    if isinstance(msg, BytesMessage):
        return bytes(msg._buffer), "application/octet-stream", None
    if isinstance(msg, MapMessage):
        doc: object = {k: _json_value(t, v) for k, (t, v) in msg._map.items()}
        return _dump(doc), "application/json", "map"
    if isinstance(msg, StreamMessage):
        return _dump([_json_value(t, v) for t, v in msg._items]), "application/json", "stream"
    if isinstance(msg, ObjectMessage):
        return msg._payload or b"", "application/octet-stream", "object"
    return b"", None, "message"


def _dump(doc: object) -> bytes:
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":"), allow_nan=True).encode()


def message_headers(
    msg: Message,
    *,
    subscription: str,
    ack: str | None,
    delivery_count: int,
) -> tuple[list[tuple[str, str]], bytes]:
    """The headers and body of the MESSAGE frame that delivers ``msg``.

    Args:
        msg: the decoded message.
        subscription: the SUBSCRIBE frame's ``id``.
        ack: the ``ack`` header (the id an ACK or NACK names), or None (auto).
        delivery_count: the JMSXDeliveryCount of this delivery.
    """
    body, ctype, kind = _body(msg)
    h: list[tuple[str, str]] = [
        ("subscription", subscription),
        ("message-id", msg._message_id or ""),
        ("destination", stomp_destination(msg._destination) if msg._destination else ""),
    ]
    if ack is not None:
        h.append(("ack", ack))
    h += [
        ("persistent", "true" if msg._delivery_mode == 2 else "false"),
        ("priority", str(msg._priority)),
        ("expires", str(msg._expiration)),
        ("timestamp", str(msg._timestamp)),
        ("redelivered", "true" if delivery_count > 1 else "false"),
    ]
    corr = msg._correlation_id
    if corr is not None:
        h.append(("correlation-id", corr if isinstance(corr, str) else corr.hex()))
    if msg._type is not None:
        h.append(("type", msg._type))
    if msg._reply_to is not None:
        h.append(("reply-to", stomp_destination(msg._reply_to)))
    types = msg._property_types
    for name, value in msg._properties.items():
        if value is None or name == "JMSXDeliveryCount":
            continue
        text = to_string(types[name], value)
        if text is not None:
            h.append((name, text))
    h.append(("JMSXDeliveryCount", str(delivery_count)))
    if kind is not None:
        h.append((BODY_TYPE_HEADER, kind))
    if ctype is not None:
        h.append(("content-type", ctype))
    h.append(("content-length", str(len(body))))
    return h, body
