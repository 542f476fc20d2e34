"""The native protocol over TCP or TLS: one :class:`NativeConnection` per client socket.

Theory of operation
-------------------
A connection is a small state machine (:data:`TRANSITIONS` is the whole table; an input that
is not in it for the current state is a protocol error that closes the connection):

========  ====================================  =========
state     input                                 next
========  ====================================  =========
PREAMBLE  8 octets, a valid client preamble     CONNECT   (the server answers its preamble)
CONNECT   ``Connect``                           AUTH      (credentials checked off the loop)
CONNECT   ``Heartbeat``                         CONNECT
AUTH      credentials accepted                  OPEN      (``Connect`` goes to the broker)
AUTH      credentials refused                   CLOSED    (``JMSSecurityException`` reply)
OPEN      any request but ``Connect``           OPEN      (``Broker.handle``)
OPEN      ``Heartbeat``                         OPEN
any       malformed/oversized frame, a reply    CLOSED    (one ``Error`` frame, kind
          or event sent by the client, a                   ``ProtocolError``, then close)
          second ``Connect``, a request before
          ``Connect``
any       handshake or heartbeat timeout        CLOSED
========  ====================================  =========

While AUTH, reading is paused and the requests already decoded wait in a backlog, so a client
may pipeline ``Connect`` and its first requests. Every request reaches the engine on the event
loop thread, which is the engine's only owner (ARCHITECTURE "Rules of the house").

Output: the engine's ``emit`` callback appends an encoded frame to a per-connection list that
is written once per loop iteration (``writelines``), so a burst of deliveries costs one system
call; one callback per iteration writes every connection that has output
(:meth:`BrokerServer.flush_soon`). When the socket's send buffer passes
``limits.write_buffer_high`` the transport calls :meth:`pause_writing` and the connection
stops *reading* that client until it drains: a client
that does not read its deliveries cannot make the server buffer without bound (deliveries are
already bounded by the consumer's prefetch credit, which the client renews by sending).

Heartbeats: the server sends ``Heartbeat`` to a connection it has not written to for one
``limits.heartbeat`` interval, and one probe to a connection it has not heard from for one
interval; a client answers every ``Heartbeat`` with one. A connection silent for two intervals
is dead and is closed (its deliveries go back to their queues, REL-10).
"""

from __future__ import annotations

import asyncio
import collections
import enum
import logging
from concurrent.futures import Future
from typing import TYPE_CHECKING, Final, cast, get_args

import msgspec

from ternmq.broker.engine import BrokerConnection
from ternmq.protocol import commands as c
from ternmq.protocol.frames import (
    MAGIC,
    PREAMBLE,
    FrameDecoder,
    Heartbeat,
    ProtocolError,
    WireCommand,
    check_preamble,
    encode,
)
from ternmq.server.logs import log_event

if TYPE_CHECKING:
    from ternmq.server.app import BrokerServer

__all__ = ["NativeConnection", "State", "TRANSITIONS"]

log = logging.getLogger("ternmq.server")

HEARTBEAT_FRAME: Final = encode(Heartbeat())
_REQUEST_TYPES: Final = frozenset(get_args(c.Request))


class State(enum.Enum):
    """Where a connection is in its life (see the module doc)."""

    PREAMBLE = "preamble"
    CONNECT = "connect"
    AUTH = "auth"
    OPEN = "open"
    CLOSED = "closed"


# The states as module constants for the per-command paths: reading an Enum member off its
# class costs ~65 ns more than a global on CPython 3.11.
_OPEN: Final = State.OPEN
_CONNECT: Final = State.CONNECT
_CLOSED: Final = State.CLOSED

# (state, input) -> next state. Inputs: "preamble", "Connect", "Heartbeat", "request",
# "accepted", "refused". Anything else in a state is a protocol error.
TRANSITIONS: Final[dict[tuple[State, str], State]] = {
    (State.PREAMBLE, "preamble"): State.CONNECT,
    (State.CONNECT, "Connect"): State.AUTH,
    (State.CONNECT, "Heartbeat"): State.CONNECT,
    (State.AUTH, "accepted"): State.OPEN,
    (State.AUTH, "refused"): State.CLOSED,
    (State.OPEN, "request"): State.OPEN,
    (State.OPEN, "Heartbeat"): State.OPEN,
}


def _peer_text(peer: object) -> str:
    if isinstance(peer, tuple) and len(peer) >= 2:
        host = str(peer[0])
        return f"[{host}]:{peer[1]}" if ":" in host else f"{host}:{peer[1]}"
    return str(peer) if peer else "?"


