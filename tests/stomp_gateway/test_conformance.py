"""STOMP conformance over raw frames: every bullet of SERVER.md "STOMP" against a real
``ternmq serve`` process (the client is ternmq's own sans-IO codec, nothing hidden).

Written once, run over each transport: every test taking the ``stomp`` (or ``transport``)
fixture runs over TCP (the STOMP port) and over WebSocket (``/stomp`` on the HTTP listener,
subprotocol ``vXY.stomp`` of the version). The few that are about one transport only (octets
split across TCP segments, detection on the main port, the STOMP TLS listener, a socket's
receive buffer) carry the :data:`tcp_only` mark with its reason.

One server per transport (the tests use distinct destination names); tests that need another
configuration start their own.
"""

from __future__ import annotations

import functools
import pathlib
import socket
import time
from collections.abc import Callable, Iterator

import pytest

from server._support import ServerProcess
from ternmq.protocol.stomp import StompFrame, encode_frame

from ._support import TRANSPORTS, StompClient, StompRaw, Transport, dial, start_server

Dial = Callable[..., StompClient]
"""Opens a raw client (not yet CONNECTed) to the module's server; ``version=`` optional."""


def tcp_only(reason: str) -> pytest.MarkDecorator:
    """Run the test over TCP only; over WebSocket it is reported skipped with ``reason``."""
    return pytest.mark.parametrize(
        "transport", ["tcp", pytest.param("ws", marks=pytest.mark.skip(reason=reason))]
    )


USERS = """
[users.alice]
password = "{hash}"
[users.bob]
password = "{hash}"
[permissions.bob]
send = ["queue://bob.*"]
consume = ["queue://bob.*"]
create = ["queue://bob.*"]
[permissions.alice]
send = ["*://*"]
consume = ["*://*"]
create = ["*://*"]
"""

CONFIG = """
[broker]
max_delivery_attempts = 3
[limits]
stomp_max_body = 65536
stomp_max_frame = 131072
stomp_max_headers = 32
"""


@pytest.fixture(scope="module", params=TRANSPORTS)
def transport(request: pytest.FixtureRequest) -> Transport:
    """Each transport in turn: ``tcp`` then ``ws``."""
    return request.param  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def stomp(transport: Transport, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dial]:
    """The module's server (one per transport), as a way to open raw clients to it."""
    tmp = tmp_path_factory.mktemp(f"stomp-{transport}")
    server, stomp_port = start_server(tmp, CONFIG, http=transport == "ws")
    try:
        yield functools.partial(dial, transport, server, stomp_port)
    finally:
        server.kill()


def own_server(
    tmp_path: pathlib.Path, transport: Transport, config: str
) -> tuple[ServerProcess, Dial]:
    """A server of its own with ``config``: (the process, a way to open clients to it)."""
    server, stomp_port = start_server(tmp_path, config, http=transport == "ws")
    return server, functools.partial(dial, transport, server, stomp_port)


def client(stomp: Dial, version: str = "1.2") -> StompClient:
    cl = stomp(version=version)
    cl.connect()
    return cl


def subscribe(cl: StompClient, dest: str, sub_id: str = "s1", *extra: tuple[str, str]) -> None:
    cl.call("SUBSCRIBE", [("id", sub_id), ("destination", dest), *extra])


def send(cl: StompClient, dest: str, body: bytes = b"hello", *extra: tuple[str, str]) -> None:
    cl.call("SEND", [("destination", dest), *extra], body)


def expect_error(cl: StompClient) -> StompFrame:
    frames = cl.read_until_closed()
    errors = [f for f in frames if f.command == "ERROR"]
    assert errors, frames
    return errors[0]


def no_frame(cl: StompClient, wait: float = 0.3) -> None:
    with pytest.raises(TimeoutError):
        cl.recv(timeout=wait)


# ---- CONNECT ------------------------------------------------------------------------------
@pytest.mark.parametrize("version", ["1.0", "1.1", "1.2"])
def test_connect_negotiates_each_version(stomp: Dial, version: str) -> None:
    with stomp(version=version) as cl:
        connected = cl.connect()
        assert connected.get("version") == version
        assert connected.get("server", "").startswith("ternmq/")
        send(cl, f"/queue/conf.version.{version}", b"v")


