"""The commands a client and a broker exchange (sans-IO, typed values).

Theory of operation
-------------------
A client drives the broker with *requests*; each request carries a ``corr`` number and is
answered by exactly one ``Ok``/``Error`` (or a typed reply) with the same ``corr``. The broker
also pushes unsolicited *events* (``Deliver``, ``ConnectionFailed``). Everything a request
causes is emitted before its reply: a ``Pull`` that finds a message emits the ``Deliver`` first
and the ``Ok`` after it, so a client that waits for the reply then looks at its buffer sees it.

The embedded ``vm://`` transport hands these values to the broker without sockets; the network
transport sends them as frames (``frames.py``). Both therefore share every semantic line.

Delivery bookkeeping (JMS 2.0 §4.4.11, §4.4.13, §3.5.11):
- every ``Deliver`` has a connection-wide ``delivery_id``;
- the client reports, on ``Ack``, which deliveries the application consumed and acknowledged;
- on rollback / recover / consumer close the client sends ``Release`` with the ids that were
  *handed to the application*; the broker returns those with ``JMSXDeliveryCount`` + 1 and every
  other outstanding delivery of that scope (merely prefetched) without counting it, and answers
  with the released ids so that the client drops them from its buffers.
"""

from __future__ import annotations

from typing import Literal

import msgspec

__all__ = [
    "AdminMessage",
    "BrowseMessages",
    "CloseConnection",
    "ConnectionInfo",
    "ConnectionList",
    "CreateDestination",
    "DeleteDestination",
    "DeleteMessage",
    "DeleteSubscription",
    "GetMessage",
    "ListConnections",
    "ListSubscriptions",
    "MessagePage",
    "MoveMessages",
    "SubscriptionInfo",
    "SubscriptionList",
    "AbortStaged",
    "Ack",
    "AckUpto",
    "Bounds",
    "Browse",
    "BrowseResult",
    "CloseConsumer",
    "CloseSession",
    "Command",
    "Commit",
    "CommitStaged",
    "Connect",
    "Connected",
    "ConnectionFailed",
    "CreateConsumer",
    "CreateSession",
    "CreateTemporary",
    "Credit",
    "DeleteTemporary",
    "Deliver",
    "DUPLICATE_ID_PROPERTY",
    "DestinationStat",
    "Disconnect",
    "Error",
    "Event",
    "Expired",
    "Ok",
    "Pull",
    "GetBounds",
    "Purge",
    "RangeResult",
    "ReadRange",
    "Nack",
    "Release",
    "Released",
    "Reply",
    "Request",
    "Rollback",
    "Send",
    "SendFailed",
    "SetClientId",
    "Stage",
    "StagedSend",
    "Stat",
    "StatResult",
    "StagedResult",
    "SubscriptionStat",
    "Unsubscribe",
]

SubscriptionKind = Literal["none", "shared", "durable", "shared_durable"]
#: The String message property naming a send for duplicate detection (PSF-09); a client
#: copies its value into ``Send.duplicate_id``.
DUPLICATE_ID_PROPERTY = "JMS_TernMQ_DuplicateID"


# Every Struct here is declared ``gc=False`` (subclasses inherit it): the cyclic garbage
# collector does not track its instances. That is safe because a command can never be part of
# a reference cycle: every one is frozen, and its fields hold only ints, strs, bytes, tuples
# and lists of those or of other commands, never anything that could refer back to it. msgspec
# already leaves a command of scalar fields untracked (Send, Deliver, Ok); the option spares
# the collector the ones with a list (Ack, Commit, Release...): half the young-generation
# collections their allocation causes, and ~25-30 ns a build or decode.
class _Request(msgspec.Struct, frozen=True, kw_only=True, array_like=True, gc=False):
    corr: int = 0


class Connect(_Request, frozen=True, kw_only=True, tag=True):
    """Open a connection. ``client_id`` may also be set later with ``SetClientId``."""

    user: str | None = None
    password: str | None = None
    client_id: str | None = None


class SetClientId(_Request, frozen=True, kw_only=True, tag=True):
    """Claim a client identifier for this connection (CONN-06..CONN-08)."""

    client_id: str


class Disconnect(_Request, frozen=True, kw_only=True, tag=True):
    """Close the connection: every session is closed as by ``CloseSession``."""


