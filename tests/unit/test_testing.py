"""``ternmq.testing``: the fake clock and the engine harness, as a user's test uses them."""

from __future__ import annotations

import math

import pytest

from ternmq import ConnectionFactory, EmbeddedBroker, JMSSecurityException, Queue
from ternmq.message import TextMessage
from ternmq.message.codec import decode_message, encode_message
from ternmq.protocol import commands as c
from ternmq.testing import EngineHarness, FakeClock, HarnessConnection


def _text(body: str) -> bytes:
    m = TextMessage()
    m.text = body
    return encode_message(m)


def _body(cmd: c.Command) -> str | None:
    assert isinstance(cmd, c.Deliver)
    m = decode_message(cmd.message)
    assert isinstance(m, TextMessage)
    return m.text


def _consumer(h: EngineHarness, dest: str = "queue://q") -> HarnessConnection:
    conn = h.connect()
    assert type(conn.request(c.CreateSession(session_id=1))) is c.Ok
    create = c.CreateConsumer(session_id=1, consumer_id=1, destination=dest)
    assert type(conn.request(create)) is c.Ok
    return conn


def _producer(h: EngineHarness) -> HarnessConnection:
    conn = h.connect()
    assert type(conn.request(c.CreateSession(session_id=1))) is c.Ok
    return conn


# ---- FakeClock ---------------------------------------------------------------------------------
def test_fake_clock_moves_only_when_advanced() -> None:
    clock = FakeClock(start_ms=1_000)
    assert clock.now_ms() == 1_000
    clock.advance(1.5)
    assert clock.now_ms() == 2_500
    with pytest.raises(ValueError, match="backwards"):
        clock.advance(-1)
    assert clock.now_ms() == 2_500


def test_fake_clock_calls_listeners_and_never_lets_a_host_sleep_for_it() -> None:
    clock = FakeClock()
    seen: list[int] = []
    clock.add_listener(lambda: seen.append(clock.now_ms()))
    assert clock.sleep_time(clock.now_ms()) == math.inf  # the host waits for advance()
    assert clock.sleep_time(clock.now_ms() + 10_000) == math.inf
    clock.advance(2)
    assert seen == [clock.now_ms()]


def test_fake_clock_drives_an_embedded_broker_without_a_timer_thread() -> None:
    """The embedded host asks the clock how long to sleep: a fake clock arms no timer, and
    advancing it runs the due work before ``advance`` returns."""
    clock = FakeClock()
    with EmbeddedBroker("testing-kit-clock", clock=clock) as broker:
        with ConnectionFactory(broker.url).create_connection() as conn:
            conn.start()
            session = conn.create_session()
            producer = session.create_producer(Queue("later"))
            producer.delivery_delay = 5.0
            producer.send(session.create_text_message("x"))
            consumer = session.create_consumer(Queue("later"))
            assert consumer.receive_no_wait() is None
            assert broker._timer is None
            clock.advance(5)
            m = consumer.receive(2.0)
            assert isinstance(m, TextMessage) and m.text == "x"


# ---- EngineHarness -----------------------------------------------------------------------------
def test_harness_request_returns_the_reply_and_collects_events() -> None:
    h = EngineHarness()
    consumer = _consumer(h)
    producer = _producer(h)
    reply = producer.request(c.Send(session_id=1, destination="queue://q", message=_text("a")))
    assert type(reply) is c.Ok and reply.corr
    [deliver] = consumer.events
    assert isinstance(deliver, c.Deliver) and deliver.consumer_id == 1
    assert _body(deliver) == "a"
    assert producer.events == []


def test_harness_take_events_empties_the_list() -> None:
    h = EngineHarness()
    consumer = _consumer(h)
    producer = _producer(h)
    for body in ("a", "b"):
        producer.request(c.Send(session_id=1, destination="queue://q", message=_text(body)))
    assert [_body(e) for e in consumer.take_events()] == ["a", "b"]
    assert consumer.events == [] and consumer.take_events() == []


def test_harness_keeps_a_given_corr_and_answers_a_refusal_with_an_error_reply() -> None:
    h = EngineHarness()
    conn = h.connect()
    reply = conn.request(
        c.CreateConsumer(corr=77, session_id=9, consumer_id=1, destination="queue://q")
    )
    assert type(reply) is c.Error and reply.corr == 77
    assert reply.kind.endswith("Exception") and reply.message


def test_harness_fake_clock_releases_a_scheduled_message() -> None:
    h = EngineHarness()
    consumer = _consumer(h)
    producer = _producer(h)
    due = h.clock.now_ms() + 60_000
    producer.request(
        c.Send(session_id=1, destination="queue://q", message=_text("later"), delivery_time=due)
    )
    assert consumer.events == []
    assert h.next_deadline() == due
    h.clock.advance(59)
    assert consumer.events == []
    h.clock.advance(1)
    assert [_body(e) for e in consumer.take_events()] == ["later"]


def test_harness_oneway_requests_get_no_reply_but_a_refused_quiet_send_an_event() -> None:
    h = EngineHarness()
    producer = _producer(h)
    producer.send_oneway(
        c.Send(session_id=9, destination="queue://q", message=_text("x"), quiet=True)
    )
    [failed] = producer.take_events()
    assert isinstance(failed, c.SendFailed) and failed.session_id == 9


def test_harness_acknowledged_messages_are_not_delivered_again() -> None:
    h = EngineHarness()
    consumer = _consumer(h)
    producer = _producer(h)
    producer.request(c.Send(session_id=1, destination="queue://q", message=_text("a")))
    [deliver] = consumer.take_events()
    assert isinstance(deliver, c.Deliver)
    consumer.request(c.Ack(session_id=1, delivery_ids=[deliver.delivery_id]))
    consumer.drop()
    again = _consumer(h)
    assert again.events == []


def test_harness_a_dropped_connection_gives_its_unacknowledged_message_back() -> None:
    h = EngineHarness()
    first = _consumer(h)
    producer = _producer(h)
    producer.request(c.Send(session_id=1, destination="queue://q", message=_text("a")))
    assert len(first.take_events()) == 1
    first.drop()
    second = _consumer(h)
    [again] = second.events
    assert _body(again) == "a"


def test_harness_connect_with_users_refuses_wrong_credentials() -> None:
    h = EngineHarness(users={"app": "secret"})
    assert h.connect(user="app", password="secret") is not None
    with pytest.raises(JMSSecurityException):
        h.connect(user="app", password="wrong")


def test_harness_settings_reach_the_broker() -> None:
    h = EngineHarness(queues=["declared"])
    conn = h.connect()
    reply = conn.request(c.Stat())
    assert isinstance(reply, c.StatResult)
    assert [d.name for d in reply.destinations] == ["queue://declared"]
    with pytest.raises(TypeError):
        EngineHarness(no_such_setting=1)


def test_the_module_doc_example_runs() -> None:
    """The harness example of ``ternmq.testing``'s documentation runs as it stands."""
    import textwrap

    import ternmq.testing

    doc = ternmq.testing.__doc__
    assert doc is not None
    example = doc.split("::")[2].split("The commands are")[0]
    namespace: dict[str, object] = {}
    exec(compile(textwrap.dedent(example), "ternmq.testing", "exec"), namespace)
    assert isinstance(namespace["deliver"], c.Deliver)
