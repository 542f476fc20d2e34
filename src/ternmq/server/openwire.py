"""OpenWire (ActiveMQ Classic's Java client) over TCP or TLS: one :class:`OpenWireConnection`
per client socket.

Theory of operation
-------------------
A sibling of ``server/stomp.py`` on the same seams (docs/architecture.md, "The gateway
seam"): the connection protocol (WireFormatInfo negotiation, ConnectionInfo first, frame
limits, the inactivity monitor, handshake and read deadlines) is the sans-IO
:class:`~ternmq.protocol.openwire_connection.OpenWireServerConnection`; the socket, output
batching, backpressure, admission and closing are
:class:`~ternmq.server._gateway.GatewayConnection`'s. What is left here is the translation
between the ActiveMQ client's JMS 1.1 model and the engine's commands
(``protocol/commands.py``), the same ones the native client sends; messages and
destinations are converted by ``server/_openwire_mapping.py``.

=====================  ===============================================================
OpenWire               engine requests
=====================  ===============================================================
ConnectionInfo         credentials checked by the host, then ``Connect`` (user, client id)
                       and ``CreateSession`` 1 (sends outside transactions)
SessionInfo            nothing (the session's consumers get engine sessions of their own)
ProducerInfo           nothing; with a destination, the ``send`` permission there is checked
                       (refused: an ExceptionResponse, JMSSecurityException)
ConsumerInfo           ``CreateSession`` n + ``CreateConsumer`` n (one engine session per
                       consumer, so that closing one releases its deliveries only); on an
                       ``ActiveMQ.Advisory.*`` topic: nothing, the consumer stays idle but
                       for the temporary reply-to destinations announced to it (below); a
                       browser: ``Browse`` pages, then a MessageDispatch without a message
message (any type)     ``Send`` on session 1, or on the transaction's session
MessageAck             DELIVERED: ``Credit`` (the prefetch window slides, as ActiveMQ's
                       prefetch extension); STANDARD/INDIVIDUAL/UNMATCHED: ``Ack`` (held
                       until COMMIT in a transaction; one consumer's acks of one read make
                       one ``Ack``) and ``Credit``; POISON: ``Nack`` with
                       ``dead_letter`` (the client gave up after its own redeliveries: the
                       dead-letter queue at once, as ActiveMQ does); EXPIRED: ``Expired``;
                       REDELIVERED: counted only
MessagePull            ``Pull`` (prefetch 0); nothing within the timeout: a null dispatch
TransactionInfo        BEGIN: ``CreateSession`` t (transacted); COMMIT_ONE_PHASE: ``Commit``
                       t with the held acks as its ``delivered`` (one atomic commit), then
                       ``CloseSession`` t; ROLLBACK: ``Rollback`` t and
                       ``CloseSession`` t (rolled-back deliveries stay in flight: the client
                       redelivers them itself); END, FORGET: answered; XA: refused
RemoveInfo             consumer: ``CloseSession`` n with the deliveries up to
                       ``lastDeliveredSequenceId`` counted; session: each of its consumers
                       so; connection: ``Disconnect``
RemoveSubscriptionInfo ``Unsubscribe``
DestinationInfo        ``CreateTemporary`` / ``DeleteTemporary``
=====================  ===============================================================

Every request carries a ``corr``; its reply comes back through the engine's ordered output
gate, so a reply means the request took effect, and for a persistent send that it is durable.
A command with ``responseRequired`` is answered (``Response``) when the reply of its last
request arrives, or at once if it made none; an ``Error`` reply answers it with an
``ExceptionResponse`` naming the Java exception class the client rebuilds
(``javax.jms.<kind>``) and the connection stays open, as ActiveMQ's does. An error of a
command nobody waits for (an async send) becomes a ``ConnectionError`` (the client's
exception listener).

Batches: the requests of the commands of one socket read go to the engine together
(:meth:`OpenWireConnection._run_requests`), before anything the gateway writes on its own
(a Response to a command that made no request, an error), so the output keeps the order of
the input. Prefetch credit given back within a read goes to the engine as one one-way
``Credit`` per consumer at the end of the read, or as soon as half the prefetch is owed.

Deliveries: a ``Deliver`` becomes a MessageDispatch whose message id carries the delivery
id as ``brokerSequenceId``; the client names deliveries in MessageAck ranges and
RemoveInfo's ``lastDeliveredSequenceId`` by it. The prefetch window is the engine's credit:
a delivery's credit comes back once, at the first ack that covers it.

Advisories: ActiveMQ's client keeps the temporary destinations its advisory consumer
(``ActiveMQ.Advisory.TempQueue,ActiveMQ.Advisory.TempTopic``) heard of, and refuses to send
to any other. So before a message whose JMSReplyTo is a temporary destination is
dispatched, that destination is announced to the connection's advisory consumer (a
DestinationInfo advisory, once per destination): a Java service can answer a requester of
another connection, in any protocol.
"""

from __future__ import annotations

import functools
import itertools
import logging
from collections.abc import Callable, Sequence
from typing import ClassVar, Final

from ternmq._version import __version__
from ternmq.destination import Destination
from ternmq.errors import (
    InvalidDestinationException,
    JMSException,
)
from ternmq.message import Message
from ternmq.message.codec import decode_message, encode_message
from ternmq.protocol import commands as c
from ternmq.protocol import openwire as ow
from ternmq.protocol.openwire_connection import (
    ConnectionInfoReceived,
    Event,
    Negotiated,
    OpenWireServerConnection,
    ProtocolViolation,
    State,
    exception_response,
)
from ternmq.server._gateway import ConnectionHost, GatewayConnection
from ternmq.server._openwire_mapping import (
    jms_destination,
    message_from_openwire,
    message_id_of,
    openwire_destination,
    openwire_message,
)

