"""Conformance tests of the simplified API: JMSContext, JMSProducer, JMSConsumer (catalog CTX,
plus EXC-02/EXC-03 as they apply to contexts).

Each test names the catalog IDs it proves. Fixtures (``factory``, ``broker``, ``make_broker``,
``fake_factory``, ``clock``) come from ``tests/conformance/conftest.py``. "Receives" waits up to
``WAIT`` seconds; "receives nothing" waits ``NOTHING`` seconds.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest

from ternmq.broker.embedded import EmbeddedBroker
from ternmq.client import ConnectionFactory, QueueBrowser, Session
from ternmq.client.context import JMSConsumer, JMSContext, JMSProducer
from ternmq.destination import Queue, TemporaryQueue, TemporaryTopic, Topic
from ternmq.errors import (
    IllegalStateException,
    IllegalStateRuntimeException,
    InvalidClientIDRuntimeException,
    InvalidDestinationException,
    InvalidDestinationRuntimeException,
    InvalidSelectorRuntimeException,
    JMSException,
    JMSRuntimeException,
    JMSSecurityRuntimeException,
    MessageFormatRuntimeException,
    MessageNotWriteableException,
    MessageNotWriteableRuntimeException,
    TransactionRolledBackRuntimeException,
)
from ternmq.message import (
    BytesMessage,
    DeliveryMode,
    MapMessage,
    Message,
    ObjectMessage,
    StreamMessage,
    TextMessage,
)
from ternmq.testing import FakeClock

from ._helpers import delivery_count

WAIT = 2.0
NOTHING = 0.2

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
def ctx(factory: ConnectionFactory) -> Iterator[JMSContext]:
    """An AUTO_ACKNOWLEDGE context, closed after the test."""
    with factory.create_context() as c:
        yield c


@pytest.fixture
def other(factory: ConnectionFactory) -> Iterator[JMSContext]:
    """A second context on its own connection (for "another connection")."""
    with factory.create_context() as c:
        yield c


def _body(consumer: JMSConsumer, cls: type[object] = str) -> object:
    return consumer.receive_body(cls, timeout=WAIT)


def _until_receiving(consumer: JMSConsumer) -> None:
    """Wait until another thread is blocked in ``consumer.receive()`` (white-box peek)."""
    deadline = time.monotonic() + WAIT
    while not consumer._consumer._receiving and time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep(0.02)


class _Recorder:
    """A completion listener recording its calls and the threads they ran on."""

    def __init__(self, during: Callable[[Message], None] | None = None) -> None:
        self.completed: list[Message] = []
        self.failed: list[tuple[Message, Exception]] = []
        self.threads: list[int] = []
        self.during = during
        self.done = threading.Event()

    def on_completion(self, message: Message) -> None:
        self.threads.append(threading.get_ident())
        if self.during is not None:
            self.during(message)
        self.completed.append(message)
        self.done.set()

    def on_exception(self, message: Message, exception: Exception) -> None:
        self.threads.append(threading.get_ident())
        self.failed.append((message, exception))
        self.done.set()


def _close_waits_for_listener(
    consumer: JMSConsumer, send: Callable[[], object], close: Callable[[], None]
) -> None:
    """With a listener on ``consumer`` busy with the message ``send`` sent, ``close()`` (run
    on another thread) returns only after the listener has returned."""
    entered, release = threading.Event(), threading.Event()
    order: list[str] = []

    def listener(m: Message) -> None:
        entered.set()
        release.wait(WAIT)
        order.append("listener returned")

    consumer.message_listener = listener
    send()
    assert entered.wait(WAIT)

    def closing() -> None:
        close()
        order.append("close returned")

    closer = threading.Thread(target=closing)
    closer.start()
    closer.join(0.1)
    assert closer.is_alive(), "close() returned while a listener was running"
    release.set()
    closer.join(WAIT)
    assert order == ["listener returned", "close returned"]


def _temporary_queue_lives_until_last_sibling_closes(
    first: JMSContext, last: JMSContext, tq: TemporaryQueue, other: JMSContext
) -> None:
    """CTX-04: ``tq`` (of the connection ``first`` and ``last`` share) still works after
    ``first`` closes and is gone once ``last`` has closed too; ``other`` is on another
    connection."""
    first.close()
    other.create_producer().send(tq, "still here")
    assert _body(last.create_consumer(tq)) == "still here"
    last.close()
    with pytest.raises(InvalidDestinationException):
        other.create_producer().send(tq, "gone")


def _outcome(fn: Callable[[], object]) -> type[Exception] | None:
    try:
        fn()
    except Exception as exc:
        return type(exc)
    return None


# ---------------------------------------------------------------------------- creation


def test_ctx_01_factory_context_and_mode_constants(factory: ConnectionFactory) -> None:
    """CTX-01: create_context opens a context; constants equal Session's; bad mode raises."""
    assert (JMSContext.SESSION_TRANSACTED, JMSContext.AUTO_ACKNOWLEDGE) == (0, 1)
    assert (JMSContext.CLIENT_ACKNOWLEDGE, JMSContext.DUPS_OK_ACKNOWLEDGE) == (2, 3)
    assert JMSContext.SESSION_TRANSACTED == Session.SESSION_TRANSACTED
    assert JMSContext.AUTO_ACKNOWLEDGE == Session.AUTO_ACKNOWLEDGE
    assert JMSContext.CLIENT_ACKNOWLEDGE == Session.CLIENT_ACKNOWLEDGE
    assert JMSContext.DUPS_OK_ACKNOWLEDGE == Session.DUPS_OK_ACKNOWLEDGE
    for bad in (7, -1, 4):
        with pytest.raises(JMSRuntimeException):
            factory.create_context(session_mode=bad)
    with factory.create_context() as a, factory.create_context() as b:
        q = a.create_queue("q01")
        a.create_producer().send(q, "hello")
        assert _body(b.create_consumer(q)) == "hello"


def test_ctx_01_bad_credentials_raise_security_runtime(
    make_broker: Callable[..., EmbeddedBroker],
) -> None:
    """CTX-01, EXC-03: rejected credentials raise JMSSecurityRuntimeException."""
    secured = make_broker(users={"app": "secret"})
    f = ConnectionFactory(secured.url)
    with pytest.raises(JMSSecurityRuntimeException):
        f.create_context(user="app", password="wrong")
    with f.create_context(user="app", password="secret") as good:
        assert good.session_mode == JMSContext.AUTO_ACKNOWLEDGE


@pytest.mark.parametrize("mode", [0, 1, 2, 3])
def test_ctx_02_session_mode_and_transacted(factory: ConnectionFactory, mode: int) -> None:
    """CTX-02: session_mode is the mode given; transacted exactly for SESSION_TRANSACTED."""
    with factory.create_context(session_mode=mode) as c:
        assert c.session_mode == mode
        assert c.transacted is (mode == JMSContext.SESSION_TRANSACTED)
        sibling = c.create_context(mode)
        assert sibling.session_mode == mode
        assert sibling.transacted is (mode == 0)
        sibling.close()
    with factory.create_context() as d:
        assert d.session_mode == JMSContext.AUTO_ACKNOWLEDGE


def test_ctx_03_sibling_shares_connection_state(factory: ConnectionFactory) -> None:
    """CTX-03: a sibling sees the same client id, started state, exception listener and
    metadata, and create_context does not start the connection."""
    a = factory.create_context()
    a.client_id = "ctx03"

    def listener(exc: JMSRuntimeException) -> None:
        return None

    a.exception_listener = listener
    b = a.create_context(JMSContext.CLIENT_ACKNOWLEDGE)
    assert b.client_id == "ctx03"
    assert b.exception_listener is listener
    assert b.metadata.provider_name == a.metadata.provider_name
    # Not started by create_context: a consumer that does not auto-start gets nothing.
    b.auto_start = False
    q = b.create_queue("q03")
    consumer = b.create_consumer(q)
    a.create_producer().send(q, "m")
    assert consumer.receive(timeout=NOTHING) is None
    a.start()  # started on the sibling: the same connection
    assert _body(consumer) == "m"
    b.close()
    a.close()


