"""The STOMP server connection state machine: every state x input pair against the table,
version and heart-beat negotiation, held frames, limits before and after CONNECTED, timers
on a fake clock, and the CONNECTED and ERROR frames it writes."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ternmq._version import __version__
from ternmq.protocol.stomp import (
    CLIENT_COMMANDS,
    SERVER_COMMANDS,
    StompError,
    StompFrame,
    StompLimits,
    StompParser,
    encode_frame,
)
from ternmq.protocol.stomp_connection import (
    HEARTBEAT_EOL,
    OPEN_COMMANDS,
    TRANSITIONS,
    ConnectReceived,
    Input,
    ProtocolViolation,
    State,
    StompServerConnection,
    Timeout,
    input_of,
    negotiate_heartbeat,
    negotiate_version,
)
from ternmq.testing import FakeClock

CONNECT = b"CONNECT\naccept-version:1.0,1.1,1.2\nhost:h\nlogin:u\npasscode:p\n\n\x00"
LIMITS = StompLimits(
    max_frame=2000, max_headers=8, max_header_length=200, max_body=1000, max_handshake_frame=300
)


def new(now: float = 0.0, **kwargs: float) -> StompServerConnection:
    """A fresh connection with small limits."""
    args: dict[str, float] = {"handshake_timeout": 5.0, "frame_timeout": 3.0, **kwargs}
    return StompServerConnection(now, limits=LIMITS, **args)  # type: ignore[arg-type]


def reach(state: State, connect: bytes = CONNECT) -> StompServerConnection:
    """A connection in ``state``, brought there the regular way."""
    conn = new()
    if state is State.CLOSED:
        conn.close()
        return conn
    if state is State.CONNECT:
        return conn
    (event,) = conn.receive_data(connect, 0.0)
    assert isinstance(event, ConnectReceived)
    if state is State.AUTH:
        return conn
    conn.accept()
    assert conn.take_held() == []
    return conn


def frame(command: str, *headers: tuple[str, str], body: bytes = b"") -> bytes:
    """One encoded 1.2 frame."""
    return encode_frame(command, headers, body)


# ---- the table ------------------------------------------------------------------------------
_HEADERS = st.lists(
    st.tuples(
        st.text(st.characters(codec="utf-8"), min_size=1, max_size=12),
        st.text(st.characters(codec="utf-8"), max_size=12),
    ).filter(lambda kv: kv[0] not in ("content-length", "accept-version", "heart-beat")),
    max_size=4,
)


def _raw_ok(frame: StompFrame) -> bool:
    """Whether a CONNECTED frame's headers can be sent unescaped."""
    return not any(
        "\n" in k + v or ":" in k or k.endswith("\r") or v.endswith("\r") for k, v in frame.headers
    )


def _frames(commands: frozenset[str]) -> st.SearchStrategy[StompFrame]:
    return st.builds(
        StompFrame, st.sampled_from(sorted(commands)), _HEADERS, st.binary(max_size=40)
    )


@settings(max_examples=300, deadline=None)
@given(
    state=st.sampled_from(State),
    inp=st.sampled_from(Input),
    request=_frames(OPEN_COMMANDS),
    other=_frames(SERVER_COMMANDS).filter(lambda f: f.command != "CONNECTED" or _raw_ok(f)),
    beat=st.sampled_from([b"\n", b"\r\n"]),
)
def test_every_state_x_input_follows_the_table_or_raises(
    state: State, inp: Input, request: StompFrame, other: StompFrame, beat: bytes
) -> None:
    """Each (state, input) pair, with arbitrary frames of each kind: the table's next state,
    or a ProtocolViolation that leaves the state as it was."""
    conn = reach(state)
    data = {
        Input.CONNECT: CONNECT,
        Input.HEARTBEAT: beat,
        Input.REQUEST: encode_frame(request.command, request.headers, request.body),
        Input.NOT_REQUEST: encode_frame(other.command, other.headers, other.body),
    }
    calls = {Input.ACCEPTED: conn.accept, Input.REFUSED: conn.refuse, Input.CLOSE: conn.close}
    expected = TRANSITIONS.get((state, inp))
    if expected is None:
        with pytest.raises(ProtocolViolation) as info:
            if inp in data:
                conn.receive_data(data[inp], 1.0)
            else:
                calls[inp]()
        assert info.value.args[0]
        assert conn.state is state
        return
    if inp in data:
        events = conn.receive_data(data[inp], 1.0)
    else:
        calls[inp]()
        events = []
    assert conn.state is expected
    if inp is Input.CONNECT and state is State.CONNECT:
        assert [type(e) for e in events] == [ConnectReceived]
    elif inp is Input.REQUEST and state is State.OPEN:
        length = [("content-length", str(len(request.body)))] if request.body else []
        assert events == [StompFrame(request.command, request.headers + length, request.body)]
    else:
        assert events == []  # a heart-beat, or a frame held while authenticating


