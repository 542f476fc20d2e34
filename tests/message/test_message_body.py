"""Rules common to all bodies, TextMessage and get_body (catalog BODY-01 … BODY-14,
BODY-39 … BODY-44, vectors B-19 … B-27)."""

from __future__ import annotations

import collections.abc
from collections.abc import Callable
from typing import Any

import pytest

from ternmq.destination import Queue
from ternmq.errors import (
    MessageFormatException,
    MessageNotReadableException,
    MessageNotWriteableException,
)
from ternmq.message import (
    BytesMessage,
    MapMessage,
    Message,
    ObjectMessage,
    StreamMessage,
    TextMessage,
)

ALL_TYPES = [Message, TextMessage, BytesMessage, MapMessage, StreamMessage, ObjectMessage]


def filled(cls: type[Message]) -> Message:
    """A message of each class with a non-empty body, still writable."""
    m = cls()
    if isinstance(m, TextMessage):
        m.text = "hello"
    elif isinstance(m, BytesMessage):
        m.write_bytes(b"xy")
    elif isinstance(m, MapMessage):
        m.set_int("a", 1)
    elif isinstance(m, StreamMessage):
        m.write_int(1)
    elif isinstance(m, ObjectMessage):
        m.object = [1]
    return m


def body_of(m: Message) -> object:
    if isinstance(m, TextMessage):
        return m.text
    if isinstance(m, BytesMessage):
        m.reset()
        return m.read_bytes(100)
    if isinstance(m, MapMessage):
        return {n: m.get_object(n) for n in m.get_map_names()}
    if isinstance(m, StreamMessage):
        m.reset()
        out = []
        while True:
            try:
                out.append(m.read_object())
            except Exception:
                return out
    if isinstance(m, ObjectMessage):
        return m.object
    return None


def test_body_01_six_classes_and_constructors() -> None:
    """BODY-01: the six classes, created fresh and writable with their initial bodies."""
    assert TextMessage().text is None
    assert TextMessage("t").text == "t"
    assert ObjectMessage().object is None
    assert ObjectMessage({"k": 1}).object == {"k": 1}
    assert MapMessage().get_map_names() == set()
    b = BytesMessage()
    b.reset()
    assert b.body_length == 0
    s = StreamMessage()
    s.reset()
    for cls in ALL_TYPES:
        m = cls()
        assert m._read_only_body is False and m._read_only_properties is False
        assert m._ack_hook is None


@pytest.mark.parametrize("cls", ALL_TYPES)
def test_body_02_copy_keeps_class_body_and_mode(cls: type[Message]) -> None:
    """BODY-02, BODY-12 (message-level part): _copy keeps the class, the body and the mode;
    changes to the original after the copy (the 'send') do not reach it."""
    m = filled(cls)
    m.set_string_property("p", "v")
    dup = m._copy()
    assert type(dup) is cls
    assert dup._read_only_body == m._read_only_body
    m.clear_body()
    m.clear_properties()
    assert dup.get_string_property("p") == "v"
    assert body_of(dup) == body_of(filled(cls))
    if cls is Message:
        assert body_of(dup) is None


@pytest.mark.parametrize("cls", ALL_TYPES)
def test_body_02_copy_names_every_slot(cls: type[Message]) -> None:
    """BODY-02, BODY-12 (message-level part): ``_copy`` (each class naming its own fields)
    sets every slot along the MRO to an equal value, shares no mutable container with the
    original, and leaves the acknowledgement hook unset."""
    m = filled(cls)
    m.set_string_property("p", "v")
    m._ack_hook = lambda: None
    dup = m._copy()
    slots = [s for klass in cls.__mro__ for s in klass.__dict__.get("__slots__", ())]
    assert "_properties" in slots and len(slots) == len(set(slots))
    for slot in slots:
        if slot == "_ack_hook":
            assert dup._ack_hook is None
            continue
        value = getattr(m, slot)
        assert getattr(dup, slot) == value, slot
        if isinstance(value, dict | list | bytearray):
            assert getattr(dup, slot) is not value, slot


@pytest.mark.parametrize("cls", ALL_TYPES)
def test_body_03_freeze_is_the_received_state(cls: type[Message]) -> None:
    """BODY-03, BODY-10, BODY-11 (message-level part): _freeze gives the received state used
    for any message the client hands out, whatever created it; bytes/stream bodies are reset."""
    m = filled(cls)
    m._freeze()
    assert m._read_only_body and m._read_only_properties
    if isinstance(m, BytesMessage):
        assert m.read_byte() == ord("x")
    if isinstance(m, StreamMessage):
        assert m.read_int() == 1
    dup = m._copy()
    assert dup._read_only_body and dup._read_only_properties