def test_ctx_03_create_context_from_another_thread_and_after_close(
    factory: ConnectionFactory,
) -> None:
    """CTX-03, CTX-21: create_context works from another thread while the context is
    dedicated to a listener thread; on a closed context it raises."""
    a = factory.create_context()
    q = a.create_queue("q03b")
    got = threading.Event()
    a.create_consumer(q).message_listener = lambda m: got.set()
    made: list[JMSContext] = []
    t = threading.Thread(target=lambda: made.append(a.create_context()))
    t.start()
    t.join(WAIT)
    assert made and made[0].session_mode == JMSContext.AUTO_ACKNOWLEDGE
    made[0].create_producer().send(q, "x")
    assert got.wait(WAIT)
    made[0].close()
    a.close()
    with pytest.raises(IllegalStateRuntimeException):
        a.create_context()


def test_ctx_04_close_rolls_back_and_keeps_client_messages(factory: ConnectionFactory) -> None:
    """CTX-04: close rolls back the transaction, does not acknowledge CLIENT messages,
    closes consumers and browsers; a second close does nothing; `with` closes."""
    with factory.create_context() as check:
        q = check.create_queue("q04")
        x = factory.create_context(session_mode=JMSContext.SESSION_TRANSACTED)
        x.create_producer().send(q, "tx")
        x.close()
        x.close()
        reader = check.create_consumer(q)
        assert reader.receive(timeout=NOTHING) is None
        check.create_producer().send(q, "client")
        reader.close()
        with factory.create_context(session_mode=JMSContext.CLIENT_ACKNOWLEDGE) as y:
            c = y.create_consumer(q)
            b = y.create_browser(q)
            assert _body(c) == "client"
        with pytest.raises(IllegalStateRuntimeException):
            c.receive_no_wait()
        with pytest.raises(IllegalStateRuntimeException):
            list(b)
        again = check.create_consumer(q).receive(timeout=WAIT)
        assert isinstance(again, TextMessage) and again.jms_redelivered is True


def test_ctx_04_last_context_closes_connection_and_temporaries(
    factory: ConnectionFactory, other: JMSContext
) -> None:
    """CTX-04, CTX-16: the connection (and its temporary queue) lives until the last sibling
    closes."""
    a = factory.create_context()
    tq = a.create_temporary_queue()
    b = a.create_context()
    _temporary_queue_lives_until_last_sibling_closes(a, b, tq, other)


def test_ctx_05_close_waits_for_running_listener(factory: ConnectionFactory) -> None:
    """CTX-05: close() returns only after the running listener has returned."""
    ctx = factory.create_context()
    q = ctx.create_queue("q05")
    _close_waits_for_listener(
        ctx.create_consumer(q), lambda: ctx.create_producer().send(q, "m"), ctx.close
    )


def test_ctx_05_close_ends_pending_receive(factory: ConnectionFactory) -> None:
    """CTX-05, CTX-34: a receive blocked in another thread returns None when the context
    closes, and close() returns after it."""
    ctx = factory.create_context()
    consumer = ctx.create_consumer(ctx.create_queue("q05b"))
    results: list[object] = []
    waiting = threading.Thread(target=lambda: results.append(consumer.receive()))
    waiting.start()
    _until_receiving(consumer)
    ctx.close()
    waiting.join(WAIT)
    assert not waiting.is_alive()
    assert results == [None]


def test_ctx_06_everything_raises_after_close(factory: ConnectionFactory) -> None:
    """CTX-06, CTX-25: after close every method of the context, its consumers, browsers and
    producers (but close) raises IllegalStateRuntimeException; messages stay usable."""
    ctx = factory.create_context(session_mode=JMSContext.CLIENT_ACKNOWLEDGE)
    q = ctx.create_queue("q06")
    p = ctx.create_producer()
    c = ctx.create_consumer(q)
    b = ctx.create_browser(q)
    made = ctx.create_text_message("made")
    p.send(q, "got")
    got = c.receive(timeout=WAIT)
    assert isinstance(got, TextMessage)
    ctx.close()
    calls: dict[str, Callable[[], object]] = {
        "session_mode": lambda: ctx.session_mode,
        "transacted": lambda: ctx.transacted,
        "client_id": lambda: ctx.client_id,
        "auto_start": lambda: ctx.auto_start,
        "set auto_start": lambda: setattr(ctx, "auto_start", False),
        "exception_listener": lambda: ctx.exception_listener,
        "metadata": lambda: ctx.metadata,
        "start": ctx.start,
        "stop": ctx.stop,
        "create_context": ctx.create_context,
        "create_producer": ctx.create_producer,
        "create_consumer": lambda: ctx.create_consumer(q),
        "create_browser": lambda: ctx.create_browser(q),
        "create_shared_consumer": lambda: ctx.create_shared_consumer(Topic("t"), "s"),
        "create_queue": lambda: ctx.create_queue("x"),
        "create_topic": lambda: ctx.create_topic("x"),
        "create_temporary_queue": ctx.create_temporary_queue,
        "create_temporary_topic": ctx.create_temporary_topic,
        "create_message": ctx.create_message,
        "create_text_message": ctx.create_text_message,
        "create_bytes_message": ctx.create_bytes_message,
        "create_map_message": ctx.create_map_message,
        "create_stream_message": ctx.create_stream_message,
        "create_object_message": ctx.create_object_message,
        "unsubscribe": lambda: ctx.unsubscribe("s"),
        "commit": ctx.commit,
        "rollback": ctx.rollback,
        "recover": ctx.recover,
        "acknowledge": ctx.acknowledge,
        "producer.send": lambda: p.send(q, "x"),
        "producer.set_priority": lambda: p.set_priority(5),
        "producer.get_priority": p.get_priority,
        "producer.set_property": lambda: p.set_property("a", 1),
        "consumer.receive": lambda: c.receive(timeout=0.01),
        "consumer.receive_no_wait": c.receive_no_wait,
        "consumer.receive_body": lambda: c.receive_body(str, timeout=0.01),
        "consumer.receive_body_no_wait": lambda: c.receive_body_no_wait(str),
        "consumer.message_listener": lambda: c.message_listener,
        "consumer.message_selector": lambda: c.message_selector,
        "browser.iter": lambda: list(b),
        "browser.queue": lambda: b.queue,
        "browser.message_selector": lambda: b.message_selector,
    }
    wrong = {
        name: _outcome(fn)
        for name, fn in calls.items()
        if _outcome(fn) is not IllegalStateRuntimeException
    }
    assert wrong == {}
    ctx.close()
    c.close()
    b.close()
    assert made.text == "made" and got.text == "got"
    made.set_string_property("still", "writable")
    with pytest.raises(IllegalStateRuntimeException):
        got.acknowledge()


# ---------------------------------------------------------------------- connection-level


def test_ctx_07_client_id_only_as_first_action(factory: ConnectionFactory) -> None:
    """CTX-07: reading is not an action; setting is allowed only first; otherwise, or on a
    context from create_context, IllegalStateRuntimeException."""
    a = factory.create_context()
    assert a.client_id is None  # reading is not an action
    a.client_id = "ctx07"
    assert a.client_id == "ctx07"
    with pytest.raises(IllegalStateRuntimeException):
        a.client_id = "again"
    b = factory.create_context()
    b.create_producer()
    with pytest.raises(IllegalStateRuntimeException):
        b.client_id = "late"
    c = factory.create_context()
    c.auto_start = True  # an attribute assignment is an action
    with pytest.raises(IllegalStateRuntimeException):
        c.client_id = "late"
    d = factory.create_context()
    sibling = d.create_context()
    with pytest.raises(IllegalStateRuntimeException):
        sibling.client_id = "sib"
    for x in (sibling, d, c, b, a):
        x.close()


