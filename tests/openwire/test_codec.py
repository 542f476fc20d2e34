"""The OpenWire v12 codec on its own: every data structure round-trips with every field set,
the octets match the loose layout, bodies and typed maps round-trip, limits and malformed
input give OpenWireError, and wrong values given to the encoder are refused."""

from __future__ import annotations

import struct
import typing

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ternmq.protocol import openwire as ow
from ternmq.protocol.frames import ProtocolError

THROWABLE = ow.JavaThrowable(
    "java.lang.IllegalStateException",
    "bad state",
    (ow.StackFrame("a.B", "run", "B.java", 12), ow.StackFrame(None, "x", None, -2)),
    ow.JavaThrowable("java.io.IOException", None),
)


def _sample(cls: type[ow.DataStructure], stack_trace: bool) -> ow.DataStructure:
    """An instance of ``cls`` with every field off its default, each value distinct."""
    values: dict[str, object] = {}
    for index, (name, kind) in enumerate(cls.FIELDS):
        kind_name = kind.name
        if kind_name == "BOOL":
            values[name] = True
        elif kind_name == "BYTE":
            values[name] = -index - 1
        elif kind_name == "INT":
            values[name] = 1_000_000 + index
        elif kind_name == "LONG":
            values[name] = -(1 << 40) - index
        elif kind_name == "STRING":
            values[name] = f"{name} \u00e9\U0001f600"
        elif kind_name == "BYTES":
            values[name] = bytes([index, 0, 255])
        elif kind_name == "NESTED":
            values[name] = _nested_sample(cls, name, index)
        elif kind_name == "ARRAY":
            values[name] = [ow.BrokerId(value=name), None, ow.ActiveMQTopic(physical_name="t")]
        elif kind_name == "THROWABLE":
            values[name] = THROWABLE if stack_trace else ow.JavaThrowable("E", "m")
        else:
            values[name] = ow.MAGIC
    return cls(**values)  # type: ignore[arg-type]


def _nested_sample(cls: type[ow.DataStructure], name: str, index: int) -> ow.DataStructure:
    """A distinct instance of the class ``cls.name`` holds (its first concrete subclass)."""
    (field_cls,) = (
        a for a in typing.get_args(typing.get_type_hints(cls)[name]) if a is not type(None)
    )
    if field_cls is ow.DataStructure or issubclass(ow.ConsumerId, field_cls):
        return ow.ConsumerId(connection_id=f"ID:{name}", session_id=index, value=2)
    concrete = min((c for c in ow.TYPES.values() if issubclass(c, field_cls)), key=lambda c: c.TYPE)
    return concrete()


def test_a_nested_object_of_another_class_is_malformed() -> None:
    """A field that holds one class of data structure, given another (a fuzzer's find: a
    ConsumerInfo whose destination was a WireFormatInfo), is refused by the decoder, not
    handed to the gateway."""
    frame = ow.encode_frame(
        ow.ConsumerInfo(
            consumer_id=ow.ConsumerId(connection_id="c", session_id=1, value=1),
            destination=ow.WireFormatInfo(),  # type: ignore[arg-type]
        )
    )
    with pytest.raises(ow.OpenWireError, match=r"ConsumerInfo\.destination must be a"):
        ow.FrameParser().feed(frame)
    good = ow.ConsumerInfo(destination=ow.ActiveMQQueue(physical_name="q"))
    (decoded,) = ow.FrameParser().feed(ow.encode_frame(good))
    assert decoded == good


@pytest.mark.parametrize("stack_trace", [False, True])
@pytest.mark.parametrize(
    "cls", sorted(ow.TYPES.values(), key=lambda c: c.TYPE), ids=lambda c: c.__name__
)
def test_every_type_round_trips_with_every_field_set(
    cls: type[ow.DataStructure], stack_trace: bool
) -> None:
    command = _sample(cls, stack_trace)
    frame = ow.encode_frame(command, stack_trace=stack_trace)
    assert struct.unpack(">i", frame[:4])[0] == len(frame) - 4
    assert frame[4] == cls.TYPE
    (decoded,) = ow.FrameParser(stack_trace=stack_trace).feed(frame)
    assert decoded == command
    assert type(decoded) is cls
    assert ow.encode_frame(decoded, stack_trace=stack_trace) == frame