@pytest.mark.parametrize("cls", ALL_TYPES)
def test_body_04_clear_body(cls: type[Message]) -> None:
    """BODY-04: clear_body gives the fresh empty writable body; headers and properties stay;
    clear_properties never touches the body."""
    m = filled(cls)
    m.jms_type = "kind"
    m.set_int_property("p", 1)
    m.clear_properties()
    assert body_of(m) == body_of(filled(cls))
    m = filled(cls)
    m.jms_type = "kind"
    m.set_int_property("p", 1)
    m._freeze()
    m.clear_body()
    assert m.jms_type == "kind" and m.get_int_property("p") == 1
    assert m._read_only_body is False
    assert body_of(m) == body_of(cls())
    assert cls is StreamMessage or m.get_body(object) is None


def test_body_05_vector_b26() -> None:
    """BODY-05, BODY-04, B-26: received TextMessage."""
    m = TextMessage("orig")
    m._freeze()
    with pytest.raises(MessageNotWriteableException):
        m.text = "x"
    m.clear_properties()
    with pytest.raises(MessageNotWriteableException):
        m.text = "x"
    m.clear_body()
    m.text = "x"
    assert m.text == "x"


def test_body_06_vector_b27() -> None:
    """BODY-04, BODY-06, B-27: received BytesMessage cleared is write-only."""
    m = BytesMessage()
    m.write_int(7)
    m._freeze()
    m.clear_body()
    m.write_int(1)
    with pytest.raises(MessageNotReadableException):
        m.read_int()


@pytest.mark.parametrize(
    "cls, write",
    [
        (BytesMessage, lambda m: m.write_int(1)),
        (BytesMessage, lambda m: m.write_utf("x")),
        (BytesMessage, lambda m: m.write_object(1)),
        (BytesMessage, lambda m: m.write_bytes(b"x")),
        (StreamMessage, lambda m: m.write_string("x")),
        (MapMessage, lambda m: m.set_string("k", "x")),
        (TextMessage, lambda m: setattr(m, "text", "x")),
        (ObjectMessage, lambda m: setattr(m, "object", 1)),
    ],
)
def test_body_05_every_writer_is_refused_when_received(
    cls: type[Message], write: Callable[[Any], object]
) -> None:
    """BODY-05: every body-writing call raises MessageNotWriteableException when received."""
    m = filled(cls)
    m._freeze()
    before = body_of(m)
    with pytest.raises(MessageNotWriteableException):
        write(m)
    assert body_of(m) == before


def test_body_07_text_map_object_always_readable() -> None:
    """BODY-07: Text, Map and Object bodies are readable new and received."""
    for cls in (TextMessage, MapMessage, ObjectMessage):
        m = filled(cls)
        assert body_of(m) is not None
        m._freeze()
        assert body_of(m) is not None


def test_body_08_readers_return_independent_values() -> None:
    """BODY-08: get_body(dict) is a new dict; bytes are immutable copies."""
    m = MapMessage()
    m.set_bytes("b", bytearray(b"ab"))
    d = m.get_body(dict)
    assert d is not None
    d["b"] = b"zz"
    d["new"] = 1
    assert m.get_bytes("b") == b"ab" and not m.item_exists("new")
    b = BytesMessage()
    b.write_bytes(b"q")
    got = b.get_body(bytes)
    assert isinstance(got, bytes) and got == b"q"


def test_body_09_none_is_accepted_except_in_bytes_message() -> None:
    """BODY-09, A-28: None for text, object, Map and Stream values; TypeError for
    BytesMessage writes."""
    t = TextMessage("x")
    t.text = None
    assert t.text is None
    o = ObjectMessage(1)
    o.object = None
    assert o.object is None
    mm = MapMessage()
    mm.set_object("o", None)
    mm.set_string("s", None)
    mm.set_bytes("b", None)
    assert [mm.get_object(k) for k in "osb"] == [None, None, None]
    sm = StreamMessage()
    sm.write_object(None)
    sm.write_string(None)
    sm.write_bytes(None)
    sm.reset()
    assert [sm.read_object(), sm.read_object(), sm.read_object()] == [None, None, None]
    bm = BytesMessage()
    for call in (lambda: bm.write_bytes(None), lambda: bm.write_object(None)):
        with pytest.raises(TypeError):
            call()
    with pytest.raises(TypeError):
        bm.write_utf(None)  # type: ignore[arg-type]


def test_body_10_body_12_copy_is_a_snapshot() -> None:
    """BODY-10, BODY-11, BODY-12, BODY-13 (message-level part): the client's snapshot
    (_copy) is independent of later changes to body, headers and properties, and the send
    does not change the original's mode."""
    m = BytesMessage()
    m.write_int(1)
    m.jms_destination = Queue("q")
    snap = m._copy()
    m.write_int(2)
    assert m._read_only_body is False  # still write-only after the "send"
    snap.reset()
    assert snap.body_length == 4
    s = StreamMessage()
    s.write_int(1)
    snap2 = s._copy()
    s.write_int(2)
    assert len(snap2._items) == 1
    mm = MapMessage()
    mm.set_int("a", 1)
    snap3 = mm._copy()
    mm.set_int("a", 2)
    assert snap3.get_int("a") == 1
    assert snap._ack_hook is None


