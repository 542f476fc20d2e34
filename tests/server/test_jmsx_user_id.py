"""PROP-20, PROP-23 against a real ``ternmq serve`` (issue 17, item 5): a client never sets
JMSXUserID. A forged value (user alice claiming bob) sent by every send path (Send, a
transacted Send, a staged send of the sequenced API) never reaches a consumer, a browser or
a raw Browse; with ``populate_user_id`` every one of them sees the authenticated user, and
an anonymous connection's messages carry none."""

from __future__ import annotations

import pytest

from ternmq import ConnectionFactory, Queue, Session
from ternmq.message import Message, TextMessage
from ternmq.message.codec import decode_message, encode_message
from ternmq.protocol import commands as c
from ternmq.server.security import hash_password

from ._support import Raw
from .conftest import Serve

_USERS = (
    f'[users.alice]\npassword = "{hash_password("s3cret")}"\n'
    f'[users.bob]\npassword = "{hash_password("hunter2")}"\n'
)


def _forged(text: str) -> bytes:
    m = TextMessage(text)
    m.set_string_property("JMSXUserID", "bob")
    return encode_message(m)


def _send_forged(port: int, queue: str, user: str | None, password: str | None) -> None:
    """Send three forged messages over raw frames: plain, transacted and staged."""
    dest = f"queue://{queue}"
    with Raw(port) as cl:
        assert isinstance(cl.connect(user, password), c.Connected)
        assert isinstance(cl.request(c.CreateSession(session_id=1)), c.Ok)
        assert isinstance(cl.request(c.CreateSession(session_id=2, transacted=True)), c.Ok)
        ok = cl.request(c.Send(session_id=1, destination=dest, message=_forged("plain")))
        assert isinstance(ok, c.Ok), ok
        ok = cl.request(c.Send(session_id=2, destination=dest, message=_forged("tx")))
        assert isinstance(ok, c.Ok), ok
        assert isinstance(cl.request(c.Commit(session_id=2)), c.Ok)
        staged = c.StagedSend(destination=dest, message=_forged("staged"))
        ok = cl.request(c.Stage(sink_id="s", batch_id=1, txid="t1", messages=[staged]))
        assert isinstance(ok, c.Ok), ok
        done = cl.request(c.CommitStaged(sink_id="s", batch_id=1, txids=["t1"]))
        assert isinstance(done, c.StagedResult), done


def _seen(port: int, queue: str, user: str | None, password: str | None) -> list[object]:
    """JMSXUserID (None when absent) of every message as a raw Browse, a QueueBrowser and a
    consumer over tcp see it, in that order, three messages each."""
    seen: list[object] = []
    with Raw(port) as cl:
        assert isinstance(cl.connect(user, password), c.Connected)
        result = cl.request(c.Browse(destination=f"queue://{queue}"))
        assert isinstance(result, c.BrowseResult)
        seen += [_user(decode_message(data)) for data in result.messages]
    factory = ConnectionFactory(f"tcp://127.0.0.1:{port}")
    with factory.create_connection(user, password) as conn:
        session = conn.create_session(False, Session.AUTO_ACKNOWLEDGE)
        browsed = list(session.create_browser(Queue(queue)).get_enumeration())
        seen += [_user(m) for m in browsed]
        consumer = session.create_consumer(Queue(queue))
        conn.start()
        for _ in range(3):
            m = consumer.receive(10.0)
            assert m is not None
            seen.append(_user(m))
        assert consumer.receive_no_wait() is None
    return seen


def _user(m: Message) -> object:
    return m.get_object_property("JMSXUserID")


@pytest.mark.parametrize("populate", [False, True])
def test_prop_23_forged_user_id_never_reaches_anyone(serve: Serve, populate: bool) -> None:
    """PROP-23: alice's messages claiming to be bob's arrive without JMSXUserID (populate
    off) or with "alice" (populate on), however they were sent and however they are read."""
    server = serve(f"populate_user_id = {str(populate).lower()}\n" + _USERS)
    _send_forged(server.port, "forged", "alice", "s3cret")
    seen = _seen(server.port, "forged", "bob", "hunter2")
    assert seen == [("alice" if populate else None)] * 9


@pytest.mark.parametrize("populate", [False, True])
def test_prop_23_anonymous_gets_no_user_id(serve: Serve, populate: bool) -> None:
    """PROP-23: an anonymous connection's forged JMSXUserID is removed and none is set."""
    server = serve(f"populate_user_id = {str(populate).lower()}\n")
    _send_forged(server.port, "anon", None, None)
    assert _seen(server.port, "anon", None, None) == [None] * 9


def test_prop_20_producer_drops_application_user_id(serve: Serve) -> None:
    """PROP-20: JMSXUserID is provider-set: a producer drops a value the application set
    before sending; the consumer sees the authenticated user."""
    server = serve("populate_user_id = true\n" + _USERS)
    factory = ConnectionFactory(f"tcp://127.0.0.1:{server.port}")
    with factory.create_connection("alice", "s3cret") as conn:
        session = conn.create_session(False, Session.AUTO_ACKNOWLEDGE)
        m = session.create_text_message("hi")
        m.set_string_property("JMSXUserID", "bob")
        session.create_producer(Queue("app")).send(m)
        assert not m.property_exists("JMSXUserID")
        consumer = session.create_consumer(Queue("app"))
        conn.start()
        got = consumer.receive(10.0)
        assert got is not None and got.get_string_property("JMSXUserID") == "alice"
