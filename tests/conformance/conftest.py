"""Fixtures of the JMS conformance suite.

The suite is written once and runs over every transport and store: the ``transport``
parameter lists them — ``vm`` (embedded broker, in-memory store), ``vm+sqlite`` (embedded
broker on the durable SQLite store in a fresh data directory) and ``tcp`` (the network server
of ``ternmq serve`` on a SQLite store, one per broker, reached over a real socket: see
``_tcp.py``). Tests that cannot run over tcp (the fake clock, see ``_tcp.py``) are marked
``@pytest.mark.vm_only("why")`` and deselected for tcp; the run ends with their count.
Tests ask for ``factory`` (a
ConnectionFactory to a fresh broker), ``broker`` (that broker, for settings and inspection),
or ``fake_broker`` / ``fake_factory`` / ``clock`` when time must be controlled; ``connect``
opens connections that are closed after the test. Plain helper functions are in
``_helpers.py``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ternmq.broker.clock import FakeClock
from ternmq.client import Connection, ConnectionFactory
from ternmq.transport.vm import EmbeddedBroker

from ._helpers import Connect

TRANSPORTS = ["vm", "vm+sqlite", "tcp"]


def _name() -> str:
    return f"t-{uuid.uuid4().hex[:10]}"


@pytest.fixture(params=TRANSPORTS)
def transport(request: pytest.FixtureRequest) -> str:
    """The transport this run of the test uses."""
    return str(request.param)


@pytest.fixture
def make_broker(
    transport: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[..., EmbeddedBroker]]:
    """Start a fresh broker with the given settings (``make_broker(max_delivery_attempts=3)``).
    On ``vm+sqlite`` it runs on the durable store in a new directory (unless the test passes
    its own ``store``)."""
    started: list[Any] = []

    def make(**settings: Any) -> EmbeddedBroker:
        if transport == "tcp":
            from ._tcp import ServerBroker

            server = ServerBroker(str(tmp_path_factory.mktemp("data")), **settings).start()
            started.append(server)
            return server  # type: ignore[return-value]  # duck-types the test-facing part
        if transport == "vm+sqlite" and "store" not in settings and "data_dir" not in settings:
            settings["data_dir"] = str(tmp_path_factory.mktemp("data"))
        b = EmbeddedBroker(_name(), **settings).start()
        started.append(b)
        return b

    yield make
    for b in started:
        b.stop()


@pytest.fixture
def broker(make_broker: Callable[..., EmbeddedBroker]) -> EmbeddedBroker:
    """A fresh broker with default settings."""
    return make_broker()


@pytest.fixture
def factory(broker: EmbeddedBroker) -> ConnectionFactory:
    """A connection factory to ``broker``."""
    return ConnectionFactory(broker.url)


@pytest.fixture
def clock() -> FakeClock:
    """A fake clock: ``clock.advance(seconds)`` moves time and runs due broker work."""
    return FakeClock()


@pytest.fixture
def fake_broker(make_broker: Callable[..., EmbeddedBroker], clock: FakeClock) -> EmbeddedBroker:
    """A fresh broker on the fake clock."""
    return make_broker(clock=clock)


@pytest.fixture
def fake_factory(fake_broker: EmbeddedBroker) -> ConnectionFactory:
    """A connection factory to ``fake_broker``."""
    return ConnectionFactory(fake_broker.url)


@pytest.fixture
def connection(factory: ConnectionFactory) -> Iterator[Connection]:
    """An open, started connection (closed after the test)."""
    conn = factory.create_connection()
    conn.start()
    yield conn
    conn.close()


@pytest.fixture
def connect(factory: ConnectionFactory) -> Iterator[Connect]:
    """Open connections (``connect()``, ``connect("c1")``, ``connect(start=False)``,
    ``connect(via=f)``): started unless ``start=False``, with the client id if one is given,
    from ``via`` instead of ``factory`` if given; every one is closed after the test."""
    opened: list[Connection] = []

    def make(
        client_id: str | None = None, *, start: bool = True, via: ConnectionFactory | None = None
    ) -> Connection:
        conn = (via if via is not None else factory).create_connection()
        opened.append(conn)
        if client_id is not None:
            conn.client_id = client_id
        if start:
            conn.start()
        return conn

    yield make
    for conn in reversed(opened):
        conn.close()


# ---- tcp: tests marked vm_only are deselected, and counted ----------------------------------
_VM_ONLY: dict[str, int] = {}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the tcp runs of tests marked ``vm_only`` (never silently: see below)."""
    keep, drop = [], []
    for item in items:
        callspec = getattr(item, "callspec", None)
        marker = item.get_closest_marker("vm_only")
        if (
            marker is not None
            and callspec is not None
            and callspec.params.get("transport") == "tcp"
        ):
            drop.append(item)
            reason = str(marker.args[0]) if marker.args else "no reason given"
            _VM_ONLY[reason] = _VM_ONLY.get(reason, 0) + 1
        else:
            keep.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Say how many tcp runs were deselected, and why."""
    if _VM_ONLY:
        reasons = ", ".join(f"{n} {why}" for why, n in sorted(_VM_ONLY.items()))
        terminalreporter.write_line(
            f"conformance: {sum(_VM_ONLY.values())} tests marked vm_only did not run over tcp "
            f"({reasons})"
        )
