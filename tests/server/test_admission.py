"""Sans-IO tests of the pre-auth budget: the frame read deadline and handshake frame limit of
``NativeServerConnection``, and ``Admission`` (pending sockets, failed logins, check queues)."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ternmq.protocol import commands as c
from ternmq.protocol.frames import PREAMBLE, encode
from ternmq.protocol.native_connection import (
    NativeServerConnection,
    ProtocolViolation,
    State,
    Timeout,
    error_frame,
)
from ternmq.server.admission import LOG_INTERVAL, Admission, PasswordCheck
from ternmq.server.config import Limits

FRAME_S = 2.0


def new(frame_timeout: float = FRAME_S) -> NativeServerConnection:
    return NativeServerConnection(
        0.0,
        max_frame=1 << 20,
        heartbeat=100.0,
        handshake_timeout=50.0,
        max_handshake_frame=1024,
        frame_timeout=frame_timeout,
    )


def opened() -> NativeServerConnection:
    conn = new()
    conn.receive_data(PREAMBLE + encode(c.Connect(corr=1)), 0.0)
    conn.accept()
    return conn


# ---- the read deadline ----------------------------------------------------------------------
def test_a_started_frame_must_complete_within_frame_timeout() -> None:
    conn = opened()
    frame = encode(c.CreateSession(corr=2, session_id=1))
    assert conn.receive_requests(frame[:3], 10.0) == []
    assert conn.frame_started == 10.0
    for t in (10.5, 11.0, 11.5):  # a byte now and then does not move the start
        conn.receive_requests(b"", t)
        assert conn.check_timers(t, t) is None
    assert conn.check_timers(12.0, 12.0) is Timeout.FRAME
    problem, reply = conn.frame_expired(12.0)
    assert "frame_timeout 2.0 s" in problem and reply == error_frame(problem)


def test_a_completed_frame_clears_the_deadline_and_a_new_partial_restarts_it() -> None:
    conn = opened()
    a, b = (
        encode(c.CreateSession(corr=2, session_id=1)),
        encode(c.CreateSession(corr=3, session_id=1)),
    )
    conn.receive_requests(a[:2], 1.0)
    assert conn.receive_requests(a[2:] + b[:2], 2.5) == [c.CreateSession(corr=2, session_id=1)]
    assert conn.frame_started == 2.5  # b's start, not a's
    assert conn.check_timers(4.0, 4.0) is None
    assert conn.receive_requests(b[2:], 4.0) == [c.CreateSession(corr=3, session_id=1)]
    assert conn.frame_started is None
    assert conn.check_timers(100.0, 100.0) is None


def test_the_read_deadline_holds_before_authentication_too() -> None:
    conn = new()
    conn.receive_data(PREAMBLE + b"\x00\x00", 1.0)
    assert conn.state is State.CONNECT
    assert conn.check_timers(3.0, 0.0) is Timeout.FRAME


def test_no_deadline_when_frame_timeout_is_zero() -> None:
    conn = new(frame_timeout=0.0)
    conn.receive_data(PREAMBLE + b"\x00\x00", 1.0)
    assert conn.check_timers(40.0, 0.0) is None


@settings(max_examples=200, deadline=None)
@given(cuts=st.lists(st.integers(min_value=0, max_value=40), max_size=8))
def test_frame_started_is_set_iff_the_decoder_holds_a_partial_frame(cuts: list[int]) -> None:
    conn = opened()
    stream = b"".join(encode(c.CreateSession(corr=i, session_id=1)) for i in range(2, 6))
    points = sorted({min(p, len(stream)) for p in cuts} | {len(stream)})
    pos = 0
    for i, p in enumerate(points):
        conn.receive_requests(stream[pos:p], float(i))
        pos = p
        assert (conn.frame_started is not None) == (conn._decoder.buffered > 0)
    assert conn.frame_started is None


# ---- the handshake frame limit ----------------------------------------------------------------
def test_before_accept_a_frame_is_held_to_max_handshake_frame() -> None:
    conn = new()
    with pytest.raises(ProtocolViolation, match=r"exceeds max_frame \(1024\)"):
        conn.receive_data(PREAMBLE + struct.pack(">I", 16 << 20), 0.0)


def test_after_accept_max_frame_applies() -> None:
    conn = opened()
    big = c.Send(corr=2, session_id=1, destination="queue://q", message=b"x" * 4000)
    assert conn.receive_requests(encode(big), 1.0) == [big]


# ---- Admission ----------------------------------------------------------------------------------
def test_pending_sockets_per_address_and_in_all() -> None:
    adm = Admission(Limits(max_pending=3, max_pending_per_address=2))
    assert adm.admit("a") is None and adm.admit("a") is None
    assert adm.admit("a") == "max_pending_per_address"
    assert adm.admit("b") is None
    assert adm.admit("c") == "max_pending"
    adm.settled("a")
    assert adm.admit("c") is None
    assert adm.pending == 3


def test_failed_logins_lock_out_with_doubling_backoff() -> None:
    adm = Admission(
        Limits(login_failures=3, login_window=60, login_backoff=10, login_backoff_max=25)
    )
    now = 0.0
    for _ in range(2):
        assert adm.record("a", True, now) == 0.0
    assert adm.record("a", True, now) == 10.0
    assert adm.locked_for("a", 5.0) == 5.0
    assert adm.locked_for("b", 5.0) == 0.0
    assert adm.locked_for("a", 10.0) == 0.0
    for _ in range(2):
        adm.record("a", True, 11.0)
    assert adm.record("a", True, 11.0) == 20.0  # doubled
    for _ in range(3):
        last = adm.record("a", True, 32.0)
    assert last == 25.0  # capped
    assert adm.record("a", False, 60.0) == 0.0  # a success forgets the failures


def test_failures_outside_the_window_do_not_count() -> None:
    adm = Admission(Limits(login_failures=2, login_window=10))
    assert adm.record("a", True, 0.0) == 0.0
    assert adm.record("a", True, 11.0) == 0.0


def _check(address: str) -> PasswordCheck:
    return PasswordCheck(address, "u", "p", lambda _error: None)


def test_password_checks_queue_per_address() -> None:
    adm = Admission(Limits(auth_checks_per_address=2))
    a1, a2, a3, a4 = (_check("a") for _ in range(4))
    assert adm.start(a1) and adm.start(a2)
    assert not adm.start(a3) and a3.queued
    assert not adm.start(a4)
    assert adm.start(_check("b"))  # another address is not behind a's queue
    a3.cancelled = True
    assert adm.finished("a") is a4 and not a4.queued  # the cancelled one is skipped
    assert adm.finished("a") is None
    assert adm.finished("a") is None
    assert adm.start(_check("a")) and adm.start(_check("a"))


def test_repeated_log_lines_are_rate_limited() -> None:
    adm = Admission(Limits())
    assert adm.should_log("e", "a", 0.0) == 0
    assert adm.should_log("e", "a", 1.0) is None
    assert adm.should_log("e", "a", 2.0) is None
    assert adm.should_log("e", "b", 2.0) == 0
    assert adm.should_log("e", "a", LOG_INTERVAL + 0.5) == 2
