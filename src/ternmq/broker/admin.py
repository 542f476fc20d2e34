"""An operator's operations on a running broker: destinations, messages, subscriptions.

Theory of operation
-------------------
Plain synchronous functions over the :class:`~ternmq.broker.engine.Broker`, called in its
owner context (the server's event loop; the embedded broker's lock), for the HTTP API today
and the native protocol and CLI later. None checks permissions: the caller decides who may
call them (the server asks for ``admin`` on each destination concerned).

Reads (:func:`browse`, :func:`find_message`, :func:`subscriptions`, :func:`connections`)
look at what the engine holds and change nothing. A *change* runs inside
:meth:`Broker.run_admin <ternmq.broker.engine.Broker.run_admin>` (:func:`change`): every
store operation it makes joins one batch, the same store paths the engine's own requests
use (a removed PERSISTENT message is a ``RemoveMessage``, a moved one an ``AddMessage`` on
its new queue in the same batch, so a crash keeps it in exactly one of them), and the
caller hears when that batch is durable. A change validates everything before it touches
anything, so an error leaves the broker as it was.

Messages are named by their ``JMSMessageID`` (``ID:...``), or ``seq:N`` (their position in
the queue) when a producer disabled message ids. Finding one by id looks at each held message
of the queue (a cheap octet search before any decoding): O(depth), an operator's request,
never a per-message path.

A move (the dead-letter queue's "retry") takes the messages of a queue that are not in
flight and match a selector, and publishes each to the target as a new message with its
octets unchanged (headers and properties kept, a fresh delivery count), all or none: if the
target cannot take them all, none moves.
"""

from __future__ import annotations

import heapq
import itertools
import uuid
from collections.abc import Callable, Iterator
from typing import TypeVar

from ternmq.broker._ports import AdminEngine
from ternmq.broker._queue import READY, SCHEDULED, Entry, MessageQueue
from ternmq.broker._records import BrokerConnection, Subscription
from ternmq.destination import Destination, destination
from ternmq.errors import (
    IllegalStateException,
    InvalidDestinationException,
    JMSException,
    TransactionRolledBackException,
)
from ternmq.message import Message
from ternmq.message.codec import decode_message, encode_message
from ternmq.protocol import commands as c
from ternmq.selector import Selector, compile_selector

__all__ = [
    "Conflict",
    "NotFound",
    "browse",
    "change",
    "create_destination",
    "delete_destination",
    "delete_message",
    "delete_subscription",
    "existing",
    "find_message",
    "find_subscription",
    "holders",
    "message_id",
    "move",
    "parse",
    "purge",
    "send",
    "subscriptions",
]

R = TypeVar("R")
MAX_PAGE = 500  # messages one browse page may hold


class NotFound(InvalidDestinationException):
    """The destination, message or subscription named does not exist."""


class Conflict(IllegalStateException):
    """The change conflicts with the broker's state: it exists, or is in use."""


def change(broker: AdminEngine, fn: Callable[[], R], done: Callable[[c.Command], None]) -> R:
    """Run the change ``fn`` on ``broker``; ``done(Ok | Error)`` once its store batch is
    durable (see the module doc). Returns what ``fn`` returns.

    Raises:
        whatever ``fn`` raises (nothing changed then).
    """
    return broker.run_admin(fn, done)


# ---- destinations ---------------------------------------------------------------------------
def parse(text: str) -> Destination:
    """The destination named ``text`` (``queue://NAME`` or ``topic://NAME``).

    Raises:
        InvalidDestinationException: ``text`` is not a destination name.
    """
    try:
        return destination(text)
    except JMSException as exc:
        raise InvalidDestinationException(
            f"{text!r} is not a destination: name it queue://NAME or topic://NAME ({exc})"
        ) from exc


def existing(broker: AdminEngine, dest: Destination) -> Destination:
    """``dest`` if the broker has it.

    Raises:
        NotFound: it does not exist.
    """
    if dest not in broker.queues and dest not in broker.topics:
        raise NotFound(f"{dest} does not exist on this broker")
    return dest