class CreateSession(_Request, frozen=True, kw_only=True, tag=True):
    """Open a session. ``transacted`` sessions buffer sends and acks until ``Commit``."""

    session_id: int
    transacted: bool = False


class CloseSession(_Request, frozen=True, kw_only=True, tag=True):
    """Close a session: its consumers close, its transaction rolls back and its
    unacknowledged deliveries return (those in ``delivered`` counted as deliveries)."""

    session_id: int
    delivered: list[int] = msgspec.field(default_factory=list)


class CreateConsumer(_Request, frozen=True, kw_only=True, tag=True):
    """Create a consumer (and, for topics, its subscription).

    ``acked_when_sent``: the consumer counts a message as consumed once the broker sends it
    (STOMP's ``ack:auto``; its deliveries are still acknowledged by an ``Ack``). A PERSISTENT
    message it takes while its insert is not yet written, when nothing else is to be written
    or waited for, is then never written at all: the broker's concurrent store and dispatch."""

    session_id: int
    consumer_id: int
    destination: str
    selector: str | None = None
    no_local: bool = False
    kind: SubscriptionKind = "none"
    subscription: str | None = None
    prefetch: int = 100
    credit: int | None = None
    acked_when_sent: bool = False


class CloseConsumer(_Request, frozen=True, kw_only=True, tag=True):
    """Close a consumer. Its outstanding deliveries that are not in ``delivered`` (never
    handed to the application) go back uncounted; handed-over, unacknowledged ones stay with
    the session (acknowledged, committed, rolled back or recovered with it)."""

    consumer_id: int
    delivered: list[int] = msgspec.field(default_factory=list)


class Credit(_Request, frozen=True, kw_only=True, tag=True):
    """Grant a consumer ``messages`` more prefetch credit."""

    consumer_id: int
    messages: int


class Pull(_Request, frozen=True, kw_only=True, tag=True):
    """For a consumer with prefetch 0: ask for up to ``messages`` (0 cancels an open pull).
    With ``wait`` false a message is delivered only if one is available now."""

    consumer_id: int
    messages: int = 1
    wait: bool = True


class Send(_Request, frozen=True, kw_only=True, tag=True):
    """Publish one encoded message. The header values the broker routes by are repeated
    here so that it need not decode the body to route, order, expire or schedule.

    ``duplicate_id`` repeats the message's ``JMS_TernMQ_DuplicateID`` property
    (:data:`DUPLICATE_ID_PROPERTY`, PSF-09): a destination that already accepted that id
    answers ``Ok`` without enqueuing the message.

    ``quiet`` (with ``corr`` 0): answered only if refused, by a :class:`SendFailed` event;
    success sends nothing. A client pipelining NON_PERSISTENT sends makes most of them quiet
    and every few dozenth an ordinary request, whose reply tells that the quiet ones before it
    were taken (a connection's requests are handled in order) and paces the sender.

    ``duplicate_id`` and ``quiet`` are the last fields, so a peer that predates them sends
    and reads the same arrays (msgspec ignores extra trailing elements)."""

    session_id: int
    destination: str
    message: bytes
    persistent: bool = True
    priority: int = 4
    expiration: int = 0
    delivery_time: int = 0
    group_id: str | None = None
    group_seq: int = 0
    duplicate_id: str | None = None
    quiet: bool = False


class Ack(_Request, frozen=True, kw_only=True, tag=True):
    """Acknowledge deliveries (in a transacted session: consume them in the open transaction)."""

    session_id: int
    delivery_ids: list[int]


class Expired(_Request, frozen=True, kw_only=True, tag=True):
    """Deliveries the client found expired before hand-over (REL-23): not a delivery attempt."""

    session_id: int
    delivery_ids: list[int]


class Release(_Request, frozen=True, kw_only=True, tag=True):
    """Return every outstanding delivery of a session (recover / rollback). ``delivered``
    lists the ids that were handed to the application; they count as a delivery attempt."""

    session_id: int
    delivered: list[int] = msgspec.field(default_factory=list)


class Nack(_Request, frozen=True, kw_only=True, tag=True):
    """Return some outstanding deliveries of a session as failed delivery attempts (a STOMP
    NACK): each counts towards ``max_delivery_attempts`` (then the dead-letter queue) and
    comes back per the redelivery policy; the session's other deliveries are untouched.
    Replied to with ``Released`` listing the ids taken back (ids no longer outstanding are
    skipped). With ``dead_letter`` the deliveries go to the dead-letter queue at once, each
    counted as one more attempt (an OpenWire client's poison acknowledgement: it gave up
    after its own redeliveries); the last field, so older peers' arrays still decode."""

    session_id: int
    delivery_ids: list[int]
    dead_letter: bool = False


