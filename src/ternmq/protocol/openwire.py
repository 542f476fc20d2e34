"""OpenWire v12, the wire format of ActiveMQ Classic's Java client, sans-IO and loose-encoded.

Theory of operation
-------------------
OpenWire carries *data structures*: commands (``ConnectionInfo``, ``MessageAck``...), ids
(``ConsumerId``...), destinations and messages. Each has a one-octet type code and a fixed
list of fields, marshalled in order; a class here mirrors one Java class of
``org.apache.activemq.command`` and lists its fields in :attr:`DataStructure.FIELDS` (the
parent's fields first, as each Java marshaller calls ``super.looseMarshal`` first). The
table was taken from ActiveMQ's ``openwire/v12/*Marshaller.java``; field names are the Java
property names in snake case (Java's misspellings such as ``subcription_name`` kept).

Only the *loose* encoding exists here. The server decides the encoding: a client ANDs its
``TightEncodingEnabled`` and ``CacheEnabled`` with the server's ``WireFormatInfo``, so a
server that offers neither never sees tight or cached marshalling (the first
``WireFormatInfo`` of each side is always loose). Field kinds, all big-endian as Java's
``DataOutput``:

- boolean: one octet (0 or 1); byte, int, long: 1, 4, 8 octets, signed;
- string: a boolean "present", then ``writeUTF`` (unsigned short length, modified UTF-8);
- byte array / byte sequence: a boolean "present", an int length, the octets;
- nested (and, with the cache off, cached) object: a boolean "present", the type octet,
  the object's fields;
- object array: a boolean "present", a short count, that many nested objects;
- throwable: a boolean "present", class name and message as strings and, only when the
  negotiated ``StackTraceEnabled`` is on, a short count of stack frames (three strings and an
  int each) and the cause, itself a throwable;
- the ``WireFormatInfo`` magic: the 8 octets ``ActiveMQ``.

A frame is a 4-octet size (of what follows), the type octet and the fields; nothing may be
left over. :class:`FrameParser` checks the announced size against ``max_frame_size`` before
it buffers the frame, every length inside a frame against what remains of it before it
allocates, and the nesting depth of objects and causes, so hostile input costs at most one
frame's bytes and raises :class:`OpenWireError` (the connection must then be closed).

Message bodies and properties are byte strings inside the message. Helpers here encode and
decode them: :func:`encode_primitive_map` / :func:`decode_primitive_map` for the typed
property map (and a MapMessage body), :func:`encode_primitive_stream` /
:func:`decode_primitive_stream` for a StreamMessage body, :func:`encode_text_body` /
:func:`decode_text_body` for a TextMessage body (an int length and modified UTF-8).
:class:`WireFormat` reads and writes the settings a ``WireFormatInfo`` carries in its
property map and negotiates them as ``OpenWireFormat.renegotiateWireFormat`` and the
inactivity monitor do. A message with ``compressed`` set (the client's ``useCompression``)
carries its body deflated: :func:`decode_content` inflates it, never past a size limit,
and :func:`compress_content` deflates a body the same way.
Each typed value is a :class:`Primitive`: its OpenWire type tag and its Python value, so
``short`` 5 and ``int`` 5 stay distinct and re-encode to the same bytes.

Pure (STYLE rule 1): no socket, thread, clock or log.
"""

from __future__ import annotations

import dataclasses
import enum
import re
import struct
import typing
import zlib
from collections.abc import Callable, Iterable
from typing import ClassVar, Final

from ternmq.protocol.frames import ProtocolError

__all__ = [
    "DEFAULT_MAX_FRAME_SIZE",
    "MAGIC",
    "MAX_DEPTH",
    "TYPES",
    "VERSION",
    "WireFormat",
    "DataStructure",
    "FrameParser",
    "JavaThrowable",
    "OpenWireError",
    "PType",
    "Primitive",
    "StackFrame",
    "compress_content",
    "decode_content",
    "decode_frame",
    "decode_primitive_stream",
    "decode_primitive_map",
    "decode_text_body",
    "encode_frame",
    "encode_primitive_stream",
    "encode_primitive_map",
    "encode_text_body",
]

VERSION: Final = 12
MAGIC: Final = b"ActiveMQ"
DEFAULT_MAX_FRAME_SIZE: Final = 64 * 1024 * 1024
MAX_DEPTH: Final = 32
"""The deepest nesting of objects (and of throwable causes) a decoded frame may have."""
NULL_TYPE: Final = 0

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_U16 = struct.Struct(">H")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_F32 = struct.Struct(">f")
_F64 = struct.Struct(">d")


class OpenWireError(ProtocolError):
    """Malformed or oversized OpenWire input; the connection must be closed."""


# --- Field kinds -------------------------------------------------------------------------


class _Kind(enum.Enum):
    BOOL = "boolean"
    BYTE = "byte"
    INT = "int"
    LONG = "long"
    STRING = "string"
    BYTES = "byte sequence"
    NESTED = "nested object"
    ARRAY = "object array"
    THROWABLE = "throwable"
    MAGIC = "magic"


_BOOL: Final = _Kind.BOOL
_BYTE: Final = _Kind.BYTE
_INT: Final = _Kind.INT
_LONG: Final = _Kind.LONG
_STRING: Final = _Kind.STRING
_BYTES: Final = _Kind.BYTES
_NESTED: Final = _Kind.NESTED
_ARRAY: Final = _Kind.ARRAY
_THROWABLE: Final = _Kind.THROWABLE
_MAGIC: Final = _Kind.MAGIC

_Fields = tuple[tuple[str, _Kind], ...]


@dataclasses.dataclass(frozen=True, slots=True)
class StackFrame:
    """One ``StackTraceElement`` of a :class:`JavaThrowable`."""

    class_name: str | None
    method_name: str | None
    file_name: str | None
    line_number: int


@dataclasses.dataclass(frozen=True, slots=True)
class JavaThrowable:
    """A Java exception as OpenWire carries it (in ``ExceptionResponse``, ``ConnectionError``,
    ``MessageAck.poison_cause``). ``stack`` and ``cause`` travel only when the negotiated
    ``StackTraceEnabled`` is on; otherwise they are dropped when encoding."""

    class_name: str | None
    message: str | None
    stack: tuple[StackFrame, ...] = ()
    cause: JavaThrowable | None = None


@dataclasses.dataclass(slots=True, kw_only=True)
class DataStructure:
    """The base of every OpenWire object: :attr:`TYPE` is its type octet (0 for the abstract
    bases, which are never on the wire), :attr:`FIELDS` its fields in wire order."""

    TYPE: ClassVar[int] = 0
    FIELDS: ClassVar[_Fields] = ()


@dataclasses.dataclass(slots=True, kw_only=True)
class BaseCommand(DataStructure):
    """The fields every command carries: its id and whether the peer must answer."""

    FIELDS: ClassVar[_Fields] = (
        *DataStructure.FIELDS,
        ("command_id", _INT),
        ("response_required", _BOOL),
    )
    command_id: int = 0
    response_required: bool = False


@dataclasses.dataclass(slots=True, kw_only=True)
class Message(BaseCommand):
    """The fields of every JMS message; ``content`` and ``marshalled_properties`` are raw bytes."""

    FIELDS: ClassVar[_Fields] = (
        *BaseCommand.FIELDS,
        ("producer_id", _NESTED),
        ("destination", _NESTED),
        ("transaction_id", _NESTED),
        ("original_destination", _NESTED),
        ("message_id", _NESTED),
        ("original_transaction_id", _NESTED),
        ("group_id", _STRING),
        ("group_sequence", _INT),
        ("correlation_id", _STRING),
        ("persistent", _BOOL),
        ("expiration", _LONG),
        ("priority", _BYTE),
        ("reply_to", _NESTED),
        ("timestamp", _LONG),
        ("type", _STRING),
        ("content", _BYTES),
        ("marshalled_properties", _BYTES),
        ("data_structure", _NESTED),
        ("target_consumer_id", _NESTED),
        ("compressed", _BOOL),
        ("redelivery_counter", _INT),
        ("broker_path", _ARRAY),
        ("arrival", _LONG),
        ("user_id", _STRING),
        ("recieved_by_df_bridge", _BOOL),
        ("droppable", _BOOL),
        ("cluster", _ARRAY),
        ("broker_in_time", _LONG),
        ("broker_out_time", _LONG),
        ("jmsx_group_first_for_consumer", _BOOL),
    )
    producer_id: ProducerId | None = None
    destination: ActiveMQDestination | None = None
    transaction_id: TransactionId | None = None
    original_destination: ActiveMQDestination | None = None
    message_id: MessageId | None = None
    original_transaction_id: TransactionId | None = None
    group_id: str | None = None
    group_sequence: int = 0
    correlation_id: str | None = None
    persistent: bool = False
    expiration: int = 0
    priority: int = 0
    reply_to: ActiveMQDestination | None = None
    timestamp: int = 0
    type: str | None = None
    content: bytes | None = None
    marshalled_properties: bytes | None = None
    data_structure: DataStructure | None = None
    target_consumer_id: ConsumerId | None = None
    compressed: bool = False
    redelivery_counter: int = 0
    broker_path: list[DataStructure | None] | None = None
    arrival: int = 0
    user_id: str | None = None
    recieved_by_df_bridge: bool = False
    droppable: bool = False
    cluster: list[DataStructure | None] | None = None
    broker_in_time: int = 0
    broker_out_time: int = 0
    jmsx_group_first_for_consumer: bool = False