def test_defaults_round_trip_too() -> None:
    for cls in ow.TYPES.values():
        (decoded,) = ow.FrameParser().feed(ow.encode_frame(cls()))
        assert decoded == cls()


def test_loose_layout_by_hand() -> None:
    # size, type 10, command id 7, response required false
    assert ow.encode_frame(ow.KeepAliveInfo(command_id=7)) == bytes.fromhex("000000060a0000000700")
    # SessionInfo: base command, then a present nested SessionId (type 121) with a present
    # string "c" (writeUTF) and the long 3.
    frame = ow.encode_frame(
        ow.SessionInfo(command_id=1, session_id=ow.SessionId(connection_id="c", value=3))
    )
    body = "0400000001000179010001630000000000000003"
    assert frame.hex() == f"{len(body) // 2:08x}{body}"
    # A null string is one false octet; no throwable stack without StackTraceEnabled.
    frame = ow.encode_frame(ow.ExceptionResponse(exception=THROWABLE))
    assert frame.endswith(b"\x01\x00\x1fjava.lang.IllegalStateException\x01\x00\x09bad state")


def test_stack_and_cause_travel_only_with_stack_trace_enabled() -> None:
    command = ow.ExceptionResponse(correlation_id=4, exception=THROWABLE)
    (plain,) = ow.FrameParser().feed(ow.encode_frame(command))
    assert isinstance(plain, ow.ExceptionResponse)
    assert plain.exception == ow.JavaThrowable(THROWABLE.class_name, THROWABLE.message)
    (full,) = ow.FrameParser(stack_trace=True).feed(ow.encode_frame(command, stack_trace=True))
    assert full == command


def test_modified_utf8_strings() -> None:
    frame = ow.encode_frame(ow.BrokerId(value="a\x00\U0001f600"))
    # NUL is C0 80; an astral character is a surrogate pair, three octets each.
    assert frame[5:] == b"\x01\x00\x09a\xc0\x80\xed\xa0\xbd\xed\xb8\x80"
    assert ow.FrameParser().feed(frame) == [ow.BrokerId(value="a\x00\U0001f600")]
    lone = ow.BrokerId(value="x\udc00y")
    assert ow.FrameParser().feed(ow.encode_frame(lone)) == [lone]
    four_octets = b"\x00\x00\x00\x08\x7c\x01\x00\x04\xf0\x9f\x98\x80"
    with pytest.raises(ow.OpenWireError, match="modified UTF-8"):
        ow.FrameParser().feed(four_octets)


def test_text_bodies() -> None:
    text = "h\u00e9llo \x00 \U0001f600" * 5000  # longer than writeUTF's 65535 limit
    body = ow.encode_text_body(text)
    assert struct.unpack(">i", body[:4])[0] == len(body) - 4
    assert ow.decode_text_body(body) == text
    assert ow.encode_text_body(None) == b"\xff\xff\xff\xff"
    assert ow.decode_text_body(b"\xff\xff\xff\xff") is None
    with pytest.raises(ow.OpenWireError, match="needs 9 octets"):
        ow.decode_text_body(b"\x00\x00\x00\x09abc")
    with pytest.raises(ow.OpenWireError, match="left over"):
        ow.decode_text_body(b"\x00\x00\x00\x01ab")


P = ow.Primitive
T = ow.PType
ALL_TYPES = {
    "null": P(T.NULL, None),
    "bool": P(T.BOOLEAN, False),
    "byte": P(T.BYTE, -128),
    "char": P(T.CHAR, "\u20ac"),
    "short": P(T.SHORT, 5),
    "int": P(T.INTEGER, 5),
    "long": P(T.LONG, -(1 << 63)),
    "double": P(T.DOUBLE, 0.1),
    "float": P(T.FLOAT, 0.5),
    "string": P(T.STRING, "caf\u00e9"),
    "bytes": P(T.BYTE_ARRAY, b"\x00\xff"),
    "map": P(T.MAP, {"inner": P(T.LIST, [P(T.INTEGER, 1), P(T.STRING, "two")])}),
    "big": P(T.BIG_STRING, "x" * 70000),
}


