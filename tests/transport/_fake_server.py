"""A small threaded server speaking the native protocol, for transport tests.

It accepts sockets, checks the client preamble, answers with its own and feeds every request
to a real broker engine (an :class:`EmbeddedBroker`, which serializes it under its lock), or
to a ``handler`` a test supplies. Knobs let a test break it on purpose: ``mute()`` (stop
answering and writing anything, as a dead peer), ``drop_all()`` (cut every socket),
``hold`` (request types that never get a reply), ``preamble`` (what it says first).
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
import uuid
from collections.abc import Callable
from typing import Any

from ternmq.broker.embedded import EmbeddedBroker
from ternmq.broker.engine import BrokerConnection
from ternmq.protocol import commands as c
from ternmq.protocol.frames import (
    PREAMBLE,
    FrameDecoder,
    Heartbeat,
    ProtocolError,
    WireCommand,
    encode,
)

Handler = Callable[["FakeConn", c.Request], None]


class FakeConn:
    """The server side of one client socket."""

    def __init__(self, server: FakeServer, sock: socket.socket) -> None:
        self.server = server
        self.sock = sock
        self.received: list[WireCommand] = []
        self.heartbeats = 0
        self._send_lock = threading.Lock()
        self.broker_conn: BrokerConnection | None = None
        self.closed = threading.Event()

    def send(self, cmd: WireCommand) -> None:
        """Write one frame (errors ignored: the client may be gone)."""
        self.send_raw(encode(cmd))

    def send_raw(self, data: bytes) -> None:
        """Write octets as they are."""
        if self.server.muted:
            return
        with self._send_lock, contextlib.suppress(OSError):
            self.sock.sendall(data)

    def drop(self) -> None:
        """Cut the socket without a word."""
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)

    def run(self) -> None:
        srv = self.server
        sock = self.sock
        try:
            pre = b""
            while len(pre) < len(PREAMBLE):
                data = sock.recv(len(PREAMBLE) - len(pre))
                if not data:
                    return
                pre += data
            srv.client_preambles.append(pre)
            self.send_raw(srv.preamble)
            if srv.after_preamble:
                self.send_raw(srv.after_preamble)
            if srv.broker is not None and srv.handler is None:
                self.broker_conn = srv.broker._connect(self.send)
            decoder = FrameDecoder()
            while True:
                data = sock.recv(65536)
                if not data:
                    return
                for cmd in decoder.feed(data):
                    self.received.append(cmd)
                    if isinstance(cmd, Heartbeat):
                        self.heartbeats += 1
                        continue
                    if srv.muted or type(cmd) in srv.hold:
                        continue
                    req: Any = cmd
                    if srv.handler is not None:
                        srv.handler(self, req)
                    elif self.broker_conn is not None and srv.broker is not None:
                        srv.broker._submit(self.broker_conn, req)
        except (OSError, ProtocolError):
            pass
        finally:
            if self.broker_conn is not None and srv.broker is not None:
                with contextlib.suppress(Exception):
                    srv.broker._drop(self.broker_conn)
            with contextlib.suppress(OSError):
                sock.close()
            self.closed.set()


class FakeServer:
    """Listen on 127.0.0.1 (or ``host``), port 0; ``url`` is ``tcp://HOST:PORT``.

    Args:
        handler: called with each request instead of the broker (on the connection's thread).
        preamble: the octets the server answers with.
        after_preamble: octets sent right after the preamble (e.g. an early frame).
        ssl_context: a server-side TLS context (the URL is then ``tls://``).
        host: the address to listen on (``::1`` for IPv6).
        keepalive: seconds; if set, the server writes an (ignorable) ``Ok`` with ``corr`` 0 to
            every connection that often, so that a client with a short heartbeat stays alive
            while its own heartbeats can be counted apart from answers to the server's.
        settings: broker settings for the embedded engine.
    """

    def __init__(
        self,
        *,
        handler: Handler | None = None,
        preamble: bytes = PREAMBLE,
        after_preamble: bytes = b"",
        ssl_context: ssl.SSLContext | None = None,
        host: str = "127.0.0.1",
        keepalive: float | None = None,
        **settings: Any,
    ) -> None:
        self.keepalive = keepalive
        self._stopped = threading.Event()
        self.handler = handler
        self.preamble = preamble
        self.after_preamble = after_preamble
        self.ssl_context = ssl_context
        self.hold: set[type] = set()
        self.muted = False
        self.connections: list[FakeConn] = []
        self.client_preambles: list[bytes] = []
        self.broker: EmbeddedBroker | None = (
            EmbeddedBroker(f"fake-{uuid.uuid4().hex[:8]}", **settings) if handler is None else None
        )
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._lsock = socket.socket(family, socket.SOCK_STREAM)
        self._lsock.bind((host, 0))
        self._lsock.listen(64)
        self.host = host
        self.port: int = self._lsock.getsockname()[1]
        self._thread = threading.Thread(target=self._accept_loop, daemon=True)

    @property
    def address(self) -> str:
        """``host:port`` as the client names it."""
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    @property
    def url(self) -> str:
        """``tcp://`` or ``tls://`` and the address."""
        return f"{'tls' if self.ssl_context else 'tcp'}://{self.address}"

    def start(self) -> FakeServer:
        if self.broker is not None:
            self.broker.start()
        self._thread.start()
        if self.keepalive is not None:
            threading.Thread(target=self._keepalive_loop, daemon=True).start()
        return self

    def _keepalive_loop(self) -> None:
        assert self.keepalive is not None
        while not self._stopped.wait(self.keepalive):
            for conn in list(self.connections):
                conn.send(c.Ok())

    def _accept_loop(self) -> None:
        while True:
            try:
                sock, _ = self._lsock.accept()
            except OSError:
                return
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.ssl_context is not None:
                try:
                    sock = self.ssl_context.wrap_socket(sock, server_side=True)
                except (OSError, ssl.SSLError):
                    sock.close()
                    continue
            conn = FakeConn(self, sock)
            self.connections.append(conn)
            threading.Thread(target=conn.run, daemon=True).start()

    def mute(self) -> None:
        """Stop answering and stop writing anything at all (a dead peer that keeps the
        socket open)."""
        self.muted = True

    def drop_all(self) -> None:
        """Cut every client socket."""
        for conn in self.connections:
            conn.drop()

    def stop(self) -> None:
        self._stopped.set()
        with contextlib.suppress(OSError):
            self._lsock.shutdown(socket.SHUT_RDWR)  # wakes accept(); close() alone does not
        with contextlib.suppress(OSError):
            self._lsock.close()
        self.drop_all()
        for conn in self.connections:
            conn.closed.wait(2)
        if self.broker is not None:
            self.broker.stop()

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