@dataclasses.dataclass(slots=True, kw_only=True)
class ActiveMQMessage(Message):
    """A message without a body type of its own."""

    TYPE: ClassVar[int] = 23


@dataclasses.dataclass(slots=True, kw_only=True)
class ActiveMQBlobMessage(ActiveMQMessage):
    """OpenWire ``ActiveMQBlobMessage`` (type 29)."""

    TYPE: ClassVar[int] = 29
    FIELDS: ClassVar[_Fields] = (
        *ActiveMQMessage.FIELDS,
        ("remote_blob_url", _STRING),
        ("mime_type", _STRING),
        ("deleted_by_broker", _BOOL),
    )
    remote_blob_url: str | None = None
    mime_type: str | None = None
    deleted_by_broker: bool = False


@dataclasses.dataclass(slots=True, kw_only=True)
class ActiveMQBytesMessage(ActiveMQMessage):
    """OpenWire ``ActiveMQBytesMessage`` (type 24)."""

    TYPE: ClassVar[int] = 24


@dataclasses.dataclass(slots=True, kw_only=True)
class ActiveMQDestination(DataStructure):
    """A destination by its physical name."""

    FIELDS: ClassVar[_Fields] = (*DataStructure.FIELDS, ("physical_name", _STRING))
    physical_name: str | None = None


@dataclasses.dataclass(slots=True, kw_only=True)
class ActiveMQMapMessage(ActiveMQMessage):
    """OpenWire ``ActiveMQMapMessage`` (type 25)."""

    TYPE: ClassVar[int] = 25


@dataclasses.dataclass(slots=True, kw_only=True)
class ActiveMQObjectMessage(ActiveMQMessage):
    """OpenWire ``ActiveMQObjectMessage`` (type 26)."""

    TYPE: ClassVar[int] = 26


@dataclasses.dataclass(slots=True, kw_only=True)
class ActiveMQQueue(ActiveMQDestination):
    """OpenWire ``ActiveMQQueue`` (type 100)."""

    TYPE: ClassVar[int] = 100


@dataclasses.dataclass(slots=True, kw_only=True)
class ActiveMQStreamMessage(ActiveMQMessage):
    """OpenWire ``ActiveMQStreamMessage`` (type 27)."""

    TYPE: ClassVar[int] = 27


@dataclasses.dataclass(slots=True, kw_only=True)
class ActiveMQTempDestination(ActiveMQDestination):
    """A temporary destination."""


@dataclasses.dataclass(slots=True, kw_only=True)
class ActiveMQTempQueue(ActiveMQTempDestination):
    """OpenWire ``ActiveMQTempQueue`` (type 102)."""

    TYPE: ClassVar[int] = 102


@dataclasses.dataclass(slots=True, kw_only=True)
class ActiveMQTempTopic(ActiveMQTempDestination):
    """OpenWire ``ActiveMQTempTopic`` (type 103)."""

    TYPE: ClassVar[int] = 103


@dataclasses.dataclass(slots=True, kw_only=True)
class ActiveMQTextMessage(ActiveMQMessage):
    """OpenWire ``ActiveMQTextMessage`` (type 28)."""

    TYPE: ClassVar[int] = 28


@dataclasses.dataclass(slots=True, kw_only=True)
class ActiveMQTopic(ActiveMQDestination):
    """OpenWire ``ActiveMQTopic`` (type 101)."""

    TYPE: ClassVar[int] = 101


@dataclasses.dataclass(slots=True, kw_only=True)
class BrokerId(DataStructure):
    """OpenWire ``BrokerId`` (type 124)."""

    TYPE: ClassVar[int] = 124
    FIELDS: ClassVar[_Fields] = (*DataStructure.FIELDS, ("value", _STRING))
    value: str | None = None


@dataclasses.dataclass(slots=True, kw_only=True)
class BrokerInfo(BaseCommand):
    """OpenWire ``BrokerInfo`` (type 2)."""

    TYPE: ClassVar[int] = 2
    FIELDS: ClassVar[_Fields] = (
        *BaseCommand.FIELDS,
        ("broker_id", _NESTED),
        ("broker_url", _STRING),
        ("peer_broker_infos", _ARRAY),
        ("broker_name", _STRING),
        ("slave_broker", _BOOL),
        ("master_broker", _BOOL),
        ("fault_tolerant_configuration", _BOOL),
        ("duplex_connection", _BOOL),
        ("network_connection", _BOOL),
        ("connection_id", _LONG),
        ("broker_upload_url", _STRING),
        ("network_properties", _STRING),
    )
    broker_id: BrokerId | None = None
    broker_url: str | None = None
    peer_broker_infos: list[DataStructure | None] | None = None
    broker_name: str | None = None
    slave_broker: bool = False
    master_broker: bool = False
    fault_tolerant_configuration: bool = False
    duplex_connection: bool = False
    network_connection: bool = False
    connection_id: int = 0
    broker_upload_url: str | None = None
    network_properties: str | None = None


@dataclasses.dataclass(slots=True, kw_only=True)
class BrokerSubscriptionInfo(BaseCommand):
    """OpenWire ``BrokerSubscriptionInfo`` (type 92)."""

    TYPE: ClassVar[int] = 92
    FIELDS: ClassVar[_Fields] = (
        *BaseCommand.FIELDS,
        ("broker_id", _NESTED),
        ("broker_name", _STRING),
        ("subscription_infos", _ARRAY),
    )
    broker_id: BrokerId | None = None
    broker_name: str | None = None
    subscription_infos: list[DataStructure | None] | None = None


@dataclasses.dataclass(slots=True, kw_only=True)
class ConnectionControl(BaseCommand):
    """OpenWire ``ConnectionControl`` (type 18)."""

    TYPE: ClassVar[int] = 18
    FIELDS: ClassVar[_Fields] = (
        *BaseCommand.FIELDS,
        ("close", _BOOL),
        ("exit", _BOOL),
        ("fault_tolerant", _BOOL),
        ("resume", _BOOL),
        ("suspend", _BOOL),
        ("connected_brokers", _STRING),
        ("reconnect_to", _STRING),
        ("rebalance_connection", _BOOL),
        ("token", _BYTES),
    )
    close: bool = False
    exit: bool = False
    fault_tolerant: bool = False
    resume: bool = False
    suspend: bool = False
    connected_brokers: str | None = None
    reconnect_to: str | None = None
    rebalance_connection: bool = False
    token: bytes | None = None


@dataclasses.dataclass(slots=True, kw_only=True)
class ConnectionError(BaseCommand):
    """OpenWire ``ConnectionError`` (type 16)."""

    TYPE: ClassVar[int] = 16
    FIELDS: ClassVar[_Fields] = (
        *BaseCommand.FIELDS,
        ("exception", _THROWABLE),
        ("connection_id", _NESTED),
    )
    exception: JavaThrowable | None = None
    connection_id: ConnectionId | None = None


@dataclasses.dataclass(slots=True, kw_only=True)
class ConnectionId(DataStructure):
    """OpenWire ``ConnectionId`` (type 120)."""

    TYPE: ClassVar[int] = 120
    FIELDS: ClassVar[_Fields] = (*DataStructure.FIELDS, ("value", _STRING))
    value: str | None = None


@dataclasses.dataclass(slots=True, kw_only=True)
class ConnectionInfo(BaseCommand):
    """OpenWire ``ConnectionInfo`` (type 3)."""

    TYPE: ClassVar[int] = 3
    FIELDS: ClassVar[_Fields] = (
        *BaseCommand.FIELDS,
        ("connection_id", _NESTED),
        ("client_id", _STRING),
        ("password", _STRING),
        ("user_name", _STRING),
        ("broker_path", _ARRAY),
        ("broker_master_connector", _BOOL),
        ("manageable", _BOOL),
        ("client_master", _BOOL),
        ("fault_tolerant", _BOOL),
        ("failover_reconnect", _BOOL),
        ("client_ip", _STRING),
    )
    connection_id: ConnectionId | None = None
    client_id: str | None = None
    password: str | None = None
    user_name: str | None = None
    broker_path: list[DataStructure | None] | None = None
    broker_master_connector: bool = False
    manageable: bool = False
    client_master: bool = False
    fault_tolerant: bool = False
    failover_reconnect: bool = False
    client_ip: str | None = None


