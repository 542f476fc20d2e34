"""STOMP 1.0-1.2 over TCP or TLS: one :class:`StompConnection` per client socket.

Theory of operation
-------------------
A sibling of ``server/native.py`` on the same seams (docs/architecture.md, "The gateway
seam"): the STOMP connection protocol (CONNECT first, version and heart-beat negotiation,
frame limits, handshake and read deadlines) is the sans-IO
:class:`~ternmq.protocol.stomp_connection.StompServerConnection`; the socket, output
batching, backpressure, admission and closing are
:class:`~ternmq.server._gateway.GatewayConnection`'s. What is left here is the translation
between STOMP frames and the engine's commands (``protocol/commands.py``), the same ones the
native client sends, so the engine knows nothing of STOMP:

=================  =====================================================================
STOMP              engine requests
=================  =====================================================================
CONNECT / STOMP    credentials checked by the host, then ``Connect`` (login, client-id)
                   and ``CreateSession`` 1 (the connection's sends outside transactions)
SEND               ``Send`` on session 1, or on the transaction's session
SUBSCRIBE          ``CreateSession`` n + ``CreateConsumer`` n (one session per
                   subscription, so that a NACK releases that subscription's messages only)
UNSUBSCRIBE        ``CloseSession`` n (handed-over, unacknowledged messages counted as
                   delivered); with a durable name header also ``Unsubscribe``
ACK                ``Ack`` on the subscription's session, then ``Credit`` (the prefetch
                   window is the number of unacknowledged messages); the ACKs of one
                   socket read together, one ``Ack`` and one ``Credit`` per subscription
NACK               ``Nack`` of the NACKed deliveries: each is a failed delivery attempt
                   (delay, ``max_delivery_attempts``, dead-letter queue apply); the
                   subscription's other deliveries are untouched
BEGIN              ``CreateSession`` t (transacted)
COMMIT             ``Commit`` t, then the ACKs and NACKs held for t, then ``CloseSession``
ABORT              ``Rollback`` t, ``Nack`` of the messages ACKed in t, ``CloseSession``
DISCONNECT         ``Disconnect``
=================  =====================================================================

Every request carries a ``corr``; its reply comes back through the engine's ordered output
gate, so a reply means the request took effect, and for a persistent send that it is durable.
A ``receipt`` is therefore written when the reply of the frame's last request arrives (a frame
with no request of its own, such as BEGIN, takes its receipt after the last request sent
before it). An ``Error`` reply becomes an ERROR frame (with the receipt id, if the frame
asked for one) and the connection closes, as STOMP prescribes.

A NON_PERSISTENT SEND outside a transaction and without a ``receipt`` header asks for no
answer, so it goes to the engine as a quiet ``Send`` (``corr`` 0), as the native client's
pipelined sends do: answered only if refused, by a ``SendFailed`` event, which becomes the
same ERROR frame (and close) as a refused send with a reply. A receipt of a later frame does
not wait for such sends (the client asked no confirmation of them). While the connection
has sends held for room, sends take replies again, so ``max_inflight_requests`` keeps
bounding what a client can pile up.

Deliveries: a ``Deliver`` becomes a MESSAGE frame (``server/_stomp_mapping.py``). For
``ack:auto`` the message is acknowledged, and its prefetch credit returned, once the frame
is queued for the socket; while the socket's write buffer is full the credit is held, so a
consumer that does not read cannot make the server buffer more than its prefetch. For
``client`` and ``client-individual`` the credit returns on ACK or NACK.

Concurrent store and dispatch: an ``ack:auto`` subscription is created with
``acked_when_sent``, so a PERSISTENT message that it takes as it is sent (the subscriber
keeps up, and nothing else waits to be written) is consumed at once and never written: the
sender's receipt and the MESSAGE leave together, without a commit. Its ``Ack`` then finds
nothing left to do. A message the subscriber does not take at once is written first, as
before.
"""

from __future__ import annotations

import functools
import itertools
import logging
import uuid
from collections.abc import Sequence
from typing import ClassVar, Final, Literal

from ternmq._version import __version__
from ternmq.destination import Destination, TemporaryQueue, TemporaryTopic, destination
from ternmq.errors import JMSException
from ternmq.protocol import commands as c
from ternmq.protocol.stomp import StompFrame, StompLimits, encode_frame
from ternmq.protocol.stomp_connection import (
    HEARTBEAT_EOL,
    ConnectReceived,
    Event,
    ProtocolViolation,
    State,
    StompServerConnection,
)
from ternmq.server._gateway import ConnectionHost, GatewayConnection
from ternmq.server._stomp_mapping import (
    MessageFrames,
    delivery_head,
    encode_send,
    first_headers,
    jms_destination,
    subscription_head,
)
from ternmq.server.native import NativeConnection
from ternmq.server.openwire import OpenWireConnection, is_openwire_start

