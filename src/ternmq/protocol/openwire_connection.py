"""The server side of one OpenWire connection, sans-IO: octets in, commands out.

Theory of operation
-------------------
:class:`OpenWireServerConnection` is the connection protocol of ActiveMQ Classic's
OpenWire without any I/O, the sibling of ``stomp_connection.StompServerConnection``: the
caller feeds it the octets it read with the time it read them, gets back the commands the
peer sent, asks it what to do when time passes, and writes what it returns. The gateway in
``server/openwire.py`` does the I/O and maps commands to the broker's requests.

A connection is a small state machine; :data:`TRANSITIONS` is the whole table, and a
(state, input) pair not in it raises :class:`ProtocolViolation` (the caller closes; the
state is left as it was, so the caller's close is the transition to CLOSED):

==========  ====================================  ==========
state       input                                 next
==========  ====================================  ==========
WIREFORMAT  ``WireFormatInfo``                    CONNECT    (:class:`Negotiated`: write its
                                                             ``reply``, the server's
                                                             WireFormatInfo and BrokerInfo)
CONNECT     ``ConnectionInfo``                    AUTH       (:class:`ConnectionInfoReceived`)
CONNECT     ``KeepAliveInfo``                     CONNECT
CONNECT     ``ShutdownInfo``                      CLOSED
AUTH        any command                           AUTH       (held until the verdict)
AUTH        credentials accepted                  OPEN       (held commands judged as OPEN
                                                             input)
AUTH        credentials refused                   CLOSED
OPEN        a command but WireFormatInfo and      OPEN       (the command, for the gateway)
            ConnectionInfo
OPEN        ``KeepAliveInfo``                     OPEN       (answered here if it asks)
OPEN        ``ShutdownInfo``                      CLOSED     (the peer is leaving)
any         the caller closes                     CLOSED
==========  ====================================  ==========

So a command before the WireFormatInfo exchange, a second WireFormatInfo or ConnectionInfo,
and malformed or oversized input (the codec's :class:`~ternmq.protocol.openwire
.OpenWireError`) are protocol errors; so is any input once CLOSED.

Negotiation (``OpenWireFormat.renegotiateWireFormat``): the server offers loose encoding
without the marshalling cache (``TightEncodingEnabled`` and ``CacheEnabled`` false: the
client ANDs its own settings with these, so it never sends tight or cached frames), no
stack traces, version 12 and ``max_inactivity_ms``. A client that offers a version below 12
is refused (the codec speaks v12 only; ActiveMQ 5.13 and later default to 12 and renegotiate
down to the lower offer, never up). The agreed ``MaxInactivityDuration`` is the smaller
offer (0 on either side turns the check off), as both sides compute it.

Inactivity (ActiveMQ's ``InactivityMonitor``), seconds on the caller's clock: once
negotiated, the peer must send something (any frame, a ``KeepAliveInfo`` if idle) at least
every ``window``; from ``initial_delay`` after the negotiation on, a silence of a whole
window is :attr:`Timeout.PEER_DEAD`. The server sends a ``KeepAliveInfo`` when it wrote
nothing for a third of the window (:attr:`Timeout.KEEPALIVE`), which is what the client's
read check waits for. Before OPEN, ``handshake_timeout`` after creation is
:attr:`Timeout.HANDSHAKE`. Read deadline (slowloris): a frame that has started arriving must
be complete within ``frame_timeout`` (:attr:`Timeout.FRAME`).

Budget before authentication: frames are limited to ``max_handshake_frame`` until
:meth:`~OpenWireServerConnection.accept` raises the limit to ``max_frame``, so a peer that
never logs in cannot make the server buffer a large frame.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Sequence
from typing import Final

from ternmq.protocol import openwire as ow
from ternmq.protocol._server_connection import ServerConnection, Timeout

__all__ = [
    "TRANSITIONS",
    "ConnectionInfoReceived",
    "Event",
    "Input",
    "Negotiated",
    "OpenWireServerConnection",
    "ProtocolViolation",
    "State",
    "Timeout",
    "exception_response",
    "input_of",
]

MIN_VERSION: Final = 12
"""The lowest OpenWire version the codec speaks (and the highest: ``openwire.VERSION``)."""


class State(enum.Enum):
    """Where a connection is in its life (see the module doc)."""

    WIREFORMAT = "wireformat"
    CONNECT = "connect"
    AUTH = "auth"
    OPEN = "open"
    CLOSED = "closed"


class Input(enum.Enum):
    """What may happen to a connection: a kind of command read, or the caller's verdict."""

    WIRE_FORMAT = "WireFormatInfo"
    CONNECTION_INFO = "ConnectionInfo"
    KEEP_ALIVE = "KeepAliveInfo"
    SHUTDOWN = "ShutdownInfo"
    COMMAND = "command"  # any other command
    ACCEPTED = "accepted"
    REFUSED = "refused"
    CLOSE = "close"


