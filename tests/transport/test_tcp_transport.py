"""TcpTransport against a fake server on a real socket: framing, request/reply routing,
one-way sends, events, heartbeats, dead peers, link loss, connect errors and TLS."""

from __future__ import annotations

import random
import re
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ternmq import (
    Connection,
    ConnectionFactory,
    DeliveryMode,
    JMSException,
    MessageConsumer,
    Queue,
    Session,
    TextMessage,
)
from ternmq.protocol import commands as c
from ternmq.protocol.frames import MAGIC, PREAMBLE, Heartbeat, encode
from ternmq.transport import tcp
from ternmq.transport.tcp import TcpTransport

from ._certs import make_cert
from ._fake_server import FakeConn, FakeServer


class Events:
    """Collects what the transport hands to ``on_event``."""

    def __init__(self) -> None:
        self.delivered: list[c.Deliver] = []
        self.failed: list[c.ConnectionFailed] = []
        self.got_failure = threading.Event()
        self.threads: set[str] = set()

    def __call__(self, cmd: c.Command) -> None:
        self.threads.add(threading.current_thread().name)
        if isinstance(cmd, c.Deliver):
            self.delivered.append(cmd)
        elif isinstance(cmd, c.ConnectionFailed):
            self.failed.append(cmd)
            self.got_failure.set()