def test_the_table_covers_every_state_and_input() -> None:
    """Every state has a row for close (but CLOSED), and OPEN is reached only by accept."""
    assert {s for (s, i) in TRANSITIONS if i is Input.CLOSE} == set(State) - {State.CLOSED}
    assert [k for k, v in TRANSITIONS.items() if v is State.OPEN and k[0] is not State.OPEN] == [
        (State.AUTH, Input.ACCEPTED)
    ]
    assert not [
        k for k in itertools.product(State, Input) if k[0] is State.CLOSED and k in TRANSITIONS
    ]


def test_input_of_classifies_every_command() -> None:
    """CONNECT and STOMP open; other client commands are requests; server commands are not."""
    for command in CLIENT_COMMANDS | SERVER_COMMANDS:
        inp = input_of(StompFrame(command, []))
        if command in ("CONNECT", "STOMP"):
            assert inp is Input.CONNECT
        elif command in SERVER_COMMANDS:
            assert inp is Input.NOT_REQUEST
        else:
            assert inp is Input.REQUEST and command in OPEN_COMMANDS
    assert input_of(object()) is Input.HEARTBEAT


@pytest.mark.parametrize(
    ("state", "data", "problem"),
    [
        (State.CONNECT, frame("SEND", ("destination", "/queue/a")), "before CONNECT"),
        (State.CONNECT, frame("RECEIPT", ("receipt-id", "1")), "may not send RECEIPT"),
        (State.OPEN, CONNECT, "second CONNECT"),
        (State.OPEN, b"STOMP\naccept-version:1.2\n\n\x00", "second STOMP"),
        (State.OPEN, frame("ERROR"), "may not send ERROR"),
    ],
)
def test_protocol_errors_say_what_to_do(state: State, data: bytes, problem: str) -> None:
    """Out-of-order frames raise a violation naming the frame and what is expected."""
    conn = reach(state)
    with pytest.raises(ProtocolViolation, match=problem):
        conn.receive_data(data, 1.0)


def test_violation_carries_the_receipt_and_the_frames_before() -> None:
    """A bad frame in a batch: the good frames before it come in ``before``, and its receipt
    header is the ERROR's receipt-id."""
    conn = reach(State.OPEN)
    good = frame("BEGIN", ("transaction", "t"))
    bad = frame("MESSAGE", ("receipt", "r-9"))
    with pytest.raises(ProtocolViolation) as info:
        conn.receive_data(good + b"\n" + bad, 1.0)
    assert [f.command for f in info.value.before] == ["BEGIN"]  # type: ignore[union-attr]
    assert info.value.receipt_id == "r-9"


@pytest.mark.parametrize("state", [State.CONNECT, State.AUTH, State.CLOSED])
def test_receive_frames_needs_an_open_connection(state: State) -> None:
    """The hot path refuses a connection that is not OPEN."""
    with pytest.raises(ProtocolViolation, match="needs an open connection"):
        reach(state).receive_frames(b"\n", 0.0)
    if state is not State.CLOSED:
        with pytest.raises(ProtocolViolation, match="needs an open connection"):
            reach(state).take_held()