def test_ctx_07_duplicate_and_administrative_client_id(broker: EmbeddedBroker) -> None:
    """CTX-07: an id in use elsewhere raises InvalidClientIDRuntimeException; an id
    configured on the factory cannot be changed."""
    f = ConnectionFactory(broker.url)
    with f.create_context() as first:
        first.client_id = "dup"
        second = f.create_context()
        with pytest.raises(InvalidClientIDRuntimeException):
            second.client_id = "dup"
        second.client_id = "other"  # a refused id is not an action: another may be tried
        assert second.client_id == "other"
        second.close()
    admin = ConnectionFactory(broker.url, client_id="admin-id")
    with admin.create_context() as c:
        assert c.client_id == "admin-id"
        with pytest.raises(IllegalStateRuntimeException):
            c.client_id = "mine"


def test_ctx_08_auto_start_scenario_s1(factory: ConnectionFactory) -> None:
    """CTX-S1, CTX-08: default contexts start on consumer creation; auto_start False does
    not; after stop() a consumer-creating call restarts delivery."""
    with factory.create_context() as ctx:
        q = ctx.create_queue("s1")
        ctx.create_producer().send(q, "hi")
        c = ctx.create_consumer(q)
        assert c.receive_body(str, timeout=WAIT) == "hi"
    with factory.create_context() as k:
        assert k.auto_start is True
        k.auto_start = False
        q2, q3 = k.create_queue("s1-2"), k.create_queue("s1-3")
        k.create_producer().send(q2, "two")
        c2 = k.create_consumer(q2)
        assert c2.receive(timeout=NOTHING) is None
        k.start()
        assert _body(c2) == "two"
        k.auto_start = True
        k.stop()
        k.create_producer().send(q3, "three")
        assert _body(k.create_consumer(q3)) == "three"


@pytest.mark.parametrize("kind", ["consumer", "durable", "shared", "shared_durable"])
def test_ctx_08_every_consumer_call_auto_starts(factory: ConnectionFactory, kind: str) -> None:
    """CTX-08, A-06: each of the four consumer-creating calls starts a stopped connection."""
    with factory.create_context() as ctx:
        ctx.client_id = "ctx08"
        t = ctx.create_topic("t08")
        ctx.stop()
        make: dict[str, Callable[[], JMSConsumer]] = {
            "consumer": lambda: ctx.create_consumer(t),
            "durable": lambda: ctx.create_durable_consumer(t, "d"),
            "shared": lambda: ctx.create_shared_consumer(t, "s"),
            "shared_durable": lambda: ctx.create_shared_durable_consumer(t, "sd"),
        }
        c = make[kind]()
        ctx.create_producer().send(t, "x")
        assert _body(c) == "x"


def test_ctx_08_browser_producer_send_and_assignment_never_start(
    factory: ConnectionFactory,
) -> None:
    """CTX-08, PTP-13: create_browser, create_producer, send and assigning auto_start do not
    start the connection; a sibling with auto_start True does."""
    a = factory.create_context()
    q = a.create_queue("q08")
    b = a.create_context()
    b.auto_start = False
    c = b.create_consumer(q)
    browser = a.create_browser(q)
    a.create_producer().send(q, "m")
    a.auto_start = True
    assert [m.get_body(str) for m in browser] == ["m"]  # browsing works while stopped
    assert c.receive(timeout=NOTHING) is None
    a.create_consumer(a.create_queue("other"))  # the sibling with auto_start starts it
    assert _body(c) == "m"
    b.close()
    a.close()


def test_ctx_09_start_stop_whole_connection(factory: ConnectionFactory) -> None:
    """CTX-09: stop()/start() of one context act on the shared connection; repeated calls
    are ignored; while stopped receives wait and sending works."""
    a = factory.create_context()
    b = a.create_context()
    q = a.create_queue("q09")
    c = a.create_consumer(q)
    b.stop()
    b.stop()
    b.create_producer().send(q, "while stopped")
    assert c.receive(timeout=NOTHING) is None
    a.start()
    a.start()
    assert _body(c) == "while stopped"
    b.close()
    a.close()


def test_ctx_09_stop_waits_for_listener(factory: ConnectionFactory) -> None:
    """CTX-09: stop() returns only after running listeners have returned, and no listener
    runs while stopped."""
    ctx = factory.create_context()
    q = ctx.create_queue("q09b")
    entered, release = threading.Event(), threading.Event()
    calls: list[str] = []

    def listener(m: Message) -> None:
        calls.append(m.get_body(str) or "")
        entered.set()
        release.wait(WAIT)

    ctx.create_consumer(q).message_listener = listener
    ctx.create_producer().send(q, "1")
    assert entered.wait(WAIT)
    stopper = threading.Thread(target=ctx.stop)
    stopper.start()
    stopper.join(0.1)
    assert stopper.is_alive(), "stop() returned while a listener was running"
    release.set()
    stopper.join(WAIT)
    ctx.create_producer().send(q, "2")
    time.sleep(0.1)
    assert calls == ["1"]
    ctx.start()
    deadline = time.monotonic() + WAIT
    while len(calls) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert calls == ["1", "2"]
    ctx.close()


def test_ctx_10_exception_listener_gets_runtime_exception(
    make_broker: Callable[..., EmbeddedBroker],
) -> None:
    """CTX-10, A-25: the listener (None by default, shared with siblings) receives a
    JMSRuntimeException when the connection fails; calls then raise IllegalState."""
    b = make_broker()
    ctx = ConnectionFactory(b.url).create_context()
    assert ctx.exception_listener is None
    got: list[Exception] = []
    called = threading.Event()

    def listener(exc: JMSRuntimeException) -> None:
        got.append(exc)
        called.set()

    sibling = ctx.create_context()
    sibling.exception_listener = listener
    assert ctx.exception_listener is listener
    ctx.create_consumer(ctx.create_queue("q10"))
    b.stop()
    assert called.wait(WAIT)
    assert len(got) == 1 and isinstance(got[0], JMSRuntimeException)
    with pytest.raises(IllegalStateRuntimeException):
        ctx.create_producer()
    sibling.close()
    ctx.close()


def test_ctx_11_metadata(ctx: JMSContext) -> None:
    """CTX-11: metadata is the connection's metadata."""
    md = ctx.metadata
    assert md.jms_version == "2.0"
    assert (md.jms_major_version, md.jms_minor_version) == (2, 0)
    assert md.provider_name == "ternmq"
    assert "JMSXDeliveryCount" in md.jmsx_property_names


# -------------------------------------------------------------------------- session-level


def test_ctx_12_commit_and_rollback(factory: ConnectionFactory, other: JMSContext) -> None:
    """CTX-12, CTX-33: commit/rollback need SESSION_TRANSACTED; sends and receives belong
    to the transaction."""
    with factory.create_context() as auto:
        with pytest.raises(IllegalStateRuntimeException):
            auto.commit()
        with pytest.raises(IllegalStateRuntimeException):
            auto.rollback()
    q = other.create_queue("q12")
    reader = other.create_consumer(q)
    with factory.create_context(session_mode=JMSContext.SESSION_TRANSACTED) as x:
        p = x.create_producer()
        p.send(q, "rolled back")
        x.rollback()
        p.send(q, "committed")
        assert reader.receive(timeout=NOTHING) is None
        x.commit()
        assert _body(reader) == "committed"
        assert reader.receive(timeout=NOTHING) is None
        # receives are part of the transaction
        other.create_producer().send(x.create_queue("q12-in"), "in")
        c = x.create_consumer(x.create_queue("q12-in"))
        assert _body(c) == "in"
        x.rollback()
        again = c.receive(timeout=WAIT)
        assert again is not None and again.jms_redelivered and delivery_count(again) == 2
        x.commit()
        assert c.receive(timeout=NOTHING) is None


def test_ctx_12_commit_ending_in_rollback(factory: ConnectionFactory) -> None:
    """CTX-12: a commit the broker rolls back raises TransactionRolledBackRuntimeException."""
    with factory.create_context(session_mode=JMSContext.SESSION_TRANSACTED) as x:
        tq = x.create_temporary_queue()
        x.create_producer().send(tq, "m")
        tq.delete()
        with pytest.raises(TransactionRolledBackRuntimeException):
            x.commit()