def test_connect_picks_the_highest_common_version(stomp: Dial) -> None:
    with stomp() as cl:
        assert cl.connect(version="1.0,1.1,1.2").get("version") == "1.2"


def test_stomp_command_connects_too(stomp: Dial) -> None:
    with stomp() as cl:
        cl.send("STOMP", [("accept-version", "1.2"), ("host", "localhost")])
        assert cl.recv().command == "CONNECTED"


def test_no_common_version_is_an_error_naming_the_supported_ones(stomp: Dial) -> None:
    with stomp() as cl:
        cl.send("CONNECT", [("accept-version", "2.0"), ("host", "x")])
        err = expect_error(cl)
        assert "1.2" in (err.get("message") or "") + err.body.decode()


def test_frame_before_connect_is_an_error(stomp: Dial) -> None:
    with stomp() as cl:
        cl.send("SEND", [("destination", "/queue/conf.early")], b"x")
        assert expect_error(cl).get("message")


def test_login_passcode_checked_against_users(tmp_path: pathlib.Path, transport: Transport) -> None:
    from ternmq.server.security import hash_password

    server, stomp = own_server(tmp_path, transport, USERS.format(hash=hash_password("secret")))
    try:
        with stomp() as cl:
            cl.send("CONNECT", [("accept-version", "1.2"), ("login", "alice"), ("passcode", "no")])
            err = expect_error(cl)
            assert "login" in (err.get("message") or "") + err.body.decode()
        with stomp() as cl:
            cl.send("CONNECT", [("accept-version", "1.2")])  # anonymous: refused
            expect_error(cl)
        with stomp() as cl:
            cl.connect(("login", "alice"), ("passcode", "secret"))
            send(cl, "/queue/anything", b"ok")
        # Permissions as for the native protocol: bob may only use queue://bob.*
        with stomp() as cl:
            cl.connect(("login", "bob"), ("passcode", "secret"))
            send(cl, "/queue/bob.1", b"ok")
            cl.send("SEND", [("destination", "/queue/other"), ("receipt", "r")], b"no")
            err = expect_error(cl)
            assert err.get("receipt-id") == "r"
            assert "queue://other" in (err.get("message") or "")
    finally:
        server.kill()


def test_heart_beat_negotiated_and_silent_peer_dropped(
    tmp_path: pathlib.Path, transport: Transport
) -> None:
    server, stomp = own_server(tmp_path, transport, "[limits]\nheartbeat = 0.5\n")
    try:
        with stomp() as cl:
            connected = cl.connect(("heart-beat", "200,200"))
            sx, sy = (int(x) for x in (connected.get("heart-beat") or "0,0").split(","))
            assert sx > 0 and sy > 0  # both directions on
            # The server sends heart-beats while we are silent, then drops us (we never send).
            start = time.monotonic()
            cl.read_until_closed(timeout=10)
            assert cl.heartbeats >= 1
            assert time.monotonic() - start < 2 * max(sy, 500) / 1000 + 2.0
        server.wait_log("heartbeat_timeout")
    finally:
        server.kill()


def test_client_id_and_durable_subscription_both_spellings(stomp: Dial) -> None:
    for header in ("durable-subscription-name", "activemq.subscriptionName"):
        topic = f"/topic/conf.durable.{header}"
        with stomp() as cl:
            cl.connect(("client-id", f"cid-{header}"))
            subscribe(cl, topic, "d", (header, "sub1"))
            cl.call("UNSUBSCRIBE", [("id", "d")])  # closes the consumer, keeps the subscription
        with client(stomp) as pub:
            send(pub, topic, b"while away")
        with stomp() as cl:
            cl.connect(("client-id", f"cid-{header}"))
            subscribe(cl, topic, "d", (header, "sub1"))
            assert cl.recv().body == b"while away"
            # UNSUBSCRIBE with the durable header removes it for good
            cl.call("UNSUBSCRIBE", [("id", "d"), (header, "sub1")])
        with client(stomp) as pub:
            send(pub, topic, b"nobody keeps this")
        with stomp() as cl:
            cl.connect(("client-id", f"cid-{header}"))
            subscribe(cl, topic, "d", (header, "sub1"))
            no_frame(cl)


