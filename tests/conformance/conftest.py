"""Fixtures of the JMS conformance suite.

The suite is written once and runs over every transport and store: the ``transport``
parameter lists them — ``vm`` (embedded broker, in-memory store), ``vm+sqlite`` (embedded
broker on the durable SQLite store in a fresh data directory), ``tcp`` (a ``ternmq serve``
process per broker on its SQLite store, reached over a real socket: see ``_tcp.py``),
``tcp+postgres`` (a ``ternmq serve --store postgresql://...`` process per broker, each on a
fresh database of the session's PostgreSQL server, ``tests/_postgres.py``: every module by
default, as with ``TERNMQ_CONFORMANCE_POSTGRES=all``; the modules in ``POSTGRES_MODULES``
with ``=subset``; none with ``=off``) and, for
the modules marked ``@pytest.mark.also_tls``, ``tls`` (the same server's TLS listener), and
for those marked ``@pytest.mark.also_failover``, ``failover`` (``failover:(tcp://...)``: the
automatic-reconnect client over the same server, which must change nothing while the link
holds). A test that drives time with the fake clock gets, over the network, the same server
on a thread of the test process (``ThreadServerBroker``). Tests that cannot run over the
network are marked ``@pytest.mark.vm_only("why")`` and deselected there; the run ends with
their count. Tests ask for ``factory`` (a
ConnectionFactory to a fresh broker), ``broker`` (that broker, for settings and restarts),
``crash_broker`` (one that can crash), or ``fake_broker`` / ``fake_factory`` / ``clock`` when
time must be controlled; ``connect`` opens connections that are closed after the test. Plain
helper functions are in ``_helpers.py``.
"""

from __future__ import annotations

import os
import pathlib
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ternmq.broker.embedded import EmbeddedBroker
from ternmq.client import Connection, ConnectionFactory
from ternmq.store import MemoryStore
from ternmq.testing import FakeClock

from ._helpers import Connect, CrashBroker
from ._tcp import Scheme, ServerBroker, ServerPool

TRANSPORTS = ["vm", "vm+sqlite", "tcp"]
NETWORK = ("tcp", "tls", "failover", "tcp+postgres")
# Every module runs on tcp+postgres by default (TERNMQ_CONFORMANCE_POSTGRES=all).
# =subset runs only these, for a quicker local run: restarts and durability, transactions,
# durable subscriptions, duplicate ids, sequence access (the store-specific paths); =off none.
# Measured on the shared 2-core machine (load average about 5), in one process: the subset on
# tcp+postgres 147 s, all of it 393 s.
POSTGRES_MODULES = frozenset(
    {"test_rel", "test_tx", "test_sub", "test_psf_dedup", "test_sequenced"}
)
_POSTGRES = os.environ.get("TERNMQ_CONFORMANCE_POSTGRES", "all")
# A comma-separated list (e.g. "vm") runs only those transports (make test-compiled); unset: all.
_ONLY = {t for t in os.environ.get("TERNMQ_CONFORMANCE_TRANSPORTS", "").split(",") if t}


def _name() -> str:
    return f"t-{uuid.uuid4().hex[:10]}"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "also_tls: a conformance module that also runs over tls:// (see conftest.py)"
    )
    config.addinivalue_line(
        "markers",
        "also_failover: a conformance module that also runs over a failover:(tcp://...) URL",
    )


@pytest.hookimpl(trylast=True)
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Every test that uses a broker runs once per transport; ``also_tls`` modules add tls.
    Last of the parametrizations, so the transport varies fastest (``test_x[a-vm]``,
    ``test_x[a-vm+sqlite]``, ``test_x[a-tcp]``, ``test_x[b-vm]``...): network runs are spread
    out and the server pool refills between them."""
    if "transport" in metafunc.fixturenames:
        tls = metafunc.definition.get_closest_marker("also_tls") is not None
        failover = metafunc.definition.get_closest_marker("also_failover") is not None
        extra = [*(["tls"] if tls else []), *(["failover"] if failover else [])]
        module = metafunc.module.__name__.rpartition(".")[2]
        if _POSTGRES == "all" or (_POSTGRES == "subset" and module in POSTGRES_MODULES):
            extra.append("tcp+postgres")
        chosen = [t for t in [*TRANSPORTS, *extra] if not _ONLY or t in _ONLY]
        metafunc.parametrize("transport", chosen, indirect=True)


@pytest.fixture
def transport(request: pytest.FixtureRequest) -> str:
    """The transport this run of the test uses."""
    return str(request.param)


@pytest.fixture(scope="session")
def server_pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerPool]:
    """``ternmq serve`` processes for the tcp and tls runs (warm default ones in the
    background); every one still running is killed when the session ends."""
    pool = ServerPool(pathlib.Path(tmp_path_factory.mktemp("servers")))
    try:
        yield pool
    finally:
        pool.close()


@pytest.fixture(scope="session")
def pg_server_pool(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[ServerPool]:
    """``ternmq serve --store postgresql://...`` processes for the tcp+postgres runs, each on
    a fresh database of the session's PostgreSQL server (dropped after its test)."""
    pg = request.getfixturevalue("postgres_server")
    pool = ServerPool(
        pathlib.Path(tmp_path_factory.mktemp("pg-servers")),
        store=pg.new_database,
        release=pg.done,
    )
    try:
        yield pool
    finally:
        pool.close()


