"""CPU per persistent send on the embedded path, one thread, no fsync, no thread switches.

The end-to-end figures of ``bench_persistent.py`` vary by +-20-30 % on a shared 2-core VM,
more than most single changes to the broker move them. This splits out the two pieces of
a persistent send that the broker side owns and times them on one thread, where they
repeat to within a few percent:

  engine + vm   ``VmTransport.submit(Send)`` of a PERSISTENT message to a durable queue, the
                store batch handed to a fake asynchronous store, its group commit reported
                (``--group`` sends per report) and the reply resolved: the broker lock,
                ``Broker.handle``, ``_flush``, the completion and the reply hand-off
  store _apply  ``SqliteStore.apply`` of ``--group`` one-message batches in one transaction,
                ``fsync="batch"`` with a long interval (SQLite's work and the writer's
                Python, without the fsync)
  np reads      the engine's work for NON_PERSISTENT 1 -> 1 over the native protocol, no
                socket: quiet sends ``--read`` to a read, the consumer's quiet AUTO acks of
                what was delivered likewise; "handle" hands each request to
                ``Broker.handle``, "batch" each read to ``Broker.handle_batch``

Not included: the client (encoding, the JMS API), the writer thread's hand-offs and the
context switches of many producer threads, which make up most of the ~55-90 us of CPU a
persistent send costs at 64 producers (see docs/performance.md).

Run: .venv/bin/python benchmarks/bench_broker_path.py [--count N] [--repeat R] [--group G]
Prints the best and the median of R runs, microseconds per message.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from typing import cast

from _common import variant
from ternmq import EmbeddedBroker
from ternmq.broker.config import BrokerConfig
from ternmq.broker.engine import Broker, BrokerConnection
from ternmq.protocol import commands as c
from ternmq.store import AddMessage, MemoryStore, Op, Recovered
from ternmq.store._base import Completion
from ternmq.store.sqlite import SqliteStore
from ternmq.transport._pending import PendingReply
from ternmq.transport.vm import VmTransport

CONNECTIONS = 64
BODY = b"x" * 300  # about the size of an encoded 256-byte TextMessage


class GroupStore:
    """An asynchronous store that keeps nothing and reports when told to (:meth:`report`)."""

    synchronous = False

    def __init__(self) -> None:
        self.tokens: list[int] = []
        self.callback: Completion | None = None

    def submit(self, ops: Sequence[Op], token: int) -> None:
        self.tokens.append(token)

    def set_completion(self, callback: Completion) -> None:
        self.callback = callback

    def report(self) -> None:
        tokens, self.tokens = self.tokens, []
        if self.callback is not None and tokens:
            self.callback(tokens, None)

    def write(self, ops: Sequence[Op]) -> None:
        pass

    def load(self, with_data: bool = True) -> Recovered:
        return Recovered()

    def read_message(self, dest: str, seq: int) -> bytes | None:
        return None

    def close(self) -> None:
        self.report()

    def set_owner_commits(self, due: Callable[[], None] | None) -> bool:
        return False  # no owner commits: every batch waits for report()

    def commit_due(self, here: bool = True) -> None:
        """Nothing is ever announced (no owner commits)."""


def engine_path(count: int, group: int) -> Callable[[], float]:
    """A broker on a :class:`GroupStore`, ``CONNECTIONS`` connections with one session each;
    returns a function that times ``count`` sends and gives microseconds per send."""
    store = GroupStore()
    embedded = EmbeddedBroker(f"bench-path-{uuid.uuid4().hex[:8]}", store=store).start()
    links = []
    for _ in range(CONNECTIONS):
        link = VmTransport(embedded, lambda cmd: None)
        link.request(c.Connect())
        link.request(c.CreateSession(session_id=1))
        links.append(link)

    def run() -> float:
        waiting: list[PendingReply] = []
        start = time.perf_counter()
        for i in range(count):
            link = links[i % CONNECTIONS]
            req = c.Send(
                corr=link.next_corr(),
                session_id=1,
                destination="queue://bench",
                message=BODY,
                persistent=True,
            )
            waiting.append(link.submit(req))
            if len(waiting) == group:
                store.report()
                for pending in waiting:
                    pending.result()
                waiting.clear()
        store.report()
        for pending in waiting:
            pending.result()
        return (time.perf_counter() - start) / count * 1e6

    run.close = embedded.stop  # type: ignore[attr-defined]
    return run


def engine_reads(count: int, per_read: int, batched: bool) -> Callable[[], float]:
    """The native server's engine work for NON_PERSISTENT 1 -> 1 traffic, without a socket:
    a producer's quiet sends arrive ``per_read`` to a read, the consumer's quiet AUTO acks of
    what was delivered likewise, with a credit grant; each read goes to
    ``Broker.handle_batch`` (``batched``) or to ``Broker.handle`` once per request. Returns a
    function that times ``count`` messages and gives microseconds per message (send,
    delivery, ack)."""
    broker = Broker(BrokerConfig(), MemoryStore())
    delivered: list[c.Command] = []
    producer = broker.connect(lambda cmd: None)
    consumer = broker.connect(delivered.append)
    for conn in (producer, consumer):
        broker.handle(conn, c.Connect(corr=1))
        broker.handle(conn, c.CreateSession(corr=2, session_id=1))
    broker.handle(
        consumer,
        c.CreateConsumer(
            corr=3, session_id=1, consumer_id=1, destination="queue://b", prefetch=per_read * 4
        ),
    )
    delivered.clear()
    send = c.Send(session_id=1, destination="queue://b", message=BODY, persistent=False, quiet=True)
    sends = [send] * per_read

    def feed(conn: BrokerConnection, reqs: list[c.Request]) -> None:
        if batched:
            broker.handle_batch(conn, reqs)
        else:
            for req in reqs:
                broker.handle(conn, req)

    def run() -> float:
        start = time.perf_counter()
        for _ in range(count // per_read):
            feed(producer, sends)  # type: ignore[arg-type]
            acks: list[c.Request] = [
                c.Ack(session_id=1, delivery_ids=[cast(c.Deliver, d).delivery_id])
                for d in delivered
            ]
            delivered.clear()
            acks.append(c.Credit(consumer_id=1, messages=len(acks)))  # as the client renews
            feed(consumer, acks)
        return (time.perf_counter() - start) / (count // per_read * per_read) * 1e6

    run.close = broker.shutdown  # type: ignore[attr-defined]
    return run


def store_apply(count: int, group: int, parent: str) -> Callable[[], float]:
    """A :class:`SqliteStore` in ``parent``; returns a function that times ``count`` messages
    written in transactions of ``group`` one-message batches."""
    store = SqliteStore(tempfile.mkdtemp(dir=parent), fsync="batch", batch_interval=3600)
    seq = [0]

    def run() -> float:
        commits = max(1, count // group)
        start = time.perf_counter()
        for _ in range(commits):
            batches: list[Sequence[Op]] = []
            for _ in range(group):
                seq[0] += 1
                batches.append([AddMessage("queue://bench", seq[0], BODY, 4, 0, 0)])
            with store._db_lock:
                store.apply(batches)
        return (time.perf_counter() - start) / (commits * group) * 1e6

    run.close = store.close  # type: ignore[attr-defined]
    return run


def main(argv: list[str] | None = None) -> None:
    """Time both pieces; print best and median per message."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--count", type=int, default=20_000, help="messages per run")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--group", type=int, default=20, help="sends per group commit")
    ap.add_argument("--read", type=int, default=64, help="requests per read (np reads)")
    args = ap.parse_args(argv)
    parent = tempfile.mkdtemp(prefix="ternmq-bench-path-")
    try:
        print(variant())
        print(f"{'piece':16s} {'best us/msg':>12s} {'median':>8s}   (group of {args.group})")
        pieces: list[tuple[str, Callable[[], Callable[[], float]]]] = [
            ("engine + vm", lambda: engine_path(args.count, args.group)),
            ("store _apply", lambda: store_apply(args.count, args.group, parent)),
            ("np reads, handle", lambda: engine_reads(args.count, args.read, False)),
        ]
        if hasattr(Broker, "handle_batch"):  # (an older tree has only handle)
            pieces.append(("np reads, batch", lambda: engine_reads(args.count, args.read, True)))
        for name, make in pieces:
            run = make()
            try:
                run()  # warm-up
                times = [run() for _ in range(args.repeat)]
            finally:
                run.close()  # type: ignore[attr-defined]
            print(f"{name:16s} {min(times):>12.2f} {statistics.median(times):>8.2f}")
    finally:
        shutil.rmtree(parent, ignore_errors=True)


if __name__ == "__main__":
    main()
