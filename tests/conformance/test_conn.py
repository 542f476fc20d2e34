"""Conformance tests of group CONN: connection factory and connection (catalog
``requirements-api-a.md``, CONN-01..CONN-31 and scenarios S-CONN-1..S-CONN-9).

Real waiting is kept to "expect nothing" windows of at most ``QUIET`` seconds; every thread
started here is joined with a timeout. Broker internals are read only through the helpers in
the "broker state" section, for requirements about broker state that no public API shows.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

import ternmq
from ternmq.broker.embedded import EmbeddedBroker
from ternmq.client import Connection, ConnectionFactory, Session
from ternmq.destination import Queue, Topic
from ternmq.errors import (
    IllegalStateException,
    InvalidClientIDException,
    InvalidDestinationException,
    InvalidSelectorException,
    JMSException,
    JMSRuntimeException,
    JMSSecurityException,
    ResourceAllocationException,
)
from ternmq.message import Message

from ._helpers import (
    Q,
    R,
    Worker,
    browse_via,
    delivery_count,
    lose_link,
    not_raising_checked,
    send_via,
    wait_for,
)

WAIT = 5.0  # upper bound for "expect something"
QUIET = 0.3  # real wait for "expect nothing"


# ---- broker state, through the public API ----------------------------------------------------
LIMIT = 4  # max_connections of the brokers whose connections are counted


def _broker_connection_count(broker: EmbeddedBroker) -> int:
    """How many client connections the broker holds open (CONN-03: no half-open leftovers).

    The broker was made with ``max_connections=LIMIT`` and the credentials app/secret: open
    connections until it refuses one with ResourceAllocationException; it held LIMIT minus
    the number admitted. Every probe is closed again before this returns."""
    probes: list[Connection] = []
    factory = ConnectionFactory(broker.url, user="app", password="secret")
    try:
        for _ in range(LIMIT + 1):
            try:
                probes.append(factory.create_connection())
            except ResourceAllocationException:
                return LIMIT - len(probes)
        raise AssertionError(f"the broker admitted {LIMIT + 1} connections past its limit")
    finally:
        for conn in probes:
            conn.close()


# ---- factory, authentication, creation -------------------------------------------------------
def test_conn_01_concurrent_create_session_on_one_connection(connection: Connection) -> None:
    """CONN-01: two threads calling create_session() on one connection at the same time each
    get distinct, working sessions."""
    barrier = threading.Barrier(2)
    per_thread = 15

    def make() -> list[Session]:
        barrier.wait(WAIT)
        return [connection.create_session() for _ in range(per_thread)]

    workers = [Worker(make).start() for _ in range(2)]
    sessions = [s for w in workers for s in w.join()]
    assert len({id(s) for s in sessions}) == 2 * per_thread
    for i, s in enumerate(sessions):
        s.create_producer(Q).send(s.create_text_message(f"m{i}"))
    k = connection.create_session().create_consumer(Q)
    got = [k.receive(WAIT) for _ in sessions]
    assert sorted(m.text for m in got if m is not None) == sorted(  # type: ignore[attr-defined]
        f"m{i}" for i in range(len(sessions))
    )


def test_conn_01_factory_is_safe_for_concurrent_use(factory: ConnectionFactory) -> None:
    """CONN-01: one ConnectionFactory used by several threads at once gives distinct,
    working connections."""
    barrier = threading.Barrier(3)

    def make() -> list[Connection]:
        barrier.wait(WAIT)
        return [factory.create_connection() for _ in range(5)]

    workers = [Worker(make).start() for _ in range(3)]
    conns = [c for w in workers for c in w.join()]
    try:
        assert len({id(c) for c in conns}) == 15
        for i, c in enumerate(conns):
            s = c.create_session()
            s.create_producer(Q).send(s.create_text_message(f"c{i}"))
        assert sorted(browse_via(factory)) == sorted(f"c{i}" for i in range(15))  # type: ignore[type-var]
    finally:
        for c in conns:
            c.close()


def test_conn_02_credentials_given_at_creation_win_over_factory(
    make_broker: Callable[..., EmbeddedBroker],
) -> None:
    """CONN-02: credentials passed to create_connection() win over the factory's; the
    factory's are used when none are passed."""
    b = make_broker(users={"app": "secret"})
    wrong_defaults = ConnectionFactory(b.url, user="app", password="wrong")
    with wrong_defaults.create_connection(user="app", password="secret") as c:
        c.create_session().create_producer(Q).send(Message())
    with pytest.raises(JMSSecurityException):
        wrong_defaults.create_connection()
    good_defaults = ConnectionFactory(b.url, user="app", password="secret")
    with good_defaults.create_connection() as c:
        assert c.create_session().transacted is False
    with pytest.raises(JMSSecurityException):
        good_defaults.create_connection(user="app", password="nope")


def test_conn_02_no_credentials_runs_as_default_identity(
    factory: ConnectionFactory, make_broker: Callable[..., EmbeddedBroker]
) -> None:
    """CONN-02: without credentials the connection runs under the broker's default identity
    when the broker permits it; otherwise authentication fails (CONN-03)."""
    with factory.create_connection() as c:
        c.start()
        s = c.create_session()
        s.create_producer(Q).send(s.create_text_message("anon"))
        assert s.create_consumer(Q).receive(WAIT).text == "anon"  # type: ignore[union-attr]
    secured = make_broker(users={"app": "secret"})
    with pytest.raises(JMSSecurityException):
        ConnectionFactory(secured.url).create_connection()


def test_s_conn_7_bad_password_raises_security_exception(
    make_broker: Callable[..., EmbeddedBroker],
) -> None:
    """S-CONN-7, CONN-03, EXC-06: a rejected user/password raises JMSSecurityException (the
    checked flavour) at create_connection(), and leaves no connection on the broker."""
    b = make_broker(users={"app": "secret"}, max_connections=LIMIT)
    f = ConnectionFactory(b.url)
    keep = f.create_connection(user="app", password="secret")
    try:
        before = _broker_connection_count(b)
        assert before == 1
        for user, password in (("app", "wrong"), ("nobody", "secret"), ("app", None)):
            with pytest.raises(JMSSecurityException) as ei:
                f.create_connection(user=user, password=password)
            assert not isinstance(ei.value, JMSRuntimeException)
            assert _broker_connection_count(b) == before
    finally:
        keep.close()
    assert _broker_connection_count(b) == 0