def _queue(broker: AdminEngine, dest: Destination, what: str) -> MessageQueue:
    existing(broker, dest)
    if dest.is_topic:
        raise InvalidDestinationException(
            f"{dest} is a topic: {what} needs a queue (a topic's messages live in its "
            "subscriptions)"
        )
    return broker.queues[dest]


def create_destination(broker: AdminEngine, dest: Destination) -> None:
    """Create queue or topic ``dest`` (a change: run it with :func:`change`). A queue that
    holds no persistent message is not remembered across a restart unless the broker config
    declares it (as with auto-created destinations).

    Raises:
        Conflict: it exists.
        InvalidDestinationException: ``dest`` is temporary.
    """
    if dest.is_temporary:
        raise InvalidDestinationException(
            f"{dest} is temporary: only a connection creates its temporary destinations"
        )
    if dest in broker.queues or dest in broker.topics:
        raise Conflict(f"{dest} exists already")
    if dest.is_topic:
        broker.topics[dest] = []
    else:
        broker.new_queue(dest)


def holders(broker: AdminEngine, dest: Destination) -> list[BrokerConnection]:
    """The connections with a consumer on ``dest`` (on one of its subscriptions for a
    topic), each once."""
    if dest.is_topic:
        queues = [sub.queue for sub in broker.topics.get(dest, [])]
    else:
        q = broker.queues.get(dest)
        queues = [q] if q is not None else []
    seen: dict[str, BrokerConnection] = {}
    for q in queues:
        for consumer in q.consumers:
            conn = consumer.session.conn
            seen.setdefault(conn.id, conn)
    return list(seen.values())


def delete_destination(broker: AdminEngine, dest: Destination) -> int:
    """Delete ``dest`` with every message it holds (a change); persistent messages and durable
    subscriptions leave the store. Returns how many messages went.

    Raises:
        NotFound: it does not exist.
        Conflict: it has consumers (close them, or their connections, first).
        InvalidDestinationException: it is temporary.
    """
    existing(broker, dest)
    if dest.is_temporary:
        raise InvalidDestinationException(
            f"{dest} is temporary: it goes with the connection that created it"
        )
    active = holders(broker, dest)
    if active:
        raise Conflict(
            f"{dest} has consumers on {len(active)} connection(s): close them first, or "
            "delete with force (their connections are closed)"
        )
    if dest.is_topic:
        held = sum(sub.queue.depth for sub in broker.topics.get(dest, []))
        broker.delete_topic(dest)
        return held
    return broker.delete_queue(dest)


def purge(broker: AdminEngine, dest: Destination) -> int:
    """Drop every message of queue ``dest`` that is not in flight (a change); returns how
    many.

    Raises:
        NotFound: it does not exist.
        InvalidDestinationException: it is a topic.
    """
    return broker.purge_queue(_queue(broker, dest, "purging"))


# ---- messages -------------------------------------------------------------------------------
def _ordered(q: MessageQueue) -> Iterator[Entry]:
    """The visible entries (ready or in flight) in the order a consumer would get them,
    lazily: sorting costs only the entries in flight, not the whole queue."""
    ready = [iter(od.values()) for od in reversed(q.ready_buckets())]  # priority 9..0
    inflight = sorted(q.inflight.values(), key=lambda e: (-e.stored.priority, e.seq))
    return heapq.merge(*ready, inflight, key=lambda e: (-e.stored.priority, e.seq))


def _selector(text: str | None) -> Selector | None:
    """The compiled selector (InvalidSelectorException if it does not parse)."""
    return compile_selector(text or None)


