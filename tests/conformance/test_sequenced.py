"""Sequence-number access (``ternmq.client.sequenced``, broker ``_sequenced.py``) over every
transport: log reads by position that consume nothing, the cumulative acknowledgement, and
the staged publish that is idempotent per (sink, batch). These are the broker features the
Spark source and sink stand on (issue "data pipeline on Spark"); not JMS, so no catalog IDs.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

from ternmq.broker.embedded import EmbeddedBroker
from ternmq.client import Connection, ConnectionFactory
from ternmq.client.sequenced import (
    abort_staged,
    ack_upto,
    commit_staged,
    ensure_subscription,
    log_bounds,
    read_range,
    stage,
)
from ternmq.destination import Queue, Topic
from ternmq.errors import (
    IllegalStateException,
    InvalidDestinationException,
    InvalidSelectorException,
    ResourceAllocationException,
)
from ternmq.message import DeliveryMode, TextMessage
from ternmq.message.codec import decode_message
from ternmq.testing import FakeClock

from ._helpers import NP, P, drain, new_session, receive, send, text_or_none

MakeBroker = Callable[..., EmbeddedBroker]


def _texts(conn: Connection, dest: str, after: int, upto: int, **kw: object) -> list[str]:
    out = []
    for chunk in read_range(conn, dest, after, upto, **kw):  # type: ignore[arg-type]
        out += [decode_message(r.data).get_body(str) for r in chunk]
    return out


def _seqs(conn: Connection, dest: str, after: int, upto: int, **kw: object) -> list[int]:
    return [r.seq for ch in read_range(conn, dest, after, upto, **kw) for r in ch]  # type: ignore[arg-type]


def _text(body: str, mode: int = DeliveryMode.PERSISTENT, priority: int = 4) -> TextMessage:
    m = TextMessage()
    m.text = body
    m.jms_delivery_mode = mode
    m.jms_priority = priority
    return m


# ---- reading by position ----------------------------------------------------------------------
def test_range_read_is_ordered_by_sequence_repeatable_and_consumes_nothing(
    factory: ConnectionFactory,
) -> None:
    """Reading ``(earliest, latest]`` returns every message in send order (not priority
    order), in chunks of ``limit``; reading again gives the same; a consumer still gets all."""
    with factory.create_connection() as conn:
        s = conn.create_session()
        q = Queue("seq-read")
        for i in range(7):
            send(s, q, f"m{i}", priority=9 if i == 3 else 4)
        b = log_bounds(conn, q)
        assert b.latest - b.earliest >= 7
        chunks = list(read_range(conn, q, b.earliest, b.latest, limit=3))
        assert [len(ch) for ch in chunks] == [3, 3, 1]
        texts = [decode_message(r.data).get_body(str) for ch in chunks for r in ch]
        assert texts == [f"m{i}" for i in range(7)]
        seqs = [r.seq for ch in chunks for r in ch]
        assert seqs == sorted(seqs) and len(set(seqs)) == 7
        assert all(r.delivery_count == 1 for ch in chunks for r in ch)
        assert _texts(conn, str(q), b.earliest, b.latest) == texts
        # a sub-range
        assert _texts(conn, str(q), seqs[1], seqs[4]) == ["m2", "m3", "m4"]
        conn.start()
        got = drain(s.create_consumer(q))
        assert sorted(text_or_none(m) or "" for m in got) == sorted(texts)


def test_bounds_admission_control_caps_latest_at_the_nth_message(
    factory: ConnectionFactory,
) -> None:
    """With ``after`` and ``max_messages``, ``latest`` is the position of the n-th message
    held after ``after``; past the end it is the destination's latest."""
    with factory.create_connection() as conn:
        s = conn.create_session()
        q = Queue("seq-admit")
        for i in range(10):
            send(s, q, f"m{i}")
        b = log_bounds(conn, q)
        seqs = _seqs(conn, str(q), b.earliest, b.latest)
        assert log_bounds(conn, q, after=b.earliest, max_messages=4).latest == seqs[3]
        assert log_bounds(conn, q, after=seqs[3], max_messages=4).latest == seqs[7]
        assert log_bounds(conn, q, after=seqs[7], max_messages=4).latest == b.latest