__all__ = ["ADVISORY_PREFIX", "OpenWireConnection", "is_openwire_start"]

log = logging.getLogger("ternmq.server")

#: Destinations of ActiveMQ's advisory messages: consumers on them are accepted and idle.
ADVISORY_PREFIX: Final = "ActiveMQ.Advisory."
_SEND_SESSION: Final = 1
_BROWSE_PAGE: Final = 100
_ANNOUNCED_MAX: Final = 4096  # temporary destinations remembered as announced, per connection
_JAVA_EXCEPTIONS: Final = frozenset(
    {
        "IllegalStateException",
        "InvalidClientIDException",
        "InvalidDestinationException",
        "InvalidSelectorException",
        "JMSException",
        "JMSSecurityException",
        "MessageFormatException",
        "ResourceAllocationException",
        "TransactionInProgressException",
        "TransactionRolledBackException",
    }
)

# MessageAck.ackType (org.apache.activemq.command.MessageAck)
DELIVERED_ACK: Final = 0
POISON_ACK: Final = 1
STANDARD_ACK: Final = 2
REDELIVERED_ACK: Final = 3
INDIVIDUAL_ACK: Final = 4
UNMATCHED_ACK: Final = 5
EXPIRED_ACK: Final = 6

# TransactionInfo.type
_BEGIN: Final = 0
_PREPARE: Final = 1
_COMMIT_ONE_PHASE: Final = 2
_COMMIT_TWO_PHASE: Final = 3
_ROLLBACK: Final = 4
_RECOVER: Final = 5
_FORGET: Final = 6
_END: Final = 7

# DestinationInfo.operationType
_ADD: Final = 0
_REMOVE: Final = 1

_OPEN: Final = State.OPEN
_CLOSED: Final = State.CLOSED

ConsumerKey = tuple[int, int]  # (session id, consumer value) of an OpenWire ConsumerId


def java_exception(kind: str) -> str:
    """The Java class name the ActiveMQ client rebuilds for an engine ``Error`` kind."""
    return f"javax.jms.{kind if kind in _JAVA_EXCEPTIONS else 'JMSException'}"


def is_openwire_start(data: bytes) -> bool | None:
    """Whether the first octets of a connection are an OpenWire WireFormatInfo frame (a
    4-octet size, type 1, the magic ``ActiveMQ``); None while too few have arrived to tell."""
    head = data[4:13]
    want = bytes([ow.WireFormatInfo.TYPE]) + ow.MAGIC
    n = len(head)
    if head != want[:n]:
        return False
    return True if n == len(want) else None


class _Delivery:
    """One message handed to a consumer and not yet acknowledged."""

    __slots__ = ("credited", "redelivered")

    def __init__(self) -> None:
        self.credited = False  # its prefetch credit came back (a DELIVERED ack, or settled)
        self.redelivered = 0  # REDELIVERED acks: the client redelivered it itself


class _Consumer:
    """One ConsumerInfo: its own engine session and consumer (both numbered ``sid``)."""

    __slots__ = (
        "destination",
        "id",
        "idle",
        "outstanding",
        "owed",
        "prefetch",
        "pull_timer",
        "pulling",
        "sid",
    )

    def __init__(
        self, cid: ow.ConsumerId, sid: int, destination: ow.ActiveMQDestination, prefetch: int
    ) -> None:
        self.id = cid
        self.sid = sid
        self.destination = destination
        self.prefetch = prefetch
        self.idle = False  # an advisory consumer or a browser: no engine consumer
        # delivery id -> its state, in delivery order
        self.outstanding: dict[int, _Delivery] = {}
        self.pulling = False  # a MessagePull awaits a message (or its null dispatch)
        self.pull_timer: object | None = None
        self.owed = 0  # prefetch credit the client gave back, not yet passed on (_grant)


class _Transaction:
    """A local transaction: a transacted engine session for its sends, and the acks held
    until COMMIT (they touch the consumers' own sessions)."""

    __slots__ = ("acks", "sid")

    def __init__(self, sid: int) -> None:
        self.sid = sid
        self.acks: list[tuple[_Consumer, list[int]]] = []


