"""The JSON API of the HTTP listener against an in-process server: every endpoint, its
refusals, and what it changes as a client sees it."""

from __future__ import annotations

import base64
import pathlib
import time

from ternmq import Queue, Session, TextMessage, Topic
from ternmq.broker.config import BrokerConfig, DestinationPolicy
from ternmq.server.config import HttpConfig, Limits, UserConfig
from ternmq.server.security import hash_password

from ._client import Http, q, t
from .conftest import Start, factory


def _send(st, dest, *texts, **props) -> None:  # type: ignore[no-untyped-def]
    conn = factory(st).create_connection()
    try:
        s = conn.create_session()
        p = s.create_producer(dest)
        for text in texts:
            m = TextMessage(text)
            for k, v in props.items():
                m.set_object_property(k, v)
            p.send(m)
    finally:
        conn.close()


def _wait_no_connections(http: Http) -> None:
    """Wait (5 s at most) until the server lists no connection; fail otherwise."""
    deadline = time.monotonic() + 5
    while http.get("/api/connections").json() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert http.get("/api/connections").json() == []


def test_health_overview_and_destinations(start: Start) -> None:
    st, http = start()
    assert http.get("/api/health").json() == {"status": "ok", "role": "live"}
    _send(st, Queue("orders"), "a", "b", "c")
    dests = {d["name"]: d for d in http.get("/api/destinations").json()}
    orders = dests["queue://orders"]
    assert (orders["kind"], orders["depth"], orders["enqueued"], orders["consumers"]) == (
        "queue",
        3,
        3,
        0,
    )
    for key in ("in_flight", "dequeued", "expired", "dead_lettered", "redelivered"):
        assert orders[key] == 0, key
    assert orders["memory_bytes"] > 0 and orders["paged"] == 0
    one = http.get(q("orders"))
    assert one.status == 200 and one.json() == orders
    ov = http.get("/api/overview").json()
    assert ov["messages"] == 3 and ov["enqueued"] == 3 and ov["destinations"] == len(dests)
    assert set(ov["rates"]) == {"enqueued_per_second", "dequeued_per_second"}
    assert ov["uptime_seconds"] >= 0 and ov["version"]


def test_overview_rates_come_from_the_counters(start: Start) -> None:
    st, http = start()
    http.get("/api/overview")
    time.sleep(1.1)
    _send(st, Queue("rated"), *["x"] * 20)
    rates = http.get("/api/overview").json()["rates"]
    assert 20 / 3 < rates["enqueued_per_second"] <= 20 / 1.1 + 0.01


def test_unknown_and_bad_destinations(start: Start) -> None:
    _, http = start()
    r = http.get(q("nope"))
    assert r.status == 404 and "does not exist" in r.json()["error"]
    assert http.get("/api/destinations/box/x").status == 400
    assert http.get("/api/nothing").status == 404
    assert http.request("PUT", "/api/destinations").status == 405
    r = http.post("/api/destinations", {"name": "orders"})
    assert r.status == 400 and "queue://NAME" in r.json()["error"]
    assert http.request("POST", "/api/destinations", raw=b"{nope").status == 400


def test_create_and_delete(start: Start) -> None:
    st, http = start()
    r = http.post("/api/destinations", {"name": "queue://made"})
    assert r.status == 201 and r.json()["name"] == "queue://made" and r.json()["depth"] == 0
    assert http.post("/api/destinations", {"name": "queue://made"}).status == 409
    assert http.post("/api/destinations", {"name": "topic://news"}).status == 201
    assert http.get(t("news")).json()["kind"] == "topic"
    _send(st, Queue("made"), "x")
    assert http.delete(q("made")).status == 204
    assert http.get(q("made")).status == 404
    assert http.delete(t("news")).status == 204
    assert http.delete(t("news")).status == 404


def test_delete_with_consumers_needs_force_which_closes_them(start: Start) -> None:
    st, http = start()
    conn = factory(st).create_connection()
    try:
        s = conn.create_session()
        s.create_consumer(Queue("busy"))
        r = http.delete(q("busy"))
        assert r.status == 409 and "force" in r.json()["error"]
        assert len(http.get("/api/connections").json()) == 1
        assert http.delete(q("busy") + "?force=true").status == 204
        assert http.get(q("busy")).status == 404
        _wait_no_connections(http)
    finally:
        conn.close()


def test_purge(start: Start) -> None:
    st, http = start()
    _send(st, Queue("p"), "1", "2")
    assert http.post(q("p") + "/purge").json() == {"purged": 2}
    assert http.get(q("p")).json()["depth"] == 0
    assert http.post(t("nope") + "/purge").status == 404


