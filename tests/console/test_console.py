"""The web console in real headless Chromium against a real ``ternmq serve``: login, the
destinations page following sends, the dead-letter retry (browse, move back, consumed),
the send form, selectors and their errors, purge and delete, connections and subscriptions,
anonymous access, and the phone layout."""

from __future__ import annotations

import re
import threading
import time

from playwright.sync_api import Page, expect

from ternmq import JMSException, Queue, Topic

from .conftest import (
    ADMIN,
    APP,
    MAX_DELIVERY_ATTEMPTS,
    PARTIAL,
    ConsoleServer,
    Shot,
    login,
    needs_chromium,
)

pytestmark = needs_chromium

RECEIVE_TIMEOUT = 10.0


def _send(server: ConsoleServer, queue: str, *texts: str, **props: int | str) -> None:
    with server.factory().create_connection() as conn:
        session = conn.create_session()
        producer = session.create_producer(Queue(queue))
        for text in texts:
            msg = session.create_text_message(text)
            for key, value in props.items():
                msg.set_object_property(key, value)
            producer.send(msg)


def test_login_is_asked_a_wrong_password_and_a_user_without_admin_are_told(
    page: Page, server: ConsoleServer, shot: Shot
) -> None:
    page.goto(server.http)
    expect(page.locator("#login")).to_be_visible()
    expect(page.locator("#nav")).to_be_hidden()
    page.fill("#login-user", ADMIN[0])
    page.fill("#login-password", "not-the-password")
    page.click("#login-submit")
    expect(page.locator("#login-error")).to_have_text("Wrong user or password.")
    page.fill("#login-password", "")
    shot(page, "login")
    page.fill("#login-user", APP[0])
    page.fill("#login-password", APP[1])
    page.click("#login-submit")
    expect(page.locator("#login-error")).to_contain_text("admin permission")
    expect(page.locator("#nav")).to_be_hidden()
    page.fill("#login-user", ADMIN[0])
    page.fill("#login-password", ADMIN[1])
    page.click("#login-submit")
    expect(page.locator("#who")).to_have_text(f"as {ADMIN[0]}")
    expect(page.locator("#login")).to_be_hidden()
    # A reload keeps the tab's login; logging out forgets it.
    page.reload()
    expect(page.locator("#ov-messages")).to_be_visible()
    page.click("#logout")
    expect(page.locator("#login")).to_be_visible()
    page.reload()
    expect(page.locator("#login")).to_be_visible()
    expect(page.locator("#nav")).to_be_hidden()


def test_a_queues_depth_and_rate_follow_sends(
    page: Page, server: ConsoleServer, shot: Shot
) -> None:
    name = "queue://console.depth"
    _send(server, "console.depth", "first")
    login(page, server)
    row = page.locator(f'#destinations tr[data-name="{name}"]')
    expect(row.locator("td.depth")).to_have_text("1")
    # Sends spread over a few polls: the depth follows, the in-rate shows them meanwhile.
    shown = []
    for i in range(8):
        _send(server, "console.depth", *(f"m{i}-{j}" for j in range(5)))
        time.sleep(0.5)
        shown.append(row.locator("td.rate-in").text_content() or "")
    expect(row.locator("td.depth")).to_have_text("41")
    assert any(text not in ("", "–") and float(text) > 0 for text in shown), shown
    # ... and so does the chart: some point of the "in" line above its zero line.
    page.wait_for_function(
        """() => {
            const line = document.querySelector("#total-chart svg.chart polyline.in");
            const zero = document.querySelector("#total-chart svg.chart line.grid");
            if (line === null || zero === null) return false;
            const y0 = Number(zero.getAttribute("y1"));
            const ys = line.getAttribute("points").split(" ").map(p => Number(p.split(",")[1]));
            return ys.some(y => y < y0 - 1);
        }"""
    )
    # Messages taken leave the depth.
    with server.factory().create_connection() as conn:
        conn.start()
        consumer = conn.create_session().create_consumer(Queue("console.depth"))
        for _ in range(11):
            assert consumer.receive(RECEIVE_TIMEOUT) is not None
    expect(row.locator("td.depth")).to_have_text("30")
    expect(page.locator("#ov-messages")).not_to_have_text("0")
    shot(page, "destinations")
    # The queue's 30 messages, a page of 25 at a time, in the order consumers get them.
    row.locator("a").click()
    rows = page.locator("#messages tr[data-id]")
    expect(rows).to_have_count(25)
    expect(page.locator("#page-range")).to_have_text("1–25")
    expect(rows.first.locator("td.preview")).to_have_text("m2-0")  # 11 were taken
    expect(page.locator("#page-prev")).to_be_disabled()
    page.click("#page-next")
    expect(rows).to_have_count(5)
    expect(page.locator("#page-range")).to_have_text("26–30")
    expect(rows.last.locator("td.preview")).to_have_text("m7-4")
    expect(page.locator("#page-next")).to_be_disabled()
    page.click("#page-prev")
    expect(page.locator("#page-range")).to_have_text("1–25")


