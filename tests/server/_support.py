"""Helpers of the server tests: a ``ternmq serve`` subprocess and a raw-socket client.

A server is started as ``python -m ternmq.cli serve --port 0 --http-port -1 --data-dir DIR
[--config F]``; its first stdout line ``ternmq listening on tcp://127.0.0.1:PORT`` gives the
port. With ``http=True`` the HTTP listener is on too (``--http-port 0``), its address read from
the log line ``event=listening protocol=http address=HOST:PORT url=...``
(``ServerProcess.http_url``). Its stderr (the structured log) goes to a file that tests
read. Every process is killed in a finally.
"""

from __future__ import annotations

import os
import pathlib
import re
import select
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.request
from typing import Any

import msgspec
from prometheus_client.parser import text_string_to_metric_families

from ternmq.protocol import commands as c
from ternmq.protocol.frames import PREAMBLE, FrameDecoder, Heartbeat, WireCommand, encode

HOST = "127.0.0.1"
START_TIMEOUT = 30.0  # interpreter start and imports on a loaded machine
IO_TIMEOUT = 10.0
SERVE = (sys.executable, "-m", "ternmq.cli", "serve")  # the command line of a server
_LISTEN_RE = re.compile(r"^ternmq listening on (tcp|tls)://127\.0\.0\.1:(\d+)$")


