"""The server side of one STOMP connection, sans-IO: octets in, events out.

Theory of operation
-------------------
:class:`StompServerConnection` is the connection protocol of STOMP 1.0, 1.1 and 1.2 without
any I/O, the sibling of ``native_connection.NativeServerConnection``: the caller feeds it
the octets it read with the time it read them, gets back what the peer asked for, asks it
what to do when time passes, and writes the frames it returns. No socket, loop or clock
here: the gateway in ``server/`` does the I/O and maps frames to the broker's commands.

A connection is a small state machine; :data:`TRANSITIONS` is the whole table, and a
(state, input) pair not in it raises :class:`ProtocolViolation` (the caller sends
:meth:`~StompServerConnection.error_frame` and closes; the state is left as it was, so the
caller's close is the transition to CLOSED):

=======  ======================================  ========
state    input                                   next
=======  ======================================  ========
CONNECT  ``CONNECT`` or ``STOMP``                AUTH     (event :class:`ConnectReceived`)
CONNECT  heart-beat EOL                          CONNECT
AUTH     any frame                               AUTH     (held until the verdict)
AUTH     credentials accepted                    OPEN     (held frames judged as OPEN input)
AUTH     credentials refused                     CLOSED
OPEN     a client command but CONNECT/STOMP      OPEN     (the frame, for the gateway)
OPEN     heart-beat EOL                          OPEN
any      the caller closes                       CLOSED
=======  ======================================  ========

So a frame before CONNECT, a second CONNECT, a server command (MESSAGE, RECEIPT, ...) sent
by the client, and malformed or oversized input (the parser's :class:`StompError`) are
protocol errors; so is any input once CLOSED. DISCONNECT is an ordinary OPEN frame: the
gateway sends its receipt and closes.

Negotiation (STOMP 1.2 "Protocol Negotiation" and "Heart-beating"), done on CONNECT:

- the version is the highest of ``accept-version`` (a comma-separated list) that this side
  speaks (:data:`~ternmq.protocol.stomp.VERSIONS`); no header means 1.0; no common version
  is a violation whose ERROR lists the supported ones. From then on the parser unescapes
  headers per that version (frames already read after CONNECT in the same chunk are
  unescaped afresh).
- ``heart-beat: cx,cy`` (1.1+; milliseconds) against the server's ``heartbeat_send`` (sx)
  and ``heartbeat_receive`` (sy): the peer sends every ``max(cx, sy)`` unless either is 0,
  the server every ``max(sx, cy)`` unless either is 0. :attr:`~StompServerConnection
  .receive_interval` and :attr:`~StompServerConnection.send_interval` hold them in seconds
  (0: none); CONNECTED announces them, so the client computes the same pair. A client whose
  interval would exceed ``max_heartbeat`` is refused (a silence that long could not be
  told from a dead peer).

Timing (seconds, the caller's clock, any monotonic origin): not OPEN ``handshake_timeout``
after creation is :attr:`Timeout.HANDSHAKE`; once OPEN, :meth:`~StompServerConnection
.check_timers` asks for a heart-beat EOL when nothing was written for ``send_interval`` and
declares the peer dead after two ``receive_interval`` of silence (any octet counts).

Budget before authentication: the parser's frame limit is ``max_handshake_frame`` until
:meth:`~StompServerConnection.accept` raises it to ``max_frame``, so a peer that never logs in
cannot make the server buffer a large frame (frames pipelined after CONNECT in the same read
are held to the small limit too).

Read deadline (slowloris): a frame that has started arriving must be complete within
``frame_timeout``, in every state; the start is noted per chunk read (when a chunk leaves a
partial frame and the previous one did not, or finished frames).
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Sequence
from typing import Final

from ternmq._version import __version__
from ternmq.protocol._server_connection import ServerConnection, Timeout
from ternmq.protocol.stomp import (
    CLIENT_COMMANDS,
    HEARTBEAT,
    VERSIONS,
    StompError,
    StompFrame,
    StompLimits,
    StompParser,
    encode_frame,
    unescape_headers,
)

__all__ = [
    "HEARTBEAT_EOL",
    "OPEN_COMMANDS",
    "TRANSITIONS",
    "ConnectReceived",
    "Event",
    "Input",
    "ProtocolViolation",
    "State",
    "StompServerConnection",
    "Timeout",
    "input_of",
    "negotiate_heartbeat",
    "negotiate_version",
]

HEARTBEAT_EOL: Final = b"\n"
"""What the server writes as a heart-beat."""


class State(enum.Enum):
    """Where a connection is in its life (see the module doc)."""

    CONNECT = "connect"
    AUTH = "auth"
    OPEN = "open"
    CLOSED = "closed"


class Input(enum.Enum):
    """What may happen to a connection: a kind of frame read, or the caller's verdict."""

    CONNECT = "CONNECT"  # CONNECT or STOMP
    HEARTBEAT = "heart-beat"
    REQUEST = "request"  # any other client command
    NOT_REQUEST = "server command"  # CONNECTED, MESSAGE, RECEIPT, ERROR: a client may not
    ACCEPTED = "accepted"
    REFUSED = "refused"
    CLOSE = "close"


