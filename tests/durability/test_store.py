"""The durable store: ``SqliteStore`` on its own, and embedded brokers restarted on a data dir.

Part one drives :class:`~ternmq.store.sqlite.SqliteStore` directly (no broker): every
operation round-trips (checked against :class:`~ternmq.store.MemoryStore` as the model),
``load`` orders by sequence, concurrent batches share one commit (group commit), a message
added and removed within one write never reaches the disk, the ``LOCK`` file keeps a second
process off, a schema mismatch is refused, ``fsync="batch"`` is durable after ``close()``,
completions come in submission order, and a failing write is reported to them.

Part two restarts ``EmbeddedBroker(name, data_dir)`` on the same directory: queues, durable
subscriptions (definition and backlog), delivery counts, scheduled and expiring messages,
transactions and ``vm://NAME?data_dir=`` (REL-01, REL-03, REL-09, REL-12, SUB-17, TX-15,
PROD-16, PROD-17, A-15). ``test_crash.py`` does the same with SIGKILL.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest

from ternmq.broker.embedded import EmbeddedBroker, get_embedded
from ternmq.client import Connection, ConnectionFactory, MessageConsumer, Session
from ternmq.client.sequenced import commit_staged
from ternmq.destination import Queue, Topic
from ternmq.errors import JMSException
from ternmq.message import DeliveryMode, Message
from ternmq.store import (
    AddMessage,
    AddSubscription,
    MemoryStore,
    Op,
    Recovered,
    RemoveDestination,
    RemoveMessage,
    RemoveRange,
    RemoveSubscription,
    SetDeliveryCount,
    SetSinkBatch,
    StagedRecord,
    StoreFullError,
    open_store,
)
from ternmq.store import sqlite as sqlite_store
from ternmq.store.sqlite import SCHEMA_VERSION, SqliteStore
from ternmq.testing import FakeClock

WAIT = 5.0  # for anything that must happen
NOTHING = 0.2  # a receive that must find nothing waits this long
P = DeliveryMode.PERSISTENT
NP = DeliveryMode.NON_PERSISTENT
CLIENT = Session.CLIENT_ACKNOWLEDGE
AUTO = Session.AUTO_ACKNOWLEDGE


# ---- helpers ------------------------------------------------------------------------------
def add(dest: str, seq: int, data: bytes = b"x", **kw: object) -> AddMessage:
    fields: dict[str, object] = {
        "priority": 4,
        "expiration": 0,
        "delivery_time": 0,
        "group_id": None,
    }
    fields.update(kw)
    return AddMessage(dest, seq, data, **fields)  # type: ignore[arg-type]


class Completions:
    """A completion callback that records ``(token, error)`` per batch (and each call's
    tokens: one group commit per call), and can hold the writer thread inside the callback
    for the group holding ``hold_token`` until :meth:`release` (so that batches submitted
    meanwhile queue up behind a write in flight)."""

    def __init__(self, hold_token: int | None = None) -> None:
        self.done: list[tuple[int, BaseException | None]] = []
        self.calls: list[list[int]] = []
        self.hold_token = hold_token
        self.holding = threading.Event()
        self._gate = threading.Event()
        self._cond = threading.Condition()

    def __call__(self, tokens: list[int], error: BaseException | None) -> None:
        if self.hold_token in tokens:
            self.holding.set()
            self._gate.wait(WAIT)
        with self._cond:
            self.calls.append(list(tokens))
            self.done.extend((token, error) for token in tokens)
            self._cond.notify_all()

    def release(self) -> None:
        self._gate.set()

    def wait_for(self, n: int) -> list[tuple[int, BaseException | None]]:
        with self._cond:
            assert self._cond.wait_for(lambda: len(self.done) >= n, WAIT), (
                f"{len(self.done)} of {n} batches completed"
            )
            return list(self.done)


def normalized(r: Recovered) -> tuple[list[AddSubscription], dict[str, list[object]]]:
    """Compare recoveries without caring about the order of subscriptions or destinations."""
    return (
        sorted(r.subscriptions, key=lambda s: s.dest),
        {dest: [dataclasses.astuple(m) for m in msgs] for dest, msgs in r.messages.items()},
    )


@pytest.fixture
def store(tmp_path: pathlib.Path) -> Iterator[SqliteStore]:
    s = SqliteStore(tmp_path / "data")
    yield s
    s.close()


def _reopen(path: pathlib.Path, **kw: object) -> Recovered:
    s = SqliteStore(path, **kw)  # type: ignore[arg-type]
    try:
        return s.load()
    finally:
        s.close()


# ---- SqliteStore: round trips -------------------------------------------------------------
def test_every_op_type_round_trips(tmp_path: pathlib.Path) -> None:
    """REL-09: each kind of operation, with every field, comes back from ``load`` as written
    -- also in a new ``SqliteStore`` on the same directory."""
    data_dir = tmp_path / "data"
    s = SqliteStore(data_dir)
    sub = AddSubscription("sub:u:c1:d", "c1", "d", "topic://T", "x = 1", True, False)
    shared = AddSubscription("sub:s::sd", None, "sd", "topic://U", None, False, True)
    body = bytes(range(256)) * 3
    ops: list[Op] = [
        sub,
        shared,
        add("queue://Q", 1, body, priority=9, expiration=1_800_000_000_123, group_id="g1"),
        add("queue://Q", 2, b"", priority=0, delivery_time=1_700_000_000_999),
        add("queue://Gone", 1),
        add("sub:u:c1:d", 7, b"sub message"),
        add("sub:s::sd", 1, b"shared"),
    ]
    s.write(ops)
    s.write([SetDeliveryCount("queue://Q", 2, 3), RemoveDestination("queue://Gone")])
    done = Completions()
    s.set_completion(done)
    s.submit([SetDeliveryCount("sub:u:c1:d", 7, 1), RemoveSubscription("sub:s::sd")], 1)
    assert done.wait_for(1) == [(1, None)]
    for r in (s.load(), _reopen_after_close(s, data_dir)):
        assert r.subscriptions == [sub]
        assert set(r.messages) == {"queue://Q", "sub:u:c1:d"}
        q1, q2 = r.messages["queue://Q"]
        assert (q1.seq, q1.data, q1.priority, q1.expiration, q1.delivery_time) == (
            1,
            body,
            9,
            1_800_000_000_123,
            0,
        )
        assert (q1.group_id, q1.delivery_count) == ("g1", 0)
        assert (q2.seq, q2.data, q2.priority, q2.delivery_time, q2.group_id) == (
            2,
            b"",
            0,
            1_700_000_000_999,
            None,
        )
        assert q2.delivery_count == 3
        (m,) = r.messages["sub:u:c1:d"]
        assert (m.seq, m.data, m.delivery_count) == (7, b"sub message", 1)


def _reopen_after_close(s: SqliteStore, data_dir: pathlib.Path) -> Recovered:
    s.close()
    return _reopen(data_dir)


def test_load_without_bodies_gives_sizes_and_read_message_the_bytes(
    opener: Callable[[], Any],
) -> None:
    """Paging (PSF-07) recovers an index: ``load(with_data=False)`` leaves ``data`` out but
    keeps the size; ``read_message`` reads one body back (None once it is gone); on SQLite
    and on PostgreSQL."""
    store = opener()
    try:
        store.write([add("queue://Q", 1, b"abcdef"), add("queue://Q", 2, b"z")])
        msgs = store.load(with_data=False).messages["queue://Q"]
        assert [(m.seq, m.data, m.size) for m in msgs] == [(1, None, 6), (2, None, 1)]
        assert store.read_message("queue://Q", 1) == b"abcdef"
        store.write([RemoveMessage("queue://Q", 1)])
        assert store.read_message("queue://Q", 1) is None
    finally:
        store.close()


@pytest.fixture(params=["sqlite", "postgres"])
def opener(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> Callable[[], Any]:
    """Opens a store on the same data at every call: the SQLite store in a fresh directory,
    or the PostgreSQL store on a fresh database (``tests/_postgres.py``)."""
    target = (
        str(tmp_path / "data") if request.param == "sqlite" else request.getfixturevalue("pg_url")
    )
    return lambda: open_store(target, batch_scheduling=False)


@pytest.mark.parametrize("seed", range(6))
def test_random_histories_load_like_the_memory_store(opener: Callable[[], Any], seed: int) -> None:
    """Model check: random batches of every message and subscription op type (removals by
    range too), written through ``submit`` (grouped) and ``write``, load exactly as a
    ``MemoryStore`` given the same batches -- live and after a reopen; on SQLite and on
    PostgreSQL. Histories are realistic: sequence numbers are never reused within a
    destination, counts and removals name live messages (or ones added earlier in the same
    batch)."""
    rng = random.Random(seed)
    model = MemoryStore()
    s = opener()
    done = Completions()
    s.set_completion(done)
    queues = ["queue://A", "queue://B"]
    subs = {
        "sub:u:c:d1": AddSubscription("sub:u:c:d1", "c", "d1", "topic://T", None, False, False),
        "sub:s::d2": AddSubscription("sub:s::d2", None, "d2", "topic://T", "k > 2", True, True),
    }
    live: dict[str, list[int]] = {d: [] for d in [*queues, *subs]}
    next_seq = dict.fromkeys(live, 1)
    exists = set()
    submitted = 0
    for step in range(120):
        batch: list[Op] = []
        for _ in range(rng.randint(1, 8)):
            r = rng.random()
            dest = rng.choice([*queues, *(d for d in subs if d in exists)])
            if r < 0.45:
                seq = next_seq[dest]
                next_seq[dest] += rng.randint(1, 3)
                data = rng.randbytes(rng.randint(0, 40))
                batch.append(
                    AddMessage(
                        dest,
                        seq,
                        data,
                        rng.randint(0, 9),
                        rng.choice([0, 1_800_000_000_000 + seq]),
                        rng.choice([0, 1_700_000_000_000 + seq]),
                        rng.choice([None, "g", "h"]),
                    )
                )
                live[dest].append(seq)
            elif r < 0.7 and live[dest]:
                seq = live[dest].pop(rng.randrange(len(live[dest])))
                batch.append(RemoveMessage(dest, seq))
            elif r < 0.85 and live[dest]:
                batch.append(SetDeliveryCount(dest, rng.choice(live[dest]), rng.randint(0, 9)))
            elif r < 0.92:
                key = rng.choice(list(subs))
                if key in exists and rng.random() < 0.5:
                    batch.append(RemoveSubscription(key))
                    exists.discard(key)
                    live[key].clear()
                else:
                    batch.append(subs[key])
                    exists.add(key)
            elif r < 0.95:
                q = rng.choice(queues)
                batch.append(RemoveDestination(q))
                live[q].clear()
            elif live[dest]:
                lo, hi = sorted(rng.choices(live[dest], k=2))
                batch.append(RemoveRange(dest, lo, hi))
                live[dest] = [seq for seq in live[dest] if not lo <= seq <= hi]
        model.write(batch)
        if rng.random() < 0.1:
            done.wait_for(submitted)  # write() runs on this thread: let queued batches land
            s.write(batch)
        else:
            submitted += 1
            s.submit(batch, submitted)
        if step % 40 == 39:
            done.wait_for(submitted)
            assert normalized(s.load()) == normalized(model.load()), f"seed {seed} step {step}"
    assert all(err is None for _, err in done.wait_for(submitted))
    s.close()
    again = opener()
    try:
        assert normalized(again.load()) == normalized(model.load()), f"seed {seed}"
    finally:
        again.close()


def test_load_orders_messages_by_sequence_number(store: SqliteStore) -> None:
    """``load`` returns each destination's messages in ascending (numeric) sequence order,
    whatever the order they were written in."""
    seqs = [10, 2, 9, 2**40, 1, 100, 11]
    for seq in seqs:
        store.write([add("queue://Q", seq), add("queue://R", 1000 - seq % 1000)])
    got = store.load().messages
    assert [m.seq for m in got["queue://Q"]] == sorted(seqs)
    assert [m.seq for m in got["queue://R"]] == sorted(1000 - s % 1000 for s in seqs)


# ---- SqliteStore: group commit and the writer thread ---------------------------------------
def test_batches_submitted_during_a_write_share_one_commit(store: SqliteStore) -> None:
    """Group commit: while one write is in flight, 50 more batches queue up; they are written
    in one transaction (one fsync), so there are fewer commits than batches, and each commit
    is reported in one call of the completion callback, its tokens in order."""
    done = Completions(hold_token=0)
    store.set_completion(done)
    store.submit([add("queue://Q", 1)], 0)
    assert done.holding.wait(WAIT)
    for i in range(1, 51):
        store.submit([add("queue://Q", i + 1)], i)
    done.release()
    done.wait_for(51)
    assert store.batches == 51
    assert store.commits < store.batches
    assert store.commits <= 3, f"{store.commits} commits for 51 batches"
    assert len(done.calls) == store.commits
    assert [t for call in done.calls for t in call] == list(range(51))
    assert len(store.load().messages["queue://Q"]) == 51


def test_completions_come_in_submission_order(store: SqliteStore) -> None:
    """Each batch is reported exactly once, in the order it was submitted, also when batches
    are grouped into shared commits."""
    done = Completions()
    store.set_completion(done)
    tokens = list(range(1, 301))
    for t in tokens:
        store.submit([add("queue://Q", t), SetDeliveryCount("queue://Q", t, 1)], t)
        if t % 37 == 0:
            threading.Event().wait(0.002)  # let some writes start between submits
    got = done.wait_for(len(tokens))
    assert [t for t, _ in got] == tokens
    assert all(err is None for _, err in got)


def test_writer_waits_and_wakes_per_batch_and_runs_under_sched_batch_when_asked(
    tmp_path: pathlib.Path,
) -> None:
    """With ``batch_scheduling`` the writer thread (the one that reports completions) runs
    under SCHED_BATCH where the system has it; batches submitted one at a time, each after
    the previous one's completion (the writer idle or about to wait: it is notified only
    while it waits), are all written and reported."""
    s = SqliteStore(tmp_path / "data", batch_scheduling=True)
    policies: list[int] = []
    done = Completions()

    def completion(tokens: list[int], error: BaseException | None) -> None:
        if hasattr(os, "sched_getscheduler"):
            policies.append(os.sched_getscheduler(0))
        done(tokens, error)

    s.set_completion(completion)
    try:
        for t in range(1, 6):
            s.submit([add("queue://Q", t)], t)
            done.wait_for(t)  # the writer may be waiting again (notified) or still looping
        assert [t for t, _ in done.done] == [1, 2, 3, 4, 5]
        if hasattr(os, "SCHED_BATCH"):
            assert set(policies) == {os.SCHED_BATCH}
    finally:
        s.close()
    assert len(_reopen(tmp_path / "data").messages["queue://Q"]) == 5


def test_add_and_remove_within_one_write_never_touch_the_disk(store: SqliteStore) -> None:
    """A message added and removed again before its batch was written (a fast consumer)
    causes no INSERT or DELETE at all -- in one batch, and across batches of one group."""
    statements: list[str] = []
    store._db.set_trace_callback(statements.append)
    q = "queue://Q"
    store.write([add(q, 1), SetDeliveryCount(q, 1, 1), RemoveMessage(q, 1)])
    touching = [s for s in statements if "messages" in s.lower()]
    assert touching == [], touching
    done = Completions(hold_token=0)
    store.set_completion(done)
    store.submit([add("queue://Other", 1)], 0)
    assert done.holding.wait(WAIT)
    statements.clear()
    store.submit([add("queue://Q", 2, b"fast")], 1)
    store.submit([SetDeliveryCount("queue://Q", 2, 1)], 2)
    store.submit([RemoveMessage("queue://Q", 2)], 3)
    done.release()
    done.wait_for(4)
    touching = [s for s in statements if "messages" in s.lower()]
    assert touching == [], touching
    assert "queue://Q" not in store.load().messages
    # the trace does see real work: a message written earlier is deleted by a statement
    store.write([RemoveMessage("queue://Other", 1)])
    assert any("DELETE" in s.upper() for s in statements)


def test_close_finishes_queued_batches_and_refuses_new_ones(tmp_path: pathlib.Path) -> None:
    """``close()`` writes and reports everything submitted before it; ``submit`` afterwards
    raises JMSException; a second ``close()`` does nothing."""
    s = SqliteStore(tmp_path / "data")
    done = Completions()
    s.set_completion(done)
    for i in range(1, 101):
        s.submit([add("queue://Q", i)], i)
    s.close()
    assert [t for t, _ in done.wait_for(100)] == list(range(1, 101))
    with pytest.raises(JMSException, match="closed"):
        s.submit([add("queue://Q", 101)], 101)
    s.close()
    assert len(_reopen(tmp_path / "data").messages["queue://Q"]) == 100


def test_a_failing_write_is_reported_to_the_completion_callback(store: SqliteStore) -> None:
    """A write the database refuses (here: a read-only connection) is reported as an error
    for every batch of its group; nothing of it is stored; later writes work again.
    ``write()`` raises instead."""
    done = Completions()
    store.set_completion(done)
    store.write([add("queue://Q", 1)])
    store._db.execute("PRAGMA query_only = 1")  # the database is read-only from now on
    store.submit([add("queue://Q", 2)], 1)
    store.submit([RemoveMessage("queue://Q", 1)], 2)
    got = done.wait_for(2)
    assert [t for t, _ in got] == [1, 2]
    assert all(isinstance(err, (sqlite3.Error, OSError)) for _, err in got), got
    with pytest.raises((sqlite3.Error, OSError)):
        store.write([add("queue://Q", 3)])
    store._db.execute("PRAGMA query_only = 0")
    store.submit([add("queue://Q", 4)], 3)
    assert done.wait_for(3)[2] == (3, None)
    assert [m.seq for m in store.load().messages["queue://Q"]] == [1, 4]


# ---- SqliteStore: directory, lock, schema, fsync modes -------------------------------------
_HOLDER = textwrap.dedent(
    """
    import sys
    from ternmq.store.sqlite import SqliteStore
    store = SqliteStore(sys.argv[1])
    print("held", flush=True)
    sys.stdin.readline()
    store.close()
    """
)


def test_lock_file_keeps_a_second_process_off_the_directory(tmp_path: pathlib.Path) -> None:
    """While one process has a store open on a directory, opening it from another raises
    JMSException saying it is in use; ``LOCK`` names the holder; once that process is gone
    the directory opens again."""
    data_dir = tmp_path / "data"
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(data_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdin is not None
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(JMSException, match="in use by another ternmq process") as info:
            SqliteStore(data_dir)
        assert str(data_dir) in str(info.value)
        assert (data_dir / "LOCK").read_text().strip() == str(holder.pid)
        with pytest.raises(JMSException, match="in use"):
            EmbeddedBroker(f"locked-{uuid.uuid4().hex[:6]}", str(data_dir)).start()
        holder.stdin.write("\n")
        holder.stdin.close()
        assert holder.wait(timeout=WAIT) == 0
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(timeout=WAIT)
        if holder.stdout is not None:
            holder.stdout.close()
    s = SqliteStore(data_dir)
    assert (data_dir / "LOCK").read_text().strip() == str(os.getpid())
    s.close()


def test_lock_is_released_by_close_and_by_a_killed_process(tmp_path: pathlib.Path) -> None:
    """``close()`` releases the directory within this process, and a SIGKILLed holder
    releases it with its death (the lock is the kernel's, not a stale file)."""
    data_dir = tmp_path / "data"
    SqliteStore(data_dir).close()
    SqliteStore(data_dir).close()
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(data_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=WAIT)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(timeout=WAIT)
        for f in (holder.stdin, holder.stdout):
            if f is not None:
                f.close()
    SqliteStore(data_dir).close()


def test_a_store_of_another_schema_version_is_refused(tmp_path: pathlib.Path) -> None:
    """A data dir written by a ternmq with another store schema raises JMSException naming
    both versions, and leaves the directory free (lock released) for the right version."""
    data_dir = tmp_path / "data"
    s = SqliteStore(data_dir)
    s.write([add("queue://Q", 1)])
    s.close()
    db = sqlite3.connect(data_dir / "ternmq.db")
    with db:
        db.execute("UPDATE meta SET value='999' WHERE key='schema'")
    with pytest.raises(JMSException, match="schema 999") as info:
        SqliteStore(data_dir)
    assert SCHEMA_VERSION in str(info.value).split("999", 1)[1]
    with pytest.raises(JMSException, match="schema 999"):  # not "in use": nothing leaked
        SqliteStore(data_dir)
    with db:
        db.execute("UPDATE meta SET value='1' WHERE key='schema'")
    db.close()
    assert [m.seq for m in _reopen(data_dir).messages["queue://Q"]] == [1]


# The schema-2 tables that schema 3 changed: staged messages one row each.
_SCHEMA_2_STAGED = """
CREATE TABLE staged(
    txid TEXT NOT NULL, n INTEGER NOT NULL, sink_id TEXT NOT NULL, batch_id INTEGER NOT NULL,
    destination TEXT NOT NULL, persistent INTEGER NOT NULL, priority INTEGER NOT NULL,
    expiration INTEGER NOT NULL, delivery_time INTEGER NOT NULL, group_id TEXT,
    group_seq INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY(txid, n)
);
"""


def test_a_schema_2_store_is_upgraded_in_place_with_its_staged_messages(
    tmp_path: pathlib.Path,
) -> None:
    """A data dir of store schema 2 (one staged row per message) opens as schema 3: its
    messages, sink batches and staged transactions come back as written, the old staged
    table is gone, and a broker on the directory publishes the upgraded transaction."""
    data_dir = tmp_path / "data"
    s = SqliteStore(data_dir)
    s.write([add("queue://Q", 1, b"kept"), SetSinkBatch("sink", 4)])
    s.close()
    db = sqlite3.connect(data_dir / "ternmq.db")
    with db:
        db.execute("DROP TABLE staged_chunks")
        db.executescript(_SCHEMA_2_STAGED)
        db.executemany(
            "INSERT INTO staged VALUES(?,?,?,?,?,?,?,?,?,?,?,?)",
            [
                ("t", 1, "sink", 5, "queue://Q", 0, 7, 1_900_000_000_000, 0, "g", 2, b"m1"),
                ("t", 0, "sink", 5, "queue://Q", 1, 4, 0, 0, None, 0, b"m0"),
                ("u", 0, "other", 0, "topic://T", 1, 4, 0, 0, None, 0, b"u0"),
            ],
        )
        db.execute("UPDATE meta SET value='2' WHERE key='schema'")
    db.close()
    expected = [
        StagedRecord("t", 0, "sink", 5, "queue://Q", b"m0", True, 4, 0, 0, None, 0),
        StagedRecord("t", 1, "sink", 5, "queue://Q", b"m1", False, 7, 1_900_000_000_000, 0, "g", 2),
        StagedRecord("u", 0, "other", 0, "topic://T", b"u0", True, 4, 0, 0, None, 0),
    ]
    for _ in range(2):  # upgraded, then opened as schema 3
        r = _reopen(data_dir)
        assert r.staged == expected
        assert r.sinks == {"sink": 4}
        assert [m.data for m in r.messages["queue://Q"]] == [b"kept"]
    db = sqlite3.connect(data_dir / "ternmq.db")
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    (version,) = db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
    db.close()
    assert "staged" not in tables and "staged_chunks" in tables
    assert version == SCHEMA_VERSION
    b = Brokers(data_dir)
    b.start()
    try:
        assert commit_staged(b.connect(), "sink", 5, ["t"]).published == 2
    finally:
        for conn in b.connections:
            conn.close()
        b.stop()
    r = _reopen(data_dir)
    assert r.staged == [expected[2]]
    assert [m.data for m in r.messages["queue://Q"]] == [b"kept", b"m0"]  # m1 non-persistent


def test_a_file_that_is_not_a_store_is_refused(tmp_path: pathlib.Path) -> None:
    """A ``ternmq.db`` that is not a database raises JMSException (EXC-01: one error tree,
    no raw sqlite3 error) naming the directory, and the lock is released again."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / "ternmq.db").write_bytes(b"this is not an SQLite database, " * 100)
    for _ in range(2):  # the second attempt must not find the directory "in use"
        with pytest.raises(JMSException, match="cannot open the store") as info:
            SqliteStore(data_dir)
        assert str(data_dir) in str(info.value)


# ---- SqliteStore: owner commits (set_owner_commits / commit_due) --------------------------
class OwnerHook:
    """The owner side of ``set_owner_commits``: counts ``due()`` calls and where the
    completions were reported from."""

    def __init__(self, store: SqliteStore) -> None:
        self.due = 0
        self.threads: list[int] = []
        self.done = Completions()
        store.set_owner_commits(self.on_due)
        store.set_completion(self.completion)

    def on_due(self) -> None:
        self.due += 1

    def completion(self, tokens: list[int], error: BaseException | None) -> None:
        self.threads.append(threading.get_ident())
        self.done(tokens, error)


def test_owner_commits_write_small_batches_on_the_calling_thread(tmp_path: pathlib.Path) -> None:
    """With owner commits, a small batch for an idle writer is announced once (``due``) and
    written by ``commit_due`` on the caller's thread, reported there: no writer thread is
    started, and the messages are durable."""
    s = SqliteStore(tmp_path / "data")
    try:
        owner = OwnerHook(s)
        for i in range(1, 4):
            s.submit([add("queue://Q", i)], i)
            s.submit([add("queue://Q", i + 100)], i + 100)  # joins the same commit
            assert owner.due == i  # once per commit_due, not once per batch
            assert s._writer._thread is None
            s.commit_due()
            assert owner.done.wait_for(2 * i)[-2:] == [(i, None), (i + 100, None)]
        assert owner.threads == [threading.get_ident()] * 3
        assert s.inline_commits == s.commits == 3
        assert s._writer._thread is None
    finally:
        s.close()
    got = _reopen(tmp_path / "data").messages["queue://Q"]
    assert [m.seq for m in got] == [1, 2, 3, 101, 102, 103]


def test_owner_commits_leave_large_batches_to_the_writer(tmp_path: pathlib.Path) -> None:
    """More than INLINE_OPS operations, or more than INLINE_BYTES of messages, are handed to
    the writer thread by ``commit_due``: the caller does not block for a big write."""
    s = SqliteStore(tmp_path / "data")
    try:
        owner = OwnerHook(s)
        many = [add("queue://Q", i) for i in range(1, sqlite_store.INLINE_OPS + 2)]
        s.submit(many, 1)
        s.commit_due()
        owner.done.wait_for(1)
        s.submit([add("queue://Q", 1000, b"x" * (sqlite_store.INLINE_BYTES + 1))], 2)
        s.commit_due()
        owner.done.wait_for(2)
        assert threading.get_ident() not in owner.threads
        assert s.inline_commits == 0
        assert s.commits == 2
    finally:
        s.close()


def test_batches_submitted_during_an_owner_commit_go_to_the_writer_together(
    tmp_path: pathlib.Path,
) -> None:
    """While ``commit_due`` writes on its caller's thread, batches from another thread only
    queue (no second ``due``, no second writer at the same time); when it is done the writer
    thread takes them all in one group commit."""
    s = SqliteStore(tmp_path / "data")
    try:
        owner = OwnerHook(s)
        inside, release = threading.Event(), threading.Event()
        apply = s.apply

        def slow_apply(batches: list[Sequence[Op]]) -> None:
            if threading.current_thread() is threading.main_thread():
                inside.set()
                assert release.wait(WAIT)
            apply(batches)

        def submit_during() -> None:
            assert inside.wait(WAIT)
            for i in range(2, 12):
                s.submit([add("queue://Q", i)], i)
            release.set()

        s.apply = slow_apply  # type: ignore[method-assign]
        s.submit([add("queue://Q", 1)], 1)
        other = threading.Thread(target=submit_during)
        other.start()
        s.commit_due()  # blocks in slow_apply until the ten are queued
        other.join(WAIT)
        assert [t for t, _ in owner.done.wait_for(11)] == list(range(1, 12))
        assert owner.due == 1, "batches queued during an owner commit asked for another"
        assert s.inline_commits == 1
        assert s.commits == 2
        assert owner.done.calls == [[1], list(range(2, 12))]
        assert owner.threads[0] == threading.get_ident() != owner.threads[1]
    finally:
        s.close()
    assert len(_reopen(tmp_path / "data").messages["queue://Q"]) == 11


def test_close_during_an_owner_commit_writes_the_rest_and_starts_no_writer(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """close() while an owner commit runs on another thread: close() waits for it, writes
    what was queued meanwhile itself, and the owner commit, once done, starts no writer
    thread on the closed store (not even for a checkpoint that is due)."""
    monkeypatch.setattr(sqlite_store, "CHECKPOINT_BYTES", 1)
    s = SqliteStore(tmp_path / "data")
    owner = OwnerHook(s)
    inside, release = threading.Event(), threading.Event()
    apply = s.apply

    def slow_apply(batches: list[Sequence[Op]]) -> None:
        if threading.current_thread().name == "owner":
            inside.set()
            assert release.wait(WAIT)
        apply(batches)

    started: list[str] = []
    run = s._writer._run

    def recording_run() -> None:
        started.append(threading.current_thread().name)
        run()

    s.apply = slow_apply  # type: ignore[method-assign]
    s._writer._run = recording_run  # type: ignore[method-assign]
    s.submit([add("queue://Q", 1)], 1)
    committer = threading.Thread(target=s.commit_due, name="owner")
    committer.start()
    assert inside.wait(WAIT)
    s.submit([add("queue://Q", 2)], 2)  # queued during the owner commit
    closer = threading.Thread(target=s.close)
    closer.start()
    deadline = time.monotonic() + WAIT
    while not s._writer._closed and time.monotonic() < deadline:
        time.sleep(0.001)
    release.set()
    committer.join(WAIT)
    closer.join(WAIT)
    assert [t for t, _ in owner.done.wait_for(2)] == [1, 2]
    assert started == [], "a writer thread was started on the closed store"
    assert [m.seq for m in _reopen(tmp_path / "data").messages["queue://Q"]] == [1, 2]


def test_no_due_while_the_writer_works_and_it_takes_the_batch(tmp_path: pathlib.Path) -> None:
    """A batch submitted while the writer thread is writing is not announced to the owner:
    the writer takes it next, as without owner commits."""
    s = SqliteStore(tmp_path / "data")
    try:
        owner = OwnerHook(s)
        owner.done.hold_token = 1
        s.submit([add("queue://Q", i) for i in range(1, sqlite_store.INLINE_OPS + 2)], 1)
        s.commit_due()  # too large: the writer's
        assert owner.done.holding.wait(WAIT)  # the writer is inside the completion
        s.submit([add("queue://Q", 100)], 2)
        assert owner.due == 1
        owner.done.release()
        assert [t for t, _ in owner.done.wait_for(2)] == [1, 2]
        assert s.inline_commits == 0
    finally:
        s.close()


def test_an_owner_commit_leaves_the_checkpoint_to_the_writer(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past CHECKPOINT_BYTES after an owner commit, the writer thread is woken to copy the log
    into the database: the owner never waits for a checkpoint."""
    monkeypatch.setattr(sqlite_store, "CHECKPOINT_BYTES", 1024)
    data_dir = tmp_path / "data"
    s = SqliteStore(data_dir)
    checkpoints: list[int] = []
    checkpoint = s.checkpoint

    def recording() -> None:
        checkpoints.append(threading.get_ident())
        checkpoint()

    s.checkpoint = recording  # type: ignore[method-assign]
    try:
        owner = OwnerHook(s)
        s.submit([add("queue://Q", 1, b"x" * 50_000)], 1)
        s.commit_due()
        assert owner.done.wait_for(1) == [(1, None)]
        assert s.inline_commits == 1
        deadline = time.monotonic() + WAIT
        while not checkpoints and time.monotonic() < deadline:
            time.sleep(0.01)
        assert checkpoints and threading.get_ident() not in checkpoints
    finally:
        s.close()
    assert [m.seq for m in _reopen(data_dir).messages["queue://Q"]] == [1]


def test_the_writer_checkpoints_the_log_after_reporting_completions(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past ``CHECKPOINT_BYTES`` logged, the writer copies the log into the database file
    itself (after the batch's completion; SQLite's own checkpoint would wait for 64 MiB)."""
    monkeypatch.setattr(sqlite_store, "CHECKPOINT_BYTES", 1024)
    data_dir = tmp_path / "data"
    s = SqliteStore(data_dir)
    try:
        done = Completions()
        s.set_completion(done)
        db_file = data_dir / "ternmq.db"
        before = db_file.stat().st_size
        s.submit([add("queue://Q", 1, b"x" * 1_000_000)], 1)
        assert done.wait_for(1) == [(1, None)]
        deadline = time.monotonic() + WAIT
        while db_file.stat().st_size < before + 1_000_000 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert db_file.stat().st_size >= before + 1_000_000
    finally:
        s.close()
    assert [m.seq for m in _reopen(data_dir).messages["queue://Q"]] == [1]


def test_many_small_commits_keep_the_log_bounded(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each commit logs whole pages, not only its rows: 300 one-message commits of 10-byte
    bodies (~3 KiB of rows, ~2.4 MiB of log pages) pass a 256 KiB ``CHECKPOINT_BYTES``, so
    the writer checkpoints and SQLite reuses the log from its start instead of growing it
    (an fsync of a growing file costs about twice one of a file rewritten in place)."""
    monkeypatch.setattr(sqlite_store, "CHECKPOINT_BYTES", 256 * 1024)
    data_dir = tmp_path / "data"
    s = SqliteStore(data_dir)
    try:
        done = Completions()
        s.set_completion(done)
        for i in range(1, 301):
            s.submit([add("queue://Q", i, b"0123456789")], i)
            done.wait_for(i)  # one batch per commit
        assert s.commits == 300
        wal = (data_dir / "ternmq.db-wal").stat().st_size
        assert wal < 1024 * 1024, f"the log grew to {wal} bytes"
    finally:
        s.close()
    assert [m.seq for m in _reopen(data_dir).messages["queue://Q"]] == list(range(1, 301))


def test_fsync_modes(tmp_path: pathlib.Path) -> None:
    """``fsync="always"`` commits with ``synchronous=FULL``; ``"batch"`` with ``NORMAL`` plus
    periodic log syncs, and after ``close()`` everything it confirmed is on disk. Both use the
    write-ahead log. Another value raises JMSException."""
    always = SqliteStore(tmp_path / "a")
    try:
        assert always._db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
        assert always._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        always.close()
    batch = SqliteStore(tmp_path / "b", fsync="batch", batch_interval=0.01)
    done = Completions()
    batch.set_completion(done)
    try:
        assert batch._db.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
        for i in range(1, 201):
            batch.submit([add("queue://Q", i, b"%d" % i)], i)
        done.wait_for(200)
    finally:
        batch.close()
    msgs = _reopen(tmp_path / "b", fsync="batch").messages["queue://Q"]
    assert [(m.seq, m.data) for m in msgs] == [(i, b"%d" % i) for i in range(1, 201)]
    with pytest.raises(JMSException, match="fsync"):
        SqliteStore(tmp_path / "c", fsync="never")  # type: ignore[arg-type]


def test_an_unusable_data_dir_raises_jms_exception(tmp_path: pathlib.Path) -> None:
    """A data dir that cannot be created (a file is in the way) raises JMSException naming
    it."""
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(JMSException, match="cannot open data dir"):
        SqliteStore(blocker / "data")


# ---- brokers restarted on a data dir -------------------------------------------------------
class Brokers:
    """Start embedded brokers on one data dir; each ``restart()`` stops the running one and
    starts a new ``EmbeddedBroker`` object (nothing shared but the directory)."""

    def __init__(self, data_dir: pathlib.Path, **settings: Any) -> None:
        self.data_dir = data_dir
        self.settings = settings
        self.current: EmbeddedBroker | None = None
        self.connections: list[Connection] = []

    def start(self) -> EmbeddedBroker:
        name = f"dur-{uuid.uuid4().hex[:8]}"
        self.current = EmbeddedBroker(name, str(self.data_dir), **self.settings).start()
        return self.current

    def restart(self) -> EmbeddedBroker:
        self.stop()
        return self.start()

    def stop(self) -> None:
        if self.current is not None:
            self.current.stop()
            self.current = None

    def connect(self, client_id: str | None = None) -> Connection:
        assert self.current is not None
        conn = ConnectionFactory(self.current.url).create_connection()
        if client_id is not None:
            conn.client_id = client_id
        conn.start()
        self.connections.append(conn)
        return conn


@pytest.fixture
def brokers(tmp_path: pathlib.Path) -> Iterator[Brokers]:
    b = Brokers(tmp_path / "data")
    b.start()
    yield b
    for conn in b.connections:
        conn.close()
    b.stop()


def send(
    conn: Connection,
    dest: Queue | Topic,
    texts: Sequence[str],
    mode: int = P,
    **props: object,
) -> list[Message]:
    session = conn.create_session(False, AUTO)
    producer = session.create_producer(dest)
    producer.delivery_mode = mode
    sent: list[Message] = []
    for text in texts:
        m = session.create_text_message(text)
        for k, v in props.items():
            m.set_object_property(k, v)  # type: ignore[arg-type]
        producer.send(m)
        sent.append(m)
    session.close()
    return sent


def receive_all(consumer: MessageConsumer, expect: int) -> list[Message]:
    """The ``expect`` messages that must come (waiting up to ``WAIT`` for each), then any
    more that come within ``NOTHING`` seconds -- in arrival order."""
    out = []
    for _ in range(expect):
        m = consumer.receive(WAIT)
        if m is None:
            break
        out.append(m)
    while (m := consumer.receive(NOTHING)) is not None:
        out.append(m)
    return out


def texts_of(consumer: MessageConsumer, expect: int) -> list[str | None]:
    return [m.text for m in receive_all(consumer, expect)]  # type: ignore[attr-defined]


def drain_queue(b: Brokers, name: str, expect: int) -> list[Message]:
    conn = b.connect()
    consumer = conn.create_session(False, AUTO).create_consumer(Queue(name))
    out = receive_all(consumer, expect)
    conn.close()
    return out


def test_a_lone_embedded_producer_commits_on_its_own_thread(brokers: Brokers) -> None:
    """REL-S1: with the store's writer idle, a synchronous PERSISTENT send is committed by the
    sending thread itself once it lets go of the broker lock (an owner commit: no writer
    wake-up, no hand-back of the completion), and still returns only once it is durable: the
    messages are there after a restart."""
    assert brokers.current is not None
    store = brokers.current.broker.store  # type: ignore[union-attr]
    assert isinstance(store, SqliteStore)
    before = store.inline_commits
    send(brokers.connect(), Queue("q"), [f"m{i}" for i in range(20)])
    assert store.inline_commits - before >= 20
    brokers.restart()
    assert [m.text for m in drain_queue(brokers, "q", 20)] == [  # type: ignore[attr-defined]
        f"m{i}" for i in range(20)
    ]


def test_an_embedded_consumers_acknowledgements_are_not_committed_on_its_thread(
    brokers: Brokers,
) -> None:
    """REL-S1: an AUTO_ACKNOWLEDGE acknowledgement is one-way (nobody waits for its commit),
    so its store batch goes to the writer thread, never to an owner commit on the consumer's
    thread (which would make every receive() wait for an fsync: a persistent queue drained
    at the disk's commit rate instead of the broker's). The acknowledged messages are gone
    after a restart."""
    assert brokers.current is not None
    store = brokers.current.broker.store  # type: ignore[union-attr]
    assert isinstance(store, SqliteStore)
    send(brokers.connect(), Queue("q"), [f"m{i}" for i in range(20)])
    inline, commits = store.inline_commits, store.commits
    consumer = brokers.connect().create_session(False, AUTO).create_consumer(Queue("q"))
    assert texts_of(consumer, 20) == [f"m{i}" for i in range(20)]
    deadline = time.monotonic() + WAIT
    while store.commits == commits and time.monotonic() < deadline:
        time.sleep(0.01)
    assert store.commits > commits
    assert store.inline_commits == inline
    brokers.restart()
    assert drain_queue(brokers, "q", 0) == []


def test_persistent_messages_survive_restarts_and_non_persistent_do_not(
    brokers: Brokers,
) -> None:
    """REL-S1, REL-01, REL-03, REL-09, SUB-17: PERSISTENT messages to a queue and to a durable
    subscription survive a restart (also two in a row), NON_PERSISTENT ones do not; recovered
    messages keep their order and headers and are first deliveries."""
    c1 = brokers.connect("c1")
    c1.create_session(False, AUTO).create_durable_consumer(Topic("T"), "d").close()
    c1.close()
    producer = brokers.connect()
    sent = send(producer, Queue("q"), ["p1", "p2", "p3"], priority_hint=1)
    send(producer, Queue("q"), ["n1", "n2", "n3"], NP)
    send(producer, Topic("T"), ["t1", "t2", "t3"])
    send(producer, Topic("T"), ["tn1", "tn2", "tn3"], NP)
    producer.close()
    brokers.restart()
    brokers.restart()  # recovery writes nothing that a second recovery would double
    got = drain_queue(brokers, "q", 3)
    assert [m.text for m in got] == ["p1", "p2", "p3"]  # type: ignore[attr-defined]
    for m, orig in zip(got, sent):
        assert (m.jms_message_id, m.jms_timestamp, m.jms_priority) == (
            orig.jms_message_id,
            orig.jms_timestamp,
            orig.jms_priority,
        )
        assert m.jms_delivery_mode == P
        assert m.get_object_property("priority_hint") == 1
        assert (m.jms_redelivered, m.get_int_property("JMSXDeliveryCount")) == (False, 1)
    c1 = brokers.connect("c1")
    durable = c1.create_session(False, AUTO).create_durable_consumer(Topic("T"), "d")
    assert texts_of(durable, 3) == ["t1", "t2", "t3"]


def test_messages_sent_after_a_restart_queue_behind_the_recovered_ones(
    brokers: Brokers,
) -> None:
    """REL-01, REL-16: sequence numbers continue after recovery -- a message sent after a
    restart is delivered after the recovered ones and survives the next restart too (no
    store key is reused)."""
    conn = brokers.connect()
    send(conn, Queue("q"), ["a", "b", "c"])
    brokers.restart()
    send(brokers.connect(), Queue("q"), ["d"])
    # take "a" and "b" for good, so that the highest recovered sequence is what remains
    consumer = brokers.connect().create_session(False, AUTO).create_consumer(Queue("q"))
    assert [consumer.receive(WAIT).text for _ in range(2)] == ["a", "b"]  # type: ignore[union-attr]
    consumer.close()
    brokers.restart()
    send(brokers.connect(), Queue("q"), ["e"])
    brokers.restart()
    assert [m.text for m in drain_queue(brokers, "q", 3)] == ["c", "d", "e"]  # type: ignore[attr-defined]


def test_durable_subscription_definition_and_backlog_survive(brokers: Brokers) -> None:
    """SUB-17, REL-09, SUB-19, SUB-03: a durable subscription's selector and ``no_local``
    survive a restart: re-attaching with the same ones keeps its backlog (what matched, not
    published by its own client id); publishing after the restart still honours both."""
    topic = Topic("T")
    c1 = brokers.connect("c1")
    c1.create_session(False, AUTO).create_durable_consumer(topic, "d", "x = 1", True).close()
    other = brokers.connect()
    send(other, topic, ["o1"], x=1)
    send(other, topic, ["o2"], x=2)
    send(c1, topic, ["own"], x=1)  # no_local: the subscription's own client id
    send(other, topic, ["o3"], x=1)
    brokers.restart()
    c1 = brokers.connect("c1")
    session = c1.create_session(False, AUTO)
    consumer = session.create_durable_consumer(topic, "d", "x = 1", True)
    assert texts_of(consumer, 2) == ["o1", "o3"]
    send(brokers.connect(), topic, ["after"], x=1)
    send(c1, topic, ["own-after"], x=1)
    assert texts_of(consumer, 1) == ["after"]
    consumer.close()
    session.unsubscribe("d")
    brokers.restart()
    engine = brokers.current.broker  # type: ignore[union-attr]
    assert engine is not None and ("c1", "d") not in engine.durable  # SUB-27 survives too


def test_a_durable_subscription_created_again_with_another_selector_starts_empty(
    brokers: Brokers,
) -> None:
    """SUB-20 across a restart: re-creating the subscription with another selector replaces
    it; the old backlog does not come back after the next restart."""
    topic = Topic("T")
    c1 = brokers.connect("c1")
    c1.create_session(False, AUTO).create_durable_consumer(topic, "d", "x = 1").close()
    send(brokers.connect(), topic, ["m1", "m2"], x=1)
    brokers.restart()
    c1 = brokers.connect("c1")
    c1.create_session(False, AUTO).create_durable_consumer(topic, "d", "x = 2").close()
    c1.close()
    brokers.restart()
    c1 = brokers.connect("c1")
    consumer = c1.create_session(False, AUTO).create_durable_consumer(topic, "d", "x = 2")
    assert texts_of(consumer, 0) == []
    send(brokers.connect(), topic, ["m3"], x=2)
    assert texts_of(consumer, 1) == ["m3"]


def test_received_unacknowledged_comes_back_redelivered_prefetched_does_not(
    brokers: Brokers,
) -> None:
    """REL-10, REL-12, A-15, TX-04's prefetch rule: of three messages buffered by a
    CLIENT_ACKNOWLEDGE consumer, the one the application received but did not acknowledge
    comes back after a restart with ``jms_redelivered`` True and count 2; the two merely
    prefetched come back as first deliveries (count 1)."""
    send(brokers.connect(), Queue("q"), ["m1", "m2", "m3"])
    conn = brokers.connect()
    consumer = conn.create_session(False, CLIENT).create_consumer(Queue("q"))
    assert consumer.receive(WAIT).text == "m1"  # type: ignore[union-attr]
    conn.close()
    brokers.restart()
    got = drain_queue(brokers, "q", 3)
    assert [
        (m.text, m.jms_redelivered, m.get_int_property("JMSXDeliveryCount"))  # type: ignore[attr-defined]
        for m in got
    ] == [("m1", True, 2), ("m2", False, 1), ("m3", False, 1)]


def test_a_broker_stopped_under_a_consumer_marks_what_it_delivered(brokers: Brokers) -> None:
    """REL-12: the broker stopping while a consumer holds an unacknowledged message (the
    client cannot say what it handed over) brings that message back redelivered, count >= 2;
    the acknowledged one never comes back (REL-01)."""
    send(brokers.connect(), Queue("q"), ["m1", "m2"])
    conn = brokers.connect()
    session = conn.create_session(False, CLIENT)
    consumer = session.create_consumer(Queue("q"))
    first = consumer.receive(WAIT)
    assert first is not None
    first.acknowledge()
    assert consumer.receive(WAIT) is not None
    brokers.restart()  # ``conn`` is still open: it loses its broker
    (m,) = drain_queue(brokers, "q", 1)
    assert m.text == "m2"  # type: ignore[attr-defined]
    assert m.jms_redelivered and m.get_int_property("JMSXDeliveryCount") >= 2


_CRASH_AFTER_RECEIVE = textwrap.dedent(
    """
    import os, signal, sys
    from ternmq.client import ConnectionFactory, Session
    from ternmq.destination import Queue
    from ternmq.broker.embedded import EmbeddedBroker
    EmbeddedBroker("crash-one", sys.argv[1]).start()
    conn = ConnectionFactory("vm://crash-one").create_connection()
    session = conn.create_session(False, Session.AUTO_ACKNOWLEDGE)
    producer = session.create_producer(Queue("q"))
    for text in ("m1", "m2", "m3"):
        producer.send(session.create_text_message(text))
    consumer = conn.create_session(False, Session.CLIENT_ACKNOWLEDGE).create_consumer(Queue("q"))
    conn.start()
    assert consumer.receive(5).text == "m1"
    os.kill(os.getpid(), signal.SIGKILL)
    """
)


def test_a_message_received_before_a_crash_comes_back_redelivered(
    tmp_path: pathlib.Path,
) -> None:
    """A-15, REL-12: the "delivered" mark is durable before the delivery leaves the broker,
    so a message the application received before a SIGKILL comes back with
    ``jms_redelivered`` True and a count >= 2 (the prefetched ones may be marked too, which
    REL-12 allows); none is lost (REL-01)."""
    data_dir = tmp_path / "data"
    proc = subprocess.run(
        [sys.executable, "-c", _CRASH_AFTER_RECEIVE, str(data_dir)], timeout=60, check=False
    )
    assert proc.returncode == -signal.SIGKILL
    b = Brokers(data_dir)
    b.start()
    try:
        got = drain_queue(b, "q", 3)
    finally:
        b.stop()
    assert [m.text for m in got] == ["m1", "m2", "m3"]  # type: ignore[attr-defined]
    assert got[0].jms_redelivered and got[0].get_int_property("JMSXDeliveryCount") >= 2


def test_transactions_across_a_restart(brokers: Brokers) -> None:
    """TX-15, TX-02, TX-04: committed sends survive a restart, sends of a transaction still
    open when the broker stops never appear; a committed receive does not come back, an
    uncommitted one comes back redelivered."""
    conn = brokers.connect()
    send(conn, Queue("in"), ["r1", "r2"])
    tx = conn.create_session(True, Session.SESSION_TRANSACTED)
    producer = tx.create_producer(Queue("out"))
    consumer = tx.create_consumer(Queue("in"))
    producer.send(tx.create_text_message("committed"))
    assert consumer.receive(WAIT).text == "r1"  # type: ignore[union-attr]
    tx.commit()
    producer.send(tx.create_text_message("open"))
    assert consumer.receive(WAIT).text == "r2"  # type: ignore[union-attr]
    brokers.restart()  # the transaction is still open
    assert [m.text for m in drain_queue(brokers, "out", 1)] == ["committed"]  # type: ignore[attr-defined]
    (m,) = drain_queue(brokers, "in", 1)
    assert m.text == "r2" and m.jms_redelivered  # type: ignore[attr-defined]


def test_scheduled_messages_keep_their_delivery_time(tmp_path: pathlib.Path) -> None:
    """PROD-17, REL-25 across a restart: a delayed PERSISTENT message is recovered with its
    ``jms_delivery_time`` and is not delivered before it (fake clock)."""
    clock = FakeClock()
    b = Brokers(tmp_path / "data", clock=clock)
    b.start()
    try:
        conn = b.connect()
        session = conn.create_session(False, AUTO)
        m = session.create_text_message("later")
        session.create_producer(Queue("q")).send(m, delivery_delay=60.0)
        due = m.jms_delivery_time
        assert due == clock.now_ms() + 60_000
        conn.close()
        b.restart()
        consumer = b.connect().create_session(False, AUTO).create_consumer(Queue("q"))
        assert consumer.receive(NOTHING) is None
        clock.advance(59.9)
        assert consumer.receive(NOTHING) is None
        clock.advance(0.1)
        got = consumer.receive(WAIT)
        assert got is not None and got.text == "later"  # type: ignore[attr-defined]
        assert got.jms_delivery_time == due and clock.now_ms() >= due
    finally:
        for c in b.connections:
            c.close()
        b.stop()


def test_messages_that_expired_while_the_broker_was_down_are_not_delivered(
    tmp_path: pathlib.Path,
) -> None:
    """PROD-16, REL-24: a PERSISTENT message whose time-to-live ran out while the broker was
    stopped is not delivered after the restart; one that has not expired is."""
    clock = FakeClock()
    b = Brokers(tmp_path / "data", clock=clock)
    b.start()
    try:
        conn = b.connect()
        session = conn.create_session(False, AUTO)
        producer = session.create_producer(Queue("q"))
        producer.send(session.create_text_message("short"), time_to_live=10.0)
        producer.send(session.create_text_message("long"), time_to_live=100.0)
        producer.send(session.create_text_message("forever"))
        conn.close()
        b.stop()
        clock.advance(11.0)
        b.start()
        consumer = b.connect().create_session(False, AUTO).create_consumer(Queue("q"))
        assert texts_of(consumer, 2) == ["long", "forever"]
    finally:
        for c in b.connections:
            c.close()
        b.stop()


def test_vm_url_with_data_dir_restarts_on_the_directory(tmp_path: pathlib.Path) -> None:
    """REL-01 through the public URL: ``vm://NAME?data_dir=PATH`` starts an embedded broker on
    that directory; after it is stopped, the same URL starts a new one that recovers the
    messages; naming another directory for the running broker raises JMSException."""
    name = f"url-{uuid.uuid4().hex[:8]}"
    data_dir = tmp_path / "data"
    url = f"vm://{name}?data_dir={data_dir}"
    try:
        with ConnectionFactory(url).create_connection() as conn:
            session = conn.create_session(False, AUTO)
            session.create_producer(Queue("q")).send(session.create_text_message("kept"))
        assert (data_dir / "ternmq.db").exists()
        with pytest.raises(JMSException, match="data_dir"):
            ConnectionFactory(f"vm://{name}?data_dir={tmp_path / 'other'}").create_connection()
        get_embedded(name, create=False).stop()
        with ConnectionFactory(url).create_connection() as conn:
            consumer = conn.create_session(False, AUTO).create_consumer(Queue("q"))
            conn.start()
            assert texts_of(consumer, 1) == ["kept"]
    finally:
        try:
            get_embedded(name, create=False).stop()
        except JMSException:
            pass


def _read_only(store: SqliteStore, on: bool) -> None:
    """Make the store's database refuse every write (``on``), or take them again."""
    with store._db_lock:
        store._db.execute(f"PRAGMA query_only = {int(on)}")


def test_a_failing_store_fails_the_send(tmp_path: pathlib.Path) -> None:
    """PROD-13: a PERSISTENT send whose store write fails raises JMSException from ``send()``
    (the broker never confirms what it could not make durable); once the store works again,
    sends succeed."""
    store = SqliteStore(tmp_path / "data")
    embedded = EmbeddedBroker(f"fail-{uuid.uuid4().hex[:8]}", store=store).start()
    try:
        conn = ConnectionFactory(embedded.url).create_connection()
        session = conn.create_session(False, AUTO)
        producer = session.create_producer(Queue("q"))
        producer.send(session.create_text_message("ok"))
        _read_only(store, True)
        with pytest.raises(JMSException, match="store failure"):
            producer.send(session.create_text_message("refused"))
        _read_only(store, False)
        producer.send(session.create_text_message("ok again"))
        conn.close()
    finally:
        embedded.stop()
    stored = _reopen(tmp_path / "data").messages["queue://q"]
    assert len(stored) == 2


@pytest.mark.parametrize("mode", [AUTO, CLIENT, Session.SESSION_TRANSACTED])
def test_an_acknowledgement_the_store_failed_to_write_is_not_done(
    tmp_path: pathlib.Path, mode: int
) -> None:
    """An acknowledgement whose removal the store could not write is never reported as done:
    CLIENT_ACKNOWLEDGE's ``acknowledge()`` and a transaction's ``commit()`` raise; in every
    mode the message stays in its queue and is delivered again marked redelivered
    (AUTO_ACKNOWLEDGE: ``receive`` returned and its acknowledgement, sent after, failed).
    Once it is acknowledged for good it does not come back after a restart."""
    store = SqliteStore(tmp_path / "data")
    embedded = EmbeddedBroker(f"ackfail-{uuid.uuid4().hex[:8]}", store=store).start()
    try:
        conn = ConnectionFactory(embedded.url).create_connection()
        sending = conn.create_session(False, AUTO)
        for text in ("one", "two"):
            sending.create_producer(Queue("q")).send(sending.create_text_message(text))
        conn.start()
        receiving = conn.create_session(mode)  # a JMS 2.0 session mode
        consumer = receiving.create_consumer(Queue("q"))
        _read_only(store, True)
        first = consumer.receive(5)
        assert first is not None and first.text == "one" and not first.jms_redelivered
        if mode == CLIENT:
            with pytest.raises(JMSException, match="store failure"):
                first.acknowledge()
            _read_only(store, False)
            receiving.recover()  # the prefetched "two" goes back too
        elif mode == Session.SESSION_TRANSACTED:
            with pytest.raises(JMSException, match="store failure"):
                receiving.commit()
        else:
            engine = embedded.broker
            assert engine is not None
            q = engine.queues[engine.resolve("queue://q")]
            deadline = time.monotonic() + 5
            while q.enqueued < 3:  # "one" was put back
                assert time.monotonic() < deadline, "the failed acknowledgement was not undone"
                time.sleep(0.01)
        _read_only(store, False)
        got = [consumer.receive(5) for _ in range(2)]
        assert all(m is not None for m in got)
        by_text = {(m.text, m.jms_redelivered) for m in got if m is not None}
        assert by_text == {("one", True), ("two", False)}, by_text
        if mode == CLIENT:
            got[-1].acknowledge()  # type: ignore[union-attr]
        elif mode == Session.SESSION_TRANSACTED:
            receiving.commit()
        assert consumer.receive(0.2) is None
        conn.close()
    finally:
        embedded.stop()
    assert "queue://q" not in _reopen(tmp_path / "data").messages


def _write_as_the_writer_does(store: SqliteStore, ops: Sequence[Op]) -> None:
    """One batch, then the checkpoint the writer thread would run after it."""
    store.write(ops)
    if store.checkpoint_due():
        with store._db_lock:
            store.checkpoint()


def test_a_full_volume_refuses_messages_and_lets_removals_free_it(
    small_volume: Callable[[str], pathlib.Path],
) -> None:
    """On a volume that fills (an 8 MiB tmpfs): the write that finds it full is refused with
    StoreFullError and the store enters full mode, its reserve released; a batch that adds a
    message is then refused without touching SQLite, while removals, delivery counts and a
    subscription are written; the log stays within the reserve; once enough is removed the
    reserve is made again and messages are accepted; everything removed stays removed."""
    data = small_volume("8m") / "data"
    store = SqliteStore(data)
    try:
        assert (data / sqlite_store.RESERVE_FILE).stat().st_size == store.reserve_bytes
        body = os.urandom(8000)
        n = 0
        with pytest.raises(StoreFullError, match=r"is full.*purge"):
            for n in range(1, 10_000):
                _write_as_the_writer_does(store, [add("queue://Q", n, body)])
        assert n > 800, "the volume filled too early"
        kept = n - 1
        assert store.full and not (data / sqlite_store.RESERVE_FILE).exists()
        changes = store._db.total_changes
        with pytest.raises(StoreFullError):
            store.write([RemoveMessage("queue://Q", 1), add("queue://Q", n, b"small")])
        assert store._db.total_changes == changes  # refused before SQLite
        store.write([SetDeliveryCount("queue://Q", 1, 2)])
        store.write([AddSubscription("sub:u:c:s", "c", "s", "topic://T", None, False, False)])
        wal = data / "ternmq.db-wal"
        for seq in range(1, kept + 1):
            _write_as_the_writer_does(store, [RemoveMessage("queue://Q", seq)])
            assert not wal.exists() or wal.stat().st_size <= store.reserve_bytes
        assert not store.full
        assert (data / sqlite_store.RESERVE_FILE).stat().st_size == store.reserve_bytes
        for seq in range(n, n + 200):  # room again
            _write_as_the_writer_does(store, [add("queue://Q", seq, body)])
    finally:
        store.close()
    state = _reopen(data)
    assert [m.seq for m in state.messages["queue://Q"]] == list(range(n, n + 200))
    assert [s.dest for s in state.subscriptions] == ["sub:u:c:s"]
