"""Server config loading, password hashes, destination patterns and the authorizer; the
example config in ``docs/`` loads; an in-process :class:`ServerThread` serves."""

from __future__ import annotations

import pathlib
import tomllib

import pytest

from ternmq.protocol import commands as c
from ternmq.server import ServerThread, load_config
from ternmq.server.config import ServerConfig, parse_config
from ternmq.server.security import (
    Authenticator,
    Authorizer,
    compile_pattern,
    hash_password,
    verify_password,
)
from ternmq.store import MemoryStore
from ternmq.testing import FakeClock

from ._support import Raw, text_message, works

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_password_hash_round_trip() -> None:
    h = hash_password("pw", n=2**10)
    assert h.startswith("scrypt$1024$8$1$")
    assert verify_password("pw", h)
    assert not verify_password("pW", h)
    assert hash_password("pw", n=2**10) != h  # salted
    with pytest.raises(ValueError, match="scrypt"):
        verify_password("pw", "md5$abc")


def test_authenticator() -> None:
    auth = Authenticator({"alice": hash_password("a", n=2**10)}, anonymous=False)
    assert auth.check("alice", "a") is None
    assert "alice" in (auth.check("alice", "b") or "")
    assert "unknown user" in (auth.check("bob", "a") or "")
    assert "anonymous" in (auth.check(None, None) or "")
    nobody = Authenticator({}, anonymous=True)
    assert nobody.check("anyone", "x") is None and nobody.principal("anyone") is None


@pytest.mark.parametrize(
    ("pattern", "yes", "no"),
    [
        ("queue://orders.*", ["queue://orders.eu"], ["queue://orders", "queue://orders.eu.x"]),
        ("orders.>", ["queue://orders.eu", "topic://orders.eu.late"], ["queue://orders"]),
        (">", ["queue://a", "topic://a.b.c"], []),
        ("topic://*.prices", ["topic://fx.prices"], ["queue://fx.prices", "topic://prices"]),
        ("queue://exact", ["queue://exact"], ["queue://exact.x", "topic://exact"]),
    ],
)
def test_destination_patterns(pattern: str, yes: list[str], no: list[str]) -> None:
    m = compile_pattern(pattern)
    assert all(m(d) for d in yes)
    assert not any(m(d) for d in no)


@pytest.mark.parametrize("bad", ["queue://a.>.b", "queue://a..b", "jms://x", "queue://a*", ""])
def test_bad_patterns(bad: str) -> None:
    with pytest.raises(ValueError):
        compile_pattern(bad)


def test_authorizer_roles_everyone_and_admin() -> None:
    authz = Authorizer(
        {
            "alice": {"send": ["queue://a.>"]},
            "role:ops": {"admin": [">"]},
            "*": {"browse": ["queue://public"]},
            "anonymous": {"consume": ["queue://public"]},
        },
        {"carol": ["ops"]},
    )
    assert authz("alice", "send", "queue://a.b")
    assert not authz("alice", "consume", "queue://a.b")
    assert authz("alice", "browse", "queue://public")
    assert authz("carol", "consume", "topic://anything")  # admin implies every action
    assert authz(None, "consume", "queue://public")
    assert not authz("alice", "consume", "queue://public")
    with pytest.raises(ValueError, match="unknown action"):
        Authorizer({"x": {"write": [">"]}})


