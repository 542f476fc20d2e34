"""Bounded memory: a destination past its memory limit keeps PERSISTENT messages on disk
only and reads them back as consumers drain (PSF-07, REL-08, REL-21, SEL-60)."""

from __future__ import annotations

import pathlib
import uuid

import pytest

from ternmq import (
    ConnectionFactory,
    DeliveryMode,
    EmbeddedBroker,
    Queue,
    ResourceAllocationException,
    Session,
    TextMessage,
)

LIMIT = 50_000  # bytes of message data a queue may hold in memory
BODY = "x" * 1000  # about 1.1 KB encoded: 10 x LIMIT is about 450 messages
COUNT = 450


def _broker(data_dir: pathlib.Path, **settings: object) -> EmbeddedBroker:
    return EmbeddedBroker(
        f"page-{uuid.uuid4().hex[:8]}", str(data_dir), max_bytes=LIMIT, **settings
    ).start()


def _fill(broker: EmbeddedBroker, q: Queue) -> None:
    with ConnectionFactory(broker.url).create_connection() as conn:
        tx = conn.create_session(True)
        producer = tx.create_producer(q)
        for i in range(COUNT):
            m = tx.create_text_message(BODY)
            m.set_int_property("i", i)
            m.set_string_property("kind", "odd" if i % 2 else "even")
            producer.send(m, priority=9 if i % 50 == 0 else 4)
            if i % 50 == 49:
                tx.commit()
        tx.commit()


def _queue_state(broker: EmbeddedBroker, q: Queue) -> tuple[int, int, int]:
    """(bytes held in memory, messages held, messages paged out) of ``q``."""
    assert broker.broker is not None
    mq = broker.broker.queues[q]
    entries = list(mq.iter_ready())
    paged = sum(1 for e in entries if e.stored.data is None)
    return mq.bytes, len(entries), paged


def _drain(broker: EmbeddedBroker, q: Queue, selector: str | None = None) -> list[int]:
    with ConnectionFactory(broker.url).create_connection() as conn:
        conn.start()
        s = conn.create_session(False, Session.CLIENT_ACKNOWLEDGE)
        k = s.create_consumer(q, selector)
        got = []
        last = None
        while (m := k.receive(0.5)) is not None:
            assert isinstance(m, TextMessage) and m.text == BODY
            got.append(m.get_int_property("i"))
            last = m
            if len(got) % 50 == 0:
                m.acknowledge()
        if last is not None:
            last.acknowledge()
        return got


def _expected(selector_odd: bool | None = None) -> list[int]:
    ids = list(range(COUNT))
    if selector_odd is not None:
        ids = [i for i in ids if (i % 2 == 1) == selector_odd]
    high = [i for i in ids if i % 50 == 0]
    return high + [i for i in ids if i % 50 != 0]


def test_psf_07_queue_ten_times_its_limit_pages_and_drains_in_order(tmp_path: pathlib.Path) -> None:
    """PSF-07, REL-08, REL-21: 10x the memory limit is accepted (nothing refused, nothing
    dropped); memory stays at the limit; priorities and FIFO hold across paged messages."""
    b = _broker(tmp_path)
    try:
        q = Queue("deep")
        _fill(b, q)
        held, count, paged = _queue_state(b, q)
        assert count == COUNT
        assert held <= LIMIT, f"{held} bytes held in memory, limit {LIMIT}"
        assert paged >= COUNT * 8 // 10
        assert _drain(b, q) == _expected()
        assert _queue_state(b, q) == (0, 0, 0)
    finally:
        b.stop()


def test_psf_07_selectors_reach_paged_messages(tmp_path: pathlib.Path) -> None:
    """PSF-07, SEL-60: a selective consumer gets every match, paged or not, in priority and
    send order; the rest stays for others, also in order."""
    b = _broker(tmp_path)
    try:
        q = Queue("deep-sel")
        _fill(b, q)
        assert _drain(b, q, "kind = 'odd'") == _expected(selector_odd=True)
        assert _drain(b, q) == _expected(selector_odd=False)
    finally:
        b.stop()


def test_psf_07_restart_recovers_an_index_not_the_bodies(tmp_path: pathlib.Path) -> None:
    """PSF-07, REL-09: after a restart a deep queue is recovered without loading its bodies
    into memory, and drains complete and in order."""
    b = _broker(tmp_path)
    q = Queue("deep-restart")
    _fill(b, q)
    b.stop()
    b = _broker(tmp_path)
    try:
        held, count, paged = _queue_state(b, q)
        assert (held, count, paged) == (0, COUNT, COUNT)
        assert _drain(b, q) == _expected()
    finally:
        b.stop()


def test_psf_07_non_persistent_past_the_limit_blocks_then_fails(tmp_path: pathlib.Path) -> None:
    """PSF-07, REL-08: NON_PERSISTENT messages are never paged: past the limit the producer
    waits (policy page/block) and gets ResourceAllocationException after block_timeout
    (from send() itself with block_on_non_persistent_send=true)."""
    b = _broker(tmp_path, block_timeout=0.2)
    try:
        q = Queue("np-full")
        factory = ConnectionFactory(b.url, block_on_non_persistent_send=True)
        with factory.create_connection() as conn:
            s = conn.create_session()
            p = s.create_producer(q)
            p.delivery_mode = DeliveryMode.NON_PERSISTENT
            with pytest.raises(ResourceAllocationException):
                for _ in range(COUNT):
                    p.send(s.create_text_message(BODY))
            held, count, paged = _queue_state(b, q)
            assert held <= LIMIT and paged == 0 and count < COUNT
    finally:
        b.stop()


def test_recovery_is_reported_in_the_log(
    tmp_path: pathlib.Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Recovery reports what it found (issue: "reports what it recovered in its log")."""
    b = _broker(tmp_path)
    _fill(b, Queue("logged"))
    b.stop()
    with caplog.at_level("INFO", logger="ternmq.broker"):
        b = _broker(tmp_path)
    b.stop()
    text = caplog.text
    assert f"{COUNT} messages" in text and "1 destinations" in text, text
