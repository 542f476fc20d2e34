"""The base every sans-IO server connection shares (``protocol/_server_connection.py``):
the caller's refusal and close, ``closed``, and the one ``Timeout`` vocabulary, the same for
the native, STOMP and OpenWire connections."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ternmq.protocol import commands as c
from ternmq.protocol import native_connection as nc
from ternmq.protocol import openwire as ow
from ternmq.protocol import openwire_connection as owc
from ternmq.protocol import stomp_connection as sc
from ternmq.protocol._server_connection import ServerConnection, Timeout
from ternmq.protocol.frames import PREAMBLE, encode

# Each protocol: a new connection, the octets that bring it to AUTH and then pipeline one
# request behind the credentials, and its violation type.
_OPENWIRE_LOGIN = ow.encode_frame(ow.WireFormat(version=12).to_info()) + ow.encode_frame(
    ow.ConnectionInfo(command_id=1, connection_id=ow.ConnectionId(value="c"))
)
PROTOCOLS: dict[str, tuple[Callable[[], Any], bytes, type[Exception]]] = {
    "native": (
        lambda: nc.NativeServerConnection(0.0),
        PREAMBLE + encode(c.Connect(corr=1)) + encode(c.CreateTemporary(corr=2, topic=False)),
        nc.ProtocolViolation,
    ),
    "stomp": (
        lambda: sc.StompServerConnection(0.0),
        b"CONNECT\naccept-version:1.2\n\n\x00SEND\ndestination:/queue/a\n\n\x00",
        sc.ProtocolViolation,
    ),
    "openwire": (
        lambda: owc.OpenWireServerConnection(0.0),
        _OPENWIRE_LOGIN + ow.encode_frame(ow.KeepAliveInfo(response_required=True)),
        owc.ProtocolViolation,
    ),
}


@pytest.fixture(params=sorted(PROTOCOLS))
def protocol(request: pytest.FixtureRequest) -> tuple[Callable[[], Any], bytes, type[Exception]]:
    return PROTOCOLS[request.param]


def test_every_connection_is_a_server_connection(
    protocol: tuple[Callable[[], Any], bytes, type[Exception]],
) -> None:
    new, _, _ = protocol
    assert isinstance(new(), ServerConnection)


def test_close_closes_once_and_a_second_close_is_the_protocols_violation(
    protocol: tuple[Callable[[], Any], bytes, type[Exception]],
) -> None:
    new, _, violation = protocol
    wire = new()
    assert not wire.closed
    wire.close()
    assert wire.closed
    with pytest.raises(violation, match="close on a closed connection"):
        wire.close()
    assert wire.closed


def test_refuse_needs_auth_and_leaves_the_state_otherwise(
    protocol: tuple[Callable[[], Any], bytes, type[Exception]],
) -> None:
    new, _, violation = protocol
    wire = new()
    before = wire.state
    with pytest.raises(violation, match="refused"):
        wire.refuse()
    assert wire.state is before and not wire.closed


def test_refuse_from_auth_closes_and_drops_what_was_pipelined(
    protocol: tuple[Callable[[], Any], bytes, type[Exception]],
) -> None:
    new, login, violation = protocol
    wire = new()
    wire.receive_data(login, 0.0)
    assert wire.state.name == "AUTH"
    assert wire._held, "the request behind the credentials is held until the verdict"
    wire.refuse()
    assert wire.closed and wire._held == []
    with pytest.raises(violation):
        wire.receive_data(b"\x00", 1.0)


def test_openwire_keepalive_is_the_heartbeat_of_the_shared_timeout() -> None:
    assert Timeout.KEEPALIVE is Timeout.HEARTBEAT
    assert nc.Timeout is sc.Timeout is owc.Timeout is Timeout