def test_ack_upto_removes_ready_messages_up_to_a_position_and_positions_keep_growing(
    factory: ConnectionFactory,
) -> None:
    """``ack_upto(p)`` removes every message at or below ``p`` (and only those); later
    messages get higher positions than everything before; ``earliest`` moves up."""
    with factory.create_connection() as conn:
        s = conn.create_session()
        q = Queue("seq-ack")
        for i in range(6):
            send(s, q, f"m{i}")
        b = log_bounds(conn, q)
        seqs = _seqs(conn, str(q), b.earliest, b.latest)
        assert ack_upto(conn, q, seqs[2]) == 3
        assert ack_upto(conn, q, seqs[2]) == 0  # idempotent
        b2 = log_bounds(conn, q)
        assert b2.earliest == seqs[2] and b2.latest == b.latest
        assert _texts(conn, str(q), b2.earliest, b2.latest) == ["m3", "m4", "m5"]
        assert ack_upto(conn, q, b.latest) == 3
        send(s, q, "later")
        b3 = log_bounds(conn, q)
        later = _seqs(conn, str(q), b3.earliest, b3.latest)
        assert len(later) == 1 and later[0] > b.latest
        conn.start()
        assert [text_or_none(m) for m in drain(s.create_consumer(q))] == ["later"]


def test_ack_upto_with_a_selector_leaves_other_messages(factory: ConnectionFactory) -> None:
    """A reader with a selector reads and acknowledges only the matching messages."""
    with factory.create_connection() as conn:
        s = conn.create_session()
        q = Queue("seq-sel")
        for i in range(6):
            m = s.create_text_message(f"m{i}")
            m.set_int_property("n", i)
            s.create_producer(q).send(m)
        b = log_bounds(conn, q)
        assert _texts(conn, str(q), b.earliest, b.latest, selector="n >= 3") == ["m3", "m4", "m5"]
        assert ack_upto(conn, q, b.latest, selector="n >= 3") == 3
        assert _texts(conn, str(q), b.earliest, b.latest) == ["m0", "m1", "m2"]
        with pytest.raises(InvalidSelectorException):
            list(read_range(conn, q, b.earliest, b.latest, selector="n >>> 3"))


def test_in_flight_messages_are_read_but_not_acknowledged_by_ack_upto(
    factory: ConnectionFactory,
) -> None:
    """A message delivered to an ordinary consumer is still held (read shows it), and
    ``ack_upto`` leaves it with that consumer."""
    with factory.create_connection() as conn:
        conn.start()
        s = new_session(conn, 2)  # CLIENT_ACKNOWLEDGE
        q = Queue("seq-inflight")
        send(s, q, "a")
        send(s, q, "b")
        consumer = s.create_consumer(q)
        first = receive(consumer)
        assert text_or_none(first) == "a"
        b = log_bounds(conn, q)
        assert "a" in _texts(conn, str(q), b.earliest, b.latest)
        ack_upto(conn, q, b.latest)
        first.acknowledge()
        consumer.close()
        b2 = log_bounds(conn, q)
        # "a" was acknowledged by its consumer; "b" was prefetched (in flight) during
        # ack_upto, so it stayed and came back when the consumer closed
        assert _texts(conn, str(q), b2.earliest, b2.latest) == ["b"]


def test_a_durable_subscription_is_a_log_too(factory: ConnectionFactory) -> None:
    """``ensure_subscription`` creates a shared durable subscription that keeps the topic's
    messages; it is read and acknowledged by name; a topic without a name is refused."""
    with factory.create_connection() as conn:
        t = Topic("seq-topic")
        ensure_subscription(conn, t, "spark", "kind = 'keep'")
        ensure_subscription(conn, t, "spark", "kind = 'keep'")  # idempotent
        s = conn.create_session()
        for i, kind in enumerate(["keep", "drop", "keep"]):
            m = s.create_text_message(f"e{i}")
            m.set_string_property("kind", kind)
            s.create_producer(t).send(m)
        b = log_bounds(conn, t, subscription="spark")
        assert _texts(conn, str(t), b.earliest, b.latest, subscription="spark") == ["e0", "e2"]
        assert ack_upto(conn, t, b.latest, subscription="spark") == 2
        b2 = log_bounds(conn, t, subscription="spark")
        assert b2.earliest == b2.latest == b.latest
        with pytest.raises(InvalidDestinationException, match="durable subscription"):
            log_bounds(conn, t)
        with pytest.raises(InvalidDestinationException, match="no durable subscription"):
            log_bounds(conn, t, subscription="nope")
        with pytest.raises(InvalidDestinationException, match="queue"):
            log_bounds(conn, Queue("seq-topic"), subscription="spark")
        with pytest.raises(InvalidDestinationException, match="temporary"):
            log_bounds(conn, s.create_temporary_queue())