def test_durable_subscription_needs_client_id(stomp: Dial) -> None:
    with client(stomp) as cl:
        cl.send(
            "SUBSCRIBE",
            [("id", "x"), ("destination", "/topic/conf.noid"), ("durable-subscription-name", "n")],
        )
        assert "client" in (expect_error(cl).get("message") or "").lower()


# ---- destinations -------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["queue", "topic"])
def test_queue_and_topic_destinations(stomp: Dial, kind: str) -> None:
    dest = f"/{kind}/conf.dest.{kind}"
    with client(stomp) as a, client(stomp) as b:
        subscribe(a, dest)
        send(b, dest, b"to " + kind.encode())
        msg = a.recv()
        assert msg.command == "MESSAGE"
        assert msg.get("destination") == dest
        assert msg.body == b"to " + kind.encode()


def test_topic_fans_out_to_every_subscriber(stomp: Dial) -> None:
    with client(stomp) as a, client(stomp) as b, client(stomp) as p:
        subscribe(a, "/topic/conf.fan")
        subscribe(b, "/topic/conf.fan")
        send(p, "/topic/conf.fan", b"all")
        assert a.recv().body == b"all" and b.recv().body == b"all"


@pytest.mark.parametrize("kind", ["temp-queue", "temp-topic"])
def test_temporary_destinations_and_reply_to(stomp: Dial, kind: str) -> None:
    with client(stomp) as requester, client(stomp) as responder:
        subscribe(responder, "/queue/conf.service." + kind)
        subscribe(requester, f"/{kind}/replies")
        send(requester, "/queue/conf.service." + kind, b"ping", ("reply-to", f"/{kind}/replies"))
        req = responder.recv()
        reply_to = req.get("reply-to")
        assert reply_to is not None and reply_to.startswith(f"/{kind}/")
        send(responder, reply_to, b"pong")
        assert requester.recv().body == b"pong"


def test_unknown_destination_form_is_an_error(stomp: Dial) -> None:
    with client(stomp) as cl:
        cl.send("SEND", [("destination", "/exchange/x")], b"x")
        assert "/queue/" in (expect_error(cl).get("message") or "")


# ---- SEND -> MESSAGE mapping --------------------------------------------------------------
def test_send_headers_become_message_headers(stomp: Dial) -> None:
    with client(stomp) as cl:
        subscribe(cl, "/queue/conf.headers")
        expires = int(time.time() * 1000) + 60_000
        send(
            cl,
            "/queue/conf.headers",
            b"payload",
            ("persistent", "true"),
            ("priority", "7"),
            ("expires", str(expires)),
            ("correlation-id", "corr-1"),
            ("type", "order"),
            ("reply-to", "/queue/conf.replies"),
            ("JMSXGroupID", "g1"),
            ("custom", "value:with:colons"),
        )
        m = cl.recv()
        assert m.get("persistent") == "true"
        assert m.get("priority") == "7"
        assert m.get("expires") == str(expires)
        assert m.get("correlation-id") == "corr-1"
        assert m.get("type") == "order"
        assert m.get("reply-to") == "/queue/conf.replies"
        assert m.get("JMSXGroupID") == "g1"
        assert m.get("custom") == "value:with:colons"
        assert m.get("message-id", "").startswith("ID:")
        assert int(m.get("timestamp") or 0) > 0
        assert m.get("redelivered") == "false"
        assert m.get("JMSXDeliveryCount") == "1"
        assert m.get("subscription") == "s1"


def test_send_without_persistent_is_non_persistent(stomp: Dial) -> None:
    with client(stomp) as cl:
        subscribe(cl, "/queue/conf.np")
        send(cl, "/queue/conf.np")
        assert cl.recv().get("persistent") == "false"


