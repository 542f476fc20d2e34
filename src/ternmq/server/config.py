"""The network server's settings: frozen dataclasses, loaded from a TOML file.

Every key is documented in ``docs/operations.md``; ``docs/ternmq.example.toml`` shows them all.
Command-line flags (``--bind``, ``--port``, ``--data-dir``, ``--store``, ``--log-level``)
override the file: see :meth:`ServerConfig.with_overrides`.
"""

from __future__ import annotations

import dataclasses
import pathlib
import tomllib
from collections.abc import Mapping
from typing import Any, Final, Literal

import msgspec

from ternmq.broker.config import BrokerConfig, DestinationPolicy
from ternmq.server.security import ACTIONS, ANONYMOUS, Authenticator, Authorizer

__all__ = [
    "LISTENER_PROTOCOLS",
    "Limits",
    "ListenerConfig",
    "HttpConfig",
    "ServerConfig",
    "TlsConfig",
    "UserConfig",
    "load_config",
]

Fsync = Literal["always", "batch"]
LogLevel = Literal["debug", "info", "warning", "error"]
DEFAULT_PORT: Final = 61616
DEFAULT_TLS_PORT: Final = 61617
DEFAULT_STOMP_PORT: Final = 61613
DEFAULT_HTTP_PORT: Final = 8161
# The wire protocol a listener serves: the gateways the server has (``app.GATEWAYS``). The
# OpenWire listener will add its name here (SERVER.md "Listeners and ports"). The HTTP
# listener is configured by the ``[http]`` table, not ``[[listeners]]``.
ListenerProtocol = Literal["native", "stomp", "openwire", "http"]
LISTENER_PROTOCOLS: Final[tuple[ListenerProtocol, ...]] = ("native", "stomp", "openwire")


@dataclasses.dataclass(frozen=True)
class TlsConfig:
    """TLS of one listener.

    Attributes:
        cert: PEM file with the server certificate (and chain).
        key: PEM file with its private key.
        cafile: PEM file of the CAs that client certificates must chain to.
        verify_client: require a valid client certificate (needs ``cafile``).
    """

    cert: str
    key: str
    cafile: str | None = None
    verify_client: bool = False


@dataclasses.dataclass(frozen=True)
class ListenerConfig:
    """One listening socket (plain TCP, or TLS with ``tls``).

    Attributes:
        bind: the address to listen on.
        port: the TCP port (0 picks a free one).
        tls: TLS settings; None for plain TCP.
        protocol: the wire protocol it serves, one of :data:`LISTENER_PROTOCOLS`.
        stomp_persistent_default: whether a STOMP SEND without a ``persistent`` header is
            PERSISTENT on this listener (STOMP connections of a ``native`` listener too);
            None (the default) takes the top-level ``stomp_persistent_default``.
    """

    bind: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    tls: TlsConfig | None = None
    protocol: ListenerProtocol = "native"
    stomp_persistent_default: bool | None = None

    @property
    def scheme(self) -> str:
        """``tcp`` or ``tls``."""
        return "tls" if self.tls is not None else "tcp"


@dataclasses.dataclass(frozen=True)
class HttpConfig:
    """The HTTP listener: web console, JSON API, Prometheus metrics (``[http]`` table).

    Attributes:
        port: the TCP port (0 picks a free one, -1 turns the listener off).
        bind: the address to listen on (None: that of the first native listener).
        tls: TLS settings (``[http.tls]``, as for a native listener); None for plain HTTP.
        metrics_auth: whether ``/metrics`` needs credentials (with the ``admin`` permission).
        max_body: largest request body accepted, octets; larger is refused with 413.
        auth_cache_seconds: how long an accepted user name and password are remembered, so
            that a polling console does not cost a password hash per request (0 = never).
        max_connections: open HTTP connections at most (0 = unlimited); past it a new
            socket is closed at once.
    """

    port: int = DEFAULT_HTTP_PORT
    bind: str | None = None
    tls: TlsConfig | None = None
    metrics_auth: bool = False
    max_body: int = 1024 * 1024
    auth_cache_seconds: float = 60.0
    max_connections: int = 256

    @property
    def enabled(self) -> bool:
        """Whether the listener is on (``port`` is not -1)."""
        return self.port != -1


