"""What the HTTP listener's modules share: the host protocol, the error shape, JSON.

Theory of operation
-------------------
Nothing here acts: :class:`HttpHost` is what the listener may ask of the server (which
``BrokerServer`` satisfies, so that no module here imports ``server/app.py``);
:class:`ApiError` is how a handler refuses a request (the error middleware of
``_frontend.py`` answers it as ``{"error": ...}`` with its status).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Protocol

from aiohttp import web

from ternmq.server._gateway import ConnectionHost, GatewayConnection
from ternmq.server.config import ServerConfig
from ternmq.server.security import Authorizer

__all__ = ["ApiError", "Handler", "HttpHost", "error_response", "json_response"]


class HttpHost(ConnectionHost, Protocol):
    """What the HTTP listener may ask of the server (``BrokerServer`` satisfies it): what a
    gateway connection may ask (the loop, the broker, credential checks), and more."""

    @property
    def config(self) -> ServerConfig:
        """The server's settings."""
        ...

    @property
    def authorizer(self) -> Authorizer | None:
        """The permission checker (None: every user may do everything)."""
        ...

    @property
    def connections(self) -> set[GatewayConnection]:
        """The messaging connections (every gateway's)."""
        ...

    @property
    def role(self) -> str:
        """``live``, or ``backup`` while another server holds the store's live lock."""
        ...


def json_response(data: object, status: int = 200) -> web.Response:
    """``data`` as a JSON response."""
    return web.Response(
        text=json.dumps(data, separators=(",", ":"), allow_nan=False),
        status=status,
        content_type="application/json",
    )


def error_response(
    status: int, message: str, headers: Mapping[str, str] | None = None
) -> web.Response:
    """The API's error shape: ``{"error": message}`` with ``status``."""
    resp = json_response({"error": message}, status)
    if headers:
        resp.headers.update(headers)
    return resp


class ApiError(Exception):
    """A request the API refuses: answered ``status`` with ``{"error": message}``.

    Args:
        status: the HTTP status (400, 401, 403, 404, 409, 413, ...).
        message: what is wrong and what to do.
        headers: extra response headers (``WWW-Authenticate`` of a 401).
    """

    def __init__(self, status: int, message: str, headers: Mapping[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = dict(headers or {})


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