def test_body_type_rules(stomp: Dial) -> None:
    with client(stomp) as cl:
        subscribe(cl, "/queue/conf.body")
        cases: list[tuple[list[tuple[str, str]], bytes, str]] = [
            ([], "héllo".encode(), "text/plain;charset=utf-8"),  # no content-length: text
            ([("content-length", "3")], b"a\x00b", "application/octet-stream"),
            ([("content-type", "application/json")], b'{"a":1}', "text/plain;charset=utf-8"),
            (
                [("content-type", "text/plain;charset=iso-8859-1")],
                "é".encode("latin-1"),
                "text/plain;charset=utf-8",
            ),
            ([("amq-msg-type", "bytes")], b"raw", "application/octet-stream"),
            (
                [("amq-msg-type", "text"), ("content-length", "2")],
                b"hi",
                "text/plain;charset=utf-8",
            ),
        ]
        for headers, body, ctype in cases:
            send(cl, "/queue/conf.body", body, *headers)
            m = cl.recv()
            assert m.get("content-type") == ctype, headers
            assert m.get("content-length") == str(len(m.body))
        # the latin-1 text arrives re-encoded as UTF-8
        send(
            cl,
            "/queue/conf.body",
            "é".encode("latin-1"),
            ("content-type", "text/x;charset=latin-1"),
        )
        assert cl.recv().body == "é".encode()


def test_scheduled_delay(stomp: Dial) -> None:
    with client(stomp) as cl:
        subscribe(cl, "/queue/conf.delay")
        t0 = time.monotonic()
        send(cl, "/queue/conf.delay", b"later", ("AMQ_SCHEDULED_DELAY", "600"))
        assert cl.recv(timeout=10).body == b"later"
        assert time.monotonic() - t0 >= 0.55


def test_bad_priority_is_an_error(stomp: Dial) -> None:
    with client(stomp) as cl:
        cl.send("SEND", [("destination", "/queue/conf.bad"), ("priority", "12")], b"x")
        assert "priority" in (expect_error(cl).get("message") or "")


def test_frames_read_before_a_bad_one_take_effect(stomp: Dial) -> None:
    """The frames of one read are handed to the engine together after the read: a bad frame
    among them still lets those before it act (here: two sends, one persistent), then ends
    the connection with an ERROR."""
    with client(stomp) as cl:
        dest = [("destination", "/queue/conf.before-bad")]
        cl.send_bytes(
            encode_frame("SEND", dest, b"one", version="1.2")
            + encode_frame("SEND", [*dest, ("persistent", "true")], b"two", version="1.2")
            + encode_frame("SEND", [*dest, ("priority", "12")], b"bad", version="1.2")
            + encode_frame("SEND", dest, b"after", version="1.2")
        )
        assert "priority" in (expect_error(cl).get("message") or "")
    with client(stomp) as cl:
        subscribe(cl, "/queue/conf.before-bad")
        assert [cl.recv().body, cl.recv().body] == [b"one", b"two"]
        no_frame(cl)


# ---- SUBSCRIBE ----------------------------------------------------------------------------
def test_selector_compares_stomp_properties_as_strings(stomp: Dial) -> None:
    with client(stomp) as cl:
        subscribe(cl, "/queue/conf.sel", "s", ("selector", "color = 'red'"))
        send(cl, "/queue/conf.sel", b"blue", ("color", "blue"))
        send(cl, "/queue/conf.sel", b"red", ("color", "red"))
        assert cl.recv().body == b"red"
        no_frame(cl)


def test_bad_selector_is_an_error(stomp: Dial) -> None:
    with client(stomp) as cl:
        cl.send("SUBSCRIBE", [("id", "x"), ("destination", "/queue/q"), ("selector", "a = = 1")])
        assert expect_error(cl).get("message")


