"""The PostgreSQL store on its own (no broker), beside the SQLite store where the promise is
the same.

Backend-agnostic tests run on both stores (``opener`` opens ``sqlite`` or ``postgres``):
every operation round-trips, also into a new store on the same data (REL-09, PSF-09);
batches submitted during a write share one commit (group commit), reported in order. The
random-history model check and paging's ``load(with_data=False)`` and ``read_message``
(PSF-07) run on both in ``tests/durability/test_store.py``, the duplicate-id test in
``test_store_dedup.py``.

PostgreSQL's own: the schema and its version table are created on first start and a database
of another version is refused; start-up against a server that is not there, or that refuses
the login, fails with a ``JMSException`` naming the host and the cause, never the password;
``fsync="batch"`` is ``synchronous_commit = off``; a message added and removed within one
group commit is never written; a lost connection fails the commits of the
moment with ``StoreUnavailable`` and the store reconnects by itself (spaced by the injected
clock) once the server is back, nothing committed lost.
"""

from __future__ import annotations

import pathlib
import threading
import time
from collections.abc import Callable, Iterator

import psycopg
import pytest

from _postgres import PASSWORD, PgServer
from _proxy import Proxy
from durability.test_store import Completions, add, normalized
from ternmq.errors import JMSException
from ternmq.protocol.commands import StagedSend
from ternmq.store import (
    AddDuplicateId,
    AddStaged,
    AddSubscription,
    MemoryStore,
    Op,
    RemoveDestination,
    RemoveMessage,
    RemoveRange,
    RemoveStaged,
    RemoveSubscription,
    ReserveSeq,
    SetDeliveryCount,
    SetSinkBatch,
    describe_store,
    open_store,
)
from ternmq.store.postgres import (
    RECONNECT_INTERVAL,
    SCHEMA_VERSION,
    PostgresStore,
    StoreUnavailable,
)
from ternmq.store.sqlite import SqliteStore
from ternmq.testing import FakeClock

Opener = Callable[[], PostgresStore | SqliteStore]