def test_positions_stay_monotonic_across_a_restart(make_broker: MakeBroker) -> None:
    """After a restart a destination's new messages get positions above every position
    handed out before, even when all earlier messages were acknowledged or non-persistent
    (a reader's checkpoint never skips a new message)."""
    broker = make_broker()
    f = ConnectionFactory(broker.url)
    q = Queue("seq-restart")
    with f.create_connection() as conn:
        s = conn.create_session()
        send(s, q, "p1", delivery_mode=P)
        send(s, q, "n1", delivery_mode=NP)
        send(s, q, "p2", delivery_mode=P)
        b = log_bounds(conn, q)
        ack_upto(conn, q, b.latest)
    broker.stop()
    broker.start()
    f = ConnectionFactory(broker.url)
    with f.create_connection() as conn:
        s = conn.create_session()
        after = log_bounds(conn, q)
        assert after.latest >= b.latest
        send(s, q, "p3", delivery_mode=P)
        b2 = log_bounds(conn, q)
        recs = [r for ch in read_range(conn, q, b.latest, b2.latest) for r in ch]
        assert [decode_message(r.data).get_body(str) for r in recs] == ["p3"]
        assert recs[0].seq > b.latest


def test_ack_upto_removes_exactly_its_messages_from_the_store(make_broker: MakeBroker) -> None:
    """``ack_upto`` deletes stored messages by ranges: what it leaves below the position (a
    message in flight to a consumer, messages not matching its selector) survives a restart,
    what it removed (persistent or not) does not come back, and nothing above it is touched."""
    broker = make_broker()
    q = Queue("seq-ack-store")
    with ConnectionFactory(broker.url + "?prefetch=0").create_connection() as conn:
        conn.start()
        s = conn.create_session()
        for i in range(10):
            m = s.create_text_message(f"m{i}")
            m.set_int_property("n", i)
            mode = NP if i == 5 else P
            s.create_producer(q).send(m, delivery_mode=mode)
        held = new_session(conn, 2)  # CLIENT_ACKNOWLEDGE: m0 stays in flight
        consumer = held.create_consumer(q)
        assert text_or_none(receive(consumer)) == "m0"  # pulled (prefetch 0): only m0
        b = log_bounds(conn, q)
        upto = _seqs(conn, str(q), b.earliest, b.latest)[8]  # m8
        keep = "n <> 3 AND n NOT BETWEEN 6 AND 7"
        assert ack_upto(conn, q, upto, selector=keep) == 5  # m1 m2 m4 m5 m8
    broker.stop()
    broker.start()
    with ConnectionFactory(broker.url).create_connection() as conn:
        b = log_bounds(conn, q)
        assert _texts(conn, str(q), b.earliest, b.latest) == ["m0", "m3", "m6", "m7", "m9"]


def test_scheduled_and_expired_messages(make_broker: MakeBroker, clock: FakeClock) -> None:
    """A message waiting for its delivery time holds ``latest`` below its position until
    due (a reader never moves past a message it could not see); an expired message is not
    returned."""
    broker = make_broker(clock=clock)
    f = ConnectionFactory(broker.url)
    with f.create_connection() as conn:
        s = conn.create_session()
        q = Queue("seq-sched")
        send(s, q, "now1")
        p = s.create_producer(q)
        p.delivery_delay = 10.0
        p.send(s.create_text_message("later"))
        send(s, q, "now2")
        send(s, q, "short", time_to_live=1.0)
        b = log_bounds(conn, q)
        assert _texts(conn, str(q), b.earliest, b.latest) == ["now1"]
        clock.advance(2.0)
        clock.advance(9.0)
        b2 = log_bounds(conn, q)
        assert _texts(conn, str(q), b2.earliest, b2.latest) == ["now1", "later", "now2"]