@dataclasses.dataclass(slots=True, kw_only=True)
class ConsumerControl(BaseCommand):
    """OpenWire ``ConsumerControl`` (type 17)."""

    TYPE: ClassVar[int] = 17
    FIELDS: ClassVar[_Fields] = (
        *BaseCommand.FIELDS,
        ("destination", _NESTED),
        ("close", _BOOL),
        ("consumer_id", _NESTED),
        ("prefetch", _INT),
        ("flush", _BOOL),
        ("start", _BOOL),
        ("stop", _BOOL),
    )
    destination: ActiveMQDestination | None = None
    close: bool = False
    consumer_id: ConsumerId | None = None
    prefetch: int = 0
    flush: bool = False
    start: bool = False
    stop: bool = False


@dataclasses.dataclass(slots=True, kw_only=True)
class ConsumerId(DataStructure):
    """OpenWire ``ConsumerId`` (type 122)."""

    TYPE: ClassVar[int] = 122
    FIELDS: ClassVar[_Fields] = (
        *DataStructure.FIELDS,
        ("connection_id", _STRING),
        ("session_id", _LONG),
        ("value", _LONG),
    )
    connection_id: str | None = None
    session_id: int = 0
    value: int = 0


@dataclasses.dataclass(slots=True, kw_only=True)
class ConsumerInfo(BaseCommand):
    """OpenWire ``ConsumerInfo`` (type 5)."""

    TYPE: ClassVar[int] = 5
    FIELDS: ClassVar[_Fields] = (
        *BaseCommand.FIELDS,
        ("consumer_id", _NESTED),
        ("browser", _BOOL),
        ("destination", _NESTED),
        ("prefetch_size", _INT),
        ("maximum_pending_message_limit", _INT),
        ("dispatch_async", _BOOL),
        ("selector", _STRING),
        ("client_id", _STRING),
        ("subscription_name", _STRING),
        ("no_local", _BOOL),
        ("exclusive", _BOOL),
        ("retroactive", _BOOL),
        ("priority", _BYTE),
        ("broker_path", _ARRAY),
        ("additional_predicate", _NESTED),
        ("network_subscription", _BOOL),
        ("optimized_acknowledge", _BOOL),
        ("no_range_acks", _BOOL),
        ("network_consumer_path", _ARRAY),
    )
    consumer_id: ConsumerId | None = None
    browser: bool = False
    destination: ActiveMQDestination | None = None
    prefetch_size: int = 0
    maximum_pending_message_limit: int = 0
    dispatch_async: bool = False
    selector: str | None = None
    client_id: str | None = None
    subscription_name: str | None = None
    no_local: bool = False
    exclusive: bool = False
    retroactive: bool = False
    priority: int = 0
    broker_path: list[DataStructure | None] | None = None
    additional_predicate: DataStructure | None = None
    network_subscription: bool = False
    optimized_acknowledge: bool = False
    no_range_acks: bool = False
    network_consumer_path: list[DataStructure | None] | None = None


@dataclasses.dataclass(slots=True, kw_only=True)
class ControlCommand(BaseCommand):
    """OpenWire ``ControlCommand`` (type 14)."""

    TYPE: ClassVar[int] = 14
    FIELDS: ClassVar[_Fields] = (*BaseCommand.FIELDS, ("command", _STRING))
    command: str | None = None


@dataclasses.dataclass(slots=True, kw_only=True)
class Response(BaseCommand):
    """OpenWire ``Response`` (type 30)."""

    TYPE: ClassVar[int] = 30
    FIELDS: ClassVar[_Fields] = (*BaseCommand.FIELDS, ("correlation_id", _INT))
    correlation_id: int = 0


@dataclasses.dataclass(slots=True, kw_only=True)
class DataArrayResponse(Response):
    """OpenWire ``DataArrayResponse`` (type 33)."""

    TYPE: ClassVar[int] = 33
    FIELDS: ClassVar[_Fields] = (*Response.FIELDS, ("data", _ARRAY))
    data: list[DataStructure | None] | None = None


@dataclasses.dataclass(slots=True, kw_only=True)
class DataResponse(Response):
    """OpenWire ``DataResponse`` (type 32)."""

    TYPE: ClassVar[int] = 32
    FIELDS: ClassVar[_Fields] = (*Response.FIELDS, ("data", _NESTED))
    data: DataStructure | None = None


@dataclasses.dataclass(slots=True, kw_only=True)
class DestinationInfo(BaseCommand):
    """OpenWire ``DestinationInfo`` (type 8)."""

    TYPE: ClassVar[int] = 8
    FIELDS: ClassVar[_Fields] = (
        *BaseCommand.FIELDS,
        ("connection_id", _NESTED),
        ("destination", _NESTED),
        ("operation_type", _BYTE),
        ("timeout", _LONG),
        ("broker_path", _ARRAY),
    )
    connection_id: ConnectionId | None = None
    destination: ActiveMQDestination | None = None
    operation_type: int = 0
    timeout: int = 0
    broker_path: list[DataStructure | None] | None = None


@dataclasses.dataclass(slots=True, kw_only=True)
class DiscoveryEvent(DataStructure):
    """OpenWire ``DiscoveryEvent`` (type 40)."""

    TYPE: ClassVar[int] = 40
    FIELDS: ClassVar[_Fields] = (
        *DataStructure.FIELDS,
        ("service_name", _STRING),
        ("broker_name", _STRING),
    )
    service_name: str | None = None
    broker_name: str | None = None


@dataclasses.dataclass(slots=True, kw_only=True)
class ExceptionResponse(Response):
    """OpenWire ``ExceptionResponse`` (type 31)."""

    TYPE: ClassVar[int] = 31
    FIELDS: ClassVar[_Fields] = (*Response.FIELDS, ("exception", _THROWABLE))
    exception: JavaThrowable | None = None


@dataclasses.dataclass(slots=True, kw_only=True)
class FlushCommand(BaseCommand):
    """OpenWire ``FlushCommand`` (type 15)."""

    TYPE: ClassVar[int] = 15


@dataclasses.dataclass(slots=True, kw_only=True)
class IntegerResponse(Response):
    """OpenWire ``IntegerResponse`` (type 34)."""

    TYPE: ClassVar[int] = 34
    FIELDS: ClassVar[_Fields] = (*Response.FIELDS, ("result", _INT))
    result: int = 0


@dataclasses.dataclass(slots=True, kw_only=True)
class JournalQueueAck(DataStructure):
    """OpenWire ``JournalQueueAck`` (type 52)."""

    TYPE: ClassVar[int] = 52
    FIELDS: ClassVar[_Fields] = (
        *DataStructure.FIELDS,
        ("destination", _NESTED),
        ("message_ack", _NESTED),
    )
    destination: ActiveMQDestination | None = None
    message_ack: MessageAck | None = None


@dataclasses.dataclass(slots=True, kw_only=True)
class JournalTopicAck(DataStructure):
    """OpenWire ``JournalTopicAck`` (type 50)."""

    TYPE: ClassVar[int] = 50
    FIELDS: ClassVar[_Fields] = (
        *DataStructure.FIELDS,
        ("destination", _NESTED),
        ("message_id", _NESTED),
        ("message_sequence_id", _LONG),
        ("subscrition_name", _STRING),
        ("client_id", _STRING),
        ("transaction_id", _NESTED),
    )
    destination: ActiveMQDestination | None = None
    message_id: MessageId | None = None
    message_sequence_id: int = 0
    subscrition_name: str | None = None
    client_id: str | None = None
    transaction_id: TransactionId | None = None


@dataclasses.dataclass(slots=True, kw_only=True)
class JournalTrace(DataStructure):
    """OpenWire ``JournalTrace`` (type 53)."""

    TYPE: ClassVar[int] = 53
    FIELDS: ClassVar[_Fields] = (*DataStructure.FIELDS, ("message", _STRING))
    message: str | None = None


@dataclasses.dataclass(slots=True, kw_only=True)
class JournalTransaction(DataStructure):
    """OpenWire ``JournalTransaction`` (type 54)."""

    TYPE: ClassVar[int] = 54
    FIELDS: ClassVar[_Fields] = (
        *DataStructure.FIELDS,
        ("transaction_id", _NESTED),
        ("type", _BYTE),
        ("was_prepared", _BOOL),
    )
    transaction_id: TransactionId | None = None
    type: int = 0
    was_prepared: bool = False


