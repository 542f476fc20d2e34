"""The client side of the native protocol over TCP or TLS (``tcp://`` and ``tls://``).

Theory of operation
-------------------
A :class:`TcpTransport` has the interface of :class:`~ternmq.transport.vm.VmTransport`
(``clock``, ``request``, ``submit``, ``send_oneway``, ``next_corr``, ``close``, and the
``on_event`` callback), over one blocking socket and two threads:

- **Callers write.** ``request`` and ``send_oneway`` encode the command and write it with
  ``sendall`` on the caller's thread: no hand-off to a writer thread, whose wake-up would
  cost a GIL hand-over per message. A caller that finds another one writing leaves its frame
  in a queue that the writer empties before it lets go, so under contention many frames
  leave in one ``sendall`` (64 threads sending non-persistent messages on one connection:
  median ~26,000 instead of ~16,000 messages/s; uncontended it is one ``sendall`` per frame).
- **Frames nobody waits for wait for company.** A *lazy* frame (a pipelined NON_PERSISTENT
  send) is only queued; the queue is written when ``LINGER_FRAMES`` frames are in it, when
  any other frame is written (it goes after them, so the order on the wire is the order of
  the calls), when a thread is about to block on this connection (``flush``: ``receive``
  before it waits, a pipelined send's handle before it is waited on, a listener thread with
  nothing more to run), and at the latest ``LINGER_S`` after the first of them was queued,
  by one flusher thread per process (and at interpreter exit). On loopback the sender's
  ``sendall`` pays for the receiver's TCP work too, so this is much of what a message costs.
  AUTO_ACKNOWLEDGE acknowledgements are *not* lazy: after a failure only a session's last
  consumed message may come back (REL-05), so each is written before ``receive`` can return
  the next message (DUPS_OK_ACKNOWLEDGE batches them, as JMS means).
- **One reader thread reads.** It feeds what ``recv`` returns to one
  :class:`~ternmq.protocol.frames.FrameDecoder` and routes each command: a reply (``corr``
  != 0) to the request waiting for it, an event (``Deliver``, ``SendFailed``,
  ``ConnectionFailed``) to ``on_event``, in the order the server sent them. Everything a
  request causes arrives before its reply (``commands.py``), so when a request returns its
  deliveries are already buffered. Each request owns a
  :class:`~ternmq.transport._pending.PendingReply` (a one-shot lock) in a dict keyed by
  ``corr``; the reader resolves exactly that one. ``submit`` returns it without waiting, so
  pipelined sends need no thread of their own. Measured against one
  shared ``Condition`` with 64 threads sending on one connection: ~18,000 against ~9,000
  requests/s (a ``notify_all`` per reply wakes 63 threads for nothing). The reader never
  writes: a server that stops reading because this client stopped reading would otherwise
  deadlock the pair.
- **A heartbeat thread** (when ``heartbeat`` > 0) sends ``Heartbeat`` when nothing was sent
  for one interval, answers the server's heartbeats, and declares the peer dead when nothing
  was received for two intervals: it shuts the socket down, which ends the reader's ``recv``.

Losing the link (end of stream, a socket error, a dead peer, a ``ConnectionFailed`` or an
unsolicited ``Error`` from the server) is handled once, by the reader: every waiting request
wakes with a :class:`~ternmq.errors.JMSException` naming the address (linked to the
``OSError`` when there is one), then ``on_event`` receives one ``ConnectionFailed`` (the
connection then reports to its exception listener, CONN-27, A-10). Waiters are woken *before*
the event because the connection's failure handling takes locks a waiting caller may hold.
``close()`` is not a failure: waiters wake with "closed" and no event is delivered.

TLS: :class:`ssl.SSLSocket` is not safe for a ``recv`` in one thread concurrent with a
``send`` in another (the TLS state is shared; CPython issues #76714, #151508), so TLS runs on
an :class:`ssl.SSLObject` over memory BIOs, every TLS operation under one short lock and the
socket I/O outside it. Whoever encrypts drains the outgoing BIO in order under the send lock;
records that reading produces (a key update answer) leave with the next frame sent.
"""

from __future__ import annotations

import atexit
import collections
import dataclasses
import itertools
import logging
import queue
import select
import socket
import ssl
import threading
import time
from collections.abc import Callable
from typing import Final, cast, get_args

