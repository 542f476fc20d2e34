"""Selectors as the broker applies them (SEL items with a delivery side; the language itself
is tested in tests/selector/)."""

from __future__ import annotations

import pytest

from ternmq import InvalidSelectorException, Queue, Topic
from ternmq.client import Connection

from ._helpers import drain_texts


def _send(conn: Connection, dest: Queue | Topic, *specs: tuple[str, int, int]) -> None:
    s = conn.create_session()
    p = s.create_producer(dest)
    for color, n, prio in specs:
        m = s.create_text_message(f"{color}{n}")
        m.set_string_property("color", color)
        m.set_int_property("n", n)
        p.send(m, priority=prio)


def test_sel_01_sel_03_queue_rejects_stay_for_others(connection: Connection) -> None:
    """SEL-01, SEL-03, SEL-60: a selective consumer gets only matches, past non-matching
    ones at the head; the rest stays on the queue, in order."""
    q = Queue("sel01")
    _send(connection, q, ("red", 1, 4), ("red", 2, 4), ("blue", 3, 4), ("red", 4, 4))
    s = connection.create_session()
    blue = s.create_consumer(q, "color = 'blue'")
    assert drain_texts(blue) == ["blue3"]
    blue.close()
    assert drain_texts(s.create_consumer(q)) == ["red1", "red2", "red4"]


def test_sel_60_match_beyond_the_prefetch_window(connection: Connection) -> None:
    """SEL-60: a match deep behind many non-matching messages (more than a prefetch window)
    is still delivered."""
    q = Queue("sel60")
    _send(connection, q, *[("red", i, 4) for i in range(250)], ("blue", 999, 4))
    s = connection.create_session()
    assert drain_texts(s.create_consumer(q, "color = 'blue'")) == ["blue999"]


def test_sel_61_priority_order_among_matches(connection: Connection) -> None:
    """SEL-61: among matching messages, priority first, then send order."""
    q = Queue("sel61")
    _send(connection, q, ("red", 1, 1), ("blue", 2, 1), ("red", 3, 8), ("red", 4, 1))
    s = connection.create_session()
    assert drain_texts(s.create_consumer(q, "color = 'red'")) == ["red3", "red1", "red4"]


def test_sel_01_sel_03_topic_subscription_holds_only_matches(connection: Connection) -> None:
    """SEL-01, SEL-03: a subscription only ever holds messages that matched at publish time."""
    t = Topic("sel03")
    s = connection.create_session()
    big = s.create_consumer(t, "n > 10")
    _send(connection, t, ("red", 5, 4), ("red", 50, 4))
    assert drain_texts(big) == ["red50"]


def test_sel_05_empty_and_none_selectors_are_the_same(connection: Connection) -> None:
    """SEL-05: for a durable subscription None and "" name the same (absent) selector, so
    re-attaching with the other keeps the backlog; a different text replaces it."""
    connection.close()
    from ternmq import ConnectionFactory

    factory = ConnectionFactory(connection._factory.url)
    with factory.create_connection() as conn:
        conn.client_id = "sel05"
        conn.start()
        s = conn.create_session()
        t = Topic("sel05")
        s.create_durable_consumer(t, "d", None).close()
        _send(conn, t, ("red", 1, 4))
        k = s.create_durable_consumer(t, "d", "")
        assert drain_texts(k) == ["red1"]
        k.close()
        _send(conn, t, ("red", 2, 4))
        k = s.create_durable_consumer(t, "d", "n > 0 ")  # not equal text: a new subscription
        assert drain_texts(k) == []
        k.close()
        s.unsubscribe("d")


@pytest.mark.parametrize(
    "call",
    [
        lambda s: s.create_consumer(Queue("q"), "a ="),
        lambda s: s.create_consumer(Topic("t"), "a ="),
        lambda s: s.create_shared_consumer(Topic("t"), "x", "a ="),
        lambda s: s.create_shared_durable_consumer(Topic("t"), "y", "a ="),
        lambda s: s.create_browser(Queue("q"), "a ="),
    ],
)
def test_sel_06_invalid_selector_raises_at_creation(connection: Connection, call: object) -> None:
    """SEL-06: every selector-taking call rejects a malformed selector before returning."""
    s = connection.create_session()
    with pytest.raises(InvalidSelectorException):
        call(s)  # type: ignore[operator]


def test_sel_06_durable_invalid_selector_creates_nothing(connection: Connection) -> None:
    """SEL-06: a durable subscription is not created by a call with a bad selector."""
    connection.close()
    from ternmq import ConnectionFactory, InvalidDestinationException

    with ConnectionFactory(connection._factory.url).create_connection() as conn:
        conn.client_id = "sel06"
        s = conn.create_session()
        with pytest.raises(InvalidSelectorException):
            s.create_durable_consumer(Topic("t"), "never", "1 +")
        with pytest.raises(InvalidDestinationException):
            s.unsubscribe("never")


def test_sel_62_message_selector_returned_as_given(connection: Connection) -> None:
    """SEL-62: message_selector returns the text exactly as given; None for none or ""."""
    s = connection.create_session()
    text = "color = 'red'  AND n>1"
    assert s.create_consumer(Queue("q62"), text).message_selector == text
    assert s.create_consumer(Queue("q62"), "").message_selector is None
    assert s.create_browser(Queue("q62"), text).message_selector == text
    assert s.create_browser(Queue("q62")).message_selector is None


def test_sel_34_jmsx_delivery_count_is_the_count_of_the_attempt(connection: Connection) -> None:
    """SEL-34 (vectors R-22, R-23): a selector sees JMSXDeliveryCount as the delivery about
    to be attempted would carry it: 1 the first time (never NULL), 2 after one rollback, so
    the usual poison-message filter ``JMSXDeliveryCount > n`` can match; a browser sees the
    count of the next delivery too."""
    q = Queue("sel34")
    _send(connection, q, ("red", 1, 4))
    s = connection.create_session()
    for never in ("JMSXDeliveryCount IS NULL", "JMSXDeliveryCount > 1"):
        c = s.create_consumer(q, never)
        assert drain_texts(c) == []
        c.close()
    browser = s.create_browser(q, "JMSXDeliveryCount = 1")
    assert [m.text for m in browser] == ["red1"]  # type: ignore[attr-defined]
    tx = connection.create_session(True)
    first = tx.create_consumer(q, "JMSXDeliveryCount = 1")
    m = first.receive(5.0)
    assert m is not None and m.get_int_property("JMSXDeliveryCount") == 1
    tx.rollback()
    first.close()
    not_first = s.create_consumer(q, "JMSXDeliveryCount = 1")
    assert drain_texts(not_first) == []
    not_first.close()
    again = s.create_consumer(q, "JMSXDeliveryCount > 1")
    m = again.receive(5.0)
    assert m is not None and m.get_int_property("JMSXDeliveryCount") == 2
    assert m.jms_redelivered


def test_sel_34_a_topic_subscription_sees_a_first_delivery(connection: Connection) -> None:
    """SEL-34: offered to a subscription, a published message counts its first delivery."""
    t = Topic("sel34t")
    s = connection.create_session()
    first = s.create_consumer(t, "JMSXDeliveryCount = 1")
    later = s.create_consumer(t, "JMSXDeliveryCount > 1")
    _send(connection, t, ("red", 1, 4))
    assert drain_texts(first) == ["red1"]
    assert drain_texts(later) == []
