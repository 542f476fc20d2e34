"""STOMP over WebSocket at ``/stomp`` on the HTTP listener of a real ``ternmq serve``: the
subprotocols, a round trip, JMS interop, and an ERROR that closes the WebSocket."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from server._support import ServerProcess
from ternmq import ConnectionFactory, Queue, TextMessage
from ternmq.protocol.stomp import StompFrame, StompLimits, StompParser, encode_frame

from ._support import start_server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    srv, _ = start_server(tmp_path_factory.mktemp("ws"), http=True)
    try:
        yield srv
    finally:
        srv.kill()


class WsStomp:
    """A STOMP client over a WebSocket (aiohttp's client)."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.parser = StompParser(StompLimits())
        self.parser.frame_limit = 1 << 20
        self.frames: list[StompFrame] = []

    async def send(self, command: str, headers: list[tuple[str, str]], body: bytes = b"") -> None:
        await self.ws.send_str(encode_frame(command, headers, body, content_length=False).decode())

    async def recv(self, timeout: float = 10.0) -> StompFrame:
        while not self.frames:
            msg = await self.ws.receive(timeout=timeout)
            if msg.type in (aiohttp.WSMsgType.TEXT, aiohttp.WSMsgType.BINARY):
                data = msg.data.encode() if isinstance(msg.data, str) else msg.data
                self.frames += [f for f in self.parser.feed(data) if isinstance(f, StompFrame)]
            else:
                raise ConnectionError(f"websocket {msg.type}")
        return self.frames.pop(0)


def run(coro: object) -> object:
    return asyncio.run(coro)  # type: ignore[arg-type]


@contextlib.asynccontextmanager
async def ws_stomp(server: ServerProcess, subprotocol: str = "v12.stomp") -> AsyncIterator[WsStomp]:
    """A WebSocket to ``/stomp`` of ``server``, not yet CONNECTed."""
    async with aiohttp.ClientSession() as http:
        url = server.http_url.replace("http", "ws", 1) + "/stomp"
        async with http.ws_connect(url, protocols=(subprotocol,)) as ws:
            assert ws.protocol == subprotocol
            yield WsStomp(ws)


@pytest.mark.parametrize("subprotocol", ["v10.stomp", "v11.stomp", "v12.stomp"])
def test_subprotocols_and_round_trip(server: ServerProcess, subprotocol: str) -> None:
    async def main() -> None:
        async with ws_stomp(server, subprotocol) as cl:
            version = subprotocol[1:].removesuffix(".stomp")
            version = f"{version[0]}.{version[1]}"
            await cl.send("CONNECT", [("accept-version", version), ("host", "x")])
            connected = await cl.recv()
            assert connected.command == "CONNECTED"
            assert connected.get("version") == version
            dest = f"/queue/ws.{version}"
            await cl.send("SUBSCRIBE", [("id", "1"), ("destination", dest)])
            await cl.send("SEND", [("destination", dest), ("receipt", "r")], b"over ws")
            got = [await cl.recv(), await cl.recv()]
            assert {f.command for f in got} == {"RECEIPT", "MESSAGE"}
            assert [f.body for f in got if f.command == "MESSAGE"] == [b"over ws"]

    run(main())


def test_websocket_to_jms_and_back(server: ServerProcess) -> None:
    async def main() -> None:
        async with ws_stomp(server) as cl:
            await cl.send("CONNECT", [("accept-version", "1.2")])
            assert (await cl.recv()).command == "CONNECTED"
            await cl.send("SUBSCRIBE", [("id", "1"), ("destination", "/queue/ws.back")])
            await cl.send("SEND", [("destination", "/queue/ws.jms"), ("receipt", "s")], b"hi")
            assert (await cl.recv()).command == "RECEIPT"
            with ConnectionFactory(f"tcp://127.0.0.1:{server.port}").create_connection() as c:
                c.start()
                s = c.create_session()
                m = s.create_consumer(Queue("ws.jms")).receive(10)
                assert isinstance(m, TextMessage) and m.text == "hi"
                s.create_producer(Queue("ws.back")).send(s.create_text_message("back"))
            reply = await cl.recv()
            assert reply.command == "MESSAGE" and reply.body == b"back"

    run(main())


def test_error_closes_the_websocket(server: ServerProcess) -> None:
    async def main() -> None:
        async with ws_stomp(server) as cl:
            await cl.send("SEND", [("destination", "/queue/x")], b"before connect")
            err = await cl.recv()
            assert err.command == "ERROR" and err.get("message")
            with pytest.raises(ConnectionError):
                await cl.recv()

    run(main())


def test_stomp_connections_are_listed_and_counted_as_stomp(server: ServerProcess) -> None:
    """A STOMP client shows as protocol ``stomp`` in the connection list and in
    ``ternmq_connections{protocol="stomp"}``, not as a native connection."""

    async def main() -> None:
        async with ws_stomp(server) as cl:
            await cl.send("CONNECT", [("accept-version", "1.2"), ("client-id", "ws-listed")])
            assert (await cl.recv()).command == "CONNECTED"
            async with aiohttp.ClientSession() as http:
                async with http.get(server.http_url + "/api/connections") as resp:
                    assert resp.status == 200
                    listed = await resp.json()
                async with http.get(server.http_url + "/metrics") as resp:
                    metrics = await resp.text()
            (mine,) = [x for x in listed if x["client_id"] == "ws-listed"]
            assert mine["protocol"] == "stomp"
            assert mine["address"].startswith("127.0.0.1:")
            stomp = [
                s.value
                for family in text_string_to_metric_families(metrics)
                if family.name == "ternmq_connections"
                for s in family.samples
                if s.labels.get("protocol") == "stomp"
            ]
            assert stomp and stomp[0] >= 1

    run(main())
