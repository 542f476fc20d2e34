"""The native protocol over TCP or TLS: one :class:`NativeConnection` per client socket.

Theory of operation
-------------------
A thin adapter: the connection protocol (preamble, Connect-first, the state table, heartbeat
and handshake timing, the frame limit) is the sans-IO
:class:`~ternmq.protocol.native_connection.NativeServerConnection` (its module doc has the
table); the socket, output batching, backpressure and closing are
:class:`~ternmq.server._gateway.GatewayConnection`'s. What is left here joins them to the
engine: the requests of one read go to ``Broker.handle_batch`` in one entry, on the event loop
thread (the engine's only owner, ARCHITECTURE "Rules of the house"), and the engine's ``emit``
callback appends encoded frames to the output list written once per loop iteration.

While the credentials of ``Connect`` are checked (off the loop when a password is hashed),
reading is paused and the requests already read wait in the wire object, so a client may
pipeline ``Connect`` and its first requests.

Requests awaiting a reply (mostly for the store) are counted: past
``limits.max_inflight_requests`` the connection stops reading that client until half are
answered. When the socket's send buffer passes ``limits.write_buffer_high`` the connection
stops *reading* that client until it drains: a client that does not read its deliveries
cannot make the server buffer without bound (deliveries are already bounded by the
consumer's prefetch credit, which the client renews by sending).

Heartbeats: the server sends ``Heartbeat`` to a connection it has not written to for one
``limits.heartbeat`` interval, and one probe to a connection it has not heard from for one
interval; a client answers every ``Heartbeat`` with one. A connection silent for two intervals
is dead and is closed (its deliveries go back to their queues, REL-10).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from typing import ClassVar, Final, cast

import msgspec

from ternmq.protocol import commands as c
from ternmq.protocol.frames import PREAMBLE, encode
from ternmq.protocol.native_connection import (
    HEARTBEAT_FRAME,
    TRANSITIONS,
    ConnectReceived,
    Event,
    NativeServerConnection,
    PreambleReceived,
    ProtocolViolation,
    State,
    error_frame,
)
from ternmq.server._gateway import ConnectionHost, GatewayConnection
from ternmq.server.logs import log_event

__all__ = ["NativeConnection", "State", "TRANSITIONS"]

log = logging.getLogger("ternmq.server")

# The states as module constants for the per-command paths: reading an Enum member off its
# class costs ~65 ns more than a global on CPython 3.11.
_OPEN: Final = State.OPEN
_AUTH: Final = State.AUTH
_CLOSED: Final = State.CLOSED
_HANDSHAKE: Final = (State.PREAMBLE, State.CONNECT, State.AUTH)


class NativeConnection(GatewayConnection):
    """One client socket speaking the native protocol.

    Args:
        host: the server that owns the broker.
        scheme: ``tcp`` or ``tls`` (for logs).
    """

    wire: NativeServerConnection
    heartbeat_frame: ClassVar[bytes] = HEARTBEAT_FRAME

    def __init__(self, host: ConnectionHost, scheme: str) -> None:
        super().__init__(host, scheme)
        limits = self.limits
        self.wire = NativeServerConnection(
            self.last_sent,
            max_frame=limits.max_frame,
            heartbeat=limits.heartbeat,
            handshake_timeout=limits.handshake_timeout,
            max_handshake_frame=limits.max_handshake_frame,
            frame_timeout=limits.frame_timeout,
        )
        self._close_on_corr: int | None = None
        self._last_reply_corr = -1

    @property
    def state(self) -> State:
        """Where the connection is in its life (the wire object's state)."""
        return self.wire.state

    @property
    def is_open(self) -> bool:
        """Whether the connection is authenticated and not closed."""
        return self.wire.state is _OPEN

    # ---- input ----------------------------------------------------------------------------
    def data_received(self, data: bytes) -> None:
        """Octets from the client: requests go to the broker, in order."""
        wire = self.wire
        state = wire.state
        if state is _OPEN:
            try:
                reqs = wire.receive_requests(data, self.loop.time())
            except ProtocolViolation as exc:
                self._violated(exc)
                return
            self._run(reqs)
            return
        if state is _CLOSED:
            return
        try:
            events = wire.receive_data(data, self.loop.time())
        except ProtocolViolation as exc:
            self._violated(exc)
            return
        if events:
            self._on_events(events)
            self.host.rearm()

    def _run(self, reqs: list[c.Request]) -> None:
        """Hand ``reqs`` (one read's) to the broker in one entry while the connection is open."""
        try:
            if reqs and self.wire.state is _OPEN:
                n = self._submit_batch(reqs)
                conn = self.conn
                # (_after has work only when the connection ends: not called per read)
                if n > 0 and conn is not None and (conn.closed or conn.held_disconnect is not None):
                    self._after(reqs[n - 1])
        finally:
            self.host.rearm()

    def _on_events(self, events: Sequence[Event]) -> None:
        """The handshake's events (and requests) in order; stops once closed."""
        for ev in events:
            if self.wire.state is _CLOSED:
                return
            if isinstance(ev, PreambleReceived):
                self._write(ev.reply)
            elif isinstance(ev, ConnectReceived):
                req = ev.request
                self._check_credentials(
                    req.user, req.password, functools.partial(self._auth_finished, req)
                )
            else:
                self._handle(ev)

    def _violated(self, exc: ProtocolViolation) -> None:
        """Act on what came before the violation, then report it and close."""
        if exc.before:
            self._on_events(exc.before)
            self.host.rearm()
        self.fail(str(exc), preamble=exc.preamble)

    def _handle(self, req: c.Request) -> None:
        if self._submit(req):
            self._after(req)

    def _after(self, last: c.Request) -> None:
        """``last`` was the last request handed to the broker: close once the reply is out if
        it (or an earlier Disconnect waiting for held sends) ends the connection."""
        conn = self.conn
        assert conn is not None
        if self.wire.state is _CLOSED:
            return
        if conn.closed:
            req: c.Request = last  # a Disconnect or a refused Connect (it stops a batch)
        elif conn.held_disconnect is not None:
            req = conn.held_disconnect  # answered once the connection's held sends are taken
        else:
            return
        if not req.corr or self._last_reply_corr == req.corr:
            self.close("disconnected" if type(req) is c.Disconnect else "refused")
        else:
            self._close_on_corr = req.corr

    # ---- authentication -------------------------------------------------------------------
    def _auth_finished(self, req: c.Connect, error: str | None) -> None:
        wire = self.wire
        if wire.state is not _AUTH:
            return  # closed meanwhile
        if error is not None:
            refusal = c.Error(corr=req.corr, kind="JMSSecurityException", message=error)
            self._refuse(req.user, error, encode(refusal))
            return
        broker = self.host.broker
        if broker is None:
            return  # the server stopped meanwhile
        wire.accept()
        self._authenticated(broker, self._emit, req.user)
        self._handle(msgspec.structs.replace(req, user=self.user, password=None))
        if self.wire.state is not _OPEN:  # (accept() made it OPEN; Connect may close it)
            self.host.rearm()
            return
        self._log_open(req.client_id)
        self._resume("auth")
        try:
            held = wire.take_held()
        except ProtocolViolation as exc:
            self._violated(exc)
            return
        self._run(held)

    # ---- output ---------------------------------------------------------------------------
    def _emit(self, cmd: c.Command) -> None:
        """The engine's output callback: never calls back into the engine."""
        if self.wire.state is _CLOSED:
            return
        # _write and _replied without the calls: this runs for every frame the broker sends.
        self._out.append(encode(cmd))
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self.host.flush_soon(self)
        t = type(cmd)
        if t is c.Deliver or t is c.SendFailed:
            return
        if t is c.ConnectionFailed:
            self.close(cast(c.ConnectionFailed, cmd).message)
            return
        corr: int = cmd.corr  # type: ignore[union-attr]
        self._last_reply_corr = corr
        if corr:
            self._inflight -= 1
            if self._paused and self._inflight <= self._max_inflight // 2:
                self._resume("inflight")
        if self._close_on_corr is not None and corr == self._close_on_corr:
            self.close("disconnected")

    # ---- timers ---------------------------------------------------------------------------
    def _frame_expired(self, now: float) -> None:
        problem, reply = self.wire.frame_expired(now)
        log_event(
            log,
            logging.WARNING,
            "frame_timeout",
            peer=self.peer,
            conn=self._conn_id,
            user=self.user,
            problem=problem,
        )
        self._write(reply)
        self.close("frame timeout", drop=True)

    def _handshake_expired(self) -> None:
        wire = self.wire
        if wire.state not in _HANDSHAKE:
            return
        problem, reply = wire.handshake_expired()
        if wire.state is _AUTH:
            problem = (
                "password check still queued" if self.auth_queued else "password check running"
            ) + f": {problem}"
        self._handshake_timed_out(reply, problem)

    # ---- closing --------------------------------------------------------------------------
    def fail(self, problem: str, *, preamble: bool = False) -> None:
        """Report a protocol violation to the peer (one ``Error`` frame, after the server's
        preamble with ``preamble``: a ternmq peer of another version can read why) and
        close."""
        reply = error_frame(problem)
        self._protocol_error(problem, PREAMBLE + reply if preamble else reply)