__all__ = ["SHARED_HEADER", "NativeOrStompConnection", "StompConnection", "is_stomp_start"]

log = logging.getLogger("ternmq.server")

#: The SUBSCRIBE header naming a JMS shared subscription (docs/stomp.md).
SHARED_HEADER: Final = "shared-subscription-name"
_DURABLE_HEADERS: Final = ("durable-subscription-name", "activemq.subscriptionName")
DEFAULT_PREFETCH: Final = 100
_SEND_SESSION: Final = 1
_STALE_MAX: Final = 4096  # ack ids released by a NACK/ABORT, remembered to ignore late ACKs
_RESOLVED_MAX: Final = 256  # STOMP destination texts -> Destination, remembered per connection
# The message part of MESSAGE frames, shared by every STOMP connection of the process (they
# all run on the event loop): topic fan-out delivers one message to each subscriber in turn.
_FRAMES: Final = MessageFrames()

AckMode = Literal["auto", "client", "client-individual"]
_ACK_MODES: Final[tuple[AckMode, ...]] = ("auto", "client", "client-individual")
_PROCESS_ID: Final = uuid.uuid4().hex[:12]
# The states as module constants for the per-frame paths (as in server/native.py).
_OPEN: Final = State.OPEN
_CLOSED: Final = State.CLOSED


class _Subscription:
    """One SUBSCRIBE: its own engine session and consumer (both numbered ``sid``)."""

    __slots__ = ("ack", "durable", "first_head", "head", "id", "sid", "topic", "unacked")

    def __init__(
        self, sub_id: str, sid: int, ack: AckMode, durable: str | None, topic: bool
    ) -> None:
        self.id = sub_id
        self.sid = sid
        self.ack = ack
        self.topic = topic  # its messages may go to other subscribers too
        self.durable = durable
        # "MESSAGE" and its subscription header line, made at the first delivery; and
        # with them the delivery headers of a first delivery without an ack header.
        self.head: bytes | None = None
        self.first_head = b""
        # ack id -> (delivery id, message id if ACK may name it) of the messages handed
        # over and not yet ACKed or NACKed, in delivery order (dicts keep insertion order:
        # an "ack:client" ACK is cumulative).
        self.unacked: dict[str, tuple[int, str | None]] = {}


class _Transaction:
    """A STOMP transaction: a transacted engine session for its sends, and the ACKs and
    NACKs held until COMMIT (they touch the subscriptions' own sessions)."""

    __slots__ = ("acks", "nacks", "sent", "sid")

    def __init__(self, sid: int) -> None:
        self.sid = sid
        self.sent = 0  # encoded octets of the sends it holds until COMMIT
        self.acks: list[tuple[_Subscription, list[int]]] = []
        self.nacks: list[tuple[_Subscription, list[int]]] = []


