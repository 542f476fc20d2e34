"""The server side of one native-protocol connection, sans-IO: octets in, events out.

Theory of operation
-------------------
:class:`NativeServerConnection` is the connection protocol of the native wire without any
I/O (h11's ``Connection`` is the model): the caller feeds it the octets it read, with the
time it read them, and gets back what the peer asked for; it asks the object what to do when
time passes; it writes what the object returns. No socket, loop, thread or clock here: the
asyncio adapter (``server/native.py``) does the I/O and hands requests to the broker.

A connection is a small state machine; :data:`TRANSITIONS` is the whole table, and a
(state, input) pair that is not in it raises :class:`ProtocolViolation` (the caller sends
:func:`error_frame` and closes; the state is left as it was, so the caller's close is the
transition to CLOSED):

========  ====================================  =========
state     input                                 next
========  ====================================  =========
PREAMBLE  8 octets, a valid client preamble     CONNECT   (event :class:`PreambleReceived`)
CONNECT   ``Connect``                           AUTH      (event :class:`ConnectReceived`)
CONNECT   ``Heartbeat``                         CONNECT
AUTH      any frame                             AUTH      (held until the verdict)
AUTH      credentials accepted                  OPEN      (held frames judged as OPEN input)
AUTH      credentials refused                   CLOSED
OPEN      any request but ``Connect``           OPEN      (returned for the broker)
OPEN      ``Heartbeat``                         OPEN
any       the caller closes                     CLOSED
========  ====================================  =========

So a request before ``Connect``, a second ``Connect``, a reply or event sent by the client,
a bad preamble and a malformed or oversized frame (``FrameDecoder``'s limit) are protocol
errors; so is any input once CLOSED. A client may pipeline ``Connect`` and its first
requests: what follows ``Connect`` is held until :meth:`~NativeServerConnection.accept`, and
:meth:`~NativeServerConnection.take_held` gives it back in order.

Hot path: once OPEN, :meth:`~NativeServerConnection.receive_requests` returns the decoder's
own list after one type-membership test per frame (the table's OPEN row, precomputed as
:data:`OPEN_REQUESTS`); only a heartbeat or a violation takes the slow path.

Timing (time is the caller's, in seconds, any monotonic origin): ``handshake_timeout`` after
creation a connection not yet OPEN has expired; once OPEN, :meth:`check_timers` asks for a
``Heartbeat`` when the caller has written nothing for one ``heartbeat`` interval, or (once)
when the peer has been silent for one, and declares the peer dead after two silent intervals.

Budget before authentication: until :meth:`~NativeServerConnection.accept` the decoder's
limit is ``max_handshake_frame`` (a ``Connect`` is small), so a peer that never logs in
cannot make the server buffer a large frame; ``accept`` raises it to ``max_frame``. (A frame
pipelined after ``Connect`` in the same read is held to the small limit too.)

Read deadline (slowloris): once a frame has started arriving it must be complete within
``frame_timeout``, in every state. The start is noted per chunk read, not per frame: when a
chunk leaves a partial frame in the decoder and the previous one did not, or finished
frames; :meth:`~NativeServerConnection.check_timers` returns :attr:`Timeout.FRAME` past it.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Sequence
from typing import Final, get_args

from ternmq.protocol import commands as c
from ternmq.protocol._server_connection import ServerConnection, Timeout
from ternmq.protocol.frames import (
    DEFAULT_MAX_FRAME,
    MAGIC,
    PREAMBLE,
    FrameDecoder,
    Heartbeat,
    ProtocolError,
    WireCommand,
    check_preamble,
    encode,
)

__all__ = [
    "HEARTBEAT_FRAME",
    "OPEN_REQUESTS",
    "TRANSITIONS",
    "ConnectReceived",
    "Event",
    "Input",
    "NativeServerConnection",
    "PreambleReceived",
    "ProtocolViolation",
    "State",
    "Timeout",
    "error_frame",
    "input_of",
]

HEARTBEAT_FRAME: Final = encode(Heartbeat())


class State(enum.Enum):
    """Where a connection is in its life (see the module doc)."""

    PREAMBLE = "preamble"
    CONNECT = "connect"
    AUTH = "auth"
    OPEN = "open"
    CLOSED = "closed"


class Input(enum.Enum):
    """What may happen to a connection: a kind of frame read, or the caller's verdict."""

    PREAMBLE = "preamble"
    CONNECT = "Connect"
    HEARTBEAT = "Heartbeat"
    REQUEST = "request"  # any request but Connect
    NOT_REQUEST = "reply or event"  # a client may not send these
    ACCEPTED = "accepted"
    REFUSED = "refused"
    CLOSE = "close"


