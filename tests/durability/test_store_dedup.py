"""Duplicate detection in the stores (catalog PSF-09): the ``AddDuplicateId`` operation.

Both stores keep, per destination, the ids a batch added and forget those at or below its
``evict_upto`` (so the table stays bounded by the cache size); the SQLite store writes the
id in the same transaction as the message of its batch; a schema-3 data dir is upgraded in
place to schema 4 (the ``duplicate_ids`` table); a store write that fails makes the broker
forget the id of the message it could not keep; an embedded broker on a data dir remembers
the ids across a restart, bounded.
"""

from __future__ import annotations

import pathlib
import sqlite3
import uuid
from collections.abc import Iterator, Sequence

import pytest

from ternmq.broker.config import DestinationPolicy
from ternmq.broker.embedded import EmbeddedBroker
from ternmq.client import ConnectionFactory
from ternmq.destination import Queue
from ternmq.errors import JMSException
from ternmq.store import AddDuplicateId, AddMessage, MemoryStore, Op, Store
from ternmq.store.postgres import PostgresStore
from ternmq.store.sqlite import SCHEMA_VERSION, SqliteStore

DUP = "JMS_TernMQ_DuplicateID"


def _add(dest: str, seq: int, data: bytes = b"x") -> AddMessage:
    return AddMessage(dest, seq, data, 4, 0, 0, None)


def _ids(dest: str, first: int, names: list[str], size: int) -> list[AddDuplicateId]:
    return [AddDuplicateId(dest, n, name, n - size) for n, name in enumerate(names, first)]


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> Iterator[Store]:
    """A MemoryStore, a SqliteStore in a fresh directory, or a PostgresStore on a fresh
    database (``tests/_postgres.py``)."""
    s: Store
    if request.param == "memory":
        s = MemoryStore()
    elif request.param == "sqlite":
        s = SqliteStore(tmp_path / "data")
    else:
        s = PostgresStore(request.getfixturevalue("pg_url"))
    yield s
    s.close()


def test_psf_09_ids_round_trip_per_destination_and_evict(store: Store) -> None:
    """PSF-09: ids come back per destination as ``(n, id)``, oldest first; each operation
    evicts the ids at or below its bound, across batches and within one."""
    store.write(_ids("queue://Q", 1, ["a", "b", "c"], 3) + _ids("topic://T", 1, ["a"], 3))
    store.write(_ids("queue://Q", 4, ["d", "e"], 3))
    got = store.load().duplicate_ids
    assert got == {"queue://Q": [(3, "c"), (4, "d"), (5, "e")], "topic://T": [(1, "a")]}
    store.write(_ids("queue://Q", 6, ["f", "g", "h", "i"], 2))  # the size shrank to 2
    assert store.load().duplicate_ids["queue://Q"] == [(8, "h"), (9, "i")]


def test_psf_09_sqlite_table_stays_bounded_and_survives_reopen(tmp_path: pathlib.Path) -> None:
    """PSF-09: with a cache of 100, 1,000 ids leave 100 rows on disk, and a new SqliteStore on
    the directory loads exactly those (bounded on disk, not only in memory)."""
    data_dir = tmp_path / "data"
    s = SqliteStore(data_dir)
    for first in range(1, 1001, 50):
        s.write(_ids("queue://Q", first, [f"id-{n}" for n in range(first, first + 50)], 100))
    s.close()
    s = SqliteStore(data_dir)
    try:
        rows = s.load().duplicate_ids["queue://Q"]
    finally:
        s.close()
    assert rows == [(n, f"id-{n}") for n in range(901, 1001)]
    db = sqlite3.connect(data_dir / "ternmq.db")
    try:
        (count,) = db.execute("SELECT count(*) FROM duplicate_ids").fetchone()
    finally:
        db.close()
    assert count == 100


def test_psf_09_sqlite_writes_the_id_with_its_message_in_one_group_commit(
    tmp_path: pathlib.Path,
) -> None:
    """PSF-09 crash consistency: batches submitted together (a message and its id each) are
    one SQLite transaction: after ``close()`` the messages and their ids are all there, and a
    batch that fails leaves neither its message nor its id."""
    data_dir = tmp_path / "data"
    s = SqliteStore(data_dir)
    done: list[tuple[int, BaseException | None]] = []
    s.set_completion(lambda tokens, error: done.extend((t, error) for t in tokens))
    batches: list[list[Op]] = [
        [_add("queue://Q", n), AddDuplicateId("queue://Q", n, f"id-{n}", n - 10)]
        for n in range(1, 6)
    ]
    for token, ops in enumerate(batches, 1):
        s.submit(ops, token)
    s.close()
    assert [t for t, e in done if e is None] == [1, 2, 3, 4, 5]
    s = SqliteStore(data_dir)
    try:
        with pytest.raises(sqlite3.Error):  # a NOT NULL violation fails the whole batch
            s.write([_add("queue://Q", 6), AddDuplicateId("queue://Q", 6, None, -4)])  # type: ignore[arg-type]
        r = s.load()
    finally:
        s.close()
    assert [m.seq for m in r.messages["queue://Q"]] == [1, 2, 3, 4, 5]
    assert r.duplicate_ids["queue://Q"] == [(n, f"id-{n}") for n in range(1, 6)]