def test_s_conn_7_bad_password_on_create_context(
    make_broker: Callable[..., EmbeddedBroker],
) -> None:
    """S-CONN-7, CONN-03, CONN-02: create_context() with a rejected password raises
    JMSSecurityRuntimeException (also a JMSSecurityException) and leaves no connection;
    credentials passed to create_context() win over the factory's."""
    from ternmq.errors import JMSSecurityRuntimeException

    b = make_broker(users={"app": "secret"}, max_connections=LIMIT)
    f = ConnectionFactory(b.url, user="app", password="wrong")
    with pytest.raises(JMSSecurityRuntimeException) as ei:
        f.create_context(user="app", password="wrong")
    assert isinstance(ei.value, JMSSecurityException)
    with pytest.raises(JMSSecurityRuntimeException):
        f.create_context()
    assert _broker_connection_count(b) == 0
    with f.create_context(user="app", password="secret") as ctx:
        assert _broker_connection_count(b) == 1
        ctx.create_producer().send(Q, "through a context")
    assert browse_via(ConnectionFactory(b.url, user="app", password="secret")) == [
        "through a context"
    ]


def test_conn_04_unreachable_broker_names_the_address() -> None:
    """CONN-04 (address part, transport-independent): a factory whose broker cannot be
    reached makes create_connection() raise JMSException naming the address tried. The
    linked OS error of S-EXC-2 exists only over tcp; the vm stand-in is in test_exc.py."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(JMSException) as ei:
        ConnectionFactory(f"tcp://127.0.0.1:{port}").create_connection()
    assert f"127.0.0.1:{port}" in str(ei.value)


def test_conn_05_sessions_from_stopped_and_started_connection(factory: ConnectionFactory) -> None:
    """CONN-05: create_session() works on a stopped and on a started connection."""
    with factory.create_connection() as c:
        stopped_session = c.create_session()
        stopped_session.create_producer(Q).send(stopped_session.create_text_message("a"))
        c.start()
        started_session = c.create_session(False, Session.CLIENT_ACKNOWLEDGE)
        assert started_session.acknowledge_mode == Session.CLIENT_ACKNOWLEDGE
        m = started_session.create_consumer(Q).receive(WAIT)
        assert m is not None and m.text == "a"  # type: ignore[attr-defined]


# ---- client identifier -----------------------------------------------------------------------
def test_conn_06_administrative_client_id_cannot_be_changed(broker: EmbeddedBroker) -> None:
    """CONN-06: a client id configured on the factory (argument or URL option) is the
    connection's client_id from the start; assigning one (even the same) raises
    IllegalStateException."""
    for f in (
        ConnectionFactory(broker.url, client_id="ADM"),
        ConnectionFactory(f"{broker.url}?client_id=ADM"),
    ):
        with f.create_connection() as c:
            assert c.client_id == "ADM"
            with pytest.raises(IllegalStateException):
                c.client_id = "ADM"
            with pytest.raises(IllegalStateException):
                c.client_id = "OTHER"
            assert c.client_id == "ADM"


def test_s_conn_6_client_id_rules(factory: ConnectionFactory) -> None:
    """S-CONN-6, CONN-06, CONN-07, CONN-08: set once as the first action; a duplicate is
    refused while the holder is open; free again after it closes; too late after
    create_session() or start()."""
    c1 = factory.create_connection()
    c1.client_id = "A"
    assert c1.client_id == "A"
    with pytest.raises(IllegalStateException):
        c1.client_id = "B"
    assert c1.client_id == "A"
    c2 = factory.create_connection()
    with pytest.raises(InvalidClientIDException):
        c2.client_id = "A"
    assert c2.client_id is None
    # the first connection is unaffected
    c1.start()
    s1 = c1.create_session()
    s1.create_producer(Q).send(s1.create_text_message("still works"))
    assert s1.create_consumer(Q).receive(WAIT).text == "still works"  # type: ignore[union-attr]
    c1.close()
    c3 = factory.create_connection()
    c3.client_id = "A"
    assert c3.client_id == "A"
    c4 = factory.create_connection()
    c4.create_session()
    with pytest.raises(IllegalStateException):
        c4.client_id = "Z"
    c5 = factory.create_connection()
    c5.start()
    with pytest.raises(IllegalStateException):
        c5.client_id = "Y"
    for c in (c2, c3, c4, c5):
        c.close()


def test_conn_07_actions_that_lock_the_client_id(factory: ConnectionFactory) -> None:
    """CONN-07: after create_session(), start(), stop() or an earlier assignment, assigning
    client_id raises IllegalStateException; a failed (refused) assignment does not lock it."""
    actions: dict[str, Callable[[Connection], object]] = {
        "create_session": lambda c: c.create_session(),
        "start": lambda c: c.start(),
        "stop": lambda c: c.stop(),
        "start+stop": lambda c: (c.start(), c.stop()),
    }
    for name, act in actions.items():
        with factory.create_connection() as c:
            act(c)
            with pytest.raises(IllegalStateException):
                c.client_id = f"id-{name}"
            assert c.client_id is None, name
    with factory.create_connection() as holder, factory.create_connection() as c:
        holder.client_id = "TAKEN"
        with pytest.raises(InvalidClientIDException):
            c.client_id = "TAKEN"
        c.client_id = "FREE"  # a refused assignment was not an action
        assert c.client_id == "FREE"


def test_conn_07_reading_attributes_does_not_lock_the_client_id(
    factory: ConnectionFactory,
) -> None:
    """CONN-07 (A-02): reading client_id, metadata or exception_listener and assigning
    exception_listener are not "other actions"."""
    with factory.create_connection() as c:
        assert c.client_id is None
        assert c.metadata.provider_name == "ternmq"
        assert c.exception_listener is None

        def listener(exc: JMSException) -> None:
            pass

        c.exception_listener = listener
        c.client_id = "FIRST"
        assert c.client_id == "FIRST"


@pytest.mark.parametrize(
    "bad",
    [None, "", "x" * 257, "a\x00b", "tab\there", "new\nline", "del\x7f"],
    ids=["none", "empty", "257-chars", "nul", "tab", "newline", "del"],
)
def test_conn_08_refused_client_id_values(factory: ConnectionFactory, bad: object) -> None:
    """CONN-08, EXC-07: None via assignment, the empty string, more than 256 characters and
    control characters raise InvalidClientIDException."""
    with factory.create_connection() as c:
        with pytest.raises(InvalidClientIDException):
            c.client_id = bad  # type: ignore[assignment]
        assert c.client_id is None


def test_conn_08_longest_accepted_client_id(factory: ConnectionFactory) -> None:
    """CONN-08: 256 characters is still accepted ("longer than 256" is refused)."""
    with factory.create_connection() as c:
        c.client_id = "y" * 256
        assert c.client_id == "y" * 256


def test_conn_08_duplicate_from_an_administrative_factory(broker: EmbeddedBroker) -> None:
    """CONN-08, EXC-07: a factory configured with an id already held by an open connection
    raises InvalidClientIDException at create_connection(); the holder is unaffected and,
    once it closes, the id can be used again."""
    f = ConnectionFactory(broker.url, client_id="SVC")
    holder = f.create_connection()
    with pytest.raises(InvalidClientIDException):
        f.create_connection()
    with factory_conn(broker) as other, pytest.raises(InvalidClientIDException):
        other.client_id = "SVC"
    holder.start()
    s = holder.create_session()
    s.create_producer(Q).send(s.create_text_message("h"))
    assert s.create_consumer(Q).receive(WAIT).text == "h"  # type: ignore[union-attr]
    holder.close()
    with f.create_connection() as again:
        assert again.client_id == "SVC"


def factory_conn(broker: EmbeddedBroker) -> Connection:
    return ConnectionFactory(broker.url).create_connection()


def test_conn_09_client_id_state_is_not_shared(factory: ConnectionFactory) -> None:
    """CONN-09: a second client cannot share the client id that owns an unshared durable
    subscription, so a published message is consumed exactly once."""
    t = Topic("T")
    owner = factory.create_connection()
    owner.client_id = "OWNER"
    owner.start()
    so = owner.create_session()
    durable = so.create_durable_consumer(t, "sub")
    intruder = factory.create_connection()
    with pytest.raises(InvalidClientIDException):
        intruder.client_id = "OWNER"
    intruder.start()
    si = intruder.create_session()
    with pytest.raises(IllegalStateException):
        si.create_durable_consumer(t, "sub")  # no client id: cannot reach OWNER's state
    so.create_producer(t).send(so.create_text_message("once"))
    m = durable.receive(WAIT)
    assert m is not None and m.text == "once"  # type: ignore[attr-defined]
    assert durable.receive_no_wait() is None
    intruder.close()
    owner.close()


def test_conn_10_client_id_is_none_by_default(factory: ConnectionFactory) -> None:
    """CONN-10: client_id reads None when none was configured or assigned."""
    with factory.create_connection() as c:
        assert c.client_id is None
        c.create_session()
        assert c.client_id is None


# ---- start and stop --------------------------------------------------------------------------
def test_s_conn_1_stopped_connection_sends_but_does_not_deliver(
    factory: ConnectionFactory,
) -> None:
    """S-CONN-1, CONN-11, CONN-12, CONN-15: a new connection is stopped; its producer sends;
    receive(timeout) returns None after the timeout; after start() the message arrives."""
    conn = factory.create_connection()
    try:
        s = conn.create_session(False, Session.AUTO_ACKNOWLEDGE)
        s.create_producer(Q).send(s.create_text_message("m1"))
        k = s.create_consumer(Q)
        t0 = time.monotonic()
        assert k.receive(timeout=QUIET) is None
        assert time.monotonic() - t0 >= QUIET - 0.02
        conn.start()
        m = k.receive(timeout=WAIT)
        assert m is not None and m.text == "m1"  # type: ignore[attr-defined]
    finally:
        conn.close()


def test_conn_11_no_listener_call_before_start(factory: ConnectionFactory) -> None:
    """CONN-11: a message listener of a new (stopped) connection is not called until
    start()."""
    got: list[str] = []
    arrived = threading.Event()
    with factory.create_connection() as c:
        s = c.create_session()

        def on_message(m: Message) -> None:
            got.append(m.text)  # type: ignore[attr-defined]
            arrived.set()

        s.create_consumer(Q).message_listener = on_message
        send_via(factory, Q, "early")
        assert not arrived.wait(QUIET)
        assert got == []
        c.start()
        assert arrived.wait(WAIT)
        assert got == ["early"]


def test_conn_12_stopped_connection_sends_normally(factory: ConnectionFactory) -> None:
    """CONN-12: producers of a stopped (never started, or stopped again) connection send
    normally; another connection receives the messages."""
    with factory.create_connection() as sender:
        s = sender.create_session()
        p = s.create_producer(Q)
        p.send(s.create_text_message("never-started"))
        sender.start()
        sender.stop()
        p.send(s.create_text_message("stopped-again"))
        with factory.create_connection() as receiver:
            receiver.start()
            k = receiver.create_session().create_consumer(Q)
            texts = [k.receive(WAIT).text for _ in range(2)]  # type: ignore[union-attr]
            assert texts == ["never-started", "stopped-again"]


def test_conn_13_start_started_and_stop_stopped_are_ignored(factory: ConnectionFactory) -> None:
    """CONN-13: start() on a started and stop() on a stopped connection are silently
    ignored (the state does not change)."""
    with factory.create_connection() as c:
        s = c.create_session()
        k = s.create_consumer(Q)
        c.stop()
        c.stop()
        c.start()
        c.start()
        send_via(factory, Q, "a")
        assert k.receive(WAIT).text == "a"  # type: ignore[union-attr]
        c.stop()
        c.stop()
        send_via(factory, Q, "b")
        assert k.receive(0.1) is None
        c.start()
        assert k.receive(WAIT).text == "b"  # type: ignore[union-attr]


def test_s_conn_2_stop_waits_for_running_listener(factory: ConnectionFactory) -> None:
    """S-CONN-2, CONN-14: stop() returns only after the running listener call returned; no
    call is made while stopped; after start() the remaining messages arrive in order."""
    entered, gate = threading.Event(), threading.Event()
    calls: list[tuple[str, str]] = []
    exited_at: list[float] = []
    with factory.create_connection() as conn:
        s = conn.create_session()

        def on_message(m: Message) -> None:
            calls.append(("enter", m.text))  # type: ignore[attr-defined]
            if len(calls) == 1:
                entered.set()
                gate.wait(WAIT)
                exited_at.append(time.monotonic())
            calls.append(("exit", m.text))  # type: ignore[attr-defined]

        s.create_consumer(Q).message_listener = on_message
        conn.start()
        send_via(factory, Q, "m1", "m2", "m3")
        assert entered.wait(WAIT)
        stopper = Worker(conn.stop).start()
        assert not stopper.done.wait(0.2), "stop() returned while a listener was running"
        gate.set()
        stopper.join()
        assert stopper.finished_at is not None and exited_at
        assert stopper.finished_at >= exited_at[0]
        assert calls == [("enter", "m1"), ("exit", "m1")]
        time.sleep(QUIET)
        assert calls == [("enter", "m1"), ("exit", "m1")]
        conn.start()
        assert wait_for(lambda: len(calls) == 6)
        assert [t for what, t in calls if what == "enter"] == ["m1", "m2", "m3"]


def test_conn_14_listener_finishing_during_stop_has_full_services(
    factory: ConnectionFactory,
) -> None:
    """CONN-14: while stop() waits, the running listener can still send and commit on its
    (transacted) session."""
    entered, gate = threading.Event(), threading.Event()
    outcome: list[str] = []
    with factory.create_connection() as conn:
        s = conn.create_session(True)
        reply = s.create_producer(R)

        def on_message(m: Message) -> None:
            entered.set()
            gate.wait(WAIT)
            try:
                reply.send(s.create_text_message(f"re:{m.text}"))  # type: ignore[attr-defined]
                s.commit()
                outcome.append("ok")
            except Exception as exc:  # pragma: no cover - reported by the assertion
                outcome.append(repr(exc))

        s.create_consumer(Q).message_listener = on_message
        conn.start()
        send_via(factory, Q, "q")
        assert entered.wait(WAIT)
        stopper = Worker(conn.stop).start()
        time.sleep(0.1)
        gate.set()
        stopper.join()
        assert outcome == ["ok"]
        assert browse_via(factory, R) == ["re:q"]
        assert browse_via(factory, Q) == []


def test_conn_14_blocked_receive_gets_nothing_while_stopped(factory: ConnectionFactory) -> None:
    """CONN-14, CONN-15: after stop() returns, a receive() blocked in another thread does not
    return a message; its timeout keeps running; after start() the message is delivered."""
    with factory.create_connection() as conn:
        k = conn.create_session().create_consumer(Q)
        conn.start()
        t0 = time.monotonic()
        waiter = Worker(k.receive, QUIET).start()
        time.sleep(0.05)
        conn.stop()
        send_via(factory, Q, "late")
        assert waiter.join() is None
        assert waiter.finished_at is not None and waiter.finished_at - t0 >= QUIET - 0.02
        conn.start()
        m = k.receive(WAIT)
        assert m is not None and m.text == "late"  # type: ignore[attr-defined]


def test_conn_15_receive_timeout_runs_while_stopped(factory: ConnectionFactory) -> None:
    """CONN-15: receive(timeout=t) on a stopped connection returns None once t elapsed, even
    with a message waiting on the queue."""
    send_via(factory, Q, "waiting")
    with factory.create_connection() as c:
        k = c.create_session().create_consumer(Q)
        t0 = time.monotonic()
        assert k.receive(timeout=0.2) is None
        elapsed = time.monotonic() - t0
        assert 0.18 <= elapsed < 1.0


@pytest.mark.parametrize("call", ["stop", "close"])
def test_s_conn_3_stop_or_close_from_listener_raises(factory: ConnectionFactory, call: str) -> None:
    """S-CONN-3, CONN-16, CONN-19: conn.stop() / conn.close() inside a message listener raise
    IllegalStateException (checked flavour) in the listener; the main thread then closes the
    connection normally and nothing hangs."""
    seen: list[BaseException | None] = []
    done = threading.Event()
    conn = factory.create_connection()
    s1 = conn.create_session()
    s2 = conn.create_session()  # a listener of another session of the same connection
    s2.create_consumer(R)

    def on_message(m: Message) -> None:
        try:
            getattr(conn, call)()
            seen.append(None)
        except BaseException as exc:
            seen.append(exc)
        finally:
            done.set()

    s1.create_consumer(Q).message_listener = on_message
    conn.start()
    send_via(factory, Q, "x")
    assert done.wait(WAIT)
    assert len(seen) == 1
    assert isinstance(seen[0], IllegalStateException)
    assert not isinstance(seen[0], JMSRuntimeException)
    assert conn.started  # the stop did not happen
    Worker(conn.close).start().join()
    with pytest.raises(IllegalStateException):
        conn.start()


def test_conn_19_close_from_completion_listener_raises(factory: ConnectionFactory) -> None:
    """CONN-19, EXC-05: conn.close() inside a completion listener of the connection raises
    IllegalStateException; the connection stays open and the main thread closes it."""
    seen: list[BaseException | None] = []
    done = threading.Event()
    conn = factory.create_connection()
    s = conn.create_session()

    class Listener:
        def on_completion(self, message: Message) -> None:
            try:
                conn.close()
                seen.append(None)
            except BaseException as exc:
                seen.append(exc)
            finally:
                done.set()

        def on_exception(self, message: Message, exception: Exception) -> None:
            seen.append(exception)
            done.set()

    s.create_producer(Q).send(s.create_text_message("async"), completion_listener=Listener())
    assert done.wait(WAIT)
    assert len(seen) == 1 and isinstance(seen[0], IllegalStateException)
    assert not conn.closed
    s.create_producer(Q).send(s.create_text_message("sync"))
    Worker(conn.close).start().join()
    assert browse_via(factory) == ["async", "sync"]


def test_conn_17_stop_and_close_do_not_wait_for_exception_listener(
    make_broker: Callable[..., EmbeddedBroker],
) -> None:
    """CONN-17: close() and stop() called while the exception listener runs do not wait for
    it (on a failed connection stop() raises at once, close() returns at once)."""
    b = make_broker()
    conn = ConnectionFactory(b.url).create_connection()
    entered, gate = threading.Event(), threading.Event()

    def on_exception(exc: JMSException) -> None:
        entered.set()
        gate.wait(WAIT)

    conn.exception_listener = on_exception
    try:
        b.stop()
        assert entered.wait(WAIT)
        Worker(conn.close).start().join(1.0)
        stopper = Worker(conn.stop).start()
        with pytest.raises(IllegalStateException):
            stopper.join(1.0)
        assert not gate.is_set()
    finally:
        gate.set()


def test_conn_17_stop_and_close_inside_exception_listener(
    make_broker: Callable[..., EmbeddedBroker],
) -> None:
    """CONN-17, CONN-31: the exception listener may call stop() and close() on its own
    connection: no deadlock (stop may raise on the failed connection, close returns)."""
    b = make_broker()
    conn = ConnectionFactory(b.url).create_connection()
    results: list[str] = []
    done = threading.Event()

    def on_exception(exc: JMSException) -> None:
        try:
            try:
                conn.stop()
                results.append("stop ok")
            except IllegalStateException:
                results.append("stop ISE")
            conn.close()
            results.append("close ok")
            conn.close()
            results.append("close ok")
        finally:
            done.set()

    conn.exception_listener = on_exception
    b.stop()
    assert done.wait(WAIT)
    assert results[1:] == ["close ok", "close ok"]
    assert results[0] in ("stop ok", "stop ISE")


# ---- close -----------------------------------------------------------------------------------
def test_s_conn_4_close_wakes_blocked_receive(factory: ConnectionFactory) -> None:
    """S-CONN-4, CONN-18, CONS-03: a receive() without timeout blocked on an empty queue
    returns None when another thread closes the connection; then receive() raises
    IllegalStateException."""
    conn = factory.create_connection()
    conn.start()
    k = conn.create_session().create_consumer(Q)
    waiter = Worker(k.receive).start()
    time.sleep(0.1)
    assert not waiter.done.is_set()
    t0 = time.monotonic()
    conn.close()
    assert waiter.join(1.0) is None
    assert time.monotonic() - t0 < 1.0
    with pytest.raises(IllegalStateException):
        k.receive()


def test_conn_18_close_wakes_receives_of_every_session(factory: ConnectionFactory) -> None:
    """CONN-18: close() returns only after the blocked receives on consumers of all its
    sessions have returned (None)."""
    conn = factory.create_connection()
    conn.start()
    consumers = [conn.create_session().create_consumer(d) for d in (Q, R, Topic("T"))]
    waiters = [Worker(k.receive).start() for k in consumers]
    time.sleep(0.1)
    conn.close()
    for w in waiters:
        assert w.done.is_set(), "close() returned before a pending receive did"
        assert w.join(1.0) is None


def test_conn_18_close_waits_for_running_listener_with_full_services(
    factory: ConnectionFactory,
) -> None:
    """CONN-18: close() waits until a running listener returns; meanwhile the listener can
    still send on its session and acknowledge its message."""
    entered, gate = threading.Event(), threading.Event()
    outcome: list[str] = []
    finished: list[float] = []
    conn = factory.create_connection()
    s = conn.create_session(False, Session.CLIENT_ACKNOWLEDGE)
    reply = s.create_producer(R)

    def on_message(m: Message) -> None:
        entered.set()
        gate.wait(WAIT)
        try:
            reply.send(s.create_text_message("during-close"))
            m.acknowledge()
            outcome.append("ok")
        except Exception as exc:  # pragma: no cover - reported by the assertion
            outcome.append(repr(exc))
        finished.append(time.monotonic())

    s.create_consumer(Q).message_listener = on_message
    conn.start()
    send_via(factory, Q, "q")
    assert entered.wait(WAIT)
    closer = Worker(conn.close).start()
    assert not closer.done.wait(0.2), "close() returned while a listener was running"
    gate.set()
    closer.join()
    assert outcome == ["ok"]
    assert closer.finished_at is not None and closer.finished_at >= finished[0]
    assert browse_via(factory, R) == ["during-close"]
    assert browse_via(factory, Q) == []  # acknowledged during close


def test_s_conn_5_close_rolls_back_and_does_not_acknowledge(factory: ConnectionFactory) -> None:
    """S-CONN-5, CONN-20, CONN-22: closing a connection rolls back a transacted session's
    sends, leaves CLIENT_ACKNOWLEDGE messages unacknowledged (redelivered, count 2); its
    objects then raise IllegalStateException except close(); received messages stay
    readable but acknowledge() raises IllegalStateException."""
    send_via(factory, Q, "c1")
    conn = factory.create_connection()
    conn.start()
    a = conn.create_session(True)
    pa = a.create_producer(Q)
    pa.send(a.create_text_message("t1"))
    b = conn.create_session(False, Session.CLIENT_ACKNOWLEDGE)
    kb = b.create_consumer(Q)
    c1 = kb.receive(WAIT)
    assert c1 is not None and c1.text == "c1"  # type: ignore[attr-defined]
    assert c1.jms_redelivered is False and delivery_count(c1) == 1
    conn.close()

    with factory.create_connection() as other:
        other.start()
        k = other.create_session().create_consumer(Q)
        again = k.receive(WAIT)
        assert again is not None and again.text == "c1"  # type: ignore[attr-defined]
        assert again.jms_redelivered is True
        assert delivery_count(again) == 2
        assert k.receive(QUIET) is None  # "t1" was rolled back

    for name, fn in {
        "session.create_producer": lambda: a.create_producer(Q),
        "producer.send": lambda: pa.send(Message()),
        "consumer.receive_no_wait": kb.receive_no_wait,
        "conn.start": conn.start,
        "c1.acknowledge": c1.acknowledge,
    }.items():
        with pytest.raises(IllegalStateException):
            fn()
            pytest.fail(f"{name} did not raise")
    a.close()
    b.close()
    pa.close()
    kb.close()
    conn.close()
    assert c1.text == "c1"  # type: ignore[attr-defined]


def test_conn_20_close_deletes_temporary_destinations(factory: ConnectionFactory) -> None:
    """CONN-20: closing a connection deletes the temporary destinations it created: another
    connection's send to them then raises InvalidDestinationException."""
    conn = factory.create_connection()
    s = conn.create_session()
    tq = s.create_temporary_queue()
    tt = s.create_temporary_topic()
    with factory.create_connection() as other:
        so = other.create_session()
        so.create_producer(tq).send(so.create_text_message("before"))  # exists while open
        conn.close()
        for dest in (tq, tt):
            with pytest.raises(InvalidDestinationException):
                so.create_producer(dest).send(so.create_text_message("after"))


