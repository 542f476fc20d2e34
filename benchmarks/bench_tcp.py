"""End-to-end figures over the network: a ``ternmq serve`` subprocess and tcp:// clients.

Scenarios (256-byte TextMessages; the clients are threads of this process, one connection
each; the server is a separate process on a fresh data directory, fsync "always"):
  np 1->1        1 producer -> queue -> 1 consumer, NON_PERSISTENT, AUTO_ACKNOWLEDGE. Sends
                 are synchronous (block_on_non_persistent_send=true: the producer waits for
                 the broker's receipt), so this is bound by the round-trip time.
  np pipelined   the same with the default, pipelined sends: they do not wait for the
                 receipt (at most 1,000 in flight per session), as ActiveMQ and Artemis send
                 non-persistent messages by default; the client writes them in batches
                 (transport/tcp.py "lazy" frames); also with a DUPS_OK_ACKNOWLEDGE consumer,
                 whose acknowledgements are batched too (AUTO_ACKNOWLEDGE writes one per
                 message: REL-05)
                 "2 processes": the default pipelined sends with the consumer in a process
                 of its own (the issue's tcp 1->1 target), not a thread of this one
  persistent x1  PERSISTENT synchronous sends from 1 producer (receipt after fsync)
  persistent x64 the same from 64 producer threads, one connection each (group commit
                 shares the fsyncs)
  persistent x64 shared
                 PERSISTENT synchronous sends from 64 threads on ONE connection (one session
                 each)
  np x64 shared  64 threads sending NON_PERSISTENT on ONE connection (one session each;
                 synchronous sends)
  topic 1->4     NON_PERSISTENT to a topic with 4 subscribers; messages published per second
                 until every subscriber has all of them (with sync and with pipelined sends)
  latency        send -> receive latency at an offered 2,000 msg/s (NON_PERSISTENT, open loop:
                 measured from each message's scheduled send time, so a stall counts for every
                 message it delays); p50 / p99 / p99.9
  rtt            the floor: an empty TCP echo round trip between two Python processes here
  durable echo   the floor of "persistent x1": the same echo, but the server process commits
                 each 300-byte request to SQLite (a row shaped like the store's messages
                 table, WAL, synchronous=FULL) before it answers: what one synchronous
                 persistent send costs with this engine and language and no broker at all;
                 "persistent x1" prints its ratio to it. Also with a bare journal instead of
                 SQLite (pwrite into a preallocated file + fdatasync): the floor with the
                 cheapest durable write there is

With --pin the server runs with --cpu-affinity on the last CPU and this process (every
client) on the first (docs/operations.md "CPU affinity": on a 2-vCPU VM a thread wake-up
across CPUs costs ~20 us, on the same CPU ~5 us).

Run: .venv/bin/python benchmarks/bench_tcp.py [--count N] [--repeat R] [--latency-seconds S]
     [--pin] [--only TEXT]   (e.g. --only persistent: the scenarios whose name contains TEXT, no
                      latency run unless TEXT is in "latency")
Prints the median of R runs for each throughput scenario, and the server process's CPU time
(user + system, /proc) per message of the scenario (per message published for the topic rows;
with the drain of what the persistent rows sent), which the load of other work moves less;
for the persistent rows also the sends per store commit (group commit at work: the server's
``ternmq_store_commits_total``, read from its /metrics before and right after the timed sends).
Bounded: about a minute with the defaults, and every run stops after 60 s.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator

from _common import BODY, LIMIT_S, consume, cpus, free_port, pin_self, variant
from ternmq import ConnectionFactory, DeliveryMode, Queue, Session, Topic

SENT_AT = "bench_sent_ns"


def cpu_seconds(pid: int) -> float:
    """User + system CPU time that process ``pid`` has used so far (``/proc/PID/stat``)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


SERVER_PID: list[int] = []  # the running server's pid, for its CPU time
HTTP_PORT: list[int] = []  # the running server's metrics port
SENT: list[int] = []  # the server's store commits when the last timed sends ended
CLIENTS_CPU: list[tuple[float, float]] = []  # "2 processes": producer, consumer CPU seconds


