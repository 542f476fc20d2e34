"""Conformance tests of group CONS: message consumers (catalog ``requirements-api-a.md``,
CONS-01..CONS-18 and scenarios S-CONS-1..S-CONS-6).

Real waiting is kept to "expect nothing" windows of at most ``QUIET`` seconds; every thread
started here is joined with a timeout. Only the public API and the conformance fixtures are
used.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import pytest

from ternmq.broker.embedded import EmbeddedBroker
from ternmq.client import Connection, ConnectionFactory, MessageConsumer, Session
from ternmq.destination import Queue, Topic
from ternmq.errors import (
    IllegalStateException,
    InvalidDestinationException,
    InvalidSelectorException,
    JMSRuntimeException,
)
from ternmq.message import Message

from ._helpers import Q, R, Worker, browse_via, marks, send_via, text, wait_for

pytestmark = pytest.mark.also_failover  # also over failover:(tcp://...)

WAIT = 5.0  # upper bound for "expect something"
QUIET = 0.3  # real wait for "expect nothing"


# ---- creation --------------------------------------------------------------------------------
def test_s_cons_6_selector_attribute_and_creation_errors(connection: Connection) -> None:
    """S-CONS-6, CONS-01, CONS-02: an empty selector reads None; a selector reads back as
    given; an invalid selector raises InvalidSelectorException at creation; a None
    destination raises InvalidDestinationException."""
    s = connection.create_session()
    assert s.create_consumer(Q, message_selector="").message_selector is None
    assert s.create_consumer(Q, "a = 1").message_selector == "a = 1"
    with pytest.raises(InvalidSelectorException):
        s.create_consumer(Q, "a =")
    with pytest.raises(InvalidDestinationException):
        s.create_consumer(None)  # type: ignore[arg-type]


def test_cons_01_unusable_destinations(make_broker: Callable[..., EmbeddedBroker]) -> None:
    """CONS-01, EXC-08: None, an object that is not a ternmq destination, a destination that
    does not exist (auto-create off) and a deleted temporary queue raise
    InvalidDestinationException; none of them is the runtime flavour."""
    b = make_broker(auto_create=False, queues=("Q",), topics=("T",))
    with ConnectionFactory(b.url).create_connection() as c:
        s = c.create_session()
        tq = s.create_temporary_queue()
        tq.delete()
        for dest in (None, "queue://Q", Q.queue_name, object(), Queue("NOPE"), Topic("NOPE"), tq):
            with pytest.raises(InvalidDestinationException) as ei:
                s.create_consumer(dest)  # type: ignore[arg-type]
            assert not isinstance(ei.value, JMSRuntimeException)
        # the declared ones work
        assert s.create_consumer(Q).message_selector is None
        assert s.create_consumer(Topic("T")).no_local is False


def test_cons_01_invalid_selector_fails_at_creation(connection: Connection) -> None:
    """CONS-01, EXC-09: a syntactically invalid selector raises InvalidSelectorException at
    create_consumer(), on queues and on topics, and no consumer is left behind."""
    s = connection.create_session()
    for dest in (Q, Topic("T")):
        for bad in ("a =", "a = 'x", "(a > 1", "a BETWEEN 1", "a IN ()", "AND"):
            with pytest.raises(InvalidSelectorException):
                s.create_consumer(dest, bad)
    s.create_producer(Q).send(s.create_text_message("for the valid one"))
    assert text(s.create_consumer(Q).receive(WAIT)) == "for the valid one"


def test_cons_02_selector_and_no_local_attributes(connection: Connection) -> None:
    """CONS-02: message_selector is None when none / None / "" was given and the given text
    otherwise; no_local returns the flag given."""
    s = connection.create_session()
    t = Topic("T")
    assert s.create_consumer(Q).message_selector is None
    assert s.create_consumer(Q, None).message_selector is None
    assert s.create_consumer(Q, message_selector="").message_selector is None
    assert s.create_consumer(t, "color = 'red' AND n > 2").message_selector == (
        "color = 'red' AND n > 2"
    )
    assert s.create_consumer(t).no_local is False
    assert s.create_consumer(t, no_local=True).no_local is True
    assert s.create_consumer(t, "n > 1", True).no_local is True
    assert s.create_consumer(Q, no_local=True).no_local is True


# ---- synchronous receive ---------------------------------------------------------------------
def test_s_cons_1_blocking_receive_and_close(
    factory: ConnectionFactory, connection: Connection
) -> None:
    """S-CONS-1, CONS-03, CONS-15: receive() blocks until a message is sent; blocked again, it
    returns None when another thread closes the consumer, and close() returns only after it
    did; receive() then raises IllegalStateException."""
    k = connection.create_session().create_consumer(Q)
    waiter = Worker(k.receive).start()
    assert not waiter.done.wait(QUIET)
    send_via(factory, Q, "m")
    assert text(waiter.join()) == "m"
    waiter = Worker(k.receive).start()
    assert not waiter.done.wait(0.1)
    k.close()
    closed_at = time.monotonic()
    assert waiter.done.is_set(), "close() returned before the pending receive did"
    assert waiter.join(1.0) is None
    assert waiter.finished_at is not None and waiter.finished_at <= closed_at
    with pytest.raises(IllegalStateException):
        k.receive()


@pytest.mark.parametrize("closer", ["consumer", "session", "connection"])
def test_cons_03_receive_returns_none_when_closed(factory: ConnectionFactory, closer: str) -> None:
    """CONS-03: a receive() without timeout returns None when its consumer is closed
    directly, via its session or via its connection."""
    conn = factory.create_connection()
    conn.start()
    s = conn.create_session()
    k = s.create_consumer(Q)
    waiter = Worker(k.receive).start()
    assert not waiter.done.wait(0.1)
    {"consumer": k, "session": s, "connection": conn}[closer].close()
    assert waiter.join(1.0) is None
    conn.close()


def test_cons_03_receive_waits_for_start(factory: ConnectionFactory) -> None:
    """CONS-03: a message on the queue is not returned by a blocking receive() until the
    connection is started."""
    send_via(factory, Q, "m")
    with factory.create_connection() as conn:
        k = conn.create_session().create_consumer(Q)
        waiter = Worker(k.receive).start()
        assert not waiter.done.wait(QUIET)
        conn.start()
        assert text(waiter.join()) == "m"


def test_s_cons_2_receive_no_wait_and_timeouts(
    factory: ConnectionFactory, connection: Connection
) -> None:
    """S-CONS-2, CONS-04, CONS-05, CONS-06: receive_no_wait() on an empty queue returns None
    at once; receive(timeout=0.3) after 0.3..1.0 s; a message sent (and returned) from another
    connection is returned by receive_no_wait() at once; a negative timeout is ValueError."""
    k = connection.create_session().create_consumer(Q)
    t0 = time.monotonic()
    assert k.receive_no_wait() is None
    assert time.monotonic() - t0 < 0.2
    t0 = time.monotonic()
    assert k.receive(timeout=QUIET) is None
    assert QUIET - 0.02 <= time.monotonic() - t0 < 1.0
    send_via(factory, Q, "m")
    assert text(k.receive_no_wait()) == "m"
    with pytest.raises(ValueError):
        k.receive(timeout=-1)
    with pytest.raises(ValueError):
        k.receive(-0.001)


def test_cons_04_zero_timeout_polls(factory: ConnectionFactory, connection: Connection) -> None:
    """CONS-04 (A-03): receive(timeout=0) behaves like receive_no_wait(): None at once on an
    empty queue, an available message otherwise."""
    k = connection.create_session().create_consumer(Q)
    t0 = time.monotonic()
    assert k.receive(timeout=0) is None
    assert k.receive(0.0) is None
    assert time.monotonic() - t0 < 0.2
    send_via(factory, Q, "z")
    assert text(k.receive(0)) == "z"


def test_cons_04_timeout_returns_message_when_it_arrives(
    factory: ConnectionFactory, connection: Connection
) -> None:
    """CONS-04: receive(timeout=t) returns a message that arrives before t elapses, without
    waiting for the whole timeout."""
    k = connection.create_session().create_consumer(Q)
    sender = threading.Timer(0.1, send_via, args=(factory, Q, "soon"))
    t0 = time.monotonic()
    sender.start()
    try:
        assert text(k.receive(timeout=WAIT)) == "soon"
        assert time.monotonic() - t0 < 2.0
    finally:
        sender.join(WAIT)
    assert not sender.is_alive()


def test_cons_04_timeout_runs_while_stopped(factory: ConnectionFactory) -> None:
    """CONS-04, CONN-15: the receive timeout keeps running while the connection is stopped."""
    send_via(factory, Q, "m")
    with factory.create_connection() as conn:
        k = conn.create_session().create_consumer(Q)
        t0 = time.monotonic()
        assert k.receive(0.2) is None
        assert 0.18 <= time.monotonic() - t0 < 1.0
        assert k.receive_no_wait() is None


def test_cons_05_receive_no_wait_returns_available_messages_in_order(
    factory: ConnectionFactory, connection: Connection
) -> None:
    """CONS-05: receive_no_wait() returns the available messages one by one, then None,
    never blocking."""
    send_via(factory, Q, "a", "b", "c")
    k = connection.create_session().create_consumer(Q)
    t0 = time.monotonic()
    got = [text(k.receive_no_wait()) for _ in range(3)]
    assert k.receive_no_wait() is None
    assert time.monotonic() - t0 < 0.5
    assert got == ["a", "b", "c"]


def test_cons_06_no_wait_sees_committed_and_pull_mode_messages(broker: EmbeddedBroker) -> None:
    """CONS-06 (SHOULD): a message whose send or commit returned before the call is returned
    by receive_no_wait() on a started connection, also with prefetch 0 (pull)."""
    for url in (broker.url, f"{broker.url}?prefetch=0"):
        f = ConnectionFactory(url)
        with f.create_connection() as conn, f.create_connection() as sender:
            conn.start()
            k = conn.create_session().create_consumer(Q)
            tx = sender.create_session(True)
            tx.create_producer(Q).send(tx.create_text_message("tx"))
            assert k.receive_no_wait() is None  # not committed yet
            tx.commit()
            assert text(k.receive_no_wait()) == "tx"
            auto = sender.create_session()
            auto.create_producer(Q).send(auto.create_text_message("auto"))
            assert text(k.receive_no_wait()) == "auto"
            assert k.receive_no_wait() is None


def test_cons_07_second_concurrent_receive_raises(connection: Connection) -> None:
    """CONS-07 (SHOULD): a second receive() on a consumer while another thread waits in one
    raises IllegalStateException; the first receive is unaffected."""
    k = connection.create_session().create_consumer(Q)
    waiter = Worker(k.receive, QUIET).start()
    time.sleep(0.05)
    assert not waiter.done.is_set()
    for call in (k.receive_no_wait, lambda: k.receive(0.1), k.receive):
        with pytest.raises(IllegalStateException):
            call()
    assert waiter.join() is None
    assert k.receive_no_wait() is None  # free again


def test_s_cons_4_receive_with_listener_raises_then_listener_removed(
    factory: ConnectionFactory, connection: Connection
) -> None:
    """S-CONS-4, CONS-08, CONS-10: with a listener set, receive(timeout) raises
    IllegalStateException; after message_listener = None a sent message is returned by
    receive()."""
    s = connection.create_session()
    k = s.create_consumer(Q)
    got: list[Message] = []
    k.message_listener = got.append
    with pytest.raises(IllegalStateException):
        k.receive(timeout=0.1)
    k.message_listener = None
    assert k.message_listener is None
    send_via(factory, Q, "m")
    assert text(k.receive(timeout=WAIT)) == "m"
    assert got == []


def test_cons_08_receive_no_wait_and_iteration_refused_with_listener(
    connection: Connection,
) -> None:
    """CONS-08 (SHOULD): while a consumer has a listener, receive(), receive_no_wait() and
    iteration raise IllegalStateException."""
    k = connection.create_session().create_consumer(Q)
    k.message_listener = lambda m: None
    with pytest.raises(IllegalStateException):
        k.receive_no_wait()
    with pytest.raises(IllegalStateException):
        k.receive()
    with pytest.raises(IllegalStateException):
        for _ in k:
            pass


@pytest.mark.parametrize("closer", ["consumer", "session", "connection"])
def test_cons_09_iteration_yields_messages_until_closed(
    factory: ConnectionFactory, closer: str
) -> None:
    """CONS-09: ``for m in consumer`` yields messages as receive() would and ends the loop
    without an exception when the consumer, its session or its connection is closed."""
    conn = factory.create_connection()
    conn.start()
    s = conn.create_session()
    k = s.create_consumer(Q)
    seen: list[str | None] = []

    def loop() -> str:
        for m in k:
            seen.append(text(m))
        return "ended"

    it = Worker(loop).start()
    send_via(factory, Q, "i1", "i2")
    assert wait_for(lambda: len(seen) == 2)
    assert not it.done.is_set()
    {"consumer": k, "session": s, "connection": conn}[closer].close()
    assert it.join(1.0) == "ended"
    assert seen == ["i1", "i2"]
    conn.close()


def test_cons_09_iteration_on_closed_consumer_ends_at_once(connection: Connection) -> None:
    """CONS-09: iterating a consumer that is already closed yields nothing."""
    k = connection.create_session().create_consumer(Q)
    k.close()
    assert list(k) == []


# ---- asynchronous delivery -------------------------------------------------------------------
def test_cons_10_listener_delivery_and_removal(
    factory: ConnectionFactory, connection: Connection
) -> None:
    """CONS-10: an assigned listener is called with each message; reading it returns the
    callable; after assigning None delivery stops and later messages stay for a receive."""
    s = connection.create_session()
    k = s.create_consumer(Q)
    assert k.message_listener is None
    got: list[str | None] = []

    def on_message(m: Message) -> None:
        got.append(text(m))

    k.message_listener = on_message
    assert k.message_listener is on_message
    send_via(factory, Q, "l1", "l2")
    assert wait_for(lambda: len(got) == 2)
    k.message_listener = None
    assert k.message_listener is None
    send_via(factory, Q, "r1")
    time.sleep(0.1)
    assert got == ["l1", "l2"]
    assert text(k.receive(WAIT)) == "r1"


def test_cons_10_listener_not_called_while_stopped(factory: ConnectionFactory) -> None:
    """CONS-10: the listener is called only while the connection is started."""
    got: list[str | None] = []
    with factory.create_connection() as conn:
        k = conn.create_session().create_consumer(Q)
        k.message_listener = lambda m: got.append(text(m))
        send_via(factory, Q, "s1")
        time.sleep(0.1)
        assert got == []
        conn.start()
        assert wait_for(lambda: got == ["s1"])


def test_cons_11_replacing_listener_while_delivering(
    factory: ConnectionFactory, connection: Connection
) -> None:
    """CONS-11 (SHOULD): replacing the listener lets the running call finish and uses the new
    listener from the next message on."""
    entered, gate = threading.Event(), threading.Event()
    first: list[str | None] = []
    second: list[str | None] = []
    k = connection.create_session().create_consumer(Q)

    def old(m: Message) -> None:
        first.append(text(m))
        entered.set()
        gate.wait(WAIT)

    k.message_listener = old
    send_via(factory, Q, "m1", "m2", "m3")
    assert entered.wait(WAIT)
    k.message_listener = second.append
    gate.set()
    assert wait_for(lambda: len(second) == 2)
    assert first == ["m1"]
    assert [text(m) for m in second] == ["m2", "m3"]  # type: ignore[arg-type]


def test_s_cons_3_listener_exception_auto_and_client(
    factory: ConnectionFactory, connection: Connection, caplog: pytest.LogCaptureFixture
) -> None:
    """S-CONS-3, CONS-12, CONS-14: AUTO: a listener raising on the first delivery of m1 gets
    m1 again at once (redelivered, count 2), then the queue is empty. CLIENT: the next
    message is delivered; recover() in the listener brings m1 and m2 back (count 2); nothing
    more. The failure is logged."""
    caplog.set_level(logging.ERROR)
    seen: list[tuple[str | None, bool, int]] = []
    s = connection.create_session(False, Session.AUTO_ACKNOWLEDGE)
    k = s.create_consumer(Q)

    def auto_listener(m: Message) -> None:
        seen.append(marks(m))
        if len(seen) == 1:
            raise RuntimeError("first sight of m1")

    k.message_listener = auto_listener
    send_via(factory, Q, "m1")
    assert wait_for(lambda: len(seen) == 2)
    time.sleep(0.1)
    assert seen == [("m1", False, 1), ("m1", True, 2)]
    assert browse_via(factory) == []
    assert any(
        r.exc_info is not None and r.exc_info[0] is RuntimeError and "consumer" in r.getMessage()
        for r in caplog.records
    )
    k.close()

    observed: list[tuple[str | None, bool, int]] = []
    cs = connection.create_session(False, Session.CLIENT_ACKNOWLEDGE)
    ck = cs.create_consumer(R)
    failed_once: set[str | None] = set()
    recovered: set[str | None] = set()

    def client_listener(m: Message) -> None:
        observed.append(marks(m))
        t = text(m)
        if t == "m2" and t not in recovered:
            recovered.add(t)
            cs.recover()
        if t == "m1" and t not in failed_once:
            failed_once.add(t)
            raise RuntimeError("first sight of m1")

    ck.message_listener = client_listener
    send_via(factory, R, "m1", "m2")
    assert wait_for(lambda: len(observed) == 4)
    time.sleep(0.1)
    assert observed == [("m1", False, 1), ("m2", False, 1), ("m1", True, 2), ("m2", True, 2)]


def test_cons_12_listener_exception_dups_ok_redelivers(
    factory: ConnectionFactory, connection: Connection
) -> None:
    """CONS-12: in DUPS_OK_ACKNOWLEDGE mode a listener exception redelivers the message at
    once, like AUTO."""
    seen: list[tuple[str | None, bool, int]] = []
    k = connection.create_session(False, Session.DUPS_OK_ACKNOWLEDGE).create_consumer(Q)

    def listener(m: Message) -> None:
        seen.append(marks(m))
        if len(seen) == 1:
            raise ValueError("boom")

    k.message_listener = listener
    send_via(factory, Q, "d1", "d2")
    assert wait_for(lambda: len(seen) == 3)
    time.sleep(0.1)
    assert seen == [("d1", False, 1), ("d1", True, 2), ("d2", False, 1)]


def test_cons_12_listener_exception_transacted_does_not_roll_back(
    factory: ConnectionFactory, connection: Connection
) -> None:
    """CONS-12 (TX-11): in a transacted session a listener exception does not roll back: the
    next message is delivered, and a commit then consumes both."""
    seen: list[tuple[str | None, bool, int]] = []
    committed = threading.Event()
    s = connection.create_session(True)
    k = s.create_consumer(Q)

    def listener(m: Message) -> None:
        seen.append(marks(m))
        if text(m) == "t1":
            raise RuntimeError("t1 fails")
        s.commit()
        committed.set()

    k.message_listener = listener
    send_via(factory, Q, "t1", "t2")
    assert committed.wait(WAIT)
    time.sleep(0.1)
    assert seen == [("t1", False, 1), ("t2", False, 1)]
    k.close()
    assert browse_via(factory) == []


def test_cons_12_dispatch_thread_survives_exceptions(
    factory: ConnectionFactory, connection: Connection
) -> None:
    """CONS-12, EXC-15: the session's dispatch thread survives listener exceptions of every
    kind: later messages are still delivered."""
    seen: list[str | None] = []
    errors = iter([KeyError("k"), TypeError("t"), OSError("o")])
    k = connection.create_session(False, Session.CLIENT_ACKNOWLEDGE).create_consumer(Q)

    def listener(m: Message) -> None:
        seen.append(text(m))
        err = next(errors, None)
        if err is not None:
            raise err

    k.message_listener = listener
    send_via(factory, Q, "a", "b", "c", "d")
    assert wait_for(lambda: len(seen) == 4)
    assert seen == ["a", "b", "c", "d"]


def test_cons_13_listeners_of_a_session_are_serial_on_a_provider_thread(
    factory: ConnectionFactory, connection: Connection
) -> None:
    """CONS-13: listeners run on a provider thread, never two of one session at once, and may
    use their session (here: send a reply through it)."""
    s = connection.create_session()
    reply = s.create_producer(R)
    lock = threading.Lock()
    active = [0]
    peak = [0]
    threads: set[int] = set()
    count = [0]

    def listener(m: Message) -> None:
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
            threads.add(threading.get_ident())
        time.sleep(0.01)
        reply.send(s.create_text_message(f"re:{text(m)}"))
        with lock:
            active[0] -= 1
            count[0] += 1

    s.create_consumer(Q).message_listener = listener
    s.create_consumer(Topic("T")).message_listener = listener
    with factory.create_connection() as c:
        ps = c.create_session()
        pq, pt = ps.create_producer(Q), ps.create_producer(Topic("T"))
        for i in range(5):
            pq.send(ps.create_text_message(f"q{i}"))
            pt.send(ps.create_text_message(f"t{i}"))
    assert wait_for(lambda: count[0] == 10)
    assert peak[0] == 1
    assert threading.get_ident() not in threads
    assert sorted(browse_via(factory, R)) == sorted(  # type: ignore[type-var]
        [f"re:q{i}" for i in range(5)] + [f"re:t{i}" for i in range(5)]
    )


def _redeliver_by(how: str, factory: ConnectionFactory) -> tuple[str | None, bool, int]:
    """Receive m once, make it come back by ``how``, and return its second delivery's flags."""
    send_via(factory, Q, "m")
    conn = factory.create_connection()
    conn.start()
    transacted = how == "rollback"
    s = (
        conn.create_session(True)
        if transacted
        else conn.create_session(False, Session.CLIENT_ACKNOWLEDGE)
    )
    k = s.create_consumer(Q)
    first = k.receive(WAIT)
    assert first is not None and marks(first) == ("m", False, 1)
    if how == "recover":
        s.recover()
    elif how == "rollback":
        s.rollback()
    elif how == "session close":
        s.close()
    elif how == "connection close":
        conn.close()
    if how in ("recover", "rollback"):
        again = k.receive(WAIT)
        assert again is not None
        conn.close()
        return marks(again)
    conn.close()
    with factory.create_connection() as c2:
        c2.start()
        again = c2.create_session().create_consumer(Q).receive(WAIT)
        assert again is not None
        return marks(again)


