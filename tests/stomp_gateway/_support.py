"""Helpers of the STOMP gateway tests: a ``ternmq serve`` with a STOMP listener on port 0,
and a raw-frame STOMP client built on ternmq's own sans-IO codec (``protocol/stomp.py``), over
TCP (the STOMP port) or over a WebSocket (``/stomp`` on the HTTP listener).

(The directory is ``tests/stomp_gateway``, not ``tests/stomp``: a test package named
``stomp`` would shadow the stomp.py client these tests drive.)
"""

from __future__ import annotations

import pathlib
import re
import socket
import ssl
import time
from collections.abc import Iterable
from typing import Literal, Self

import websocket

from server._support import HOST, IO_TIMEOUT, ServerProcess, store_commits
from ternmq.protocol.stomp import HEARTBEAT, StompFrame, StompLimits, StompParser, encode_frame

__all__ = [
    "HOST",
    "IO_TIMEOUT",
    "TRANSPORTS",
    "StompClient",
    "StompRaw",
    "StompWs",
    "Transport",
    "dial",
    "start_server",
    "store_commits",
]

_STOMP_RE = r"event=listening protocol=stomp address=127\.0\.0\.1:(\d+) url=tcp://"


def start_server(
    tmp_path: pathlib.Path,
    config: str = "",
    data_dir: pathlib.Path | None = None,
    *,
    http: bool = False,
) -> tuple[ServerProcess, int]:
    """A ``ternmq serve`` with ``stomp_port = 0`` (plus ``config``; with ``http`` the HTTP
    listener on a free port too); (server, STOMP port)."""
    server = ServerProcess(
        data_dir or tmp_path / f"data-{time.monotonic_ns()}",
        "stomp_port = 0\n" + config,
        tmp_path,
        http=http,
    )
    try:
        line = server.wait_log(_STOMP_RE, timeout=30)
    except BaseException:
        server.kill()
        raise
    m = re.search(_STOMP_RE, line)
    assert m is not None
    return server, int(m.group(1))


class StompClient:
    """A raw STOMP client: frames out, frames in, nothing hidden. Subclasses move octets over
    one transport (:class:`StompRaw` over TCP or TLS, :class:`StompWs` over a WebSocket)."""

    def __init__(self, *, version: str = "1.2") -> None:
        self.parser = StompParser(StompLimits(max_frame=64 << 20, max_body=64 << 20))
        self.parser.version = version
        self.parser.frame_limit = 64 << 20
        self.version = version
        self.pending: list[StompFrame] = []
        self.heartbeats = 0

    def _write(self, data: bytes) -> None:
        """Send ``data`` (one WebSocket message, or octets on the socket)."""
        raise NotImplementedError

    def _read(self, timeout: float) -> bytes:
        """The next octets received; ``b""`` once the server closed (``TimeoutError`` when
        nothing came within ``timeout`` seconds)."""
        raise NotImplementedError

    def close(self) -> None:
        """Close the transport."""
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send_bytes(self, data: bytes) -> None:
        self._write(data)

    def send(
        self, command: str, headers: Iterable[tuple[str, str]] = (), body: bytes = b""
    ) -> None:
        """Write one frame (escaped per the negotiated version); no ``content-length``
        unless ``headers`` has one (so a body is text to the gateway by default)."""
        version = "1.0" if command in ("CONNECT", "STOMP") else self.version
        self._write(
            encode_frame(command, list(headers), body, version=version, content_length=False)
        )

    def recv(self, timeout: float = IO_TIMEOUT) -> StompFrame:
        """The next frame (heart-beats counted in ``heartbeats`` and skipped)."""
        deadline = time.monotonic() + timeout
        while not self.pending:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no frame from the server")
            data = self._read(left)
            if not data:
                raise ConnectionError("the server closed the connection")
            for item in self.parser.feed(data):
                if item is HEARTBEAT:
                    self.heartbeats += 1
                else:
                    assert isinstance(item, StompFrame)
                    self.pending.append(item)
        return self.pending.pop(0)

    def connect(self, *headers: tuple[str, str], version: str | None = None) -> StompFrame:
        """CONNECT (accept-version ``version`` or this client's); the CONNECTED frame."""
        v = version or self.version
        self.send("CONNECT", [("accept-version", v), ("host", "localhost"), *headers])
        frame = self.recv()
        assert frame.command == "CONNECTED", frame
        return frame

    def call(
        self, command: str, headers: Iterable[tuple[str, str]] = (), body: bytes = b""
    ) -> StompFrame:
        """Send a frame with a fresh receipt; return the RECEIPT (MESSAGE frames that come
        first stay readable, in order)."""
        receipt = f"r-{time.monotonic_ns()}"
        self.send(command, [*headers, ("receipt", receipt)], body)
        held: list[StompFrame] = []
        while True:
            frame = self.recv()
            if frame.command == "RECEIPT" and frame.get("receipt-id") == receipt:
                self.pending[:0] = held
                return frame
            if frame.command == "ERROR":
                raise AssertionError(f"ERROR: {frame.get('message')} {frame.body!r}")
            held.append(frame)

    def read_until_closed(self, timeout: float = IO_TIMEOUT) -> list[StompFrame]:
        """Every frame until the server closes the connection (raises on timeout)."""
        out = list(self.pending)
        self.pending.clear()
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the server did not close the connection")
            try:
                data = self._read(left)
            except ConnectionResetError:
                return out
            if not data:
                return out
            try:
                items = self.parser.feed(data)
            except Exception:
                return out
            for item in items:
                if isinstance(item, StompFrame):
                    out.append(item)
                else:
                    self.heartbeats += 1


