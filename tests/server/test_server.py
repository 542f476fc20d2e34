"""``ternmq serve`` as a process, driven over raw sockets: the handshake, hostile input,
timeouts and heartbeats, authentication and permissions, limits, and a graceful stop."""

from __future__ import annotations

import contextlib
import os
import pathlib
import re
import socket
import struct
import subprocess
import time
import urllib.request
from collections.abc import Iterator

import pytest

from ternmq import ConnectionFactory, Queue, Session
from ternmq.message.codec import decode_message
from ternmq.protocol import commands as c
from ternmq.protocol.frames import PREAMBLE, FrameDecoder, Heartbeat, encode
from ternmq.server.app import ServerThread
from ternmq.server.config import ListenerConfig, ServerConfig
from ternmq.server.security import hash_password
from ternmq.store.sqlite import SqliteStore

from ._support import HOST, IO_TIMEOUT, SERVE, START_TIMEOUT, Raw, text_message, works
from .conftest import Serve


def _raw_until_closed(sock: socket.socket, timeout: float = 10.0) -> bytes:
    sock.settimeout(timeout)
    data = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return data
        if not chunk:
            return data
        data += chunk


def _error_frames(data: bytes) -> list[c.Error]:
    return [cmd for cmd in FrameDecoder().feed(data) if isinstance(cmd, c.Error)]


# ---- handshake ------------------------------------------------------------------------------
def test_preamble_handshake_and_connect(serve: Serve) -> None:
    server = serve()
    with Raw(server.port) as cl:
        cl.handshake()
        reply = cl.request(c.Connect(client_id="hs"))
        assert isinstance(reply, c.Connected)
        assert reply.connection_id.startswith("ID:")
        assert isinstance(cl.request(c.CreateSession(session_id=1)), c.Ok)
    server.wait_log(r"event=connection_open peer=127\.0\.0\.1:\d+ conn=ID:\d+")


