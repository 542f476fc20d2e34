"""The clients of the crash test: producer and consumer threads, each writing what it has
*completed* to a journal, with an embedded broker on a data dir or against a network broker.

Usage: ``python _crash_worker.py DATA_DIR JOURNAL SEED`` (an embedded broker on DATA_DIR) or
``python _crash_worker.py tcp://HOST:PORT JOURNAL SEED`` (the broker is a ``ternmq serve``
process of the test's).

Theory of operation
-------------------
With the broker embedded, "the broker crashes" means "this process is SIGKILLed". Against a
``ternmq serve`` process the test freezes this process (SIGSTOP), SIGKILLs the server, then
kills this process: the journal ends where the application was when the broker died. Every
thread appends one JSON line per step to ``JOURNAL`` with ``os.write`` on a descriptor opened
with ``O_APPEND`` (no user-space buffer: a line is in the kernel before the next step starts,
and the kernel keeps it when the process dies). A line is written only *after* the call it
reports returned (``sent``, ``acked``, ``committed``), or *before* a call whose outcome is
then in doubt (``send``, ``ack-begin``, ``commit-begin``); the test reads the journal as the
proof of what the application was promised and checks the restarted broker against it.

Message identity is the string property ``uid``. Destinations (``dest`` in the journal):

- ``CQ``: a queue; synchronous and completion-listener sends; a CLIENT_ACKNOWLEDGE consumer
  that acknowledges in small batches and sometimes calls ``recover()``.
- ``TQ``: a queue fed by a transacted producer (commits and rollbacks); a transacted consumer
  that forwards each message to ``FQ`` in the same transaction and commits or rolls back.
- ``T+`` / ``T-``: topic ``T`` with ``kind = 'keep'`` / ``'skip'``. Durable subscription
  ``dsub`` (selector ``kind = 'keep'``) has a CLIENT_ACKNOWLEDGE consumer that closes and
  re-attaches now and then; durable subscription ``idle`` (no selector) never has one.
- ``DQ``: a queue of delayed messages (0.2-0.6 s of real delay) and a consumer that records
  when each arrived.

Journal records (``op``): ``ready``; ``send`` (dest, uid, tx or null) before ``send()``;
``sent`` (uid, dt = delivery time) after it returned or its completion listener ran;
``recv`` (place, uid, count, redelivered, at, dt, tx) after ``receive()`` returned;
``ack-begin``/``acked`` (place, uids) around ``acknowledge()``; ``release`` (place, uids)
after ``recover()``; ``commit-begin`` (tx, acks) / ``committed`` (tx) around ``commit()``;
``rollback-begin``/``rolledback`` (tx) around ``rollback()``; ``error`` (thread, text).
"""

from __future__ import annotations

import json
import os
import random
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from ternmq.broker.embedded import EmbeddedBroker
from ternmq.client import ConnectionFactory, Session
from ternmq.destination import Queue, Topic
from ternmq.message import DeliveryMode, Message

BROKER = "crash"
CLIENT_ID = "crash-sub"
SELECTOR = "kind = 'keep'"
LIFETIME = 30.0  # the worker ends itself if nobody kills it (a test that died)
MAX_SENDS = 3000  # per producer thread: bounds the work a long run leaves to verify
POLL = 0.05

_fd = -1


def log(op: str, **fields: Any) -> None:
    """Append one journal line; durable in the kernel when this returns."""
    fields["op"] = op
    os.write(_fd, (json.dumps(fields, separators=(",", ":")) + "\n").encode())


def uid_of(m: Message) -> str:
    uid = m.get_string_property("uid")
    assert uid is not None
    return uid


def recv_record(place: str, m: Message, tx: str | None = None) -> None:
    log(
        "recv",
        place=place,
        uid=uid_of(m),
        count=m.get_int_property("JMSXDeliveryCount"),
        redelivered=m.jms_redelivered,
        at=time.time_ns() // 1_000_000,
        dt=m.jms_delivery_time,
        tx=tx,
    )