def test_ctx_13_recover(factory: ConnectionFactory) -> None:
    """CTX-13: recover raises in a transacted context; otherwise redelivers the
    unacknowledged messages, marked, oldest first."""
    with factory.create_context(session_mode=JMSContext.SESSION_TRANSACTED) as x:
        with pytest.raises(IllegalStateRuntimeException):
            x.recover()
    with factory.create_context(session_mode=JMSContext.CLIENT_ACKNOWLEDGE) as y:
        q = y.create_queue("q13")
        y.create_producer().send(q, "a").send(q, "b")
        c = y.create_consumer(q)
        assert [_body(c), _body(c)] == ["a", "b"]
        y.recover()
        first, second = c.receive(timeout=WAIT), c.receive(timeout=WAIT)
        assert first is not None and second is not None
        assert [first.get_body(str), second.get_body(str)] == ["a", "b"]
        assert first.jms_redelivered and delivery_count(first) == 2


def test_ctx_14_acknowledge_all_consumed(factory: ConnectionFactory, other: JMSContext) -> None:
    """CTX-14: ctx.acknowledge() acknowledges every message the session consumed, across
    consumers; a no-op in other modes; raises once closed."""
    qa, qb = other.create_queue("q14a"), other.create_queue("q14b")
    other.create_producer().send(qa, "a").send(qb, "b")
    y = factory.create_context(session_mode=JMSContext.CLIENT_ACKNOWLEDGE)
    ca, cb = y.create_consumer(qa), y.create_consumer(qb)
    assert _body(ca) == "a" and _body(cb) == "b"
    y.acknowledge()
    y.close()
    assert other.create_consumer(qa).receive(timeout=NOTHING) is None
    assert other.create_consumer(qb).receive_no_wait() is None
    with pytest.raises(IllegalStateRuntimeException):
        y.acknowledge()
    for mode in (JMSContext.AUTO_ACKNOWLEDGE, 3, JMSContext.SESSION_TRANSACTED):
        with factory.create_context(session_mode=mode) as z:
            z.acknowledge()  # nothing to do, no error


def test_ctx_15_message_factories(ctx: JMSContext, factory: ConnectionFactory) -> None:
    """CTX-15: the factories behave like Session's; messages can be sent through another
    connection."""
    assert type(ctx.create_message()) is Message
    assert ctx.create_text_message().text is None
    assert ctx.create_text_message("t").text == "t"
    assert isinstance(ctx.create_bytes_message(), BytesMessage)
    assert isinstance(ctx.create_map_message(), MapMessage)
    assert isinstance(ctx.create_stream_message(), StreamMessage)
    assert ctx.create_object_message().object is None
    assert ctx.create_object_message([1, 2]).object == [1, 2]
    with pytest.raises(MessageFormatRuntimeException):
        ctx.create_object_message(lambda: None)
    m = ctx.create_map_message()
    m.set_int("n", 3)
    with factory.create_context() as elsewhere:
        q = elsewhere.create_queue("q15")
        elsewhere.create_producer().send(q, m)
        got = elsewhere.create_consumer(q).receive(timeout=WAIT)
    assert isinstance(got, MapMessage) and got.get_int("n") == 3


def test_ctx_16_destinations(ctx: JMSContext) -> None:
    """CTX-16: create_queue/create_topic build references; temporaries are bound to the
    connection (deletion at close: CTX-04 test)."""
    assert ctx.create_queue("a") == Queue("a")
    assert ctx.create_topic("a") == Topic("a")
    tq, tt = ctx.create_temporary_queue(), ctx.create_temporary_topic()
    assert isinstance(tq, TemporaryQueue) and isinstance(tt, TemporaryTopic)
    c = ctx.create_consumer(tq)
    ctx.create_producer().send(tq, "t")
    assert _body(c) == "t"


def test_ctx_17_create_consumer(ctx: JMSContext, other: JMSContext) -> None:
    """CTX-17: queue or topic; None, a foreign object or a bad selector raise runtime
    flavours; the selector applies."""
    for bad in (None, "queue://q", 42):
        with pytest.raises(InvalidDestinationRuntimeException):
            ctx.create_consumer(bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidSelectorRuntimeException):
        ctx.create_consumer(Queue("q17"), "color = ")
    q, t = ctx.create_queue("q17"), ctx.create_topic("t17")
    sel = ctx.create_consumer(q, "color = 'red'")
    topic = ctx.create_consumer(t)
    m = other.create_text_message("blue")
    m.set_string_property("color", "blue")
    p = other.create_producer().send(q, m)
    p.set_property("color", "red").send(q, "red").send(t, "topic")
    assert _body(sel) == "red"
    assert _body(topic) == "topic"


def test_ctx_18_durable_and_shared_consumers(factory: ConnectionFactory) -> None:
    """CTX-18: unset client id, conflicts and bad topics raise the runtime flavours;
    shared subscriptions are shared across contexts."""
    t = Topic("t18")
    with factory.create_context() as anon:
        with pytest.raises(IllegalStateRuntimeException):
            anon.create_durable_consumer(t, "d")
        for bad in (None, Queue("q")):
            for call in (
                anon.create_shared_consumer,
                anon.create_shared_durable_consumer,
            ):
                with pytest.raises(InvalidDestinationRuntimeException):
                    call(bad, "s")  # type: ignore[arg-type]
        with pytest.raises(InvalidDestinationRuntimeException):
            anon.create_shared_durable_consumer(anon.create_temporary_topic(), "s")
        a1 = anon.create_shared_consumer(t, "shared")
        with factory.create_context() as anon2:
            a2 = anon2.create_shared_consumer(t, "shared")
            anon.create_producer().send(t, "1").send(t, "2")
            got = [m for m in (a1.receive(0.5), a2.receive(0.5)) if m is not None]
            got += [m for m in (a1.receive_no_wait(), a2.receive_no_wait()) if m is not None]
            assert sorted(m.get_body(str) or "" for m in got) == ["1", "2"]
    with factory.create_context() as named:
        named.client_id = "ctx18"
        with pytest.raises(InvalidDestinationRuntimeException):
            named.create_durable_consumer(named.create_temporary_topic(), "d")
        with pytest.raises(InvalidDestinationRuntimeException):
            named.create_durable_consumer(None, "d")  # type: ignore[arg-type]
        d = named.create_durable_consumer(t, "d")
        with pytest.raises(JMSRuntimeException):
            named.create_durable_consumer(t, "d")
        with pytest.raises(JMSRuntimeException):
            named.create_shared_durable_consumer(t, "d")
        d.close()
        named.create_producer().send(t, "kept")
        assert _body(named.create_durable_consumer(t, "d")) == "kept"


def test_ctx_19_browser(ctx: JMSContext) -> None:
    """CTX-19: create_browser returns a QueueBrowser over the queue; errors are runtime
    flavours."""
    q = ctx.create_queue("q19")
    p = ctx.create_producer()
    p.set_property("n", 1).send(q, "one")
    p.set_property("n", 2).send(q, "two")
    b = ctx.create_browser(q)
    assert isinstance(b, QueueBrowser)
    assert b.queue == q and b.message_selector is None
    assert [m.get_body(str) for m in b] == ["one", "two"]
    assert [m.get_body(str) for m in ctx.create_browser(q, "n = 2")] == ["two"]
    assert ctx.create_browser(q, "").message_selector is None
    assert [m.get_body(str) for m in b.get_enumeration()] == ["one", "two"]  # not consumed
    for bad in (None, Topic("t")):
        with pytest.raises(InvalidDestinationRuntimeException):
            ctx.create_browser(bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidSelectorRuntimeException):
        ctx.create_browser(q, "n >")
    b.close()
    with pytest.raises(IllegalStateRuntimeException):
        list(b)


def test_ctx_20_unsubscribe(factory: ConnectionFactory) -> None:
    """CTX-20: unsubscribe follows SUB-27..31 with runtime flavours."""
    with factory.create_context() as ctx:
        ctx.client_id = "ctx20"
        t = ctx.create_topic("t20")
        d = ctx.create_durable_consumer(t, "d")
        with pytest.raises(JMSRuntimeException):
            ctx.unsubscribe("d")
        with pytest.raises(InvalidDestinationRuntimeException):
            ctx.unsubscribe("no-such-subscription")
        d.close()
        ctx.create_producer().send(t, "before")
        ctx.unsubscribe("d")
        fresh = ctx.create_durable_consumer(t, "d")
        assert fresh.receive(timeout=NOTHING) is None