def browse(
    broker: AdminEngine, dest: Destination, selector: str | None, offset: int, limit: int
) -> tuple[list[tuple[Entry, Message]], bool]:
    """One page of queue ``dest``'s visible messages that match ``selector``: those after
    the first ``offset`` matches, at most ``limit`` (1..:data:`MAX_PAGE`), in delivery order,
    each with its decoded message; and whether more follow. Expired messages are skipped.

    Raises:
        NotFound: the queue does not exist.
        InvalidDestinationException: it is a topic.
        InvalidSelectorException: the selector does not parse.
        JMSException: ``offset`` or ``limit`` is out of range.
    """
    q = _queue(broker, dest, "browsing")
    if offset < 0 or not 1 <= limit <= MAX_PAGE:
        raise JMSException(f"give offset >= 0 and limit 1..{MAX_PAGE}")
    sel = _selector(selector)
    now = broker.clock.now_ms()
    page: list[tuple[Entry, Message]] = []
    skipped = 0
    for e in _ordered(q):
        st = e.stored
        if st.expiration and st.expiration <= now:
            continue
        if sel is not None and not broker.selects(sel, e):
            continue
        if skipped < offset:
            skipped += 1
            continue
        if len(page) == limit:
            return page, True
        page.append((e, decode_message(broker.data(e))))
    return page, False


def message_id(e: Entry, msg: Message) -> str:
    """The API's name of a message: its JMSMessageID, or ``seq:N``."""
    return msg.jms_message_id or f"seq:{e.seq}"


def _held(q: MessageQueue) -> Iterator[Entry]:
    """Every entry ``q`` holds: ready, in flight, scheduled."""
    return itertools.chain(
        (e for od in q.ready_buckets() for e in od.values()),
        q.inflight.values(),
        q.scheduled_entries(),
    )


def find_message(broker: AdminEngine, dest: Destination, mid: str) -> tuple[Entry, Message]:
    """The entry and decoded message of queue ``dest`` named ``mid`` (see the module doc).

    Raises:
        NotFound: the queue or the message does not exist.
        InvalidDestinationException: it is a topic.
    """
    q = _queue(broker, dest, "reading a message")
    if mid.startswith("seq:") and mid[4:].isdigit():
        seq = int(mid[4:])
        for e in _held(q):
            if e.seq == seq:
                return e, decode_message(broker.data(e))
    else:
        needle = mid.encode("utf-8")
        for e in _held(q):
            data = broker.data(e)
            if needle in data:
                msg = decode_message(data)
                if msg.jms_message_id == mid:
                    return e, msg
    raise NotFound(f"no message {mid} in {dest}")


def delete_message(broker: AdminEngine, dest: Destination, mid: str) -> None:
    """Drop one message of queue ``dest`` (a change; a persistent one leaves the store).

    Raises:
        NotFound: the queue or the message does not exist.
        Conflict: the message is in flight to a consumer.
        InvalidDestinationException: it is a topic.
    """
    e, _ = find_message(broker, dest, mid)
    if e.state not in (READY, SCHEDULED):
        raise Conflict(
            f"message {mid} is in flight to a consumer: wait until it is acknowledged or comes back"
        )
    broker.finish(e)


def send(broker: AdminEngine, user: str | None, dest: Destination, msg: Message) -> str:
    """Publish ``msg`` to ``dest`` (a change) as user ``user``, with a new JMSMessageID, its
    timestamp and JMSDestination set here (its delivery mode, priority, expiration and other
    headers are the caller's). Returns its JMSMessageID.

    Raises:
        NotFound: ``dest`` does not exist (an operator's send creates nothing).
        ResourceAllocationException: ``dest`` is full, or the message too large.
        JMSException: a header is out of range.
    """
    existing(broker, dest)
    msg._message_id = f"ID:admin-{uuid.uuid4().hex}"
    msg._timestamp = broker.clock.now_ms()
    msg._destination = dest
    req = c.Send(
        session_id=0,
        destination=str(dest),
        message=encode_message(msg),
        persistent=msg.jms_delivery_mode == 2,
        priority=msg.jms_priority,
        expiration=msg.jms_expiration,
        delivery_time=msg.jms_delivery_time,
    )
    operator = _operator(broker, user)
    broker.check_send(operator, req)
    try:
        broker.publish_all(operator, [(dest, req)], "the message was not sent")
    except TransactionRolledBackException as exc:
        cause = exc.__cause__
        raise cause if isinstance(cause, JMSException) else exc from None
    return msg._message_id