def test_conn_20_close_closes_all_constituents(factory: ConnectionFactory) -> None:
    """CONN-20: closing the connection implicitly closes its sessions, producers, consumers
    and browsers (the application need not close them first)."""
    conn = factory.create_connection()
    s = conn.create_session()
    p = s.create_producer(Q)
    k = s.create_consumer(Q)
    br = s.create_browser(Q)
    conn.close()
    assert s.closed
    for name, fn in {
        "session.create_text_message": s.create_text_message,
        "producer.priority": lambda: p.priority,
        "consumer.message_selector": lambda: k.message_selector,
        "browser.queue": lambda: br.queue,
    }.items():
        with pytest.raises(IllegalStateException):
            fn()
            pytest.fail(f"{name} did not raise")


def test_conn_21_close_waits_for_async_sends(factory: ConnectionFactory) -> None:
    """CONN-21: close() first waits until every incomplete asynchronous send has completed
    and its completion listener returned; the sends complete normally."""
    events: list[tuple[str, str, float]] = []

    class Listener:
        def on_completion(self, message: Message) -> None:
            time.sleep(0.1)
            events.append(("completed", message.text, time.monotonic()))  # type: ignore[attr-defined]

        def on_exception(self, message: Message, exception: Exception) -> None:
            events.append(("failed", repr(exception), time.monotonic()))

    conn = factory.create_connection()
    s = conn.create_session()
    p = s.create_producer(Q)
    for t in ("a1", "a2"):
        p.send(s.create_text_message(t), completion_listener=Listener())
    conn.close()
    closed_at = time.monotonic()
    assert [(e[0], e[1]) for e in events] == [("completed", "a1"), ("completed", "a2")]
    assert all(e[2] <= closed_at for e in events)
    assert browse_via(factory) == ["a1", "a2"]


