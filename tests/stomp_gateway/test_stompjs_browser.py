"""@stomp/stompjs (npm) inside real headless Chromium, over STOMP-over-WebSocket at ``/stomp``
of a real ``ternmq serve``, exchanging messages with ternmq's Python JMS client.

The library is the npm package (``tests/js``, installed by ``make test`` with ``npm ci``);
its browser bundle is loaded into a blank page and driven with ``page.evaluate``: nothing of
the client here was written by this project."""

from __future__ import annotations

import pathlib
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Page, Playwright

from _browser import launch, needs_chromium
from server._support import ServerProcess
from ternmq import BytesMessage, ConnectionFactory, Queue, TextMessage
from ternmq.message import DeliveryMode
from ternmq.server.security import hash_password

from ._support import start_server

BUNDLE = (
    pathlib.Path(__file__).parents[1]
    / "js"
    / "node_modules"
    / "@stomp"
    / "stompjs"
    / "bundles"
    / "stomp.umd.min.js"
)
USER, PASSWORD = "browser", "browser-test-password"
WAIT_MS = 15_000

pytestmark = [
    needs_chromium,
    pytest.mark.skipif(
        not BUNDLE.exists(), reason=f"needs {BUNDLE}: run `npm ci --prefix tests/js` (make test)"
    ),
]

CONFIG = (
    "anonymous = false\n"
    f'[users.{USER}]\npassword = "{hash_password(PASSWORD)}"\nroles = []\n'
    f'[permissions.{USER}]\nsend = [">"]\nconsume = [">"]\ncreate = [">"]\n'
)

# Connect, then keep the client on window.client; resolves with the negotiated subprotocol.
CONNECT_JS = """
async ({url, login, passcode}) => {
  const client = new StompJs.Client({
    brokerURL: url, connectHeaders: {login, passcode},
    reconnectDelay: 0, heartbeatIncoming: 10000, heartbeatOutgoing: 10000,
  });
  window.client = client;
  window.received = [];
  await new Promise((resolve, reject) => {
    client.onConnect = () => resolve();
    client.onStompError = (f) => reject(new Error("ERROR " + f.headers.message));
    client.onWebSocketError = () => reject(new Error("websocket error"));
    client.activate();
  });
  return client.webSocket.protocol;
}
"""

# Subscribe; every MESSAGE is kept (headers and body) and, for client-individual, ACKed.
SUBSCRIBE_JS = """
({destination, ack}) => {
  window.client.subscribe(destination, (m) => {
    window.received.push({headers: m.headers, body: m.body});
    if (ack !== "auto") m.ack();
  }, {ack});
}
"""

