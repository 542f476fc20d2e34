"""Issue 17 items 1-3 against a real ``ternmq serve``: what a peer that never logs in may cost.

Every loop is bounded in count and time; socket counts stay far below ``ulimit -n``. A second
address is 127.0.0.2 (the loopback range: Linux routes it without configuration).
"""

from __future__ import annotations

import contextlib
import resource
import socket
import struct
import time

import pytest

from ternmq.protocol import commands as c
from ternmq.protocol.frames import PREAMBLE, encode
from ternmq.server.security import hash_password

from ._support import HOST, Raw
from .conftest import Serve

OTHER = "127.0.0.2"


def _fd_budget() -> int:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return soft


def _raw_from(port: int, source: str, timeout: float = 10.0) -> Raw:
    """A Raw client whose socket is bound to ``source``."""
    raw = Raw(port)  # sets the decoder and counters; its socket is replaced
    raw.sock.close()
    raw.sock = socket.create_connection((HOST, port), timeout=timeout, source_address=(source, 0))
    return raw


def _open_sockets(port: int, n: int, payload: bytes, deadline: float) -> list[socket.socket]:
    """Up to ``n`` sockets that each sent ``payload`` (a refused one is closed and counted)."""
    socks: list[socket.socket] = []
    for _ in range(n):
        if time.monotonic() > deadline:
            break
        s = socket.socket()
        s.settimeout(5.0)
        try:
            s.connect((HOST, port))
            s.sendall(payload)
        except OSError:
            s.close()
            continue
        socks.append(s)
    return socks


def _close_all(socks: list[socket.socket]) -> None:
    for s in socks:
        with contextlib.suppress(OSError):
            s.close()


def _timed_connect(port: int, source: str, user: str | None = None, pw: str | None = None) -> float:
    t0 = time.monotonic()
    with _raw_from(port, source) as raw:
        reply = raw.connect(user, pw)
    assert isinstance(reply, c.Connected), reply
    return time.monotonic() - t0


@pytest.mark.parametrize(
    ("n", "limits"),
    [
        # Pending limits out of the way: only the authenticated count against max_connections.
        (1000, "max_pending = 5000\nmax_pending_per_address = 5000\n"),
        # The defaults: sockets past max_pending_per_address are closed at once.
        (300, ""),
    ],
)
def test_preamble_only_sockets_do_not_lock_out_a_client(serve: Serve, n: int, limits: str) -> None:
    """Item 2: ``n`` sockets that only send the preamble; a client still connects in 2 s."""
    assert 2 * n + 100 < _fd_budget()
    server = serve("[limits]\nmax_connections = 1000\n" + limits)
    socks = _open_sockets(server.port, n, PREAMBLE, time.monotonic() + 60)
    try:
        time.sleep(0.5)  # let the server read every preamble
        took = _timed_connect(server.port, OTHER)
        print(f"{len(socks)} preamble-only sockets: a client connected in {took:.3f} s")
        assert took < 2.0
        if limits:  # the same address too: only pending limits could refuse it
            assert _timed_connect(server.port, HOST) < 2.0
        else:
            server.wait_log(r"event=too_many_pending .*limit=max_pending_per_address")
    finally:
        _close_all(socks)


def test_wrong_password_flood_does_not_delay_a_login(serve: Serve) -> None:
    """Item 2: 300 wrong-password Connects from one address; a login from another address
    is answered within 3 s, the flooding address is locked out, and both are logged."""
    users = f'[users.alice]\npassword = "{hash_password("s3cret")}"\n'
    server = serve("[limits]\nmax_pending_per_address = 400\n" + users)
    bad = PREAMBLE + encode(c.Connect(corr=1, user="alice", password="wrong"))
    socks = _open_sockets(server.port, 300, bad, time.monotonic() + 30)
    try:
        assert len(socks) == 300
        took = _timed_connect(server.port, OTHER, "alice", "s3cret")
        print(f"300 wrong-password Connects: a login from {OTHER} took {took:.3f} s")
        assert took < 3.0, took
        server.wait_log(r"event=auth_failed peer=127\.0\.0\.1:\d+ user=alice")
        server.wait_log(r"event=login_throttled .*address=127\.0\.0\.1")
        # A locked-out address is refused at once, without a password check.
        t0 = time.monotonic()
        with Raw(server.port) as raw:
            reply = raw.connect("alice", "s3cret")
        assert isinstance(reply, c.Error) and reply.kind == "JMSSecurityException"
        assert "too many failed logins" in reply.message
        assert time.monotonic() - t0 < 2.0
    finally:
        _close_all(socks)