def _closed_world(factory: ConnectionFactory) -> dict[str, Any]:
    """A connection with one of everything, then closed; plus messages it created/received."""
    send_via(factory, Q, "r1")
    conn = factory.create_connection()
    conn.start()
    s = conn.create_session(False, Session.CLIENT_ACKNOWLEDGE)
    p = s.create_producer(Q)
    k = s.create_consumer(Q)
    br = s.create_browser(Q)
    received = k.receive(WAIT)
    assert received is not None
    created = s.create_text_message("created")
    conn.close()
    return {
        "conn": conn,
        "s": s,
        "p": p,
        "k": k,
        "br": br,
        "received": received,
        "created": created,
    }


def test_conn_22_every_method_after_close_raises_illegal_state(
    factory: ConnectionFactory,
) -> None:
    """CONN-22, EXC-05: after close, every method of the connection and of its sessions,
    producers, consumers and browsers raises IllegalStateException."""
    w = _closed_world(factory)
    conn, s, p, k, br = w["conn"], w["s"], w["p"], w["k"], w["br"]

    def set_attr(obj: object, name: str, value: object) -> Callable[[], None]:
        return lambda: setattr(obj, name, value)

    actions: dict[str, Callable[[], object]] = {
        "conn.start": conn.start,
        "conn.stop": conn.stop,
        "conn.create_session": conn.create_session,
        "conn.metadata": lambda: conn.metadata,
        "conn.client_id (read)": lambda: conn.client_id,
        "conn.client_id (set)": set_attr(conn, "client_id", "late"),
        "conn.exception_listener (read)": lambda: conn.exception_listener,
        "conn.exception_listener (set)": set_attr(conn, "exception_listener", None),
        "session.create_producer": lambda: s.create_producer(Q),
        "session.create_consumer": lambda: s.create_consumer(Q),
        "session.create_browser": lambda: s.create_browser(Q),
        "session.create_durable_consumer": lambda: s.create_durable_consumer(Topic("T"), "d"),
        "session.create_shared_consumer": lambda: s.create_shared_consumer(Topic("T"), "s"),
        "session.create_message": s.create_message,
        "session.create_text_message": s.create_text_message,
        "session.create_bytes_message": s.create_bytes_message,
        "session.create_map_message": s.create_map_message,
        "session.create_stream_message": s.create_stream_message,
        "session.create_object_message": s.create_object_message,
        "session.create_queue": lambda: s.create_queue("Q"),
        "session.create_topic": lambda: s.create_topic("T"),
        "session.create_temporary_queue": s.create_temporary_queue,
        "session.create_temporary_topic": s.create_temporary_topic,
        "session.commit": s.commit,
        "session.rollback": s.rollback,
        "session.recover": s.recover,
        "session.unsubscribe": lambda: s.unsubscribe("d"),
        "session.transacted": lambda: s.transacted,
        "session.acknowledge_mode": lambda: s.acknowledge_mode,
        "producer.send": lambda: p.send(Message()),
        "producer.destination": lambda: p.destination,
        "producer.delivery_mode": lambda: p.delivery_mode,
        "producer.priority (set)": set_attr(p, "priority", 5),
        "producer.time_to_live": lambda: p.time_to_live,
        "consumer.receive": k.receive,
        "consumer.receive(timeout)": lambda: k.receive(0.1),
        "consumer.receive_no_wait": k.receive_no_wait,
        "consumer.message_listener (read)": lambda: k.message_listener,
        "consumer.message_listener (set)": set_attr(k, "message_listener", print),
        "consumer.message_selector": lambda: k.message_selector,
        "browser.iterate": lambda: list(br),
        "browser.queue": lambda: br.queue,
        "browser.message_selector": lambda: br.message_selector,
    }
    assert not_raising_checked(actions, IllegalStateException) == []


