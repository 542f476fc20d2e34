"""JMS clients and STOMP clients on the same destinations of a real ``ternmq serve``: every
header and property where the other side expects it (SERVER.md "STOMP", docs/stomp.md);
and a persistent STOMP SEND with a receipt survives a SIGKILL of the server."""

from __future__ import annotations

import base64
import json
import pathlib
import time
from collections.abc import Iterator

import pytest

from ternmq import (
    BytesMessage,
    ConnectionFactory,
    DeliveryMode,
    MapMessage,
    Queue,
    TextMessage,
    Topic,
)

from ._support import StompRaw, start_server, store_commits


@pytest.fixture(scope="module")
def ports(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, int]]:
    """(native port, STOMP port) of one server for the module."""
    server, stomp_port = start_server(tmp_path_factory.mktemp("cross"))
    try:
        yield server.port, stomp_port
    finally:
        server.kill()


def stomp(port: int) -> StompRaw:
    cl = StompRaw(port)
    cl.connect()
    return cl


def test_jms_text_with_typed_properties_reaches_stomp(ports: tuple[int, int]) -> None:
    native, port = ports
    with stomp(port) as cl:
        cl.call("SUBSCRIBE", [("id", "s"), ("destination", "/queue/x.text")])
        with ConnectionFactory(f"tcp://127.0.0.1:{native}").create_connection() as conn:
            session = conn.create_session()
            m = session.create_text_message("héllo")
            m.set_boolean_property("b", True)
            m.set_byte_property("by", -5)
            m.set_short_property("sh", 300)
            m.set_int_property("i", 70000)
            m.set_long_property("l", 2**40)
            m.set_float_property("f", 1.5)
            m.set_double_property("d", 0.1)
            m.set_string_property("s", "str")
            m.jms_correlation_id = "corr"
            m.jms_type = "kind"
            m.jms_reply_to = Queue("x.reply")
            producer = session.create_producer(Queue("x.text"))
            producer.send(m, priority=8, time_to_live=60.0)
        f = cl.recv()
        assert f.body == "héllo".encode()
        assert f.get("content-type") == "text/plain;charset=utf-8"
        assert f.get("content-length") == str(len(f.body))
        assert f.get("destination") == "/queue/x.text"
        assert f.get("message-id") == m.jms_message_id
        assert f.get("persistent") == "true"
        assert f.get("priority") == "8"
        assert f.get("expires") == str(m.jms_expiration) and m.jms_expiration > 0
        assert f.get("timestamp") == str(m.jms_timestamp)
        assert f.get("correlation-id") == "corr"
        assert f.get("type") == "kind"
        assert f.get("reply-to") == "/queue/x.reply"
        assert f.get("redelivered") == "false"
        assert f.get("JMSXDeliveryCount") == "1"
        # typed values in their Java string form
        assert f.get("b") == "true"
        assert f.get("by") == "-5"
        assert f.get("sh") == "300"
        assert f.get("i") == "70000"
        assert f.get("l") == str(2**40)
        assert f.get("f") == "1.5"
        assert f.get("d") == "0.1"
        assert f.get("s") == "str"


def test_jms_bytes_and_map_reach_stomp(ports: tuple[int, int]) -> None:
    native, port = ports
    with stomp(port) as cl:
        cl.call("SUBSCRIBE", [("id", "s"), ("destination", "/topic/x.body")])
        with ConnectionFactory(f"tcp://127.0.0.1:{native}").create_connection() as conn:
            session = conn.create_session()
            producer = session.create_producer(Topic("x.body"))
            b = session.create_bytes_message()
            b.write_bytes(b"\x00\x01binary\x00")
            producer.send(b, delivery_mode=DeliveryMode.NON_PERSISTENT)
            mm = session.create_map_message()
            mm.set_int("n", 7)
            mm.set_string("s", "v")
            mm.set_boolean("t", True)
            mm.set_double("x", 2.5)
            mm.set_bytes("raw", b"\xff")
            producer.send(mm)
            st = session.create_stream_message()
            st.write_string("a")
            st.write_long(3)
            producer.send(st)
        fb = cl.recv()
        assert fb.body == b"\x00\x01binary\x00"
        assert fb.get("content-type") == "application/octet-stream"
        assert fb.get("persistent") == "false"
        fm = cl.recv()
        assert fm.get("content-type") == "application/json"
        assert fm.get("ternmq-body-type") == "map"
        assert json.loads(fm.body) == {
            "n": 7,
            "s": "v",
            "t": True,
            "x": 2.5,
            "raw": base64.b64encode(b"\xff").decode(),
        }
        fs = cl.recv()
        assert fs.get("ternmq-body-type") == "stream"
        assert json.loads(fs.body) == ["a", 3]


