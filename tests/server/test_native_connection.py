"""The sans-IO native server connection (STYLE rules 2 and 10): every state x input pair
follows ``TRANSITIONS`` or raises ``ProtocolError`` (leaving the state as it was), byte-level
handshake and pipelining cases, random splits and garbage, and the timers with the time
passed in."""

from __future__ import annotations

import ast
import itertools
import pathlib
from typing import Any, get_args

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ternmq
from ternmq.protocol import commands as c
from ternmq.protocol.frames import PREAMBLE, FrameDecoder, Heartbeat, ProtocolError, encode
from ternmq.protocol.native_connection import (
    HEARTBEAT_FRAME,
    OPEN_REQUESTS,
    TRANSITIONS,
    ConnectReceived,
    Input,
    NativeServerConnection,
    PreambleReceived,
    ProtocolViolation,
    State,
    Timeout,
    error_frame,
    input_of,
)

MAX_FRAME = 4096
HEARTBEAT_S = 10.0
HANDSHAKE_S = 5.0


def _encodable(cmd: Any) -> bool:
    try:
        frame = encode(cmd)
    except (OverflowError, ValueError):
        return False
    return len(frame) - 4 <= MAX_FRAME


def _commands(types: tuple[type, ...]) -> st.SearchStrategy[Any]:
    return st.one_of(*(st.builds(t) for t in types)).filter(_encodable)


REQUESTS = _commands(tuple(sorted(OPEN_REQUESTS, key=lambda t: t.__name__)))
NOT_REQUESTS = _commands(get_args(c.Reply) + get_args(c.Event))
CONNECTS = _commands((c.Connect,))


def new(now: float = 0.0) -> NativeServerConnection:
    return NativeServerConnection(
        now, max_frame=MAX_FRAME, heartbeat=HEARTBEAT_S, handshake_timeout=HANDSHAKE_S
    )


def reach(state: State) -> NativeServerConnection:
    """A connection in ``state``, brought there the regular way."""
    conn = new()
    if state is State.CLOSED:
        conn.close()
        return conn
    if state is State.PREAMBLE:
        return conn
    assert conn.receive_data(PREAMBLE, 0.0) == [PreambleReceived()]
    if state is State.CONNECT:
        return conn
    conn.receive_data(encode(c.Connect(corr=1)), 0.0)
    if state is State.AUTH:
        return conn
    conn.accept()
    assert conn.take_held() == []
    return conn


# ---- the table ------------------------------------------------------------------------------
@settings(max_examples=400, deadline=None)
@given(
    state=st.sampled_from(State),
    inp=st.sampled_from(Input),
    request=REQUESTS,
    other=NOT_REQUESTS,
    connect=CONNECTS,
)
def test_every_state_x_input_follows_the_table_or_raises(
    state: State, inp: Input, request: Any, other: Any, connect: c.Connect
) -> None:
    conn = reach(state)
    frames = {
        Input.PREAMBLE: PREAMBLE,
        Input.CONNECT: encode(connect),
        Input.HEARTBEAT: HEARTBEAT_FRAME,
        Input.REQUEST: encode(request),
        Input.NOT_REQUEST: encode(other),
    }
    calls = {Input.ACCEPTED: conn.accept, Input.REFUSED: conn.refuse, Input.CLOSE: conn.close}
    expected = TRANSITIONS.get((state, inp))
    if expected is None:
        with pytest.raises(ProtocolError):
            if inp in frames:
                conn.receive_data(frames[inp], 1.0)
            else:
                calls[inp]()
        assert conn.state is state  # the caller closes; a refused input changes nothing
        return
    events = conn.receive_data(frames[inp], 1.0) if inp in frames else calls[inp]()
    assert conn.state is expected
    if inp is Input.PREAMBLE:
        assert events == [PreambleReceived()]
    elif inp is Input.CONNECT and state is State.CONNECT:
        assert events == [ConnectReceived(connect)]
    elif inp is Input.REQUEST and state is State.OPEN:
        assert events == [request]
    elif inp in frames:
        assert events == []  # a heartbeat, or a frame held while authenticating


@given(request=REQUESTS, other=NOT_REQUESTS, connect=CONNECTS)
def test_input_of_classifies_every_frame(request: Any, other: Any, connect: c.Connect) -> None:
    assert input_of(Heartbeat()) is Input.HEARTBEAT
    assert input_of(connect) is Input.CONNECT
    assert input_of(request) is Input.REQUEST
    assert input_of(other) is Input.NOT_REQUEST


@pytest.mark.parametrize("state", [s for s in State if s is not State.OPEN])
def test_receive_requests_needs_an_open_connection(state: State) -> None:
    conn = reach(state)
    with pytest.raises(ProtocolViolation, match="needs an open connection"):
        conn.receive_requests(encode(c.CreateSession(session_id=1)), 1.0)
    assert conn.state is state