def test_prefetch_size_bounds_unacknowledged_messages(stomp: Dial) -> None:
    with client(stomp) as cl:
        for i in range(5):
            send(cl, "/queue/conf.prefetch", str(i).encode())
        subscribe(
            cl,
            "/queue/conf.prefetch",
            "p",
            ("ack", "client-individual"),
            ("activemq.prefetchSize", "2"),
        )
        first = [cl.recv(), cl.recv()]
        no_frame(cl)
        cl.call("ACK", [("id", first[0].get("ack") or "")])
        assert cl.recv().body == b"2"


def test_shared_subscription_header(stomp: Dial) -> None:
    with client(stomp) as a, client(stomp) as b, client(stomp) as p:
        subscribe(a, "/topic/conf.shared", "s", ("shared-subscription-name", "workers"))
        subscribe(b, "/topic/conf.shared", "s", ("shared-subscription-name", "workers"))
        for i in range(6):
            send(p, "/topic/conf.shared", str(i).encode())
        got = []
        for cl in (a, b):
            while True:
                try:
                    got.append(cl.recv(timeout=0.5).body)
                except TimeoutError:
                    break
        assert sorted(got) == [str(i).encode() for i in range(6)]  # each once, shared


# ---- ACK / NACK ---------------------------------------------------------------------------
def test_auto_ack_removes_the_message(stomp: Dial) -> None:
    with client(stomp) as cl:
        subscribe(cl, "/queue/conf.auto")
        send(cl, "/queue/conf.auto", b"once")
        m = cl.recv()
        assert m.get("ack") is None
    with client(stomp) as cl:
        subscribe(cl, "/queue/conf.auto")
        no_frame(cl)


def test_client_ack_is_cumulative(stomp: Dial) -> None:
    with client(stomp) as cl:
        for i in range(3):
            send(cl, "/queue/conf.cum", str(i).encode())
        subscribe(cl, "/queue/conf.cum", "c", ("ack", "client"))
        msgs = [cl.recv() for _ in range(3)]
        cl.call("ACK", [("id", msgs[1].get("ack") or "")])  # acknowledges 0 and 1
    with client(stomp) as cl:
        subscribe(cl, "/queue/conf.cum", "c", ("ack", "client"))
        m = cl.recv()
        assert m.body == b"2" and m.get("redelivered") == "true"
        no_frame(cl)


def test_client_individual_ack_is_not_cumulative(stomp: Dial) -> None:
    with client(stomp) as cl:
        for i in range(3):
            send(cl, "/queue/conf.ind", str(i).encode())
        subscribe(cl, "/queue/conf.ind", "c", ("ack", "client-individual"))
        msgs = [cl.recv() for _ in range(3)]
        cl.call("ACK", [("id", msgs[1].get("ack") or "")])
    with client(stomp) as cl:
        subscribe(cl, "/queue/conf.ind", "c", ("ack", "client-individual"))
        assert sorted([cl.recv().body, cl.recv().body]) == [b"0", b"2"]


