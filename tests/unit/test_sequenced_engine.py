"""Broker-side rules of sequence-number access (``broker/_sequenced.py``) that need broker
settings or internals; the requests themselves are tested over every transport in
``tests/conformance/test_sequenced.py``."""

from __future__ import annotations

import gc
import itertools
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ternmq.broker import _sequenced
from ternmq.broker.embedded import EmbeddedBroker
from ternmq.broker.engine import Broker
from ternmq.client import ConnectionFactory
from ternmq.client.sequenced import ack_upto, commit_staged, log_bounds, read_range, stage
from ternmq.destination import Queue
from ternmq.errors import ResourceAllocationException, TransactionRolledBackException
from ternmq.message import TextMessage
from ternmq.store import MemoryStore


def _text(body: str) -> TextMessage:
    m = TextMessage()
    m.text = body
    return m


def test_a_staged_transaction_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """A txid that would hold more than MAX_STAGE_MESSAGES is refused with
    ResourceAllocationException saying what to do, and keeps what it had."""
    monkeypatch.setattr(_sequenced, "MAX_STAGE_MESSAGES", 3)
    with EmbeddedBroker("stage-limit") as broker:
        with ConnectionFactory(broker.url).create_connection() as conn:
            q = Queue("limit")
            assert stage(conn, "s", 0, "t", [(q, _text("a")), (q, _text("b"))]) == 2
            with pytest.raises(ResourceAllocationException, match="split the work"):
                stage(conn, "s", 0, "t", [(q, _text("c")), (q, _text("d"))])
            assert stage(conn, "s", 0, "t", [(q, _text("c"))]) == 3


def test_a_queue_declared_in_the_config_continues_its_positions_after_a_restart() -> None:
    """A queue the broker config declares is made after the store is read, so its positions
    continue above the ones handed out before the restart, like an auto-created queue's."""
    store = MemoryStore()
    q = Queue("declared")
    with EmbeddedBroker("cfg-seq", store=store, queues=["declared"]) as broker:
        with ConnectionFactory(broker.url).create_connection() as conn:
            s = conn.create_session()
            s.create_producer(q).send(s.create_text_message("before"))
            before = log_bounds(conn, q).latest
            assert ack_upto(conn, q, before) == 1
    with EmbeddedBroker("cfg-seq", store=store, queues=["declared"]) as broker:
        with ConnectionFactory(broker.url).create_connection() as conn:
            s = conn.create_session()
            s.create_producer(q).send(s.create_text_message("after"))
            b = log_bounds(conn, q)
            seqs = [r.seq for ch in read_range(conn, q, before, b.latest) for r in ch]
            assert len(seqs) == 1 and seqs[0] > before


@given(st.sets(st.integers(1, 60), min_size=1), st.sets(st.integers(1, 60)))
def test_ack_upto_deletes_by_the_fewest_ranges_that_spare_kept_positions(
    removed: set[int], kept: set[int]
) -> None:
    """The store ranges of a cumulative acknowledgement cover every removed position, hold
    no kept one, and are as few as that allows (a kept position between each two)."""
    kept -= removed
    seqs, keep = sorted(removed), sorted(kept)
    runs = _sequenced._runs(seqs, keep)
    covered = [s for lo, hi in runs for s in seqs if lo <= s <= hi]
    assert covered == seqs
    assert all(lo <= hi and not any(lo <= k <= hi for k in keep) for lo, hi in runs)
    assert all(any(a[1] < k < b[0] for k in keep) for a, b in itertools.pairwise(runs))


@pytest.mark.parametrize("enabled", [True, False])
def test_a_large_commit_pauses_the_garbage_collector_and_restores_it(
    monkeypatch: pytest.MonkeyPatch, enabled: bool
) -> None:
    """A commit of GC_PAUSE_MESSAGES or more runs with the cyclic garbage collector paused,
    and leaves it as it found it (enabled or not), also when the commit fails."""
    monkeypatch.setattr(_sequenced, "GC_PAUSE_MESSAGES", 2)
    seen: list[bool] = []
    publish_all = Broker.publish_all

    def spy(self: Broker, *args: Any) -> int:
        seen.append(gc.isenabled())
        return publish_all(self, *args)

    monkeypatch.setattr(Broker, "publish_all", spy)
    was = gc.isenabled()
    if not enabled:
        gc.disable()
    try:
        with EmbeddedBroker("gc-pause", max_bytes=2_000, full_policy="fail") as broker:
            with ConnectionFactory(broker.url).create_connection() as conn:
                q = Queue("gc")
                stage(conn, "s", 0, "small", [(q, _text("a")), (q, _text("b"))])
                assert commit_staged(conn, "s", 0, ["small"]).published == 2
                assert gc.isenabled() is enabled
                stage(conn, "s", 1, "big", [(q, _text("x" * 900)) for _ in range(3)])
                with pytest.raises(TransactionRolledBackException):
                    commit_staged(conn, "s", 1, ["big"])  # past the queue's max_bytes
                assert gc.isenabled() is enabled
        assert seen == [False, False]
    finally:
        if was:
            gc.enable()
