"""Crash test of duplicate detection (catalog PSF-09, REL-06): SIGKILL a ``ternmq serve``
process while a producer sends PERSISTENT messages carrying ``JMS_TernMQ_DuplicateID``, start
a new server on the same data dir, and resend from the first send whose outcome the producer
does not know (the one that raised, and everything after): what an application, or an
automatic reconnect, does with an in-doubt send. The queue must then hold every message
exactly once, in order: no loss (confirmed sends survived) and no duplicate (the id of a send
that took effect before the crash was stored with it, in the same group commit).

Several producers (threads, one connection each, own queue) make the broker's group commit
join their batches, so the kill lands between and inside multi-batch commits.
"""

from __future__ import annotations

import os
import pathlib
import random
import threading
import time

import pytest

from server._support import ServerProcess
from ternmq.client import ConnectionFactory
from ternmq.destination import Queue
from ternmq.errors import JMSException

DUP = "JMS_TernMQ_DuplicateID"
PRODUCERS = 3
PER_PRODUCER = 800
KILLS = 3
SEED = int(os.environ.get("TERNMQ_CRASH_SEED", random.SystemRandom().randrange(2**31)))


def _produce(url: str, q: Queue, first: int, confirmed: list[int], stop: threading.Event) -> None:
    """Send ``m{i}`` with id ``q:i`` for i from ``first``; append each i whose send returned;
    end at the first failure (the broker died) or when all are sent."""
    try:
        with ConnectionFactory(url).create_connection() as conn:
            s = conn.create_session()
            p = s.create_producer(q)
            for i in range(first, PER_PRODUCER):
                if stop.is_set():
                    return
                m = s.create_text_message(f"m{i}")
                m.set_string_property(DUP, f"{q.queue_name}:{i}")
                p.send(m)
                confirmed.append(i)
    except JMSException:
        return


def _drain(url: str, q: Queue) -> list[str | None]:
    with ConnectionFactory(url).create_connection() as conn:
        conn.start()
        c = conn.create_session().create_consumer(q)
        out = []
        while (m := c.receive(0.5)) is not None:
            out.append(m.text)  # type: ignore[attr-defined]
        return out


@pytest.mark.parametrize("run", range(KILLS))
def test_psf_09_sigkill_then_resend_in_doubt_gives_each_message_once(
    tmp_path: pathlib.Path, run: int
) -> None:
    """PSF-09, REL-06: after a SIGKILL of ``ternmq serve`` at a random moment, resending
    every send not confirmed (its id unchanged) leaves each message on its queue once."""
    rnd = random.Random(SEED + run)
    data_dir = tmp_path / "data"
    queues = [Queue(f"dd{k}") for k in range(PRODUCERS)]
    confirmed: list[list[int]] = [[] for _ in queues]
    server = ServerProcess(data_dir, None, tmp_path)
    try:
        url = f"tcp://127.0.0.1:{server.port}"
        stop = threading.Event()
        threads = [
            threading.Thread(target=_produce, args=(url, q, 0, done, stop), daemon=True)
            for q, done in zip(queues, confirmed)
        ]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 20
        while min(len(d) for d in confirmed) < 20 and time.monotonic() < deadline:
            time.sleep(0.005)
        time.sleep(rnd.uniform(0.0, 0.3))
        server.kill()
        stop.set()
        for t in threads:
            t.join(20)
            assert not t.is_alive()
        print("confirmed before the kill:", [len(d) for d in confirmed])
        assert any(len(d) < PER_PRODUCER for d in confirmed), "the kill came after the sends"
    finally:
        server.kill()
    server = ServerProcess(data_dir, None, tmp_path)
    try:
        url = f"tcp://127.0.0.1:{server.port}"
        for q, done in zip(queues, confirmed):
            resend_from = len(done)  # sends are synchronous: confirmed is a prefix
            assert done == list(range(resend_from)), f"seed {SEED + run}"
            # the application resends from the in-doubt send on (plus one confirmed send,
            # as a retry that cannot tell where it stopped would)
            _produce(url, q, max(0, resend_from - 1), [], threading.Event())
        for q in queues:
            assert _drain(url, q) == [f"m{i}" for i in range(PER_PRODUCER)], f"seed {SEED + run}"
    finally:
        server.kill()
