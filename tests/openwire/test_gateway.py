"""The OpenWire gateway of a real ``ternmq serve``, driven by a raw OpenWire client
(``_client.py``) that sends what ActiveMQ's Java client sends: the handshake on the main port
and on ``openwire_port``, queues and topics, acknowledgement, transactions, durable
subscriptions, temporary queues, browsers, MessagePull, and the refusals (credentials,
permissions, XA, unknown commands)."""

from __future__ import annotations

import itertools
import pathlib
import time
from collections.abc import Iterator

import pytest

from server._support import ServerProcess
from ternmq.protocol import openwire as ow

from ._client import OpenWireRaw, start_server

_names = itertools.count(1)


def _queue(prefix: str = "q") -> ow.ActiveMQQueue:
    return ow.ActiveMQQueue(physical_name=f"ow.{prefix}.{time.monotonic_ns()}.{next(_names)}")


def _topic(prefix: str = "t") -> ow.ActiveMQTopic:
    return ow.ActiveMQTopic(physical_name=f"ow.{prefix}.{time.monotonic_ns()}.{next(_names)}")


def _text(d: ow.MessageDispatch) -> str | None:
    assert d.message is not None
    return ow.decode_text_body(d.message.content or b"\xff\xff\xff\xff")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, int]]:
    """One server for the module: (process, main port)."""
    proc, port = start_server(
        tmp_path_factory.mktemp("ow"), "[broker]\nmax_delivery_attempts = 3\n"
    )
    try:
        yield proc, port
    finally:
        proc.kill()


@pytest.fixture
def port(server: tuple[ServerProcess, int]) -> int:
    return server[1]


def _client(port: int, client_id: str | None = None) -> OpenWireRaw:
    cl = OpenWireRaw(port)
    got = cl.connect(client_id=client_id)
    assert not isinstance(got, ow.ExceptionResponse), got
    return cl


def test_handshake_on_the_main_port(port: int) -> None:
    with OpenWireRaw(port) as cl:
        assert cl.server_info is not None and cl.broker_info is not None
        offer = ow.WireFormat.from_info(cl.server_info)
        assert offer.version == 12 and not offer.tight_encoding and not offer.cache
        assert offer.max_inactivity_ms > 0
        got = cl.connect()
        assert type(got) is ow.Response
        cl.goodbye()
        assert cl.read_until_closed() == []


def test_handshake_on_the_openwire_port_and_the_connections_metric(
    tmp_path: pathlib.Path,
) -> None:
    import urllib.request

    proc, port = start_server(tmp_path, openwire_port=True, http=True)
    try:
        assert port != proc.port
        with _client(port) as cl, _client(proc.port):
            sess = cl.session()
            prod = cl.producer(sess)
            q = _queue()
            _cid, got = cl.consume(sess, q)
            assert type(got) is ow.Response
            assert type(cl.send_text(prod, q, "via the openwire port")) is ow.Response
            assert _text(cl.dispatch()) == "via the openwire port"
            with urllib.request.urlopen(f"{proc.http_url}/metrics", timeout=10) as resp:
                metrics = resp.read().decode()
            assert 'ternmq_connections{protocol="openwire"} 2' in metrics
    finally:
        proc.kill()


def test_queue_send_receive_and_ack(port: int) -> None:
    q = _queue()
    with _client(port) as cl:
        sess = cl.session()
        prod = cl.producer(sess)
        for i in range(3):
            assert type(cl.send_text(prod, q, f"m{i}")) is ow.Response
        cid, _ = cl.consume(sess, q)
        got = [cl.dispatch() for _ in range(3)]
        assert [_text(d) for d in got] == ["m0", "m1", "m2"]
        assert all(d.consumer_id == cid and d.redelivery_counter == 0 for d in got)
        cl.ack(got[-1], first=got[0], count=3)
        cl.remove(cid, last_delivered=got[-1].message.message_id.broker_sequence_id)  # type: ignore[union-attr]
    with _client(port) as cl:  # acknowledged: nothing comes back
        sess = cl.session()
        cid, _ = cl.consume(sess, q, prefetch=0)
        cl.send(ow.MessagePull(consumer_id=cid, destination=q, timeout=-1))
        assert cl.dispatch().message is None


