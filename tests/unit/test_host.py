"""``broker/host.py``: the one host both brokers (embedded and server) are built on."""

from __future__ import annotations

import pathlib
from collections.abc import Callable

from ternmq import ConnectionFactory, EmbeddedBroker, Queue
from ternmq.broker.clock import SystemClock
from ternmq.broker.engine import Broker
from ternmq.broker.host import BrokerHost
from ternmq.server.app import BrokerServer
from ternmq.store import MemoryStore


def test_both_brokers_share_the_host_logic() -> None:
    """The shared duties exist once: both hosts inherit them, neither overrides them."""
    for name in ("_start_broker", "rearm", "_on_timer", "_disarm"):
        shared = getattr(BrokerHost, name)
        assert getattr(EmbeddedBroker, name) is shared, name
        assert getattr(BrokerServer, name) is shared, name


def test_system_clock_sleep_time() -> None:
    clock = SystemClock()
    now = clock.now_ms()
    assert clock.sleep_time(now - 1_000) == 0.0
    assert 9.0 < clock.sleep_time(now + 10_000) <= 10.0


def test_broker_takes_its_owner_hand_off_and_warnings_when_built() -> None:
    """``run_in_owner`` and ``on_warning`` are collaborators given to the constructor."""
    posted: list[Callable[[], None]] = []
    warnings: list[str] = []

    def warn(event: str, **fields: object) -> None:
        warnings.append(event)

    broker = Broker(store=MemoryStore(), run_in_owner=posted.append, on_warning=warn)
    assert broker.run_in_owner == posted.append
    assert broker.on_warning is warn
    ran: list[int] = []
    Broker().run_in_owner(lambda: ran.append(1))  # without a host: at once
    assert ran == [1]


def test_embedded_stats_show_what_the_broker_holds() -> None:
    with EmbeddedBroker("host-stats", queues=["declared"]) as broker:
        with ConnectionFactory(broker.url).create_connection() as conn:
            session = conn.create_session()
            producer = session.create_producer(Queue("work"))
            for text in ("a", "b"):
                producer.send(session.create_text_message(text))
        stats = {d.name: d for d in broker.stats()}
        assert list(stats) == ["queue://declared", "queue://work"]
        assert stats["queue://work"].depth == 2 and stats["queue://work"].enqueued == 2
        assert stats["queue://declared"].depth == 0
    assert broker.stats() == []


def test_owner_commits_only_with_a_store_that_offers_them(tmp_path: pathlib.Path) -> None:
    with EmbeddedBroker("host-memory") as memory:
        assert memory.owner_store is None
    with EmbeddedBroker("host-disk", str(tmp_path / "data")) as disk:
        assert disk.broker is not None
        assert disk.owner_store is disk.broker.store


def test_a_broker_a_vm_url_started_can_be_stopped_by_name() -> None:
    """A ``vm://NAME`` URL starts an embedded broker on first use; ``EmbeddedBroker(NAME)
    .stop()`` stops it (no object of the caller's started it), and the name is free again."""
    name = "stop-by-name"
    with ConnectionFactory(f"vm://{name}").create_context() as ctx:
        ctx.create_producer().send(Queue("q"), "m")
    EmbeddedBroker(name).stop()
    again = EmbeddedBroker(name).start()  # "already running" before the stop
    try:
        assert again.running
        with ConnectionFactory(f"vm://{name}").create_context() as ctx:
            assert ctx.create_consumer(Queue("q")).receive_body(str, 0.2) is None  # a new one
    finally:
        again.stop()
    EmbeddedBroker(name).stop()  # nothing runs under that name: a no-op


def _timer_threads(name: str) -> list[str]:
    import threading

    return [t.name for t in threading.enumerate() if t.name == f"ternmq-timer-{name}"]


def test_an_embedded_broker_without_connections_holds_no_timer_thread() -> None:
    """With a delayed and an expiring message pending, the timer thread runs while a
    connection is open and ends with the last one; the next connection (or ``stats()``)
    lets time catch up first, so the delayed message is there at once."""
    import time

    name = "dormant"
    broker = EmbeddedBroker(name).start()
    try:
        with ConnectionFactory(broker.url).create_context() as ctx:
            ctx.create_producer().set_time_to_live(3600).send(Queue("ttl"), "kept")
            ctx.create_producer().set_delivery_delay(0.2).send(Queue("later"), "due")
            assert _timer_threads(name)
        deadline = time.monotonic() + 5
        while _timer_threads(name) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not _timer_threads(name)
        time.sleep(0.3)  # the delay passes with nobody connected
        (later,) = [s for s in broker.stats() if s.name == "queue://later"]
        assert (later.depth, later.scheduled) == (1, 0)  # caught up by stats()
        assert not _timer_threads(name)  # and still dormant
        with ConnectionFactory(broker.url).create_context() as ctx:
            assert ctx.create_consumer(Queue("later")).receive_body(str, 0) == "due"
            assert ctx.create_consumer(Queue("ttl")).receive_body(str, 0) == "kept"
            assert _timer_threads(name)  # the expiry reaper runs again while connected
    finally:
        broker.stop()


def test_embedded_settings_take_the_server_configs_destinations_and_user_stamping() -> None:
    """As ``[destinations."NAME"]`` and ``populate_user_id`` of the server's config: one
    destination's policy over the default policy; JMSXUserID stamped with the user."""
    import pytest

    broker = EmbeddedBroker(
        "settings",
        redelivery_delay=0.5,
        destinations={"queue://orders": {"max_delivery_attempts": 2}},
        users={"app": "pw"},
        populate_user_id=True,
    )
    orders = broker.config.policy_for("queue://orders")
    assert (orders.max_delivery_attempts, orders.redelivery_delay) == (2, 0.5)
    assert broker.config.policy_for("queue://other").max_delivery_attempts == 10
    with broker:
        with ConnectionFactory(broker.url).create_context("app", "pw") as ctx:
            ctx.create_producer().send(Queue("orders"), "m")
            got = ctx.create_consumer(Queue("orders")).receive(5.0)
            assert got is not None and got.get_string_property("JMSXUserID") == "app"
    with pytest.raises(TypeError, match="unknown policy setting 'max_attempts'"):
        EmbeddedBroker("x", destinations={"queue://q": {"max_attempts": 1}})
    with pytest.raises(ValueError, match="queue://NAME or topic://NAME"):
        EmbeddedBroker("x", destinations={"orders": {}})