def test_acks_of_one_read_settle_each_message_once(stomp: Dial) -> None:
    """ACK frames arriving together (one write, two subscriptions, a cumulative one among
    them) are handed to the engine together; each settles exactly its messages, returns its
    credit, and a NACK after them in the same write still finds the message it names."""
    with client(stomp) as cl:
        for i in range(6):
            send(cl, "/queue/conf.batch.a", f"a{i}".encode())
            send(cl, "/queue/conf.batch.b", f"b{i}".encode())
        subscribe(
            cl,
            "/queue/conf.batch.a",
            "a",
            ("ack", "client-individual"),
            ("activemq.prefetchSize", "3"),
        )
        subscribe(cl, "/queue/conf.batch.b", "b", ("ack", "client"), ("activemq.prefetchSize", "3"))
        got = [cl.recv() for _ in range(6)]
        by_sub = {"a": [m for m in got if m.get("subscription") == "a"]}
        by_sub["b"] = [m for m in got if m.get("subscription") == "b"]
        assert [m.body for m in by_sub["a"]] == [b"a0", b"a1", b"a2"]
        no_frame(cl)
        ack = cl.version
        frames = [
            encode_frame("ACK", [("id", by_sub["a"][0].get("ack") or "")], version=ack),
            encode_frame("ACK", [("id", by_sub["b"][1].get("ack") or "")], version=ack),
            encode_frame("ACK", [("id", by_sub["a"][2].get("ack") or "")], version=ack),
            encode_frame("NACK", [("id", by_sub["a"][1].get("ack") or "")], version=ack),
        ]
        cl.send_bytes(b"".join(frames))
        # Credit came back: 2 ACKed + 1 NACKed of a (a1 comes again), 2 of b (cumulative).
        more = [cl.recv() for _ in range(5)]
        assert sorted(m.body for m in more if m.get("subscription") == "b") == [b"b3", b"b4"]
        again_a = {m.body for m in more if m.get("subscription") == "a"}
        assert len(again_a) == 3 and again_a <= {b"a1", b"a3", b"a4", b"a5"}
        no_frame(cl)
    with client(stomp) as cl:
        subscribe(cl, "/queue/conf.batch.a", "a")
        subscribe(cl, "/queue/conf.batch.b", "b")
        rest = []
        while True:
            try:
                rest.append(cl.recv(timeout=0.5).body)
            except TimeoutError:
                break
        assert sorted(rest) == [b"a1", b"a3", b"a4", b"a5", b"b2", b"b3", b"b4", b"b5"]


def test_ack_by_message_id_in_stomp_1_1(stomp: Dial) -> None:
    with client(stomp, "1.1") as cl:
        send(cl, "/queue/conf.ack11", b"x")
        subscribe(cl, "/queue/conf.ack11", "c", ("ack", "client"))
        m = cl.recv()
        cl.call("ACK", [("subscription", "c"), ("message-id", m.get("message-id") or "")])
    with client(stomp) as cl:
        subscribe(cl, "/queue/conf.ack11")
        no_frame(cl)


def test_nack_redelivers_then_dead_letters(stomp: Dial) -> None:
    with client(stomp) as cl:
        send(cl, "/queue/conf.nack", b"poison", ("persistent", "true"))
        subscribe(cl, "/queue/conf.nack", "n", ("ack", "client-individual"))
        for attempt in (1, 2, 3):  # max_delivery_attempts = 3
            m = cl.recv()
            assert m.body == b"poison"
            assert m.get("JMSXDeliveryCount") == str(attempt)
            assert m.get("redelivered") == ("true" if attempt > 1 else "false")
            cl.call("NACK", [("id", m.get("ack") or "")])
        no_frame(cl)
        subscribe(cl, "/queue/DLQ", "dlq")
        dead = cl.recv()
        assert dead.body == b"poison"


def test_nack_returns_only_the_nacked_message(stomp: Dial) -> None:
    """A NACK gives back that message alone: the subscription's other unacknowledged message
    keeps its ack id (its ACK settles it, no redelivery), and only the NACKed one returns,
    marked redelivered."""
    with client(stomp) as cl:
        for body in (b"one", b"two"):
            send(cl, "/queue/conf.nack1", body)
        subscribe(cl, "/queue/conf.nack1", "n", ("ack", "client-individual"))
        first, second = cl.recv(), cl.recv()
        assert (first.body, second.body) == (b"one", b"two")
        cl.call("NACK", [("id", first.get("ack") or "")])
        again = cl.recv()
        assert again.body == b"one"
        assert again.get("redelivered") == "true"
        assert again.get("JMSXDeliveryCount") == "2"
        cl.call("ACK", [("id", second.get("ack") or "")])  # still valid after the NACK
        cl.call("ACK", [("id", again.get("ack") or "")])
        no_frame(cl)
    with client(stomp) as cl:
        subscribe(cl, "/queue/conf.nack1", "n2")
        no_frame(cl)  # both settled: nothing comes back


def test_unknown_ack_id_is_an_error(stomp: Dial) -> None:
    with client(stomp) as cl:
        cl.send("ACK", [("id", "nope")])
        assert "ack" in (expect_error(cl).get("message") or "")


