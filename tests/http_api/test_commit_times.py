"""The store's commit count and latency histogram (``store/_base.CommitTimes``), recorded by
the group-commit writer and read by the ``ternmq_store_commit_seconds`` metric."""

from __future__ import annotations

import pathlib
import threading

from ternmq.store import AddMessage, open_store
from ternmq.store._base import COMMIT_BUCKETS, CommitTimes, MemoryStore


def test_buckets_are_cumulative_with_inf_last() -> None:
    times = CommitTimes()
    for seconds in (0.00005, 0.0003, 0.0003, 0.02, 10.0):
        times.record(seconds)
    buckets, total = times.snapshot()
    assert len(buckets) == len(COMMIT_BUCKETS) + 1 and buckets[-1] == ("+Inf", 5)
    by_bound = dict(buckets)
    assert by_bound["0.0001"] == 1 and by_bound["0.0005"] == 3 and by_bound["0.025"] == 4
    assert by_bound["2.5"] == 4  # 10 s is above every bound
    assert [n for _, n in buckets] == sorted(n for _, n in buckets)
    assert times.count == 5 and abs(total - 10.02065) < 1e-9


def test_the_sqlite_store_counts_its_commits(tmp_path: pathlib.Path) -> None:
    store = open_store(str(tmp_path / "db"))
    done = threading.Event()
    seen: list[int] = []

    def completion(tokens: list[int], error: BaseException | None) -> None:
        seen.extend(tokens)
        if len(seen) == 3:
            done.set()

    try:
        store.set_completion(completion)
        for i in range(3):
            store.submit([AddMessage("queue://q", i + 1, b"x", 4, 0, 0)], i + 1)
        assert done.wait(10)
        times = store.commit_times
        assert times is not None and 1 <= times.count <= 3
        buckets, total = times.snapshot()
        assert buckets[-1] == ("+Inf", times.count) and total > 0
    finally:
        store.close()
    assert MemoryStore().commit_times is None  # nothing to commit, nothing to show