# ---- bytes ------------------------------------------------------------------------------------
def test_preamble_one_octet_at_a_time() -> None:
    conn = new()
    for i, octet in enumerate(PREAMBLE):
        events = conn.receive_data(bytes([octet]), float(i))
        assert events == ([PreambleReceived()] if i == len(PREAMBLE) - 1 else [])
    assert conn.state is State.CONNECT
    assert PreambleReceived().reply == PREAMBLE


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"GET / HTTP/1.1\r\n", "not a ternmq connection"),
        (b"TMQX", "not a ternmq connection"),
        (b"TMQP\x02\x00\x00\x00", "protocol version 2.0 is not supported"),
    ],
)
def test_a_bad_preamble_is_answered_with_ours(data: bytes, problem: str) -> None:
    conn = new()
    with pytest.raises(ProtocolViolation, match=problem) as info:
        conn.receive_data(data, 0.0)
    assert info.value.preamble and info.value.before == ()
    assert conn.state is State.PREAMBLE


def test_pipelined_connect_and_requests_are_held_until_accepted() -> None:
    conn = new()
    session = c.CreateSession(corr=2, session_id=1)
    send = c.Send(corr=0, session_id=1, destination="queue://q", message=b"m")
    stream = PREAMBLE + HEARTBEAT_FRAME + encode(c.Connect(corr=1, user="u", password="p"))
    stream += encode(session) + HEARTBEAT_FRAME + encode(send)
    events = conn.receive_data(stream, 0.0)
    assert events == [
        PreambleReceived(),
        ConnectReceived(c.Connect(corr=1, user="u", password="p")),
    ]
    assert conn.state is State.AUTH
    assert conn.receive_data(encode(c.Disconnect(corr=3)), 0.5) == []  # still held
    conn.accept()
    assert conn.take_held() == [session, send, c.Disconnect(corr=3)]
    assert conn.take_held() == []


def test_a_refused_connect_closes_and_drops_what_was_held() -> None:
    conn = reach(State.CONNECT)
    conn.receive_data(encode(c.Connect(corr=1)) + encode(c.CreateSession(session_id=1)), 0.0)
    conn.refuse()
    assert conn.state is State.CLOSED
    with pytest.raises(ProtocolViolation):
        conn.take_held()


def test_a_held_violation_keeps_the_requests_before_it() -> None:
    conn = reach(State.CONNECT)
    session = c.CreateSession(corr=2, session_id=1)
    conn.receive_data(encode(c.Connect(corr=1)) + encode(session) + encode(c.Ok(corr=2)), 0.0)
    conn.accept()
    with pytest.raises(ProtocolViolation, match="may not send Ok: it is a reply") as info:
        conn.take_held()
    assert info.value.before == [session]
    assert conn.state is State.OPEN


@pytest.mark.parametrize(
    ("state", "cmd", "problem"),
    [
        (State.CONNECT, c.CreateSession(session_id=1), "CreateSession before Connect"),
        (State.CONNECT, c.Ok(corr=1), "may not send Ok"),
        (State.OPEN, c.Connect(corr=5), "a second Connect on one connection"),
        (State.OPEN, c.Deliver(consumer_id=1, delivery_id=1, message=b""), "may not send Deliver"),
    ],
)
def test_protocol_errors_name_the_problem(state: State, cmd: Any, problem: str) -> None:
    conn = reach(state)
    with pytest.raises(ProtocolViolation, match=problem):
        conn.receive_data(encode(cmd), 1.0)
    assert conn.state is state


def test_open_violation_keeps_the_requests_before_it() -> None:
    conn = reach(State.OPEN)
    first = c.CreateSession(corr=2, session_id=1)
    with pytest.raises(ProtocolViolation, match="second Connect") as info:
        conn.receive_requests(encode(first) + encode(c.Connect(corr=3)) + encode(first), 1.0)
    assert info.value.before == [first]


def test_open_heartbeats_refresh_and_are_dropped() -> None:
    conn = reach(State.OPEN)
    ack = c.Ack(session_id=1, delivery_ids=[1, 2])
    got = conn.receive_requests(HEARTBEAT_FRAME + encode(ack) + HEARTBEAT_FRAME, 7.0)
    assert got == [ack]
    assert conn.last_heard == 7.0
    assert conn.receive_requests(HEARTBEAT_FRAME, 8.0) == []


