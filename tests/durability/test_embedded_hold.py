"""Concurrent store and dispatch in the embedded broker (``vm://`` with a ``data_dir``): a
PERSISTENT message sent to a queue whose consumer waits goes to it at once and its insert is
deferred for ``dispatch_hold`` seconds; the consumer's acknowledgement, if it comes first,
cancels the write. Proven by the store's commit count and by reading the database file
beside the running broker; the hold keeps real time whatever the broker's clock."""

from __future__ import annotations

import pathlib
import sqlite3
import threading
import time
import uuid

import pytest

from ternmq import (
    ConnectionFactory,
    DeliveryMode,
    EmbeddedBroker,
    Message,
    Queue,
    Session,
    TextMessage,
)
from ternmq.broker import embedded
from ternmq.testing import FakeClock


def _broker(tmp_path: pathlib.Path, hold: float, **settings: object) -> EmbeddedBroker:
    name = f"hold-{uuid.uuid4().hex[:8]}"
    return EmbeddedBroker(name, str(tmp_path / "data"), dispatch_hold=hold, **settings)


def _commits(broker: EmbeddedBroker) -> int:
    assert broker.broker is not None
    commits = getattr(broker.broker.store, "commits")  # noqa: B009 (SqliteStore's counter)
    assert isinstance(commits, int)
    return commits


def _stored(tmp_path: pathlib.Path) -> int:
    """Messages in the store's database file, read beside the running broker (WAL)."""
    db = sqlite3.connect(f"file:{tmp_path / 'data' / 'ternmq.db'}?mode=ro", uri=True)
    try:
        return int(db.execute("SELECT count(*) FROM messages").fetchone()[0])
    finally:
        db.close()


def _send_all(url: str, queue: Queue, n: int) -> None:
    with ConnectionFactory(url).create_connection() as conn:
        session = conn.create_session()
        producer = session.create_producer(queue)
        producer.delivery_mode = DeliveryMode.PERSISTENT
        for i in range(n):
            producer.send(session.create_text_message(f"m{i}"))


def _warm(url: str, queue: Queue) -> None:
    """Send and consume one message: a queue's first send also reserves its numbers (a
    write of its own), so only later sends show what the hold does."""
    _send_all(url, queue, 1)
    with ConnectionFactory(url).create_connection() as conn:
        consumer = conn.create_session().create_consumer(queue)
        conn.start()
        assert consumer.receive(5.0) is not None


@pytest.mark.parametrize(("hold", "most", "least"), [(1.0, 1, 0), (0.0, 10_000, 30)])
def test_a_consumer_that_keeps_up_costs_the_store_no_write(
    tmp_path: pathlib.Path, hold: float, most: int, least: int
) -> None:
    """30 synchronous persistent sends to a queue whose AUTO_ACKNOWLEDGE consumer waits: with
    a hold (generous, for a loaded machine) at most 1 commit; without one, at least an
    insert each (the case that shows the count can fail)."""
    q = Queue("orders")
    got: list[str] = []
    with _broker(tmp_path, hold) as broker:
        _warm(broker.url, q)
        with ConnectionFactory(broker.url).create_connection() as conn:
            consumer = conn.create_session().create_consumer(q)
            conn.start()

            def consume() -> None:
                while len(got) < 30 and (m := consumer.receive(10.0)) is not None:
                    assert isinstance(m, TextMessage)
                    got.append(m.text or "")

            t = threading.Thread(target=consume, daemon=True)
            t.start()
            before = _commits(broker)
            _send_all(broker.url, q, 30)
            t.join(10)
            written = _commits(broker) - before
            deadline = time.monotonic() + 5  # removals that are written follow the acks
            while _stored(tmp_path) and time.monotonic() < deadline:
                time.sleep(0.01)
            assert _stored(tmp_path) == 0
        assert got == [f"m{i}" for i in range(30)]
        assert least <= written <= most, written


def test_a_message_not_acknowledged_within_the_hold_is_durable_before_its_send_returns(
    tmp_path: pathlib.Path,
) -> None:
    """A CLIENT_ACKNOWLEDGE consumer that receives and does not acknowledge: the send waits
    for the hold, the message is in the database file when it returns, and it comes back
    marked redelivered after a restart; the broker's fake clock does not hold the sender."""
    q = Queue("slow")
    hold = 0.2
    with _broker(tmp_path, hold, clock=FakeClock()) as broker:
        _warm(broker.url, q)
        with ConnectionFactory(broker.url).create_connection() as conn:
            consumer = conn.create_session(False, Session.CLIENT_ACKNOWLEDGE).create_consumer(q)
            conn.start()
            received: list[Message] = []
            t = threading.Thread(
                target=lambda: received.append(consumer.receive(10.0)), daemon=True
            )
            t.start()
            time.sleep(0.05)  # the consumer waits in receive()
            start = time.monotonic()
            _send_all(broker.url, q, 1)
            took = time.monotonic() - start
            t.join(10)
            assert received and received[0] is not None
            assert took >= hold * 0.9, took
            assert _stored(tmp_path) == 1
    with _broker(tmp_path, hold) as again:  # a new name, the same directory: recovered
        with ConnectionFactory(again.url).create_connection() as conn:
            consumer = conn.create_session().create_consumer(q)
            conn.start()
            m = consumer.receive(5.0)
            assert isinstance(m, TextMessage) and m.text == "m0"
            assert m.jms_redelivered


def _hold_threads(broker: EmbeddedBroker) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == f"ternmq-hold-{broker.name}"]


def _one_deferral(broker: EmbeddedBroker) -> None:
    """One persistent message to a waiting consumer: the hold thread starts."""
    q = Queue("once")
    _warm(broker.url, q)
    with ConnectionFactory(broker.url).create_connection() as conn:
        consumer = conn.create_session().create_consumer(q)
        conn.start()
        got: list[Message | None] = []
        t = threading.Thread(target=lambda: got.append(consumer.receive(10.0)), daemon=True)
        t.start()
        time.sleep(0.05)  # the consumer waits in receive()
        _send_all(broker.url, q, 1)
        t.join(10)
        assert got and got[0] is not None
    assert len(_hold_threads(broker)) == 1


def _gone_within(broker: EmbeddedBroker, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while _hold_threads(broker) and time.monotonic() < deadline:
        time.sleep(0.01)
    return not _hold_threads(broker)


def test_an_idle_broker_ends_its_hold_thread(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embedded, "HOLD_LINGER", 0.2)
    with _broker(tmp_path, 0.05) as broker:
        _one_deferral(broker)
        assert _gone_within(broker, 3.0)  # while the broker still runs
        _one_deferral(broker)  # and a new deferral starts it again
        assert _gone_within(broker, 3.0)


def test_stopping_the_broker_ends_its_hold_thread_at_once(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embedded, "HOLD_LINGER", 60.0)
    broker = _broker(tmp_path, 0.05).start()
    try:
        _one_deferral(broker)
        time.sleep(0.2)  # the deferral is over: the thread lingers
        assert len(_hold_threads(broker)) == 1
    finally:
        broker.stop()
    assert _gone_within(broker, 2.0)