@dataclasses.dataclass(frozen=True)
class Limits:
    """Bounds on what one peer may hold (STYLE rule 5).

    Attributes:
        max_connections: connections admitted at once (0 = unlimited); past it ``Connect``
            fails with ResourceAllocationException.
        max_sessions_per_connection: open sessions of one connection (0 = unlimited).
        max_consumers_per_connection: open consumers of one connection (0 = unlimited).
        max_temporaries_per_connection: temporary destinations one connection owns at once
            (0 = unlimited); past it ``CreateTemporary`` fails with
            ResourceAllocationException (a STOMP client gets an ERROR frame).
        max_frame: largest frame payload accepted, octets; larger closes the connection.
        handshake_timeout: seconds a new connection has for its preamble and ``Connect``
            (and a TLS connection for its TLS handshake).
        heartbeat: seconds; the server sends a ``Heartbeat`` to a connection it has not
            written to, or not heard from, for that long, and closes one it has not heard
            from for two intervals.
        write_buffer_high: octets queued for a client past which the server stops reading
            its requests, until the queue is below ``write_buffer_low``.
        write_buffer_low: see ``write_buffer_high``.
        shutdown_grace: seconds a graceful stop waits for clients to take their last bytes.
        max_inflight_requests: requests of one connection waiting for their reply (mostly for
            the store) past which the server stops reading that connection until half are
            answered.
        max_handshake_frame: largest frame payload accepted before the connection is
            authenticated, octets (a ``Connect`` is small); larger closes the connection.
        frame_timeout: seconds a frame has to arrive in full once its first octet has;
            past it the connection is closed (0 = no deadline).
        max_pending: sockets not yet authenticated, server-wide (0 = unlimited); past it a
            new socket is closed at once.
        max_pending_per_address: sockets not yet authenticated from one address (0 =
            unlimited); past it a new socket from that address is closed at once.
        login_failures: failed logins from one address within ``login_window`` after which
            that address's logins are refused at once, without a password check, for
            ``login_backoff`` seconds (doubled at each further lock-out, up to
            ``login_backoff_max``); 0 = never.
        login_window: see ``login_failures``.
        login_backoff: see ``login_failures``.
        login_backoff_max: see ``login_failures``.
        auth_checks_per_address: password checks of one address running at once; the rest of
            that address's wait in its own queue so other addresses get a worker.
        stomp_max_frame: largest STOMP frame (command, headers, body), octets.
        stomp_max_headers: header lines of one STOMP frame.
        stomp_max_header_length: one STOMP header line, octets.
        stomp_max_body: one STOMP frame's body, octets.
        stomp_max_prefetch: the largest ``activemq.prefetchSize`` a STOMP SUBSCRIBE may ask
            for (messages handed over and not yet acknowledged); more is refused with an
            ERROR frame.
        stomp_max_transaction_bytes: encoded octets of the SENDs one STOMP transaction may
            hold until COMMIT; one more is refused with an ERROR frame.
        openwire_max_prefetch: the largest prefetch an OpenWire consumer gets; a larger
            ``prefetchSize`` (ActiveMQ's topic default is 32766) is lowered to it.
    """

    max_connections: int = 1000
    max_sessions_per_connection: int = 1000
    max_consumers_per_connection: int = 10_000
    max_temporaries_per_connection: int = 1000
    max_frame: int = 16 * 1024 * 1024 + 64 * 1024
    handshake_timeout: float = 10.0
    heartbeat: float = 30.0
    write_buffer_high: int = 4 * 1024 * 1024
    write_buffer_low: int = 1024 * 1024
    shutdown_grace: float = 5.0
    max_inflight_requests: int = 4096
    max_handshake_frame: int = 64 * 1024
    frame_timeout: float = 30.0
    max_pending: int = 512
    max_pending_per_address: int = 64
    login_failures: int = 5
    login_window: float = 60.0
    login_backoff: float = 30.0
    login_backoff_max: float = 600.0
    auth_checks_per_address: int = 2
    stomp_max_frame: int = 4 * 1024 * 1024 + 64 * 1024
    stomp_max_headers: int = 64
    stomp_max_header_length: int = 8192
    stomp_max_body: int = 4 * 1024 * 1024
    stomp_max_prefetch: int = 10_000
    stomp_max_transaction_bytes: int = 64 * 1024 * 1024
    openwire_max_prefetch: int = 32_767


