"""Sequence-number access to a destination: log reads, cumulative acknowledgement and a
staged, idempotent publish.

Not part of the JMS API. Every message a queue or a durable subscription takes gets that
destination's next *sequence number*; positions are monotonic across restarts but not dense
(gaps are normal). A position ``p`` stands for "every message with ``seq <= p``". These calls
let a stream processor treat a destination as a log, with exactly-once results:

- :func:`log_bounds` and :func:`read_range` read messages by position without consuming them
  (repeatable until acknowledged);
- :func:`ack_upto` acknowledges everything up to a position (the reader owns the queue or
  the subscription); :func:`ack_upto_later` sends it without waiting;
- :func:`stage`, :func:`commit_staged` and :func:`abort_staged` publish in two phases:
  staged messages are durable and invisible until the coordinator commits them, keyed by
  ``(sink_id, batch_id)`` so that a replayed batch publishes nothing twice.

Example::

    conn = ConnectionFactory("tcp://127.0.0.1:61616").create_connection()
    b = log_bounds(conn, "queue://orders")
    for chunk in read_range(conn, "queue://orders", b.earliest, b.latest):
        for rec in chunk:
            print(rec.seq, decode_message(rec.data).get_body(str))
    ack_upto(conn, "queue://orders", b.latest)

Each function raises ``InvalidDestinationException`` for an unknown or unsuitable
destination, ``JMSSecurityException`` when the user lacks the permission (``browse`` to
read, ``consume`` to acknowledge, ``send`` to stage), ``IllegalStateException`` on a closed
connection and ``JMSException`` when the broker link fails.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from ternmq.client._util import expect_reply
from ternmq.destination import Destination, Topic, destination
from ternmq.errors import InvalidDestinationException
from ternmq.message import DeliveryMode, Message
from ternmq.message.codec import encode_message
from ternmq.protocol import commands as c

if TYPE_CHECKING:
    from ternmq.client.connection import Connection
    from ternmq.transport._pending import PendingReply

__all__ = [
    "CommitResult",
    "LogBounds",
    "LogRecord",
    "abort_staged",
    "ack_upto",
    "ack_upto_later",
    "commit_staged",
    "ensure_subscription",
    "log_bounds",
    "read_range",
    "stage",
]

# Keep each Stage frame well under the server's frame limit (16 MiB by default).
STAGE_CHUNK_BYTES = 4 * 1024 * 1024
STAGE_CHUNK_MESSAGES = 5_000


@dataclasses.dataclass(frozen=True, slots=True)
class LogBounds:
    """Positions of a destination: reading ``(earliest, latest]`` gives every message held."""

    earliest: int
    latest: int


@dataclasses.dataclass(frozen=True, slots=True)
class LogRecord:
    """One message read by position: its sequence number, JMSXDeliveryCount (1 = never
    delivered before) and encoded form (``ternmq.message.codec.decode_message``)."""

    seq: int
    delivery_count: int
    data: bytes


@dataclasses.dataclass(frozen=True, slots=True)
class CommitResult:
    """What :func:`commit_staged` did: messages published, and whether the batch had been
    committed before (then nothing was published)."""

    published: int
    duplicate: bool


def log_bounds(
    conn: Connection,
    destination: Destination | str,
    *,
    subscription: str | None = None,
    after: int | None = None,
    max_messages: int | None = None,
) -> LogBounds:
    """The positions of a queue, or of the durable ``subscription`` of a topic.

    With ``after`` and ``max_messages``, ``latest`` is at most the position of the
    ``max_messages``-th message held after ``after`` (admission control). A message that
    waits for its delivery time keeps ``latest`` below it until it is due.
    """
    conn._check_open()
    reply = expect_reply(
        conn.request(
            c.GetBounds(
                destination=str(destination),
                subscription=subscription,
                after=after,
                max_messages=max_messages,
            )
        ),
        c.Bounds,
        "GetBounds",
    )
    return LogBounds(reply.earliest, reply.latest)


def read_range(
    conn: Connection,
    destination: Destination | str,
    after: int,
    upto: int,
    *,
    subscription: str | None = None,
    selector: str | None = None,
    limit: int = 10_000,
) -> Iterator[list[LogRecord]]:
    """The messages held with ``after < seq <= upto``, in sequence order, in chunks of at
    most ``limit``, without consuming them. Reading the same range again gives the same
    messages until they are acknowledged (or expire).

    The next chunk is requested before a chunk is handed out, so the broker reads it while
    the caller works on this one (at most one request ahead).

    Raises:
        InvalidSelectorException: ``selector`` is not a valid message selector.
    """
    conn._check_open()
    text = str(destination)

    def ask(after: int) -> PendingReply:
        return conn.submit(
            c.ReadRange(
                destination=text,
                after=after,
                upto=upto,
                subscription=subscription,
                selector=selector,
                limit=limit,
            )
        )

    if after >= upto:
        return
    pending = ask(after)
    while True:
        reply = expect_reply(pending.result(), c.RangeResult, "ReadRange")
        more = not reply.done and reply.after > after
        if more:
            after = reply.after
            pending = ask(after)
        if reply.seqs:
            yield [LogRecord(s, n, d) for s, n, d in zip(reply.seqs, reply.counts, reply.messages)]
        if not more:
            return


def ack_upto(
    conn: Connection,
    destination: Destination | str,
    seq: int,
    *,
    subscription: str | None = None,
    selector: str | None = None,
) -> int:
    """Acknowledge every ready message with a position at or below ``seq`` (those matching
    ``selector``, if given); return how many were removed. Durable when it returns."""
    return ack_upto_later(conn, destination, seq, subscription=subscription, selector=selector)()


def ack_upto_later(
    conn: Connection,
    destination: Destination | str,
    seq: int,
    *,
    subscription: str | None = None,
    selector: str | None = None,
) -> Callable[[], int]:
    """Send :func:`ack_upto` and return at once; the returned function waits for the reply
    and returns how many messages were removed (raising what :func:`ack_upto` raises). The
    acknowledgement is durable when that function returns. Requests sent later on ``conn``
    are handled after it."""
    conn._check_open()
    pending = conn.submit(
        c.AckUpto(
            destination=str(destination), upto=seq, subscription=subscription, selector=selector
        )
    )

    def wait() -> int:
        return int(expect_reply(pending.result(), c.Ok, "AckUpto").value or 0)

    return wait


def ensure_subscription(
    conn: Connection, topic: Destination | str, subscription: str, selector: str | None = None
) -> None:
    """Create the shared durable subscription ``subscription`` of ``topic`` (with this
    connection's client id, usually none) unless it exists; from then on the topic's
    messages are kept for it.

    Raises:
        IllegalStateException: it exists with another topic or selector and has consumers.
    """
    conn._check_open()
    dest = topic if isinstance(topic, Destination) else destination(str(topic))
    if not isinstance(dest, Topic):
        raise InvalidDestinationException(f"{dest} is not a topic: subscriptions need a topic")
    session = conn.create_session()
    try:
        session.create_shared_durable_consumer(dest, subscription, selector).close()
    finally:
        session.close()


def stage(
    conn: Connection,
    sink_id: str,
    batch_id: int,
    txid: str,
    messages: Iterable[tuple[Destination | str, Message]],
) -> int:
    """Stage messages under ``txid`` for batch ``batch_id`` of sink ``sink_id``: stored
    (durable) and invisible until :func:`commit_staged`. Each message is sent with its own
    ``jms_delivery_mode``, ``jms_priority`` and ``jms_expiration`` (absolute epoch ms, 0 =
    never); ``jms_destination`` is set, and ``jms_message_id`` (when None) and
    ``jms_timestamp`` (when 0) are stamped. May be called again with the same ``txid`` to add
    more. Returns how many messages the transaction holds now.

    Raises:
        ResourceAllocationException: a message is too large, or the transaction too big.
        IllegalStateException: ``txid`` is staged for another sink or batch.
    """
    conn._check_open()
    now = conn.clock.now_ms()
    dests: dict[object, tuple[Destination, str]] = {}  # given destination -> (it, its text)
    chunk: list[c.StagedSend] = []
    size = 0
    total = 0
    non_persistent = DeliveryMode.NON_PERSISTENT
    # One chunk is in flight while the next is encoded (the broker's write of one overlaps
    # the encoding of the next); chunks reach the broker in order on the connection.
    inflight: PendingReply | None = None
    for dest, msg in messages:
        known = dests.get(dest)
        if known is None:
            d = dest if isinstance(dest, Destination) else destination(dest)
            known = dests[dest] = (d, str(d))
        msg._destination = known[0]
        if msg._message_id is None:
            msg._message_id = conn.next_message_id()
        if not msg._timestamp:
            msg._timestamp = now
        gid: object = None
        gseq: object = 0
        props = msg._properties
        if props:
            gid = props.get("JMSXGroupID")
            gseq = props.get("JMSXGroupSeq", 0)
        data = encode_message(msg)
        chunk.append(
            c.StagedSend(
                destination=known[1],
                message=data,
                persistent=msg._delivery_mode != non_persistent,
                priority=msg._priority,
                expiration=msg._expiration,
                delivery_time=msg._delivery_time,
                group_id=gid if isinstance(gid, str) else None,
                group_seq=gseq if type(gseq) is int else 0,
            )
        )
        size += len(data)
        if size >= STAGE_CHUNK_BYTES or len(chunk) >= STAGE_CHUNK_MESSAGES:
            if inflight is not None:
                total = _staged_count(inflight)
            inflight = conn.submit(
                c.Stage(sink_id=sink_id, batch_id=batch_id, txid=txid, messages=chunk)
            )
            chunk = []
            size = 0
    if inflight is not None:
        total = _staged_count(inflight)
    if chunk:
        total = _staged_count(
            conn.submit(c.Stage(sink_id=sink_id, batch_id=batch_id, txid=txid, messages=chunk))
        )
    return total


def _staged_count(pending: PendingReply) -> int:
    return int(expect_reply(pending.result(), c.Ok, "Stage").value or 0)


def commit_staged(
    conn: Connection, sink_id: str, batch_id: int, txids: Sequence[str]
) -> CommitResult:
    """Publish the staged transactions ``txids`` atomically as batch ``batch_id`` of sink
    ``sink_id``. If the sink has committed this batch (or a later one) before, publish
    nothing and report ``duplicate``. Staged transactions of the sink with a batch id at or
    below ``batch_id`` that are not listed are dropped (failed attempts).

    Raises:
        IllegalStateException: a listed transaction is unknown to the broker.
        TransactionRolledBackException: the messages could not be routed (nothing published).
    """
    conn._check_open()
    reply = expect_reply(
        conn.request(c.CommitStaged(sink_id=sink_id, batch_id=batch_id, txids=list(txids))),
        c.StagedResult,
        "CommitStaged",
    )
    return CommitResult(reply.published, reply.duplicate)


def abort_staged(conn: Connection, txids: Sequence[str]) -> None:
    """Drop staged transactions (unknown ids are ignored)."""
    conn._check_open()
    expect_reply(conn.request(c.AbortStaged(txids=list(txids))), c.Ok, "AbortStaged")