# ---- staged publish ---------------------------------------------------------------------------
def test_staged_messages_are_invisible_until_committed_and_committed_once(
    factory: ConnectionFactory,
) -> None:
    """Staged messages are not delivered before ``commit_staged``; the commit publishes all
    of them (two txids, two destinations) at once; committing the same (sink, batch) again,
    or an older batch, publishes nothing and says so."""
    with factory.create_connection() as conn:
        conn.start()
        s = conn.create_session()
        out1, out2 = Queue("stage-out1"), Queue("stage-out2")
        c1, c2 = s.create_consumer(out1), s.create_consumer(out2)
        assert stage(conn, "sink", 0, "t-a", [(out1, _text("a1")), (out1, _text("a2"))]) == 2
        assert stage(conn, "sink", 0, "t-a", [(out2, _text("a3"))]) == 3
        assert stage(conn, "sink", 0, "t-b", [(out1, _text("b1", NP))]) == 1
        assert c1.receive_no_wait() is None and c2.receive(0.2) is None
        r = commit_staged(conn, "sink", 0, ["t-a", "t-b"])
        assert (r.published, r.duplicate) == (4, False)
        assert [text_or_none(m) for m in drain(c1)] == ["a1", "a2", "b1"]
        assert [text_or_none(m) for m in drain(c2)] == ["a3"]
        assert commit_staged(conn, "sink", 0, ["t-a"]).duplicate
        stage(conn, "sink", 0, "t-replay", [(out1, _text("dup"))])
        r = commit_staged(conn, "sink", 0, ["t-replay"])
        assert (r.published, r.duplicate) == (0, True)
        assert c1.receive(0.2) is None
        stage(conn, "sink", 1, "t-next", [(out1, _text("next"))])
        assert commit_staged(conn, "sink", 1, ["t-next"]).published == 1
        assert text_or_none(receive(c1)) == "next"
        stage(conn, "other-sink", 0, "t-o", [(out1, _text("other"))])
        assert commit_staged(conn, "other-sink", 0, ["t-o"]).published == 1  # sinks are apart


def test_staged_message_headers_are_kept(factory: ConnectionFactory) -> None:
    """A staged message keeps its delivery mode, priority, properties and correlation id,
    and gets a message id and a timestamp."""
    with factory.create_connection() as conn:
        conn.start()
        s = conn.create_session()
        out = Queue("stage-headers")
        m = _text("h", NP, 7)
        m.jms_correlation_id = "corr-1"
        m.set_string_property("region", "EU")
        stage(conn, "s", 0, "t", [(out, m)])
        commit_staged(conn, "s", 0, ["t"])
        got = receive(s.create_consumer(out))
        assert got.jms_delivery_mode == NP and got.jms_priority == 7
        assert got.jms_correlation_id == "corr-1"
        assert got.get_string_property("region") == "EU"
        assert got.jms_message_id and got.jms_message_id.startswith("ID:")
        assert got.jms_timestamp > 0
        assert got.jms_destination == out


def test_abort_and_orphans(factory: ConnectionFactory) -> None:
    """An aborted txid is gone (committing it is an error); a commit drops the sink's other
    staged txids of that batch or earlier (failed attempts) but not later batches."""
    with factory.create_connection() as conn:
        conn.start()
        s = conn.create_session()
        out = Queue("stage-orphans")
        consumer = s.create_consumer(out)
        stage(conn, "k", 3, "aborted", [(out, _text("x"))])
        abort_staged(conn, ["aborted", "never-existed"])
        with pytest.raises(IllegalStateException, match="unknown"):
            commit_staged(conn, "k", 3, ["aborted"])
        stage(conn, "k", 3, "attempt-0", [(out, _text("lost attempt"))])
        stage(conn, "k", 4, "future", [(out, _text("future"))])
        stage(conn, "k", 3, "attempt-1", [(out, _text("won"))])
        assert commit_staged(conn, "k", 3, ["attempt-1"]).published == 1
        assert [text_or_none(m) for m in drain(consumer)] == ["won"]
        with pytest.raises(IllegalStateException):
            commit_staged(conn, "k", 4, ["attempt-0"])  # dropped as an orphan of batch 3
        assert commit_staged(conn, "k", 4, ["future"]).published == 1
        assert [text_or_none(m) for m in drain(consumer)] == ["future"]
        with pytest.raises(IllegalStateException, match="sink"):
            stage(conn, "k", 5, "future", [(out, _text("y"))])
            stage(conn, "j", 5, "future", [(out, _text("y"))])