def test_a_dead_letter_is_browsed_moved_back_and_consumed(
    page: Page, server: ConsoleServer, shot: Shot
) -> None:
    work = "console.work"
    failed = ("order 17 failed", "order 18 failed")
    for order, text in zip((17, 18), failed):
        _send(server, work, text, order_id=order)
    with server.factory().create_connection() as conn:
        conn.start()
        session = conn.create_session(True)
        consumer = session.create_consumer(Queue(work))
        for _ in range(MAX_DELIVERY_ATTEMPTS):
            got = [consumer.receive(RECEIVE_TIMEOUT) for _ in failed]
            assert [m.text if m else None for m in got] == list(failed)
            session.rollback()
        assert consumer.receive(0.2) is None  # dead-lettered, not on their queue any more
    login(page, server)
    page.locator("#destinations a", has_text="queue://DLQ").click()
    expect(page.locator("#dest-name")).to_have_text("queue://DLQ")
    expect(page.locator("#messages tr[data-id]")).to_have_count(2)

    # One message: its page offers to send it back where it came from.
    page.locator("#messages tr[data-id]", has_text="order 18 failed").click()
    expect(page.locator("#message-body")).to_have_text("order 18 failed")
    expect(page.locator("#message-state")).to_have_text("ready")
    page.click("#message-move-back")
    expect(page.locator("#notice")).to_have_text(f"Moved 1 message(s) to queue://{work}")
    expect(page.locator("#messages tr[data-id]")).to_have_count(1)

    # The rest, by a selector in the move form (filled in from the open dead letter).
    row = page.locator("#messages tr[data-id]", has_text="order 17 failed")
    row.click()
    props = page.locator("#message-properties")
    expect(props.locator("tr", has_text="JMS_TernMQ_OriginalDestination")).to_contain_text(
        f"queue://{work}"
    )
    expect(props.locator("tr", has_text="order_id")).to_contain_text("17")
    expect(page.locator("#message-body")).to_have_text("order 17 failed")
    expect(page.locator("#message-headers")).to_contain_text("JMSMessageID")
    expect(page.locator("#move-to")).to_have_value(f"queue://{work}")
    expect(page.locator("#move-selector")).to_have_value(
        f"JMS_TernMQ_OriginalDestination = 'queue://{work}'"
    )
    shot(page, "destination")
    page.click("#move-submit")
    expect(page.locator("#notice")).to_have_text(f"Moved 1 message(s) to queue://{work}")
    expect(page.locator("#messages td.empty")).to_have_text("The queue is empty.")
    expect(page.locator("#message-detail article")).to_have_count(0)

    page.goto(f"{server.http}#/destinations/queue/{work}")
    expect(page.locator("#dest-name")).to_have_text(f"queue://{work}")
    expect(page.locator("#dest-depth")).to_have_text("2")
    expect(page.locator("#messages tr[data-id]")).to_have_count(2)
    with server.factory().create_connection() as conn:
        conn.start()
        consumer = conn.create_session().create_consumer(Queue(work))
        got = [consumer.receive(RECEIVE_TIMEOUT) for _ in failed]
    assert [m.text if m else None for m in got] == ["order 18 failed", "order 17 failed"]
    assert [m.get_long_property("order_id") for m in got if m] == [18, 17]
    expect(page.locator("#dest-depth")).to_have_text("0")
    page.click("#browse-refresh")
    expect(page.locator("#messages td.empty")).to_have_text("The queue is empty.")