@pytest.mark.parametrize(
    "junk",
    [b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", b"TMQP\x07\x00\x00\x00", b"\x16\x03\x01\x02\x00"],
    ids=["http", "wrong-version", "tls-to-plain"],
)
def test_wrong_preamble_gets_error_and_close(serve: Serve, junk: bytes) -> None:
    server = serve()
    with socket.create_connection((HOST, server.port), timeout=10) as sock:
        sock.sendall(junk)
        data = _raw_until_closed(sock)
    assert data.startswith(PREAMBLE)
    errors = _error_frames(data[len(PREAMBLE) :])
    assert len(errors) == 1 and errors[0].kind == "ProtocolError" and errors[0].corr == 0
    line = server.wait_log(r"event=protocol_error peer=127\.0\.0\.1:\d+")
    assert "problem=" in line
    works(server.port)


def test_silent_client_dropped_after_handshake_timeout(serve: Serve) -> None:
    server = serve("[limits]\nhandshake_timeout = 0.4\n")
    silent = socket.create_connection((HOST, server.port), timeout=10)
    half = Raw(server.port)  # preamble but no Connect
    try:
        half.handshake()
        start = time.monotonic()
        assert _raw_until_closed(silent) == b""
        elapsed = time.monotonic() - start
        assert 0.2 <= elapsed < 8, elapsed
        errors = _error_frames(_raw_until_closed(half.sock))
        assert errors and "handshake_timeout" in errors[0].message
    finally:
        silent.close()
        half.close()
    server.wait_log("event=handshake_timeout")
    works(server.port)


def test_request_before_connect_and_reply_from_client_are_protocol_errors(serve: Serve) -> None:
    server = serve()
    for first in (c.CreateSession(corr=1, session_id=1), c.Ok(corr=1)):
        with Raw(server.port) as cl:
            cl.handshake()
            cl.send(first)
            errors = [x for x in cl.read_until_closed() if isinstance(x, c.Error)]
            assert errors and errors[0].kind == "ProtocolError", errors
    with Raw(server.port) as cl:
        assert isinstance(cl.connect(), c.Connected)
        cl.send(c.Connect(corr=9))
        errors = [x for x in cl.read_until_closed() if isinstance(x, c.Error)]
        assert errors and "second Connect" in errors[0].message
    works(server.port)


# ---- heartbeats -----------------------------------------------------------------------------
def test_heartbeats_and_dead_peer_dropped_after_two_intervals(serve: Serve) -> None:
    server = serve("[limits]\nheartbeat = 0.3\n")
    with Raw(server.port) as alive, Raw(server.port) as dead:
        assert isinstance(alive.connect(), c.Connected)
        assert isinstance(dead.connect(), c.Connected)
        last_sent = time.monotonic()
        # ``alive`` answers every heartbeat: it outlives many intervals.
        deadline = time.monotonic() + 2.0
        beats = 0
        while time.monotonic() < deadline:
            cmd = alive.recv(heartbeats=True)
            assert isinstance(cmd, Heartbeat)
            beats += 1
            alive.send(Heartbeat())
        assert beats >= 3
        # ``dead`` never said anything after Connect: closed after about two intervals.
        dead.read_until_closed(timeout=10)
        assert time.monotonic() - last_sent >= 0.5
        assert isinstance(alive.request(c.CreateSession(session_id=1)), c.Ok)
    server.wait_log("event=heartbeat_timeout")


# ---- hostile frames -------------------------------------------------------------------------
SMALL_FRAMES = "[broker]\nmax_message_bytes = 2000\n[limits]\nmax_frame = 4096\n"


@pytest.mark.parametrize(
    "bad",
    [
        struct.pack(">I", 1_000_000) + b"x" * 100,  # oversized (a length past max_frame)
        struct.pack(">I", 12) + b"\xc1" * 12,  # garbage (not MessagePack)
        encode(c.Ok(corr=1))[:-1] + b"\x00",  # length right, content not a command
        encode(c.Deliver(consumer_id=1, delivery_id=1, message=b"")),  # an event from a client
    ],
    ids=["oversized", "garbage", "mutated", "event"],
)
def test_bad_frame_closes_only_that_connection(serve: Serve, bad: bytes) -> None:
    server = serve(SMALL_FRAMES)
    with Raw(server.port) as victim, Raw(server.port) as other:
        assert isinstance(victim.connect(), c.Connected)
        assert isinstance(other.connect(), c.Connected)
        assert isinstance(victim.request(c.CreateSession(session_id=1)), c.Ok)
        victim.send_bytes(bad)
        errors = [x for x in victim.read_until_closed() if isinstance(x, c.Error)]
        assert len(errors) == 1 and errors[0].kind == "ProtocolError", errors
        # The other raw client on the same server carries on.
        assert isinstance(other.request(c.CreateSession(session_id=1)), c.Ok)
        msg = text_message("after the bad frame")
        reply = other.request(c.Send(session_id=1, destination="queue://q", message=msg))
        assert isinstance(reply, c.Ok)
    line = server.wait_log("event=protocol_error")
    assert "peer=127.0.0.1:" in line and "problem=" in line
    works(server.port)


def test_message_over_max_message_bytes_is_refused_not_fatal(serve: Serve) -> None:
    server = serve(SMALL_FRAMES)
    with Raw(server.port) as cl:
        cl.connect()
        cl.request(c.CreateSession(session_id=1))
        big = text_message("x" * 3000)
        reply = cl.request(c.Send(session_id=1, destination="queue://q", message=big))
        assert isinstance(reply, c.Error) and reply.kind == "ResourceAllocationException"
        assert isinstance(cl.request(c.CreateSession(session_id=2)), c.Ok)


# ---- security -------------------------------------------------------------------------------
def _users_config(extra: str = "") -> str:
    return (
        f'[users.alice]\npassword = "{hash_password("s3cret")}"\nroles = ["orders"]\n'
        f'[users.bob]\npassword = "{hash_password("hunter2")}"\n' + extra
    )


def test_conn_03_authentication(serve: Serve) -> None:
    """CONN-03, EXC-06: good password in; bad password, unknown user and (with users
    configured) anonymous refused with JMSSecurityException, and the socket closed."""
    server = serve(_users_config())
    with Raw(server.port) as cl:
        assert isinstance(cl.connect("alice", "s3cret"), c.Connected)
    for user, password in (("alice", "wrong"), ("mallory", "s3cret"), (None, None)):
        with Raw(server.port) as cl:
            reply = cl.connect(user, password)
            assert isinstance(reply, c.Error) and reply.kind == "JMSSecurityException", reply
            cl.read_until_closed()
    line = server.wait_log("event=auth_failed")
    assert "peer=127.0.0.1:" in line
    assert "s3cret" not in server.log()


def test_anonymous_explicitly_allowed_beside_users(serve: Serve) -> None:
    server = serve("anonymous = true\n" + _users_config())
    with Raw(server.port) as cl:
        assert isinstance(cl.connect(), c.Connected)
    with Raw(server.port) as cl:
        assert isinstance(cl.connect("bob", "nope"), c.Error)


def test_exc_06_permission_denied(serve: Serve) -> None:
    """EXC-06: an authenticated user without the permission gets JMSSecurityException naming
    user, action and destination; what it may do still works."""
    perms = (
        '[permissions."role:orders"]\nsend = ["queue://orders.>"]\ncreate = ["orders.>"]\n'
        '[permissions.bob]\nconsume = ["queue://orders.*"]\nbrowse = [">"]\n'
    )
    server = serve(_users_config(perms))
    with Raw(server.port) as alice, Raw(server.port) as bob:
        assert isinstance(alice.connect("alice", "s3cret"), c.Connected)
        assert isinstance(bob.connect("bob", "hunter2"), c.Connected)
        alice.request(c.CreateSession(session_id=1))
        bob.request(c.CreateSession(session_id=1))
        msg = text_message("order")
        ok = alice.request(c.Send(session_id=1, destination="queue://orders.eu", message=msg))
        assert isinstance(ok, c.Ok), ok
        denied = alice.request(c.Send(session_id=1, destination="queue://payments", message=msg))
        assert isinstance(denied, c.Error) and denied.kind == "JMSSecurityException"
        assert "'alice'" in denied.message and "send" in denied.message
        assert "queue://payments" in denied.message
        denied = alice.request(
            c.CreateConsumer(session_id=1, consumer_id=1, destination="queue://orders.eu")
        )
        assert isinstance(denied, c.Error) and "consume" in denied.message
        # bob may consume from an existing orders queue but not create one
        ok = bob.request(
            c.CreateConsumer(session_id=1, consumer_id=1, destination="queue://orders.eu")
        )
        assert isinstance(ok, c.Ok), ok
        deliver = bob.recv()
        assert isinstance(deliver, c.Deliver)
        denied = bob.request(
            c.CreateConsumer(session_id=1, consumer_id=2, destination="queue://orders.us")
        )
        assert isinstance(denied, c.Error) and "create" in denied.message
        assert isinstance(bob.request(c.Browse(destination="queue://orders.eu")), c.BrowseResult)


def test_prop_23_jmsx_user_id_populated(serve: Serve) -> None:
    """PROP-20, PROP-23: with populate_user_id the broker sets JMSXUserID to the
    authenticated user, whatever the producer put there."""
    server = serve("populate_user_id = true\n" + _users_config())
    with Raw(server.port) as cl:
        cl.connect("alice", "s3cret")
        cl.request(c.CreateSession(session_id=1))
        from ternmq.message import TextMessage
        from ternmq.message.codec import encode_message

        m = TextMessage("hi")
        m.set_string_property("JMSXUserID", "mallory")
        cl.request(c.Send(session_id=1, destination="queue://u", message=encode_message(m)))
        cl.request(c.CreateConsumer(session_id=1, consumer_id=1, destination="queue://u"))
        deliver = cl.recv()
        assert isinstance(deliver, c.Deliver)
        got = decode_message(deliver.message)
        assert got.get_string_property("JMSXUserID") == "alice"


# ---- limits ---------------------------------------------------------------------------------
def test_connection_and_session_limits(serve: Serve) -> None:
    """Past max_connections / max_sessions_per_connection: ResourceAllocationException."""
    server = serve("[limits]\nmax_connections = 2\nmax_sessions_per_connection = 1\n")
    with Raw(server.port) as a, Raw(server.port) as b, Raw(server.port) as third:
        assert isinstance(a.connect(), c.Connected)
        assert isinstance(b.connect(), c.Connected)
        reply = third.connect()
        assert isinstance(reply, c.Error) and reply.kind == "ResourceAllocationException"
        third.read_until_closed()
        assert isinstance(a.request(c.CreateSession(session_id=1)), c.Ok)
        reply = a.request(c.CreateSession(session_id=2))
        assert isinstance(reply, c.Error) and reply.kind == "ResourceAllocationException"
        assert "max_sessions_per_connection" in reply.message


def test_temporary_destination_limit(serve: Serve) -> None:
    """Past max_temporaries_per_connection: ResourceAllocationException; deleting one makes
    room again."""
    server = serve("[limits]\nmax_temporaries_per_connection = 2\n")
    with Raw(server.port) as a:
        assert isinstance(a.connect(), c.Connected)
        made = [a.request(c.CreateTemporary(topic=t)) for t in (False, True)]
        assert all(isinstance(r, c.Ok) for r in made)
        reply = a.request(c.CreateTemporary(topic=False))
        assert isinstance(reply, c.Error) and reply.kind == "ResourceAllocationException"
        assert "max_temporaries_per_connection (2)" in reply.message
        assert isinstance(a.request(c.DeleteTemporary(destination=made[0].value)), c.Ok)
        assert isinstance(a.request(c.CreateTemporary(topic=False)), c.Ok)


# ---- time-driven work -----------------------------------------------------------------------
def test_scheduled_delivery_runs_on_the_server_timer(serve: Serve) -> None:
    """PROD-17 over the network: the server's timer delivers a delayed message at its time."""
    server = serve()
    with Raw(server.port) as cl:
        cl.connect()
        cl.request(c.CreateSession(session_id=1))
        cl.request(c.CreateConsumer(session_id=1, consumer_id=1, destination="queue://later"))
        due = int(time.time() * 1000) + 400
        reply = cl.request(
            c.Send(
                session_id=1,
                destination="queue://later",
                message=text_message("later"),
                delivery_time=due,
            )
        )
        assert isinstance(reply, c.Ok)
        deliver = cl.recv()
        assert isinstance(deliver, c.Deliver)
        assert time.time() * 1000 >= due - 5


# ---- stopping -------------------------------------------------------------------------------
def test_sigterm_graceful_stop_keeps_persistent_messages(
    serve: Serve, tmp_path: pathlib.Path
) -> None:
    """REL-09 across a graceful stop: SIGTERM -> exit 0 within seconds, connected clients get
    ConnectionFailed; a server on the same data dir delivers every message sent before."""
    data = tmp_path / "keep"
    server = serve(data_dir=data)
    texts = [f"m{i}" for i in range(20)]
    with Raw(server.port) as cl:
        cl.connect()
        cl.request(c.CreateSession(session_id=1))
        for t in texts:
            reply = cl.request(
                c.Send(session_id=1, destination="queue://keep", message=text_message(t))
            )
            assert isinstance(reply, c.Ok)
        start = time.monotonic()
        assert server.stop(timeout=10) == 0
        assert time.monotonic() - start < 5
        tail = cl.read_until_closed()
        assert any(isinstance(x, c.ConnectionFailed) for x in tail), tail
    server.wait_log("event=stopped")
    again = serve(data_dir=data)
    with Raw(again.port) as cl:
        cl.connect()
        cl.request(c.CreateSession(session_id=1))
        cl.request(
            c.CreateConsumer(session_id=1, consumer_id=1, destination="queue://keep", prefetch=50)
        )
        got = []
        while len(got) < len(texts):
            deliver = cl.recv()
            assert isinstance(deliver, c.Deliver)
            got.append(decode_message(deliver.message).text)  # type: ignore[attr-defined]
        assert got == texts


_LISTENING = re.compile(
    r"event=listening protocol=(\w+) address=127\.0\.0\.1:(\d+) url=(\w+)://127\.0\.0\.1:(\d+)$"
)


def test_port_minus_one_turns_the_main_listener_off_and_each_listener_logs_host_port(
    tmp_path: pathlib.Path,
) -> None:
    """SERVER.md, "Listeners and ports": ``--port -1`` opens no main listener (nothing on
    stdout), the STOMP and HTTP listeners still serve, and each logs one
    ``event=listening protocol=PROTO address=HOST:PORT`` line with its real port."""
    log = tmp_path / "log"
    argv = [*SERVE, "--port", "-1", "--stomp-port", "0", "--http-port", "0"]
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            [*argv, "--data-dir", str(tmp_path / "data")], stdout=subprocess.PIPE, stderr=err
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT
        lines: list[str] = []
        while len(lines) < 2 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
            lines = [ln for ln in log.read_text().splitlines() if "event=listening" in ln]
        found = {}
        for line in lines:
            m = _LISTENING.search(line)
            assert m is not None, line
            assert m.group(2) == m.group(4) and m.group(2) != "0"
            found[m.group(1)] = (int(m.group(2)), m.group(3))
        assert found.keys() == {"stomp", "http"}, log.read_text()
        assert found["stomp"][1] == "tcp" and found["http"][1] == "http"
        with socket.create_connection((HOST, found["stomp"][0]), timeout=IO_TIMEOUT) as s:
            s.sendall(b"CONNECT\naccept-version:1.2\nhost:/\n\n\x00")
            assert s.recv(4096).startswith(b"CONNECTED\n")
        url = f"http://{HOST}:{found['http'][0]}/api/health"
        with urllib.request.urlopen(url, timeout=IO_TIMEOUT) as reply:
            assert reply.status == 200
    finally:
        proc.kill()
        out, _ = proc.communicate(timeout=IO_TIMEOUT)
    assert b"listening on" not in out  # no native listener to print


def test_the_native_listener_logs_the_port_stdout_gives(serve: Serve) -> None:
    server = serve(http=True)
    line = server.wait_log(r"event=listening protocol=native ")
    m = _LISTENING.search(line)
    assert m is not None, line
    assert (int(m.group(2)), m.group(3)) == (server.port, "tcp")


# ---- flow control ---------------------------------------------------------------------------
def test_client_that_does_not_read_holds_nobody_up(serve: Serve) -> None:
    """A consumer that stops reading its socket: the server buffers only up to its prefetch,
    other clients carry on, and once it reads again it gets every message in order."""
    server = serve("[limits]\nwrite_buffer_high = 65536\nwrite_buffer_low = 16384\n")
    # 300 x 28 KB = 8.4 MB: more than the server's socket send buffer (at most 4 MB by
    # default, net.ipv4.tcp_wmem) and the client's receive buffer hold, so the rest waits in
    # the server's own write buffer, far past write_buffer_high. The receive buffer stays
    # above half the loopback MSS: a smaller one (4 KB) makes the kernel trickle the data at
    # one window per 200 ms retransmission tick, about 40 KB/s, once the client reads again.
    n = 300
    with Raw(server.port) as slow, Raw(server.port) as producer:
        slow.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        slow.connect()
        slow.request(c.CreateSession(session_id=1))
        slow.request(
            c.CreateConsumer(session_id=1, consumer_id=1, destination="queue://flood", prefetch=n)
        )
        producer.connect()
        producer.request(c.CreateSession(session_id=1))
        for i in range(n):
            body = text_message(f"{i:04d}" + "x" * 28_000)
            reply = producer.request(
                c.Send(session_id=1, destination="queue://flood", message=body, persistent=False)
            )
            assert isinstance(reply, c.Ok)
        works(server.port)
        got = []
        while len(got) < n:
            deliver = slow.recv()
            assert isinstance(deliver, c.Deliver)
            got.append(decode_message(deliver.message).text[:4])  # type: ignore[attr-defined]
        assert got == [f"{i:04d}" for i in range(n)]


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="no CPU affinity on this OS")
def test_cpu_affinity_pins_the_server_and_its_threads(serve: Serve) -> None:
    """``cpu_affinity`` pins the whole server process, the store's writer thread included
    (it starts later and inherits); a CPU this process may not use stops ``ternmq serve``
    with exit code 2 and a message naming the machine's CPUs."""
    cpu = max(os.sched_getaffinity(0))
    server = serve(f"cpu_affinity = [{cpu}]")
    works(server.port)  # a persistent send: the writer thread exists now
    server.wait_log(f"event=cpu_affinity.*cpus={cpu}")
    tids = [int(t) for t in os.listdir(f"/proc/{server.proc.pid}/task")]
    assert len(tids) > 1
    assert {tid: os.sched_getaffinity(tid) for tid in tids} == {tid: {cpu} for tid in tids}
    assert server.stop() == 0
    proc = subprocess.run(
        [*SERVE, "--port", "0", "--http-port", "-1", "--cpu-affinity", f"{cpu},4095"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert f"cpu_affinity {cpu},4095: not available to this process" in proc.stderr


@contextlib.contextmanager
def _server_on_store(data_dir: pathlib.Path) -> Iterator[tuple[ServerThread, SqliteStore]]:
    """An in-process server on the SQLite store in ``data_dir``, and that store."""
    config = ServerConfig(
        listeners=(ListenerConfig(bind="127.0.0.1", port=0),),
        data_dir=str(data_dir),
        log_level="warning",
    )
    with ServerThread(config) as st:
        assert st.server.broker is not None
        store = st.server.broker.store
        assert isinstance(store, SqliteStore)
        yield st, store


def _send_texts(session: Session, n: int) -> None:
    producer = session.create_producer(Queue("q"))
    for i in range(n):
        producer.send(session.create_text_message(f"m{i}"))


def _stored(data_dir: pathlib.Path) -> int:
    """How many messages queue://q holds in the (stopped) server's store."""
    reopened = SqliteStore(data_dir)
    try:
        return len(reopened.load().messages.get("queue://q", []))
    finally:
        reopened.close()


def test_a_lone_producers_persistent_sends_are_committed_on_the_event_loop(
    tmp_path: pathlib.Path,
) -> None:
    """REL-S1: with the store's writer idle, the server's event loop commits a lone
    synchronous producer's PERSISTENT send itself, after reading what the clients sent (an
    owner commit: no writer wake-up, no completion handed back across threads), and the
    receipt still follows durability: the messages are in the store after the server stops."""
    with _server_on_store(tmp_path / "data") as (st, store):
        with ConnectionFactory(st.url).create_connection() as conn:
            _send_texts(conn.create_session(), 20)
        assert store.inline_commits >= 20
    assert _stored(tmp_path / "data") == 20


def test_a_consumers_acknowledgements_are_not_committed_on_the_event_loop(
    tmp_path: pathlib.Path,
) -> None:
    """REL-S1: an AUTO_ACKNOWLEDGE acknowledgement is one-way (nobody waits for its commit),
    so the event loop leaves its store batch to the writer thread instead of stopping its
    reading for an fsync; the acknowledged messages are gone after the server stops."""
    with _server_on_store(tmp_path / "data") as (st, store):
        with ConnectionFactory(st.url).create_connection() as conn:
            session = conn.create_session()
            _send_texts(session, 20)
            inline, commits = store.inline_commits, store.commits
            consumer = session.create_consumer(Queue("q"))
            conn.start()
            texts = []
            for _ in range(20):  # one at a time: each acknowledgement finds the writer idle
                m = consumer.receive(5.0)
                assert m is not None
                texts.append(m.text)  # type: ignore[attr-defined]
                time.sleep(0.02)
            assert texts == [f"m{i}" for i in range(20)]
            deadline = time.monotonic() + 5.0
            while store.commits == commits and time.monotonic() < deadline:
                time.sleep(0.01)
        assert store.commits > commits
        assert store.inline_commits == inline
    assert _stored(tmp_path / "data") == 0


def test_a_disconnect_waits_for_held_quiet_sends_then_closes(serve: Serve) -> None:
    """A-08, PSF-07 on the wire: a Disconnect from a connection whose quiet sends the broker
    holds for room (a full "block" queue) gets no reply while they are held; once another
    client makes room they are delivered, the Disconnect is answered, and the server closes
    the connection itself."""
    server = serve('[destinations."queue://held"]\nmax_bytes = 8000\nfull_policy = "block"\n')
    body = "b" * 3000
    with Raw(server.port) as cl:
        assert isinstance(cl.connect(), c.Connected)
        assert isinstance(cl.request(c.CreateSession(session_id=1)), c.Ok)
        for i in range(3):  # two fit in 8,000 bytes; the third is held
            msg = text_message(f"{i}:{body}")
            cl.send(c.Send(session_id=1, destination="queue://held", message=msg, quiet=True))
        cl.corr += 1
        cl.send(c.Disconnect(corr=cl.corr))
        cl.sock.settimeout(0.3)
        with pytest.raises(TimeoutError):
            cl.recv()  # held: no reply yet
        cl.sock.settimeout(10.0)
        with ConnectionFactory(f"tcp://{HOST}:{server.port}").create_connection() as other:
            consumer = other.create_session().create_consumer(Queue("held"))
            other.start()
            got = [consumer.receive(10.0) for _ in range(3)]
        assert [m.text[:2] for m in got if m is not None] == ["0:", "1:", "2:"]  # type: ignore[attr-defined]
        rest = cl.read_until_closed()
        assert [type(cmd) for cmd in rest] == [c.Ok]
        assert rest[0].corr == cl.corr  # type: ignore[union-attr]


def test_one_read_of_requests_is_answered_in_order_and_a_disconnect_ends_it(serve: Serve) -> None:
    """The requests of one read go to the broker in one entry: each is answered in order (an
    error answers its own request only), and those after a Disconnect are not processed: the
    server answers the Disconnect and closes the connection."""
    server = serve()
    with Raw(server.port) as cl:
        assert isinstance(cl.connect(), c.Connected)
        msg = text_message("one read")
        reqs: list[c.Request] = [
            c.CreateSession(corr=10, session_id=1),
            c.Send(corr=11, session_id=1, destination="queue://batch", message=msg),
            c.CreateSession(corr=12, session_id=1),  # already open: an error
            c.Send(corr=13, session_id=1, destination="queue://batch", message=msg),
            c.Disconnect(corr=14),
            c.CreateSession(corr=15, session_id=2),  # after the Disconnect: never processed
        ]
        cl.send_bytes(b"".join(encode(r) for r in reqs))
        rest = cl.read_until_closed()
    assert [(type(x), x.corr) for x in rest] == [  # type: ignore[union-attr]
        (c.Ok, 10),
        (c.Ok, 11),
        (c.Error, 12),
        (c.Ok, 13),
        (c.Ok, 14),
    ]
    with ConnectionFactory(f"tcp://{HOST}:{server.port}").create_connection() as other:
        consumer = other.create_session().create_consumer(Queue("batch"))
        other.start()
        got = [consumer.receive(5.0) for _ in range(2)]
    assert [m.text for m in got if m is not None] == ["one read", "one read"]  # type: ignore[attr-defined]


def test_a_port_in_use_is_reported_before_the_data_dir_is_opened(tmp_path: pathlib.Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        cfg = tmp_path / "server.toml"
        cfg.write_text(f"[[listeners]]\nport = {port}\n", encoding="utf-8")
        proc = subprocess.run(
            [*SERVE, "--config", str(cfg), "--data-dir", str(tmp_path / "data")],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert proc.returncode == 1, proc.stderr
    assert str(port) in proc.stderr
    assert not (tmp_path / "data").exists()