def test_open_heartbeats_refresh_and_are_dropped() -> None:
    """Heart-beat EOLs between OPEN frames note the peer alive and are not returned."""
    conn = reach(State.OPEN)
    sends = [frame("SEND", ("destination", "/queue/a"), ("n", str(i))) for i in range(3)]
    got = conn.receive_frames(b"\n".join(sends) + b"\r\n", 7.0)
    assert [f.get("n") for f in got] == ["0", "1", "2"]
    assert conn.last_heard == 7.0
    assert conn.receive_frames(b"\n\n", 8.0) == []
    assert conn.last_heard == 8.0


def test_closed_takes_no_input() -> None:
    """Any octet once CLOSED, or a second close, is a violation."""
    conn = reach(State.OPEN)
    conn.close()
    with pytest.raises(ProtocolViolation, match="closed connection"):
        conn.receive_data(b"\n", 1.0)
    with pytest.raises(ProtocolViolation):
        conn.close()


# ---- held frames ----------------------------------------------------------------------------
def test_pipelined_frames_are_held_until_accepted_and_unescaped_per_version() -> None:
    """Frames after CONNECT (even in the same read) wait for the verdict, and their headers
    are unescaped per the version CONNECT negotiated."""
    conn = new()
    send = frame("SEND", ("destination", "/queue/a"), ("k", "a:b\nc"), body=b"x")
    events = conn.receive_data(CONNECT + b"\n" + send, 0.0)
    assert [type(e) for e in events] == [ConnectReceived]
    assert conn.receive_data(frame("BEGIN", ("transaction", "t\\1")), 0.5) == []
    conn.accept()
    held = conn.take_held()
    assert [f.command for f in held] == ["SEND", "BEGIN"]
    assert held[0].get("k") == "a:b\nc"
    assert held[1].get("transaction") == "t\\1"
    assert conn.take_held() == []


def test_a_held_server_frame_is_judged_once_open() -> None:
    """A frame held while AUTH that is not an OPEN input is a violation at take_held,
    with the frames before it."""
    conn = reach(State.AUTH)
    conn.receive_data(frame("BEGIN", ("transaction", "t")) + frame("RECEIPT"), 0.1)
    conn.accept()
    with pytest.raises(ProtocolViolation, match="may not send RECEIPT") as info:
        conn.take_held()
    assert [f.command for f in info.value.before] == ["BEGIN"]  # type: ignore[union-attr]


def test_a_refused_connect_closes_and_drops_what_was_held() -> None:
    """refuse: AUTH -> CLOSED, nothing held survives."""
    conn = reach(State.AUTH)
    conn.receive_data(frame("BEGIN", ("transaction", "t")), 0.1)
    conn.refuse()
    assert conn.state is State.CLOSED
    with pytest.raises(ProtocolViolation):
        conn.take_held()


def test_a_bad_escape_in_a_pipelined_frame_is_a_violation() -> None:
    """A frame after CONNECT with an escape its version does not define."""
    conn = new()
    with pytest.raises(ProtocolViolation, match="undefined escape"):
        conn.receive_data(CONNECT + b"SEND\nk:\\t\n\n\x00", 0.0)


# ---- limits ---------------------------------------------------------------------------------
def test_the_handshake_frame_limit_rises_on_accept() -> None:
    """Until accepted, frames are held to max_handshake_frame; then to max_frame."""
    big = frame("SEND", ("destination", "/queue/a"), body=b"x" * 500)
    with pytest.raises(ProtocolViolation, match="max_handshake_frame"):
        new().receive_data(big, 0.0)
    conn = reach(State.AUTH)
    with pytest.raises(ProtocolViolation, match="max_handshake_frame"):
        conn.receive_data(big, 0.1)
    conn = reach(State.OPEN)
    assert conn.parser.frame_limit == LIMITS.max_frame
    assert [f.body for f in conn.receive_frames(big, 0.1)] == [b"x" * 500]
    with pytest.raises(ProtocolViolation, match="max_body"):
        conn.receive_frames(frame("SEND", body=b"x" * 1001), 0.2)


