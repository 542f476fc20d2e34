"""The operator's commands against a real ``ternmq serve``: ``create-destination``,
``delete-destination``, ``move``, ``delete-message``, ``connections``, ``close-connection``,
``subscriptions``, ``delete-subscription``; with an ``admin`` user, a user who may administer
only some destinations, and bad input."""

from __future__ import annotations

import json
import pathlib
import time
from collections.abc import Iterator

import pytest

from server._support import ServerProcess
from ternmq import (
    ConnectionFactory,
    JMSException,
    Queue,
    Topic,
)
from ternmq.server import hash_password

from ._support import Run, one_line_error, run

OPS, APP = ("ops", "ops-pw"), ("app", "app-pw")
# ops administers everything; app administers only queue://app.* (and may send anywhere).
CONFIG = f"""
[users.ops]
password = "{hash_password(OPS[1], n=2**4)}"
[users.app]
password = "{hash_password(APP[1], n=2**4)}"
[permissions.ops]
admin = [">"]
[permissions.app]
admin = ["queue://app.>"]
send = [">"]
consume = [">"]
create = [">"]
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One ``ternmq serve`` (no HTTP listener) for the module; tests use their own names."""
    tmp = tmp_path_factory.mktemp("admin-cli")
    proc = ServerProcess(tmp / "data", CONFIG, tmp)
    try:
        yield proc
    finally:
        proc.kill()


@pytest.fixture
def url(server: ServerProcess) -> str:
    return f"tcp://127.0.0.1:{server.port}"


def _as(capsys: pytest.CaptureFixture[str], url: str, who: tuple[str, str], *argv: str) -> Run:
    return run(capsys, url, *argv, "--user", who[0], "--password", who[1])


def _send(url: str, dest: str, texts: list[str], region: str = "EU") -> list[str]:
    with ConnectionFactory(url).create_connection(*OPS) as conn:
        s = conn.create_session()
        p = s.create_producer(Queue(dest.removeprefix("queue://")))
        ids = []
        for text in texts:
            m = s.create_text_message(text)
            m.set_string_property("region", region)
            p.send(m)
            assert m.jms_message_id is not None
            ids.append(m.jms_message_id)
        return ids


def _texts(url: str, dest: str) -> list[str]:
    with ConnectionFactory(url).create_connection(*OPS) as conn:
        s = conn.create_session()
        browser = s.create_browser(Queue(dest.removeprefix("queue://")))
        out = [str(m.get_body(str)) for m in browser]
        browser.close()
        return out


def test_create_move_delete_message_and_destination(
    capsys: pytest.CaptureFixture[str], url: str
) -> None:
    r = _as(capsys, url, OPS, "create-destination", "queue://c.dlq")
    assert (r.code, r.out) == (0, "created queue://c.dlq\n"), r.err
    assert _as(capsys, url, OPS, "create-destination", "queue://c.orders").code == 0
    one_line_error(
        _as(capsys, url, OPS, "create-destination", "queue://c.dlq"), 1, "exists already"
    )
    _send(url, "queue://c.dlq", ["eu1", "eu2"], "EU")
    (us,) = _send(url, "queue://c.dlq", ["us1"], "US")
    r = _as(
        capsys, url, OPS, "move", "queue://c.dlq", "queue://c.orders", "--selector", "region='EU'"
    )
    assert r.code == 0, r.err
    assert r.out == (
        "moved 2 messages matching \"region='EU'\" from queue://c.dlq to queue://c.orders\n"
    )
    assert _texts(url, "queue://c.orders") == ["eu1", "eu2"]
    assert _texts(url, "queue://c.dlq") == ["us1"]
    r = _as(capsys, url, OPS, "delete-message", "queue://c.dlq", us)
    assert (r.code, r.out) == (0, f"deleted message {us} from queue://c.dlq\n"), r.err
    assert _texts(url, "queue://c.dlq") == []
    one_line_error(
        _as(capsys, url, OPS, "delete-message", "queue://c.dlq", us), 1, f"no message {us}"
    )
    r = _as(capsys, url, OPS, "delete-destination", "queue://c.orders")
    assert (r.code, r.out) == (0, "deleted queue://c.orders (2 messages with it)\n"), r.err
    r = _as(capsys, url, OPS, "stat", "--json")
    assert "queue://c.orders" not in r.out and "queue://c.dlq" in r.out
    one_line_error(
        _as(capsys, url, OPS, "delete-destination", "queue://c.orders"), 1, "does not exist"
    )


def test_move_with_a_bad_selector_or_names(capsys: pytest.CaptureFixture[str], url: str) -> None:
    _as(capsys, url, OPS, "create-destination", "queue://m.a")
    _as(capsys, url, OPS, "create-destination", "queue://m.b")
    _send(url, "queue://m.a", ["x"])
    one_line_error(
        _as(capsys, url, OPS, "move", "queue://m.a", "queue://m.b", "--selector", "a ==="),
        1,
        "selector",
    )
    one_line_error(_as(capsys, url, OPS, "move", "queue://m.a", "topic://m.b"), 2, "is a topic")
    one_line_error(_as(capsys, url, OPS, "move", "m.a", "queue://m.b"), 2)
    one_line_error(
        _as(capsys, url, OPS, "move", "queue://m.a", "queue://m.none"), 1, "does not exist"
    )
    assert _texts(url, "queue://m.a") == ["x"]  # nothing moved by any of them


