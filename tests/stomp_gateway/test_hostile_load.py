"""STOMP clients pushing past their limits at 1,000 frames per second cannot grow the
server's memory past its configured bound, and a clean client is served meanwhile; the
per-connection STOMP bounds (temporary destinations, prefetch, receipts) each say what to do.

The load runs ``LOAD_SECONDS`` (12 s) against a real ``ternmq serve``; the server's resident
memory (``/proc/PID/status`` VmRSS) is sampled throughout. The bound, over the RSS after a
warm-up: ``max_memory_bytes`` (32 MiB of held messages, each counted with 512 bytes of
overhead) + the never-reading consumer's prefetch worth of MESSAGE frames in its socket buffer
(``stomp_max_prefetch`` 2,000 x ~1.2 KB) + 4 MiB of one blocked producer's pending requests +
the allocator's slack: ``RSS_BOUND_MB`` = 64 MB. (Measured: +34 to +40 MB at the peak.)

The clean client's queue has ``full_policy = "fail"``: a send to a queue that may block
waits behind every send blocked anywhere in the broker (see
``test_a_blocked_send_does_not_stall_sends_to_other_queues``).
"""

from __future__ import annotations

import contextlib
import pathlib
import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from server.test_hardening import _rss_kb
from ternmq.protocol.stomp import encode_frame
from ternmq.server.config import parse_config

from ._support import HOST, StompRaw, start_server

LOAD_SECONDS = 12.0
RATE = 1000  # frames per second, per attacking client at most
RSS_BOUND_MB = 64
BODY = b"x" * 1000
CONFIG = """
[broker]
max_memory_bytes = 33554432
[destinations."queue://hl.clean"]
full_policy = "fail"
[destinations."queue://hl.fail"]
max_bytes = 32768
full_policy = "fail"
[destinations."queue://hl.block"]
max_bytes = 32768
full_policy = "block"
[limits]
stomp_max_body = 4096
stomp_max_frame = 8192
stomp_max_prefetch = 2000
max_sessions_per_connection = 50
max_temporaries_per_connection = 20
stomp_max_transaction_bytes = 1048576
"""
CONNECT = encode_frame("CONNECT", [("accept-version", "1.2"), ("host", "localhost")])

Script = Callable[[int], Iterator[bytes]]


def _send(dest: str, body: bytes = BODY, *extra: tuple[str, str]) -> bytes:
    return encode_frame("SEND", [("destination", dest), *extra], body, version="1.2")


def _full_queue(policy: str) -> Script:
    def script(n: int) -> Iterator[bytes]:
        while True:
            yield _send(f"/queue/hl.{policy}")

    return script


def _oversized(n: int) -> Iterator[bytes]:
    yield _send("/queue/hl.big", b"y" * 5000)  # past stomp_max_body: ERROR, then closed


def _subscriptions(n: int) -> Iterator[bytes]:
    for i in range(10_000):  # past max_sessions_per_connection: ERROR, then closed
        yield encode_frame("SUBSCRIBE", [("id", f"s{i}"), ("destination", f"/queue/hl.sub{i}")])


def _temporaries(n: int) -> Iterator[bytes]:
    for i in range(10_000):  # past max_temporaries_per_connection: ERROR, then closed
        yield _send(f"/temp-queue/t{i}", b"t")


def _uncommitted(n: int) -> Iterator[bytes]:
    yield encode_frame("BEGIN", [("transaction", "t")])
    while True:  # past stomp_max_transaction_bytes: ERROR, then closed
        yield _send("/queue/hl.tx", BODY, ("transaction", "t"))


def _producer(n: int) -> Iterator[bytes]:
    while True:
        yield _send("/queue/hl.flood", BODY, ("receipt", f"r{n}"), ("persistent", "true"))