@dataclasses.dataclass(slots=True, kw_only=True)
class KeepAliveInfo(BaseCommand):
    """OpenWire ``KeepAliveInfo`` (type 10)."""

    TYPE: ClassVar[int] = 10


@dataclasses.dataclass(slots=True, kw_only=True)
class PartialCommand(DataStructure):
    """OpenWire ``PartialCommand`` (type 60)."""

    TYPE: ClassVar[int] = 60
    FIELDS: ClassVar[_Fields] = (*DataStructure.FIELDS, ("command_id", _INT), ("data", _BYTES))
    command_id: int = 0
    data: bytes | None = None


@dataclasses.dataclass(slots=True, kw_only=True)
class LastPartialCommand(PartialCommand):
    """OpenWire ``LastPartialCommand`` (type 61)."""

    TYPE: ClassVar[int] = 61


@dataclasses.dataclass(slots=True, kw_only=True)
class TransactionId(DataStructure):
    """A transaction id (local or XA)."""


@dataclasses.dataclass(slots=True, kw_only=True)
class LocalTransactionId(TransactionId):
    """OpenWire ``LocalTransactionId`` (type 111)."""

    TYPE: ClassVar[int] = 111
    FIELDS: ClassVar[_Fields] = (
        *TransactionId.FIELDS,
        ("value", _LONG),
        ("connection_id", _NESTED),
    )
    value: int = 0
    connection_id: ConnectionId | None = None


@dataclasses.dataclass(slots=True, kw_only=True)
class MessageAck(BaseCommand):
    """OpenWire ``MessageAck`` (type 22)."""

    TYPE: ClassVar[int] = 22
    FIELDS: ClassVar[_Fields] = (
        *BaseCommand.FIELDS,
        ("destination", _NESTED),
        ("transaction_id", _NESTED),
        ("consumer_id", _NESTED),
        ("ack_type", _BYTE),
        ("first_message_id", _NESTED),
        ("last_message_id", _NESTED),
        ("message_count", _INT),
        ("poison_cause", _THROWABLE),
    )
    destination: ActiveMQDestination | None = None
    transaction_id: TransactionId | None = None
    consumer_id: ConsumerId | None = None
    ack_type: int = 0
    first_message_id: MessageId | None = None
    last_message_id: MessageId | None = None
    message_count: int = 0
    poison_cause: JavaThrowable | None = None


@dataclasses.dataclass(slots=True, kw_only=True)
class MessageDispatch(BaseCommand):
    """OpenWire ``MessageDispatch`` (type 21)."""

    TYPE: ClassVar[int] = 21
    FIELDS: ClassVar[_Fields] = (
        *BaseCommand.FIELDS,
        ("consumer_id", _NESTED),
        ("destination", _NESTED),
        ("message", _NESTED),
        ("redelivery_counter", _INT),
    )
    consumer_id: ConsumerId | None = None
    destination: ActiveMQDestination | None = None
    message: Message | None = None
    redelivery_counter: int = 0


@dataclasses.dataclass(slots=True, kw_only=True)
class MessageDispatchNotification(BaseCommand):
    """OpenWire ``MessageDispatchNotification`` (type 90)."""

    TYPE: ClassVar[int] = 90
    FIELDS: ClassVar[_Fields] = (
        *BaseCommand.FIELDS,
        ("consumer_id", _NESTED),
        ("destination", _NESTED),
        ("delivery_sequence_id", _LONG),
        ("message_id", _NESTED),
    )
    consumer_id: ConsumerId | None = None
    destination: ActiveMQDestination | None = None
    delivery_sequence_id: int = 0
    message_id: MessageId | None = None


@dataclasses.dataclass(slots=True, kw_only=True)
class MessageId(DataStructure):
    """OpenWire ``MessageId`` (type 110)."""

    TYPE: ClassVar[int] = 110
    FIELDS: ClassVar[_Fields] = (
        *DataStructure.FIELDS,
        ("text_view", _STRING),
        ("producer_id", _NESTED),
        ("producer_sequence_id", _LONG),
        ("broker_sequence_id", _LONG),
    )
    text_view: str | None = None
    producer_id: ProducerId | None = None
    producer_sequence_id: int = 0
    broker_sequence_id: int = 0


@dataclasses.dataclass(slots=True, kw_only=True)
class MessagePull(BaseCommand):
    """OpenWire ``MessagePull`` (type 20)."""

    TYPE: ClassVar[int] = 20
    FIELDS: ClassVar[_Fields] = (
        *BaseCommand.FIELDS,
        ("consumer_id", _NESTED),
        ("destination", _NESTED),
        ("timeout", _LONG),
        ("correlation_id", _STRING),
        ("message_id", _NESTED),
    )
    consumer_id: ConsumerId | None = None
    destination: ActiveMQDestination | None = None
    timeout: int = 0
    correlation_id: str | None = None
    message_id: MessageId | None = None


@dataclasses.dataclass(slots=True, kw_only=True)
class NetworkBridgeFilter(DataStructure):
    """OpenWire ``NetworkBridgeFilter`` (type 91)."""

    TYPE: ClassVar[int] = 91
    FIELDS: ClassVar[_Fields] = (
        *DataStructure.FIELDS,
        ("network_broker_id", _NESTED),
        ("message_ttl", _INT),
        ("consumer_ttl", _INT),
    )
    network_broker_id: BrokerId | None = None
    message_ttl: int = 0
    consumer_ttl: int = 0


@dataclasses.dataclass(slots=True, kw_only=True)
class ProducerAck(BaseCommand):
    """OpenWire ``ProducerAck`` (type 19)."""

    TYPE: ClassVar[int] = 19
    FIELDS: ClassVar[_Fields] = (*BaseCommand.FIELDS, ("producer_id", _NESTED), ("size", _INT))
    producer_id: ProducerId | None = None
    size: int = 0


@dataclasses.dataclass(slots=True, kw_only=True)
class ProducerId(DataStructure):
    """OpenWire ``ProducerId`` (type 123)."""

    TYPE: ClassVar[int] = 123
    FIELDS: ClassVar[_Fields] = (
        *DataStructure.FIELDS,
        ("connection_id", _STRING),
        ("value", _LONG),
        ("session_id", _LONG),
    )
    connection_id: str | None = None
    value: int = 0
    session_id: int = 0


@dataclasses.dataclass(slots=True, kw_only=True)
class ProducerInfo(BaseCommand):
    """OpenWire ``ProducerInfo`` (type 6)."""

    TYPE: ClassVar[int] = 6
    FIELDS: ClassVar[_Fields] = (
        *BaseCommand.FIELDS,
        ("producer_id", _NESTED),
        ("destination", _NESTED),
        ("broker_path", _ARRAY),
        ("dispatch_async", _BOOL),
        ("window_size", _INT),
    )
    producer_id: ProducerId | None = None
    destination: ActiveMQDestination | None = None
    broker_path: list[DataStructure | None] | None = None
    dispatch_async: bool = False
    window_size: int = 0


@dataclasses.dataclass(slots=True, kw_only=True)
class RemoveInfo(BaseCommand):
    """OpenWire ``RemoveInfo`` (type 12)."""

    TYPE: ClassVar[int] = 12
    FIELDS: ClassVar[_Fields] = (
        *BaseCommand.FIELDS,
        ("object_id", _NESTED),
        ("last_delivered_sequence_id", _LONG),
    )
    object_id: DataStructure | None = None
    last_delivered_sequence_id: int = 0


@dataclasses.dataclass(slots=True, kw_only=True)
class RemoveSubscriptionInfo(BaseCommand):
    """OpenWire ``RemoveSubscriptionInfo`` (type 9)."""

    TYPE: ClassVar[int] = 9
    FIELDS: ClassVar[_Fields] = (
        *BaseCommand.FIELDS,
        ("connection_id", _NESTED),
        ("subcription_name", _STRING),
        ("client_id", _STRING),
    )
    connection_id: ConnectionId | None = None
    subcription_name: str | None = None
    client_id: str | None = None


@dataclasses.dataclass(slots=True, kw_only=True)
class ReplayCommand(BaseCommand):
    """OpenWire ``ReplayCommand`` (type 65)."""

    TYPE: ClassVar[int] = 65
    FIELDS: ClassVar[_Fields] = (
        *BaseCommand.FIELDS,
        ("first_nak_number", _INT),
        ("last_nak_number", _INT),
    )
    first_nak_number: int = 0
    last_nak_number: int = 0


