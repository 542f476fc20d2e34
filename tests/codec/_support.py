"""Strategies and comparisons shared by the codec tests.

Messages are built through the public API of the model (so the codec sees exactly what the
model stores), with header values, property values and body values at the edges of their
Java ranges.
"""

from __future__ import annotations

import struct
from typing import Any

from hypothesis import strategies as st

from ternmq.destination import Destination, Queue, TemporaryQueue, TemporaryTopic, Topic
from ternmq.message import (
    BytesMessage,
    MapMessage,
    Message,
    ObjectMessage,
    StreamMessage,
    TextMessage,
)
from ternmq.message._names import KEYWORDS
from ternmq.message._types import T

ALL_CLASSES: list[type[Message]] = [
    Message,
    TextMessage,
    BytesMessage,
    MapMessage,
    StreamMessage,
    ObjectMessage,
]

LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
RANGES = {
    T.BYTE: (-(2**7), 2**7 - 1),
    T.SHORT: (-(2**15), 2**15 - 1),
    T.INT: (-(2**31), 2**31 - 1),
    T.LONG: (LONG_MIN, LONG_MAX),
}


def edge_ints(low: int, high: int) -> st.SearchStrategy[int]:
    """Integers in [low, high], often exactly at an edge."""
    return st.one_of(
        st.sampled_from([low, high, 0, -1, 1, low + 1, high - 1]), st.integers(low, high)
    )


# Text: any well-formed Unicode (no lone surrogates: the model refuses them, A-33), with
# U+0000, the BMP's last character and characters outside the BMP made likely.
texts = st.text(
    alphabet=st.one_of(
        st.characters(exclude_categories=["Cs"]),
        st.sampled_from(["\x00", "\uffff", "\U0001f600", "\U0010ffff", "é", "'", '"']),
    ),
    max_size=40,
)
doubles = st.one_of(
    st.sampled_from(
        [0.0, -0.0, float("inf"), float("-inf"), float("nan"), 5e-324, 1.7976931348623157e308]
    ),
    st.floats(allow_nan=True, allow_infinity=True),
)
floats32 = st.one_of(
    st.sampled_from(
        [0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1.1, 3.4028234663852886e38]
    ),
    st.floats(width=32, allow_nan=True, allow_infinity=True),
)
chars = st.one_of(
    st.sampled_from(["\x00", "\uffff", "a", "\ud7ff", "\ue000"]),
    st.characters(max_codepoint=0xFFFF, exclude_categories=["Cs"]),
)
octets = st.binary(max_size=64)

_NAME_RE = r"[A-Za-z_$][A-Za-z0-9_$]{0,12}"
property_names = st.one_of(
    st.from_regex(_NAME_RE, fullmatch=True),
    st.sampled_from(["ñandú", "x\u00e9", "$", "_", "JMS_TernMQ_x", "a" * 200]),
).filter(lambda n: n.upper() not in KEYWORDS and not n.startswith("JMSX"))

# (setter name, strategy) for each property type; a None string is a null property.
PROPERTY_SETTERS: dict[str, st.SearchStrategy[Any]] = {
    "set_boolean_property": st.booleans(),
    "set_byte_property": edge_ints(*RANGES[T.BYTE]),
    "set_short_property": edge_ints(*RANGES[T.SHORT]),
    "set_int_property": edge_ints(*RANGES[T.INT]),
    "set_long_property": edge_ints(*RANGES[T.LONG]),
    "set_float_property": floats32,
    "set_double_property": doubles,
    "set_string_property": st.one_of(st.none(), texts),
}

# (writer name, strategy) for StreamMessage fields and (setter name, strategy) for MapMessage.
STREAM_WRITERS: dict[str, st.SearchStrategy[Any]] = {
    "write_boolean": st.booleans(),
    "write_byte": edge_ints(*RANGES[T.BYTE]),
    "write_short": edge_ints(*RANGES[T.SHORT]),
    "write_char": chars,
    "write_int": edge_ints(*RANGES[T.INT]),
    "write_long": edge_ints(*RANGES[T.LONG]),
    "write_float": floats32,
    "write_double": doubles,
    "write_string": st.one_of(st.none(), texts),
    "write_bytes": st.one_of(st.none(), octets),
    "write_object": st.one_of(
        st.none(), st.booleans(), edge_ints(LONG_MIN, LONG_MAX), texts, octets
    ),
}
MAP_SETTERS: dict[str, st.SearchStrategy[Any]] = {
    "set_boolean": STREAM_WRITERS["write_boolean"],
    "set_byte": STREAM_WRITERS["write_byte"],
    "set_short": STREAM_WRITERS["write_short"],
    "set_char": chars,
    "set_int": STREAM_WRITERS["write_int"],
    "set_long": STREAM_WRITERS["write_long"],
    "set_float": floats32,
    "set_double": doubles,
    "set_string": st.one_of(st.none(), texts),
    "set_bytes": st.one_of(st.none(), octets),
    "set_object": STREAM_WRITERS["write_object"],
}

_DEST_NAME = st.from_regex(r"[A-Za-z0-9._:-]{1,20}(/[A-Za-z0-9._-]{1,8})?", fullmatch=True)
destinations: st.SearchStrategy[Destination | None] = st.one_of(
    st.none(),
    st.builds(Queue, _DEST_NAME),
    st.builds(Topic, _DEST_NAME),
    st.builds(TemporaryQueue, _DEST_NAME),
    st.builds(TemporaryTopic, _DEST_NAME),
)


