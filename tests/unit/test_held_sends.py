"""Sends held for room (PSF-07) on the engine itself, with a fake clock: a send waiting for a
full destination holds back only its own session's later sends and later sends to that
destination, never another session's send elsewhere; holding and retrying are O(1) per
request, whatever the number of held sends."""

from __future__ import annotations

import msgspec
import pytest

from ternmq.broker.config import DestinationPolicy
from ternmq.errors import ResourceAllocationException
from ternmq.message import TextMessage
from ternmq.message.codec import decode_message, encode_message
from ternmq.protocol import commands as c
from ternmq.testing import EngineHarness

FULL = "queue://full"
OTHER = "queue://other"
BODY = "x" * 200
SIZE = len(encode_message(TextMessage(BODY))) + 20  # room for the short text before it


class _Client:
    """A connection to the harness's engine that sees every reply, including late ones (a
    held send is answered by a later request or tick, which ``HarnessConnection`` refuses)."""

    def __init__(self, h: EngineHarness) -> None:
        self.broker = h.broker
        self.out: list[c.Command] = []
        self.conn = h.broker.connect(self.out.append)
        self.corr = 0
        assert isinstance(self.call(c.Connect()), c.Connected)
        self.call(c.CreateSession(session_id=1))

    def submit(self, req: c.Request) -> int:
        """Handle ``req`` with a fresh corr; the corr (its reply may come later)."""
        self.corr += 1
        self.broker.handle(self.conn, msgspec.structs.replace(req, corr=self.corr))
        return self.corr

    def reply(self, corr: int) -> c.Command | None:
        """The reply to request ``corr`` so far, or None."""
        found = [x for x in self.out if getattr(x, "corr", None) == corr]
        assert len(found) <= 1, found
        return found[0] if found else None

    def call(self, req: c.Request) -> c.Command:
        """Handle ``req``; its reply, which must come at once."""
        reply = self.reply(self.submit(req))
        assert reply is not None, f"no reply to {req}"
        return reply

    def send(self, dest: str, text: str, session: int = 1) -> int:
        """Send a NON_PERSISTENT text message; the corr."""
        msg = encode_message(TextMessage(f"{text}:{BODY}"))
        return self.submit(
            c.Send(session_id=session, destination=dest, message=msg, persistent=False)
        )

    def replies(self) -> list[int]:
        """The corrs answered so far, in the order they were answered."""
        return [x.corr for x in self.out if isinstance(x, (c.Ok, c.Error))]


def _harness(block_timeout: float = 5.0) -> EngineHarness:
    full = DestinationPolicy(max_bytes=3 * SIZE, full_policy="block", block_timeout=block_timeout)
    return EngineHarness(policies={FULL: full})


def _fill(cl: _Client) -> None:
    for i in range(3):
        assert isinstance(cl.reply(cl.send(FULL, f"fill{i}")), c.Ok)


def _texts(h: EngineHarness, dest: str) -> list[str]:
    """Drain ``dest`` with a consumer of a fresh connection: the texts, in queue order."""
    reader = _Client(h)
    reader.call(c.CreateConsumer(session_id=1, consumer_id=1, destination=dest, prefetch=1000))
    out = []
    for ev in reader.out:
        if isinstance(ev, c.Deliver):
            msg = decode_message(ev.message)
            assert isinstance(msg, TextMessage) and msg.text is not None
            out.append(msg.text.split(":")[0])
    return out


def test_a_held_send_does_not_stall_another_connections_send_elsewhere() -> None:
    h = _harness()
    hog, other = _Client(h), _Client(h)
    _fill(hog)
    held = hog.send(FULL, "hog")
    assert hog.reply(held) is None  # waits for room
    assert isinstance(other.reply(other.send(OTHER, "free")), c.Ok)  # not behind it
    # A later send to the full queue waits behind the earlier one, even once room frees
    behind = other.send(FULL, "other")
    assert other.reply(behind) is None
    assert isinstance(other.call(c.Purge(destination=FULL)), c.Ok)
    assert isinstance(hog.reply(held), c.Ok) and isinstance(other.reply(behind), c.Ok)
    assert _texts(h, FULL) == ["hog", "other"]  # in the order they came to wait


def test_a_sessions_later_send_waits_behind_its_held_send() -> None:
    """A session's sends are taken in send order whatever their destinations (an answered
    send vouches for the quiet ones before it); another session of the same connection is
    not held back."""
    h = _harness()
    cl = _Client(h)
    cl.call(c.CreateSession(session_id=2))
    _fill(cl)
    first = cl.send(FULL, "first")
    then = cl.send(OTHER, "then")
    assert cl.reply(first) is None and cl.reply(then) is None
    elsewhere = cl.send(OTHER, "s2", session=2)
    assert isinstance(cl.reply(elsewhere), c.Ok)
    cl.call(c.Purge(destination=FULL))
    assert cl.replies()[-3:-1] == [first, then]  # answered in send order (then the Purge)
    assert _texts(h, OTHER) == ["s2", "then"]