def test_connections_and_close_connection(capsys: pytest.CaptureFixture[str], url: str) -> None:
    victim = ConnectionFactory(url).create_connection(*APP)
    try:
        victim.client_id = "victim-app"
        s = victim.create_session()
        s.create_consumer(Queue("app.work"))
        r = _as(capsys, url, OPS, "connections", "--json")
        assert r.code == 0, r.err
        rows = [json.loads(line) for line in r.out.splitlines()]
        (row,) = [x for x in rows if x["client_id"] == "victim-app"]
        assert row["id"] == victim.connection_id
        assert (row["protocol"], row["user"], row["sessions"], row["consumers"]) == (
            "native",
            "app",
            1,
            1,
        )
        assert row["address"].startswith("127.0.0.1:")
        assert abs(row["connected_at"] / 1000 - time.time()) < 120
        table = _as(capsys, url, OPS, "connections")
        assert table.out.splitlines()[0].split()[:3] == ["id", "protocol", "user"]
        assert any("(this)" in line for line in table.out.splitlines())
        r = _as(capsys, url, OPS, "close-connection", victim.connection_id)
        assert (r.code, r.out) == (0, f"closed connection {victim.connection_id}\n"), r.err
        deadline = time.monotonic() + 10
        while True:  # the client hears of it
            try:
                victim.create_session()
            except JMSException:
                break
            assert time.monotonic() < deadline, "the closed connection still works"
            time.sleep(0.05)
        r = _as(capsys, url, OPS, "connections", "--json")
        assert victim.connection_id not in r.out
        one_line_error(
            _as(capsys, url, OPS, "close-connection", victim.connection_id),
            1,
            "no open connection",
        )
    finally:
        victim.close()


def test_subscriptions_and_delete_subscription(
    capsys: pytest.CaptureFixture[str], url: str
) -> None:
    conn = ConnectionFactory(url).create_connection(*OPS)
    try:
        conn.client_id = "subs-cli"
        s = conn.create_session()
        consumer = s.create_durable_consumer(Topic("s.news"), "daily", "lang = 'en'")
        r = _as(capsys, url, OPS, "subscriptions", "--json")
        assert r.code == 0, r.err
        (sub,) = [json.loads(x) for x in r.out.splitlines() if '"subs-cli"' in x]
        assert (sub["topic"], sub["name"], sub["durable"], sub["selector"]) == (
            "topic://s.news",
            "daily",
            True,
            "lang = 'en'",
        )
        assert sub["consumers"] == 1
        one_line_error(
            _as(capsys, url, OPS, "delete-subscription", sub["id"]), 1, "active consumer"
        )
        consumer.close()
        table = _as(capsys, url, OPS, "subscriptions")
        assert sub["id"] in table.out and "durable" in table.out
        r = _as(capsys, url, OPS, "delete-subscription", sub["id"])
        assert (r.code, r.out) == (0, f"deleted subscription {sub['id']}\n"), r.err
        assert sub["id"] not in _as(capsys, url, OPS, "subscriptions", "--json").out
        one_line_error(
            _as(capsys, url, OPS, "delete-subscription", sub["id"]), 1, "no subscription"
        )
    finally:
        conn.close()


def test_a_user_without_admin_is_refused(capsys: pytest.CaptureFixture[str], url: str) -> None:
    """app administers queue://app.> only: everything else is refused with a line that says
    what to grant, and nothing changes."""
    _as(capsys, url, OPS, "create-destination", "queue://r.secret")
    _send(url, "queue://r.secret", ["keep"])
    assert _as(capsys, url, APP, "create-destination", "queue://app.mine").code == 0
    for argv in (
        ("create-destination", "queue://r.other"),
        ("delete-destination", "queue://r.secret"),
        ("move", "queue://r.secret", "queue://app.mine"),
        ("move", "queue://app.mine", "queue://r.secret"),
        ("delete-message", "queue://r.secret", "ID:x"),
    ):
        one_line_error(_as(capsys, url, APP, *argv), 1, "not allowed to administer", "'admin'")
    for argv in (("connections",), ("close-connection", "ID:1")):
        one_line_error(_as(capsys, url, APP, *argv), 1, "user 'app' may not", "'>'")
    assert _texts(url, "queue://r.secret") == ["keep"]
    # A durable subscription app cannot administer is hidden, and said so.
    conn = ConnectionFactory(url).create_connection(*OPS)
    try:
        conn.client_id = "hidden-sub"
        conn.create_session().create_durable_consumer(Topic("r.hidden"), "h").close()
        r = _as(capsys, url, APP, "subscriptions")
        one_line_error(r, 1, "not shown: user 'app' has no 'admin' permission")
        assert "r.hidden" not in r.out
    finally:
        conn.close()


def test_wrong_password_and_no_server(
    capsys: pytest.CaptureFixture[str], url: str, tmp_path: pathlib.Path
) -> None:
    one_line_error(_as(capsys, url, ("ops", "guess"), "connections"), 1)
    one_line_error(run(capsys, "tcp://127.0.0.1:1", "subscriptions"), 1)
