"""A testing kit for ternmq's own tests and for code tested against ternmq.

Theory of operation
-------------------
Time-dependent behaviour (time-to-live, delivery delay, redelivery back-off, the expiry
reaper, heartbeats) is tested with a :class:`FakeClock`: it moves only when a test advances
it, tells whoever sleeps for a deadline never to wake on their own
(:meth:`FakeClock.sleep_time` is infinite), and calls its listeners (the broker host's timer)
synchronously on :meth:`FakeClock.advance`. Give it to an embedded broker or a server::

    clock = FakeClock()
    with EmbeddedBroker("test", clock=clock) as broker:
        ...  # send with a delivery delay of 5 s
        clock.advance(5)  # the message is delivered before advance() returns

:class:`EngineHarness` drives the broker engine directly, without a transport or a thread:
requests in, emitted commands out. It builds a :class:`~ternmq.broker.engine.Broker` on a
:class:`~ternmq.store.MemoryStore` (a synchronous store: every reply is emitted before
``request`` returns) with a :class:`FakeClock`; each :meth:`EngineHarness.connect` opens a
connection whose replies :meth:`HarnessConnection.request` returns and whose events
(``Deliver``, ``ConnectionFailed``, ``SendFailed``) collect in
:attr:`HarnessConnection.events`, in the order the broker emitted them::

    from ternmq.message import TextMessage
    from ternmq.message.codec import encode_message
    from ternmq.protocol import commands as c
    from ternmq.testing import EngineHarness

    h = EngineHarness()
    consumer = h.connect()
    consumer.request(c.CreateSession(session_id=1))
    consumer.request(c.CreateConsumer(session_id=1, consumer_id=1, destination="queue://q"))
    producer = h.connect()
    producer.request(c.CreateSession(session_id=1))
    m = TextMessage()
    m.text = "hello"
    producer.request(c.Send(session_id=1, destination="queue://q", message=encode_message(m)))
    [deliver] = consumer.take_events()  # a c.Deliver

The commands are those of ``ternmq.protocol.commands`` (the native protocol's values), so a
test of the harness states exactly what a client on any transport would see.
"""

from __future__ import annotations

import itertools
import math
import threading
from collections.abc import Callable
from typing import Any

import msgspec

from ternmq.broker.config import BrokerConfig
from ternmq.broker.engine import Broker, BrokerConnection
from ternmq.client._util import error_of
from ternmq.errors import IllegalStateException
from ternmq.protocol import commands as c
from ternmq.store import MemoryStore, Store

__all__ = ["EngineHarness", "FakeClock", "HarnessConnection"]


