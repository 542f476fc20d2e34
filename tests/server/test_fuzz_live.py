"""A live-server fuzz: many connections send random bytes, mutated frames and well-formed
requests with random values; afterwards the server is alive, logged no internal error, a
clean client still completes Connect / CreateSession / Send / Ok, and SIGTERM stops it with
exit code 0.

ARCHITECTURE "every input from the network is hostile until parsed". The run lasts
``TERNMQ_FUZZ_SECONDS`` if set, else 60 seconds under CI (``CI=true``, the issue's full run)
and 5 seconds otherwise. The random choices come from ``random.Random(seed)``; the seed is
printed on failure and can be fixed with ``TERNMQ_FUZZ_SEED``.
"""

from __future__ import annotations

import random
import socket
import struct
import time
from typing import Any

from _live_fuzz import assert_serving, fuzz_seconds, fuzz_seed, run_fuzz
from ternmq.client import ConnectionFactory
from ternmq.destination import Queue
from ternmq.message import TextMessage
from ternmq.protocol import commands as c
from ternmq.protocol.frames import PREAMBLE, encode

from ._support import HOST, text_message, works
from .conftest import Serve

SECONDS = fuzz_seconds(ci=60, local=5)
SEED = fuzz_seed()
WORKERS = 12
CONFIG = """
[broker]
max_message_bytes = 32768
[limits]
max_frame = 65536
handshake_timeout = 1.0
heartbeat = 2.0
max_sessions_per_connection = 8
max_consumers_per_connection = 16
"""

DESTS = [
    "queue://fz.a",
    "queue://fz.b",
    "topic://fz.t",
    "temp-queue://9.1",
    "queue://",
    "nonsense",
    "",
    "queue://" + "x" * 300,
]
SELECTORS = [None, "", "a = 1", "color IN ('r','g')", "((", "JMSPriority > 3 AND x LIKE 'a%'"]
NAMES = [None, "", "sub", "s" * 300, "\x00"]


def _ints(rnd: random.Random) -> int:
    return rnd.choice([0, 1, 2, 3, -1, 7, 2**31, 2**63 - 1, -(2**63), rnd.randrange(100)])


def _body(rnd: random.Random) -> bytes:
    if rnd.random() < 0.7:
        return text_message("f" * rnd.randrange(0, 200))
    return rnd.randbytes(rnd.randrange(0, 100))


def _request(rnd: random.Random) -> Any:
    i = lambda: _ints(rnd)  # noqa: E731
    small = lambda: rnd.randrange(0, 4)  # noqa: E731
    ids = lambda: [rnd.randrange(0, 6) for _ in range(rnd.randrange(0, 4))]  # noqa: E731
    dest = lambda: rnd.choice(DESTS)  # noqa: E731
    makers = [
        lambda: c.CreateSession(corr=i(), session_id=small(), transacted=rnd.random() < 0.4),
        lambda: c.CloseSession(corr=i(), session_id=small(), delivered=ids()),
        lambda: c.CreateConsumer(
            corr=i(),
            session_id=small(),
            consumer_id=small(),
            destination=dest(),
            selector=rnd.choice(SELECTORS),
            no_local=rnd.random() < 0.3,
            kind=rnd.choice(["none", "shared", "durable", "shared_durable"]),
            subscription=rnd.choice(NAMES),
            prefetch=rnd.choice([0, 1, 10, -5, 2**31]),
            credit=rnd.choice([None, 0, 1, -1]),
        ),
        lambda: c.CloseConsumer(corr=i(), consumer_id=small(), delivered=ids()),
        lambda: c.Credit(corr=i(), consumer_id=small(), messages=i()),
        lambda: c.Pull(corr=i(), consumer_id=small(), messages=i(), wait=rnd.random() < 0.5),
        lambda: c.Send(
            corr=i(),
            session_id=small(),
            destination=dest(),
            message=_body(rnd),
            persistent=rnd.random() < 0.5,
            priority=rnd.choice([0, 4, 9, 10, -1]),
            expiration=rnd.choice([0, 1, int(time.time() * 1000) + 50, 2**62]),
            delivery_time=rnd.choice([0, 0, int(time.time() * 1000) + 100, -1]),
            group_id=rnd.choice([None, "g1", ""]),
            group_seq=rnd.choice([0, 1, -1]),
        ),
        lambda: c.Ack(corr=i(), session_id=small(), delivery_ids=ids()),
        lambda: c.Expired(corr=i(), session_id=small(), delivery_ids=ids()),
        lambda: c.Release(corr=i(), session_id=small(), delivered=ids()),
        lambda: c.Commit(corr=i(), session_id=small(), delivered=ids()),
        lambda: c.Rollback(corr=i(), session_id=small(), delivered=ids()),
        lambda: c.Browse(
            corr=i(),
            destination=dest(),
            selector=rnd.choice(SELECTORS),
            after=rnd.choice([None, (0, 0), (-9, 5), (2**62, -(2**62))]),
            limit=rnd.choice([0, 1, 100, -1, 2**40]),
        ),
        lambda: c.CreateTemporary(corr=i(), topic=rnd.random() < 0.5),
        lambda: c.DeleteTemporary(corr=i(), destination=dest()),
        lambda: c.Unsubscribe(corr=i(), session_id=small(), name=rnd.choice(NAMES) or "sub"),
        lambda: c.SetClientId(corr=i(), client_id=rnd.choice(["fz", "", "x" * 300, "\x01"])),
        lambda: c.Disconnect(corr=i()) if rnd.random() < 0.2 else c.Ok(corr=i()),
    ]
    return rnd.choice(makers)()


