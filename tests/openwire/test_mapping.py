"""OpenWire <-> JMS message mapping (``server/_openwire_mapping.py``).

Round trips both ways for every header, property type and body type, the error cases, and
byte-level checks against ActiveMQ's own client: ``java/OpenWireMapping.java`` builds
messages through the JMS API and marshals them (ternmq decodes them to the expected JMS
values), and unmarshals what ternmq encodes and prints what its JMS getters answer.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ternmq.destination import Queue, TemporaryQueue, TemporaryTopic, Topic
from ternmq.errors import InvalidDestinationException, MessageFormatException
from ternmq.message import (
    BytesMessage,
    MapMessage,
    Message,
    ObjectMessage,
    StreamMessage,
    TextMessage,
)
from ternmq.message._types import T
from ternmq.protocol import openwire as ow
from ternmq.server import _openwire_mapping as m

from ._java import java_produced, java_reads, mapping_program, text_of

NOW = 1_764_000_000_000
P = ow.PType
QUEUE = ow.ActiveMQQueue(physical_name="orders")
PRODUCER = ow.ProducerId(connection_id="ID:host-1-2:1", session_id=3, value=4)
#: The header attributes of a JMS message that OpenWire carries (JMSDestination aside).
HEADERS = (
    "_message_id",
    "_reply_to",
    "_correlation_id",
    "_type",
    "_priority",
    "_expiration",
    "_timestamp",
    "_delivery_mode",
)


def _wire(msg: Message, *, redelivery_counter: int = 0, mid: str | None = None) -> ow.Message:
    """``msg`` mapped to OpenWire, through the codec's octets and back."""
    out = m.openwire_message(
        msg,
        destination=m.openwire_destination(msg._destination or Queue("orders")),
        message_id=m.message_id_of(mid or msg._message_id or "ID:py-1", 17),
        redelivery_counter=redelivery_counter,
    )
    (decoded,) = ow.FrameParser().feed(ow.encode_frame(out))
    assert isinstance(decoded, ow.Message)
    return decoded


def _jms(cmd: ow.Message, now_ms: int = NOW) -> Message:
    """``cmd`` through the codec's octets, then mapped to JMS."""
    (decoded,) = ow.FrameParser().feed(ow.encode_frame(cmd))
    assert isinstance(decoded, ow.Message)
    return m.message_from_openwire(decoded, now_ms=now_ms, resolve=m.jms_destination)


def _ow(cls: type[ow.Message] = ow.ActiveMQMessage, **fields: object) -> ow.Message:
    base: dict[str, object] = {
        "producer_id": PRODUCER,
        "destination": QUEUE,
        "message_id": ow.MessageId(producer_id=PRODUCER, producer_sequence_id=9),
    }
    base.update(fields)
    return cls(**base)  # type: ignore[arg-type]


def _props(**entries: ow.Primitive) -> bytes:
    return ow.encode_primitive_map(entries)


# --- destinations ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("wire", "jms"),
    [
        (ow.ActiveMQQueue(physical_name="orders"), Queue("orders")),
        (ow.ActiveMQTopic(physical_name="prices.eu"), Topic("prices.eu")),
        (ow.ActiveMQTempQueue(physical_name="ID:h-1-2:1:1"), TemporaryQueue("ID:h-1-2:1:1")),
        (ow.ActiveMQTempTopic(physical_name="ID:h-1-2:1:2"), TemporaryTopic("ID:h-1-2:1:2")),
    ],
)
def test_destinations_map_both_ways(wire: ow.ActiveMQDestination, jms: Queue) -> None:
    assert m.jms_destination(wire) == jms
    assert m.openwire_destination(jms) == wire
    assert m.openwire_destination(str(jms)) == wire
    assert type(m.openwire_destination(jms)) is type(wire)


@pytest.mark.parametrize(
    ("wire", "words"),
    [
        (ow.ActiveMQQueue(physical_name="a,b"), "composite"),
        (ow.ActiveMQTopic(physical_name="prices.*"), "wildcard"),
        (ow.ActiveMQTopic(physical_name="prices.>"), "wildcard"),
        (ow.ActiveMQQueue(physical_name=None), "without a name"),
        (ow.ActiveMQQueue(physical_name="two words"), "invalid"),
        (ow.ActiveMQDestination(physical_name="x"), "use a queue or a topic"),
    ],
)
def test_destinations_ternmq_does_not_route_are_refused(
    wire: ow.ActiveMQDestination, words: str
) -> None:
    with pytest.raises(InvalidDestinationException, match=words):
        m.jms_destination(wire)


