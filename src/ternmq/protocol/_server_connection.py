"""The shape every sans-IO server connection shares: a table walked one input at a time,
what the peer pipelined while its credentials are checked, and the caller's refusal and close.

Theory of operation
-------------------
Each wire protocol (``native_connection``, ``stomp_connection``, ``openwire_connection``)
keeps its own states, inputs and transition table (the table *is* that protocol's
connection life) and its own wording of a violation; :class:`ServerConnection` walks the
table for all of them:

- :meth:`~ServerConnection._step` takes the transition of one input, or raises the
  exception the subclass's :meth:`~ServerConnection._violation` builds; the state is then
  left as it was, so the caller's :meth:`~ServerConnection.close` is the move to CLOSED.
- ``_held`` keeps what the peer sent after its credentials until the caller's verdict;
  :meth:`~ServerConnection.refuse` (AUTH -> CLOSED) and :meth:`~ServerConnection.close`
  (any state -> CLOSED) drop it and give back what the subclass buffers
  (:meth:`~ServerConnection._release`).
- :attr:`~ServerConnection.closed` is what the gateway in ``server/`` asks before it closes.
- :class:`Timeout` is the one vocabulary of every protocol's ``check_timers``: what the
  caller must do when time passed (the gateway's sweep acts on it the same way for all).

The per-frame paths stay in the subclasses, which read their table and states as module
constants; only the handshake, a violation and the verdicts pass through here. Pure: no
I/O, no clock.
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Mapping, Sequence
from typing import Generic, TypeVar

__all__ = ["ServerConnection", "Timeout"]

StateT = TypeVar("StateT", bound=enum.Enum)
InputT = TypeVar("InputT", bound=enum.Enum)
EventT = TypeVar("EventT")
HeldT = TypeVar("HeldT")


class Timeout(enum.Enum):
    """What a server connection's ``check_timers`` asks the caller to do."""

    HEARTBEAT = "heartbeat"  # write the protocol's heartbeat frame now
    KEEPALIVE = "heartbeat"  # OpenWire's name of it (a KeepAliveInfo): the same member
    PEER_DEAD = "peer_dead"  # the peer has been silent too long: close, release what it held
    HANDSHAKE = "handshake"  # not OPEN within handshake_timeout: close
    FRAME = "frame"  # a frame started frame_timeout ago is still incomplete: close


class ServerConnection(abc.ABC, Generic[StateT, InputT, EventT, HeldT]):
    """The table-walking base of a protocol's server connection (see the module doc).

    A subclass sets, as class attributes, ``_transitions`` (its whole table: a
    ``(state, input)`` pair missing from it is a protocol error), ``_refused`` and
    ``_close`` (its inputs for the caller's verdicts) and ``_closed_state``; and, in its
    ``__init__``, ``state`` (the first state) and ``_held`` (an empty list).
    """

    __slots__ = ("_held", "state")

    _transitions: Mapping[tuple[StateT, InputT], StateT]
    _refused: InputT
    _close: InputT
    _closed_state: StateT
    state: StateT
    _held: list[HeldT]

    @abc.abstractmethod
    def _violation(
        self, inp: InputT, name: str, before: Sequence[EventT], receipt: str | None
    ) -> Exception:
        """The protocol error of input ``inp`` (read as ``name``) in the current state:
        ``before`` is what the same read gave before it, ``receipt`` the receipt the
        offending frame asked for (STOMP)."""

    def _release(self) -> None:
        """Give back what the subclass buffers once CLOSED (its parser's memory); a
        protocol whose parser holds nothing worth returning early keeps this default."""
        return None

    def _step(
        self, inp: InputT, name: str, before: Sequence[EventT] = (), receipt: str | None = None
    ) -> None:
        """Take the transition of ``inp`` (read as ``name``).

        Raises:
            Exception: the subclass's protocol violation (:meth:`_violation`) when the table
                has no transition for ``(state, inp)``; the state is unchanged.
        """
        nxt = self._transitions.get((self.state, inp))
        if nxt is None:
            raise self._violation(inp, name, before, receipt)
        self.state = nxt

    @property
    def closed(self) -> bool:
        """Whether the connection is CLOSED (by :meth:`close`, :meth:`refuse` or the peer)."""
        return self.state is self._closed_state

    def refuse(self) -> None:
        """The peer's credentials are refused: AUTH -> CLOSED (send the protocol's refusal,
        then close the socket); what it pipelined meanwhile is dropped.

        Raises:
            Exception: the subclass's protocol violation: the connection is not AUTH.
        """
        self._step(self._refused, "refused")
        self._held.clear()
        self._release()

    def close(self) -> None:
        """The caller closes the connection: any state but CLOSED -> CLOSED.

        Raises:
            Exception: the subclass's protocol violation: the connection is already CLOSED.
        """
        self._step(self._close, "close")
        self._held.clear()
        self._release()
