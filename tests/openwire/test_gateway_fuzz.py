"""A live fuzz of the OpenWire gateway: connections on the main port send random bytes,
mutated frames and well-formed commands with random values (ids, destinations, selectors,
ack ranges and types, transaction types); afterwards the server is alive, logged no internal
error, and a clean OpenWire client still connects, sends and receives.

The run lasts ``TERNMQ_FUZZ_SECONDS`` if set, else 5 seconds (at most 20 by default under CI,
``CI=true``). The random choices come from ``random.Random(seed)``; the seed is printed on
failure and can be fixed with ``TERNMQ_FUZZ_SEED``.
"""

from __future__ import annotations

import pathlib
import random
import socket

from _live_fuzz import assert_serving, fuzz_seconds, fuzz_seed, run_fuzz
from ternmq.protocol import openwire as ow

from ._client import HOST, OpenWireRaw, start_server

SECONDS = fuzz_seconds(ci=20, local=5)
SEED = fuzz_seed()
WORKERS = 4
CONFIG = """
[broker]
max_message_bytes = 32768
[limits]
max_frame = 65536
handshake_timeout = 1.0
heartbeat = 2.0
max_sessions_per_connection = 8
max_consumers_per_connection = 16
"""

NAMES = ["fz.a", "fz.b", "", "x" * 300, "ActiveMQ.Advisory.TempQueue", "a b", "q://x", None]
SELECTORS = [None, "", "a = 1", "((", "JMSPriority > 3", "x LIKE 'a%'"]


def _dest(rng: random.Random) -> ow.ActiveMQDestination | None:
    cls = rng.choice(
        [ow.ActiveMQQueue, ow.ActiveMQTopic, ow.ActiveMQTempQueue, ow.ActiveMQTempTopic]
    )
    return None if rng.random() < 0.1 else cls(physical_name=rng.choice(NAMES))


def _mid(rng: random.Random) -> ow.MessageId | None:
    if rng.random() < 0.2:
        return None
    return ow.MessageId(
        producer_id=ow.ProducerId(connection_id="c", value=rng.randint(-2, 3)),
        producer_sequence_id=rng.randint(-1, 5),
        broker_sequence_id=rng.randint(-5, 60),
    )


def _command(rng: random.Random) -> ow.DataStructure:
    """A well-formed command with random values."""
    sid = ow.SessionId(connection_id="c", value=rng.randint(0, 4))
    cid = ow.ConsumerId(connection_id="c", session_id=rng.randint(0, 4), value=rng.randint(0, 6))
    pid = ow.ProducerId(connection_id="c", session_id=1, value=rng.randint(0, 3))
    tid: ow.TransactionId | None = rng.choice(
        [
            None,
            ow.LocalTransactionId(value=rng.randint(0, 3)),
            ow.XATransactionId(format_id=1, global_transaction_id=b"g", branch_qualifier=b"b"),
        ]
    )
    options: list[ow.DataStructure] = [
        ow.SessionInfo(session_id=sid),
        ow.ProducerInfo(producer_id=pid, destination=_dest(rng)),
        ow.ConsumerInfo(
            consumer_id=cid,
            destination=_dest(rng),
            prefetch_size=rng.choice([-1, 0, 1, 5, 1000, 2**31 - 1]),
            selector=rng.choice(SELECTORS),
            subscription_name=rng.choice([None, "", "s"]),
            browser=rng.random() < 0.2,
            no_local=rng.random() < 0.2,
        ),
        ow.ActiveMQTextMessage(
            producer_id=pid,
            destination=_dest(rng),
            transaction_id=tid,
            message_id=_mid(rng),
            persistent=rng.random() < 0.5,
            priority=rng.randint(-3, 12),
            expiration=rng.choice([0, -1, 1, 2**62]),
            content=rng.choice([None, b"", ow.encode_text_body("t"), b"\x00\x00\x00\x09ab"]),
            marshalled_properties=rng.choice([None, b"", b"\x00\x00\x00\x01\x00\x01a\x63"]),
            reply_to=_dest(rng),
        ),
        ow.ActiveMQBytesMessage(producer_id=pid, destination=_dest(rng), content=b"\x01\x02"),
        ow.MessageAck(
            consumer_id=cid,
            transaction_id=tid,
            ack_type=rng.randint(-1, 8),
            first_message_id=_mid(rng),
            last_message_id=_mid(rng),
            message_count=rng.randint(0, 5),
        ),
        ow.MessagePull(consumer_id=cid, timeout=rng.choice([-1, 0, 10, 50])),
        ow.TransactionInfo(transaction_id=tid, type=rng.randint(-1, 8)),
        ow.RemoveInfo(
            object_id=rng.choice([cid, sid, pid, ow.ConnectionId(value="c"), None]),
            last_delivered_sequence_id=rng.randint(-1, 60),
        ),
        ow.RemoveSubscriptionInfo(subcription_name=rng.choice([None, "", "s"])),
        ow.DestinationInfo(destination=_dest(rng), operation_type=rng.randint(-1, 3)),
        ow.KeepAliveInfo(),
        ow.ConsumerControl(consumer_id=cid, prefetch=rng.randint(-1, 10)),
        ow.BrokerInfo(broker_name="bridge"),
        ow.ConnectionInfo(connection_id=ow.ConnectionId(value="c2")),
        ow.WireFormatInfo(version=12),
    ]
    cmd = rng.choice(options)
    if isinstance(cmd, ow.BaseCommand):
        cmd.command_id = rng.randint(0, 1000)
        cmd.response_required = rng.random() < 0.6
    return cmd