@dataclasses.dataclass(slots=True, kw_only=True)
class SessionId(DataStructure):
    """OpenWire ``SessionId`` (type 121)."""

    TYPE: ClassVar[int] = 121
    FIELDS: ClassVar[_Fields] = (
        *DataStructure.FIELDS,
        ("connection_id", _STRING),
        ("value", _LONG),
    )
    connection_id: str | None = None
    value: int = 0


@dataclasses.dataclass(slots=True, kw_only=True)
class SessionInfo(BaseCommand):
    """OpenWire ``SessionInfo`` (type 4)."""

    TYPE: ClassVar[int] = 4
    FIELDS: ClassVar[_Fields] = (*BaseCommand.FIELDS, ("session_id", _NESTED))
    session_id: SessionId | None = None


@dataclasses.dataclass(slots=True, kw_only=True)
class ShutdownInfo(BaseCommand):
    """OpenWire ``ShutdownInfo`` (type 11)."""

    TYPE: ClassVar[int] = 11


@dataclasses.dataclass(slots=True, kw_only=True)
class SubscriptionInfo(DataStructure):
    """OpenWire ``SubscriptionInfo`` (type 55)."""

    TYPE: ClassVar[int] = 55
    FIELDS: ClassVar[_Fields] = (
        *DataStructure.FIELDS,
        ("client_id", _STRING),
        ("destination", _NESTED),
        ("selector", _STRING),
        ("subcription_name", _STRING),
        ("subscribed_destination", _NESTED),
        ("no_local", _BOOL),
    )
    client_id: str | None = None
    destination: ActiveMQDestination | None = None
    selector: str | None = None
    subcription_name: str | None = None
    subscribed_destination: ActiveMQDestination | None = None
    no_local: bool = False


@dataclasses.dataclass(slots=True, kw_only=True)
class TransactionInfo(BaseCommand):
    """OpenWire ``TransactionInfo`` (type 7)."""

    TYPE: ClassVar[int] = 7
    FIELDS: ClassVar[_Fields] = (
        *BaseCommand.FIELDS,
        ("connection_id", _NESTED),
        ("transaction_id", _NESTED),
        ("type", _BYTE),
    )
    connection_id: ConnectionId | None = None
    transaction_id: TransactionId | None = None
    type: int = 0


@dataclasses.dataclass(slots=True, kw_only=True)
class WireFormatInfo(DataStructure):
    """OpenWire ``WireFormatInfo`` (type 1)."""

    TYPE: ClassVar[int] = 1
    FIELDS: ClassVar[_Fields] = (
        *DataStructure.FIELDS,
        ("magic", _MAGIC),
        ("version", _INT),
        ("marshalled_properties", _BYTES),
    )
    magic: bytes = MAGIC
    version: int = 0
    marshalled_properties: bytes | None = None


@dataclasses.dataclass(slots=True, kw_only=True)
class XATransactionId(TransactionId):
    """OpenWire ``XATransactionId`` (type 112)."""

    TYPE: ClassVar[int] = 112
    FIELDS: ClassVar[_Fields] = (
        *TransactionId.FIELDS,
        ("format_id", _INT),
        ("global_transaction_id", _BYTES),
        ("branch_qualifier", _BYTES),
    )
    format_id: int = 0
    global_transaction_id: bytes | None = None
    branch_qualifier: bytes | None = None


TYPES: Final[dict[int, type[DataStructure]]] = {
    cls.TYPE: cls
    for cls in (
        ActiveMQBlobMessage,
        ActiveMQBytesMessage,
        ActiveMQMapMessage,
        ActiveMQMessage,
        ActiveMQObjectMessage,
        ActiveMQQueue,
        ActiveMQStreamMessage,
        ActiveMQTempQueue,
        ActiveMQTempTopic,
        ActiveMQTextMessage,
        ActiveMQTopic,
        BrokerId,
        BrokerInfo,
        BrokerSubscriptionInfo,
        ConnectionControl,
        ConnectionError,
        ConnectionId,
        ConnectionInfo,
        ConsumerControl,
        ConsumerId,
        ConsumerInfo,
        ControlCommand,
        DataArrayResponse,
        DataResponse,
        DestinationInfo,
        DiscoveryEvent,
        ExceptionResponse,
        FlushCommand,
        IntegerResponse,
        JournalQueueAck,
        JournalTopicAck,
        JournalTrace,
        JournalTransaction,
        KeepAliveInfo,
        LastPartialCommand,
        LocalTransactionId,
        MessageAck,
        MessageDispatch,
        MessageDispatchNotification,
        MessageId,
        MessagePull,
        NetworkBridgeFilter,
        PartialCommand,
        ProducerAck,
        ProducerId,
        ProducerInfo,
        RemoveInfo,
        RemoveSubscriptionInfo,
        ReplayCommand,
        Response,
        SessionId,
        SessionInfo,
        ShutdownInfo,
        SubscriptionInfo,
        TransactionInfo,
        WireFormatInfo,
        XATransactionId,
    )
}
"""Every concrete data structure by its type octet."""


# --- Modified UTF-8 (Java's writeUTF / readUTF) ---------------------------------------------


def _astral_to_pair(match: re.Match[str]) -> str:
    units = match.group().encode("utf-16-be")
    return chr(int.from_bytes(units[:2], "big")) + chr(int.from_bytes(units[2:], "big"))


_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
_FOUR_OCTET_LEAD = re.compile(rb"[\xf0-\xff]")


def _encode_mutf8(text: str) -> bytes:
    if text.isascii() and "\x00" not in text:
        return text.encode("ascii")
    paired = _ASTRAL.sub(_astral_to_pair, text)
    return paired.encode("utf-8", "surrogatepass").replace(b"\x00", b"\xc0\x80")


def _decode_mutf8(data: bytes) -> str:
    if data.isascii():
        return data.decode("ascii")
    if _FOUR_OCTET_LEAD.search(data):
        raise OpenWireError("malformed modified UTF-8: a lead octet above 0xEF")
    try:
        text = data.replace(b"\xc0\x80", b"\x00").decode("utf-8", "surrogatepass")
    except UnicodeDecodeError as exc:
        raise OpenWireError(f"malformed modified UTF-8 at octet {exc.start}") from None
    # Surrogate pairs, encoded as two 3-octet sequences, become one character again.
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


# --- Encoding ------------------------------------------------------------------------------


def _put_utf(out: bytearray, text: str) -> None:
    data = _encode_mutf8(text)
    if len(data) > 0xFFFF:
        raise OpenWireError(
            f"a string of {len(data)} octets in modified UTF-8 does not fit writeUTF's "
            "65535: shorten it"
        )
    out += _U16.pack(len(data))
    out += data


def _put_string(out: bytearray, text: str | None) -> None:
    out.append(text is not None)
    if text is not None:
        _put_utf(out, text)


def _put_throwable(out: bytearray, exc: JavaThrowable | None, stack_trace: bool) -> None:
    out.append(exc is not None)
    if exc is None:
        return
    _put_string(out, exc.class_name)
    _put_string(out, exc.message)
    if stack_trace:
        out += _I16.pack(len(exc.stack))
        for frame in exc.stack:
            _put_string(out, frame.class_name)
            _put_string(out, frame.method_name)
            _put_string(out, frame.file_name)
            out += _I32.pack(frame.line_number)
        _put_throwable(out, exc.cause, stack_trace)


def _put_nested(out: bytearray, obj: DataStructure | None, stack_trace: bool) -> None:
    out.append(obj is not None)
    if obj is not None:
        _put_object(out, obj, stack_trace)


def _put_object(out: bytearray, obj: DataStructure, stack_trace: bool) -> None:
    encode = _ENCODERS.get(type(obj))
    if encode is None:
        if not isinstance(obj, DataStructure) or obj.TYPE == NULL_TYPE:
            raise OpenWireError(
                f"{type(obj).__name__} is not a concrete OpenWire data structure: use one of TYPES"
            )
        encode = _ENCODERS[type(obj)] = _encoder(type(obj))
    encode(out, obj, stack_trace)


def _put_field(out: bytearray, kind: _Kind, value: object, stack_trace: bool) -> None:
    """One field of a kind the generated encoders do not write inline."""
    if kind is _BYTE:
        out += _I8.pack(value)
    elif kind is _BYTES:
        out.append(value is not None)
        if value is not None:
            assert isinstance(value, (bytes, bytearray, memoryview))
            out += _I32.pack(len(value))
            out += value
    elif kind is _ARRAY:
        out.append(value is not None)
        if value is not None:
            assert isinstance(value, (list, tuple))
            out += _I16.pack(len(value))
            for item in value:
                _put_nested(out, item, stack_trace)
    elif kind is _THROWABLE:
        assert value is None or isinstance(value, JavaThrowable)
        _put_throwable(out, value, stack_trace)
    else:  # _MAGIC
        assert isinstance(value, bytes)
        if len(value) != len(MAGIC):
            raise OpenWireError(f"the WireFormatInfo magic has 8 octets, not {len(value)}")
        out += value