def test_openwire_destination_refuses_a_text_that_is_no_destination() -> None:
    with pytest.raises(InvalidDestinationException):
        m.openwire_destination("orders")


# --- message ids -----------------------------------------------------------------------------


def test_an_openwire_producer_id_round_trips_to_the_same_string_and_fields() -> None:
    wire = ow.MessageId(producer_id=PRODUCER, producer_sequence_id=9)
    text = m.message_id_text(wire)
    assert text == "ID:host-1-2:1:3:4:9"
    back = m.message_id_of(text, 55)
    assert back.producer_id == PRODUCER
    assert (back.producer_sequence_id, back.broker_sequence_id) == (9, 55)
    assert m.message_id_text(back) == text


def test_foreign_ids_keep_their_text_and_get_a_producer_and_sequence() -> None:
    ternmq = m.message_id_of("ID:a1b2c3-41", 1)
    assert m.message_id_text(ternmq) == "ID:a1b2c3-41"
    assert ternmq.producer_id == ow.ProducerId(connection_id="ID:a1b2c3", session_id=-1, value=0)
    assert ternmq.producer_sequence_id == 41
    other = m.message_id_of("ID:admin-zz", 2)
    assert m.message_id_text(other) == "ID:admin-zz"
    assert other.producer_id is not None and other.producer_id.connection_id == "ID:admin-zz"
    # Java puts "ID:" in front of a text view without it.
    assert m.message_id_text(ow.MessageId(text_view="abc")) == "ID:abc"


def test_message_ids_map_one_to_one_onto_producer_and_sequence() -> None:
    texts = [
        "ID:x-5",
        "ID:x-05",
        "ID:x:0:0:5",
        "ID:x",
        "ID:x-",
        "ID:x:1:2:3:4",
        "ID:x:-1:0:5",
        "ID:x-1-5",
        "ID:x-99999999999999999999",
        "ID:h-1-2:1:1:1:1",
    ]
    keys = set()
    for text in texts:
        mid = m.message_id_of(text, 0)
        assert m.message_id_text(mid) == text
        assert mid.producer_id is not None
        keys.add((m.producer_id_text(mid.producer_id), mid.producer_sequence_id))
    assert len(keys) == len(texts)


def test_a_message_id_without_producer_or_text_is_refused() -> None:
    with pytest.raises(MessageFormatException, match="MessageId"):
        m.message_id_text(ow.MessageId())
    with pytest.raises(MessageFormatException, match="MessageId"):
        _jms(_ow(message_id=None))


# --- headers ---------------------------------------------------------------------------------


def _full_headers(msg: Message) -> Message:
    msg._message_id = "ID:py-conn-7"
    msg._destination = Topic("prices")
    msg._reply_to = TemporaryQueue("ID:py-conn:tmp1")
    msg._correlation_id = "corr-9"
    msg._type = "quote"
    msg._priority = 8
    msg._expiration = NOW + 5000
    msg._timestamp = NOW - 10
    msg._delivery_mode = 1
    msg._store_property("JMSXGroupID", T.STRING, "g-1")
    msg._store_property("JMSXGroupSeq", T.INT, 12)
    msg._store_property("JMSXUserID", T.STRING, "alice")
    msg._store_property("JMSXDeliveryCount", T.INT, 3)
    msg._store_property("JMSXAppID", T.STRING, "app")
    return msg


def test_every_header_goes_to_its_openwire_field() -> None:
    wire = _wire(_full_headers(Message()), redelivery_counter=2)
    assert type(wire) is ow.ActiveMQMessage
    assert m.message_id_text(wire.message_id or ow.MessageId()) == "ID:py-conn-7"
    assert wire.destination == ow.ActiveMQTopic(physical_name="prices")
    assert wire.reply_to == ow.ActiveMQTempQueue(physical_name="ID:py-conn:tmp1")
    assert (wire.correlation_id, wire.type, wire.priority) == ("corr-9", "quote", 8)
    assert (wire.expiration, wire.timestamp, wire.persistent) == (NOW + 5000, NOW - 10, False)
    assert (wire.group_id, wire.group_sequence, wire.user_id) == ("g-1", 12, "alice")
    assert wire.redelivery_counter == 2
    assert wire.producer_id == (wire.message_id or ow.MessageId()).producer_id
    props = ow.decode_primitive_map(wire.marshalled_properties or b"")
    # JMSX fields live in fields, JMSXDeliveryCount is the redelivery counter.
    assert props == {"JMSXAppID": ow.Primitive(P.STRING, "app")}