def test_a_byte_per_interval_frame_is_cut(serve: Serve) -> None:
    """Item 3: after a valid Connect, a 4,000-octet frame sent a byte every 0.2 s is cut
    within the read deadline (frame_timeout 1 s, plus the sweep)."""
    server = serve("[limits]\nframe_timeout = 1.0\n")
    with Raw(server.port) as raw:
        assert isinstance(raw.connect(), c.Connected)
        t0 = time.monotonic()
        raw.send_bytes(struct.pack(">I", 4000))
        cut = None
        for _ in range(50):  # at most 10 s
            try:
                raw.send_bytes(b"\x00")
            except OSError:
                cut = time.monotonic() - t0
                break
            raw.sock.settimeout(0.2)
            try:
                if raw.sock.recv(65536) == b"":
                    cut = time.monotonic() - t0
                    break
            except TimeoutError:
                pass
            except OSError:
                cut = time.monotonic() - t0
                break
        print(f"slow frame cut after {cut} s (frame_timeout 1 s)")
        assert cut is not None and cut < 2.5, cut
    server.wait_log(r"event=frame_timeout ")


def _rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_unauthenticated_large_frames_cost_no_memory(serve: Serve) -> None:
    """Item 1: three rounds of 60 pre-auth sockets, each a 16 MiB length prefix and 1 MiB of
    it, leave the server's RSS within 50 MB of the start."""
    server = serve()
    with Raw(server.port) as raw:  # warm up: imports and first allocations done
        assert isinstance(raw.connect(), c.Connected)
    start = _rss_kb(server.proc.pid)
    chunk = b"\x00" * (1024 * 1024)
    for _ in range(3):
        socks = _open_sockets(
            server.port, 60, PREAMBLE + struct.pack(">I", 16 * 1024 * 1024), time.monotonic() + 30
        )
        for s in socks:
            with contextlib.suppress(OSError):
                s.settimeout(0.5)
                s.sendall(chunk)
        _close_all(socks)
    time.sleep(0.5)
    grown_mb = (_rss_kb(server.proc.pid) - start) / 1024
    print(f"RSS {start / 1024:.1f} MB -> +{grown_mb:.1f} MB after 3 x 60 pre-auth 16 MiB frames")
    assert grown_mb < 50, grown_mb
    server.wait_log(r"event=protocol_error .*exceeds max_frame \(65536\)")
    with Raw(server.port) as raw:  # still serving
        assert isinstance(raw.connect(), c.Connected)


def test_a_connect_still_queued_at_the_handshake_deadline_is_logged_as_such(serve: Serve) -> None:
    """Item 2: Connects whose password check waits behind the address's others when the
    handshake timeout hits are logged as queued, not as "no Connect"."""
    users = f'[users.alice]\npassword = "{hash_password("s3cret")}"\n'
    server = serve(
        "[limits]\nhandshake_timeout = 0.5\nlogin_failures = 0\nauth_checks_per_address = 1\n"
        + users
    )
    bad = PREAMBLE + encode(c.Connect(corr=1, user="alice", password="wrong"))
    socks = _open_sockets(server.port, 60, bad, time.monotonic() + 30)
    try:
        line = server.wait_log(r"event=handshake_timeout .*password check still queued")
        assert "no Connect" not in line
    finally:
        _close_all(socks)