# (state, input) -> next state; a pair not here is a protocol error.
TRANSITIONS: Final[dict[tuple[State, Input], State]] = {
    (State.WIREFORMAT, Input.WIRE_FORMAT): State.CONNECT,
    (State.CONNECT, Input.CONNECTION_INFO): State.AUTH,
    (State.CONNECT, Input.KEEP_ALIVE): State.CONNECT,
    (State.CONNECT, Input.SHUTDOWN): State.CLOSED,
    # Commands read while the credentials are checked are held, then judged as OPEN input.
    (State.AUTH, Input.WIRE_FORMAT): State.AUTH,
    (State.AUTH, Input.CONNECTION_INFO): State.AUTH,
    (State.AUTH, Input.KEEP_ALIVE): State.AUTH,
    (State.AUTH, Input.SHUTDOWN): State.AUTH,
    (State.AUTH, Input.COMMAND): State.AUTH,
    (State.AUTH, Input.ACCEPTED): State.OPEN,
    (State.AUTH, Input.REFUSED): State.CLOSED,
    (State.OPEN, Input.COMMAND): State.OPEN,
    (State.OPEN, Input.KEEP_ALIVE): State.OPEN,
    (State.OPEN, Input.SHUTDOWN): State.CLOSED,
    **{(s, Input.CLOSE): State.CLOSED for s in State if s is not State.CLOSED},
}

_OPEN: Final = State.OPEN
_AUTH: Final = State.AUTH
_CLOSED: Final = State.CLOSED


def input_of(command: ow.DataStructure) -> Input:
    """The table input a decoded command is."""
    if isinstance(command, ow.WireFormatInfo):
        return Input.WIRE_FORMAT
    if isinstance(command, ow.ConnectionInfo):
        return Input.CONNECTION_INFO
    if isinstance(command, ow.KeepAliveInfo):
        return Input.KEEP_ALIVE
    if isinstance(command, ow.ShutdownInfo):
        return Input.SHUTDOWN
    return Input.COMMAND


class ProtocolViolation(ow.OpenWireError):
    """The peer broke the protocol: close the connection.

    Attributes:
        before: what the same input held before the violation, in order; the caller acts on
            it first (as if the violation came later).
    """

    def __init__(self, problem: str, *, before: Sequence[Event] = ()) -> None:
        super().__init__(problem)
        self.before = before


@dataclasses.dataclass(frozen=True, slots=True)
class Negotiated:
    """The client's WireFormatInfo was read: write :attr:`reply` (the server's
    WireFormatInfo, then its BrokerInfo). :attr:`wire_format` is what both sides use."""

    wire_format: ow.WireFormat
    reply: bytes


@dataclasses.dataclass(frozen=True, slots=True)
class ConnectionInfoReceived:
    """ConnectionInfo was read: check ``user_name``/``password`` of :attr:`info`, then call
    :meth:`OpenWireServerConnection.accept` or :meth:`~OpenWireServerConnection.refuse`."""

    info: ow.ConnectionInfo