def test_every_header_round_trips_through_openwire() -> None:
    sent = _full_headers(Message())
    sent._properties.pop("JMSXDeliveryCount")
    sent._property_types.pop("JMSXDeliveryCount")
    got = _jms(_wire(sent), now_ms=NOW + 1)
    for attr in ("_destination", *HEADERS):
        assert getattr(got, attr) == getattr(sent, attr), attr
    assert got._delivery_time == NOW + 1
    assert got._properties == sent._properties
    assert got._property_types == sent._property_types


def test_persistent_flag_is_the_delivery_mode() -> None:
    assert _jms(_ow(persistent=True))._delivery_mode == 2
    assert _jms(_ow(persistent=False))._delivery_mode == 1
    msg = Message()
    msg._delivery_mode = 2
    assert _wire(msg).persistent is True


def test_a_bytes_correlation_id_goes_as_utf8_text_as_java_sets_it() -> None:
    msg = Message()
    msg.set_jms_correlation_id_as_bytes("ké".encode())
    assert _wire(msg).correlation_id == "ké"


def test_scheduled_delay_becomes_the_delivery_time_in_every_java_form() -> None:
    for item in (
        ow.Primitive(P.LONG, 5000),
        ow.Primitive(P.INTEGER, 5000),
        ow.Primitive(P.STRING, "5000"),
    ):
        got = _jms(_ow(marshalled_properties=_props(AMQ_SCHEDULED_DELAY=item)), now_ms=NOW)
        assert got._delivery_time == NOW + 5000
        assert m.SCHEDULED_DELAY not in got._properties


@pytest.mark.parametrize(
    "item",
    [ow.Primitive(P.LONG, -1), ow.Primitive(P.STRING, "soon"), ow.Primitive(P.DOUBLE, 1.5)],
)
def test_a_scheduled_delay_that_is_no_delay_is_refused(item: ow.Primitive) -> None:
    with pytest.raises(MessageFormatException, match="AMQ_SCHEDULED_DELAY"):
        _jms(_ow(marshalled_properties=_props(AMQ_SCHEDULED_DELAY=item)))


def test_priority_outside_jms_range_is_refused() -> None:
    with pytest.raises(MessageFormatException, match="JMSPriority"):
        _jms(_ow(priority=10))


def test_a_message_without_destination_is_refused() -> None:
    with pytest.raises(InvalidDestinationException):
        _jms(_ow(destination=None))


def test_group_and_user_fields_become_jmsx_properties() -> None:
    got = _jms(_ow(group_id="g", group_sequence=4, user_id="bob"))
    assert got.get_string_property("JMSXGroupID") == "g"
    assert got.get_int_property("JMSXGroupSeq") == 4
    assert got.get_string_property("JMSXUserID") == "bob"
    bare = _jms(_ow())
    assert bare._properties == {}


# --- properties ------------------------------------------------------------------------------

TYPED = {
    "b": (T.BOOLEAN, True, P.BOOLEAN),
    "y": (T.BYTE, -128, P.BYTE),
    "s": (T.SHORT, 32767, P.SHORT),
    "i": (T.INT, -(2**31), P.INTEGER),
    "l": (T.LONG, 5, P.LONG),
    "f": (T.FLOAT, 0.5, P.FLOAT),
    "d": (T.DOUBLE, 0.1, P.DOUBLE),
    "t": (T.STRING, "😀 é \x00", P.STRING),
    "n": (T.NULL, None, P.NULL),
}


def test_every_property_type_keeps_its_java_type_both_ways() -> None:
    msg = Message()
    for name, (tag, value, _) in TYPED.items():
        msg._store_property(name, tag, value)
    wire = _wire(msg)
    props = ow.decode_primitive_map(wire.marshalled_properties or b"")
    assert props == {name: ow.Primitive(p, v) for name, (_, v, p) in TYPED.items()}
    back = _jms(wire)
    assert back._properties == msg._properties
    assert back._property_types == msg._property_types


def test_a_small_python_int_set_as_long_stays_long() -> None:
    msg = Message()
    msg.set_long_property("count", 1)
    msg.set_object_property("auto", 7)  # a Python int is a Java long (catalog §1.1)
    msg.set_object_property("ratio", 0.5)  # a Python float is a Java double
    msg.set_int_property("small", 7)
    props = ow.decode_primitive_map(_wire(msg).marshalled_properties or b"")
    assert props == {
        "count": ow.Primitive(P.LONG, 1),
        "auto": ow.Primitive(P.LONG, 7),
        "ratio": ow.Primitive(P.DOUBLE, 0.5),
        "small": ow.Primitive(P.INTEGER, 7),
    }


