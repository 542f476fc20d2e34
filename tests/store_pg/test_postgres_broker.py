"""Brokers on the PostgreSQL store: an embedded broker from ``vm://NAME?store=...``, a
``ternmq serve --store postgresql://...`` process, and the database going away under load.

REL-01, REL-09: persistent messages survive a restart of a broker on the same database.
Start-up against a database that is not there fails (``ternmq serve`` exits 1) with a
message naming the host and the cause, without the password. The database going away:
PostgreSQL stopped while a producer sends persistent messages over tcp://, then started
again: sends meanwhile fail with a JMSException saying the store is unavailable, the server
and its connections live on, sends succeed again once PostgreSQL is back, and every send
that returned is consumed exactly once (nothing acknowledged lost, nothing twice).
"""

from __future__ import annotations

import pathlib
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable

import pytest

from _postgres import PASSWORD, PgServer
from durability.test_crash import Server
from ternmq.broker.embedded import get_embedded
from ternmq.client import ConnectionFactory, Session
from ternmq.destination import Queue
from ternmq.errors import JMSException
from ternmq.message import DeliveryMode

WAIT = 10.0
RECONNECT_WAIT = 5.0  # the store's reconnect interval and a connect, with room to spare
DOWN = 1.5  # seconds PostgreSQL stays stopped under load
LOAD_LIMIT = 60.0  # the load loop's bound, seconds


def _drain(url: str, queue: str, quiet: float = 1.0) -> list[str]:
    """Every message left on ``queue`` (their text), acknowledged."""
    factory = ConnectionFactory(url)
    conn = factory.create_connection()
    try:
        conn.start()
        session = conn.create_session(False, Session.AUTO_ACKNOWLEDGE)
        consumer = session.create_consumer(Queue(queue))
        got: list[str] = []
        while (msg := consumer.receive(quiet)) is not None:
            got.append(msg.text)  # type: ignore[attr-defined]
        return got
    finally:
        conn.close()


def _send(url: str, queue: str, texts: list[str], transacted: bool = False) -> None:
    """Send ``texts`` as PERSISTENT messages; with ``transacted`` in one transaction (all or
    nothing)."""
    conn = ConnectionFactory(url).create_connection()
    try:
        session = conn.create_session(transacted, Session.AUTO_ACKNOWLEDGE)
        producer = session.create_producer(Queue(queue))
        for text in texts:
            producer.send(session.create_text_message(text), delivery_mode=DeliveryMode.PERSISTENT)
        if transacted:
            session.commit()
    finally:
        conn.close()


def _outage(pg: PgServer, progress: Callable[[], int], minimum: int, errors: object) -> None:
    """Once ``progress()`` (the load's successes) reached ``minimum``, stop PostgreSQL for
    DOWN seconds, then start it again (``errors`` is shown if the load never got going)."""
    deadline = time.monotonic() + WAIT
    while progress() < minimum and time.monotonic() < deadline:
        time.sleep(0.01)
    assert progress() >= minimum, f"no load before the outage: {progress()}; {errors}"
    pg.stop("fast")
    time.sleep(DOWN)
    pg.start()


def test_rel_01_a_vm_url_with_a_postgresql_store_recovers_after_a_restart(pg_url: str) -> None:
    """REL-01, REL-09: ``vm://NAME?store=postgresql://...`` runs the embedded broker on the
    database; stopped and started again on it, the queue is still there."""
    name = f"pg-{uuid.uuid4().hex[:8]}"
    url = f"vm://{name}?store={pg_url}"
    _send(url, "Q", ["one", "two"])
    running = get_embedded(name, create=False)
    assert running.data_dir == pg_url
    running.stop()
    assert _drain(url, "Q") == ["one", "two"]
    get_embedded(name, create=False).stop()
    with pytest.raises(JMSException, match="store or data_dir"):
        ConnectionFactory(f"vm://{name}?store={pg_url}&data_dir=/tmp/x")


def test_rel_01_ternmq_serve_on_postgresql_keeps_messages_across_a_restart(
    tmp_path: pathlib.Path, pg_url: str
) -> None:
    """``ternmq serve --store postgresql://...``: messages sent to one server are received
    from a new one on the same database; its log names the store without the password."""
    server = Server(tmp_path, tmp_path / "unused", pg_url)
    try:
        _send(server.url, "Q", [f"m{i}" for i in range(20)])
    finally:
        assert server.stop() == 0, server.log()
    assert not (tmp_path / "unused").exists()  # --store wins: no data dir was made
    server = Server(tmp_path, tmp_path / "unused", pg_url)
    try:
        assert _drain(server.url, "Q") == [f"m{i}" for i in range(20)]
    finally:
        assert server.stop() == 0
    assert PASSWORD not in server.log()