def _mutate(rnd: random.Random, frame: bytes) -> bytes:
    data = bytearray(frame)
    mode = rnd.randrange(4)
    if mode == 0:
        for _ in range(rnd.randrange(1, 4)):
            data[rnd.randrange(4, len(data)) if len(data) > 4 else 0] = rnd.randrange(256)
    elif mode == 1:
        data[:4] = struct.pack(">I", rnd.choice([0, 1, len(data), 70_000, 2**32 - 1]))
    elif mode == 2:
        del data[rnd.randrange(len(data)) :]
    else:
        data += rnd.randbytes(rnd.randrange(1, 20))
    return bytes(data)


def _drain(sock: socket.socket) -> bool:
    """Read what is waiting; False once the server closed the socket."""
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return False
    except (BlockingIOError, TimeoutError):
        return True
    except OSError:
        return False


def _one_connection(rnd: random.Random, port: int) -> None:
    with socket.create_connection((HOST, port), timeout=5) as sock:
        sock.settimeout(0.002)
        kind = rnd.random()
        try:
            if kind < 0.1:
                sock.sendall(rnd.randbytes(rnd.randrange(1, 64)))
                return
            if kind < 0.15:
                sock.sendall(PREAMBLE[: rnd.randrange(1, 8)])
                time.sleep(rnd.random() * 0.05)
                return
            sock.sendall(PREAMBLE)
            if kind < 0.25:
                sock.sendall(rnd.randbytes(rnd.randrange(1, 200)))
                _drain(sock)
                return
            sock.sendall(encode(c.Connect(corr=1, client_id=rnd.choice([None, "fz", "fz2"]))))
            for _ in range(rnd.randrange(1, 40)):
                req = _request(rnd)
                if isinstance(req, c.Ok) and rnd.random() < 0.9:
                    continue  # a reply from a client ends the connection: keep it rare
                frame = encode(req)
                if rnd.random() < 0.15:
                    frame = _mutate(rnd, frame)
                sock.sendall(frame)
                if not _drain(sock):
                    return
        except OSError:
            return  # the server closed on us: expected for hostile input


def test_live_fuzz_many_connections(serve: Serve) -> None:
    server = serve(CONFIG)
    run = run_fuzz(_one_connection, server.port, seconds=SECONDS, seed=SEED, workers=WORKERS)
    where = run.where
    assert_serving(server, where)
    works(server.port, "queue://after-fuzz")  # raw frames: Connect, CreateSession, Send -> Ok
    # and the real client: a clean connection sends a message and receives it back
    with ConnectionFactory(f"tcp://{HOST}:{server.port}").create_connection() as conn:
        conn.start()
        session = conn.create_session()
        queue = Queue("after-fuzz-client")
        session.create_producer(queue).send(session.create_text_message("clean"))
        got = session.create_consumer(queue).receive(10.0)
    assert isinstance(got, TextMessage) and got.text == "clean", f"{where}: got {got!r}"
    assert_serving(server, where)
    assert server.stop(timeout=20) == 0, where
