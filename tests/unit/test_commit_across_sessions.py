"""``Commit.delivered`` is connection-wide: a transaction acknowledges deliveries of the
connection's other sessions with its sends, in one commit."""

from __future__ import annotations

from ternmq.message import TextMessage
from ternmq.message.codec import decode_message, encode_message
from ternmq.protocol import commands as c
from ternmq.testing import EngineHarness


def test_commit_acknowledges_deliveries_of_another_session_of_the_connection() -> None:
    """``Commit.delivered`` is connection-wide (the OpenWire gateway's consumers each have a
    session, a transaction spans them): the sends and those acks take effect together."""
    h = EngineHarness()
    conn = h.connect()
    conn.request(c.CreateSession(session_id=1))
    m = TextMessage()
    m.text = "in"
    conn.request(c.Send(session_id=1, destination="queue://in", message=encode_message(m)))
    conn.request(c.CreateSession(session_id=2))
    conn.request(c.CreateConsumer(session_id=2, consumer_id=2, destination="queue://in"))
    (deliver,) = conn.take_events()
    assert isinstance(deliver, c.Deliver)
    conn.request(c.CreateSession(session_id=3, transacted=True))
    m.text = "out"
    conn.request(c.Send(session_id=3, destination="queue://out", message=encode_message(m)))
    conn.request(c.Commit(session_id=3, delivered=[deliver.delivery_id]))
    conn.request(c.CloseSession(session_id=2))  # nothing left to give back: it was consumed
    other = h.connect()
    other.request(c.CreateSession(session_id=1))
    other.request(c.CreateConsumer(session_id=1, consumer_id=1, destination="queue://in"))
    other.request(c.CreateConsumer(session_id=1, consumer_id=2, destination="queue://out"))
    events = other.take_events()
    assert [decode_message(e.message).text for e in events] == ["out"]  # type: ignore[attr-defined]