def test_primitive_maps_keep_every_type() -> None:
    data = ow.encode_primitive_map(ALL_TYPES)
    decoded = ow.decode_primitive_map(data)
    assert decoded == ALL_TYPES
    assert decoded is not None and decoded["short"] != decoded["int"]
    assert ow.encode_primitive_map(decoded) == data
    assert ow.encode_primitive_map(None) == b"\xff\xff\xff\xff"
    assert ow.decode_primitive_map(b"\xff\xff\xff\xff") is None
    # name, SHORT tag, value
    assert (
        ow.encode_primitive_map({"a": P(T.SHORT, 258)}) == b"\x00\x00\x00\x01\x00\x01a\x04\x01\x02"
    )


def test_primitive_streams() -> None:
    values = list(ALL_TYPES.values())
    data = ow.encode_primitive_stream(values)
    assert ow.decode_primitive_stream(data) == values
    assert ow.decode_primitive_stream(b"") == []


@pytest.mark.parametrize(
    ("value", "match"),
    [
        (P(T.BYTE, 128), "does not fit"),
        (P(T.INTEGER, "1"), "does not fit"),
        (P(T.STRING, "x" * 70000), "65535"),
        (P(T.CHAR, "ab"), "does not fit"),
    ],
)
def test_primitive_values_that_do_not_fit_are_refused(value: ow.Primitive, match: str) -> None:
    with pytest.raises(ow.OpenWireError, match=match):
        ow.encode_primitive_map({"k": value})


def test_encoder_refuses_what_does_not_fit() -> None:
    with pytest.raises(ow.OpenWireError, match="65535"):
        ow.encode_frame(ow.BrokerId(value="x" * 70000))
    with pytest.raises(ow.OpenWireError, match="cannot encode"):
        ow.encode_frame(ow.Response(correlation_id=1 << 31))
    with pytest.raises(ow.OpenWireError, match="not a concrete"):
        ow.encode_frame(ow.ActiveMQDestination(physical_name="q"))
    with pytest.raises(ow.OpenWireError, match="magic has 8 octets"):
        ow.encode_frame(ow.WireFormatInfo(magic=b"Active"))
    assert issubclass(ow.OpenWireError, ProtocolError)


def test_parser_buffers_partial_frames_and_splits_batches() -> None:
    frames = [
        ow.encode_frame(ow.KeepAliveInfo()),
        ow.encode_frame(ow.ActiveMQTextMessage(content=ow.encode_text_body("hi"))),
        ow.encode_frame(ow.ShutdownInfo(command_id=9)),
    ]
    stream = b"".join(frames)
    parser = ow.FrameParser()
    got: list[ow.DataStructure] = []
    for i in range(len(stream)):
        got += parser.feed(stream[i : i + 1])
    assert got == ow.FrameParser().feed(stream)
    assert [type(c) for c in got] == [ow.KeepAliveInfo, ow.ActiveMQTextMessage, ow.ShutdownInfo]
    assert parser.pending == 0
    assert parser.feed(stream[:7]) == [] and parser.pending == 7


def test_frame_size_is_checked_before_buffering() -> None:
    parser = ow.FrameParser(max_frame_size=100)
    with pytest.raises(ow.OpenWireError, match="limit is 100"):
        parser.feed(struct.pack(">i", 101))
    with pytest.raises(ow.OpenWireError, match="a frame of -1 octets"):
        ow.FrameParser().feed(b"\xff\xff\xff\xff")
    with pytest.raises(ow.OpenWireError, match="a frame of 0 octets"):
        ow.FrameParser().feed(b"\x00\x00\x00\x00")


@pytest.mark.parametrize(
    ("frame", "match"),
    [
        (b"\x00\x00\x00\x01\xc8", "unknown OpenWire data type 200"),
        (b"\x00\x00\x00\x02\x0a\x00", "KeepAliveInfo.command_id needs 4 octets"),
        (b"\x00\x00\x00\x08\x0a\x00\x00\x00\x00\x00\x00\x00", "2 octets left over"),
        # BrokerId with a present string announcing 65535 octets
        (b"\x00\x00\x00\x05\x7c\x01\xff\xff\x41", "needs 65535 octets but the frame has 1"),
        # WireFormatInfo with a byte sequence of -5 octets
        (b"\x00\x00\x00\x12\x01ActiveMQ\x00\x00\x00\x0c\x01\xff\xff\xff\xfb", "negative length"),
        # BrokerInfo with a peer array of -1 entries
        (b"\x00\x00\x00\x0b\x02\x00\x00\x00\x00\x00\x00\x00\x01\xff\xff", "negative count"),
    ],
)
def test_malformed_frames(frame: bytes, match: str) -> None:
    with pytest.raises(ow.OpenWireError, match=match):
        ow.FrameParser().feed(frame)