# ---------------------------------------------------------------------------- restrictions


def test_ctx_21_second_listener_from_setup_thread(ctx: JMSContext) -> None:
    """CTX-21, CTX-37: with the connection running and one listener set, setting a listener
    on a further consumer from the setup thread is safe; listeners run one at a time."""
    qa, qb = ctx.create_queue("q21a"), ctx.create_queue("q21b")
    lock = threading.Lock()
    state = {"running": 0, "max": 0, "seen": 0}
    done = threading.Event()

    def listener(m: Message) -> None:
        with lock:
            state["running"] += 1
            state["max"] = max(state["max"], state["running"])
        time.sleep(0.005)
        with lock:
            state["running"] -= 1
            state["seen"] += 1
            if state["seen"] == 10:
                done.set()

    ca, cb = ctx.create_consumer(qa), ctx.create_consumer(qb)
    ca.message_listener = listener
    p = ctx.create_producer()
    for i in range(5):
        p.send(qa, f"a{i}")
    cb.message_listener = listener
    assert cb.message_listener is listener
    for i in range(5):
        p.send(qb, f"b{i}")
    assert done.wait(WAIT)
    assert state["max"] == 1


def test_ctx_22_listener_restrictions_scenario_s3(
    factory: ConnectionFactory, other: JMSContext
) -> None:
    """CTX-S3, CTX-22, CTX-39: inside a listener, stop(), close() of its own context and
    close() of its own consumer raise IllegalStateRuntimeException; sending, commit, closing
    other consumers and sibling contexts, and stop() on a sibling (raises) behave as CTX-22."""
    x = factory.create_context(session_mode=JMSContext.SESSION_TRANSACTED)
    sibling = x.create_context()
    q, replies = x.create_queue("s3"), x.create_queue("s3-replies")
    spare = x.create_consumer(x.create_queue("s3-spare"))
    outcomes: dict[str, type[Exception] | None] = {}
    finished = threading.Event()
    holder: list[JMSConsumer] = []

    def listener(m: Message) -> None:
        outcomes["stop"] = _outcome(x.stop)
        outcomes["sibling.stop"] = _outcome(sibling.stop)
        outcomes["close"] = _outcome(x.close)
        outcomes["consumer.close"] = _outcome(holder[0].close)
        outcomes["send"] = _outcome(lambda: x.create_producer().send(replies, "reply"))
        outcomes["commit"] = _outcome(x.commit)
        outcomes["spare.close"] = _outcome(spare.close)
        outcomes["sibling.close"] = _outcome(sibling.close)
        finished.set()

    c = x.create_consumer(q)
    holder.append(c)
    c.message_listener = listener
    other.create_producer().send(q, "go")
    assert finished.wait(WAIT)
    assert outcomes == {
        "stop": IllegalStateRuntimeException,
        "sibling.stop": IllegalStateRuntimeException,
        "close": IllegalStateRuntimeException,
        "consumer.close": IllegalStateRuntimeException,
        "send": None,
        "commit": None,
        "spare.close": None,
        "sibling.close": None,
    }
    assert _body(other.create_consumer(replies)) == "reply"
    x.close()


def test_ctx_22_listener_may_acknowledge_and_recover(factory: ConnectionFactory) -> None:
    """CTX-22: acknowledge() and recover() of its own context are allowed in a listener."""
    y = factory.create_context(session_mode=JMSContext.CLIENT_ACKNOWLEDGE)
    q = y.create_queue("q22")
    seen: list[tuple[str, bool]] = []
    errors: list[Exception] = []
    done = threading.Event()

    def listener(m: Message) -> None:
        seen.append((m.get_body(str) or "", m.jms_redelivered))
        try:
            if not m.jms_redelivered:
                y.recover()
            else:
                y.acknowledge()
                done.set()
        except Exception as exc:
            errors.append(exc)
            done.set()

    y.create_consumer(q).message_listener = listener
    y.create_producer().send(q, "m")
    assert done.wait(WAIT)
    assert errors == [] and seen == [("m", False), ("m", True)]
    y.close()


def test_ctx_23_completion_listener_restrictions_scenario_s4(
    factory: ConnectionFactory, other: JMSContext
) -> None:
    """CTX-S4, CTX-23, CTX-32, CTX-05: inside on_completion, commit/rollback/close of its
    own context raise; the callback runs once, off the caller's thread; close waits for an
    incomplete asynchronous send's callback."""
    x = factory.create_context(session_mode=JMSContext.SESSION_TRANSACTED)
    q = x.create_queue("s4")
    inside: dict[str, type[Exception] | None] = {}

    def during(m: Message) -> None:
        inside["commit"] = _outcome(x.commit)
        inside["rollback"] = _outcome(x.rollback)
        inside["close"] = _outcome(x.close)

    cl = _Recorder(during)
    p = x.create_producer().set_async(cl)
    p.send(q, "m")
    assert cl.done.wait(WAIT)
    assert len(cl.completed) == 1 and cl.failed == []
    assert cl.threads[0] != threading.get_ident()
    assert inside == {
        "commit": IllegalStateRuntimeException,
        "rollback": IllegalStateRuntimeException,
        "close": IllegalStateRuntimeException,
    }
    x.commit()
    assert _body(other.create_consumer(q)) == "m"
    returned: list[str] = []

    def slow(m: Message) -> None:
        time.sleep(0.1)
        returned.append("callback")

    p.set_async(_Recorder(slow)).send(q, "second")
    x.close()
    assert returned == ["callback"]


def test_ctx_24_contexts_are_application_managed(ctx: JMSContext) -> None:
    """CTX-24: no container-managed contexts: the calls an injected context refuses work."""

    def listener(exc: JMSRuntimeException) -> None:
        return None

    ctx.exception_listener = listener
    ctx.auto_start = False
    ctx.start()
    ctx.stop()
    sibling = ctx.create_context(JMSContext.CLIENT_ACKNOWLEDGE)
    sibling.close()
    assert ctx.exception_listener is listener


def test_ctx_25_runtime_flavours_only(factory: ConnectionFactory) -> None:
    """CTX-25, EXC-02, EXC-03 (S-EXC-1): context failures are runtime flavours that are also
    their checked twins; message methods keep checked types; argument errors stay
    ValueError/TypeError."""
    with factory.create_context() as ctx:
        with pytest.raises(IllegalStateRuntimeException) as info:
            ctx.commit()
        assert isinstance(info.value, IllegalStateException)
        assert isinstance(info.value, JMSRuntimeException)
        q = ctx.create_queue("q25")
        c = ctx.create_consumer(q)
        with pytest.raises(ValueError):
            c.receive(timeout=-1)
        with pytest.raises(TypeError):
            c.receive_body("str")  # type: ignore[arg-type]
        ctx.create_producer().send(q, "read only")
        got = c.receive(timeout=WAIT)
        assert isinstance(got, TextMessage)
        with pytest.raises(MessageNotWriteableException) as checked:
            got.text = "changed"
        assert not isinstance(checked.value, JMSRuntimeException)
        with pytest.raises(ValueError):
            ctx.create_producer().set_property("", 1)
        with pytest.raises(MessageNotWriteableRuntimeException):
            ctx.create_producer().set_property("k", 1).send(q, got)


def test_ctx_25_subclassed_checked_error_keeps_its_twin(ctx: JMSContext) -> None:
    """CTX-25, EXC-03: a failure that is a MessageFormatException (here the codec's limit
    error for too many properties) leaves a JMSProducer as MessageFormatRuntimeException."""
    p = ctx.create_producer()
    for i in range(1100):
        p.set_property(f"p{i}", i)
    with pytest.raises(MessageFormatRuntimeException):
        p.send(ctx.create_queue("q25b"), "too many properties")


# ------------------------------------------------------------------------------ JMSProducer