def test_a_held_send_times_out_then_its_sessions_next_send_goes() -> None:
    h = _harness(block_timeout=2.0)
    cl = _Client(h)
    _fill(cl)
    first = cl.send(FULL, "first")
    then = cl.send(OTHER, "then")
    h.clock.advance(1.9)
    assert cl.reply(first) is None and cl.reply(then) is None
    h.clock.advance(0.2)
    err = cl.reply(first)
    assert isinstance(err, c.Error)
    assert err.kind == ResourceAllocationException.__name__
    assert "blocked for too long" in err.message
    assert isinstance(cl.reply(then), c.Ok)
    assert _texts(h, OTHER) == ["then"]


def test_a_later_send_past_its_deadline_fails_once_its_turn_comes() -> None:
    """Two held sends of one session to a full queue: both fail at their deadlines, the
    second only once the first is settled (the session's order)."""
    h = _harness(block_timeout=1.0)
    cl = _Client(h)
    _fill(cl)
    a = cl.send(FULL, "a")
    h.clock.advance(0.5)
    b = cl.send(FULL, "b")
    h.clock.advance(0.6)
    assert isinstance(cl.reply(a), c.Error) and cl.reply(b) is None
    h.clock.advance(0.5)
    assert isinstance(cl.reply(b), c.Error)


def test_disconnect_waits_for_the_connections_held_sends() -> None:
    h = _harness()
    cl, other = _Client(h), _Client(h)
    _fill(cl)
    held = cl.send(FULL, "held")
    bye = cl.submit(c.Disconnect())
    assert cl.reply(bye) is None and not cl.conn.closed
    other.call(c.Purge(destination=FULL))
    assert cl.replies()[-2:] == [held, bye]
    assert cl.conn.closed
    assert _texts(h, FULL) == ["held"]


def test_a_dropped_connections_held_sends_leave_and_the_next_sender_goes() -> None:
    h = _harness()
    hog, other = _Client(h), _Client(h)
    _fill(hog)
    hog.send(FULL, "hog")
    behind = other.send(FULL, "other")
    h.broker.drop_connection(hog.conn)  # its three messages stay, its held send leaves
    assert other.reply(behind) is None
    other.call(c.Purge(destination=FULL))
    assert isinstance(other.reply(behind), c.Ok)
    assert _texts(h, FULL) == ["other"]


def test_a_send_refused_by_a_fail_policy_keeps_its_sessions_order() -> None:
    """A send behind a held one to a queue that refuses when full waits its turn, then is
    refused at once if that queue is full (it never waits for room itself)."""
    fail = DestinationPolicy(max_bytes=SIZE, full_policy="fail")
    h = EngineHarness(
        policies={FULL: DestinationPolicy(max_bytes=3 * SIZE, full_policy="block"), OTHER: fail}
    )
    cl = _Client(h)
    _fill(cl)
    assert isinstance(cl.reply(cl.send(OTHER, "fills other")), c.Ok)
    first = cl.send(FULL, "first")
    refused = cl.send(OTHER, "refused")
    assert cl.reply(refused) is None
    cl.call(c.Purge(destination=FULL))
    assert isinstance(cl.reply(first), c.Ok)
    err = cl.reply(refused)
    assert isinstance(err, c.Error) and "full" in err.message


@pytest.mark.parametrize("held", [10, 2000])
def test_a_retry_tries_one_send_per_waiting_destination(
    held: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """However many sends wait for one full queue, a request retries only the first: the
    cost per request does not grow with the held sends (a scan of them did, under load)."""
    h = _harness()
    clients = [_Client(h) for _ in range(4)]
    _fill(clients[0])
    for i in range(held):
        clients[i % 4].send(FULL, f"h{i}")
    fresh = _Client(h)
    tries = 0
    publish = h.broker._publish

    def counting(*args: object) -> None:
        nonlocal tries
        tries += 1
        publish(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(h.broker, "_publish", counting)
    clients[1].call(c.CreateSession(session_id=9))  # any request other than a send retries
    assert tries == 1
    # another connection's send to another destination goes straight through
    assert isinstance(fresh.reply(fresh.send(OTHER, "free")), c.Ok)
    assert tries == 2
    fresh.call(c.Purge(destination=FULL))  # room for three: three taken, the fourth waits
    assert tries == 2 + 4
