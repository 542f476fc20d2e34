"""Java, Python and STOMP on the same destinations of one ``ternmq serve``, every body type.

Java -> Python and STOMP: the messages ActiveMQ's own client marshals
(``java/OpenWireMapping.java``, through the JMS API) are sent over OpenWire by the raw client
of ``_client.py``; ternmq's Python JMS consumer receives each with the headers, typed
properties and body the mapping gives, and a stomp.py subscriber with its body and
properties as STOMP shows them. Python and STOMP -> Java: what a Python JMS producer and a
stomp.py producer send is dispatched over OpenWire, and ActiveMQ's client reads it (the Java
program prints its JMS getters) as a Java producer would have set it.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import queue
import re
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest

from ternmq import ConnectionFactory, Queue, Topic
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

from ._client import OpenWireRaw, start_server
from ._java import (
    BROKER_JARS,
    CLIENT_JARS,
    QUIET_LOGGING,
    SPRING_JARS,
    java_produced,
    java_reads,
    mapping_program,
    program,
    text_of,
)
from .test_mapping import HEADERS

stomp = pytest.importorskip("stomp")

TIMEOUT = 15.0
P = ow.PType


@pytest.fixture(scope="module")
def port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    server, port = start_server(tmp_path_factory.mktemp("owinterop"))
    try:
        yield port
    finally:
        server.kill()


@pytest.fixture(scope="module")
def java(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    return mapping_program(tmp_path_factory.mktemp("owinterop-java"))


class _Inbox(stomp.ConnectionListener):  # type: ignore[misc]
    def __init__(self) -> None:
        self.frames: queue.Queue[Any] = queue.Queue()
        self.receipts: queue.Queue[str] = queue.Queue()

    def on_message(self, frame: Any) -> None:
        self.frames.put(frame)

    def on_receipt(self, frame: Any) -> None:
        self.receipts.put(frame.headers["receipt-id"])


def _stomp(port: int) -> tuple[Any, _Inbox]:
    conn = stomp.Connection12([("127.0.0.1", port)], auto_content_length=False, auto_decode=False)
    inbox = _Inbox()
    conn.set_listener("", inbox)
    conn.connect(wait=True)
    return conn, inbox


def _retarget(
    cmd: ow.Message, dest: ow.ActiveMQDestination, producer: ow.ProducerId, seq: int
) -> ow.Message:
    """``cmd`` as this connection's producer sends it to ``dest`` now (ActiveMQ's producer
    fills these fields in), without the scheduled delay (mapping tests cover it). A String
    property holding a NUL stays: the JMS consumer reads it whole, the STOMP gateway leaves
    that header out (no STOMP header can carry a NUL) and the frame stays whole."""
    props = (
        ow.decode_primitive_map(cmd.marshalled_properties) if cmd.marshalled_properties else None
    )
    if props is not None:
        props.pop(m.SCHEDULED_DELAY, None)
    now = int(time.time() * 1000)
    return dataclasses.replace(
        cmd,
        destination=dest,
        producer_id=producer,
        message_id=ow.MessageId(producer_id=producer, producer_sequence_id=seq),
        reply_to=ow.ActiveMQQueue(physical_name="x.interop.reply") if cmd.reply_to else None,
        expiration=now + 600_000 if cmd.expiration else 0,
        timestamp=now,
        marshalled_properties=ow.encode_primitive_map(props) if props else None,
        response_required=True,
        command_id=0,
    )


_BODY = {
    TextMessage: "_text",
    BytesMessage: "_buffer",
    MapMessage: "_map",
    StreamMessage: "_items",
    ObjectMessage: "_payload",
}


def _properties(msg: Message) -> dict[str, tuple[object, object]]:
    # JMSXDeliveryCount is the receiver's; the server strips a client's own JMSXUserID.
    return {
        name: (msg._property_types[name], value)
        for name, value in msg._properties.items()
        if name not in ("JMSXDeliveryCount", "JMSXUserID")
    }


def test_java_messages_reach_python_and_stomp_consumers_intact(port: int, java: list[str]) -> None:
    produced = java_produced(java)
    name = f"x.interop.java.{time.monotonic_ns()}"
    conn_stomp, inbox = _stomp(port)
    conn_stomp.subscribe(f"/topic/{name}", id="1", ack="auto", headers={"receipt": "sub"})
    assert inbox.receipts.get(timeout=TIMEOUT) == "sub"
    expected: dict[str, tuple[str, Message]] = {}
    with ConnectionFactory(f"tcp://127.0.0.1:{port}").create_connection() as jms:
        jms.start()
        consumer = jms.create_session().create_consumer(Topic(name))
        with OpenWireRaw(port) as cl:
            assert type(cl.connect()) is ow.Response
            producer = cl.producer(cl.session())
            for seq, (label, cmd) in enumerate(produced.items(), 1):
                sent = _retarget(cmd, ow.ActiveMQTopic(physical_name=name), producer, seq)
                assert type(cl.request(sent)) is ow.Response, label
                want = m.message_from_openwire(sent, now_ms=0, resolve=m.jms_destination)
                assert want._message_id is not None
                expected[want._message_id] = (label, want)
        got: dict[str, Message] = {}
        while len(got) < len(expected):
            msg = consumer.receive(TIMEOUT)
            assert msg is not None, f"received {sorted(got)} of {len(expected)}"
            got[expected[msg.jms_message_id or ""][0]] = msg
    for label, want in expected.values():
        msg = got[label]
        assert type(msg) is type(want), label
        for attr in HEADERS:
            assert getattr(msg, attr) == getattr(want, attr), (label, attr)
        assert msg.jms_destination == Topic(name)
        assert _properties(msg) == _properties(want), label
        body = _BODY.get(type(want))
        if body is not None:
            assert getattr(msg, body) == getattr(want, body), label
    text = got["text"]
    assert isinstance(text, TextMessage) and text.text == "h\u00e9llo \U0001f600 \x00 end"
    assert text.get_long_property("aLong") == 2**63 - 1
    assert text.get_string_property("JMSXGroupID") == "group-a"
    assert "\x00" in (text.get_string_property("aString") or "")  # whole over JMS
    mapped = got["map"]
    assert isinstance(mapped, MapMessage) and mapped.get_char("char") == "\u00e9"
    assert isinstance(got["object"], ObjectMessage)
    with pytest.raises(Exception, match="deserialize"):
        got["object"].object  # noqa: B018 -- Java serialization is not a pickle

    frames = {}
    for _ in expected:
        frame = inbox.frames.get(timeout=TIMEOUT)
        frames[expected[frame.headers["message-id"]][0]] = frame
    conn_stomp.disconnect()
    text_frame = frames["text"]
    assert text_frame.body == "h\u00e9llo \U0001f600 \x00 end".encode()
    headers = text_frame.headers
    assert headers["aLong"] == str(2**63 - 1)
    assert "aString" not in headers  # its NUL: no STOMP header carries one
    assert headers["aShort"] == "-32768" and headers["aBoolean"] == "true"
    assert headers["aDouble"] == "-2.5E-300"
    assert headers["JMSXGroupID"] == "group-a" and headers["correlation-id"] == "corr-1"
    assert headers["persistent"] == "true" and headers["priority"] == "7"
    assert frames["bytes"].body == b"\x00\x01\x02\xff\x00\x03x\xc3\xa9"
    assert json.loads(frames["map"].body)["long"] == -(2**63)
    assert frames["map"].headers["ternmq-body-type"] == "map"
    assert json.loads(frames["stream"].body)[:3] == [False, -1, -2]
    assert frames["object"].body.startswith(b"\xac\xed\x00\x05")
    assert frames["object"].headers["ternmq-body-type"] == "object"
    assert frames["plain"].headers["only"] == "headers"
    assert frames["text-compressed"].body == ("compressed " + "text " * 500).encode()


def test_python_and_stomp_messages_reach_a_java_consumer_as_java_would_send_them(
    port: int, java: list[str]
) -> None:
    name = f"x.interop.py.{time.monotonic_ns()}"
    with OpenWireRaw(port) as cl:
        assert type(cl.connect()) is ow.Response
        cl.consume(cl.session(), ow.ActiveMQQueue(physical_name=name), prefetch=100)
        ids: dict[str, str] = {}
        with ConnectionFactory(f"tcp://127.0.0.1:{port}").create_connection() as jms:
            session = jms.create_session()
            producer = session.create_producer(Queue(name))
            text = session.create_text_message("from python \U0001f600")
            text.set_byte_property("py", -3)
            text.set_short_property("ps", 300)
            text.set_int_property("pi", 70000)
            text.set_long_property("pl", 1)
            text.set_float_property("pf", 1.5)
            text.set_double_property("pd", 2.5)
            text.set_boolean_property("pb", True)
            text.set_string_property("pt", "é")
            text.jms_correlation_id = "c-1"
            text.jms_type = "t-1"
            body = session.create_bytes_message()
            body.write_bytes(b"\x00\xfe")
            mapped = session.create_map_message()
            mapped.set_char("c", "x")
            mapped.set_bytes("raw", b"\x01")
            mapped.set_long("n", 2)
            mapped.set_float("f", 0.5)
            stream = session.create_stream_message()
            stream.write_short(5)
            stream.write_string("s")
            stream.write_bytes(b"\x02")
            sent: dict[str, Message] = {
                "text": text,
                "bytes": body,
                "map": mapped,
                "stream": stream,
                "object": session.create_object_message([1, 2]),
                "plain": session.create_message(),
            }
            for label, msg in sent.items():
                producer.send(msg, priority=6)
                ids[msg.jms_message_id or ""] = label
        conn_stomp, inbox = _stomp(port)
        conn_stomp.send(f"/queue/{name}", "from stomp", headers={"region": "eu"})
        conn_stomp.send(
            f"/queue/{name}",
            b"\x00\x01",
            content_type="application/octet-stream",
            headers={"content-length": "2", "receipt": "sent"},
        )
        assert inbox.receipts.get(timeout=TIMEOUT) == "sent"
        conn_stomp.disconnect()
        commands: dict[str, ow.Message] = {}
        stomp_labels = iter(["stomp-text", "stomp-bytes"])
        for _ in range(len(sent) + 2):
            dispatch = cl.dispatch(TIMEOUT)
            assert dispatch.message is not None
            cl.ack(dispatch)
            text_id = m.message_id_text(dispatch.message.message_id or ow.MessageId())
            commands[ids.get(text_id) or next(stomp_labels)] = dispatch.message
    reading = java_reads(java, commands)
    for label, msg_id in ((lb, i) for i, lb in ids.items()):
        assert text_of(reading[label], "JMSMessageID") == ("String", msg_id)
        assert text_of(reading[label], "JMSPriority") == ("Integer", "6")
        assert text_of(reading[label], "JMSDeliveryMode") == ("Integer", "2")
        assert text_of(reading[label], "JMSDestination") == ("ActiveMQQueue", f"queue://{name}")
    got = reading["text"]
    assert text_of(got, "class") == ("String", "ActiveMQTextMessage")
    assert text_of(got, "body") == ("String", "from python \U0001f600")
    assert text_of(got, "JMSCorrelationID") == ("String", "c-1")
    assert text_of(got, "JMSType") == ("String", "t-1")
    assert text_of(got, "JMSRedelivered") == ("Boolean", "false")
    assert text_of(got, "JMSXDeliveryCount") == ("Integer", "1")
    assert {k: text_of(got, k) for k in got if k.startswith("prop:p")} == {
        "prop:py": ("Byte", "-3"),
        "prop:ps": ("Short", "300"),
        "prop:pi": ("Integer", "70000"),
        "prop:pl": ("Long", "1"),
        "prop:pf": ("Float", "1.5"),
        "prop:pd": ("Double", "2.5"),
        "prop:pb": ("Boolean", "true"),
        "prop:pt": ("String", "é"),
    }
    assert text_of(reading["bytes"], "class") == ("String", "ActiveMQBytesMessage")
    assert reading["bytes"]["body"] == ("byte[]", "00fe")
    assert text_of(reading["map"], "class") == ("String", "ActiveMQMapMessage")
    assert text_of(reading["map"], "map:c") == ("Character", "x")
    assert reading["map"]["map:raw"] == ("byte[]", "01")
    assert text_of(reading["map"], "map:n") == ("Long", "2")
    assert text_of(reading["map"], "map:f") == ("Float", "0.5")
    assert text_of(reading["stream"], "stream:0") == ("Short", "5")
    assert text_of(reading["stream"], "stream:1") == ("String", "s")
    assert reading["stream"]["stream:2"] == ("byte[]", "02")
    assert text_of(reading["object"], "class") == ("String", "ActiveMQObjectMessage")
    assert reading["object"]["body"][0].startswith("!")  # a pickle is no Java object
    assert text_of(reading["plain"], "class") == ("String", "ActiveMQMessage")
    assert text_of(reading["stomp-text"], "class") == ("String", "ActiveMQTextMessage")
    assert text_of(reading["stomp-text"], "body") == ("String", "from stomp")
    assert text_of(reading["stomp-text"], "prop:region") == ("String", "eu")
    assert text_of(reading["stomp-bytes"], "class") == ("String", "ActiveMQBytesMessage")
    assert reading["stomp-bytes"]["body"] == ("byte[]", "0001")


README = pathlib.Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_java_example_runs_and_python_reads_its_messages(
    port: int, tmp_path: pathlib.Path
) -> None:
    """The README's Java block, as it stands but for the port, compiled with Spring's jars."""
    (block,) = re.findall(r"```java\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    source = tmp_path / "ReadmeExample.java"
    source.write_text(
        "import javax.jms.*;\n"
        "import org.apache.activemq.ActiveMQConnectionFactory;\n"
        "import org.springframework.jms.core.JmsTemplate;\n"
        "public class ReadmeExample {\n"
        "    public static void main(String[] args) throws Exception {\n"
        + block.replace("tcp://localhost:61616", f"tcp://127.0.0.1:{port}")
        + "    }\n}\n",
        encoding="utf-8",
    )
    # ActiveMQConnectionFactory loads the J2EE management API (in BROKER_JARS) at run time.
    java = program(
        [source],
        tmp_path / "classes",
        "ReadmeExample",
        CLIENT_JARS,
        SPRING_JARS,
        BROKER_JARS,
        QUIET_LOGGING,
    )
    subprocess.run(java, check=True, capture_output=True, timeout=120)
    with ConnectionFactory(f"tcp://127.0.0.1:{port}").create_connection() as jms:
        jms.start()
        consumer = jms.create_session().create_consumer(Queue("orders"))
        first = consumer.receive(TIMEOUT)
        assert isinstance(first, TextMessage) and first.text == "order 45"
        assert first.get_object_property("customer") == 42
        assert first._property_types["customer"] is T.LONG
        second = consumer.receive(TIMEOUT)
        assert isinstance(second, TextMessage) and second.text == "order 46"
