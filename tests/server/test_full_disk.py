"""A broker whose data volume fills keeps every promise (a real ``ternmq serve`` on a 20 MiB
tmpfs): sends are refused with an error that says what to do; after a restart on the full
volume a consumer can still be created and drain the broker, a purge works, no acknowledged
message comes back after another restart, and sends work again once the volume has room.

The volume is a tmpfs mounted for the test (``small_volume``, tests/conftest.py), which
needs root (CI runs as root); elsewhere the test is skipped and says why.
"""

from __future__ import annotations

import pathlib
import time
from collections.abc import Callable

from ternmq import ConnectionFactory, JMSException, Session
from ternmq.client import _admin

from .conftest import Serve

VOLUME = "20m"
BODY = "x" * 8000  # 8 KB: the volume fills after about 2,400 sends
QUEUE = "full.disk"


def _fill(factory: ConnectionFactory) -> tuple[int, str]:
    """Send PERSISTENT messages until the broker refuses one; (how many it took, the error)."""
    sent = 0
    with factory.create_connection() as conn:
        session = conn.create_session(False, Session.AUTO_ACKNOWLEDGE)
        producer = session.create_producer(session.create_queue(QUEUE))
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                producer.send(session.create_text_message(f"{sent}:{BODY}"))
            except JMSException as exc:
                return sent, str(exc)
            sent += 1
    raise AssertionError(f"the volume did not fill after {sent} sends")


def test_a_full_disk_can_be_drained_and_purged_and_nothing_acknowledged_comes_back(
    serve: Serve, small_volume: Callable[[str], pathlib.Path]
) -> None:
    data = small_volume(VOLUME) / "data"
    server = serve(data_dir=data)
    factory = ConnectionFactory(f"tcp://127.0.0.1:{server.port}")
    sent, error = _fill(factory)
    assert sent > 1000, "the volume filled too early: the reserve is too large"
    assert "is full" in error and "purge" in error, error
    server.wait_log(r"level=warning logger=ternmq\.store .*is full.*new messages are refused")
    assert server.stop() == 0  # a restart on the full volume
    server = serve(data_dir=data)
    factory = ConnectionFactory(f"tcp://127.0.0.1:{server.port}")

    received: list[int] = []
    with factory.create_connection() as conn:
        conn.start()
        session = conn.create_session(False, Session.AUTO_ACKNOWLEDGE)
        consumer = session.create_consumer(session.create_queue(QUEUE))  # on a full disk
        for _ in range(sent // 2):
            msg = consumer.receive(5)
            assert msg is not None, f"drain stopped after {len(received)} of {sent // 2}"
            assert not msg.jms_redelivered
            received.append(int(msg.text.split(":", 1)[0]))
    assert received == list(range(sent // 2))
    with factory.create_connection() as conn:
        assert _admin.purge(conn, f"queue://{QUEUE}") == sent - len(received)

    assert server.stop() == 0
    assert "store write failed" not in server.log()
    server = serve(data_dir=data)
    factory = ConnectionFactory(f"tcp://127.0.0.1:{server.port}")
    with factory.create_connection() as conn:
        conn.start()
        session = conn.create_session(False, Session.AUTO_ACKNOWLEDGE)
        consumer = session.create_consumer(session.create_queue(QUEUE))
        back = consumer.receive(0.5)
        assert back is None, f"an acknowledged or purged message came back: {back}"
        producer = session.create_producer(session.create_queue(QUEUE))
        for i in range(200):  # space was freed: sends work again
            producer.send(session.create_text_message(f"again {i}"))
        assert [consumer.receive(5).text for _ in range(200)] == [  # type: ignore[union-attr]
            f"again {i}" for i in range(200)
        ]
    assert "store write failed" not in server.log()