class Worker:
    def __init__(self, seed: int, url: str) -> None:
        self.seed = seed
        self.factory = ConnectionFactory(url)

    def rng(self, name: str) -> random.Random:
        return random.Random(f"{self.seed}-{name}")

    # ---- producers ----------------------------------------------------------------------
    def plain_producer(self) -> None:
        """CQ: synchronous sends, every fourth with a completion listener (PROD-13, PROD-22)."""
        rng = self.rng("plain")
        conn = self.factory.create_connection()
        session = conn.create_session(False, Session.AUTO_ACKNOWLEDGE)
        producer = session.create_producer(Queue("CQ"))
        producer.delivery_mode = DeliveryMode.PERSISTENT
        done = threading.Semaphore(0)

        class Listener:
            def on_completion(self, message: Message) -> None:
                log("sent", uid=uid_of(message), dt=message.jms_delivery_time)
                done.release()

            def on_exception(self, message: Message, exception: Exception) -> None:
                log("error", thread="plain-listener", text=repr(exception))
                done.release()

        for i in range(MAX_SENDS):
            m = session.create_text_message(f"cq {i}")
            uid = f"cq-{i}"
            m.set_string_property("uid", uid)
            log("send", dest="CQ", uid=uid, tx=None)
            if rng.random() < 0.25:
                producer.send(m, completion_listener=Listener())
                done.acquire()
            else:
                producer.send(m)
                log("sent", uid=uid, dt=m.jms_delivery_time)

    def tx_producer(self) -> None:
        """TQ: transactions of 1-4 sends, three in four committed (TX-02, TX-04, TX-15)."""
        rng = self.rng("txp")
        conn = self.factory.create_connection()
        session = conn.create_session(True, Session.SESSION_TRANSACTED)
        producer = session.create_producer(Queue("TQ"))
        sent = 0
        t = 0
        while sent < MAX_SENDS:
            t += 1
            tx = f"p{t}"
            for j in range(rng.randint(1, 4)):
                uid = f"tq-{t}-{j}"
                m = session.create_text_message(uid)
                m.set_string_property("uid", uid)
                log("send", dest="TQ", uid=uid, tx=tx)
                producer.send(m)
                sent += 1
            if rng.random() < 0.75:
                log("commit-begin", tx=tx, acks=[])
                session.commit()
                log("committed", tx=tx)
            else:
                log("rollback-begin", tx=tx)
                session.rollback()
                log("rolledback", tx=tx)

    def topic_producer(self) -> None:
        """T: two in three published with kind 'keep' (dsub's selector admits only those)."""
        rng = self.rng("topic")
        conn = self.factory.create_connection()
        session = conn.create_session(False, Session.AUTO_ACKNOWLEDGE)
        producer = session.create_producer(Topic("T"))
        for i in range(MAX_SENDS):
            keep = rng.random() < 0.67
            uid = f"t-{i}"
            m = session.create_text_message(uid)
            m.set_string_property("uid", uid)
            m.set_string_property("kind", "keep" if keep else "skip")
            log("send", dest="T+" if keep else "T-", uid=uid, tx=None)
            producer.send(m)
            log("sent", uid=uid, dt=m.jms_delivery_time)

    def delayed_producer(self) -> None:
        """DQ: delivery delays of 0.2-0.6 s (PROD-17)."""
        rng = self.rng("delayed")
        conn = self.factory.create_connection()
        session = conn.create_session(False, Session.AUTO_ACKNOWLEDGE)
        producer = session.create_producer(Queue("DQ"))
        for i in range(MAX_SENDS):
            uid = f"dq-{i}"
            m = session.create_text_message(uid)
            m.set_string_property("uid", uid)
            log("send", dest="DQ", uid=uid, tx=None)
            producer.send(m, delivery_delay=rng.uniform(0.2, 0.6))
            log("sent", uid=uid, dt=m.jms_delivery_time)
            time.sleep(rng.uniform(0.0, 0.02))

    # ---- consumers ----------------------------------------------------------------------
    def client_ack_consumer(self) -> None:
        """CQ: CLIENT_ACKNOWLEDGE, acknowledge() every 1-5 messages, sometimes recover()."""
        rng = self.rng("cack")
        conn = self.factory.create_connection()
        session = conn.create_session(False, Session.CLIENT_ACKNOWLEDGE)
        consumer = session.create_consumer(Queue("CQ"))
        conn.start()
        pending: list[str] = []
        batch = rng.randint(1, 5)
        while True:
            m = consumer.receive(POLL)
            if m is None:
                continue
            recv_record("CQ", m)
            pending.append(uid_of(m))
            if len(pending) < batch:
                continue
            if rng.random() < 0.85:
                log("ack-begin", place="CQ", uids=pending)
                m.acknowledge()
                log("acked", place="CQ", uids=pending)
            else:
                session.recover()
                log("release", place="CQ", uids=pending)
            pending = []
            batch = rng.randint(1, 5)

    def tx_consumer(self) -> None:
        """TQ -> FQ: receive and forward in one transaction; commit three in four (TX-02)."""
        rng = self.rng("txc")
        conn = self.factory.create_connection()
        session = conn.create_session(True, Session.SESSION_TRANSACTED)
        consumer = session.create_consumer(Queue("TQ"))
        forward = session.create_producer(Queue("FQ"))
        conn.start()
        t = 1
        acks: list[list[str]] = []
        batch = rng.randint(1, 4)
        while True:
            tx = f"c{t}"
            m = consumer.receive(POLL)
            if m is not None:
                recv_record("TQ", m, tx)
                uid = uid_of(m)
                acks.append(["TQ", uid])
                fwd = session.create_text_message(uid)
                fuid = f"f.{uid}.{tx}"
                fwd.set_string_property("uid", fuid)
                log("send", dest="FQ", uid=fuid, tx=tx)
                forward.send(fwd)
                if len(acks) < batch:
                    continue
            elif not acks:
                continue
            if rng.random() < 0.75:
                log("commit-begin", tx=tx, acks=acks)
                session.commit()
                log("committed", tx=tx)
            else:
                log("rollback-begin", tx=tx)
                session.rollback()
                log("rolledback", tx=tx)
            acks = []
            t += 1
            batch = rng.randint(1, 4)

    def durable_consumer(self) -> None:
        """dsub: CLIENT_ACKNOWLEDGE; closes and re-attaches every 20-60 messages (SUB-17,
        SUB-19), sometimes with messages still unacknowledged."""
        rng = self.rng("durable")
        conn = self.factory.create_connection()
        conn.client_id = CLIENT_ID
        session = conn.create_session(False, Session.CLIENT_ACKNOWLEDGE)
        conn.start()
        pending: list[str] = []
        while True:
            consumer = session.create_durable_consumer(Topic("T"), "dsub", SELECTOR)
            for _ in range(rng.randint(20, 60)):
                m = consumer.receive(POLL)
                if m is None:
                    continue
                recv_record("dsub", m)
                pending.append(uid_of(m))
                if len(pending) >= rng.randint(1, 6):
                    log("ack-begin", place="dsub", uids=pending)
                    m.acknowledge()
                    log("acked", place="dsub", uids=pending)
                    pending = []
            consumer.close()
            time.sleep(rng.uniform(0.0, 0.1))  # the backlog grows meanwhile

    def delayed_consumer(self) -> None:
        """DQ: records arrival time against the delivery time; acknowledges each one."""
        conn = self.factory.create_connection()
        session = conn.create_session(False, Session.CLIENT_ACKNOWLEDGE)
        consumer = session.create_consumer(Queue("DQ"))
        conn.start()
        while True:
            m = consumer.receive(POLL)
            if m is None:
                continue
            recv_record("DQ", m)
            log("ack-begin", place="DQ", uids=[uid_of(m)])
            m.acknowledge()
            log("acked", place="DQ", uids=[uid_of(m)])


