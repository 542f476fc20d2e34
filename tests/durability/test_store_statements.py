"""``SqliteStore`` writes runs of message inserts and deletes as multi-row statements of at
most ``MAX_ROWS`` rows, the last one padded to a power of two by repeating its last row, and
a write of a single statement without BEGIN / COMMIT. These tests check that every count of
rows (around the chunk and padding boundaries) round-trips exactly, with delivery counts,
and that a failing single-statement write leaves nothing behind (REL-09)."""

from __future__ import annotations

import pathlib
import sqlite3
from collections.abc import Sequence

import pytest

from ternmq.store import AddMessage, Op, RemoveMessage, SetDeliveryCount, _plan
from ternmq.store.sqlite import MAX_ROWS, SqliteStore


def _add(seq: int, dest: str = "queue://Q") -> AddMessage:
    return AddMessage(dest, seq, f"m{seq}".encode(), seq % 10, seq * 7, seq * 11, f"g{seq % 3}")


@pytest.mark.parametrize("n", [1, 2, 3, 31, 32, 33, MAX_ROWS - 1, MAX_ROWS, MAX_ROWS + 1, 700])
def test_runs_of_any_length_round_trip(tmp_path: pathlib.Path, n: int) -> None:
    """REL-09: ``n`` messages written in one batch come back once each, with every field;
    removing every other one (another run of multi-row deletes) leaves exactly the rest."""
    s = SqliteStore(tmp_path / "data")
    try:
        s.write([_add(i) for i in range(1, n + 1)])
        got = s.load().messages.get("queue://Q", [])
        assert [m.seq for m in got] == list(range(1, n + 1))
        for m in got:
            assert (m.data, m.priority, m.expiration, m.delivery_time, m.group_id) == (
                f"m{m.seq}".encode(),
                m.seq % 10,
                m.seq * 7,
                m.seq * 11,
                f"g{m.seq % 3}",
            )
            assert m.delivery_count == 0
        s.write([RemoveMessage("queue://Q", i) for i in range(1, n + 1, 2)])
        left = [m.seq for m in s.load().messages.get("queue://Q", [])]
        assert left == list(range(2, n + 1, 2))
    finally:
        s.close()


def test_inserts_with_delivery_counts_round_trip(tmp_path: pathlib.Path) -> None:
    """A write that adds messages and sets the delivery count of some of them (a redelivery
    in the same group commit) stores those counts, the others stay 0."""
    s = SqliteStore(tmp_path / "data")
    try:
        n = MAX_ROWS + 5
        s.write(
            [_add(i, "queue://R") for i in range(1, n + 1)]
            + [SetDeliveryCount("queue://R", i, i % 4 + 1) for i in range(1, n + 1, 3)]
        )
        got = {m.seq: m.delivery_count for m in s.load().messages["queue://R"]}
        assert got == {i: (i % 4 + 1 if i % 3 == 1 else 0) for i in range(1, n + 1)}
    finally:
        s.close()


def test_a_failed_single_statement_write_leaves_nothing(tmp_path: pathlib.Path) -> None:
    """A write of one statement runs as SQLite's own transaction: if a row in its middle
    fails (no priority: NOT NULL), none of its rows is stored, and the store takes the next
    write."""
    s = SqliteStore(tmp_path / "data")
    try:
        s.write([_add(1)])
        bad = [_add(i) for i in range(2, 40)]
        bad[20] = AddMessage("queue://Q", 22, b"x", None, 0, 0)
        with pytest.raises(sqlite3.IntegrityError):
            s.write(bad)
        assert [m.seq for m in s.load().messages["queue://Q"]] == [1]
        s.write([_add(2)])
        assert [m.seq for m in s.load().messages["queue://Q"]] == [1, 2]
    finally:
        s.close()


def test_a_lone_send_is_counted_like_any_write(tmp_path: pathlib.Path) -> None:
    """A batch of one ``AddMessage`` (a synchronous producer's commit, written without the
    plan) counts as a commit and adds to the log estimate that times checkpoints exactly
    what the same insert written through the plan adds; its row round-trips."""
    s = SqliteStore(tmp_path / "data")
    try:
        commits, logged = s.commits, s._logged
        s.write([_add(1)])
        lone = s._logged - logged
        assert s.commits == commits + 1
        logged = s._logged
        s.write([_add(2), SetDeliveryCount("queue://Q", 2, 0)])  # the same insert, planned
        assert s._logged - logged == lone > len(b"m1")
        got = s.load().messages["queue://Q"]
        assert [(m.seq, m.data, m.priority, m.group_id) for m in got] == [
            (1, b"m1", 1, "g1"),
            (2, b"m2", 2, "g2"),
        ]
    finally:
        s.close()


@pytest.mark.parametrize(
    "batch",
    [
        [_add(5), SetDeliveryCount("queue://Q", 5, 3)],  # dispatched at once: one insert
        [SetDeliveryCount("queue://Q", 5, 3), _add(5)],  # the other order: the plan's
        [_add(5), SetDeliveryCount("queue://Q", 6, 3)],  # another message's count
        [_add(5), SetDeliveryCount("queue://R", 5, 3)],  # another destination's
    ],
)
def test_a_send_with_a_delivery_count_round_trips(
    tmp_path: pathlib.Path, batch: list[AddMessage | SetDeliveryCount]
) -> None:
    """A batch of one send and one delivery count stores what the plan says, in either
    order: the count on the row if it is that message's, nothing for another message (an
    update of no row); every field of the row kept."""
    s = SqliteStore(tmp_path / "data")
    try:
        s.write([_add(6, "queue://R")])
        s.write(batch)
        loaded = s.load().messages
        got = [
            (m.seq, m.data, m.priority, m.expiration, m.delivery_time, m.group_id)
            for m in loaded["queue://Q"]
        ]
        assert got == [(5, b"m5", 5, 35, 55, "g2")]
        counts = {(d, m.seq): m.delivery_count for d, ms in loaded.items() for m in ms}
        same = SetDeliveryCount("queue://Q", 5, 3) in batch
        assert counts == {("queue://Q", 5): 3 if same else 0, ("queue://R", 6): 0}
    finally:
        s.close()


@pytest.mark.parametrize(
    "batches",
    [
        [[_add(1)], [_add(2)], [_add(3, "queue://R")], [_add(4)]],  # sends only: the fast way
        [[_add(i)] for i in range(1, 40)],
        [[_add(1), _add(2)], [_add(1)]],  # a message added twice: the general pass
        [[_add(3)], [_add(2)]],  # out of order: the general pass
        [[_add(1)], [RemoveMessage("queue://Q", 1)], [_add(2)]],
        [[_add(1)], [SetDeliveryCount("queue://Q", 1, 2)], [_add(2)]],
        [],
        [[]],
    ],
)
def test_a_group_of_sends_plans_as_the_general_pass_does(
    batches: list[Sequence[Op]],
) -> None:
    """``plan`` takes a group of sends only (each destination's sequence numbers rising)
    without the general reduction, and gives exactly what that reduction gives; any other
    group is reduced as before."""
    assert _plan.plan(batches) == _plan._reduce(batches)


def test_a_message_added_twice_is_inserted_once() -> None:
    """A group that adds the same message twice is no group of plain sends: the general pass
    inserts the later one only (a backend may not write a row twice in one statement)."""
    p = _plan.plan([[_add(1)], [_add(2)], [_add(1)]])
    assert len(p.steps) == 1
    run = p.steps[0]
    assert isinstance(run, _plan.Rows)
    assert [op.seq for op in run.inserts] == [2, 1]