def test_a_persistent_send_is_answered_once_durable(tmp_path: pathlib.Path) -> None:
    """The Response of a persistent send means the message is on disk: it survives a
    SIGKILL of the server right after."""
    data = tmp_path / "data"
    proc = ServerProcess(data, "", tmp_path)
    q = _queue("durable")
    try:
        with _client(proc.port) as cl:
            sess = cl.session()
            prod = cl.producer(sess)
            for i in range(20):
                assert type(cl.send_text(prod, q, f"d{i}")) is ow.Response
    finally:
        proc.kill()
    proc = ServerProcess(data, "", tmp_path)
    try:
        with _client(proc.port) as cl:
            sess = cl.session()
            cl.consume(sess, q)
            assert [_text(cl.dispatch()) for _ in range(20)] == [f"d{i}" for i in range(20)]
    finally:
        proc.kill()


def test_tls_openwire_listener(tmp_path: pathlib.Path) -> None:
    from _openssl import tls_listener, tls_listener_port

    config, ctx = tls_listener(tmp_path, "openwire")
    proc, _ = start_server(tmp_path, config)
    try:
        with OpenWireRaw(tls_listener_port(proc, "openwire"), tls=ctx) as cl:
            assert type(cl.connect()) is ow.Response
            sess = cl.session()
            prod = cl.producer(sess)
            q = _queue("tls")
            cl.consume(sess, q)
            cl.send_text(prod, q, "over tls")
            assert _text(cl.dispatch()) == "over tls"
    finally:
        proc.kill()


def test_unacknowledged_messages_come_back_to_the_next_consumer(port: int) -> None:
    q = _queue()
    with _client(port) as cl:
        sess = cl.session()
        prod = cl.producer(sess)
        cl.send_text(prod, q, "again")
        cid, _ = cl.consume(sess, q)
        d = cl.dispatch()
        seq = d.message.message_id.broker_sequence_id  # type: ignore[union-attr]
        cl.remove(cid, last_delivered=seq)  # handed to the application, not acknowledged
        _cid2, _ = cl.consume(sess, q)
        again = cl.dispatch()
        assert _text(again) == "again" and again.redelivery_counter == 1


def test_topic_fan_out_and_async_non_persistent_sends(port: int) -> None:
    t = _topic()
    with _client(port) as a, _client(port) as b:
        sa, sb = a.session(), b.session()
        a.consume(sa, t)
        b.consume(sb, t)
        prod = a.producer(sa)
        for i in range(5):
            a.send_text(prod, t, f"n{i}", persistent=False, sync=False)
        for cl in (a, b):
            assert [_text(cl.dispatch()) for _ in range(5)] == [f"n{i}" for i in range(5)]


def test_prefetch_bounds_what_is_dispatched_and_acks_return_credit(port: int) -> None:
    q = _queue()
    with _client(port) as cl:
        sess = cl.session()
        prod = cl.producer(sess)
        for i in range(5):
            cl.send_text(prod, q, f"p{i}")
        cl.consume(sess, q, prefetch=2)
        first = [cl.dispatch(), cl.dispatch()]
        with pytest.raises(TimeoutError):
            cl.dispatch(timeout=0.5)
        cl.ack(first[0])  # one credit back: one more message
        assert _text(cl.dispatch()) == "p2"
        cl.ack(first[1], ack_type=0)  # DELIVERED: the window slides, nothing is consumed
        assert _text(cl.dispatch()) == "p3"