def test_nesting_deeper_than_the_limit_is_refused() -> None:
    command: ow.DataStructure = ow.KeepAliveInfo()
    for _ in range(ow.MAX_DEPTH):
        command = ow.ActiveMQMessage(data_structure=command)
    with pytest.raises(ow.OpenWireError, match="nests deeper"):
        ow.FrameParser().feed(ow.encode_frame(command))
    cause = None
    for _ in range(ow.MAX_DEPTH + 1):
        cause = ow.JavaThrowable("E", None, (), cause)
    frame = ow.encode_frame(ow.ExceptionResponse(exception=cause), stack_trace=True)
    with pytest.raises(ow.OpenWireError, match="nests deeper"):
        ow.FrameParser(stack_trace=True).feed(frame)
    nested_maps: ow.Primitive = P(T.NULL, None)
    for _ in range(ow.MAX_DEPTH + 1):
        nested_maps = P(T.MAP, {"m": nested_maps})
    with pytest.raises(ow.OpenWireError, match="nests deeper"):
        ow.decode_primitive_map(ow.encode_primitive_map({"m": nested_maps}))


def test_counts_that_exceed_the_input_are_refused_before_allocating() -> None:
    with pytest.raises(ow.OpenWireError, match="a count of 2147483647"):
        ow.decode_primitive_map(b"\x7f\xff\xff\xff\x00")
    with pytest.raises(ow.OpenWireError, match="unknown primitive type 99"):
        ow.decode_primitive_stream(b"\x63")
    with pytest.raises(ow.OpenWireError, match="a null map"):
        ow.decode_primitive_stream(b"\x0b\xff\xff\xff\xff")


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_arbitrary_bytes_give_only_the_codec_error(data: bytes) -> None:
    for parser_input in (data, struct.pack(">i", len(data)) + data):
        try:
            ow.FrameParser(max_frame_size=4096, stack_trace=True).feed(parser_input)
        except ow.OpenWireError:
            pass
    for decode in (ow.decode_primitive_map, ow.decode_primitive_stream, ow.decode_text_body):
        try:
            decode(data)
        except ow.OpenWireError:
            pass


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(ow.TYPES)), st.integers(0, 10_000), st.binary(min_size=1, max_size=8))
def test_corrupted_valid_frames_give_only_the_codec_error(
    type_: int, seed: int, junk: bytes
) -> None:
    frame = bytearray(ow.encode_frame(_sample(ow.TYPES[type_], True), stack_trace=True))
    at = 4 + seed % (len(frame) - 4)
    frame[at : at + len(junk)] = junk
    try:
        for command in ow.FrameParser(stack_trace=True).feed(bytes(frame)):
            assert isinstance(command, ow.DataStructure)
    except ow.OpenWireError:
        pass


def test_compressed_content_round_trips_within_the_limit() -> None:
    body = ow.encode_text_body("z" * 10_000)
    message = ow.ActiveMQTextMessage(
        compressed=True, content=ow.compress_content(ow.ActiveMQTextMessage, body)
    )
    assert message.content is not None and len(message.content) < 200
    assert ow.decode_content(message, max_size=len(body)) == body
    with pytest.raises(ow.OpenWireError, match="inflates past 10000"):
        ow.decode_content(message, max_size=10_000)
    plain = ow.ActiveMQTextMessage(content=b"abc")
    assert ow.decode_content(plain, max_size=1) == b"abc"  # not compressed: as it is
    raw = ow.ActiveMQBytesMessage(
        compressed=True, content=ow.compress_content(ow.ActiveMQBytesMessage, b"\x01" * 50)
    )
    assert raw.content is not None and raw.content[:4] == b"\x00\x00\x00\x32"
    assert ow.decode_content(raw, max_size=50) == b"\x01" * 50
    with pytest.raises(ow.OpenWireError, match="announces 50 octets"):
        ow.decode_content(raw, max_size=49)
    shorter = ow.ActiveMQBytesMessage(
        compressed=True, content=b"\x00\x00\x00\x05" + raw.content[4:]
    )
    assert ow.decode_content(shorter, max_size=100) == b"\x01" * 5  # as Java reads it
    longer = ow.ActiveMQBytesMessage(compressed=True, content=b"\x00\x00\x00\x33" + raw.content[4:])
    with pytest.raises(ow.OpenWireError, match="of 50 octets announced 51"):
        ow.decode_content(longer, max_size=100)
    for content, match in ((b"not zlib", "corrupt"), (message.content[:-3], "truncated")):
        broken = ow.ActiveMQTextMessage(compressed=True, content=content)
        with pytest.raises(ow.OpenWireError, match=match):
            ow.decode_content(broken, max_size=1 << 20)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200), st.booleans())
