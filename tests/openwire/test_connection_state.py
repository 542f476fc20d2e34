"""The sans-IO OpenWire server connection (``protocol/openwire_connection.py``), without I/O:
the transition table over every state x input, negotiation, the held commands, the
inactivity monitor and the deadlines on an injected clock."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ternmq.protocol import openwire as ow
from ternmq.protocol.openwire_connection import (
    TRANSITIONS,
    ConnectionInfoReceived,
    Input,
    Negotiated,
    OpenWireServerConnection,
    ProtocolViolation,
    State,
    Timeout,
    exception_response,
    input_of,
)


def _frame(cmd: ow.DataStructure) -> bytes:
    return ow.encode_frame(cmd)


def _wireformat(version: int = 12, inactivity: int = 30_000, delay: int = 10_000) -> bytes:
    return _frame(
        ow.WireFormat(
            version=version,
            cache=True,
            tight_encoding=True,
            max_inactivity_ms=inactivity,
            max_inactivity_initial_delay_ms=delay,
            max_frame_size=1 << 20,
        ).to_info()
    )


_CONN_INFO = ow.ConnectionInfo(
    command_id=1,
    response_required=True,
    connection_id=ow.ConnectionId(value="ID:c"),
    user_name="u",
    password="p",
)
_SESSION = ow.SessionInfo(command_id=2, session_id=ow.SessionId(connection_id="ID:c", value=1))


def _open(now: float = 0.0, **kw: object) -> OpenWireServerConnection:
    wire = OpenWireServerConnection(now, **kw)  # type: ignore[arg-type]
    events = wire.receive_data(_wireformat() + _frame(_CONN_INFO), now)
    assert isinstance(events[0], Negotiated)
    assert isinstance(events[1], ConnectionInfoReceived)
    assert wire.accept() == []
    assert wire.state is State.OPEN
    return wire


def test_negotiation_offers_loose_uncached_v12_and_answers_with_broker_info() -> None:
    wire = OpenWireServerConnection(0.0, max_inactivity=20.0)
    (ev,) = wire.receive_data(_wireformat(inactivity=30_000), 0.0)
    assert isinstance(ev, Negotiated)
    parser = ow.FrameParser()
    mine, broker = parser.feed(ev.reply)
    assert isinstance(mine, ow.WireFormatInfo) and isinstance(broker, ow.BrokerInfo)
    offer = ow.WireFormat.from_info(mine)
    assert offer.version == 12
    assert not offer.tight_encoding and not offer.cache and not offer.stack_trace
    assert offer.max_inactivity_ms == 20_000
    # What both use: the client's tight/cache offers ANDed away, the smaller window.
    assert ev.wire_format.max_inactivity_ms == 20_000
    assert not ev.wire_format.tight_encoding and not ev.wire_format.cache
    assert wire.window == 20.0 and wire.state is State.CONNECT


def test_a_version_below_12_is_refused_and_the_state_stays() -> None:
    wire = OpenWireServerConnection(0.0)
    with pytest.raises(ProtocolViolation, match="version 11 is not supported"):
        wire.receive_data(_wireformat(version=11), 0.0)
    assert wire.state is State.WIREFORMAT


def test_a_command_before_wireformatinfo_is_a_violation() -> None:
    wire = OpenWireServerConnection(0.0)
    with pytest.raises(ProtocolViolation, match="before WireFormatInfo"):
        wire.receive_data(_frame(_SESSION), 0.0)


def test_commands_before_connectioninfo_are_violations_keepalive_is_not() -> None:
    wire = OpenWireServerConnection(0.0)
    wire.receive_data(_wireformat(), 0.0)
    assert wire.receive_data(_frame(ow.KeepAliveInfo()), 0.0) == []
    with pytest.raises(ProtocolViolation, match="before ConnectionInfo") as info:
        wire.receive_data(_frame(_SESSION), 0.0)
    assert info.value.before == []


def test_commands_pipelined_after_connectioninfo_are_held_until_accept() -> None:
    wire = OpenWireServerConnection(0.0)
    events = wire.receive_data(_wireformat() + _frame(_CONN_INFO) + _frame(_SESSION), 0.0)
    assert [type(e) for e in events] == [Negotiated, ConnectionInfoReceived]
    assert wire.state is State.AUTH
    held = wire.accept()
    assert held == [_SESSION]


def test_refuse_closes_and_drops_what_was_held() -> None:
    wire = OpenWireServerConnection(0.0)
    wire.receive_data(_wireformat() + _frame(_CONN_INFO) + _frame(_SESSION), 0.0)
    wire.refuse()
    assert wire.state is State.CLOSED
    with pytest.raises(ProtocolViolation, match="closed"):
        wire.receive_data(_frame(_SESSION), 0.0)


def test_a_second_connectioninfo_held_is_judged_a_violation_at_accept() -> None:
    wire = OpenWireServerConnection(0.0)
    wire.receive_data(_wireformat() + _frame(_CONN_INFO) + _frame(_SESSION) + _frame(_CONN_INFO), 0)
    with pytest.raises(ProtocolViolation, match="second ConnectionInfo") as info:
        wire.accept()
    assert info.value.before == [_SESSION]


def test_open_commands_pass_keepalives_are_answered_only_when_asked() -> None:
    wire = _open()
    asked = ow.KeepAliveInfo(command_id=9, response_required=True)
    events = wire.receive_data(_frame(ow.KeepAliveInfo()) + _frame(_SESSION) + _frame(asked), 1.0)
    assert events == [_SESSION, asked]


def test_shutdowninfo_ends_the_input_and_closes() -> None:
    wire = _open()
    remove = ow.RemoveInfo(command_id=5, object_id=ow.ConnectionId(value="ID:c"))
    events = wire.receive_data(_frame(remove) + _frame(ow.ShutdownInfo()) + _frame(_SESSION), 1.0)
    assert events == [remove, ow.ShutdownInfo()]
    assert wire.state is State.CLOSED


def test_the_handshake_frame_limit_rises_at_accept() -> None:
    wire = OpenWireServerConnection(0.0, max_frame=1 << 20, max_handshake_frame=1024)
    wire.receive_data(_wireformat(), 0.0)
    big = ow.ConnectionInfo(command_id=1, client_id="x" * 2000)
    with pytest.raises(ProtocolViolation, match="limit is 1024"):
        wire.receive_data(_frame(big), 0.0)
    wire = _open(max_frame=1 << 20, max_handshake_frame=1024)
    msg = ow.ActiveMQTextMessage(content=ow.encode_text_body("y" * 5000))
    assert wire.receive_data(_frame(msg), 0.0) == [msg]


def test_malformed_input_is_a_violation() -> None:
    wire = OpenWireServerConnection(0.0)
    with pytest.raises(ProtocolViolation):
        wire.receive_data(b"\x00\x00\x00\x05\x01BADMAGIC", 0.0)


def test_handshake_deadline() -> None:
    wire = OpenWireServerConnection(100.0, handshake_timeout=5.0)
    assert wire.check_timers(104.9, 100.0) is None
    assert wire.check_timers(105.0, 100.0) is Timeout.HANDSHAKE
    assert wire.next_deadline(100.0) == 105.0


def test_frame_read_deadline() -> None:
    wire = OpenWireServerConnection(0.0, frame_timeout=3.0)
    wire.receive_data(_wireformat()[:10], 1.0)
    assert wire.frame_started == 1.0
    assert wire.check_timers(3.9, 0.0) is None
    assert wire.check_timers(4.0, 0.0) is Timeout.FRAME


def test_inactivity_keepalive_and_dead_peer_after_the_initial_delay() -> None:
    wire = OpenWireServerConnection(0.0, max_inactivity=30.0, inactivity_initial_delay=10.0)
    wire.receive_data(_wireformat(inactivity=30_000, delay=10_000) + _frame(_CONN_INFO), 0.0)
    wire.accept()
    # The server writes a KeepAliveInfo when it wrote nothing for a third of the window.
    assert wire.check_timers(9.9, 0.0) is None
    assert wire.check_timers(10.0, 0.0) is Timeout.KEEPALIVE
    assert wire.check_timers(10.0, 10.0) is None
    # The peer heard at 5 s: dead a window later, not before.
    wire.receive_data(_frame(ow.KeepAliveInfo()), 5.0)
    assert wire.check_timers(34.9, 30.0) is None
    assert wire.check_timers(35.0, 30.0) is Timeout.PEER_DEAD


def test_no_inactivity_check_when_either_side_offers_zero() -> None:
    wire = OpenWireServerConnection(0.0, max_inactivity=30.0)
    wire.receive_data(_wireformat(inactivity=0) + _frame(_CONN_INFO), 0.0)
    wire.accept()
    assert wire.window == 0
    assert wire.check_timers(10_000.0, 0.0) is None


def test_exception_response_carries_the_java_class() -> None:
    resp = exception_response(7, "javax.jms.JMSSecurityException", "no")
    back = ow.decode_frame(ow.encode_frame(resp)[4:])
    assert isinstance(back, ow.ExceptionResponse)
    assert back.correlation_id == 7
    assert back.exception == ow.JavaThrowable("javax.jms.JMSSecurityException", "no")


_SAMPLES: dict[Input, bytes] = {
    Input.WIRE_FORMAT: _wireformat(),
    Input.CONNECTION_INFO: _frame(_CONN_INFO),
    Input.KEEP_ALIVE: _frame(ow.KeepAliveInfo()),
    Input.SHUTDOWN: _frame(ow.ShutdownInfo()),
    Input.COMMAND: _frame(_SESSION),
}


def _in_state(state: State) -> OpenWireServerConnection:
    wire = OpenWireServerConnection(0.0)
    if state is State.WIREFORMAT:
        return wire
    wire.receive_data(_wireformat(), 0.0)
    if state is State.CONNECT:
        return wire
    wire.receive_data(_frame(_CONN_INFO), 0.0)
    if state is State.AUTH:
        return wire
    if state is State.OPEN:
        wire.accept()
        return wire
    wire.close()
    return wire


@given(st.sampled_from(list(State)), st.sampled_from(list(Input)))
def test_every_state_and_input_follows_the_table(state: State, inp: Input) -> None:
    wire = _in_state(state)
    assert wire.state is state
    expected = TRANSITIONS.get((state, inp))
    try:
        if inp is Input.ACCEPTED:
            wire.accept()
        elif inp is Input.REFUSED:
            wire.refuse()
        elif inp is Input.CLOSE:
            wire.close()
        else:
            wire.receive_data(_SAMPLES[inp], 1.0)
    except ProtocolViolation:
        assert expected is None, (state, inp)
        assert wire.state is state  # a refused input leaves the state as it was
        return
    assert expected is not None, (state, inp)
    assert wire.state is expected


def test_input_of() -> None:
    assert input_of(ow.WireFormatInfo()) is Input.WIRE_FORMAT
    assert input_of(_CONN_INFO) is Input.CONNECTION_INFO
    assert input_of(ow.KeepAliveInfo()) is Input.KEEP_ALIVE
    assert input_of(ow.ShutdownInfo()) is Input.SHUTDOWN
    assert input_of(ow.MessageAck()) is Input.COMMAND


def test_is_openwire_start_tells_a_wireformatinfo_from_other_protocols() -> None:
    from ternmq.protocol.frames import PREAMBLE
    from ternmq.server.openwire import is_openwire_start

    hello = _wireformat()
    assert is_openwire_start(hello) is True
    assert is_openwire_start(hello[:13]) is True
    for n in range(13):
        assert is_openwire_start(hello[:n]) is None  # a prefix: wait for more
    assert is_openwire_start(PREAMBLE) is False
    assert is_openwire_start(b"CONNECT\naccept-version:1.2\n\n\x00") is False
    assert is_openwire_start(hello[:5] + b"ActiveMX") is False


def test_java_exception_names_a_class_the_client_has() -> None:
    from ternmq.server.openwire import java_exception

    assert java_exception("InvalidSelectorException") == "javax.jms.InvalidSelectorException"
    assert java_exception("JMSSecurityException") == "javax.jms.JMSSecurityException"
    assert java_exception("SomethingOfOurs") == "javax.jms.JMSException"