@dataclasses.dataclass(frozen=True)
class UserConfig:
    """One user: a password hash (``hash_password``) and optional roles."""

    password: str
    roles: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class ServerConfig:
    """Everything ``ternmq serve`` needs.

    Attributes:
        listeners: the listening sockets.
        data_dir: directory of the durable store.
        store: where the durable store is, overriding ``data_dir`` when given: a directory
            path or ``sqlite:PATH`` (SQLite), or ``postgresql://USER:PASSWORD@HOST:PORT/DB``.
        fsync: ``always`` (every receipt follows an fsync) or ``batch`` (see the store).
        fsync_interval: with ``fsync = "batch"``, seconds between two fsyncs at most.
        limits: per-connection and server-wide bounds.
        broker: the broker engine's settings (destinations, policies, memory).
        users: ``{name: UserConfig}``; empty means nobody authenticates.
        permissions: ``{principal: {action: (pattern, ...)}}``; empty means no checks.
        anonymous: whether connections without a user are admitted (None: only when no
            users are configured).
        populate_user_id: stamp ``JMSXUserID`` with the authenticated user on every send.
        log_level: ``debug``, ``info``, ``warning`` or ``error``.
        cpu_affinity: the CPUs the server process may run on (``os.sched_setaffinity``);
            empty (the default) leaves the choice to the operating system. See
            docs/operations.md "CPU affinity".
        stomp_port: the STOMP-only listener's port on the first native listener's address
            (``--stomp-port``; 0 picks a free one, -1 turns it off). None (the default) is
            61613, skipped with a warning if that port is taken (STOMP is served on the main
            port too); a port given explicitly must bind.
        http: the HTTP listener (None: no HTTP listener; a config file or ``ternmq serve``
            gives one on port 8161 unless ``[http] port = -1`` or ``--http-port -1``).
        stomp_persistent_default: whether a STOMP SEND without a ``persistent`` header is
            PERSISTENT (False, the default: NON_PERSISTENT, as in ActiveMQ, Artemis and
            RabbitMQ); for the ``stomp_port`` listener, STOMP over WebSocket, and every
            ``[[listeners]]`` entry that does not set its own.
        openwire_port: the OpenWire-only listener's port on the first native listener's
            address (``--openwire-port``; 0 picks a free one). None or -1 (the default):
            none, OpenWire is served on the main port.
    """

    listeners: tuple[ListenerConfig, ...] = (ListenerConfig(),)
    data_dir: str = "./data"
    store: str | None = None
    fsync: Fsync = "always"
    fsync_interval: float = 0.05
    limits: Limits = dataclasses.field(default_factory=Limits)
    broker: BrokerConfig = dataclasses.field(default_factory=BrokerConfig)
    users: Mapping[str, UserConfig] = dataclasses.field(default_factory=dict)
    permissions: Mapping[str, Mapping[str, tuple[str, ...]]] = dataclasses.field(
        default_factory=dict
    )
    anonymous: bool | None = None
    populate_user_id: bool = False
    log_level: LogLevel = "info"
    cpu_affinity: tuple[int, ...] = ()
    stomp_port: int | None = None
    http: HttpConfig | None = None
    stomp_persistent_default: bool = False
    openwire_port: int | None = None

    def all_listeners(self) -> tuple[ListenerConfig, ...]:
        """The listeners that are on (a port of -1 is off), then the STOMP-only listener of
        ``stomp_port`` (unless -1), then the HTTP listener (``protocol == "http"``) when it is
        on; each with its ``stomp_persistent_default`` settled (the top-level one unless it
        has its own). The first native listener's ``bind`` is the others' default, even when
        that listener is off."""
        out = tuple(ls for ls in self.listeners if ls.port != -1)
        native_bind = next(
            (ls.bind for ls in self.listeners if ls.protocol == "native"), "127.0.0.1"
        )
        port = DEFAULT_STOMP_PORT if self.stomp_port is None else self.stomp_port
        if port != -1:
            out = (*out, ListenerConfig(bind=native_bind, port=port, protocol="stomp"))
        if self.openwire_port is not None and self.openwire_port != -1:
            out = (
                *out,
                ListenerConfig(bind=native_bind, port=self.openwire_port, protocol="openwire"),
            )
        http = self.http
        if http is not None and http.enabled:
            bind = http.bind if http.bind is not None else native_bind
            out = (*out, ListenerConfig(bind=bind, port=http.port, tls=http.tls, protocol="http"))
        return tuple(
            ls
            if ls.stomp_persistent_default is not None
            else dataclasses.replace(ls, stomp_persistent_default=self.stomp_persistent_default)
            for ls in out
        )

    @property
    def store_target(self) -> str:
        """Where the durable store is: ``store`` if given, else ``data_dir``."""
        return self.data_dir if self.store is None else self.store

    @property
    def anonymous_allowed(self) -> bool:
        """``anonymous`` with its default applied."""
        return (not self.users) if self.anonymous is None else self.anonymous

    def authenticator(self) -> Authenticator:
        """The credential checker of this config.

        Raises:
            ValueError: a malformed password hash.
        """
        return Authenticator({n: u.password for n, u in self.users.items()}, self.anonymous_allowed)

    def authorizer(self) -> Authorizer | None:
        """The permission checker, or None when no permissions are configured.

        Raises:
            ValueError: an unknown action or a malformed pattern.
        """
        if not self.permissions:
            return None
        return Authorizer(self.permissions, {n: u.roles for n, u in self.users.items()})

    def broker_config(self) -> BrokerConfig:
        """The broker settings with the server's connection limit applied."""
        return dataclasses.replace(self.broker, max_connections=self.limits.max_connections)

    def with_overrides(
        self,
        *,
        bind: str | None = None,
        port: int | None = None,
        data_dir: str | None = None,
        store: str | None = None,
        log_level: LogLevel | None = None,
        cpu_affinity: tuple[int, ...] | None = None,
        stomp_port: int | None = None,
        http_port: int | None = None,
        openwire_port: int | None = None,
    ) -> ServerConfig:
        """This config with command-line values applied: ``bind``/``port`` replace those of
        the first plain-TCP native listener (one is added if there is none; a ``port`` of -1
        turns it off, its ``bind`` still the other listeners' default); ``http_port`` that of
        the HTTP listener (-1: off).

        Raises:
            ValueError: ``port`` or ``http_port`` is not a TCP port, 0 or -1.
        """
        cfg = self
        if port is not None and not -1 <= port <= 65535:
            raise ValueError(f"--port {port}: give a TCP port, 0 (any) or -1 (off)")
        if http_port is not None:
            if not -1 <= http_port <= 65535:
                raise ValueError(f"--http-port {http_port}: give a TCP port, 0 (any) or -1 (off)")
            cfg = dataclasses.replace(
                cfg, http=dataclasses.replace(cfg.http or HttpConfig(), port=http_port)
            )
        if bind is not None or port is not None:
            listeners = list(cfg.listeners)
            idx = next(
                (i for i, ls in enumerate(listeners) if ls.tls is None and ls.protocol == "native"),
                None,
            )
            if idx is None:
                listeners.insert(0, ListenerConfig())
                idx = 0
            old = listeners[idx]
            listeners[idx] = dataclasses.replace(
                old,
                bind=old.bind if bind is None else bind,
                port=old.port if port is None else port,
            )
            cfg = dataclasses.replace(cfg, listeners=tuple(listeners))
        if data_dir is not None:
            cfg = dataclasses.replace(cfg, data_dir=data_dir, store=None)
        if store is not None:
            cfg = dataclasses.replace(cfg, store=store)
        if log_level is not None:
            cfg = dataclasses.replace(cfg, log_level=log_level)
        if cpu_affinity is not None:
            cfg = dataclasses.replace(cfg, cpu_affinity=check_cpus(cpu_affinity, "--cpu-affinity"))
        if stomp_port is not None:
            cfg = dataclasses.replace(cfg, stomp_port=_stomp_port(stomp_port, "--stomp-port"))
        if openwire_port is not None:
            cfg = dataclasses.replace(
                cfg, openwire_port=_stomp_port(openwire_port, "--openwire-port")
            )
        return cfg


