"""The client's per-message work, in a module that mypyc compiles (``setup.py``'s COMPILED).

Theory of operation
-------------------
The public classes (``MessageProducer``, ``MessageConsumer``) stay interpreted: applications
and tests patch them, and a compiled class cannot be patched. What each of them does for
every message, once its arguments are checked, is a straight run of attribute reads and
writes on the message and one request built from them; that run lives here, as plain
functions of the values the public method already holds, so that the compiled build runs
it as C and the pure build as the same Python. Nothing here keeps state or blocks.

- :func:`build_send`: a send's headers stamped on the application's message (HDR-03,
  PROD-07), the provider-set ``JMSXUserID`` dropped (PROP-23), the message encoded once
  (PROD-29), and the ``Send`` request made of it.
- :class:`Sender`: one producer's synchronous send once ``MessageProducer.send`` checked its
  arguments: the session's send window asked and told (A-08), the clock read, the message id
  drawn, the request built and handed to the connection, all in one compiled call.
- :class:`MessageIds`: a connection's JMSMessageIDs, a prefix fixed at connect and a counter.
- :class:`EventRouter`: the transport's event callback; a delivery goes straight to its
  consumer's buffer (``DeliveryLedger.push``), anything else to ``Connection._on_event``.

The objects here only hold references the connection and session give them at creation and
values that never change afterwards; whatever may change (the window, the transaction's
flags, the connection's routing methods, which tests may replace) is read at each call.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from ternmq.client._ledger import DeliveryLedger
from ternmq.client._send_window import SendWindow
from ternmq.client._util import check_reply
from ternmq.destination import Destination
from ternmq.errors import MessageFormatException
from ternmq.message import DeliveryMode, Message
from ternmq.message.codec import encode_message
from ternmq.protocol import commands as c

if TYPE_CHECKING:
    from ternmq.broker.clock import Clock
    from ternmq.client._types import Link
    from ternmq.client.consumer import MessageConsumer

__all__ = ["EventRouter", "MessageIds", "Sender", "build_send"]

_PERSISTENT: Final = int(DeliveryMode.PERSISTENT)
_DUP: Final = c.DUPLICATE_ID_PROPERTY


def build_send(
    message: Message,
    dest: Destination,
    mode: int,
    prio: int,
    ttl: float,
    delay: float,
    now: int,
    timestamp: bool,
    message_id: str | None,
    session_id: int,
    window: SendWindow | None,
    next_corr: Callable[[], int],
) -> c.Send:
    """Stamp the headers of a send at ``now`` (epoch ms) on ``message`` and return its
    ``Send`` request. ``window``: the session's, for a pipelined send (which asks it whether
    this one may be quiet: ``corr`` 0), else None; ``next_corr`` numbers an answered one.

    Raises:
        MessageFormatException: the ``JMS_TernMQ_DuplicateID`` property is not a String.
        CodecLimitError, MessageCodecError: the message cannot be encoded.
    """
    expiration = now + max(1, round(ttl * 1000)) if ttl else 0  # HDR-15
    delivery_time = now + round(delay * 1000)
    message._destination = dest
    message._delivery_mode = mode
    message._priority = prio
    message._timestamp = now if timestamp else 0
    message._expiration = expiration
    message._delivery_time = delivery_time
    message._message_id = message_id
    props = message._properties
    group_id: str | None = None
    group_seq = 0
    dup: str | None = None
    if props:  # most messages have none
        if "JMSXUserID" in props:  # PROP-23: provider-set; the broker sets it
            del props["JMSXUserID"]
            del message._property_types["JMSXUserID"]
        gid = props.get("JMSXGroupID")
        if isinstance(gid, str):
            group_id = gid
        gseq = props.get("JMSXGroupSeq", 0)
        if isinstance(gseq, int) and not isinstance(gseq, bool):
            group_seq = gseq
        value = props.get(_DUP)  # PSF-09: the broker reads it from Send
        if value is not None:
            if not isinstance(value, str):
                raise MessageFormatException(
                    f"{_DUP} must be a String property, not "
                    f"{type(value).__name__}: set it with set_string_property"
                )
            dup = value
    data = encode_message(message)
    # Asked only once the message is encoded: a send that fails above counts nowhere.
    quiet = window is not None and window.quiet_next()
    return c.Send(
        corr=0 if quiet else next_corr(),
        session_id=session_id,
        destination=str(dest),
        message=data,
        persistent=mode == _PERSISTENT,
        priority=prio,
        expiration=expiration,
        delivery_time=delivery_time,
        group_id=group_id,
        group_seq=group_seq,
        duplicate_id=dup,
        quiet=quiet,
    )


class MessageIds:
    """A connection's JMSMessageIDs: ``ID:`` and a random hex part fixed at connect, then a
    counter (unique across connections, HDR-09). ``itertools.count`` makes the numbering
    atomic for the sessions of one connection on several threads, compiled or not."""

    def __init__(self, uid: str) -> None:
        self._prefix = f"ID:{uid}-"
        self._count = itertools.count(1)

    def next(self) -> str:
        """A new JMSMessageID."""
        return self._prefix + str(next(self._count))


class Sender:
    """One producer's sends, once its public ``send`` checked the arguments and that nothing
    is closed: :meth:`send` does a synchronous one, :meth:`request` builds the request of
    one with a completion listener.

    Args:
        link: the connection (its routing methods and ``block_np_sends`` are read per send).
        session_id: the session's id.
        window: the session's send window.
        ledger: the session's delivery ledger (a transacted send marks its transaction).
        ids: the connection's message ids.
        clock: the connection's clock.
    """

    def __init__(
        self,
        link: Link,
        session_id: int,
        window: SendWindow,
        ledger: DeliveryLedger,
        ids: MessageIds,
        clock: Clock,
    ) -> None:
        self.link = link
        self.session_id = session_id
        self.window = window
        self.ledger = ledger
        self.ids = ids
        self.clock = clock

    def request(
        self,
        message: Message,
        dest: Destination,
        mode: int,
        prio: int,
        ttl: float,
        delay: float,
        timestamp: bool,
        with_id: bool,
        pipelined: bool,
    ) -> c.Send:
        """The ``Send`` request for ``message`` (see :func:`build_send`), once the session's
        pipelined sends already answered are settled; a transacted one marks the transaction.

        Raises:
            JMSException: an earlier pipelined send of this session was refused.
            MessageFormatException, CodecLimitError, MessageCodecError: as :func:`build_send`.
        """
        window = self.window
        if window.inflight or window.failure is not None:
            window.check()
        req = build_send(
            message,
            dest,
            mode,
            prio,
            ttl,
            delay,
            self.clock.now_ms(),
            timestamp,
            self.ids.next() if with_id else None,
            self.session_id,
            window if pipelined else None,
            self.link.next_corr,
        )
        if window.transacted:  # a failover dooms this transaction
            self.ledger.tx_work = True
        return req

    def send(
        self,
        message: Message,
        dest: Destination,
        mode: int,
        prio: int,
        ttl: float,
        delay: float,
        timestamp: bool,
        with_id: bool,
    ) -> None:
        """Send ``message`` to ``dest``: pipelined (A-08: a NON_PERSISTENT send outside a
        transaction, unless the connection blocks them), else wait for the broker's receipt
        (PROD-13).

        Raises:
            JMSException: an earlier pipelined send of this session was refused, or the
                broker refused this one, or the link failed.
            MessageFormatException, CodecLimitError, MessageCodecError: as :func:`build_send`.
        """
        conn = self.link
        # only a NON_PERSISTENT send outside a transaction is pipelined by default;
        # a send in a transaction always waits (its refusal is raised here, not at commit).
        pipelined = mode != _PERSISTENT and not self.window.transacted and not conn.block_np_sends
        req = self.request(message, dest, mode, prio, ttl, delay, timestamp, with_id, pipelined)
        if req.quiet:  # A-08 relaxed on request: a refusal comes as an event, raised later
            conn.oneway(req, None, 0, True)
        elif pipelined:  # answered: vouches for the quiet sends before it, paces the sender
            self.window.pipeline(conn.submit(req, True), dest)
        else:
            check_reply(conn.request(req))  # PROD-13: wait for the broker's receipt


class EventRouter:
    """The callback a connection gives its transport: a delivery goes to its consumer's
    ``_push`` (the consumer's ledger, compiled) without an interpreted frame; any other
    event (a refused quiet send, a lost link) to ``other`` (``Connection._on_event``).

    Args:
        consumers: the connection's consumers by id (the very dict it keeps up to date).
        other: the connection's handler of every other event.
    """

    def __init__(
        self, consumers: dict[int, MessageConsumer], other: Callable[[c.Command], None]
    ) -> None:
        self.consumers = consumers
        self.other = other

    def __call__(self, cmd: c.Command) -> None:
        """Route one event (the transport's reader or the embedded broker's thread)."""
        if type(cmd) is c.Deliver:  # the hot case first, without a subclass check
            consumer = self.consumers.get(cmd.consumer_id)
            if consumer is not None:
                consumer._push(cmd)
            return
        self.other(cmd)
