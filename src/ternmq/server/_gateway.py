"""What a gateway connection may ask of the server, and the I/O every gateway shares.

Theory of operation
-------------------
A *gateway* turns one client socket of some wire protocol (native now; STOMP and OpenWire
later) into the engine's requests. Its protocol logic is a sans-IO object in ``protocol/``
(``protocol/native_connection.py`` for the native wire); what is left is asyncio plumbing,
and that plumbing is the same for every protocol, so it lives here once:

- :class:`ConnectionHost` is everything a gateway connection may ask of the server: the
  broker (or None once stopped), the limits, admission (:meth:`~ConnectionHost.register`),
  credential checks off the loop, the once-per-iteration flush, the broker timer, and the
  owner-commit notes (``owner_store``, ``due_awaited``: see ``BrokerServer._commit_due``).
  ``BrokerServer`` satisfies it; a gateway never imports the server module.
- :class:`GatewayConnection` is the ``asyncio.Protocol`` base: it owns the transport, the
  output list (the engine's frames are appended and written by one ``writelines`` per loop
  iteration: :meth:`~ConnectionHost.flush_soon`), reading paused for named reasons (the
  socket's write buffer is past ``limits.write_buffer_high``, credentials being checked, too
  many requests awaiting replies) and resumed when the last reason goes, the handshake
  timer, close after the queued output (aborted after ``limits.shutdown_grace`` if the peer
  never reads), and the cleanup when the socket is gone (what the connection held in the
  broker is released, REL-10). What every protocol does alike around its sans-IO
  connection (``wire``, a :class:`Wire`) is here too: the timer sweep
  (:meth:`~GatewayConnection.check_timers`), the refusal of credentials and the opening of
  the broker side once they are accepted, the report of a protocol error, the handshake
  timeout's log line, and closing the wire once (:meth:`~GatewayConnection._mark_closed`).
  A subclass supplies the protocol: ``wire``, ``data_received``, its ``heartbeat_frame``,
  its error frames (``fail``) and its handshake expiry.

Every method runs on the event loop thread, the engine's only owner.
"""

from __future__ import annotations

import abc
import asyncio
import enum
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from typing import ClassVar, Protocol, cast

from ternmq.broker._records import Emit
from ternmq.broker.engine import Broker, BrokerConnection
from ternmq.protocol import commands as c
from ternmq.protocol._server_connection import Timeout
from ternmq.server.admission import PasswordCheck
from ternmq.server.config import Limits
from ternmq.server.logs import log_event

__all__ = ["ConnectionHost", "GatewayConnection", "Wire"]

log = logging.getLogger("ternmq.server")

Verdict = Callable[[str | None], None]


class Wire(Protocol):
    """What the I/O half asks of a protocol's sans-IO connection: its timers, and to close
    it (``protocol._server_connection.ServerConnection`` is one)."""

    @property
    def state(self) -> enum.Enum:
        """Where the connection is in its life (its ``value`` is logged)."""
        ...

    @property
    def last_heard(self) -> float:
        """When octets last arrived (loop time)."""
        ...

    def check_timers(self, now: float, last_sent: float) -> Timeout | None:
        """What to do at ``now``, given the caller last wrote at ``last_sent``."""
        ...

    def refuse(self) -> None:
        """The credentials are refused: AUTH -> CLOSED."""
        ...

    @property
    def closed(self) -> bool:
        """Whether the connection is CLOSED."""
        ...

    def close(self) -> None:
        """Any state but CLOSED -> CLOSED."""
        ...