def test_body_14_text_any_unicode() -> None:
    """BODY-14, A-33: any text incl. NUL and astral characters; lone surrogate -> MFE."""
    text = "a\x00b\U0001f600\u2028é"
    m = TextMessage(text)
    assert m.text == text
    m.text = ""
    assert m.text == ""
    with pytest.raises(MessageFormatException):
        m.text = "bad\ud800"
    with pytest.raises(MessageFormatException):
        TextMessage("\udfff")
    with pytest.raises(TypeError):
        m.text = b"bytes"  # type: ignore[assignment]
    assert m.text == ""


# ---------------------------------------------------------------- get_body


def test_body_39_text_vectors_b19_b20() -> None:
    """BODY-39, BODY-40, B-19, B-20."""
    m = TextMessage("hi")
    assert m.get_body(str) == "hi"
    assert m.get_body(object) == "hi"
    with pytest.raises(MessageFormatException):
        m.get_body(bytes)
    assert m.is_body_assignable_to(bytes) is False
    assert m.is_body_assignable_to(str) is True
    empty = TextMessage()
    assert empty.get_body(bytes) is None
    assert empty.is_body_assignable_to(int) is True


def test_body_41_bytes_vector_b21() -> None:
    """BODY-39, BODY-41, A-30, B-21: empty -> None; whole body whatever the position; a
    read-only body is rewound; the mode never changes."""
    assert BytesMessage().get_body(str) is None
    m = BytesMessage()
    m.write_bytes(b"xy")
    assert m.get_body(bytes) == b"xy"  # works write-only …
    assert m._read_only_body is False  # … and stays write-only
    m.write_bytes(b"z")
    m._freeze()
    assert m.read_byte() == ord("x")
    assert m.get_body(bytes) == b"xyz"
    assert m.read_byte() == ord("x")  # position back at start
    with pytest.raises(MessageFormatException):
        m.get_body(str)
    assert m.is_body_assignable_to(object) is True


def test_body_39_map_vector_b22() -> None:
    """BODY-39, B-22: empty map -> None; {'a': 1}; not a str."""
    assert MapMessage().get_body(str) is None
    m = MapMessage()
    m.set_int("a", 1)
    assert m.get_body(dict) == {"a": 1}
    assert m.get_body(collections.abc.Mapping) == {"a": 1}
    assert m.get_body(object) == {"a": 1}
    with pytest.raises(MessageFormatException):
        m.get_body(str)
    assert m.is_body_assignable_to(list) is False


def test_body_42_stream_vector_b23() -> None:
    """BODY-42, B-23: any StreamMessage, also empty."""
    for m in (StreamMessage(), filled(StreamMessage)):
        with pytest.raises(MessageFormatException):
            m.get_body(object)
        assert m.is_body_assignable_to(object) is False


def test_body_40_plain_message_vector_b24() -> None:
    """BODY-39, BODY-40, B-24: a plain Message has no body."""
    m = Message()
    assert m.get_body(int) is None
    assert m.is_body_assignable_to(str) is True
    m.clear_body()  # does nothing
    assert m.get_body(object) is None


def test_body_39_object_message() -> None:
    """BODY-39, BODY-40: isinstance of the deserialized value; None when no object."""
    m = ObjectMessage([1, 2])
    assert m.get_body(list) == [1, 2]
    assert m.get_body(collections.abc.Sequence) == [1, 2]
    with pytest.raises(MessageFormatException):
        m.get_body(dict)
    assert m.is_body_assignable_to(dict) is False
    assert m.is_body_assignable_to(object) is True
    assert ObjectMessage().get_body(int) is None


@pytest.mark.parametrize("cls", ALL_TYPES)
def test_body_43_receive_body_building_blocks(cls: type[Message]) -> None:
    """BODY-43 (message-level part): what receive_body needs — _has_body tells "no body"
    apart (A-31, A-38) and get_body gives the value or raises MessageFormatException."""
    empty, full = cls(), filled(cls)
    if cls is StreamMessage:
        assert empty._has_body() and full._has_body()
    else:
        assert not empty._has_body()
        assert full._has_body() is (cls is not Message)


def test_body_44_body_classes_for_jmsproducer_send() -> None:
    """BODY-44 (message-level part): the classes JMSProducer.send builds from a plain body
    accept those bodies: str, bytes/bytearray, a dict of Map-valid values, any picklable."""
    assert TextMessage("s").get_body(str) == "s"
    b = BytesMessage()
    b.write_bytes(bytearray(b"x"))
    assert b.get_body(bytes) == b"x"
    mm = MapMessage()
    for k, v in {"a": 1, "b": None, "c": b"z"}.items():
        mm.set_object(k, v)
    assert mm.get_body(dict) == {"a": 1, "b": None, "c": b"z"}
    with pytest.raises(MessageFormatException):
        mm.set_object("d", [1])  # type: ignore[arg-type]
    assert ObjectMessage((1, 2)).get_body(tuple) == (1, 2)
    assert TextMessage(None).get_body(str) is None  # None -> TextMessage, no body