def test_oversized_and_malformed_frames() -> None:
    conn = reach(State.OPEN)
    with pytest.raises(ProtocolViolation, match=r"exceeds max_frame \(4096\)") as info:
        conn.receive_requests((MAX_FRAME + 1).to_bytes(4, "big"), 1.0)
    assert info.value.before == () and not info.value.preamble
    conn = reach(State.CONNECT)
    with pytest.raises(ProtocolViolation, match="malformed frame"):
        conn.receive_data(b"\x00\x00\x00\x02\xc1\xc1", 1.0)
    conn = new()
    with pytest.raises(ProtocolViolation, match="malformed frame") as info:
        conn.receive_data(PREAMBLE + b"\x00\x00\x00\x01\xc1", 1.0)
    assert info.value.before == [PreambleReceived()]  # the preamble was good: greet first


def test_closed_takes_no_input() -> None:
    conn = reach(State.CLOSED)
    with pytest.raises(ProtocolViolation, match="closed connection"):
        conn.receive_data(HEARTBEAT_FRAME, 1.0)
    with pytest.raises(ProtocolViolation):
        conn.close()
    assert conn.check_timers(1e9, 0.0) is None


def test_error_frame_is_a_protocol_error() -> None:
    assert FrameDecoder().feed(error_frame("why")) == [
        c.Error(corr=0, kind="ProtocolError", message="why")
    ]


@settings(max_examples=200, deadline=None)
@given(reqs=st.lists(REQUESTS, max_size=8), cuts=st.lists(st.integers(0, 10_000), max_size=10))
def test_any_split_of_a_valid_stream_gives_the_same_requests(
    reqs: list[Any], cuts: list[int]
) -> None:
    connect = c.Connect(corr=1)
    stream = PREAMBLE + encode(connect) + b"".join(encode(r) + HEARTBEAT_FRAME for r in reqs)
    points = sorted({0, len(stream), *(n % (len(stream) + 1) for n in cuts)})
    conn = new()
    events: list[Any] = []
    got: list[Any] = []
    for a, b in itertools.pairwise(points):
        chunk = stream[a:b]
        if conn.state is State.OPEN:
            got += conn.receive_requests(chunk, 1.0)
            continue
        events += conn.receive_data(chunk, 1.0)
        if conn.state is State.AUTH:
            conn.accept()
            got += conn.take_held()
    assert events == [PreambleReceived(), ConnectReceived(connect)]
    assert got == reqs


@settings(max_examples=300, deadline=None)
@given(state=st.sampled_from([State.PREAMBLE, State.CONNECT, State.OPEN]), data=st.binary())
def test_garbage_raises_only_protocol_errors(state: State, data: bytes) -> None:
    conn = reach(state)
    try:
        conn.receive_data(data, 1.0)
    except ProtocolError:
        assert conn.state is state


# ---- time -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("state", "what", "reply"),
    [(State.PREAMBLE, "preamble", False), (State.CONNECT, "Connect", True)],
)
def test_handshake_deadline(state: State, what: str, reply: bool) -> None:
    conn = reach(state)
    assert conn.check_timers(HANDSHAKE_S - 0.01, 0.0) is None
    assert conn.check_timers(HANDSHAKE_S, 0.0) is Timeout.HANDSHAKE
    problem, octets = conn.handshake_expired()
    assert problem == f"no {what} within handshake_timeout ({HANDSHAKE_S} s)"
    assert octets == (error_frame(problem) if reply else b"")


def test_an_open_connection_has_no_handshake_deadline() -> None:
    conn = reach(State.OPEN)
    assert conn.check_timers(HANDSHAKE_S + 1, HANDSHAKE_S + 1) is None


def test_heartbeats_and_dead_peers() -> None:
    conn = reach(State.OPEN)
    conn.receive_requests(HEARTBEAT_FRAME, 100.0)
    assert conn.check_timers(105.0, 100.0) is None
    assert conn.check_timers(110.0, 100.0) is Timeout.HEARTBEAT  # we said nothing for one
    assert conn.check_timers(115.0, 110.0) is None  # it was also the probe: once
    assert conn.check_timers(119.9, 115.0) is None
    assert conn.check_timers(120.0, 115.0) is Timeout.PEER_DEAD
    conn.receive_requests(HEARTBEAT_FRAME, 200.0)  # heard again: alive, probe re-armed
    assert conn.check_timers(209.0, 205.0) is None
    assert conn.check_timers(210.0, 205.0) is Timeout.HEARTBEAT  # heard nothing: one probe
    assert conn.check_timers(212.0, 210.0) is None


# ---- layering -----------------------------------------------------------------------------
def _imported(path: pathlib.Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def test_gateways_depend_on_the_host_protocol_not_the_server() -> None:
    """The native gateway and the gateway base never import ``server.app`` (not even under
    TYPE_CHECKING): they ask the server through ``ConnectionHost``."""
    server = pathlib.Path(ternmq.__file__).resolve().parent / "server"
    for name in ("native.py", "_gateway.py"):
        assert "ternmq.server.app" not in _imported(server / name), name