class Commit(_Request, frozen=True, kw_only=True, tag=True):
    """Commit the session's transaction: its sends become visible and the deliveries in
    ``delivered`` (consumed in the transaction) are acknowledged, atomically. A delivery id
    is connection-wide: one of another session of the connection is acknowledged too (the
    OpenWire gateway gives each consumer a session of its own, and a transaction spans
    them)."""

    session_id: int
    delivered: list[int] = msgspec.field(default_factory=list)


class Rollback(_Request, frozen=True, kw_only=True, tag=True):
    """Roll back the session's transaction and release its deliveries (as ``Release``)."""

    session_id: int
    delivered: list[int] = msgspec.field(default_factory=list)


class Browse(_Request, frozen=True, kw_only=True, tag=True):
    """Read up to ``limit`` messages of a queue after position ``after`` without consuming."""

    destination: str
    selector: str | None = None
    after: tuple[int, int] | None = None
    limit: int = 100


class CreateTemporary(_Request, frozen=True, kw_only=True, tag=True):
    """Create a temporary queue or topic owned by this connection. ``name``: re-create the
    one of that name (a client that reconnected after a failover); refused while another
    live connection owns it."""

    topic: bool = False
    name: str | None = None


class DeleteTemporary(_Request, frozen=True, kw_only=True, tag=True):
    """Delete a temporary destination of this connection."""

    destination: str


class Unsubscribe(_Request, frozen=True, kw_only=True, tag=True):
    """Delete the durable subscription ``(client_id, name)``."""

    session_id: int
    name: str


class Stat(_Request, frozen=True, kw_only=True, tag=True):
    """Admin: report the state of one destination (``queue://NAME``, ``topic://NAME``) or,
    with ``destination`` None, of every destination. Answered by ``StatResult``."""

    destination: str | None = None


class Purge(_Request, frozen=True, kw_only=True, tag=True):
    """Admin: remove every message of a queue that is not in flight (ready or scheduled).
    Answered by ``Ok`` whose ``value`` is the number removed, as decimal text."""

    destination: str


# ---- the operator's requests (broker/admin.py; each needs the ``admin`` permission) ----------
# Messages are named by their JMSMessageID, or ``seq:N`` when a producer disabled ids.
# Connections and subscriptions by the ids their lists show. Reads change nothing; a change is
# answered once its store batch is durable.


class CreateDestination(_Request, frozen=True, kw_only=True, tag=True):
    """Admin: create queue or topic ``destination``. Answered by ``Ok``."""

    destination: str


class DeleteDestination(_Request, frozen=True, kw_only=True, tag=True):
    """Admin: delete ``destination`` with its messages (and a topic's subscriptions); refused
    while it has consumers unless ``force`` (their connections are closed). Answered by
    ``Ok`` whose ``value`` is the number of messages it held, as decimal text."""

    destination: str
    force: bool = False


class BrowseMessages(_Request, frozen=True, kw_only=True, tag=True):
    """Admin: one page of a queue's messages (ready, scheduled or in flight) that match
    ``selector``, after the first ``offset`` matches, at most ``limit``. Answered by
    ``MessagePage`` (which may hold fewer, to bound its size: ``more`` then says so)."""

    destination: str
    selector: str | None = None
    offset: int = 0
    limit: int = 50


class GetMessage(_Request, frozen=True, kw_only=True, tag=True):
    """Admin: the message ``message_id`` of a queue. Answered by ``MessagePage`` (one)."""

    destination: str
    message_id: str


class DeleteMessage(_Request, frozen=True, kw_only=True, tag=True):
    """Admin: drop the message ``message_id`` of a queue (not one in flight). ``Ok``."""

    destination: str
    message_id: str


class MoveMessages(_Request, frozen=True, kw_only=True, tag=True):
    """Admin: move the messages of queue ``destination`` that are not in flight and match
    ``selector`` (all for None) to queue ``target``, all or none. Answered by ``Ok`` whose
    ``value`` is the number moved, as decimal text."""

    destination: str
    target: str
    selector: str | None = None


class ListConnections(_Request, frozen=True, kw_only=True, tag=True):
    """Admin (on every destination): the open connections. Answered by ``ConnectionList``."""