def store_commits() -> int:
    """The running server's store commits so far (``ternmq_store_commits_total`` of its
    ``/metrics``), or -1 if it cannot be read."""
    if not HTTP_PORT:
        return -1
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{HTTP_PORT[-1]}/metrics", timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return -1
    m = re.search(r"^ternmq_store_commits_total (\S+)$", text, re.M)
    return int(float(m.group(1))) if m else -1


def _sent() -> None:
    """The timed sends of a persistent scenario ended: note the commits (before the drain)."""
    SENT.append(store_commits())


@contextlib.contextmanager
def server(extra: tuple[str, ...] = ()) -> Iterator[str]:
    """A ``ternmq serve --port 0 [extra...]`` subprocess on a temporary data dir, without
    the STOMP listener; yields its URL (meanwhile its pid is ``SERVER_PID[-1]`` and its HTTP
    port, for ``/metrics``, ``HTTP_PORT[-1]``)."""
    with tempfile.TemporaryDirectory(prefix="ternmq-bench-") as data:
        http = free_port()  # /metrics: the commit count (HTTP_PORT[-1] while it runs)
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ternmq.cli",
                "serve",
                "--port",
                "0",
                "--http-port",
                str(http),
                "--stomp-port",
                "-1",
                "--data-dir",
                data,
                "--log-level",
                "warning",
                *extra,
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            m = re.match(r"ternmq listening on (\S+)", line)
            if m is None:
                raise RuntimeError(f"ternmq serve did not start: {line!r}")
            SERVER_PID.append(proc.pid)
            HTTP_PORT.append(http)
            yield m.group(1)
        finally:
            if SERVER_PID:
                SERVER_PID.pop()
            if HTTP_PORT:
                HTTP_PORT.pop()
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()


def _name() -> str:
    return f"bench-{uuid.uuid4().hex[:8]}"


def _drain(factory: ConnectionFactory, q: Queue) -> None:
    with factory.create_connection() as conn:
        consumer = conn.create_session(False, Session.DUPS_OK_ACKNOWLEDGE).create_consumer(q)
        conn.start()
        while consumer.receive(0.5) is not None:
            pass


def run_queue(
    factory: ConnectionFactory, count: int, mode: int = Session.AUTO_ACKNOWLEDGE
) -> float:
    """1 -> 1 NON_PERSISTENT (consumer in ``mode``): messages/s, first send to last receive."""
    q = Queue(_name())
    ready, done = threading.Event(), []
    t = threading.Thread(target=consume, args=(factory, q, count, ready, done, mode))
    t.start()
    ready.wait(10)
    with factory.create_connection() as conn:
        session = conn.create_session()
        producer = session.create_producer(q)
        producer.delivery_mode = DeliveryMode.NON_PERSISTENT
        start = time.perf_counter()
        for _ in range(count):
            producer.send(session.create_text_message(BODY))
        t.join(LIMIT_S)
    return count / (done[0] - start)


