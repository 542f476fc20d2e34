"""Fixtures of the command-line tests."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from ternmq import EmbeddedBroker


@pytest.fixture
def broker() -> Iterator[EmbeddedBroker]:
    """A fresh embedded broker; the CLI reaches it with ``--url broker.url``."""
    b = EmbeddedBroker(f"clitest-{uuid.uuid4().hex[:8]}").start()
    try:
        yield b
    finally:
        b.stop()


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The operator's environment must not leak into the tests."""
    for name in ("TERNMQ_URL", "TERNMQ_USER", "TERNMQ_PASSWORD"):
        monkeypatch.delenv(name, raising=False)
