"""The HTTP listener's aiohttp application and its two middlewares.

Theory of operation
-------------------
:class:`HttpFrontend` builds one aiohttp application from a list of route setups (see the
package doc) and hands the server the protocol factory it binds. Every request passes two
middlewares: the first answers every refusal in the JSON shape of the API
(``{"error": ...}``) and refuses a body larger than ``[http] max_body`` with 413 before
reading it; the second (``_auth.Gate``) resolves the request's user.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Final, cast

from aiohttp import web

from ternmq.server.config import HttpConfig
from ternmq.server.http._auth import Gate
from ternmq.server.http._base import ApiError, Handler, HttpHost, error_response

__all__ = ["HttpFrontend", "RouteSetup"]

log = logging.getLogger("ternmq.server.http")

KEEPALIVE: Final = 15.0  # seconds an idle keep-alive HTTP connection stays open


class _Refused(asyncio.Protocol):
    """A socket past ``max_connections``: closed as soon as it is accepted."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Abort it."""
        cast(asyncio.Transport, transport).abort()  # uvloop's are not subclasses


# A function that adds routes to the application; it may keep ``frontend`` for its handlers.
RouteSetup = Callable[[web.Application, "HttpFrontend"], None]


class HttpFrontend:
    """The HTTP listener's application and what its handlers share.

    Args:
        host: the server (the broker, its config, authentication).
        setups: the route setups to apply, in order.
    """

    def __init__(self, host: HttpHost, setups: Iterable[RouteSetup]) -> None:
        self.host = host
        self.config: HttpConfig = host.config.http or HttpConfig()
        self.started = time.time()
        self.auth = Gate(host, self.config)
        self.app = web.Application(
            middlewares=[self._errors, self.auth.middleware],
            client_max_size=self.config.max_body,
            handler_args={"access_log": None},
        )
        for setup in setups:
            setup(self.app, self)
        self._runner: web.AppRunner | None = None

    async def protocol_factory(self) -> Callable[[], asyncio.BaseProtocol]:
        """Set the application up; the factory of one protocol per accepted socket (what
        ``loop.create_server`` takes). Past ``[http] max_connections`` open connections a
        new socket is closed at once: a peer that opens many costs at most that many
        request parsers (each bounded by aiohttp's header limits and ``max_body``)."""
        runner = web.AppRunner(
            self.app, handle_signals=False, access_log=None, keepalive_timeout=KEEPALIVE
        )
        await runner.setup()
        self._runner = runner
        server = runner.server
        assert server is not None
        cap = self.config.max_connections

        def make() -> asyncio.BaseProtocol:
            if cap and len(server.connections) >= cap:
                return _Refused()
            return server()

        return make

    async def close(self, timeout: float = 2.0) -> None:
        """Close open HTTP connections (waiting up to ``timeout`` for requests in progress)
        and run the application's cleanup. Idempotent."""
        runner, self._runner = self._runner, None
        if runner is None:
            return
        server = runner.server
        if server is not None:
            try:
                await server.shutdown(timeout)
            except (TimeoutError, concurrent.futures.TimeoutError):
                log.debug("HTTP connections did not finish within %s s", timeout)
        await runner.cleanup()

    @web.middleware
    async def _errors(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Every error as ``{"error": ...}``; a body past ``max_body`` refused unread; a
        change asked by a page of another site refused (see :func:`_cross_site`)."""
        cross = _cross_site(request)
        if cross is not None:
            return error_response(
                403,
                f"{request.method} from a page of {cross} refused: the API takes changes only "
                "from pages of its own address (the console) or from clients that send no "
                "Origin header",
            )
        length = request.content_length
        if length is not None and length > self.config.max_body:
            return error_response(
                413,
                f"the request body of {length} octets is larger than the listener accepts "
                f"({self.config.max_body}, [http] max_body): send less",
            )
        try:
            return await handler(request)
        except ApiError as exc:
            return error_response(exc.status, exc.message, exc.headers)
        except web.HTTPRequestEntityTooLarge:
            return error_response(
                413,
                f"the request body is larger than the listener accepts ({self.config.max_body} "
                "octets, [http] max_body): send less",
            )
        except web.HTTPException as exc:
            if exc.status < 400:
                raise
            message = f"{exc.reason}: {request.method} {request.path}"
            if exc.status == 404:
                message = f"no such resource: {request.path} (see docs/http-api.md)"
            elif exc.status == 405:
                message = f"{request.method} is not allowed on {request.path}"
            return error_response(exc.status, message, _extra_headers(exc.headers))
        except Exception as exc:  # a bug: logged with its traceback, answered in the API's shape
            log.exception("internal error handling %s %s", request.method, request.path)
            return error_response(500, f"internal error ({type(exc).__name__}): see the log")


_SAFE_METHODS: Final = frozenset(("GET", "HEAD", "OPTIONS"))


def _cross_site(request: web.Request) -> str | None:
    """The other site a change comes from, or None. A browser names the page that made a
    request in ``Origin``; a change (any method but GET, HEAD, OPTIONS) from a page of
    another address is refused, so a page elsewhere cannot use a logged-in or anonymous
    admin's browser against the broker (cross-site request forgery). Clients that are not
    browsers (curl, scripts) send no ``Origin`` and are not affected."""
    if request.method in _SAFE_METHODS:
        return None
    origin = request.headers.get("Origin")
    if origin is None:
        return None
    scheme, _, rest = origin.partition("://")
    if origin == "null" or rest.lower() != request.host.lower() or scheme != request.scheme:
        return origin
    return None


def _extra_headers(headers: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in headers.items() if k.lower() in ("allow", "www-authenticate")}