# (state, input) -> next state; a pair not here is a protocol error.
TRANSITIONS: Final[dict[tuple[State, Input], State]] = {
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

_CONNECT_COMMANDS: Final = frozenset({"CONNECT", "STOMP"})

# The commands that are a REQUEST input (OPEN -> OPEN): the hot path's one test per frame.
OPEN_COMMANDS: Final = CLIENT_COMMANDS - _CONNECT_COMMANDS
assert TRANSITIONS[(State.OPEN, Input.REQUEST)] is State.OPEN

_OPEN: Final = State.OPEN
_CONNECT: Final = State.CONNECT
_AUTH: Final = State.AUTH
_CLOSED: Final = State.CLOSED


def input_of(item: StompFrame | object) -> Input:
    """The table input a parsed item (a frame or :data:`~ternmq.protocol.stomp.HEARTBEAT`)
    is."""
    if not isinstance(item, StompFrame):
        return Input.HEARTBEAT
    if item.command in _CONNECT_COMMANDS:
        return Input.CONNECT
    return Input.REQUEST if item.command in CLIENT_COMMANDS else Input.NOT_REQUEST


class ProtocolViolation(StompError):
    """The peer broke the protocol: send :meth:`StompServerConnection.error_frame` with this
    message (and :attr:`receipt_id`) and close.

    Attributes:
        before: what the same input held before the violation, in order; the caller acts on
            it first (as if the violation came later).
        receipt_id: the ``receipt`` header of the offending frame, for the ERROR's
            ``receipt-id``; None if there was none.
    """

    def __init__(
        self, problem: str, *, before: Sequence[Event] = (), receipt_id: str | None = None
    ) -> None:
        super().__init__(problem)
        self.before = before
        self.receipt_id = receipt_id


@dataclasses.dataclass(frozen=True, slots=True)
class ConnectReceived:
    """CONNECT (or STOMP) was read and negotiated: check ``login``/``passcode`` of
    :attr:`frame`, then call :meth:`StompServerConnection.accept` (and send
    :meth:`~StompServerConnection.connected_frame`) or :meth:`~StompServerConnection.refuse`.

    Attributes:
        frame: the CONNECT frame (headers raw, as STOMP sends them).
        version: the negotiated version.
    """

    frame: StompFrame
    version: str


Event = StompFrame | ConnectReceived


def negotiate_version(accept_version: str | None) -> str:
    """The highest version of ``accept_version`` (the header, comma-separated; None: absent,
    meaning 1.0) that this side speaks.

    Raises:
        ProtocolViolation: no version in common.
    """
    if accept_version is None:
        return "1.0"
    offered = {v.strip() for v in accept_version.split(",")}
    for version in reversed(VERSIONS):
        if version in offered:
            return version
    raise ProtocolViolation(
        f"no common STOMP version: the client accepts {accept_version!r}, this server speaks "
        f"{', '.join(VERSIONS)}: use one of these"
    )


def _millis(text: str) -> int:
    """One field of a ``heart-beat`` header.

    Raises:
        ProtocolViolation: not a non-negative integer.
    """
    text = text.strip()
    if not (text.isascii() and text.isdigit()) or len(text) > 12:
        raise ProtocolViolation(
            f"heart-beat field {text!r} is not a non-negative integer: send "
            "heart-beat:cx,cy in milliseconds (0,0 for none)"
        )
    return int(text)


def negotiate_heartbeat(
    header: str | None, send: float, receive: float, max_heartbeat: float
) -> tuple[float, float]:
    """``(send_interval, receive_interval)`` in seconds (0: none) for the client's
    ``heart-beat`` header (None: absent, no heart-beats) and the server's ``send`` (sx) and
    ``receive`` (sy) intervals, per STOMP 1.2 "Heart-beating".

    Raises:
        ProtocolViolation: a malformed header, or a client that would send less often than
            every ``max_heartbeat`` seconds.
    """
    if header is None:
        return 0.0, 0.0
    cx_text, comma, cy_text = header.partition(",")
    if not comma:
        raise ProtocolViolation(
            f"heart-beat {header!r} is not two integers: send heart-beat:cx,cy in "
            "milliseconds (0,0 for none)"
        )
    cx, cy = _millis(cx_text), _millis(cy_text)
    sx, sy = round(send * 1000), round(receive * 1000)
    send_ms = max(sx, cy) if sx and cy else 0
    receive_ms = max(cx, sy) if cx and sy else 0
    if receive_ms > max_heartbeat * 1000:
        raise ProtocolViolation(
            f"heart-beat {header!r}: the client would send every {cx} ms, over this server's "
            f"maximum of {round(max_heartbeat * 1000)} ms: send heart-beats more often, or 0 "
            "for none"
        )
    return send_ms / 1000, receive_ms / 1000


def _problem(state: State, inp: Input, command: str) -> str:
    if state is _CLOSED:
        return f"{command} on a closed connection"
    if inp is Input.NOT_REQUEST:
        return f"a client may not send {command}: it is a server frame"
    if state is _CONNECT and inp is Input.REQUEST:
        return f"{command} before CONNECT: the first frame must be CONNECT (or STOMP)"
    if state is _OPEN and inp is Input.CONNECT:
        return f"a second {command} on one connection: open another connection instead"
    return f"{command} is not expected while the connection is in state {state.value}"


def _plain(value: str) -> str:
    """``value`` fit for a header that is not escaped: line breaks become spaces."""
    return value.replace("\r", " ").replace("\n", " ")


class StompServerConnection(ServerConnection[State, Input, Event, StompFrame]):
    """The server side of one STOMP connection (see the module doc).

    Args:
        now: the time the connection was accepted (seconds, the caller's clock).
        limits: the bounds on frames (the parser's).
        heartbeat_send: seconds; the server's ``sx``: how often it can send heart-beats
            (0: it sends none).
        heartbeat_receive: seconds; the server's ``sy``: how often it wants them (0: none).
        max_heartbeat: seconds; the longest client heart-beat interval accepted.
        handshake_timeout: seconds from ``now`` to be OPEN.
        frame_timeout: seconds a started frame has to complete (0: no deadline).

    Attributes:
        state: the :class:`State`.
        version: the negotiated version ("1.0" until CONNECT).
        send_interval: seconds between the server's heart-beats once OPEN (0: none).
        receive_interval: seconds between the client's heart-beats once OPEN (0: none).
        last_heard: when octets last arrived.
        last_sent: when the caller last wrote (see :meth:`sent`).
        frame_started: when the parser's partial frame began, or None.
    """

    __slots__ = (
        "frame_started",
        "frame_timeout",
        "handshake_deadline",
        "handshake_timeout",
        "heartbeat_receive",
        "heartbeat_send",
        "last_heard",
        "last_sent",
        "limits",
        "max_heartbeat",
        "parser",
        "receive_interval",
        "send_interval",
        "version",
    )

    _transitions = TRANSITIONS
    _refused = Input.REFUSED
    _close = Input.CLOSE
    _closed_state = _CLOSED

    def __init__(
        self,
        now: float,
        *,
        limits: StompLimits | None = None,
        heartbeat_send: float = 10.0,
        heartbeat_receive: float = 10.0,
        max_heartbeat: float = 120.0,
        handshake_timeout: float = 10.0,
        frame_timeout: float = 30.0,
    ) -> None:
        self.limits = limits if limits is not None else StompLimits()
        self.parser = StompParser(self.limits)
        self.state = State.CONNECT
        self.version = "1.0"
        self.heartbeat_send = heartbeat_send
        self.heartbeat_receive = heartbeat_receive
        self.max_heartbeat = max_heartbeat
        self.send_interval = 0.0
        self.receive_interval = 0.0
        self.handshake_timeout = handshake_timeout
        self.handshake_deadline = now + handshake_timeout
        self.frame_timeout = frame_timeout
        self.frame_started: float | None = None
        self.last_heard = now
        self.last_sent = now
        self._held: list[StompFrame] = []

    def _violation(
        self, inp: Input, name: str, before: Sequence[Event], receipt: str | None
    ) -> ProtocolViolation:
        return ProtocolViolation(_problem(self.state, inp, name), before=before, receipt_id=receipt)

    # ---- input -----------------------------------------------------------------------------
    def _parse(self, data: bytes, now: float, before: Sequence[Event] = ()) -> list[object]:
        """Feed the parser; note liveness and the read deadline.

        Raises:
            ProtocolViolation: malformed or oversized input.
        """
        self.last_heard = now
        parser = self.parser
        try:
            items: list[object] = list(parser.feed(data))
        except StompError as exc:
            raise ProtocolViolation(str(exc.args[0]), before=before) from exc
        if not parser.pending:
            self.frame_started = None
        elif items or self.frame_started is None:
            self.frame_started = now
        return items

    def receive_frames(self, data: bytes, now: float) -> list[StompFrame]:
        """Octets read at ``now`` from an OPEN connection: the frames they finish, in order,
        for the gateway (heart-beats only refresh the peer's liveness).

        Raises:
            ProtocolViolation: malformed or oversized input (nothing of ``data`` is
                returned), a frame that is not an OPEN input (``before`` holds the frames
                that preceded it), or the connection is not OPEN.
        """
        if self.state is not _OPEN:
            raise ProtocolViolation(
                f"receive_frames needs an open connection, not {self.state.value}"
            )
        items = self._parse(data, now)
        ok = OPEN_COMMANDS
        for item in items:
            if item is HEARTBEAT or item.command not in ok:  # type: ignore[attr-defined]
                return self._judge(items)
        return items  # type: ignore[return-value]  # every one is an OPEN frame

    def receive_data(self, data: bytes, now: float) -> list[Event]:
        """Octets read at ``now``, in any state: the events they finish, in order.

        While CONNECT this is at most one :class:`ConnectReceived`; while AUTH, nothing
        (frames are held); once OPEN, frames for the gateway (as :meth:`receive_frames`).

        Raises:
            ProtocolViolation: malformed or oversized input, a frame that is not an input
                of the current state, a failed negotiation, or any octets once CLOSED;
                ``before`` holds the events that preceded the violation.
        """
        state = self.state
        if state is _OPEN:
            return [*self.receive_frames(data, now)]
        if state is _CLOSED:
            raise ProtocolViolation(_problem(state, Input.REQUEST, "data"))
        items = self._parse(data, now)
        events: list[Event] = []
        for i, item in enumerate(items):
            if self.state is _AUTH:
                # Read in the same chunk as CONNECT: parsed before the version was known.
                self._hold(items[i:], raw=bool(events))
                break
            inp = input_of(item)
            frame = item if isinstance(item, StompFrame) else None
            receipt = frame.get("receipt") if frame is not None else None
            command = frame.command if frame is not None else "heart-beat"
            self._step(inp, command, events, receipt)
            if frame is not None and inp is Input.CONNECT:
                self._negotiate(frame)
                events.append(ConnectReceived(frame, self.version))
        return events

    def _negotiate(self, frame: StompFrame) -> None:
        """Settle version and heart-beats from CONNECT; the parser unescapes from now on.

        Raises:
            ProtocolViolation: no common version or an unacceptable heart-beat; the state is
                back to CONNECT.
        """
        try:
            version = negotiate_version(frame.get("accept-version"))
            beat = frame.get("heart-beat") if version != "1.0" else None
            self.send_interval, self.receive_interval = negotiate_heartbeat(
                beat, self.heartbeat_send, self.heartbeat_receive, self.max_heartbeat
            )
        except ProtocolViolation as exc:
            self.state = _CONNECT
            exc.receipt_id = frame.get("receipt")
            raise
        self.version = self.parser.version = version

    def _hold(self, items: Sequence[object], *, raw: bool) -> None:
        """Keep what follows CONNECT until the verdict; ``raw``: the parser read these
        before the version was known, so unescape them per the negotiated version now.

        Raises:
            ProtocolViolation: an undefined escape sequence in a held frame.
        """
        for item in items:
            if isinstance(item, StompFrame):
                if raw and self.version != "1.0" and item.command not in _CONNECT_COMMANDS:
                    try:
                        item.headers = unescape_headers(item.headers, self.version)
                    except StompError as exc:
                        raise ProtocolViolation(str(exc.args[0])) from exc
                self._held.append(item)

    def _judge(self, items: Sequence[object]) -> list[StompFrame]:
        """The frames among ``items`` as OPEN input; heart-beats dropped.

        Raises:
            ProtocolViolation: a frame that is not an OPEN input; ``before`` holds the
                frames that preceded it.
        """
        out: list[StompFrame] = []
        ok = OPEN_COMMANDS
        for item in items:
            if not isinstance(item, StompFrame):
                continue
            if item.command in ok:
                out.append(item)
            else:
                self._step(input_of(item), item.command, out, item.get("receipt"))
        return out

    # ---- the caller's verdicts ------------------------------------------------------------
    def accept(self) -> None:
        """The credentials of CONNECT are accepted: AUTH -> OPEN; the frame limit rises to
        ``max_frame``. Send :meth:`connected_frame` next.

        Raises:
            ProtocolViolation: the connection is not AUTH.
        """
        self._step(Input.ACCEPTED, "accepted")
        self.parser.frame_limit = self.limits.max_frame

    def take_held(self) -> list[StompFrame]:
        """The frames read after CONNECT while the credentials were checked, in order (once
        OPEN: hand them to the gateway after sending CONNECTED).

        Raises:
            ProtocolViolation: a held frame is not an OPEN input (``before`` holds the
                frames that preceded it), or the connection is not OPEN.
        """
        if self.state is not _OPEN:
            raise ProtocolViolation(f"take_held needs an open connection, not {self.state.value}")
        held, self._held = self._held, []
        return self._judge(held)

    # ---- output ---------------------------------------------------------------------------
    def sent(self, now: float) -> None:
        """The caller wrote to the peer at ``now`` (any frame or a heart-beat)."""
        self.last_sent = now

    def connected_frame(self, session_id: str, server: str = f"ternmq/{__version__}") -> bytes:
        """The CONNECTED frame for an accepted CONNECT: the negotiated version, ``session``,
        ``server``, and (1.1+) the negotiated ``heart-beat`` in milliseconds, from which the
        client derives the same intervals."""
        headers = [("version", self.version), ("session", _plain(session_id))]
        headers.append(("server", _plain(server)))
        if self.version != "1.0":
            beat = f"{round(self.send_interval * 1000)},{round(self.receive_interval * 1000)}"
            headers.append(("heart-beat", beat))
        return encode_frame("CONNECTED", headers, version=self.version)

    def error_frame(self, message: str, receipt_id: str | None = None, detail: str = "") -> bytes:
        """An ERROR frame: ``message`` (what is wrong and what to do) in its ``message``
        header, ``receipt-id`` if the offending frame asked for a receipt, ``detail`` as a
        text body. Before a version is agreed it also lists the supported ones in
        ``version``. Headers are escaped per the negotiated version (line breaks become
        spaces in 1.0)."""
        version = self.version
        plain = version == "1.0"
        headers = [("message", _plain(message) if plain else message)]
        if receipt_id is not None:
            headers.append(("receipt-id", _plain(receipt_id) if plain else receipt_id))
        if self.state is _CONNECT:
            headers.append(("version", ",".join(VERSIONS)))
        headers.append(("content-type", "text/plain;charset=utf-8"))
        if version == "1.1":
            headers = [(k, v.rstrip("\r")) for k, v in headers]
        return encode_frame("ERROR", headers, detail.encode("utf-8"), version)

    # ---- time -----------------------------------------------------------------------------
    def check_timers(self, now: float, last_sent: float | None = None) -> Timeout | None:
        """What to do at ``now`` (``last_sent``: when the caller last wrote, default
        :attr:`last_sent`): :attr:`Timeout.FRAME` if a frame started ``frame_timeout`` ago
        is still incomplete, :attr:`Timeout.HANDSHAKE` if not OPEN by the handshake
        deadline, :attr:`Timeout.PEER_DEAD` if OPEN and the peer has been silent for two
        receive intervals, :attr:`Timeout.HEARTBEAT` if OPEN and nothing was written for a
        send interval (the caller then writes :data:`HEARTBEAT_EOL`; :attr:`last_sent`
        becomes ``now``), else None (also once CLOSED)."""
        state = self.state
        if state is _CLOSED:
            return None
        started = self.frame_started
        if started is not None and self.frame_timeout and now - started >= self.frame_timeout:
            return Timeout.FRAME
        if state is _OPEN:
            receive = self.receive_interval
            if receive and now - self.last_heard >= 2 * receive:
                return Timeout.PEER_DEAD
            send = self.send_interval
            wrote = self.last_sent if last_sent is None else last_sent
            if send and now - wrote >= send:
                self.last_sent = now
                return Timeout.HEARTBEAT
            return None
        if now >= self.handshake_deadline:
            return Timeout.HANDSHAKE
        return None

    def next_deadline(self) -> float | None:
        """The earliest time :meth:`check_timers` may have something to say (the caller
        sleeps until then), or None if nothing is pending."""
        times: list[float] = []
        if self.state is _CLOSED:
            return None
        if self.frame_started is not None and self.frame_timeout:
            times.append(self.frame_started + self.frame_timeout)
        if self.state is _OPEN:
            if self.receive_interval:
                times.append(self.last_heard + 2 * self.receive_interval)
            if self.send_interval:
                times.append(self.last_sent + self.send_interval)
        else:
            times.append(self.handshake_deadline)
        return min(times) if times else None

    def frame_expired(self, now: float) -> str:
        """Why the read deadline expired at ``now`` (for :meth:`error_frame`)."""
        started = self.frame_started if self.frame_started is not None else now
        return (
            f"a frame was not complete {now - started:.1f} s after it started "
            f"(frame_timeout {self.frame_timeout} s; {self.parser.pending} octets received): "
            "send whole frames promptly"
        )

    def handshake_expired(self) -> tuple[str, bool]:
        """Why the handshake expired, and whether to send an ERROR frame with it (not while
        AUTH: then the password check is late, not the peer)."""
        if self.state is _AUTH:
            return (
                f"the password check of CONNECT did not finish within handshake_timeout "
                f"({self.handshake_timeout} s)",
                False,
            )
        return (
            f"no CONNECT within handshake_timeout ({self.handshake_timeout} s): send CONNECT first",
            True,
        )