def test_the_send_form_selectors_purge_and_delete(page: Page, server: ConsoleServer) -> None:
    name = "queue://console.form"
    login(page, server)
    page.fill("#create-name", name)
    page.click("#create-form button")
    expect(page.locator("#notice")).to_have_text(f"Created {name}")
    page.fill("#create-name", name)
    page.click("#create-form button")  # exists already: the API's 409, shown as it says
    expect(page.locator("#error")).to_be_visible()
    expect(page.locator("#error-text")).to_contain_text("(HTTP 409)")
    page.click("#error-close")
    expect(page.locator("#error")).to_be_hidden()

    page.locator("#destinations a", has_text=name).click()
    expect(page.locator("#dest-name")).to_have_text(name)
    page.fill("#send-body", "hello from the console")
    page.fill("#send-properties", "{not json")
    page.click("#send-submit")
    expect(page.locator("#error-text")).to_contain_text("Properties must be a JSON object")
    page.fill("#send-properties", '{"region": "eu", "amount": 640}')
    page.fill("#send-priority", "7")
    page.fill("#send-correlation-id", "corr-1")
    page.click("#send-submit")
    expect(page.locator("#notice")).to_contain_text("Sent ID:")
    expect(page.locator("#error")).to_be_hidden()
    expect(page.locator("#dest-depth")).to_have_text("1")
    expect(page.locator("#messages tr[data-id]")).to_have_count(1)

    page.fill("#browse-selector", "region = 'us'")
    page.click("#browse-form button[type=submit]")
    expect(page.locator("#messages td.empty")).to_have_text("No message matches the selector.")
    page.fill("#browse-selector", "region = 'eu' AND amount > 600")
    page.click("#browse-form button[type=submit]")
    expect(page.locator("#messages tr[data-id]")).to_have_count(1)
    page.fill("#browse-selector", "region = ")
    page.click("#browse-form button[type=submit]")
    expect(page.locator("#error-text")).to_contain_text("(HTTP 400)")

    # What the form sent is what a JMS consumer receives.
    with server.factory().create_connection() as conn:
        conn.start()
        msg = conn.create_session().create_consumer(Queue("console.form")).receive(RECEIVE_TIMEOUT)
    assert msg is not None and msg.text == "hello from the console"
    assert msg.get_string_property("region") == "eu"
    assert msg.get_object_property("amount") == 640
    assert msg.jms_priority == 7 and msg.jms_correlation_id == "corr-1"
    expect(page.locator("#dest-depth")).to_have_text("0")

    page.fill("#browse-selector", "")
    page.click("#browse-form button[type=submit]")
    expect(page.locator("#messages td.empty")).to_have_text("The queue is empty.")
    page.fill("#send-properties", "")
    for text in ("one", "two"):
        page.fill("#send-body", text)
        page.click("#send-submit")
        expect(page.locator("#notice")).to_contain_text("Sent ID:")
    expect(page.locator("#dest-depth")).to_have_text("2")
    page.locator("#messages tr[data-id]", has_text="one").click()
    expect(page.locator("#message-body")).to_have_text("one")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#message-delete")
    expect(page.locator("#notice")).to_contain_text("Deleted ID:")
    expect(page.locator("#message-detail article")).to_have_count(0)
    expect(page.locator("#messages tr[data-id]")).to_have_count(1)
    expect(page.locator("#messages tr[data-id]")).to_contain_text("two")
    expect(page.locator("#dest-depth")).to_have_text("1")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#purge")
    expect(page.locator("#notice")).to_have_text(f"Purged 1 message(s) from {name}")
    expect(page.locator("#dest-depth")).to_have_text("0")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#delete-destination")
    expect(page.locator("#notice")).to_have_text(f"Deleted {name}")
    expect(page.locator("#ov-messages")).to_be_visible()
    expect(page.locator(f'#destinations tr[data-name="{name}"]')).to_have_count(0)