_HANDSHAKE_STATES: Final = (State.PREAMBLE, State.CONNECT, State.AUTH)

# (state, input) -> next state; a pair not here is a protocol error.
TRANSITIONS: Final[dict[tuple[State, Input], State]] = {
    (State.PREAMBLE, Input.PREAMBLE): State.CONNECT,
    (State.CONNECT, Input.CONNECT): State.AUTH,
    (State.CONNECT, Input.HEARTBEAT): State.CONNECT,
    # Frames read while the credentials are checked are held, then judged as OPEN input.
    (State.AUTH, Input.CONNECT): State.AUTH,
    (State.AUTH, Input.HEARTBEAT): State.AUTH,
    (State.AUTH, Input.REQUEST): State.AUTH,
    (State.AUTH, Input.NOT_REQUEST): State.AUTH,
    (State.AUTH, Input.ACCEPTED): State.OPEN,
    (State.AUTH, Input.REFUSED): State.CLOSED,
    (State.OPEN, Input.REQUEST): State.OPEN,
    (State.OPEN, Input.HEARTBEAT): State.OPEN,
    **{(s, Input.CLOSE): State.CLOSED for s in State if s is not State.CLOSED},
}

_REQUEST_TYPES: Final = frozenset(get_args(c.Request))

# The frame types that are a REQUEST input (OPEN -> OPEN): the hot path's one test per frame.
OPEN_REQUESTS: Final = _REQUEST_TYPES - {c.Connect}
assert TRANSITIONS[(State.OPEN, Input.REQUEST)] is State.OPEN

# The states as module constants for the per-chunk paths: reading an Enum member off its
# class costs ~65 ns more than a global on CPython 3.11.
_OPEN: Final = State.OPEN
_CONNECT: Final = State.CONNECT
_AUTH: Final = State.AUTH
_PREAMBLE: Final = State.PREAMBLE
_CLOSED: Final = State.CLOSED


def input_of(cmd: WireCommand) -> Input:
    """The table input a decoded frame is."""
    t = type(cmd)
    if t is Heartbeat:
        return Input.HEARTBEAT
    if t is c.Connect:
        return Input.CONNECT
    return Input.REQUEST if t in _REQUEST_TYPES else Input.NOT_REQUEST


def error_frame(problem: str) -> bytes:
    """The ``Error`` frame (kind ``ProtocolError``, corr 0) that tells the peer why it is
    being closed."""
    return encode(c.Error(corr=0, kind="ProtocolError", message=problem))


class ProtocolViolation(ProtocolError):
    """The peer broke the protocol: send :func:`error_frame` (after the server's preamble if
    :attr:`preamble`) and close.

    Attributes:
        before: what the same input held before the violation, in order; the caller acts on
            it first (requests go to the broker, as if the violation came later).
        preamble: the client's preamble was wrong; answer with the server's so that a peer
            of another version can read why.
    """

    def __init__(
        self, problem: str, *, before: Sequence[Event] = (), preamble: bool = False
    ) -> None:
        super().__init__(problem)
        self.before = before
        self.preamble = preamble


@dataclasses.dataclass(frozen=True, slots=True)
class PreambleReceived:
    """The client's preamble is valid: send :attr:`reply` (the server's preamble) and open
    the broker side of the connection."""

    reply: bytes = PREAMBLE


@dataclasses.dataclass(frozen=True, slots=True)
class ConnectReceived:
    """The first request: check its credentials, then call
    :meth:`NativeServerConnection.accept` or :meth:`NativeServerConnection.refuse`."""

    request: c.Connect


Event = c.Request | PreambleReceived | ConnectReceived


def _problem(state: State, inp: Input, name: str) -> str:
    if state is _CLOSED:
        return f"{name} on a closed connection"
    if inp is Input.NOT_REQUEST:
        return f"a client may not send {name}: it is a reply or an event"
    if state is _CONNECT and inp is Input.REQUEST:
        return f"{name} before Connect: the first request must be Connect"
    if state is _OPEN and inp is Input.CONNECT:
        return "a second Connect on one connection: open another connection instead"
    return f"{name} is not expected while the connection is in state {state.value}"