class ServerProcess:
    """A running ``ternmq serve``; ``stop()`` sends SIGTERM, ``kill()`` SIGKILL, and leaving a
    ``with`` block on it kills it."""

    def __init__(
        self,
        data_dir: pathlib.Path,
        config: str | None,
        workdir: pathlib.Path,
        *,
        http: bool = False,
        store: str | None = None,
        port: int = 0,
        wait: bool = True,
    ) -> None:
        """``store`` replaces ``--data-dir`` (``--store``); ``port`` is the TCP listener's;
        without ``wait`` the caller reads the address later (:meth:`wait_listening`: a
        backup of a live/backup group listens only once it takes over)."""
        self.data_dir = data_dir
        self.log_path = workdir / f"server-{time.monotonic_ns()}.log"
        argv = [
            *SERVE,
            "--port",
            str(port),
            "--http-port",
            "0" if http else "-1",
            *(["--data-dir", str(data_dir)] if store is None else ["--store", store]),
        ]
        if config is not None:
            cfg = workdir / f"server-{time.monotonic_ns()}.toml"
            cfg.write_text(config, encoding="utf-8")
            argv += ["--config", str(cfg)]
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in kill()
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=self._log, stdin=subprocess.DEVNULL, env=env
        )
        self.ports: dict[str, int] = {}
        self._config = config
        if wait:
            self.wait_listening()

    def wait_listening(self, timeout: float = START_TIMEOUT) -> None:
        """Read the listeners' addresses from stdout (the server is killed on a failure).

        Raises:
            AssertionError: they were not printed within ``timeout`` seconds.
        """
        try:
            self._read_addresses(self._config, timeout)
        except BaseException:
            self.kill()
            raise

    def _read_addresses(self, config: str | None, timeout: float) -> None:
        assert self.proc.stdout is not None
        want = 1 + (config or "").count("[listeners.tls]")
        deadline = time.monotonic() + timeout
        buf = b""
        while len(self.ports) < want:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"server did not print its address; log:\n{self.log()}")
            ready, _, _ = select.select([self.proc.stdout], [], [], left)
            if not ready:
                continue
            chunk = os.read(self.proc.stdout.fileno(), 4096)
            if not chunk:
                raise AssertionError(
                    f"server exited ({self.proc.wait(5)}) before listening; log:\n{self.log()}"
                )
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                m = _LISTEN_RE.match(line.decode())
                assert m, f"unexpected stdout line {line!r}"
                self.ports.setdefault(m.group(1), int(m.group(2)))

    @property
    def port(self) -> int:
        """The plain-TCP listener's port."""
        return self.ports["tcp"]

    @property
    def http_url(self) -> str:
        """``http://127.0.0.1:PORT`` (or ``https://``) of the HTTP listener (``http=True``)."""
        line = self.wait_log(r"event=listening protocol=http address=")
        m = re.search(r"url=(https?://\S+)", line)
        assert m, f"no HTTP address in {line!r}"
        return m.group(1)

    def log(self) -> str:
        """What the server logged so far."""
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def wait_log(self, pattern: str, timeout: float = IO_TIMEOUT) -> str:
        """Wait until a log line matches ``pattern``; return it."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while True:
            for line in self.log().splitlines():
                if rx.search(line):
                    return line
            if time.monotonic() > deadline:
                raise AssertionError(f"no log line matches {pattern!r}; log:\n{self.log()}")
            time.sleep(0.02)

    def stop(self, timeout: float = 10.0) -> int:
        """SIGTERM and wait; the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        finally:
            self.kill()

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()  # whatever the block did: no server outlives its test

    def kill(self) -> None:
        """SIGKILL if still running; release the pipes."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._log.close()


class Raw:
    """A raw-socket native-protocol client: frames in, frames out, nothing hidden."""

    def __init__(
        self, port: int, *, tls: ssl.SSLContext | None = None, timeout: float = IO_TIMEOUT
    ) -> None:
        sock = socket.create_connection((HOST, port), timeout=timeout)
        if tls is not None:
            sock = tls.wrap_socket(sock, server_hostname="localhost")
        self.sock = sock
        self.decoder = FrameDecoder()
        self.pending: list[WireCommand] = []
        self.corr = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> Raw:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send_bytes(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send(self, cmd: WireCommand) -> None:
        self.sock.sendall(encode(cmd))

    def handshake(self) -> None:
        """Send the preamble and check the server's."""
        self.sock.sendall(PREAMBLE)
        got = b""
        while len(got) < len(PREAMBLE):
            chunk = self.sock.recv(len(PREAMBLE) - len(got))
            assert chunk, "server closed during the handshake"
            got += chunk
        assert got == PREAMBLE

    def recv(self, *, heartbeats: bool = False) -> WireCommand:
        """The next command (Heartbeats skipped unless asked for)."""
        while True:
            while self.pending:
                cmd = self.pending.pop(0)
                if heartbeats or not isinstance(cmd, Heartbeat):
                    return cmd
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("the server closed the connection")
            self.pending.extend(self.decoder.feed(data))

    def request(self, req: Any) -> Any:
        """Send ``req`` with a fresh corr; return its reply (events are kept in ``events``)."""
        self.corr += 1
        req = msgspec.structs.replace(req, corr=self.corr)
        self.send(req)
        held: list[WireCommand] = []
        while True:
            cmd = self.recv()
            if getattr(cmd, "corr", None) == self.corr and not isinstance(cmd, c.Deliver):
                self.pending[:0] = held  # events that came first stay readable, in order
                return cmd
            held.append(cmd)

    def connect(self, user: str | None = None, password: str | None = None) -> Any:
        """Handshake and Connect; the reply."""
        self.handshake()
        return self.request(c.Connect(user=user, password=password))

    def read_until_closed(self, timeout: float = IO_TIMEOUT) -> list[WireCommand]:
        """Everything the server sends until it closes the socket (raises on timeout)."""
        self.sock.settimeout(timeout)
        out = list(self.pending)
        self.pending.clear()
        raw = b""
        while True:
            try:
                data = self.sock.recv(65536)
            except ConnectionResetError:
                break
            if not data:
                break
            raw += data
        if raw:
            try:
                out.extend(self.decoder.feed(raw))
            except Exception:
                pass
        return out


def works(port: int, queue: str = "queue://probe") -> None:
    """A clean client completes Connect / CreateSession / Send / Ok on the server."""
    with Raw(port) as cl:
        assert isinstance(cl.connect(), c.Connected)
        assert isinstance(cl.request(c.CreateSession(session_id=1)), c.Ok)
        body = _text_message("still alive")
        reply = cl.request(c.Send(session_id=1, destination=queue, message=body))
        assert isinstance(reply, c.Ok), reply


def _text_message(text: str) -> bytes:
    from ternmq.message import TextMessage
    from ternmq.message.codec import encode_message

    m = TextMessage()
    m.text = text
    return encode_message(m)


text_message = _text_message


def store_commits(http_url: str) -> float:
    """``ternmq_store_commits_total`` of the server whose HTTP listener is ``http_url``."""
    with urllib.request.urlopen(f"{http_url}/metrics", timeout=IO_TIMEOUT) as reply:
        text = reply.read().decode()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "ternmq_store_commits_total":
                return float(sample.value)
    raise AssertionError("no ternmq_store_commits_total in /metrics")