def test_conn_22_close_is_a_no_op_and_messages_stay_usable(factory: ConnectionFactory) -> None:
    """CONN-22: close() on the closed objects is a silent no-op; messages created or received
    through the closed connection stay readable, writable after clear_properties /
    clear_body and sendable through another connection; acknowledge() of the received one
    raises IllegalStateException."""
    w = _closed_world(factory)
    for obj in ("br", "k", "p", "s", "conn"):
        w[obj].close()
        w[obj].close()
    received, created = w["received"], w["created"]
    assert received.text == "r1"
    assert delivery_count(received) == 1
    with pytest.raises(IllegalStateException):
        received.acknowledge()
    received.clear_properties()
    received.set_string_property("hop", "2")
    received.clear_body()
    received.text = "r1-forwarded"
    created.text = "created-modified"
    created.set_int_property("n", 7)
    with factory.create_connection() as other:
        other.start()
        so = other.create_session()
        producer = so.create_producer(R)
        producer.send(created)
        producer.send(received)
        k = so.create_consumer(R)
        first, second = k.receive(WAIT), k.receive(WAIT)
    assert first is not None and second is not None
    assert (first.text, first.get_int_property("n")) == ("created-modified", 7)  # type: ignore[attr-defined]
    assert (second.text, second.get_string_property("hop")) == ("r1-forwarded", "2")  # type: ignore[attr-defined]
    # r1 was never acknowledged: it is back on Q, redelivered
    assert browse_via(factory, Q) == ["r1"]


