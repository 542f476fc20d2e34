"""PROP-20, PROP-23 over vm:// (issue 17, item 5; the same over tcp against ``ternmq serve``
is in ``tests/server/test_jmsx_user_id.py``): a JMSXUserID a client put in a message (a
plain send, a transacted send, a staged send) never arrives; with ``populate_user_id`` the
authenticated user does, in consumers, browsers and sequence-number reads."""

from __future__ import annotations

import pytest

from ternmq import ConnectionFactory, Session
from ternmq.broker.embedded import EmbeddedBroker
from ternmq.client.sequenced import commit_staged, log_bounds, read_range, stage
from ternmq.destination import Queue
from ternmq.message import TextMessage
from ternmq.message.codec import decode_message, encode_message
from ternmq.protocol import commands as c


def _forged(body: str) -> TextMessage:
    m = TextMessage(body)
    m.set_string_property("JMSXUserID", "bob")
    return m


@pytest.mark.parametrize("populate", [False, True])
def test_prop_23_forged_user_id_over_vm(populate: bool) -> None:
    """Alice's messages claiming bob arrive with no JMSXUserID, or "alice" with populate."""
    broker = EmbeddedBroker(f"uid-{populate}", users={"alice": "a", "bob": "b"})
    broker.start()
    try:
        assert broker.broker is not None
        broker.broker.populate_user_id = populate
        q = Queue("uid")
        f = ConnectionFactory(broker.url)
        with f.create_connection("alice", "a") as conn:
            raw = encode_message(_forged("plain"))
            conn.request(c.CreateSession(session_id=99))
            reply = conn.request(c.Send(session_id=99, destination=str(q), message=raw))
            assert isinstance(reply, c.Ok), reply
            tx = conn.create_session(True, Session.SESSION_TRANSACTED)
            m = _forged("tx")
            tx.create_producer(q).send(m)
            assert not m.property_exists("JMSXUserID")  # the producer drops it
            tx.commit()
            stage(conn, "sink", 0, "t", [(q, _forged("staged"))])
            commit_staged(conn, "sink", 0, ["t"])
        expected = "alice" if populate else None
        with f.create_connection("bob", "b") as conn:
            b = log_bounds(conn, q)
            read = [
                decode_message(r.data).get_object_property("JMSXUserID")
                for chunk in read_range(conn, str(q), b.earliest, b.latest)
                for r in chunk
            ]
            session = conn.create_session(False, Session.AUTO_ACKNOWLEDGE)
            browsed = list(session.create_browser(q).get_enumeration())
            consumer = session.create_consumer(q)
            conn.start()
            got = [consumer.receive(5.0) for _ in range(3)]
        assert read == [expected] * 3
        assert [m.get_object_property("JMSXUserID") for m in browsed] == [expected] * 3
        assert [m.get_object_property("JMSXUserID") for m in got if m] == [expected] * 3
    finally:
        broker.stop()


@pytest.mark.parametrize("size", [100, 5000, 1 << 20])
def test_prop_23_a_large_message_is_searched_before_its_body(size: int) -> None:
    """The broker looks for a forged JMSXUserID before the body of a large message only: the
    property is still removed whatever the size, and a body holding the name's octets (with
    no such property) arrives untouched, in the octets the client sent."""
    from ternmq.message import BytesMessage
    from ternmq.message.codec import body_offset

    body = (b"JMSXUserID" * (size // 10 + 1))[:size]
    plain = BytesMessage()
    plain.write_bytes(body)
    forged = BytesMessage()
    forged.write_bytes(body)
    forged.set_string_property("JMSXUserID", "bob")
    raw_plain, raw_forged = encode_message(plain), encode_message(forged)
    assert b"JMSXUserID" not in raw_plain[: body_offset(raw_plain)]
    assert b"JMSXUserID" in raw_forged[: body_offset(raw_forged)]
    broker = EmbeddedBroker(f"uid-large-{size}", users={"alice": "a"})
    broker.start()
    try:
        q = Queue("uid-large")
        f = ConnectionFactory(broker.url)
        with f.create_connection("alice", "a") as conn:
            conn.request(c.CreateSession(session_id=99))
            for raw in (raw_plain, raw_forged):
                reply = conn.request(c.Send(session_id=99, destination=str(q), message=raw))
                assert isinstance(reply, c.Ok), reply
            session = conn.create_session(False, Session.AUTO_ACKNOWLEDGE)
            consumer = session.create_consumer(q)
            conn.start()
            got = [consumer.receive(5.0) for _ in range(2)]
        assert all(isinstance(m, BytesMessage) for m in got)
        assert [m.property_exists("JMSXUserID") for m in got] == [False, False]
        assert [m.get_body(bytes) for m in got] == [body, body]
    finally:
        broker.stop()


def test_body_offset_of_what_is_not_an_encoding() -> None:
    """Octets that are not an encoded message: look everywhere (the whole length)."""
    from ternmq.message.codec import body_offset

    assert body_offset(b"\xc1not msgpack") == len(b"\xc1not msgpack")
    assert body_offset(b"") == 0