class FakeClock:
    """A clock that moves only when told to (for deterministic tests).

    Args:
        start_ms: the initial time, epoch milliseconds.
    """

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self._now = start_ms
        self._lock = threading.Lock()
        self._listeners: list[Callable[[], None]] = []

    def now_ms(self) -> int:
        """Current fake time, epoch milliseconds."""
        return self._now

    def add_listener(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` after every :meth:`advance`."""
        with self._lock:
            self._listeners.append(callback)

    def sleep_time(self, deadline_ms: int) -> float:
        """Infinite: a host never wakes on its own for fake time; :meth:`advance` calls it."""
        return math.inf

    def advance(self, seconds: float) -> None:
        """Move time forward and run every listener (e.g. the broker's timer) at once.

        Raises:
            ValueError: ``seconds`` is negative.
        """
        if seconds < 0:
            raise ValueError("a clock cannot go backwards")
        with self._lock:
            self._now += round(seconds * 1000)
            listeners = list(self._listeners)
        for callback in listeners:
            callback()


class HarnessConnection:
    """One connection of an :class:`EngineHarness`: requests in, replies and events out.

    Attributes:
        conn: the broker's side of the connection.
        events: the events the broker emitted to this connection, oldest first.
    """

    def __init__(self, broker: Broker) -> None:
        self._broker = broker
        self._corr = itertools.count(1)
        self._replies: dict[int, c.Reply] = {}
        self.events: list[c.Command] = []
        self.conn: BrokerConnection = broker.connect(self._emit)

    def _emit(self, cmd: c.Command) -> None:
        t = type(cmd)
        if t is c.Deliver or t is c.ConnectionFailed or t is c.SendFailed:
            self.events.append(cmd)
        else:
            self._replies[cmd.corr] = cmd  # type: ignore[union-attr,assignment]

    def request(self, req: c.Request) -> c.Reply:
        """Handle ``req`` (numbered here unless it has a ``corr``) and return its reply:
        ``Ok``, a typed reply, or ``Error`` (a refused request is a reply, not an exception).
        The events it caused are in :attr:`events` when this returns.

        Raises:
            IllegalStateException: the broker emitted no reply (a store that is not
                synchronous answers later; the harness's memory store answers at once).
        """
        if not req.corr:
            req = msgspec.structs.replace(req, corr=next(self._corr))
        self._broker.handle(self.conn, req)
        reply = self._replies.pop(req.corr, None)
        if reply is None:
            raise IllegalStateException(
                f"no reply to {type(req).__name__} (corr {req.corr}): the store answers "
                "later; use the harness's synchronous MemoryStore"
            )
        return reply

    def send_oneway(self, req: c.Request) -> None:
        """Handle ``req`` without a reply (its ``corr`` is 0: acknowledgements, credit, quiet
        sends). A quiet send that is refused adds a ``SendFailed`` to :attr:`events`."""
        if req.corr:
            req = msgspec.structs.replace(req, corr=0)
        self._broker.handle(self.conn, req)

    def take_events(self) -> list[c.Command]:
        """The events emitted so far, oldest first; :attr:`events` is empty after."""
        events, self.events = self.events, []
        return events

    def drop(self) -> None:
        """Lose the connection without a ``Disconnect`` (as a broken socket does): the broker
        releases whatever it held (REL-10)."""
        self._broker.drop_connection(self.conn)


class EngineHarness:
    """A broker engine on a memory store with a fake clock, driven directly by a test.

    Args:
        clock: the fake clock (default: a new :class:`FakeClock`); advancing it runs the
            broker's due time-driven work (scheduled deliveries, redelivery delays, expiry).
        store: the store (default: a new :class:`~ternmq.store.MemoryStore`; a store that
            is not synchronous answers requests later, which :meth:`HarnessConnection.request`
            refuses).
        users: ``{user: password}`` to require authentication (default: anyone may connect).
        **settings: :class:`~ternmq.broker.config.BrokerConfig` fields and default
            destination-policy fields (as for an embedded broker).

    Attributes:
        clock: the fake clock.
        broker: the engine.
        warnings: what the broker reported on its own, ``(event, fields)``, oldest first.

    Raises:
        TypeError: an unknown setting.
    """

    def __init__(
        self,
        *,
        clock: FakeClock | None = None,
        store: Store | None = None,
        users: dict[str, str] | None = None,
        **settings: Any,
    ) -> None:
        self.clock = clock if clock is not None else FakeClock()
        self.warnings: list[tuple[str, dict[str, object]]] = []
        self.broker = Broker(
            BrokerConfig.from_settings(**settings),
            store if store is not None else MemoryStore(),
            self.clock,
            users,
            on_warning=self._warn,
        )
        self.clock.add_listener(self._tick)

    def _tick(self) -> None:
        self.broker.tick()

    def _warn(self, event: str, **fields: object) -> None:
        self.warnings.append((event, fields))

    def connect(
        self,
        *,
        user: str | None = None,
        password: str | None = None,
        client_id: str | None = None,
    ) -> HarnessConnection:
        """Open a connection and send its ``Connect``.

        Raises:
            JMSException: the broker refused the ``Connect`` (wrong credentials, a client id
                in use); the error is the one the client library would raise.
        """
        client = HarnessConnection(self.broker)
        reply = client.request(c.Connect(user=user, password=password, client_id=client_id))
        if type(reply) is c.Error:
            client.drop()
            raise error_of(reply.kind, reply.message)
        return client

    def next_deadline(self) -> int | None:
        """Epoch ms of the broker's next time-driven action (advance the clock past it to
        run it), or None."""
        return self.broker.next_deadline()