def test_parse_config_all_sections() -> None:
    cfg = parse_config(
        tomllib.loads(
            f"""
            data_dir = "/tmp/x"
            fsync = "batch"
            fsync_interval = 0.2
            populate_user_id = true
            [[listeners]]
            bind = "0.0.0.0"
            port = 7000
            [limits]
            heartbeat = 5
            max_connections = 3
            [broker]
            auto_create = false
            queues = ["orders"]
            max_delivery_attempts = 4
            dead_letter_queue = ""
            [destinations."queue://orders"]
            redelivery_delay = 1.5
            [users.alice]
            password = "{hash_password("a", n=2**10)}"
            roles = ["ops"]
            [permissions."role:ops"]
            admin = [">"]
            """
        )
    )
    assert cfg.fsync == "batch" and cfg.listeners[0].port == 7000
    assert cfg.limits.heartbeat == 5.0
    assert cfg.broker.queues == ("orders",) and not cfg.broker.auto_create
    assert cfg.broker.default_policy.max_delivery_attempts == 4
    assert cfg.broker.default_policy.dead_letter_queue is None
    orders = cfg.broker.policy_for("queue://orders")
    assert orders.redelivery_delay == 1.5 and orders.max_delivery_attempts == 4
    assert cfg.broker_config().max_connections == 3
    assert not cfg.anonymous_allowed  # users configured, anonymous not set
    assert cfg.users["alice"].roles == ("ops",)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("prot = 1", "unknown config key prot"),
        ("[limits]\nheartbeat = -1", "must not be negative"),
        ("[limits]\nheartbeat = 'x'", "heartbeat"),
        ("[broker]\nfull_policy = 'drop'", "full_policy"),
        ("[broker]\ndispatch_hold = -0.5", "dispatch_hold must be between 0 and 1 second"),
        ("[broker]\ndispatch_hold = 2", "dispatch_hold must be between 0 and 1 second"),
        ("[destinations.orders]\nmax_bytes = 1", "queue://NAME"),
        ("[users.bob]\npassword = 'plain'", "users.bob.password"),
        ('[permissions.bob]\nwrite = [">"]', "write"),
        ("[[listeners]]\nport = 70000", "not a TCP port"),
        ("[limits]\nmax_frame = 1000", "max_frame"),
        ("cpu_affinity = []", "cpu_affinity: give at least one CPU"),
        ("cpu_affinity = [-1]", "cpu_affinity: CPU numbers start at 0"),
        ("cpu_affinity = 1", "cpu_affinity"),
    ],
)
def test_config_errors_name_the_key(text: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        parse_config(tomllib.loads(text))


def test_overrides() -> None:
    cfg = ServerConfig().with_overrides(bind="0.0.0.0", port=0, data_dir="d", log_level="debug")
    assert (cfg.listeners[0].bind, cfg.listeners[0].port, cfg.data_dir) == ("0.0.0.0", 0, "d")


def test_a_port_of_minus_one_turns_the_listener_off() -> None:
    """``--port -1`` (or ``port = -1`` in ``[[listeners]]``) opens no native listener; the
    others keep ``--bind``; a port outside -1..65535 is refused, naming the flag."""
    cfg = ServerConfig().with_overrides(bind="0.0.0.0", port=-1, stomp_port=0)
    assert [(ls.protocol, ls.bind, ls.port) for ls in cfg.all_listeners()] == [
        ("stomp", "0.0.0.0", 0)
    ]
    from_file = parse_config(tomllib.loads("[[listeners]]\nport = -1\n[http]\nport = 0\n"))
    assert [ls.protocol for ls in from_file.all_listeners()] == ["stomp", "http"]
    with pytest.raises(ValueError, match=r"--port 70000: give a TCP port, 0 \(any\) or -1"):
        ServerConfig().with_overrides(port=70000)


def test_listeners_name_their_protocol() -> None:
    """A listener serves one protocol, ``native`` unless the file says so; the server has a
    gateway for every protocol the config accepts, and ``--port`` moves the native one."""
    from ternmq.server.app import GATEWAYS
    from ternmq.server.config import LISTENER_PROTOCOLS, ListenerConfig
    from ternmq.server.native import NativeConnection

    assert ListenerConfig().protocol == "native"
    assert set(GATEWAYS) == set(LISTENER_PROTOCOLS)
    assert issubclass(GATEWAYS["native"], NativeConnection)  # (which also detects STOMP)
    cfg = parse_config(tomllib.loads("[[listeners]]\nport = 0\nprotocol = 'native'\n"))
    assert cfg.listeners[0].protocol == "native"
    assert cfg.with_overrides(port=1).listeners[0].port == 1
    with pytest.raises(ValueError, match=r"listeners\[0\]\.protocol: 'smtp' is not a protocol"):
        parse_config(tomllib.loads("[[listeners]]\nprotocol = 'smtp'\n"))


def test_cpu_affinity_from_the_file_or_the_command_line() -> None:
    """``cpu_affinity`` (config) and ``--cpu-affinity`` (override): sorted, no repeats;
    unset, the server does not pin itself."""
    assert ServerConfig().cpu_affinity == ()
    cfg = parse_config(tomllib.loads("cpu_affinity = [1, 0, 1]"))
    assert cfg.cpu_affinity == (0, 1)
    assert cfg.with_overrides(cpu_affinity=(1,)).cpu_affinity == (1,)
    with pytest.raises(ValueError, match="--cpu-affinity"):
        cfg.with_overrides(cpu_affinity=())


def test_example_config_loads() -> None:
    cfg = load_config(ROOT / "docs" / "ternmq.example.toml")
    assert cfg.listeners and cfg.users and cfg.permissions


def test_example_config_says_its_users_passwords() -> None:
    """The example's comment gives each user's password, and the hashes match them."""
    text = (ROOT / "docs" / "ternmq.example.toml").read_text(encoding="utf-8")
    cfg = load_config(ROOT / "docs" / "ternmq.example.toml")
    for user, stored in cfg.users.items():
        password = f"{user}-example-password"
        assert f'"{password}"' in text, user
        assert verify_password(password, stored.password), user


def test_server_thread_in_process() -> None:
    """The in-process server (for embedding and for transport tests) on a memory store."""
    cfg = ServerConfig().with_overrides(port=0)
    with ServerThread(cfg, store=MemoryStore()) as st:
        port = int(st.url.rsplit(":", 1)[1])
        works(port)
        with Raw(port) as cl:
            cl.connect()
            assert st.call(lambda: len(st.server.broker.connections)) >= 1  # type: ignore[union-attr]
            cl.request(c.CreateSession(session_id=1))


def test_server_thread_fake_clock_runs_due_work_on_advance() -> None:
    """With a FakeClock the server arms no real timer; ``clock.advance`` runs the due work
    on the loop before it returns (as the embedded broker does)."""
    clock = FakeClock()
    cfg = ServerConfig().with_overrides(port=0)
    with ServerThread(cfg, store=MemoryStore(), clock=clock) as st:
        port = int(st.url.rsplit(":", 1)[1])
        with Raw(port) as cl:
            cl.connect()
            cl.request(c.CreateSession(session_id=1))
            cl.request(c.CreateConsumer(session_id=1, consumer_id=1, destination="queue://later"))
            due = clock.now_ms() + 60_000
            msg = text_message("later")
            cl.request(
                c.Send(session_id=1, destination="queue://later", message=msg, delivery_time=due)
            )
            assert st.call(lambda: st.server.broker.next_deadline()) == due  # type: ignore[union-attr]
            clock.advance(61)
            assert isinstance(cl.recv(), c.Deliver)
