"""Suite-wide test configuration."""

from __future__ import annotations

import os
import pathlib
import subprocess
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from _postgres import pg_url, postgres_server, private_postgres

# fixtures: a real PostgreSQL (tests/_postgres.py)
__all__ = ["pg_url", "postgres_server", "private_postgres"]

# CI runs derandomized so a red build is reproducible; locally, random exploration.
settings.register_profile(
    "ci", derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


# The longest test files, longest first (seconds of one worker, a full run on the 2-core
# machine under load, 27 November): under pytest-xdist a file runs on one worker, and a long
# one left to the end keeps the other worker idle for its whole length. The Makefile passes
# --no-loadscope-reorder, or xdist would put the files with the most tests first instead.
LONG_FILES = (
    "spark/test_kill_exactly_once.py",  # 600
    "conformance/test_prod.py",  # 285
    "conformance/test_sub.py",  # 268
    "conformance/test_sess.py",  # 173
    "conformance/test_ctx.py",  # 142
    "conformance/test_tx.py",  # 140
    "conformance/test_conn.py",  # 133
    "conformance/test_rel.py",  # 126
    "durability/test_crash.py",  # 119
    "conformance/test_ptp.py",  # 95
    "spark/test_spark_source.py",  # 93
    "conformance/test_cons.py",  # 89
    "server/test_memory.py",  # 80
    "conformance/test_message_transit.py",  # 70
    "conformance/test_psf.py",  # 67
    "openwire/test_java_clients.py",  # 51
    "conformance/test_exc.py",  # 51
    "test_readme.py",  # 50
    "server/test_failover.py",  # 48
    "stomp_gateway/test_conformance.py",  # 42
    "conformance/test_psf_dedup.py",  # 40
    "server/test_server.py",  # 39
    "spark/test_pipeline_demo.py",  # 27
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Order the long files first (see ``LONG_FILES``); the rest keep their order."""
    tests = pathlib.Path(__file__).parent
    rank = {str(tests / name): i for i, name in enumerate(LONG_FILES)}
    items.sort(key=lambda item: rank.get(str(item.path), len(LONG_FILES)))


@pytest.fixture
def small_volume(tmp_path: pathlib.Path) -> Iterator[Callable[[str], pathlib.Path]]:
    """``small_volume(size) -> path``: a tmpfs of ``size`` (``"20m"``) mounted for the test
    (a data volume that fills), unmounted when it ends. Mounting needs root (CI runs as
    root); elsewhere the test is skipped and says why."""
    mounted: list[pathlib.Path] = []

    def mount(size: str) -> pathlib.Path:
        if os.geteuid() != 0:
            pytest.skip("mounting a small tmpfs (a volume that fills) needs root")
        mnt = tmp_path / f"volume{len(mounted)}"
        mnt.mkdir()
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt)],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here (no CAP_SYS_ADMIN?): {done.stderr.strip()}")
        mounted.append(mnt)
        return mnt

    try:
        yield mount
    finally:
        for mnt in mounted:
            subprocess.run(["umount", "-l", str(mnt)], check=False)


@pytest.fixture(scope="module")
def playwright() -> Iterator[Any]:
    """Playwright for Python for one test module (its sync API allows one per thread, and
    while it runs the thread has a running event loop, so ``asyncio.run`` fails: it must
    not outlive the module that needs it): the browser tests launch Debian's Chromium
    through it (``_browser.launch``)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        yield pw
