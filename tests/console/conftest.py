"""Fixtures of the web console's tests: a real ``ternmq serve`` with its HTTP listener on
port 0, and real headless Chromium driven through Playwright.

Chromium is Debian's ``/usr/bin/chromium`` (``apt-get install chromium``), started with a
fresh profile directory; Playwright's own browser downloads are never used. Without that
binary the browser tests are skipped, saying so. Setting ``TERNMQ_CONSOLE_SCREENSHOTS=DIR``
(``tools/console_screenshots.py`` does) makes the tests save a screenshot of each page there
as ``console-NAME.png``.
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from playwright.sync_api import BrowserContext, Page, Playwright, expect

from _browser import launch, needs_chromium  # noqa: F401 - the mark its tests import
from server._support import ServerProcess
from ternmq import ConnectionFactory
from ternmq.server.security import hash_password

SCREENSHOTS_ENV = "TERNMQ_CONSOLE_SCREENSHOTS"
UI_TIMEOUT_MS = 15_000  # a poll every 2 s on a loaded 2-core machine
LAPTOP = {"width": 1280, "height": 860}

ADMIN = ("ops", "ops-console-password")  # admin on everything
APP = ("app", "app-console-password")  # may send and consume, not administer
PARTIAL = ("clerk", "clerk-console-password")  # administers queue://console.orders.> only
MAX_DELIVERY_ATTEMPTS = 2


def _config(users: bool) -> str:
    """The server's TOML: users and permissions, or anonymous; dead letters after 2 tries."""
    broker = (
        f"[broker]\nmax_delivery_attempts = {MAX_DELIVERY_ATTEMPTS}\n"
        'dead_letter_queue = "DLQ"\nredelivery_delay = 0.0\n'
    )
    if not users:
        return broker
    return (
        "anonymous = false\n"
        f"{broker}"
        f'[users.{ADMIN[0]}]\npassword = "{hash_password(ADMIN[1])}"\nroles = ["admins"]\n'
        f'[users.{APP[0]}]\npassword = "{hash_password(APP[1])}"\nroles = ["apps"]\n'
        f'[users.{PARTIAL[0]}]\npassword = "{hash_password(PARTIAL[1])}"\nroles = []\n'
        '[permissions."role:admins"]\nadmin = [">"]\n'
        '[permissions."role:apps"]\nsend = [">"]\nconsume = [">"]\nbrowse = [">"]\n'
        'create = [">"]\n'
        f'[permissions.{PARTIAL[0]}]\nadmin = ["queue://console.orders.>"]\n'
    )


@dataclass
class ConsoleServer:
    """A running server: ``url`` for the Python client, ``http`` for the browser."""

    process: ServerProcess
    url: str
    http: str

    def factory(self, user: tuple[str, str] | None = APP, **options: Any) -> ConnectionFactory:
        """A connection factory for this server, as ``user`` (None: anonymous)."""
        if user is None:
            return ConnectionFactory(self.url, **options)
        return ConnectionFactory(self.url, user=user[0], password=user[1], **options)


def _start(tmp: pathlib.Path, users: bool) -> ConsoleServer:
    process = ServerProcess(tmp / "data", _config(users), tmp, http=True)
    return ConsoleServer(process, f"tcp://127.0.0.1:{process.port}", f"{process.http_url}/")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleServer]:
    """A server with users: ``ops`` (admin), ``app`` (no admin) and ``clerk`` (admin on
    ``queue://console.orders.>``); anonymous refused."""
    s = _start(tmp_path_factory.mktemp("console-server"), users=True)
    try:
        yield s
    finally:
        s.process.kill()


@pytest.fixture
def anonymous_server(tmp_path: pathlib.Path) -> Iterator[ConsoleServer]:
    """A server without users: anonymous clients are admitted and may do everything."""
    s = _start(tmp_path, users=False)
    try:
        yield s
    finally:
        s.process.kill()


@pytest.fixture(scope="module")
def browser(
    playwright: Playwright, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BrowserContext]:
    """Debian's Chromium, headless, with a fresh profile directory (one per test module)."""
    ctx = launch(playwright, tmp_path_factory.mktemp("chromium-profile"), viewport=LAPTOP)
    ctx.set_default_timeout(UI_TIMEOUT_MS)
    expect.set_options(timeout=UI_TIMEOUT_MS)
    try:
        yield ctx
    finally:
        ctx.close()


@pytest.fixture
def page(browser: BrowserContext) -> Iterator[Page]:
    """A new tab (its own session storage: logged out); fails the test on a script error or
    on anything the page's Content-Security-Policy refused."""
    tab = browser.new_page()
    tab.set_viewport_size(LAPTOP)
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    tab.on(
        "console",
        lambda msg: errors.append(msg.text) if "Content Security Policy" in msg.text else None,
    )
    try:
        yield tab
    finally:
        tab.close()
    assert errors == [], f"the console raised in the browser: {errors}"


Shot = Callable[[Page, str], None]


@pytest.fixture
def shot() -> Shot:
    """``shot(page, name)``: save ``console-NAME.png`` when screenshots are asked for."""
    target = os.environ.get(SCREENSHOTS_ENV)

    def take(page: Page, name: str) -> None:
        if target:
            pathlib.Path(target).mkdir(parents=True, exist_ok=True)
            path = str(pathlib.Path(target) / f"console-{name}.png")
            page.locator("body").screenshot(path=path, animations="disabled")

    return take


def login(page: Page, server: ConsoleServer, user: tuple[str, str] = ADMIN) -> None:
    """Open the console and log in as ``user``; wait for the first page's figures."""
    page.goto(server.http)
    expect(page.locator("#login")).to_be_visible()
    page.fill("#login-user", user[0])
    page.fill("#login-password", user[1])
    page.click("#login-submit")
    expect(page.locator("#nav")).to_be_visible()
    expect(page.locator("#ov-messages")).to_be_visible()