class CloseConnection(_Request, frozen=True, kw_only=True, tag=True):
    """Admin (on every destination): close connection ``connection_id`` (its
    unacknowledged messages go back). Answered by ``Ok``."""

    connection_id: str


class ListSubscriptions(_Request, frozen=True, kw_only=True, tag=True):
    """Admin: the subscriptions of the topics the user may administer. Answered by
    ``SubscriptionList``."""


class DeleteSubscription(_Request, frozen=True, kw_only=True, tag=True):
    """Admin: delete durable subscription ``subscription_id`` (one without an active
    consumer) and its messages. Answered by ``Ok``."""

    subscription_id: str


# ---- sequence-number access (log reads, cumulative ack, staged publish) --------------------
# A queue or a durable subscription is also a log: every message it takes gets the next
# sequence number of that destination (monotonic across restarts, not dense). These requests
# read it by position without consuming, acknowledge everything up to a position, and publish
# in two phases (staged, then committed once per (sink, batch)). See docs/protocol.md.


class GetBounds(_Request, frozen=True, kw_only=True, tag=True):
    """Positions of a queue (or of the durable subscription ``subscription`` of a topic, for
    this connection's client id). Answered by ``Bounds``. With ``after`` and ``max_messages``
    the ``latest`` returned is at most the position of the ``max_messages``-th held message
    after ``after`` (admission control)."""

    destination: str
    subscription: str | None = None
    after: int | None = None
    max_messages: int | None = None


class ReadRange(_Request, frozen=True, kw_only=True, tag=True):
    """Read, without consuming, up to ``limit`` messages (and about ``max_bytes``) held with
    ``after < seq <= upto``, in sequence order. Answered by ``RangeResult``."""

    destination: str
    after: int
    upto: int
    subscription: str | None = None
    selector: str | None = None
    limit: int = 10_000
    max_bytes: int = 4 * 1024 * 1024


class AckUpto(_Request, frozen=True, kw_only=True, tag=True):
    """Acknowledge every held message with ``seq <= upto`` (matching ``selector`` if given)
    that is not in flight to a consumer. Answered by ``Ok`` whose value is the count removed."""

    destination: str
    upto: int
    subscription: str | None = None
    selector: str | None = None


class StagedSend(msgspec.Struct, frozen=True, kw_only=True, array_like=True, gc=False):
    """One message of a ``Stage`` request (the routing fields of ``Send``). Not tracked by
    the garbage collector (scalar fields only): a broker holds staged messages by the
    hundred thousand until their batch commits."""

    destination: str
    message: bytes
    persistent: bool = True
    priority: int = 4
    expiration: int = 0
    delivery_time: int = 0
    group_id: str | None = None
    group_seq: int = 0


class Stage(_Request, frozen=True, kw_only=True, tag=True):
    """Add messages to staged transaction ``txid`` of ``(sink_id, batch_id)``: durable (when
    persistent) and invisible until ``CommitStaged``. Answered by ``Ok`` once durable."""

    sink_id: str
    batch_id: int
    txid: str
    messages: list[StagedSend] = msgspec.field(default_factory=list)


class CommitStaged(_Request, frozen=True, kw_only=True, tag=True):
    """Publish the staged transactions ``txids`` atomically and record ``(sink_id,
    batch_id)``; a batch id at or below the sink's last committed one publishes nothing.
    Staged transactions of the sink with a batch id at or below ``batch_id`` that are not
    listed (orphans of failed attempts) are dropped. Answered by ``StagedResult``."""

    sink_id: str
    batch_id: int
    txids: list[str] = msgspec.field(default_factory=list)


class AbortStaged(_Request, frozen=True, kw_only=True, tag=True):
    """Drop staged transactions (unknown ids are ignored). Answered by ``Ok``."""

    txids: list[str] = msgspec.field(default_factory=list)


# ---- replies -------------------------------------------------------------------------


class Ok(msgspec.Struct, frozen=True, kw_only=True, tag=True, array_like=True, gc=False):
    """Success. ``value`` carries a request-specific result (e.g. a temporary name)."""

    corr: int = 0
    value: str | None = None


class Error(msgspec.Struct, frozen=True, kw_only=True, tag=True, array_like=True, gc=False):
    """Failure: ``kind`` is the JMS exception class name, ``message`` its text."""

    corr: int = 0
    kind: str = "JMSException"
    message: str = ""


