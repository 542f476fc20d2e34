"""``ternmq receive``: what it prints, how many it takes, its timeout and its errors."""

from __future__ import annotations

import threading
import time

import pytest

from ternmq import ConnectionFactory, EmbeddedBroker, JMSException, Queue, Topic
from ternmq.client import _admin

from ._support import Run, one_line_error, run


def _send_texts(broker: EmbeddedBroker, q: Queue, *texts: str) -> None:
    with ConnectionFactory(broker.url).create_connection() as conn:
        s = conn.create_session()
        p = s.create_producer(q)
        for i, t in enumerate(texts):
            m = s.create_text_message(t)
            m.set_int_property("i", i)
            p.send(m)


def _depth(broker: EmbeddedBroker, dest: str) -> int:
    with ConnectionFactory(broker.url).create_connection() as conn:
        return _admin.stat(conn, dest)[0].depth


def test_receive_prints_one_message(
    capsys: pytest.CaptureFixture[str], broker: EmbeddedBroker
) -> None:
    with ConnectionFactory(broker.url).create_connection() as conn:
        s = conn.create_session()
        m = s.create_text_message("hello there")
        m.set_string_property("region", "EU")
        m.set_long_property("amount", 640)
        m.jms_correlation_id = "corr-1"
        m.jms_type = "order"
        m.jms_reply_to = Queue("replies")
        s.create_producer(Queue("in")).send(m, priority=7, time_to_live=60.0)
        s.create_producer(Queue("in")).send(s.create_text_message("second"))
        sent_id = m.jms_message_id
    r = run(capsys, broker.url, "receive", "queue://in")
    assert r.code == 0, r.err
    assert r.err == ""
    lines = r.out.splitlines()
    assert lines[0] == f"message {sent_id}"
    assert "  JMSDestination: queue://in" in lines
    assert "  JMSDeliveryMode: PERSISTENT" in lines
    assert "  JMSPriority: 7" in lines
    assert "  JMSRedelivered: false" in lines
    assert "  JMSCorrelationID: corr-1" in lines
    assert "  JMSType: order" in lines
    assert "  JMSReplyTo: queue://replies" in lines
    assert any(x.startswith("  JMSTimestamp: ") and x.endswith("Z)") for x in lines)
    assert any(x.startswith("  JMSExpiration: ") for x in lines)
    assert "  properties: JMSXDeliveryCount=1, amount=640, region='EU'" in lines
    assert lines[-1] == "  text: hello there"
    assert "second" not in r.out
    assert _depth(broker, "queue://in") == 1  # --count 1: the rest stays


def test_receive_count(capsys: pytest.CaptureFixture[str], broker: EmbeddedBroker) -> None:
    _send_texts(broker, Queue("c"), "a", "b", "c", "d")
    r = run(capsys, broker.url, "receive", "queue://c", "--count", "3")
    assert r.code == 0
    assert [x for x in r.out.splitlines() if x.startswith("  text:")] == [
        "  text: a",
        "  text: b",
        "  text: c",
    ]
    assert _depth(broker, "queue://c") == 1


def test_receive_fewer_than_count(
    capsys: pytest.CaptureFixture[str], broker: EmbeddedBroker
) -> None:
    _send_texts(broker, Queue("few"), "a", "b")
    r = run(capsys, broker.url, "receive", "queue://few", "--count", "5", "--timeout", "0.2")
    assert r.code == 0
    assert r.out.count("\nmessage ") + r.out.startswith("message ") == 2
    assert "received 2 of 5 messages; no more arrived on queue://few within 0.2 s" in r.err


def test_receive_count_zero_drains(
    capsys: pytest.CaptureFixture[str], broker: EmbeddedBroker
) -> None:
    _send_texts(broker, Queue("all"), *[str(i) for i in range(150)])
    r = run(capsys, broker.url, "receive", "queue://all", "--count", "0", "--timeout", "0.2")
    assert r.code == 0
    assert [x for x in r.out.splitlines() if x.startswith("  text:")] == [
        f"  text: {i}" for i in range(150)
    ]
    assert r.err == ""
    assert _depth(broker, "queue://all") == 0