import msgspec

from ternmq.broker.clock import Clock, SystemClock
from ternmq.errors import JMSException
from ternmq.protocol import commands as c
from ternmq.protocol.frames import (
    DEFAULT_MAX_FRAME,
    PREAMBLE,
    FrameDecoder,
    Heartbeat,
    ProtocolError,
    WireCommand,
    check_preamble,
    encode,
)
from ternmq.transport._options import flag_option, seconds_option
from ternmq.transport._pending import PendingReply, await_reply, fail_all

__all__ = [
    "DEFAULT_HEARTBEAT",
    "DEFAULT_PORTS",
    "TcpOptions",
    "TcpTransport",
    "format_address",
    "parse_tcp_url",
]

log = logging.getLogger("ternmq.client")

DEFAULT_HEARTBEAT: Final = 30.0
DEFAULT_PORTS: Final = {"tcp": 61616, "tls": 61617}
_HEARTBEAT_FRAME: Final = encode(Heartbeat())
_RECV_SIZE: Final = 64 * 1024  # below malloc's mmap threshold: no mmap/munmap per recv
_REPLY_TYPES: Final = frozenset(get_args(c.Reply))
_CLOSE_WAIT: Final = 2.0  # seconds close() waits for the server to end the stream
LINGER_S: Final = 0.0005  # a deferred frame waits at most about this long for company ...
LINGER_FRAMES: Final = 32  # ... or until this many frames are queued


class _Flusher:
    """A daemon thread that writes deferred frames ``linger`` seconds after the first of a
    burst was queued (see ``TcpTransport.submit(lazy=True)``); one serves the process. Armed
    through a ``SimpleQueue``: a put is a C call, where a ``Condition.notify`` was ~15 % of a
    pipelining client's time under the profiler."""

    def __init__(self, linger: float) -> None:
        self.linger = linger
        self._armed: queue.SimpleQueue[TcpTransport] = queue.SimpleQueue()
        self._start = threading.Lock()
        self._thread: threading.Thread | None = None
        self._holding: TcpTransport | None = None  # taken from the queue, linger running

    def arm(self, transport: TcpTransport) -> None:
        """Write ``transport``'s queue about ``linger`` seconds from now."""
        self._armed.put(transport)
        if self._thread is None:
            with self._start:
                if self._thread is None:
                    self._thread = threading.Thread(
                        target=self._run, name="ternmq-tcp-flusher", daemon=True
                    )
                    self._thread.start()
                    atexit.register(self.flush_now)  # a script that ends without close()

    def flush_now(self) -> None:
        """Write every armed transport's queue now (at exit: daemon threads just stop)."""
        holding = self._holding
        if holding is not None:
            holding._linger_over()
        armed = self._armed
        while not armed.empty():
            armed.get()._linger_over()

    def _run(self) -> None:
        armed = self._armed
        while True:
            self._holding = armed.get()
            time.sleep(self.linger)
            self.flush_now()


_FLUSHER: Final = _Flusher(LINGER_S)


def format_address(host: str, port: int) -> str:
    """``host:port``, with IPv6 literals in brackets (``[::1]:61616``)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class _PlainIO:
    """Frames straight to and from the socket."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def send(self, data: bytes) -> None:
        """Write ``data`` (the caller holds the send lock)."""
        self.sock.sendall(data)

    def recv(self) -> bytes:
        """The next bytes from the peer (reader thread only).

        Raises:
            EOFError: end of stream.
        """
        data = self.sock.recv(_RECV_SIZE)
        if not data:
            raise EOFError
        return data

    def has_output(self) -> bool:
        """Whether reading produced protocol output to send (never, without TLS)."""
        return False

    def goodbye(self) -> None:
        """End the session politely (nothing to say, without TLS)."""