# ---- loading ------------------------------------------------------------------------------
_TOP_KEYS: Final = {
    "listeners",
    "data_dir",
    "store",
    "fsync",
    "fsync_interval",
    "limits",
    "broker",
    "destinations",
    "users",
    "permissions",
    "anonymous",
    "populate_user_id",
    "log_level",
    "cpu_affinity",
    "stomp_port",
    "http",
    "stomp_persistent_default",
    "openwire_port",
}
_OPTIONAL_STR = ("dead_letter_queue", "expiry_queue")


def _fields(cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}


def _table(value: object, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"config key {where} must be a table")
    return value


def _check_keys(table: Mapping[str, object], allowed: set[str], where: str) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise ValueError(
            f"unknown config key{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(f'{where}{k}' for k in unknown)}; known: {', '.join(sorted(allowed))}"
        )


def _convert(value: object, cls: Any, where: str) -> Any:
    try:
        return msgspec.convert(value, cls)
    except msgspec.ValidationError as exc:
        raise ValueError(f"config {where}: {exc}") from exc


def _policy_fields(table: Mapping[str, object]) -> dict[str, object]:
    # TOML has no null: an empty string switches a dead-letter or expiry queue off.
    return {k: (None if k in _OPTIONAL_STR and v == "" else v) for k, v in table.items()}