class Connected(msgspec.Struct, frozen=True, kw_only=True, tag=True, array_like=True, gc=False):
    """Reply to ``Connect``."""

    corr: int = 0
    connection_id: str
    provider_version: str


class Released(msgspec.Struct, frozen=True, kw_only=True, tag=True, array_like=True, gc=False):
    """Reply to ``Release``/``Rollback``/``CloseSession``: the delivery ids taken back."""

    corr: int = 0
    delivery_ids: list[int] = msgspec.field(default_factory=list)


class BrowseResult(msgspec.Struct, frozen=True, kw_only=True, tag=True, array_like=True, gc=False):
    """Reply to ``Browse``: encoded messages and the position to continue after."""

    corr: int = 0
    messages: list[bytes] = msgspec.field(default_factory=list)
    after: tuple[int, int] | None = None
    done: bool = True


class SubscriptionStat(msgspec.Struct, frozen=True, kw_only=True, array_like=True, gc=False):
    """One subscription of a topic in a ``StatResult``. ``name`` is the subscription name
    (``CLIENT_ID:NAME`` when it has a client id; an internal name for a plain consumer)."""

    name: str
    kind: SubscriptionKind
    depth: int = 0
    in_flight: int = 0
    consumers: int = 0


class DestinationStat(msgspec.Struct, frozen=True, kw_only=True, array_like=True, gc=False):
    """The state of one destination in a ``StatResult``.

    ``depth`` counts messages held (ready, scheduled and in flight); ``memory_bytes`` the message
    bytes held in memory and ``paged`` the messages memory pressure pushed out to disk (those
    recovered at start-up and not read back yet are on disk only too, but not paged). For a
    topic the numbers are totals over its ``subscriptions``. ``duplicates`` counts the sends the
    destination refused as duplicates (PSF-09) since the broker started.

    Counted since the broker started: ``enqueued`` (messages taken, recovered ones
    included), ``dequeued`` (messages that left for good: acknowledged, expired,
    dead-lettered or purged), ``expired`` (PSF-05), ``dead_lettered`` (after
    ``max_delivery_attempts``, PSF-01) and ``redelivered`` (deliveries the application saw
    that came back for redelivery: rollback, recover, a closed session or a lost connection).
    The last three were added later, with defaults, so older encodings still decode.
    """

    name: str
    kind: Literal["queue", "topic", "temp-queue", "temp-topic"]
    depth: int = 0
    in_flight: int = 0
    scheduled: int = 0
    consumers: int = 0
    enqueued: int = 0
    dequeued: int = 0
    memory_bytes: int = 0
    paged: int = 0
    subscriptions: list[SubscriptionStat] = msgspec.field(default_factory=list)
    duplicates: int = 0
    expired: int = 0
    dead_lettered: int = 0
    redelivered: int = 0


class StatResult(msgspec.Struct, frozen=True, kw_only=True, tag=True, array_like=True, gc=False):
    """Reply to ``Stat``: one entry per destination, sorted by name; ``hidden`` counts the
    destinations left out because the user may not administer them."""

    corr: int = 0
    destinations: list[DestinationStat] = msgspec.field(default_factory=list)
    hidden: int = 0


class AdminMessage(msgspec.Struct, frozen=True, kw_only=True, array_like=True, gc=False):
    """One message of a ``MessagePage``: its name (``id``), ``state`` (``ready``,
    ``scheduled`` or ``in_flight``), deliveries so far, and its encoding."""

    id: str
    state: Literal["ready", "scheduled", "in_flight"]
    delivery_count: int
    message: bytes


class MessagePage(msgspec.Struct, frozen=True, kw_only=True, tag=True, array_like=True, gc=False):
    """Reply to ``BrowseMessages`` and ``GetMessage``; ``more``: further matches follow."""

    corr: int = 0
    messages: list[AdminMessage] = msgspec.field(default_factory=list)
    more: bool = False


class ConnectionInfo(msgspec.Struct, frozen=True, kw_only=True, array_like=True, gc=False):
    """One open connection in a ``ConnectionList``: its ``protocol`` (``native``, or ``vm``
    for an in-process one), peer ``address``, ``connected_at`` in epoch ms."""

    id: str
    protocol: str
    user: str | None = None
    client_id: str | None = None
    address: str | None = None
    connected_at: int = 0
    sessions: int = 0
    consumers: int = 0


