"""Helpers of the OpenWire gateway tests: a ``ternmq serve`` (its main port serves OpenWire;
with ``openwire_port`` an OpenWire-only listener too) and a raw OpenWire client on ternmq's
own codec (``protocol/openwire.py``): commands out, commands in, nothing hidden.

The client does what ActiveMQ's Java client does on the wire, in the same order
(WireFormatInfo, ConnectionInfo, SessionInfo, ConsumerInfo, ...), with ids of the same
shapes, so the tests read like the client's traffic.
"""

from __future__ import annotations

import collections
import itertools
import pathlib
import re
import socket
import ssl
import time
from typing import Any

from server._support import HOST, IO_TIMEOUT, ServerProcess
from ternmq.protocol import openwire as ow

__all__ = ["HOST", "IO_TIMEOUT", "OpenWireRaw", "start_server", "text_message"]

_OPENWIRE_RE = r"event=listening protocol=openwire address=127\.0\.0\.1:(\d+) url=tcp://"


def start_server(
    tmp_path: pathlib.Path, config: str = "", *, openwire_port: bool = False, http: bool = False
) -> tuple[ServerProcess, int]:
    """A ``ternmq serve`` (plus ``config``; with ``http`` the HTTP listener too); (server, the
    port to speak OpenWire to: the main port, or with ``openwire_port`` the OpenWire-only
    listener's)."""
    extra = "openwire_port = 0\n" if openwire_port else ""
    server = ServerProcess(
        tmp_path / f"data-{time.monotonic_ns()}", extra + config, tmp_path, http=http
    )
    if not openwire_port:
        return server, server.port
    try:
        line = server.wait_log(_OPENWIRE_RE, timeout=30)
    except BaseException:
        server.kill()
        raise
    m = re.search(_OPENWIRE_RE, line)
    assert m is not None
    return server, int(m.group(1))


def text_message(
    dest: ow.ActiveMQDestination,
    text: str,
    *,
    producer: ow.ProducerId,
    seq: int,
    persistent: bool = True,
    tx: ow.TransactionId | None = None,
    properties: dict[str, ow.Primitive] | None = None,
    priority: int = 4,
    expiration: int = 0,
) -> ow.ActiveMQTextMessage:
    """A TextMessage as ActiveMQ's producer fills it in."""
    return ow.ActiveMQTextMessage(
        producer_id=producer,
        destination=dest,
        transaction_id=tx,
        message_id=ow.MessageId(producer_id=producer, producer_sequence_id=seq),
        persistent=persistent,
        priority=priority,
        expiration=expiration,
        timestamp=int(time.time() * 1000),
        content=ow.encode_text_body(text),
        marshalled_properties=ow.encode_primitive_map(properties) if properties else None,
    )