def test_malformed_input_is_a_violation_in_every_state() -> None:
    """The parser's errors surface as ProtocolViolation (a StompError)."""
    for state in (State.CONNECT, State.AUTH, State.OPEN):
        with pytest.raises(ProtocolViolation, match="unknown STOMP command") as info:
            reach(state).receive_data(b"HELO\n\n\x00", 1.0)
        assert isinstance(info.value, StompError)


# ---- negotiation ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("header", "version"),
    [
        (None, "1.0"),
        ("1.0", "1.0"),
        ("1.1", "1.1"),
        ("1.0,1.1", "1.1"),
        ("1.2,1.0", "1.2"),
        ("1.0,1.1,2.0", "1.1"),
        (" 1.1 , 1.2 ", "1.2"),
    ],
)
def test_negotiate_version(header: str | None, version: str) -> None:
    """The highest common version; no accept-version means 1.0."""
    assert negotiate_version(header) == version


@pytest.mark.parametrize("header", ["2.0", "", "1.3,2.1"])
def test_no_common_version_lists_the_supported_ones(header: str) -> None:
    """No common version: the violation says which versions this side speaks, the ERROR
    frame lists them in ``version``, and the connection stays CONNECT."""
    conn = new()
    data = f"CONNECT\naccept-version:{header}\nreceipt:r1\n\n\x00".encode()
    with pytest.raises(ProtocolViolation, match=r"1\.0, 1\.1, 1\.2") as info:
        conn.receive_data(data, 0.0)
    assert conn.state is State.CONNECT
    assert info.value.receipt_id == "r1"
    error = StompParser(StompLimits()).feed(
        conn.error_frame(info.value.args[0], info.value.receipt_id)
    )[0]
    assert isinstance(error, StompFrame)
    assert error.get("version") == "1.0,1.1,1.2"
    assert error.get("receipt-id") == "r1"


def test_negotiated_version_drives_unescaping() -> None:
    """After CONNECT with 1.1 the parser unescapes 1.1 sequences; 1.0 leaves them."""
    conn = reach(State.OPEN, b"CONNECT\naccept-version:1.1\n\n\x00")
    assert conn.version == "1.1"
    (got,) = conn.receive_frames(b"SEND\nk:a\\cb\n\n\x00", 1.0)
    assert got.get("k") == "a:b"
    with pytest.raises(ProtocolViolation, match="undefined escape"):
        conn.receive_frames(b"SEND\nk:a\\rb\n\n\x00", 1.0)
    old = reach(State.OPEN, b"CONNECT\n\n\x00")
    assert old.version == "1.0"
    (raw,) = old.receive_frames(b"SEND\nk:a\\cb\n\n\x00", 1.0)
    assert raw.get("k") == "a\\cb"


@pytest.mark.parametrize(
    ("header", "send", "receive"),
    [
        (None, 0.0, 0.0),
        ("0,0", 0.0, 0.0),
        ("1000,0", 0.0, 10.0),  # client sends every max(1 s, 10 s); wants none
        ("0,2000", 10.0, 0.0),  # server sends every max(10 s, 2 s)
        ("30000,20000", 20.0, 30.0),
        ("15000,5000", 10.0, 15.0),
    ],
)
def test_negotiate_heartbeat(header: str | None, send: float, receive: float) -> None:
    """STOMP 1.2: each direction is the max of what one can send and the other wants, 0
    when either says 0."""
    assert negotiate_heartbeat(header, 10.0, 10.0, 120.0) == (send, receive)


def test_server_without_heartbeats_negotiates_none() -> None:
    """A server configured with 0 sends and expects nothing."""
    assert negotiate_heartbeat("5000,5000", 0.0, 0.0, 120.0) == (0.0, 0.0)