def move(
    broker: AdminEngine,
    user: str | None,
    source: Destination,
    target: Destination,
    selector: str | None,
) -> int:
    """Move the messages of queue ``source`` that are not in flight and match ``selector``
    (every one for None) to queue ``target`` (a change; see the module doc). Returns how
    many moved.

    Raises:
        NotFound: a queue does not exist.
        InvalidDestinationException: one is a topic, or they are the same queue.
        InvalidSelectorException: the selector does not parse.
        TransactionRolledBackException: ``target`` cannot take them all (none moved).
    """
    q = _queue(broker, source, "moving")
    _queue(broker, target, "moving")
    if source == target:
        raise InvalidDestinationException(f"{source} is both source and target of the move")
    sel = _selector(selector)
    now = broker.clock.now_ms()
    picked: list[Entry] = []
    for e in itertools.chain(
        (e for od in q.ready_buckets() for e in od.values()), q.scheduled_entries()
    ):
        st = e.stored
        if st.expiration and st.expiration <= now:
            continue
        if sel is None or broker.selects(sel, e):
            picked.append(e)
    picked.sort(key=lambda e: e.seq)
    target_text = str(target)
    sends = [
        (
            target,
            c.Send(
                session_id=0,
                destination=target_text,
                message=broker.data(e),
                persistent=e.stored.persistent,
                priority=e.stored.priority,
                expiration=e.stored.expiration,
                delivery_time=e.stored.delivery_time,
                group_id=e.stored.group_id,
                group_seq=e.stored.group_seq,
            ),
        )
        for e in picked
    ]
    operator = _operator(broker, user)
    if sends:
        broker.check_send(operator, sends[0][1])  # the permission and the target, once
    broker.publish_all(operator, sends, f"nothing was moved to {target}")
    for e in picked:
        broker.finish(e)
    return len(picked)


def _operator(broker: AdminEngine, user: str | None) -> BrokerConnection:
    """The connection an operator's messages come from: not registered with the broker (it
    has no socket), acting as ``user``."""
    conn = BrokerConnection(broker, "ID:operator", _nowhere)
    conn.user = user
    return conn


def _nowhere(cmd: c.Command) -> None:
    """The operator connection's output: it has no consumer, so nothing is ever sent."""


# ---- subscriptions ---------------------------------------------------------------------------
def subscriptions(broker: AdminEngine) -> list[Subscription]:
    """Every subscription of every topic, by topic and name."""
    subs = [sub for topic_subs in broker.topics.values() for sub in topic_subs]
    subs.sort(key=lambda s: (str(s.topic), s.name))
    return subs


def find_subscription(broker: AdminEngine, sid: str) -> Subscription:
    """The subscription whose id (its queue's key) is ``sid``.

    Raises:
        NotFound: there is none.
    """
    for topic_subs in broker.topics.values():
        for sub in topic_subs:
            if sub.queue.key == sid:
                return sub
    raise NotFound(f"no subscription {sid!r} on this broker")


def delete_subscription(broker: AdminEngine, sid: str) -> Subscription:
    """Delete durable subscription ``sid`` and its messages (a change). Returns it.

    Raises:
        NotFound: there is none.
        Conflict: it has an active consumer, or is not durable (it goes with its consumer).
    """
    sub = find_subscription(broker, sid)
    if not sub.durable:
        raise Conflict(
            f"subscription {sid!r} is not durable: it ends when its consumer closes (close "
            "the connection instead)"
        )
    if sub.queue.consumers:
        raise Conflict(f"durable subscription {sub.name!r} has an active consumer: close it first")
    broker.delete_subscription(sub)
    return sub