def test_browse_pages_and_selector(start: Start) -> None:
    st, http = start()
    for i in range(7):
        _send(st, Queue("b"), f"m{i}", n=i, color="red" if i % 2 else "blue")
    page = http.get(q("b") + "/messages?limit=3").json()
    assert [m["preview"] for m in page["messages"]] == ["m0", "m1", "m2"]
    assert page["more"] is True and page["offset"] == 0 and page["limit"] == 3
    last = http.get(q("b") + "/messages?limit=3&offset=6").json()
    assert [m["preview"] for m in last["messages"]] == ["m6"] and last["more"] is False
    red = http.get(q("b") + "/messages?selector=color%3D'red'").json()["messages"]
    assert [m["preview"] for m in red] == ["m1", "m3", "m5"]
    m = red[0]
    assert m["id"].startswith("ID:") and m["body_type"] == "text" and m["persistent"] is True
    assert (m["priority"], m["redelivered"], m["delivery_count"]) == (4, False, 0)
    assert m["size"] > 0 and m["timestamp"] > 0
    bad = http.get(q("b") + "/messages?selector=color%3D%3D")
    assert bad.status == 400 and "selector" in bad.json()["error"]
    assert http.get(q("b") + "/messages?limit=0").status == 400
    assert http.get(q("b") + "/messages?offset=x").status == 400
    http.post("/api/destinations", {"name": "topic://tb"})
    assert http.get(t("tb") + "/messages").status == 400


def test_one_message_its_deletion_and_a_send(start: Start) -> None:
    st, http = start()
    assert http.post("/api/destinations", {"name": "queue://s"}).status == 201
    r = http.post(
        q("s") + "/messages",
        {
            "body": "hello",
            "properties": {"n": 5, "ok": True, "who": "ops"},
            "priority": 7,
            "correlation_id": "c-1",
            "type": "greeting",
            "persistent": False,
        },
    )
    assert r.status == 201, r
    mid = r.json()["id"]
    raw = base64.b64encode(b"\x00\x01\xff").decode()
    r2 = http.post(q("s") + "/messages", {"body": raw, "body_type": "bytes"})
    assert r2.status == 201
    detail = http.get(q("s") + f"/messages/{mid}").json()
    assert detail["id"] == mid and detail["destination"] == "queue://s"
    assert detail["state"] == "ready"
    assert detail["body_type"] == "text" and detail["body"] == "hello"
    assert detail["properties"] == {"n": 5, "ok": True, "who": "ops"}
    h = detail["headers"]
    assert (h["JMSPriority"], h["JMSCorrelationID"], h["JMSType"]) == (7, "c-1", "greeting")
    assert h["JMSDeliveryMode"] == "NON_PERSISTENT" and h["JMSDestination"] == "queue://s"
    bytes_detail = http.get(q("s") + f"/messages/{r2.json()['id']}").json()
    assert bytes_detail["body_type"] == "bytes" and bytes_detail["body"] == raw
    assert http.get(q("s") + "/messages/ID:none").status == 404
    # a client receives what the API sent, highest priority first
    conn = factory(st).create_connection()
    conn.start()
    try:
        got = conn.create_session().create_consumer(Queue("s")).receive(5)
        assert isinstance(got, TextMessage) and got.text == "hello"
        assert got.get_object_property("who") == "ops" and got.jms_correlation_id == "c-1"
    finally:
        conn.close()
    assert http.delete(q("s") + f"/messages/{r2.json()['id']}").status == 204
    assert http.get(q("s")).json()["depth"] == 0
    assert http.delete(q("s") + f"/messages/{r2.json()['id']}").status == 404


def test_send_refuses_bad_input(start: Start) -> None:
    _, http = start()
    http.post("/api/destinations", {"name": "queue://v"})
    for body in (
        {"body": 5},
        {"body": "%%", "body_type": "bytes"},
        {"body": "x", "body_type": "object"},
        {"body": "x", "priority": 12},
        {"body": "x", "time_to_live_ms": -1},
        {"body": "x", "properties": {"bad name": 1}},
        {"body": "x", "properties": {"a": [1]}},
        {"body": "x", "persistent": "yes"},
    ):
        r = http.post(q("v") + "/messages", body)
        assert r.status == 400, (body, r)
        assert r.json()["error"]
    assert http.post(q("nope") + "/messages", {"body": "x"}).status == 404


def test_a_send_to_a_full_queue_is_503(start: Start) -> None:
    tiny = DestinationPolicy(max_bytes=200, full_policy="fail")
    _, http = start(broker=BrokerConfig(policies={"queue://tiny": tiny}))
    http.post("/api/destinations", {"name": "queue://tiny"})
    r = http.post(q("tiny") + "/messages", {"body": "x" * 300})
    assert r.status == 503 and "full" in r.json()["error"]
    assert http.get(q("tiny")).json()["depth"] == 0