def test_arbitrary_compressed_content_gives_only_the_codec_error(
    data: bytes, as_bytes: bool
) -> None:
    cls = ow.ActiveMQBytesMessage if as_bytes else ow.ActiveMQTextMessage
    try:
        body = ow.decode_content(cls(compressed=True, content=data), max_size=4096)
    except ow.OpenWireError:
        return
    assert body is not None and len(body) <= 4096


def test_wire_format_round_trip_and_negotiation() -> None:
    server = ow.WireFormat(
        stack_trace=True, tcp_no_delay=True, max_inactivity_ms=30000, max_frame_size=1 << 20
    )
    info = server.to_info({"ProviderName": P(T.STRING, "ternmq")})
    assert ow.WireFormat.from_info(info) == server
    props = ow.decode_primitive_map(info.marshalled_properties or b"")
    assert props is not None
    assert props["TightEncodingEnabled"] == P(T.BOOLEAN, False)
    assert props["MaxInactivityDuration"] == P(T.LONG, 30000)
    assert props["ProviderName"] == P(T.STRING, "ternmq")
    client = ow.WireFormat(
        version=12,
        stack_trace=True,
        tcp_no_delay=False,
        cache=True,
        tight_encoding=True,
        max_inactivity_ms=10000,
        max_inactivity_initial_delay_ms=5000,
        max_frame_size=1 << 30,
        cache_size=1024,
    )
    both = server.negotiate(client)
    assert both == client.negotiate(server)
    assert both == ow.WireFormat(
        version=12,
        stack_trace=True,
        max_inactivity_ms=10000,
        max_frame_size=1 << 20,
    )
    assert both.write_check_ms == 3333
    assert ow.WireFormat(max_inactivity_ms=3).write_check_ms == 3
    assert ow.WireFormat(version=9).negotiate(server).version == 9
    assert ow.WireFormat.from_info(ow.WireFormatInfo(version=12)) == ow.WireFormat()


def test_wire_format_info_that_is_not_openwire_is_refused() -> None:
    with pytest.raises(ow.OpenWireError, match="not an OpenWire peer"):
        ow.WireFormat.from_info(ow.WireFormatInfo(magic=b"NotAMQ!!"))
    wrong = ow.WireFormatInfo(
        marshalled_properties=ow.encode_primitive_map({"CacheEnabled": P(T.STRING, "yes")})
    )
    with pytest.raises(ow.OpenWireError, match="CacheEnabled is not a BOOLEAN"):
        ow.WireFormat.from_info(wrong)


def test_every_truncation_of_a_dispatch_names_the_field_it_cuts() -> None:
    # The generated decoders check every read: a frame cut anywhere fails with the codec's
    # error naming the class and field being read, never an IndexError or struct.error.
    pid = ow.ProducerId(connection_id="ID:h-1-2-1:1", session_id=1, value=1)
    mid = ow.MessageId(producer_id=pid, producer_sequence_id=5, broker_sequence_id=7)
    q = ow.ActiveMQQueue(physical_name="orders")
    dispatch = ow.MessageDispatch(
        consumer_id=ow.ConsumerId(connection_id="ID:h-1-2-1:1", session_id=1, value=2),
        destination=q,
        message=ow.ActiveMQTextMessage(
            producer_id=pid,
            destination=q,
            message_id=mid,
            content=ow.encode_text_body("hello"),
            marshalled_properties=ow.encode_primitive_map({"k": ow.Primitive(ow.PType.INTEGER, 1)}),
        ),
        redelivery_counter=1,
    )
    body = ow.encode_frame(dispatch)[4:]
    assert ow.decode_frame(body) == dispatch
    for cut in range(1, len(body)):
        with pytest.raises(ow.OpenWireError, match=r"\.\w+ needs \d+ octets but the frame"):
            ow.decode_frame(body[:cut])
