"""Automatic reconnect (``failover:`` URLs, CONN-30 and issue 5) against real ``ternmq serve``
processes, through a proxy that plays the network (tests/_proxy.py): links are cut, a server
is SIGKILLed and restarted on its data dir, requests and replies are swallowed in flight.

What is proven: a lost link is not reported while reconnecting works; sessions, consumers
(queue, durable, temporary, pull, listener), client id and temporary destinations come back;
deliveries of the old link come again marked redelivered and their stale acknowledgements
touch nothing on the new link; a transaction in progress rolls back; a send whose fate is
unknown raises (never silently lost); giving up reports once and closes the connection.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from _proxy import Proxy
from ternmq import ConnectionFactory, JMSException, Queue, Session, Topic
from ternmq.admin import Admin
from ternmq.errors import IllegalStateException, TransactionRolledBackException
from ternmq.protocol import commands as c

from .conftest import Serve

FAST = "initial_reconnect_delay=0.05&max_reconnect_delay=0.2"


@pytest.fixture
def proxies() -> Iterator[list[Proxy]]:
    made: list[Proxy] = []
    try:
        yield made
    finally:
        for p in made:
            p.close()


def _proxy(proxies: list[Proxy], port: int) -> Proxy:
    p = Proxy(port)
    proxies.append(p)
    return p


def _factory(*proxies: Proxy, options: str = FAST) -> ConnectionFactory:
    members = ",".join(f"tcp://127.0.0.1:{p.port}" for p in proxies)
    return ConnectionFactory(f"failover:({members})?{options}")


def _cut_and_wait(proxy: Proxy, caplog: pytest.LogCaptureFixture) -> None:
    """Cut the links and wait until the client has noticed (a call made before that may
    still go out on the dying link and be in doubt, which other tests cover)."""
    caplog.set_level(logging.WARNING, "ternmq.client")
    seen = caplog.text.count("reconnecting")
    proxy.cut()
    deadline = time.monotonic() + 10
    while caplog.text.count("reconnecting") == seen:
        assert time.monotonic() < deadline, "the client did not notice the cut"
        time.sleep(0.01)


def _cut_in_flight(proxy: Proxy, lost: str, call: Callable[[], None]) -> threading.Thread:
    """Run ``call`` on a thread while the proxy swallows the request (``lost="request"``)
    or the reply (``"reply"``), then cut the link with it in flight; the thread."""
    if lost == "request":
        proxy.drop_up = True
    else:
        proxy.drop_down = True
    thread = threading.Thread(target=call)
    thread.start()
    proxy.wait_dropped()
    proxy.drop_up = proxy.drop_down = False
    proxy.cut()
    return thread


def _drain(conn_factory: ConnectionFactory, queue: str, timeout: float = 0.5) -> list[str]:
    """Every message left on ``queue`` (through a fresh connection)."""
    with conn_factory.create_connection() as conn:
        conn.start()
        consumer = conn.create_session().create_consumer(Queue(queue))
        out = []
        while (m := consumer.receive(timeout)) is not None:
            out.append(m.get_body(str))
        return out


def test_conn_30_failover_survives_a_broker_kill_and_restart(
    serve: Serve, proxies, caplog: pytest.LogCaptureFixture
) -> None:
    """CONN-30: SIGKILL the broker, restart it on its data dir: the consumer blocked in
    receive() and the producer carry on, nothing is lost, the exception listener hears
    nothing (the log does)."""
    caplog.set_level(logging.WARNING, "ternmq.client")
    server = serve()
    proxy = _proxy(proxies, server.port)
    failures: list[JMSException] = []
    with _factory(proxy).create_connection() as conn:
        conn.exception_listener = failures.append
        conn.start()
        session = conn.create_session()
        producer = session.create_producer(Queue("fo.kill"))
        consumer = session.create_consumer(Queue("fo.kill"))
        producer.send(session.create_text_message("before"))
        assert consumer.receive(5).get_body(str) == "before"
        got: list[tuple[str, bool]] = []

        def receive_until_after() -> None:
            while (m := consumer.receive(30)) is not None:
                got.append((m.get_body(str), m.jms_redelivered))
                if got[-1][0] == "after":
                    return

        waiter = threading.Thread(target=receive_until_after)
        waiter.start()
        server.kill()
        restarted = serve(data_dir=server.data_dir)
        proxy.retarget(restarted.port)
        producer.send(session.create_text_message("after"))  # waits for the reconnect
        waiter.join(30)
        # AUTO_ACKNOWLEDGE acknowledges without waiting: if the kill beat the broker to that
        # acknowledgement, "before" comes once more, marked redelivered (at least once).
        assert got in ([("after", False)], [("before", True), ("after", False)])
        assert failures == []
        assert "reconnecting" in caplog.text and "reconnected to" in caplog.text


def test_conn_30_unacknowledged_deliveries_come_back_redelivered(serve: Serve, proxies) -> None:
    """CONN-30, REL-10: a CLIENT_ACKNOWLEDGE message seen before the cut comes again, marked
    redelivered; acknowledging the stale copy acknowledges nothing on the new link."""
    server = serve()
    proxy = _proxy(proxies, server.port)
    with _factory(proxy).create_connection() as conn:
        conn.start()
        session = conn.create_session(False, Session.CLIENT_ACKNOWLEDGE)
        consumer = session.create_consumer(Queue("fo.client"))
        producer = conn.create_session().create_producer(Queue("fo.client"))
        producer.send(conn.create_session().create_text_message("one"))
        first = consumer.receive(5)
        assert first.get_body(str) == "one" and not first.jms_redelivered
        proxy.cut()
        second = consumer.receive(20)
        assert second is not None and second.get_body(str) == "one"
        assert second.jms_redelivered
        assert second.get_int_property("JMSXDeliveryCount") == 2
        producer.send(conn.create_session().create_text_message("two"))
        first.acknowledge()  # acknowledges the session's messages of *this* link: "one" again
        third = consumer.receive(5)
        assert third.get_body(str) == "two"
        session.recover()  # "two" was not acknowledged: it comes back; "one" does not
        again = consumer.receive(5)
        assert again.get_body(str) == "two" and again.jms_redelivered
        again.acknowledge()
        assert consumer.receive(0.3) is None


def test_conn_30_transaction_in_progress_is_rolled_back(
    serve: Serve, proxies, caplog: pytest.LogCaptureFixture
) -> None:
    """CONN-30, TX-06: a transaction that sent and received before the cut cannot commit:
    commit() raises TransactionRolledBackException, its send never arrives, its receive
    comes back; the next transaction works."""
    server = serve()
    proxy = _proxy(proxies, server.port)
    factory = _factory(proxy)
    with factory.create_connection() as conn:
        conn.start()
        plain = conn.create_session()
        plain.create_producer(Queue("fo.tx.in")).send(plain.create_text_message("in"))
        tx = conn.create_session(True)
        consumer = tx.create_consumer(Queue("fo.tx.in"))
        out = tx.create_producer(Queue("fo.tx.out"))
        assert consumer.receive(5).get_body(str) == "in"
        out.send(tx.create_text_message("doomed"))
        _cut_and_wait(proxy, caplog)
        out.send(tx.create_text_message("also doomed"))  # after the reconnect, same transaction
        with pytest.raises(TransactionRolledBackException, match="lost"):
            tx.commit()
        again = consumer.receive(10)
        assert again.get_body(str) == "in" and again.jms_redelivered
        out.send(tx.create_text_message("kept"))
        tx.commit()
    assert _drain(ConnectionFactory(f"tcp://127.0.0.1:{server.port}"), "fo.tx.out") == ["kept"]
    assert _drain(ConnectionFactory(f"tcp://127.0.0.1:{server.port}"), "fo.tx.in") == []


@pytest.mark.parametrize("lost", ["request", "reply"])
def test_conn_30_in_doubt_persistent_send_raises(serve: Serve, proxies, lost: str) -> None:
    """CONN-30 and issue 5 ("never silently loses an in-doubt persistent send"): a PERSISTENT
    send whose request (or whose receipt) was lost with the link raises JMSException saying
    that the outcome is unknown and how to resend safely. Where the request was lost the
    broker has nothing; where the receipt was lost it has the message."""
    server = serve()
    proxy = _proxy(proxies, server.port)
    with _factory(proxy).create_connection() as conn:
        session = conn.create_session()
        producer = session.create_producer(Queue("fo.doubt"))
        producer.send(session.create_text_message("first"))
        errors: list[BaseException] = []

        def send() -> None:
            try:
                producer.send(session.create_text_message("doubt"))
            except JMSException as exc:
                errors.append(exc)

        _cut_in_flight(proxy, lost, send).join(20)
        assert len(errors) == 1
        assert "unknown" in str(errors[0]) and "JMS_TernMQ_DuplicateID" in str(errors[0])
        producer.send(session.create_text_message("next"))  # the connection works again
    expected = ["first", "next"] if lost == "request" else ["first", "doubt", "next"]
    assert _drain(ConnectionFactory(f"tcp://127.0.0.1:{server.port}"), "fo.doubt") == expected


def test_conn_30_temporary_queue_durable_subscription_and_listener_survive(
    serve: Serve, proxies
) -> None:
    """CONN-30: the client id, a durable subscription, a temporary queue (same name, so
    JMSReplyTo handed out before still works) and a message listener are all re-created."""
    server = serve()
    proxy = _proxy(proxies, server.port)
    direct = ConnectionFactory(f"tcp://127.0.0.1:{server.port}")
    with _factory(proxy).create_connection() as conn:
        conn.client_id = "fo-client"
        session = conn.create_session()
        durable = session.create_durable_consumer(Topic("fo.topic"), "sub")
        temp = session.create_temporary_queue()
        temp_consumer = session.create_consumer(temp)
        heard: list[str] = []
        done = threading.Event()
        listener_session = conn.create_session()

        def on_message(m: object) -> None:
            heard.append(m.get_body(str))  # type: ignore[attr-defined]
            if len(heard) == 2:
                done.set()

        listener_session.create_consumer(Queue("fo.listen")).message_listener = on_message
        conn.start()
        with direct.create_connection() as other:
            s = other.create_session()
            s.create_producer(Queue("fo.listen")).send(s.create_text_message("l1"))
            deadline = time.monotonic() + 10
            while not heard and time.monotonic() < deadline:
                time.sleep(0.01)
            # the cut comes once the broker has the listener's ack of l1 (an ack lost with
            # the link would rightly bring l1 back, redelivered)
            admin = Admin(other)
            while admin.stat("queue://fo.listen")[0].dequeued < 1:
                assert time.monotonic() < deadline, "the listener's ack never arrived"
                time.sleep(0.01)
            proxy.cut()
            # published after the cut: the durable subscription keeps it; the temporary
            # queue (re-created by name) and the listener's queue get theirs
            s.create_producer(Topic("fo.topic")).send(s.create_text_message("t1"))
            s.create_producer(Queue("fo.listen")).send(s.create_text_message("l2"))
            deadline = time.monotonic() + 20
            while True:
                try:
                    s.create_producer(temp).send(s.create_text_message("reply"))
                    break
                except JMSException:  # until the client has re-created it
                    assert time.monotonic() < deadline
                    time.sleep(0.05)
        assert durable.receive(20).get_body(str) == "t1"
        assert temp_consumer.receive(20).get_body(str) == "reply"
        assert done.wait(20) and heard == ["l1", "l2"]


def test_conn_30_pull_consumer_blocked_across_a_cut(serve: Serve, proxies) -> None:
    """CONN-30: a prefetch-0 consumer blocked in receive() when the link is cut pulls again
    on the new link and gets the message sent later."""
    server = serve()
    proxy = _proxy(proxies, server.port)
    factory = _factory(proxy, options=FAST + "&prefetch=0")
    with factory.create_connection() as conn:
        conn.start()
        consumer = conn.create_session().create_consumer(Queue("fo.pull"))
        got: list[object] = []
        waiter = threading.Thread(target=lambda: got.append(consumer.receive(30)))
        waiter.start()
        time.sleep(0.2)  # let it block in its pull (not required for correctness)
        proxy.cut()
        with ConnectionFactory(f"tcp://127.0.0.1:{server.port}").create_connection() as other:
            s = other.create_session()
            s.create_producer(Queue("fo.pull")).send(s.create_text_message("pulled"))
        waiter.join(30)
        assert len(got) == 1 and got[0] is not None
        assert got[0].get_body(str) == "pulled"  # type: ignore[attr-defined]


def test_conn_30_moves_to_the_next_broker_of_the_list(
    serve: Serve, proxies, caplog: pytest.LogCaptureFixture
) -> None:
    """CONN-30: when the broker in use cannot be reached any more, the next one of the list
    is tried (here a second route to the same broker)."""
    server = serve()
    first = _proxy(proxies, server.port)
    second = _proxy(proxies, server.port)
    with _factory(first, second).create_connection() as conn:
        session = conn.create_session()
        producer = session.create_producer(Queue("fo.list"))
        producer.send(session.create_text_message("via first"))
        assert first.accepted == 1 and second.accepted == 0
        first.refuse = True
        _cut_and_wait(first, caplog)
        producer.send(session.create_text_message("via second"))
        assert second.accepted == 1
    assert _drain(ConnectionFactory(f"tcp://127.0.0.1:{server.port}"), "fo.list") == [
        "via first",
        "via second",
    ]


def test_conn_30_gives_up_after_max_reconnect_attempts(serve: Serve, proxies) -> None:
    """CONN-27, CONN-30, A-10: once the attempts are spent the loss is reported once, a
    blocked receive returns None, and the connection behaves as closed."""
    server = serve()
    proxy = _proxy(proxies, server.port)
    options = "initial_reconnect_delay=0.05&max_reconnect_delay=0.05&max_reconnect_attempts=3"
    failures: list[JMSException] = []
    reported = threading.Event()
    conn = _factory(proxy, options=options).create_connection()
    conn.exception_listener = lambda e: (failures.append(e), reported.set())
    conn.start()
    consumer = conn.create_session().create_consumer(Queue("fo.giveup"))
    got: list[object] = ["unset"]
    waiter = threading.Thread(target=lambda: got.__setitem__(0, consumer.receive()))
    waiter.start()
    proxy.refuse = True
    proxy.cut()
    assert reported.wait(20)
    waiter.join(10)
    assert got == [None]
    time.sleep(0.2)
    assert len(failures) == 1 and "3 round(s)" in str(failures[0])
    with pytest.raises(IllegalStateException):
        conn.create_session()
    conn.close()
    server.stop()


def test_conn_30_timeout_bounds_calls_made_while_reconnecting(
    serve: Serve, proxies, caplog: pytest.LogCaptureFixture
) -> None:
    """CONN-30: with ``timeout``, a call made while the broker is unreachable raises
    JMSException after that long; the connection keeps trying and works once it is back."""
    server = serve()
    proxy = _proxy(proxies, server.port)
    with _factory(proxy, options=FAST + "&timeout=0.5").create_connection() as conn:
        session = conn.create_session()
        producer = session.create_producer(Queue("fo.timeout"))
        proxy.refuse = True
        _cut_and_wait(proxy, caplog)
        started = time.monotonic()
        with pytest.raises(JMSException, match="failover timeout"):
            producer.send(session.create_text_message("lost"))
        assert time.monotonic() - started < 10
        proxy.refuse = False
        deadline = time.monotonic() + 20
        while True:
            try:
                producer.send(session.create_text_message("back"))
                break
            except JMSException:
                assert time.monotonic() < deadline
    assert _drain(ConnectionFactory(f"tcp://127.0.0.1:{server.port}"), "fo.timeout") == ["back"]


def test_conn_30_close_while_reconnecting_returns(serve: Serve, proxies) -> None:
    """CONN-30, CONN-18: closing a connection whose broker is gone does not wait for a
    reconnect that may never come."""
    server = serve()
    proxy = _proxy(proxies, server.port)
    conn = _factory(proxy).create_connection()
    session = conn.create_session(True)
    session.create_producer(Queue("fo.close")).send(session.create_text_message("x"))
    proxy.refuse = True
    proxy.cut()
    time.sleep(0.2)
    started = time.monotonic()
    conn.close()
    assert time.monotonic() - started < 5
    assert conn.closed


def _unacknowledged(server_port: int, queue: str) -> int:
    """Messages of ``queue`` the broker still holds (waiting or delivered, not acknowledged)."""
    with ConnectionFactory(f"tcp://127.0.0.1:{server_port}").create_connection() as admin:
        reply = admin.request(c.Stat(destination=f"queue://{queue}"))
    assert isinstance(reply, c.StatResult)
    (stat,) = reply.destinations
    return stat.depth  # held: waiting, scheduled or in flight


def test_conn_30_a_stale_acknowledgement_never_touches_the_new_link(
    serve: Serve, proxies, caplog: pytest.LogCaptureFixture
) -> None:
    """CONN-30, REL-06: delivery ids are per link. A listener still running on a message of
    the lost link finishes after the reconnect: its automatic acknowledgement must not be
    sent, or it would acknowledge whichever new delivery got the same id (here "n3")."""
    server = serve()
    proxy = _proxy(proxies, server.port)
    gate = threading.Semaphore(0)
    seen: list[tuple[str, bool]] = []

    def on_message(m: object) -> None:
        body = m.get_body(str)  # type: ignore[attr-defined]
        seen.append((body, m.jms_redelivered))  # type: ignore[attr-defined]
        if body == "m":
            assert gate.acquire(timeout=30)

    def wait_for(predicate: object, what: str) -> None:
        deadline = time.monotonic() + 20
        while not predicate():  # type: ignore[operator]
            assert time.monotonic() < deadline, what
            time.sleep(0.02)

    direct = ConnectionFactory(f"tcp://127.0.0.1:{server.port}")
    with _factory(proxy).create_connection() as conn, direct.create_connection() as other:
        session = conn.create_session()
        session.create_consumer(Queue("fo.stale")).message_listener = on_message
        conn.start()
        s = other.create_session()
        send = s.create_producer(Queue("fo.stale")).send
        for body in ("x1", "x2", "x3", "m"):  # delivery ids 1..4 on the first link
            send(s.create_text_message(body))
        wait_for(lambda: len(seen) == 4, "the listener did not get x1..x3 and m")
        caplog.set_level(logging.WARNING, "ternmq.client")
        proxy.cut()
        wait_for(lambda: "reconnected to" in caplog.text, "no reconnect")
        for body in ("n1", "n2", "n3"):
            send(s.create_text_message(body))
        # on the new link: m (redelivered) = 1, n1 = 2, n2 = 3, n3 = 4, all delivered
        wait_for(lambda: _unacknowledged(server.port, "fo.stale") == 4, "not 4 held")
        gate.release()  # the old call of "m" returns; the new "m" blocks the listener
        wait_for(lambda: len(seen) == 5, "the redelivered m did not come")
        time.sleep(0.3)  # time for a wrong acknowledgement to arrive
        assert _unacknowledged(server.port, "fo.stale") == 4
        gate.release()
        wait_for(lambda: len(seen) == 8, "n1..n3 did not come")
        assert seen[4] == ("m", True) and [b for b, _ in seen[5:]] == ["n1", "n2", "n3"]


@pytest.mark.parametrize("lost", ["request", "reply"])
@pytest.mark.parametrize("asynchronous", [False, True])
def test_conn_30_in_doubt_send_with_duplicate_id_is_resent_once(
    serve: Serve, proxies, lost: str, asynchronous: bool
) -> None:
    """CONN-30, PSF-09: an in-doubt send that carries JMS_TernMQ_DuplicateID is sent again
    on the new link; the broker keeps exactly one copy whether or not the first got in, and
    send() returns (or the completion listener hears on_completion)."""
    server = serve()
    proxy = _proxy(proxies, server.port)
    done = threading.Event()
    outcome: list[object] = []

    class Listener:
        def on_completion(self, message: object) -> None:
            outcome.append("completed")
            done.set()

        def on_exception(self, message: object, exc: Exception) -> None:
            outcome.append(exc)
            done.set()

    with _factory(proxy).create_connection() as conn:
        session = conn.create_session()
        producer = session.create_producer(Queue("fo.dedup"))
        msg = session.create_text_message("once")
        msg.set_string_property("JMS_TernMQ_DuplicateID", "order-42")

        def send() -> None:
            try:
                if asynchronous:
                    producer.send(msg, completion_listener=Listener())
                else:
                    producer.send(msg)
                    outcome.append("completed")
                    done.set()
            except JMSException as exc:
                outcome.append(exc)
                done.set()

        sender = _cut_in_flight(proxy, lost, send)
        assert done.wait(30)
        sender.join(10)
        assert outcome == ["completed"]
    assert _drain(ConnectionFactory(f"tcp://127.0.0.1:{server.port}"), "fo.dedup") == ["once"]


def test_conn_30_half_open_link_is_detected_by_heartbeats_then_replaced(
    serve: Serve, proxies, caplog: pytest.LogCaptureFixture
) -> None:
    """CONN-30 with heartbeats: the network goes silent without closing anything (a
    half-open link). The client declares the link dead within two heartbeat intervals and
    reconnects once the network is back; the message the old link held comes again, after
    the broker has timed out the old connection too."""
    caplog.set_level(logging.WARNING, "ternmq.client")
    server = serve("[limits]\nheartbeat = 0.5\n")
    proxy = _proxy(proxies, server.port)
    url = f"failover:(tcp://127.0.0.1:{proxy.port}?heartbeat=0.5)?{FAST}"
    with ConnectionFactory(url).create_connection() as conn:
        conn.start()
        session = conn.create_session(False, Session.CLIENT_ACKNOWLEDGE)
        consumer = session.create_consumer(Queue("fo.silent"))
        session.create_producer(Queue("fo.silent")).send(session.create_text_message("held"))
        assert consumer.receive(5).get_body(str) == "held"
        proxy.drop_up = proxy.drop_down = True  # silence, no FIN, no RST
        silent = time.monotonic()
        deadline = silent + 10
        while "reconnecting" not in caplog.text:
            assert time.monotonic() < deadline, "the silent link was not detected"
            time.sleep(0.02)
        detected = time.monotonic() - silent
        proxy.drop_up = proxy.drop_down = False
        again = consumer.receive(20)
        assert again is not None and again.get_body(str) == "held" and again.jms_redelivered
        again.acknowledge()
        assert detected < 5  # two intervals (1 s) plus scheduling slack on a loaded machine


@pytest.mark.parametrize("lost", ["request", "reply"])
def test_tx_07_commit_in_doubt_raises_and_the_next_transaction_is_clean(
    serve: Serve, proxies, lost: str
) -> None:
    """TX-07, REL-06, CONN-30: a commit whose request (or whose answer) is lost with the link
    raises JMSException saying the outcome is unknown, not TransactionRolledBackException;
    the broker has the transaction's messages only if the commit got there; the next
    transaction of the session commits normally."""
    server = serve()
    proxy = _proxy(proxies, server.port)
    errors: list[BaseException] = []
    with _factory(proxy).create_connection() as conn:
        tx = conn.create_session(True)
        producer = tx.create_producer(Queue("fo.commit"))
        producer.send(tx.create_text_message("in doubt"))

        def commit() -> None:
            try:
                tx.commit()
            except JMSException as exc:
                errors.append(exc)

        _cut_in_flight(proxy, lost, commit).join(20)
        assert len(errors) == 1 and type(errors[0]) is JMSException
        assert "unknown" in str(errors[0])
        producer.send(tx.create_text_message("next"))
        tx.commit()
    expected = ["next"] if lost == "request" else ["in doubt", "next"]
    assert _drain(ConnectionFactory(f"tcp://127.0.0.1:{server.port}"), "fo.commit") == expected


def test_conn_30_transaction_that_only_sent_is_rolled_back(
    serve: Serve, proxies, caplog: pytest.LogCaptureFixture
) -> None:
    """CONN-30, TX-06: a transaction that only sent before the cut (nothing received) is
    doomed too: its commit raises TransactionRolledBackException instead of committing the
    sends made after the reconnect without the ones the broker rolled back."""
    server = serve()
    proxy = _proxy(proxies, server.port)
    with _factory(proxy).create_connection() as conn:
        tx = conn.create_session(True)
        out = tx.create_producer(Queue("fo.tx.send"))
        out.send(tx.create_text_message("before the cut"))
        _cut_and_wait(proxy, caplog)
        out.send(tx.create_text_message("after the cut"))
        with pytest.raises(TransactionRolledBackException, match="lost"):
            tx.commit()
        out.send(tx.create_text_message("kept"))
        tx.commit()
    assert _drain(ConnectionFactory(f"tcp://127.0.0.1:{server.port}"), "fo.tx.send") == ["kept"]
