"""The one reader thread of every plain-TCP link of a process: links share it, a link that
ends leaves the others alone, ``close()`` on it never waits for it, and a forked child gets
its own."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator

import pytest

from ternmq.protocol import commands as c
from ternmq.transport.tcp import TcpTransport

from ._fake_server import FakeServer


class Events:
    """What ``on_event`` got, and on which thread."""

    def __init__(self) -> None:
        self.delivered: list[c.Deliver] = []
        self.failed: list[c.ConnectionFailed] = []
        self.idents: set[int] = set()

    def __call__(self, cmd: c.Command) -> None:
        self.idents.add(threading.get_ident())
        if isinstance(cmd, c.Deliver):
            self.delivered.append(cmd)
        elif isinstance(cmd, c.ConnectionFailed):
            self.failed.append(cmd)


def wait_until(pred: object, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():  # type: ignore[operator]
            return True
        time.sleep(0.005)
    return bool(pred())  # type: ignore[operator]


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as srv:
        yield srv


def link(srv: FakeServer, events: Events) -> TcpTransport:
    t = TcpTransport(srv.host, srv.port, events, heartbeat=0)
    assert isinstance(t.request(c.Connect(), timeout=5), c.Connected)
    return t


def deliver_one(t: TcpTransport, queue: str) -> None:
    """Make the server send one Deliver to ``t`` (a prefetch-0 consumer and a Pull)."""
    t.request(c.CreateSession(session_id=1), timeout=5)
    t.request(c.Send(session_id=1, destination=f"queue://{queue}", message=b"m"), timeout=5)
    t.request(
        c.CreateConsumer(session_id=1, consumer_id=2, destination=f"queue://{queue}", prefetch=0),
        timeout=5,
    )
    assert isinstance(t.request(c.Pull(consumer_id=2, messages=1, wait=False), timeout=5), c.Ok)


def test_plain_links_share_one_reader_thread(server: FakeServer) -> None:
    a_events, b_events = Events(), Events()
    a, b = link(server, a_events), link(server, b_events)
    try:
        deliver_one(a, "a")
        deliver_one(b, "b")
        assert len(a_events.delivered) == 1 and len(b_events.delivered) == 1
        assert a_events.idents == b_events.idents
        assert len(a_events.idents) == 1
    finally:
        a.close()
        b.close()


def test_many_links_answered_at_once_each_get_their_replies(server: FakeServer) -> None:
    """Sixteen links, four threads each: every request gets its own reply."""
    links = [link(server, Events()) for _ in range(16)]
    errors: list[BaseException] = []

    def work(t: TcpTransport, n: int) -> None:
        try:
            for i in range(20):
                req = c.SetClientId(corr=t.next_corr(), client_id=f"c{n}-{i}")
                reply = t.request(req, timeout=5)
                assert isinstance(reply, c.Ok | c.Error) and reply.corr == req.corr
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [
        threading.Thread(target=work, args=(t, i * 4 + k))
        for i, t in enumerate(links)
        for k in range(4)
    ]
    try:
        for th in threads:
            th.start()
        for th in threads:
            th.join(30)
        assert errors == []
    finally:
        for t in links:
            t.close()


def test_a_lost_link_leaves_the_others_reading(server: FakeServer) -> None:
    lost_events, kept_events = Events(), Events()
    lost, kept = link(server, lost_events), link(server, kept_events)
    try:
        server.connections[0].drop()
        assert wait_until(lambda: lost.lost)
        assert wait_until(lambda: len(lost_events.failed) == 1)
        assert lost._read_done.is_set()
        assert lost._sock.fileno() == -1  # freed by the reader once it was unregistered
        deliver_one(kept, "k")
        assert len(kept_events.delivered) == 1
        assert kept_events.failed == []
        time.sleep(0.05)
        assert len(lost_events.failed) == 1  # exactly once
    finally:
        lost.close()
        kept.close()


def test_close_on_the_reader_thread_does_not_wait_for_it(server: FakeServer) -> None:
    """An on_event of one link closing another link returns at once (waiting for the
    shared reader from the shared reader would stall every link for seconds)."""
    victim = link(server, Events())
    took: list[float] = []

    def on_event(cmd: c.Command) -> None:
        if isinstance(cmd, c.Deliver):
            start = time.monotonic()
            victim.close()
            took.append(time.monotonic() - start)

    closer = TcpTransport(server.host, server.port, on_event, heartbeat=0)
    try:
        closer.request(c.Connect(), timeout=5)
        deliver_one(closer, "c")
        assert took and took[0] < 1.0
        assert wait_until(victim._read_done.is_set)
        assert victim.lost
        assert isinstance(closer.request(c.CreateSession(session_id=9), timeout=5), c.Ok)
    finally:
        closer.close()
        victim.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_reads_with_its_own_reader(server: FakeServer) -> None:
    """The parent's reader thread does not exist in a child: the child starts its own."""
    parent = link(server, Events())  # the parent's shared reader runs
    try:
        pid = os.fork()
        if pid == 0:  # the child: exit at once, whatever happens
            code = 1
            try:
                t = TcpTransport(server.host, server.port, Events(), heartbeat=0)
                if isinstance(t.request(c.Connect(), timeout=3), c.Connected):
                    code = 0
            finally:
                os._exit(code)
        deadline = time.monotonic() + 10
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
                pytest.fail("the forked child hung")
            time.sleep(0.01)
        assert os.waitstatus_to_exitcode(status) == 0
        assert isinstance(parent.request(c.CreateSession(session_id=3), timeout=5), c.Ok)
    finally:
        parent.close()