def test_move_dead_letters_back_and_they_are_consumed(start: Start) -> None:
    policy = DestinationPolicy(max_delivery_attempts=1)
    st, http = start(broker=BrokerConfig(default_policy=policy))
    _send(st, Queue("work"), "poison", "other", kind="retry")
    conn = factory(st).create_connection()
    conn.start()
    try:
        s = conn.create_session(True, Session.SESSION_TRANSACTED)
        c = s.create_consumer(Queue("work"))
        assert c.receive(5) is not None and c.receive(5) is not None
        s.rollback()  # one attempt each: both dead-lettered
        c.close()
        dlq = http.get(q("DLQ") + "/messages").json()["messages"]
        assert [m["preview"] for m in dlq] == ["poison", "other"]
        detail = http.get(q("DLQ") + f"/messages/{dlq[0]['id']}").json()
        assert detail["properties"]["JMS_TernMQ_OriginalDestination"] == "queue://work"
        r = http.post(q("DLQ") + "/move", {"to": "queue://work", "selector": "kind = 'none'"})
        assert r.json() == {"moved": 0}
        r = http.post(q("DLQ") + "/move", {"to": "queue://work", "selector": "kind = 'retry'"})
        assert r.json() == {"moved": 2}
        assert http.get(q("DLQ")).json()["depth"] == 0
        assert http.get(q("work")).json()["depth"] == 2
        c2 = s.create_consumer(Queue("work"))
        got = [c2.receive(5), c2.receive(5)]
        s.commit()
        texts = [m.text for m in got if isinstance(m, TextMessage)]
        assert texts == ["poison", "other"]
        assert got[0] is not None and got[0].get_object_property("kind") == "retry"
    finally:
        conn.close()
    assert http.get(q("work")).json()["depth"] == 0
    bad = http.post(q("DLQ") + "/move", {"to": "queue://work", "selector": "kind =="})
    assert bad.status == 400
    assert http.post(q("DLQ") + "/move", {"to": "queue://absent"}).status == 404
    assert http.post(q("DLQ") + "/move", {"to": "queue://DLQ"}).status == 400
    assert http.post(q("DLQ") + "/move", {"selector": "x"}).status == 400


def test_connections_list_and_close(start: Start) -> None:
    st, http = start()
    f = factory(st)
    conn = f.create_connection()
    conn.client_id = "app-1"
    conn.start()
    try:
        s = conn.create_session()
        s.create_consumer(Queue("cq"))
        [info] = http.get("/api/connections").json()
        assert info["protocol"] == "native" and info["client_id"] == "app-1"
        assert info["address"].startswith("127.0.0.1:") and info["user"] is None
        assert (info["sessions"], info["consumers"]) == (1, 1)
        assert info["connected_at"] <= time.time()
        assert http.delete("/api/connections/ID:999").status == 404
        assert http.delete(f"/api/connections/{info['id']}").status == 204
        _wait_no_connections(http)
    finally:
        conn.close()


def test_subscriptions_list_and_delete(start: Start) -> None:
    st, http = start()
    conn = factory(st).create_connection()
    conn.client_id = "subscriber"
    try:
        s = conn.create_session()
        durable = s.create_durable_consumer(Topic("events"), "audit", "level > 2")
        s.create_consumer(Topic("events"))
        subs = {x["name"]: x for x in http.get("/api/subscriptions").json()}
        audit = subs["audit"]
        assert audit["topic"] == "topic://events" and audit["durable"] is True
        assert (audit["client_id"], audit["selector"], audit["consumers"]) == (
            "subscriber",
            "level > 2",
            1,
        )
        plain = subs[None]
        assert plain["durable"] is False
        sid = audit["id"]
        from urllib.parse import quote

        r = http.delete(f"/api/subscriptions/{quote(sid, safe='')}")
        assert r.status == 409 and "active consumer" in r.json()["error"]
        r = http.delete(f"/api/subscriptions/{quote(plain['id'], safe='')}")
        assert r.status == 409
        durable.close()
        assert http.delete(f"/api/subscriptions/{quote(sid, safe='')}").status == 204
        names = [x["name"] for x in http.get("/api/subscriptions").json()]
        assert "audit" not in names
        assert http.delete(f"/api/subscriptions/{quote(sid, safe='')}").status == 404
    finally:
        conn.close()


