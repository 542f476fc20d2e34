"""What the engine's side modules may ask of the engine: narrow, named interfaces.

Theory of operation
-------------------
The engine (``engine.py``) is one state machine: dispatch, publish and release. Modules that
serve it from the side take the engine as one of these protocols instead of reaching into
its private members, and never import ``engine.py`` (the engine imports them):

- :class:`SequencedEngine` is what sequence access (``_sequenced.py``: bounds, ranges,
  cumulative acknowledgement, staged publishing) needs: destination lookup and permission
  checks, a message's bytes, settling an entry, routing a batch, and the staged-transaction
  state it keeps on the engine.
- :class:`AdminEngine` is what the operator's operations (``admin.py``, and the native
  protocol's admin requests of ``_admin_requests.py``) need: the destinations, settling,
  routing and deleting, and the connections.
- :class:`RecoveringEngine` is what recovery (``_recover.py``) needs to rebuild queues,
  durable subscriptions and staged transactions when the engine starts.

What several of them share is stated once (:class:`EngineMessages`,
:class:`EngineDestinations`) and inherited. A protocol lists exactly what its module uses;
growing one is a design decision, visible in review.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol, TypeVar

from ternmq.broker._queue import Entry, MessageQueue
from ternmq.broker._records import BrokerConnection, StagedTx, Subscription
from ternmq.broker.clock import Clock
from ternmq.broker.config import BrokerConfig
from ternmq.destination import Destination
from ternmq.protocol import commands as c
from ternmq.selector import Selector
from ternmq.store import Op

__all__ = [
    "AdminEngine",
    "EngineDestinations",
    "EngineMessages",
    "RecoveringEngine",
    "SequencedEngine",
]

_SendT = TypeVar("_SendT", c.Send, c.StagedSend)
_R = TypeVar("_R")


class EngineMessages(Protocol):
    """What every side module needs of the engine: time, names, a message's bytes, settling
    an entry, and checking and routing messages."""

    @property
    def clock(self) -> Clock:
        """The engine's time source."""
        ...

    def resolve(self, text: str) -> Destination:
        """The destination named by ``text``.

        Raises:
            JMSException: ``text`` is not a destination.
        """
        ...

    def selects(self, selector: Selector, e: Entry) -> bool:
        """Whether ``selector`` matches the message of ``e`` as its next delivery would carry
        it (``JMSXDeliveryCount`` included).

        Raises:
            JMSException: a paged-out message is missing from the store.
        """
        ...

    def data(self, e: Entry) -> bytes:
        """The encoded message of ``e``.

        Raises:
            JMSException: a paged-out message is missing from the store.
        """
        ...

    def finish(self, e: Entry) -> None:
        """``e`` leaves its queue for good (acknowledged)."""
        ...

    def check_send(
        self, conn: BrokerConnection, req: c.Send | c.StagedSend, dest_ok: bool = False
    ) -> Destination:
        """Everything a message must pass before it is accepted; its destination.

        Raises:
            JMSException: a check failed (its subclass names which).
        """
        ...

    def publish_all(
        self,
        conn: BrokerConnection,
        sends: Iterable[tuple[Destination, c.Send | c.StagedSend]],
        failure: str,
    ) -> int:
        """Route every message or none; how many were routed.

        Raises:
            TransactionRolledBackException: one could not be routed (``failure: reason``).
        """
        ...