def test_long_strings_use_javas_big_string_form() -> None:
    msg = Message()
    msg.set_string_property("short", "é" * 8190)
    msg.set_string_property("long", "é" * 8191)
    msg.set_string_property("astral", "😀" * 4095)  # 8190 UTF-16 units
    msg.set_string_property("astral_long", "😀" * 4096)
    props = ow.decode_primitive_map(_wire(msg).marshalled_properties or b"")
    assert props is not None
    assert {k: v.type for k, v in props.items()} == {
        "short": P.STRING,
        "long": P.BIG_STRING,
        "astral": P.STRING,
        "astral_long": P.BIG_STRING,
    }
    assert _jms(_wire(msg))._properties == msg._properties


@pytest.mark.parametrize(
    "item",
    [
        ow.Primitive(P.CHAR, "x"),
        ow.Primitive(P.BYTE_ARRAY, b"x"),
        ow.Primitive(P.MAP, {}),
        ow.Primitive(P.LIST, []),
    ],
)
def test_properties_a_jms_message_cannot_hold_are_refused(item: ow.Primitive) -> None:
    with pytest.raises(MessageFormatException, match="cannot hold"):
        _jms(_ow(marshalled_properties=_props(bad=item)))


def test_a_jmsx_property_of_the_wrong_type_is_refused() -> None:
    with pytest.raises(MessageFormatException, match="JMSXAppID"):
        _jms(_ow(marshalled_properties=_props(JMSXAppID=ow.Primitive(P.INTEGER, 1))))


def test_a_string_with_an_unpaired_surrogate_is_refused() -> None:
    with pytest.raises(MessageFormatException, match="surrogate"):
        _jms(_ow(marshalled_properties=_props(s=ow.Primitive(P.STRING, "a\ud800"))))
    with pytest.raises(MessageFormatException, match="surrogate"):
        _jms(_ow(ow.ActiveMQTextMessage, content=ow.encode_text_body("\udc00")))


_VALUES: dict[T, st.SearchStrategy[object]] = {
    T.BOOLEAN: st.booleans(),
    T.BYTE: st.integers(-(2**7), 2**7 - 1),
    T.SHORT: st.integers(-(2**15), 2**15 - 1),
    T.INT: st.integers(-(2**31), 2**31 - 1),
    T.LONG: st.integers(-(2**63), 2**63 - 1),
    T.FLOAT: st.floats(width=32, allow_nan=False),
    T.DOUBLE: st.floats(allow_nan=False),
    T.STRING: st.text(st.characters(blacklist_categories=("Cs",))),
    T.NULL: st.none(),
}
_BODY_VALUES = {
    **_VALUES,
    T.CHAR: st.characters(max_codepoint=0xFFFF, blacklist_categories=("Cs",)),
    T.BYTES: st.binary(),
}


def _typed(values: dict[T, st.SearchStrategy[object]]) -> st.SearchStrategy[tuple[T, object]]:
    return st.sampled_from(sorted(values)).flatmap(lambda tag: values[tag].map(lambda v: (tag, v)))


_NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,20}", fullmatch=True).filter(
    lambda n: (
        not n.startswith("JMSX")
        and n.upper()
        not in {
            "NOT",
            "AND",
            "OR",
            "IN",
            "IS",
            "LIKE",
            "NULL",
            "TRUE",
            "FALSE",
            "BETWEEN",
            "ESCAPE",
        }
    )
)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(_NAMES, _typed(_VALUES), max_size=12))
def test_typed_properties_round_trip(entries: dict[str, tuple[T, object]]) -> None:
    msg = Message()
    for name, (tag, value) in entries.items():
        msg._store_property(name, tag, value)  # type: ignore[arg-type]
    back = _jms(_wire(msg))
    assert back._property_types == msg._property_types
    assert back._properties == msg._properties


# --- bodies ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text", ["", "plain", "h\u00e9llo \U0001f600 \x00 end", "x" * 100_000, None]
)
def test_text_bodies_round_trip(text: str | None) -> None:
    wire = _wire(TextMessage(text))
    assert type(wire) is ow.ActiveMQTextMessage
    assert (wire.content is None) == (text is None)
    got = _jms(wire)
    assert isinstance(got, TextMessage)
    assert got.text == text


@pytest.mark.parametrize("body", [b"", b"\x00\x01\xff", bytes(range(256)) * 100])
def test_bytes_bodies_round_trip(body: bytes) -> None:
    msg = BytesMessage()
    msg.write_bytes(body)
    wire = _wire(msg)
    assert type(wire) is ow.ActiveMQBytesMessage
    assert wire.content == (body or None)
    got = _jms(wire)
    assert isinstance(got, BytesMessage)
    assert bytes(got._buffer) == body