def _parse_broker(raw: dict[str, Any], destinations: dict[str, Any]) -> BrokerConfig:
    top = _fields(BrokerConfig) - {"default_policy", "policies"}
    pol = _fields(DestinationPolicy)
    _check_keys(raw, top | pol, "broker.")
    broker_kw = {k: v for k, v in raw.items() if k in top}
    default = _convert(
        _policy_fields({k: v for k, v in raw.items() if k in pol}), DestinationPolicy, "[broker]"
    )
    policies: dict[str, DestinationPolicy] = {}
    for name, table in destinations.items():
        where = f'destinations."{name}"'
        table = _table(table, where)
        if not (name.startswith("queue://") or name.startswith("topic://")):
            raise ValueError(f"config table {where}: name it queue://NAME or topic://NAME")
        _check_keys(table, pol, f"{where}.")
        merged = {**dataclasses.asdict(default), **_policy_fields(table)}
        policies[name] = _convert(merged, DestinationPolicy, where)
    base: BrokerConfig = _convert(broker_kw, BrokerConfig, "[broker]")
    return dataclasses.replace(base, default_policy=default, policies=policies)


def _parse_tls(table: Mapping[str, Any], where: str) -> TlsConfig | None:
    if "tls" not in table:
        return None
    t = _table(table["tls"], f"{where}.tls")
    _check_keys(t, _fields(TlsConfig), f"{where}.tls.")
    tls: TlsConfig = _convert(t, TlsConfig, f"{where}.tls")
    if tls.verify_client and not tls.cafile:
        raise ValueError(f"config {where}.tls: verify_client = true needs a cafile")
    return tls


