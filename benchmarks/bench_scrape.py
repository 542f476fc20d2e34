"""The cost of one ``/metrics`` scrape as the broker grows: destinations and messages held.

A scrape reads the counters the broker keeps as it works (``Broker.stats()``), so it should
cost O(destinations) and nothing per message held. This fills an engine (no network, a
memory store, NON_PERSISTENT 100-byte messages, no memory limit) and times the HTTP
listener's scrape: the snapshot of the counters (on the server's event loop) and the
Prometheus text exposition (in a worker thread), the process metrics (constant) left out:

  10 destinations,        10 messages held
  10,000 destinations, 10,000 messages held (one each)
  10 destinations,   1,000,000 messages held   (--messages to change; ~0.5 GB, ~15 s to fill)

Run: .venv/bin/python benchmarks/bench_scrape.py [--messages N] [--repeat R]
Prints the best and the median of R scrapes, milliseconds, and the exposition's size.

The second half asks whether scraping disturbs messaging: a ``ternmq serve`` process with
its HTTP listener (bench_tcp.py's server), bench_tcp.py's "np 1->1 (pipelined sends)"
(--count messages of 256 B, one producer and one consumer thread of this process), run
with a thread that GETs ``/metrics`` every --period seconds and without it, alternating,
--runs times each. Prints the median msg/s of each, their ratio, and the scrapes' times.

Run: .venv/bin/python benchmarks/bench_scrape.py --part load [--count N] [--runs R]
(--part both, the default, runs both halves; --part time only the first.)
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
import types
import urllib.request
from collections.abc import Sequence

from bench_tcp import HTTP_PORT, run_queue, server
from ternmq import ConnectionFactory, TextMessage
from ternmq.broker.config import BrokerConfig
from ternmq.broker.engine import Broker
from ternmq.message.codec import encode_message
from ternmq.protocol import commands as c
from ternmq.server.http.metrics import exposition, snapshot
from ternmq.store import MemoryStore

BODY = "x" * 100


def filled(destinations: int, messages: int) -> Broker:
    """An engine holding ``messages`` spread evenly over ``destinations`` queues."""
    broker = Broker(BrokerConfig(max_memory_bytes=0), MemoryStore())
    conn = broker.connect(lambda cmd: None)
    broker.handle(conn, c.Connect(corr=1, user=None, password=None))
    broker.handle(conn, c.CreateSession(corr=2, session_id=1))
    data = encode_message(TextMessage(BODY))
    names = [f"queue://bench.{i}" for i in range(destinations)]
    for i in range(messages):
        req = c.Send(session_id=1, destination=names[i % destinations], message=data)
        broker.handle(conn, msg_send(req))
    for name in names[messages:]:  # fewer messages than destinations: create the rest
        broker.queue(broker.resolve(name))
    return broker


def msg_send(req: c.Send) -> c.Send:
    """A non-persistent, quiet send (no reply to build)."""
    return c.Send(
        session_id=req.session_id,
        destination=req.destination,
        message=req.message,
        persistent=False,
        quiet=True,
    )


def scrape_ms(broker: Broker, repeat: int) -> tuple[float, float, float, int]:
    """Milliseconds of ``repeat`` scrapes: the best and median of the whole scrape, the
    median of the part on the broker's thread (the snapshot); the exposition's octets."""
    host = types.SimpleNamespace(broker=broker, connections=set())
    times, owner = [], []
    size = 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        snap = snapshot(host)  # type: ignore[arg-type]
        t1 = time.perf_counter()
        size = len(exposition(snap, process=False))
        times.append((time.perf_counter() - t0) * 1000)
        owner.append((t1 - t0) * 1000)
    return min(times), statistics.median(times), statistics.median(owner), size


def scrape(url: str) -> float:
    """GET ``url`` to the end; seconds it took."""
    t0 = time.perf_counter()
    with urllib.request.urlopen(url, timeout=10) as reply:
        reply.read()
    return time.perf_counter() - t0


def scraper(url: str, period: float, stop: threading.Event, took: list[float]) -> None:
    """Scrape ``url`` every ``period`` seconds until ``stop``; each scrape's seconds into
    ``took``."""
    while not stop.wait(period):
        took.append(scrape(url))


def wait_http(url: str, limit_s: float = 10.0) -> None:
    """Return once ``url`` answers (the HTTP listener starts beside the messaging one)."""
    deadline = time.monotonic() + limit_s
    while True:
        try:
            scrape(url)
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def under_load(count: int, runs: int, period: float) -> None:
    """Messaging throughput with a scrape every ``period`` seconds and with none, alternating."""
    with server() as url:
        metrics = f"http://127.0.0.1:{HTTP_PORT[-1]}/metrics"
        wait_http(metrics)
        factory = ConnectionFactory(url)  # pipelined NON_PERSISTENT sends, the default
        run_queue(factory, count // 4)  # warm-up, not counted
        rates: dict[bool, list[float]] = {False: [], True: []}
        took: list[float] = []
        for i in range(runs):
            for scraping in (False, True) if i % 2 == 0 else (True, False):
                if not scraping:
                    rates[False].append(run_queue(factory, count))
                    continue
                stop = threading.Event()
                thread = threading.Thread(target=scraper, args=(metrics, period, stop, took))
                thread.start()
                try:
                    rates[True].append(run_queue(factory, count))
                finally:
                    stop.set()
                    thread.join()
        plain, scraped = statistics.median(rates[False]), statistics.median(rates[True])
        print(f"np 1->1 (pipelined sends), {count:,} messages a run, {runs} runs each, alternating")
        for name, key in (("no scrape", False), (f"scrape every {period:g} s", True)):
            each = ", ".join(f"{r:,.0f}" for r in rates[key])
            print(f"  {name:20s} median {statistics.median(rates[key]):>8,.0f} msg/s  ({each})")
        print(f"  ratio scraped/none   {scraped / plain:.3f}")
        if took:
            print(
                f"  scrapes: {len(took)}, median {statistics.median(took) * 1000:.1f} ms,"
                f" max {max(took) * 1000:.1f} ms"
            )


def main(argv: Sequence[str] | None = None) -> None:
    """Fill, scrape, print; one line per case. Then (``--part load``) the throughput with and
    without scrapes."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--part", choices=["both", "time", "load"], default="both")
    p.add_argument("--messages", type=int, default=1_000_000, help="the large case's messages")
    p.add_argument("--repeat", type=int, default=5, help="scrapes per case")
    p.add_argument("--count", type=int, default=200_000, help="messages per throughput run")
    p.add_argument("--runs", type=int, default=3, help="throughput runs with and without")
    p.add_argument("--period", type=float, default=1.0, help="seconds between scrapes")
    args = p.parse_args(argv)
    if args.part in ("both", "time"):
        scrape_time(args.messages, args.repeat)
    if args.part in ("both", "load"):
        under_load(args.count, args.runs, args.period)


def scrape_time(messages: int, repeat: int) -> None:
    """The scrape's time with few and many destinations and messages held."""
    cases = [(10, 10), (10_000, 10_000), (10, messages)]
    print(
        f"{'destinations':>12} {'messages':>10} {'fill s':>7} {'best ms':>8} {'median ms':>9}"
        f" {'on loop ms':>10} {'octets':>10}"
    )
    for destinations, messages in cases:
        t0 = time.perf_counter()
        broker = filled(destinations, messages)
        fill = time.perf_counter() - t0
        held = sum(st.depth for st in broker.stats())
        assert held == messages, (held, messages)
        best, median, owner, size = scrape_ms(broker, repeat)
        print(
            f"{destinations:>12,} {messages:>10,} {fill:>7.1f} {best:>8.2f} {median:>9.2f}"
            f" {owner:>10.2f} {size:>10,}"
        )
        del broker


if __name__ == "__main__":
    main()