def test_map_body_with_every_value_type_round_trips() -> None:
    msg = MapMessage()
    msg.set_boolean("b", False)
    msg.set_byte("y", 1)
    msg.set_short("s", 2)
    msg.set_char("c", "é")
    msg.set_int("i", 3)
    msg.set_long("l", 4)
    msg.set_float("f", 0.25)
    msg.set_double("d", 0.2)
    msg.set_string("t", "😀")
    msg.set_bytes("raw", b"\x00\xff")
    msg.set_string("nothing", None)
    wire = _wire(msg)
    assert type(wire) is ow.ActiveMQMapMessage
    entries = ow.decode_primitive_map(wire.content or b"")
    assert entries is not None
    assert {k: v.type for k, v in entries.items()} == {
        "b": P.BOOLEAN,
        "y": P.BYTE,
        "s": P.SHORT,
        "c": P.CHAR,
        "i": P.INTEGER,
        "l": P.LONG,
        "f": P.FLOAT,
        "d": P.DOUBLE,
        "t": P.STRING,
        "raw": P.BYTE_ARRAY,
        "nothing": P.NULL,
    }
    got = _jms(wire)
    assert isinstance(got, MapMessage)
    assert got._map == msg._map


def test_a_big_map_round_trips() -> None:
    msg = MapMessage()
    for i in range(20_000):
        msg.set_long(f"key{i}", i * 7)
    msg.set_string("huge", "y" * 70_000)
    got = _jms(_wire(msg))
    assert isinstance(got, MapMessage)
    assert got._map == msg._map


def test_empty_map_and_stream_bodies_have_no_content_as_java_sends_them() -> None:
    for msg in (MapMessage(), StreamMessage()):
        wire = _wire(msg)
        assert wire.content is None
        got = _jms(wire)
        assert type(got) is type(msg)
        assert not (got._map if isinstance(got, MapMessage) else getattr(got, "_items", None))


def test_stream_body_with_every_value_type_round_trips() -> None:
    msg = StreamMessage()
    msg.write_boolean(True)
    msg.write_byte(-1)
    msg.write_short(-2)
    msg.write_char("Z")
    msg.write_int(-3)
    msg.write_long(-4)
    msg.write_float(1.5)
    msg.write_double(-0.5)
    msg.write_string("s\U0001f600")
    msg.write_bytes(b"\x01\x02")
    msg.write_object(None)
    wire = _wire(msg)
    assert type(wire) is ow.ActiveMQStreamMessage
    assert [p.type for p in ow.decode_primitive_stream(wire.content or b"")] == [
        P.BOOLEAN,
        P.BYTE,
        P.SHORT,
        P.CHAR,
        P.INTEGER,
        P.LONG,
        P.FLOAT,
        P.DOUBLE,
        P.STRING,
        P.BYTE_ARRAY,
        P.NULL,
    ]
    got = _jms(wire)
    assert isinstance(got, StreamMessage)
    assert got._items == msg._items


@settings(max_examples=40, deadline=None)
@given(st.lists(_typed(_BODY_VALUES), max_size=20))
def test_stream_and_map_bodies_round_trip(values: list[tuple[T, object]]) -> None:
    stream = StreamMessage()
    stream._items = list(values)  # type: ignore[arg-type]
    got = _jms(_wire(stream))
    assert isinstance(got, StreamMessage)
    assert got._items == stream._items
    mapped = MapMessage()
    mapped._map = {f"k{i}": v for i, v in enumerate(values)}  # type: ignore[misc]
    got_map = _jms(_wire(mapped))
    assert isinstance(got_map, MapMessage)
    assert got_map._map == mapped._map


@pytest.mark.parametrize(
    "item", [ow.Primitive(P.MAP, {}), ow.Primitive(P.LIST, [ow.Primitive(P.INTEGER, 1)])]
)
def test_nested_maps_and_lists_in_bodies_are_refused(item: ow.Primitive) -> None:
    with pytest.raises(MessageFormatException, match="cannot hold"):
        _jms(_ow(ow.ActiveMQMapMessage, content=ow.encode_primitive_map({"n": item})))
    with pytest.raises(MessageFormatException, match="cannot hold"):
        _jms(_ow(ow.ActiveMQStreamMessage, content=ow.encode_primitive_stream([item])))


def test_object_bodies_keep_their_octets_both_ways() -> None:
    java_serialized = b"\xac\xed\x00\x05t\x00\x02hi"
    got = _jms(_ow(ow.ActiveMQObjectMessage, content=java_serialized))
    assert isinstance(got, ObjectMessage)
    assert got._payload == java_serialized
    with pytest.raises(MessageFormatException):
        got.object  # noqa: B018 -- a Java object is not a pickle: reading it says so
    assert _wire(got).content == java_serialized
    python = ObjectMessage({"k": [1, 2]})
    wire = _wire(python)
    assert type(wire) is ow.ActiveMQObjectMessage
    assert wire.content == python._payload
    empty = _jms(_ow(ow.ActiveMQObjectMessage))
    assert isinstance(empty, ObjectMessage) and empty.object is None