@pytest.mark.parametrize("header", ["1000", "a,b", "-1,0", "1000;1000", ",", "1e3,0"])
def test_malformed_heartbeat(header: str) -> None:
    """heart-beat must be two non-negative integers."""
    with pytest.raises(ProtocolViolation, match="heart-beat"):
        negotiate_heartbeat(header, 10.0, 10.0, 120.0)


def test_heartbeat_over_the_maximum_is_refused() -> None:
    """A client that would be silent longer than max_heartbeat is told to beat more often."""
    with pytest.raises(ProtocolViolation, match="more often"):
        negotiate_heartbeat("600000,0", 10.0, 10.0, 120.0)
    conn = new(max_heartbeat=60.0)
    with pytest.raises(ProtocolViolation, match="60000 ms"):
        conn.receive_data(b"CONNECT\naccept-version:1.2\nheart-beat:90000,0\n\n\x00", 0.0)
    assert conn.state is State.CONNECT


def test_heartbeat_header_ignored_in_10() -> None:
    """1.0 has no heart-beating: the header does not count."""
    conn = reach(State.OPEN, b"CONNECT\nheart-beat:1000,1000\n\n\x00")
    assert (conn.send_interval, conn.receive_interval) == (0.0, 0.0)


# ---- frames written -------------------------------------------------------------------------
def test_connected_frame_announces_the_negotiation() -> None:
    """CONNECTED carries version, session, server and the negotiated heart-beat, from which
    the client computes the same intervals."""
    conn = reach(State.OPEN, b"CONNECT\naccept-version:1.1,1.2\nheart-beat:4000,15000\n\n\x00")
    (connected,) = StompParser(StompLimits()).feed(conn.connected_frame("s-1"))
    assert isinstance(connected, StompFrame)
    assert connected.command == "CONNECTED"
    assert connected.get("version") == "1.2"
    assert connected.get("session") == "s-1"
    assert connected.get("server") == f"ternmq/{__version__}"
    assert connected.get("heart-beat") == "15000,10000"
    # The client's own computation from its header and ours gives the same pair.
    cx, cy = 4000, 15000
    sx, sy = (int(v) for v in connected.get("heart-beat", "").split(","))  # type: ignore[union-attr]
    assert (max(cy, sx) / 1000, max(cx, sy) / 1000) == (
        conn.send_interval,
        conn.receive_interval,
    )


def test_connected_frame_in_10_has_no_heartbeat() -> None:
    """A 1.0 client gets no heart-beat header."""
    conn = reach(State.OPEN, b"CONNECT\n\n\x00")
    (connected,) = StompParser(StompLimits()).feed(conn.connected_frame("s", server="x/1"))
    assert isinstance(connected, StompFrame)
    assert connected.get("heart-beat") is None
    assert connected.get("server") == "x/1"


@pytest.mark.parametrize("accept", ["1.0", "1.1", "1.2"])
def test_error_frame_round_trips_in_each_version(accept: str) -> None:
    """ERROR: message header (line breaks kept where the version can escape them),
    receipt-id, a text body with content-length."""
    conn = reach(State.OPEN, f"CONNECT\naccept-version:{accept}\n\n\x00".encode())
    data = conn.error_frame("bad: thing\nfix it\r", receipt_id="r:1", detail="détail\x00")
    parser = StompParser(StompLimits())
    parser.version = accept
    (error,) = parser.feed(data)
    assert isinstance(error, StompFrame)
    assert error.command == "ERROR"
    expected = {
        "1.0": "bad: thing fix it ",
        "1.1": "bad: thing\nfix it",
        "1.2": "bad: thing\nfix it\r",
    }
    assert error.get("message") == expected[accept]
    assert error.get("receipt-id") == "r:1"
    assert error.get("version") is None
    assert error.body == "détail\x00".encode()


# ---- time -----------------------------------------------------------------------------------
def seconds(clock: FakeClock) -> float:
    """The fake clock's time in seconds."""
    return clock.now_ms() / 1000