def test_acks_read_together_are_all_applied_and_return_their_credit(port: int) -> None:
    # The acks of one read go to the engine merged, and their credit comes back in one
    # batch at the end of the read: every message still arrives, each is consumed once.
    q = _queue()
    with _client(port) as cl:
        sess = cl.session()
        prod = cl.producer(sess)
        for i in range(25):
            cl.send_text(prod, q, f"m{i}", persistent=False, sync=False)
        cid, _ = cl.consume(sess, q, prefetch=10)
        got: list[str | None] = []
        while len(got) < 25:
            window = [cl.dispatch() for _ in range(min(10, 25 - len(got)))]
            got += [_text(d) for d in window]
            # one STANDARD ack per message, all in one write
            acks = [cl.ack_command(d) for d in window]
            cl.sock.sendall(b"".join(ow.encode_frame(a) for a in acks))
        assert got == [f"m{i}" for i in range(25)]
        assert type(cl.remove(cid)) is ow.Response
        cl.consume(sess, q, prefetch=10)
        with pytest.raises(TimeoutError):
            cl.dispatch(timeout=0.5)  # all 25 were acknowledged: nothing comes back


def test_transacted_sends_are_visible_at_commit_only(port: int) -> None:
    q = _queue()
    with _client(port) as cl:
        sess = cl.session()
        prod = cl.producer(sess)
        _cid, _ = cl.consume(sess, q)
        assert type(cl.transaction(1, 0)) is ow.Response
        cl.send_text(prod, q, "rolled back", tx=cl.tx_id(1), sync=False)
        assert type(cl.transaction(1, 4)) is ow.Response
        cl.transaction(2, 0)
        cl.send_text(prod, q, "committed", tx=cl.tx_id(2), sync=False)
        with pytest.raises(TimeoutError):
            cl.dispatch(timeout=0.3)
        assert type(cl.transaction(2, 2)) is ow.Response
        assert _text(cl.dispatch()) == "committed"


def test_acks_in_a_rollback_leave_the_delivery_in_flight_a_commit_consumes_it(port: int) -> None:
    q = _queue()
    with _client(port) as cl:
        sess = cl.session()
        prod = cl.producer(sess)
        cl.send_text(prod, q, "tx")
        cid, _ = cl.consume(sess, q)
        d = cl.dispatch()
        cl.transaction(1, 0)
        cl.ack(d, tx=cl.tx_id(1))
        cl.transaction(1, 4)  # the Java client redelivers it itself
        cl.ack(d, ack_type=3)  # REDELIVERED
        with pytest.raises(TimeoutError):
            cl.dispatch(timeout=0.3)  # the server did not send it again
        cl.transaction(2, 0)
        cl.ack(d, tx=cl.tx_id(2))
        assert type(cl.transaction(2, 2)) is ow.Response
        seq = d.message.message_id.broker_sequence_id  # type: ignore[union-attr]
        cl.remove(cid, last_delivered=seq)
        cid2, _ = cl.consume(sess, q, prefetch=0)
        cl.send(ow.MessagePull(consumer_id=cid2, destination=q, timeout=-1))
        assert cl.dispatch().message is None  # committed: consumed


def test_poison_ack_dead_letters_at_once(port: int) -> None:
    """The client sends a POISON ack once its own redeliveries are spent (its
    maximumRedeliveries): the message goes to the dead-letter queue at once, as in ActiveMQ."""
    q = _queue()
    dlq = ow.ActiveMQQueue(physical_name="DLQ")  # the default dead-letter queue
    with _client(port) as cl:
        sess = cl.session()
        prod = cl.producer(sess)
        cl.send_text(prod, q, "poison")
        _cid, _ = cl.consume(sess, q)
        d = cl.dispatch()
        assert _text(d) == "poison" and d.redelivery_counter == 0
        for _ in range(4):
            cl.ack(d, ack_type=3)  # REDELIVERED: the client redelivers it itself
        cl.ack(d, ack_type=1)
        with pytest.raises(TimeoutError):
            cl.dispatch(timeout=0.5)
        _dcid, _ = cl.consume(sess, dlq)
        assert _text(cl.dispatch()) == "poison"