@pytest.fixture
def make_broker(
    transport: str, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Callable[..., EmbeddedBroker]]:
    """Start a fresh broker with the given settings (``make_broker(max_delivery_attempts=3)``).
    On ``vm+sqlite`` it runs on the durable store in a new directory (unless the test passes
    its own ``store``); on ``tcp`` and ``tls`` it is a ``ternmq serve`` process (a warm one
    from the pool when there are no settings), SIGKILLed after the test."""
    started: list[Any] = []
    pool: ServerPool | None = None
    scheme: Scheme = "tcp" if transport == "tcp+postgres" else transport  # type: ignore[assignment]
    if transport in NETWORK:
        pool = request.getfixturevalue(
            "pg_server_pool" if transport == "tcp+postgres" else "server_pool"
        )
        if transport == "tls" and pool.tls is None:
            pytest.skip("no openssl command to make the TLS listener's certificate")

    def make(**settings: Any) -> EmbeddedBroker:
        if pool is not None and "clock" in settings:  # see ThreadServerBroker
            clock = settings["clock"]
            monkeypatch = request.getfixturevalue("monkeypatch")
            monkeypatch.setattr("ternmq.transport.tcp.SystemClock", lambda: clock)
            thread_server = pool.thread_server(tmp_path_factory.mktemp("srv"), settings)
            started.append(thread_server)
            thread_server.scheme = scheme
            return thread_server.start()  # type: ignore[return-value]  # duck-typed
        if pool is not None:
            server = pool.new(settings) if settings else pool.take()
            started.append(server)
            server.scheme = scheme
            return server  # type: ignore[return-value]  # duck-types the test-facing part
        if transport == "vm+sqlite" and "store" not in settings and "data_dir" not in settings:
            settings["data_dir"] = str(tmp_path_factory.mktemp("data"))
        b = EmbeddedBroker(_name(), **settings).start()
        started.append(b)
        return b

    try:
        yield make
    finally:
        for b in started:
            if isinstance(b, ServerBroker):
                b.close()
            else:
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
def crash_broker(transport: str, make_broker: Callable[..., EmbeddedBroker]) -> CrashBroker:
    """A fresh broker that the test can crash: ``crash_broker.url``, and
    ``crash_broker.crash()``, which ends it as a crash would and returns the URL of a broker
    recovered from what it had stored. Over tcp and tls the ``ternmq serve`` process is
    SIGKILLed and a new one started on its data directory (same URL); in-process a second
    embedded broker opens the first one's store (a MemoryStore object) while the first is
    abandoned with its connections."""
    if transport in NETWORK:
        server: Any = make_broker()

        def crash_server() -> str:
            server.kill()
            return str(server.start().url)

        return CrashBroker(server.url, crash_server)
    store = MemoryStore()
    return CrashBroker(make_broker(store=store).url, lambda: make_broker(store=store).url)


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


# ---- tcp and tls: tests marked vm_only are deselected, and counted ----------------------------
_VM_ONLY: dict[str, int] = {}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the tcp and tls runs of tests marked ``vm_only`` (never silently: see
    below)."""
    keep, drop = [], []
    for item in items:
        callspec = getattr(item, "callspec", None)
        marker = item.get_closest_marker("vm_only")
        if (
            marker is not None
            and callspec is not None
            and callspec.params.get("transport") in NETWORK
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
    """Say how many tcp and tls runs were deselected, and why."""
    if _VM_ONLY:
        reasons = ", ".join(f"{n} {why}" for why, n in sorted(_VM_ONLY.items()))
        terminalreporter.write_line(
            f"conformance: {sum(_VM_ONLY.values())} runs of tests marked vm_only did not run over "
            "tcp/tls "
            f"({reasons})"
        )