@st.composite
def headers(draw: st.DrawFn, msg: Message) -> Message:
    """Set every header of ``msg`` through its public setters."""
    msg.jms_message_id = draw(st.one_of(st.none(), st.just(""), texts.map(lambda s: "ID:" + s)))
    msg.jms_timestamp = draw(edge_ints(LONG_MIN, LONG_MAX))
    cid = draw(st.one_of(st.none(), texts, octets))
    if isinstance(cid, bytes):
        msg.set_jms_correlation_id_as_bytes(cid)
    else:
        msg.jms_correlation_id = cid
    msg.jms_reply_to = draw(destinations)
    msg.jms_destination = draw(destinations)
    msg.jms_delivery_mode = draw(st.sampled_from([1, 2]))
    msg.jms_redelivered = draw(st.booleans())
    msg.jms_type = draw(st.one_of(st.none(), texts))
    msg.jms_expiration = draw(edge_ints(LONG_MIN, LONG_MAX))
    msg.jms_delivery_time = draw(edge_ints(LONG_MIN, LONG_MAX))
    msg.jms_priority = draw(st.integers(0, 9))
    return msg


@st.composite
def properties(draw: st.DrawFn, msg: Message) -> Message:
    """Set up to 8 properties of random types (values at their range edges)."""
    for name in draw(st.lists(property_names, max_size=8, unique=True)):
        setter = draw(st.sampled_from(sorted(PROPERTY_SETTERS)))
        getattr(msg, setter)(name, draw(PROPERTY_SETTERS[setter]))
    return msg


@st.composite
def bodies(draw: st.DrawFn, msg: Message) -> Message:
    """Fill the body of ``msg`` according to its class."""
    if isinstance(msg, TextMessage):
        msg.text = draw(st.one_of(st.none(), st.just(""), texts))
    elif isinstance(msg, BytesMessage):
        for chunk in draw(st.lists(octets, max_size=3)):
            msg.write_bytes(chunk)
    elif isinstance(msg, MapMessage):
        for name in draw(st.lists(st.one_of(texts, property_names).filter(bool), max_size=8)):
            setter = draw(st.sampled_from(sorted(MAP_SETTERS)))
            getattr(msg, setter)(name, draw(MAP_SETTERS[setter]))
    elif isinstance(msg, StreamMessage):
        for writer in draw(st.lists(st.sampled_from(sorted(STREAM_WRITERS)), max_size=10)):
            getattr(msg, writer)(draw(STREAM_WRITERS[writer]))
    elif isinstance(msg, ObjectMessage):
        choice = draw(st.sampled_from(["none", "pickled", "opaque"]))
        if choice == "pickled":
            msg.object = draw(
                st.one_of(texts, st.lists(st.integers()), st.dictionaries(texts, doubles))
            )
        elif choice == "opaque":
            # BODY-38: a body written by a non-Python client is carried as opaque octets.
            msg._payload = draw(octets)
    return msg


@st.composite
def messages(draw: st.DrawFn, classes: list[type[Message]] = ALL_CLASSES) -> Message:
    """A message of a random class with random headers, properties and body."""
    cls = draw(st.sampled_from(classes))
    msg = cls()
    draw(headers(msg))
    draw(properties(msg))
    draw(bodies(msg))
    if draw(st.booleans()):
        msg._freeze()  # a received message is sent on (e.g. forwarded): modes are not encoded
    return msg


# --------------------------------------------------------------------------- comparisons


def same_value(a: object, b: object) -> bool:
    """Identical values: same Python type, and floats equal bit for bit (NaN, -0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and isinstance(b, float):
        return struct.pack("<d", a) == struct.pack("<d", b)
    if isinstance(a, tuple | list) and isinstance(b, tuple | list):
        return len(a) == len(b) and all(map(same_value, a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, Destination):
        return a == b and str(a) == str(b)
    return a == b


# Slots that describe the message's state on this side rather than its content.
STATE_SLOTS = {
    "_read_only_properties",
    "_read_only_body",
    "_ack_hook",
    "_pos",
    "_partial",
    "_trusted_modules",
}


def all_slots(cls: type) -> list[str]:
    """Every ``__slots__`` entry along the MRO of ``cls``."""
    out: list[str] = []
    for klass in cls.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        out.extend([slots] if isinstance(slots, str) else slots)
    return [s for s in out if s not in ("__weakref__", "__dict__")]


def content_differences(sent: Message, received: Message) -> list[str]:
    """The content slots whose values differ between two messages (empty when identical)."""
    return [
        slot
        for slot in all_slots(type(sent))
        if slot not in STATE_SLOTS and not same_value(getattr(sent, slot), getattr(received, slot))
    ]


def assert_received_state(msg: Message) -> None:
    """The state ``Message._freeze()`` leaves (BODY-05, BODY-06, PROP-07)."""
    assert msg._read_only_properties is True
    assert msg._read_only_body is True
    assert msg._ack_hook is None
    if isinstance(msg, BytesMessage | StreamMessage):
        assert msg._pos == 0
    if isinstance(msg, StreamMessage):
        assert msg._partial is None
    if isinstance(msg, ObjectMessage):
        assert msg._trusted_modules is None