def test_ctx_26_producer_defaults(ctx: JMSContext) -> None:
    """CTX-26: a new producer has the defaults and no close()."""
    p = ctx.create_producer()
    assert isinstance(p, JMSProducer)
    assert not hasattr(p, "close")
    assert p.get_delivery_mode() == DeliveryMode.PERSISTENT
    assert p.get_priority() == 4
    assert p.get_time_to_live() == 0 and p.get_delivery_delay() == 0
    assert p.get_disable_message_id() is False and p.get_disable_message_timestamp() is False
    assert p.get_async() is None and p.get_property_names() == set()
    assert p.get_jms_correlation_id() is None and p.get_jms_type() is None
    assert p.get_jms_reply_to() is None
    q = ctx.create_queue("q26")
    p.send(q, "d")
    m = ctx.create_consumer(q).receive(timeout=WAIT)
    assert m is not None
    assert m.jms_delivery_mode == DeliveryMode.PERSISTENT and m.jms_priority == 4
    assert m.jms_expiration == 0 and m.jms_message_id is not None and m.jms_timestamp > 0
    assert m.jms_correlation_id is None and m.jms_type is None and m.jms_reply_to is None
    assert m.get_property_names() == {"JMSXDeliveryCount"}


def test_ctx_27_fluent_setters_and_invalid_values(ctx: JMSContext) -> None:
    """CTX-27: every setter returns the same producer; values persist; invalid values raise
    JMSRuntimeException."""
    p = ctx.create_producer()
    cl = _Recorder()
    setters: list[Callable[[], JMSProducer]] = [
        lambda: p.set_delivery_mode(DeliveryMode.NON_PERSISTENT),
        lambda: p.set_priority(9),
        lambda: p.set_time_to_live(5.0),
        lambda: p.set_delivery_delay(0),
        lambda: p.set_disable_message_id(True),
        lambda: p.set_disable_message_timestamp(True),
        lambda: p.set_async(cl),
        lambda: p.set_async(None),
        lambda: p.set_property("k", "v"),
        lambda: p.set_jms_correlation_id("c"),
        lambda: p.set_jms_type("t"),
        lambda: p.set_jms_reply_to(Queue("r")),
    ]
    for setter in setters:
        assert setter() is p
    q = ctx.create_queue("q27")
    c = ctx.create_consumer(q)
    for body in ("1", "2"):
        p.send(q, body)
        m = c.receive(timeout=WAIT)
        assert m is not None
        assert (m.jms_delivery_mode, m.jms_priority) == (DeliveryMode.NON_PERSISTENT, 9)
        assert m.jms_message_id is None and m.jms_timestamp == 0
        assert m.get_string_property("k") == "v" and m.jms_type == "t"
        assert m.jms_correlation_id == "c" and m.jms_reply_to == Queue("r")
    invalid: list[Callable[[], JMSProducer]] = [
        lambda: p.set_delivery_mode(3),
        lambda: p.set_priority(10),
        lambda: p.set_priority(-1),
        lambda: p.set_time_to_live(-1.0),
        lambda: p.set_delivery_delay(-0.5),
    ]
    for bad in invalid:
        with pytest.raises(JMSRuntimeException):
            bad()
    assert p.get_priority() == 9


def test_ctx_28_properties_applied_to_every_message(ctx: JMSContext) -> None:
    """CTX-28: set_property takes set_object_property's types, replaces a same-named
    property of a sent Message and leaves the others alone."""
    p = ctx.create_producer()
    p.set_property("b", True).set_property("l", 2**40).set_property("d", 1.5)
    p.set_property("s", "str").set_property("n", None)
    with pytest.raises(MessageFormatRuntimeException):
        p.set_property("bad", [1])  # type: ignore[arg-type]
    with pytest.raises(MessageFormatRuntimeException):
        p.set_property("big", 2**70)
    for name in (None, ""):
        with pytest.raises(ValueError):
            p.set_property(name, 1)  # type: ignore[arg-type]
    q = ctx.create_queue("q28")
    msg = ctx.create_text_message("own")
    msg.set_string_property("s", "mine")
    msg.set_int_property("keep", 7)
    msg.jms_type = "own-type"
    p.set_jms_type("producer-type").send(q, msg)
    got = ctx.create_consumer(q).receive(timeout=WAIT)
    assert got is not None
    assert got.get_boolean_property("b") is True
    assert got.get_long_property("l") == 2**40
    assert got.get_property_type("l") == "long"
    assert got.get_double_property("d") == 1.5
    assert got.get_string_property("s") == "str"
    assert got.property_exists("n") and got.get_object_property("n") is None
    assert got.get_int_property("keep") == 7
    assert got.jms_type == "producer-type"


def test_ctx_29_optional_read_side(ctx: JMSContext) -> None:
    """CTX-29 (OPTIONAL): getters, typed property reads, clear_properties, correlation id as
    bytes."""
    p = ctx.create_producer().set_property("i", 12).set_property("t", "34")
    assert p.property_exists("i") and not p.property_exists("zz")
    assert p.get_property("i") == 12 and p.get_property_names() == {"i", "t"}
    assert p.get_int_property("t") == 34 and p.get_string_property("i") == "12"
    assert p.get_long_property("i") == 12 and p.get_double_property("t") == 34.0
    for read in (p.get_boolean_property, p.get_double_property):
        with pytest.raises(MessageFormatRuntimeException):
            read("i")  # a long converts only to long and String
    assert p.clear_properties() is p and p.get_property_names() == set()
    p.set_jms_correlation_id_as_bytes(b"\x00\x01")
    assert p.get_jms_correlation_id_as_bytes() == b"\x00\x01"
    q = ctx.create_queue("q29")
    p.send(q, "x")
    got = ctx.create_consumer(q).receive(timeout=WAIT)
    assert got is not None and got.get_jms_correlation_id_as_bytes() == b"\x00\x01"


def test_ctx_30_send_bodies(ctx: JMSContext) -> None:
    """CTX-30, A-16: each body type maps to its message type; send returns the producer."""
    q = ctx.create_queue("q30")
    p = ctx.create_producer()
    assert p.send(q, "text") is p
    p.send(q, b"\x01\x02").send(q, bytearray(b"\x03")).send(q, {"k": "v", "n": 1, "b": b"x"})
    p.send(q, None).send(q, (1, "two")).send(q, ctx.create_message())
    c = ctx.create_consumer(q)
    got = [c.receive(timeout=WAIT) for _ in range(7)]
    assert isinstance(got[0], TextMessage) and got[0].text == "text"
    assert isinstance(got[1], BytesMessage) and got[1].get_body(bytes) == b"\x01\x02"
    assert isinstance(got[2], BytesMessage) and got[2].get_body(bytes) == b"\x03"
    assert isinstance(got[3], MapMessage)
    assert got[3].get_body(dict) == {"k": "v", "n": 1, "b": b"x"}
    assert isinstance(got[4], TextMessage) and got[4].text is None
    assert isinstance(got[5], ObjectMessage) and got[5].object == (1, "two")
    assert type(got[6]) is Message


def test_ctx_30_send_errors(ctx: JMSContext, factory: ConnectionFactory) -> None:
    """CTX-30: bad dicts and unpicklable objects raise MessageFormatRuntimeException; a
    None, non-destination or deleted temporary target InvalidDestinationRuntimeException."""
    q = ctx.create_queue("q30e")
    p = ctx.create_producer()
    with pytest.raises(MessageFormatRuntimeException):
        p.send(q, {1: "int key"})
    with pytest.raises(MessageFormatRuntimeException):
        p.send(q, {"k": [1, 2]})
    with pytest.raises(MessageFormatRuntimeException):
        p.send(q, lambda: None)
    for bad in (None, "queue://q30e", 3):
        with pytest.raises(InvalidDestinationRuntimeException):
            p.send(bad, "x")  # type: ignore[arg-type]
    with factory.create_context() as owner:
        tq = owner.create_temporary_queue()
    with pytest.raises(InvalidDestinationRuntimeException):
        p.send(tq, "x")
    assert ctx.create_consumer(q).receive_no_wait() is None


