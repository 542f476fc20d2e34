"""A live fuzz of the STOMP listener: connections send random bytes, mutated frames and
well-formed frames with random headers; afterwards the server is alive, logged no internal
error, and a clean STOMP client still sends and receives.

The run lasts ``TERNMQ_FUZZ_SECONDS`` if set, else 60 seconds under CI (``CI=true``, the
issue's full run) and 15 otherwise. The random choices come from ``random.Random(seed)``; the
seed is printed on failure and can be fixed with ``TERNMQ_FUZZ_SEED``.
"""

from __future__ import annotations

import pathlib
import random
import socket
import time

import pytest

from _live_fuzz import assert_serving, fuzz_seconds, fuzz_seed, run_fuzz
from ternmq.protocol.stomp import CLIENT_COMMANDS, encode_frame

from ._support import HOST, StompRaw, start_server

SECONDS = fuzz_seconds(ci=60, local=15)
SEED = fuzz_seed()
WORKERS = 8
CONFIG = """
[limits]
handshake_timeout = 1.0
frame_timeout = 1.0
stomp_max_frame = 32768
stomp_max_body = 16384
stomp_max_headers = 16
stomp_max_header_length = 512
"""
COMMANDS = [*sorted(CLIENT_COMMANDS), "MESSAGE", "send", ""]  # and non-client ones
HEADERS = [
    "destination",
    "id",
    "ack",
    "receipt",
    "transaction",
    "selector",
    "persistent",
    "priority",
    "expires",
    "reply-to",
    "content-length",
    "content-type",
    "amq-msg-type",
    "AMQ_SCHEDULED_DELAY",
    "durable-subscription-name",
    "shared-subscription-name",
    "activemq.prefetchSize",
    "JMSXGroupSeq",
    "x",
]
VALUES = [
    "/queue/fz.a",
    "/topic/fz.t",
    "/temp-queue/t",
    "/temp-topic/u",
    "/queue/",
    "/bogus/x",
    "",
    "auto",
    "client",
    "client-individual",
    "true",
    "-1",
    "99999999999999999999",
    "0",
    "5",
    "a = 1",
    "((",
    "text/plain;charset=nope",
    "x" * 600,
    "\\c\\n",
]


def _frame(rng: random.Random) -> bytes:
    headers = [(rng.choice(HEADERS), rng.choice(VALUES)) for _ in range(rng.randrange(0, 20))]
    body = rng.randbytes(rng.choice([0, 1, 10, 100, 20000]))
    try:
        data = encode_frame(rng.choice(COMMANDS) or "X", headers, body, content_length=False)
    except Exception:
        data = b"SEND\n\n\x00"
    if rng.random() < 0.3:  # mutate
        b = bytearray(data)
        for _ in range(rng.randrange(1, 5)):
            if b:
                b[rng.randrange(len(b))] = rng.randrange(256)
        data = bytes(b)
    if rng.random() < 0.1:
        data = data[: rng.randrange(len(data) + 1)]  # truncated
    return data


def _connection(rng: random.Random, port: int) -> None:
    try:
        sock = socket.create_connection((HOST, port), timeout=2)
    except OSError:
        time.sleep(0.05)
        return
    try:
        sock.settimeout(0.2)
        if rng.random() < 0.8:
            sock.sendall(b"CONNECT\naccept-version:1.0,1.1,1.2\n\n\x00")
        if rng.random() < 0.1:
            sock.sendall(rng.randbytes(rng.randrange(1, 4000)))
        for _ in range(rng.randrange(1, 30)):
            sock.sendall(_frame(rng))
            try:
                if not sock.recv(65536):
                    break
            except (TimeoutError, BlockingIOError):
                pass
    except OSError:
        pass
    finally:
        sock.close()


@pytest.mark.slow
@pytest.mark.timeout(SECONDS + 120)  # the run, plus a server start and stop on a busy machine
def test_random_frames_leave_the_server_serving(tmp_path: pathlib.Path) -> None:
    server, port = start_server(tmp_path, CONFIG)
    try:
        where = run_fuzz(_connection, port, seconds=SECONDS, seed=SEED, workers=WORKERS).where
        log = assert_serving(server, where)
        assert "event=protocol_error" in log  # the fuzz reached the gateway
        with StompRaw(port) as cl:
            cl.connect()
            cl.call("SUBSCRIBE", [("id", "s"), ("destination", "/queue/fz.clean")])
            cl.call("SEND", [("destination", "/queue/fz.clean")], b"clean")
            assert cl.recv().body == b"clean"
        assert server.stop() == 0
    finally:
        server.kill()