class _TlsIO:
    """TLS on memory BIOs: the TLS state is touched only under ``_lock``, socket I/O outside
    it. Records leave in the order they were made because every writer holds the send lock
    from encrypting to ``sendall`` and sends everything the outgoing BIO holds."""

    def __init__(
        self,
        sock: socket.socket,
        context: ssl.SSLContext,
        server_hostname: str | None,
    ) -> None:
        self.sock = sock
        self._in = ssl.MemoryBIO()
        self._out = ssl.MemoryBIO()
        self._obj = context.wrap_bio(self._in, self._out, server_hostname=server_hostname)
        self._lock = threading.Lock()

    def handshake(self) -> None:
        """Run the TLS handshake (before the reader starts, on the timed socket).

        Raises:
            ssl.SSLError: the handshake failed (e.g. certificate verification).
            OSError: the socket failed or the peer closed it.
        """
        while True:
            try:
                self._obj.do_handshake()
                break
            except ssl.SSLWantReadError:
                self.flush()
                data = self.sock.recv(_RECV_SIZE)
                if not data:
                    raise ConnectionResetError(
                        "the peer closed the connection during the TLS handshake"
                    ) from None
                self._in.write(data)
        self.flush()

    def send(self, data: bytes) -> None:
        """Encrypt and write ``data`` (the caller holds the send lock)."""
        with self._lock:
            self._obj.write(data)
            out = self._out.read()
        self.sock.sendall(out)

    def recv(self) -> bytes:
        """Decrypted bytes; ``b""`` while a record is still incomplete (reader thread only).

        Raises:
            EOFError: end of stream (with or without a TLS close_notify).
        """
        raw = self.sock.recv(_RECV_SIZE)
        if not raw:
            raise EOFError
        chunks = []
        with self._lock:
            self._in.write(raw)
            while True:
                try:
                    chunk = self._obj.read(_RECV_SIZE)
                except ssl.SSLWantReadError:
                    break
                except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
                    raise EOFError from None
                if not chunk:
                    raise EOFError
                chunks.append(chunk)
        return b"".join(chunks)

    def has_output(self) -> bool:
        """Whether reading produced TLS records to send (e.g. a key update answer)."""
        return self._out.pending > 0

    def flush(self) -> None:
        """Send what the outgoing BIO holds (the caller holds the send lock)."""
        with self._lock:
            out = self._out.read()
        if out:
            self.sock.sendall(out)

    def goodbye(self) -> None:
        """Send a TLS close_notify (the caller holds the send lock)."""
        with self._lock:
            try:
                self._obj.unwrap()
            except (ssl.SSLError, ValueError):
                pass
        self.flush()