@pytest.mark.parametrize("how", ["recover", "rollback", "session close", "connection close"])
def test_cons_14_redelivery_flags(factory: ConnectionFactory, how: str) -> None:
    """CONS-14: the first delivery shows jms_redelivered False and JMSXDeliveryCount 1; a
    delivery after recover, rollback, session close or connection close shows True and 2."""
    assert _redeliver_by(how, factory) == ("m", True, 2)


# ---- closing ---------------------------------------------------------------------------------
def test_s_cons_5_close_from_own_listener_and_from_another_thread(
    factory: ConnectionFactory, connection: Connection
) -> None:
    """S-CONS-5, CONS-16, CONS-15: consumer.close() in its own listener raises
    IllegalStateException; close() from another thread while the listener runs returns only
    after the listener returned."""
    k = connection.create_session().create_consumer(Q)
    outcome: list[BaseException | None] = []
    entered, gate = threading.Event(), threading.Event()
    returned_at: list[float] = []

    def listener(m: Message) -> None:
        try:
            k.close()
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)
        entered.set()
        gate.wait(WAIT)
        returned_at.append(time.monotonic())

    k.message_listener = listener
    send_via(factory, Q, "m")
    assert entered.wait(WAIT)
    assert len(outcome) == 1 and isinstance(outcome[0], IllegalStateException)
    assert not isinstance(outcome[0], JMSRuntimeException)
    closer = Worker(k.close).start()
    assert not closer.done.wait(0.2), "close() returned while the listener was running"
    gate.set()
    closer.join()
    assert closer.finished_at is not None and closer.finished_at >= returned_at[0]
    with pytest.raises(IllegalStateException):
        _ = k.message_listener