def test_a_connection_is_closed_from_the_console(
    page: Page, server: ConsoleServer, shot: Shot
) -> None:
    lost = threading.Event()
    factory = server.factory(client_id="console-victim")
    conn = factory.create_connection()
    try:
        conn.exception_listener = lambda exc: lost.set()
        conn.start()
        session = conn.create_session()
        session.create_consumer(Queue("console.victim"))
        temp = str(session.create_temporary_queue())
        login(page, server)
        # Its temporary queue is listed, but not offered for administration.
        temp_row = page.locator(f'#destinations tr[data-name="{temp}"]')
        expect(temp_row).to_have_count(1)
        expect(temp_row.locator("a")).to_have_count(0)
        page.click("#nav a[data-page=connections]")
        row = page.locator("#connections tr[data-id]", has_text="console-victim")
        expect(row).to_have_count(1)
        expect(row).to_contain_text(APP[0])
        shot(page, "connections")
        page.once("dialog", lambda dialog: dialog.accept())
        row.get_by_role("button", name="Close").click()
        expect(page.locator("#notice")).to_contain_text("Closed connection")
        expect(row).to_have_count(0)
        assert lost.wait(RECEIVE_TIMEOUT), "the client was not told its connection closed"
        try:
            conn.create_session()
        except JMSException:
            pass
        else:
            raise AssertionError("the closed connection still made a session")
    finally:
        conn.close()


def test_a_durable_subscription_is_listed_and_deleted(
    page: Page, server: ConsoleServer, shot: Shot
) -> None:
    topic = Topic("console.audit")
    with server.factory(client_id="console-sub").create_connection() as conn:
        session = conn.create_session()
        session.create_durable_consumer(topic, "audit-trail").close()
        producer = session.create_producer(topic)
        for text in ("a", "b", "c"):
            producer.send(session.create_text_message(text))
    login(page, server)
    # A topic's page has no message list, and its send form publishes to the subscriptions.
    page.locator("#destinations a", has_text="topic://console.audit").click()
    expect(page.locator("#dest-name")).to_have_text("topic://console.audit")
    expect(page.locator("#messages")).to_have_count(0)
    page.fill("#send-body", "from the console")
    page.click("#send-submit")
    expect(page.locator("#notice")).to_contain_text("Sent ID:")
    page.click("#nav a[data-page=subscriptions]")
    row = page.locator("#subscriptions tr[data-id]", has_text="audit-trail")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("topic://console.audit")
    expect(row.locator("td.num").last).to_have_text("4")
    shot(page, "subscriptions")
    page.once("dialog", lambda dialog: dialog.accept())
    row.get_by_role("button", name="Delete").click()
    expect(page.locator("#notice")).to_contain_text("Deleted subscription audit-trail")
    expect(row).to_have_count(0)
    with server.factory(client_id="console-sub").create_connection() as conn:
        conn.start()
        consumer = conn.create_session().create_durable_consumer(topic, "audit-trail")
        assert consumer.receive(0.5) is None  # a new, empty subscription: the old one is gone


def test_an_anonymous_broker_opens_without_login(
    page: Page, anonymous_server: ConsoleServer
) -> None:
    _send_anonymous(anonymous_server)
    page.goto(anonymous_server.http)
    expect(page.locator("#ov-messages")).to_be_visible()
    expect(page.locator("#login")).to_be_hidden()
    expect(page.locator("#who")).to_have_text("anonymous")
    expect(page.locator("#logout")).to_be_hidden()
    row = page.locator('#destinations tr[data-name="queue://open"]')
    expect(row.locator("td.depth")).to_have_text("1")
    # A broker gone away is said in the header; the page stays as it was.
    anonymous_server.process.kill()
    expect(page.locator("#status")).to_have_text("broker unreachable")
    expect(row.locator("td.depth")).to_have_text("1")


def _send_anonymous(server: ConsoleServer) -> None:
    with server.factory(None).create_connection() as conn:
        session = conn.create_session()
        session.create_producer(Queue("open")).send(session.create_text_message("hi"))