class TcpTransport:
    """A client's link to a ternmq server over TCP (or TLS with ``ssl_context``).

    Args:
        host: server host name or address (IPv6 without brackets).
        port: server port.
        on_event: called on the reader thread with every ``Deliver`` and ``SendFailed``, and
            with one ``ConnectionFailed`` if the link is lost.
        ssl_context: TLS settings; None for plain TCP.
        server_hostname: name to check the server certificate against (default ``host``).
        connect_timeout: seconds for the TCP connect, the TLS handshake and the preamble.
        heartbeat: seconds; send a ``Heartbeat`` after that long without sending, declare the
            server dead after twice that long without receiving (or twice the server's own
            interval, once its heartbeats showed it to be longer). 0 turns heartbeats off.
            Keep it at or above the server's ``limits.heartbeat`` (both default to 30 s): an
            idle server writes only that often, and a shorter client interval would declare
            a healthy idle server dead before its first heartbeat.
        max_frame: largest frame accepted from the server, octets.

    Raises:
        JMSException: the server cannot be reached (the text names ``host:port``;
            ``linked_exception`` and ``__cause__`` are the ``OSError``), the TLS handshake
            failed, or the peer is not a ternmq server of a compatible version.
    """

    def __init__(
        self,
        host: str,
        port: int,
        on_event: Callable[[c.Command], None],
        *,
        ssl_context: ssl.SSLContext | None = None,
        server_hostname: str | None = None,
        connect_timeout: float = 10.0,
        heartbeat: float = DEFAULT_HEARTBEAT,
        max_frame: int = DEFAULT_MAX_FRAME,
    ) -> None:
        self.clock: Clock = SystemClock()
        self.address = format_address(host, port)
        self._on_event = on_event
        self._heartbeat = heartbeat
        self._corr = itertools.count(1)
        self._pending: dict[int, PendingReply] = {}
        self._send_lock = threading.Lock()
        self._out: collections.deque[bytes] = collections.deque()  # frames not yet written
        self._armed = False  # the flusher will write the queue (deferred frames in it)
        self._flusher = _FLUSHER
        self._state_lock = threading.Lock()
        self._lost_reason: str | None = None  # set once: the link is gone
        self._lost_cause: BaseException | None = None
        self._cause: BaseException | None = None  # what a writer or the heartbeat saw first
        self._closing = False
        self._disconnecting = False
        self._hb_answer = False
        self._hb_wake = threading.Event()
        self._peer_interval = 0.0  # the server's heartbeat interval, as observed
        self._decoder = FrameDecoder(max_frame)
        self._sock = self._connect(host, port, connect_timeout)
        self._io: _PlainIO | _TlsIO
        try:
            if ssl_context is not None:
                tls = _TlsIO(self._sock, ssl_context, server_hostname or host)
                try:
                    tls.handshake()
                except ssl.SSLError as exc:
                    hint = (
                        " (give the CA that signed the server certificate as ?cafile=PATH, "
                        "and check the host name or ?server_hostname=)"
                        if isinstance(exc, ssl.SSLCertVerificationError)
                        else ""
                    )
                    raise JMSException(
                        f"TLS handshake with {self.address} failed: {exc}{hint}",
                        linked_exception=exc,
                    ) from exc
                self._io = tls
            else:
                self._io = _PlainIO(self._sock)
            first = self._exchange_preambles(connect_timeout)
        except JMSException:
            self._sock.close()
            raise
        except OSError as exc:
            self._sock.close()
            raise JMSException(
                f"cannot connect to the broker at {self.address}: {_os_text(exc)}",
                linked_exception=exc,
            ) from exc
        self._sock.settimeout(None)
        now = time.monotonic()
        self._last_sent = now
        self._last_recv = now
        self._reader = threading.Thread(
            target=self._read_loop,
            args=(first,),
            name=f"ternmq-tcp-reader-{self.address}",
            daemon=True,
        )
        self._reader.start()
        self._ticker: threading.Thread | None = None
        if heartbeat > 0:
            self._ticker = threading.Thread(
                target=self._heartbeat_loop,
                name=f"ternmq-tcp-heartbeat-{self.address}",
                daemon=True,
            )
            self._ticker.start()

    # ---- opening ------------------------------------------------------------------------
    def _connect(self, host: str, port: int, timeout: float) -> socket.socket:
        try:
            sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as exc:
            raise JMSException(
                f"cannot connect to the broker at {self.address}: {_os_text(exc)}",
                linked_exception=exc,
            ) from exc
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock

    def _exchange_preambles(self, timeout: float) -> list[WireCommand]:
        """Send ours, read and check the server's; returns the commands that came with it.

        Raises:
            JMSException: no preamble in time, or not a ternmq preamble of our major version.
            OSError: the socket failed.
        """
        self._io.send(PREAMBLE)
        got = b""
        deadline = time.monotonic() + timeout
        while len(got) < len(PREAMBLE):
            self._sock.settimeout(max(0.001, deadline - time.monotonic()))
            try:
                got += self._io.recv()
            except EOFError:
                raise JMSException(
                    f"the server at {self.address} closed the connection before sending the "
                    "ternmq preamble (is it a ternmq server? does the listener expect TLS?)"
                ) from None
            except TimeoutError as exc:
                raise JMSException(
                    f"no ternmq preamble from {self.address} within {timeout:g} s "
                    "(is it a ternmq server? does the listener expect TLS?)",
                    linked_exception=exc,
                ) from exc
        try:
            check_preamble(got[: len(PREAMBLE)])
        except ProtocolError as exc:
            raise JMSException(f"{self.address}: {exc}") from exc
        rest = got[len(PREAMBLE) :]
        return self._decoder.feed(rest) if rest else []

    # ---- the transport interface --------------------------------------------------------
    def request(self, req: c.Request, timeout: float | None = None) -> c.Reply:
        """Send ``req`` and wait for its reply.

        Raises:
            JMSException: the link is lost or closed (linked to the ``OSError`` if any), or no
                reply came within ``timeout`` seconds.
        """
        if not req.corr:
            req = msgspec.structs.replace(req, corr=next(self._corr))
        handle = self.submit(req)
        return await_reply(self._pending, req.corr, handle, timeout, self.address)

    def submit(self, req: c.Request, lazy: bool = False) -> PendingReply:
        """Send ``req`` and return at once: the reply resolves the returned handle (on the
        reader thread), as does the loss of the link.

        Raises:
            JMSException: the link was already lost or closed.
        """
        corr = req.corr
        if not corr:
            corr = next(self._corr)
            req = msgspec.structs.replace(req, corr=corr)
        if type(req) is c.Disconnect:
            self._disconnecting = True
        waiter = PendingReply()
        pending = self._pending
        pending[corr] = waiter
        if self._lost_reason is not None:  # checked after registering: see _lost
            pending.pop(corr, None)
            raise self._link_error()
        if lazy:
            waiter.flush = self.flush
            self._defer(encode(req))
            return waiter
        try:
            self._write(encode(req))
        except OSError as exc:
            # The reader ends on this shutdown and sweeps every waiter, ours included, with
            # the best reason known (the server's last words beat our EPIPE). If the sweep
            # is already over, nobody else will wake us.
            self._broken(exc)
            if self._lost_reason is not None and pending.pop(corr, None) is not None:
                raise self._link_error() from None
        else:
            self._last_sent = time.monotonic()
        return waiter

    def send_oneway(self, req: c.Request, lazy: bool = False) -> None:
        """Send ``req`` without waiting (its ``corr`` is 0: the server sends no reply). On a
        lost link the request is dropped: the loss is reported once, as ``ConnectionFailed``.
        ``lazy``: the frame may wait for company (see :meth:`submit`)."""
        if lazy:
            self._defer(encode(req))
        else:
            self._send_frame(encode(req))

    def _defer(self, frame: bytes) -> None:
        out = self._out
        out.append(frame)
        if len(out) >= LINGER_FRAMES:
            self.flush()
        elif not self._armed:
            self._armed = True
            self._flusher.arm(self)

    def flush(self) -> None:
        """Write the frames queued now (deferred ones included), unless another thread is
        writing: that one writes them before it lets go."""
        if not self._out or self._lost_reason is not None:
            return
        try:
            self._drain()
        except OSError as exc:
            self._broken(exc)
            return
        self._last_sent = time.monotonic()

    def _linger_over(self) -> None:
        self._armed = False
        self.flush()

    def _send_frame(self, frame: bytes) -> None:
        if self._lost_reason is not None:
            return
        try:
            self._write(frame)
        except OSError as exc:
            self._broken(exc)
            return
        self._last_sent = time.monotonic()

    def _write(self, frame: bytes) -> None:
        """Queue ``frame`` and write the queue if no other thread is writing; else the thread
        that is writes it (it checks the queue again after releasing the send lock). Under
        contention many frames leave in one ``sendall``; uncontended (nothing queued, the
        lock free) the frame goes straight to ``sendall`` without passing through the queue.

        Raises:
            OSError: the socket failed (the frame may have been someone else's: every waiting
                request learns of the loss from the reader's sweep).
        """
        out = self._out
        lock = self._send_lock
        if not out and lock.acquire(blocking=False):  # uncontended: straight out
            try:
                self._io.send(frame)
            finally:
                lock.release()
            if not out:
                return
        else:
            out.append(frame)
        self._drain()

    def _drain(self) -> None:
        out = self._out
        lock = self._send_lock
        while out and lock.acquire(blocking=False):
            try:
                if len(out) == 1:
                    data = out.popleft()
                else:
                    batch = []
                    while out:
                        batch.append(out.popleft())
                    data = b"".join(batch)
                self._io.send(data)
            finally:
                lock.release()

    def next_corr(self) -> int:
        """A fresh correlation number for a request built by the caller."""
        return next(self._corr)

    def close(self) -> None:
        """Say goodbye (``Disconnect`` unless one was sent, best effort), end the stream and
        join the reader. Waiting requests wake with a JMSException; no ``ConnectionFailed``
        is delivered. Idempotent."""
        with self._state_lock:
            if self._closing:
                return
            self._closing = True
        if self._lost_reason is None:
            if not self._disconnecting:
                self._disconnecting = True
                self.send_oneway(c.Disconnect())
            try:
                with self._send_lock:
                    self._io.goodbye()
            except OSError:
                pass
        self._finish()

    def abort(self) -> None:
        """Drop the link without a goodbye, as a network failure would: the server releases
        what the connection held (REL-10) and ``on_event`` gets one ``ConnectionFailed``.
        Returns once the server has closed its side (or after a short grace). For tests."""
        with self._state_lock:
            if self._closing:
                return
            if self._cause is None:
                self._cause = ConnectionAbortedError("the link was aborted locally")
        self._finish()
        with self._state_lock:
            self._closing = True

    def _finish(self) -> None:
        try:
            self._sock.shutdown(socket.SHUT_WR)  # the server reads to the end, then closes
        except OSError:
            pass
        reader = self._reader
        if threading.current_thread() is not reader:
            reader.join(_CLOSE_WAIT)
            if reader.is_alive():  # the server did not close its side: stop reading anyway
                self._shutdown()
                reader.join(_CLOSE_WAIT)
        self._hb_wake.set()
        ticker = self._ticker
        if ticker is not None and threading.current_thread() is not ticker:
            ticker.join(_CLOSE_WAIT)
        if not reader.is_alive():
            self._sock.close()

    # ---- failure ------------------------------------------------------------------------
    @property
    def lost(self) -> bool:
        """True once the link is gone (lost or closed): nothing sent now reaches the server."""
        return self._lost_reason is not None

    @property
    def failure_cause(self) -> BaseException | None:
        """The exception behind a lost link (an ``OSError``, a heartbeat ``TimeoutError``,
        a ``ProtocolError``), or None when the server simply ended the stream."""
        return self._lost_cause

    def _link_error(self) -> JMSException:
        if self._closing and self._lost_cause is None:
            return JMSException(f"the connection to {self.address} is closed")
        return JMSException(
            f"the connection to {self.address} was lost: {self._lost_reason}",
            linked_exception=self._lost_cause,
        )

    def _broken(self, exc: BaseException) -> None:
        """A writer or the heartbeat found the link dead: end the reader's ``recv``."""
        with self._state_lock:
            if self._cause is None:
                self._cause = exc
        self._shutdown()

    def _shutdown(self) -> None:
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _lost(
        self, reason: str | None, cause: BaseException | None, event: c.ConnectionFailed | None
    ) -> None:
        """Reader thread, once: wake every waiter with the failure, then report it.
        ``reason`` None means end of stream: if a writer, the heartbeat or ``abort()`` shut
        the socket down, what they saw is the reason."""
        with self._state_lock:
            if reason is None:
                if self._cause is not None:
                    cause = self._cause
                    reason = _os_text(cause)
                else:
                    reason = "the server closed the connection"
            self._lost_cause = cause
            self._lost_reason = reason
            closing = self._closing
        # A request registers its waiter, then checks _lost_reason; we set it, then sweep:
        # either the request sees the loss or its waiter is swept (dict ops are atomic).
        self._shutdown()
        self._hb_wake.set()
        fail_all(self._pending, self._link_error)
        if closing or (self._disconnecting and event is None and cause is None):
            return  # an orderly end: nobody needs to hear about it
        try:
            self._on_event(event or c.ConnectionFailed(message=f"{self.address}: {reason}"))
        except Exception:
            log.exception("on_event raised on ConnectionFailed (ignored)")

    # ---- the reader -------------------------------------------------------------------
    def _read_loop(self, first: list[WireCommand]) -> None:
        io = self._io
        decoder = self._decoder
        pending = self._pending
        on_event = self._on_event
        reason: str | None = None  # None: end of stream
        cause: BaseException | None = None
        event: c.ConnectionFailed | None = None
        cmds = first
        gap = 0.0  # seconds of silence before the latest data
        try:
            while True:
                for cmd in cmds:
                    t = type(cmd)
                    if t is c.Deliver:
                        try:
                            on_event(cast(c.Deliver, cmd))
                        except Exception:
                            log.exception("on_event raised on a delivery (ignored)")
                    elif t is Heartbeat:
                        # An idle server writes one after its interval of silence: learn it.
                        if gap > self._peer_interval:
                            self._peer_interval = gap
                        self._hb_answer = True
                        self._hb_wake.set()
                    elif t is c.ConnectionFailed:
                        event = cast(c.ConnectionFailed, cmd)
                        reason = event.message
                        return
                    elif t is c.SendFailed:
                        try:
                            on_event(cast(c.SendFailed, cmd))
                        except Exception:
                            log.exception("on_event raised on a send refusal (ignored)")
                    else:
                        reply = cast(c.Reply, cmd)
                        if reply.corr:
                            waiter = pending.pop(reply.corr, None)
                            if waiter is not None:
                                waiter.resolve(reply)
                        elif type(reply) is c.Error:  # the server's last word: why it closes
                            reason = f"{reply.kind}: {reply.message}"
                            return
                        elif t not in _REPLY_TYPES:
                            raise ProtocolError(f"a server may not send {t.__name__}")
                try:
                    data = io.recv()
                except EOFError:
                    return
                now = time.monotonic()
                gap = now - self._last_recv
                self._last_recv = now
                cmds = decoder.feed(data) if data else []
                if io.has_output():
                    # TLS records made by reading (a key update answer). This thread never
                    # writes: a writer blocked on a full socket needs it to keep reading. The
                    # next frame anyone sends carries them; ask for a heartbeat to be that.
                    self._hb_answer = True
                    self._hb_wake.set()
        except ProtocolError as exc:
            reason = f"bad data from the server: {exc}"
            cause = exc
        except OSError as exc:
            reason = _os_text(exc)
            cause = exc
        except BaseException as exc:  # a bug: still fail the link rather than hang callers
            log.exception("the reader of %s failed", self.address)
            reason = f"internal error: {exc!r}"
            cause = exc
        finally:
            self._lost(reason, cause, event)
            # Nothing more will be read or written: free the descriptor now (a failed
            # connection may never be closed by its owner). Later writes fail with EBADF.
            self._sock.close()

    # ---- heartbeats ---------------------------------------------------------------------
    def _heartbeat_loop(self) -> None:
        interval = self._heartbeat
        wake = self._hb_wake
        poller = select.poll()
        try:
            poller.register(self._sock, select.POLLOUT)
        except ValueError:  # the reader closed the socket already: the link is lost
            return
        while self._lost_reason is None and not self._closing:
            now = time.monotonic()
            silent = now - self._last_recv
            # Dead after two intervals of silence: ours, or the server's if it proved longer
            # (learned from the spacing of its heartbeats; the interval is not negotiated).
            limit = 2 * max(interval, self._peer_interval)
            if silent >= limit:
                self._broken(
                    TimeoutError(
                        f"nothing received from {self.address} for {silent:.1f} s "
                        f"(heartbeat {interval:g} s): the server or the network is dead"
                    )
                )
                return
            next_send = self._last_sent + interval
            if self._hb_answer or now >= next_send:
                # Only with room in the send buffer: blocked in sendall behind a frozen
                # server, this thread could no longer declare it dead. A full buffer means
                # the link is busy, not idle; try again shortly.
                if poller.poll(0):
                    self._hb_answer = False
                    self._send_frame(_HEARTBEAT_FRAME)
                    next_send = self._last_sent + interval
                else:
                    next_send = now + interval / 8
            delay = min(next_send, self._last_recv + limit) - time.monotonic()
            if delay > 0:
                wake.wait(delay)
                wake.clear()