# ---- transactions -------------------------------------------------------------------------
def test_transaction_sends_invisible_until_commit(stomp: Dial) -> None:
    with client(stomp) as cl, client(stomp) as watcher:
        subscribe(watcher, "/queue/conf.tx")
        cl.call("BEGIN", [("transaction", "t1")])
        send(cl, "/queue/conf.tx", b"a", ("transaction", "t1"))
        send(cl, "/queue/conf.tx", b"b", ("transaction", "t1"))
        no_frame(watcher)
        cl.call("COMMIT", [("transaction", "t1")])
        assert [watcher.recv().body, watcher.recv().body] == [b"a", b"b"]


def test_abort_drops_sends_and_redelivers_acks(stomp: Dial) -> None:
    with client(stomp) as cl:
        send(cl, "/queue/conf.abort", b"keep")
        subscribe(cl, "/queue/conf.abort", "a", ("ack", "client-individual"))
        m = cl.recv()
        cl.call("BEGIN", [("transaction", "t")])
        cl.call("ACK", [("id", m.get("ack") or ""), ("transaction", "t")])
        send(cl, "/queue/conf.abort.out", b"dropped", ("transaction", "t"))
        cl.call("ABORT", [("transaction", "t")])
        again = cl.recv()
        assert again.body == b"keep" and again.get("redelivered") == "true"
        cl.call("BEGIN", [("transaction", "t2")])
        cl.call("ACK", [("id", again.get("ack") or ""), ("transaction", "t2")])
        cl.call("COMMIT", [("transaction", "t2")])
    with client(stomp) as cl:
        subscribe(cl, "/queue/conf.abort")
        subscribe(cl, "/queue/conf.abort.out", "o")
        no_frame(cl)


def test_commit_of_unknown_transaction_is_an_error(stomp: Dial) -> None:
    with client(stomp) as cl:
        cl.send("COMMIT", [("transaction", "never")])
        assert "BEGIN" in (expect_error(cl).get("message") or "")


# ---- RECEIPT / ERROR / DISCONNECT ---------------------------------------------------------
def test_receipt_for_every_frame_and_disconnect(stomp: Dial) -> None:
    with client(stomp) as cl:
        subscribe(cl, "/queue/conf.rcpt")
        cl.call("UNSUBSCRIBE", [("id", "s1")])
        cl.send("DISCONNECT", [("receipt", "bye")])
        frames = cl.read_until_closed()
        assert [f.get("receipt-id") for f in frames if f.command == "RECEIPT"] == ["bye"]


def test_error_closes_only_that_connection(stomp: Dial) -> None:
    with client(stomp) as good, client(stomp) as bad:
        subscribe(good, "/queue/conf.others")
        bad.send_bytes(b"NOT-A-COMMAND\n\n\x00")
        err = expect_error(bad)
        assert err.get("message")
        send(good, "/queue/conf.others", b"still here")
        assert good.recv().body == b"still here"


@pytest.mark.parametrize("policy", ["fail", "block"])
def test_refused_send_without_receipt_is_an_error(
    tmp_path: pathlib.Path, transport: Transport, policy: str
) -> None:
    """A NON_PERSISTENT SEND without a receipt is not answered when taken; refused (its queue
    full: at once, or after block_timeout while held), it still ends in an ERROR frame."""
    server, stomp = own_server(
        tmp_path,
        transport,
        f'[destinations."queue://conf.full"]\nmax_bytes = 3000\nfull_policy = "{policy}"\n'
        "block_timeout = 0.3\n",
    )
    try:
        with client(stomp) as cl:
            for _ in range(4):
                cl.send("SEND", [("destination", "/queue/conf.full")], b"x" * 1000)
            err = expect_error(cl)
            assert "full" in (err.get("message") or "") + err.body.decode(), err
        with client(stomp) as cl:  # what was taken is there, in order
            subscribe(cl, "/queue/conf.full")
            assert cl.recv().body == b"x" * 1000
    finally:
        server.kill()


