"""Real headless Chromium for the test suite, driven through Playwright for Python.

The browser is Debian's ``/usr/bin/chromium`` (``apt-get install -y chromium``; ``.ci/run``
installs it where it is missing), started with a fresh profile directory and the flags this
machine's closed network needs; Playwright's own browser downloads are never used. Tests that
need it carry :data:`needs_chromium`, which skips them, saying why, where it is absent.
"""

from __future__ import annotations

import os
import pathlib
from typing import Any

import pytest
from playwright.sync_api import BrowserContext, Playwright

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

needs_chromium = pytest.mark.skipif(
    not os.path.exists(CHROMIUM),
    reason=f"browser tests need Chromium at {CHROMIUM} (apt-get install -y chromium)",
)


def launch(pw: Playwright, profile: pathlib.Path, **options: Any) -> BrowserContext:
    """Debian's Chromium, headless, with the profile directory ``profile``; ``options`` go to
    Playwright's ``launch_persistent_context`` (a viewport, say). ``pw`` is the test
    session's Playwright (the ``playwright`` fixture: one per thread)."""
    return pw.chromium.launch_persistent_context(
        str(profile), executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True, **options
    )