class SequencedEngine(EngineMessages, Protocol):
    """The engine as sequence access (``_sequenced.py``) sees it."""

    staged_bytes: int  # message bytes of staged transactions (they count as memory)

    @property
    def config(self) -> BrokerConfig:
        """The broker settings."""
        ...

    @property
    def populate_user_id(self) -> bool:
        """Whether sent messages get the connection's user as JMSXUserID (PROP-23)."""
        ...

    @property
    def on_warning(self) -> Callable[..., None] | None:
        """Where the engine reports what it did on its own (for the log), if anywhere."""
        ...

    @property
    def total_bytes(self) -> int:
        """Memory held by every destination's messages: their bytes plus ``COPY_OVERHEAD``
        a copy in memory (what ``max_memory_bytes`` bounds)."""
        ...

    @property
    def durable(self) -> dict[tuple[str | None, str], Subscription]:
        """Durable subscriptions by (client id, name)."""
        ...

    @property
    def ops(self) -> list[Op]:
        """The store operations of the request being handled (written when it ends)."""
        ...

    @property
    def staged(self) -> dict[str, StagedTx]:
        """Staged transactions by txid."""
        ...

    @property
    def sinks(self) -> dict[str, int]:
        """The last committed batch of every sink."""
        ...

    def authorize(self, conn: BrokerConnection, action: str, dest: Destination) -> None:
        """Refuse ``action`` on ``dest`` unless the authorizer allows it.

        Raises:
            JMSSecurityException: the user may not.
        """
        ...

    def queue(self, dest: Destination, create: bool = True) -> MessageQueue:
        """The queue ``dest`` (auto-created if allowed).

        Raises:
            InvalidDestinationException: it does not exist and may not be created.
        """
        ...

    def stamp_user(self, conn: BrokerConnection, req: _SendT) -> _SendT:
        """``req`` with JMSXUserID set to the connection's user (PROP-23)."""
        ...

    def arm_reaper(self, now: int) -> None:
        """Make sure the reaper runs within ``expiry_scan_interval`` of ``now``."""
        ...


class EngineDestinations(Protocol):
    """The engine's destinations, as recovery and the operator's operations see them."""

    @property
    def queues(self) -> dict[Destination, MessageQueue]:
        """Queues by destination."""
        ...

    @property
    def topics(self) -> dict[Destination, list[Subscription]]:
        """The subscriptions of every topic."""
        ...

    def new_queue(self, dest: Destination, owner: BrokerConnection | None = None) -> MessageQueue:
        """Create queue ``dest`` (durable unless temporary) and register it."""
        ...


class RecoveringEngine(EngineDestinations, Protocol):
    """The engine as recovery (``_recover.py``) sees it, when it starts."""

    staged_bytes: int  # message bytes of staged transactions
    total_bytes: int  # memory held by every destination's messages (bytes + COPY_OVERHEAD)
    recovered: dict[str, int]  # what recovery found, for the host's log

    @property
    def clock(self) -> Clock:
        """The engine's time source."""
        ...

    @property
    def durable(self) -> dict[tuple[str | None, str], Subscription]:
        """Durable subscriptions by (client id, name)."""
        ...

    @property
    def staged(self) -> dict[str, StagedTx]:
        """Staged transactions by txid."""
        ...

    def durable_queue(self, key: str, name: str) -> MessageQueue:
        """A new durable queue or subscription queue, its positions above the reserved ones."""
        ...

    def add_timer(self, due: int, q: MessageQueue | None) -> None:
        """Have the engine act at ``due`` (epoch ms): promote ``q``'s scheduled messages."""
        ...

    def arm_reaper(self, now: int) -> None:
        """Make sure the reaper runs within ``expiry_scan_interval`` of ``now``."""
        ...


class AdminEngine(EngineMessages, EngineDestinations, Protocol):
    """The engine as the operator's operations (``admin.py``, ``_admin_requests.py``) see it."""

    @property
    def authorizer(self) -> Callable[[str | None, str, str], bool] | None:
        """``authorizer(user, action, destination) -> bool``, or None (everything allowed)."""
        ...

    @property
    def connections(self) -> dict[str, BrokerConnection]:
        """The open connections by id."""
        ...

    def delete_queue(self, dest: Destination) -> int:
        """Delete queue ``dest`` with its messages; how many it held."""
        ...

    def delete_topic(self, dest: Destination) -> None:
        """Delete topic ``dest`` with its subscriptions."""
        ...

    def delete_subscription(self, sub: Subscription) -> None:
        """Delete ``sub`` and its messages."""
        ...

    def purge_queue(self, q: MessageQueue) -> int:
        """Drop every message of ``q`` not in flight; how many."""
        ...

    def stat(self, dest: Destination) -> c.DestinationStat:
        """The figures of existing destination ``dest``."""
        ...

    def run_admin(self, change: Callable[[], _R], done: Callable[[c.Command], None]) -> _R:
        """Run an operator's ``change`` as one request; ``done`` hears when it is durable.

        Raises:
            whatever ``change`` raises.
        """
        ...

    def close_connection(self, conn: BrokerConnection, reason: str) -> None:
        """Close ``conn`` on the broker's side: release what it held and tell it
        ``ConnectionFailed(reason)``."""
        ...