class StompConnection(GatewayConnection):
    """One client socket speaking STOMP.

    Args:
        host: the server that owns the broker.
        scheme: ``tcp`` or ``tls`` (for logs).
    """

    protocol: ClassVar[str] = "stomp"  # in connection lists and ternmq_connections
    wire: StompServerConnection
    heartbeat_frame: ClassVar[bytes] = HEARTBEAT_EOL

    def __init__(self, host: ConnectionHost, scheme: str) -> None:
        super().__init__(host, scheme)
        #: A SEND without a ``persistent`` header is PERSISTENT (the listener's
        #: ``stomp_persistent_default``; set by the server before the first octet).
        self.stomp_persistent_default = False
        limits = self.limits
        self.wire = StompServerConnection(
            self.last_sent,
            limits=StompLimits(
                max_frame=limits.stomp_max_frame,
                max_headers=limits.stomp_max_headers,
                max_header_length=limits.stomp_max_header_length,
                max_body=limits.stomp_max_body,
                max_handshake_frame=min(8192, limits.max_handshake_frame),
            ),
            heartbeat_send=limits.heartbeat,
            heartbeat_receive=limits.heartbeat,
            max_heartbeat=max(120.0, 4 * limits.heartbeat),
            handshake_timeout=limits.handshake_timeout,
            frame_timeout=limits.frame_timeout,
        )
        self._corrs = itertools.count(1)
        self._ids = itertools.count(2)  # engine session/consumer numbers (1: sends)
        self._msg_ids = itertools.count(1)
        self._msg_id_prefix = ""  # "ID:<process>-<connection>-", set once connected
        # corr -> receipts to write on its reply (None: none so far), for every request
        # awaiting its reply
        self._pending: dict[int, list[str] | None] = {}
        self._riders: dict[int, int] = {}  # corr -> receipts of later frames in _pending
        self._last_corr = 0
        self._close_on_corr: int | None = None
        self._subs: dict[str, _Subscription] = {}
        self._by_sid: dict[int, _Subscription] = {}
        self._ack_owner: dict[str, _Subscription] = {}  # ack id -> its subscription
        self._msg_ack: dict[str, str] = {}  # message-id -> ack id (1.0/1.1 ACK by message-id)
        self._stale: dict[str, None] = {}
        self._txs: dict[str, _Transaction] = {}
        self._temps: dict[str, str] = {}  # "/temp-queue/NAME" -> "temp-queue://..."
        self._resolved: dict[str, Destination] = {}  # "/queue/NAME" -> its Destination
        self._settle: dict[int, list[int]] = {}  # auto-ack deliveries, by session
        self._settle_scheduled = False
        self._held_credit: dict[int, int] = {}  # credit withheld while writing is paused
        # ACKs outside transactions read but not yet handed to the engine, by subscription:
        # the ACK frames of one socket read become one Ack and one Credit per subscription
        # (handed over before any other frame, a receipt, and at the end of the read).
        self._acks: dict[_Subscription, list[int]] = {}
        # Requests made and not yet handed to the engine: a socket read's go together
        # (_run_requests), after its last frame.
        self._reqs: list[c.Request] = []

    @property
    def state(self) -> State:
        """Where the connection is in its life (the wire object's state)."""
        return self.wire.state

    # ---- input ----------------------------------------------------------------------------
    def data_received(self, data: bytes) -> None:
        """Octets from the client: frames become engine requests, in order."""
        wire = self.wire
        state = wire.state
        if state is _OPEN:
            try:
                frames = wire.receive_frames(data, self.loop.time())
            except ProtocolViolation as exc:
                self._violated(exc)
                return
            try:
                for frame in frames:
                    if wire.state is not _OPEN:
                        break
                    self._frame(frame)
            finally:
                if self._acks:
                    self._flush_acks()
                if self._reqs:
                    self._drain()
                self.host.rearm()
            return
        if state is _CLOSED:
            return
        try:
            events = wire.receive_data(data, self.loop.time())
        except ProtocolViolation as exc:
            self._violated(exc)
            return
        if events:
            self._on_events(events)
            self.host.rearm()

    def _violated(self, exc: ProtocolViolation) -> None:
        """Act on what came before the violation, then report it and close."""
        if exc.before:
            self._on_events(exc.before)
            self.host.rearm()
        self.fail(str(exc), receipt=exc.receipt_id)

    def _on_events(self, events: Sequence[Event]) -> None:
        for ev in events:
            if self.wire.state is _CLOSED:
                return
            if isinstance(ev, ConnectReceived):
                frame = ev.frame
                self._check_credentials(
                    frame.get("login"),
                    frame.get("passcode"),
                    functools.partial(self._auth_finished, frame),
                )
            elif isinstance(ev, StompFrame):
                self._frame(ev)
        if self._acks:
            self._flush_acks()
        if self._reqs:
            self._drain()

    def _frame(self, frame: StompFrame) -> None:
        """One frame of an OPEN connection."""
        if self._acks and frame.command != "ACK":
            self._flush_acks()
        handler = _HANDLERS.get(frame.command)
        if handler is None:
            self._drain()
            self.fail(f"{frame.command} is not a frame a client sends once connected")
            return
        try:
            handler(self, frame)
        except JMSException as exc:
            self._drain()  # the frames before this one take effect, as they were read first
            self.fail(str(exc), receipt=frame.get("receipt"))
        except Exception as exc:  # a bug here: this connection only pays for it
            log.exception("event=internal_error peer=%s frame=%s", self.peer, frame.command)
            self._drain()
            self.fail(f"internal error handling {frame.command}: {type(exc).__name__}")

    # ---- requests and replies -------------------------------------------------------------
    def _request(self, req: c.Request, receipt: str | None = None) -> None:
        """Hand ``req`` (whose ``corr`` came from :meth:`_corr`) to the broker; ``receipt``
        is written when its reply comes."""
        self._pending[req.corr] = None if receipt is None else [receipt]
        self._last_corr = req.corr
        self._reqs.append(req)

    def _drain(self) -> None:
        """Hand the requests collected so far to the engine (see :meth:`_run_requests`)."""
        reqs, self._reqs = self._reqs, []
        self._run_requests(reqs)

    def _run_requests(self, reqs: list[c.Request]) -> None:
        """The one place requests reach the engine: those of one socket read (or of one
        timer or callback) together, in order; none after the connection closed (an
        ``Error`` or ``SendFailed`` of an earlier one closes it). Several go to the engine in
        one entry (``Broker.handle_batch``), which stops after one it refused."""
        if self.wire.state is _CLOSED or not reqs:
            return
        if len(reqs) == 1:
            self._submit(reqs[0])
        else:
            self._submit_batch(reqs, stop_on_error=True)

    def _corr(self) -> int:
        return next(self._corrs)

    def _receipt(self, frame: StompFrame) -> None:
        """Write ``frame``'s receipt once every request sent before it is answered."""
        receipt = frame.get("receipt")
        if receipt is None:
            return
        corr = self._last_corr
        pending = self._pending
        if corr in pending:
            # A receipt waiting on another frame's reply counts as a request awaiting its
            # reply: past max_inflight_requests of them reading stops (a flood of
            # receipted ACKs behind a slow persistent send stays bounded).
            waiting = pending[corr]
            if waiting is None:
                pending[corr] = [receipt]
            else:
                waiting.append(receipt)
            self._riders[corr] = self._riders.get(corr, 0) + 1
            self._awaiting()
        else:
            self._write(encode_frame("RECEIPT", [("receipt-id", receipt)], version=self._version))

    @property
    def _version(self) -> str:
        return self.wire.version

    def _emit(self, cmd: c.Command) -> None:
        """The engine's output callback: never calls back into the engine."""
        if self.wire.state is _CLOSED:
            return
        if isinstance(cmd, c.Deliver):
            self._deliver(cmd)
            return
        if isinstance(cmd, (c.ConnectionFailed, c.SendFailed)):
            self.fail(cmd.message)
            return
        corr = cmd.corr
        receipts = self._pending.pop(corr, None) or ()
        if self._riders:
            for _ in range(self._riders.pop(corr, 0)):
                self._replied()
        self._replied()
        if isinstance(cmd, c.Error):
            self.fail(cmd.message, receipt=receipts[0] if receipts else None)
            return
        if isinstance(cmd, c.Connected):
            self._write(
                self.wire.connected_frame(cmd.connection_id, server=f"ternmq/{__version__}")
            )
        for receipt in receipts:
            self._write(encode_frame("RECEIPT", [("receipt-id", receipt)], version=self._version))
        if self._close_on_corr == corr:
            self.close("disconnected")

    def _deliver(self, d: c.Deliver) -> None:
        sub = self._by_sid.get(d.consumer_id)
        if sub is None:
            return  # unsubscribed meanwhile: the engine took it back
        version = self.wire.version
        parts = _FRAMES.parts(d.message, version, keep=sub.topic)
        head = sub.head
        if head is None:
            head = sub.head = subscription_head(sub.id, version)
            sub.first_head = delivery_head(head, None, 1)
        ack_id: str | None = None
        if sub.ack != "auto":
            ack_id = str(d.delivery_id)
            mid = _FRAMES.message_id if version != "1.2" else None
            sub.unacked[ack_id] = (d.delivery_id, mid)
            self._ack_owner[ack_id] = sub
            if mid:
                self._msg_ack[mid] = ack_id
        if ack_id is None and d.delivery_count == 1:
            head = sub.first_head
        else:
            head = delivery_head(head, ack_id, d.delivery_count)
        if len(parts) == 1:
            self._write(head + parts[0])
        else:
            self._write_parts((head, *parts))
        if sub.ack == "auto":
            ids = self._settle.setdefault(sub.sid, [])
            ids.append(d.delivery_id)
            if not self._settle_scheduled:
                self._settle_scheduled = True
                self.loop.call_soon(self._settle_auto)

    def _settle_auto(self) -> None:
        """Acknowledge the auto-ack deliveries written since the last call; their credit
        returns at once unless the socket's write buffer is full."""
        self._settle_scheduled = False
        settle, self._settle = self._settle, {}
        if self.wire.state is not _OPEN:
            return
        for sid, ids in settle.items():
            if sid not in self._by_sid:
                continue
            self._request(c.Ack(corr=self._corr(), session_id=sid, delivery_ids=ids))
            self._credit(sid, len(ids))
        self._drain()
        self.host.rearm()

    def _credit(self, sid: int, n: int) -> None:
        if "write" in self._paused:
            self._held_credit[sid] = self._held_credit.get(sid, 0) + n
            return
        self._request(c.Credit(corr=self._corr(), consumer_id=sid, messages=n))

    def resume_writing(self) -> None:
        """The socket drained: return the credit held back while it was full."""
        super().resume_writing()
        held, self._held_credit = self._held_credit, {}
        if self.wire.state is _OPEN:
            for sid, n in held.items():
                if sid in self._by_sid:
                    self._request(c.Credit(corr=self._corr(), consumer_id=sid, messages=n))
            self._drain()
            self.host.rearm()

    # ---- CONNECT --------------------------------------------------------------------------
    def _auth_finished(self, frame: StompFrame, error: str | None) -> None:
        wire = self.wire
        if wire.state is not State.AUTH:
            return  # closed meanwhile
        login = frame.get("login")
        if error is not None:
            refusal = wire.error_frame(error, detail="check the login and passcode headers")
            self._refuse(login, error, refusal)
            return
        broker = self.host.broker
        if broker is None:
            return
        wire.accept()
        conn = self._authenticated(broker, self._emit, login)
        self._msg_id_prefix = f"ID:{_PROCESS_ID}-{conn.id.removeprefix('ID:')}-"
        client_id = frame.get("client-id")
        self._request(c.Connect(corr=self._corr(), user=self.user, client_id=client_id))
        self._request(c.CreateSession(corr=self._corr(), session_id=_SEND_SESSION))
        self._drain()
        if self.wire.state is not _OPEN:
            self.host.rearm()
            return
        self._log_open(client_id, version=wire.version)
        self._resume("auth")
        try:
            held = wire.take_held()
        except ProtocolViolation as exc:
            self._violated(exc)
            return
        for frame in held:
            if self.wire.state is not _OPEN:
                break
            self._frame(frame)
        if self._acks:
            self._flush_acks()
        self._drain()
        self.host.rearm()

    # ---- destinations ---------------------------------------------------------------------
    def _resolve(self, text: str) -> Destination:
        """A STOMP destination as a JMS one; ``/temp-queue/NAME`` and ``/temp-topic/NAME``
        name a temporary destination of this connection (created on first use), unless NAME
        is one the broker already has (a ``reply-to`` of another connection)."""
        if text.startswith("/temp-"):
            known = self._temps.get(text)
            if known is not None:
                return destination(known)
            jms = destination(jms_destination(text))
            broker = self.host.broker
            if broker is not None and (jms in broker.queues or jms in broker.topics):
                return jms
            assert self.conn is not None
            name = f"{self.conn.id.removeprefix('ID:')}.{jms.name}"
            topic = jms.is_topic
            made: Destination = TemporaryTopic(name) if topic else TemporaryQueue(name)
            self._temps[text] = str(made)
            self._request(c.CreateTemporary(corr=self._corr(), topic=topic, name=name))
            return made
        resolved = self._resolved
        dest = resolved.get(text)
        if dest is None:
            dest = destination(jms_destination(text))
            if len(resolved) >= _RESOLVED_MAX:
                del resolved[next(iter(resolved))]
            resolved[text] = dest
        return dest

    # ---- frames ---------------------------------------------------------------------------
    def _on_send(self, frame: StompFrame) -> None:
        conn = self.conn
        broker = self.host.broker
        if conn is None or broker is None:
            return
        first = first_headers(frame.headers)
        name = first.get("transaction")
        tx = None if name is None else self._transaction(frame)
        receipt = first.get("receipt")
        req = encode_send(
            first,
            frame.body,
            corr=self._corr(),
            session_id=tx.sid if tx is not None else _SEND_SESSION,
            now_ms=broker.clock.now_ms(),
            persistent_default=self.stomp_persistent_default,
            message_id=f"{self._msg_id_prefix}{next(self._msg_ids)}",
            resolve=self._resolve,
            # Quiet: no reply unless refused (a SendFailed event, then an ERROR frame). Not
            # while the connection has sends held for room: then each send waits for its
            # reply again, so max_inflight_requests bounds what a client can pile up.
            quiet=receipt is None and tx is None and not conn.held,
        )
        if tx is not None:
            tx.sent += len(req.message)
            most = self.limits.stomp_max_transaction_bytes
            if tx.sent > most:
                raise JMSException(
                    f"transaction {frame.get('transaction')!r} holds more than "
                    f"stomp_max_transaction_bytes ({most}) of sends: COMMIT more often"
                )
        if req.quiet:
            self._reqs.append(req)
        else:
            self._request(req, receipt)

    def _on_subscribe(self, frame: StompFrame) -> None:
        sub_id = frame.get("id")
        if sub_id is None:
            if self._version != "1.0":
                raise JMSException("SUBSCRIBE needs an id header (any string unique here)")
            sub_id = frame.get("destination") or ""
        if sub_id in self._subs:
            raise JMSException(f"subscription id {sub_id!r} is in use: choose another id")
        dest_text = frame.get("destination")
        if dest_text is None:
            raise JMSException("SUBSCRIBE needs a destination header, e.g. /queue/NAME")
        ack = frame.get("ack", "auto")
        if ack not in _ACK_MODES:
            raise JMSException(f"ack:{ack} is not auto, client or client-individual")
        dest = self._resolve(dest_text)
        durable = next((v for h in _DURABLE_HEADERS if (v := frame.get(h))), None)
        shared = frame.get(SHARED_HEADER)
        kind: c.SubscriptionKind = "none"
        name: str | None = None
        if shared and durable:
            if shared != durable:
                raise JMSException(
                    f"{SHARED_HEADER}:{shared} and a durable name {durable!r} differ: give "
                    "the same name to both for a shared durable subscription"
                )
            kind, name = "shared_durable", shared
        elif shared:
            kind, name = "shared", shared
        elif durable:
            kind, name = "durable", durable
        if kind != "none" and not dest.is_topic:
            raise JMSException(
                f"{dest_text} is a queue: durable and shared subscriptions need a /topic/"
            )
        prefetch_text = frame.get("activemq.prefetchSize")
        prefetch = DEFAULT_PREFETCH
        if prefetch_text is not None:
            try:
                prefetch = int(prefetch_text)
            except ValueError:
                prefetch = -1
            if prefetch < 1:
                raise JMSException(
                    f"activemq.prefetchSize:{prefetch_text} must be a positive integer"
                )
            most = self.limits.stomp_max_prefetch
            if prefetch > most:
                raise JMSException(
                    f"activemq.prefetchSize:{prefetch} exceeds this server's "
                    f"stomp_max_prefetch ({most}): ask for {most} or fewer"
                )
        sid = next(self._ids)
        sub = _Subscription(
            sub_id,
            sid,
            ack,
            name if kind in ("durable", "shared_durable") else None,
            dest.is_topic,
        )
        self._subs[sub_id] = sub
        self._by_sid[sid] = sub
        self._request(c.CreateSession(corr=self._corr(), session_id=sid))
        self._request(
            c.CreateConsumer(
                corr=self._corr(),
                session_id=sid,
                consumer_id=sid,
                destination=str(dest),
                selector=frame.get("selector") or None,
                kind=kind,
                subscription=name,
                prefetch=prefetch,
                acked_when_sent=ack == "auto",
            ),
            frame.get("receipt"),
        )

    def _on_unsubscribe(self, frame: StompFrame) -> None:
        sub_id = frame.get("id") or (frame.get("destination") if self._version == "1.0" else None)
        durable = next((v for h in _DURABLE_HEADERS if (v := frame.get(h))), None)
        sub = self._subs.pop(sub_id, None) if sub_id is not None else None
        if sub is None and durable is None:
            raise JMSException(
                f"no subscription with id {sub_id!r} on this connection: UNSUBSCRIBE names "
                "the id of an earlier SUBSCRIBE"
            )
        if sub is not None:
            del self._by_sid[sub.sid]
            delivered = [did for did, _ in sub.unacked.values()]
            self._forget(sub)
            self._request(
                c.CloseSession(corr=self._corr(), session_id=sub.sid, delivered=delivered)
            )
        if durable is not None:
            self._request(c.Unsubscribe(corr=self._corr(), session_id=_SEND_SESSION, name=durable))
        self._receipt(frame)

    def _forget(self, sub: _Subscription) -> None:
        """Drop ``sub``'s outstanding ack ids (released by the engine): a late ACK of one is
        ignored rather than an error."""
        stale = self._stale
        for ack_id, (_, mid) in sub.unacked.items():
            stale[ack_id] = None
            self._ack_owner.pop(ack_id, None)
            if mid:
                stale[mid] = None
                self._msg_ack.pop(mid, None)
        sub.unacked.clear()
        while len(stale) > _STALE_MAX:
            del stale[next(iter(stale))]

    def _take(self, sub: _Subscription, ack_id: str) -> int:
        """Settle one handed-over message of ``sub``: its delivery id."""
        did, mid = sub.unacked.pop(ack_id)
        del self._ack_owner[ack_id]
        if mid:
            self._msg_ack.pop(mid, None)
        return did

    def _acked(self, frame: StompFrame) -> tuple[_Subscription, list[int]] | None:
        """The subscription and deliveries an ACK or NACK settles (cumulative for
        ``ack:client``), removed from the unacknowledged; None for an id released before
        (by a NACK, an ABORT or UNSUBSCRIBE: the message comes again with a new id)."""
        ack_id = frame.get("id")
        if ack_id is None:  # STOMP 1.0 and 1.1 name the message-id
            mid = frame.get("message-id")
            if mid is None:
                raise JMSException(
                    f"{frame.command} needs an id header (the MESSAGE's ack header), or in "
                    "STOMP 1.0/1.1 a message-id header"
                )
            ack_id = self._msg_ack.get(mid)
            if ack_id is None:
                if mid in self._stale:
                    return None
                raise JMSException(
                    f"no message {mid!r} awaits acknowledgement on this connection: ACK or "
                    "NACK a MESSAGE of an ack:client or ack:client-individual subscription, once"
                )
        sub = self._ack_owner.get(ack_id)
        if sub is None:
            if ack_id in self._stale:
                return None
            raise JMSException(
                f"no message with ack id {ack_id!r} awaits acknowledgement on this "
                "connection: ACK or NACK the ack header of a MESSAGE of an ack:client or "
                "ack:client-individual subscription, once"
            )
        if sub.ack == "client":
            ids: list[int] = []
            for key in list(sub.unacked):
                ids.append(self._take(sub, key))
                if key == ack_id:
                    break
            return sub, ids
        return sub, [self._take(sub, ack_id)]

    def _on_ack(self, frame: StompFrame) -> None:
        tx = self._transaction(frame)
        settled = self._acked(frame)
        if settled is not None:
            sub, ids = settled
            if tx is not None:
                tx.acks.append((sub, ids))
            else:
                held = self._acks.get(sub)
                if held is None:
                    self._acks[sub] = ids
                else:
                    held += ids
        if self._acks and frame.get("receipt") is not None:
            self._flush_acks()
        self._receipt(frame)

    def _flush_acks(self) -> None:
        """Hand the ACKs held from this read to the engine: one Ack and one Credit per
        subscription (a subscription gone meanwhile has released them already)."""
        acks, self._acks = self._acks, {}
        for sub, ids in acks.items():
            if self.wire.state is not _OPEN:
                return
            if sub.sid in self._by_sid:
                self._request(c.Ack(corr=self._corr(), session_id=sub.sid, delivery_ids=ids))
                self._credit(sub.sid, len(ids))

    def _on_nack(self, frame: StompFrame) -> None:
        tx = self._transaction(frame)
        settled = self._acked(frame)
        if settled is not None:
            sub, ids = settled
            if tx is not None:
                tx.nacks.append((sub, ids))
            else:
                self._nack(sub, ids)
        self._receipt(frame)

    def _nack(self, sub: _Subscription, ids: list[int]) -> None:
        """Give ``ids`` back as failed delivery attempts (the redelivery policy applies); the
        subscription's other deliveries stay outstanding, their ack ids valid."""
        self._request(c.Nack(corr=self._corr(), session_id=sub.sid, delivery_ids=ids))
        self._credit(sub.sid, len(ids))

    def _transaction(self, frame: StompFrame) -> _Transaction | None:
        name = frame.get("transaction")
        if name is None:
            return None
        tx = self._txs.get(name)
        if tx is None:
            raise JMSException(f"no transaction {name!r} is open: BEGIN it first")
        return tx

    def _on_begin(self, frame: StompFrame) -> None:
        name = frame.get("transaction")
        if not name:
            raise JMSException("BEGIN needs a transaction header (a name for it)")
        if name in self._txs:
            raise JMSException(f"transaction {name!r} is already open: COMMIT or ABORT it")
        tx = _Transaction(next(self._ids))
        self._txs[name] = tx
        self._request(c.CreateSession(corr=self._corr(), session_id=tx.sid, transacted=True))
        self._receipt(frame)

    def _end(self, frame: StompFrame) -> _Transaction:
        name = frame.get("transaction")
        tx = self._txs.pop(name, None) if name else None
        if tx is None:
            raise JMSException(
                f"{frame.command} names no open transaction ({name!r}): BEGIN one first"
            )
        return tx

    def _on_commit(self, frame: StompFrame) -> None:
        tx = self._end(frame)
        self._request(c.Commit(corr=self._corr(), session_id=tx.sid))
        for sub, ids in tx.acks:
            if sub.sid in self._by_sid:
                self._request(c.Ack(corr=self._corr(), session_id=sub.sid, delivery_ids=ids))
                self._credit(sub.sid, len(ids))
        for sub, ids in tx.nacks:
            if sub.sid in self._by_sid:
                self._nack(sub, ids)
        self._request(c.CloseSession(corr=self._corr(), session_id=tx.sid))
        self._receipt(frame)

    def _on_abort(self, frame: StompFrame) -> None:
        tx = self._end(frame)
        self._request(c.Rollback(corr=self._corr(), session_id=tx.sid))
        for sub, ids in tx.acks + tx.nacks:
            if sub.sid in self._by_sid:
                self._nack(sub, ids)
        self._request(c.CloseSession(corr=self._corr(), session_id=tx.sid))
        self._receipt(frame)

    def _on_disconnect(self, frame: StompFrame) -> None:
        corr = self._corr()
        self._close_on_corr = corr
        self._request(c.Disconnect(corr=corr), frame.get("receipt"))

    # ---- timers ---------------------------------------------------------------------------
    def _handshake_expired(self) -> None:
        if self.wire.state not in (State.CONNECT, State.AUTH):
            return
        self._handshake_timed_out(
            self.wire.error_frame(
                "no CONNECT within handshake_timeout", detail="send CONNECT first, at once"
            )
        )

    # ---- closing --------------------------------------------------------------------------
    def fail(self, problem: str, *, receipt: str | None = None) -> None:
        """Report ``problem`` to the peer (one ERROR frame) and close."""
        self._protocol_error(problem, self.wire.error_frame(problem, receipt_id=receipt))


