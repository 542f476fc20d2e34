"""Deliveries a closing consumer held go back to the front of their queue in their original
order (REL-16) without re-sorting the queue's ready order once per message (closing a
consumer with a large prefetch in front of a backlog took seconds)."""

from __future__ import annotations

import pytest

from ternmq.broker import _queue
from ternmq.message import TextMessage
from ternmq.message.codec import decode_message, encode_message
from ternmq.protocol import commands as c
from ternmq.testing import EngineHarness


def _texts(events: list[c.Command]) -> list[str]:
    out = []
    for ev in events:
        assert isinstance(ev, c.Deliver)
        msg = decode_message(ev.message)
        assert isinstance(msg, TextMessage) and msg.text is not None
        out.append(msg.text)
    return out


@pytest.mark.parametrize("delivered", [False, True])
def test_a_closed_consumers_deliveries_return_in_order_without_resorting(
    delivered: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    h = EngineHarness()
    producer = h.connect()
    producer.request(c.CreateSession(session_id=1))
    for i in range(300):
        msg = encode_message(TextMessage(f"{i:03d}"))
        producer.request(c.Send(session_id=1, destination="queue://q", message=msg))
    holder = h.connect()
    holder.request(c.CreateSession(session_id=1))
    holder.request(
        c.CreateConsumer(session_id=1, consumer_id=1, destination="queue://q", prefetch=100)
    )
    assert _texts(holder.take_events()) == [f"{i:03d}" for i in range(100)]
    sorts = 0

    def counting_sorted(*args: object, **kwargs: object) -> object:
        nonlocal sorts
        sorts += 1
        return sorted(*args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(_queue, "sorted", counting_sorted, raising=False)
    ids = list(range(1, 101)) if delivered else []
    holder.request(c.CloseSession(session_id=1, delivered=ids))
    assert sorts == 0
    reader = h.connect()
    reader.request(c.CreateSession(session_id=1))
    reader.request(
        c.CreateConsumer(session_id=1, consumer_id=1, destination="queue://q", prefetch=1000)
    )
    assert _texts(reader.take_events()) == [f"{i:03d}" for i in range(300)]