def test_cons_15_close_waits_for_pending_receive(connection: Connection) -> None:
    """CONS-15: close() from another thread returns only after the pending receive returned
    (None)."""
    for _ in range(3):  # repeat: the race is between close() returning and receive returning
        k = connection.create_session().create_consumer(Q)
        waiter = Worker(k.receive).start()
        time.sleep(0.02)
        k.close()
        assert waiter.done.is_set(), "close() returned before the pending receive did"
        assert waiter.join(1.0) is None


def test_cons_16_close_from_own_listener_leaves_consumer_open(
    factory: ConnectionFactory, connection: Connection
) -> None:
    """CONS-16: the refused close() from the listener leaves the consumer working: the next
    message is delivered to the same listener."""
    k = connection.create_session().create_consumer(Q)
    seen: list[str | None] = []
    errors: list[BaseException] = []

    def listener(m: Message) -> None:
        seen.append(text(m))
        try:
            k.close()
        except IllegalStateException as exc:
            errors.append(exc)

    k.message_listener = listener
    send_via(factory, Q, "a", "b")
    assert wait_for(lambda: len(seen) == 2)
    assert seen == ["a", "b"] and len(errors) == 2
    assert k.message_listener is listener


def test_cons_17_closed_consumer_raises_and_close_is_idempotent(
    factory: ConnectionFactory, connection: Connection
) -> None:
    """CONS-17: after close(), receive(), receive_no_wait(), reading or assigning
    message_listener and reading message_selector raise IllegalStateException (checked
    flavour); close() again is a no-op; a consumer is a context manager."""
    k = connection.create_session().create_consumer(Q, "a = 1")
    k.close()
    k.close()
    calls: dict[str, Callable[[], object]] = {
        "receive": k.receive,
        "receive(timeout)": lambda: k.receive(0.1),
        "receive_no_wait": k.receive_no_wait,
        "message_listener (read)": lambda: k.message_listener,
        "message_listener (set)": lambda: setattr(k, "message_listener", print),
        "message_listener (set None)": lambda: setattr(k, "message_listener", None),
        "message_selector": lambda: k.message_selector,
    }
    for name, fn in calls.items():
        with pytest.raises(IllegalStateException) as ei:
            fn()
            pytest.fail(f"{name} did not raise")
        assert not isinstance(ei.value, JMSRuntimeException), name
    s = connection.create_session()
    with s.create_consumer(Q) as managed:
        assert isinstance(managed, MessageConsumer)
        assert managed.receive_no_wait() is None
    with pytest.raises(IllegalStateException):
        managed.receive_no_wait()
    with pytest.raises(ZeroDivisionError), s.create_consumer(Q) as failing:
        _ = 1 / 0
    with pytest.raises(IllegalStateException):
        failing.receive_no_wait()
    send_via(factory, Q, "still there")
    assert text(s.create_consumer(Q).receive(WAIT)) == "still there"


