"""Frames marshalled by ActiveMQ's own OpenWireFormat (version 12, loose encoding, cache off)
decode with ternmq's codec and re-encode to the very same octets.

``java/OpenWireFixtures.java`` is compiled at test time with ``javac`` against Debian's
``libactivemq-java`` jars and prints one frame per line. Skipped, saying why, when Java or
the jars are missing (``.ci/run`` installs the package).
"""

from __future__ import annotations

import subprocess

import pytest

from openwire._java import SOURCES, program
from ternmq.protocol import openwire as ow

_SOURCE = SOURCES / "OpenWireFixtures.java"

Fixture = tuple[str, bool, bytes]


@pytest.fixture(scope="module")
def java_command(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """Compile the Java program; answer the command line that runs it."""
    return program([_SOURCE], tmp_path_factory.mktemp("openwire-java"), "OpenWireFixtures")


@pytest.fixture(scope="module")
def fixtures(java_command: list[str]) -> list[Fixture]:
    """Run the Java program; answer (label, stack trace on, frame) lines."""
    run = subprocess.run(java_command, check=True, capture_output=True, text=True, timeout=300)
    lines = []
    for line in run.stdout.splitlines():
        label, stack_trace, hex_frame = line.split()
        lines.append((label, stack_trace == "true", bytes.fromhex(hex_frame)))
    return lines


def _decode(fixtures: list[Fixture], name: str, stack_trace: bool = False) -> ow.DataStructure:
    for fixture_name, fixture_stack, frame in fixtures:
        if (fixture_name, fixture_stack) == (name, stack_trace):
            (command,) = ow.FrameParser(stack_trace=stack_trace).feed(frame)
            return command
    raise AssertionError(f"no fixture {name}")


def test_every_java_frame_decodes_and_reencodes_to_the_same_octets(
    fixtures: list[Fixture],
) -> None:
    names = {label.split("/")[0] for label, _, _ in fixtures}
    assert len(names) >= 29
    for label, stack_trace, frame in fixtures:
        commands = ow.FrameParser(stack_trace=stack_trace).feed(frame)
        assert [type(c).__name__ for c in commands] == [label.split("/")[0]]
        assert ow.encode_frame(commands[0], stack_trace=stack_trace) == frame, label


def test_wire_format_info_properties(fixtures: list[Fixture]) -> None:
    info = _decode(fixtures, "WireFormatInfo")
    assert isinstance(info, ow.WireFormatInfo)
    assert (info.magic, info.version) == (ow.MAGIC, 12)
    assert info.marshalled_properties is not None
    props = ow.decode_primitive_map(info.marshalled_properties)
    assert props is not None
    assert props["TightEncodingEnabled"] == ow.Primitive(ow.PType.BOOLEAN, False)
    assert props["CacheEnabled"] == ow.Primitive(ow.PType.BOOLEAN, False)
    assert props["MaxInactivityDuration"] == ow.Primitive(ow.PType.LONG, 30000)


def test_session_commands_carry_their_fields(fixtures: list[Fixture]) -> None:
    info = _decode(fixtures, "ConnectionInfo")
    assert isinstance(info, ow.ConnectionInfo)
    assert (info.client_id, info.user_name, info.password) == ("client-1", "alice", "secret")
    assert info.connection_id == ow.ConnectionId(value="ID:host-1-2:1")
    assert info.response_required and info.command_id == 1
    consumer = _decode(fixtures, "ConsumerInfo")
    assert isinstance(consumer, ow.ConsumerInfo)
    assert consumer.selector == "price > 10 AND sym = 'X'"
    assert consumer.destination == ow.ActiveMQTopic(physical_name="prices")
    assert (consumer.prefetch_size, consumer.subscription_name, consumer.priority) == (
        1000,
        "durable-1",
        -3,
    )
    ack = _decode(fixtures, "MessageAck")
    assert isinstance(ack, ow.MessageAck)
    assert ack.transaction_id == ow.LocalTransactionId(
        value=5, connection_id=ow.ConnectionId(value="ID:host-1-2:1")
    )
    assert ack.message_count == 3


def test_exceptions_with_and_without_stack_traces(fixtures: list[Fixture]) -> None:
    plain = _decode(fixtures, "ExceptionResponse")
    assert isinstance(plain, ow.ExceptionResponse)
    assert plain.exception == ow.JavaThrowable("javax.jms.JMSException", "no such queue")
    full = _decode(fixtures, "ExceptionResponse", stack_trace=True)
    assert isinstance(full, ow.ExceptionResponse) and full.exception is not None
    assert any(frame.method_name == "main" for frame in full.exception.stack)
    assert full.exception.cause is not None
    assert full.exception.cause.message == "inner"


def test_message_bodies_and_typed_properties(fixtures: list[Fixture]) -> None:
    P, T = ow.Primitive, ow.PType
    text = _decode(fixtures, "ActiveMQTextMessage")
    assert isinstance(text, ow.ActiveMQTextMessage) and text.content is not None
    assert ow.decode_text_body(text.content) == "h\u00e9llo, w\u00f6rld \U0001f600 \x00 end"
    assert text.marshalled_properties is not None
    props = ow.decode_primitive_map(text.marshalled_properties)
    assert props == {
        "aBoolean": P(T.BOOLEAN, True),
        "aByte": P(T.BYTE, -5),
        "aShort": P(T.SHORT, 300),
        "anInt": P(T.INTEGER, 70000),
        "aLong": P(T.LONG, 1 << 40),
        "aFloat": P(T.FLOAT, 1.5),
        "aDouble": P(T.DOUBLE, -2.25),
        "aString": P(T.STRING, "h\u00e9llo \x00 \U0001f600"),
    }
    assert (text.persistent, text.priority, text.correlation_id, text.type) == (
        True,
        4,
        "corr-1",
        "order",
    )
    assert text.reply_to == ow.ActiveMQTempQueue(physical_name="ID:host-1-2:1:1")
    assert isinstance(text.message_id, ow.MessageId) and text.message_id.producer_sequence_id == 42
    mapped = _decode(fixtures, "ActiveMQMapMessage")
    assert isinstance(mapped, ow.ActiveMQMapMessage) and mapped.content is not None
    assert ow.decode_primitive_map(mapped.content) == {
        "name": P(T.STRING, "widget"),
        "count": P(T.INTEGER, 3),
        "c": P(T.CHAR, "Z"),
        "raw": P(T.BYTE_ARRAY, b"\x09\x08\x07"),
        "price": P(T.DOUBLE, 9.99),
    }
    stream = _decode(fixtures, "ActiveMQStreamMessage")
    assert isinstance(stream, ow.ActiveMQStreamMessage) and stream.content is not None
    assert ow.decode_primitive_stream(stream.content) == [
        P(T.STRING, "first"),
        P(T.LONG, -9),
        P(T.BOOLEAN, False),
        P(T.NULL, None),
        P(T.FLOAT, 0.25),
    ]
    raw = _decode(fixtures, "ActiveMQBytesMessage")
    assert isinstance(raw, ow.ActiveMQBytesMessage)
    assert raw.content == b"\x00\x01\x02\xff\xff\xff\xff\xff"
    dispatch = _decode(fixtures, "MessageDispatch")
    assert isinstance(dispatch, ow.MessageDispatch) and dispatch.redelivery_counter == 2
    assert isinstance(dispatch.message, ow.ActiveMQTextMessage)
    assert dispatch.message.content is not None
    assert ow.decode_text_body(dispatch.message.content) == "to you"


def test_compressed_bodies(fixtures: list[Fixture]) -> None:
    text = _decode(fixtures, "ActiveMQTextMessage/compressed")
    assert isinstance(text, ow.ActiveMQTextMessage) and text.compressed
    body = ow.decode_content(text, max_size=1 << 20)
    assert body is not None
    assert ow.decode_text_body(body) == "compressed " + "text " * 200
    assert ow.decode_content(text, max_size=len(body)) == body
    with pytest.raises(ow.OpenWireError, match="inflates past"):
        ow.decode_content(text, max_size=len(body) - 1)
    raw = _decode(fixtures, "ActiveMQBytesMessage/compressed")
    assert isinstance(raw, ow.ActiveMQBytesMessage) and raw.compressed
    assert ow.decode_content(raw, max_size=1 << 20) == b"bytes " * 200
    again = ow.ActiveMQBytesMessage(
        compressed=True, content=ow.compress_content(ow.ActiveMQBytesMessage, b"bytes " * 200)
    )
    assert ow.decode_content(again, max_size=1 << 20) == b"bytes " * 200


def _python_frames() -> list[tuple[bool, ow.DataStructure]]:
    """Frames ternmq encodes, as a server would send them to the Java client."""
    P, T = ow.Primitive, ow.PType
    conn = ow.ConnectionId(value="ID:ternmq-1")
    producer = ow.ProducerId(connection_id="ID:ternmq-1", session_id=1, value=1)
    consumer = ow.ConsumerId(connection_id="ID:ternmq-1", session_id=1, value=2)
    queue = ow.ActiveMQQueue(physical_name="orders")
    properties = {
        "b": P(T.BOOLEAN, True),
        "by": P(T.BYTE, -1),
        "c": P(T.CHAR, "\u00e9"),
        "d": P(T.DOUBLE, 2.5),
        "f": P(T.FLOAT, -0.5),
        "i": P(T.INTEGER, -7),
        "l": P(T.LONG, 1 << 50),
        "raw": P(T.BYTE_ARRAY, b"\x01\xfe"),
        # BMP text only: the Java client reads string properties as UTF8Buffer, which
        # decodes standard UTF-8, so NUL and astral characters in them do not survive even
        # between two Java clients.
        "s": P(T.STRING, "caf\u00e9"),
        "sh": P(T.SHORT, 12),
    }
    message = ow.ActiveMQTextMessage(
        producer_id=producer,
        destination=queue,
        message_id=ow.MessageId(producer_id=producer, producer_sequence_id=9),
        persistent=True,
        priority=7,
        timestamp=1764000000000,
        content=ow.encode_text_body("caf\u00e9 \U0001f600 \x00"),
        marshalled_properties=ow.encode_primitive_map(properties),
    )
    failure = ow.JavaThrowable(
        "javax.jms.InvalidDestinationException",
        "no such queue: q",
        (ow.StackFrame("ternmq.Gateway", "send", "gateway.py", 10),),
    )
    wire = ow.WireFormat(stack_trace=True, max_inactivity_ms=30000, max_frame_size=1 << 20)
    return [
        (False, wire.to_info({"ProviderName": P(T.STRING, "ternmq")})),
        (False, ow.BrokerInfo(broker_id=ow.BrokerId(value="ID:ternmq"), broker_name="ternmq")),
        (False, ow.Response(correlation_id=3)),
        (True, ow.ExceptionResponse(correlation_id=4, exception=failure)),
        (False, ow.MessageDispatch(consumer_id=consumer, destination=queue, message=message)),
        (False, ow.KeepAliveInfo()),
        (False, ow.ConnectionControl(command_id=2, fault_tolerant=True)),
        (False, ow.DestinationInfo(connection_id=conn, destination=queue, operation_type=1)),
    ]


def test_java_reads_what_ternmq_encodes(java_command: list[str]) -> None:
    frames = _python_frames()
    encoded = [(stack, ow.encode_frame(command, stack_trace=stack)) for stack, command in frames]
    stdin = "".join(f"{'true' if stack else 'false'} {frame.hex()}\n" for stack, frame in encoded)
    run = subprocess.run(
        [*java_command, "echo"],
        input=stdin,
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = run.stdout.splitlines()
    assert len(lines) == len(frames)
    details = {}
    for (_, command), (_, frame), line in zip(frames, encoded, lines, strict=True):
        java_class, _, java_hex, detail = line.split()
        assert java_class == type(command).__name__
        assert bytes.fromhex(java_hex) == frame, java_class  # Java marshals it back identically
        details[java_class] = "" if detail == "-" else bytes.fromhex(detail).decode()
    assert details["WireFormatInfo"] == "12|false|false|30000"
    assert details["ExceptionResponse"] == (
        "javax.jms.InvalidDestinationException:no such queue: q|1"
    )
    assert details["MessageDispatch"] == (
        "caf\u00e9 \U0001f600 \x00|b=Boolean:true|by=Byte:-1|c=Character:\u00e9|d=Double:2.5"
        "|f=Float:-0.5|i=Integer:-7|l=Long:1125899906842624|raw=byte[]:01fe"
        "|s=UTF8Buffer:caf\u00e9|sh=Short:12"
    )


def test_wire_format_settings_from_java(fixtures: list[Fixture]) -> None:
    info = _decode(fixtures, "WireFormatInfo")
    assert isinstance(info, ow.WireFormatInfo)
    java = ow.WireFormat.from_info(info)
    assert (java.version, java.stack_trace, java.max_inactivity_ms) == (12, True, 30000)
    assert not java.tight_encoding and not java.cache