def test_ctx_31_headers_on_sent_message(fake_factory: ConnectionFactory, clock: FakeClock) -> None:
    """CTX-31: after a synchronous send the Message shows the headers used for that send."""
    with fake_factory.create_context() as ctx:
        q = ctx.create_queue("q31")
        p = ctx.create_producer().set_time_to_live(10.0).set_delivery_delay(2.0)
        m = ctx.create_text_message("h")
        p.set_priority(6).set_delivery_mode(DeliveryMode.NON_PERSISTENT).send(q, m)
        now = clock.now_ms()
        assert m.jms_destination == q
        assert m.jms_delivery_mode == DeliveryMode.NON_PERSISTENT and m.jms_priority == 6
        assert m.jms_timestamp == now
        assert m.jms_expiration == now + 10_000 and m.jms_delivery_time == now + 2_000
        assert m.jms_message_id is not None and m.jms_message_id.startswith("ID:")
        m2 = ctx.create_message()
        p.set_disable_message_id(True).set_disable_message_timestamp(True).send(q, m2)
        assert m2.jms_message_id is None and m2.jms_timestamp == 0
        c = ctx.create_consumer(q)
        assert c.receive_no_wait() is None  # not yet due
        clock.advance(2.0)
        got = c.receive(timeout=WAIT)
        assert got is not None and got.jms_message_id == m.jms_message_id


def test_ctx_32_async_send(make_broker: Callable[..., EmbeddedBroker]) -> None:
    """CTX-32: asynchronous sends return at once; callbacks run off the sending thread, one
    at a time in send order; failures go to on_exception; failures detectable in the call
    raise there; set_async(None) restores synchronous sends."""
    b = make_broker(max_message_bytes=2000)
    with ConnectionFactory(b.url).create_context() as ctx:
        q = ctx.create_queue("q32")
        cl = _Recorder()
        p = ctx.create_producer().set_async(cl)
        assert p.get_async() is cl
        sent = [ctx.create_text_message(str(i)) for i in range(5)]
        for m in sent:
            p.send(q, m)
        p.send(q, "x" * 5000)  # refused by the broker: reported, not raised
        with pytest.raises(InvalidDestinationRuntimeException):
            p.send(None, "no destination")  # type: ignore[arg-type]
        deadline = time.monotonic() + WAIT
        while len(cl.completed) + len(cl.failed) < 6 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert cl.completed == sent
        assert len(cl.failed) == 1 and isinstance(cl.failed[0][1], JMSException)
        assert threading.get_ident() not in cl.threads
        assert len(set(cl.threads)) == 1  # one completion thread: one callback at a time
        p.set_async(None).send(q, "sync")
        assert len(cl.completed) == 5


def test_ctx_33_transacted_sends_and_order(factory: ConnectionFactory, other: JMSContext) -> None:
    """CTX-33: a JMSProducer's sends belong to the context's transaction and keep the order
    of all the context's sends."""
    q = other.create_queue("q33")
    reader = other.create_consumer(q)
    with factory.create_context(session_mode=JMSContext.SESSION_TRANSACTED) as x:
        p1, p2 = x.create_producer(), x.create_producer().set_priority(4)
        p1.send(q, "a")
        p2.send(q, "b")
        p1.send(q, "c")
        assert reader.receive(timeout=NOTHING) is None
        x.commit()
        assert [_body(reader), _body(reader), _body(reader)] == ["a", "b", "c"]
        p2.send(q, "gone")
        x.rollback()
        x.commit()
        assert reader.receive(timeout=NOTHING) is None


# ------------------------------------------------------------------------------ JMSConsumer


def test_ctx_34_receive_variants(ctx: JMSContext) -> None:
    """CTX-34: receive() waits for a message; with a timeout it returns None when the time
    is up; receive_no_wait only returns a message available at once."""
    q = ctx.create_queue("q34")
    c = ctx.create_consumer(q)
    assert c.receive_no_wait() is None
    assert c.receive(timeout=0.05) is None
    assert c.receive(timeout=0) is None
    p = ctx.create_producer()
    timer = threading.Timer(0.05, lambda: p.send(q, "later"))
    safety = threading.Timer(WAIT, c.close)  # a broken receive() fails instead of hanging
    timer.start()
    safety.start()
    got = c.receive()
    safety.cancel()
    timer.join()
    assert isinstance(got, TextMessage) and got.text == "later"
    p.send(q, "now")
    now = c.receive_no_wait()
    assert now is not None and now.get_body(str) == "now"
    with pytest.raises(ValueError):
        c.receive(timeout=-0.1)


def test_ctx_35_receive_body(ctx: JMSContext) -> None:
    """CTX-35: receive_body returns the body by type; None only for no message; a plain
    Message, a StreamMessage, a missing body or a non-instance raise MessageFormat."""
    q = ctx.create_queue("q35")
    p = ctx.create_producer()
    c = ctx.create_consumer(q)
    p.send(q, "s").send(q, b"b").send(q, {"k": 1}).send(q, [1, 2]).send(q, "any")
    assert c.receive_body(str, timeout=WAIT) == "s"
    assert c.receive_body(bytes, timeout=WAIT) == b"b"
    assert c.receive_body(dict, timeout=WAIT) == {"k": 1}
    assert c.receive_body(list, timeout=WAIT) == [1, 2]
    assert c.receive_body(object, timeout=WAIT) == "any"
    assert c.receive_body_no_wait(str) is None
    assert c.receive_body(str, timeout=0.05) is None
    stream = ctx.create_stream_message()
    stream.write_string("x")
    bad = [ctx.create_message(), stream, None, ctx.create_object_message(None), 5]
    for body in bad:
        p.send(q, body)
        with pytest.raises(MessageFormatRuntimeException):
            c.receive_body(str, timeout=WAIT)
        assert c.receive(timeout=WAIT) is not None  # still there (AUTO: CTX-36)
    p.send(q, "text")
    with pytest.raises(MessageFormatRuntimeException):
        c.receive_body(bytes, timeout=WAIT)
    assert c.receive_body_no_wait(str) == "text"


@pytest.mark.parametrize("prefetch", [100, 0])
@pytest.mark.parametrize("mode", [JMSContext.AUTO_ACKNOWLEDGE, JMSContext.DUPS_OK_ACKNOWLEDGE])
def test_ctx_36_failed_receive_body_not_consumed_scenario_s5(
    broker: EmbeddedBroker, mode: int, prefetch: int
) -> None:
    """CTX-S5, CTX-36, HDR-28: in AUTO/DUPS_OK a failed receive_body counts as not made: the
    message comes next, unmarked, uncounted."""
    f = ConnectionFactory(broker.url, prefetch=prefetch)
    with f.create_context(session_mode=mode) as ctx:
        q = ctx.create_queue("s5")
        s = ctx.create_stream_message()
        s.write_int(1)
        ctx.create_producer().send(q, s).send(q, "T")
        c = ctx.create_consumer(q)
        with pytest.raises(MessageFormatRuntimeException):
            c.receive_body(str, timeout=WAIT)
        with pytest.raises(MessageFormatRuntimeException):
            c.receive_body_no_wait(str)
        got = c.receive(timeout=WAIT)
        assert isinstance(got, StreamMessage)
        assert got.jms_redelivered is False and delivery_count(got) == 1
        assert c.receive_body(str, timeout=WAIT) == "T"
        assert c.receive(timeout=NOTHING) is None


def test_ctx_36_client_ack_failed_receive_body_scenario_s5(factory: ConnectionFactory) -> None:
    """CTX-S5, CTX-36: in CLIENT_ACKNOWLEDGE the failed message counts as delivered and
    comes back only after recover(), marked."""
    with factory.create_context(session_mode=JMSContext.CLIENT_ACKNOWLEDGE) as ctx:
        q = ctx.create_queue("s5c")
        s = ctx.create_stream_message()
        s.write_int(1)
        ctx.create_producer().send(q, s).send(q, "T")
        c = ctx.create_consumer(q)
        with pytest.raises(MessageFormatRuntimeException):
            c.receive_body(str, timeout=WAIT)
        assert c.receive_body(str, timeout=WAIT) == "T"
        ctx.recover()
        got = c.receive(timeout=WAIT)
        assert isinstance(got, StreamMessage)
        assert got.jms_redelivered is True and delivery_count(got) == 2