def test_cons_18_closing_consumer_does_not_acknowledge_client(
    factory: ConnectionFactory, connection: Connection
) -> None:
    """CONS-18: in CLIENT mode, messages a consumer delivered stay unacknowledged after it
    closes: recover() brings them back (redelivered); acknowledge() through the session
    then consumes them."""
    send_via(factory, Q, "c1", "c2")
    s = connection.create_session(False, Session.CLIENT_ACKNOWLEDGE)
    k = s.create_consumer(Q)
    c1 = k.receive(WAIT)
    assert c1 is not None and marks(c1) == ("c1", False, 1)
    k.close()
    assert browse_via(factory) == ["c1", "c2"]
    s.recover()
    k2 = s.create_consumer(Q)
    got = [marks(m) for m in (k2.receive(WAIT), k2.receive(WAIT)) if m is not None]
    assert got == [("c1", True, 2), ("c2", False, 1)]
    k2.close()
    s.acknowledge()
    assert browse_via(factory) == []


def test_cons_18_closed_consumer_messages_acknowledged_by_session(
    factory: ConnectionFactory, connection: Connection
) -> None:
    """CONS-18, SESS-19: a message delivered by a consumer that was closed is acknowledged
    when the session acknowledges (through another message)."""
    send_via(factory, Q, "x1", "x2")
    s = connection.create_session(False, Session.CLIENT_ACKNOWLEDGE)
    k = s.create_consumer(Q)
    assert text(k.receive(WAIT)) == "x1"
    k.close()
    x2 = s.create_consumer(Q).receive(WAIT)
    assert x2 is not None and marks(x2) == ("x2", False, 1)
    x2.acknowledge()
    assert browse_via(factory) == []