def test_ternmq_serve_against_no_database_fails_naming_the_host_and_the_cause(
    tmp_path: pathlib.Path,
) -> None:
    """Start-up against a PostgreSQL port nobody listens on: exit status 1, and stderr names
    the host and port and says the connection was refused; no password shown."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"postgresql://ternmq:{PASSWORD}@127.0.0.1:{port}/ternmq"
    done = subprocess.run(
        [sys.executable, "-m", "ternmq.cli", "serve", "--port", "0", "--store", url],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 1, done.stderr
    assert f"127.0.0.1:{port}/ternmq" in done.stderr, done.stderr
    assert "refused" in done.stderr.lower(), done.stderr
    assert PASSWORD not in done.stderr + done.stdout


def test_postgresql_stopped_under_load_refuses_sends_and_resumes_losing_nothing(
    tmp_path: pathlib.Path, postgres_server: PgServer, pg_url: str
) -> None:
    """The database going away: PostgreSQL is stopped for DOWN seconds while a producer sends
    persistent messages to ``ternmq serve`` over tcp://; then started again. Sends during the
    outage fail with a JMSException saying the store is unavailable (the producer's
    connection stays usable), sends succeed again once it is back, and every send that
    returned is consumed exactly once afterwards (a failed send may or may not be there: it
    is in doubt only if the connection broke during its commit)."""
    server = Server(tmp_path, tmp_path / "unused", pg_url)
    ok: list[str] = []
    failed: dict[str, str] = {}
    phase = {"up_again": False}
    sent_after = threading.Event()
    stop = threading.Event()

    def produce() -> None:
        conn = ConnectionFactory(server.url).create_connection()
        try:
            session = conn.create_session(False, Session.AUTO_ACKNOWLEDGE)
            producer = session.create_producer(Queue("LOAD"))
            deadline = time.monotonic() + LOAD_LIMIT
            i = 0
            while not stop.is_set() and time.monotonic() < deadline:
                text = f"m{i}"
                i += 1
                try:
                    producer.send(
                        session.create_text_message(text), delivery_mode=DeliveryMode.PERSISTENT
                    )
                except JMSException as exc:
                    failed[text] = str(exc)
                    time.sleep(0.01)
                    continue
                ok.append(text)
                if phase["up_again"]:
                    sent_after.set()
        finally:
            conn.close()

    thread = threading.Thread(target=produce, daemon=True)
    try:
        thread.start()
        _outage(postgres_server, lambda: len(ok), 50, failed)
        phase["up_again"] = True
        assert sent_after.wait(WAIT + RECONNECT_WAIT), (
            f"no send succeeded after PostgreSQL came back; last errors: "
            f"{list(failed.values())[-3:]}\n{server.log()}"
        )
        stop.set()
        thread.join(WAIT)
        assert not thread.is_alive()
        assert server.proc.poll() is None, f"the server died:\n{server.log()}"
        assert failed, "no send failed while PostgreSQL was down"
        reasons = set(failed.values())
        assert all("store" in r and "PostgreSQL" in r for r in reasons), reasons
        assert any("unavailable" in r for r in reasons), reasons
        got = _drain(server.url, "LOAD")
    finally:
        stop.set()
        if postgres_server.proc is None:  # a failure while it was down: bring it back
            postgres_server.start()
        server.kill()
    assert len(got) == len(set(got)), "a message was delivered twice"
    missing = set(ok) - set(got)
    assert not missing, f"{len(missing)} acknowledged sends lost: {sorted(missing)[:10]}"
    assert set(got) <= set(ok) | set(failed)
    in_doubt = set(got) & set(failed)
    assert len(in_doubt) <= 2, f"failed sends that were stored anyway: {sorted(in_doubt)}"


def test_postgresql_stopped_under_consumers_loses_no_acknowledgement(
    tmp_path: pathlib.Path, postgres_server: PgServer, pg_url: str
) -> None:
    """The database going away under a transacted consumer: commits during the outage fail
    with a JMSException (the store is unavailable), commits succeed again once PostgreSQL is
    back. After a restart of the server on the database, no message whose receive was
    committed comes back, and every other one is there, once (TX-02, REL-05)."""
    texts = [f"m{i}" for i in range(300)]
    server = Server(tmp_path, tmp_path / "unused", pg_url)
    committed: list[str] = []
    failures: list[str] = []
    up_again = threading.Event()
    committed_after = threading.Event()
    stop = threading.Event()

    def consume() -> None:
        conn = ConnectionFactory(server.url).create_connection()
        try:
            conn.start()
            session = conn.create_session(True, Session.SESSION_TRANSACTED)
            consumer = session.create_consumer(Queue("ACK"))
            deadline = time.monotonic() + LOAD_LIMIT
            while not stop.is_set() and time.monotonic() < deadline:
                msg = consumer.receive(0.5)
                if msg is None:
                    continue
                try:
                    session.commit()
                except JMSException as exc:
                    failures.append(str(exc))
                    time.sleep(0.01)
                    continue
                committed.append(msg.text)  # type: ignore[attr-defined]
                if up_again.is_set():
                    committed_after.set()
        finally:
            conn.close()

    thread = threading.Thread(target=consume, daemon=True)
    try:
        _send(server.url, "ACK", texts, transacted=True)
        thread.start()
        _outage(postgres_server, lambda: len(committed), 20, failures)
        up_again.set()
        # the consumer may have used up the queue in failed commits: give it more, once the
        # store takes transactions again
        late = [f"late{i}" for i in range(20)]
        deadline = time.monotonic() + WAIT + RECONNECT_WAIT
        while True:
            try:
                _send(server.url, "ACK", late, transacted=True)
                break
            except JMSException:
                assert time.monotonic() < deadline, f"no send after the outage\n{server.log()}"
                time.sleep(0.2)
        texts += late
        assert committed_after.wait(WAIT + RECONNECT_WAIT), (
            f"no commit succeeded after PostgreSQL came back: {failures[-3:]}\n{server.log()}"
        )
        stop.set()
        thread.join(WAIT)
        assert not thread.is_alive()
        assert failures, "no commit failed while PostgreSQL was down"
        assert all("unavailable" in f or "store" in f for f in failures), failures[:3]
    finally:
        stop.set()
        if postgres_server.proc is None:
            postgres_server.start()
        server.kill()
    server = Server(tmp_path, tmp_path / "unused", pg_url)
    try:
        got = _drain(server.url, "ACK")
    finally:
        server.kill()
    assert len(got) == len(set(got)), "a message was delivered twice after the restart"
    again = set(got) & set(committed)
    assert not again, f"committed receives came back: {sorted(again)[:10]}"
    assert set(got) | set(committed) == set(texts), "messages were lost"