def encode_frame(command: DataStructure, *, stack_trace: bool = False) -> bytes:
    """One frame: a 4-octet size, the type octet and the loose-marshalled fields.

    ``stack_trace`` is the negotiated ``StackTraceEnabled`` (off until the WireFormatInfo
    exchange). Raises :class:`OpenWireError` for a value that does not fit its field (a
    number out of range, a string over 65535 octets, an abstract base class).
    """
    out = bytearray(4)
    try:
        _put_object(out, command, stack_trace)
    except (struct.error, TypeError) as exc:
        raise OpenWireError(f"cannot encode {type(command).__name__}: {exc}") from None
    out[:4] = _I32.pack(len(out) - 4)
    return bytes(out)


# --- Decoding ------------------------------------------------------------------------------


_FieldValue = object  # a decoded field (the name `object` is a method of _Reader)


class _Reader:
    """A cursor over one frame's octets; every read is checked against what is left."""

    __slots__ = ("data", "depth", "pos", "stack_trace")

    def __init__(self, data: bytes, stack_trace: bool) -> None:
        self.data = data
        self.pos = 0
        self.depth = 0
        self.stack_trace = stack_trace

    def take(self, n: int, what: str) -> bytes:
        if n < 0:
            raise OpenWireError(f"a negative length ({n}) for {what}")
        end = self.pos + n
        if end > len(self.data):
            raise OpenWireError(
                f"{what} needs {n} octets but the frame has {len(self.data) - self.pos} left"
            )
        chunk = self.data[self.pos : end]
        self.pos = end
        return chunk

    def unpack(self, fmt: struct.Struct, what: str) -> int:
        value: int = fmt.unpack(self.take(fmt.size, what))[0]
        return value

    def boolean(self, what: str) -> bool:
        return self.take(1, what) != b"\x00"

    def utf(self, what: str) -> str:
        return _decode_mutf8(self.take(self.unpack(_U16, what), what))

    def string(self, what: str) -> str | None:
        return self.utf(what) if self.boolean(what) else None

    def enter(self, what: str) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise OpenWireError(f"{what} nests deeper than {MAX_DEPTH} levels")

    def throwable(self, what: str) -> JavaThrowable | None:
        if not self.boolean(what):
            return None
        self.enter(what)
        class_name = self.string(what)
        message = self.string(what)
        stack: tuple[StackFrame, ...] = ()
        cause = None
        if self.stack_trace:
            count = self.unpack(_I16, what)
            frames = []
            for _ in range(max(count, 0)):
                frames.append(
                    StackFrame(
                        self.string(what),
                        self.string(what),
                        self.string(what),
                        self.unpack(_I32, what),
                    )
                )
            stack = tuple(frames)
            cause = self.throwable(what)
        self.depth -= 1
        return JavaThrowable(class_name, message, stack, cause)

    def wrong(self, got: DataStructure, expected: tuple[type, ...], what: str) -> OpenWireError:
        """The error for a nested object of another class than ``what`` holds."""
        names = " or ".join(t.__name__ for t in expected)
        return OpenWireError(f"{what} must be a {names}, not a {type(got).__name__}")

    def nested(self, what: str) -> DataStructure | None:
        return self.object(what) if self.boolean(what) else None

    def short(self, n: int, what: str) -> OpenWireError:
        """The error for a read of ``n`` octets past the end of the frame."""
        return OpenWireError(
            f"{what} needs {n} octets but the frame has {len(self.data) - self.pos} left"
        )

    def object(self, what: str) -> DataStructure:
        data = self.data
        pos = self.pos
        if pos >= len(data):
            raise self.short(1, what)
        type_ = data[pos]
        self.pos = pos + 1
        decode = _DECODERS.get(type_)
        if decode is None:
            cls = TYPES.get(type_)
            if cls is None:
                raise OpenWireError(f"unknown OpenWire data type {type_} in {what}")
            decode = _DECODERS[type_] = _decoder(cls)
        return decode(self, data, len(data))

    def field(self, kind: _Kind, where: str) -> _FieldValue:
        """One field of a kind the generated decoders do not read inline."""
        if kind is _BYTE:
            return self.unpack(_I8, where)
        if kind is _BYTES:
            present = self.boolean(where)
            return self.take(self.unpack(_I32, where), where) if present else None
        if kind is _ARRAY:
            if not self.boolean(where):
                return None
            count = self.unpack(_I16, where)
            if count < 0:
                raise OpenWireError(f"a negative count ({count}) for {where}")
            return [self.nested(where) for _ in range(count)]
        if kind is _THROWABLE:
            return self.throwable(where)
        return self.take(len(MAGIC), where)  # _MAGIC


# Generated per data structure class (the fields of every frame are read here, so the
# common kinds are inlined and no per-field call or dict is made): data type -> decoder,
# class -> encoder. Each is built on first use from the class's FIELDS.
_Decoder = Callable[[_Reader, bytes, int], "DataStructure"]
_Encoder = Callable[[bytearray, "DataStructure", bool], None]
_DECODERS: dict[int, _Decoder] = {}
_ENCODERS: dict[type[DataStructure], _Encoder] = {}


def _decoder(cls: type[DataStructure]) -> _Decoder:
    """Compile the decoder of ``cls``: as :meth:`_Reader.field` would read each field, with
    ``r.pos`` current at every raise and every call."""
    lines = ["def decode(r, data, size):", f"    r.enter({cls.__name__!r})", "    pos = r.pos"]
    args = []
    env: dict[str, object] = {
        "cls": cls,
        "I32": _I32.unpack_from,
        "I64": _I64.unpack_from,
        "U16": _U16.unpack_from,
        "mutf8": _decode_mutf8,
    }
    hints = typing.get_type_hints(cls)
    for i, (name, kind) in enumerate(cls.FIELDS):
        w = repr(f"{cls.__name__}.{name}")
        v = f"f{i}"
        args.append(f"{name}={v}")
        short = f"r.pos = pos; raise r.short({{}}, {w})"
        if kind is _BOOL:
            lines += [
                f"    if pos >= size: {short.format(1)}",
                f"    {v} = data[pos] != 0",
                "    pos += 1",
            ]
        elif kind is _LONG or kind is _INT:
            n, fn = (8, "I64") if kind is _LONG else (4, "I32")
            lines += [
                f"    if pos + {n} > size: {short.format(n)}",
                f"    {v} = {fn}(data, pos)[0]",
                f"    pos += {n}",
            ]
        elif kind is _STRING:
            lines += [
                f"    if pos >= size: {short.format(1)}",
                "    if data[pos]:",
                "        pos += 1",
                f"        if pos + 2 > size: {short.format(2)}",
                "        stop = pos + 2 + U16(data, pos)[0]",
                "        if stop > size:",
                "            r.pos = pos + 2",
                f"            raise r.short(stop - pos - 2, {w})",
                f"        {v} = mutf8(data[pos + 2 : stop])",
                "        pos = stop",
                "    else:",
                f"        {v} = None",
                "        pos += 1",
            ]
        elif kind is _NESTED:
            # the field's class (its annotation, less None): another data structure in its
            # place is malformed input, not something for the gateway to trip over
            env[f"t{i}"] = tuple(a for a in typing.get_args(hints[name]) if a is not type(None))
            lines += [
                f"    if pos >= size: {short.format(1)}",
                "    if data[pos]:",
                "        r.pos = pos + 1",
                f"        {v} = r.object({w})",
                f"        if not isinstance({v}, t{i}): raise r.wrong({v}, t{i}, {w})",
                "        pos = r.pos",
                "    else:",
                f"        {v} = None",
                "        pos += 1",
            ]
        else:
            env[f"k{i}"] = kind
            lines += ["    r.pos = pos", f"    {v} = r.field(k{i}, {w})", "    pos = r.pos"]
    lines += ["    r.pos = pos", "    r.depth -= 1", f"    return cls({', '.join(args)})"]
    exec("\n".join(lines), env)  # code built from the class table above
    decode: _Decoder = env["decode"]  # type: ignore[assignment]
    return decode