def _secured(start: Start, **http_fields: object):  # type: ignore[no-untyped-def]
    users = {
        "ops": UserConfig(password=hash_password("ops-pw", n=2**4)),
        "app": UserConfig(password=hash_password("app-pw", n=2**4)),
    }
    permissions = {
        "ops": {"admin": (">",)},
        "app": {"send": (">",), "consume": (">",), "admin": ("queue://app.>",)},
    }
    return start(
        users=users,
        permissions=permissions,
        anonymous=False,
        http=HttpConfig(**http_fields),
        limits=Limits(login_failures=3, login_backoff=30.0),
    )


def test_credentials_and_permissions(start: Start) -> None:
    _, anon = _secured(start)
    assert anon.get("/api/health").status == 200  # no credentials needed
    assert anon.get("/metrics").status == 200  # readable unless metrics_auth
    r = anon.get("/api/destinations")
    assert r.status == 401 and r.headers["WWW-Authenticate"] == 'Basic realm="ternmq"'
    assert "credentials" in r.json()["error"]
    ops, app = anon.as_user("ops", "ops-pw"), anon.as_user("app", "app-pw")
    assert ops.post("/api/destinations", {"name": "queue://orders"}).status == 201
    assert ops.post("/api/destinations", {"name": "queue://app.in"}).status == 201
    assert [d["name"] for d in app.get("/api/destinations").json()] == ["queue://app.in"]
    names = [d["name"] for d in ops.get("/api/destinations").json()]
    assert "queue://orders" in names and "queue://app.in" in names
    r = app.get(q("orders"))
    assert r.status == 403 and "'admin'" in r.json()["error"]
    assert app.post(q("orders") + "/purge").status == 403
    assert app.delete(q("orders")).status == 403
    assert app.post(q("orders") + "/messages", {"body": "x"}).status == 403
    assert app.post(q("app.in") + "/move", {"to": "queue://orders"}).status == 403
    assert app.get("/api/connections").status == 403
    assert app.post(q("app.in") + "/messages", {"body": "x"}).status == 201
    assert ops.get("/api/connections").status == 200
    assert app.get("/api/overview").json()["destinations"] == 1
    bad = anon.as_user("ops", "wrong")
    r = bad.get("/api/destinations")
    assert r.status == 401 and "authentication failed" in r.json()["error"]
    assert anon.request("GET", "/api/overview", headers={"Authorization": "Bearer x"}).status == 401


def test_failed_logins_lock_the_address_out(start: Start) -> None:
    _, anon = _secured(start, auth_cache_seconds=0.0)
    bad = anon.as_user("ops", "wrong")
    for _ in range(3):
        assert bad.get("/api/destinations").status == 401
    r = anon.as_user("ops", "ops-pw").get("/api/destinations")
    assert r.status == 401 and "too many failed logins" in r.json()["error"]


def test_metrics_auth_config(start: Start) -> None:
    _, anon = _secured(start, metrics_auth=True)
    assert anon.get("/metrics").status == 401
    assert anon.as_user("app", "app-pw").get("/metrics").status == 200


def test_oversized_bodies_are_refused(start: Start) -> None:
    _, http = start(http=HttpConfig(max_body=1024))
    http.post("/api/destinations", {"name": "queue://big"})
    r = http.post(q("big") + "/messages", {"body": "x" * 5000})
    assert r.status == 413 and "max_body" in r.json()["error"]
    assert http.get(q("big")).json()["depth"] == 0
    chunked = http.request(
        "POST",
        q("big") + "/messages",
        raw=iter([b'{"body": "', b"y" * 4000, b'"}']),
        headers={"Content-Type": "application/json", "Transfer-Encoding": "chunked"},
    )
    assert chunked.status == 413
    assert http.post(q("big") + "/messages", {"body": "small"}).status == 201


def test_changes_are_durable_across_a_restart(start: Start, tmp_path: pathlib.Path) -> None:
    data = tmp_path / "durable"
    st, http = start(data_dir=data)
    assert http.post(q("d") + "/messages", {"body": "x"}).status == 404  # creates nothing
    assert http.post("/api/destinations", {"name": "queue://d"}).status == 201
    assert http.post("/api/destinations", {"name": "queue://elsewhere"}).status == 201
    ids = [http.post(q("d") + "/messages", {"body": b}).json()["id"] for b in ("keep", "drop")]
    http.post(q("d") + "/messages", {"body": "moved", "properties": {"go": True}})
    assert http.delete(q("d") + f"/messages/{ids[1]}").status == 204
    assert http.post(q("d") + "/move", {"to": "queue://elsewhere", "selector": "go"}).json() == {
        "moved": 1
    }
    http.post("/api/destinations", {"name": "queue://gone"})
    http.post(q("gone") + "/messages", {"body": "with its queue"})
    http.post("/api/destinations", {"name": "queue://purged"})
    http.post(q("purged") + "/messages", {"body": "purged"})
    assert http.delete(q("gone")).status == 204
    assert http.post(q("purged") + "/purge").json() == {"purged": 1}
    st.stop()
    _, http2 = start(data_dir=data)
    assert http2.get(q("gone")).status == 404
    assert http2.get(q("purged")).status == 404  # nothing of it survived: not recovered
    d = http2.get(q("d") + "/messages").json()["messages"]
    assert [m["preview"] for m in d] == ["keep"]
    e = http2.get(q("elsewhere") + "/messages").json()["messages"]
    assert [m["preview"] for m in e] == ["moved"]