class StompRaw(StompClient):
    """A raw STOMP client over TCP (or TLS with ``tls``)."""

    def __init__(
        self,
        port: int,
        *,
        timeout: float = IO_TIMEOUT,
        version: str = "1.2",
        tls: ssl.SSLContext | None = None,
    ) -> None:
        super().__init__(version=version)
        sock = socket.create_connection((HOST, port), timeout=timeout)
        if tls is not None:
            sock = tls.wrap_socket(sock, server_hostname="localhost")
        self.sock = sock

    def close(self) -> None:
        self.sock.close()

    def _write(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _read(self, timeout: float) -> bytes:
        self.sock.settimeout(timeout)
        return self.sock.recv(65536)


class StompWs(StompClient):
    """A raw STOMP client over a WebSocket to ``/stomp`` on the HTTP listener (the
    subprotocol ``vXY.stomp`` of ``version``; each frame is sent as one text message, or
    binary when it is not UTF-8)."""

    def __init__(self, http_url: str, *, timeout: float = IO_TIMEOUT, version: str = "1.2") -> None:
        super().__init__(version=version)
        url = http_url.replace("http", "ws", 1) + "/stomp"
        subprotocol = "v" + version.replace(".", "") + ".stomp"
        self.ws = websocket.create_connection(url, timeout=timeout, subprotocols=[subprotocol])
        assert self.ws.getsubprotocol() == subprotocol

    def close(self) -> None:
        self.ws.close(timeout=1)

    def _write(self, data: bytes) -> None:
        try:
            self.ws.send(data.decode("utf-8"))
        except UnicodeDecodeError:
            self.ws.send_binary(data)

    def _read(self, timeout: float) -> bytes:
        self.ws.settimeout(timeout)
        try:
            opcode, data = self.ws.recv_data()
        except websocket.WebSocketTimeoutException as exc:
            raise TimeoutError("no message from the server") from exc
        except (websocket.WebSocketConnectionClosedException, OSError):
            return b""
        if opcode == websocket.ABNF.OPCODE_CLOSE:
            return b""
        return bytes(data)


Transport = Literal["tcp", "ws"]
TRANSPORTS: tuple[Transport, ...] = ("tcp", "ws")


def dial(
    transport: Transport, server: ServerProcess, stomp_port: int, *, version: str = "1.2"
) -> StompClient:
    """A raw STOMP client (not yet CONNECTed) to ``server`` over ``transport``: its STOMP port
    for ``tcp``, ``/stomp`` on its HTTP listener for ``ws`` (started with ``http=True``)."""
    if transport == "ws":
        return StompWs(server.http_url, version=version)
    return StompRaw(stomp_port, version=version)