Event = Negotiated | ConnectionInfoReceived | ow.DataStructure


def exception_response(command_id: int, class_name: str, message: str) -> ow.ExceptionResponse:
    """The ExceptionResponse answering command ``command_id`` with a Java exception of
    ``class_name`` (e.g. ``javax.jms.JMSSecurityException``: the client instantiates that
    class by name) and ``message``."""
    return ow.ExceptionResponse(
        correlation_id=command_id, exception=ow.JavaThrowable(class_name, message)
    )


def _problem(state: State, inp: Input, name: str) -> str:
    if state is _CLOSED:
        return f"{name} on a closed connection"
    if state is State.WIREFORMAT:
        return f"{name} before WireFormatInfo: an OpenWire peer sends WireFormatInfo first"
    if inp is Input.WIRE_FORMAT:
        return "a second WireFormatInfo on one connection: renegotiation is not supported"
    if inp is Input.CONNECTION_INFO:
        return f"a second ConnectionInfo on one connection ({state.value}): open another"
    if state is State.CONNECT:
        return f"{name} before ConnectionInfo: send ConnectionInfo first"
    return f"{name} is not expected while the connection is in state {state.value}"


class OpenWireServerConnection(ServerConnection[State, Input, Event, ow.DataStructure]):
    """The server side of one OpenWire connection (see the module doc).

    Args:
        now: the time the connection was accepted (seconds, the caller's clock).
        max_frame: the largest frame once authenticated, octets.
        max_handshake_frame: the largest frame before that, octets.
        max_inactivity: seconds; the server's ``MaxInactivityDuration`` offer (0: no check).
        inactivity_initial_delay: seconds; the server's ``MaxInactivityDurationInitalDelay``.
        handshake_timeout: seconds from ``now`` to be OPEN.
        frame_timeout: seconds a started frame has to complete (0: no deadline).
        broker_name: the name the BrokerInfo announces.
        broker_id: the id the BrokerInfo announces.
        provider: the ``ProviderName`` / ``ProviderVersion`` properties of the
            WireFormatInfo.

    Attributes:
        state: the :class:`State`.
        wire_format: the negotiated settings (None before WireFormatInfo).
        window: the agreed inactivity window in seconds (0: none).
        last_heard: when octets last arrived.
        frame_started: when the parser's partial frame began, or None.
    """

    _transitions = TRANSITIONS
    _refused = Input.REFUSED
    _close = Input.CLOSE
    _closed_state = _CLOSED

    def __init__(
        self,
        now: float,
        *,
        max_frame: int = ow.DEFAULT_MAX_FRAME_SIZE,
        max_handshake_frame: int = 64 * 1024,
        max_inactivity: float = 30.0,
        inactivity_initial_delay: float = 10.0,
        handshake_timeout: float = 10.0,
        frame_timeout: float = 30.0,
        broker_name: str = "ternmq",
        broker_id: str = "ID:ternmq",
        provider: tuple[str, str] = ("ternmq", "0"),
    ) -> None:
        self.state = State.WIREFORMAT
        self.max_frame = max_frame
        self.parser = ow.FrameParser(min(max_frame, max_handshake_frame))
        self.offer = ow.WireFormat(
            version=ow.VERSION,
            max_inactivity_ms=round(max_inactivity * 1000),
            max_inactivity_initial_delay_ms=round(inactivity_initial_delay * 1000),
            max_frame_size=max_frame,
        )
        self.provider = provider
        self.broker_name = broker_name
        self.broker_id = broker_id
        self.wire_format: ow.WireFormat | None = None
        self.window = 0.0
        self.checks_from = now  # the read check starts after the initial delay
        self.handshake_timeout = handshake_timeout
        self.handshake_deadline = now + handshake_timeout
        self.frame_timeout = frame_timeout
        self.frame_started: float | None = None
        self.last_heard = now
        self._held: list[ow.DataStructure] = []

    def _violation(
        self, inp: Input, name: str, before: Sequence[Event], receipt: str | None
    ) -> ProtocolViolation:
        return ProtocolViolation(_problem(self.state, inp, name), before=before)

    # ---- input -----------------------------------------------------------------------------
    def _parse(self, data: bytes, now: float) -> list[ow.DataStructure]:
        """Feed the parser; note liveness and the read deadline.

        Raises:
            ProtocolViolation: malformed or oversized input.
        """
        self.last_heard = now
        parser = self.parser
        try:
            commands = parser.feed(data)
        except ow.OpenWireError as exc:
            raise ProtocolViolation(str(exc)) from exc
        if not parser.pending:
            self.frame_started = None
        elif commands or self.frame_started is None:
            self.frame_started = now
        return commands

    def receive_data(self, data: bytes, now: float) -> list[Event]:
        """Octets read at ``now``: the events they finish, in order.

        Before OPEN: at most a :class:`Negotiated` and a :class:`ConnectionInfoReceived`
        (commands after ConnectionInfo are held until the verdict); once OPEN, the commands
        for the gateway (a ``KeepAliveInfo`` only if it asks for an answer, a
        ``ShutdownInfo`` last, the state then CLOSED).

        Raises:
            ProtocolViolation: malformed or oversized input, a command that is not an input
                of the current state, a failed negotiation, or any octets once CLOSED;
                ``before`` holds the events that preceded the violation.
        """
        if self.state is _CLOSED:
            raise ProtocolViolation(_problem(_CLOSED, Input.COMMAND, "data"))
        commands = self._parse(data, now)
        events: list[Event] = []
        for command in commands:
            state = self.current()
            if state is _AUTH:
                self._held.append(command)
                continue
            if state is _CLOSED:
                break  # a ShutdownInfo came: what follows it is not read
            inp = input_of(command)
            self._step(inp, type(command).__name__, events)
            if inp is Input.WIRE_FORMAT:
                assert isinstance(command, ow.WireFormatInfo)
                events.append(self._negotiate(command, now, events))
            elif inp is Input.CONNECTION_INFO:
                assert isinstance(command, ow.ConnectionInfo)
                events.append(ConnectionInfoReceived(command))
            elif inp is not Input.KEEP_ALIVE or (
                isinstance(command, ow.BaseCommand) and command.response_required
            ):
                events.append(command)
        return events

    def _negotiate(
        self, info: ow.WireFormatInfo, now: float, before: Sequence[Event]
    ) -> Negotiated:
        """Settle the wire format from the client's WireFormatInfo.

        Raises:
            ProtocolViolation: a malformed info or a version below 12; the state is back to
                WIREFORMAT.
        """
        try:
            peer = ow.WireFormat.from_info(info)
        except ow.OpenWireError as exc:
            self.state = State.WIREFORMAT
            raise ProtocolViolation(str(exc), before=before) from exc
        if peer.version < MIN_VERSION:
            self.state = State.WIREFORMAT
            raise ProtocolViolation(
                f"OpenWire version {peer.version} is not supported: this server speaks "
                f"version {ow.VERSION} (ActiveMQ 5.13 and later; set wireFormat.version=12)",
                before=before,
            )
        agreed = self.offer.negotiate(peer)
        if not self.offer.max_inactivity_ms or not peer.max_inactivity_ms:
            agreed = dataclasses.replace(agreed, max_inactivity_ms=0)
        self.wire_format = agreed
        self.window = agreed.max_inactivity_ms / 1000
        self.checks_from = now + agreed.max_inactivity_initial_delay_ms / 1000
        name, version = self.provider
        mine = self.offer.to_info(
            {
                "ProviderName": ow.Primitive(ow.PType.STRING, name),
                "ProviderVersion": ow.Primitive(ow.PType.STRING, version),
                "PlatformDetails": ow.Primitive(ow.PType.STRING, "Python"),
            }
        )
        broker = ow.BrokerInfo(
            broker_id=ow.BrokerId(value=self.broker_id), broker_name=self.broker_name
        )
        return Negotiated(agreed, ow.encode_frame(mine) + ow.encode_frame(broker))

    def current(self) -> State:
        """The state now (a method: a ShutdownInfo read in the same chunk may have closed
        the connection since the caller looked)."""
        return self.state

    def _judge(self, commands: Sequence[ow.DataStructure]) -> list[Event]:
        """The held ``commands`` as OPEN input.

        Raises:
            ProtocolViolation: a command that is not an OPEN input; ``before`` holds the
                commands that preceded it.
        """
        out: list[Event] = []
        for command in commands:
            if self.current() is _CLOSED:
                break
            inp = input_of(command)
            self._step(inp, type(command).__name__, out)
            if inp is not Input.KEEP_ALIVE or (
                isinstance(command, ow.BaseCommand) and command.response_required
            ):
                out.append(command)
        return out

    # ---- the caller's verdicts ------------------------------------------------------------
    def accept(self) -> list[Event]:
        """The credentials of ConnectionInfo are accepted: AUTH -> OPEN, the frame limit
        rises to ``max_frame``; answers the commands held meanwhile (send the
        ConnectionInfo's Response first, then handle them).

        Raises:
            ProtocolViolation: the connection is not AUTH, or a held command is not an OPEN
                input (``before`` holds those that preceded it).
        """
        self._step(Input.ACCEPTED, "accepted")
        self.parser.max_frame_size = self.max_frame
        held, self._held = self._held, []
        return self._judge(held)

    # ---- output ---------------------------------------------------------------------------
    @staticmethod
    def keepalive_frame() -> bytes:
        """A KeepAliveInfo that asks for no answer (the server's write check)."""
        return ow.encode_frame(ow.KeepAliveInfo())

    # ---- time -----------------------------------------------------------------------------
    def check_timers(self, now: float, last_sent: float) -> Timeout | None:
        """What to do at ``now`` (``last_sent``: when the caller last wrote):
        :attr:`Timeout.FRAME` if a frame started ``frame_timeout`` ago is still incomplete,
        :attr:`Timeout.HANDSHAKE` if not OPEN by the handshake deadline,
        :attr:`Timeout.PEER_DEAD` if the peer sent nothing for a whole inactivity window
        (from the initial delay on), :attr:`Timeout.KEEPALIVE` if the caller wrote nothing
        for a third of the window, else None (also once CLOSED)."""
        state = self.state
        if state is _CLOSED:
            return None
        started = self.frame_started
        if started is not None and self.frame_timeout and now - started >= self.frame_timeout:
            return Timeout.FRAME
        if state is not _OPEN and now >= self.handshake_deadline:
            return Timeout.HANDSHAKE
        window = self.window
        if window and self.wire_format is not None:
            if (
                now >= self.checks_from
                and now - max(self.last_heard, self.checks_from - window) >= window
            ):
                return Timeout.PEER_DEAD
            if now - last_sent >= window / 3:
                return Timeout.KEEPALIVE
        return None

    def next_deadline(self, last_sent: float) -> float | None:
        """The earliest time :meth:`check_timers` may have something to say, or None."""
        if self.state is _CLOSED:
            return None
        times: list[float] = []
        if self.frame_started is not None and self.frame_timeout:
            times.append(self.frame_started + self.frame_timeout)
        if self.state is not _OPEN:
            times.append(self.handshake_deadline)
        if self.window and self.wire_format is not None:
            times.append(max(self.checks_from, self.last_heard + self.window))
            times.append(last_sent + self.window / 3)
        return min(times) if times else None
