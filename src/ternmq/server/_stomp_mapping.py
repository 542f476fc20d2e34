"""Between STOMP frames and JMS messages, both ways (SERVER.md "STOMP"; docs/stomp.md).

Theory of operation
-------------------
Pure functions, no I/O and no clock read (the caller passes the time): the STOMP gateway
(``server/stomp.py``) calls them to turn a ``SEND`` into the engine's
:class:`~ternmq.protocol.commands.Send`, its message encoded once, straight from the headers
to the stored form (no message object in between), and a delivered message's stored form
into the octets of a ``MESSAGE`` frame: the part that depends on the message only is built
once and kept for the next subscriber (:class:`MessageFrames`), the delivery's own headers
go in front of it (:func:`delivery_head`). The engine never sees STOMP: a STOMP
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
form (null properties are left out: STOMP has no null; so is a header whose name or value
holds a NUL character, which no STOMP version can escape and which would end the frame
early: logged as ``stomp_header_dropped``), ``JMSXDeliveryCount``, and the body
by type: Text as UTF-8 ``text/plain``, Bytes and Object (the pickled octets) as
``application/octet-stream``, Map and Stream as JSON (``application/json``) with
``ternmq-body-type`` naming the JMS type (``bytes`` values in JSON as base64 strings).
"""

from __future__ import annotations

import base64
import json
import logging
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Final

from ternmq.destination import Destination, destination
from ternmq.errors import InvalidDestinationException, MessageFormatException
from ternmq.message import BytesMessage, MapMessage, Message, StreamMessage, TextMessage
from ternmq.message._convert import TYPE_NAMES, to_string
from ternmq.message._names import JMSX_TYPES
from ternmq.message._object import ObjectMessage
from ternmq.message._types import T
from ternmq.message.codec import (
    DEFAULT_LIMITS,
    KIND_BYTES,
    KIND_TEXT,
    CodecLimitError,
    CodecLimits,
    decode_message_view,
    encode_fields,
)
from ternmq.protocol.commands import Send
from ternmq.protocol.stomp import encode_headers, escape_header
from ternmq.server.logs import log_event

log = logging.getLogger("ternmq.server")