def test_the_console_fits_a_phone(page: Page, server: ConsoleServer, shot: Shot) -> None:
    _send(server, "console.phone", "small screen", region="eu")
    page.set_viewport_size({"width": 390, "height": 844})
    login(page, server)
    row = page.locator('#destinations tr[data-name="queue://console.phone"]')
    expect(row.locator("td.depth")).to_have_text("1")
    expect(row.locator("td.opt").first).to_be_hidden()
    assert _no_sideways_scroll(page)
    shot(page, "phone")
    # The chart is drawn at the width of its box, and redrawn when the screen turns.
    chart = page.locator("#total-chart svg.chart")
    expect(chart).to_have_attribute("viewBox", re.compile(r"^0 0 3\d\d 180$"))
    page.set_viewport_size({"width": 844, "height": 390})
    expect(chart).to_have_attribute("viewBox", re.compile(r"^0 0 (7\d\d|8[0-4]\d) 180$"))
    page.set_viewport_size({"width": 390, "height": 844})
    row.locator("a").click()
    expect(page.locator("#messages tr[data-id]")).to_have_count(1)
    page.locator("#messages tr[data-id]").click()
    expect(page.locator("#message-body")).to_have_text("small screen")
    assert _no_sideways_scroll(page)
    shot(page, "phone-message")


def _no_sideways_scroll(page: Page) -> bool:
    """The page is no wider than the screen (tables scroll inside their own box)."""
    return bool(
        page.evaluate(
            "() => document.documentElement.scrollWidth <= document.documentElement.clientWidth"
        )
    )


def test_each_body_type_is_shown_as_what_it_is(page: Page, server: ConsoleServer) -> None:
    queue = Queue("console.bodies")
    with server.factory().create_connection() as conn:
        session = conn.create_session()
        producer = session.create_producer(queue)
        raw = session.create_bytes_message()
        raw.write_bytes(bytes(range(20)) + b"<b>")
        producer.send(raw)
        mapped = session.create_map_message()
        mapped.set_string("<script>alert(1)</script>", "x")
        mapped.set_int("amount", 640)
        producer.send(mapped)
        stream = session.create_stream_message()
        stream.write_string("first")
        stream.write_int(2)
        producer.send(stream)
        producer.send(session.create_message())
    login(page, server)
    page.goto(f"{server.http}#/destinations/queue/console.bodies")
    rows = page.locator("#messages tr[data-id]")
    expect(rows).to_have_count(4)
    body = page.locator("#message-body")

    rows.nth(0).click()
    expect(page.locator("#message-detail h4", has_text="Body")).to_have_text("Body (bytes)")
    expect(body).to_contain_text("23 bytes")
    expect(body).to_contain_text("00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f")
    expect(body).to_contain_text("10 11 12 13 3c 62 3e")
    expect(body).to_contain_text("<b>")  # as text, not as markup

    rows.nth(1).click()
    expect(page.locator("#message-detail h4", has_text="Body")).to_have_text("Body (map)")
    expect(body.locator("tr", has_text="amount")).to_contain_text("640")
    expect(body.locator("th", has_text="<script>")).to_have_count(1)
    assert page.locator("#message-body script").count() == 0

    rows.nth(2).click()
    expect(page.locator("#message-detail h4", has_text="Body")).to_have_text("Body (stream)")
    expect(body).to_contain_text('"first"')
    expect(body).to_contain_text("2")

    rows.nth(3).click()
    expect(page.locator("#message-detail h4", has_text="Body")).to_have_text("Body (none)")
    expect(page.locator("#message-detail p.hint")).to_have_text("(no body)")


def test_a_user_who_administers_some_queues_sees_those_only(
    page: Page, server: ConsoleServer
) -> None:
    page.goto(server.http)
    page.fill("#login-user", PARTIAL[0])
    page.fill("#login-password", PARTIAL[1])
    page.click("#login-submit")  # none of its queues exists yet: nothing to see
    expect(page.locator("#login-error")).to_contain_text("may not administer any destination")
    _send(server, "console.orders.eu", "an order")
    _send(server, "console.other", "not the clerk's")
    page.click("#login-submit")
    expect(page.locator("#who")).to_have_text(f"as {PARTIAL[0]}")
    expect(page.locator("#destinations tr[data-name]")).to_have_count(1)
    expect(page.locator('#destinations tr[data-name="queue://console.orders.eu"]')).to_have_count(1)
    # The connections need admin on every destination: the API's refusal is shown as it is.
    page.click("#nav a[data-page=connections]")
    expect(page.locator("#error-text")).to_contain_text("(HTTP 403)")
    expect(page.locator("#connections p.hint")).to_contain_text("could not be shown")