class _Attacker(threading.Thread):
    """One hostile client: CONNECT, then ``script``'s frames at most ``RATE`` per second,
    connecting again whenever the server closes the socket; never fails the test itself."""

    def __init__(self, port: int, script: Script, deadline: float) -> None:
        super().__init__(daemon=True)
        self.port, self.script, self.deadline = port, script, deadline
        self.frames = 0
        self.connections = 0

    def run(self) -> None:
        n = 0
        while time.monotonic() < self.deadline:
            try:
                sock = socket.create_connection((HOST, self.port), timeout=1)
            except OSError:
                time.sleep(0.01)
                continue
            self.connections += 1
            n += 1
            with sock:
                self._session(sock, self.script(n))

    def _session(self, sock: socket.socket, frames: Iterator[bytes]) -> None:
        sock.settimeout(0.5)
        try:
            sock.sendall(CONNECT)
            for frame in frames:
                now = time.monotonic()
                if now >= self.deadline:
                    return
                due = self.deadline - LOAD_SECONDS + self.frames / RATE
                if due > now:
                    time.sleep(due - now)
                sock.sendall(frame)
                self.frames += 1
                sock.setblocking(False)
                try:
                    if sock.recv(65536) == b"":
                        return  # closed after its ERROR frame
                except BlockingIOError:
                    pass
                finally:
                    sock.settimeout(0.5)
        except OSError:
            return  # reset, or the server stopped reading (blocked): connect again


def _sink(port: int) -> socket.socket:
    """A client-ack consumer of ``hl.flood`` with the largest prefetch that never reads."""
    sock = socket.create_connection((HOST, port), timeout=5)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.sendall(CONNECT)
    sock.sendall(
        encode_frame(
            "SUBSCRIBE",
            [
                ("id", "sink"),
                ("destination", "/queue/hl.flood"),
                ("ack", "client"),
                ("activemq.prefetchSize", "2000"),
            ],
        )
    )
    return sock


@pytest.mark.slow
def test_hostile_clients_cannot_grow_memory_past_the_bound(tmp_path: pathlib.Path) -> None:
    server, port = start_server(tmp_path, CONFIG)
    try:
        pid = server.proc.pid
        with StompRaw(port) as warm:  # imports and first allocations done
            warm.connect()
            warm.call("SUBSCRIBE", [("id", "w"), ("destination", "/queue/hl.warm")])
            for _ in range(200):
                warm.send("SEND", [("destination", "/queue/hl.warm")], BODY)
            for _ in range(200):
                assert warm.recv().command == "MESSAGE"
        time.sleep(0.3)
        start = _rss_kb(pid)
        sink = _sink(port)
        deadline = time.monotonic() + LOAD_SECONDS
        scripts: dict[str, Script] = {
            "send to a full fail queue": _full_queue("fail"),
            "send to a full block queue": _full_queue("block"),
            "oversized frame": _oversized,
            "subscriptions": _subscriptions,
            "temporaries": _temporaries,
            "uncommitted transaction": _uncommitted,
            "producer for a consumer that never reads": _producer,
        }
        attackers = [_Attacker(port, s, deadline) for s in scripts.values()]
        for a in attackers:
            a.start()
        peak = start
        rounds = 0
        slowest = 0.0
        with StompRaw(port) as clean:
            clean.connect()
            clean.call("SUBSCRIBE", [("id", "c"), ("destination", "/queue/hl.clean")])
            while time.monotonic() < deadline:
                t0 = time.monotonic()
                body = f"clean {rounds}".encode()
                clean.call("SEND", [("destination", "/queue/hl.clean")], body)
                got = clean.recv()
                assert got.command == "MESSAGE" and got.body == body, got
                slowest = max(slowest, time.monotonic() - t0)
                rounds += 1
                peak = max(peak, _rss_kb(pid))
                time.sleep(0.1)
        for a in attackers:
            a.join(5)
        end = _rss_kb(pid)
        sink.close()
        sent = {name: (a.frames, a.connections) for name, a in zip(scripts, attackers, strict=True)}
        grown = (peak - start) / 1024
        print(
            f"RSS {start / 1024:.1f} MB, peak +{grown:.1f} MB, end +{(end - start) / 1024:.1f} MB"
            f" (bound {RSS_BOUND_MB} MB); clean round trips {rounds}, slowest {slowest:.3f} s;"
            f" frames, connections per attacker: {sent}"
        )
        assert grown < RSS_BOUND_MB, grown
        assert rounds >= LOAD_SECONDS, rounds  # at least one clean round trip a second
        assert all(a.frames >= RATE for a in attackers), sent
        log = server.log()
        assert "internal_error" not in log and "Traceback" not in log, log[-4000:]
        for reached in (
            "exceeds",
            "max_sessions_per_connection",
            "max_temporaries_per_connection",
            "stomp_max_transaction_bytes",
            "full",
        ):
            assert reached in log, reached
        assert server.proc.poll() is None
        assert server.stop() == 0
    finally:
        server.kill()