class OpenWireConnection(GatewayConnection):
    """One client socket speaking OpenWire.

    Args:
        host: the server that owns the broker.
        scheme: ``tcp`` or ``tls`` (for logs).
    """

    protocol: ClassVar[str] = "openwire"  # in connection lists and ternmq_connections
    wire: OpenWireServerConnection
    heartbeat_frame: ClassVar[bytes] = OpenWireServerConnection.keepalive_frame()

    def __init__(self, host: ConnectionHost, scheme: str) -> None:
        super().__init__(host, scheme)
        limits = self.limits
        self.wire = OpenWireServerConnection(
            self.last_sent,
            max_frame=limits.max_frame,
            max_handshake_frame=min(8192, limits.max_handshake_frame),
            max_inactivity=limits.heartbeat,
            inactivity_initial_delay=min(10.0, limits.heartbeat),
            handshake_timeout=limits.handshake_timeout,
            frame_timeout=limits.frame_timeout,
            provider=("ternmq", __version__),
        )
        self._corrs = itertools.count(1)
        self._ids = itertools.count(2)  # engine session/consumer numbers (1: sends)
        self._browse_ids = itertools.count(1)
        # corr -> the command id its reply answers (0: none), for the last request of each
        # command that asked for a response
        self._answers: dict[int, int] = {}
        self._owners: dict[int, int] = {}  # corr -> command id of the command that made it
        self._consumers: dict[ConsumerKey, _Consumer] = {}
        self._by_sid: dict[int, _Consumer] = {}
        self._sessions: dict[int, set[ConsumerKey]] = {}
        self._txs: dict[int, _Transaction] = {}
        self._browses: dict[int, tuple[_Consumer, str, str | None]] = {}  # corr -> browse
        self._pulls: dict[int, _Consumer] = {}  # corr of a no-wait Pull -> its consumer
        # The client's consumer of ActiveMQ.Advisory.TempQueue/TempTopic, and the temporary
        # destinations announced to it (see _announce)
        self._advisory: _Consumer | None = None
        self._announced: dict[str, None] = {}
        self._advisory_ids = itertools.count(1)
        self._creating: dict[int, _Consumer] = {}  # corr of a CreateConsumer -> its consumer
        # browse pages to ask for once the socket drains (a browser must not make the server
        # buffer a whole queue): (consumer, destination, selector, position)
        self._browse_later: list[tuple[_Consumer, str, str | None, tuple[int, int]]] = []
        self._connect_corr = -1
        self._connect_answer = 0
        self._cid = 0  # the id of the command being handled, if it asked for a response
        # The requests of the commands of one read, handed to the engine together (None:
        # outside data_received, requests go at once)
        self._batch: list[c.Request] | None = None
        self._owing: dict[_Consumer, None] = {}  # consumers with credit owed in this read

    @property
    def state(self) -> State:
        """Where the connection is in its life (the wire object's state)."""
        return self.wire.state

    # ---- input ----------------------------------------------------------------------------
    def data_received(self, data: bytes) -> None:
        """Octets from the client: commands become engine requests, in order."""
        wire = self.wire
        if wire.state is _CLOSED:
            return
        try:
            events = wire.receive_data(data, self.loop.time())
        except ProtocolViolation as exc:
            self._handle_events(exc.before)
            self.fail(str(exc))
            return
        if events:
            try:
                self._handle_events(events)
            finally:
                self.host.rearm()
        self._after_shutdown()

    def _handle_events(self, events: Sequence[Event]) -> None:
        """The commands of one read: their requests go to the engine as one batch, after
        them (or before anything written without the engine, to keep the output in order)."""
        self._batch = []
        try:
            self._on_events(events)
        finally:
            owing, self._owing = self._owing, {}
            t = self.transport
            if t is not None and not t.is_closing():  # not after a failure
                for consumer in owing:
                    if consumer.owed and self._by_sid.get(consumer.sid) is consumer:
                        self._pass_credit(consumer)
            self._drain()
            self._batch = None

    def _drain(self) -> None:
        """Hand the batched requests to the engine (and any they make meanwhile)."""
        while self._batch:
            batch, self._batch = self._batch, []
            self._run_requests(batch)

    def _run_requests(self, reqs: list[c.Request]) -> None:
        """Hand ``reqs`` to the engine in one entry (``Broker.handle_batch``: each answered as
        on its own, one output release; it stops if the connection closes meanwhile)."""
        if len(reqs) == 1:
            self._submit(reqs[0])
        else:
            self._submit_batch(reqs)

    def _on_events(self, events: Sequence[Event]) -> None:
        for ev in events:
            t = self.transport
            if t is None or t.is_closing():
                return
            if isinstance(ev, Negotiated):
                self._write(ev.reply)
            elif isinstance(ev, ConnectionInfoReceived):
                info = ev.info
                self._check_credentials(
                    info.user_name, info.password, functools.partial(self._auth_finished, info)
                )
            else:
                self._command(ev)

    def _command(self, command: ow.DataStructure) -> None:
        """One command of an OPEN connection."""
        handler = _HANDLERS.get(type(command))
        cid = command.command_id if isinstance(command, ow.BaseCommand) else 0
        wants = isinstance(command, ow.BaseCommand) and command.response_required
        if isinstance(command, ow.KeepAliveInfo):
            # ActiveMQ's InactivityMonitor answers a KeepAliveInfo with one, not a Response.
            self._write_command(ow.KeepAliveInfo())
            return
        if handler is None:
            problem = (
                f"{type(command).__name__} is not supported by this server (network of "
                "brokers and XA are not): send only what a JMS client sends"
            )
            if wants:
                self._write_command(exception_response(cid, "javax.jms.JMSException", problem))
            else:
                self._async_error("javax.jms.JMSException", problem)
            return
        self._cid = cid if wants else 0
        try:
            made = handler(self, command)
        except JMSException as exc:
            kind = java_exception(type(exc).__name__.replace("RuntimeException", "Exception"))
            if wants:
                self._write_command(exception_response(cid, kind, str(exc)))
            else:
                self._async_error(kind, str(exc))
            return
        except Exception as exc:  # a bug here: this connection only pays for it
            log.exception(
                "event=internal_error peer=%s command=%s", self.peer, type(command).__name__
            )
            self.fail(f"internal error handling {type(command).__name__}: {type(exc).__name__}")
            return
        finally:
            self._cid = 0
        if wants and not made:
            self._write_command(ow.Response(correlation_id=cid))

    # ---- requests and replies -------------------------------------------------------------
    def _request(self, req: c.Request, answer: int = 0) -> int:
        """Hand ``req`` (whose ``corr`` came from :meth:`_corr`) to the broker; its corr.
        ``answer``: the command id its reply answers (registered first: the engine may
        reply before ``handle`` returns)."""
        if answer:
            self._answers[req.corr] = answer
        batch = self._batch
        if batch is None:
            self._submit(req)
        else:
            batch.append(req)
        return req.corr

    def _final(self, req: c.Request) -> int:
        """The last request of the command being handled: its reply answers the command
        (if the command asked for a response)."""
        return self._request(req, self._cid)

    def _corr(self) -> int:
        return next(self._corrs)

    def _write_command(self, command: ow.DataStructure) -> None:
        if self._batch:
            self._drain()  # what the commands before it asked for comes first
        self._write(ow.encode_frame(command))

    def _async_error(self, class_name: str, message: str) -> None:
        """An error nobody waits for: a ConnectionError (the client's exception listener)."""
        self._write_command(ow.ConnectionError(exception=ow.JavaThrowable(class_name, message)))

    def _emit(self, cmd: c.Command) -> None:
        """The engine's output callback: never calls back into the engine."""
        if self.wire.state is _CLOSED:
            return
        if isinstance(cmd, c.Deliver):
            self._deliver(cmd)
            return
        if isinstance(cmd, c.ConnectionFailed):
            self.fail(cmd.message)
            return
        if isinstance(cmd, c.SendFailed):
            self._async_error(java_exception(cmd.kind), cmd.message)
            return
        corr = cmd.corr
        self._replied()
        answer = self._answers.pop(corr, 0)
        browse = self._browses.pop(corr, None)
        pulled = self._pulls.pop(corr, None)
        created = self._creating.pop(corr, None)
        if isinstance(cmd, c.Error):
            if browse is not None:
                self._null_dispatch(browse[0])  # the browse ends (the client must not wait)
            if browse is not None or created is not None:
                failed = browse[0] if browse is not None else created
                assert failed is not None
                self.loop.call_soon(self._forget_failed, failed)
            if corr == self._connect_corr:
                answer = self._connect_answer  # e.g. InvalidClientIDException: a client id in use
            if answer:
                self._write_command(
                    exception_response(answer, java_exception(cmd.kind), cmd.message)
                )
            else:
                self._async_error(java_exception(cmd.kind), cmd.message)
            if corr == self._connect_corr:
                self.close("connection refused by the broker")
            return
        if browse is not None and isinstance(cmd, c.BrowseResult):
            self._browsed(browse, cmd)
        if pulled is not None and pulled.pulling:
            pulled.pulling = False
            self._null_dispatch(pulled)
        if answer:
            self._write_command(ow.Response(correlation_id=answer))

    # ---- deliveries -----------------------------------------------------------------------
    def _deliver(self, d: c.Deliver) -> None:
        consumer = self._by_sid.get(d.consumer_id)
        if consumer is None:
            return  # closed meanwhile: the engine took it back
        msg = decode_message(d.message)
        consumer.outstanding[d.delivery_id] = _Delivery()
        if consumer.pulling:
            consumer.pulling = False
            self._cancel_pull_timer(consumer)
        self._dispatch(consumer, msg, d.delivery_id, d.delivery_count - 1)

    def _dispatch(self, consumer: _Consumer, msg: Message, seq: int, redelivered: int) -> None:
        """Write ``msg`` to ``consumer`` as a MessageDispatch; ``seq`` becomes its
        ``brokerSequenceId`` (how the client's acks name it)."""
        dest = (
            openwire_destination(msg._destination)
            if msg._destination is not None
            else consumer.destination
        )
        reply_to = msg._reply_to
        if reply_to is not None and reply_to.is_temporary and self._advisory is not None:
            self._announce(reply_to)
        mid = message_id_of(msg._message_id or f"ID:ternmq-{seq}", seq)
        mid.broker_sequence_id = seq
        om = openwire_message(msg, destination=dest, message_id=mid, redelivery_counter=redelivered)
        self._write_command(
            ow.MessageDispatch(
                consumer_id=consumer.id,
                destination=dest,
                message=om,
                redelivery_counter=redelivered,
            )
        )

    def _announce(self, temp: Destination) -> None:
        """Tell the client's advisory consumer that temporary destination ``temp`` exists
        (a DestinationInfo advisory), once: ActiveMQ's client refuses to send to a temporary
        destination its advisories never named ("Cannot publish to a deleted Destination"),
        so the reply-to of a request must be announced before the request is dispatched."""
        advisory = self._advisory
        key = str(temp)
        if advisory is None or key in self._announced:
            return
        self._announced[key] = None
        while len(self._announced) > _ANNOUNCED_MAX:
            del self._announced[next(iter(self._announced))]
        dest = openwire_destination(temp)
        topic = ow.ActiveMQTopic(
            physical_name=ADVISORY_PREFIX + ("TempTopic" if temp.is_topic else "TempQueue")
        )
        n = next(self._advisory_ids)
        producer = ow.ProducerId(connection_id="ID:ternmq-advisory", value=1)
        self._write_command(
            ow.MessageDispatch(
                consumer_id=advisory.id,
                destination=topic,
                message=ow.ActiveMQMessage(
                    producer_id=producer,
                    destination=topic,
                    message_id=ow.MessageId(
                        producer_id=producer, producer_sequence_id=n, broker_sequence_id=n
                    ),
                    data_structure=ow.DestinationInfo(destination=dest, operation_type=_ADD),
                ),
            )
        )

    def _null_dispatch(self, consumer: _Consumer) -> None:
        """A MessageDispatch without a message: the end of a browse, or an empty pull."""
        self._write_command(
            ow.MessageDispatch(consumer_id=consumer.id, destination=consumer.destination)
        )

    # ---- ConnectionInfo -------------------------------------------------------------------
    def _auth_finished(self, info: ow.ConnectionInfo, error: str | None) -> None:
        wire = self.wire
        if wire.state is not State.AUTH:
            return  # closed meanwhile
        if error is not None:
            refusal = exception_response(
                info.command_id,
                "javax.jms.JMSSecurityException",
                f"{error}: check the user name and password of the connection",
            )
            reply = ow.encode_frame(refusal) if info.response_required else b""
            self._refuse(info.user_name, error, reply)
            return
        broker = self.host.broker
        if broker is None:
            return
        try:
            held = wire.accept()
        except ProtocolViolation as exc:
            self.fail(str(exc))
            return
        self._authenticated(broker, self._emit, info.user_name)
        self._log_open(info.client_id)
        corr = self._corr()
        self._connect_corr = corr
        self._connect_answer = info.command_id if info.response_required else 0
        self._request(c.Connect(corr=corr, user=self.user, client_id=info.client_id))
        self._request(
            c.CreateSession(corr=self._corr(), session_id=_SEND_SESSION),
            info.command_id if info.response_required else 0,
        )
        self._resume("auth")
        self._on_events(held)
        self.host.rearm()
        self._after_shutdown()

    def _after_shutdown(self) -> None:
        """Close the socket if the commands just handled ended with a ShutdownInfo (the
        wire state is CLOSED, the socket still open)."""
        t = self.transport
        if self.wire.current() is _CLOSED and t is not None and not t.is_closing():
            self._shut("shutdown by the client", drop=True)

    # ---- destinations ---------------------------------------------------------------------
    def _resolve(self, dest: ow.ActiveMQDestination) -> Destination:
        resolved: Destination = jms_destination(dest)
        return resolved

    # ---- command handlers: each returns the corr whose reply answers it (0: answer now) ---
    def _on_session(self, info: ow.SessionInfo) -> int:
        if info.session_id is not None:
            self._sessions.setdefault(info.session_id.value, set())
        return 0

    def _on_producer(self, info: ow.ProducerInfo) -> int:
        """A producer with a destination needs the ``send`` permission there (and
        ``create`` where a send would create it), as ActiveMQ's ``addProducer`` checks:
        refused, ``createProducer`` fails with a JMSSecurityException."""
        dest = info.destination
        broker = self.host.broker
        conn = self.conn
        if dest is None or broker is None or conn is None:
            return 0
        self._drain()  # the commands before it took effect (a destination they created)
        broker.authorize(conn, "send", jms_destination(dest))
        return 0

    def _on_consumer(self, info: ow.ConsumerInfo) -> int:
        cid = info.consumer_id
        dest = info.destination
        if cid is None or dest is None:
            raise JMSException("ConsumerInfo needs a consumer id and a destination")
        key = (cid.session_id, cid.value)
        if key in self._consumers:
            raise JMSException(f"consumer {key} exists on this connection: use a new id")
        prefetch = max(0, min(info.prefetch_size, self.limits.openwire_max_prefetch))
        consumer = _Consumer(cid, next(self._ids), dest, prefetch)
        name = dest.physical_name or ""
        if name.startswith(ADVISORY_PREFIX):
            consumer.idle = True
            self._add_consumer(key, consumer)
            if "TempQueue" in name or "TempTopic" in name:
                self._advisory = consumer
            return 0
        jms = jms_destination(dest)
        if info.browser:
            if jms.is_topic:
                raise InvalidDestinationException(
                    f"{jms} is a topic: a QueueBrowser browses a queue"
                )
            consumer.idle = True
            self._add_consumer(key, consumer)
            # The first page answers the ConsumerInfo: a refused browse (permissions, a bad
            # selector) fails createBrowser.
            return self._browse(consumer, str(jms), info.selector or None, None, self._cid)
        kind: c.SubscriptionKind = "none"
        if info.subscription_name:
            if not jms.is_topic:
                raise InvalidDestinationException(
                    f"{jms} is a queue: a durable subscription needs a topic"
                )
            kind = "durable"
        self._add_consumer(key, consumer)
        sid = consumer.sid
        self._request(c.CreateSession(corr=self._corr(), session_id=sid))
        corr = self._corr()
        self._creating[corr] = consumer
        return self._final(
            c.CreateConsumer(
                corr=corr,
                session_id=sid,
                consumer_id=sid,
                destination=str(jms),
                selector=info.selector or None,
                no_local=info.no_local,
                kind=kind,
                subscription=info.subscription_name or None,
                prefetch=prefetch,
            )
        )

    def _forget_failed(self, consumer: _Consumer) -> None:
        """A consumer the engine refused (a browse, a consumer): forget it and close its
        engine session (run soon after the refusal: never from inside the engine)."""
        key = (consumer.id.session_id, consumer.id.value)
        if self._consumers.get(key) is consumer and self.wire.current() is _OPEN:
            self._close_consumer(consumer, -1, final=False)
            self.host.rearm()

    def _add_consumer(self, key: ConsumerKey, consumer: _Consumer) -> None:
        self._consumers[key] = consumer
        self._by_sid[consumer.sid] = consumer
        self._sessions.setdefault(key[0], set()).add(key)

    def _browse(
        self,
        consumer: _Consumer,
        dest: str,
        selector: str | None,
        after: tuple[int, int] | None,
        answer: int = 0,
    ) -> int:
        """Ask for the next page of a browse (its reply is dispatched by :meth:`_browsed`)."""
        corr = self._corr()
        self._browses[corr] = (consumer, dest, selector)
        return self._request(
            c.Browse(
                corr=corr, destination=dest, selector=selector, after=after, limit=_BROWSE_PAGE
            ),
            answer,
        )

    def _browsed(self, browse: tuple[_Consumer, str, str | None], result: c.BrowseResult) -> None:
        consumer, dest, selector = browse
        if self._by_sid.get(consumer.sid) is not consumer:
            return  # the browser closed meanwhile
        for data in result.messages:
            msg = decode_message(data)
            self._dispatch(consumer, msg, -next(self._browse_ids), 0)
        if result.done or result.after is None:
            self._null_dispatch(consumer)
        elif "write" in self._paused:
            self._browse_later.append((consumer, dest, selector, result.after))
        else:
            self._browse(consumer, dest, selector, result.after)

    def resume_writing(self) -> None:
        """The socket drained: ask for the browse pages held back while it was full."""
        super().resume_writing()
        later, self._browse_later = self._browse_later, []
        if self.wire.current() is _OPEN:
            for consumer, dest, selector, after in later:
                if self._by_sid.get(consumer.sid) is consumer:
                    self._browse(consumer, dest, selector, after)
            self.host.rearm()

    def _on_message(self, cmd: ow.Message) -> int:
        conn = self.conn
        broker = self.host.broker
        if conn is None or broker is None:
            return 0
        if cmd.destination is None:
            raise InvalidDestinationException("a message needs a destination: set one")
        tx = self._transaction(cmd.transaction_id)
        msg = message_from_openwire(
            cmd,
            now_ms=broker.clock.now_ms(),
            resolve=self._resolve,
            max_body_size=self.limits.max_frame,  # a compressed body inflates no further
        )
        assert msg._destination is not None
        group = msg._properties.get("JMSXGroupID")
        seq = msg._properties.get("JMSXGroupSeq", 0)
        req = c.Send(
            corr=self._corr(),
            session_id=tx.sid if tx is not None else _SEND_SESSION,
            destination=str(msg._destination),
            message=encode_message(msg),
            persistent=msg._delivery_mode == 2,
            priority=msg._priority,
            expiration=msg._expiration,
            delivery_time=msg._delivery_time,
            group_id=group if isinstance(group, str) else None,
            group_seq=seq if isinstance(seq, int) and not isinstance(seq, bool) else 0,
        )
        return self._final(req)

    def _transaction(self, tid: ow.TransactionId | None) -> _Transaction | None:
        if tid is None:
            return None
        if not isinstance(tid, ow.LocalTransactionId):
            raise JMSException("XA transactions are not supported by this server")
        tx = self._txs.get(tid.value)
        if tx is None:
            raise JMSException(
                f"no transaction {tid.value} is open on this connection: BEGIN it first"
            )
        return tx

    def _select(self, consumer: _Consumer, ack: ow.MessageAck) -> list[int]:
        """The outstanding deliveries of ``consumer`` that ``ack``'s range names."""
        last = ack.last_message_id.broker_sequence_id if ack.last_message_id else None
        first = ack.first_message_id.broker_sequence_id if ack.first_message_id else None
        if last is None:
            return []
        outstanding = consumer.outstanding
        if first == last:
            return [last] if last in outstanding else []
        if first is not None and first > last:
            first = None
        ids = []
        for did in outstanding:  # in delivery order: ascending ids
            if did > last:
                break
            if first is None or did >= first:
                ids.append(did)
        return ids

    def _on_ack(self, ack: ow.MessageAck) -> int:
        cid = ack.consumer_id
        consumer = self._consumers.get((cid.session_id, cid.value)) if cid else None
        if consumer is None or consumer.idle:
            return 0  # an advisory consumer, a browser, or one closed meanwhile
        ids = self._select(consumer, ack)
        kind = ack.ack_type
        if kind == DELIVERED_ACK:
            self._credit(consumer, ids)
            return 0
        if kind == REDELIVERED_ACK:
            for did in ids:
                consumer.outstanding[did].redelivered += 1
            return 0
        if not ids:
            return 0
        if kind in (STANDARD_ACK, INDIVIDUAL_ACK, UNMATCHED_ACK):
            tx = self._transaction(ack.transaction_id) if kind != UNMATCHED_ACK else None
            if tx is not None:
                tx.acks.append((consumer, ids))
                self._credit(consumer, ids)
                return 0
            n = self._settle(consumer, ids)
            made = self._ack(consumer, ids)
            self._grant(consumer, n)
            return made
        if kind == POISON_ACK:
            n = self._settle(consumer, ids)
            # The client gave up after its own redeliveries: the dead-letter queue at once.
            made = self._final(
                c.Nack(
                    corr=self._corr(),
                    session_id=consumer.sid,
                    delivery_ids=ids,
                    dead_letter=True,
                )
            )
            self._grant(consumer, n)
            return made
        if kind == EXPIRED_ACK:
            n = self._settle(consumer, ids)
            made = self._final(
                c.Expired(corr=self._corr(), session_id=consumer.sid, delivery_ids=ids)
            )
            self._grant(consumer, n)
            return made
        raise JMSException(f"MessageAck type {kind} is not one this server knows")

    def _ack(self, consumer: _Consumer, ids: list[int]) -> int:
        """Acknowledge ``ids``: one engine ``Ack``, or, when nobody waits for either, the
        ``Ack`` of the same consumer just before it in this read's batch grows by them."""
        batch = self._batch
        if batch and not self._cid:
            last = batch[-1]
            if (
                type(last) is c.Ack
                and last.session_id == consumer.sid
                and last.corr not in self._answers
            ):
                last.delivery_ids.extend(ids)
                return 0
        return self._final(c.Ack(corr=self._corr(), session_id=consumer.sid, delivery_ids=ids))

    def _settle(self, consumer: _Consumer, ids: list[int]) -> int:
        """Forget ``ids`` (acknowledged or given back); how many had their credit still
        out (:meth:`_grant` returns it after the request that settles them)."""
        n = 0
        for did in ids:
            d = consumer.outstanding.pop(did, None)
            if d is not None and not d.credited:
                n += 1
        return n

    def _credit(self, consumer: _Consumer, ids: list[int]) -> None:
        """Return the prefetch credit of ``ids`` not returned before (a DELIVERED ack: the
        window slides, as ActiveMQ's prefetch extension)."""
        n = 0
        for did in ids:
            d = consumer.outstanding.get(did)
            if d is not None and not d.credited:
                d.credited = True
                n += 1
        self._grant(consumer, n)

    def _grant(self, consumer: _Consumer, n: int) -> None:
        """``n`` more messages of prefetch credit (none for a pulling consumer). Within
        one read it is passed on in batches: once half the prefetch is owed (as ActiveMQ
        acknowledges with optimizeAcknowledge), and what is left at the end of the read
        (:meth:`_handle_events`), so no credit waits for another read."""
        prefetch = consumer.prefetch
        if not n or not prefetch:
            return
        consumer.owed += n
        if self._batch is None or consumer.owed * 2 >= prefetch:
            self._pass_credit(consumer)
        else:
            self._owing[consumer] = None

    def _pass_credit(self, consumer: _Consumer) -> None:
        """Give the engine the credit ``consumer`` is owed (one-way: no reply)."""
        owed, consumer.owed = consumer.owed, 0
        self._request(c.Credit(consumer_id=consumer.sid, messages=owed))

    def _on_pull(self, pull: ow.MessagePull) -> int:
        cid = pull.consumer_id
        consumer = self._consumers.get((cid.session_id, cid.value)) if cid else None
        if consumer is None or consumer.idle:
            return 0
        if consumer.prefetch:
            return 0  # a consumer with a prefetch window has its messages pushed
        self._cancel_pull_timer(consumer)
        consumer.pulling = True
        if pull.timeout < 0:  # receiveNoWait: now or a null dispatch
            corr = self._corr()
            self._pulls[corr] = consumer
            return self._final(c.Pull(corr=corr, consumer_id=consumer.sid, wait=False))
        made = self._final(c.Pull(corr=self._corr(), consumer_id=consumer.sid))
        if pull.timeout > 0:
            consumer.pull_timer = self.loop.call_later(
                pull.timeout / 1000, self._pull_expired, consumer
            )
        return made

    def _pull_expired(self, consumer: _Consumer) -> None:
        consumer.pull_timer = None
        if not consumer.pulling or self.wire.state is not _OPEN:
            return
        if self._by_sid.get(consumer.sid) is not consumer:
            return
        consumer.pulling = False
        self._request(c.Pull(corr=self._corr(), consumer_id=consumer.sid, messages=0))
        self._null_dispatch(consumer)
        self.host.rearm()

    def _cancel_pull_timer(self, consumer: _Consumer) -> None:
        timer = consumer.pull_timer
        if timer is not None:
            timer.cancel()  # type: ignore[attr-defined]
            consumer.pull_timer = None

    def _on_transaction(self, info: ow.TransactionInfo) -> int:
        tid = info.transaction_id
        kind = info.type
        if isinstance(tid, ow.XATransactionId) or kind in (_PREPARE, _COMMIT_TWO_PHASE, _RECOVER):
            raise JMSException(
                "XA transactions are not supported by this server: use a transacted session"
            )
        if kind in (_END, _FORGET):
            return 0
        if not isinstance(tid, ow.LocalTransactionId):
            raise JMSException("TransactionInfo needs a local transaction id")
        if kind == _BEGIN:
            if tid.value in self._txs:
                raise JMSException(f"transaction {tid.value} is already open")
            tx = _Transaction(next(self._ids))
            self._txs[tid.value] = tx
            return self._final(
                c.CreateSession(corr=self._corr(), session_id=tx.sid, transacted=True)
            )
        ended = self._txs.pop(tid.value, None)
        if ended is None:
            if kind == _ROLLBACK:
                return 0  # nothing was sent or acknowledged in it
            raise JMSException(f"no transaction {tid.value} is open: BEGIN it first")
        tx = ended
        if kind == _COMMIT_ONE_PHASE:
            # The sends and the acks of the consumers' sessions in one engine commit (one
            # store batch): atomic, as a JMS transaction is.
            delivered: list[int] = []
            for consumer, ids in tx.acks:
                if self._by_sid.get(consumer.sid) is consumer:
                    self._settle(consumer, ids)  # their credit came back with the ack
                    delivered.extend(ids)
            self._request(c.Commit(corr=self._corr(), session_id=tx.sid, delivered=delivered))
            return self._final(c.CloseSession(corr=self._corr(), session_id=tx.sid))
        if kind == _ROLLBACK:
            # The client redelivers the rolled-back deliveries itself: they stay in flight.
            self._request(c.Rollback(corr=self._corr(), session_id=tx.sid))
            return self._final(c.CloseSession(corr=self._corr(), session_id=tx.sid))
        raise JMSException(f"TransactionInfo type {kind} is not one this server knows")

    def _on_remove(self, info: ow.RemoveInfo) -> int:
        obj = info.object_id
        last = info.last_delivered_sequence_id
        if isinstance(obj, ow.ConsumerId):
            consumer = self._consumers.get((obj.session_id, obj.value))
            return self._close_consumer(consumer, last) if consumer is not None else 0
        if isinstance(obj, ow.SessionId):
            closing = [
                consumer
                for key in sorted(self._sessions.pop(obj.value, set()))
                if (consumer := self._consumers.get(key)) is not None
            ]
            made = 0
            for i, consumer in enumerate(closing):
                made = self._close_consumer(consumer, last, final=i == len(closing) - 1) or made
            return made
        if isinstance(obj, ow.ProducerId):
            return 0
        if isinstance(obj, ow.ConnectionId):
            for consumer in list(self._consumers.values()):
                self._close_consumer(consumer, last, final=False)
            return self._final(c.Disconnect(corr=self._corr()))
        raise JMSException(f"RemoveInfo of a {type(obj).__name__} is not supported")

    def _close_consumer(self, consumer: _Consumer, last: int, *, final: bool = True) -> int:
        """Close ``consumer``'s engine session; ``final``: its reply answers the command."""
        key = (consumer.id.session_id, consumer.id.value)
        self._consumers.pop(key, None)
        self._by_sid.pop(consumer.sid, None)
        keys = self._sessions.get(key[0])
        if keys is not None:
            keys.discard(key)
        self._cancel_pull_timer(consumer)
        if consumer is self._advisory:
            self._advisory = None
            self._announced.clear()
        if consumer.idle:
            return 0
        # Deliveries up to the last one the client handed to the application count as
        # delivered (their JMSXDeliveryCount grows); the merely prefetched do not.
        delivered = [did for did in consumer.outstanding if did <= last]
        consumer.outstanding.clear()
        return self._request(
            c.CloseSession(corr=self._corr(), session_id=consumer.sid, delivered=delivered),
            self._cid if final else 0,
        )

    def _on_remove_subscription(self, info: ow.RemoveSubscriptionInfo) -> int:
        name = info.subcription_name
        if not name:
            raise JMSException("RemoveSubscriptionInfo needs a subscription name")
        return self._final(c.Unsubscribe(corr=self._corr(), session_id=_SEND_SESSION, name=name))

    def _on_destination(self, info: ow.DestinationInfo) -> int:
        dest = info.destination
        if dest is None:
            raise JMSException("DestinationInfo needs a destination")
        if not isinstance(dest, ow.ActiveMQTempDestination):
            return 0  # ActiveMQ creates ordinary destinations on first use; so does ternmq
        jms = jms_destination(dest)
        if info.operation_type == _ADD:
            return self._final(
                c.CreateTemporary(
                    corr=self._corr(),
                    topic=isinstance(dest, ow.ActiveMQTempTopic),
                    name=jms.name,
                )
            )
        if info.operation_type == _REMOVE:
            return self._final(c.DeleteTemporary(corr=self._corr(), destination=str(jms)))
        raise JMSException(f"DestinationInfo operation {info.operation_type} is not supported")

    def _on_nothing(self, cmd: ow.BaseCommand) -> int:
        """ConnectionControl, ConsumerControl, ShutdownInfo (the socket closes after the
        commands read with it): nothing to do here but answer."""
        return 0

    # ---- timers ---------------------------------------------------------------------------
    def _handshake_expired(self) -> None:
        if self.wire.state in (_OPEN, _CLOSED):
            return
        self._handshake_timed_out()

    # ---- closing --------------------------------------------------------------------------
    def close(self, reason: str, *, drop: bool = False) -> None:
        """Close the socket after what is queued (see :meth:`GatewayConnection.close`)."""
        for consumer in self._consumers.values():
            self._cancel_pull_timer(consumer)
        super().close(reason, drop=drop)

    def fail(self, problem: str) -> None:
        """Report ``problem`` to the peer (a ConnectionError, once the wire format is agreed)
        and close."""
        reply = b""
        if self.wire.wire_format is not None:
            error = ow.JavaThrowable("java.io.IOException", problem)
            reply = ow.encode_frame(ow.ConnectionError(exception=error))
        self._protocol_error(problem, reply)