def test_psf_09_a_schema_3_store_is_upgraded_in_place(tmp_path: pathlib.Path) -> None:
    """PSF-09: a data dir of store schema 3 (no duplicate_ids table) opens as schema 4: its
    messages are kept, the table exists, and a broker on it remembers ids across a restart."""
    data_dir = tmp_path / "data"
    s = SqliteStore(data_dir)
    s.write([_add("queue://Q", 1, b"kept")])
    s.close()
    db = sqlite3.connect(data_dir / "ternmq.db")
    with db:
        db.execute("DROP TABLE duplicate_ids")
        db.execute("UPDATE meta SET value='3' WHERE key='schema'")
    db.close()
    for _ in range(2):  # upgraded, then opened as schema 4
        s = SqliteStore(data_dir)
        try:
            r = s.load()
        finally:
            s.close()
        assert [m.data for m in r.messages["queue://Q"]] == [b"kept"]
        assert r.duplicate_ids == {}
    db = sqlite3.connect(data_dir / "ternmq.db")
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    (version,) = db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
    db.close()
    assert "duplicate_ids" in tables and version == SCHEMA_VERSION == "4"
    for attempt in ("first", "second"):
        with EmbeddedBroker(f"up-{uuid.uuid4().hex[:8]}", data_dir=str(data_dir)) as b:
            _send(b.url, Queue("U"), "u", attempt)
    assert _drain(data_dir, Queue("U")) == ["first"]


def _send(url: str, q: Queue, dup_id: str, body: str) -> None:
    with ConnectionFactory(url).create_connection() as conn:
        s = conn.create_session()
        m = s.create_text_message(body)
        m.set_string_property(DUP, dup_id)
        s.create_producer(q).send(m)


def _drain(data_dir: pathlib.Path, q: Queue, **settings: object) -> list[str | None]:
    with EmbeddedBroker(f"dr-{uuid.uuid4().hex[:8]}", data_dir=str(data_dir), **settings) as b:
        with ConnectionFactory(b.url).create_connection() as conn:
            conn.start()
            c = conn.create_session().create_consumer(q)
            out = []
            while (m := c.receive(0.2)) is not None:
                out.append(m.text)  # type: ignore[attr-defined]
            return out


class _FailOnce(MemoryStore):
    """A MemoryStore whose next write with a message fails (a full disk)."""

    fail = False

    def write(self, ops: Sequence[Op]) -> None:
        """Fail the first write with a message after ``fail`` was set; then write as usual."""
        if self.fail and any(isinstance(op, AddMessage) for op in ops):
            self.fail = False
            raise OSError("disk full")
        super().write(ops)


def test_psf_09_a_send_the_store_could_not_keep_does_not_record_its_id() -> None:
    """PSF-09: when the store fails to write a PERSISTENT send (the send raises), the broker
    forgets its id, so the producer's resend is accepted and stored."""
    store = _FailOnce()
    q = Queue("F")
    with EmbeddedBroker(f"fail-{uuid.uuid4().hex[:8]}", store=store) as b:
        store.fail = True
        with pytest.raises(JMSException, match="disk full"):
            _send(b.url, q, "f1", "first try")
        _send(b.url, q, "f1", "resend")
        _send(b.url, q, "f1", "duplicate")
    assert len(store.load().messages["queue://F"]) == 1
    assert [n for n, _ in store.load().duplicate_ids["queue://F"]] == [2]


def test_psf_09_embedded_broker_remembers_ids_across_restarts_bounded(
    tmp_path: pathlib.Path,
) -> None:
    """PSF-09 on disk: a restarted embedded broker drops resends of the ids it stored and,
    with ``id_cache_size=2``, accepts again the ids older than the last two; a cache size
    changed between restarts applies to the stored ids."""
    data_dir, q = tmp_path / "data", Queue("B")
    small = {"policies": {"queue://B": DestinationPolicy(id_cache_size=2)}}
    with EmbeddedBroker(f"b-{uuid.uuid4().hex[:8]}", data_dir=str(data_dir)) as b:
        for i in ("1", "2", "3"):
            _send(b.url, q, i, f"m{i}")
    with EmbeddedBroker(f"b-{uuid.uuid4().hex[:8]}", data_dir=str(data_dir), **small) as b:
        for i in ("3", "2", "1"):  # the latest two first: accepting "1" evicts "2"
            _send(b.url, q, i, f"again{i}")
    assert _drain(data_dir, q) == ["m1", "m2", "m3", "again1"]