def test_durable_subscription_survives_a_reconnect_and_unsubscribe(port: int) -> None:
    t = _topic()
    client_id = f"durable-{time.monotonic_ns()}"
    with _client(port, client_id) as cl:
        sess = cl.session()
        cid, got = cl.consume(sess, t, subscription="sub1")
        assert type(got) is ow.Response
        cl.remove(cid)
        cl.goodbye()
    with _client(port) as other:
        sess = other.session()
        prod = other.producer(sess)
        other.send_text(prod, t, "while away")
    with _client(port, client_id) as cl:
        sess = cl.session()
        cid, _ = cl.consume(sess, t, subscription="sub1")
        d = cl.dispatch()
        assert _text(d) == "while away"
        cl.ack(d)
        cl.remove(cid)
        got = cl.request(
            ow.RemoveSubscriptionInfo(
                connection_id=ow.ConnectionId(value=cl.connection_id),
                subcription_name="sub1",
                client_id=client_id,
            )
        )
        assert type(got) is ow.Response


def test_temporary_queue_request_reply(port: int) -> None:
    with _client(port) as requester, _client(port) as replier:
        rs = requester.session()
        temp = ow.ActiveMQTempQueue(physical_name=f"{requester.connection_id}:1")
        got = requester.request(
            ow.DestinationInfo(
                connection_id=ow.ConnectionId(value=requester.connection_id),
                destination=temp,
                operation_type=0,
            )
        )
        assert type(got) is ow.Response
        requester.consume(rs, temp)
        service = _queue("service")
        ps = replier.session()
        replier.consume(ps, service)
        rprod = requester.producer(rs)
        msg = ow.ActiveMQTextMessage(
            producer_id=rprod,
            destination=service,
            message_id=ow.MessageId(producer_id=rprod, producer_sequence_id=1),
            persistent=True,
            reply_to=temp,
            correlation_id="c-1",
            content=ow.encode_text_body("ping"),
        )
        assert type(requester.request(msg)) is ow.Response
        req = replier.dispatch()
        assert req.message is not None and req.message.reply_to is not None
        assert req.message.correlation_id == "c-1"
        pprod = replier.producer(ps)
        replier.send_text(pprod, req.message.reply_to, "pong")
        assert _text(requester.dispatch()) == "pong"


def test_a_temporary_reply_to_is_announced_to_the_advisory_consumer_first(port: int) -> None:
    """ActiveMQ's client refuses to send to a temporary destination its advisory consumer
    never heard of: the gateway announces a request's temporary reply-to (a DestinationInfo
    advisory) before it dispatches the request."""
    with _client(port) as requester, _client(port) as replier:
        adv = ow.ActiveMQTopic(
            physical_name="ActiveMQ.Advisory.TempQueue,ActiveMQ.Advisory.TempTopic"
        )
        ps = replier.session()
        adv_id, _ = replier.consume(ps, adv)
        service = _queue("svc")
        replier.consume(ps, service)
        rs = requester.session()
        temp = ow.ActiveMQTempQueue(physical_name=f"{requester.connection_id}:7")
        requester.request(ow.DestinationInfo(destination=temp, operation_type=0))
        rprod = requester.producer(rs)
        for i in range(2):
            msg = ow.ActiveMQTextMessage(
                producer_id=rprod,
                destination=service,
                message_id=ow.MessageId(producer_id=rprod, producer_sequence_id=i + 1),
                persistent=True,
                reply_to=temp,
                content=ow.encode_text_body(f"req{i}"),
            )
            assert type(requester.request(msg)) is ow.Response
        advisory = replier.dispatch()
        assert advisory.consumer_id == adv_id and advisory.message is not None
        info = advisory.message.data_structure
        assert isinstance(info, ow.DestinationInfo) and info.operation_type == 0
        assert isinstance(info.destination, ow.ActiveMQTempQueue)
        assert info.destination.physical_name == temp.physical_name
        assert _text(replier.dispatch()) == "req0"
        assert _text(replier.dispatch()) == "req1"  # announced once


def test_queue_browser_gets_a_snapshot_then_a_null_dispatch(port: int) -> None:
    q = _queue()
    with _client(port) as cl:
        sess = cl.session()
        prod = cl.producer(sess)
        for i in range(3):
            cl.send_text(prod, q, f"b{i}")
        cid, got = cl.consume(sess, q, browser=True)
        assert type(got) is ow.Response
        texts = [_text(cl.dispatch()) for _ in range(3)]
        assert texts == ["b0", "b1", "b2"]
        end = cl.dispatch()
        assert end.message is None and end.consumer_id == cid
        cl.remove(cid)
        _cid2, _ = cl.consume(sess, q)  # browsing consumed nothing
        assert _text(cl.dispatch()) == "b0"


