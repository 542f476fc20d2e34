"""The side-by-side STOMP table (benchmarks/stomp_peers_table.py): medians, ratios, targets."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.stomp_peers_table import load, table


def _run(broker: str, scenario: str, rate: float, **extra: object) -> dict[str, object]:
    run: dict[str, object] = {
        "broker": broker,
        "scenario": scenario,
        "sent": 100,
        "lost": 0,
        "e2e_rate": rate,
        "send_rate": rate,
        "e2e_MBps": rate,
        "broker_cpu_pct": 50.0,
        "lat_ms": {"p50": rate / 10, "p99": rate, "p999": rate * 2},
    }
    run.update(extra)
    return run


def _write(path: Path, runs: list[dict[str, object]]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in runs))
    return str(path)


def _row(text: str, scenario: str) -> list[str]:
    line = next(ln for ln in text.splitlines() if ln.startswith(f"| {scenario} |"))
    return [c.strip() for c in line.strip("|").split("|")]


def test_medians_ratio_and_verdict(tmp_path: Path) -> None:
    ours = _write(
        tmp_path / "ternmq.jsonl",
        [_run("ternmq", "S1", r) for r in (100.0, 300.0, 200.0)]
        + [_run("ternmq", "S4", 2.0, lost=3)],
    )
    theirs = _write(
        tmp_path / "activemq.jsonl",
        [_run("activemq", "S1", 160.0), _run("activemq", "S4", 1.0)],
    )
    text = table(load([ours, theirs]))
    s1 = _row(text, "S1")
    assert s1[2].startswith("200 (50% CPU, n=3)")  # the median of three
    assert s1[5] == "1.25" and s1[6] == ">= 1.2 x: met"
    s4 = _row(text, "S4")  # lower is better: twice ActiveMQ's p99 misses
    assert s4[5] == "2.00" and s4[6] == "<= 1 x: **not met**"
    assert s4[7] == "3"  # lost messages are summed, never hidden
    assert _row(text, "S5")[2:5] == ["-", "-", "-"]


def test_contaminated_and_failed_runs_are_left_out(tmp_path: Path) -> None:
    runs = [
        _run("ternmq", "S1", 1000.0, contaminated=True),
        _run("ternmq", "S1", 100.0),
        {"broker": "ternmq", "scenario": "S1", "errors": ["connection reset"]},
        _run("activemq", "S1", 100.0),
    ]
    text = table(load([_write(tmp_path / "all.jsonl", runs)]))
    s1 = _row(text, "S1")
    assert s1[2].startswith("100 (50% CPU, n=1)")
    assert s1[5] == "1.00" and s1[6] == ">= 1.2 x: **not met**"