def wait_until(pred: object, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():  # type: ignore[operator]
            return True
        time.sleep(0.005)
    return bool(pred())  # type: ignore[operator]


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as srv:
        yield srv


def transport(srv: FakeServer, events: Events | None = None, **kw: object) -> TcpTransport:
    return TcpTransport(srv.host, srv.port, events or Events(), **kw)  # type: ignore[arg-type]


def connect(t: TcpTransport) -> c.Connected:
    reply = t.request(c.Connect())
    assert isinstance(reply, c.Connected)
    return reply


def round_trip(conn: Connection, queue: str) -> MessageConsumer:
    """Send "hi" to ``queue`` and receive it on a consumer of ``conn``; returns the consumer."""
    session = conn.create_session()
    consumer = session.create_consumer(Queue(queue))
    conn.start()
    session.create_producer(Queue(queue)).send(session.create_text_message("hi"))
    m = consumer.receive(2)
    assert isinstance(m, TextMessage) and m.text == "hi"
    return consumer


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# ---- framing and routing --------------------------------------------------------------------
def test_preamble_and_connect(server: FakeServer) -> None:
    t = transport(server)
    try:
        assert connect(t).connection_id
        assert server.client_preambles == [PREAMBLE]
        assert t.address == server.address
    finally:
        t.close()


def test_frames_of_every_size_round_trip(server: FakeServer) -> None:
    """Bodies from 0 octets to 3 MiB go out and come back intact, in order, however the
    stream is split into recv() chunks."""
    events = Events()
    t = transport(server, events)
    try:
        connect(t)
        assert isinstance(t.request(c.CreateSession(session_id=1)), c.Ok)
        req = c.CreateConsumer(
            session_id=1, consumer_id=7, destination="queue://frames", prefetch=1000
        )
        assert isinstance(t.request(req), c.Ok)
        t.send_oneway(c.Credit(consumer_id=7, messages=1000))
        bodies = [bytes([i % 251]) * n for i, n in enumerate([0, 1, 100, 65535, 65536, 3 << 20])]
        bodies += [random.randbytes(random.randrange(1, 300)) for _ in range(300)]
        for b in bodies:
            assert isinstance(
                t.request(c.Send(session_id=1, destination="queue://frames", message=b)), c.Ok
            )
        assert wait_until(lambda: len(events.delivered) == len(bodies))
        assert [d.message for d in events.delivered] == bodies
    finally:
        t.close()


def test_replies_are_routed_by_corr_across_many_threads() -> None:
    """32 threads x 100 requests; the server answers out of order (random delays, its own
    threads); every caller gets exactly the reply to its own request."""

    def handler(conn: FakeConn, req: c.Request) -> None:
        def answer() -> None:
            time.sleep(random.random() / 1000)
            value = req.destination if isinstance(req, c.Send) else None
            conn.send(c.Ok(corr=req.corr, value=value))

        if isinstance(req, c.Connect):
            conn.send(c.Connected(corr=req.corr, connection_id="x", provider_version="0"))
        else:
            threading.Thread(target=answer, daemon=True).start()

    with FakeServer(handler=handler) as srv:
        t = transport(srv)
        errors: list[str] = []
        try:
            connect(t)

            def worker(n: int) -> None:
                for i in range(100):
                    dest = f"queue://w{n}-{i}"
                    reply = t.request(c.Send(session_id=1, destination=dest, message=b""))
                    if not (isinstance(reply, c.Ok) and reply.value == dest):
                        errors.append(f"{dest}: {reply!r}")

            threads = [threading.Thread(target=worker, args=(n,)) for n in range(32)]
            for th in threads:
                th.start()
            for th in threads:
                th.join(30)
            assert not any(th.is_alive() for th in threads)
            assert errors == []
            assert t._pending == {}
        finally:
            t.close()


def test_caller_supplied_corr_is_kept(server: FakeServer) -> None:
    t = transport(server)
    try:
        connect(t)
        corr = t.next_corr()
        reply = t.request(c.CreateSession(corr=corr, session_id=3))
        assert isinstance(reply, c.Ok) and reply.corr == corr
        assert t.next_corr() > corr
    finally:
        t.close()


def test_request_timeout_names_the_address() -> None:
    with FakeServer() as srv:
        srv.hold.add(c.CreateSession)
        t = transport(srv)
        try:
            connect(t)
            with pytest.raises(JMSException, match=re.escape(srv.address)):
                t.request(c.CreateSession(session_id=1), timeout=0.1)
            assert t._pending == {}
            assert isinstance(t.request(c.CreateTemporary()), c.Ok)  # the link still works
        finally:
            t.close()


def test_oneway_sends_do_not_wait_and_keep_their_order() -> None:
    """send_oneway returns without a reply (the server never answers corr 0); the server
    sees one-way and two-way requests in the order they were sent."""
    with FakeServer() as srv:
        srv.hold.add(c.Credit)  # would not be answered anyway: make sure nothing is awaited
        t = transport(srv)
        try:
            connect(t)
            start = time.monotonic()
            for i in range(1, 201):
                t.send_oneway(c.Credit(consumer_id=1, messages=i))
            assert time.monotonic() - start < 2.0
            t.request(c.CreateTemporary())
            got = [cmd for cmd in srv.connections[0].received if isinstance(cmd, c.Credit)]
            assert [cr.messages for cr in got] == list(range(1, 201))
            assert all(cr.corr == 0 for cr in got)
        finally:
            t.close()


class WriteCounter:
    """Counts the transport's socket writes (each a ``sendall``)."""

    def __init__(self, t: TcpTransport) -> None:
        self.writes = 0
        self._send = t._io.send
        t._io.send = self  # type: ignore[method-assign]

    def __call__(self, data: bytes) -> None:
        self.writes += 1
        self._send(data)


def credits_received(srv: FakeServer) -> list[int]:
    return [cmd.messages for cmd in srv.connections[0].received if isinstance(cmd, c.Credit)]


def test_lazy_frames_leave_together_and_within_the_linger(server: FakeServer) -> None:
    """A lazy one-way frame waits for company: 100 of them leave in one write per
    LINGER_FRAMES plus one for the rest, which the flusher writes about LINGER_S after it
    was queued although the caller does nothing more; the order is kept."""
    t = transport(server)
    try:
        connect(t)
        counter = WriteCounter(t)
        for i in range(1, 101):
            t.send_oneway(c.Credit(consumer_id=1, messages=i), lazy=True)
        assert counter.writes == 100 // tcp.LINGER_FRAMES
        assert wait_until(lambda: len(credits_received(server)) == 100, 2.0)
        assert credits_received(server) == list(range(1, 101))
        assert counter.writes == 100 // tcp.LINGER_FRAMES + 1
    finally:
        t.close()


def test_a_request_takes_the_lazy_frames_before_it_with_it(server: FakeServer) -> None:
    """Lazy frames queued before a request leave with it, first, in one write; waiting on a
    lazily submitted request writes it at once instead of after the linger."""
    t = transport(server)
    t._flusher = tcp._Flusher(linger=3.0)
    try:
        connect(t)
        counter = WriteCounter(t)
        for i in range(1, 4):
            t.send_oneway(c.Credit(consumer_id=1, messages=i), lazy=True)
        t.request(c.CreateTemporary())
        assert counter.writes == 1
        assert credits_received(server) == [1, 2, 3]
        handle = t.submit(c.CreateTemporary(), lazy=True)
        start = time.monotonic()
        assert handle.wait(2.0)
        assert time.monotonic() - start < 1.0
        assert counter.writes == 2
    finally:
        t.close()


def test_auto_acknowledgements_are_not_lazy(server: FakeServer) -> None:
    """REL-05: in AUTO_ACKNOWLEDGE only the last consumed message may come back after a
    failure, so an acknowledgement is written before receive() returns the next message, not
    left to the flusher (here one that would wait a minute)."""
    factory = ConnectionFactory(server.url, block_on_non_persistent_send=False)
    with factory.create_connection() as conn:
        conn._transport._flusher = tcp._Flusher(linger=60.0)
        round_trip(conn, "eager")
        acked = lambda: any(isinstance(x, c.Ack) for x in server.connections[0].received)  # noqa: E731
        assert wait_until(acked, 2.0)


def test_pipelined_sends_are_mostly_quiet(server: FakeServer) -> None:
    """A-08: of 100 pipelined NON_PERSISTENT sends outside a transaction, one in QUIET_RUN
    (32) goes as an ordinary request (a corr, an answer); the others are quiet (corr 0, no
    answer unless refused). In a transacted session every one is answered."""
    from ternmq.client._send_window import QUIET_RUN

    factory = ConnectionFactory(server.url, block_on_non_persistent_send=False)
    with factory.create_connection() as conn:
        for transacted in (False, True):
            session = conn.create_session(transacted)
            p = session.create_producer(Queue(f"quiet-{transacted}"))
            p.delivery_mode = DeliveryMode.NON_PERSISTENT
            for _ in range(100):
                p.send(session.create_text_message("q"))
            if transacted:
                session.commit()
            session.close()
    sends = [x for x in server.connections[0].received if isinstance(x, c.Send)]
    plain, tx = sends[:100], sends[100:]
    answered = [i for i, x in enumerate(plain) if not x.quiet]
    assert answered == [i for i in range(100) if (i + 1) % QUIET_RUN == 0]
    assert all(x.corr == 0 for x in plain if x.quiet)
    assert all(x.corr and not x.quiet for x in tx)


def test_a_receive_about_to_block_writes_the_lazy_sends_first(server: FakeServer) -> None:
    """A thread that blocks in receive() first writes the pipelined sends queued on its
    connection (a request sent pipelined, then its reply awaited): the message arrives at
    once although the flusher here would wait a minute."""
    factory = ConnectionFactory(server.url, block_on_non_persistent_send=False)
    with factory.create_connection() as conn:
        conn._transport._flusher = tcp._Flusher(linger=60.0)
        consumer = conn.create_session().create_consumer(Queue("rr"))
        conn.start()
        session = conn.create_session()
        p = session.create_producer(Queue("rr"))
        p.delivery_mode = DeliveryMode.NON_PERSISTENT
        p.send(session.create_text_message("request"))
        m = consumer.receive(5)
        assert isinstance(m, TextMessage) and m.text == "request"


def test_an_idle_listener_thread_writes_what_its_listener_sent(server: FakeServer) -> None:
    """A listener that forwards with a pipelined send (CLIENT_ACKNOWLEDGE: no acknowledgement
    follows to carry it): once the listener thread has nothing more to run it writes the
    queue, not the flusher (here one that would wait a minute)."""
    factory = ConnectionFactory(server.url, block_on_non_persistent_send=False)
    with factory.create_connection() as relay, factory.create_connection() as client:
        relay._transport._flusher = tcp._Flusher(linger=60.0)
        session = relay.create_session(False, Session.CLIENT_ACKNOWLEDGE)
        forward = session.create_producer(Queue("out"))
        forward.delivery_mode = DeliveryMode.NON_PERSISTENT
        session.create_consumer(Queue("in")).message_listener = forward.send
        relay.start()
        replies = client.create_session().create_consumer(Queue("out"))
        client.start()
        client.create_session().create_producer(Queue("in")).send(
            client.create_session().create_text_message("hop")
        )
        m = replies.receive(5)
        assert isinstance(m, TextMessage) and m.text == "hop"


def test_a_lazy_send_leaves_when_the_process_exits_without_close(server: FakeServer) -> None:
    """A script that sends a pipelined NON_PERSISTENT message and ends without closing its
    connection still delivers it: the flusher writes what waits at interpreter exit."""
    script = (
        "import sys\n"
        "from ternmq import ConnectionFactory, DeliveryMode, Queue\n"
        "from ternmq.transport import tcp\n"
        "tcp._FLUSHER.linger = 60.0\n"
        "conn = ConnectionFactory(sys.argv[1], block_on_non_persistent_send=False)"
        ".create_connection()\n"
        "s = conn.create_session()\n"
        "p = s.create_producer(Queue('exit'))\n"
        "p.delivery_mode = DeliveryMode.NON_PERSISTENT\n"
        "p.send(s.create_text_message('bye'))\n"
    )
    done = subprocess.run([sys.executable, "-c", script, server.url], timeout=30, check=False)
    assert done.returncode == 0
    sends = lambda: [x for x in server.connections[0].received if isinstance(x, c.Send)]  # noqa: E731
    assert wait_until(lambda: len(sends()) == 1, 2.0)


def test_events_reach_on_event_on_the_reader_before_the_reply(server: FakeServer) -> None:
    """A Pull that finds a message: its Deliver reaches on_event before request() returns
    (everything a request causes comes before its reply)."""
    events = Events()
    t = transport(server, events)
    try:
        connect(t)
        t.request(c.CreateSession(session_id=1))
        t.request(c.Send(session_id=1, destination="queue://p", message=b"m1"))
        t.request(
            c.CreateConsumer(session_id=1, consumer_id=2, destination="queue://p", prefetch=0)
        )
        assert isinstance(t.request(c.Pull(consumer_id=2, messages=1, wait=False)), c.Ok)
        assert [d.message for d in events.delivered] == [b"m1"]
        assert events.threads == {f"ternmq-tcp-reader-{server.address}"}
    finally:
        t.close()


def test_early_frames_after_the_preamble_are_not_lost() -> None:
    """A frame that arrives in the same segment as the server's preamble is decoded."""
    early = encode(c.Deliver(consumer_id=1, delivery_id=1, message=b"early"))
    with FakeServer(after_preamble=early) as srv:
        events = Events()
        t = transport(srv, events)
        try:
            assert wait_until(lambda: len(events.delivered) == 1)
        finally:
            t.close()


# ---- heartbeats and dead peers --------------------------------------------------------------
def test_idle_client_sends_heartbeats() -> None:
    """Nothing to send for one interval: a Heartbeat goes out (the server keeps writing, so
    the link stays alive and every Heartbeat it counts is the client's own)."""
    with FakeServer(keepalive=0.02) as srv:
        events = Events()
        t = transport(srv, events, heartbeat=0.05)
        try:
            connect(t)
            assert wait_until(lambda: srv.connections[0].heartbeats >= 4, 2.0)
            assert events.failed == []
        finally:
            t.close()


def test_busy_client_sends_no_heartbeats(server: FakeServer) -> None:
    t = transport(server, heartbeat=0.2)
    try:
        connect(t)
        end = time.monotonic() + 0.6
        while time.monotonic() < end:  # requests: both directions carry data
            t.request(c.CreateTemporary())
            time.sleep(0.01)
        assert server.connections[0].heartbeats == 0
    finally:
        t.close()


def test_server_heartbeat_is_answered(server: FakeServer) -> None:
    t = transport(server, heartbeat=30.0)
    try:
        connect(t)
        conn = server.connections[0]
        conn.send(Heartbeat())
        assert wait_until(lambda: conn.heartbeats == 1, 2.0)
    finally:
        t.close()


def test_the_heartbeat_thread_ends_quietly_on_a_link_lost_before_it_started(
    server: FakeServer,
) -> None:
    """A link the reader found dead (and whose socket it closed) before the heartbeat thread
    got going: that thread ends without an error (it raised ValueError on the closed socket,
    printed by the thread machinery, after a server crash)."""
    t = transport(server, heartbeat=30.0)
    try:
        connect(t)
        server.drop_all()
        assert wait_until(lambda: t.lost, 5.0)
        assert wait_until(lambda: t._sock.fileno() == -1, 5.0)
        t._heartbeat_loop()  # as a thread started now would run: returns, raises nothing
    finally:
        t.close()


def test_heartbeats_keep_an_idle_link_alive(server: FakeServer) -> None:
    """The client's own heartbeats do not count as received data; a server that writes
    (here: heartbeats every 0.05 s) keeps a 0.1 s client alive well past 2 intervals."""
    events = Events()
    t = transport(server, events, heartbeat=0.1)
    try:
        connect(t)
        conn = server.connections[0]
        for _ in range(10):
            conn.send(Heartbeat())
            time.sleep(0.05)
        assert events.failed == []
        assert isinstance(t.request(c.CreateTemporary()), c.Ok)
    finally:
        t.close()


def test_client_adopts_a_longer_server_interval(server: FakeServer) -> None:
    """The interval is not negotiated: a client learns the server's from the spacing of its
    heartbeats and then waits twice that long, even past twice its own interval."""
    events = Events()
    t = transport(server, events, heartbeat=0.2)
    try:
        connect(t)
        conn = server.connections[0]
        for spacing in (0.3, 0.3, 0.5, 0.5):  # 0.5 > 2 x 0.2, but < 2 x 0.3 learned before
            time.sleep(spacing)
            conn.send(Heartbeat())
        assert events.failed == []
        assert t._peer_interval >= 0.5
    finally:
        t.close()


def test_silent_peer_is_declared_dead() -> None:
    """The server stops answering and writing (socket still open): after 2 heartbeat
    intervals a waiting request fails naming the address, linked to a TimeoutError, and
    on_event gets exactly one ConnectionFailed."""
    with FakeServer() as srv:
        events = Events()
        t = transport(srv, events, heartbeat=0.1)
        try:
            connect(t)
            srv.mute()
            start = time.monotonic()
            with pytest.raises(JMSException) as ei:
                t.request(c.CreateTemporary(), timeout=5.0)
            assert 0.15 < time.monotonic() - start < 2.0
            assert srv.address in str(ei.value)
            assert isinstance(ei.value.linked_exception, TimeoutError)
            assert ei.value.__cause__ is ei.value.linked_exception
            assert events.got_failure.wait(2)
            time.sleep(0.1)
            assert len(events.failed) == 1
            assert "heartbeat" in events.failed[0].message
            assert isinstance(t.failure_cause, TimeoutError)
        finally:
            t.close()


# ---- losing the link ------------------------------------------------------------------------
def test_link_drop_fails_every_waiting_request_and_reports_once() -> None:
    with FakeServer() as srv:
        srv.hold.add(c.CreateSession)
        events = Events()
        t = transport(srv, events)
        outcomes: list[BaseException | c.Reply] = []
        try:
            connect(t)

            def wait_for_reply(n: int) -> None:
                try:
                    outcomes.append(t.request(c.CreateSession(session_id=n)))
                except BaseException as exc:
                    outcomes.append(exc)

            threads = [threading.Thread(target=wait_for_reply, args=(n,)) for n in range(8)]
            for th in threads:
                th.start()
            assert wait_until(lambda: len(t._pending) == 8)
            srv.drop_all()
            for th in threads:
                th.join(5)
            assert len(outcomes) == 8
            for exc in outcomes:
                assert isinstance(exc, JMSException)
                assert srv.address in str(exc) and "lost" in str(exc)
            assert events.got_failure.wait(2)
            time.sleep(0.1)
            assert len(events.failed) == 1
            with pytest.raises(JMSException, match="lost"):
                t.request(c.CreateTemporary())
            t.send_oneway(c.Credit(consumer_id=1, messages=1))  # dropped, no exception
            assert wait_until(lambda: t._sock.fileno() == -1)  # freed without close()
        finally:
            t.close()


def test_server_connection_failed_event_is_passed_on_once() -> None:
    with FakeServer() as srv:
        srv.hold.add(c.CreateSession)
        events = Events()
        t = transport(srv, events)
        try:
            connect(t)
            outcome: list[object] = []

            def wait_for_reply() -> None:
                try:
                    outcome.append(t.request(c.CreateSession(session_id=1)))
                except JMSException as exc:
                    outcome.append(exc)

            waiter = threading.Thread(target=wait_for_reply)
            waiter.start()
            assert wait_until(lambda: len(t._pending) == 1)
            srv.connections[0].send(c.ConnectionFailed(message="the broker is shutting down"))
            waiter.join(5)
            assert not waiter.is_alive()
            assert len(outcome) == 1 and isinstance(outcome[0], JMSException)
            assert "the broker is shutting down" in str(outcome[0])
            assert events.got_failure.wait(2)
            time.sleep(0.1)
            assert [f.message for f in events.failed] == ["the broker is shutting down"]
        finally:
            t.close()


def test_unsolicited_protocol_error_carries_the_server_text() -> None:
    with FakeServer() as srv:
        srv.hold.add(c.CreateSession)
        events = Events()
        t = transport(srv, events)
        try:
            connect(t)
            srv.connections[0].send(
                c.Error(kind="ProtocolError", message="frame of 99 octets exceeds max_frame")
            )
            with pytest.raises(JMSException, match="exceeds max_frame"):
                t.request(c.CreateSession(session_id=1), timeout=5)
            assert events.got_failure.wait(2)
            assert "exceeds max_frame" in events.failed[0].message
        finally:
            t.close()


def test_protocol_error_reply_raises_the_server_text_through_the_factory() -> None:
    def handler(conn: FakeConn, req: c.Request) -> None:
        if isinstance(req, c.Connect):
            conn.send(c.Error(corr=req.corr, kind="ProtocolError", message="Connect refused: x"))

    with FakeServer(handler=handler) as srv, pytest.raises(JMSException, match="refused: x"):
        ConnectionFactory(srv.url).create_connection()


def test_close_is_orderly_and_idempotent(server: FakeServer) -> None:
    events = Events()
    t = transport(server, events, heartbeat=5.0)
    connect(t)
    t.close()
    t.close()
    assert not t._reader.is_alive()
    assert t._ticker is not None and not t._ticker.is_alive()
    assert events.failed == []
    assert any(isinstance(cmd, c.Disconnect) for cmd in server.connections[0].received)
    with pytest.raises(JMSException, match="closed"):
        t.request(c.CreateTemporary())


def test_abort_reports_a_loss_and_the_server_releases_the_connection(server: FakeServer) -> None:
    events = Events()
    t = transport(server, events)
    connect(t)
    t.abort()
    assert not t._reader.is_alive()
    assert len(events.failed) == 1
    assert server.connections[0].closed.wait(2)
    assert not any(isinstance(cmd, c.Disconnect) for cmd in server.connections[0].received)


# ---- opening errors -------------------------------------------------------------------------
def test_connection_refused_names_the_address_and_links_the_os_error() -> None:
    """S-EXC-2: the text contains host:port; linked_exception and __cause__ are the same
    ConnectionRefusedError."""
    port = free_port()
    with pytest.raises(JMSException) as ei:
        ConnectionFactory(f"tcp://127.0.0.1:{port}").create_connection()
    exc = ei.value
    assert f"127.0.0.1:{port}" in str(exc)
    assert isinstance(exc.linked_exception, ConnectionRefusedError)
    assert exc.__cause__ is exc.linked_exception


def test_connect_timeout() -> None:
    """A peer that accepts but never sends a preamble: JMSException after connect_timeout."""
    with socket.socket() as lsock:
        lsock.bind(("127.0.0.1", 0))
        lsock.listen(1)
        port = lsock.getsockname()[1]
        start = time.monotonic()
        with pytest.raises(JMSException, match=f"127.0.0.1:{port}.*0.2 s"):
            TcpTransport("127.0.0.1", port, Events(), connect_timeout=0.2)
        assert time.monotonic() - start < 2.0


@pytest.mark.parametrize(
    ("preamble", "expected"),
    [
        (b"HTTP/1.1 400 Bad Request\r\n\r\n", "not a ternmq connection"),
        (MAGIC + bytes([2, 0, 0, 0]), "version 2.0 is not supported"),
    ],
)
def test_bad_preamble_is_refused(preamble: bytes, expected: str) -> None:
    with FakeServer(preamble=preamble) as srv, pytest.raises(JMSException, match=expected) as ei:
        TcpTransport(srv.host, srv.port, Events())
    assert srv.address in str(ei.value)


def test_peer_closing_before_the_preamble() -> None:
    with socket.socket() as lsock:
        lsock.bind(("127.0.0.1", 0))
        lsock.listen(1)
        port = lsock.getsockname()[1]

        def accept_and_close() -> None:
            s, _ = lsock.accept()
            s.recv(8)  # read the preamble first: closing with unread data would reset
            s.close()

        threading.Thread(target=accept_and_close, daemon=True).start()
        with pytest.raises(JMSException, match="closed the connection before"):
            TcpTransport("127.0.0.1", port, Events())


def test_ipv6_loopback() -> None:
    if not socket.has_ipv6:
        pytest.skip("no IPv6 on this host")
    try:
        srv = FakeServer(host="::1")
    except OSError:
        pytest.skip("no IPv6 loopback on this host")
    with srv:
        with ConnectionFactory(f"tcp://[::1]:{srv.port}").create_connection() as conn:
            assert conn.connection_id
        with pytest.raises(JMSException, match=r"\[::1\]:"):
            ConnectionFactory(f"tcp://[::1]:{free_port()}").create_connection()


# ---- through the JMS API --------------------------------------------------------------------
def test_jms_round_trip_and_exception_listener_on_link_loss(server: FakeServer) -> None:
    """CONN-27 over tcp: a dropped link calls the exception listener once, with a
    JMSException naming the URL; a blocked receive() returns None."""
    factory = ConnectionFactory(server.url)
    conn = factory.create_connection()
    calls: list[JMSException] = []
    called = threading.Event()

    def listener(exc: JMSException) -> None:
        calls.append(exc)
        called.set()

    conn.exception_listener = listener
    consumer = round_trip(conn, "jms")
    got: list[object] = []
    blocked = threading.Thread(target=lambda: got.append(consumer.receive()))
    blocked.start()
    time.sleep(0.1)
    server.drop_all()
    assert called.wait(5)
    blocked.join(5)
    assert got == [None]
    time.sleep(0.1)
    assert len(calls) == 1
    assert server.address in str(calls[0])
    conn.close()


# ---- TLS ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, str]]:
    d = tmp_path_factory.mktemp("certs")
    server = make_cert(d, "server")
    client = make_cert(d, "client", "ternmq-client")
    return {"server": (server.cert, server.key), "client": (client.cert, client.key)}


def tls_server(certs: dict[str, tuple[str, str]], *, client_ca: str | None = None) -> FakeServer:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(*certs["server"])
    if client_ca is not None:
        ctx.load_verify_locations(client_ca)
        ctx.verify_mode = ssl.CERT_REQUIRED
    return FakeServer(ssl_context=ctx)


def jms_echo(factory: ConnectionFactory, text: str = "secret") -> str | None:
    with factory.create_connection() as conn:
        s = conn.create_session()
        q = Queue("tls")
        consumer = s.create_consumer(q)
        conn.start()
        s.create_producer(q).send(s.create_text_message(text))
        m = consumer.receive(5)
        assert isinstance(m, TextMessage)
        return m.text


def test_tls_with_cafile(certs: dict[str, tuple[str, str]]) -> None:
    cafile = certs["server"][0]
    with tls_server(certs) as srv:
        assert srv.url.startswith("tls://")
        assert jms_echo(ConnectionFactory(f"{srv.url}?cafile={cafile}")) == "secret"
        # by name too: the certificate is for localhost
        url = f"tls://localhost:{srv.port}?cafile={cafile}"
        assert jms_echo(ConnectionFactory(url), "x" * 200_000) == "x" * 200_000


def test_tls_refuses_an_unknown_certificate(certs: dict[str, tuple[str, str]]) -> None:
    with tls_server(certs) as srv:
        with pytest.raises(JMSException, match=re.escape("TLS handshake with 127.0.0.1")) as ei:
            ConnectionFactory(srv.url).create_connection()
        assert isinstance(ei.value.linked_exception, ssl.SSLCertVerificationError)
        assert jms_echo(ConnectionFactory(f"{srv.url}?verify=false")) == "secret"


def test_tls_checks_the_server_name(certs: dict[str, tuple[str, str]]) -> None:
    cafile = certs["server"][0]
    with tls_server(certs) as srv:
        bad = f"{srv.url}?cafile={cafile}&server_hostname=broker.example"
        with pytest.raises(JMSException, match="TLS handshake"):
            ConnectionFactory(bad).create_connection()
        good = f"{srv.url}?cafile={cafile}&server_hostname=localhost"
        assert jms_echo(ConnectionFactory(good)) == "secret"


def test_tls_client_certificate(certs: dict[str, tuple[str, str]]) -> None:
    cafile = certs["server"][0]
    cert, key = certs["client"]
    with tls_server(certs, client_ca=cert) as srv:
        url = f"{srv.url}?cafile={cafile}&certfile={cert}&keyfile={key}"
        assert jms_echo(ConnectionFactory(url)) == "secret"
        with pytest.raises(JMSException):
            jms_echo(ConnectionFactory(f"{srv.url}?cafile={cafile}"))


def test_tls_client_against_a_plain_listener(server: FakeServer, tmp_path: Path) -> None:
    with pytest.raises(JMSException, match=re.escape(server.address)):
        ConnectionFactory(
            f"tls://{server.address}?verify=false&connect_timeout=2"
        ).create_connection()