# ---- URLs ------------------------------------------------------------------------------------
_TCP_OPTIONS: Final = ("heartbeat", "connect_timeout")
_TLS_OPTIONS: Final = ("cafile", "certfile", "keyfile", "verify", "server_hostname")


@dataclasses.dataclass(frozen=True)
class TcpOptions:
    """Where and how to connect, parsed once from a ``tcp://`` or ``tls://`` URL."""

    host: str
    port: int
    heartbeat: float = DEFAULT_HEARTBEAT
    connect_timeout: float = 10.0
    ssl_context: ssl.SSLContext | None = None
    server_hostname: str | None = None

    def connect(self, on_event: Callable[[c.Command], None]) -> TcpTransport:
        """Open a :class:`TcpTransport` with these options.

        Raises:
            JMSException: the server cannot be reached (see :class:`TcpTransport`).
        """
        return TcpTransport(
            self.host,
            self.port,
            on_event,
            ssl_context=self.ssl_context,
            server_hostname=self.server_hostname,
            connect_timeout=self.connect_timeout,
            heartbeat=self.heartbeat,
        )


def parse_tcp_url(
    scheme: str, location: str, opts: dict[str, str], url: str, *, client_options: tuple[str, ...]
) -> TcpOptions:
    """Options of ``tcp://HOST[:PORT]`` / ``tls://HOST[:PORT]`` (``[::1]`` for IPv6).

    ``opts`` are the URL's query options; ``client_options`` are the names the connection
    factory reads itself (accepted here, not interpreted). TLS options: ``cafile`` (CAs that
    the server certificate must chain to; default: the system's), ``certfile``/``keyfile``
    (a client certificate), ``verify`` (true/false: check the server certificate and name,
    default true), ``server_hostname`` (the name to check, default HOST).

    Raises:
        JMSException: a malformed address, an unknown option, an option of the other scheme,
            or a bad value; the text names the option.
    """
    host, port = _host_port(location.rstrip("/"), DEFAULT_PORTS[scheme], url)
    known = (*client_options, *_TCP_OPTIONS, *_TLS_OPTIONS)
    for name in opts:
        if name not in known:
            hint = (
                f" ({name} is a vm:// option: a server has its own --{name.replace('_', '-')})"
                if name in ("data_dir", "store")
                else ""
            )
            raise JMSException(
                f"unknown option {name!r} in {url!r}{hint}; {scheme}:// takes "
                + ", ".join(known if scheme == "tls" else (*client_options, *_TCP_OPTIONS))
            )
        if scheme == "tcp" and name in _TLS_OPTIONS:
            raise JMSException(f"option {name!r} in {url!r} applies to tls:// URLs only")
    heartbeat = seconds_option(opts, "heartbeat", DEFAULT_HEARTBEAT, url, zero_ok=True)
    connect_timeout = seconds_option(opts, "connect_timeout", 10.0, url, zero_ok=False)
    ctx = None
    server_hostname = None
    if scheme == "tls":
        ctx = _ssl_context(opts, url)
        server_hostname = opts.get("server_hostname") or None
    return TcpOptions(host, port, heartbeat, connect_timeout, ctx, server_hostname)


