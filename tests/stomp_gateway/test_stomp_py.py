"""stomp.py (PyPI; a client no one here wrote) against a real ``ternmq serve``: queues,
topics, durable subscriptions, selectors, the three ack modes, NACK, transactions and
receipts."""

from __future__ import annotations

import pathlib
import queue
import threading
from collections.abc import Iterator
from typing import Any

import pytest

stomp = pytest.importorskip("stomp")

from ternmq import ConnectionFactory, Queue  # noqa: E402

from ._support import start_server, store_commits  # noqa: E402

TIMEOUT = 10.0


class Inbox(stomp.ConnectionListener):  # type: ignore[misc]
    """Collects MESSAGE frames, receipts and errors."""

    def __init__(self) -> None:
        self.messages: queue.Queue[Any] = queue.Queue()
        self.receipts: set[str] = set()
        self.errors: list[Any] = []
        self.cond = threading.Condition()

    def on_message(self, frame: Any) -> None:
        self.messages.put(frame)

    def on_receipt(self, frame: Any) -> None:
        with self.cond:
            self.receipts.add(frame.headers["receipt-id"])
            self.cond.notify_all()

    def on_error(self, frame: Any) -> None:
        self.errors.append(frame)

    def get(self, timeout: float = TIMEOUT) -> Any:
        return self.messages.get(timeout=timeout)

    def none(self, wait: float = 0.4) -> None:
        with pytest.raises(queue.Empty):
            self.messages.get(timeout=wait)

    def wait_receipt(self, rid: str) -> None:
        with self.cond:
            assert self.cond.wait_for(lambda: rid in self.receipts, TIMEOUT), rid


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, int]]:
    """(native port, STOMP port) of one server for the module."""
    server, stomp_port = start_server(
        tmp_path_factory.mktemp("stomppy"), "[broker]\nmax_delivery_attempts = 2\n"
    )
    try:
        yield server.port, stomp_port
    finally:
        server.kill()


@pytest.fixture(scope="module")
def port(served: tuple[int, int]) -> int:
    return served[1]


Client = tuple[Any, Inbox]


def connect(port: int, **headers: str) -> Client:
    conn = stomp.Connection12([("127.0.0.1", port)], auto_content_length=False)
    inbox = Inbox()
    conn.set_listener("", inbox)
    conn.connect(wait=True, headers=headers)
    return conn, inbox


@pytest.fixture
def clients(port: int) -> Iterator[list[Client]]:
    made: list[Client] = []
    yield made
    for conn, _ in made:
        if conn.is_connected():
            conn.disconnect()


def new(clients: list[Client], port: int, **headers: str) -> Client:
    c = connect(port, **headers)
    clients.append(c)
    return c


def test_queue_with_receipt(port: int, clients: list[Client]) -> None:
    conn, inbox = new(clients, port)
    conn.subscribe("/queue/py.q", id="1", receipt="sub")
    inbox.wait_receipt("sub")
    conn.send("/queue/py.q", "hello", receipt="sent", persistent="true")
    inbox.wait_receipt("sent")
    assert inbox.get().body == "hello"


def test_topic(port: int, clients: list[Client]) -> None:
    (a, ia), (b, ib) = new(clients, port), new(clients, port)
    for c, i in ((a, ia), (b, ib)):
        c.subscribe("/topic/py.t", id="t", receipt="s")
        i.wait_receipt("s")
    a.send("/topic/py.t", "news")
    assert ia.get().body == "news" and ib.get().body == "news"


def test_durable_subscription(port: int, clients: list[Client]) -> None:
    conn, inbox = new(clients, port, **{"client-id": "py-durable"})
    conn.subscribe("/topic/py.d", id="d", headers={"durable-subscription-name": "keep"})
    conn.unsubscribe("d", receipt="u")
    inbox.wait_receipt("u")
    conn.disconnect()
    pub, ip = new(clients, port)
    pub.send("/topic/py.d", "kept", receipt="p")
    ip.wait_receipt("p")
    conn, inbox = new(clients, port, **{"client-id": "py-durable"})
    conn.subscribe("/topic/py.d", id="d", headers={"activemq.subscriptionName": "keep"})
    assert inbox.get().body == "kept"