class NativeConnection(asyncio.Protocol):
    """One client socket speaking the native protocol.

    Args:
        server: the server that owns the broker.
        scheme: ``tcp`` or ``tls`` (for logs).
    """

    def __init__(self, server: BrokerServer, scheme: str) -> None:
        self.server = server
        self.scheme = scheme
        self.loop = server.loop
        self.state = State.PREAMBLE
        self.transport: asyncio.Transport | None = None
        self.conn: BrokerConnection | None = None
        self.peer = "?"
        self.user: str | None = None
        limits = server.config.limits
        self._limits = limits
        self._pre = bytearray()
        self._decoder = FrameDecoder(limits.max_frame)
        self._backlog: collections.deque[WireCommand] = collections.deque()
        self._paused: set[str] = set()
        self._out: list[bytes] = []
        self._flush_scheduled = False
        self._handshake_timer: asyncio.TimerHandle | None = None
        self._abort_timer: asyncio.TimerHandle | None = None
        self._close_on_corr: int | None = None
        self._last_reply_corr = -1
        self._inflight = 0  # requests with a corr not answered yet
        now = self.loop.time()
        self.last_heard = now
        self.last_sent = now
        self._probed = False
        self.closed: asyncio.Future[None] = self.loop.create_future()

    # ---- asyncio.Protocol ---------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport = cast(asyncio.Transport, transport)  # uvloop's are not subclasses
        self.transport = transport
        self.peer = _peer_text(transport.get_extra_info("peername"))
        server = self.server
        if server.stopping:
            transport.abort()
            return
        limits = self._limits
        cap = 2 * limits.max_connections
        if cap and len(server.connections) >= cap:
            # Sockets that have not connected yet count too: beyond twice the connection
            # limit they are refused before they cost a decoder and a timer.
            log_event(log, logging.WARNING, "too_many_sockets", peer=self.peer, limit=cap)
            transport.abort()
            return
        transport.set_write_buffer_limits(limits.write_buffer_high, limits.write_buffer_low)
        server.connections.add(self)
        self._handshake_timer = self.loop.call_later(
            limits.handshake_timeout, self._handshake_expired
        )
        cert = transport.get_extra_info("peercert")
        log_event(
            log,
            logging.DEBUG,
            "connection_accepted",
            peer=self.peer,
            listener=self.scheme,
            client_cert=_subject(cert) if cert else None,
        )

    def data_received(self, data: bytes) -> None:
        if self.state is State.CLOSED:
            return
        self.last_heard = self.loop.time()
        self._probed = False
        if self.state is State.PREAMBLE:
            data = self._take_preamble(data)
            if not data:
                return
        try:
            self._backlog.extend(self._decoder.feed(data))
        except ProtocolError as exc:
            self._backlog.clear()
            self.fail(str(exc))
            return
        self._process()

    def eof_received(self) -> bool | None:
        return None  # close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        was = self.state
        self.state = State.CLOSED
        self._cancel_timers()
        self._drop_broker_side()
        self.server.connections.discard(self)
        if was is not State.CLOSED:
            self._log_closed(str(exc) if exc else "closed by the client")
        if not self.closed.done():
            self.closed.set_result(None)

    def pause_writing(self) -> None:
        self._pause("write")

    def resume_writing(self) -> None:
        self._resume("write")

    # ---- input ----------------------------------------------------------------------------
    @property
    def _conn_id(self) -> str | None:
        return self.conn.id if self.conn is not None else None

    def _take_preamble(self, data: bytes) -> bytes:
        """Collect the client preamble; return the octets after it (or b"")."""
        pre = self._pre
        pre += data
        head = bytes(pre[: len(MAGIC)])
        if MAGIC[: len(head)] != head or len(pre) >= len(PREAMBLE):
            try:
                check_preamble(bytes(pre[: len(PREAMBLE)]))
            except ProtocolError as exc:
                self.fail(str(exc), preamble=True)
                return b""
        if len(pre) < len(PREAMBLE):
            return b""
        rest = bytes(pre[len(PREAMBLE) :])
        self._pre = bytearray()
        self._advance("preamble")
        self._write(PREAMBLE)
        broker = self.server.broker
        assert broker is not None
        self.conn = broker.connect(self._emit)
        return rest

    def _advance(self, event: str) -> bool:
        """Take the transition for ``event``; False (and the connection failed) if none."""
        nxt = TRANSITIONS.get((self.state, event))
        if nxt is None:
            return False
        self.state = nxt
        return True

    def _process(self) -> None:
        backlog = self._backlog
        try:
            while backlog and (self.state is _OPEN or self.state is _CONNECT):
                self._dispatch(backlog.popleft())
        finally:
            self.server.rearm()

    def _dispatch(self, cmd: WireCommand) -> None:
        t = type(cmd)
        if t is Heartbeat:
            return
        if t not in _REQUEST_TYPES:
            self.fail(f"a client may not send {t.__name__}: it is a reply or an event")
            return
        if self.state is _CONNECT:
            if t is not c.Connect:
                self.fail(f"{t.__name__} before Connect: the first request must be Connect")
                return
            assert isinstance(cmd, c.Connect)
            self._advance("Connect")
            self._authenticate(cmd)
            return
        if t is c.Connect:
            self.fail("a second Connect on one connection: open another connection instead")
            return
        self._handle(cmd)  # type: ignore[arg-type]

    def _handle(self, req: c.Request) -> None:
        broker = self.server.broker
        conn = self.conn
        if broker is None or conn is None:
            return
        if req.corr:
            self._inflight += 1
            if self._inflight >= self._limits.max_inflight_requests:
                self._pause("inflight")  # its replies wait for the store: stop reading
        store = self.server.owner_store if req.corr else None  # one-way: nobody waits
        batches = 0 if store is None else store.batches
        try:
            broker.handle(conn, req)
        except Exception as exc:  # a bug in the engine: this connection only pays for it
            log.exception("event=internal_error peer=%s request=%s", self.peer, type(req).__name__)
            self.fail(f"internal error handling {type(req).__name__}: {type(exc).__name__}")
            return
        if store is not None and store.batches != batches:
            self.server.due_awaited = True  # its reply waits for that commit: see _commit_due
        if (conn.closed or type(req) is c.Disconnect) and self.state is not _CLOSED:
            # Disconnect (answered at once, or once the connection's held sends are taken),
            # or a refused Connect: close once the reply is out.
            if not req.corr or self._last_reply_corr == req.corr:
                self.close("disconnected" if type(req) is c.Disconnect else "refused")
            else:
                self._close_on_corr = req.corr

    # ---- authentication -------------------------------------------------------------------
    def _authenticate(self, req: c.Connect) -> None:
        self._pause("auth")
        auth = self.server.authenticator
        if not auth.needs_hashing(req.user):
            self._auth_finished(req, auth.check(req.user, req.password))
            return
        fut = self.server.executor.submit(auth.check, req.user, req.password)

        def done(f: Future[str | None]) -> None:
            try:
                self.loop.call_soon_threadsafe(self._auth_done, req, f)
            except RuntimeError:
                pass  # the loop is gone (server stopped)

        fut.add_done_callback(done)

    def _auth_done(self, req: c.Connect, fut: Future[str | None]) -> None:
        if self.state is not State.AUTH or fut.cancelled():
            return
        try:
            error = fut.result()
        except Exception as exc:
            error = f"authentication failed: {exc}"
        self._auth_finished(req, error)

    def _auth_finished(self, req: c.Connect, error: str | None) -> None:
        if self.state is not State.AUTH:
            return  # closed meanwhile
        if error is not None:
            log_event(
                log, logging.WARNING, "auth_failed", peer=self.peer, user=req.user, reason=error
            )
            self._write(encode(c.Error(corr=req.corr, kind="JMSSecurityException", message=error)))
            self.close("authentication failed")
            return
        self._advance("accepted")
        if self._handshake_timer is not None:
            self._handshake_timer.cancel()
            self._handshake_timer = None
        self.user = self.server.authenticator.principal(req.user)
        self._handle(msgspec.structs.replace(req, user=self.user, password=None))
        if self.is_open:
            log_event(
                log,
                logging.INFO,
                "connection_open",
                peer=self.peer,
                conn=self._conn_id,
                user=self.user,
                client_id=req.client_id,
                listener=self.scheme,
            )
            self._resume("auth")
            self._process()
        else:
            self.server.rearm()

    @property
    def is_open(self) -> bool:
        """Whether the connection is authenticated and not closed."""
        return self.state is _OPEN

    # ---- output ---------------------------------------------------------------------------
    def _emit(self, cmd: c.Command) -> None:
        """The engine's output callback: never calls back into the engine."""
        if self.state is _CLOSED:
            return
        self._write(encode(cmd))
        t = type(cmd)
        if t is c.Deliver or t is c.SendFailed:
            return
        if t is c.ConnectionFailed:
            self.close("the broker stopped")
            return
        corr: int = cmd.corr  # type: ignore[union-attr]
        self._last_reply_corr = corr
        if corr:
            self._inflight -= 1
            if (
                "inflight" in self._paused
                and self._inflight <= self._limits.max_inflight_requests // 2
            ):
                self._resume("inflight")
        if self._close_on_corr is not None and corr == self._close_on_corr:
            self.close("disconnected")

    def _write(self, frame: bytes) -> None:
        self._out.append(frame)
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self.server.flush_soon(self)

    def flush(self) -> None:
        """Write what is queued for the socket (one ``writelines``)."""
        self._flush_scheduled = False
        out = self._out
        t = self.transport
        if not out or t is None or t.is_closing():
            out.clear()
            return
        self._out = []
        t.writelines(out)
        self.last_sent = self.loop.time()

    # ---- flow control and heartbeats ----------------------------------------------------
    def _pause(self, reason: str) -> None:
        t = self.transport
        if not self._paused and t is not None and not t.is_closing():
            t.pause_reading()
        self._paused.add(reason)

    def _resume(self, reason: str) -> None:
        self._paused.discard(reason)
        t = self.transport
        if not self._paused and t is not None and not t.is_closing():
            t.resume_reading()

    def heartbeat_check(self, now: float, interval: float) -> None:
        """Called by the server's sweep: probe or send heartbeats, close dead peers."""
        if self.state is not State.OPEN:
            return
        silent = now - self.last_heard
        if silent >= 2 * interval:
            log_event(
                log,
                logging.WARNING,
                "heartbeat_timeout",
                peer=self.peer,
                conn=self._conn_id,
                user=self.user,
                silent_s=f"{silent:.1f}",
            )
            self.close("heartbeat timeout", drop=True)
            return
        if now - self.last_sent >= interval or (silent >= interval and not self._probed):
            self._probed = silent >= interval
            self._write(HEARTBEAT_FRAME)
            self.last_sent = now

    def _handshake_expired(self) -> None:
        self._handshake_timer = None
        if self.state not in (State.PREAMBLE, State.CONNECT, State.AUTH):
            return
        problem = (
            f"no {'preamble' if self.state is State.PREAMBLE else 'Connect'} within "
            f"handshake_timeout ({self._limits.handshake_timeout} s)"
        )
        log_event(log, logging.WARNING, "handshake_timeout", peer=self.peer, problem=problem)
        if self.state is State.CONNECT:
            self._write(encode(c.Error(corr=0, kind="ProtocolError", message=problem)))
        self.close("handshake timeout", drop=True)

    # ---- closing --------------------------------------------------------------------------
    def fail(self, problem: str, *, preamble: bool = False) -> None:
        """Report a protocol violation to the peer (one ``Error`` frame) and close."""
        if self.state is State.CLOSED:
            return
        log_event(
            log,
            logging.WARNING,
            "protocol_error",
            peer=self.peer,
            conn=self._conn_id,
            user=self.user,
            state=self.state.value,
            problem=problem,
        )
        if preamble:
            self._write(PREAMBLE)  # so that a ternmq peer of another version can read why
        self._write(encode(c.Error(corr=0, kind="ProtocolError", message=problem)))
        self.close("protocol error", drop=True)

    def close(self, reason: str, *, drop: bool = False) -> None:
        """Close the socket after what is queued for it; with ``drop``, release what the
        connection held in the broker first (never from inside an engine callback)."""
        if self.state is State.CLOSED:
            return
        self.state = State.CLOSED
        self._backlog.clear()
        if self._handshake_timer is not None:
            self._handshake_timer.cancel()
            self._handshake_timer = None
        if drop:
            self._drop_broker_side()
        self.flush()
        t = self.transport
        if t is not None:
            t.close()
            # A peer that never reads would keep the socket open forever: abort it.
            self._abort_timer = self.loop.call_later(self._limits.shutdown_grace, t.abort)
        self._log_closed(reason)

    def _drop_broker_side(self) -> None:
        """Release what the broker holds for this connection (REL-10), once."""
        broker = self.server.broker
        if self.conn is not None and broker is not None and not self.conn.closed:
            broker.drop_connection(self.conn)
            self.server.rearm()

    def _log_closed(self, reason: str) -> None:
        log_event(
            log,
            logging.INFO,
            "connection_closed",
            peer=self.peer,
            conn=self._conn_id,
            user=self.user,
            reason=reason,
        )

    def _cancel_timers(self) -> None:
        for timer in (self._handshake_timer, self._abort_timer):
            if timer is not None:
                timer.cancel()
        self._handshake_timer = self._abort_timer = None


def _subject(cert: object) -> str | None:
    """The commonName of a peer certificate dict (``SSLSocket.getpeercert()``)."""
    if not isinstance(cert, dict):
        return None
    for rdn in cert.get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                return str(value)
    return None
