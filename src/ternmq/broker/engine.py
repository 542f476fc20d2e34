"""The broker engine: destinations, subscriptions, dispatch, acknowledgements, transactions,
redelivery and dead letters, expiry and scheduled delivery.

Theory of operation
-------------------
:class:`Broker` is plain synchronous code: it owns no thread, socket or lock. One caller at a
time feeds it requests (:meth:`Broker.handle`) and time (:meth:`Broker.tick`); the embedded
transport serialises callers with a lock, the network server runs it on its event loop.
Everything it says goes out through each connection's ``emit`` callback, after the request's
store batch has been written, events first and the reply last. A gateway hands it the requests
of one socket read at once (:meth:`Broker.handle_batch`): each is processed as ``handle``
would, but their output leaves in one release, and requests that write nothing to the store
share it (one that writes keeps a store batch of its own).

Delivery follows JMS 2.0 §4.4 and §6: a queue dispatches each message to one consumer,
round-robin among consumers that have prefetch credit (PTP-04) and whose selector matches
(PTP-05); a topic copies each message into every subscription whose selector and ``no_local``
admit it at publish time (SUB-01, SUB-03, SUB-07). An acknowledged delivery is removed for
good; a released one goes back to its place (REL-16), counted as a delivery attempt only if the
client handed it to the application (JMSXDeliveryCount, REL-10), and is dead-lettered after
``max_delivery_attempts`` (PSF-01). The dispatch pass runs after each request's handler, on
the queues it touched; two shortcuts give the same deliveries for less work per message: a
message sent to a queue with nothing else READY goes to its consumer as it is enqueued
(``_hand_over``), and a queue with one consumer and no selector drains to it in order
(``_dispatch_one``).

Sends held for room (PSF-07): a send to a full destination whose policy is ``block`` (or
``page`` when it cannot page) is held, not refused, until room frees or ``block_timeout``
passes. The order kept is JMS's (§6.2.9: a session's messages to a destination arrive in send
order) and a little more, because the native client relies on it: a session's sends are taken
in send order, whatever their destinations, since one answered send vouches for the quiet
(unanswered) sends of its session before it. So each session holds its own held sends in a FIFO
(``Session.held``), and a later send of a session with held sends waits behind them even when
its own destination has room; a send of another session or connection to another destination
never waits for them. Per destination, the sessions whose first held send is for it wait in
the order they came (``_parked``), and a new send to a destination with waiting sessions
queues behind them, so a producer that keeps sending cannot overtake one that waits. Holding a
send is O(1); each retry (after every request other than a send, and at deadlines) tries the
first waiting send of each destination that has any, and moves a session on to the
destination of its next held send once one is taken or refused. A graceful Disconnect waits
until its connection's held sends are taken or refused (``BrokerConnection.held``).

This module is the state machine itself: dispatch, publish and release, with the request
handlers around them. What depends only downwards lives beside it: the records of
connections, sessions, consumers and subscriptions (``_records.py``), the queues and their
counters (``_queue.py``), the ordered output gate behind store batches (``_gate.py``), the
figures of ``Stat`` (``_stats.py``), recovery at start (``_recover.py``), duplicate ids
(``_dedup.py``) and sequence access (``_sequenced.py``). The side modules that act on the
engine see it through the named protocols of ``_ports.py`` and never import this module.
"""

from __future__ import annotations

import collections
import heapq
import itertools
from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar, Final, TypeVar

import msgspec

from ternmq._version import __version__
from ternmq.broker._admin_requests import HANDLERS as ADMIN_HANDLERS
from ternmq.broker._dedup import DuplicateIds
from ternmq.broker._gate import Output, OutputGate, fail_replies, without_deliveries
from ternmq.broker._queue import COPY_OVERHEAD, GONE, INFLIGHT, Entry, MessageQueue, Stored
from ternmq.broker._records import (
    BrokerConnection,
    Consumer,
    Emit,
    Session,
    StagedTx,
    Subscription,
    sub_store_key,
)
from ternmq.broker._recover import recover
from ternmq.broker._sequenced import HANDLERS, SEQ_RESERVE_BLOCK, sweep_staged
from ternmq.broker._stats import NO_COUNTS, Counts, queue_stat, retire, topic_stat
from ternmq.broker.clock import Clock, SystemClock
from ternmq.broker.config import BrokerConfig
from ternmq.destination import Destination, TemporaryQueue, TemporaryTopic, destination
from ternmq.errors import (
    IllegalStateException,
    InvalidClientIDException,
    InvalidDestinationException,
    JMSException,
    JMSSecurityException,
    ResourceAllocationException,
    TransactionRolledBackException,
)
from ternmq.message import Message
from ternmq.message._types import T
from ternmq.message.codec import body_offset, decode_message, encode_message
from ternmq.protocol import commands as c
from ternmq.protocol.commands import Deliver  # (per message: one lookup compiled, not two)
from ternmq.selector import Selector, compile_selector, with_delivery_count
from ternmq.store import (
    AddMessage,
    AddSubscription,
    MemoryStore,
    Op,
    RemoveDestination,
    RemoveMessage,
    RemoveSubscription,
    ReserveSeq,
    SetDeliveryCount,
    Store,
)

__all__ = ["Broker", "BrokerConnection"]

# (user, action, destination text) -> allowed; action: send, consume, browse or create.
Authorizer = Callable[[str | None, str, str], bool]
# Called before every request; a JMSException it raises becomes that request's Error reply.
RequestCheck = Callable[["BrokerConnection", c.Request], None]
MAX_NAME = 255
MAX_CLIENT_ID = 256  # CONN-08: longer ids, and ids with control characters, are refused
_SendT = TypeVar("_SendT", c.Send, c.StagedSend)  # a message to route: sent or staged
_R = TypeVar("_R")
_USER_ID: Final = b"JMSXUserID"  # in an encoded message only if a property has the name
# Above this many octets, a message is searched for _USER_ID before its body only: a 1 MiB
# body took 0.5 ms to scan, a third of the broker's CPU for a 1 MiB STOMP message.
_SCAN_WHOLE: Final = 4096
# Send routes cached per destination text (``Broker._routes``) at most; beyond, sends still
# resolve their destination, only without the shortcut.
_MAX_ROUTES: Final = 10_000


def _jms_kind(exc: JMSException) -> str:
    """The JMS exception class an ``Error`` names for ``exc``: its own, or for an internal
    subclass (``admin.NotFound``) the nearest public one, which a client can raise."""
    for cls in type(exc).__mro__:
        if cls.__module__ == JMSException.__module__:
            return cls.__name__
    return "JMSException"


def _names_user(message: bytes) -> bool:
    """Whether the encoded ``message`` may carry a JMSXUserID property (its name's octets
    appear before the body; a large body is not searched): only then is it decoded."""
    if len(message) <= _SCAN_WHOLE:
        return _USER_ID in message
    return message.find(_USER_ID, 0, body_offset(message)) >= 0


def _run_now(fn: Callable[[], None]) -> None:
    """The default ``run_in_owner``: a broker without a host runs completions at once."""
    fn()


# The delivery id of an entry whose message the store failed to keep (see _take_back).
NOT_STORED = -1
# Deliveries of a consumer that are not deferred after a deferral for it ran out
# (Broker.end_deferral): a consumer slow to acknowledge costs its senders few such waits.
DEFER_SKIP: Final = 64
# The most earlier output groups a deferral looks through for output of its consumers'
# connections (Broker._holds_output_for); behind more, it does not defer.
DEFER_BEHIND: Final = 8


def _refused(
    out: list[tuple[BrokerConnection, c.Command]], mark: int, conn: BrokerConnection
) -> bool:
    """Whether ``conn`` was answered with an ``Error`` or ``SendFailed`` in ``out[mark:]``."""
    for i in range(mark, len(out)):
        to, cmd = out[i]
        if to is conn and type(cmd) in _REFUSALS:
            return True
    return False


_REFUSALS: Final = (c.Error, c.SendFailed)