@pytest.mark.parametrize("outcome", ["commit", "rollback"])
def test_cons_18_transacted_settled_by_commit_or_rollback(
    factory: ConnectionFactory, connection: Connection, outcome: str
) -> None:
    """CONS-18: in a transacted session the messages a closed consumer delivered are settled
    by the next commit (consumed) or rollback (redelivered, count 2)."""
    send_via(factory, Q, "t1")
    s = connection.create_session(True)
    k = s.create_consumer(Q)
    assert text(k.receive(WAIT)) == "t1"
    k.close()
    assert browse_via(factory) == ["t1"]
    getattr(s, outcome)()
    if outcome == "commit":
        assert browse_via(factory) == []
    else:
        again = s.create_consumer(Q).receive(WAIT)
        assert again is not None and marks(again) == ("t1", True, 2)
        s.commit()
        assert browse_via(factory) == []


def test_cons_18_prefetched_messages_go_back_unmarked(
    factory: ConnectionFactory, connection: Connection
) -> None:
    """CONS-18: messages prefetched by a consumer but never handed to the application go back
    on close without being marked redelivered, in their order."""
    send_via(factory, Q, "p1", "p2", "p3")
    s = connection.create_session()
    k = s.create_consumer(Q)  # prefetch (default 100) takes all three
    assert marks(k.receive(WAIT)) == ("p1", False, 1)  # type: ignore[arg-type]
    k.close()
    k2 = s.create_consumer(Q)
    got = [k2.receive(WAIT), k2.receive(WAIT)]
    assert [marks(m) for m in got if m is not None] == [("p2", False, 1), ("p3", False, 1)]
    assert k2.receive_no_wait() is None
