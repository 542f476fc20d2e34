"""The ``tcp`` and ``tls`` transports of the conformance suite: a ``ternmq serve`` process per
broker.

:class:`ServerBroker` stands in for :class:`~ternmq.broker.embedded.EmbeddedBroker` when a test
runs over the network. It is one real server process, started as the operator starts it::

    ternmq serve --port 0 --data-dir DIR --config DIR/server.toml

in a directory of its own (``data/`` for the SQLite store, ``server.toml`` generated from the
test's settings, ``server.log`` for its structured log). The config has a second listener,
TLS on port 0 with a self-signed certificate made once per session, so the same process
serves ``tcp://`` and ``tls://`` (``tls://127.0.0.1:PORT?cafile=CERT``). The ports come from
the ``ternmq listening on ...`` lines the server prints when it is ready.

Settings are what ``make_broker(**settings)`` gets, as for the embedded broker:
``BrokerConfig`` and destination-policy fields go to ``[broker]`` and
``[destinations."queue://NAME"]`` (only values that differ from the defaults, so the file is
short), ``users={name: password}`` to ``[users]`` (scrypt hashes, cheap parameters),
``max_connections`` to ``[limits]``, ``fsync`` and ``fsync_interval`` to the top level. A store
object cannot reach another process: :func:`server_toml` says so (``TypeError``) and such
tests carry ``@pytest.mark.vm_only``. Nor can a fake clock: a test that drives time runs its
network broker as :class:`ThreadServerBroker`, the same server (``BrokerServer``: asyncio
listener, native protocol, engine, SQLite store) on a thread of the test process with the
test's clock, reached over a real socket; the conftest makes the test's tcp clients read that
clock too.

Cost: a server process is ~0.22 s of CPU to start (interpreter and imports) and ~40 MB, and
the tcp and tls runs have ~600 tests. Most want a default broker, so :class:`ServerPool`
keeps ``POOL_SIZE`` default servers started (or starting) in the background; a test takes a
warm one and another starts while the test runs (the suite mostly waits on timeouts, so the
start-up overlaps that wait). Tests with settings start their own server and wait for it.
At teardown a server is SIGKILLed (nothing graceful is under test there) and its data
directory removed.

Restarts: ``stop()`` is SIGTERM and waits for a clean exit (the server tells every client
``ConnectionFailed``; a non-zero exit fails the test with the server's log); ``kill()`` is
SIGKILL (a crash); ``start()`` starts a new process on the same data directory, config and
ports, so URLs and factories made before the restart keep working.

PostgreSQL (the ``tcp+postgres`` transport): a pool made with ``store=`` (a callable giving
the URL of a fresh database: ``PgServer.new_database``) starts every server with
``--store postgresql://...`` on a database of its own instead of ``--data-dir``; the
database is handed back (``release``, ``PgServer.done``: dropped later) when the server is
closed. ``fail_writes`` there adds a trigger that fails every message insert, as a full disk
fails SQLite's writes.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import errno
import itertools
import json
import math
import os
import pathlib
import queue
import random
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import IO, Any, Literal

from _openssl import self_signed_cert
from ternmq.broker.config import BrokerConfig, DestinationPolicy
from ternmq.server.config import Limits
from ternmq.server.security import hash_password

Scheme = Literal["tcp", "tls", "failover"]

POOL_SIZE = 6  # warm default servers kept ready or starting
START_TIMEOUT = 30.0  # interpreter start-up and imports on a loaded 2-core machine
STOP_TIMEOUT = 30.0  # graceful stop: store flush and the clients' shutdown grace
START_ATTEMPTS = 5  # a restart on its old port retries while the port is briefly taken
_LISTENING = re.compile(r"ternmq listening on (tcp|tls)://127\.0\.0\.1:(\d+)")
_SERVER_FIELDS = ("fsync", "fsync_interval")  # EmbeddedBroker settings that are server keys

# Every process started here, so that none outlives the test session (see _kill_all).
_live: set[subprocess.Popen[bytes]] = set()
_live_lock = threading.Lock()


def _serve_command() -> list[str]:
    """``ternmq serve``: the console script next to this interpreter (the venv's), else the
    module that script runs."""
    script = pathlib.Path(sys.executable).with_name("ternmq")
    if script.exists():
        return [str(script), "serve"]
    return [sys.executable, "-m", "ternmq.cli", "serve"]


@atexit.register
def _kill_all() -> None:
    """Last line of defence (fixture finalizers normally did this): SIGKILL every server this
    process started that is still running."""
    with _live_lock:
        procs = list(_live)
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(5)


# ---- TLS ---------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class TlsFiles:
    """A self-signed server certificate (also the client's CA file) and its key."""

    cert: str
    key: str


def make_tls_files(directory: pathlib.Path) -> TlsFiles | None:
    """A certificate for ``localhost`` / 127.0.0.1 made with the ``openssl`` command; None
    without it (the tls transport is then skipped)."""
    made = self_signed_cert(directory, "server")
    return None if made is None else TlsFiles(*made)


# ---- the config file ---------------------------------------------------------------------
def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return repr(value) if math.isfinite(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    raise TypeError(f"no TOML form for setting value {value!r}")


def _policy_lines(policy: DestinationPolicy, base: DestinationPolicy, where: str) -> list[str]:
    """``key = value`` lines for the fields of ``policy`` that differ from ``base``."""
    lines = []
    for f in dataclasses.fields(DestinationPolicy):
        value, default = getattr(policy, f.name), getattr(base, f.name)
        if value == default:
            continue
        if value is None:
            if f.name not in ("dead_letter_queue", "expiry_queue"):
                raise TypeError(f"{where}.{f.name} = None has no TOML form")
            value = ""  # the server config's "off"
        lines.append(f"{f.name} = {_toml(value)}")
    return lines


def server_toml(
    settings: Mapping[str, Any], *, tls: TlsFiles | None, tls_port: int = 0
) -> tuple[str, str | None]:
    """The ``server.toml`` text for ``make_broker(**settings)``, and the ``data_dir`` setting
    if there is one (it goes on the command line).

    Raises:
        TypeError: a setting that cannot reach a server process (``clock``, ``store``), an
            unknown setting, or a value without a TOML form.
    """
    settings = dict(settings)
    for name, why in (
        ("clock", "a fake clock cannot drive another process: use ThreadServerBroker"),
        ("store", "a store object cannot be handed to another process"),
    ):
        if name in settings:
            raise TypeError(f"{why}: mark the test @pytest.mark.vm_only('...')")
    data_dir = settings.pop("data_dir", None)
    users: Mapping[str, str] = settings.pop("users", None) or {}
    top = {k: settings.pop(k) for k in _SERVER_FIELDS if k in settings}
    broker = BrokerConfig.from_settings(**settings)
    default = BrokerConfig()
    lines = ['log_level = "warning"']
    lines += [f"{k} = {_toml(v)}" for k, v in top.items()]
    lines += ["", "[[listeners]]", 'bind = "127.0.0.1"', "port = 0"]
    if tls is not None:
        lines += ["", "[[listeners]]", 'bind = "127.0.0.1"', f"port = {tls_port}"]
        lines += ["[listeners.tls]", f"cert = {_toml(tls.cert)}", f"key = {_toml(tls.key)}"]
    # 0 = unlimited, as the embedded broker; the frame must carry the largest message.
    max_frame = max(Limits.max_frame, broker.max_message_bytes + 64 * 1024)
    lines += ["", "[limits]", f"max_connections = {int(broker.max_connections)}"]
    lines += [f"max_frame = {max_frame}", "", "[broker]"]
    for f in dataclasses.fields(BrokerConfig):
        if f.name in ("default_policy", "policies", "max_connections"):
            continue
        value = getattr(broker, f.name)
        if value != getattr(default, f.name):
            lines.append(f"{f.name} = {_toml(value)}")
    lines += _policy_lines(broker.default_policy, DestinationPolicy(), "broker")
    for name, policy in broker.policies.items():
        lines += ["", f"[destinations.{_toml(name)}]"]
        lines += _policy_lines(policy, broker.default_policy, f"destinations.{name}")
    for name, password in users.items():
        lines += ["", f"[users.{_toml(name)}]"]
        lines.append(f"password = {_toml(hash_password(password, n=2**4))}")
    return "\n".join(lines) + "\n", None if data_dir is None else str(data_dir)


# ---- one server --------------------------------------------------------------------------
class ServerBroker:
    """A ``ternmq serve`` process with the embedded broker's test-facing surface: ``url``,
    ``stop()`` and ``start()`` (a restart on the same ports and data directory), plus
    ``kill()`` (SIGKILL, a crash) and ``close()`` (SIGKILL and remove its files).

    Args:
        workdir: an empty directory of its own (config, log, and ``data/`` unless the
            settings name a ``data_dir``).
        settings: what ``make_broker(**settings)`` got (see :func:`server_toml`).
        tls: the TLS listener's certificate; None: no TLS listener.
        store: a ``postgresql://`` URL: the server's store (``--store``), unless the settings
            name a ``data_dir``; ``release`` is called with it once the server is closed.

    Raises:
        TypeError: settings that cannot reach a server process (see :func:`server_toml`).
    """

    in_process = False  # True: a ThreadServerBroker (settings carry the clock)

    def __init__(
        self,
        workdir: pathlib.Path,
        settings: Mapping[str, Any],
        tls: TlsFiles | None,
        store: str | None = None,
        release: Callable[[str], None] | None = None,
    ) -> None:
        self.workdir = workdir
        self.scheme: Scheme = "tcp"
        self._settings = dict(settings)
        # a ThreadServerBroker's clock (a process cannot take one: server_toml says so)
        self._clock = self._settings.pop("clock") if self.in_process else None
        self._thread: Any = None  # a ThreadServerBroker's running server
        self._tls = tls
        _, data_dir = server_toml(self._settings, tls=tls)  # fails early on bad settings
        self.data_dir = pathlib.Path(data_dir) if data_dir else workdir / "data"
        self.store = None if data_dir else store
        self._release = release if self.store is not None else None
        self.config_path = workdir / "server.toml"
        self.log_path = workdir / "server.log"
        self.ports: dict[str, int] = {}
        self.proc: subprocess.Popen[bytes] | None = None

    # ---- what tests use --------------------------------------------------------------
    @property
    def url(self) -> str:
        """``tcp://127.0.0.1:PORT``, or ``tls://...?cafile=CERT`` when ``scheme`` is tls, or
        ``failover:(tcp://127.0.0.1:PORT)`` (automatic reconnect) when it is failover."""
        if not self.ports:
            return ""
        if self.scheme == "failover":
            return f"failover:(tcp://127.0.0.1:{self.ports['tcp']})"
        if self.scheme == "tls":
            assert self._tls is not None, "this server has no TLS listener"
            return f"tls://127.0.0.1:{self.ports['tls']}?cafile={self._tls.cert}"
        return f"tcp://127.0.0.1:{self.ports['tcp']}"

    @property
    def broker(self) -> None:
        """The engine lives in another process: tests observe it through the client API
        and the admin ``Stat`` request (``_helpers.broker_stats``)."""
        raise TypeError(
            "broker.broker: the engine runs in a ternmq serve process; observe it through "
            "the client API or Stat (see _helpers.py)"
        )

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> ServerBroker:
        """Start the server (again: on the same ports, config and data directory) and wait
        until it listens; a no-op while it runs.

        Raises:
            AssertionError: it did not start (its log is in the message).
        """
        if self.running:
            return self
        for attempt in range(START_ATTEMPTS):
            if self._spawn():
                return self
            if not self.ports and "address already in use" not in self.log()[-2000:]:
                break  # a first start that failed for another reason: a real failure
            time.sleep(0.05 * (attempt + 1))  # the port is briefly taken: back off
        raise AssertionError(f"ternmq serve did not start; log:\n{self.log()[-4000:]}")

    def stop(self) -> None:
        """Graceful stop (SIGTERM): every client is told ``ConnectionFailed``; waits for the
        process to exit, which must be with status 0."""
        proc = self.proc
        if proc is None:
            return
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            code = None
            proc.kill()
        self._reap()
        assert code == 0, f"ternmq serve exited with {code} on SIGTERM; log:\n{self.log()[-4000:]}"

    def kill(self) -> None:
        """SIGKILL (a crash) and wait for the process to be gone."""
        proc = self.proc
        if proc is not None and proc.poll() is None:
            proc.kill()
        self._reap()

    def close(self) -> None:
        """SIGKILL, then (in the background: the test need not wait) reap the process and
        remove the data directory; the config and log stay."""
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.kill()
        owned = self.data_dir if self.data_dir.parent == self.workdir else None
        _reaper.put((proc, owned))
        release, self._release = self._release, None
        if release is not None and self.store is not None:
            release(self.store)

    def fail_writes(self, on: bool) -> None:
        """Make every file write of the server process fail (``on``) as a full disk would, or
        work again: its RLIMIT_FSIZE soft limit goes to 0 (a write then fails with EFBIG,
        which SQLite reports as "disk I/O error"; CPython ignores SIGXFSZ) and back.

        Raises:
            AssertionError: the server is not running.
        """
        assert self.proc is not None and self.proc.poll() is None, "the server is not running"
        if self.store is not None:
            _fail_postgres_writes(self.store, on)
            return
        import resource

        _, hard = resource.prlimit(self.proc.pid, resource.RLIMIT_FSIZE)
        resource.prlimit(self.proc.pid, resource.RLIMIT_FSIZE, (0 if on else hard, hard))

    def log(self) -> str:
        """What the server logged (every start of it)."""
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ""

    # ---- the process -----------------------------------------------------------------
    def _wanted_ports(self) -> dict[str, int]:
        """The ports to listen on: those of the first start on a restart, else fresh
        :func:`stable_port` ones (tcp, and tls if the server has it)."""
        return self.ports or {
            "tcp": stable_port(),
            **({"tls": stable_port()} if self._tls is not None else {}),
        }

    def _spawn(self) -> bool:
        """Start a process and wait for its listening lines; False if it exited first. A
        first start takes ports outside the system's ephemeral range (:func:`stable_port`),
        so that no other process's port 0 can take them while a restart waits for them."""
        want = self._wanted_ports()
        text, _ = server_toml(self._settings, tls=self._tls, tls_port=want.get("tls", 0))
        self.config_path.write_text(text, encoding="utf-8")
        argv = [
            *_serve_command(),
            "--port",
            str(want["tcp"]),
            "--http-port",
            "-1",
            "--config",
            str(self.config_path),
            *(
                ["--data-dir", str(self.data_dir)]
                if self.store is None
                else ["--store", self.store]
            ),
        ]
        with self.log_path.open("ab") as log:
            proc = _popen(argv, log)
        with _live_lock:
            _live.add(proc)
        self.proc = proc
        try:
            ports = self._read_ports(proc)
        except BaseException:
            self.kill()
            raise
        if ports is None:
            self._reap()
            return False
        if ports != want:
            self.kill()
            raise AssertionError(f"started on {ports}, not on {want}")
        self.ports = ports
        return True

    def _read_ports(self, proc: subprocess.Popen[bytes]) -> dict[str, int] | None:
        """The ports of the listening lines (None: the process exited before)."""
        assert proc.stdout is not None
        want = 2 if self._tls is not None else 1
        deadline = time.monotonic() + START_TIMEOUT
        buf = b""
        ports: dict[str, int] = {}
        fd = proc.stdout.fileno()
        poller = select.poll()  # not select(): the test process may hold fds above 1024
        poller.register(fd, select.POLLIN)
        while len(ports) < want:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(
                    f"ternmq serve did not listen within {START_TIMEOUT} s; log:\n"
                    + self.log()[-4000:]
                )
            if not poller.poll(left * 1000):
                continue
            chunk = os.read(fd, 4096)
            if not chunk:
                return None
            buf += chunk
            *lines, buf = buf.split(b"\n")
            for line in lines:
                m = _LISTENING.fullmatch(line.decode(errors="replace").strip())
                assert m, f"unexpected output of ternmq serve: {line!r}"
                ports[m.group(1)] = int(m.group(2))
        return ports

    def _reap(self) -> None:
        proc, self.proc = self.proc, None
        _reap(proc)


class ThreadServerBroker(ServerBroker):
    """The server of :class:`ServerBroker` on a thread of the test process, driven by the
    test's fake clock (``settings["clock"]``): same surface and generated config; ``start()``
    again uses the same ports and data directory; ``kill()`` and ``close()`` are a graceful
    stop (a thread cannot crash).

    Args:
        workdir: an empty directory of its own.
        settings: what ``make_broker(**settings)`` got, ``clock`` included.
        tls: the TLS listener's certificate; None: no TLS listener.
        store, release: as for :class:`ServerBroker`.
    """

    in_process = True

    @property
    def running(self) -> bool:
        return self._thread is not None

    def start(self) -> ThreadServerBroker:
        """Start (again, on the same ports and data directory); a no-op while running."""
        from ternmq.server.app import ServerThread
        from ternmq.server.config import load_config

        if self._thread is not None:
            return self
        want = self._wanted_ports()
        text, _ = server_toml(self._settings, tls=self._tls, tls_port=want.get("tls", 0))
        self.config_path.write_text(text, encoding="utf-8")
        config = load_config(self.config_path).with_overrides(
            port=want["tcp"], data_dir=str(self.data_dir), http_port=-1
        )
        if self.store is not None:
            config = config.with_overrides(store=self.store)
        self._thread = ServerThread(config, clock=self._clock).start()
        for address in self._thread.addresses:
            scheme, _, rest = address.partition("://")
            self.ports[scheme] = int(rest.rpartition(":")[2])
        return self

    def stop(self) -> None:
        """Graceful stop: every client is told ``ConnectionFailed``."""
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.stop()

    def kill(self) -> None:
        """As :meth:`stop`."""
        self.stop()

    def close(self) -> None:
        """As :meth:`stop`; the store is released."""
        self.stop()
        release, self._release = self._release, None
        if release is not None and self.store is not None:
            release(self.store)


_FAIL_TRIGGER = "ternmq_test_fail_writes"


def _fail_postgres_writes(url: str, on: bool) -> None:
    """Make every message insert of the store at ``url`` fail (``on``), with "disk I/O
    error" in the database's error as SQLite's on a full disk, or work again."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as db:
        if on:
            db.execute(
                f"CREATE OR REPLACE FUNCTION {_FAIL_TRIGGER}() RETURNS trigger "
                "LANGUAGE plpgsql AS $$ BEGIN "
                "RAISE EXCEPTION 'disk I/O error (the test failed this write)'; END $$"
            )
            db.execute(
                f"CREATE OR REPLACE TRIGGER {_FAIL_TRIGGER} BEFORE INSERT ON ternmq_messages "
                f"FOR EACH STATEMENT EXECUTE FUNCTION {_FAIL_TRIGGER}()"
            )
        else:
            db.execute(f"DROP TRIGGER IF EXISTS {_FAIL_TRIGGER} ON ternmq_messages")


def _popen(argv: list[str], log: IO[bytes]) -> subprocess.Popen[bytes]:
    """Start ``argv`` in a session of its own (a Ctrl-C of the test run is for pytest only),
    stdout to a pipe, stderr to ``log``.

    Once in some thousands of starts from the pool's threads, exec reported EFAULT ("Bad
    address") for the console script (CPython's vfork path in a threaded process; not
    reproduced alone): that error alone is retried, at most ``START_ATTEMPTS`` times.
    """
    for attempt in range(START_ATTEMPTS):
        try:
            return subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=log,
                start_new_session=True,
            )
        except OSError as exc:
            if exc.errno != errno.EFAULT or attempt == START_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


def _ephemeral_low() -> int:
    """The lowest port the system hands out for a bind to port 0 (Linux's
    ``ip_local_port_range``; 32768 where it cannot be read)."""
    try:
        text = pathlib.Path("/proc/sys/net/ipv4/ip_local_port_range").read_text()
        return int(text.split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


_STABLE_LOW = 20000  # stable ports: from here up to the ephemeral range


def stable_port() -> int:
    """A free port on 127.0.0.1 below the ephemeral range, for a server that restarts on its
    port: the many servers, clients and databases of a parallel run bind port 0 and get
    ephemeral ports, so none of them can take this one while the server is down (a
    restarted conformance server once found its port taken by another worker's server)."""
    high = _ephemeral_low()
    if high <= _STABLE_LOW + 1000:  # no room below the range: the system's choice
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return int(s.getsockname()[1])
    while True:
        port = random.randrange(_STABLE_LOW, high)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port


def _reap(proc: subprocess.Popen[bytes] | None) -> None:
    """Wait for ``proc`` (already told to end) and release its pipe."""
    if proc is None:
        return
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(STOP_TIMEOUT)
    if proc.stdout is not None:
        proc.stdout.close()
    with _live_lock:
        _live.discard(proc)


class _Reaper:
    """One background thread that waits for killed servers and removes their data
    directories, so a test's teardown only sends the SIGKILL. ``join()`` waits until all
    that was put is done."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[
            tuple[subprocess.Popen[bytes] | None, pathlib.Path | None]
        ] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._pending = 0
        self._idle = threading.Condition(self._lock)
        self._thread: threading.Thread | None = None

    def put(self, item: tuple[subprocess.Popen[bytes] | None, pathlib.Path | None]) -> None:
        with self._lock:
            self._pending += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="reaper", daemon=True)
                self._thread.start()
        self._queue.put(item)

    def _run(self) -> None:
        while True:
            proc, directory = self._queue.get()
            try:
                _reap(proc)
                if directory is not None:
                    shutil.rmtree(directory, ignore_errors=True)
            finally:
                with self._lock:
                    self._pending -= 1
                    self._idle.notify_all()

    def join(self, timeout: float = STOP_TIMEOUT) -> None:
        with self._lock:
            self._idle.wait_for(lambda: self._pending == 0, timeout)


_reaper = _Reaper()


# ---- warm default servers ----------------------------------------------------------------
class ServerPool:
    """Servers with default settings, started ahead of need.

    ``take()`` hands out a started one (waiting only when none is ready) and starts a
    replacement in the background; ``new()`` starts one with settings and waits for it.
    Every server gets a fresh directory under ``base``. ``close()`` kills what is left and
    waits for servers still starting.

    Args:
        base: a directory for the servers' directories and the TLS certificate.
        size: default servers kept ready or starting.
        store: gives each server's ``postgresql://`` store (a fresh database); None: each
            server's SQLite store in its directory.
        release: called with a store's URL once its server is closed.
    """

    def __init__(
        self,
        base: pathlib.Path,
        size: int = POOL_SIZE,
        store: Callable[[], str] | None = None,
        release: Callable[[str], None] | None = None,
    ) -> None:
        self._base = base
        self._store, self._release_store = store, release
        self._size = size
        self.tls = make_tls_files(base)
        self._cond = threading.Condition()
        self._ready: list[ServerBroker] = []
        self._starting = 0
        self._errors: list[BaseException] = []
        self._closed = False
        self._seq = itertools.count()

    def _workdir(self) -> pathlib.Path:
        path = self._base / f"s{next(self._seq):04d}"
        path.mkdir()
        return path

    def new(self, settings: Mapping[str, Any]) -> ServerBroker:
        """A started server with these settings (a fresh process, waited for)."""
        store = None if self._store is None or "data_dir" in settings else self._store()
        server = ServerBroker(self._workdir(), settings, self.tls, store, self._release_store)
        try:
            return server.start()
        except BaseException:
            server.close()
            raise

    def thread_server(
        self, workdir: pathlib.Path, settings: Mapping[str, Any]
    ) -> ThreadServerBroker:
        """A :class:`ThreadServerBroker` (not started) on this pool's kind of store."""
        store = None if self._store is None or "data_dir" in settings else self._store()
        return ThreadServerBroker(workdir, settings, self.tls, store, self._release_store)

    def take(self) -> ServerBroker:
        """A started server with default settings.

        Raises:
            AssertionError: no server became ready in time, or starting one failed.
        """
        with self._cond:
            assert not self._closed, "the server pool is closed"
            self._fill()
            ok = self._cond.wait_for(lambda: self._ready or self._errors, START_TIMEOUT)
            if self._errors:
                raise self._errors.pop(0)
            assert ok, f"no ternmq serve process became ready within {START_TIMEOUT} s"
            server = self._ready.pop(0)
            self._fill()
        if not server.running:  # died while it waited: say so rather than hand it out
            log = server.log()
            server.close()
            raise AssertionError(f"a warm ternmq serve process exited; log:\n{log[-4000:]}")
        return server

    def _fill(self) -> None:
        """Start servers until ``size`` are ready or starting (caller holds ``_cond``)."""
        while not self._closed and len(self._ready) + self._starting < self._size:
            self._starting += 1
            threading.Thread(target=self._start_one, name="server-pool", daemon=True).start()

    def _start_one(self) -> None:
        server: ServerBroker | None = None
        try:
            server = self.new({})
        except BaseException as exc:
            with self._cond:
                self._errors.append(exc)
        with self._cond:
            self._starting -= 1
            if server is not None and not self._closed:
                self._ready.append(server)
                server = None
            self._cond.notify_all()
        if server is not None:  # the pool closed while it started
            server.close()

    def close(self) -> None:
        """Kill the servers not handed out; wait for those still starting."""
        with self._cond:
            self._closed = True
            ready, self._ready = self._ready, []
            self._cond.wait_for(lambda: self._starting == 0, START_TIMEOUT + 5)
        for server in ready:
            server.close()
        _reaper.join()
