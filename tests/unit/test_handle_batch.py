"""``Broker.handle_batch`` (the requests of one socket read in one engine entry) answers
exactly as ``Broker.handle`` called once per request would: the same output in the same
order, errors answered per request, a quiet send's refusal as ``SendFailed``, nothing after a
request that closed the connection, held sends taken in order, and the same store batches
(a store failure fails the replies of the request that wrote, no other)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from _later_store import LaterStore
from ternmq.broker.config import DestinationPolicy
from ternmq.message import TextMessage
from ternmq.message.codec import encode_message
from ternmq.protocol import commands as c
from ternmq.store import AddMessage, MemoryStore, Op
from ternmq.testing import EngineHarness

Q = "queue://batch"
FULL = "queue://full"
BODY = "x" * 200
SIZE = len(encode_message(TextMessage(BODY))) + 20


def _send(corr: int, dest: str = Q, *, persistent: bool = False, quiet: bool = False) -> c.Send:
    msg = encode_message(TextMessage(BODY))
    return c.Send(
        corr=corr, session_id=1, destination=dest, message=msg, persistent=persistent, quiet=quiet
    )


class _FailNext(MemoryStore):
    """A memory store whose write of the ``fail_at``-th message fails (a full disk)."""

    def __init__(self, fail_at: int) -> None:
        super().__init__()
        self.fail_at = fail_at
        self.writes = 0

    def write(self, ops: Sequence[Op]) -> None:
        """Count every write; fail the one that adds the ``fail_at``-th message."""
        self.writes += 1
        for op in ops:
            if isinstance(op, AddMessage):
                self.fail_at -= 1
                if self.fail_at == 0:
                    raise OSError("disk full")
        super().write(ops)


Make = Callable[[], EngineHarness]


def _run(make: Make, setup: list[c.Request], reqs: list[c.Request], batch: bool) -> tuple:
    """Output of ``setup`` then ``reqs`` on a fresh engine, ``reqs`` as one batch or one by
    one (stopping after the one that closed the connection, as a gateway does): (output,
    how many of ``reqs`` were processed, the harness)."""
    h = make()
    out: list[c.Command] = []
    conn = h.broker.connect(out.append)
    for req in setup:
        h.broker.handle(conn, req)
    if batch:
        n = h.broker.handle_batch(conn, reqs)
    else:
        n = 0
        for req in reqs:
            h.broker.handle(conn, req)
            n += 1
            if conn.closed:
                break
    return out, n, h


def _same(make: Make, setup: list[c.Request], reqs: list[c.Request]) -> tuple:
    one, n_one, _ = _run(make, setup, reqs, batch=False)
    many, n_many, h = _run(make, setup, reqs, batch=True)
    assert many == one
    assert n_many == n_one
    return many, n_many, h


SETUP: list[c.Request] = [
    c.Connect(corr=1),
    c.CreateSession(corr=2, session_id=1),
    c.CreateConsumer(corr=3, session_id=1, consumer_id=1, destination=Q, prefetch=3),
]


def test_a_batch_answers_as_one_request_at_a_time_with_an_error_in_the_middle() -> None:
    reqs: list[c.Request] = [
        _send(0, quiet=True),
        _send(10),
        c.CreateSession(corr=11, session_id=1),  # already open: an error, the rest go on
        c.Send(corr=0, session_id=9, destination=Q, message=b"", quiet=True),  # SendFailed
        _send(12),
        c.Ack(corr=13, session_id=1, delivery_ids=[1, 2]),
        _send(0, quiet=True),
        _send(14),
        c.CreateConsumer(corr=15, session_id=1, consumer_id=2, destination=Q, prefetch=10),
    ]
    out, n, _ = _same(EngineHarness, SETUP, reqs)
    assert n == len(reqs)
    kinds = [type(x).__name__ for x in out[3:]]
    assert kinds.count("Deliver") == 5  # 3 within the first prefetch, 2 more after the Ack
    assert [x.corr for x in out if isinstance(x, c.Error)] == [11]
    assert [x.session_id for x in out if isinstance(x, c.SendFailed)] == [9]
    assert [x.corr for x in out if isinstance(x, c.Ok)][-5:] == [10, 12, 13, 14, 15]


def test_a_disconnect_in_the_middle_stops_the_batch() -> None:
    reqs: list[c.Request] = [
        _send(10),
        c.Disconnect(corr=11),
        _send(12),
        c.CreateSession(corr=13, session_id=2),
    ]
    out, n, _ = _same(EngineHarness, SETUP, reqs)
    assert n == 2
    assert isinstance(out[-1], c.Ok) and out[-1].corr == 11
    assert not any(getattr(x, "corr", 0) in (12, 13) for x in out)


def test_stop_on_error_ends_the_batch_after_the_first_refusal() -> None:
    """A protocol whose errors end the connection (STOMP) asks the batch to stop after the
    first request answered with Error or SendFailed: what follows has no effect."""
    for refused in (
        c.CreateSession(corr=11, session_id=1),  # already open: Error
        c.Send(corr=0, session_id=9, destination=Q, message=b"", quiet=True),  # SendFailed
    ):
        h = EngineHarness()
        out: list[c.Command] = []
        conn = h.broker.connect(out.append)
        for req in SETUP:
            h.broker.handle(conn, req)
        reqs: list[c.Request] = [_send(10), refused, _send(12), _send(0, quiet=True)]
        assert h.broker.handle_batch(conn, reqs, stop_on_error=True) == 2
        assert [x.corr for x in out if isinstance(x, c.Ok)][-1] == 10
        assert sum(isinstance(x, c.Deliver) for x in out) == 1  # the sends after it: none
        assert not any(getattr(x, "corr", 0) == 12 for x in out)
        # Without the flag the batch goes on, as handle would request by request.
        h2 = EngineHarness()
        out2: list[c.Command] = []
        conn2 = h2.broker.connect(out2.append)
        for req in SETUP:
            h2.broker.handle(conn2, req)
        assert h2.broker.handle_batch(conn2, reqs) == 4
        assert sum(isinstance(x, c.Deliver) for x in out2) == 3


def test_held_sends_in_a_batch_are_taken_in_order_when_room_frees() -> None:
    def make() -> EngineHarness:
        full = DestinationPolicy(max_bytes=3 * SIZE, full_policy="block", block_timeout=5.0)
        return EngineHarness(policies={FULL: full})

    setup: list[c.Request] = [
        c.Connect(corr=1),
        c.CreateSession(corr=2, session_id=1),
        c.CreateSession(corr=3, session_id=2),
        *[_send(4 + i, FULL) for i in range(3)],  # full now
    ]
    reqs: list[c.Request] = [
        _send(10, FULL),  # held
        _send(0, FULL, quiet=True),  # held behind it
        _send(11, Q),  # session 1: waits behind its held sends
        c.CreateConsumer(corr=12, session_id=2, consumer_id=1, destination=FULL, prefetch=2),
        c.Ack(corr=13, session_id=2, delivery_ids=[1, 2]),  # room for two
        _send(14, FULL),
    ]
    out, n, h = _same(make, setup, reqs)
    assert n == len(reqs)
    answered = [x.corr for x in out if isinstance(x, c.Ok)]
    # the consumer took two (room): the held send goes, then the send of its session behind
    # it; 14 waits (the queue is full again)
    assert answered[-4:] == [12, 10, 11, 13]
    assert 14 not in answered
    assert not any(isinstance(x, (c.Error, c.SendFailed)) for x in out)
    assert not next(iter(h.broker.connections.values())).closed


def test_a_store_failure_fails_only_the_request_that_wrote() -> None:
    stores: list[_FailNext] = []

    def make() -> EngineHarness:
        stores.append(_FailNext(fail_at=2))
        return EngineHarness(store=stores[-1])

    reqs: list[c.Request] = [
        _send(10),  # non-persistent: nothing to write
        c.CreateSession(corr=11, session_id=2),
        _send(12, persistent=True),  # the first message written
        c.CreateSession(corr=13, session_id=3),
        _send(14, persistent=True),  # the write that fails
        c.CreateSession(corr=15, session_id=4),
        _send(16, persistent=True),
    ]
    out, _, _ = _same(make, SETUP, reqs)
    errors = [x.corr for x in out if isinstance(x, c.Error)]
    assert errors == [14]
    oks = {x.corr for x in out if isinstance(x, c.Ok)}
    assert {10, 11, 12, 13, 15, 16} <= oks
    one, many = stores
    assert many.writes == one.writes  # the same store batches, one per writing request


def test_one_entry_releases_the_output_once_for_requests_that_write_nothing() -> None:
    h = EngineHarness()
    released: list[int] = []
    processed = [0]
    conn = h.broker.connect(lambda cmd: released.append(processed[0]))
    for req in [*SETUP, _send(4)]:  # (the queue's first send reserves positions: a write)
        h.broker.handle(conn, req)
    count = len(released)
    check = h.broker.request_check

    def counting(conn_: object, req: c.Request) -> None:
        processed[0] += 1
        if check is not None:
            check(conn_, req)  # type: ignore[arg-type]

    h.broker.request_check = counting
    n = h.broker.handle_batch(conn, [_send(10 + i) for i in range(5)])
    assert n == 5
    # 5 replies and 2 deliveries (prefetch 3), all released after the fifth request
    assert released[count:] == [5] * 7


def test_a_one_request_read_answers_as_handle_would() -> None:
    # The usual read of a synchronous client holds one request: handle_batch takes a short
    # path for it, with the same answers (an error, a quiet send's refusal, a Disconnect).
    singles: list[c.Request] = [
        _send(10, persistent=True),
        _send(11, "queue://"),  # not a destination: Error
        _send(0, "queue://", quiet=True),  # refused quietly: SendFailed
        c.Send(corr=12, session_id=9, destination=Q, message=b""),  # no such session: Error
        c.Disconnect(corr=13),
    ]
    answers = []
    for req in singles:
        out, n, h = _same(EngineHarness, SETUP, [req])
        assert n == 1
        answers.append(type(out[-1]))
    assert answers == [c.Ok, c.Error, c.SendFailed, c.Error, c.Ok]
    assert next(iter(h.broker.connections.values()), None) is None  # Disconnect closed it


def test_submitted_counts_the_store_batches_a_read_made_and_replies_wait_for_them() -> None:
    # A gateway compares Broker.submitted around a read to know whether its reply waits for
    # a commit (the server's owner commit, ``due_awaited``).
    store = LaterStore()
    h = EngineHarness(store=store)
    out: list[c.Command] = []
    conn = h.broker.connect(out.append)
    for req in SETUP[:2]:
        h.broker.handle(conn, req)
    before = h.broker.submitted
    assert h.broker.handle_batch(conn, [_send(10, persistent=True)]) == 1
    assert h.broker.submitted == before + 1
    assert h.broker.handle_batch(conn, [_send(11)]) == 1  # non-persistent: no batch
    assert h.broker.submitted == before + 1
    assert not [x for x in out if isinstance(x, c.Ok) and x.corr >= 10]  # behind the commit
    store.commit()
    assert [x.corr for x in out if isinstance(x, c.Ok)][-2:] == [10, 11]