def _parse_http(raw: object) -> HttpConfig:
    table = _table(raw, "http")
    _check_keys(table, _fields(HttpConfig), "http.")
    tls = _parse_tls(table, "http")
    fields = {k: v for k, v in table.items() if k != "tls"}
    http: HttpConfig = _convert(fields, HttpConfig, "[http]")
    http = dataclasses.replace(http, tls=tls)
    if not -1 <= http.port <= 65535:
        raise ValueError(f"config http.port: {http.port} is not a TCP port, 0 (any) or -1 (off)")
    if http.max_body <= 0:
        raise ValueError("config http.max_body must be positive")
    if http.auth_cache_seconds < 0:
        raise ValueError("config http.auth_cache_seconds must not be negative")
    if http.max_connections < 0:
        raise ValueError("config http.max_connections must not be negative")
    return http


def _parse_listener(raw: object, i: int) -> ListenerConfig:
    where = f"listeners[{i}]"
    table = _table(raw, where)
    _check_keys(table, _fields(ListenerConfig), f"{where}.")
    tls = _parse_tls(table, where)
    default_port = DEFAULT_TLS_PORT if tls is not None else DEFAULT_PORT
    protocol = table.get("protocol", "native")
    if protocol == "http":
        raise ValueError(f"config {where}.protocol: configure the HTTP listener in an [http] table")
    if protocol not in LISTENER_PROTOCOLS:
        raise ValueError(
            f"config {where}.protocol: {protocol!r} is not a protocol this server serves; "
            f"known: {', '.join(LISTENER_PROTOCOLS)}"
        )
    listener = ListenerConfig(
        bind=_convert(table.get("bind", "127.0.0.1"), str, f"{where}.bind"),
        port=_convert(table.get("port", default_port), int, f"{where}.port"),
        tls=tls,
        protocol=protocol,
        stomp_persistent_default=_convert(
            table.get("stomp_persistent_default"),
            bool | None,
            f"{where}.stomp_persistent_default",
        ),
    )
    if not -1 <= listener.port <= 65535:
        raise ValueError(
            f"config {where}.port: {listener.port} is not a TCP port (0: a free one, -1: off)"
        )
    return listener


def _stomp_port(port: int, where: str) -> int:
    if not -1 <= port <= 65535:
        raise ValueError(f"{where}: {port} is not a TCP port (0: a free one, -1: off)")
    return port


def check_cpus(cpus: tuple[int, ...], where: str) -> tuple[int, ...]:
    """``cpus`` if it is a non-empty set of CPU numbers (sorted, without repeats).

    Raises:
        ValueError: empty, or a negative number; the message names ``where``.
    """
    if not cpus:
        raise ValueError(f"{where}: give at least one CPU number (e.g. 1, or 0,1)")
    bad = [n for n in cpus if n < 0]
    if bad:
        raise ValueError(f"{where}: CPU numbers start at 0, not {bad[0]}")
    return tuple(sorted(set(cpus)))


def _check_limits(limits: Limits) -> None:
    for f in dataclasses.fields(Limits):
        value = getattr(limits, f.name)
        if value < 0:
            raise ValueError(f"config limits.{f.name}: {value} must not be negative")
    for name in (
        "max_frame",
        "handshake_timeout",
        "heartbeat",
        "write_buffer_high",
        "max_inflight_requests",
        "max_handshake_frame",
        "login_window",
        "login_backoff",
        "auth_checks_per_address",
        "stomp_max_frame",
        "stomp_max_headers",
        "stomp_max_header_length",
        "stomp_max_body",
        "stomp_max_prefetch",
        "stomp_max_transaction_bytes",
    ):
        if getattr(limits, name) <= 0:
            raise ValueError(f"config limits.{name} must be positive")
    if limits.write_buffer_low > limits.write_buffer_high:
        raise ValueError("config limits.write_buffer_low must not exceed write_buffer_high")


