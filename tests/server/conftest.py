"""Fixtures of the server tests: ``serve(config_toml)`` starts a ``ternmq serve`` process on
port 0 with a fresh data dir; every process is killed when the test ends."""

from __future__ import annotations

import pathlib
from collections.abc import Callable, Iterator

import pytest

from ._support import ServerProcess

Serve = Callable[..., ServerProcess]


@pytest.fixture
def serve(tmp_path: pathlib.Path) -> Iterator[Serve]:
    """``serve(config=None, data_dir=None, http=False) -> ServerProcess``."""
    started: list[ServerProcess] = []

    def start(
        config: str | None = None, data_dir: pathlib.Path | None = None, http: bool = False
    ) -> ServerProcess:
        server = ServerProcess(
            data_dir or tmp_path / f"data{len(started)}", config, tmp_path, http=http
        )
        started.append(server)
        return server

    try:
        yield start
    finally:
        for server in started:
            server.kill()
