"""``ternmq send``: destinations, typed properties, delivery options and its errors."""

from __future__ import annotations

import pytest

from ternmq import (
    ConnectionFactory,
    DeliveryMode,
    EmbeddedBroker,
    JMSException,
    Message,
    Queue,
    TextMessage,
    Topic,
)
from ternmq.client import _admin

from ._support import one_line_error, run


def _take(broker: EmbeddedBroker, q: Queue, n: int = 1, timeout: float = 1.0) -> list[Message]:
    with ConnectionFactory(broker.url).create_connection() as conn:
        conn.start()
        consumer = conn.create_session().create_consumer(q)
        got = []
        for _ in range(n):
            m = consumer.receive(timeout)
            assert m is not None, f"only {len(got)} of {n} arrived"
            got.append(m)
        assert consumer.receive(0.05) is None
        return got


def test_send_one_text_message(capsys: pytest.CaptureFixture[str], broker: EmbeddedBroker) -> None:
    r = run(capsys, broker.url, "send", "queue://hello", "--text", "hi")
    assert r.code == 0, r.err
    assert r.out.startswith("sent 1 message to queue://hello (persistent, priority 4) in ")
    assert r.out.count("\n") == 1 and "last id ID:" in r.out
    (m,) = _take(broker, Queue("hello"))
    assert isinstance(m, TextMessage) and m.text == "hi"
    assert m.jms_delivery_mode == DeliveryMode.PERSISTENT and m.jms_priority == 4
    assert m.jms_expiration == 0
    assert r.out.rstrip().endswith(m.jms_message_id or "?")


def test_send_count(capsys: pytest.CaptureFixture[str], broker: EmbeddedBroker) -> None:
    r = run(capsys, broker.url, "send", "queue://many", "--text", "x", "--count", "5")
    assert r.code == 0 and r.out.startswith("sent 5 messages to queue://many")
    assert [m.text for m in _take(broker, Queue("many"), 5)] == ["x"] * 5  # type: ignore[attr-defined]


def test_send_typed_properties(capsys: pytest.CaptureFixture[str], broker: EmbeddedBroker) -> None:
    props = [
        "region=EU",
        "note:string=a=b",
        "s2:str= spaced ",
        "amount:int=640",
        "big:long=9000000000",
        "small:short=-7",
        "tiny:byte=3",
        "urgent:bool=true",
        "quiet:boolean=FALSE",
        "ratio:double=1.5",
        "f:float=0.25",
        "empty=",
    ]
    argv = ["send", "queue://props", "--text", "p"]
    for p in props:
        argv += ["--property", p]
    r = run(capsys, broker.url, *argv)
    assert r.code == 0, r.err
    (m,) = _take(broker, Queue("props"))
    assert m.get_string_property("region") == "EU"
    assert m.get_string_property("note") == "a=b"
    assert m.get_string_property("s2") == " spaced "
    assert m.get_string_property("empty") == ""
    assert m.get_object_property("amount") == 640
    assert m.get_int_property("amount") == 640
    assert m.get_long_property("big") == 9_000_000_000
    assert m.get_short_property("small") == -7
    assert m.get_byte_property("tiny") == 3
    assert m.get_object_property("urgent") is True
    assert m.get_object_property("quiet") is False
    assert m.get_double_property("ratio") == 1.5
    assert m.get_float_property("f") == 0.25
    # The JMS type is the one asked for: an int property cannot be read as a short.
    with pytest.raises(JMSException):
        m.get_short_property("amount")


def test_send_properties_usable_by_selectors(
    capsys: pytest.CaptureFixture[str], broker: EmbeddedBroker
) -> None:
    for amount in (100, 900):
        r = run(
            capsys, broker.url, "send", "queue://sel", "--text", str(amount),
            "--property", f"amount:int={amount}",
        )  # fmt: skip
        assert r.code == 0
    r = run(capsys, broker.url, "receive", "queue://sel", "--selector", "amount > 500")
    assert r.code == 0 and "text: 900" in r.out


