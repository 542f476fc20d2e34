"""The engine's records: a connection, its sessions and consumers, a topic's subscriptions,
and a staged transaction of sequence access.

Theory of operation
-------------------
These are plain slotted holders with no behaviour beyond a predicate or two; the engine
(``engine.py``) owns and mutates them, one owner at a time. A :class:`BrokerConnection` holds
its :class:`Session` records by session id; a session holds its :class:`Consumer` records and
the deliveries it has not settled (``outstanding``, by delivery id). A consumer reads one
:class:`~ternmq.broker._queue.MessageQueue`: a queue's own, or its :class:`Subscription`'s (a
topic copies each message into every subscription that admits it, JMS 2.0 §6.11, SUB-01).

This module depends only downwards (queues, selectors, commands): the engine, sequence
access (``_sequenced.py``), stats (``_stats.py``) and recovery (``_recover.py``) share it.
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
from collections.abc import Callable
from typing import Any

from ternmq.broker._queue import Entry, MessageQueue, Stored
from ternmq.destination import Destination
from ternmq.protocol import commands as c
from ternmq.selector import Selector, with_delivery_count

__all__ = [
    "BrokerConnection",
    "Consumer",
    "Emit",
    "Session",
    "StagedTx",
    "Subscription",
    "sub_store_key",
]

Emit = Callable[[c.Command], None]


class Session:
    """The broker's side of one client session."""

    __slots__ = ("conn", "consumers", "held", "id", "outstanding", "transacted", "tx_sends")

    def __init__(self, sid: int, conn: BrokerConnection, transacted: bool) -> None:
        self.id = sid
        self.conn = conn
        self.transacted = transacted
        self.outstanding: dict[int, Entry] = {}
        self.tx_sends: list[c.Send] = []
        self.consumers: dict[int, Consumer] = {}
        # Sends of this session held for room (PSF-07), in send order: (deadline epoch ms,
        # destination, send). The engine parks the session on its first one's destination.
        self.held: collections.deque[tuple[int, Destination, c.Send]] = collections.deque()


class Consumer:
    """The broker's side of one consumer: its queue, selector and prefetch credit."""

    __slots__ = (
        "acked_when_sent",
        "credit",
        "defer_skip",
        "id",
        "outstanding",
        "prefetch",
        "pull",
        "queue",
        "selector",
        "session",
        "sub",
    )

    def __init__(
        self,
        cid: int,
        session: Session,
        queue: MessageQueue,
        selector: Selector | None,
        prefetch: int,
        sub: Subscription | None,
    ) -> None:
        self.id = cid
        self.session = session
        self.queue = queue
        self.selector = selector
        self.prefetch = prefetch
        self.credit = prefetch
        self.pull = 0
        self.sub = sub
        self.outstanding: set[int] = set()
        # STOMP ack:auto: a delivery counts as consumed once sent (Broker._settle_sent)
        self.acked_when_sent = False
        # Deliveries whose insert is not deferred before one is again (Broker.end_deferral):
        # set when a deferral ran out before its acknowledgement came.
        self.defer_skip = 0

    def wants(self) -> bool:
        """Whether the consumer may take a message now (prefetch credit or a pull)."""
        return self.credit > 0 or self.pull > 0


@dataclasses.dataclass(eq=False)
class Subscription:
    """One subscription of a topic (plain, shared, durable or shared durable) and its queue."""

    key: tuple[str | None, str] | None
    topic: Destination
    selector_text: str | None
    selector: Selector | None
    no_local: bool
    durable: bool
    shared: bool
    client_id: str | None
    conn: BrokerConnection | None
    queue: MessageQueue

    def admits(self, stored: Stored) -> bool:
        """Whether a message published to the topic goes into this subscription: its
        selector matches and ``no_local`` does not exclude it (SUB-03, SUB-07)."""
        if self.no_local:
            if stored.origin_conn is self.conn and self.conn is not None:
                return False
            if (
                self.durable
                and self.client_id is not None
                and stored.origin_client == self.client_id
            ):
                return False
        selector = self.selector
        if selector is None:
            return True
        if selector.reads_delivery_count:  # offered to the subscription: its first delivery
            return selector.matches(with_delivery_count(stored.view(), 1))
        return selector.matches(stored.view())

    @property
    def kind(self) -> c.SubscriptionKind:
        """The kind a ``CreateConsumer`` names it by."""
        if self.durable:
            return "shared_durable" if self.shared else "durable"
        return "shared" if self.shared else "none"

    @property
    def name(self) -> str:
        """``CLIENT_ID:NAME`` (or ``NAME``) for a named subscription; the internal queue name
        of a plain consumer's subscription."""
        if self.key is None:
            return self.queue.key
        client_id, name = self.key
        return f"{client_id}:{name}" if client_id else name


class BrokerConnection:
    """The broker's side of one client connection.

    Args:
        broker: the engine that owns it (kept for hosts that hold only the connection).
        cid: the connection id (``ID:n``).
        emit: where the engine's output for this connection goes.
    """

    def __init__(self, broker: object, cid: str, emit: Emit) -> None:
        self.broker = broker
        self.id = cid
        self.emit = emit
        self.client_id: str | None = None
        self.user: str | None = None
        self.sessions: dict[int, Session] = {}
        self.temporaries: dict[Destination, Any] = {}
        self.closed = False
        self.held = 0  # sends of its sessions held for room (PSF-07)
        self.held_disconnect: c.Disconnect | None = None  # waits for those sends
        self._delivery_ids = itertools.count(1)
        # What an operator sees of it (the admin requests): set by the engine and the
        # gateway that accepted it.
        self.protocol = "vm"
        self.address: str | None = None
        self.connected_at = 0  # epoch ms

    def next_delivery_id(self) -> int:
        """The next delivery id of this connection (1, 2, ...)."""
        return next(self._delivery_ids)

    def detach(self) -> None:
        """The transport is gone: drop the output callback (a bound method of the gateway's
        connection, which holds this object: a reference cycle that only the cycle collector
        would free). Output still queued for the connection is discarded."""
        self.emit = _discard


def _discard(cmd: c.Command) -> None:
    """The output callback of a detached connection: nobody reads it any more."""


@dataclasses.dataclass
class StagedTx:
    """One staged transaction held by the broker until commit or abort."""

    sink_id: str
    batch_id: int
    sends: list[c.StagedSend] = dataclasses.field(default_factory=list)
    touched_ms: int = 0  # the last Stage (or the broker's start, for a recovered one)
    bytes: int = 0  # message bytes it holds in memory (part of Broker.staged_bytes)


def sub_store_key(client_id: str | None, name: str, shared: bool) -> str:
    """The store key of a durable subscription's queue."""
    return f"sub:{'s' if shared else 'u'}:{client_id or ''}:{name}"