_HANDLERS: Final = {
    "SEND": StompConnection._on_send,
    "SUBSCRIBE": StompConnection._on_subscribe,
    "UNSUBSCRIBE": StompConnection._on_unsubscribe,
    "ACK": StompConnection._on_ack,
    "NACK": StompConnection._on_nack,
    "BEGIN": StompConnection._on_begin,
    "COMMIT": StompConnection._on_commit,
    "ABORT": StompConnection._on_abort,
    "DISCONNECT": StompConnection._on_disconnect,
}


def is_stomp_start(data: bytes) -> bool | None:
    """Whether the first octets of a connection are STOMP (``CONNECT``, ``STOMP``, or EOLs
    before them); None while too few octets have arrived to tell."""
    head = data.lstrip(b"\r\n")
    if not head:
        return None if len(data) < 16 else False
    for word in (b"CONNECT", b"STOMP"):
        n = min(len(head), len(word))
        if head[:n] == word[:n]:
            return True if n == len(word) else None
    return False


class NativeOrStompConnection(NativeConnection):
    """A connection of the main (native) listener that hands itself to the STOMP gateway
    when its first octets are STOMP (``CONNECT``, ``STOMP``, or EOLs before them), or to the
    OpenWire gateway when they are an OpenWire WireFormatInfo frame (a size, type 1, the
    magic ``ActiveMQ``: :func:`~ternmq.server.openwire.is_openwire_start`), as Artemis's
    acceptors do (SERVER.md "Listeners and ports"). The one place protocols are detected.

    Only the first chunk (or the few octets it takes to tell) is looked at: then the
    instance becomes a :class:`NativeConnection` (its class is swapped), and the transport
    is told again who its protocol is (uvloop caches the bound method), so the native hot
    path pays nothing for the detection.
    """

    def __init__(self, host: ConnectionHost, scheme: str) -> None:
        super().__init__(host, scheme)
        self._head = b""
        #: Handed to the STOMP connection (see :class:`StompConnection`).
        self.stomp_persistent_default = False

    def data_received(self, data: bytes) -> None:
        """The first octets: decide which protocol this connection speaks."""
        head = self._head + data if self._head else data
        verdict = is_stomp_start(head)
        openwire = is_openwire_start(head)
        if verdict is None or openwire is None:
            if len(head) > 64:  # cannot happen: both tell within 16 octets
                self.fail("the first octets are no protocol this listener speaks")
                return
            self._head = head  # at most a few octets: a prefix of CONNECT, or EOLs
            return
        self._head = b""
        # From now on a plain native connection: the class, not a bound method stored on the
        # instance (that would be a reference cycle outliving the socket).
        self.__class__ = NativeConnection  # type: ignore[assignment]
        t = self.transport
        if t is None or t.is_closing():
            return
        if not verdict and not openwire:
            t.set_protocol(self)
            self.data_received(head)
            return
        self._mark_closed()
        self._cancel_timers()
        self.host.unregister(self)
        other: GatewayConnection
        if openwire:
            other = OpenWireConnection(self.host, self.scheme)
        else:
            stomp = StompConnection(self.host, self.scheme)
            stomp.stomp_persistent_default = self.stomp_persistent_default
            other = stomp
        t.set_protocol(other)
        other.connection_made(t)
        other.data_received(head)