def test_message_pull_with_prefetch_zero(port: int) -> None:
    q = _queue()
    with _client(port) as cl:
        sess = cl.session()
        cid, _ = cl.consume(sess, q, prefetch=0)
        cl.send(ow.MessagePull(consumer_id=cid, destination=q, timeout=-1))
        assert cl.dispatch().message is None  # receiveNoWait on an empty queue
        cl.send(ow.MessagePull(consumer_id=cid, destination=q, timeout=300))
        t0 = time.monotonic()
        assert cl.dispatch().message is None  # receive(300) timed out
        assert time.monotonic() - t0 >= 0.25
        prod = cl.producer(sess)
        cl.send_text(prod, q, "pulled")
        with pytest.raises(TimeoutError):
            cl.dispatch(timeout=0.3)  # nothing is pushed to a prefetch-0 consumer
        cl.send(ow.MessagePull(consumer_id=cid, destination=q, timeout=0))
        assert _text(cl.dispatch()) == "pulled"


def test_advisory_consumers_are_accepted_and_idle(port: int) -> None:
    with _client(port) as cl:
        sess = cl.session()
        adv = ow.ActiveMQTopic(
            physical_name="ActiveMQ.Advisory.TempQueue,ActiveMQ.Advisory.TempTopic"
        )
        cid, got = cl.consume(sess, adv)
        assert type(got) is ow.Response
        assert type(cl.remove(cid)) is ow.Response


def test_xa_and_unknown_commands_get_an_exception_response(port: int) -> None:
    with _client(port) as cl:
        xid = ow.XATransactionId(format_id=1, global_transaction_id=b"g", branch_qualifier=b"b")
        got = cl.request(
            ow.TransactionInfo(
                connection_id=ow.ConnectionId(value=cl.connection_id), transaction_id=xid, type=0
            )
        )
        assert isinstance(got, ow.ExceptionResponse)
        assert got.exception is not None and "XA" in (got.exception.message or "")
        got = cl.request(ow.TransactionInfo(transaction_id=cl.tx_id(5), type=1))  # PREPARE
        assert isinstance(got, ow.ExceptionResponse)
        got = cl.request(ow.BrokerInfo(broker_name="a network bridge"))
        assert isinstance(got, ow.ExceptionResponse)
        assert "not supported" in (got.exception.message or "")  # type: ignore[union-attr]
        # ... and the connection still serves.
        sess = cl.session()
        q = _queue()
        prod = cl.producer(sess)
        assert type(cl.send_text(prod, q, "still here")) is ow.Response


def test_invalid_selector_is_an_invalid_selector_exception(port: int) -> None:
    with _client(port) as cl:
        sess = cl.session()
        _cid, got = cl.consume(sess, _queue(), selector="a = = 1")
        assert isinstance(got, ow.ExceptionResponse)
        assert got.exception is not None
        assert got.exception.class_name == "javax.jms.InvalidSelectorException"


def test_keepalive_asked_for_is_answered(port: int) -> None:
    with _client(port) as cl:
        cl.send(ow.KeepAliveInfo(response_required=True))
        assert isinstance(cl.expect(ow.KeepAliveInfo), ow.KeepAliveInfo)