def test_receive_selector(capsys: pytest.CaptureFixture[str], broker: EmbeddedBroker) -> None:
    _send_texts(broker, Queue("s"), "zero", "one", "two")
    r = run(capsys, broker.url, "receive", "queue://s", "--selector", "i = 1")
    assert r.code == 0 and "text: one" in r.out and "zero" not in r.out
    r = run(capsys, broker.url, "receive", "queue://s", "--selector", "i = 7", "--timeout", "0.1")
    one_line_error(r, 1, "no message arrived on queue://s matching 'i = 7' within 0.1 s")


def test_receive_nothing_arrives(
    capsys: pytest.CaptureFixture[str], broker: EmbeddedBroker
) -> None:
    started = time.monotonic()
    r = run(capsys, broker.url, "receive", "queue://empty", "--timeout", "0.3")
    assert time.monotonic() - started >= 0.25
    one_line_error(r, 1, "no message arrived on queue://empty within 0.3 s")
    assert r.out == ""


def test_receive_bad_selector(capsys: pytest.CaptureFixture[str], broker: EmbeddedBroker) -> None:
    r = run(capsys, broker.url, "receive", "queue://x", "--selector", "a = = 1")
    one_line_error(r, 1, "invalid message selector")


def test_receive_bad_destination(
    capsys: pytest.CaptureFixture[str], broker: EmbeddedBroker
) -> None:
    one_line_error(run(capsys, broker.url, "receive", "x"), 2, "cannot parse destination 'x'")
    with pytest.raises(SystemExit):
        run(capsys, broker.url, "receive", "queue://x", "--timeout", "-1")


def test_receive_body_kinds(capsys: pytest.CaptureFixture[str], broker: EmbeddedBroker) -> None:
    with ConnectionFactory(broker.url).create_connection() as conn:
        s = conn.create_session()
        p = s.create_producer(Queue("kinds"))
        b = s.create_bytes_message()
        b.write_bytes(b"\x00" * 42)
        p.send(b)
        mm = s.create_map_message()
        mm.set_int("n", 3)
        mm.set_string("who", "me")
        p.send(mm)
        p.send(s.create_message())
        st = s.create_stream_message()
        st.write_int(1)
        p.send(st)
        p.send(s.create_object_message([1, 2]))
        p.send(s.create_text_message())
    r = run(capsys, broker.url, "receive", "queue://kinds", "--count", "6")
    assert r.code == 0, r.err
    bodies = [x for x in r.out.splitlines() if x.startswith("  ") and not x.startswith("  JMS")]
    bodies = [x for x in bodies if not x.startswith("  properties:")]
    assert bodies == [
        "  bytes: 42 bytes",
        "  map: n=3, who='me'",
        "  body: (none)",
        "  stream: (a StreamMessage body; not shown)",
        "  object: (an ObjectMessage body; not decoded)",
        "  text: (null)",
    ]


def test_receive_from_topic(capsys: pytest.CaptureFixture[str], broker: EmbeddedBroker) -> None:
    """A topic receive subscribes when it starts: it gets what is published after."""
    result: list[Run] = []
    t = threading.Thread(
        target=lambda: result.append(
            run(capsys, broker.url, "receive", "topic://t", "--count", "2", "--timeout", "5")
        )
    )
    t.start()
    with ConnectionFactory(broker.url).create_connection() as conn:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                if _admin.stat(conn, "topic://t")[0].consumers:
                    break
            except JMSException:
                pass  # the topic does not exist until the receiver subscribes
            time.sleep(0.02)
        s = conn.create_session()
        p = s.create_producer(Topic("t"))
        for text in ("x", "y"):
            p.send(s.create_text_message(text))
    t.join(10)
    (r,) = result
    assert r.code == 0
    assert "text: x" in r.out and "text: y" in r.out
    assert "JMSDestination: topic://t" in r.out