def _encoder(cls: type[DataStructure]) -> _Encoder:
    """Compile the encoder of ``cls`` (as :func:`_put_field` would write each field)."""
    lines = ["def encode(out, obj, st):", f"    out.append({cls.TYPE})"]
    env: dict[str, object] = {
        "I32": _I32.pack,
        "I64": _I64.pack,
        "U16": _U16.pack,
        "put_object": _put_object,
        "put_string": _put_string,
        "put_field": _put_field,
    }
    for i, (name, kind) in enumerate(cls.FIELDS):
        lines.append(f"    v = obj.{name}")
        if kind is _BOOL:
            lines.append("    out.append(1 if v else 0)")
        elif kind is _LONG:
            lines.append("    out += I64(v)")
        elif kind is _INT:
            lines.append("    out += I32(v)")
        elif kind is _STRING:
            lines += [
                "    if v is None:",
                "        out.append(0)",
                "    elif v.isascii() and len(v) <= 0xFFFF and '\\x00' not in v:",
                "        out.append(1)",
                "        out += U16(len(v))",
                "        out += v.encode('ascii')",
                "    else:",
                "        put_string(out, v)",
            ]
        elif kind is _NESTED:
            lines += [
                "    if v is None:",
                "        out.append(0)",
                "    else:",
                "        out.append(1)",
                "        put_object(out, v, st)",
            ]
        else:
            env[f"k{i}"] = kind
            lines.append(f"    put_field(out, k{i}, v, st)")
    exec("\n".join(lines), env)  # code built from the class table above
    encode: _Encoder = env["encode"]  # type: ignore[assignment]
    return encode


def decode_frame(body: bytes, *, stack_trace: bool = False) -> DataStructure | None:
    """Decode one frame's octets after its size: the type octet and the fields.

    Answers ``None`` for the NULL type. Raises :class:`OpenWireError` for an unknown type,
    a truncated frame, octets left over, or a value that breaks the format.
    """
    reader = _Reader(body, stack_trace)
    if body[:1] == bytes([NULL_TYPE]):
        reader.pos = 1
        result = None
    else:
        result = reader.object("the frame")
    if reader.pos != len(body):
        raise OpenWireError(
            f"{len(body) - reader.pos} octets left over after "
            f"{type(result).__name__ if result else 'a NULL frame'}"
        )
    return result


class FrameParser:
    """Bytes in, data structures out: buffers partial frames between :meth:`feed` calls.

    A frame whose announced size is negative or above ``max_frame_size`` is refused before
    its octets are buffered. ``stack_trace`` is the negotiated ``StackTraceEnabled``; the
    connection sets it once the WireFormatInfo exchange is done.
    """

    def __init__(
        self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE, *, stack_trace: bool = False
    ) -> None:
        self.max_frame_size = max_frame_size
        self.stack_trace = stack_trace
        self._buf = bytearray()

    @property
    def pending(self) -> int:
        """Octets buffered towards the next frame."""
        return len(self._buf)

    def feed(self, data: bytes) -> list[DataStructure]:
        """Add ``data``; answer the frames it completes, in order (NULL frames are dropped).

        Raises :class:`OpenWireError` on the first bad frame; the parser is then unusable.
        """
        buf = self._buf
        buf += data
        out: list[DataStructure] = []
        start = 0
        while len(buf) - start >= 4:
            size = _I32.unpack_from(buf, start)[0]
            if size < 1 or size > self.max_frame_size:
                raise OpenWireError(
                    f"a frame of {size} octets (the limit is {self.max_frame_size}, the least 1)"
                )
            if len(buf) - start - 4 < size:
                break
            body = bytes(buf[start + 4 : start + 4 + size])
            start += 4 + size
            command = decode_frame(body, stack_trace=self.stack_trace)
            if command is not None:
                out.append(command)
        del buf[:start]
        return out


# --- Typed primitives: properties, MapMessage and StreamMessage bodies ---------------------


class PType(enum.IntEnum):
    """The type tag of a value in ``MarshallingSupport``'s primitive encoding."""

    NULL = 0
    BOOLEAN = 1
    BYTE = 2
    CHAR = 3
    SHORT = 4
    INTEGER = 5
    LONG = 6
    DOUBLE = 7
    FLOAT = 8
    STRING = 9
    BYTE_ARRAY = 10
    MAP = 11
    LIST = 12
    BIG_STRING = 13


PrimitiveValue = (
    bool | int | float | str | bytes | None | dict[str, "Primitive"] | list["Primitive"]
)


@dataclasses.dataclass(frozen=True, slots=True)
class Primitive:
    """A typed value: its tag and its Python form (``CHAR`` a one-character str, ``MAP`` a
    dict of names to primitives, ``LIST`` a list of primitives, ``STRING`` and
    ``BIG_STRING`` a str: the tag only says which of Java's two string encodings it uses)."""

    type: PType
    value: PrimitiveValue


_FIXED: Final[dict[PType, struct.Struct]] = {
    PType.BYTE: _I8,
    PType.SHORT: _I16,
    PType.INTEGER: _I32,
    PType.LONG: _I64,
    PType.DOUBLE: _F64,
    PType.FLOAT: _F32,
}


def _put_big_utf(out: bytearray, text: str) -> None:
    data = _encode_mutf8(text)
    out += _I32.pack(len(data))
    out += data


def _put_primitive(out: bytearray, item: Primitive) -> None:
    kind, value = item.type, item.value
    out.append(kind)
    if kind is PType.NULL:
        return
    if kind is PType.BOOLEAN:
        out.append(bool(value))
    elif kind in _FIXED:
        out += _FIXED[kind].pack(value)
    elif kind is PType.CHAR:
        assert isinstance(value, str)
        out += _U16.pack(ord(value))
    elif kind is PType.STRING:
        assert isinstance(value, str)
        _put_utf(out, value)
    elif kind is PType.BIG_STRING:
        assert isinstance(value, str)
        _put_big_utf(out, value)
    elif kind is PType.BYTE_ARRAY:
        assert isinstance(value, bytes)
        out += _I32.pack(len(value))
        out += value
    elif kind is PType.MAP:
        assert isinstance(value, dict)
        _put_map(out, value)
    else:  # LIST
        assert isinstance(value, list)
        out += _I32.pack(len(value))
        for element in value:
            _put_primitive(out, element)


def _put_map(out: bytearray, entries: dict[str, Primitive] | None) -> None:
    if entries is None:
        out += _I32.pack(-1)
        return
    out += _I32.pack(len(entries))
    for name, item in entries.items():
        _put_utf(out, name)
        _put_primitive(out, item)


def _encoding(what: str, put: Callable[[bytearray], None]) -> bytes:
    out = bytearray()
    try:
        put(out)
    except (struct.error, TypeError, AssertionError, ValueError) as exc:
        raise OpenWireError(
            f"cannot encode {what}: a value does not fit its type ({exc})"
        ) from None
    return bytes(out)


def encode_primitive_map(entries: dict[str, Primitive] | None) -> bytes:
    """``MarshallingSupport.marshalPrimitiveMap``: an int count (-1 for null), then each
    name (writeUTF) and typed value. Raises :class:`OpenWireError` for a value that does not
    fit its tag."""
    return _encoding("a primitive map", lambda out: _put_map(out, entries))


def encode_primitive_stream(values: Iterable[Primitive]) -> bytes:
    """A StreamMessage body: the typed values one after another, with no count. Raises
    :class:`OpenWireError` for a value that does not fit its tag."""

    def put(out: bytearray) -> None:
        for item in values:
            _put_primitive(out, item)

    return _encoding("a stream body", put)


def encode_text_body(text: str | None) -> bytes:
    """A TextMessage body (``MarshallingSupport.writeUTF8``): an int length (-1 for null)
    and modified UTF-8. Never raises."""
    if text is None:
        return _I32.pack(-1)
    data = _encode_mutf8(text)
    return _I32.pack(len(data)) + data


def _get_primitive(reader: _Reader) -> Primitive:
    what = "a typed value"
    tag = reader.take(1, what)[0]
    try:
        kind = PType(tag)
    except ValueError:
        raise OpenWireError(f"unknown primitive type {tag}") from None
    value: PrimitiveValue
    if kind is PType.NULL:
        value = None
    elif kind is PType.BOOLEAN:
        value = reader.boolean(what)
    elif kind in _FIXED:
        fmt = _FIXED[kind]
        value = fmt.unpack(reader.take(fmt.size, what))[0]
    elif kind is PType.CHAR:
        value = chr(reader.unpack(_U16, what))
    elif kind is PType.STRING:
        value = reader.utf(what)
    elif kind is PType.BIG_STRING:
        value = _decode_mutf8(reader.take(reader.unpack(_I32, what), what))
    elif kind is PType.BYTE_ARRAY:
        value = reader.take(reader.unpack(_I32, what), what)
    elif kind is PType.MAP:
        reader.enter("a map value")
        value = _get_map(reader)
        reader.depth -= 1
        if value is None:
            raise OpenWireError("a null map inside a typed value")
    else:  # LIST
        reader.enter("a list value")
        count = reader.unpack(_I32, what)
        _check_count(reader, count, what)
        value = [_get_primitive(reader) for _ in range(count)]
        reader.depth -= 1
    return Primitive(kind, value)


