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
"""

from __future__ import annotations

import argparse
import statistics
import time
import types
from collections.abc import Sequence

from ternmq import TextMessage
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


def main(argv: Sequence[str] | None = None) -> None:
    """Fill, scrape, print; one line per case."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--messages", type=int, default=1_000_000, help="the large case's messages")
    p.add_argument("--repeat", type=int, default=5, help="scrapes per case")
    args = p.parse_args(argv)
    cases = [(10, 10), (10_000, 10_000), (10, args.messages)]
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
        best, median, owner, size = scrape_ms(broker, args.repeat)
        print(
            f"{destinations:>12,} {messages:>10,} {fill:>7.1f} {best:>8.2f} {median:>9.2f}"
            f" {owner:>10.2f} {size:>10,}"
        )
        del broker


if __name__ == "__main__":
    main()