def test_ctx_36_transacted_failed_receive_body(factory: ConnectionFactory) -> None:
    """CTX-36: in a transacted context the failed message is part of the transaction and
    comes back after rollback(), marked; commit consumes it."""
    with factory.create_context(session_mode=JMSContext.SESSION_TRANSACTED) as ctx:
        q = ctx.create_queue("s5t")
        ctx.create_producer().send(q, ctx.create_message()).send(q, "T")
        ctx.commit()
        c = ctx.create_consumer(q)
        with pytest.raises(MessageFormatRuntimeException):
            c.receive_body(str, timeout=WAIT)
        assert c.receive_body(str, timeout=WAIT) == "T"
        ctx.rollback()
        got = c.receive(timeout=WAIT)
        assert got is not None and type(got) is Message
        assert got.jms_redelivered is True and delivery_count(got) == 2
        assert c.receive_body(str, timeout=WAIT) == "T"
        ctx.commit()
        assert c.receive(timeout=NOTHING) is None


def test_ctx_37_message_listener_property(ctx: JMSContext) -> None:
    """CTX-37: assigning a callable switches to asynchronous delivery, None removes it,
    reading returns the current one."""
    q = ctx.create_queue("q37")
    c = ctx.create_consumer(q)
    assert c.message_listener is None
    got: list[Message] = []
    arrived = threading.Event()

    def listener(m: Message) -> None:
        got.append(m)
        arrived.set()

    c.message_listener = listener
    assert c.message_listener is listener
    with pytest.raises(IllegalStateRuntimeException):
        c.receive_no_wait()
    ctx.create_producer().send(q, "async")
    assert arrived.wait(WAIT) and got[0].get_body(str) == "async"
    c.message_listener = None
    assert c.message_listener is None
    ctx.create_producer().send(q, "sync")
    assert _body(c) == "sync"
    with pytest.raises(TypeError):
        c.message_listener = "not callable"  # type: ignore[assignment]


def test_ctx_38_message_selector(ctx: JMSContext) -> None:
    """CTX-38: message_selector is the selector given, None for none or ""."""
    q = ctx.create_queue("q38")
    assert ctx.create_consumer(q).message_selector is None
    assert ctx.create_consumer(q, "").message_selector is None
    assert ctx.create_consumer(q, "a = 1").message_selector == "a = 1"


def test_ctx_39_consumer_close(ctx: JMSContext) -> None:
    """CTX-39: close() wakes a receive blocked in another thread, is idempotent, and
    afterwards receive* raise IllegalStateRuntimeException; iteration stops."""
    q = ctx.create_queue("q39")
    c = ctx.create_consumer(q)
    results: list[object] = []
    t = threading.Thread(target=lambda: results.append(c.receive()))
    t.start()
    _until_receiving(c)
    c.close()
    t.join(WAIT)
    assert results == [None]
    c.close()
    for call in (c.receive_no_wait, lambda: c.receive_body(str, timeout=0.01)):
        with pytest.raises(IllegalStateRuntimeException):
            call()
    assert list(c) == []
    c2 = ctx.create_consumer(q)
    ctx.create_producer().send(q, "1").send(q, "2")
    safety = threading.Timer(WAIT, c2.close)  # a broken iteration fails instead of hanging
    safety.start()
    it = iter(c2)
    assert [next(it).get_body(str), next(it).get_body(str)] == ["1", "2"]
    safety.cancel()
    c2.close()
    assert list(it) == []


def test_ctx_39_close_waits_for_listener_and_ends_durable_activity(
    factory: ConnectionFactory,
) -> None:
    """CTX-39: close() waits for its running listener; a closed durable consumer leaves its
    subscription inactive (messages are kept, unsubscribe is allowed)."""
    with factory.create_context() as ctx:
        ctx.client_id = "ctx39"
        t = ctx.create_topic("t39")
        d = ctx.create_durable_consumer(t, "d")
        _close_waits_for_listener(d, lambda: ctx.create_producer().send(t, "first"), d.close)
        ctx.create_producer().send(t, "kept")
        assert _body(ctx.create_durable_consumer(t, "d")) == "kept"


# ------------------------------------------------------------------------------- scenarios


def test_ctx_s2_shared_connection_client_id_no_local_temporaries(
    factory: ConnectionFactory, other: JMSContext
) -> None:
    """CTX-S2, CTX-03, CTX-07, SUB-07, TMP-05."""
    a = factory.create_context()
    a.client_id = "c1"
    tq = a.create_temporary_queue()
    b = a.create_context(JMSContext.CLIENT_ACKNOWLEDGE)
    assert b.client_id == "c1"
    with pytest.raises(IllegalStateRuntimeException):
        b.client_id = "x"
    t = b.create_topic("T")
    c = b.create_consumer(t, no_local=True)
    a.create_producer().send(t, "from a")
    other.create_producer().send(t, "from elsewhere")
    assert _body(c) == "from elsewhere"
    assert c.receive(timeout=NOTHING) is None
    _temporary_queue_lives_until_last_sibling_closes(a, b, tq, other)


def test_ctx_s6_producer_settings_scenario(ctx: JMSContext) -> None:
    """CTX-S6, CTX-27, CTX-28, CTX-30, CTX-31."""
    q = ctx.create_queue("s6")
    c = ctx.create_consumer(q)
    p = (
        ctx.create_producer()
        .set_property("k", 5)
        .set_priority(7)
        .set_time_to_live(10.0)
        .set_jms_type("T")
    )
    p.send(q, {"a": 1})
    got = c.receive(timeout=WAIT)
    assert isinstance(got, MapMessage)
    assert got.get_long("a") == 1 and got.get_long_property("k") == 5
    assert got.jms_priority == 7 and got.jms_type == "T"
    assert got.jms_expiration == got.jms_timestamp + 10_000
    m = ctx.create_message()
    m.set_long_property("k", 1)
    p.send(q, m)
    got = c.receive(timeout=WAIT)
    assert got is not None and got.get_long_property("k") == 5
    p.send(q, b"\x01")
    got = c.receive(timeout=WAIT)
    assert isinstance(got, BytesMessage) and got.body_length == 1
    with pytest.raises(InvalidDestinationRuntimeException):
        p.send(None, "x")  # type: ignore[arg-type]
    with pytest.raises(JMSRuntimeException):
        p.set_priority(10)


def test_ctx_s7_close_without_commit_or_ack(factory: ConnectionFactory, other: JMSContext) -> None:
    """CTX-S7, CTX-04, CTX-06."""
    q = other.create_queue("s7")
    x = factory.create_context(session_mode=JMSContext.SESSION_TRANSACTED)
    x.create_producer().send(q, "m")
    x.close()
    reader = other.create_consumer(q)
    assert reader.receive(timeout=NOTHING) is None
    reader.close()
    other.create_producer().send(q, "m2")
    y = factory.create_context(session_mode=JMSContext.CLIENT_ACKNOWLEDGE)
    m2 = y.create_consumer(q).receive(timeout=WAIT)
    assert m2 is not None and m2.get_body(str) == "m2"
    y.close()
    again = other.create_consumer(q).receive(timeout=WAIT)
    assert again is not None and again.get_body(str) == "m2" and again.jms_redelivered
    with pytest.raises(IllegalStateRuntimeException):
        y.create_producer()
    with pytest.raises(IllegalStateException):
        m2.acknowledge()
    y.close()


def test_ctx_s8_modes_and_their_restrictions(factory: ConnectionFactory) -> None:
    """CTX-S8, CTX-01, CTX-02, CTX-12, CTX-13."""
    with factory.create_context() as ctx:
        assert ctx.session_mode == 1 and ctx.transacted is False
        with pytest.raises(IllegalStateRuntimeException):
            ctx.commit()
    with factory.create_context(session_mode=JMSContext.SESSION_TRANSACTED) as tx:
        assert tx.transacted is True
        with pytest.raises(IllegalStateRuntimeException):
            tx.recover()
    with pytest.raises(JMSRuntimeException):
        factory.create_context(session_mode=7)