def test_oversized_and_malformed_frames_close_only_that_connection(port: int) -> None:
    with _client(port) as bad:
        bad.sock.sendall(b"\x7f\xff\xff\xff\x15")  # a 2 GiB frame is announced
        bad.read_until_closed()
    with _client(port) as bad:
        bad.sock.sendall(b"\x00\x00\x00\x03\xee\x00\x00")  # an unknown type
        bad.read_until_closed()
    with _client(port) as good:
        sess = good.session()
        prod = good.producer(sess)
        assert type(good.send_text(prod, _queue(), "fine")) is ow.Response


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
[broker]
max_message_bytes = 60000
[limits]
heartbeat = 1.0
max_frame = 65536
"""


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """A server with users, permissions, a 1 s inactivity window and 64 KiB frames."""
    from ternmq.server.security import hash_password

    proc, port = start_server(
        tmp_path_factory.mktemp("owsec"), USERS.format(hash=hash_password("secret"))
    )
    try:
        yield port
    finally:
        proc.kill()


def test_bad_credentials_get_a_security_exception_then_close(secured: int) -> None:
    with OpenWireRaw(secured) as cl:
        got = cl.connect("alice", "wrong")
        assert isinstance(got, ow.ExceptionResponse)
        assert got.exception is not None
        assert got.exception.class_name == "javax.jms.JMSSecurityException"
        cl.read_until_closed()


def test_permissions_apply_to_sends_and_consumers(secured: int) -> None:
    with OpenWireRaw(secured) as cl:
        assert type(cl.connect("bob", "secret")) is ow.Response
        sess = cl.session()
        prod = cl.producer(sess)
        got = cl.send_text(prod, ow.ActiveMQQueue(physical_name="alice.only"), "no")
        assert isinstance(got, ow.ExceptionResponse)
        assert got.exception is not None
        assert got.exception.class_name == "javax.jms.JMSSecurityException"
        _cid, got = cl.consume(sess, ow.ActiveMQQueue(physical_name="alice.only"))
        assert isinstance(got, ow.ExceptionResponse)
        mine = ow.ActiveMQQueue(physical_name="bob.inbox")
        assert type(cl.send_text(prod, mine, "yes")) is ow.Response


def test_a_producer_of_a_destination_needs_the_send_permission(secured: int) -> None:
    with OpenWireRaw(secured) as cl:
        assert type(cl.connect("bob", "secret")) is ow.Response
        sess = cl.session()
        pid = ow.ProducerId(connection_id=sess.connection_id, session_id=sess.value, value=7)
        refused = ow.ActiveMQQueue(physical_name="alice.only")
        got = cl.request(ow.ProducerInfo(producer_id=pid, destination=refused))
        assert isinstance(got, ow.ExceptionResponse)
        assert got.exception is not None
        assert got.exception.class_name == "javax.jms.JMSSecurityException"
        assert "send" in (got.exception.message or "")
        mine = ow.ActiveMQQueue(physical_name="bob.out")
        pid2 = ow.ProducerId(connection_id=sess.connection_id, session_id=sess.value, value=8)
        assert type(cl.request(ow.ProducerInfo(producer_id=pid2, destination=mine))) is (
            ow.Response
        )
        # The connection stays usable, as ActiveMQ's does.
        assert type(cl.send_text(cl.producer(sess), mine, "yes")) is ow.Response


def test_a_silent_peer_is_dropped_a_talking_one_is_not(secured: int) -> None:
    with OpenWireRaw(secured) as silent, OpenWireRaw(secured) as talker:
        assert type(talker.connect("alice", "secret")) is ow.Response
        t0 = time.monotonic()  # the silent peer's last octet is sent after this
        assert type(silent.connect("alice", "secret")) is ow.Response
        deadline = t0 + 6
        closed = False
        while time.monotonic() < deadline and not closed:
            talker.send(ow.KeepAliveInfo())
            try:
                silent.sock.settimeout(0.2)
                data = silent.sock.recv(65536)
                closed = not data
            except TimeoutError:
                pass
        assert closed, "the silent peer was not dropped"
        assert time.monotonic() - t0 >= 1.0  # not before a whole window (1 s) of silence
        sess = talker.session()
        assert isinstance(sess, ow.SessionId)
        # The server kept the talker's read check fed with KeepAliveInfo.
        assert any(isinstance(c, ow.KeepAliveInfo) for c in talker.inbox)


def test_a_frame_over_max_frame_closes_the_connection(secured: int) -> None:
    with OpenWireRaw(secured) as cl:
        assert type(cl.connect("alice", "secret")) is ow.Response
        sess = cl.session()
        prod = cl.producer(sess)
        cl.send_text(prod, ow.ActiveMQQueue(physical_name="big"), "x" * 70_000, sync=False)
        cl.read_until_closed()
