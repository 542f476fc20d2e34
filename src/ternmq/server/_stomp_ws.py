"""STOMP over WebSocket at ``/stomp`` on the HTTP listener (subprotocols ``v10.stomp``,
``v11.stomp``, ``v12.stomp``), as browsers' STOMP clients (@stomp/stompjs) expect.

Theory of operation
-------------------
The STOMP logic is :class:`~ternmq.server.stomp.StompConnection`, unchanged: it only asks of
its transport what an ``asyncio.Transport`` offers (``writelines``, ``close``, ``abort``,
``pause_reading``/``resume_reading``, write-buffer limits, ``get_extra_info``). A WebSocket
is not such a transport, so :class:`_WebSocketTransport` is one over an aiohttp
``WebSocketResponse``: what the connection writes is queued and sent by one task, one
WebSocket message per flush (text when it is UTF-8, as STOMP frames usually are, else
binary); past ``limits.write_buffer_high`` queued octets the connection is told to pause
(``pause_writing``) exactly as a socket would, and resumed below ``write_buffer_low``. The
handler feeds each received message's octets to ``data_received`` (a message may hold
several frames, or part of one), and waits while reading is paused.

Everything else (admission, CONNECT's login, permissions, limits, handshake and read
deadlines, heart-beats) is the STOMP gateway's, so STOMP over WebSocket behaves exactly as
over TCP. The path is public on the HTTP listener: authentication is CONNECT's.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from typing import Any, Final

from aiohttp import WSMsgType, web

from ternmq.server.http import HttpFrontend
from ternmq.server.stomp import StompConnection

__all__ = ["PATH", "SUBPROTOCOLS", "setup"]

PATH: Final = "/stomp"
SUBPROTOCOLS: Final = ("v12.stomp", "v11.stomp", "v10.stomp")


class _WebSocketTransport(asyncio.Transport):
    """The part of ``asyncio.Transport`` a gateway connection uses, over a WebSocket."""

    def __init__(self, ws: web.WebSocketResponse, request: web.Request) -> None:
        super().__init__()
        self._ws = ws
        self._request = request
        self._protocol: StompConnection | None = None
        self._queue: collections.deque[bytes] = collections.deque()
        self._queued = 0
        self._high = 64 * 1024
        self._low = 16 * 1024
        self._paused_writing = False
        self._closing = False
        self._sender: asyncio.Task[None] | None = None
        self.reading = asyncio.Event()
        self.reading.set()
        self.done = asyncio.Event()

    def attach(self, protocol: StompConnection) -> None:
        """The connection this transport serves (told to pause and resume writing)."""
        self._protocol = protocol

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        """The underlying socket's ``peername``, ``peercert`` and so on."""
        t = self._request.transport
        return t.get_extra_info(name, default) if t is not None else default

    def is_closing(self) -> bool:
        """Whether :meth:`close` or :meth:`abort` was called."""
        return self._closing

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        """Queued octets past ``high`` pause the connection's writing until below ``low``."""
        if high is not None:
            self._high = high
        self._low = low if low is not None else self._high // 4

    def get_write_buffer_size(self) -> int:
        """Octets queued and not yet sent."""
        return self._queued

    def write(self, data: bytes | bytearray | memoryview) -> None:
        """Queue ``data`` as one WebSocket message."""
        self.writelines([bytes(data)])

    def writelines(self, list_of_data: Any) -> None:
        """Queue the chunks as one WebSocket message."""
        if self._closing:
            return
        data = b"".join(list_of_data)
        if not data:
            return
        self._queue.append(data)
        self._queued += len(data)
        if not self._paused_writing and self._queued > self._high and self._protocol:
            self._paused_writing = True
            self._protocol.pause_writing()
        if self._sender is None:
            self._sender = asyncio.get_running_loop().create_task(self._send())

    async def _send(self) -> None:
        ws = self._ws
        try:
            while self._queue:
                data = self._queue.popleft()
                try:
                    await ws.send_str(data.decode("utf-8"))
                except UnicodeDecodeError:
                    await ws.send_bytes(data)
                self._queued -= len(data)
                if self._paused_writing and self._queued <= self._low and self._protocol:
                    self._paused_writing = False
                    self._protocol.resume_writing()
        except (ConnectionError, RuntimeError):
            self._queue.clear()
            self._queued = 0
        finally:
            self._sender = None
        if self._closing:
            await self._finish()

    def close(self) -> None:
        """Close once the queued messages are sent."""
        if self._closing:
            return
        self._closing = True
        self.reading.set()
        if self._sender is None:
            asyncio.get_running_loop().create_task(self._finish())

    def abort(self) -> None:
        """Close now, dropping what is queued."""
        self._closing = True
        self._queue.clear()
        self._queued = 0
        self.reading.set()
        asyncio.get_running_loop().create_task(self._finish())

    async def _finish(self) -> None:
        with contextlib.suppress(Exception):
            await self._ws.close()
        self.done.set()

    def pause_reading(self) -> None:
        """Stop handing received messages to the connection."""
        self.reading.clear()

    def resume_reading(self) -> None:
        """Hand received messages to the connection again."""
        self.reading.set()

    def is_reading(self) -> bool:
        """Whether received messages are handed over."""
        return self.reading.is_set()


def setup(app: web.Application, frontend: HttpFrontend) -> None:
    """Add ``/stomp`` to the HTTP listener's application (public: CONNECT authenticates)."""
    host = frontend.host
    frontend.auth.add_public(PATH)

    async def stomp_over_websocket(request: web.Request) -> web.StreamResponse:
        limits = host.limits
        ws = web.WebSocketResponse(
            protocols=SUBPROTOCOLS, max_msg_size=limits.stomp_max_frame, autoping=True
        )
        await ws.prepare(request)
        scheme = "wss" if request.secure else "ws"
        conn = StompConnection(host, scheme)
        conn.stomp_persistent_default = host.config.stomp_persistent_default
        transport = _WebSocketTransport(ws, request)
        transport.attach(conn)
        conn.connection_made(transport)
        try:
            async for msg in ws:
                if transport.is_closing():
                    break
                if msg.type is WSMsgType.TEXT:
                    conn.data_received(msg.data.encode("utf-8"))
                elif msg.type is WSMsgType.BINARY:
                    conn.data_received(msg.data)
                else:
                    break
                await transport.reading.wait()
        finally:
            if not transport.is_closing():
                transport.close()
            conn.connection_lost(None)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(transport.done.wait(), limits.shutdown_grace)
        return ws

    app.router.add_get(PATH, stomp_over_websocket)