def test_staged_transactions_survive_a_restart(make_broker: MakeBroker) -> None:
    """A staged (uncommitted) transaction and the sink's last committed batch outlive a
    broker restart: the commit after the restart publishes it, a replay of an old batch
    publishes nothing."""
    broker = make_broker()
    out = Queue("stage-restart")
    with ConnectionFactory(broker.url).create_connection() as conn:
        stage(conn, "r", 0, "t0", [(out, _text("zero"))])
        commit_staged(conn, "r", 0, ["t0"])
        stage(conn, "r", 1, "t1", [(out, _text("one")), (out, _text("two"))])
    broker.stop()
    broker.start()
    with ConnectionFactory(broker.url).create_connection() as conn:
        conn.start()
        s = conn.create_session()
        consumer = s.create_consumer(out)
        assert text_or_none(receive(consumer)) == "zero"
        stage(conn, "r", 0, "t0-replay", [(out, _text("zero again"))])
        assert commit_staged(conn, "r", 0, ["t0-replay"]).duplicate
        assert commit_staged(conn, "r", 1, ["t1"]).published == 2
        assert [text_or_none(m) for m in drain(consumer)] == ["one", "two"]


def test_stage_refuses_bad_destinations(factory: ConnectionFactory) -> None:
    """A staged message to a temporary destination or an unparsable one is refused at stage
    time with InvalidDestinationException, and nothing of that call is staged."""
    with factory.create_connection() as conn:
        s = conn.create_session()
        tmp = s.create_temporary_queue()
        with pytest.raises(InvalidDestinationException, match="temporary"):
            stage(conn, "b", 0, "t", [(Queue("ok-dest"), _text("a")), (tmp, _text("b"))])
        with pytest.raises(IllegalStateException, match="unknown"):
            commit_staged(conn, "b", 0, ["t"])


def test_abandoned_staged_transactions_are_aborted_after_staged_timeout(
    make_broker: MakeBroker, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """A staged transaction that goes ``staged_timeout`` without a Stage (its writer died and
    its sink never commits again) is aborted by the reaper, with a warning in the log, for
    good (a restart does not bring it back); one that is still being staged to is kept."""
    caplog.set_level(logging.WARNING, "ternmq")
    broker = make_broker(clock=clock, staged_timeout=60, expiry_scan_interval=10)
    out = Queue("stage-timeout")
    with ConnectionFactory(broker.url).create_connection() as conn:
        stage(conn, "dead", 0, "old", [(out, _text("abandoned"))])
        stage(conn, "live", 0, "young", [(out, _text("kept"))])
        clock.advance(40)
        stage(conn, "live", 0, "young", [(out, _text("kept too"))])  # touched again
        clock.advance(30)  # "old" is 70 s untouched, "young" 30 s
    assert "staged_transaction_aborted" in caplog.text and "dead" in caplog.text
    broker.stop()
    broker.start()
    with ConnectionFactory(broker.url).create_connection() as conn:
        conn.start()
        consumer = conn.create_session().create_consumer(out)
        with pytest.raises(IllegalStateException, match="unknown"):
            commit_staged(conn, "dead", 0, ["old"])
        assert commit_staged(conn, "live", 0, ["young"]).published == 2
        assert [text_or_none(m) for m in drain(consumer)] == ["kept", "kept too"]


def test_staged_messages_count_against_the_memory_limit(make_broker: MakeBroker) -> None:
    """Staged messages are held in memory, so they count against ``max_memory_bytes``: a
    Stage past it is refused with ResourceAllocationException (the broker stays up), an
    abort makes room again, and a commit frees its share before publishing, so the
    published copies are not counted twice."""
    broker = make_broker(max_memory_bytes=20_000)
    out = Queue("stage-memory")
    big = "x" * 4000

    def batch() -> list[tuple[Queue, TextMessage]]:
        return [(out, _text(big)) for _ in range(3)]  # about 12,000 bytes

    with ConnectionFactory(broker.url).create_connection() as conn:
        stage(conn, "m", 0, "a", batch())
        with pytest.raises(ResourceAllocationException, match="max_memory_bytes"):
            stage(conn, "m", 0, "b", batch())
        abort_staged(conn, ["a"])
        stage(conn, "m", 0, "b", batch())
        assert commit_staged(conn, "m", 0, ["b"]).published == 3
        conn.start()
        consumer = conn.create_session().create_consumer(out)
        assert len(drain(consumer)) == 3
