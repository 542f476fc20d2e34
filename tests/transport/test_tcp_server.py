"""The tcp client against the command-line server: ``ternmq serve`` in a subprocess.

Covers what only a real server process shows: its listening line, a graceful stop reported
to the exception listener (S-CONN-9), heartbeats with the server's own interval, a frozen
server (SIGSTOP) detected as dead, and TLS listeners from a TOML config.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ternmq import ConnectionFactory, DeliveryMode, JMSException, Queue, TextMessage

from ._certs import make_cert

SERVE = [sys.executable, "-m", "ternmq.cli", "serve"]


class Served:
    """A running ``ternmq serve`` and the addresses it printed."""

    def __init__(self, proc: subprocess.Popen[str], urls: list[str]) -> None:
        self.proc = proc
        self.urls = urls

    @property
    def url(self) -> str:
        return self.urls[0]

    def url_of(self, scheme: str) -> str:
        return next(u for u in self.urls if u.startswith(f"{scheme}://"))


@contextlib.contextmanager
def serve(tmp_path: Path, config: str | None = None, listeners: int = 1) -> Iterator[Served]:
    args = [*SERVE, "--port", "0", "--http-port", "-1", "--data-dir", str(tmp_path / "data")]
    args += ["--log-level", "warning"]
    if config is not None:
        path = tmp_path / "ternmq.toml"
        path.write_text(config)
        args += ["--config", str(path)]
    proc = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        urls = []
        assert proc.stdout is not None
        for _ in range(listeners):
            line = proc.stdout.readline()
            m = re.fullmatch(r"ternmq listening on ((tcp|tls)://\S+)\n", line)
            if m is None:
                err = proc.stderr.read() if proc.stderr else ""
                raise AssertionError(f"unexpected first line {line!r}; stderr: {err}")
            urls.append(m.group(1))
        yield Served(proc, urls)
    finally:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGCONT)
            proc.kill()
        proc.wait(10)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


class Recorder:
    """An exception listener that records its calls and their threads."""

    def __init__(self) -> None:
        self.calls: list[JMSException] = []
        self.threads: list[threading.Thread] = []
        self.called = threading.Event()

    def __call__(self, exc: JMSException) -> None:
        self.calls.append(exc)
        self.threads.append(threading.current_thread())
        self.called.set()


def test_round_trip_and_graceful_stop_reported_once(tmp_path: Path) -> None:
    """S-CONN-9 (CONN-27, CONN-29): the server stops (SIGTERM): the exception listener is
    called exactly once within 5 s, on a thread other than the main one; a consumer blocked
    in receive() returns None."""
    with serve(tmp_path) as server:
        assert re.fullmatch(r"tcp://127\.0\.0\.1:\d+", server.url)
        factory = ConnectionFactory(server.url)
        conn = factory.create_connection()
        recorder = Recorder()
        conn.exception_listener = recorder
        session = conn.create_session()
        q = Queue("served")
        consumer = session.create_consumer(q)
        conn.start()
        producer = session.create_producer(q)
        producer.send(session.create_text_message("persistent"))
        producer.send(
            session.create_text_message("fast"), delivery_mode=DeliveryMode.NON_PERSISTENT
        )
        got = [consumer.receive(5), consumer.receive(5)]
        assert [m.text for m in got if isinstance(m, TextMessage)] == ["persistent", "fast"]
        blocked: list[object] = []
        waiter = threading.Thread(target=lambda: blocked.append(consumer.receive()))
        waiter.start()
        time.sleep(0.1)
        server.proc.send_signal(signal.SIGTERM)
        assert recorder.called.wait(5)
        waiter.join(5)
        assert blocked == [None]
        assert server.proc.wait(10) == 0
        time.sleep(0.2)
        assert len(recorder.calls) == 1
        assert recorder.threads[0] is not threading.main_thread()
        conn.close()


def test_short_server_heartbeat_keeps_an_idle_client(tmp_path: Path) -> None:
    """With the server's interval at 0.2 s and the client's too, an idle connection lives
    for many intervals: each side hears the other."""
    with serve(tmp_path, "[limits]\nheartbeat = 0.2\n") as server:
        conn = ConnectionFactory(f"{server.url}?heartbeat=0.2").create_connection()
        recorder = Recorder()
        conn.exception_listener = recorder
        time.sleep(1.5)
        assert recorder.calls == []
        conn.create_session().create_producer(Queue("alive")).send(
            conn.create_session().create_text_message("still here")
        )
        conn.close()


def test_frozen_server_is_detected_by_heartbeat(tmp_path: Path) -> None:
    """A server that stops responding (SIGSTOP: the socket stays open, nothing is read or
    written) is declared dead after two heartbeat intervals; the exception listener says so,
    linked to a TimeoutError."""
    with serve(tmp_path, "[limits]\nheartbeat = 0.3\n") as server:
        conn = ConnectionFactory(f"{server.url}?heartbeat=0.3").create_connection()
        recorder = Recorder()
        conn.exception_listener = recorder
        session = conn.create_session()
        os.kill(server.proc.pid, signal.SIGSTOP)
        start = time.monotonic()
        with pytest.raises(JMSException, match=re.escape(server.url.removeprefix("tcp://"))):
            session.create_producer(Queue("frozen")).send(session.create_text_message("x"))
        assert time.monotonic() - start < 5
        assert recorder.called.wait(5)
        assert isinstance(recorder.calls[0].linked_exception, TimeoutError)
        conn.close()


def test_tls_listener(tmp_path: Path) -> None:
    pair = make_cert(tmp_path, "server")
    config = (
        "[[listeners]]\nbind = '127.0.0.1'\nport = 0\n"
        "[[listeners]]\nbind = '127.0.0.1'\nport = 0\n"
        f"[listeners.tls]\ncert = '{pair.cert}'\nkey = '{pair.key}'\n"
    )
    with serve(tmp_path, config, listeners=2) as server:
        tls_url = server.url_of("tls")
        factory = ConnectionFactory(f"{tls_url}?cafile={pair.cert}")
        with factory.create_connection() as conn:
            s = conn.create_session()
            consumer = s.create_consumer(Queue("tls"))
            conn.start()
            s.create_producer(Queue("tls")).send(s.create_text_message("over tls" * 10_000))
            m = consumer.receive(5)
            assert isinstance(m, TextMessage) and m.text == "over tls" * 10_000
        with pytest.raises(JMSException, match="TLS handshake"):
            ConnectionFactory(tls_url).create_connection()  # not trusted without cafile
        with pytest.raises(JMSException):  # plain client on the TLS port
            ConnectionFactory(
                tls_url.replace("tls://", "tcp://") + "?connect_timeout=2"
            ).create_connection()


def test_frozen_server_is_detected_while_a_send_is_blocked(tmp_path: Path) -> None:
    """The same with the socket's send buffer full (a producer stuck in sendall behind the
    frozen server): the heartbeat thread does not get stuck behind it, the stuck send fails
    and the exception listener is called."""
    with serve(tmp_path, "[limits]\nheartbeat = 0.3\n") as server:
        conn = ConnectionFactory(f"{server.url}?heartbeat=0.3").create_connection()
        recorder = Recorder()
        conn.exception_listener = recorder
        session = conn.create_session()
        producer = session.create_producer(Queue("flood"))
        big = session.create_text_message("y" * 4_000_000)
        os.kill(server.proc.pid, signal.SIGSTOP)
        outcome: list[BaseException] = []

        def flood() -> None:
            try:
                for _ in range(20):
                    producer.send(big)
            except BaseException as exc:
                outcome.append(exc)

        sender = threading.Thread(target=flood)
        sender.start()
        assert recorder.called.wait(5)
        sender.join(5)
        assert not sender.is_alive()
        assert len(outcome) == 1 and isinstance(outcome[0], JMSException)
        conn.close()
