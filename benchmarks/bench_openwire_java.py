"""OpenWire with ActiveMQ's Java client: ternmq against ActiveMQ 5.17's own broker, back to back.

Theory of operation: ``tests/openwire/clients/OpenWireBench.java`` (compiled with ``javac``
against Debian's jars, see tests/openwire/_java.py) runs one producer and one consumer, each
on its own connection, on a fresh queue: 256-byte TextMessages, AUTO_ACKNOWLEDGE, the
client's defaults (persistent sends wait for the broker, non-persistent ones do not; prefetch
1,000). Each run is bounded by --count messages and --seconds; msg/s is the messages received
over the time from the first send to the last receive, after an unmeasured warm-up round.
ternmq is a ``ternmq serve`` on a fresh data directory (its defaults: fsync "always"), reached
on its main port with no option; ActiveMQ is its BrokerService embedded from Debian's
``activemq-broker.jar`` with KahaDB in a fresh directory (its defaults: a journal sync per
persistent send). Each broker runs alone: ternmq's runs, then ActiveMQ's, ``--repeat`` times
alternating; the table shows medians and ternmq / ActiveMQ.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_openwire_java.py [--count N] [--repeat R]
"""

from __future__ import annotations

import argparse
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile

from bench_tcp import server

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from openwire._java import (  # noqa: E402 - tests/ goes on sys.path first
    BROKER_JARS,
    CLIENT_JARS,
    QUIET_LOGGING,
    JavaMissing,
    compile_java,
    reference_broker,
)

CLIENTS = ROOT / "tests" / "openwire" / "clients"
SIZE = 256
MODES = ("non-persistent", "persistent")
_LINE = re.compile(r"sent (\d+) received (\d+) seconds (\S+) rate (\S+) sending (\S+)")


def run_java(java: list[str], url: str, mode: str, count: int, seconds: int) -> float:
    """One OpenWireBench run (printed); msg/s (a run that lost messages raises)."""
    out = subprocess.run(
        [*java, "OpenWireBench", url, mode, str(count), str(seconds), str(SIZE)],
        capture_output=True,
        text=True,
        timeout=3 * seconds + 120,
    )
    m = _LINE.search(out.stdout)
    if out.returncode != 0 or m is None:
        raise RuntimeError(f"OpenWireBench failed ({out.returncode}): {out.stdout}{out.stderr}")
    sent, received = int(m.group(1)), int(m.group(2))
    if received != sent:
        raise RuntimeError(f"{url} {mode}: sent {sent}, received {received}")
    rate, elapsed, sending = float(m.group(4)), float(m.group(3)), float(m.group(5))
    print(
        f"  {mode}: {rate:,.0f} msg/s ({received:,} in {elapsed:.1f} s;"
        f" sends took {sending:.1f} s)",
        flush=True,
    )
    return rate


def main(argv: list[str] | None = None) -> None:
    """Compile, run every mode on both brokers, print the table."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--count", type=int, default=20_000, help="non-persistent messages per run")
    ap.add_argument("--persistent-count", type=int, default=5_000)
    ap.add_argument("--seconds", type=int, default=60, help="a run stops after this long")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args(argv)
    counts = {"non-persistent": args.count, "persistent": args.persistent_count}
    with tempfile.TemporaryDirectory(prefix="ternmq-bench-java-") as tmp:
        work = pathlib.Path(tmp)
        sources = [CLIENTS / "OpenWireBench.java", CLIENTS / "ReferenceBroker.java"]
        try:
            java = compile_java(sources, work / "classes", CLIENT_JARS, BROKER_JARS, QUIET_LOGGING)
        except JavaMissing as missing:
            print(f"skipped: {missing}")
            return
        java = [java[0], "-Xmx512m", *java[1:]]
        rates: dict[tuple[str, str], list[float]] = {}
        for i in range(args.repeat):
            print(f"round {i + 1}: ternmq", flush=True)
            with server(("--stomp-port", "-1")) as url:
                for mode in MODES:
                    rate = run_java(java, url, mode, counts[mode], args.seconds)
                    rates.setdefault(("ternmq", mode), []).append(rate)
            kahadb = work / f"kahadb-{i}"
            print(f"round {i + 1}: ActiveMQ", flush=True)
            with reference_broker(java, work / f"activemq-{i}.log", kahadb) as port:
                for mode in MODES:
                    rate = run_java(
                        java, f"tcp://127.0.0.1:{port}", mode, counts[mode], args.seconds
                    )
                    rates.setdefault(("activemq", mode), []).append(rate)
    print(f"OpenWire, ActiveMQ's Java client, 1 producer -> queue -> 1 consumer, {SIZE} B")
    print(f"{'mode':<16} {'messages':>9} {'ternmq msg/s':>13} {'ActiveMQ msg/s':>15} {'ratio':>6}")
    for mode in MODES:
        ternmq = statistics.median(rates[("ternmq", mode)])
        activemq = statistics.median(rates[("activemq", mode)])
        print(
            f"{mode:<16} {counts[mode]:>9,} {ternmq:>13,.0f} {activemq:>15,.0f} "
            f"{ternmq / activemq:>6.2f}"
        )


if __name__ == "__main__":
    main()
