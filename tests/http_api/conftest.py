"""Fixtures of the HTTP listener's tests: an in-process server (``ServerThread``) with its
HTTP listener on a free port, and a client for it."""

from __future__ import annotations

import dataclasses
import pathlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ternmq import ConnectionFactory
from ternmq.server.app import ServerThread
from ternmq.server.config import HttpConfig, ListenerConfig, ServerConfig

from ._client import Http

Start = Callable[..., tuple[ServerThread, Http]]


@pytest.fixture
def start(tmp_path: pathlib.Path) -> Iterator[Start]:
    """``start(http=HttpConfig(...), data_dir=..., store=..., clock=..., **ServerConfig
    fields) -> (server, Http)``: every server is stopped when the test ends."""
    started: list[ServerThread] = []

    def run(
        *,
        http: HttpConfig | None = None,
        data_dir: pathlib.Path | None = None,
        store: Any = None,
        clock: Any = None,
        **fields: Any,
    ) -> tuple[ServerThread, Http]:
        cfg = ServerConfig(
            listeners=(ListenerConfig(port=0),),
            data_dir=str(data_dir or tmp_path / f"data{len(started)}"),
            http=dataclasses.replace(http or HttpConfig(), port=0),
            **fields,
        )
        kwargs: dict[str, Any] = {}
        if store is not None:
            kwargs["store"] = store
        if clock is not None:
            kwargs["clock"] = clock
        st = ServerThread(cfg, **kwargs).start()
        started.append(st)
        return st, Http(st.http_url)

    try:
        yield run
    finally:
        for st in started:
            st.stop()


def factory(st: ServerThread) -> ConnectionFactory:
    """A connection factory for the server's native listener."""
    return ConnectionFactory(st.url)