def test_limits_give_error_and_close(stomp: Dial) -> None:
    with client(stomp) as cl:
        cl.send("SEND", [("destination", "/queue/conf.big")], b"x" * 70_000)
        assert expect_error(cl).get("message")
    with client(stomp) as cl:
        cl.send("SEND", [("destination", "/queue/conf.h"), *[(f"h{i}", "v") for i in range(40)]])
        assert expect_error(cl).get("message")
    with client(stomp) as ok:
        send(ok, "/queue/conf.after", b"fine")


def test_silent_client_is_dropped(tmp_path: pathlib.Path, transport: Transport) -> None:
    server, stomp = own_server(tmp_path, transport, "[limits]\nhandshake_timeout = 0.5\n")
    try:
        with stomp() as cl:  # connects (TCP, or the WebSocket handshake) and sends nothing
            t0 = time.monotonic()
            frames = cl.read_until_closed(timeout=10)
            assert [f.command for f in frames] == ["ERROR"]
            assert "CONNECT" in frames[0].body.decode()
            assert time.monotonic() - t0 < 5
    finally:
        server.kill()


# ---- the main port ------------------------------------------------------------------------
@tcp_only("STOMP detection on the native main port and CONNECT split across TCP segments")
def test_stomp_detected_on_the_main_port(tmp_path: pathlib.Path, transport: Transport) -> None:
    from server._support import works

    server, _ = start_server(tmp_path)
    try:
        with StompRaw(server.port) as cl:
            cl.send_bytes(b"\n")  # a leading EOL, then CONNECT in pieces
            cl.send_bytes(b"CONN")
            time.sleep(0.05)
            cl.send_bytes(b"ECT\naccept-version:1.2\n\n\x00")
            assert cl.recv().command == "CONNECTED"
            subscribe(cl, "/queue/conf.main")
            send(cl, "/queue/conf.main", b"main port")
            assert cl.recv().body == b"main port"
        works(server.port)  # the native protocol still works there
    finally:
        server.kill()


@tcp_only("the STOMP TLS listener; TLS for /stomp is the HTTP listener's (wss)")
def test_tls_stomp_listener(tmp_path: pathlib.Path, transport: Transport) -> None:
    from _openssl import tls_listener, tls_listener_port

    config, ctx = tls_listener(tmp_path, "stomp")
    server, _ = start_server(tmp_path, config)
    try:
        with StompRaw(tls_listener_port(server, "stomp"), tls=ctx) as cl:
            cl.connect()
            subscribe(cl, "/queue/conf.tls")
            send(cl, "/queue/conf.tls", b"secret")
            assert cl.recv().body == b"secret"
    finally:
        server.kill()


@tcp_only("drives the TCP socket's receive buffer directly")
def test_a_consumer_that_does_not_read_holds_back_auto_ack(
    tmp_path: pathlib.Path, transport: Transport
) -> None:
    """With ack:auto the credit returns only while the socket takes the frames: a STOMP
    consumer that never reads stops receiving once its socket's buffers and the server's
    write buffer are full, so the rest of the queue stays (bounded server memory)."""
    from server._support import Raw
    from ternmq.protocol import commands as c

    server, port = start_server(
        tmp_path, "[limits]\nwrite_buffer_high = 65536\nwrite_buffer_low = 16384\n"
    )
    total = 8000
    try:
        with client(functools.partial(StompRaw, port)) as producer:
            body = b"x" * 1024
            for _ in range(total):
                producer.send("SEND", [("destination", "/queue/conf.slow")], body)
            producer.call("SEND", [("destination", "/queue/conf.slow.done")], b"")
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(("127.0.0.1", port))
        sock.sendall(b"CONNECT\naccept-version:1.2\n\n\x00")
        sock.sendall(b"SUBSCRIBE\nid:1\ndestination:/queue/conf.slow\n\n\x00")
        time.sleep(2.0)  # never read
        with Raw(server.port) as admin:
            admin.connect()
            stat = admin.request(c.Stat(destination="queue://conf.slow"))
        dequeued = stat.destinations[0].dequeued
        assert 0 < dequeued < total // 2, dequeued
        sock.close()
    finally:
        server.kill()