# Publish with a receipt; resolves once the broker's RECEIPT arrived.
PUBLISH_JS = """
async ({destination, body, headers}) => {
  const receipt = "r-" + Math.random();
  const got = new Promise((resolve) => window.client.watchForReceipt(receipt, resolve));
  window.client.publish({destination, body, headers: {...headers, receipt}});
  await got;
}
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    srv, _ = start_server(tmp_path_factory.mktemp("stompjs"), CONFIG, http=True)
    try:
        yield srv
    finally:
        srv.kill()


@pytest.fixture(scope="module")
def page(
    server: ServerProcess, playwright: Playwright, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Page]:
    """A tab with the stompjs bundle loaded and a client connected to ``/stomp``."""
    browser = launch(playwright, tmp_path_factory.mktemp("chromium-profile"))
    try:
        tab = browser.new_page()
        tab.set_default_timeout(WAIT_MS)
        errors: list[str] = []
        tab.on("pageerror", lambda exc: errors.append(str(exc)))
        # A page of the broker's own origin without a script policy of its own (the health
        # answer), as a dashboard served beside the broker would be.
        tab.goto(server.http_url + "/api/health")
        tab.add_script_tag(path=str(BUNDLE))
        url = server.http_url.replace("http", "ws", 1) + "/stomp"
        protocol = tab.evaluate(CONNECT_JS, {"url": url, "login": USER, "passcode": PASSWORD})
        assert protocol == "v12.stomp"
        yield tab
        tab.evaluate("() => window.client.deactivate()")
        assert errors == [], f"the page raised: {errors}"
    finally:
        browser.close()


def _factory(server: ServerProcess) -> ConnectionFactory:
    return ConnectionFactory(f"tcp://127.0.0.1:{server.port}", user=USER, password=PASSWORD)


def _received(page: Page, count: int) -> list[dict[str, Any]]:
    page.wait_for_function(f"() => window.received.length >= {count}", timeout=WAIT_MS)
    got: list[dict[str, Any]] = page.evaluate("() => window.received.splice(0)")
    return got


def test_jms_message_reaches_stompjs(server: ServerProcess, page: Page) -> None:
    """A JMS TextMessage with typed properties arrives in the browser with its headers mapped."""
    page.evaluate(SUBSCRIBE_JS, {"destination": "/queue/js.in", "ack": "client-individual"})
    with _factory(server).create_connection() as conn:
        session = conn.create_session()
        producer = session.create_producer(Queue("js.in"))
        producer.priority = 6
        msg = session.create_text_message("from python: ünïcode")
        msg.set_string_property("origin", "python")
        msg.set_int_property("n", 7)
        msg.jms_correlation_id = "corr-1"
        producer.send(msg)
    (got,) = _received(page, 1)
    assert got["body"] == "from python: ünïcode"
    headers = got["headers"]
    assert headers["destination"] == "/queue/js.in"
    assert headers["origin"] == "python"
    assert headers["n"] == "7"
    assert headers["correlation-id"] == "corr-1"
    assert headers["priority"] == "6"
    assert headers["content-type"] == "text/plain;charset=utf-8"
    assert headers["message-id"].startswith("ID:")
    assert headers["redelivered"] == "false"


def test_stompjs_message_reaches_jms(server: ServerProcess, page: Page) -> None:
    """A persistent text publish from the browser, receipted, is a TextMessage for a JMS
    consumer with its priority, persistence and custom header as a String property."""
    page.evaluate(
        PUBLISH_JS,
        {
            "destination": "/queue/js.out",
            "body": "from the browser",
            "headers": {
                "persistent": "true",
                "priority": "8",
                "x-lang": "javascript",
                # stompjs always sends content-length: the content type makes it a text
                "content-type": "text/plain;charset=utf-8",
            },
        },
    )
    with _factory(server).create_connection() as conn:
        consumer = conn.create_session().create_consumer(Queue("js.out"))
        conn.start()
        msg = consumer.receive(10)
    assert isinstance(msg, TextMessage)
    assert msg.text == "from the browser"
    assert msg.jms_delivery_mode == DeliveryMode.PERSISTENT
    assert msg.jms_priority == 8
    assert msg.get_string_property("x-lang") == "javascript"


def test_stompjs_topic_round_trip(page: Page) -> None:
    """The browser publishes on a topic it subscribes to (auto ack) and gets it back."""
    page.evaluate(SUBSCRIBE_JS, {"destination": "/topic/js.news", "ack": "auto"})
    page.wait_for_timeout(200)  # the SUBSCRIBE is on the wire before the publish below
    page.evaluate(PUBLISH_JS, {"destination": "/topic/js.news", "body": "extra", "headers": {}})
    (got,) = _received(page, 1)
    assert got["body"] == "extra"
    assert got["headers"]["destination"] == "/topic/js.news"


def test_stompjs_binary_body_is_a_bytes_message(server: ServerProcess, page: Page) -> None:
    """A ``binaryBody`` publish (no content type) is a BytesMessage with the same octets."""
    page.evaluate(
        """async () => {
          const receipt = "bin-" + Math.random();
          const got = new Promise((resolve) => window.client.watchForReceipt(receipt, resolve));
          window.client.publish({destination: "/queue/js.bin",
                                 binaryBody: new Uint8Array([0, 1, 2, 255]),
                                 headers: {receipt}});
          await got;
        }"""
    )
    with _factory(server).create_connection() as conn:
        consumer = conn.create_session().create_consumer(Queue("js.bin"))
        conn.start()
        msg = consumer.receive(10)
    assert isinstance(msg, BytesMessage)
    assert msg.read_bytes(16) == b"\x00\x01\x02\xff"
