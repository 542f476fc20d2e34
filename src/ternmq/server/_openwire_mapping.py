"""Between OpenWire messages and JMS messages, both ways (SERVER.md "OpenWire"; docs/openwire.md).

Theory of operation
-------------------
Pure functions, no I/O and no clock read (the caller passes the time), siblings of
``_stomp_mapping``: the OpenWire gateway calls :func:`message_from_openwire` to turn a
Java producer's ``ActiveMQ*Message`` into the JMS message the engine routes, and
:func:`openwire_message` to turn a delivered JMS message into the ``ActiveMQ*Message`` a
``MessageDispatch`` carries. The engine never sees OpenWire, so a Java producer's message is
an ordinary JMS message for Python and STOMP consumers, selectors, the DLQ and the store.

Where each JMS header lives in ActiveMQ's ``command.Message`` (``ActiveMQMessage``'s getters):
JMSMessageID is ``messageId.toString()`` (its ``textView`` when set, else
``producerId:producerSequenceId``), JMSDestination ``destination``, JMSReplyTo ``replyTo``,
JMSCorrelationID ``correlationId`` (bytes as UTF-8, as ``setJMSCorrelationIDAsBytes`` does),
JMSType ``type``, JMSPriority ``priority``, JMSExpiration ``expiration`` (absolute epoch ms,
as in ternmq), JMSDeliveryMode the ``persistent`` flag, JMSTimestamp ``timestamp``,
JMSRedelivered ``redeliveryCounter > 0``. Four JMSX properties are fields too and never in the
property map: JMSXGroupID ``groupID``, JMSXGroupSeq ``groupSequence``, JMSXUserID ``userID``
and JMSXDeliveryCount ``redeliveryCounter + 1``. ``AMQ_SCHEDULED_DELAY`` (any number, or a
numeric string, as ActiveMQ's scheduler reads it) becomes the JMS delivery time and is not kept
as a property (as the STOMP gateway does). Every other property is a typed entry of the
marshalled primitive map.

Bodies: Text is an int length and modified UTF-8 (null: no content), Bytes the raw octets,
Map a primitive map, Stream the typed values one after another, Object the Java-serialized
octets, kept as they are both ways (a Python consumer gets them as the ObjectMessage's
payload; reading ``.object`` raises ``MessageFormatException``, as they are not a pickle).
A compressed body (the client's ``useCompression``) is inflated within a size limit.

Message ids: a Java client hashes and compares ``MessageId`` by its ``producerId`` and
``producerSequenceId`` (its duplicate audit too), so every id sent to it needs both, unique per
message and stable across redeliveries. :func:`message_id_of` sets ``textView`` to the JMS id
(``getJMSMessageID()`` then shows that very string) and derives the producer and sequence from
the text, one-to-one: ActiveMQ's own ``ID:conn:session:producer:seq`` form parses as ActiveMQ
parses it; ternmq's ``ID:prefix-N`` form becomes producer ``prefix`` (session -1) and sequence
N; any other text becomes a producer of its own (session -1, value 1) with sequence 0.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final

from ternmq.destination import (
    Destination,
    Queue,
    TemporaryQueue,
    TemporaryTopic,
    Topic,
    destination,
)
from ternmq.errors import InvalidDestinationException, MessageFormatException
from ternmq.message import BytesMessage, MapMessage, Message, StreamMessage, TextMessage
from ternmq.message import _convert as cv
from ternmq.message._object import ObjectMessage
from ternmq.message._types import T, Value
from ternmq.protocol import openwire as ow

__all__ = [
    "SCHEDULED_DELAY",
    "jms_destination",
    "message_from_openwire",
    "message_id_of",
    "openwire_destination",
    "openwire_message",
]

#: ActiveMQ's delivery-delay property (``ScheduledMessage.AMQ_SCHEDULED_DELAY``).
SCHEDULED_DELAY: Final = "AMQ_SCHEDULED_DELAY"

#: ActiveMQ's composite separator and wildcards (``DestinationFilter.ANY_CHILD`` etc.).
_COMPOSITE: Final = ","
_WILDCARDS: Final = ("*", ">")

# JMSX properties that OpenWire carries as message fields, not in the property map.
_FIELD_PROPERTIES: Final = frozenset(
    {"JMSXGroupID", "JMSXGroupSeq", "JMSXUserID", "JMSXDeliveryCount"}
)

# Java's MarshallingSupport.marshalString: a string of fewer UTF-16 units than this is a
# STRING (writeUTF), a longer one a BIG_STRING (int length).
_BIG_STRING_UNITS: Final = 32767 // 4

_PROPERTY_TAGS: Final[dict[ow.PType, T]] = {
    ow.PType.NULL: T.NULL,
    ow.PType.BOOLEAN: T.BOOLEAN,
    ow.PType.BYTE: T.BYTE,
    ow.PType.SHORT: T.SHORT,
    ow.PType.INTEGER: T.INT,
    ow.PType.LONG: T.LONG,
    ow.PType.FLOAT: T.FLOAT,
    ow.PType.DOUBLE: T.DOUBLE,
    ow.PType.STRING: T.STRING,
    ow.PType.BIG_STRING: T.STRING,
}
# Map and Stream bodies also hold chars and byte arrays (JMS 2.0 §3.11.3).
_BODY_TAGS: Final[dict[ow.PType, T]] = {
    **_PROPERTY_TAGS,
    ow.PType.CHAR: T.CHAR,
    ow.PType.BYTE_ARRAY: T.BYTES,
}
_PTYPES: Final[dict[T, ow.PType]] = {
    T.NULL: ow.PType.NULL,
    T.BOOLEAN: ow.PType.BOOLEAN,
    T.BYTE: ow.PType.BYTE,
    T.SHORT: ow.PType.SHORT,
    T.INT: ow.PType.INTEGER,
    T.LONG: ow.PType.LONG,
    T.FLOAT: ow.PType.FLOAT,
    T.DOUBLE: ow.PType.DOUBLE,
    T.STRING: ow.PType.STRING,
    T.CHAR: ow.PType.CHAR,
    T.BYTES: ow.PType.BYTE_ARRAY,
}

_BODY_CLASSES: Final[dict[str, type[ow.Message]]] = {
    "message": ow.ActiveMQMessage,
    "text": ow.ActiveMQTextMessage,
    "bytes": ow.ActiveMQBytesMessage,
    "map": ow.ActiveMQMapMessage,
    "stream": ow.ActiveMQStreamMessage,
    "object": ow.ActiveMQObjectMessage,
}


# --- Destinations ----------------------------------------------------------------------------


def jms_destination(dest: ow.ActiveMQDestination) -> Destination:
    """ActiveMQQueue ``orders`` -> ``queue://orders``, and topics, temporary queues and
    temporary topics alike (a temporary destination keeps ActiveMQ's ``ID:...`` name).

    Raises:
        InvalidDestinationException: a composite (``a,b``) or wildcard (``a.*``, ``a.>``)
            name, which ternmq does not route, a destination without a name or of no known
            kind, or a name ternmq does not accept.
    """
    name = dest.physical_name
    if not name:
        raise InvalidDestinationException("an OpenWire destination without a name: name it")
    if _COMPOSITE in name:
        raise InvalidDestinationException(
            f"composite destination {name!r} is not supported by ternmq: send to each "
            "destination with its own producer (or a topic with several subscribers)"
        )
    if any(w in name for w in _WILDCARDS):
        raise InvalidDestinationException(
            f"wildcard destination {name!r} is not supported by ternmq: name one destination "
            "('*' and '>' are not wildcards here and cannot be part of a name)"
        )
    if isinstance(dest, ow.ActiveMQTempQueue):
        return TemporaryQueue(name)
    if isinstance(dest, ow.ActiveMQTempTopic):
        return TemporaryTopic(name)
    if isinstance(dest, ow.ActiveMQQueue):
        return Queue(name)
    if isinstance(dest, ow.ActiveMQTopic):
        return Topic(name)
    raise InvalidDestinationException(
        f"an OpenWire destination of type {type(dest).__name__}: use a queue or a topic"
    )


def openwire_destination(dest: Destination | str) -> ow.ActiveMQDestination:
    """``queue://orders`` (or its Destination) -> ActiveMQQueue ``orders``; the inverse of
    :func:`jms_destination`.

    Raises:
        InvalidDestinationException: a text that is not a ternmq destination.
    """
    if isinstance(dest, str):
        dest = destination(dest)
    name = dest.name
    if dest.kind == "queue":
        return ow.ActiveMQQueue(physical_name=name)
    if dest.kind == "topic":
        return ow.ActiveMQTopic(physical_name=name)
    if dest.kind == "temp-queue":
        return ow.ActiveMQTempQueue(physical_name=name)
    return ow.ActiveMQTempTopic(physical_name=name)


# --- Message ids -----------------------------------------------------------------------------


def producer_id_text(producer: ow.ProducerId) -> str:
    """``ProducerId.toString()``: ``connectionId:sessionId:value``. Never raises."""
    return f"{producer.connection_id}:{producer.session_id}:{producer.value}"


def message_id_text(message_id: ow.MessageId) -> str:
    """``MessageId.toString()``, what a Java client's ``getJMSMessageID()`` shows: the
    ``textView`` (with ``ID:`` put in front when it lacks it), else ``producer:sequence``.

    Raises:
        MessageFormatException: an id with neither a text view nor a producer id.
    """
    text = message_id.text_view
    if text is not None:
        return text if text.startswith("ID:") else "ID:" + text
    if message_id.producer_id is None:
        raise MessageFormatException("an OpenWire MessageId without a producer id or text")
    return f"{producer_id_text(message_id.producer_id)}:{message_id.producer_sequence_id}"


_DIGITS = re.compile(r"[0-9]+")


def _canonical_long(text: str) -> int | None:
    """``text`` as a Java long when it is its own canonical decimal form, else None."""
    if not _DIGITS.fullmatch(text) or (len(text) > 1 and text[0] == "0"):
        return None
    number = int(text)
    return number if number < 2**63 else None


def message_id_of(text: str, broker_sequence: int) -> ow.MessageId:
    """The OpenWire MessageId for the JMSMessageID ``text``: a Java client's
    ``getJMSMessageID()`` shows ``text`` (which starts ``ID:``, as every ternmq id does), and
    the id of a message from an OpenWire producer keeps its producer and sequence, so it
    round-trips to the same string. ``broker_sequence`` becomes ``brokerSequenceId``.
    Never raises.
    """
    producer: ow.ProducerId | None = None
    sequence = 0
    head, _, tail = text.rpartition(":")
    conn, _, rest = head.rpartition(":")
    conn, _, sess = conn.rpartition(":")
    parts = (_canonical_long(sess), _canonical_long(rest), _canonical_long(tail))
    if conn.startswith("ID:") and None not in parts:
        session, value, seq = parts
        assert session is not None and value is not None and seq is not None
        producer = ow.ProducerId(connection_id=conn, session_id=session, value=value)
        sequence = seq
    if producer is None:
        prefix, dash, number = text.rpartition("-")
        seq_or_none = _canonical_long(number) if dash else None
        if seq_or_none is not None:
            producer = ow.ProducerId(connection_id=prefix, session_id=-1, value=0)
            sequence = seq_or_none
        else:
            producer = ow.ProducerId(connection_id=text, session_id=-1, value=1)
    return ow.MessageId(
        text_view=text,
        producer_id=producer,
        producer_sequence_id=sequence,
        broker_sequence_id=broker_sequence,
    )


# --- OpenWire -> JMS ---------------------------------------------------------------------------


def _string(value: object, what: str) -> str:
    try:
        checked = cv.check_string(value, nullable=False)
    except MessageFormatException as exc:
        raise MessageFormatException(f"{what}: {exc}") from None
    assert checked is not None
    return checked


def _typed(item: ow.Primitive, tags: dict[ow.PType, T], what: str) -> tuple[T, Value]:
    tag = tags.get(item.type)
    if tag is None:
        raise MessageFormatException(
            f"{what} is a Java {item.type.name.lower()}, which a JMS message cannot hold: "
            "use a boolean, number, String (or byte[] or char in a Map or Stream body)"
        )
    value = item.value
    if tag is T.STRING:
        value = _string(value, what)
    assert not isinstance(value, (dict, list))
    return tag, value


def _scheduled_delay(item: ow.Primitive) -> int:
    value = item.value
    delay: int | None = None
    if item.type in (ow.PType.BYTE, ow.PType.SHORT, ow.PType.INTEGER, ow.PType.LONG):
        assert isinstance(value, int)
        delay = value
    elif item.type in (ow.PType.STRING, ow.PType.BIG_STRING):
        assert isinstance(value, str)
        try:
            delay = cv.parse_java_integral(value, T.LONG)
        except ValueError:
            delay = None
    if delay is None or delay < 0:
        raise MessageFormatException(
            f"{SCHEDULED_DELAY} must be a number of milliseconds >= 0, not {value!r}"
        )
    return delay


def _body_from_openwire(cmd: ow.Message, max_body_size: int) -> Message:
    if isinstance(cmd, ow.ActiveMQBlobMessage):
        raise MessageFormatException(
            "ActiveMQ BlobMessages are not supported by ternmq: send the content in a BytesMessage"
        )
    content = ow.decode_content(cmd, max_body_size)
    if isinstance(cmd, ow.ActiveMQTextMessage):
        text = None if content is None else ow.decode_text_body(content)
        return TextMessage(None if text is None else _string(text, "the text body"))
    if isinstance(cmd, ow.ActiveMQBytesMessage):
        msg = BytesMessage()
        msg._buffer = bytearray(content or b"")
        return msg
    if isinstance(cmd, ow.ActiveMQMapMessage):
        mmsg = MapMessage()
        entries = ow.decode_primitive_map(content) if content else None
        for key, item in (entries or {}).items():
            mmsg._map[_string(key, "a map name")] = _typed(item, _BODY_TAGS, f"map entry {key!r}")
        return mmsg
    if isinstance(cmd, ow.ActiveMQStreamMessage):
        smsg = StreamMessage()
        values = ow.decode_primitive_stream(content) if content else []
        smsg._items = [
            _typed(item, _BODY_TAGS, f"stream value {i}") for i, item in enumerate(values)
        ]
        return smsg
    if isinstance(cmd, ow.ActiveMQObjectMessage):
        omsg = ObjectMessage()
        omsg._payload = content
        return omsg
    if type(cmd) is ow.ActiveMQMessage:
        return Message()
    raise MessageFormatException(f"an OpenWire message of type {type(cmd).__name__}")


def message_from_openwire(
    cmd: ow.Message,
    *,
    now_ms: int,
    resolve: Callable[[ow.ActiveMQDestination], Destination],
    max_body_size: int = ow.DEFAULT_MAX_FRAME_SIZE,
) -> Message:
    """The JMS message a Java producer's OpenWire message carries: every header, the typed
    properties and the body (see the module docstring for where each lives).

    Args:
        cmd: the ``ActiveMQ*Message`` of a producer's send.
        now_ms: the broker's time, epoch milliseconds (the delivery time is ``now_ms``
            plus any ``AMQ_SCHEDULED_DELAY``).
        resolve: an OpenWire destination (``destination``, ``replyTo``) -> JMS destination
            (e.g. :func:`jms_destination`, or the gateway's, which knows its temporaries).
        max_body_size: the most octets a compressed body may inflate to.

    Raises:
        MessageFormatException: a value the JMS model cannot hold (a Map, List, char or
            byte[] property, a Map or List inside a Map or Stream body, an unpaired
            surrogate, a priority outside 0..9, a JMSX property of the wrong type), a
            BlobMessage, or a message without a MessageId.
        InvalidDestinationException: no destination, or one ternmq does not route.
        OpenWireError: malformed properties or body octets (close the connection).
    """
    if cmd.message_id is None:
        raise MessageFormatException("an OpenWire message without a MessageId")
    if cmd.destination is None:
        raise InvalidDestinationException("an OpenWire message without a destination")
    msg = _body_from_openwire(cmd, max_body_size)
    msg._message_id = message_id_text(cmd.message_id)
    msg._destination = resolve(cmd.destination)
    if cmd.reply_to is not None:
        msg._reply_to = resolve(cmd.reply_to)
    if cmd.correlation_id is not None:
        msg._correlation_id = _string(cmd.correlation_id, "JMSCorrelationID")
    if cmd.type is not None:
        msg._type = _string(cmd.type, "JMSType")
    if not 0 <= cmd.priority <= 9:
        raise MessageFormatException(f"JMSPriority {cmd.priority} is outside 0..9")
    msg._priority = cmd.priority
    msg._expiration = max(cmd.expiration, 0)
    msg._timestamp = cmd.timestamp
    msg._delivery_mode = 2 if cmd.persistent else 1
    msg._delivery_time = now_ms
    props = (
        ow.decode_primitive_map(cmd.marshalled_properties) if cmd.marshalled_properties else None
    )
    for name, item in (props or {}).items():
        if name == SCHEDULED_DELAY:
            msg._delivery_time = now_ms + _scheduled_delay(item)
            continue
        if name in _FIELD_PROPERTIES:
            continue  # ActiveMQ keeps these in fields; a stray map entry is not them
        tag, value = _typed(item, _PROPERTY_TAGS, f"property {name!r}")
        assert not isinstance(value, bytes)
        msg._store_property(_string(name, "a property name"), tag, value)
    if cmd.group_id is not None:
        msg._store_property("JMSXGroupID", T.STRING, _string(cmd.group_id, "JMSXGroupID"))
        if cmd.group_sequence:
            msg._store_property("JMSXGroupSeq", T.INT, cmd.group_sequence)
    if cmd.user_id is not None:
        msg._store_property("JMSXUserID", T.STRING, _string(cmd.user_id, "JMSXUserID"))
    return msg


# --- JMS -> OpenWire ---------------------------------------------------------------------------


def _java_string_tag(text: str) -> ow.PType:
    # Java's String.length(): UTF-16 code units (a character outside the BMP counts 2).
    units = len(text) if text.isascii() else len(text.encode("utf-16-le", "surrogatepass")) // 2
    return ow.PType.STRING if units < _BIG_STRING_UNITS else ow.PType.BIG_STRING


def _primitive(tag: T, value: Value) -> ow.Primitive:
    if tag is T.STRING:
        assert isinstance(value, str)
        return ow.Primitive(_java_string_tag(value), value)
    return ow.Primitive(_PTYPES[tag], value)


def _content(msg: Message) -> bytes | None:
    if isinstance(msg, TextMessage):
        return None if msg._text is None else ow.encode_text_body(msg._text)
    if isinstance(msg, BytesMessage):
        return bytes(msg._buffer) if msg._buffer else None
    if isinstance(msg, MapMessage):
        if not msg._map:
            return None
        return ow.encode_primitive_map({k: _primitive(t, v) for k, (t, v) in msg._map.items()})
    if isinstance(msg, StreamMessage):
        if not msg._items:
            return None
        return ow.encode_primitive_stream(_primitive(t, v) for t, v in msg._items)
    if isinstance(msg, ObjectMessage):
        return msg._payload
    return None


def openwire_message(
    msg: Message,
    *,
    destination: ow.ActiveMQDestination,
    message_id: ow.MessageId,
    redelivery_counter: int,
) -> ow.Message:
    """The ``ActiveMQ*Message`` that delivers ``msg`` to a Java consumer, with every header
    and typed property as a Java producer would have set them.

    Args:
        msg: the JMS message (from any producer: Python, STOMP or OpenWire).
        destination: where it is delivered from (the consumer's destination).
        message_id: its OpenWire id (from :func:`message_id_of`).
        redelivery_counter: deliveries before this one (JMSXDeliveryCount - 1).

    Raises:
        MessageFormatException: a string too long for Java's ``writeUTF`` in a place that
            has no long form (a property or map name over 65535 octets).
    """
    props = dict(msg._properties)
    types = msg._property_types
    group_id = props.pop("JMSXGroupID", None)
    group_seq = props.pop("JMSXGroupSeq", None)
    user_id = props.pop("JMSXUserID", None)
    props.pop("JMSXDeliveryCount", None)
    marshalled = None
    if props:
        entries = {name: _primitive(types[name], value) for name, value in props.items()}
        try:
            marshalled = ow.encode_primitive_map(entries)
        except ow.OpenWireError as exc:
            raise MessageFormatException(str(exc)) from None
    corr = msg._correlation_id
    if isinstance(corr, bytes):
        corr = corr.decode("utf-8", "replace")  # setJMSCorrelationIDAsBytes: new String(UTF-8)
    try:
        content = _content(msg)
    except ow.OpenWireError as exc:
        raise MessageFormatException(str(exc)) from None
    cls = _BODY_CLASSES[msg.body_type]
    return cls(
        producer_id=message_id.producer_id,
        destination=destination,
        message_id=message_id,
        group_id=group_id if isinstance(group_id, str) else None,
        group_sequence=group_seq if isinstance(group_seq, int) else 0,
        correlation_id=corr,
        persistent=msg._delivery_mode == 2,
        expiration=msg._expiration,
        priority=msg._priority,
        reply_to=None if msg._reply_to is None else openwire_destination(msg._reply_to),
        timestamp=msg._timestamp,
        type=msg._type,
        content=content,
        marshalled_properties=marshalled,
        redelivery_counter=redelivery_counter,
        user_id=user_id if isinstance(user_id, str) else None,
    )
