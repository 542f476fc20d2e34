"""The side-by-side STOMP table: ternmq against ActiveMQ and RabbitMQ, with ratios and targets.

Theory of operation: ``benchmarks/stomp_peers.sh`` leaves one JSON line per run (written by
``../shared/bench/stompload.py run --json-out``) in ``OUT/BROKER.jsonl``. This reads them,
takes per scenario and broker the median of each headline figure over the runs (skipping
runs stompload.py marked as contaminated when clean ones exist, as its own ``report`` does),
and prints a markdown table: the figure of every broker, ternmq / ActiveMQ, the target the
issue "Performance" sets for that ratio and whether it is met, and the messages lost.

Run: .venv/bin/python benchmarks/stomp_peers_table.py build/bench-peers/*.jsonl

``--brokers`` names the columns (the ``broker`` field of the runs; default ternmq, activemq,
rabbitmq) and ``--ours`` the one compared with ActiveMQ, so that two ternmq trees measured
side by side (runs relabelled, e.g. ``before`` and ``after``) share one table; ``--runs``
adds every run's figure in the order taken (the spread behind each median).
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Callable, Sequence
from typing import Any

Run = dict[str, Any]
BROKERS = ("ternmq", "activemq", "rabbitmq")


def _lat99(r: Run) -> float:
    return float(r["lat_ms"]["p99"])


# scenario: (what the figure is, how to read it from a run, target ratio, higher is better)
HEADLINES: dict[str, tuple[str, Callable[[Run], float], float, bool]] = {
    "S1": ("msg/s end to end", lambda r: float(r["e2e_rate"]), 1.2, True),
    "S2sync": ("msg/s end to end", lambda r: float(r["e2e_rate"]), 1.3, True),
    "S2b100": ("msg/s end to end", lambda r: float(r["e2e_rate"]), 1.5, True),
    "S3": ("published/s", lambda r: float(r["send_rate"]), 1.2, True),
    "S4": ("latency p99, ms", _lat99, 1.0, False),
    "S5": ("MB/s end to end", lambda r: float(r["e2e_MBps"]), 1.0, True),
}


def load(paths: Sequence[str]) -> dict[tuple[str, str], list[Run]]:
    """The finished runs of every file, by (scenario, broker)."""
    runs: dict[tuple[str, str], list[Run]] = {}
    for path in paths:
        with open(path) as f:
            for line in f:
                if line.strip():
                    r = json.loads(line)
                    if "sent" in r:  # a run that failed has no figures
                        runs.setdefault((r["scenario"], r["broker"]), []).append(r)
    for key, rs in runs.items():
        clean = [r for r in rs if not r.get("contaminated")]
        runs[key] = clean or rs
    return runs


def cell(rs: list[Run], read: Callable[[Run], float], digits: int) -> str:
    """The median of ``read`` over the runs, the broker's CPU and the run count."""
    value = statistics.median(read(r) for r in rs)
    cpu = statistics.median(float(r.get("broker_cpu_pct") or 0) for r in rs)
    return f"{value:,.{digits}f} ({cpu:.0f}% CPU, n={len(rs)})"


def table(
    runs: dict[tuple[str, str], list[Run]],
    brokers: Sequence[str] = BROKERS,
    ours_name: str = "ternmq",
) -> str:
    """The markdown table of the headline figures, ratios and targets (``ours_name`` is
    the column compared with ActiveMQ's)."""
    lines = [
        "| scenario | figure | "
        + " | ".join(brokers)
        + f" | {ours_name} / ActiveMQ | target | lost |",
        "|---|---|" + "---:|" * len(brokers) + "---:|---|---:|",
    ]
    for scen, (what, read, target, higher) in HEADLINES.items():
        digits = 2 if scen == "S4" else 0
        cells = [cell(runs[scen, b], read, digits) if (scen, b) in runs else "-" for b in brokers]
        ratio, verdict = "-", f"{'>=' if higher else '<='} {target:g} x"
        if (scen, ours_name) in runs and (scen, "activemq") in runs:
            ours = statistics.median(read(r) for r in runs[scen, ours_name])
            theirs = statistics.median(read(r) for r in runs[scen, "activemq"])
            ratio = f"{ours / theirs:.2f}"
            met = ours >= target * theirs if higher else ours <= target * theirs
            verdict += ": met" if met else ": **not met**"
        lost = sum(int(r["lost"]) for b in brokers for r in runs.get((scen, b), []))
        lines.append(
            f"| {scen} | {what} | " + " | ".join(cells) + f" | {ratio} | {verdict} | {lost} |"
        )
    return "\n".join(lines)


def each_run(runs: dict[tuple[str, str], list[Run]], brokers: Sequence[str]) -> str:
    """The markdown table of every run's headline figure, in the order taken."""
    lines = ["| scenario | " + " | ".join(brokers) + " |", "|---|" + "---|" * len(brokers)]
    for scen, (what, read, _, _) in HEADLINES.items():
        digits = 2 if scen == "S4" else 0
        cells = [
            " / ".join(f"{read(r):,.{digits}f}" for r in runs.get((scen, b), [])) or "-"
            for b in brokers
        ]
        lines.append(f"| {scen} {what} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def cpu_per_message(runs: dict[tuple[str, str], list[Run]], brokers: Sequence[str]) -> str:
    """The markdown table of the broker's CPU time per message sent (median over the runs,
    with the lowest and highest): the broker's CPU share over a run divided by the rate at
    which messages were sent through it end to end. Less noisy than a rate on a machine
    shared with other work, which takes wall time from a broker but not CPU time per
    message."""
    lines = [
        "| scenario | " + " | ".join(f"{b} µs/msg" for b in brokers) + " |",
        "|---|" + "---:|" * len(brokers),
    ]
    for scen in HEADLINES:
        if scen == "S4":  # a fixed offered rate: CPU per message says little there
            continue
        cells = []
        for b in brokers:
            per = sorted(
                float(r.get("broker_cpu_pct") or 0) / 100 / float(r["e2e_rate"]) * 1e6
                for r in runs.get((scen, b), [])
                if r.get("e2e_rate")
            )
            cells.append(
                f"{statistics.median(per):,.0f} ({per[0]:,.0f}-{per[-1]:,.0f})" if per else "-"
            )
        lines.append(f"| {scen} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    """Print the table of the given JSONL files."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("files", nargs="+", help="stompload.py --json-out files")
    ap.add_argument("--brokers", default=",".join(BROKERS), help="the columns, comma-separated")
    ap.add_argument("--ours", default="ternmq", help="the column compared with activemq")
    ap.add_argument("--runs", action="store_true", help="also every run's figure")
    ap.add_argument("--cpu", action="store_true", help="also the broker's CPU per message")
    args = ap.parse_args(argv)
    brokers = [b for b in args.brokers.split(",") if b]
    runs = load(args.files)
    print(table(runs, brokers, args.ours))
    if args.runs:
        print()
        print(each_run(runs, brokers))
    if args.cpu:
        print()
        print(cpu_per_message(runs, brokers))


if __name__ == "__main__":
    main()