def parse_config(data: Mapping[str, Any]) -> ServerConfig:
    """A :class:`ServerConfig` from the parsed TOML document ``data``.

    Raises:
        ValueError: an unknown key, a value of the wrong type, or an inconsistent setting;
            the message names the key.
    """
    _check_keys(data, _TOP_KEYS, "")
    kw: dict[str, Any] = {}
    if "listeners" in data:
        raw = data["listeners"]
        if not isinstance(raw, list):
            raise ValueError("config key listeners must be an array of tables ([[listeners]])")
        kw["listeners"] = tuple(_parse_listener(item, i) for i, item in enumerate(raw))
    for key, typ in (
        ("data_dir", str),
        ("store", str),
        ("fsync", Fsync),
        ("fsync_interval", float),
        ("anonymous", bool),
        ("populate_user_id", bool),
        ("log_level", LogLevel),
        ("stomp_persistent_default", bool),
    ):
        if key in data:
            kw[key] = _convert(data[key], typ, key)
    if "cpu_affinity" in data:
        cpus = _convert(data["cpu_affinity"], list[int], "cpu_affinity")
        kw["cpu_affinity"] = check_cpus(tuple(cpus), "config cpu_affinity")
    if "openwire_port" in data:
        kw["openwire_port"] = _stomp_port(
            _convert(data["openwire_port"], int, "openwire_port"), "config openwire_port"
        )
    if "stomp_port" in data:
        kw["stomp_port"] = _stomp_port(
            _convert(data["stomp_port"], int, "stomp_port"), "config stomp_port"
        )
    if "limits" in data:
        table = _table(data["limits"], "limits")
        _check_keys(table, _fields(Limits), "limits.")
        kw["limits"] = _convert(table, Limits, "[limits]")
        _check_limits(kw["limits"])
    kw["broker"] = _parse_broker(
        _table(data.get("broker", {}), "broker"),
        _table(data.get("destinations", {}), "destinations"),
    )
    users: dict[str, UserConfig] = {}
    for name, table in _table(data.get("users", {}), "users").items():
        where = f"users.{name}"
        table = _table(table, where)
        _check_keys(table, _fields(UserConfig), f"{where}.")
        if name == ANONYMOUS:
            raise ValueError(f"config {where}: {ANONYMOUS!r} is reserved for unauthenticated users")
        users[name] = _convert(table, UserConfig, where)
    kw["users"] = users
    permissions: dict[str, dict[str, tuple[str, ...]]] = {}
    for principal, table in _table(data.get("permissions", {}), "permissions").items():
        where = f'permissions."{principal}"'
        table = _table(table, where)
        _check_keys(table, set(ACTIONS), f"{where}.")
        permissions[principal] = {
            action: tuple(_convert(v, list[str], f"{where}.{action}"))
            for action, v in table.items()
        }
    kw["permissions"] = permissions
    kw["http"] = _parse_http(data.get("http", {}))
    cfg = ServerConfig(**kw)
    cfg.authenticator()  # malformed hashes fail at load time, not at the first Connect
    cfg.authorizer()
    if cfg.limits.max_frame < cfg.broker.max_message_bytes:
        raise ValueError(
            f"config limits.max_frame ({cfg.limits.max_frame}) is below broker.max_message_bytes "
            f"({cfg.broker.max_message_bytes}): raise max_frame (leave room for headers)"
        )
    return cfg


def load_config(path: str | pathlib.Path | None) -> ServerConfig:
    """Read a TOML config file (None: the defaults, with the HTTP listener on port 8161).

    Raises:
        ValueError: the file cannot be read or parsed, or a setting is wrong.
    """
    if path is None:
        return ServerConfig(http=HttpConfig())
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as exc:
        raise ValueError(f"cannot read config file {path}: {exc.strerror or exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"config file {path} is not valid TOML: {exc}") from exc
    return parse_config(data)