__all__ = [
    "BODY_TYPE_HEADER",
    "FRAME_HEADERS",
    "MessageFrames",
    "delivery_head",
    "encode_send",
    "first_headers",
    "jms_destination",
    "message_headers",
    "subscription_head",
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
# content-type header values seen -> whether the body is text (senders reuse a few values)
_TEXT_CONTENT: dict[str, bool] = {}
_TEXT_CONTENT_MAX: Final = 256


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
    known = _STOMP_NAMES.get(dest)
    if known is None:
        kind, _, name = str(dest).partition("://")
        known = f"/{kind}/{name}"
        if len(_STOMP_NAMES) >= _STOMP_NAMES_MAX:
            _STOMP_NAMES.clear()
        _STOMP_NAMES[dest] = known
    return known


# Destinations (values, hashable) -> their STOMP names: every MESSAGE names one.
_STOMP_NAMES: dict[Destination | str, str] = {}
_STOMP_NAMES_MAX: Final = 1024


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
        known = _TEXT_CONTENT.get(ctype)
        if known is None:
            mime = ctype.split(";", 1)[0].strip().lower()
            known = mime.startswith("text/") or mime in _TEXT_TYPES
            if len(_TEXT_CONTENT) >= _TEXT_CONTENT_MAX:
                _TEXT_CONTENT.clear()
            _TEXT_CONTENT[ctype] = known
        return known
    return "content-length" not in headers


def first_headers(headers: list[tuple[str, str]]) -> dict[str, str]:
    """``headers`` (wire order) as a dict, the first of a repeated name winning (STOMP
    1.2)."""
    first = dict(headers)  # the last of a repeated name: redone below if one is repeated
    if len(first) != len(headers):
        first = {}
        for name, value in headers:
            if name not in first:
                first[name] = value
    return first


def encode_send(
    headers: Iterable[tuple[str, str]] | dict[str, str],
    body: bytes,
    *,
    corr: int,
    session_id: int,
    now_ms: int,
    message_id: str,
    resolve: Callable[[str], Destination],
    persistent_default: bool = False,
    quiet: bool = False,
    limits: CodecLimits = DEFAULT_LIMITS,
) -> Send:
    """The engine request of a SEND frame: the JMS message it carries, encoded once in the
    stored form (headers stamped: id, timestamp, destination, delivery mode, priority,
    expiration, delivery time), and its routing fields.

    No message object is built: the fields go from the headers straight to
    :func:`~ternmq.message.codec.encode_fields`, the octets being those
    :func:`~ternmq.message.codec.encode_message` writes for the same message.

    Args:
        headers: the frame's headers in wire order (the first of a repeated name wins), or
            as :func:`first_headers` gives them.
        body: the frame's body.
        corr: the request's correlation number.
        session_id: the engine session that sends it.
        now_ms: the broker's time, epoch milliseconds.
        message_id: the JMSMessageID to give it.
        resolve: a STOMP destination (``destination``, ``reply-to``) -> JMS destination.
        persistent_default: the delivery mode without a ``persistent`` header.
        quiet: make the send quiet (``corr`` 0, answered only if refused) if it is
            NON_PERSISTENT; a PERSISTENT one keeps ``corr`` (its reply says it is durable).
        limits: the codec's bounds (properties, body size, encoded size).

    Raises:
        MessageFormatException: a header value out of range, a JMS-defined property of a
            type STOMP cannot carry, a text body that is not in its charset, or a message
            past ``limits`` (the error names the limit).
        InvalidDestinationException: a destination form ternmq does not know.
    """
    if isinstance(headers, dict):
        first = headers
    else:
        first = first_headers(headers if isinstance(headers, list) else list(headers))
    dest_text = first.get("destination")
    if dest_text is None:
        raise InvalidDestinationException("SEND needs a destination header, e.g. /queue/NAME")
    content: str | bytes
    if _is_text(first):
        kind = KIND_TEXT
        charset = _charset(first.get("content-type", ""))
        try:
            content = body.decode(charset)
        except (LookupError, UnicodeDecodeError) as exc:
            raise MessageFormatException(
                f"the body is not text in {charset}: send it as bytes (amq-msg-type:bytes) or "
                f"name its charset in content-type ({exc})"
            ) from exc
    else:
        kind = KIND_BYTES
        content = body
    if len(content) > limits.max_body_size:
        raise CodecLimitError(
            "max_body_size", len(content), limits.max_body_size, "STOMP SEND body"
        )
    dest = str(resolve(dest_text))
    persistent = first.get("persistent")
    if persistent is None:
        durable = persistent_default
    else:
        durable = persistent.strip().lower() == "true"
    get = first.get
    text = get("priority")
    priority = 4 if text is None else _int_header(text, "priority", 0, 9)
    text = get("expires")
    expiration = 0 if text is None else _int_header(text, "expires", 0)
    text = get("AMQ_SCHEDULED_DELAY")
    delivery_time = now_ms if text is None else now_ms + _int_header(text, "AMQ_SCHEDULED_DELAY", 0)
    text = get("reply-to")
    reply_to = None if text is None else str(resolve(text))
    props: dict[str, str | int] = {}
    types: dict[str, T] = {}
    frame_headers = FRAME_HEADERS
    for name, value in first.items():
        if name in frame_headers:
            continue
        tag = JMSX_TYPES.get(name)
        if tag is None or tag is T.STRING:
            # STOMP header names need not be identifiers: kept, not selectable.
            props[name] = value
            types[name] = T.STRING
        elif tag is T.INT:
            props[name] = _int_header(value, name, -(2**31), 2**31 - 1)
            types[name] = T.INT
        else:
            raise MessageFormatException(
                f"header {name} names a JMS-defined property of type "
                f"{TYPE_NAMES[tag]}, which a STOMP header cannot carry: leave it out"
            )
    if len(props) > limits.max_properties:
        raise CodecLimitError(
            "max_properties", len(props), limits.max_properties, "number of properties"
        )
    data = encode_fields(
        kind,
        message_id,
        now_ms,
        get("correlation-id"),
        reply_to,
        dest,
        2 if durable else 1,
        False,
        get("type"),
        expiration,
        delivery_time,
        priority,
        props,
        types,
        content,
        limits,
        "STOMP SEND",
    )
    group = props.get("JMSXGroupID")
    seq = props.get("JMSXGroupSeq", 0)
    quiet = quiet and not durable
    return Send(
        corr=0 if quiet else corr,
        session_id=session_id,
        destination=dest,
        message=data,
        persistent=durable,
        priority=priority,
        expiration=expiration,
        delivery_time=delivery_time,
        group_id=group if isinstance(group, str) else None,
        group_seq=seq if isinstance(seq, int) else 0,
        quiet=quiet,
    )


def _json_value(tag: T, value: object) -> object:
    if tag is T.BYTES:
        assert isinstance(value, bytes)
        return base64.b64encode(value).decode("ascii")
    return value


def _body(msg: Message) -> tuple[bytes | bytearray, str | None, str | None]:
    """(octets, content-type, ternmq-body-type) of ``msg``'s body (a Bytes body is the
    message's own buffer, not a copy: the message is a decoded one, read by nobody else)."""
    if isinstance(msg, TextMessage):
        return (msg._text or "").encode("utf-8"), "text/plain;charset=utf-8", None
    if isinstance(msg, BytesMessage):
        return msg._buffer, "application/octet-stream", None
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
    msg: Message, body_view: memoryview | None = None
) -> tuple[list[tuple[str, str]], bytes | bytearray | memoryview]:
    """The headers and body of a MESSAGE frame that delivers ``msg``, without those of the
    delivery itself (``subscription``, ``ack``, ``redelivered``, ``JMSXDeliveryCount``:
    :func:`delivery_head`), which go before them.

    Args:
        msg: the decoded message.
        body_view: the octets of a BytesMessage's body, when ``msg`` was decoded without
            them (:func:`~ternmq.message.codec.decode_message_view`).
    """
    body: bytes | bytearray | memoryview
    if body_view is None:
        body, ctype, kind = _body(msg)
    else:  # a BytesMessage's (_body)
        body, ctype, kind = body_view, "application/octet-stream", None
    # The message-id ("ID:...") holds a colon, escaped in 1.1 and 1.2: it comes first, so
    # that the encoder can escape it on its own and take the others in one pass.
    h: list[tuple[str, str]] = [
        ("message-id", msg._message_id or ""),
        ("destination", stomp_destination(msg._destination) if msg._destination else ""),
        ("persistent", "true" if msg._delivery_mode == 2 else "false"),
        ("priority", str(msg._priority)),
        ("expires", str(msg._expiration)),
        ("timestamp", str(msg._timestamp)),
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
    if kind is not None:
        h.append((BODY_TYPE_HEADER, kind))
    if ctype is not None:
        h.append(("content-type", ctype))
    h.append(("content-length", str(len(body))))
    return h, body


def _header_lines(headers: list[tuple[str, str]], version: str) -> bytes:
    """The header lines of :func:`message_headers`' ``headers`` in STOMP ``version``."""
    if version == "1.0":
        return encode_headers(headers, version)
    # The usual message: the message-id's colons are the only octets to escape. One pass
    # over all the lines tells (each line has one colon and one LF of its own).
    text = "".join([f"{name}:{value}\n" for name, value in headers])
    mid = headers[0][1]
    n = len(headers)
    if (
        text.count(":") == n + mid.count(":")
        and text.count("\n") == n
        and "\\" not in text
        and "\r" not in text
    ):
        escaped = mid.replace(":", "\\c")
        return f"message-id:{escaped}\n{text[len(mid) + 12 :]}".encode()
    # the message-id, which holds a colon, escaped on its own (see message_headers)
    mid_line = f"message-id:{escape_header(headers[0][1], version)}\n".encode()
    return mid_line + encode_headers(headers[1:], version)


def _without_nul(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """``headers`` without those holding a NUL character, which no STOMP version can carry
    in a header (it ends the frame); each dropped one is logged. The message-id (first) is
    kept, its NULs removed, since every MESSAGE has one."""
    mid = headers[0][1]
    kept = [(headers[0][0], mid.replace("\x00", ""))]
    for name, value in headers[1:]:
        if "\x00" in name or "\x00" in value:
            log_event(
                log,
                logging.WARNING,
                "stomp_header_dropped",
                message_id=mid.replace("\x00", ""),
                header=name.replace("\x00", "\\0"),
                reason="a NUL character, which a STOMP header cannot carry",
            )
            continue
        kept.append((name, value))
    return kept


_FIRST_DELIVERY: Final = b"redelivered:false\nJMSXDeliveryCount:1\n"


def delivery_head(subscription: bytes, ack: str | None, delivery_count: int) -> bytes:
    """The start of a MESSAGE frame, up to the headers of the delivery itself.

    Args:
        subscription: ``MESSAGE`` and the ``subscription`` header line, as
            :func:`subscription_head` gives them.
        ack: the ``ack`` header (the id an ACK or NACK names: decimal digits), or None
            (auto).
        delivery_count: the JMSXDeliveryCount of this delivery.
    """
    if delivery_count == 1:
        tail = _FIRST_DELIVERY
    else:
        tail = b"redelivered:true\nJMSXDeliveryCount:%d\n" % delivery_count
    if ack is None:
        return subscription + tail
    return b"%back:%s\n%b" % (subscription, ack.encode("ascii"), tail)


def subscription_head(subscription: str, version: str) -> bytes:
    """``MESSAGE`` and the ``subscription`` header line of a SUBSCRIBE's ``id``, escaped
    per ``version`` (see :func:`delivery_head`).

    Raises:
        StompError: an id that ``version`` cannot carry (a newline in 1.0).
    """
    return b"MESSAGE\n" + encode_headers([("subscription", subscription)], version)


# A body up to this size is copied into the frame's one buffer; a larger one is written as
# a part of its own (the socket's writelines takes the parts without joining them).
_JOIN_MAX: Final = 16 * 1024


class MessageFrames:
    """The part of MESSAGE frames that depends on the message only, built from its stored
    form.

    Theory of operation: a delivery is :func:`delivery_head` (per delivery: subscription,
    ack id, delivery count) followed by the parts this object makes of the stored octets
    (the JMS headers, properties and body, escaped per version, and the closing NUL). The
    parts of recent small messages are kept, keyed by the identity of their stored octets
    (the object, held by the entry, so its identity stays its own): topic fan-out hands
    every subscriber the same object, in a row or, when a subscriber's credit comes back
    later, a prefetch window later, and each subscriber after the first reuses the first
    one's work. What is kept is bounded by ``budget`` octets, the oldest going first; a
    message larger than :data:`_JOIN_MAX` is not kept (it is written as parts, unjoined).

    Args:
        budget: octets of stored messages and their parts to keep, at most.

    Attributes:
        message_id: the JMSMessageID of the message of the last :meth:`parts` call.
    """

    __slots__ = ("_budget", "_held", "_kept", "message_id")

    def __init__(self, budget: int = 2 * 1024 * 1024) -> None:
        self._budget = budget
        self._held = 0
        # id(stored octets) -> (stored octets, version, message id, parts), oldest first (an
        # OrderedDict: taking the oldest of a plain dict scans the slots freed before it)
        self._kept: OrderedDict[int, tuple[bytes, str, str | None, tuple[bytes, ...]]] = (
            OrderedDict()
        )
        self.message_id: str | None = None

    def parts(
        self, raw: bytes, version: str, *, keep: bool = True
    ) -> tuple[bytes | bytearray | memoryview, ...]:
        """The message part of a MESSAGE frame for the stored octets ``raw`` in STOMP
        ``version``: one buffer, or for a large body the headers, the body and the NUL (a
        Bytes body as a view of ``raw``: not copied). Without ``keep`` (a queue's message:
        no other subscriber gets it) the parts are neither looked up nor kept.

        Raises:
            MessageFormatException: ``raw`` is not a valid encoded message.
            StompError: a header that ``version`` cannot carry (a newline in 1.0).
        """
        kept = self._kept
        hit = kept.get(id(raw)) if keep else None
        if hit is not None:
            if hit[0] is raw and hit[1] == version:
                self.message_id = hit[2]
                return hit[3]
            del kept[id(raw)]  # another version, or the octets of an id reused
            self._held -= len(hit[0]) + len(hit[3][0])
        msg, view = decode_message_view(raw)
        headers, body = message_headers(msg, view)
        lines = _header_lines(headers, version)
        if b"\x00" in lines:  # a NUL would end the frame early for every STOMP client
            lines = _header_lines(_without_nul(headers), version)
        self.message_id = mid = msg._message_id
        if len(body) > _JOIN_MAX:
            return (lines + b"\n", body, b"\x00")
        parts = (b"".join((lines, b"\n", body, b"\x00")),)
        if not keep:
            return parts
        kept[id(raw)] = (raw, version, mid, parts)
        self._held += len(raw) + len(parts[0])
        while self._held > self._budget:
            oldest = kept.popitem(last=False)[1]
            self._held -= len(oldest[0]) + len(oldest[3][0])
        return parts
