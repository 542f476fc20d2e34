"""The receiving connection factory's ``pickle_budget`` applies to every ObjectMessage it
hands out: received, browsed, or made by its sessions."""

from __future__ import annotations

import uuid

import pytest

from ternmq import ConnectionFactory, MessageFormatException, ObjectMessage, Queue
from ternmq.message import PickleBudget


def test_a_factorys_pickle_budget_applies_to_what_it_receives() -> None:
    url = f"vm://pickle-budget-{uuid.uuid4().hex[:8]}"
    with ConnectionFactory(url).create_connection() as conn:
        s = conn.create_session()
        p = s.create_producer(Queue("q"))
        for _ in range(2):
            p.send(s.create_object_message(list(range(100))))
    strict = ConnectionFactory(url, pickle_budget=PickleBudget(max_objects=10))
    with strict.create_connection() as conn:
        s = conn.create_session()
        browsed = next(iter(s.create_browser(Queue("q"))))
        assert isinstance(browsed, ObjectMessage)
        with pytest.raises(MessageFormatException, match="max_objects"):
            _ = browsed.object
        made = s.create_object_message(list(range(100)))
        with pytest.raises(MessageFormatException, match="max_objects"):
            _ = made.object
        consumer = s.create_consumer(Queue("q"))
        conn.start()
        received = consumer.receive(1.0)
        assert isinstance(received, ObjectMessage)
        with pytest.raises(MessageFormatException, match="max_objects"):
            _ = received.object
    with ConnectionFactory(url).create_connection() as conn:  # the default budget
        s = conn.create_session()
        consumer = s.create_consumer(Queue("q"))
        conn.start()
        again = consumer.receive(1.0)
        assert isinstance(again, ObjectMessage)
        assert again.object == list(range(100))
