"""End-to-end throughput over the embedded transport (vm://).

Scenarios (256-byte TextMessages):
  queue      1 producer -> queue -> 1 consumer, NON_PERSISTENT, AUTO_ACKNOWLEDGE, producer and
             consumer on separate threads (the figure issue 3 targets: >= 50,000 msg/s)
  topic      1 producer -> topic -> 4 subscribers (each on its own thread); messages/s published
  tx-batch   transacted producer, commit every 100 messages, 1 consumer on another thread

Run: .venv/bin/python benchmarks/bench_vm.py [--count N] [--repeat R]
Prints the median of R runs for each scenario. Bounded: every run stops after 60 s.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
import uuid

from _common import BODY, LIMIT_S, consume, variant
from ternmq import ConnectionFactory, DeliveryMode, EmbeddedBroker, Queue, Session, Topic


def run_queue(count: int, transacted: bool = False) -> float:
    """Messages/s, first send to last receive."""
    with EmbeddedBroker(f"bench-{uuid.uuid4().hex[:8]}") as broker:
        factory = ConnectionFactory(broker.url)
        q = Queue("bench")
        ready, done = threading.Event(), []
        t = threading.Thread(target=consume, args=(factory, q, count, ready, done))
        t.start()
        ready.wait(10)
        conn = factory.create_connection()
        session = conn.create_session(transacted, Session.AUTO_ACKNOWLEDGE)
        producer = session.create_producer(q)
        producer.delivery_mode = DeliveryMode.NON_PERSISTENT
        start = time.perf_counter()
        for i in range(count):
            producer.send(session.create_text_message(BODY))
            if transacted and i % 100 == 99:
                session.commit()
        if transacted:
            session.commit()
        t.join(LIMIT_S)
        conn.close()
        return count / (done[0] - start)


def run_topic(count: int, subscribers: int = 4) -> float:
    """Messages published per second until every subscriber has all of them."""
    with EmbeddedBroker(f"bench-{uuid.uuid4().hex[:8]}") as broker:
        factory = ConnectionFactory(broker.url)
        topic = Topic("bench")
        done: list[float] = []
        threads = []
        for _ in range(subscribers):
            ready = threading.Event()
            t = threading.Thread(target=consume, args=(factory, topic, count, ready, done))
            t.start()
            ready.wait(10)
            threads.append(t)
        conn = factory.create_connection()
        session = conn.create_session()
        producer = session.create_producer(topic)
        producer.delivery_mode = DeliveryMode.NON_PERSISTENT
        start = time.perf_counter()
        for _ in range(count):
            producer.send(session.create_text_message(BODY))
        for t in threads:
            t.join(LIMIT_S)
        conn.close()
        return count / (max(done) - start)


def main(argv: list[str] | None = None) -> None:
    """Run every scenario and print medians."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--count", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    print(variant())
    scenarios = {
        "queue 1->1 non-persistent AUTO": lambda: run_queue(args.count),
        "topic 1->4 (published/s)": lambda: run_topic(args.count // 2),
        "transacted, commit every 100": lambda: run_queue(args.count, transacted=True),
    }
    for name, fn in scenarios.items():
        rates = [fn() for _ in range(args.repeat)]
        print(
            f"{name:34s} median {statistics.median(rates):>10,.0f} msg/s  "
            f"(min {min(rates):,.0f}, max {max(rates):,.0f}, n={args.repeat})"
        )


if __name__ == "__main__":
    main()