class ConnectionHost(Protocol):
    """What a gateway connection may ask of the server that accepted it."""

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The event loop every connection and the broker run on."""
        ...

    @property
    def broker(self) -> Broker | None:
        """The broker, or None once the server has stopped it."""
        ...

    @property
    def stopping(self) -> bool:
        """Whether the server is stopping (a new socket is aborted)."""
        ...

    @property
    def limits(self) -> Limits:
        """The per-connection and server-wide bounds."""
        ...

    @property
    def owner_store(self) -> object | None:
        """The store whose small commits the loop writes itself, if any (a gateway asks only
        whether there is one: ``Broker.submitted`` tells whether a request made a batch)."""
        ...

    due_awaited: bool
    """Set by a connection when a request that awaits its reply made a store batch."""

    def register(self, conn: GatewayConnection) -> bool:
        """Admit a new socket (False: refuse it, there are too many; the host logs why); an
        admitted socket is *pending* (``conn.pending``) until :meth:`opened`."""
        ...

    def opened(self, conn: GatewayConnection) -> None:
        """``conn`` is authenticated: it no longer counts as pending."""
        ...

    def unregister(self, conn: GatewayConnection) -> None:
        """Forget a socket that is gone (idempotent)."""
        ...

    def flush_soon(self, conn: GatewayConnection) -> None:
        """Call ``conn.flush()`` at the end of this loop iteration."""
        ...

    def rearm(self) -> None:
        """Re-arm the broker's timer after the connection made the broker act."""
        ...

    def authenticate(
        self, address: str, user: str | None, password: str | None, verdict: Verdict
    ) -> PasswordCheck | None:
        """Check credentials of a peer at ``address``; call ``verdict`` on the loop thread
        with None (accepted) or the reason of the refusal: at once when no password hash is
        computed or the address is locked out for failed logins, else later (never if the
        server stops meanwhile). Returns the check while it is queued or running (set its
        ``cancelled`` when the connection goes), else None."""
        ...

    def principal(self, user: str | None) -> str | None:
        """The user an accepted connection acts as (None: anonymous)."""
        ...


def peer_text(peer: object) -> str:
    """``HOST:PORT`` (``[HOST]:PORT`` for IPv6) of a socket's ``peername``."""
    if isinstance(peer, tuple) and len(peer) >= 2:
        host = str(peer[0])
        return f"[{host}]:{peer[1]}" if ":" in host else f"{host}:{peer[1]}"
    return str(peer) if peer else "?"


def cert_subject(cert: object) -> str | None:
    """The commonName of a peer certificate dict (``SSLSocket.getpeercert()``)."""
    if not isinstance(cert, dict):
        return None
    for rdn in cert.get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                return str(value)
    return None