_Handler = Callable[[OpenWireConnection, ow.DataStructure], int]
_HANDLERS: Final[dict[type[ow.DataStructure], _Handler]] = {
    ow.SessionInfo: OpenWireConnection._on_session,  # type: ignore[dict-item]
    ow.ProducerInfo: OpenWireConnection._on_producer,  # type: ignore[dict-item]
    ow.ConsumerInfo: OpenWireConnection._on_consumer,  # type: ignore[dict-item]
    ow.MessageAck: OpenWireConnection._on_ack,  # type: ignore[dict-item]
    ow.MessagePull: OpenWireConnection._on_pull,  # type: ignore[dict-item]
    ow.TransactionInfo: OpenWireConnection._on_transaction,  # type: ignore[dict-item]
    ow.RemoveInfo: OpenWireConnection._on_remove,  # type: ignore[dict-item]
    ow.RemoveSubscriptionInfo: OpenWireConnection._on_remove_subscription,  # type: ignore[dict-item]
    ow.DestinationInfo: OpenWireConnection._on_destination,  # type: ignore[dict-item]
    ow.ConnectionControl: OpenWireConnection._on_nothing,  # type: ignore[dict-item]
    ow.ConsumerControl: OpenWireConnection._on_nothing,  # type: ignore[dict-item]
    ow.ShutdownInfo: OpenWireConnection._on_nothing,  # type: ignore[dict-item]
}
for _message_type in (
    ow.ActiveMQMessage,
    ow.ActiveMQBytesMessage,
    ow.ActiveMQMapMessage,
    ow.ActiveMQObjectMessage,
    ow.ActiveMQStreamMessage,
    ow.ActiveMQTextMessage,
):
    _HANDLERS[_message_type] = OpenWireConnection._on_message  # type: ignore[assignment]