def test_a_plain_message_has_no_body() -> None:
    wire = _wire(Message())
    assert type(wire) is ow.ActiveMQMessage and wire.content is None
    assert type(_jms(wire)) is Message


@pytest.mark.parametrize(
    ("cls", "body", "check"),
    [
        (ow.ActiveMQTextMessage, ow.encode_text_body("zip " * 5000), lambda g: g.text),
        (ow.ActiveMQBytesMessage, b"\x07" * 20000, lambda g: bytes(g._buffer)),
    ],
)
def test_compressed_bodies_are_inflated(
    cls: type[ow.Message], body: bytes, check: Callable[[Message], object]
) -> None:
    wire = _ow(cls, content=ow.compress_content(cls, body), compressed=True)
    got = _jms(wire)
    expected = "zip " * 5000 if cls is ow.ActiveMQTextMessage else body
    assert check(got) == expected


def test_a_compressed_body_over_the_limit_is_refused() -> None:
    wire = _ow(
        ow.ActiveMQTextMessage,
        content=ow.compress_content(ow.ActiveMQTextMessage, b"\x00" * 100_000),
        compressed=True,
    )
    with pytest.raises(ow.OpenWireError, match="1000"):
        m.message_from_openwire(wire, now_ms=NOW, resolve=m.jms_destination, max_body_size=1000)


def test_blob_messages_are_refused() -> None:
    with pytest.raises(MessageFormatException, match="BlobMessage"):
        _jms(_ow(ow.ActiveMQBlobMessage, remote_blob_url="http://x/y"))


# --- against ActiveMQ's own client -----------------------------------------------------------