def test_conn_23_close_twice_and_context_manager(factory: ConnectionFactory) -> None:
    """CONN-23: closing a closed connection raises nothing; leaving a ``with`` block closes
    the connection, also when the block raised."""
    c = factory.create_connection()
    c.close()
    c.close()
    assert c.closed
    with factory.create_connection() as c2:
        assert not c2.closed
    assert c2.closed
    with pytest.raises(ZeroDivisionError), factory.create_connection() as c3:
        c3.start()
        _ = 1 / 0
    assert c3.closed
    with pytest.raises(IllegalStateException):
        c3.create_session()


def test_conn_24_dropped_connection_is_cleaned_up_by_the_broker(
    factory: ConnectionFactory,
) -> None:
    """CONN-24 (SHOULD): a connection whose link is lost without close() is cleaned up by
    the broker as if closed: transaction rolled back, unacknowledged messages deliverable
    again (redelivered), client id released, temporary destinations deleted."""
    send_via(factory, Q, "u1")
    conn = factory.create_connection()
    conn.client_id = "DROPPED"
    conn.start()
    tx = conn.create_session(True)
    tx.create_producer(Q).send(tx.create_text_message("tx-send"))
    ca = conn.create_session(False, Session.CLIENT_ACKNOWLEDGE)
    m = ca.create_consumer(Q).receive(WAIT)
    assert m is not None and m.text == "u1"  # type: ignore[attr-defined]
    tq = ca.create_temporary_queue()
    lose_link(conn)
    with factory.create_connection() as other:
        other.client_id = "DROPPED"
        other.start()
        so = other.create_session()
        k = so.create_consumer(Q)
        again = k.receive(WAIT)
        assert again is not None and again.text == "u1"  # type: ignore[attr-defined]
        assert again.jms_redelivered is True and delivery_count(again) == 2
        assert k.receive(0.1) is None
        with pytest.raises(InvalidDestinationException):
            so.create_producer(tq).send(so.create_text_message("x"))