def _check_count(reader: _Reader, count: int, what: str) -> None:
    # Every entry takes at least one octet: a count above what is left is a lie.
    if count < 0 or count > len(reader.data) - reader.pos:
        raise OpenWireError(
            f"a count of {count} for {what} with {len(reader.data) - reader.pos} octets left"
        )


def _get_map(reader: _Reader) -> dict[str, Primitive] | None:
    count = reader.unpack(_I32, "a primitive map")
    if count == -1:
        return None
    _check_count(reader, count, "a primitive map")
    entries: dict[str, Primitive] = {}
    for _ in range(count):
        name = reader.utf("a property name")
        entries[name] = _get_primitive(reader)
    return entries


def decode_primitive_map(data: bytes) -> dict[str, Primitive] | None:
    """The inverse of :func:`encode_primitive_map`. Raises :class:`OpenWireError` for
    malformed or truncated input or octets left over."""
    reader = _Reader(data, False)
    entries = _get_map(reader)
    _check_end(reader, "a primitive map")
    return entries


def decode_primitive_stream(data: bytes) -> list[Primitive]:
    """The inverse of :func:`encode_primitive_stream`. Raises :class:`OpenWireError` for
    malformed or truncated input."""
    reader = _Reader(data, False)
    values = []
    while reader.pos < len(data):
        values.append(_get_primitive(reader))
    return values


def decode_text_body(data: bytes) -> str | None:
    """The inverse of :func:`encode_text_body` (an uncompressed body). Raises
    :class:`OpenWireError` for malformed or truncated input or octets left over."""
    reader = _Reader(data, False)
    size = reader.unpack(_I32, "a text body")
    text = None if size == -1 else _decode_mutf8(reader.take(size, "a text body"))
    _check_end(reader, "a text body")
    return text


def _check_end(reader: _Reader, what: str) -> None:
    if reader.pos != len(reader.data):
        raise OpenWireError(f"{len(reader.data) - reader.pos} octets left over after {what}")


# --- Compressed bodies (the client's useCompression) ---------------------------------------

_LENGTH_PREFIXED: Final = frozenset({ActiveMQBytesMessage.TYPE})


def decode_content(message: Message, max_size: int) -> bytes | None:
    """The body octets of ``message``: its ``content``, inflated when ``compressed`` is set.

    A compressed BytesMessage holds the inflated length as an int, then a zlib stream whose
    first that many octets are the body; every other body type is a bare zlib stream (Java's
    ``DeflaterOutputStream``). Inflating stops at ``max_size`` octets, so a small hostile
    body cannot become a large one. Raises :class:`OpenWireError` for a corrupt or truncated
    stream, a stream shorter than its announced length, or a body over ``max_size``.
    """
    content = message.content
    if content is None or not message.compressed:
        return content
    expected = None
    if message.TYPE in _LENGTH_PREFIXED:
        reader = _Reader(content, False)
        expected = reader.unpack(_I32, "a compressed body's length")
        if expected < 0 or expected > max_size:
            raise OpenWireError(
                f"a compressed body announces {expected} octets (the limit is {max_size})"
            )
        content = content[4:]
    inflater = zlib.decompressobj()
    limit = max_size + 1 if expected is None else expected
    try:
        body = inflater.decompress(content, limit)
    except zlib.error as exc:
        raise OpenWireError(f"a corrupt compressed body: {exc}") from None
    if expected is not None:
        # Java's BytesMessage deflates its whole buffer, which may run past the body, and
        # inflates just the announced length: octets after it are not part of the body.
        if len(body) != expected:
            raise OpenWireError(f"a compressed body of {len(body)} octets announced {expected}")
        return body
    if len(body) > max_size:
        raise OpenWireError(f"a compressed body inflates past {max_size} octets")
    if not inflater.eof:
        raise OpenWireError("a truncated compressed body")
    return body


def compress_content(message_type: type[Message], body: bytes) -> bytes:
    """``body`` deflated as the Java client does for a message of ``message_type`` (see
    :func:`decode_content`); set ``compressed`` on the message that carries it. Never
    raises."""
    deflated = zlib.compress(body)
    if message_type.TYPE in _LENGTH_PREFIXED:
        return _I32.pack(len(body)) + deflated
    return deflated


# --- WireFormatInfo settings and their negotiation ------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class WireFormat:
    """The settings of a ``WireFormatInfo``: what a side offers, or (from :meth:`negotiate`)
    what both use. Times are milliseconds; ``max_inactivity_ms`` 0 turns the inactivity
    check off. Missing properties read as Java's getters read them (false, 0)."""

    version: int = VERSION
    stack_trace: bool = False
    tcp_no_delay: bool = False
    cache: bool = False
    tight_encoding: bool = False
    size_prefix_disabled: bool = False
    max_inactivity_ms: int = 0
    max_inactivity_initial_delay_ms: int = 0
    max_frame_size: int = 0
    cache_size: int = 0

    _PROPERTIES: ClassVar[tuple[tuple[str, str, PType], ...]] = (
        ("stack_trace", "StackTraceEnabled", PType.BOOLEAN),
        ("tcp_no_delay", "TcpNoDelayEnabled", PType.BOOLEAN),
        ("cache", "CacheEnabled", PType.BOOLEAN),
        ("tight_encoding", "TightEncodingEnabled", PType.BOOLEAN),
        ("size_prefix_disabled", "SizePrefixDisabled", PType.BOOLEAN),
        ("max_inactivity_ms", "MaxInactivityDuration", PType.LONG),
        ("max_inactivity_initial_delay_ms", "MaxInactivityDurationInitalDelay", PType.LONG),
        ("max_frame_size", "MaxFrameSize", PType.LONG),
        ("cache_size", "CacheSize", PType.INTEGER),
    )

    @classmethod
    def from_info(cls, info: WireFormatInfo) -> WireFormat:
        """The settings ``info`` offers. Raises :class:`OpenWireError` for a wrong magic, a
        malformed property map, or a setting of the wrong type."""
        if info.magic != MAGIC:
            raise OpenWireError(f"not an OpenWire peer: the magic is {info.magic!r}")
        props = decode_primitive_map(info.marshalled_properties or _I32.pack(-1)) or {}
        values: dict[str, bool | int] = {}
        for attribute, name, kind in cls._PROPERTIES:
            item = props.get(name)
            if item is None:
                continue
            if item.type is not kind:
                raise OpenWireError(f"the WireFormatInfo property {name} is not a {kind.name}")
            assert isinstance(item.value, (bool, int))
            values[attribute] = item.value
        return cls(version=info.version, **values)  # type: ignore[arg-type]

    def to_info(self, extra: dict[str, Primitive] | None = None) -> WireFormatInfo:
        """A ``WireFormatInfo`` offering these settings, plus ``extra`` properties (such as
        ``ProviderName``, a STRING). Never raises."""
        props = {
            name: Primitive(kind, getattr(self, attr)) for attr, name, kind in self._PROPERTIES
        }
        props.update(extra or {})
        return WireFormatInfo(
            version=self.version, marshalled_properties=encode_primitive_map(props)
        )

    def negotiate(self, peer: WireFormat) -> WireFormat:
        """What both sides use once each has the other's info: the lower version, frame
        size, inactivity window and initial delay; each feature only if both offer it."""
        return WireFormat(
            version=min(self.version, peer.version),
            stack_trace=self.stack_trace and peer.stack_trace,
            tcp_no_delay=self.tcp_no_delay and peer.tcp_no_delay,
            cache=self.cache and peer.cache,
            tight_encoding=self.tight_encoding and peer.tight_encoding,
            size_prefix_disabled=self.size_prefix_disabled and peer.size_prefix_disabled,
            max_inactivity_ms=min(self.max_inactivity_ms, peer.max_inactivity_ms),
            max_inactivity_initial_delay_ms=min(
                self.max_inactivity_initial_delay_ms, peer.max_inactivity_initial_delay_ms
            ),
            max_frame_size=min(self.max_frame_size, peer.max_frame_size),
            cache_size=min(self.cache_size, peer.cache_size) if self.cache and peer.cache else 0,
        )

    @property
    def write_check_ms(self) -> int:
        """How often a side with nothing to send must send a KeepAliveInfo (the client's
        InactivityMonitor: a third of the window above 3 ms, else the window)."""
        window = self.max_inactivity_ms
        return window // 3 if window > 3 else window