def test_send_delivery_options(capsys: pytest.CaptureFixture[str], broker: EmbeddedBroker) -> None:
    r = run(
        capsys, broker.url, "send", "queue://opts", "--text", "o", "--non-persistent",
        "--priority", "8", "--ttl", "30",
    )  # fmt: skip
    assert r.code == 0
    assert "(non-persistent, priority 8, time to live 30 s)" in r.out
    (m,) = _take(broker, Queue("opts"))
    assert m.jms_delivery_mode == DeliveryMode.NON_PERSISTENT
    assert m.jms_priority == 8
    assert m.jms_expiration - m.jms_timestamp == 30_000
    r = run(capsys, broker.url, "send", "queue://opts", "--text", "p", "--persistent")
    assert r.code == 0 and "(persistent," in r.out
    (m,) = _take(broker, Queue("opts"))
    assert m.jms_delivery_mode == DeliveryMode.PERSISTENT


def test_send_delay(capsys: pytest.CaptureFixture[str], broker: EmbeddedBroker) -> None:
    r = run(capsys, broker.url, "send", "queue://later", "--text", "d", "--delay", "0.4")
    assert r.code == 0 and "delivery delay 0.4 s" in r.out
    with ConnectionFactory(broker.url).create_connection() as conn:
        (st,) = _admin.stat(conn, "queue://later")
        assert (st.depth, st.scheduled) == (1, 1)
        conn.start()
        consumer = conn.create_session().create_consumer(Queue("later"))
        assert consumer.receive(0.1) is None
        m = consumer.receive(2.0)
        assert m is not None and m.jms_delivery_time - m.jms_timestamp == 400


def test_send_to_topic(capsys: pytest.CaptureFixture[str], broker: EmbeddedBroker) -> None:
    with ConnectionFactory(broker.url).create_connection() as conn:
        conn.start()
        sub = conn.create_session().create_consumer(Topic("news"))
        r = run(capsys, broker.url, "send", "topic://news", "--text", "extra", "--count", "2")
        assert r.code == 0 and "to topic://news" in r.out
        assert [sub.receive(1.0).text for _ in range(2)] == ["extra", "extra"]  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("novalue", "write NAME=VALUE"),
        ("n:int=abc", "'abc' is not an integer"),
        ("n:int=", "'' is not an integer"),
        ("n:double=x", "'x' is not a number"),
        ("b:bool=yes", "'yes' is not true or false"),
        ("n:complex=1", "unknown type 'complex'"),
        ("n:int=99999999999", "n:int=99999999999"),
        ("tiny:byte=300", "tiny:byte=300"),
        ("1abc=x", "not a valid property name"),
        ("=x", "must not be None or empty"),
        ("AND=x", "not a valid property name"),
        ("JMSXFoo=x", "reserved"),
    ],
)
def test_send_bad_property(
    capsys: pytest.CaptureFixture[str], broker: EmbeddedBroker, spec: str, fragment: str
) -> None:
    r = run(capsys, broker.url, "send", "queue://bad", "--text", "x", "--property", spec)
    one_line_error(r, 2, "bad property", fragment)
    assert r.out == ""
    with ConnectionFactory(broker.url).create_connection() as conn:
        with pytest.raises(JMSException):
            _admin.stat(conn, "queue://bad")  # nothing was sent: the queue was never created


@pytest.mark.parametrize(
    ("dest", "fragment"),
    [
        ("hello", "cannot parse destination 'hello'"),
        ("queue:/x", "cannot parse destination"),
        ("queue://", "must not be empty"),
        ("queue://a b", "invalid queue name"),
        ("temp-queue://x.1", "temporary destination"),
    ],
)
def test_send_bad_destination(
    capsys: pytest.CaptureFixture[str], broker: EmbeddedBroker, dest: str, fragment: str
) -> None:
    r = run(capsys, broker.url, "send", dest, "--text", "x")
    one_line_error(r, 2, fragment)


@pytest.mark.parametrize(
    "argv",
    [
        ["send", "queue://x"],  # --text is required
        ["send", "queue://x", "--text", "a", "--count", "0"],
        ["send", "queue://x", "--text", "a", "--priority", "10"],
        ["send", "queue://x", "--text", "a", "--priority", "x"],
        ["send", "queue://x", "--text", "a", "--ttl", "-1"],
        ["send", "queue://x", "--text", "a", "--delay", "nan"],
        ["send", "queue://x", "--text", "a", "--persistent", "--non-persistent"],
    ],
)
def test_send_bad_options_are_usage_errors(
    capsys: pytest.CaptureFixture[str], broker: EmbeddedBroker, argv: list[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        run(capsys, broker.url, *argv)
    assert info.value.code == 2
    assert "Traceback" not in capsys.readouterr().err
