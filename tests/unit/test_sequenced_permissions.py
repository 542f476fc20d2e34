"""Permissions of the sequence-number requests (broker ``_sequenced.py``): reading needs
``browse``, acknowledging ``consume``, staging ``send`` (EXC-06). The requests themselves are
tested over every transport in ``tests/conformance/test_sequenced.py``."""

from __future__ import annotations

import pytest

from ternmq.broker.embedded import EmbeddedBroker
from ternmq.client import ConnectionFactory
from ternmq.client.sequenced import ack_upto, commit_staged, log_bounds, read_range, stage
from ternmq.destination import Queue
from ternmq.errors import JMSSecurityException
from ternmq.message import TextMessage
from ternmq.message.codec import decode_message


def _text(body: str) -> TextMessage:
    m = TextMessage()
    m.text = body
    return m


def _texts(conn, dest, after, upto):  # type: ignore[no-untyped-def]
    return [
        decode_message(r.data).get_body(str)
        for ch in read_range(conn, dest, after, upto)
        for r in ch
    ]


def test_permissions_browse_consume_send() -> None:
    """Reading needs ``browse``, acknowledging ``consume``, staging ``send`` (EXC-06), and
    committing staged messages needs ``send`` on their destinations too."""
    allowed = {("reader", "browse"), ("acker", "browse"), ("acker", "consume")}

    def authorizer(user: str | None, action: str, dest: str) -> bool:
        if action in ("send", "create"):
            return user == "writer" or action == "create"
        return (user or "", action) in allowed

    broker = EmbeddedBroker("perm-seq", users={"reader": "r", "acker": "a", "writer": "w"})
    broker.start()
    assert broker.broker is not None
    broker.broker.authorizer = authorizer
    f = ConnectionFactory(broker.url)
    q = Queue("perm-q")
    with f.create_connection("writer", "w") as w:
        stage(w, "p", 0, "t", [(q, _text("x"))])
        commit_staged(w, "p", 0, ["t"])
        with pytest.raises(JMSSecurityException):
            log_bounds(w, q)
    with f.create_connection("reader", "r") as r:
        b = log_bounds(r, q)
        assert _texts(r, str(q), b.earliest, b.latest) == ["x"]
        with pytest.raises(JMSSecurityException, match="consume"):
            ack_upto(r, q, b.latest)
        with pytest.raises(JMSSecurityException, match="send"):
            stage(r, "p", 1, "t2", [(q, _text("y"))])
    with f.create_connection("writer", "w") as w:
        stage(w, "p", 1, "t3", [(q, _text("z"))])
    with f.create_connection("reader", "r") as r:
        with pytest.raises(JMSSecurityException, match="send"):
            commit_staged(r, "p", 1, ["t3"])
        assert _texts(r, str(q), b.earliest, log_bounds(r, q).latest) == ["x"]
    with f.create_connection("acker", "a") as a:
        assert ack_upto(a, q, b.latest) == 1
    broker.stop()