class Broker:
    """A JMS broker engine.

    Args:
        config: the broker settings.
        store: where durable state goes (default: a :class:`MemoryStore`).
        clock: the time source (default: the system clock).
        users: optional ``{user: password}``; when given, connections must authenticate.
        authorizer: optional ``authorizer(user, action, destination) -> bool`` asked before a
            send, a consumer, a browse or an auto-creation (not for temporary destinations);
            a refusal raises JMSSecurityException (EXC-06). None allows everything.
        request_check: optional hook run before each request (the server's per-connection
            limits); a JMSException it raises is the request's Error reply, in order.
        populate_user_id: set ``JMSXUserID`` of every sent message to the connection's user
            (removed for anonymous connections): PROP-20, PROP-23. Costs a re-encode.
        run_in_owner: how work from other threads (store completions) enters the broker:
            ``run_in_owner(fn)`` runs ``fn`` where the host owns the broker (``broker/host.py``);
            the default runs it at once, on the calling thread.
        on_warning: ``on_warning(event, **fields)`` hears of what the broker did on its own,
            for the host's log (e.g. an abandoned staged transaction aborted).
    """

    def __init__(
        self,
        config: BrokerConfig | None = None,
        store: Store | None = None,
        clock: Clock | None = None,
        users: dict[str, str] | None = None,
        authorizer: Authorizer | None = None,
        request_check: RequestCheck | None = None,
        populate_user_id: bool = False,
        run_in_owner: Callable[[Callable[[], None]], None] | None = None,
        on_warning: Callable[..., None] | None = None,
    ) -> None:
        self.config = config or BrokerConfig()
        # Settings read for every message, copied out of the (frozen, interpreted) config.
        self._groups: Final = self.config.groups
        self._max_message_bytes: Final = self.config.max_message_bytes
        self._max_memory_bytes: Final = self.config.max_memory_bytes
        self.run_in_owner = run_in_owner or _run_now
        self.store: Store = store if store is not None else MemoryStore()
        self.clock: Clock = clock or SystemClock()
        self.users = users
        self.authorizer = authorizer
        self.request_check = request_check
        self.populate_user_id = populate_user_id
        self.queues: dict[Destination, MessageQueue] = {}
        self.topics: dict[Destination, list[Subscription]] = {}
        # What each topic's deleted subscriptions had counted (``_stats.retire``).
        self._retired: dict[Destination, Counts] = {}
        self.durable: dict[tuple[str | None, str], Subscription] = {}
        self.shared: dict[tuple[str | None, str], Subscription] = {}
        self.connections: dict[str, BrokerConnection] = {}
        self.client_ids: dict[str, BrokerConnection] = {}
        self._conn_ids = itertools.count(1)
        self._temp_ids = itertools.count(1)
        self._ops: list[Op] = []
        # Output waiting for store batches, released in order (_gate.py); _flush holds the
        # gate's queue and token counter itself (it runs per request).
        self._gate = OutputGate(self._take_back)
        self._pending = self._gate.pending
        self._tokens = self._gate.tokens
        # Batches handed to an asynchronous store so far: a gateway compares it around a
        # request to see whether the request's reply waits for a commit.
        self.submitted = 0
        self._to_page: list[Entry] = []
        self._unstored: list[Entry] = []  # entries whose message this batch makes durable
        self._removed: list[Entry] = []  # entries whose message this batch removes (acked)
        # Deliveries of PERSISTENT messages to consumers that count them consumed once sent
        # (STOMP ack:auto): if this batch writes nothing but their inserts, none is written.
        self._sent: list[Entry] = []
        # Deliveries of PERSISTENT messages to consumers with nothing else outstanding
        # (concurrent store and dispatch, ``_defer_batch``), and the batch deferred while
        # their acknowledgements may still cancel it.
        self._early: list[Entry] = []
        self._deferred: _Deferred | None = None
        # The host's timer for a deferred batch (``enable_deferral``): None = no deferral.
        self._on_defer: Callable[[int], None] | None = None
        self._deferral_paused = False  # a store batch failed: none deferred until one succeeds
        # Group commits reported by the store's thread, not yet applied: (tokens, error).
        self._completed: collections.deque[tuple[list[int], BaseException | None]] = (
            collections.deque()
        )
        self._completion_posted = False
        self._out: list[tuple[BrokerConnection, c.Command]] = []
        self._dirty: set[MessageQueue] = set()
        self._timers: list[tuple[int, int, MessageQueue | None]] = []
        self._timer_seq = itertools.count()
        self._reaper_due: int | None = None
        # Sends held for room (PSF-07): each session keeps its own in send order
        # (Session.held); here, per destination, the sessions whose first held send is for
        # it, in the order they came to wait (see "Sends held for room" above).
        self._parked: dict[Destination, collections.deque[Session]] = {}
        self._dest_cache: dict[str, Destination] = {}
        # A send's destination text -> the destination and its queue (queues only, not topics):
        # one string lookup per send instead of parsing, kind tests and two lookups keyed by a
        # Destination. An entry whose queue was deleted is stale and looked up afresh.
        self._routes: dict[str, tuple[Destination, MessageQueue]] = {}
        self._tx_added: list[Entry] | None = None  # entries a commit in progress enqueued
        # Sequence access (_sequenced.py): reserved positions per durable key, staged
        # transactions by txid, last committed batch per sink.
        self._reserved: dict[str, int] = {}
        self._staged: dict[str, StagedTx] = {}
        self.staged_bytes = 0  # message bytes of staged transactions (they count as memory)
        self.on_warning = on_warning
        self._sinks: dict[str, int] = {}
        self.total_bytes = 0
        self.recovered: dict[str, int] = {}  # what _recover found (the host logs it)
        self.dead_lettered = 0
        self.expired = 0
        self._dedup = DuplicateIds(self.config)  # PSF-09
        if not self.store.synchronous:
            self.store.set_completion(self._on_store_completion)
        self._recover()
        for name in self.config.queues:  # after recovery: positions continue from the store
            dest = destination(f"queue://{name}")
            if dest not in self.queues:
                self.new_queue(dest)
        for name in self.config.topics:
            self.topics.setdefault(destination(f"topic://{name}"), [])

    # ------------------------------------------------------------------ public interface
    def _on_store_completion(self, tokens: list[int], error: BaseException | None) -> None:
        # Called on the store's thread, once per group commit. Should the owner be slow to
        # run the first, later reports queue behind it and enter the owner context with it.
        self._completed.append((tokens, error))
        if not self._completion_posted:
            self._completion_posted = True
            self.run_in_owner(self._apply_completions)

    def _apply_completions(self) -> None:
        self._completion_posted = False
        completed = self._completed
        if not completed:
            return
        if self._deferral_paused:  # deferral resumes once a batch is written again
            self._deferral_paused = all(error is not None for _, error in completed)
        gate = self._gate
        gate.mark(completed)
        if gate.release() and self.connections:
            self._flush()  # deliveries of other messages, in their place

    # The engine's state as its side modules see it (``_ports.SequencedEngine``).
    @property
    def ops(self) -> list[Op]:
        """The store operations of the request being handled (written when it ends)."""
        return self._ops

    @property
    def staged(self) -> dict[str, StagedTx]:
        """Staged transactions of sequence access, by txid."""
        return self._staged

    @property
    def sinks(self) -> dict[str, int]:
        """The last committed batch of every sink of sequence access."""
        return self._sinks

    def connect(self, emit: Emit) -> BrokerConnection:
        """Open the broker side of a connection whose output goes to ``emit``."""
        conn = BrokerConnection(self, f"ID:{next(self._conn_ids)}", emit)
        conn.connected_at = self.clock.now_ms()
        self.connections[conn.id] = conn
        return conn

    def handle(self, conn: BrokerConnection, req: c.Request) -> None:
        """Process one request; its reply (if ``req.corr``) and any events go to ``emit``."""
        self._handle_one(conn, req)
        self._flush()

    def handle_batch(
        self, conn: BrokerConnection, reqs: Sequence[c.Request], *, stop_on_error: bool = False
    ) -> int:
        """Process the requests of one read of ``conn`` in order, as :meth:`handle` would
        one by one, but with one output release for all of them; returns how many were
        processed. Each is answered on its own (an error answers that request only; the rest
        go on), with the same store batches: a request that writes to the store ends its own
        batch, so a store failure fails the replies of that request only. The requests after
        one that leaves the connection closed (``Disconnect``, an operator's close) are not
        processed: the caller closes the socket once the output is out. With
        ``stop_on_error`` (a protocol whose errors end the connection, as STOMP's do) the
        requests after one answered with ``Error`` or ``SendFailed`` are not processed either."""
        if len(reqs) == 1:
            # The usual read of a synchronous client (64 producers on 64 connections: every
            # read is one send): no batch bookkeeping, one _flush for its store batch and output.
            try:
                self._handle_one(conn, reqs[0])
            finally:
                self._flush()
            return 1
        n = 0
        try:
            for req in reqs:
                mark = len(self._out)
                self._handle_one(conn, req)
                n += 1
                if stop_on_error and _refused(self._out, mark, conn):
                    break
                if self._ops:  # a store batch of its own (its replies wait for it)
                    self._flush_after(mark)
                if conn.closed:
                    break
        finally:
            self._flush()
        return n

    def _flush_after(self, mark: int) -> None:
        """Release the output queued before ``mark`` (earlier requests of a batch, none of which
        wrote to the store), then write the last request's store batch with its output."""
        if mark:
            out, ops, unstored = self._out, self._ops, self._unstored
            removed, to_page, sent, early = self._removed, self._to_page, self._sent, self._early
            self._out, self._ops, self._unstored = out[:mark], [], []
            self._removed, self._to_page, self._sent, self._early = [], [], [], []
            self._flush()
            self._out, self._ops, self._unstored = out[mark:], ops, unstored
            self._removed, self._to_page, self._sent, self._early = removed, to_page, sent, early
        self._flush()

    def _handle_one(self, conn: BrokerConnection, req: c.Request) -> None:
        """Process ``req`` up to its output, which stays queued for :meth:`_flush`."""
        try:
            if conn.closed and not isinstance(req, c.Disconnect):
                raise IllegalStateException("the connection is closed")
            if self.request_check is not None:
                self.request_check(conn, req)
            handler = self._handlers[type(req)]
            reply = handler(self, conn, req)
            if self._dirty:
                self._dispatch_dirty()
            if self._parked and not isinstance(req, c.Send):
                self._unblock(self.clock.now_ms())
                self._dispatch_dirty()
        except JMSException as exc:
            self._ops.clear()
            self._removed.clear()
            self._dispatch_dirty()
            reply = c.Error(corr=req.corr, kind=_jms_kind(exc), message=str(exc))
        if reply is not None:
            if req.corr:  # _answer's common case, without the call
                self._out.append((conn, reply))
            else:
                self._answer(conn, req, reply)

    def _answer(self, conn: BrokerConnection, req: c.Request, reply: c.Reply) -> None:
        """Queue ``reply`` to ``req`` for ``conn``: a request without ``corr`` gets none, but
        a quiet ``Send`` that was refused gets a ``SendFailed`` event instead."""
        if req.corr:
            self._out.append((conn, reply))
        elif type(reply) is c.Error and type(req) is c.Send and req.quiet:
            failed = c.SendFailed(
                session_id=req.session_id,
                destination=req.destination,
                kind=reply.kind,
                message=reply.message,
            )
            self._out.append((conn, failed))

    def tick(self) -> int | None:
        """Let time act: due scheduled messages, the expiry reaper. Returns the next deadline
        (epoch ms) at which :meth:`tick` should run again, or None when nothing is pending."""
        now = self.clock.now_ms()
        timers = self._timers
        while timers and timers[0][0] <= now:
            _, _, q = heapq.heappop(timers)
            if q is not None and not q.deleted and q.promote_due(now):
                self._dirty.add(q)
        if self._reaper_due is not None and self._reaper_due <= now:
            self._reaper_due = None
            self._reap(now)
        self._dispatch_dirty()
        if self._parked:
            self._unblock(now)
            self._dispatch_dirty()
        self._flush()
        return self.next_deadline()

    def next_deadline(self) -> int | None:
        """Epoch ms of the next time-driven action, or None."""
        due = self._timers[0][0] if self._timers else None
        if self._reaper_due is not None and (due is None or self._reaper_due < due):
            due = self._reaper_due
        return due

    def shutdown(self) -> None:
        """Tell every connection the broker is going away and drop them."""
        for conn in list(self.connections.values()):
            self._close_connection(conn)
            self._out.append((conn, c.ConnectionFailed(message="the broker stopped")))
        self._flush()
        self._submit_deferred()
        self.store.close()  # writes what is queued; its completions are posted to us
        self._gate.mark_all()
        self._release_done()

    def close_connection(self, conn: BrokerConnection, reason: str) -> None:
        """An operator closes ``conn``: release everything it held (REL-10; dispatch follows
        when the current request ends) and tell it ``ConnectionFailed(reason)`` (its gateway
        then closes the socket). Inside a request only."""
        if not conn.closed:
            self._close_connection(conn)
            self._out.append((conn, c.ConnectionFailed(message=reason)))

    def drop_connection(self, conn: BrokerConnection) -> None:
        """The transport lost ``conn``: release everything it held (REL-10)."""
        if not conn.closed:
            self._close_connection(conn)
            self._dispatch_dirty()
            if self._parked:  # its held sends leave; sends waiting behind them may go
                self._unblock(self.clock.now_ms())
                self._dispatch_dirty()
            self._flush()

    # ------------------------------------------------------------------ destinations
    def resolve(self, text: str) -> Destination:
        """The destination named by ``text`` (parsed once, then cached).

        Raises:
            JMSException: ``text`` is not a destination.
        """
        d = self._dest_cache.get(text)
        if d is None:
            d = destination(text)
            if len(self._dest_cache) < 10_000:
                self._dest_cache[text] = d
        return d

    def new_queue(self, dest: Destination, owner: BrokerConnection | None = None) -> MessageQueue:
        """Create queue ``dest`` (durable unless temporary; ``owner``: the connection that
        owns a temporary one) and register it."""
        text = str(dest)
        if dest.is_temporary:
            q = MessageQueue(text, False, self.config.policy_for(text), text)
        else:
            q = self.durable_queue(text, text)
        q.owner = owner
        self.queues[dest] = q
        return q

    def durable_queue(self, key: str, name: str) -> MessageQueue:
        """A new durable queue or subscription queue: its positions continue above what the
        store says it reserved before (monotonic across restarts and re-creation)."""
        q = MessageQueue(key, True, self.config.policy_for(name), name)
        q.last_seq = q.reserved = self._reserved.get(key, 0)
        return q

    def queue(self, dest: Destination, create: bool = True) -> MessageQueue:
        """Queue ``dest``, auto-created when ``create`` and the config allow it.

        Raises:
            InvalidDestinationException: it does not exist and may not be created (or is a
                deleted temporary queue).
        """
        q = self.queues.get(dest)
        if q is not None:
            return q
        if dest.is_temporary:
            raise InvalidDestinationException(f"{dest} has been deleted or never existed")
        if not (create and self.config.auto_create):
            raise InvalidDestinationException(
                f"{dest} does not exist and auto-creation is off: declare it in the broker config"
            )
        return self.new_queue(dest)

    def _topic(self, dest: Destination) -> list[Subscription]:
        subs = self.topics.get(dest)
        if subs is not None:
            return subs
        if dest.is_temporary:
            raise InvalidDestinationException(f"{dest} has been deleted or never existed")
        if not self.config.auto_create:
            raise InvalidDestinationException(
                f"{dest} does not exist and auto-creation is off: declare it in the broker config"
            )
        subs = self.topics[dest] = []
        return subs

    def _check_temp_owner(self, conn: BrokerConnection, dest: Destination) -> None:
        if dest.is_temporary and dest not in conn.temporaries:
            if dest in self.queues or dest in self.topics:
                raise InvalidDestinationException(
                    f"{dest} belongs to another connection: only its creator may consume from it"
                )
            raise InvalidDestinationException(f"{dest} has been deleted or never existed")

    def authorize(self, conn: BrokerConnection, action: str, dest: Destination) -> None:
        """Refuse ``action`` on ``dest`` unless the authorizer allows it (EXC-06); a request
        that would auto-create ``dest`` needs ``create`` too. Temporary destinations belong
        to their connection and are not checked.

        Raises:
            JMSSecurityException: the authorizer refused.
        """
        authorizer = self.authorizer
        if authorizer is None or dest.is_temporary:
            return
        text = str(dest)
        actions = [action]
        known = self.topics if dest.is_topic else self.queues
        if action != "create" and self.config.auto_create and dest not in known:
            actions.append("create")
        for act in actions:
            if not authorizer(conn.user, act, text):
                who = conn.user if conn.user is not None else "anonymous"
                raise JMSSecurityException(
                    f"user {who!r} is not authorized to {act} {text}: "
                    f"ask the broker's administrator for the {act!r} permission"
                )

    def stamp_user(self, conn: BrokerConnection, req: _SendT) -> _SendT:
        """``req`` with JMSXUserID set to the connection's user when ``populate_user_id``
        is on, and removed otherwise or for an anonymous connection: a client never sets it
        (PROP-23). Callers skip the call (no decoding) when ``populate_user_id`` is off and
        the encoded message does not contain the octets ``JMSXUserID``.

        Raises:
            JMSException: the message does not decode.
        """
        msg = decode_message(req.message)
        if conn.user is None or not self.populate_user_id:
            if "JMSXUserID" not in msg._properties:
                return req
            msg._properties.pop("JMSXUserID")
            msg._property_types.pop("JMSXUserID", None)
        else:
            msg._properties["JMSXUserID"] = conn.user
            msg._property_types["JMSXUserID"] = T.STRING
        return msgspec.structs.replace(req, message=encode_message(msg))

    # ------------------------------------------------------------------ handlers
    def _on_connect(self, conn: BrokerConnection, req: c.Connect) -> c.Reply:
        if self.users is not None and (
            req.user is None or self.users.get(req.user) != req.password
        ):
            conn.closed = True
            self.connections.pop(conn.id, None)
            raise JMSSecurityException(f"authentication failed for user {req.user!r}")
        limit = self.config.max_connections
        if limit and len(self.connections) > limit:
            conn.closed = True
            self.connections.pop(conn.id, None)
            raise ResourceAllocationException(f"the broker's connection limit ({limit}) is reached")
        conn.user = req.user
        if req.client_id is not None:
            self._set_client_id(conn, req.client_id)
        return c.Connected(corr=req.corr, connection_id=conn.id, provider_version=__version__)

    def _set_client_id(self, conn: BrokerConnection, client_id: str) -> None:
        if (
            not client_id
            or len(client_id) > MAX_CLIENT_ID
            or any(ord(ch) < 32 or 127 <= ord(ch) < 160 for ch in client_id)
        ):
            raise InvalidClientIDException(
                f"invalid client id {client_id!r}: use 1..256 characters, no control characters"
            )
        holder = self.client_ids.get(client_id)
        if holder is not None and holder is not conn:
            raise InvalidClientIDException(
                f"client id {client_id!r} is in use by another connection; "
                "close it first or choose another id"
            )
        if conn.client_id is not None and conn.client_id != client_id:
            raise IllegalStateException("the client id of this connection is already set")
        conn.client_id = client_id
        self.client_ids[client_id] = conn

    def _on_set_client_id(self, conn: BrokerConnection, req: c.SetClientId) -> c.Reply:
        self._set_client_id(conn, req.client_id)
        return c.Ok(corr=req.corr)

    def _on_disconnect(self, conn: BrokerConnection, req: c.Disconnect) -> c.Reply | None:
        if conn.held:
            # Sends of this connection wait for room, quiet ones among them (answered only if
            # refused, so the client cannot wait for them): a graceful close waits for them
            # to be taken or refused, as JMS's close() waits for outstanding sends, instead of
            # dropping them with the connection (answered by _unhold).
            conn.held_disconnect = req
            return None
        self._close_connection(conn)
        return c.Ok(corr=req.corr)

    def _on_create_session(self, conn: BrokerConnection, req: c.CreateSession) -> c.Reply:
        if req.session_id in conn.sessions:
            raise IllegalStateException(f"session {req.session_id} already exists")
        conn.sessions[req.session_id] = Session(req.session_id, conn, req.transacted)
        return c.Ok(corr=req.corr)

    def _session(self, conn: BrokerConnection, sid: int) -> Session:
        s = conn.sessions.get(sid)
        if s is None:
            raise IllegalStateException(f"session {sid} is closed")
        return s

    def _on_close_session(self, conn: BrokerConnection, req: c.CloseSession) -> c.Reply:
        s = conn.sessions.get(req.session_id)
        if s is None:
            return c.Released(corr=req.corr)
        ids = self._close_session(s, set(req.delivered))
        return c.Released(corr=req.corr, delivery_ids=ids)

    def _close_session(self, s: Session, delivered: set[int]) -> list[int]:
        for consumer in list(s.consumers.values()):
            self._close_consumer(consumer, delivered)
        s.tx_sends.clear()
        ids = self._release(s, delivered)
        s.conn.sessions.pop(s.id, None)
        return ids

    def _on_create_consumer(self, conn: BrokerConnection, req: c.CreateConsumer) -> c.Reply:
        s = self._session(conn, req.session_id)
        if req.consumer_id in s.consumers:
            raise IllegalStateException(f"consumer {req.consumer_id} already exists")
        try:
            dest = self.resolve(req.destination)
        except JMSException as exc:
            raise InvalidDestinationException(str(exc)) from exc
        self.authorize(conn, "consume", dest)
        selector = compile_selector(req.selector)  # InvalidSelectorException
        sel_text = selector.text if selector is not None else None
        prefetch = max(0, req.prefetch)
        if not dest.is_topic:
            if req.kind != "none":
                raise InvalidDestinationException(f"{dest} is a queue: subscriptions need a topic")
            self._check_temp_owner(conn, dest)
            q = self.queue(dest)
            consumer = Consumer(req.consumer_id, s, q, selector, prefetch, None)
        else:
            self._check_temp_owner(conn, dest)
            subs = self._topic(dest)
            sub = self._subscription_for(conn, req, dest, subs, selector, sel_text)
            consumer = Consumer(req.consumer_id, s, sub.queue, None, prefetch, sub)
        if req.credit is not None:
            consumer.credit = min(max(0, req.credit), prefetch)
        # (a transacted session's messages are consumed at its commit, not when sent)
        consumer.acked_when_sent = req.acked_when_sent and not s.transacted
        consumer.queue.consumers.append(consumer)
        s.consumers[consumer.id] = consumer
        self._dirty.add(consumer.queue)
        return c.Ok(corr=req.corr)

    def _subscription_for(
        self,
        conn: BrokerConnection,
        req: c.CreateConsumer,
        topic: Destination,
        subs: list[Subscription],
        selector: Selector | None,
        sel_text: str | None,
    ) -> Subscription:
        kind = req.kind
        policy = self.config.policy_for(str(topic))
        if kind == "none":
            q = MessageQueue(f"nd:{conn.id}:{req.consumer_id}", False, policy, str(topic))
            sub = Subscription(
                None, topic, sel_text, selector, req.no_local, False, False, conn.client_id, conn, q
            )
            subs.append(sub)
            return sub
        name = req.subscription
        if not name or len(name) > MAX_NAME or not name.isprintable():
            raise InvalidDestinationException(
                f"invalid subscription name {name!r}: use 1..255 printable characters"
            )
        key = (conn.client_id, name)
        if kind == "shared":
            existing = self.shared.get(key)
            if existing is not None:
                if existing.topic != topic or existing.selector_text != sel_text:
                    raise IllegalStateException(
                        f"shared subscription {name!r} exists with another topic or selector "
                        "while it has consumers; use the same topic and selector or another name"
                    )
                return existing
            q = MessageQueue(f"sh:{key}", False, policy, str(topic))
            sub = Subscription(
                key, topic, sel_text, selector, False, False, True, conn.client_id, conn, q
            )
            self.shared[key] = sub
            subs.append(sub)
            return sub
        # durable kinds (SUB-15..SUB-26)
        if topic.is_temporary:
            raise InvalidDestinationException(
                f"{topic} is temporary: durable subscriptions need a non-temporary topic"
            )
        shared = kind == "shared_durable"
        if not shared and conn.client_id is None:
            raise IllegalStateException(
                "an unshared durable subscription needs a client id: set connection.client_id"
            )
        old = self.durable.get(key)
        no_local = req.no_local and not shared
        if old is not None:
            sub = old
            if sub.shared != shared:
                raise IllegalStateException(
                    f"durable subscription {name!r} exists as a "
                    f"{'shared' if sub.shared else 'unshared'} one; use the matching call "
                    "or unsubscribe it first"
                )
            same = sub.topic == topic and sub.selector_text == sel_text and sub.no_local == no_local
            active = bool(sub.queue.consumers)
            if not shared and active:
                raise IllegalStateException(
                    f"durable subscription {name!r} already has an active consumer"
                )
            if same:
                if not shared:
                    sub.conn = conn
                return sub
            if active:
                raise IllegalStateException(
                    f"shared durable subscription {name!r} has consumers with another topic "
                    "or selector; close them first"
                )
            self._delete_subscription(sub)
        self.authorize(conn, "create", topic)  # a new durable subscription (EXC-06)
        store_key = sub_store_key(conn.client_id, name, shared)
        q = self.durable_queue(store_key, str(topic))
        sub = Subscription(
            key, topic, sel_text, selector, no_local, True, shared, conn.client_id, conn, q
        )
        self.durable[key] = sub
        subs.append(sub)
        self._ops.append(
            AddSubscription(store_key, conn.client_id, name, str(topic), sel_text, no_local, shared)
        )
        return sub

    def _delete_subscription(self, sub: Subscription) -> None:
        subs = self.topics.get(sub.topic)
        if subs is not None and sub in subs:
            subs.remove(sub)
        if sub.durable:
            self.durable.pop(sub.key, None)  # type: ignore[arg-type]
            self._ops.append(RemoveSubscription(sub.queue.key))
        elif sub.shared:
            self.shared.pop(sub.key, None)  # type: ignore[arg-type]
        q = sub.queue
        self._retired[sub.topic] = retire(self._retired.get(sub.topic, NO_COUNTS), q)
        q.deleted = True
        for e in q.clear():
            self.total_bytes -= e.held
            if e.session is not None:
                e.session.outstanding.pop(e.delivery_id, None)

    def _on_close_consumer(self, conn: BrokerConnection, req: c.CloseConsumer) -> c.Reply:
        for s in conn.sessions.values():
            consumer = s.consumers.get(req.consumer_id)
            if consumer is not None:
                ids = self._close_consumer(consumer, set(req.delivered))
                return c.Released(corr=req.corr, delivery_ids=ids)
        return c.Released(corr=req.corr)

    def _close_consumer(self, consumer: Consumer, delivered: set[int]) -> list[int]:
        s = consumer.session
        q = consumer.queue
        s.consumers.pop(consumer.id, None)
        if consumer in q.consumers:
            q.consumers.remove(consumer)
        for gid, owner in list(q.groups.items()):
            if owner is consumer:
                del q.groups[gid]
        released: list[int] = []
        for did in sorted(consumer.outstanding, reverse=True):  # newest first (_give_back)
            if did in delivered:
                continue  # handed to the application: stays with the session
            e = s.outstanding.pop(did, None)
            if e is not None and e.state == INFLIGHT:
                self._return_uncounted(e)
                released.append(did)
        released.reverse()
        consumer.outstanding.clear()
        sub = consumer.sub
        if sub is not None and not sub.durable and not q.consumers:
            self._delete_subscription(sub)  # SUB-06, SUB-11
        elif q.consumers:
            self._dirty.add(q)
        return released

    def _on_credit(self, conn: BrokerConnection, req: c.Credit) -> c.Reply:
        consumer = self._find_consumer(conn, req.consumer_id)
        if consumer is not None:
            consumer.credit = min(consumer.credit + req.messages, consumer.prefetch)
            self._dirty.add(consumer.queue)
        return c.Ok(corr=req.corr)

    def _on_pull(self, conn: BrokerConnection, req: c.Pull) -> c.Reply:
        consumer = self._find_consumer(conn, req.consumer_id)
        if consumer is None:
            return c.Ok(corr=req.corr)
        consumer.pull = max(0, req.messages)
        if consumer.pull:
            self._dispatch(consumer.queue)
            if not req.wait:
                consumer.pull = 0
        return c.Ok(corr=req.corr)

    def _find_consumer(self, conn: BrokerConnection, cid: int) -> Consumer | None:
        for s in conn.sessions.values():
            consumer = s.consumers.get(cid)
            if consumer is not None:
                return consumer
        return None

    def _on_send(self, conn: BrokerConnection, req: c.Send) -> c.Reply | None:
        s = conn.sessions.get(req.session_id)  # (self._session without the call: per send)
        if s is None:
            raise IllegalStateException(f"session {req.session_id} is closed")
        # Validate now so a transacted send to a bad destination fails at send() (PROD-02).
        dest, q = self._route(conn, req)
        dup_id = req.duplicate_id
        if dup_id is not None:
            self._dedup.check_id(dup_id)
        msg = req.message  # PROP-23: a JMSXUserID is never the client's (_names_user, inline)
        if self.populate_user_id or (
            _USER_ID in msg if len(msg) <= _SCAN_WHOLE else _names_user(msg)
        ):
            req = self.stamp_user(conn, req)
        if s.transacted:
            s.tx_sends.append(req)
            return c.Ok(corr=req.corr)
        if dup_id is not None and self._dedup.seen(dest, dup_id):
            return c.Ok(corr=req.corr)  # PSF-09: acknowledged, not enqueued
        if s.held or (self._parked and dest in self._parked):
            # behind this session's held sends (its order), or behind the sessions already
            # waiting for room in dest (their turn first)
            self._hold(s, dest, req)
            return None
        try:
            self._publish(conn, dest, req, q)
        except ResourceAllocationException:
            if not self._blocks(dest):
                raise
            self._hold(s, dest, req)
            return None
        if dup_id is not None:
            self._record_duplicate_id(dest, req)
        # A one-way send that took effect gets no reply at all (not even one _answer drops).
        return c.Ok(corr=req.corr) if req.corr else None

    def _record_duplicate_id(self, dest: Destination, req: c.Send) -> None:
        """``req`` took effect: ``dest`` remembers its id, in the request's store batch
        when the send is PERSISTENT (PSF-09)."""
        op = self._dedup.record(dest, req.duplicate_id or "", req.persistent)
        if op is not None:
            self._ops.append(op)

    def check_send(
        self, conn: BrokerConnection, req: c.Send | c.StagedSend, dest_ok: bool = False
    ) -> Destination:
        """Everything a message must pass before it is accepted (sent or staged): its size,
        its priority, a parsable destination that exists (or may be auto-created) and the
        ``send`` permission; ``dest_ok`` skips the destination checks (already done for this
        destination text in the same request).

        Raises:
            ResourceAllocationException: the message is larger than ``max_message_bytes``.
            InvalidDestinationException: the destination does not parse or does not exist.
            JMSSecurityException: the user may not send there.
            JMSException: the priority is outside 0..9.
        """
        return self._route(conn, req, dest_ok)[0]

    def _route(
        self, conn: BrokerConnection, req: c.Send | c.StagedSend, dest_ok: bool = False
    ) -> tuple[Destination, MessageQueue | None]:
        """:meth:`check_send`, and the queue the message goes to (None for a topic).

        Raises:
            what :meth:`check_send` raises.
        """
        size = len(req.message)
        if size > self._max_message_bytes:
            raise ResourceAllocationException(
                f"message of {size} bytes exceeds max_message_bytes "
                f"({self.config.max_message_bytes})"
            )
        if not 0 <= req.priority <= 9:
            raise JMSException(f"priority {req.priority} is outside 0..9")
        # The calls of resolve, authorize and queue are made only when they have work to do:
        # this runs for every message.
        text = req.destination
        route = self._routes.get(text)
        if route is not None and not route[1].deleted:
            if not dest_ok and self.authorizer is not None:
                self.authorize(conn, "send", route[0])
            return route
        dest = self._dest_cache.get(text)
        if dest is None:
            try:
                dest = self.resolve(text)
            except JMSException as exc:
                raise InvalidDestinationException(str(exc)) from exc
        if not dest_ok and self.authorizer is not None:
            self.authorize(conn, "send", dest)
        if dest.is_topic:
            if not dest_ok:
                self._topic(dest)
            return dest, None
        q = self.queues.get(dest)
        if q is None:
            if dest_ok:  # (checked already in this request: it exists, or it is an error)
                return dest, None
            q = self.queue(dest)
        if len(self._routes) < _MAX_ROUTES or route is not None:
            self._routes[text] = (dest, q)
        return dest, q

    def _hold(self, s: Session, dest: Destination, req: c.Send) -> None:
        """Hold a send until room frees in ``dest`` or its ``block_timeout`` passes (PSF-07),
        behind the earlier held sends of its session. O(1)."""
        now = self.clock.now_ms()
        deadline = now
        if self._blocks(dest):
            deadline += round(self.config.policy_for(str(dest)).block_timeout * 1000)
            self.add_timer(deadline, None)
        if not s.held:
            self._parked.setdefault(dest, collections.deque()).append(s)
        s.held.append((deadline, dest, req))
        s.conn.held += 1

    def _unblock(self, now: int) -> None:
        """Retry held sends: per destination with waiting sessions, each session's first held
        send in turn until one still finds no room; fail those past their deadline. A session
        whose held send went on waits next on its following one's destination."""
        parked = self._parked
        todo = collections.deque(parked)
        while todo:
            dest = todo.popleft()
            waiters = parked.get(dest)
            while waiters:
                s = waiters[0]
                conn = s.conn
                deadline, _, req = s.held[0]
                reply: c.Reply | None = None
                if conn.closed:
                    pass  # dropped with its connection
                elif req.duplicate_id is not None and self._dedup.seen(dest, req.duplicate_id):
                    reply = c.Ok(corr=req.corr)  # PSF-09: an earlier held send had the same id
                else:
                    try:
                        self._publish(conn, dest, req)
                    except ResourceAllocationException as exc:
                        if deadline > now:
                            break  # dest is still full: its other waiters wait too
                        kind, text = type(exc).__name__, f"{exc} (blocked for too long)"
                        reply = c.Error(corr=req.corr, kind=kind, message=text)
                    except JMSException as exc:
                        reply = c.Error(corr=req.corr, kind=type(exc).__name__, message=str(exc))
                    else:
                        if req.duplicate_id is not None:
                            self._record_duplicate_id(dest, req)
                        reply = c.Ok(corr=req.corr)
                waiters.popleft()
                s.held.popleft()
                conn.held -= 1
                if reply is not None:
                    self._answer(conn, req, reply)
                if s.held:
                    following = s.held[0][1]
                    more = parked.get(following)
                    if more is None:
                        parked[following] = more = collections.deque()
                        todo.append(following)
                    more.append(s)
                elif not conn.held and conn.held_disconnect is not None:
                    self._closed_after_held(conn)
            if not waiters:
                parked.pop(dest, None)

    def _closed_after_held(self, conn: BrokerConnection) -> None:
        """The held sends of a connection whose Disconnect waited for them are all done."""
        req = conn.held_disconnect
        assert req is not None
        conn.held_disconnect = None
        if not conn.closed:
            self._close_connection(conn)
        self._answer(conn, req, c.Ok(corr=req.corr))

    def _publish(
        self,
        conn: BrokerConnection,
        dest: Destination,
        req: c.Send | c.StagedSend,
        q: MessageQueue | None = None,
    ) -> None:
        """Route one message to its queue (``q`` when the caller has it) or to every
        admitting subscription, all or none."""
        stored = Stored(
            req.message,
            req.persistent,
            req.priority,
            req.expiration,
            req.delivery_time,
            req.group_id if self._groups else None,
            req.group_seq,
            conn,
            conn.client_id,
        )
        if q is not None:
            targets = [q]
        elif dest.is_topic:
            targets = [sub.queue for sub in self._topic(dest) if sub.admits(stored)]
        else:
            targets = [self.queue(dest)]
        full = self._full(targets, stored.size)
        paged = False
        if full is not None:
            if not self._can_page(full, targets, stored):
                raise ResourceAllocationException(
                    f"{full.name} is full (max_bytes={full.policy.max_bytes}, max_memory_bytes="
                    f"{self.config.max_memory_bytes}): consume messages or raise the limit"
                )
            paged = True  # PSF-07: kept on disk only, read back when it is delivered
        now = self.clock.now_ms()  # the one clock read of a send (its hand-over reuses it)
        # Outside a transaction's commit (whose messages are taken back if a later one fails)
        # a message may go to a waiting consumer as it is enqueued: see _hand_over.
        direct = not paged and self._tx_added is None
        if not (paged or stored.persistent):  # (no list of the copies: nothing keeps them)
            for t in targets:
                self._enqueue(t, stored, now, False, direct)
            return
        entries = [self._enqueue(t, stored, now, paged, direct) for t in targets]
        if paged:
            self._to_page.extend(entries)  # their bytes leave memory once they are durable
        if stored.persistent:
            for t in targets:  # a loop, not any(generator): this runs once per message
                if t.durable:
                    self._unstored.extend(entries)  # every copy goes if the store refuses it
                    break

    def publish_all(
        self,
        conn: BrokerConnection,
        sends: Iterable[tuple[Destination, c.Send | c.StagedSend]],
        failure: str,
    ) -> int:
        """Route every message or none (TX-02): on a failure take back what was enqueued and
        the store operations of this request, and raise TransactionRolledBackException
        (``failure: reason``). Returns how many were routed.

        Raises:
            TransactionRolledBackException: a message could not be routed; nothing was.
        """
        added: list[Entry] = []
        self._tx_added = added
        n = 0
        try:
            for dest, send in sends:
                self._publish(conn, dest, send)
                n += 1
        except JMSException as exc:
            for entry in added:
                entry.queue.remove(entry)
                self.total_bytes -= entry.held
            self._ops.clear()
            self._to_page.clear()
            self._unstored.clear()
            raise TransactionRolledBackException(f"{failure}: {exc}", linked_exception=exc) from exc
        finally:
            self._tx_added = None
        return n

    def _full(self, targets: list[MessageQueue], size: int) -> MessageQueue | None:
        """The first target that cannot take ``size`` more bytes, or None (PSF-07)."""
        limit = self._max_memory_bytes
        cost = (size + COPY_OVERHEAD) * len(targets)  # what the copies will hold (Entry.held)
        if limit and targets and self.total_bytes + self.staged_bytes + cost > limit:
            return targets[0]
        for q in targets:
            mx = q.policy.max_bytes
            if mx and q.bytes + size > mx:
                return q
        return None

    def _can_page(self, full: MessageQueue, targets: list[MessageQueue], stored: Stored) -> bool:
        """Whether a message for full destinations may go to disk only (policy ``page``):
        PERSISTENT, every target durable, and a store that writes to disk."""
        return (
            full.policy.full_policy == "page"
            and stored.persistent
            and not self.store.synchronous
            and all(q.durable for q in targets)
        )

    def _blocks(self, dest: Destination) -> bool:
        """A send to a full ``dest`` waits (policy ``block``, or ``page`` when it cannot page)."""
        return self.config.policy_for(str(dest)).full_policy in ("block", "page")

    def _enqueue(
        self, q: MessageQueue, stored: Stored, now: int, paged: bool = False, direct: bool = False
    ) -> Entry:
        """Add ``stored`` to ``q``; ``direct``: it may go to a waiting consumer at once
        (:meth:`_hand_over`), else ``q`` is dispatched when the request's handler is done."""
        e = q.add(stored, now, held=0 if paged else None)
        if self._tx_added is not None:
            self._tx_added.append(e)
        self.total_bytes += e.held
        if q.durable and e.seq > q.reserved - SEQ_RESERVE_BLOCK // 2:
            q.reserved = e.seq + SEQ_RESERVE_BLOCK
            self._reserved[q.key] = q.reserved
            self._ops.append(ReserveSeq(q.key, q.reserved))
        if stored.persistent and q.durable:
            self._ops.append(
                AddMessage(
                    q.key,
                    e.seq,
                    self.data(e),
                    stored.priority,
                    stored.expiration,
                    stored.delivery_time,
                    stored.group_id,
                )
            )
        if stored.delivery_time > now:
            self.add_timer(stored.delivery_time, q)
        elif q.consumers and not (direct and q.ready_count == 1 and self._hand_over(q, e, now)):
            self._dirty.add(
                q
            )  # (with no consumer, _dispatch has nothing to do: a new one marks it)
        if stored.expiration:
            self.arm_reaper(now)
        return e

    def add_timer(self, due: int, q: MessageQueue | None) -> None:
        """Have :meth:`tick` act at ``due`` (epoch ms): promote ``q``'s due scheduled
        messages, or (``q`` None) retry blocked sends."""
        heapq.heappush(self._timers, (due, next(self._timer_seq), q))

    def _on_ack(self, conn: BrokerConnection, req: c.Ack) -> c.Reply | None:
        s = self._session(conn, req.session_id)
        for did in req.delivery_ids:
            e = s.outstanding.pop(did, None)
            if e is not None:
                self.finish(e)
        return c.Ok(corr=req.corr) if req.corr else None  # one-way: no reply to drop

    def _on_expired(self, conn: BrokerConnection, req: c.Expired) -> c.Reply:
        s = self._session(conn, req.session_id)
        for did in req.delivery_ids:
            e = s.outstanding.pop(did, None)
            if e is not None and e.state != GONE:
                if e.consumer is not None:
                    e.consumer.outstanding.discard(did)
                self._expire(e)
        return c.Ok(corr=req.corr)

    def finish(self, e: Entry) -> None:
        """An acknowledged (or committed) delivery leaves its queue for good."""
        q = e.queue
        if self._consumed(e) and e.stored.persistent and q.durable:
            self._ops.append(RemoveMessage(q.key, e.seq))
            self._removed.append(e)  # back into its queue if the removal is not durable

    def _consumed(self, e: Entry) -> bool:
        """Take ``e`` off its consumer's outstanding deliveries and out of its queue and the
        memory count; False if it had left already (nothing of it to remove from the store)."""
        consumer = e.consumer
        if consumer is not None:
            consumer.outstanding.discard(e.delivery_id)
        if e.state == GONE:
            return False
        e.queue.remove(e)
        self.total_bytes -= e.held
        return True

    def _on_release(self, conn: BrokerConnection, req: c.Release) -> c.Reply:
        s = self._session(conn, req.session_id)
        return c.Released(corr=req.corr, delivery_ids=self._release(s, set(req.delivered)))

    def _on_nack(self, conn: BrokerConnection, req: c.Nack) -> c.Reply:
        s = self._session(conn, req.session_id)
        outstanding = s.outstanding
        ids = [did for did in req.delivery_ids if did in outstanding]
        entries = [outstanding.pop(did) for did in ids]
        self._give_back(ids, entries, set(ids), poison=req.dead_letter)
        return c.Released(corr=req.corr, delivery_ids=ids)

    def _release(self, s: Session, delivered: set[int]) -> list[int]:
        """Return every outstanding delivery of ``s`` to its queue (REL-10, REL-16)."""
        ids = sorted(s.outstanding)
        entries = [s.outstanding[i] for i in ids]
        s.outstanding.clear()
        self._give_back(ids, entries, delivered)
        return ids

    def _give_back(
        self, ids: list[int], entries: list[Entry], delivered: set[int], *, poison: bool = False
    ) -> None:
        """Return the deliveries ``ids`` (``entries``, already taken out of their session's
        outstanding) to their queues: those in ``delivered`` as failed attempts (counted, the
        redelivery policy and the dead-letter queue apply; with ``poison`` the dead-letter
        queue at once), the others uncounted."""
        now = self.clock.now_ms()
        back: list[tuple[Entry, bool]] = []  # (entry, counted), given back after the loop
        for did, e in zip(ids, entries):
            consumer = e.consumer
            if consumer is not None:
                consumer.outstanding.discard(did)
                if did not in delivered and consumer.session.consumers.get(consumer.id) is consumer:
                    consumer.credit = min(consumer.credit + 1, consumer.prefetch)
            q = e.queue
            if e.state != INFLIGHT or q.deleted:
                continue
            if did in delivered:
                e.count += 1
                if e.stored.persistent and q.durable:
                    self._ops.append(SetDeliveryCount(q.key, e.seq, e.count))
                limit = q.policy.max_delivery_attempts
                if poison:
                    self._dead_letter(e, "the client gave up on it (a poison acknowledgement)")
                    continue
                if limit != -1 and e.count >= limit:
                    self._dead_letter(e, f"delivery attempts reached max_delivery_attempts={limit}")
                    continue
                q.redelivered += 1
                delay = self._redelivery_delay(q, e.count)
                if delay:
                    q.inflight.pop(e.seq, None)
                    e.consumer = None
                    e.session = None
                    q.schedule(e, now + delay)
                    self.add_timer(now + delay, q)
                    continue
                back.append((e, True))
            else:
                back.append((e, False))
        # Newest first: each then goes to the front of its queue's ready order (O(1)); oldest
        # first put all but the first into the middle, a re-sort each (seconds for the 2,000
        # a consumer with a large prefetch held, closing behind a backlog).
        for e, counted in reversed(back):
            if counted:
                e.queue.give_back(e)
            else:
                self._return_uncounted(e)
            self._dirty.add(e.queue)

    def _return_uncounted(self, e: Entry) -> None:
        """A delivery the application never saw goes back without counting (notes item 3);
        the "delivered" mark written at dispatch (A-15) is taken back too."""
        q = e.queue
        q.give_back(e)
        if e.stored.persistent and q.durable and self.config.persist_delivery_count:
            self._ops.append(SetDeliveryCount(q.key, e.seq, e.count))

    @staticmethod
    def _redelivery_delay(q: MessageQueue, count: int) -> int:
        p = q.policy
        if p.redelivery_delay <= 0:
            return 0
        cap = (
            p.max_redelivery_delay
            if p.max_redelivery_delay is not None
            else 10 * p.redelivery_delay
        )
        return round(min(p.redelivery_delay * p.redelivery_multiplier ** (count - 1), cap) * 1000)

    def _on_commit(self, conn: BrokerConnection, req: c.Commit) -> c.Reply:
        s = self._session(conn, req.session_id)
        if not s.transacted:
            raise IllegalStateException("commit() needs a transacted session")
        sends = s.tx_sends
        s.tx_sends = []
        # On failure the deliveries stay outstanding: the client answers with ``Rollback``,
        # whose ``Released`` reply tells it which buffered deliveries to drop (TX-04, TX-06).
        dups = [(self.resolve(send.destination), send) for send in sends if send.duplicate_id]
        if dups:
            self._dedup.check_transaction(dups)  # PSF-09: a repeat drops the transaction
        self.publish_all(
            conn,
            ((self.resolve(send.destination), send) for send in sends),
            "the transaction was rolled back",
        )
        for dest, send in dups:
            self._record_duplicate_id(dest, send)
        for did in req.delivered:
            e = s.outstanding.pop(did, None)
            if e is None:  # a delivery of another session of the connection (OpenWire)
                e = next(
                    (
                        o.outstanding.pop(did)
                        for o in conn.sessions.values()
                        if did in o.outstanding
                    ),
                    None,
                )
            if e is not None:
                self.finish(e)
        return c.Ok(corr=req.corr)

    def _on_rollback(self, conn: BrokerConnection, req: c.Rollback) -> c.Reply:
        s = self._session(conn, req.session_id)
        s.tx_sends.clear()
        return c.Released(corr=req.corr, delivery_ids=self._release(s, set(req.delivered)))

    def _on_browse(self, conn: BrokerConnection, req: c.Browse) -> c.Reply:
        dest = self.resolve(req.destination)
        if dest.is_topic:
            raise InvalidDestinationException(f"{dest} is a topic: browsers need a queue")
        self.authorize(conn, "browse", dest)
        self._check_temp_owner(conn, dest)
        q = self.queue(dest)
        selector = compile_selector(req.selector)
        now = self.clock.now_ms()
        after = req.after
        out: list[bytes] = []
        last: tuple[int, int] | None = after
        done = True
        for e in q.browse_order():
            pos = (-e.stored.priority, e.seq)
            if after is not None and pos <= after:
                continue
            if len(out) >= req.limit:
                done = False
                break
            last = pos
            st = e.stored
            if st.expiration and st.expiration <= now:
                continue
            if selector is not None and not self.selects(selector, e):
                continue
            out.append(self.data(e))
        return c.BrowseResult(corr=req.corr, messages=out, after=last, done=done)

    def _on_create_temporary(self, conn: BrokerConnection, req: c.CreateTemporary) -> c.Reply:
        if req.name is not None:  # failover: the same name as on the lost connection
            name = req.name
            kind = TemporaryTopic if req.topic else TemporaryQueue
            try:
                again = kind(name)
            except JMSException as exc:
                raise InvalidDestinationException(f"invalid temporary name {name!r}") from exc
            if again in conn.temporaries:
                return c.Ok(corr=req.corr, value=str(again))
            if again in self.queues or again in self.topics:
                raise InvalidDestinationException(
                    f"{again} is still owned by another connection: try again once the broker "
                    "has noticed that the old connection is gone"
                )
        else:
            name = f"{conn.id.removeprefix('ID:')}.{next(self._temp_ids)}"
        if req.topic:
            dest: Destination = TemporaryTopic(name)
            self.topics[dest] = []
            conn.temporaries[dest] = None
        else:
            dest = TemporaryQueue(name)
            conn.temporaries[dest] = self.new_queue(dest, conn)
        return c.Ok(corr=req.corr, value=str(dest))

    def _on_delete_temporary(self, conn: BrokerConnection, req: c.DeleteTemporary) -> c.Reply:
        dest = self.resolve(req.destination)
        if dest not in conn.temporaries:
            if dest in self.queues or dest in self.topics:
                raise IllegalStateException(f"{dest} can only be deleted by its own connection")
            return c.Ok(corr=req.corr)  # already deleted: no-op (TMP-07)
        if dest.is_topic:
            if any(sub.queue.consumers for sub in self.topics.get(dest, [])):
                raise IllegalStateException(f"{dest} still has consumers: close them first")
        else:
            q = self.queues.get(dest)
            if q is not None and q.consumers:
                raise IllegalStateException(f"{dest} still has consumers: close them first")
        self._delete_temporary(conn, dest)
        return c.Ok(corr=req.corr)

    def _delete_temporary(self, conn: BrokerConnection, dest: Destination) -> None:
        conn.temporaries.pop(dest, None)
        self._dedup.drop(dest)
        if dest.is_topic:
            self._retired.pop(dest, None)
            for sub in list(self.topics.pop(dest, [])):
                sub.queue.deleted = True
                for e in sub.queue.clear():
                    self.total_bytes -= e.held
        else:
            q = self.queues.pop(dest, None)
            if q is not None:
                q.deleted = True
                for e in q.clear():
                    self.total_bytes -= e.held

    def _on_unsubscribe(self, conn: BrokerConnection, req: c.Unsubscribe) -> c.Reply:
        s = self._session(conn, req.session_id)
        key = (conn.client_id, req.name)
        sub = self.durable.get(key)
        if sub is None:
            raise InvalidDestinationException(
                f"no durable subscription {req.name!r} for client id {conn.client_id!r}"
            )
        if sub.queue.consumers:
            raise IllegalStateException(
                f"durable subscription {req.name!r} has an active consumer: close it first"
            )
        if any(e.queue is sub.queue for e in s.outstanding.values()):
            raise IllegalStateException(
                f"this session holds unacknowledged messages of {req.name!r}: acknowledge, "
                "commit or roll back first"
            )
        self._delete_subscription(sub)
        return c.Ok(corr=req.corr)

    # ------------------------------------------------------------------ admin
    def _on_stat(self, conn: BrokerConnection, req: c.Stat) -> c.Reply:
        """Admin: the state of one destination, or of every destination sorted by name (with
        an authorizer: every destination this user may administer, and how many others there
        are)."""
        hidden = 0
        if req.destination is not None:
            dests = [self._admin_dest(conn, req.destination)]
        else:
            auth = self.authorizer
            every = [*self.queues, *self.topics]
            dests = sorted(
                (
                    d
                    for d in every
                    if auth is None or d.is_temporary or auth(conn.user, "admin", str(d))
                ),
                key=str,
            )
            hidden = len(every) - len(dests)
        return c.StatResult(
            corr=req.corr, destinations=[self._stat(d) for d in dests], hidden=hidden
        )

    def _on_purge(self, conn: BrokerConnection, req: c.Purge) -> c.Reply:
        """Admin: drop every message of a queue that is not in flight (ready or scheduled);
        deliveries in flight stay with their sessions. Persistent ones leave the store too."""
        dest = self._admin_dest(conn, req.destination)
        if dest.is_topic:
            raise InvalidDestinationException(
                f"{dest} is a topic: only queues can be purged (a topic holds no messages "
                "of its own; its subscriptions are emptied by their consumers or unsubscribe)"
            )
        return c.Ok(corr=req.corr, value=str(self.purge_queue(self.queues[dest])))

    def purge_queue(self, q: MessageQueue) -> int:
        """Drop every message of ``q`` that is not in flight (ready or scheduled); returns how
        many. Persistent ones leave the store with the current request's batch."""
        entries = [*q.iter_ready(), *q.scheduled_entries()]
        for e in entries:
            self.finish(e)
        return len(entries)

    def _admin_dest(self, conn: BrokerConnection, text: str) -> Destination:
        """An existing queue or topic named by ``text`` (admin requests never create one) that
        ``conn``'s user may administer (the ``admin`` action of the authorizer)."""
        try:
            dest = self.resolve(text)
        except JMSException as exc:
            raise InvalidDestinationException(str(exc)) from exc
        auth = self.authorizer
        if auth is not None and not dest.is_temporary and not auth(conn.user, "admin", str(dest)):
            raise JMSSecurityException(
                f"user {conn.user!r} is not allowed to administer {dest}: grant it the "
                "'admin' permission on that destination"
            )
        if dest not in self.queues and dest not in self.topics:
            raise InvalidDestinationException(f"{dest} does not exist on this broker")
        return dest

    # ------------------------------------------------------------------ operator changes
    def run_admin(self, change: Callable[[], _R], done: Callable[[c.Command], None]) -> _R:
        """Run an operator's ``change`` (``broker/admin.py``) as one request would run: its
        store operations form one batch, dispatch follows, and ``done`` hears ``Ok`` once
        that batch is durable (an ``Error`` if the store failed it), in order with every
        connection's output. Owner context only. Returns what ``change`` returns.

        Raises:
            whatever ``change`` raises; its store operations are then dropped, so it must
            raise before it changes anything.
        """
        try:
            result = change()
        except BaseException:
            self._ops.clear()
            self._dispatch_dirty()
            self._flush()
            raise
        self._dispatch_dirty()
        if self._parked:
            self._unblock(self.clock.now_ms())
            self._dispatch_dirty()
        self._out.append((BrokerConnection(self, "ID:operator", done), c.Ok(corr=1)))
        self._flush()
        return result

    def delete_queue(self, dest: Destination) -> int:
        """Delete queue ``dest`` with every message it holds (persistent ones leave the
        store); its consumers must be gone. Returns how many messages it held."""
        q = self.queues.pop(dest)
        q.deleted = True
        self._dedup.drop(dest)
        entries = q.clear()
        for e in entries:
            self.total_bytes -= e.held
            if e.session is not None:
                e.session.outstanding.pop(e.delivery_id, None)
        if q.durable:
            self._ops.append(RemoveDestination(q.key))
        return len(entries)

    def delete_topic(self, dest: Destination) -> None:
        """Delete topic ``dest`` and every subscription of it (durable ones leave the store);
        their consumers must be gone."""
        for sub in list(self.topics.get(dest, [])):
            self._delete_subscription(sub)
        self.topics.pop(dest, None)
        self._retired.pop(dest, None)
        self._dedup.drop(dest)

    def stat(self, dest: Destination) -> c.DestinationStat:
        """The figures of existing destination ``dest`` (see :meth:`stats`)."""
        return self._stat(dest)

    def delete_subscription(self, sub: Subscription) -> None:
        """Delete ``sub`` and its messages (a durable one leaves the store); its consumers
        must be gone."""
        self._delete_subscription(sub)

    def stats(self) -> list[c.DestinationStat]:
        """The figures of every destination, sorted by name, read from counters kept as
        events happen (no message is looked at): what ``ternmq stat``, the HTTP API and the
        metrics endpoint show. No permission check: the host decides who may see them."""
        return [self._stat(d) for d in sorted([*self.queues, *self.topics], key=str)]

    def _stat(self, dest: Destination) -> c.DestinationStat:
        """The figures of one destination, read from its counters (``_stats.py``)."""
        duplicates = self._dedup.duplicates(dest)
        if dest.is_topic:
            return topic_stat(
                dest, self.topics.get(dest, []), duplicates, self._retired.get(dest, NO_COUNTS)
            )
        return queue_stat(dest, self.queues[dest], duplicates)

    # A ClassVar (filled in below the class) so that mypyc compiles it as a class attribute.
    _handlers: ClassVar[dict[type, Callable[[Broker, BrokerConnection, Any], c.Reply | None]]] = {}

    # ------------------------------------------------------------------ dispatch
    def _dispatch_dirty(self) -> None:
        while self._dirty:
            q = self._dirty.pop()
            if not q.deleted:
                self._dispatch(q)

    def _dispatch(self, q: MessageQueue) -> None:
        """Hand READY messages to consumers with credit, round-robin (PTP-04)."""
        consumers = q.consumers
        if not consumers or not q.ready_count:
            return
        if q.policy.exclusive:
            consumers = consumers[:1]
        now = self.clock.now_ms()
        groups = self._groups and q.has_groups
        if len(consumers) == 1 and consumers[0].selector is None and not groups:
            self._dispatch_one(q, consumers[0], now)
            return
        while q.ready_count:
            n = len(consumers)
            progressed = False
            for i in range(n):
                consumer = consumers[(q.rr + i) % n]
                if not consumer.wants():
                    continue
                e = self._find(q, consumer, now, groups)
                if e is None:
                    continue
                self._deliver(q, consumer, e, groups)
                q.rr = (q.rr + i + 1) % n
                progressed = True
                break
            if not progressed:
                return

    def _hand_over(self, q: MessageQueue, e: Entry, now: int) -> bool:
        """Deliver ``e``, the one READY entry of ``q``, as :meth:`_dispatch` would (the next
        consumer in round-robin order with credit whose selector matches, PTP-04, PTP-05),
        without marking ``q`` dirty, reading the clock again or searching the queue: the
        usual case of a message sent to a queue whose consumer keeps up. Returns False, and
        leaves ``e`` to :meth:`_dispatch`, if no consumer takes it now or it needs more than
        this (it expired, or it belongs to a message group)."""
        st = e.stored
        if (st.expiration and st.expiration <= now) or (st.group_id is not None and self._groups):
            return False
        consumers = q.consumers
        n = 1 if q.policy.exclusive else len(consumers)
        rr = q.rr
        for i in range(n):
            consumer = consumers[(rr + i) % n]
            if consumer.credit <= 0 and consumer.pull <= 0:
                continue
            selector = consumer.selector
            if selector is not None and not self.selects(selector, e):
                continue
            self._deliver(q, consumer, e, False)
            q.rr = (rr + i + 1) % n
            return True
        return False

    def _dispatch_one(self, q: MessageQueue, consumer: Consumer, now: int) -> None:
        """:meth:`_dispatch` for a queue with one consumer (or an exclusive queue) without a
        selector or message groups: the READY entries in dispatch order while it has credit,
        the expired ones met on the way expired (PSF-05), without a search per message."""
        q.rr = 0
        buckets = q.ready_buckets()
        p = 9
        while q.ready_count and (consumer.credit > 0 or consumer.pull > 0):
            od = buckets[p]
            if not od:
                p -= 1
                continue
            e = next(iter(od.values()))
            expiration = e.stored.expiration
            if expiration and expiration <= now:
                self._expire(e)
                p = 9  # (an expired message may be diverted anywhere: look from the top)
                continue
            self._deliver(q, consumer, e, False)

    def _find(self, q: MessageQueue, consumer: Consumer, now: int, groups: bool) -> Entry | None:
        selector = consumer.selector
        expired: list[Entry] = []
        found = None
        buckets = q.ready_buckets()
        for p in range(9, -1, -1):
            od = buckets[p]
            if not od:
                continue
            for e in od.values():
                st = e.stored
                if st.expiration and st.expiration <= now:
                    expired.append(e)
                    continue
                if groups and st.group_id is not None:
                    owner = q.groups.get(st.group_id)
                    if owner is not None and owner is not consumer:
                        continue
                if selector is not None and not self.selects(selector, e):
                    continue
                found = e
                break
            if found is not None:
                break
        for e in expired:
            self._expire(e)
        return found

    def _deliver(self, q: MessageQueue, consumer: Consumer, e: Entry, groups: bool) -> None:
        q.take(e)
        s = consumer.session
        conn = s.conn
        did = conn.next_delivery_id()
        e.delivery_id = did
        e.consumer = consumer
        e.session = s
        s.outstanding[did] = e
        consumer.outstanding.add(did)
        if consumer.pull:
            consumer.pull -= 1
        else:
            consumer.credit -= 1
        st = e.stored
        if st.persistent and q.durable:
            if self.config.persist_delivery_count:
                # A-15: "delivered at least once" is durable before the delivery leaves, so a
                # message delivered before a crash comes back marked redelivered (REL-12).
                self._ops.append(SetDeliveryCount(q.key, e.seq, e.count + 1))
            if consumer.acked_when_sent:
                self._sent.append(e)
            elif self._on_defer is not None and len(consumer.outstanding) == 1:
                if consumer.defer_skip:
                    consumer.defer_skip -= 1
                else:
                    self._early.append(e)  # the consumer waits: it may acknowledge at once
        if groups and st.group_id is not None:
            if st.group_seq < 0:
                q.groups.pop(st.group_id, None)  # the group is closed (PSF-03)
            else:
                q.groups[st.group_id] = consumer
        data = st.data
        if data is None:  # paged out: read back from the store
            data = self.data(e)
        self._out.append(
            (
                conn,
                Deliver(
                    consumer_id=consumer.id,
                    delivery_id=did,
                    message=data,
                    delivery_count=e.count + 1,
                    expiration=st.expiration,
                ),
            )
        )

    # ------------------------------------------------------------------ expiry, dead letters
    def _expire(self, e: Entry) -> None:
        q = e.queue
        if e.state == GONE:
            return
        self.finish(e)
        self.expired += 1
        q.expired += 1
        target = q.policy.expiry_queue
        if target:
            self._divert(
                e, target, {"JMS_TernMQ_ActualExpiry": self.clock.now_ms()}, clear_expiry=True
            )

    def _dead_letter(self, e: Entry, reason: str) -> None:
        self.finish(e)
        self.dead_lettered += 1
        q = e.queue
        q.dead_lettered += 1
        target = q.policy.dead_letter_queue
        if self.on_warning is not None:
            self.on_warning(
                "dead_lettered",
                destination=str(q.name),
                dead_letter_queue=target or None,
                delivery_count=e.count,
                reason=reason,
            )
        if target:
            # The copy starts its own delivery count; the attempts it took here stay with it.
            self._divert(
                e,
                target,
                {"JMS_TernMQ_DeadLetterReason": reason, "JMS_TernMQ_DeliveryCount": e.count},
            )

    def _divert(
        self, e: Entry, target: str, extra: dict[str, str | int], clear_expiry: bool = False
    ) -> None:
        """Copy an entry's message into queue ``target`` with its origin recorded."""
        msg = decode_message(self.data(e))
        msg._properties["JMS_TernMQ_OriginalDestination"] = e.queue.name
        msg._property_types["JMS_TernMQ_OriginalDestination"] = T.STRING
        for k, v in extra.items():
            msg._properties[k] = v
            msg._property_types[k] = T.LONG if isinstance(v, int) else T.STRING
        expiration = 0 if clear_expiry else e.stored.expiration
        if clear_expiry:
            msg._expiration = 0
        st = e.stored
        stored = Stored(
            encode_message(msg),
            st.persistent,
            st.priority,
            expiration,
            0,
            st.group_id,
            st.group_seq,
            st.origin_conn,
            st.origin_client,
        )
        # Dead-letter and expiry queues take the copy even past their memory limit: dropping
        # it would lose a message silently (REL-08).
        self._enqueue(self._queue_any(target), stored, self.clock.now_ms())

    def data(self, e: Entry) -> bytes:
        """The encoded message of ``e``, read back from the store if it is paged out.

        Raises:
            JMSException: a paged-out message is missing from the store.
        """
        data = e.stored.data
        if data is None:
            data = self.store.read_message(e.queue.key, e.seq)
            if data is None:
                raise JMSException(f"message {e.seq} of {e.queue.name} is missing from the store")
        return data

    def selects(self, selector: Selector, e: Entry) -> bool:
        """Whether ``selector`` matches the message of ``e`` as its next delivery would
        carry it: ``JMSXDeliveryCount`` is the count of that delivery (SEL-34).

        Raises:
            JMSException: a paged-out message is missing from the store.
        """
        view = self.view(e)
        if selector.reads_delivery_count:
            return selector.matches(with_delivery_count(view, e.count + 1))
        return selector.matches(view)

    def view(self, e: Entry) -> Message:
        """The decoded message of ``e`` for selectors (not cached while paged out).

        Raises:
            JMSException: a paged-out message is missing from the store.
        """
        if e.stored.data is not None:
            return e.stored.view()
        return decode_message(self.data(e))

    def _queue_any(self, name: str) -> MessageQueue:
        dest = self.resolve(f"queue://{name}")
        q = self.queues.get(dest)
        return q if q is not None else self.new_queue(dest)

    def arm_reaper(self, now: int) -> None:
        """Make sure the reaper runs within ``expiry_scan_interval`` of ``now``."""
        if self._reaper_due is None:
            self._reaper_due = now + round(self.config.expiry_scan_interval * 1000)

    def _reap(self, now: int) -> None:
        pending = sweep_staged(self, now)
        for q in list(self.queues.values()) + [
            sub.queue for subs in self.topics.values() for sub in subs
        ]:
            for e in q.expired_entries(now):
                self._expire(e)
            if q.expiring:
                pending = True
        if pending:
            self._reaper_due = now + round(self.config.expiry_scan_interval * 1000)

    # ------------------------------------------------------------------ connection end
    def _close_connection(self, conn: BrokerConnection) -> None:
        if conn.closed:
            return
        for s in list(conn.sessions.values()):
            # Lost link (or shutdown): the client can no longer say which deliveries it handed
            # to the application, so count them all; a spurious redelivered flag is allowed, a
            # missing one is not (REL-10, REL-12).
            self._close_session(s, set(s.outstanding))
        for dest in list(conn.temporaries):
            self._delete_temporary(conn, dest)
        for subs in self.topics.values():
            for sub in subs:
                if sub.conn is conn:
                    sub.conn = None
        if conn.client_id is not None and self.client_ids.get(conn.client_id) is conn:
            del self.client_ids[conn.client_id]
        conn.closed = True
        self.connections.pop(conn.id, None)

    # ------------------------------------------------------------------ plumbing
    def _flush(self) -> None:
        """Write the request's store batch and release its output, in order.

        With a synchronous store the batch is written now and the output leaves at once. With
        an asynchronous one the output (replies, deliveries) waits until the batch is durable
        (:meth:`_apply_completions`); output of later requests queues behind it, so every connection
        sees events and replies in the order the broker produced them.
        """
        if self._sent:
            self._settle_sent()
        if self._deferred is not None and self._ops:
            self._settle_deferred()
        if self._early:
            early, self._early = self._early, []
            if self._defer_batch(early):
                return
        ops, out = self._ops, self._out
        if not ops and not self._pending:
            # Nothing to write and nothing waiting (a non-persistent send, an acknowledgement):
            # the output leaves now, and the lists that stayed empty are kept.
            if self._unstored:
                self._unstored = []
            if self._removed:
                self._removed = []
            if self._to_page:
                self._to_page = []
            if out:
                self._out = []
                for conn, cmd in out:
                    conn.emit(cmd)
            return
        self._ops = []
        self._out = []
        store = self.store
        unstored, self._unstored = self._unstored, []
        removed, self._removed = self._removed, []
        if ops and store.synchronous:
            try:
                store.write(ops)
            except OSError as exc:
                out = self._take_back(unstored, removed, exc, out)
            ops = []
        to_page, self._to_page = self._to_page, []
        if ops:
            token = next(self._tokens)
            self._pending.append([token, False, None, out, to_page, unstored, removed])
            self.submitted += 1
            store.submit(ops, token)
        elif self._pending:
            if out:
                self._pending.append([0, True, None, out, to_page, [], []])
        else:
            for conn, cmd in out:
                conn.emit(cmd)

    def _settle_sent(self) -> None:
        """Concurrent store and dispatch (as ActiveMQ's for queues): if everything this
        request would write is the insert (and delivery count) of PERSISTENT messages that it
        also delivered to consumers that count a message consumed once sent (STOMP
        ``ack:auto``), and no earlier batch is still waiting, those messages are consumed now
        and nothing is written: the sender's receipt and the deliveries leave together at
        once, with no commit. Otherwise the batch is written as usual, and the deliveries are
        acknowledged by the consumers' ``Ack`` once sent."""
        sent, self._sent = self._sent, []
        if self._pending:  # the output would wait behind an earlier batch: no
            return
        if self._only_inserts_of(sent) is None:
            return
        self._ops = []
        self._unstored = []
        for e in sent:
            e.session.outstanding.pop(e.delivery_id, None)  # its Ack finds nothing left to do
            self._consumed(e)

    def _only_inserts_of(self, entries: list[Entry]) -> set[tuple[str, int]] | None:
        """The (destination key, sequence) of ``entries`` if everything this request would
        write is the insert (and delivery count) of exactly their messages; else None (it
        writes something else too: a removal, a duplicate id, a sequence reservation, another
        copy; or one of them was written before, so its removal must be written too)."""
        keys = {(e.queue.key, e.seq) for e in entries}
        inserts = 0
        for op in self._ops:
            if type(op) is AddMessage:
                inserts += 1
                key = (op.dest, op.seq)
            elif type(op) is SetDeliveryCount:
                key = (op.dest, op.seq)
            else:
                return None
            if key not in keys:
                return None
        return keys if inserts == len(keys) else None

    # ---- concurrent store and dispatch: deferred inserts ----------------------------------
    def enable_deferral(self, on_defer: Callable[[int], None] | None) -> None:
        """Let a PERSISTENT message go to a waiting consumer before its insert is written,
        and defer that insert for a moment in case the consumer's acknowledgement comes
        first: then neither is written (ActiveMQ Classic's concurrent store and dispatch for
        queues). ``on_defer(token)`` is called when a batch is deferred; the host must then
        call :meth:`end_deferral` with ``token`` after ``config.dispatch_hold`` seconds.
        ``None`` turns deferral off. Only for an asynchronous store (a synchronous one
        writes at once: nothing to defer)."""
        self._on_defer = None if self.store.synchronous else on_defer

    def end_deferral(self, token: int) -> None:
        """The deferral ``on_defer(token)`` announced has run out: hand what is left of that
        batch to the store now (its output leaves once it is written), and do not defer the
        next ``DEFER_SKIP`` deliveries of the consumers that did not acknowledge in time.
        Nothing if that batch is no longer deferred."""
        deferred = self._deferred
        if deferred is None or deferred.token != token:
            return
        for e in deferred.entries:
            if e.state != GONE and e.consumer is not None:
                e.consumer.defer_skip = DEFER_SKIP
        self._submit_deferred()

    def _submit_deferred(self) -> None:
        """Hand the deferred batch, if any, to the store (before any later batch)."""
        deferred = self._deferred
        if deferred is not None:
            self._deferred = None
            self.submitted += 1
            self.store.submit(deferred.ops, deferred.token)

    def _defer_batch(self, early: list[Entry]) -> bool:
        """Concurrent store and dispatch: if everything this request would write is the
        insert (and delivery count) of PERSISTENT messages it delivered (``early``) to
        consumers with nothing else outstanding, and no output of their connections waits
        in the gate for an earlier batch, those deliveries leave now, the rest of the output
        (the sender's reply) waits in the gate as usual, and the batch is deferred (not yet
        submitted) until :meth:`end_deferral` or another batch: an acknowledgement that comes
        first takes its message out of it (``_settle_deferred``), so a consumer that keeps up
        costs the store no write at all. The sender's reply still means the message is
        durable, or consumed. Returns False (nothing done) otherwise."""
        if self._deferral_paused or self._on_defer is None:
            return False
        keys = self._only_inserts_of(early)
        if keys is None:
            return False
        if self._pending and self._holds_output_for({id(e.session.conn) for e in early}):
            return False
        dids = {(id(e.session.conn), e.delivery_id) for e in early}
        now: Output = []
        later: Output = []
        waiting: set[int] = set()
        for conn, cmd in self._out:
            if type(cmd) is Deliver and (id(conn), cmd.delivery_id) in dids:
                if id(conn) in waiting:
                    return False  # it would overtake output of its connection that waits
                now.append((conn, cmd))
            else:
                waiting.add(id(conn))
                later.append((conn, cmd))
        token = next(self._tokens)
        group = [token, False, None, later, self._to_page, self._unstored, self._removed]
        self._pending.append(group)
        self._deferred = _Deferred(token, group, self._ops, keys, early)
        self._ops, self._out = [], []
        self._to_page, self._unstored, self._removed = [], [], []
        for conn, cmd in now:
            conn.emit(cmd)
        self._on_defer(token)
        return True

    def _holds_output_for(self, conns: set[int]) -> bool:
        """Whether output of a connection in ``conns`` (by ``id``) waits in the gate, or it
        is too long to tell cheaply (more than ``DEFER_BEHIND`` groups): deliveries that leave
        now must not overtake it. Earlier batches without output for them (the removals of
        acknowledgements, a reply to another connection) may still be written meanwhile."""
        pending = self._pending
        if len(pending) > DEFER_BEHIND:
            return True
        for group in pending:
            for conn, _ in group[3]:
                if id(conn) in conns:
                    return True
        return False

    def _settle_deferred(self) -> None:
        """A request made a store batch while one is deferred: if it only removes messages
        of the deferred batch (their acknowledgements), both cancel out and neither is
        written; once every deferred message is acknowledged its output (the sender's reply)
        leaves. Anything else submits the deferred batch first, then goes on as usual."""
        deferred = self._deferred
        assert deferred is not None
        keys = deferred.keys
        acked: list[tuple[str, int]] = []
        for op in self._ops:
            if not isinstance(op, RemoveMessage) or (op.dest, op.seq) not in keys:
                self._submit_deferred()
                return
            acked.append((op.dest, op.seq))
        keys.difference_update(acked)
        self._ops = []
        self._removed = []  # not written: nothing to put back should the deferred batch fail
        if keys:
            deferred.ops = [
                op
                for op in deferred.ops
                if isinstance(op, (AddMessage, SetDeliveryCount)) and (op.dest, op.seq) in keys
            ]
            return
        self._deferred = None
        deferred.group[1] = True  # done, with nothing written
        self._gate.release()  # (a failed later group it releases: this _flush flushes it)

    def _release_done(self) -> None:
        """Emit the output whose store batches are done, in order (``_gate.py``)."""
        if self._gate.release() and self.connections:
            self._flush()

    def _take_back(
        self,
        unstored: list[Entry],
        removed: list[Entry],
        error: BaseException,
        out: Output,
    ) -> Output:
        """A store batch failed: the PERSISTENT messages it was to make durable were never
        accepted (their senders get errors, ``fail_replies``), so they leave their queues,
        and deliveries of them that have not left the broker yet are taken back (from this
        batch's output and from every later batch's), their consumers' credit restored.
        The messages it was to remove (acknowledged, committed, purged) are still on disk:
        they go back into their queues (:meth:`_put_back`)."""
        dropped: set[tuple[int, int]] = set()  # (id of the connection, delivery id)
        # No batch deferred until one is written again: the deliveries of a deferred batch
        # leave before it is written, so a store that refuses (a full disk) would have a
        # consumer get messages whose senders are told they failed.
        self._deferral_paused = True
        for e in unstored:
            self._forget_duplicate_id(e.stored)
            if e.state == GONE:
                e.delivery_id = NOT_STORED  # removed meanwhile: that removal puts nothing back
                continue
            consumer = e.consumer
            if e.state == INFLIGHT and consumer is not None:
                e.session.outstanding.pop(e.delivery_id, None)
                consumer.outstanding.discard(e.delivery_id)
                if consumer.prefetch:
                    consumer.credit += 1
                else:
                    consumer.pull += 1
                dropped.add((id(e.session.conn), e.delivery_id))
                self._dirty.add(consumer.queue)
            e.queue.remove(e)
            self.total_bytes -= e.held
            e.delivery_id = NOT_STORED
        self._put_back(removed)
        if dropped:
            out = without_deliveries(out, dropped)
            self._gate.drop_deliveries(dropped)
            self._dispatch_dirty()
        return fail_replies(out, error)

    def _put_back(self, removed: list[Entry]) -> None:
        """Return entries whose removal did not become durable to their queues, at their
        place: an acknowledgement that was not written is not done, so the message is
        delivered again, counted as delivered once more (``jms_redelivered``) if it was."""
        if not removed:
            return
        now = self.clock.now_ms()
        for e in removed:
            q = e.queue
            if e.state != GONE or q.deleted or e.delivery_id == NOT_STORED:
                continue
            count = e.count + 1 if e.consumer is not None else e.count
            back = q.add(e.stored, now, count=count, seq=e.seq, held=e.held)
            self.total_bytes += back.held
            if back.stored.expiration:
                self.arm_reaper(now)
            self._dirty.add(q)
        self._dispatch_dirty()

    def _forget_duplicate_id(self, stored: Stored) -> None:
        """A PERSISTENT message that the store failed to keep: if it carried a duplicate id,
        its destination forgets it, so that a resend is accepted (PSF-09). Rare: decodes."""
        if stored.data is None:
            return
        try:
            view = stored.view()
        except JMSException:
            return
        dup_id = view.get_object_property(c.DUPLICATE_ID_PROPERTY)
        if isinstance(dup_id, str) and view.jms_destination is not None:
            self._dedup.forget(str(view.jms_destination), dup_id)

    def _recover(self) -> None:
        """Rebuild durable subscriptions and persistent messages from the store (REL-09):
        positions, sinks and duplicate ids here, the rest in ``_recover.py``."""
        # A disk store recovers an index only: bodies stay on disk until delivered (PSF-07).
        state = self.store.load(with_data=self.store.synchronous)
        self._reserved = dict(state.sequences)
        self._sinks = dict(state.sinks)
        self._dedup.restore(state.duplicate_ids)
        recover(self, state)