def run_queue_procs(url: str, count: int) -> float:
    """1 -> 1 NON_PERSISTENT with the defaults, the consumer in a process of its own (as a
    user's producer and consumer would be): messages/s, first send to last receive (both
    processes read ``time.perf_counter``, the system-wide monotonic clock on Linux). The
    CPU each client process used meanwhile goes to ``CLIENTS_CPU``."""
    q = _name()
    proc = subprocess.Popen(
        [sys.executable, __file__, "--consume-only", url, q, str(count)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        if proc.stdout.readline().strip() != "ready":
            raise RuntimeError("the consumer process did not start")
        with ConnectionFactory(url).create_connection() as conn:
            session = conn.create_session()
            producer = session.create_producer(Queue(q))
            producer.delivery_mode = DeliveryMode.NON_PERSISTENT
            start = time.perf_counter()
            cpu = time.process_time()
            for _ in range(count):
                producer.send(session.create_text_message(BODY))
            done, consumer_cpu = map(float, proc.stdout.readline().split())
            CLIENTS_CPU.append((time.process_time() - cpu, consumer_cpu))
        return count / (done - start)
    finally:
        proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def _consume_only(url: str, queue: str, count: int) -> None:
    """The consumer process of :func:`run_queue_procs`: says ``ready``, then prints the time
    its last message arrived and the CPU seconds it used since it was ready."""
    ready, done = threading.Event(), []
    t = threading.Thread(
        target=consume, args=(ConnectionFactory(url), Queue(queue), count, ready, done)
    )
    t.start()
    ready.wait(10)
    cpu = time.process_time()
    print("ready", flush=True)
    t.join(LIMIT_S + 5)
    print(done[0] if done else "nan", time.process_time() - cpu, flush=True)


def run_persistent(factory: ConnectionFactory, producers: int, per_producer: int) -> float:
    """PERSISTENT synchronous sends: messages/s over all producers (each its own connection)."""
    q = Queue(_name())
    conns = [factory.create_connection() for _ in range(producers)]
    barrier = threading.Barrier(producers + 1)
    finished: list[float] = []

    def produce(i: int) -> None:
        session = conns[i].create_session()
        producer = session.create_producer(q)
        message = session.create_text_message(BODY)
        barrier.wait()
        for _ in range(per_producer):
            producer.send(message)
        finished.append(time.perf_counter())

    threads = [threading.Thread(target=produce, args=(i,)) for i in range(producers)]
    for t in threads:
        t.start()
    barrier.wait()
    start = time.perf_counter()
    for t in threads:
        t.join(LIMIT_S)
    elapsed = max(finished) - start
    _sent()
    for conn in conns:
        conn.close()
    _drain(factory, q)
    return producers * per_producer / elapsed


def run_shared(
    factory: ConnectionFactory,
    threads: int,
    per_thread: int,
    mode: int = DeliveryMode.NON_PERSISTENT,
) -> float:
    """Synchronous sends (``mode``) from ``threads`` sessions of one connection."""
    q = Queue(_name())
    with factory.create_connection() as conn:
        sessions = [conn.create_session() for _ in range(threads)]
        barrier = threading.Barrier(threads + 1)

        def produce(session: Session) -> None:
            producer = session.create_producer(q)
            producer.delivery_mode = mode
            message = session.create_text_message(BODY)
            barrier.wait()
            for _ in range(per_thread):
                producer.send(message)

        workers = [threading.Thread(target=produce, args=(s,)) for s in sessions]
        for t in workers:
            t.start()
        barrier.wait()
        start = time.perf_counter()
        for t in workers:
            t.join(LIMIT_S)
        elapsed = time.perf_counter() - start
        _sent()
    _drain(factory, q)
    return threads * per_thread / elapsed


def run_topic(factory: ConnectionFactory, count: int, subscribers: int = 4) -> float:
    """Messages published per second until every subscriber has all of them."""
    topic = Topic(_name())
    done: list[float] = []
    threads = []
    for _ in range(subscribers):
        ready = threading.Event()
        t = threading.Thread(target=consume, args=(factory, topic, count, ready, done))
        t.start()
        ready.wait(10)
        threads.append(t)
    with factory.create_connection() as conn:
        session = conn.create_session()
        producer = session.create_producer(topic)
        producer.delivery_mode = DeliveryMode.NON_PERSISTENT
        start = time.perf_counter()
        for _ in range(count):
            producer.send(session.create_text_message(BODY))
        for t in threads:
            t.join(LIMIT_S)
    return count / (max(done) - start)


def run_latency(factory: ConnectionFactory, rate: float, seconds: float) -> list[float]:
    """Latencies (ms) of ``rate`` msg/s for ``seconds``, from each scheduled send time."""
    q = Queue(_name())
    count = int(rate * seconds)
    latencies: list[float] = []
    ready = threading.Event()

    def consume() -> None:
        with factory.create_connection() as conn:
            consumer = conn.create_session().create_consumer(q)
            conn.start()
            ready.set()
            deadline = time.monotonic() + seconds + LIMIT_S
            while len(latencies) < count and time.monotonic() < deadline:
                m = consumer.receive(1.0)
                if m is not None:
                    now = time.perf_counter_ns()
                    latencies.append((now - m.get_long_property(SENT_AT)) / 1e6)

    t = threading.Thread(target=consume)
    t.start()
    ready.wait(10)
    with factory.create_connection() as conn:
        session = conn.create_session()
        producer = session.create_producer(q)
        producer.delivery_mode = DeliveryMode.NON_PERSISTENT
        period_ns = int(1e9 / rate)
        t0 = time.perf_counter_ns() + 10_000_000
        for i in range(count):
            due = t0 + i * period_ns
            wait = (due - time.perf_counter_ns()) / 1e9
            if wait > 0:
                time.sleep(wait)
            m = session.create_text_message(BODY)
            m.set_long_property(SENT_AT, due)
            producer.send(m)
        t.join(seconds + LIMIT_S)
    return latencies


# A bare echo server for the floors: it answers each 300-byte request with 8 bytes. With
# "sqlite" it first commits the request as one row of a table shaped like the store's messages
# table (WAL, synchronous=FULL: one fsync per commit, as fsync="always"); with "journal" it
# writes it into a preallocated file and fdatasyncs it (the cheapest durable write there is:
# no database, no file growth).
_ECHO_SERVER = """
import os, socket, sqlite3, sys
cpu, mode, path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
if cpu >= 0:
    os.sched_setaffinity(0, {cpu})
commit = None
if mode == "journal":
    size = 64 << 20
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    os.write(fd, bytes(size))
    os.fsync(fd)
    offset = [0]
    def commit(data):
        os.pwrite(fd, data, offset[0])
        offset[0] = (offset[0] + 512) % size
        os.fdatasync(fd)
elif mode == "sqlite":
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("CREATE TABLE m(dest TEXT, seq INTEGER, priority INTEGER, expiration INTEGER, "
               "delivery_time INTEGER, group_id TEXT, delivery_count INTEGER, data BLOB, "
               "PRIMARY KEY(dest, seq))")
    insert = "INSERT OR REPLACE INTO m VALUES('queue://floor', ?, 4, 0, 0, NULL, 0, ?)"
    seq = [0]
    def commit(data):
        seq[0] += 1
        db.execute(insert, (seq[0], data))
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(1)
print(l.getsockname()[1], flush=True)
s, _ = l.accept(); s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
buf, ok = b"", bytes(8)
while data := s.recv(65536):
    buf += data
    while len(buf) >= 300:
        request, buf = buf[:300], buf[300:]
        if commit is not None:
            commit(request)
        s.sendall(ok)
"""


def run_echo(count: int, durable: str = "", cpu: int = -1) -> float:
    """Microseconds per round trip between this process and a bare Python server process (on
    ``cpu``; -1: anywhere): a 300-byte request, an 8-byte answer. ``durable`` ("sqlite" or
    "journal"): the server makes each request durable first (see _ECHO_SERVER), so this is the
    floor of a PERSISTENT synchronous send with that engine and this language, without a
    broker."""
    with tempfile.TemporaryDirectory(prefix="ternmq-floor-") as tmp:
        proc = subprocess.Popen(
            [sys.executable, "-c", _ECHO_SERVER, str(cpu), durable, f"{tmp}/floor"],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert proc.stdout is not None
            port = int(proc.stdout.readline())
            with socket.create_connection(("127.0.0.1", port)) as s:
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                payload = b"x" * 300

                def round_trips(n: int) -> None:
                    for _ in range(n):
                        s.sendall(payload)
                        got = 0
                        while got < 8:
                            got += len(s.recv(64))

                round_trips(count // 10)  # warm-up
                start = time.perf_counter()
                round_trips(count)
                return (time.perf_counter() - start) / count * 1e6
        finally:
            proc.kill()
            proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()


def _percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


def main(argv: list[str] | None = None) -> None:
    """Start a server, run every scenario and print medians."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--count", type=int, default=10_000, help="messages per np 1->1 run")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rate", type=float, default=2000.0, help="offered rate of the latency run")
    ap.add_argument("--latency-seconds", type=float, default=10.0)
    ap.add_argument("--only", default="", help="run the scenarios whose name contains this")
    ap.add_argument(
        "--pin", action="store_true", help="server on the last CPU, clients on the first"
    )
    ap.add_argument("--consume-only", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.consume_only:
        url, queue, count = args.consume_only
        _consume_only(url, queue, int(count))
        return
    print(variant())
    extra: tuple[str, ...] = ()
    server_cpu = -1
    if args.pin:
        mine = cpus()
        server_cpu = mine[-1]
        extra = ("--cpu-affinity", str(server_cpu))
        pin_self(mine[0])
        print(f"pinned: server on CPU {server_cpu}, clients on CPU {mine[0]}")
    print(
        f"tcp echo round trip (the floor of a synchronous send): "
        f"{run_echo(5000, '', server_cpu):.0f} us"
    )
    floor = statistics.median(1e6 / run_echo(2000, "sqlite", server_cpu) for _ in range(3))
    journal = statistics.median(1e6 / run_echo(2000, "journal", server_cpu) for _ in range(3))
    print(
        f"durable echo (the floor of a persistent synchronous send: a bare Python server that "
        f"commits each request before it answers, no broker): {floor:,.0f} round trips/s "
        f"committing to SQLite; {journal:,.0f}/s with a bare fdatasync'd file instead"
    )
    with server(extra) as url:
        # "sync" scenarios and the latency run wait for each receipt, as before the default
        # became pipelined, so their figures stay comparable with the earlier ones
        factory = ConnectionFactory(url, block_on_non_persistent_send=True)
        pipelined = ConnectionFactory(url)  # the default
        print(f"server: ternmq serve at {url} (python {sys.version.split()[0]})")
        n = args.count
        scenarios: dict[str, tuple[int, Callable[[], float]]] = {
            "np 1->1 (sync sends)": (n, lambda: run_queue(factory, n)),
            "np 1->1 (pipelined sends)": (3 * n, lambda: run_queue(pipelined, 3 * n)),
            "np 1->1 (pipelined, 2 processes)": (3 * n, lambda: run_queue_procs(url, 3 * n)),
            "np 1->1 (pipelined, DUPS_OK)": (
                3 * n,
                lambda: run_queue(pipelined, 3 * n, Session.DUPS_OK_ACKNOWLEDGE),
            ),
            "persistent x1 (sync sends)": (n // 10, lambda: run_persistent(factory, 1, n // 10)),
            "persistent x64 (sync sends)": (
                64 * (n // 100),
                lambda: run_persistent(factory, 64, n // 100),
            ),
            "persistent x64, one connection": (
                64 * (n // 100),
                lambda: run_shared(factory, 64, n // 100, DeliveryMode.PERSISTENT),
            ),
            "np x64 threads, one connection": (
                64 * (n // 64),
                lambda: run_shared(factory, 64, n // 64),
            ),
            "topic 1->4 (published/s)": (n // 4, lambda: run_topic(factory, n // 4)),
            "topic 1->4 pipelined (pub/s)": (n, lambda: run_topic(pipelined, n)),
        }
        pid = SERVER_PID[-1]
        for name, (messages, fn) in scenarios.items():
            if args.only not in name:
                continue
            rates, cpu, per_commit = [], [], []
            clients: list[tuple[float, ...]] = []
            for _ in range(args.repeat):
                before = cpu_seconds(pid)
                commits = store_commits()
                SENT.clear()
                CLIENTS_CPU.clear()
                rates.append(fn())
                cpu.append((cpu_seconds(pid) - before) / messages * 1e6)
                if SENT and SENT[-1] > commits >= 0:
                    per_commit.append(messages / (SENT[-1] - commits))
                if CLIENTS_CPU:
                    clients.append(tuple(x / messages * 1e6 for x in CLIENTS_CPU[-1]))
            median = statistics.median(rates)
            versus = f"  = {median / floor:.2f} x the durable echo" if "x1" in name else ""
            grouped = (
                f", {statistics.median(per_commit):.1f} sends/commit"
                if len(per_commit) == args.repeat
                else ""
            )
            if len(clients) == args.repeat:
                prod = statistics.median(c[0] for c in clients)
                cons = statistics.median(c[1] for c in clients)
                grouped += f", producer / consumer process CPU {prod:.1f} / {cons:.1f} us/msg"
            print(
                f"{name:30s} median {median:>8,.0f} msg/s  "
                f"(min {min(rates):,.0f}, max {max(rates):,.0f}, n={args.repeat}), "
                f"server CPU {statistics.median(cpu):.1f} us/msg{grouped}{versus}"
            )
        if args.only not in "latency":
            return
        lat = run_latency(factory, args.rate, args.latency_seconds)
        print(
            f"latency at {args.rate:,.0f} msg/s offered ({len(lat):,} messages, np): "
            f"p50 {_percentile(lat, 50):.2f} ms  p99 {_percentile(lat, 99):.2f} ms  "
            f"p99.9 {_percentile(lat, 99.9):.2f} ms  max {max(lat):.2f} ms"
        )


if __name__ == "__main__":
    main()
