"""OpenWire clients, ternmq's Python JMS clients and STOMP clients on the same destinations
of one ``ternmq serve`` (the main port serves all three): bodies, typed properties and
headers arrive where the other side expects them."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from ternmq import (
    BytesMessage,
    ConnectionFactory,
    DeliveryMode,
    MapMessage,
    Queue,
    StreamMessage,
    TextMessage,
)
from ternmq.protocol import openwire as ow

from ._client import OpenWireRaw, start_server

P = ow.PType


@pytest.fixture(scope="module")
def port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    server, port = start_server(tmp_path_factory.mktemp("owcross"))
    try:
        yield port
    finally:
        server.kill()


def _ow(port: int) -> OpenWireRaw:
    cl = OpenWireRaw(port)
    assert type(cl.connect()) is ow.Response
    return cl


def test_jms_text_with_typed_properties_reaches_openwire(port: int) -> None:
    name = f"x.ow.text.{time.monotonic_ns()}"
    with _ow(port) as cl:
        sess = cl.session()
        cl.consume(sess, ow.ActiveMQQueue(physical_name=name))
        with ConnectionFactory(f"tcp://127.0.0.1:{port}").create_connection() as conn:
            session = conn.create_session()
            m = session.create_text_message("héllo")
            m.set_boolean_property("b", True)
            m.set_byte_property("by", -5)
            m.set_short_property("sh", 300)
            m.set_int_property("i", 70000)
            m.set_long_property("l", 2**40)
            m.set_double_property("d", 0.1)
            m.set_string_property("s", "str")
            m.jms_correlation_id = "corr"
            m.jms_type = "kind"
            m.jms_reply_to = Queue("x.reply")
            session.create_producer(Queue(name)).send(m, priority=8, time_to_live=60.0)
        d = cl.dispatch()
        msg = d.message
        assert isinstance(msg, ow.ActiveMQTextMessage)
        assert ow.decode_text_body(msg.content or b"") == "héllo"
        assert msg.persistent and msg.priority == 8
        assert msg.expiration == m.jms_expiration > 0
        assert msg.correlation_id == "corr" and msg.type == "kind"
        assert isinstance(msg.reply_to, ow.ActiveMQQueue)
        assert msg.reply_to.physical_name == "x.reply"
        props = ow.decode_primitive_map(msg.marshalled_properties or b"\xff\xff\xff\xff") or {}
        assert props["b"] == ow.Primitive(P.BOOLEAN, True)
        assert props["by"] == ow.Primitive(P.BYTE, -5)
        assert props["sh"] == ow.Primitive(P.SHORT, 300)
        assert props["i"] == ow.Primitive(P.INTEGER, 70000)
        assert props["l"] == ow.Primitive(P.LONG, 2**40)
        assert props["d"] == ow.Primitive(P.DOUBLE, 0.1)
        assert props["s"].value == "str"
        assert d.redelivery_counter == 0


def test_openwire_messages_reach_jms_with_typed_properties(port: int) -> None:
    name = f"x.ow.in.{time.monotonic_ns()}"
    dest = ow.ActiveMQQueue(physical_name=name)
    with ConnectionFactory(f"tcp://127.0.0.1:{port}").create_connection() as conn:
        conn.start()
        consumer = conn.create_session().create_consumer(Queue(name))
        with _ow(port) as cl:
            sess = cl.session()
            prod = cl.producer(sess)
            props = {
                "b": ow.Primitive(P.BOOLEAN, False),
                "sh": ow.Primitive(P.SHORT, -2),
                "i": ow.Primitive(P.INTEGER, 42),
                "l": ow.Primitive(P.LONG, -(2**40)),
                "f": ow.Primitive(P.FLOAT, 1.5),
                "s": ow.Primitive(P.STRING, "vé"),
            }
            got = cl.send_text(prod, dest, "from java", properties=props, priority=6)
            assert type(got) is ow.Response
            body = ow.ActiveMQBytesMessage(
                producer_id=prod,
                destination=dest,
                message_id=ow.MessageId(producer_id=prod, producer_sequence_id=99),
                persistent=False,
                content=b"\x00\x01\x02",
            )
            cl.send(body)
            mapped = ow.ActiveMQMapMessage(
                producer_id=prod,
                destination=dest,
                message_id=ow.MessageId(producer_id=prod, producer_sequence_id=100),
                persistent=True,
                content=ow.encode_primitive_map(
                    {"n": ow.Primitive(P.INTEGER, 7), "t": ow.Primitive(P.STRING, "v")}
                ),
            )
            assert type(cl.request(mapped)) is ow.Response
            stream = ow.ActiveMQStreamMessage(
                producer_id=prod,
                destination=dest,
                message_id=ow.MessageId(producer_id=prod, producer_sequence_id=101),
                persistent=True,
                content=ow.encode_primitive_stream(
                    [ow.Primitive(P.STRING, "a"), ow.Primitive(P.LONG, 3)]
                ),
            )
            assert type(cl.request(stream)) is ow.Response
            expected_id = f"{cl.connection_id}:{sess.value}:{prod.value}:1"
        t = consumer.receive(10)
        assert isinstance(t, TextMessage)
        assert t.text == "from java"
        assert t.jms_message_id == expected_id
        assert t.jms_priority == 6
        assert t.jms_delivery_mode == DeliveryMode.PERSISTENT
        assert t.get_boolean_property("b") is False
        assert t.get_short_property("sh") == -2
        assert t.get_int_property("i") == 42
        assert t.get_long_property("l") == -(2**40)
        assert t.get_float_property("f") == 1.5
        assert t.get_string_property("s") == "vé"
        bm = consumer.receive(10)
        assert isinstance(bm, BytesMessage)
        assert bm.jms_delivery_mode == DeliveryMode.NON_PERSISTENT
        assert bm.read_bytes(10) == b"\x00\x01\x02"
        mm = consumer.receive(10)
        assert isinstance(mm, MapMessage)
        assert mm.get_int("n") == 7 and mm.get_string("t") == "v"
        sm = consumer.receive(10)
        assert isinstance(sm, StreamMessage)
        assert sm.read_object() == "a" and sm.read_object() == 3


def test_openwire_reaches_stomp_on_the_same_port(port: int) -> None:
    from stomp_gateway._support import StompRaw

    name = f"x.ow.stomp.{time.monotonic_ns()}"
    with StompRaw(port) as st:
        st.connect()
        st.call("SUBSCRIBE", [("id", "s"), ("destination", f"/queue/{name}")])
        with _ow(port) as cl:
            sess = cl.session()
            prod = cl.producer(sess)
            props = {"color": ow.Primitive(P.STRING, "red"), "n": ow.Primitive(P.INTEGER, 5)}
            cl.send_text(prod, ow.ActiveMQQueue(physical_name=name), "to stomp", properties=props)
        f = st.recv()
        assert f.command == "MESSAGE"
        assert f.body == b"to stomp"
        assert f.get("color") == "red" and f.get("n") == "5"
        assert f.get("persistent") == "true"