class GatewayConnection(asyncio.Protocol, abc.ABC):
    """One client socket of some gateway: the I/O half (see the module doc).

    Args:
        host: the server that accepted the socket.
        scheme: the listener's scheme, ``tcp`` or ``tls`` (for logs).
    """

    #: The wire protocol this gateway speaks (the ``protocol`` label of the metrics).
    protocol: ClassVar[str] = "native"

    #: The protocol's sans-IO connection (a subclass narrows the type and sets it).
    wire: Wire

    #: What the connection writes when its wire asks for a heartbeat (Timeout.HEARTBEAT).
    heartbeat_frame: ClassVar[bytes]

    def __init__(self, host: ConnectionHost, scheme: str) -> None:
        self.host = host
        self.scheme = scheme
        self.connected_at = time.time()  # wall-clock seconds, for the admin API
        self.loop = host.loop
        self.limits = host.limits
        self.transport: asyncio.Transport | None = None
        self.conn: BrokerConnection | None = None
        self.peer = "?"
        self.address = "?"  # the peer's host, without the port
        self.pending = False  # counted by the host as not yet authenticated
        self._auth_check: PasswordCheck | None = None
        self.user: str | None = None
        self._paused: set[str] = set()
        self._out: list[bytes | bytearray | memoryview] = []
        self._flush_scheduled = False
        self._handshake_timer: asyncio.TimerHandle | None = None
        self._abort_timer: asyncio.TimerHandle | None = None
        self.last_sent = self.loop.time()
        self.closed: asyncio.Future[None] = self.loop.create_future()
        self._inflight = 0  # requests with a corr not answered yet
        self._max_inflight = self.limits.max_inflight_requests

    # ---- what a protocol supplies ---------------------------------------------------------
    @abc.abstractmethod
    def _handshake_expired(self) -> None:
        """The handshake timer fired: close the connection if it is not open yet."""

    @abc.abstractmethod
    def fail(self, problem: str) -> None:
        """Report ``problem`` to the peer in the protocol's error frame and close."""

    # ---- requests -------------------------------------------------------------------------
    def _submit(self, req: c.Request) -> bool:
        """Hand ``req`` to the broker; False if the broker or the connection's broker side
        is gone, or the engine raised (a bug: this connection fails, nobody else).

        A request with a ``corr`` awaits its reply (:meth:`_replied`): past
        ``limits.max_inflight_requests`` of them reading stops until half are answered;
        one that made an owner-store batch sets ``host.due_awaited`` (its reply waits for
        that commit: see ``BrokerServer._commit_due``)."""
        broker = self.host.broker
        conn = self.conn
        if broker is None or conn is None:
            return False
        if req.corr:
            self._awaiting()
        owner = req.corr and self.host.owner_store is not None  # one-way: nobody waits
        submitted = broker.submitted
        try:
            broker.handle(conn, req)
        except Exception as exc:  # a bug in the engine: this connection only pays for it
            log.exception("event=internal_error peer=%s request=%s", self.peer, type(req).__name__)
            self.fail(f"internal error handling {type(req).__name__}: {type(exc).__name__}")
            return False
        if owner and broker.submitted != submitted:
            self.host.due_awaited = True
        return True

    def _submit_batch(self, reqs: Sequence[c.Request], *, stop_on_error: bool = False) -> int:
        """Hand the requests of one read to the broker in one entry (``Broker.handle_batch``:
        the same per-request answers, one output release). Returns how many it processed
        (it stops after one that left the connection closed), or -1 if it could not (as
        :meth:`_submit`'s False; the connection has failed if the engine raised)."""
        broker = self.host.broker
        conn = self.conn
        if broker is None or conn is None:
            return -1
        awaited = 0
        for req in reqs:
            if req.corr:
                awaited += 1
        if awaited:  # (_awaiting for all of them, without a call per read)
            self._inflight += awaited
            if self._inflight >= self._max_inflight:
                self._pause("inflight")  # their replies wait for the store: stop reading
        # Whether they made a store batch (their replies then wait for a commit): the
        # broker's count of submitted batches, an attribute, read around the entry.
        owner = awaited and self.host.owner_store is not None
        submitted = broker.submitted
        try:
            n = broker.handle_batch(conn, reqs, stop_on_error=stop_on_error)
        except Exception as exc:  # a bug in the engine: this connection only pays for it
            log.exception("event=internal_error peer=%s requests=%d", self.peer, len(reqs))
            self.fail(f"internal error handling a batch of {len(reqs)}: {type(exc).__name__}")
            return -1
        if n < len(reqs) and awaited:
            for req in reqs[n:]:  # never processed: never answered
                if req.corr:
                    self._inflight -= 1
        if owner and broker.submitted != submitted:
            self.host.due_awaited = True
        return n

    def _awaiting(self) -> None:
        """One more answer is awaited: past ``limits.max_inflight_requests`` stop reading."""
        self._inflight += 1
        if self._inflight >= self._max_inflight:
            self._pause("inflight")  # its replies wait for the store: stop reading

    def _replied(self) -> None:
        """A request with a ``corr`` was answered: resume reading once half are."""
        self._inflight -= 1
        if "inflight" in self._paused and self._inflight <= self._max_inflight // 2:
            self._resume("inflight")

    def _peer_dead(self, silent: float) -> None:
        """The peer sent nothing for two heartbeat intervals (``silent`` seconds): close the
        connection and give back what it held."""
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

    # ---- asyncio.Protocol -------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Admit the socket (or abort it: the server is stopping, or too many sockets), set
        its write-buffer limits and start the handshake timer."""
        transport = cast(asyncio.Transport, transport)  # uvloop's are not subclasses
        self.transport = transport
        peername = transport.get_extra_info("peername")
        self.peer = peer_text(peername)
        if isinstance(peername, tuple) and peername:
            self.address = str(peername[0])
        host = self.host
        if host.stopping or not host.register(self):
            transport.abort()
            return
        limits = self.limits
        transport.set_write_buffer_limits(limits.write_buffer_high, limits.write_buffer_low)
        self._handshake_timer = self.loop.call_later(
            limits.handshake_timeout, self._on_handshake_timer
        )
        cert = transport.get_extra_info("peercert")
        log_event(
            log,
            logging.DEBUG,
            "connection_accepted",
            peer=self.peer,
            listener=self.scheme,
            client_cert=cert_subject(cert) if cert else None,
        )

    def eof_received(self) -> bool | None:
        """The peer closed its side: close ours too."""
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        """The socket is gone: release what the connection held and forget it."""
        was_open = self._mark_closed()
        self._cancel_timers()
        self._drop_broker_side()
        self.host.unregister(self)
        if was_open:
            self._log_closed(str(exc) if exc else "closed by the client")
        if not self.closed.done():
            self.closed.set_result(None)
        self._release()

    def _release(self) -> None:
        """Break the reference cycles a connection is part of while its socket lives (the
        broker's side holds ``self._emit``; the transport holds ``self``), so that its memory
        is returned as soon as the last reference goes, not at a collection of the cycle
        collector (which ``ternmq serve`` runs rarely: ``app.GC_THRESHOLDS``)."""
        if self.conn is not None:
            self.conn.detach()
        self.transport = None
        self._out = []
        self._paused.clear()

    def pause_writing(self) -> None:
        """The socket's write buffer passed ``write_buffer_high``: stop reading the peer."""
        self._pause("write")

    def resume_writing(self) -> None:
        """The socket's write buffer drained below ``write_buffer_low``."""
        self._resume("write")

    # ---- output ---------------------------------------------------------------------------
    def _write(self, frame: bytes) -> None:
        self._out.append(frame)
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self.host.flush_soon(self)

    def _write_parts(self, parts: Iterable[bytes | bytearray | memoryview]) -> None:
        """Queue the parts of one frame (a large body stays a part of its own: the socket's
        ``writelines`` takes them without joining)."""
        self._out.extend(parts)
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self.host.flush_soon(self)

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

    # ---- flow control -----------------------------------------------------------------------
    def _pause(self, reason: str) -> None:
        """Stop reading the peer until ``reason`` (and every other) is resumed."""
        t = self.transport
        if not self._paused and t is not None and not t.is_closing():
            t.pause_reading()
        self._paused.add(reason)

    def _resume(self, reason: str) -> None:
        """Drop ``reason``; read the peer again if it was the last one."""
        self._paused.discard(reason)
        t = self.transport
        if not self._paused and t is not None and not t.is_closing():
            t.resume_reading()

    def _check_credentials(self, user: str | None, password: str | None, verdict: Verdict) -> None:
        """Check credentials with reading paused (requests already read wait); ``verdict``
        resumes it with ``self._resume("auth")`` once the connection is open."""
        self._pause("auth")
        self._auth_check = self.host.authenticate(self.address, user, password, verdict)

    @property
    def auth_queued(self) -> bool:
        """Whether this connection's password check is still waiting for a worker."""
        check = self._auth_check
        return check is not None and check.queued

    def _protocol_error(self, problem: str, reply: bytes) -> None:
        """The peer broke the protocol: log ``protocol_error`` (with the wire's state), write
        ``reply`` (the protocol's error frame; may be empty) and close, releasing what the
        connection held; nothing once the wire is closed."""
        wire = self.wire
        if wire.closed:
            return
        log_event(
            log,
            logging.WARNING,
            "protocol_error",
            peer=self.peer,
            conn=self._conn_id,
            user=self.user,
            protocol=self.protocol,
            state=wire.state.value,
            problem=problem,
        )
        if reply:
            self._write(reply)
        self.close("protocol error", drop=True)

    def _refuse(self, user: str | None, reason: str, reply: bytes) -> None:
        """The credentials of ``user`` were refused for ``reason``: log ``auth_failed``,
        close the wire, write ``reply`` (the protocol's refusal; may be empty) and close the
        socket after it (the broker side was never opened)."""
        log_event(log, logging.WARNING, "auth_failed", peer=self.peer, user=user, reason=reason)
        self.wire.refuse()
        if reply:
            self._write(reply)
        self._shut("authentication failed", drop=False)

    def _opened(self) -> None:
        """The connection is authenticated: tell the host it is no longer pending."""
        self._auth_check = None
        if self.pending:
            self.host.opened(self)

    def _authenticated(self, broker: Broker, emit: Emit, user: str | None) -> BrokerConnection:
        """The credentials of ``user`` were accepted (the wire is OPEN): stop the handshake
        timer, tell the host, and open the broker side (output to ``emit``; it exists, and
        counts against ``max_connections``, only from now on), acting as the host's
        principal of ``user``. Answers the broker side (``self.conn``)."""
        self._cancel_handshake_timer()
        self._opened()
        self.conn = conn = self._attach(broker, emit)
        self.user = self.host.principal(user)
        return conn

    def _log_open(self, client_id: str | None, **fields: object) -> None:
        """Log ``connection_open`` (with the protocol's own ``fields``)."""
        log_event(
            log,
            logging.INFO,
            "connection_open",
            peer=self.peer,
            conn=self._conn_id,
            user=self.user,
            client_id=client_id,
            listener=self.scheme,
            protocol=self.protocol,
            **fields,
        )

    # ---- closing --------------------------------------------------------------------------
    def _mark_closed(self) -> bool:
        """Switch the protocol state to closed; False if it already was."""
        wire = self.wire
        if wire.closed:
            return False
        wire.close()
        return True

    def close(self, reason: str, *, drop: bool = False) -> None:
        """Close the socket after what is queued for it; with ``drop``, release what the
        connection held in the broker first (never from inside an engine callback)."""
        if self._mark_closed():
            self._shut(reason, drop=drop)

    def _shut(self, reason: str, *, drop: bool) -> None:
        """The I/O half of :meth:`close`, once the protocol state is closed."""
        self._cancel_handshake_timer()
        if drop:
            self._drop_broker_side()
        self.flush()
        t = self.transport
        if t is not None:
            t.close()
            # A peer that never reads would keep the socket open forever: abort it.
            self._abort_timer = self.loop.call_later(self.limits.shutdown_grace, t.abort)
        self._log_closed(reason)

    def _attach(self, broker: Broker, emit: Emit) -> BrokerConnection:
        """Open this connection's broker side (output to ``emit``), labelled with the
        protocol and peer address an operator's connection list shows."""
        conn = broker.connect(emit)
        conn.protocol = self.protocol
        conn.address = self.peer
        return conn

    def _drop_broker_side(self) -> None:
        """Release what the broker holds for this connection (REL-10), once."""
        broker = self.host.broker
        if self.conn is not None and broker is not None and not self.conn.closed:
            broker.drop_connection(self.conn)
            self.host.rearm()

    @property
    def _conn_id(self) -> str | None:
        return self.conn.id if self.conn is not None else None

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

    # ---- timers ---------------------------------------------------------------------------
    def check_timers(self, now: float) -> None:
        """The server's periodic sweep at loop time ``now``: write a heartbeat when the wire
        asks for one; close a dead peer, an expired read deadline or handshake."""
        wire = self.wire
        action = wire.check_timers(now, self.last_sent)
        if action is None:
            return
        if action is Timeout.HEARTBEAT:
            self._write(self.heartbeat_frame)
            self.last_sent = now
        elif action is Timeout.PEER_DEAD:
            self._peer_dead(now - wire.last_heard)
        elif action is Timeout.FRAME:
            self._frame_expired(now)
        else:
            self._handshake_expired()

    def _frame_expired(self, now: float) -> None:
        """A frame started ``frame_timeout`` ago is still incomplete at ``now``: report it
        in the protocol's error frame and close."""
        self.fail("a frame took longer than frame_timeout to arrive: send whole frames")

    def _handshake_timed_out(self, reply: bytes = b"", problem: str | None = None) -> None:
        """Log ``handshake_timeout`` (with ``problem`` if given), write ``reply`` (the
        protocol's error frame, if it sends one) and close, releasing what was held."""
        log_event(
            log,
            logging.WARNING,
            "handshake_timeout",
            peer=self.peer,
            protocol=self.protocol,
            problem=problem,
        )
        if reply:
            self._write(reply)
        self.close("handshake timeout", drop=True)

    def _on_handshake_timer(self) -> None:
        self._handshake_timer = None
        self._handshake_expired()

    def _cancel_handshake_timer(self) -> None:
        if self._handshake_timer is not None:
            self._handshake_timer.cancel()
            self._handshake_timer = None

    def _cancel_timers(self) -> None:
        check = self._auth_check
        if check is not None:
            check.cancelled = True
            self._auth_check = None
        for timer in (self._handshake_timer, self._abort_timer):
            if timer is not None:
                timer.cancel()
        self._handshake_timer = self._abort_timer = None