def test_stomp_messages_reach_jms_with_every_header(ports: tuple[int, int]) -> None:
    native, port = ports
    with ConnectionFactory(f"tcp://127.0.0.1:{native}").create_connection() as conn:
        conn.start()
        session = conn.create_session()
        consumer = session.create_consumer(Queue("x.fromstomp"))
        expires = int(time.time() * 1000) + 60_000
        with stomp(port) as cl:
            cl.call(
                "SEND",
                [
                    ("destination", "/queue/x.fromstomp"),
                    ("persistent", "true"),
                    ("priority", "6"),
                    ("expires", str(expires)),
                    ("correlation-id", "c-1"),
                    ("type", "t-1"),
                    ("reply-to", "/topic/x.answers"),
                    ("JMSXGroupID", "grp"),
                    ("color", "red"),
                ],
                b"texte",
            )
            cl.call(
                "SEND",
                [("destination", "/queue/x.fromstomp"), ("content-length", "3")],
                b"\x00\x01\x02",
            )
        t = consumer.receive(10)
        assert isinstance(t, TextMessage)
        assert t.text == "texte"
        assert t.jms_delivery_mode == DeliveryMode.PERSISTENT
        assert t.jms_priority == 6
        assert t.jms_expiration == expires
        assert t.jms_correlation_id == "c-1"
        assert t.jms_type == "t-1"
        assert t.jms_reply_to == Topic("x.answers")
        assert t.jms_destination == Queue("x.fromstomp")
        assert t.jms_message_id is not None and t.jms_message_id.startswith("ID:")
        assert t.jms_timestamp > 0
        assert t.get_string_property("JMSXGroupID") == "grp"
        assert t.get_string_property("color") == "red"
        assert t.get_property_type("color") == "String"
        assert not t.property_exists("destination")
        bm = consumer.receive(10)
        assert isinstance(bm, BytesMessage)
        assert bm.jms_delivery_mode == DeliveryMode.NON_PERSISTENT
        assert bm.read_bytes(10) == b"\x00\x01\x02"
        # a JMS selector on a STOMP-set property compares strings
        consumer.close()
        sel = session.create_consumer(Queue("x.fromstomp"), "color = 'blue'")
        with stomp(port) as cl:
            cl.call("SEND", [("destination", "/queue/x.fromstomp"), ("color", "blue")], b"b")
        got = sel.receive(10)
        assert isinstance(got, TextMessage) and got.text == "b"


def test_map_message_property_types_survive_stomp_to_jms(ports: tuple[int, int]) -> None:
    """A STOMP client cannot send a Map body; its properties arrive as Strings, which JMS
    converts on read (the conversion table)."""
    native, port = ports
    with ConnectionFactory(f"tcp://127.0.0.1:{native}").create_connection() as conn:
        conn.start()
        consumer = conn.create_session().create_consumer(Queue("x.props"))
        with stomp(port) as cl:
            cl.call("SEND", [("destination", "/queue/x.props"), ("n", "42")], b"x")
        m = consumer.receive(10)
        assert m is not None
        assert m.get_int_property("n") == 42
        assert m.get_string_property("n") == "42"
        assert not isinstance(m, MapMessage)


def test_persistent_send_with_receipt_survives_sigkill(tmp_path: pathlib.Path) -> None:
    data = tmp_path / "data"
    server, port = start_server(tmp_path, data_dir=data)
    with server, stomp(port) as cl:
        for i in range(20):
            cl.call(
                "SEND",
                [("destination", "/queue/x.durable"), ("persistent", "true")],
                f"m{i}".encode(),
            )
        server.kill()  # SIGKILL right after the last receipt
    server, port = start_server(tmp_path, data_dir=data)
    with server, stomp(port) as cl:
        cl.call("SUBSCRIBE", [("id", "s"), ("destination", "/queue/x.durable")])
        assert [cl.recv().body for _ in range(20)] == [f"m{i}".encode() for i in range(20)]


def _send_and_take(producer: StompRaw, subscriber: StompRaw, kind: str, n: int) -> None:
    """``n`` persistent SENDs with receipts to ``/queue/x.cs-KIND``, bodies ``k0``... (k the
    first letter of ``kind``), each taken by ``subscriber`` before the next."""
    for i in range(n):
        body = f"{kind[0]}{i}".encode()
        producer.call(
            "SEND", [("destination", f"/queue/x.cs-{kind}"), ("persistent", "true")], body
        )
        assert subscriber.recv().body == body


def test_persistent_sends_an_auto_ack_subscriber_takes_at_once_are_never_written(
    tmp_path: pathlib.Path,
) -> None:
    # Concurrent store and dispatch: an ack:auto subscriber consumes a persistent message as
    # it is sent, so the store writes nothing for it (SQLite commits are counted), and after a
    # SIGKILL nothing comes back; a client-ack subscriber's messages are written and
    # acknowledged as before, and an unacknowledged one comes back.
    data = tmp_path / "data"
    server, port = start_server(tmp_path, data_dir=data, http=True)
    with server, stomp(port) as auto, stomp(port) as client, stomp(port) as producer:
        url = server.http_url
        auto.call("SUBSCRIBE", [("id", "a"), ("destination", "/queue/x.cs-auto")])
        client.call(
            "SUBSCRIBE",
            [("id", "c"), ("destination", "/queue/x.cs-client"), ("ack", "client")],
        )
        for q in ("auto", "client"):  # a queue's first message reserves its positions
            producer.call("SEND", [("destination", f"/queue/x.cs-{q}"), ("persistent", "true")])
        assert auto.recv().command == "MESSAGE"
        first = client.recv()
        client.call("ACK", [("id", first.get("ack") or "")])
        before = store_commits(url)
        _send_and_take(producer, auto, "auto", 40)
        assert store_commits(url) - before <= 4  # a commit a message (and its ack's) before
        before = store_commits(url)
        _send_and_take(producer, client, "client", 10)
        assert store_commits(url) - before >= 10  # unacknowledged: every one is written
        server.kill()  # c0..c9 delivered, none acknowledged
    server, port = start_server(tmp_path, data_dir=data)
    with server, stomp(port) as cl:
        cl.call("SUBSCRIBE", [("id", "c"), ("destination", "/queue/x.cs-client")])
        assert [cl.recv().body for _ in range(10)] == [f"c{i}".encode() for i in range(10)]
        cl.call("SUBSCRIBE", [("id", "a"), ("destination", "/queue/x.cs-auto")])
        with pytest.raises(TimeoutError):
            cl.recv(timeout=0.5)  # every a{i} was consumed: none was ever stored