@pytest.fixture(scope="module")
def java(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The command that runs ``OpenWireMapping.java``, compiled for this module."""
    return mapping_program(tmp_path_factory.mktemp("openwire-mapping"))


@pytest.fixture(scope="module")
def produced(java: list[str]) -> dict[str, ow.Message]:
    """The messages Java's producer side marshals, by label."""
    return java_produced(java)


def test_java_producers_messages_map_to_the_expected_jms_values(
    produced: dict[str, ow.Message],
) -> None:
    jms = {
        label: m.message_from_openwire(c, now_ms=NOW + 7, resolve=m.jms_destination)
        for label, c in produced.items()
    }
    text = jms["text"]
    assert isinstance(text, TextMessage)
    assert text.text == "h\u00e9llo \U0001f600 \x00 end"
    assert text.jms_message_id == "ID:javahost-40000-1764000000000-1:1:2:3:1"
    assert text.jms_destination == Queue("orders")
    assert text.jms_reply_to == TemporaryQueue("ID:javahost-40000-1764000000000-1:1:1")
    assert (text.jms_correlation_id, text.jms_type, text.jms_priority) == ("corr-1", "order", 7)
    assert (text.jms_timestamp, text.jms_expiration) == (NOW, NOW + 60000)
    assert text.jms_delivery_mode == 2 and text.jms_delivery_time == NOW + 7
    expected = {
        "aBoolean": (T.BOOLEAN, True),
        "aByte": (T.BYTE, -128),
        "aShort": (T.SHORT, -32768),
        "anInt": (T.INT, -(2**31)),
        "aLong": (T.LONG, 2**63 - 1),
        "aFloat": (T.FLOAT, 3.4028234663852886e38),
        "aDouble": (T.DOUBLE, -2.5e-300),
        "aString": (T.STRING, "caf\u00e9 \x00 \U0001f600"),
        "anEmptyString": (T.STRING, ""),
        "aNull": (T.NULL, None),
        "aLongString": (T.STRING, "\u00e9" * 9000),
        "JMSXGroupID": (T.STRING, "group-a"),
        "JMSXGroupSeq": (T.INT, 7),
        "JMSXUserID": (T.STRING, "alice"),
    }
    assert {k: (text._property_types[k], v) for k, v in text._properties.items()} == expected
    assert text.get_object_property("aLong") == 2**63 - 1
    null_text = jms["text-null"]
    assert isinstance(null_text, TextMessage) and null_text.text is None
    assert null_text.jms_delivery_mode == 1 and null_text.jms_priority == 0
    assert null_text.jms_destination == Topic("prices")
    bytes_msg = jms["bytes"]
    assert isinstance(bytes_msg, BytesMessage)
    assert bytes(bytes_msg._buffer) == b"\x00\x01\x02\xff\x00\x03x\xc3\xa9"
    assert bytes_msg.jms_delivery_time == NOW + 7 + 5000
    assert m.SCHEDULED_DELAY not in bytes_msg._properties
    assert isinstance(jms["bytes-empty"], BytesMessage) and not jms["bytes-empty"]._buffer
    map_msg = jms["map"]
    assert isinstance(map_msg, MapMessage)
    assert map_msg._map == {
        "bool": (T.BOOLEAN, True),
        "byte": (T.BYTE, 127),
        "short": (T.SHORT, 32767),
        "char": (T.CHAR, "\u00e9"),
        "int": (T.INT, 2**31 - 1),
        "long": (T.LONG, -(2**63)),
        "float": (T.FLOAT, 0.10000000149011612),
        "double": (T.DOUBLE, 0.1),
        "string": (T.STRING, "\U0001f600"),
        "bytes": (T.BYTES, b"\x09\x08\x07"),
        "emptyBytes": (T.BYTES, b""),
        "null": (T.NULL, None),
    }
    big = jms["map-big"]
    assert isinstance(big, MapMessage)
    assert len(big._map) == 5001 and big._map["k4999"] == (T.INT, 4999)
    assert big._map["huge"] == (T.STRING, "x" * 70000)
    stream = jms["stream"]
    assert isinstance(stream, StreamMessage)
    assert stream._items == [
        (T.BOOLEAN, False),
        (T.BYTE, -1),
        (T.SHORT, -2),
        (T.CHAR, "Z"),
        (T.INT, -3),
        (T.LONG, -4),
        (T.FLOAT, 0.25),
        (T.DOUBLE, -0.5),
        (T.STRING, "str\u00e9"),
        (T.BYTES, b"\x01\x02"),
        (T.NULL, None),
    ]
    obj = jms["object"]
    assert isinstance(obj, ObjectMessage)
    assert obj._payload is not None and obj._payload.startswith(b"\xac\xed\x00\x05")
    assert b"java.util.ArrayList" in obj._payload
    null_obj = jms["object-null"]
    assert isinstance(null_obj, ObjectMessage) and null_obj._payload is None
    plain = jms["plain"]
    assert type(plain) is Message
    assert plain._properties == {"only": "headers"}
    assert (plain.jms_priority, plain.jms_expiration) == (9, NOW + 1000)
    zipped = jms["text-compressed"]
    assert isinstance(zipped, TextMessage) and zipped.text == "compressed " + "text " * 500
    zipped_map = jms["map-compressed"]
    assert isinstance(zipped_map, MapMessage)
    assert zipped_map._map == {"k": (T.STRING, "v " * 500)}


def test_java_reads_back_what_a_java_producer_set_after_the_trip_through_ternmq(
    java: list[str], produced: dict[str, ow.Message]
) -> None:
    """Java producer -> ternmq's JMS message -> Java consumer: every getter answers the same
    as on the producer's own message (the scheduled delay excepted: ternmq turns it into the
    delivery time)."""
    again = {}
    for label, command in produced.items():
        jms = m.message_from_openwire(command, now_ms=NOW, resolve=m.jms_destination)
        assert jms._message_id is not None and jms._destination is not None
        again[label] = m.openwire_message(
            jms,
            destination=m.openwire_destination(jms._destination),
            message_id=m.message_id_of(jms._message_id, 1),
            redelivery_counter=0,
        )
    direct = java_reads(java, dict(produced))
    through = java_reads(java, again)
    direct["bytes"].pop("prop:" + m.SCHEDULED_DELAY)
    assert through == direct
    assert direct["object"]["body"][0] == "ArrayList"
    assert direct["text"]["prop:aLong"][0] == "Long"


def test_java_consumer_reads_a_python_producers_message(java: list[str]) -> None:
    msg = TextMessage("from python \U0001f600")
    _full_headers(msg)
    msg._delivery_mode = 2
    msg.set_boolean_property("pb", True)
    msg.set_byte_property("py", -3)
    msg.set_short_property("ps", 300)
    msg.set_int_property("pi", 70000)
    msg.set_long_property("pl", 1)
    msg.set_float_property("pf", 1.5)
    msg.set_double_property("pd", 2.5)
    msg.set_string_property("pt", "é")
    msg.set_object_property("pn", None)
    mapped = MapMessage()
    mapped.set_char("c", "x")
    mapped.set_bytes("raw", b"\x01")
    mapped.set_long("n", 2)
    stream = StreamMessage()
    stream.write_short(5)
    stream.write_string("s")
    body = BytesMessage()
    body.write_bytes(b"\x00\xfe")
    messages = {
        "text": msg,
        "map": mapped,
        "stream": stream,
        "bytes": body,
        "obj": ObjectMessage(1),
    }
    commands = {
        label: _wire(one, redelivery_counter=2 if label == "text" else 0)
        for label, one in messages.items()
    }
    reading = java_reads(java, commands)
    got = reading["text"]
    assert {k: text_of(got, k) for k in got if not k.startswith("prop:")} == {
        "class": ("String", "ActiveMQTextMessage"),
        "JMSMessageID": ("String", "ID:py-conn-7"),
        "JMSDestination": ("ActiveMQTopic", "topic://prices"),
        "JMSReplyTo": ("ActiveMQTempQueue", "temp-queue://ID:py-conn:tmp1"),
        "JMSCorrelationID": ("String", "corr-9"),
        "JMSType": ("String", "quote"),
        "JMSPriority": ("Integer", "8"),
        "JMSExpiration": ("Long", str(NOW + 5000)),
        "JMSTimestamp": ("Long", str(NOW - 10)),
        "JMSDeliveryMode": ("Integer", "2"),
        "JMSRedelivered": ("Boolean", "true"),
        "JMSXDeliveryCount": ("Integer", "3"),
        "JMSXGroupID": ("String", "g-1"),
        "JMSXGroupSeq": ("Integer", "12"),
        "JMSXUserID": ("String", "alice"),
        "body": ("String", "from python \U0001f600"),
    }
    props = {k[5:]: text_of(got, k) for k in got if k.startswith("prop:")}
    assert props == {
        "JMSXAppID": ("String", "app"),
        "JMSXDeliveryCount": ("Integer", "3"),
        "JMSXGroupID": ("String", "g-1"),
        "JMSXGroupSeq": ("Integer", "12"),
        "JMSXUserID": ("String", "alice"),
        "pb": ("Boolean", "true"),
        "py": ("Byte", "-3"),
        "ps": ("Short", "300"),
        "pi": ("Integer", "70000"),
        "pl": ("Long", "1"),
        "pf": ("Float", "1.5"),
        "pd": ("Double", "2.5"),
        "pt": ("String", "é"),
        "pn": ("null", None),
    }
    assert reading["map"]["map:c"] == ("Character", "78")
    assert reading["map"]["map:raw"] == ("byte[]", "01")
    assert text_of(reading["map"], "map:n") == ("Long", "2")
    assert text_of(reading["stream"], "stream:0") == ("Short", "5")
    assert text_of(reading["stream"], "stream:1") == ("String", "s")
    assert reading["bytes"]["body"] == ("byte[]", "00fe")
    assert text_of(reading["bytes"], "JMSRedelivered") == ("Boolean", "false")
    # A pickle is not a Java object: Java's getObject() fails, as the docs say.
    assert reading["obj"]["body"][0].startswith("!")


# --- hostile input -----------------------------------------------------------------------------

_BODY_TYPES = (
    ow.ActiveMQMessage,
    ow.ActiveMQTextMessage,
    ow.ActiveMQBytesMessage,
    ow.ActiveMQMapMessage,
    ow.ActiveMQStreamMessage,
    ow.ActiveMQObjectMessage,
)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(_BODY_TYPES),
    st.binary(max_size=64),
    st.one_of(st.none(), st.binary(max_size=64)),
    st.booleans(),
)
def test_arbitrary_body_and_property_octets_raise_only_protocol_or_jms_errors(
    cls: type[ow.Message], content: bytes, props: bytes | None, compressed: bool
) -> None:
    cmd = _ow(cls, content=content, marshalled_properties=props, compressed=compressed)
    try:
        msg = m.message_from_openwire(cmd, now_ms=NOW, resolve=m.jms_destination, max_body_size=256)
    except (ow.OpenWireError, MessageFormatException):
        return
    # What was accepted maps back to OpenWire without error.
    m.openwire_message(
        msg, destination=QUEUE, message_id=m.message_id_of("ID:x-1", 1), redelivery_counter=0
    )


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=30), min_size=1, max_size=20, unique=True))
def test_any_message_id_text_shows_unchanged_and_keeps_its_own_producer_key(
    tails: list[str],
) -> None:
    keys = set()
    for tail in tails:
        text = "ID:" + tail
        mid = m.message_id_of(text, 0)
        assert m.message_id_text(mid) == text
        assert mid.producer_id is not None
        keys.add((m.producer_id_text(mid.producer_id), mid.producer_sequence_id))
    assert len(keys) == len(tails)