@pytest.fixture(params=["sqlite", "postgres"])
def opener(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> Opener:
    """Opens a store on the same data every call: a SQLite directory or a PostgreSQL
    database, both fresh for the test."""
    if request.param == "sqlite":
        target = str(tmp_path / "data")
    else:
        target = request.getfixturevalue("pg_url")

    def make() -> PostgresStore | SqliteStore:
        store = open_store(target, batch_scheduling=False)
        assert isinstance(store, PostgresStore | SqliteStore)
        return store

    return make


@pytest.fixture
def store(opener: Opener) -> Iterator[PostgresStore | SqliteStore]:
    s = opener()
    yield s
    s.close()


def _reload(opener: Opener) -> object:
    s = opener()
    try:
        return s.load()
    finally:
        s.close()


def _staged(txid: str, first: int, n: int) -> AddStaged:
    msgs = [
        StagedSend(
            destination=f"queue://S{i}",
            message=bytes([i]) * i,
            persistent=i % 2 == 0,
            priority=i % 10,
            expiration=1_800_000_000_000 + i,
            delivery_time=i,
            group_id=None if i % 3 else f"g{i}",
            group_seq=i,
        )
        for i in range(n)
    ]
    return AddStaged(txid, "sink-1", 7, first, msgs)


# ---- both stores ----------------------------------------------------------------------------
def test_every_op_type_round_trips_on_both_stores(opener: Opener) -> None:
    """REL-09, PSF-09: each kind of operation, every field, comes back from ``load`` as a
    MemoryStore given the same batches returns it -- live and from a new store on the same
    data."""
    model = MemoryStore()
    body = bytes(range(256)) * 3
    batches: list[list[Op]] = [
        [
            AddSubscription("sub:u:c1:d", "c1", "d", "topic://T", "x = 1", True, False),
            AddSubscription("sub:s::sd", None, "sd", "topic://U", None, False, True),
            add("queue://Q", 1, body, priority=9, expiration=1_800_000_000_123, group_id="g1"),
            add("queue://Q", 2, b"", priority=0, delivery_time=1_700_000_000_999),
            add("queue://Q", 2**40, b"big seq"),
            add("queue://Gone", 1),
            add("sub:u:c1:d", 7, b"sub message"),
            add("sub:s::sd", 1, b"shared"),
            ReserveSeq("queue://Q", 5000),
            _staged("tx-1", 0, 3),
            _staged("tx-1", 3, 2),
            _staged("tx-2", 0, 1),
            SetSinkBatch("sink-1", 6),
            AddDuplicateId("queue://Q", 1, "id-1", -9),
            AddDuplicateId("queue://Q", 2, "id-2", -8),
        ],
        [
            SetDeliveryCount("queue://Q", 2, 3),
            RemoveDestination("queue://Gone"),
            RemoveStaged("tx-2"),
            SetSinkBatch("sink-1", 7),
            ReserveSeq("queue://Q", 6000),
            AddDuplicateId("queue://Q", 3, "id-3", 1),
        ],
        [SetDeliveryCount("sub:u:c1:d", 7, 1), RemoveSubscription("sub:s::sd")],
        [RemoveRange("queue://Q", 2**40, 2**40)],
    ]
    s = opener()
    done = Completions()
    s.set_completion(done)
    for i, batch in enumerate(batches):
        model.write(batch)
        if i % 2:
            s.submit(batch, i)
            done.wait_for(len(done.done) + 1)
        else:
            s.write(batch)
    expected = model.load()
    live = s.load()
    s.close()
    for got in (live, _reload(opener)):
        assert normalized(got) == normalized(expected)  # type: ignore[arg-type]
        assert got.sequences == expected.sequences == {"queue://Q": 6000}  # type: ignore[attr-defined]
        assert got.sinks == {"sink-1": 7}  # type: ignore[attr-defined]
        assert got.staged == expected.staged and len(expected.staged) == 5  # type: ignore[attr-defined]
        assert got.duplicate_ids == {"queue://Q": [(2, "id-2"), (3, "id-3")]}  # type: ignore[attr-defined]


def test_batches_submitted_during_a_write_share_one_commit_on_both_stores(
    store: PostgresStore | SqliteStore,
) -> None:
    """Group commit: 50 batches queued behind a write in flight are written in few
    transactions, each reported in one call, tokens in submission order."""
    done = Completions(hold_token=0)
    store.set_completion(done)
    store.submit([add("queue://Q", 1)], 0)
    assert done.holding.wait(5)
    for i in range(1, 51):
        store.submit([add("queue://Q", i + 1)], i)
    done.release()
    done.wait_for(51)
    assert store.batches == 51
    assert store.commits <= 3, f"{store.commits} commits for 51 batches"
    assert len(done.calls) == store.commits
    assert [t for call in done.calls for t in call] == list(range(51))
    assert len(store.load().messages["queue://Q"]) == 51


# ---- PostgreSQL's own -----------------------------------------------------------------------
def _rows(url: str, sql: str) -> list[tuple[object, ...]]:
    with psycopg.connect(url) as conn:
        return conn.execute(sql).fetchall()


def test_a_message_added_and_removed_in_one_group_commit_is_never_written(pg_url: str) -> None:
    """Within one group commit a message added and removed again (a fast consumer) makes no
    statement on the messages table: the commit of that batch is empty."""
    s = PostgresStore(pg_url)
    try:
        assert s.set_owner_commits(lambda: None) is False  # every commit is the writer's
        s.write(
            [
                add("queue://Q", 1),
                SetDeliveryCount("queue://Q", 1, 1),
                RemoveMessage("queue://Q", 1),
            ]
        )
        assert s.commits == 0
        s.write([add("queue://Q", 2), RemoveMessage("queue://Q", 2), add("queue://Q", 3)])
        assert s.commits == 1
        assert _rows(pg_url, "SELECT seq FROM ternmq_messages") == [(3,)]
    finally:
        s.close()


def test_the_schema_is_created_versioned_and_another_version_refused(pg_url: str) -> None:
    """First start creates the tables and ``ternmq_schema_version``; a second store on the
    same database reuses them; a database holding another schema version is refused with a
    message naming both versions."""
    PostgresStore(pg_url).close()
    PostgresStore(pg_url).close()
    assert _rows(pg_url, "SELECT version FROM ternmq_schema_version") == [(SCHEMA_VERSION,)]
    tables = {
        r[0]
        for r in _rows(pg_url, "SELECT tablename FROM pg_tables WHERE tablename LIKE 'ternmq_%'")
    }
    assert {"ternmq_messages", "ternmq_subscriptions", "ternmq_duplicate_ids"} <= tables
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("UPDATE ternmq_schema_version SET version = 99")
    with pytest.raises(JMSException, match=f"schema 99; this ternmq reads schema {SCHEMA_VERSION}"):
        PostgresStore(pg_url)


def test_start_up_against_no_server_names_the_host_and_the_cause(
    postgres_server: PgServer,
) -> None:
    """An unreachable database (nothing listens on the port) fails at once with a
    JMSException naming host, port and the refusal."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"postgresql://ternmq:{PASSWORD}@127.0.0.1:{port}/db"
    with pytest.raises(JMSException) as info:
        open_store(url)
    text = str(info.value)
    assert f"127.0.0.1:{port}/db" in text and "refused" in text.lower(), text
    assert PASSWORD not in text


def test_start_up_with_a_wrong_password_names_the_host_and_the_cause(
    postgres_server: PgServer,
) -> None:
    """A login the server refuses fails with the server's reason; the password is not in it."""
    url = postgres_server.url(password="wrong-secret")
    with pytest.raises(JMSException) as info:
        open_store(url)
    text = str(info.value)
    assert f"127.0.0.1:{postgres_server.port}/postgres" in text, text
    assert "password authentication failed" in text, text
    assert "wrong-secret" not in text
    assert "wrong-secret" not in describe_store(url)
    assert describe_store(url) == f"postgresql://127.0.0.1:{postgres_server.port}/postgres"


def test_fsync_batch_turns_synchronous_commit_off(pg_url: str) -> None:
    """``fsync="batch"`` is ``synchronous_commit = off`` for the store's session;
    ``"always"`` keeps the server's default (on)."""
    for fsync, expected in (("always", "on"), ("batch", "off")):
        s = open_store(pg_url, fsync=fsync)  # type: ignore[arg-type]
        assert isinstance(s, PostgresStore)
        try:
            assert s._db is not None
            assert s._db.execute("SHOW synchronous_commit").fetchone() == (expected,)
        finally:
            s.close()


def test_a_lost_connection_fails_its_commit_and_the_store_reconnects(
    postgres_server: PgServer, pg_url: str
) -> None:
    """The server's backends are terminated (as in a restart): the next commit fails with
    StoreUnavailable naming the server, attempts within RECONNECT_INTERVAL (clock) fail at
    once while the server is down, the first after it reconnects, and every committed batch
    is still there."""
    clock = FakeClock()
    s = PostgresStore(pg_url, clock=lambda: clock.now_ms() / 1000)
    done = Completions()
    s.set_completion(done)
    try:
        s.write([add("queue://Q", 1, b"before")])
        with psycopg.connect(postgres_server.url(), autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> pg_backend_pid()",
                (pg_url.rpartition("/")[2],),
            )
        s.submit([add("queue://Q", 2, b"lost")], 1)
        ((_, error),) = done.wait_for(1)
        assert isinstance(error, StoreUnavailable), error
        assert f"127.0.0.1:{postgres_server.port}" in str(error)
        # the connection is gone: the next write reconnects and works
        s.submit([add("queue://Q", 3, b"after")], 2)
        assert done.wait_for(2)[1] == (2, None)
        assert [m.data for m in s.load().messages["queue://Q"]] == [b"before", b"after"]
        # spaced reconnects: with the server unreachable, a failed attempt is not repeated
        # before RECONNECT_INTERVAL has passed on the store's clock
        s._conninfo = s._conninfo.replace(f"port={postgres_server.port}", "port=1")
        assert s._db is not None
        s._db.close()
        with pytest.raises(StoreUnavailable, match="refused"):
            s.write([add("queue://Q", 4)])
        first = s._retry_at
        with pytest.raises(StoreUnavailable):
            s.write([add("queue://Q", 5)])
        assert s._retry_at == first  # no new attempt
        clock.advance(RECONNECT_INTERVAL)
        with pytest.raises(StoreUnavailable):
            s.write([add("queue://Q", 6)])
        assert s._retry_at > first  # a new attempt was made
    finally:
        s.close()


def test_concurrent_first_starts_create_the_schema_once(pg_url: str) -> None:
    """Two stores starting together on an empty database both open it (the advisory lock
    serializes the schema's creation): one version row."""
    errors: list[BaseException] = []
    stores: list[PostgresStore] = []

    def start() -> None:
        try:
            stores.append(PostgresStore(pg_url))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    for s in stores:
        s.close()
    assert errors == [] and len(stores) == 2
    assert _rows(pg_url, "SELECT count(*) FROM ternmq_schema_version") == [(1,)]


def _wait_for_a_lock_waiter(conn: psycopg.Connection[object]) -> int:
    """The pid of the backend of ``conn``'s database that waits for a lock (within 10 s)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        row = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
        ).fetchone()
        if row is not None:
            return int(row[0])
        time.sleep(0.01)
    raise AssertionError("the store's commit never waited for the lock")


@pytest.mark.parametrize("how", ["terminated", "reset"])
def test_a_connection_lost_in_a_pipelined_commit_is_replaced(
    postgres_server: PgServer, pg_url: str, how: str
) -> None:
    """A commit of several statements (sent in pipeline mode) whose connection breaks while
    the pipeline waits (its backend terminated, or the TCP link reset: the store reaches the
    database through a proxy) fails with StoreUnavailable, and every later commit, pipelined
    or not, succeeds on a new connection (a broken connection kept, still in pipeline mode,
    would fail every later commit with 'PQsendQuery not allowed in pipeline mode')."""
    proxy = Proxy(postgres_server.port)
    clock = FakeClock()
    s = PostgresStore(
        pg_url.replace(f":{postgres_server.port}/", f":{proxy.port}/"),
        clock=lambda: clock.now_ms() / 1000,
    )
    done = Completions()
    s.set_completion(done)

    def pipelined(seq: int, data: bytes) -> list[Op]:
        # three statements: messages, a sequence reservation, a sink's batch
        return [
            add("queue://Q", seq, data),
            ReserveSeq("queue://Q", seq + 10),
            SetSinkBatch("k", seq),
        ]

    try:
        s.write(pipelined(1, b"before"))
        assert s.commits == 1
        # the writer's next transaction waits on a lock mid-pipeline; its connection then
        # breaks with statements of the pipeline in flight
        with psycopg.connect(pg_url) as blocker:
            blocker.execute("LOCK TABLE ternmq_sinks IN ACCESS EXCLUSIVE MODE")
            s.submit(pipelined(2, b"lost"), 1)
            waiting = _wait_for_a_lock_waiter(blocker)
            if how == "terminated":
                blocker.execute("SELECT pg_terminate_backend(%s)", (waiting,))
            else:
                proxy.reset()
            ((_, error),) = done.wait_for(1)
            blocker.rollback()
        assert isinstance(error, StoreUnavailable), error
        assert "unavailable" in str(error) and f"127.0.0.1:{proxy.port}" in str(error)
        for token, seq in ((2, 3), (3, 4)):  # no clock advance: the first retry reconnects
            s.submit(pipelined(seq, f"after{seq}".encode()), token)
            assert done.wait_for(token)[token - 1] == (token, None), done.wait_for(token)
        s.submit([add("queue://Q", 5, b"single")], 4)  # one statement, no pipeline
        assert done.wait_for(4)[3] == (4, None)
        recovered = s.load()
        assert [m.data for m in recovered.messages["queue://Q"]] == [
            b"before",
            b"after3",
            b"after4",
            b"single",
        ]
        assert recovered.sinks == {"k": 4}
    finally:
        s.close()
        proxy.close()