# ---- metadata --------------------------------------------------------------------------------
def test_s_conn_8_metadata(connection: Connection) -> None:
    """S-CONN-8, CONN-25: JMS 2.0 and ternmq versions; the mandatory JMSX names and every
    JMSX property ternmq sets are listed."""
    m = connection.metadata
    assert m.jms_version == "2.0"
    assert (m.jms_major_version, m.jms_minor_version) == (2, 0)
    assert m.provider_name == "ternmq"
    assert m.provider_version == ternmq.__version__
    assert isinstance(m.provider_major_version, int)
    assert isinstance(m.provider_minor_version, int)
    major, minor = ternmq.__version__.split(".")[:2]
    assert (m.provider_major_version, m.provider_minor_version) == (int(major), int(minor))
    names = set(m.jmsx_property_names)
    assert {"JMSXGroupID", "JMSXGroupSeq", "JMSXDeliveryCount"} <= names
    s = connection.create_session()
    s.create_producer(Q).send(s.create_text_message("x"))
    received = s.create_consumer(Q).receive(WAIT)
    assert received is not None
    set_by_ternmq = {n for n in received.get_property_names() if n.startswith("JMSX")}
    assert set_by_ternmq <= names


# ---- exception listener ----------------------------------------------------------------------
def test_conn_26_exception_listener_attribute(factory: ConnectionFactory) -> None:
    """CONN-26: exception_listener is None until assigned, returns exactly the callable
    assigned, and can be reset to None."""
    with factory.create_connection() as c:
        assert c.exception_listener is None

        def listener(exc: JMSException) -> None:
            pass

        c.exception_listener = listener
        assert c.exception_listener is listener
        other = [].append
        c.exception_listener = other
        assert c.exception_listener is other
        c.exception_listener = None
        assert c.exception_listener is None


def test_s_conn_9_broker_stop_reported_once(make_broker: Callable[..., EmbeddedBroker]) -> None:
    """S-CONN-9 (vm stand-in for a stopped tcp server), CONN-27, CONN-29: stopping the broker
    calls the exception listener exactly once with a JMSException naming the broker, on a
    thread other than the application's; a consumer blocked in receive() returns None."""
    b = make_broker()
    conn = ConnectionFactory(b.url).create_connection()
    calls: list[tuple[JMSException, int]] = []
    called = threading.Event()

    def on_exception(exc: JMSException) -> None:
        calls.append((exc, threading.get_ident()))
        called.set()

    conn.exception_listener = on_exception
    conn.start()
    k = conn.create_session().create_consumer(Q)
    waiter = Worker(k.receive).start()
    time.sleep(0.05)
    b.stop()
    assert called.wait(WAIT)
    assert waiter.join(1.0) is None
    time.sleep(0.1)
    assert len(calls) == 1
    exc, ident = calls[0]
    assert isinstance(exc, JMSException) and not isinstance(exc, JMSRuntimeException)
    assert b.url in str(exc)
    assert ident not in (threading.get_ident(), waiter.thread.ident)
    conn.close()