def test_handshake_deadline() -> None:
    """Not OPEN within handshake_timeout: HANDSHAKE, with an ERROR before CONNECT and none
    while the password check is late."""
    clock = FakeClock()
    conn = new(seconds(clock))
    clock.advance(4.9)
    assert conn.check_timers(seconds(clock)) is None
    clock.advance(0.1)
    assert conn.check_timers(seconds(clock)) is Timeout.HANDSHAKE
    problem, send_error = conn.handshake_expired()
    assert "no CONNECT within handshake_timeout" in problem and send_error
    conn.receive_data(CONNECT, seconds(clock))
    assert conn.check_timers(seconds(clock)) is Timeout.HANDSHAKE
    problem, send_error = conn.handshake_expired()
    assert "password check" in problem and not send_error
    conn.accept()
    assert conn.check_timers(seconds(clock)) is None


def test_heartbeats_and_dead_peers() -> None:
    """OPEN: a heart-beat after send_interval without output; dead after two silent
    receive intervals; any input or output resets its side."""
    clock = FakeClock()
    t0 = seconds(clock)
    conn = new(t0, heartbeat_send=2.0, heartbeat_receive=3.0)
    conn.receive_data(b"CONNECT\naccept-version:1.2\nheart-beat:1000,1000\n\n\x00", t0)
    conn.accept()
    assert (conn.send_interval, conn.receive_interval) == (2.0, 3.0)
    assert conn.next_deadline() == t0 + 2.0
    clock.advance(1.9)
    assert conn.check_timers(seconds(clock)) is None
    clock.advance(0.1)
    assert conn.check_timers(seconds(clock)) is Timeout.HEARTBEAT
    assert conn.check_timers(seconds(clock)) is None  # last_sent is now
    clock.advance(1.0)
    conn.sent(seconds(clock))  # a MESSAGE went out
    conn.receive_frames(HEARTBEAT_EOL, seconds(clock))
    assert conn.next_deadline() == seconds(clock) + 2.0
    clock.advance(1.9)
    assert conn.check_timers(seconds(clock)) is None
    assert conn.check_timers(seconds(clock), last_sent=seconds(clock) - 5) is Timeout.HEARTBEAT
    clock.advance(4.0)  # 5.9 s silent: under 2 x 3 s
    assert conn.check_timers(seconds(clock)) is Timeout.HEARTBEAT
    clock.advance(0.1)
    assert conn.check_timers(seconds(clock)) is Timeout.PEER_DEAD


def test_no_heartbeats_no_timers() -> None:
    """Heart-beats 0,0: an OPEN idle connection has nothing to do."""
    conn = reach(State.OPEN)
    assert conn.check_timers(10_000.0) is None
    assert conn.next_deadline() is None


def test_frame_read_deadline() -> None:
    """A frame started frame_timeout ago and still incomplete is FRAME, in any state;
    completing it clears the deadline."""
    clock = FakeClock()
    conn = new(seconds(clock))
    conn.receive_data(b"CONNECT\naccept-", seconds(clock))
    started = seconds(clock)
    assert conn.frame_started == started
    clock.advance(2.0)
    conn.receive_data(b"version:1.2", seconds(clock))  # still the same frame
    assert conn.frame_started == started
    clock.advance(1.0)
    assert conn.check_timers(seconds(clock)) is Timeout.FRAME
    assert "not complete 3.0 s" in conn.frame_expired(seconds(clock))
    conn.receive_data(b"\n\n\x00", seconds(clock))
    assert conn.frame_started is None
    conn.accept()
    conn.receive_frames(b"SEND\n\nab", seconds(clock))
    clock.advance(2.9)
    assert conn.check_timers(seconds(clock)) is None
    clock.advance(0.1)
    assert conn.check_timers(seconds(clock)) is Timeout.FRAME
    conn.close()
    assert conn.check_timers(seconds(clock)) is None