def _host_port(location: str, default_port: int, url: str) -> tuple[str, int]:
    if location.startswith("["):
        end = location.find("]")
        host, rest = location[1:end], location[end + 1 :]
        if end < 0 or not host or (rest and not rest.startswith(":")):
            raise JMSException(f"bad address in {url!r}: write an IPv6 host as [::1]:61616")
        port_text = rest[1:]
    else:
        host, _, port_text = location.partition(":")
        if ":" in port_text:
            raise JMSException(
                f"bad address in {url!r}: put an IPv6 address in brackets, e.g. [::1]:61616"
            )
    if not host:
        raise JMSException(f"{url!r} names no host: write e.g. tcp://127.0.0.1:61616")
    if not port_text:
        return host, default_port
    try:
        port = int(port_text)
    except ValueError:
        port = -1
    if not 0 < port < 65536:
        raise JMSException(f"bad port {port_text!r} in {url!r}: use a number from 1 to 65535")
    return host, port


def _ssl_context(opts: dict[str, str], url: str) -> ssl.SSLContext:
    verify = flag_option(opts, "verify", True, url)
    cafile = opts.get("cafile") or None
    certfile = opts.get("certfile") or None
    keyfile = opts.get("keyfile") or None
    try:
        ctx = ssl.create_default_context(cafile=cafile)
    except (OSError, ssl.SSLError) as exc:
        raise JMSException(
            f"option cafile={cafile!r} in {url!r}: cannot load it: {_os_text(exc)}",
            linked_exception=exc,
        ) from exc
    if keyfile is not None and certfile is None:
        raise JMSException(f"option keyfile in {url!r} needs certfile (the client certificate)")
    if certfile is not None:
        try:
            ctx.load_cert_chain(certfile, keyfile)
        except (OSError, ssl.SSLError) as exc:
            raise JMSException(
                f"options certfile={certfile!r}/keyfile={keyfile!r} in {url!r}: cannot load "
                f"the client certificate: {_os_text(exc)}",
                linked_exception=exc,
            ) from exc
    if not verify:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    return ctx


def _os_text(exc: BaseException) -> str:
    """A short text for ``exc``: the OS error text and the exception's class."""
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror} ({type(exc).__name__})"
    return str(exc) or type(exc).__name__