class OpenWireRaw:
    """A raw OpenWire client. :meth:`handshake` exchanges WireFormatInfo; :meth:`request`
    sends a command with ``responseRequired`` and returns its Response or
    ExceptionResponse; everything else read meanwhile waits in :attr:`inbox`."""

    def __init__(
        self,
        port: int,
        *,
        timeout: float = IO_TIMEOUT,
        connect: bool = True,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        sock = socket.create_connection((HOST, port), timeout=timeout)
        if tls is not None:
            sock = tls.wrap_socket(sock, server_hostname="localhost")
        self.sock = sock
        self.parser = ow.FrameParser(64 << 20)
        self.inbox: collections.deque[ow.DataStructure] = collections.deque()
        self._ids = itertools.count(1)
        self.connection_id = f"ID:pytest-{time.monotonic_ns()}-1:1"
        self.server_info: ow.WireFormatInfo | None = None
        self.broker_info: ow.BrokerInfo | None = None
        self._sessions = itertools.count(1)
        self._values = itertools.count(1)
        self._producer_seq = itertools.count(1)
        if connect:
            self.handshake()

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> OpenWireRaw:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- raw I/O ------------------------------------------------------------------------
    def send(self, command: ow.DataStructure) -> None:
        """Write ``command`` (a BaseCommand gets the next command id if it has none)."""
        if isinstance(command, ow.BaseCommand) and not command.command_id:
            command.command_id = next(self._ids)
        self.sock.sendall(ow.encode_frame(command))

    def read(self, timeout: float = IO_TIMEOUT) -> ow.DataStructure:
        """The next command from the server (ConnectionError raised on EOF)."""
        if self.inbox:
            return self.inbox.popleft()
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no command from the server")
            self.sock.settimeout(left)
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("the server closed the connection")
            for command in self.parser.feed(data):
                self.inbox.append(command)
            if self.inbox:
                return self.inbox.popleft()

    def read_until_closed(self, timeout: float = IO_TIMEOUT) -> list[ow.DataStructure]:
        """Every command until the server closes the socket."""
        out = list(self.inbox)
        self.inbox.clear()
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"the server did not close the connection; read {out}")
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(65536)
            except ConnectionResetError:
                return out
            if not data:
                return out
            out.extend(self.parser.feed(data))

    def request(self, command: ow.BaseCommand, timeout: float = IO_TIMEOUT) -> ow.Response:
        """Send ``command`` asking for a response; the Response (or ExceptionResponse) that
        answers it. Other commands read meanwhile stay in :attr:`inbox`, in order."""
        command.response_required = True
        self.send(command)
        kept: list[ow.DataStructure] = []
        deadline = time.monotonic() + timeout
        try:
            while True:
                got = self.read(max(0.01, deadline - time.monotonic()))
                if isinstance(got, ow.Response) and got.correlation_id == command.command_id:
                    return got
                kept.append(got)
        finally:
            self.inbox.extendleft(reversed(kept))

    def expect(self, kind: type[ow.DataStructure], timeout: float = IO_TIMEOUT) -> ow.DataStructure:
        """The next command of ``kind`` (KeepAliveInfo skipped); anything else fails."""
        while True:
            got = self.read(timeout)
            if isinstance(got, ow.KeepAliveInfo) and kind is not ow.KeepAliveInfo:
                continue
            assert isinstance(got, kind), f"expected {kind.__name__}, got {got}"
            return got

    # ---- the client's conversation --------------------------------------------------------
    def handshake(self, *, max_inactivity_ms: int = 30_000, version: int = 12) -> None:
        """Exchange WireFormatInfo (the server answers with its own and a BrokerInfo)."""
        offer = ow.WireFormat(
            version=version,
            tight_encoding=True,
            cache=True,
            cache_size=1024,
            tcp_no_delay=True,
            max_inactivity_ms=max_inactivity_ms,
            max_inactivity_initial_delay_ms=10_000,
            max_frame_size=100 << 20,
        )
        self.send(offer.to_info())
        info = self.read()
        assert isinstance(info, ow.WireFormatInfo), info
        self.server_info = info
        broker = self.read()
        assert isinstance(broker, ow.BrokerInfo), broker
        self.broker_info = broker

    def connect(
        self,
        user: str | None = None,
        password: str | None = None,
        client_id: str | None = None,
    ) -> ow.Response:
        """ConnectionInfo; its Response (or ExceptionResponse)."""
        return self.request(
            ow.ConnectionInfo(
                connection_id=ow.ConnectionId(value=self.connection_id),
                client_id=client_id or f"pytest-{time.monotonic_ns()}",
                user_name=user,
                password=password,
            )
        )

    def session(self) -> ow.SessionId:
        """A new session (SessionInfo, answered)."""
        sid = ow.SessionId(connection_id=self.connection_id, value=next(self._sessions))
        got = self.request(ow.SessionInfo(session_id=sid))
        assert not isinstance(got, ow.ExceptionResponse), got
        return sid

    def producer(self, session: ow.SessionId) -> ow.ProducerId:
        """A new producer of ``session`` (ProducerInfo, answered)."""
        pid = ow.ProducerId(
            connection_id=self.connection_id, session_id=session.value, value=next(self._values)
        )
        got = self.request(ow.ProducerInfo(producer_id=pid))
        assert not isinstance(got, ow.ExceptionResponse), got
        return pid

    def consumer_id(self, session: ow.SessionId) -> ow.ConsumerId:
        """A fresh ConsumerId of ``session``."""
        return ow.ConsumerId(
            connection_id=self.connection_id, session_id=session.value, value=next(self._values)
        )

    def consume(
        self,
        session: ow.SessionId,
        dest: ow.ActiveMQDestination,
        *,
        prefetch: int = 1000,
        selector: str | None = None,
        subscription: str | None = None,
        browser: bool = False,
    ) -> tuple[ow.ConsumerId, ow.Response]:
        """ConsumerInfo; (the consumer id, its Response or ExceptionResponse)."""
        cid = self.consumer_id(session)
        got = self.request(
            ow.ConsumerInfo(
                consumer_id=cid,
                destination=dest,
                prefetch_size=prefetch,
                selector=selector,
                subscription_name=subscription,
                browser=browser,
            )
        )
        return cid, got

    def send_text(
        self,
        producer: ow.ProducerId,
        dest: ow.ActiveMQDestination,
        text: str,
        *,
        sync: bool = True,
        **kw: object,
    ) -> ow.Response | None:
        """Send a TextMessage; with ``sync`` its Response."""
        msg = text_message(dest, text, producer=producer, seq=next(self._producer_seq), **kw)  # type: ignore[arg-type]
        if sync:
            return self.request(msg)
        self.send(msg)
        return None

    def dispatch(self, timeout: float = IO_TIMEOUT) -> ow.MessageDispatch:
        """The next MessageDispatch."""
        got = self.expect(ow.MessageDispatch, timeout)
        assert isinstance(got, ow.MessageDispatch)
        return got

    def ack(
        self,
        dispatch: ow.MessageDispatch,
        ack_type: int = 2,
        *,
        sync: bool = False,
        **options: Any,
    ) -> ow.Response | None:
        """Send the MessageAck of ``dispatch`` (``options``: :meth:`ack_command`'s)."""
        ack = self.ack_command(dispatch, ack_type, **options)
        if sync:
            return self.request(ack)
        self.send(ack)
        return None

    def ack_command(
        self,
        dispatch: ow.MessageDispatch,
        ack_type: int = 2,
        *,
        first: ow.MessageDispatch | None = None,
        count: int = 1,
        tx: ow.TransactionId | None = None,
    ) -> ow.MessageAck:
        """A MessageAck of ``dispatch`` (a range from ``first`` if given), with its command
        id: :meth:`ack` sends it, or send several in one write."""
        assert dispatch.message is not None
        return ow.MessageAck(
            command_id=next(self._ids),
            destination=dispatch.destination,
            transaction_id=tx,
            consumer_id=dispatch.consumer_id,
            ack_type=ack_type,
            first_message_id=(first or dispatch).message.message_id,  # type: ignore[union-attr]
            last_message_id=dispatch.message.message_id,
            message_count=count,
        )

    def transaction(self, value: int, kind: int) -> ow.Response:
        """A TransactionInfo of local transaction ``value`` (0 BEGIN, 2 COMMIT_ONE_PHASE,
        4 ROLLBACK)."""
        return self.request(
            ow.TransactionInfo(
                connection_id=ow.ConnectionId(value=self.connection_id),
                transaction_id=self.tx_id(value),
                type=kind,
            )
        )

    def tx_id(self, value: int) -> ow.LocalTransactionId:
        """Local transaction ``value`` of this connection."""
        return ow.LocalTransactionId(
            value=value, connection_id=ow.ConnectionId(value=self.connection_id)
        )

    def remove(self, obj: ow.DataStructure, last_delivered: int = -1) -> ow.Response:
        """RemoveInfo of a consumer, session, producer or the connection."""
        return self.request(ow.RemoveInfo(object_id=obj, last_delivered_sequence_id=last_delivered))

    def goodbye(self) -> None:
        """RemoveInfo of the connection, then ShutdownInfo (the client's close)."""
        got = self.remove(ow.ConnectionId(value=self.connection_id))
        assert not isinstance(got, ow.ExceptionResponse), got
        self.send(ow.ShutdownInfo())