Broker._handlers = {
    c.Connect: Broker._on_connect,
    c.SetClientId: Broker._on_set_client_id,
    c.Disconnect: Broker._on_disconnect,
    c.CreateSession: Broker._on_create_session,
    c.CloseSession: Broker._on_close_session,
    c.CreateConsumer: Broker._on_create_consumer,
    c.CloseConsumer: Broker._on_close_consumer,
    c.Credit: Broker._on_credit,
    c.Pull: Broker._on_pull,
    c.Send: Broker._on_send,
    c.Ack: Broker._on_ack,
    c.Expired: Broker._on_expired,
    c.Release: Broker._on_release,
    c.Nack: Broker._on_nack,
    c.Commit: Broker._on_commit,
    c.Rollback: Broker._on_rollback,
    c.Browse: Broker._on_browse,
    c.CreateTemporary: Broker._on_create_temporary,
    c.DeleteTemporary: Broker._on_delete_temporary,
    c.Unsubscribe: Broker._on_unsubscribe,
    c.Stat: Broker._on_stat,
    c.Purge: Broker._on_purge,
    **HANDLERS,
    **ADMIN_HANDLERS,
}


class _Deferred:
    """A store batch deferred by concurrent store and dispatch (``Broker._defer_batch``): its
    output group in the gate, its operations, and the (destination key, sequence) of the
    messages whose acknowledgement would still cancel their insert, and their entries."""

    __slots__ = ("entries", "group", "keys", "ops", "token")

    def __init__(
        self,
        token: int,
        group: list[Any],
        ops: list[Op],
        keys: set[tuple[str, int]],
        entries: list[Entry],
    ) -> None:
        self.entries = entries
        self.token = token
        self.group = group
        self.ops = ops
        self.keys = keys