def _guard(name: str, fn: Callable[[], None]) -> Callable[[], None]:
    def run() -> None:
        try:
            fn()
        except BaseException:
            log("error", thread=name, text=traceback.format_exc())

    return run


def main() -> None:
    global _fd
    where, journal, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
    _fd = os.open(journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    if where.startswith("tcp://"):
        url = where
    else:
        EmbeddedBroker(BROKER, where, max_delivery_attempts=-1).start()
        url = f"vm://{BROKER}"
    worker = Worker(seed, url)
    # Both durable subscriptions exist before any message is published.
    setup = worker.factory.create_connection()
    setup.client_id = CLIENT_ID
    s = setup.create_session(False, Session.AUTO_ACKNOWLEDGE)
    s.create_durable_consumer(Topic("T"), "dsub", SELECTOR).close()
    s.create_durable_consumer(Topic("T"), "idle").close()
    setup.close()
    threads = [
        threading.Thread(target=_guard(fn.__name__, fn), name=fn.__name__, daemon=True)
        for fn in (
            worker.plain_producer,
            worker.tx_producer,
            worker.topic_producer,
            worker.delayed_producer,
            worker.client_ack_consumer,
            worker.tx_consumer,
            worker.durable_consumer,
            worker.delayed_consumer,
        )
    ]
    log("ready", pid=os.getpid())
    for t in threads:
        t.start()
    time.sleep(LIFETIME)
    log("timeout")
    os._exit(3)


if __name__ == "__main__":
    main()