class ConnectionList(
    msgspec.Struct, frozen=True, kw_only=True, tag=True, array_like=True, gc=False
):
    """Reply to ``ListConnections``, by connection number."""

    corr: int = 0
    connections: list[ConnectionInfo] = msgspec.field(default_factory=list)


class SubscriptionInfo(msgspec.Struct, frozen=True, kw_only=True, array_like=True, gc=False):
    """One subscription in a ``SubscriptionList``; ``name`` is None for a plain consumer's."""

    id: str
    topic: str
    name: str | None = None
    client_id: str | None = None
    durable: bool = False
    shared: bool = False
    selector: str | None = None
    consumers: int = 0
    depth: int = 0


class SubscriptionList(
    msgspec.Struct, frozen=True, kw_only=True, tag=True, array_like=True, gc=False
):
    """Reply to ``ListSubscriptions``, by topic and name; ``hidden`` counts those of topics
    the user may not administer (left out)."""

    corr: int = 0
    subscriptions: list[SubscriptionInfo] = msgspec.field(default_factory=list)
    hidden: int = 0


class Bounds(msgspec.Struct, frozen=True, kw_only=True, tag=True, array_like=True, gc=False):
    """Reply to ``GetBounds``: reading ``(earliest, latest]`` gives every message held now
    that a reader may see (a scheduled message caps ``latest`` below itself until due)."""

    corr: int = 0
    earliest: int = 0
    latest: int = 0


class RangeResult(msgspec.Struct, frozen=True, kw_only=True, tag=True, array_like=True, gc=False):
    """Reply to ``ReadRange``: parallel lists (sequence number, JMSXDeliveryCount, encoded
    message), and the position to continue after (``done`` when ``upto`` was reached)."""

    corr: int = 0
    seqs: list[int] = msgspec.field(default_factory=list)
    counts: list[int] = msgspec.field(default_factory=list)
    messages: list[bytes] = msgspec.field(default_factory=list)
    after: int = 0
    done: bool = True


class StagedResult(msgspec.Struct, frozen=True, kw_only=True, tag=True, array_like=True, gc=False):
    """Reply to ``CommitStaged``: messages published, and whether the batch had been
    committed before (then nothing was published)."""

    corr: int = 0
    published: int = 0
    duplicate: bool = False


# ---- events (broker -> client, unsolicited) ---------------------------------------------


class Deliver(msgspec.Struct, frozen=True, kw_only=True, tag=True, array_like=True, gc=False):
    """A message for a consumer. ``delivery_count`` is the JMSXDeliveryCount to show."""

    consumer_id: int
    delivery_id: int
    message: bytes
    delivery_count: int = 1
    expiration: int = 0


class ConnectionFailed(
    msgspec.Struct, frozen=True, kw_only=True, tag=True, array_like=True, gc=False
):
    """The broker dropped the connection (shutdown, failure)."""

    message: str


class SendFailed(msgspec.Struct, frozen=True, kw_only=True, tag=True, array_like=True, gc=False):
    """A quiet ``Send`` of session ``session_id`` to ``destination`` was refused: ``kind`` is
    the JMS exception class name, ``message`` its text (as in ``Error``)."""

    session_id: int
    destination: str
    kind: str = "JMSException"
    message: str = ""


Request = (
    Connect
    | SetClientId
    | Disconnect
    | CreateSession
    | CloseSession
    | CreateConsumer
    | CloseConsumer
    | Credit
    | Pull
    | Send
    | Ack
    | Expired
    | Release
    | Nack
    | Commit
    | Rollback
    | Browse
    | CreateTemporary
    | DeleteTemporary
    | Unsubscribe
    | Stat
    | Purge
    | GetBounds
    | ReadRange
    | AckUpto
    | Stage
    | CommitStaged
    | AbortStaged
    | CreateDestination
    | DeleteDestination
    | BrowseMessages
    | GetMessage
    | DeleteMessage
    | MoveMessages
    | ListConnections
    | CloseConnection
    | ListSubscriptions
    | DeleteSubscription
)
Reply = (
    Ok
    | Error
    | Connected
    | Released
    | BrowseResult
    | StatResult
    | Bounds
    | RangeResult
    | StagedResult
    | MessagePage
    | ConnectionList
    | SubscriptionList
)
Event = Deliver | ConnectionFailed | SendFailed
Command = Request | Reply | Event