# ---- the per-connection STOMP bounds, one by one ------------------------------------------
@pytest.fixture(scope="module")
def port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    server, stomp_port = start_server(tmp_path_factory.mktemp("stomp-limits"), CONFIG)
    try:
        yield stomp_port
    finally:
        server.kill()


def _error_then_closed(cl: StompRaw) -> str:
    frames = cl.read_until_closed()
    errors = [f for f in frames if f.command == "ERROR"]
    assert len(errors) == 1, frames
    return errors[0].get("message") or ""


def test_temporary_destinations_past_the_limit_get_an_error(port: int) -> None:
    with StompRaw(port) as cl:
        cl.connect()
        for i in range(20):
            cl.call("SEND", [("destination", f"/temp-queue/t{i}")], b"t")
        cl.call("SEND", [("destination", "/temp-queue/t0")], b"again")  # reuse is fine
        cl.send("SEND", [("destination", "/temp-queue/t20")], b"one too many")
        message = _error_then_closed(cl)
    assert "max_temporaries_per_connection (20)" in message
    assert "delete one first, or reuse" in message


def test_prefetch_past_the_limit_gets_an_error(port: int) -> None:
    with StompRaw(port) as cl:
        cl.connect()
        cl.call(
            "SUBSCRIBE",
            [("id", "a"), ("destination", "/queue/hl.pf"), ("activemq.prefetchSize", "2000")],
        )
        cl.send(
            "SUBSCRIBE",
            [("id", "b"), ("destination", "/queue/hl.pf"), ("activemq.prefetchSize", "2001")],
        )
        message = _error_then_closed(cl)
    assert "stomp_max_prefetch (2000): ask for 2000 or fewer" in message


def test_sends_of_a_transaction_past_the_limit_get_an_error(port: int) -> None:
    with StompRaw(port) as cl, StompRaw(port) as watcher:
        watcher.connect()
        watcher.call("SUBSCRIBE", [("id", "w"), ("destination", "/queue/hl.txl")])
        cl.connect()
        cl.call("BEGIN", [("transaction", "t")])
        for _ in range(500):  # about 0.5 MiB of the 1 MiB
            cl.send("SEND", [("destination", "/queue/hl.txl"), ("transaction", "t")], BODY)
        cl.call("SEND", [("destination", "/queue/hl.txl"), ("transaction", "t")], BODY)
        for _ in range(600):
            cl.send("SEND", [("destination", "/queue/hl.txl"), ("transaction", "t")], BODY)
        message = _error_then_closed(cl)
        with pytest.raises(TimeoutError):  # rolled back: nothing was sent
            watcher.recv(0.5)
    assert "stomp_max_transaction_bytes (1048576) of sends: COMMIT more often" in message


def test_subscriptions_past_the_session_limit_get_an_error(port: int) -> None:
    with StompRaw(port) as cl:
        cl.connect()
        for i in range(49):  # the connection's sends take session 1
            cl.call("SUBSCRIBE", [("id", f"s{i}"), ("destination", f"/queue/hl.many{i}")])
        cl.send("SUBSCRIBE", [("id", "last"), ("destination", "/queue/hl.many")])
        message = _error_then_closed(cl)
    assert "max_sessions_per_connection (50)" in message and "close one first" in message


