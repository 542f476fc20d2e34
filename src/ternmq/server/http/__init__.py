"""The HTTP listener: web console, JSON API, Prometheus metrics (SERVER.md "HTTP").

Theory of operation
-------------------
One aiohttp application runs on the server's own event loop, the broker engine's only owner,
so a request handler may call the engine directly (synchronously, between two awaits) exactly
as a gateway connection does; nothing here takes a lock or starts a thread. The server binds
the listener with the others (``BrokerServer._bind``: the aiohttp request handler is the
listener's protocol factory, TLS from the ``[http]`` table), and it starts accepting once the
broker has recovered.

What the application serves is a list of *route setups* (:data:`ROUTE_SETUPS`): functions
``setup(app, frontend)`` that add routes to the application. The JSON API (``api.py``), the
metrics (``metrics.py``) and the console's static files (``console.py``) are three of them;
another module (a WebSocket gateway) adds its own with :func:`add_routes` before the server
starts, or by one more entry in the list.

Every request passes two middlewares: the first turns every error into the JSON shape of the
API (``{"error": ...}``) and refuses a body larger than ``[http] max_body`` with 413 before
reading it; the second (``_auth.py``) resolves the request's user from HTTP Basic credentials
(checked by the server's authenticator off the loop, rate limited per address by the same
admission as the messaging listeners) and stores it for the handlers, which ask for the
``admin`` permission they need (:func:`ternmq.server.http._auth.require_admin`).
"""

from __future__ import annotations

from typing import Final

from ternmq.server.http import api, console, metrics
from ternmq.server.http._base import ApiError, HttpHost, error_response, json_response
from ternmq.server.http._frontend import HttpFrontend, RouteSetup

__all__ = [
    "ROUTE_SETUPS",
    "ApiError",
    "HttpFrontend",
    "HttpHost",
    "RouteSetup",
    "add_routes",
    "build_frontend",
    "error_response",
    "json_response",
]

ROUTE_SETUPS: Final[list[RouteSetup]] = []


def add_routes(setup: RouteSetup) -> RouteSetup:
    """Have every HTTP listener started from now on call ``setup(app, frontend)`` to add its
    routes (usable as a decorator); a setup added twice is applied once."""
    if setup not in ROUTE_SETUPS:
        ROUTE_SETUPS.append(setup)
    return setup


def build_frontend(host: HttpHost) -> HttpFrontend:
    """The HTTP listener of ``host``: the JSON API, the metrics, every setup of
    :data:`ROUTE_SETUPS`, and the console's files at ``/`` (last: its routes catch the rest)."""
    return HttpFrontend(host, [api.setup, metrics.setup, *ROUTE_SETUPS, console.setup])