def test_conn_28_api_errors_do_not_reach_exception_listener(
    make_broker: Callable[..., EmbeddedBroker],
) -> None:
    """CONN-28, EXC-14: exceptions raised to the caller, and asynchronous-send failures
    (reported to on_exception), are never passed to the exception listener; the listener
    does get the later connection failure."""
    b = make_broker(auto_create=False, queues=("Q",))
    f = ConnectionFactory(b.url)
    calls: list[JMSException] = []
    conn = f.create_connection()
    conn.exception_listener = calls.append
    conn.client_id = "ME"
    with f.create_connection() as other:
        with pytest.raises(InvalidClientIDException):
            other.client_id = "ME"
    s = conn.create_session()
    with pytest.raises(IllegalStateException):
        s.commit()
    with pytest.raises(InvalidSelectorException):
        s.create_consumer(Q, "a = ")
    missing = Queue("MISSING")
    with pytest.raises(InvalidDestinationException):
        s.create_producer(missing).send(Message())
    outcome: list[tuple[str, Exception | None]] = []
    done = threading.Event()

    class Listener:
        def on_completion(self, message: Message) -> None:
            outcome.append(("completed", None))
            done.set()

        def on_exception(self, message: Message, exception: Exception) -> None:
            outcome.append(("failed", exception))
            done.set()

    anonymous = s.create_producer(None)
    anonymous.send(Message(), destination=missing, completion_listener=Listener())
    assert done.wait(WAIT)
    assert len(outcome) == 1 and outcome[0][0] == "failed"
    assert isinstance(outcome[0][1], InvalidDestinationException)
    anonymous.send(Message(), destination=Q)  # the session still works
    time.sleep(0.1)
    assert calls == []
    b.stop()
    assert wait_for(lambda: len(calls) == 1)
    assert not isinstance(calls[0], (IllegalStateException, InvalidDestinationException))
    conn.close()


def test_conn_29_exception_listener_serialized_on_provider_thread(
    make_broker: Callable[..., EmbeddedBroker],
) -> None:
    """CONN-29: exception listener calls of a connection never overlap and run on a provider
    thread (not the thread that stopped the broker); each connection is reported once."""
    b = make_broker()
    f = ConnectionFactory(b.url)
    lock = threading.Lock()
    active = [0]
    peak = [0]
    threads: list[int] = []
    per_conn: dict[int, int] = {}

    def make_listener(key: int) -> Callable[[JMSException], None]:
        def on_exception(exc: JMSException) -> None:
            with lock:
                active[0] += 1
                peak[0] = max(peak[0], active[0])
                threads.append(threading.get_ident())
                per_conn[key] = per_conn.get(key, 0) + 1
            time.sleep(0.05)
            with lock:
                active[0] -= 1

        return on_exception

    conns = [f.create_connection() for _ in range(2)]
    for i, c in enumerate(conns):
        c.exception_listener = make_listener(i)
        c.create_session()
    b.stop()
    assert wait_for(lambda: len(threads) == 2)
    time.sleep(0.1)
    assert per_conn == {0: 1, 1: 1}
    assert threading.get_ident() not in threads
    for c in conns:
        c.close()


def test_conn_30_failed_connection_is_treated_as_closed(
    make_broker: Callable[..., EmbeddedBroker],
) -> None:
    """CONN-30 (SHOULD; A-10): ternmq does not reconnect: after reporting the failure once,
    the connection behaves as closed: calls raise IllegalStateException whose
    linked_exception is the failure, close() is a no-op."""
    b = make_broker()
    conn = ConnectionFactory(b.url).create_connection()
    reported: list[JMSException] = []
    conn.exception_listener = reported.append
    tx = conn.create_session(True)
    p = tx.create_producer(Q)
    p.send(tx.create_text_message("pending"))
    b.stop()
    assert wait_for(lambda: len(reported) == 1)
    for fn in (conn.create_session, conn.start, tx.commit, lambda: p.send(Message())):
        with pytest.raises(IllegalStateException) as ei:
            fn()
        assert isinstance(ei.value.linked_exception, JMSException)
    with pytest.raises(IllegalStateException) as ei:
        conn.create_session()
    assert ei.value.linked_exception is reported[0]
    assert ei.value.__cause__ is reported[0]
    conn.close()
    conn.close()
    assert len(reported) == 1


def test_conn_31_exception_listener_may_call_any_api(
    make_broker: Callable[..., EmbeddedBroker],
) -> None:
    """CONN-31: the exception listener may call any API method: on the failed connection calls
    raise (IllegalStateException) without deadlock; other connections work normally."""
    b = make_broker()
    spare = make_broker()
    conn = ConnectionFactory(b.url).create_connection()
    results: list[str] = []
    done = threading.Event()

    def on_exception(exc: JMSException) -> None:
        try:
            for name, fn in (
                ("create_session", conn.create_session),
                ("metadata", lambda: conn.metadata),
                ("start", conn.start),
            ):
                try:
                    fn()
                    results.append(f"{name}: ok")
                except IllegalStateException:
                    results.append(f"{name}: ISE")
            with ConnectionFactory(spare.url).create_connection() as c2:
                s2 = c2.create_session()
                s2.create_producer(Q).send(s2.create_text_message(f"failed: {exc}"))
            results.append("spare: sent")
            conn.close()
            results.append("close: ok")
        finally:
            done.set()

    conn.exception_listener = on_exception
    b.stop()
    assert done.wait(WAIT)
    assert results == [
        "create_session: ISE",
        "metadata: ISE",
        "start: ISE",
        "spare: sent",
        "close: ok",
    ]
    texts = browse_via(ConnectionFactory(spare.url))
    assert len(texts) == 1 and texts[0] is not None and b.url in texts[0]