def test_receipts_waiting_on_a_blocked_send_stop_reading(tmp_path: pathlib.Path) -> None:
    """Receipted frames with no request of their own ride on the reply of the last request
    (here a send held by ``full_policy = block``) and count as requests awaiting replies:
    past ``max_inflight_requests`` the server stops reading; once the send goes through, its
    receipt comes and then theirs."""
    server, stomp_port = start_server(tmp_path, CONFIG + "max_inflight_requests = 64\n")
    try:
        with StompRaw(stomp_port) as drain, StompRaw(stomp_port) as cl:
            drain.connect()
            cl.connect()
            # An ack id released by UNSUBSCRIBE: ACKing it again is ignored, so such an ACK
            # asks for nothing but its receipt.
            cl.call("SEND", [("destination", "/queue/hl.stale")], b"s")
            cl.call(
                "SUBSCRIBE", [("id", "s"), ("destination", "/queue/hl.stale"), ("ack", "client")]
            )
            stale = cl.recv().get("ack")
            assert stale is not None
            cl.call("UNSUBSCRIBE", [("id", "s")])
            for _ in range(40):  # past hl.block's 32 KiB: the last sends wait for room
                cl.send("SEND", [("destination", "/queue/hl.block")], BODY)
            cl.send("SEND", [("destination", "/queue/hl.block"), ("receipt", "held")], BODY)
            ack = encode_frame("ACK", [("id", stale), ("receipt", "a" * 4000)], version="1.2")
            riders = 0
            cl.sock.settimeout(0.5)
            with contextlib.suppress(TimeoutError):
                for _ in range(100_000):  # 400 MB if the server kept reading
                    cl.sock.sendall(ack)
                    riders += 1
            print(f"{riders} receipted ACKs sent before the server stopped reading")
            assert riders < 100_000, "the server kept reading receipted frames"
            drain.call("SUBSCRIBE", [("id", "d"), ("destination", "/queue/hl.block")])
            assert cl.recv(10).get("receipt-id") == "held"
            assert cl.recv(10).get("receipt-id") == "a" * 4000
    finally:
        server.kill()


def test_a_blocked_send_does_not_stall_sends_to_other_queues(tmp_path: pathlib.Path) -> None:
    """A client whose sends wait for room in a full ``block`` queue does not make another
    client's send to another queue wait, even when that queue may block too (the default
    ``page`` policy, for a NON_PERSISTENT message): the engine holds blocked sends per
    session and destination, not in one arrival order."""
    server, stomp_port = start_server(tmp_path, CONFIG)
    try:
        with StompRaw(stomp_port) as hog, StompRaw(stomp_port, timeout=3) as other:
            hog.connect()
            other.connect()
            for _ in range(40):  # past hl.block's 32 KiB: the last sends wait for room
                hog.send("SEND", [("destination", "/queue/hl.block")], BODY)
            time.sleep(0.5)
            other.call("SEND", [("destination", "/queue/hl.elsewhere")], b"x")
    finally:
        server.kill()


# ---- the persistence default of STOMP sends -----------------------------------------------
def test_persistent_default_is_off_and_a_config_option() -> None:
    cfg = parse_config({})
    assert not cfg.stomp_persistent_default
    assert all(ls.stomp_persistent_default is False for ls in cfg.all_listeners())
    cfg = parse_config(
        {
            "stomp_persistent_default": True,
            "listeners": [{"port": 0}, {"port": 0, "stomp_persistent_default": False}],
        }
    )
    got = [ls.stomp_persistent_default for ls in cfg.all_listeners()]
    assert got == [True, False, True, True]  # the stomp_port and HTTP listeners follow the top
    with pytest.raises(ValueError, match="stomp_persistent_default"):
        parse_config({"listeners": [{"stomp_persistent_default": "yes"}]})


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ("", ["false", "true"]),
        ("stomp_persistent_default = true\n", ["true", "false"]),
    ],
)
def test_persistent_default_decides_a_send_without_the_header(
    tmp_path: pathlib.Path, config: str, expected: list[str]
) -> None:
    server, stomp_port = start_server(tmp_path, config)
    try:
        with StompRaw(stomp_port) as cl:
            cl.connect()
            cl.call("SUBSCRIBE", [("id", "s"), ("destination", "/queue/pd")])
            flipped = "false" if expected[0] == "true" else "true"
            cl.call("SEND", [("destination", "/queue/pd")], b"default")
            cl.call("SEND", [("destination", "/queue/pd"), ("persistent", flipped)], b"given")
            assert [cl.recv().get("persistent") for _ in range(2)] == expected
        # The main port's STOMP connections follow its listener's option too.
        with StompRaw(server.port) as cl:
            cl.connect()
            cl.call("SUBSCRIBE", [("id", "s"), ("destination", "/queue/pd2")])
            cl.call("SEND", [("destination", "/queue/pd2")], b"default")
            assert cl.recv().get("persistent") == expected[0]
    finally:
        server.kill()