def test_selector(port: int, clients: list[Client]) -> None:
    conn, inbox = new(clients, port)
    conn.subscribe("/queue/py.sel", id="s", headers={"selector": "kind = 'b'"}, receipt="r")
    inbox.wait_receipt("r")
    conn.send("/queue/py.sel", "a", headers={"kind": "a"})
    conn.send("/queue/py.sel", "b", headers={"kind": "b"})
    assert inbox.get().body == "b"
    inbox.none()


@pytest.mark.parametrize("mode", ["auto", "client", "client-individual"])
def test_ack_modes(port: int, clients: list[Client], mode: str) -> None:
    dest = f"/queue/py.ack.{mode}"
    conn, inbox = new(clients, port)
    for i in range(3):
        conn.send(dest, str(i))
    conn.subscribe(dest, id="a", ack=mode)
    got = [inbox.get() for _ in range(3)]
    assert [f.body for f in got] == ["0", "1", "2"]
    if mode == "client":
        conn.ack(got[1].headers["ack"], receipt="acked")  # cumulative: 0 and 1
    elif mode == "client-individual":
        conn.ack(got[0].headers["ack"])
        conn.ack(got[1].headers["ack"], receipt="acked")
    if mode != "auto":
        inbox.wait_receipt("acked")
    conn.disconnect()
    again, inbox2 = new(clients, port)
    again.subscribe(dest, id="a")
    if mode == "auto":
        inbox2.none()
    else:
        redelivered = inbox2.get()
        assert redelivered.body == "2"
        assert redelivered.headers["redelivered"] == "true"
        inbox2.none()


def test_nack_to_dead_letter_queue(port: int, clients: list[Client]) -> None:
    conn, inbox = new(clients, port)
    conn.send("/queue/py.nack", "bad", persistent="true")
    conn.subscribe("/queue/py.nack", id="n", ack="client-individual")
    for attempt in ("1", "2"):  # max_delivery_attempts = 2
        f = inbox.get()
        assert f.headers["JMSXDeliveryCount"] == attempt
        conn.nack(f.headers["ack"])
    inbox.none()
    conn.subscribe("/queue/DLQ", id="dlq")
    assert inbox.get().body == "bad"


def test_transactions(port: int, clients: list[Client]) -> None:
    conn, inbox = new(clients, port)
    watcher, wi = new(clients, port)
    watcher.subscribe("/queue/py.tx", id="w", receipt="w")
    wi.wait_receipt("w")
    tx = conn.begin()
    conn.send("/queue/py.tx", "in tx", transaction=tx)
    wi.none()
    conn.commit(tx, receipt="c")
    inbox.wait_receipt("c")
    assert wi.get().body == "in tx"
    tx2 = conn.begin()
    conn.send("/queue/py.tx", "aborted", transaction=tx2)
    conn.abort(tx2, receipt="a")
    inbox.wait_receipt("a")
    wi.none()


def test_nul_in_a_property_drops_that_header_only(
    served: tuple[int, int], clients: list[Client]
) -> None:
    """A String property holding a NUL (a JMS client may set one; no STOMP header can carry
    it) is left out of the MESSAGE frame, which stays whole: stomp.py reads every other
    header and the body, and the next message too."""
    native, port = served
    conn, inbox = new(clients, port)
    conn.subscribe("/queue/py.nul", id="1", receipt="sub")
    inbox.wait_receipt("sub")
    with ConnectionFactory(f"tcp://127.0.0.1:{native}").create_connection() as jms:
        session = jms.create_session()
        producer = session.create_producer(Queue("py.nul"))
        m = session.create_text_message("after \x00 the body's NUL")
        m.set_string_property("bad", "a\x00b")
        m.set_string_property("good", "kept")
        m.jms_type = "t\x00"
        producer.send(m)
        producer.send(session.create_text_message("next"))
    f = inbox.get()
    assert f.body == "after \x00 the body's NUL"
    assert f.headers["good"] == "kept"
    assert "bad" not in f.headers and "type" not in f.headers
    assert f.headers["message-id"] == m.jms_message_id
    assert inbox.get().body == "next"
    assert not inbox.errors