def _mutate(rng: random.Random, data: bytes) -> bytes:
    buf = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        if not buf:
            break
        i = rng.randrange(len(buf))
        choice = rng.random()
        if choice < 0.5:
            buf[i] = rng.randrange(256)
        elif choice < 0.75:
            del buf[i : i + rng.randint(1, 8)]
        else:
            buf[i:i] = rng.randbytes(rng.randint(1, 8))
    return bytes(buf)


def _session(rng: random.Random, port: int) -> None:
    try:
        _hostile(rng, port)
    except OSError:
        pass  # the server closed on us: expected for hostile input


def _hostile(rng: random.Random, port: int) -> None:
    with socket.create_connection((HOST, port), timeout=2) as sock:
        sock.settimeout(0.05)
        if rng.random() < 0.1:
            sock.sendall(rng.randbytes(rng.randint(1, 200)))
        else:
            info = ow.WireFormat(version=12, max_inactivity_ms=30_000).to_info()
            hello = ow.encode_frame(info)
            sock.sendall(_mutate(rng, hello) if rng.random() < 0.1 else hello)
            login = ow.ConnectionInfo(
                command_id=1,
                response_required=True,
                connection_id=ow.ConnectionId(value="c"),
                client_id=rng.choice([None, "", "fz", "fz"]),
            )
            if rng.random() < 0.9:
                sock.sendall(ow.encode_frame(login))
            for _ in range(rng.randint(1, 25)):
                frame = ow.encode_frame(_command(rng))
                if rng.random() < 0.15:
                    frame = _mutate(rng, frame)
                try:
                    sock.sendall(frame)
                    sock.recv(65536)
                except (TimeoutError, OSError):
                    pass


def test_live_fuzz_leaves_the_server_serving(tmp_path: pathlib.Path) -> None:
    server, port = start_server(tmp_path, CONFIG)
    try:
        where = run_fuzz(_session, port, seconds=SECONDS, seed=SEED, workers=WORKERS).where
        assert_serving(server, where)
        with OpenWireRaw(port) as cl:
            assert type(cl.connect()) is ow.Response
            sess = cl.session()
            prod = cl.producer(sess)
            q = ow.ActiveMQQueue(physical_name="fz.clean")
            _cid, got = cl.consume(sess, q)
            assert type(got) is ow.Response
            assert type(cl.send_text(prod, q, "after the fuzz")) is ow.Response
            d = cl.dispatch()
            assert d.message is not None
            assert ow.decode_text_body(d.message.content or b"") == "after the fuzz"
        assert_serving(server, where)
    finally:
        server.kill()
