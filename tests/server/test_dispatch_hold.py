"""Concurrent store and dispatch over a real ``ternmq serve`` with the native client: a
PERSISTENT message sent to a queue whose consumer waits goes to it at once, and its insert
is deferred for ``dispatch_hold`` seconds; the consumer's acknowledgement, if it comes
first, cancels the write. Proven by the store's commit count and by SIGKILL: what was
consumed never comes back, what was not is on disk before its send returned."""

from __future__ import annotations

import pathlib
import threading
import time

from ternmq import ConnectionFactory, DeliveryMode, Queue, Session, TextMessage

from ._support import ServerProcess, store_commits


def _factory(server: ServerProcess) -> ConnectionFactory:
    return ConnectionFactory(f"tcp://127.0.0.1:{server.port}")


def _send(server: ServerProcess, queue: str, texts: list[str]) -> float:
    """Send ``texts`` PERSISTENT (synchronous sends); the seconds the slowest send took."""
    slowest = 0.0
    with _factory(server).create_connection() as conn:
        session = conn.create_session()
        producer = session.create_producer(Queue(queue))
        producer.delivery_mode = DeliveryMode.PERSISTENT
        for text in texts:
            start = time.monotonic()
            producer.send(session.create_text_message(text))
            slowest = max(slowest, time.monotonic() - start)
    return slowest


def _consume(server: ServerProcess, queue: str, n: int, got: list[str]) -> threading.Thread:
    """A thread that receives ``n`` messages of ``queue`` (AUTO_ACKNOWLEDGE) into ``got``."""
    ready = threading.Event()

    def run() -> None:
        with _factory(server).create_connection() as conn:
            consumer = conn.create_session().create_consumer(Queue(queue))
            conn.start()
            ready.set()
            while len(got) < n:
                m = consumer.receive(10.0)
                if m is None:
                    return
                assert isinstance(m, TextMessage)
                got.append(m.text or "")

    t = threading.Thread(target=run, daemon=True)
    t.start()
    assert ready.wait(10)
    return t


def _drain(server: ServerProcess, queue: str, timeout: float = 0.5) -> list[tuple[str, bool]]:
    """(text, redelivered) of every message ``queue`` holds."""
    out: list[tuple[str, bool]] = []
    with _factory(server).create_connection() as conn:
        consumer = conn.create_session().create_consumer(Queue(queue))
        conn.start()
        while (m := consumer.receive(timeout)) is not None:
            assert isinstance(m, TextMessage)
            out.append((m.text or "", m.jms_redelivered))
    return out


def _server(tmp_path: pathlib.Path, data: pathlib.Path, hold: float) -> ServerProcess:
    return ServerProcess(data, f"[broker]\ndispatch_hold = {hold}\n", tmp_path, http=True)


def test_messages_a_waiting_consumer_acknowledges_are_never_written(
    tmp_path: pathlib.Path,
) -> None:
    data = tmp_path / "data"
    # A generous hold: however loaded the machine, the consumer acknowledges within it.
    with _server(tmp_path, data, 1.0) as server:
        url = server.http_url
        _send(server, "kept", ["k0", "k1", "k2"])  # nobody consumes these: written
        got: list[str] = []
        t = _consume(server, "taken", 31, got)
        _send(server, "taken", ["first"])  # the queue's first message reserves its positions
        before = store_commits(url)
        _send(server, "taken", [f"m{i}" for i in range(30)])
        t.join(10)
        assert got == ["first"] + [f"m{i}" for i in range(30)]
        assert store_commits(url) - before <= 2  # 30 sends, each consumed before written
    with _server(tmp_path, data, 1.0) as server:  # after the SIGKILL leaving the block sent
        assert _drain(server, "taken") == []  # nothing consumed comes back
        assert _drain(server, "kept") == [("k0", False), ("k1", False), ("k2", False)]


def test_without_the_hold_every_message_is_written_before_it_is_delivered(
    tmp_path: pathlib.Path,
) -> None:
    with _server(tmp_path, tmp_path / "data", 0) as server:
        url = server.http_url
        got: list[str] = []
        t = _consume(server, "taken", 21, got)
        _send(server, "taken", ["first"])
        before = store_commits(url)
        _send(server, "taken", [f"m{i}" for i in range(20)])
        t.join(10)
        assert len(got) == 21
        assert store_commits(url) - before >= 20


def test_a_message_not_acknowledged_in_time_is_durable_before_its_send_returns(
    tmp_path: pathlib.Path,
) -> None:
    data = tmp_path / "data"
    with _server(tmp_path, data, 0.2) as server:
        with _factory(server).create_connection() as conn:
            session = conn.create_session(False, Session.CLIENT_ACKNOWLEDGE)
            consumer = session.create_consumer(Queue("slow"))
            conn.start()
            _send(server, "slow", ["first"])  # reserves the queue's positions
            first = consumer.receive(10)
            assert first is not None
            first.acknowledge()
            slowest = _send(server, "slow", ["unacked"])  # delivered, never acknowledged
            assert slowest >= 0.15  # the hold ran out before the write and the reply
            m = consumer.receive(10)
            assert isinstance(m, TextMessage) and m.text == "unacked"
            server.kill()  # the consumer has it, unacknowledged
    with _server(tmp_path, data, 0.2) as server:
        # written with its delivery: it comes back, marked redelivered
        assert _drain(server, "slow") == [("unacked", True)]