def test_persistent_sends_an_auto_ack_subscriber_takes_at_once_are_not_written(
    tmp_path: pathlib.Path,
) -> None:
    # Concurrent store and dispatch seen from stomp.py: persistent SENDs with receipts that
    # an ack:auto subscriber takes as they arrive all arrive, cost no store commit, and
    # nothing of them comes back after a SIGKILL and a restart.
    data = tmp_path / "data"
    server, port = start_server(tmp_path, data_dir=data, http=True)
    with server:
        url = server.http_url
        (sub, inbox), (pub, outbox) = connect(port), connect(port)
        sub.subscribe("/queue/py.cs", id="1", ack="auto", receipt="sub")
        inbox.wait_receipt("sub")
        pub.send("/queue/py.cs", "first", persistent="true", receipt="r-first")
        outbox.wait_receipt("r-first")  # (a queue's first message reserves its positions)
        assert inbox.get().body == "first"
        before = store_commits(url)
        for i in range(30):
            pub.send("/queue/py.cs", f"m{i}", persistent="true", receipt=f"r{i}")
            outbox.wait_receipt(f"r{i}")
            assert inbox.get().body == f"m{i}"
        assert store_commits(url) - before <= 3  # one a message, and one an ack, before
        server.kill()
    server, port = start_server(tmp_path, data_dir=data)
    with server:
        conn, inbox = connect(port)
        conn.subscribe("/queue/py.cs", id="1", ack="auto", receipt="sub")
        inbox.wait_receipt("sub")
        inbox.none()  # all were consumed: none was stored
        conn.disconnect()


class AckingInbox(Inbox):
    """An Inbox whose listener ACKs every MESSAGE as it arrives (``client-individual``)."""

    def __init__(self) -> None:
        super().__init__()
        self.conn: Any = None

    def on_message(self, frame: Any) -> None:
        self.conn.ack(frame.headers["ack"])
        super().on_message(frame)


def test_persistent_sends_a_client_ack_subscriber_acks_at_once_are_not_written(
    tmp_path: pathlib.Path,
) -> None:
    # Deferred inserts seen from stomp.py: a client-individual subscriber that ACKs each
    # MESSAGE as it arrives gets persistent SENDs before they are written; each ACK cancels
    # its message's write, and the RECEIPT then leaves. A generous dispatch_hold: however
    # loaded the machine, the ACK comes within it.
    data = tmp_path / "data"
    server, port = start_server(tmp_path, "[broker]\ndispatch_hold = 1.0\n", data, http=True)
    with server:
        url = server.http_url
        sub = stomp.Connection12([("127.0.0.1", port)], auto_content_length=False)
        inbox = AckingInbox()
        inbox.conn = sub
        sub.set_listener("", inbox)
        sub.connect(wait=True)
        sub.subscribe("/queue/py.ci", id="1", ack="client-individual", receipt="sub")
        inbox.wait_receipt("sub")
        pub, outbox = connect(port)
        pub.send("/queue/py.ci", "first", persistent="true", receipt="r-first")
        outbox.wait_receipt("r-first")  # (a queue's first message reserves its positions)
        assert inbox.get().body == "first"
        before = store_commits(url)
        for i in range(30):
            pub.send("/queue/py.ci", f"m{i}", persistent="true", receipt=f"r{i}")
            outbox.wait_receipt(f"r{i}")
            assert inbox.get().body == f"m{i}"
        assert store_commits(url) - before <= 2  # 60 commits without the deferral
        assert not inbox.errors and not outbox.errors
        server.kill()
    server, port = start_server(tmp_path, data_dir=data)
    with server:
        conn, inbox = connect(port)
        conn.subscribe("/queue/py.ci", id="1", ack="auto", receipt="sub")
        inbox.wait_receipt("sub")
        inbox.none()  # every one was acknowledged: none was stored
        conn.disconnect()
