"""The OpenWire settings of the server config: ``openwire_port`` / ``--openwire-port`` and
``protocol = "openwire"`` listeners (docs/operations.md)."""

from __future__ import annotations

import pytest

from ternmq.server.app import GATEWAYS, build_parser
from ternmq.server.config import ServerConfig, parse_config
from ternmq.server.openwire import OpenWireConnection


def _openwire(cfg: ServerConfig) -> list[int]:
    return [ls.port for ls in cfg.all_listeners() if ls.protocol == "openwire"]


def test_no_openwire_only_listener_by_default() -> None:
    assert _openwire(ServerConfig()) == []
    assert _openwire(parse_config({"openwire_port": -1})) == []


def test_openwire_port_adds_a_listener_on_the_native_address() -> None:
    cfg = parse_config({"openwire_port": 61619, "listeners": [{"bind": "0.0.0.0", "port": 1}]})
    (listener,) = [ls for ls in cfg.all_listeners() if ls.protocol == "openwire"]
    assert (listener.bind, listener.port, listener.tls) == ("0.0.0.0", 61619, None)
    assert _openwire(ServerConfig().with_overrides(openwire_port=0)) == [0]


def test_openwire_port_out_of_range_is_refused() -> None:
    with pytest.raises(ValueError, match="openwire_port"):
        parse_config({"openwire_port": 70000})
    with pytest.raises(ValueError, match="--openwire-port"):
        ServerConfig().with_overrides(openwire_port=-2)


def test_a_listener_may_serve_openwire_only() -> None:
    cfg = parse_config({"listeners": [{"protocol": "openwire", "port": 0}]})
    assert [ls.protocol for ls in cfg.listeners] == ["openwire"]
    assert GATEWAYS["openwire"] is OpenWireConnection


def test_the_command_line_flag() -> None:
    args = build_parser().parse_args(["--openwire-port", "0"])
    assert args.openwire_port == 0