class NativeServerConnection(ServerConnection[State, Input, Event, WireCommand]):
    """The server side of one native-protocol connection (see the module doc).

    Args:
        now: the time the connection was accepted (seconds, the caller's clock).
        max_frame: largest frame payload accepted, octets.
        heartbeat: seconds; see :meth:`check_timers`.
        handshake_timeout: seconds from ``now`` to be OPEN.
        max_handshake_frame: largest frame payload accepted until :meth:`accept`, octets
            (at most ``max_frame``).
        frame_timeout: seconds a started frame has to complete (0: no deadline).
    """

    __slots__ = (
        "_decoder",
        "_max_frame",
        "_pre",
        "frame_started",
        "frame_timeout",
        "handshake_deadline",
        "handshake_timeout",
        "heartbeat",
        "last_heard",
        "probed",
    )

    _transitions = TRANSITIONS
    _refused = Input.REFUSED
    _close = Input.CLOSE
    _closed_state = _CLOSED

    def __init__(
        self,
        now: float,
        *,
        max_frame: int = DEFAULT_MAX_FRAME,
        heartbeat: float = 30.0,
        handshake_timeout: float = 10.0,
        max_handshake_frame: int = 64 * 1024,
        frame_timeout: float = 30.0,
    ) -> None:
        self.state = State.PREAMBLE
        self.heartbeat = heartbeat
        self.handshake_timeout = handshake_timeout
        self.handshake_deadline = now + handshake_timeout
        self.last_heard = now
        self.probed = False
        self._pre = bytearray()
        self._max_frame = max_frame
        self._decoder = FrameDecoder(min(max_frame, max_handshake_frame))
        self.frame_timeout = frame_timeout
        self.frame_started: float | None = None  # when the decoder's partial frame began
        self._held: list[WireCommand] = []

    def _violation(
        self, inp: Input, name: str, before: Sequence[Event], receipt: str | None
    ) -> ProtocolViolation:
        return ProtocolViolation(_problem(self.state, inp, name), before=before)

    # ---- input -----------------------------------------------------------------------------
    def receive_requests(self, data: bytes, now: float) -> list[c.Request]:
        """Octets read at ``now`` from an OPEN connection: the requests they finish, in order,
        for the broker (heartbeats only refresh the peer's liveness).

        Raises:
            ProtocolViolation: a malformed or oversized frame (nothing of ``data`` is
                returned), a frame that is not an OPEN input (``before`` holds the requests
                that preceded it), or the connection is not OPEN.
        """
        if self.state is not _OPEN:
            raise ProtocolViolation(
                f"receive_requests needs an open connection, not {self.state.value}"
            )
        self.last_heard = now
        self.probed = False
        decoder = self._decoder
        try:
            cmds = decoder.feed(data)
        except ProtocolError as exc:
            raise ProtocolViolation(str(exc)) from exc
        if decoder.buffered:
            if cmds or self.frame_started is None:
                self.frame_started = now
        elif self.frame_started is not None:
            self.frame_started = None
        ok = OPEN_REQUESTS
        for cmd in cmds:
            if type(cmd) not in ok:
                return self._judge(cmds)
        return cmds  # type: ignore[return-value]  # every one is in OPEN_REQUESTS

    def receive_data(self, data: bytes, now: float) -> list[Event]:
        """Octets read at ``now``, in any state: the events they finish, in order.

        While PREAMBLE and CONNECT these are at most one :class:`PreambleReceived` and one
        :class:`ConnectReceived`; while AUTH, nothing (frames are held); once OPEN, requests
        for the broker (as :meth:`receive_requests`).

        Raises:
            ProtocolViolation: a bad preamble, a malformed or oversized frame, a frame that
                is not an input of the current state, or any octets once CLOSED; ``before``
                holds the events that preceded the violation.
        """
        state = self.state
        if state is _OPEN:
            return [*self.receive_requests(data, now)]
        if state is _CLOSED:
            raise ProtocolViolation(_problem(state, Input.REQUEST, "data"))
        self.last_heard = now
        self.probed = False
        events: list[Event] = []
        if state is _PREAMBLE:
            rest = self._take_preamble(data)
            if rest is None:
                return events
            events.append(PreambleReceived())
            if not rest:
                return events
            data = rest
        decoder = self._decoder
        try:
            cmds = decoder.feed(data)
        except ProtocolError as exc:
            raise ProtocolViolation(str(exc), before=events) from exc
        if not decoder.buffered:
            self.frame_started = None
        elif cmds or self.frame_started is None:
            self.frame_started = now
        for i, cmd in enumerate(cmds):
            if self.state is _AUTH:
                self._held.extend(cmds[i:])
                break
            self._step(input_of(cmd), type(cmd).__name__, events)
            if isinstance(cmd, c.Connect):
                events.append(ConnectReceived(cmd))
        return events

    def _take_preamble(self, data: bytes) -> bytes | None:
        """Collect the client preamble; the octets after it once complete (else None).

        Raises:
            ProtocolViolation: not a ternmq preamble, or another major version.
        """
        pre = self._pre
        pre += data
        head = bytes(pre[: len(MAGIC)])
        if MAGIC[: len(head)] != head or len(pre) >= len(PREAMBLE):
            try:
                check_preamble(bytes(pre[: len(PREAMBLE)]))
            except ProtocolError as exc:
                raise ProtocolViolation(str(exc), preamble=True) from exc
        if len(pre) < len(PREAMBLE):
            return None
        rest = bytes(pre[len(PREAMBLE) :])
        self._pre = bytearray()
        self._step(Input.PREAMBLE, "preamble")
        return rest

    def _judge(self, cmds: Sequence[WireCommand]) -> list[c.Request]:
        """The requests among ``cmds`` as OPEN input; heartbeats dropped.

        Raises:
            ProtocolViolation: a frame that is not an OPEN input; ``before`` holds the
                requests that preceded it.
        """
        out: list[c.Request] = []
        ok = OPEN_REQUESTS
        for cmd in cmds:
            t = type(cmd)
            if t in ok:
                out.append(cmd)  # type: ignore[arg-type]  # an OPEN request
            else:
                self._step(input_of(cmd), t.__name__, out)
        return out

    # ---- the caller's verdicts ------------------------------------------------------------
    def accept(self) -> None:
        """The credentials of ``Connect`` are accepted: AUTH -> OPEN.

        Raises:
            ProtocolViolation: the connection is not AUTH.
        """
        self._step(Input.ACCEPTED, "accepted")
        self._decoder.max_frame = self._max_frame

    def take_held(self) -> list[c.Request]:
        """The requests read after ``Connect`` while the credentials were checked, in order
        (once OPEN: hand them to the broker after the ``Connect``).

        Raises:
            ProtocolViolation: a held frame is not an OPEN input (``before`` holds the
                requests that preceded it), or the connection is not OPEN.
        """
        if self.state is not _OPEN:
            raise ProtocolViolation(f"take_held needs an open connection, not {self.state.value}")
        held, self._held = self._held, []
        return self._judge(held)

    def _release(self) -> None:
        """Return the decoder's and the preamble's buffers (once CLOSED)."""
        self._decoder.release()
        self._pre = bytearray()

    # ---- time -----------------------------------------------------------------------------
    def check_timers(self, now: float, last_sent: float) -> Timeout | None:
        """What to do at ``now``, given the caller last wrote to the peer at ``last_sent``:
        :attr:`Timeout.FRAME` if a frame started ``frame_timeout`` ago is still incomplete,
        :attr:`Timeout.HANDSHAKE` if not OPEN by the handshake deadline,
        :attr:`Timeout.PEER_DEAD` if OPEN and the peer has been silent for two intervals,
        :attr:`Timeout.HEARTBEAT` if OPEN and nothing was written for an interval or the
        peer has been silent for one (once per silence), else None (also once CLOSED)."""
        state = self.state
        started = self.frame_started
        if (
            started is not None
            and self.frame_timeout
            and now - started >= self.frame_timeout
            and state is not _CLOSED
        ):
            return Timeout.FRAME
        if state is _OPEN:
            interval = self.heartbeat
            silent = now - self.last_heard
            if silent >= 2 * interval:
                return Timeout.PEER_DEAD
            if now - last_sent >= interval or (silent >= interval and not self.probed):
                self.probed = silent >= interval
                return Timeout.HEARTBEAT
            return None
        if state in _HANDSHAKE_STATES and now >= self.handshake_deadline:
            return Timeout.HANDSHAKE
        return None

    def frame_expired(self, now: float) -> tuple[str, bytes]:
        """Why the read deadline expired at ``now``, and the ``Error`` frame to send before
        closing."""
        started = self.frame_started if self.frame_started is not None else now
        problem = (
            f"a frame was not complete {now - started:.1f} s after it started "
            f"(frame_timeout {self.frame_timeout} s; {self._decoder.buffered} octets received)"
        )
        return problem, error_frame(problem)

    def handshake_expired(self) -> tuple[str, bytes]:
        """Why the handshake expired, and what to send before closing: an ``Error`` frame to
        a peer that sent its preamble but no ``Connect``, nothing otherwise (before the
        preamble the peer may not speak this protocol; while AUTH the verdict is late, not
        the peer)."""
        if self.state is _AUTH:
            problem = (
                f"the password check of Connect did not finish within handshake_timeout "
                f"({self.handshake_timeout} s)"
            )
            return problem, b""
        what = "preamble" if self.state is _PREAMBLE else "Connect"
        problem = f"no {what} within handshake_timeout ({self.handshake_timeout} s)"
        return problem, error_frame(problem) if self.state is _CONNECT else b""
