"""Multi-threaded stress test over queues and topic subscriptions (REL-01, REL-05, REL-06,
REL-10, REL-11, REL-18, REL-19, REL-20, PTP-01, PTP-04, SESS-20, SESS-25, SESS-26).

8 producer threads send to 4 queues and 2 topics, with AUTO and transacted sessions (commits
and rollbacks), synchronous and asynchronous sends, two priorities and both delivery modes.
8 consumer threads receive in AUTO, DUPS_OK, CLIENT (with and without recover) and transacted
sessions (commits and rollbacks); the topics are read through a durable and a shared durable
subscription created before the first send, so nothing published is missed.

Checked at the end:
- every committed message is received exactly once per queue / subscription, counting only
  acknowledged or committed receipts (AUTO and DUPS_OK receipts count when received);
- every time the application sees a message again it has jms_redelivered True and
  JMSXDeliveryCount equal to the number of times it was seen, and a first sighting is unmarked;
- on the queues and subscriptions whose consumers never hand messages back, each consumer
  sees each producer's messages of one priority and delivery mode in send order (REL-18/19);
- nothing is left over: every queue browses empty, every consumer drains nothing, DLQ is empty.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field

import pytest

from ternmq.client import Connection, ConnectionFactory, MessageConsumer, Session
from ternmq.destination import Queue, Topic
from ternmq.message import DeliveryMode, Message, TextMessage

from ._helpers import AUTO, CLIENT, DUPS_OK, TRANSACTED

PER_PRODUCER_QUEUE = 1000  # two producers per queue: 2,000 messages per queue
PER_PRODUCER_TOPIC = 250  # four producers per topic: 1,000 messages per topic
DEADLINE = 45.0  # seconds; the hard pytest timeout is 60 s
CLIENT_ID = "stress"


QUEUES = [Queue(f"stress-q{i}") for i in range(4)]
TOPICS = [Topic(f"stress-t{i}") for i in range(2)]

Key = tuple[int, str, int]  # (producer, destination, sequence number)


def _priority(seq: int) -> int:
    return 7 if seq % 10 == 0 else 4


def _mode(seq: int) -> int:
    return DeliveryMode.NON_PERSISTENT if seq % 3 == 0 else DeliveryMode.PERSISTENT


# ---------------------------------------------------------------------------- producers
@dataclass
class ProducerPlan:
    pid: int
    transacted: bool
    queue: Queue
    topic: Topic
    committed: list[Key] = field(default_factory=list)
    error: BaseException | None = None


class _Completion:
    def __init__(self) -> None:
        self.failures: list[Exception] = []

    def on_completion(self, message: Message) -> None:
        pass

    def on_exception(self, message: Message, exception: Exception) -> None:
        self.failures.append(exception)


def _produce(factory: ConnectionFactory, plan: ProducerPlan, start: threading.Event) -> None:
    """Commit PER_PRODUCER_QUEUE messages to the queue and PER_PRODUCER_TOPIC to the topic,
    interleaved (every fifth is for the topic). A transacted producer commits batches of 20 and
    rolls back every fourth batch, then sends fresh messages (new sequence numbers) in its
    place."""
    try:
        with factory.create_connection() as conn:
            s = conn.create_session(plan.transacted, TRANSACTED if plan.transacted else AUTO)
            producers = {"q": s.create_producer(plan.queue), "t": s.create_producer(plan.topic)}
            dests = {"q": plan.queue, "t": plan.topic}
            n_slots = PER_PRODUCER_QUEUE + PER_PRODUCER_TOPIC
            slots = ["t" if i % 5 == 4 else "q" for i in range(n_slots)]
            assert slots.count("t") == PER_PRODUCER_TOPIC
            completion = _Completion()
            seq = i = batches = 0
            start.wait(5)
            while i < len(slots):
                chunk = slots[i : i + 20] if plan.transacted else [slots[i]]
                keys = []
                for kind in chunk:
                    m = s.create_text_message(f"P{plan.pid}|{dests[kind]}|{seq}")
                    m.set_int_property("pid", plan.pid)
                    m.set_int_property("seq", seq)
                    async_send = not plan.transacted and plan.pid % 4 == 2 and seq % 3 == 0
                    producers[kind].send(
                        m,
                        priority=_priority(seq),
                        delivery_mode=_mode(seq),
                        completion_listener=completion if async_send else None,
                    )
                    keys.append((plan.pid, str(dests[kind]), seq))
                    seq += 1
                if plan.transacted:
                    batches += 1
                    if batches % 4 == 0:
                        s.rollback()
                        continue
                    s.commit()
                plan.committed.extend(keys)
                i += len(chunk)
            for p in producers.values():
                p.close()
            assert completion.failures == []
    except BaseException as exc:  # reported by the main thread
        plan.error = exc


# ---------------------------------------------------------------------------- consumers
@dataclass
class Subscription:
    """One queue or topic subscription: what its consumers saw and what they settled."""

    name: str
    returns: bool  # some consumer hands messages back (rollback / recover)
    lock: threading.Lock = field(default_factory=threading.Lock)
    sightings: list[tuple[Key, bool, int]] = field(default_factory=list)
    settled: list[Key] = field(default_factory=list)

    def saw(self, key: Key, m: Message) -> None:
        with self.lock:
            self.sightings.append((key, m.jms_redelivered, m.get_int_property("JMSXDeliveryCount")))

    def settle(self, keys: list[Key]) -> None:
        with self.lock:
            self.settled.extend(keys)

    def settled_count(self) -> int:
        with self.lock:
            return len(self.settled)


@dataclass
class ConsumerPlan:
    cid: int
    mode: int
    sub: Subscription
    open: str  # "queue:<i>", "durable:<topic>:<name>", "shared-durable:<topic>:<name>"
    give_back: bool = False  # transacted: roll back every 5th batch; CLIENT: recover every 7th
    batch: int = 10
    prefetch: int | None = None
    order: list[tuple[int, int, int, int]] = field(default_factory=list)
    error: BaseException | None = None


def _key(m: Message) -> Key:
    assert isinstance(m, TextMessage) and m.text is not None
    pid, dest, seq = m.text.split("|")
    return int(pid[1:]), dest, int(seq)


def _open_consumer(s: Session, how: str) -> MessageConsumer:
    kind, _, rest = how.partition(":")
    if kind == "queue":
        return s.create_consumer(QUEUES[int(rest)])
    topic, _, name = rest.partition(":")
    if kind == "durable":
        return s.create_durable_consumer(Topic(topic), name)
    return s.create_shared_durable_consumer(Topic(topic), name)


def _consume(s: Session, c: MessageConsumer, plan: ConsumerPlan, stop: threading.Event) -> None:
    """Receive until told to stop; settle (acknowledge / commit) or give back (recover /
    rollback) per batch, or when idle with something pending."""
    try:
        pending: list[Key] = []
        last: Message | None = None
        batches = 0
        while not stop.is_set():
            m = c.receive(0.02)
            if m is not None:
                key = _key(m)
                plan.sub.saw(key, m)
                plan.order.append(
                    (key[0], m.get_int_property("seq"), m.jms_priority, m.jms_delivery_mode)
                )
                if plan.mode in (AUTO, DUPS_OK):
                    plan.sub.settle([key])
                    continue
                pending.append(key)
                last = m
                if len(pending) < plan.batch:
                    continue
            elif not pending:
                continue
            batches += 1
            if plan.give_back and batches % (5 if plan.mode == TRANSACTED else 7) == 0:
                if plan.mode == TRANSACTED:
                    s.rollback()
                else:
                    s.recover()
            else:
                if plan.mode == TRANSACTED:
                    s.commit()
                else:
                    assert last is not None
                    last.acknowledge()
                plan.sub.settle(pending)
            pending = []
        c.close()
        s.close()
    except BaseException as exc:  # reported by the main thread
        plan.error = exc


# ---------------------------------------------------------------------------- the test
@pytest.mark.slow
@pytest.mark.timeout(60)
def test_stress_exactly_once_in_order_nothing_left(factory: ConnectionFactory) -> None:
    """REL-01, REL-05, REL-06, REL-10, REL-11, REL-18, REL-19, REL-20, PTP-01, PTP-04: 8 producer
    and 8 consumer threads over 4 queues and 2 topics with mixed acknowledgement modes and
    transactions: exactly once per subscription, correct redelivery markers, per-producer
    order where promised, nothing left over."""
    subs = {
        "q0": Subscription("q0", returns=False),
        "q1": Subscription("q1", returns=False),
        "q2": Subscription("q2", returns=True),
        "q3": Subscription("q3", returns=True),
        "t0-durable": Subscription("t0-durable", returns=False),
        "t1-shared": Subscription("t1-shared", returns=True),
    }
    t0, t1 = str(TOPICS[0].name), str(TOPICS[1].name)
    consumers = [
        ConsumerPlan(0, AUTO, subs["q0"], "queue:0"),
        ConsumerPlan(1, DUPS_OK, subs["q0"], "queue:0"),
        ConsumerPlan(2, CLIENT, subs["q1"], "queue:1", batch=20),
        ConsumerPlan(3, TRANSACTED, subs["q2"], "queue:2", give_back=True),
        ConsumerPlan(4, CLIENT, subs["q3"], "queue:3", give_back=True, prefetch=1),
        ConsumerPlan(5, AUTO, subs["t1-shared"], f"shared-durable:{t1}:sd1", prefetch=10),
        ConsumerPlan(6, CLIENT, subs["t0-durable"], f"durable:{t0}:d0", batch=25),
        ConsumerPlan(7, TRANSACTED, subs["t1-shared"], f"shared-durable:{t1}:sd1", give_back=True),
    ]
    producers = [
        ProducerPlan(pid, transacted=pid % 2 == 1, queue=QUEUES[pid // 2], topic=TOPICS[pid // 4])
        for pid in range(8)
    ]
    expected: dict[str, Counter[Key]] = {name: Counter() for name in subs}
    conns: list[Connection] = []
    start, stop = threading.Event(), threading.Event()
    threads: list[threading.Thread] = []
    began = time.monotonic()
    try:
        for plan in consumers:
            f = (
                factory
                if plan.prefetch is None
                else ConnectionFactory(factory.url, prefetch=plan.prefetch)
            )
            conn = f.create_connection()
            if plan.open.startswith("durable:"):
                conn.client_id = CLIENT_ID
            conn.start()
            conns.append(conn)
            session = conn.create_session(plan.mode == TRANSACTED, plan.mode)
            consumer = _open_consumer(session, plan.open)  # subscriptions exist before any send
            threads.append(
                threading.Thread(
                    target=_consume, args=(session, consumer, plan, stop), name=f"C{plan.cid}"
                )
            )
        for t in threads:
            t.start()
        pthreads = [
            threading.Thread(target=_produce, args=(factory, p, start), name=f"P{p.pid}")
            for p in producers
        ]
        for t in pthreads:
            t.start()
        start.set()
        for t in pthreads:
            t.join(DEADLINE)
            assert not t.is_alive(), f"producer {t.name} did not finish"
        for p in producers:
            assert p.error is None, f"producer {p.pid}: {p.error!r}"
            for key in p.committed:
                dest = key[1]
                name = {str(q): f"q{i}" for i, q in enumerate(QUEUES)}.get(dest)
                if name is None:
                    name = "t0-durable" if dest == str(TOPICS[0]) else "t1-shared"
                expected[name][key] += 1
        for name, exp in expected.items():
            want = PER_PRODUCER_TOPIC * 4 if name.startswith("t") else PER_PRODUCER_QUEUE * 2
            assert sum(exp.values()) == want, name
        deadline = began + DEADLINE
        while time.monotonic() < deadline:
            if all(subs[n].settled_count() >= sum(expected[n].values()) for n in subs):
                break
            if any(p.error is not None for p in consumers):
                break
            time.sleep(0.02)
        stop.set()
        for t in threads:
            t.join(10)
            assert not t.is_alive(), f"consumer {t.name} did not stop"
        for plan in consumers:
            assert plan.error is None, f"consumer {plan.cid}: {plan.error!r}"
    finally:
        stop.set()
        start.set()
        for conn in conns:
            conn.close()

    for name, sub in subs.items():
        # exactly once, counting only acknowledged / committed receipts
        settled = Counter(sub.settled)
        assert settled == expected[name], (
            f"{name}: missing {sum((expected[name] - settled).values())}, "
            f"extra {sum((settled - expected[name]).values())}"
        )
        # markers: a repeat sighting is marked, with the sighting number as delivery count
        seen: Counter[Key] = Counter()
        for key, redelivered, count in sub.sightings:
            seen[key] += 1
            assert (redelivered, count) == (seen[key] > 1, seen[key]), (name, key)
        if sub.returns:  # the give-back paths really ran
            assert any(n > 1 for n in seen.values()), name
        else:
            assert all(n == 1 for n in seen.values()), name
    for plan in consumers:
        if plan.sub.returns:
            continue
        # REL-18/REL-19: per producer, priority and delivery mode, in send order
        last: dict[tuple[int, int, int], int] = {}
        for pid, seq, prio, mode in plan.order:
            k = (pid, prio, mode)
            assert seq > last.get(k, -1), f"consumer {plan.cid}: P{pid} seq {seq} out of order"
            last[k] = seq

    # nothing left over
    with factory.create_connection() as conn, factory.create_connection() as anonymous:
        conn.client_id = CLIENT_ID
        for cn in (conn, anonymous):
            cn.start()
        s, anon = conn.create_session(), anonymous.create_session()
        for q in [*QUEUES, Queue("DLQ")]:
            assert list(s.create_browser(q)) == [], str(q)
            c = s.create_consumer(q)
            assert c.receive(0.1) is None, str(q)
            c.close()
        for session, how, name in (
            (s, f"durable:{t0}:d0", "d0"),
            (anon, f"shared-durable:{t1}:sd1", "sd1"),
        ):
            c = _open_consumer(session, how)
            assert c.receive(0.1) is None, how
            c.close()
            session.unsubscribe(name)
    assert time.monotonic() - began < DEADLINE