def test_connections_past_max_connections_are_closed(start: Start) -> None:
    import socket

    _, http = start(http=HttpConfig(max_connections=2))
    held = [socket.create_connection((http.host, http.port), timeout=5) for _ in range(2)]
    try:
        time.sleep(0.2)  # both accepted
        extra = socket.create_connection((http.host, http.port), timeout=5)
        try:
            extra.sendall(b"GET /api/health HTTP/1.1\r\nHost: x\r\n\r\n")
            assert extra.recv(100) == b""  # closed without an answer
        except ConnectionResetError:
            pass
        finally:
            extra.close()
    finally:
        for s in held:
            s.close()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            if http.get("/api/health").status == 200:
                break
        except OSError:
            time.sleep(0.05)
    assert http.get("/api/health").status == 200  # room again once they are gone


def test_route_setups_add_routes_and_public_paths(start: Start) -> None:
    """Another module adds its routes (a WebSocket gateway would); a path it declares public
    skips HTTP Basic, every other one still needs credentials."""
    from aiohttp import web

    from ternmq.server.http import ROUTE_SETUPS, add_routes, json_response

    def setup(app: web.Application, frontend: object) -> None:
        async def ping(request: web.Request) -> web.StreamResponse:
            return json_response({"pong": True})

        app.router.add_get("/extra/ping", ping)
        app.router.add_get("/extra-private/ping", ping)
        frontend.auth.add_public("/extra/")  # type: ignore[attr-defined]

    add_routes(setup)
    try:
        _, anon = _secured(start)
    finally:
        ROUTE_SETUPS.remove(setup)
    assert anon.get("/extra/ping").json() == {"pong": True}
    assert anon.get("/extra-private/ping").status == 401
    assert anon.as_user("ops", "ops-pw").get("/extra-private/ping").status == 200


def test_console_files(start: Start, tmp_path: pathlib.Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from ternmq.server.http import console

    site = tmp_path / "console"
    site.mkdir()
    (site / "index.html").write_text("<h1>ternmq</h1>", encoding="utf-8")
    (site / "app.js").write_text("console.log(1)", encoding="utf-8")
    (tmp_path / "secret.txt").write_text("no", encoding="utf-8")
    monkeypatch.setattr(console, "CONSOLE_DIR", site)
    _, anon = _secured(start)  # the console's files need no credentials
    assert anon.get("/").body == b"<h1>ternmq</h1>"
    assert anon.get("/console/app.js").body == b"console.log(1)"
    assert anon.get("/console/missing.js").status == 404
    assert anon.get("/console/%2e%2e/secret.txt").status in (403, 404)
    monkeypatch.setattr(console, "CONSOLE_DIR", tmp_path / "absent")
    _, bare = start()
    r = bare.get("/")
    assert r.status == 404 and "not installed" in r.json()["error"]


def test_changes_from_a_page_of_another_site_are_refused(start: Start) -> None:
    """A change whose ``Origin`` names another site is refused (403) and not made; the same
    change from the broker's own pages, or from a client sending no Origin, is made."""
    _, http = start()
    own = f"http://{http.host}:{http.port}"
    for origin in ("http://evil.example", "null", f"https://{http.host}:{http.port}"):
        r = http.request(
            "POST", "/api/destinations", {"name": "queue://x"}, headers={"Origin": origin}
        )
        assert r.status == 403, r
        assert "refused" in r.json()["error"]
        assert http.request("GET", "/api/destinations/queue/x").status == 404
    r = http.request("GET", "/api/destinations", headers={"Origin": "http://evil.example"})
    assert r.status == 200  # reading is not a change (and the browser hides it from the page)
    r = http.request("POST", "/api/destinations", {"name": "queue://x"}, headers={"Origin": own})
    assert r.status == 201, r
    r = http.request("POST", "/api/destinations", {"name": "queue://y"})
    assert r.status == 201, r
