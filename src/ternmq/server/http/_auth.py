"""Who an HTTP request comes from, and what it may see: Basic credentials and ``admin``.

Theory of operation
-------------------
The HTTP listener has the messaging listeners' users. A request without an ``Authorization``
header is anonymous, admitted exactly when anonymous connections are (``anonymous`` of the
config); a request with Basic credentials is checked by the server's authenticator through
``host.authenticate``, the path a native ``Connect`` takes: the scrypt hash runs in the
server's small thread pool (never on the loop), at most ``limits.auth_checks_per_address``
at once per address, and an address with too many failed logins is refused without a check
for the back-off of ``Admission``. A wrong login is a 401 with ``WWW-Authenticate``.

A console polls, and one hash per request would cost tens of milliseconds of CPU each: an
accepted (user, password) pair is remembered for ``[http] auth_cache_seconds`` as an HMAC
of the password under a key made at start (never the password itself), in a bounded table.

Paths that need no user at all (``/api/health``, the console's files, and ``/metrics``
unless ``[http] metrics_auth``) skip the check. Handlers then ask for the permission they
need: reading and changing anything needs ``admin`` on the destination concerned, as
``ternmq stat`` and ``purge`` do (``server/security.py``); the broker-wide lists
(connections, subscriptions of topics the user may not administer) show only what the user
may administer, and closing a connection needs ``admin`` on every destination.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextvars
import hashlib
import hmac
import os
import time
from typing import Final

from aiohttp import web

from ternmq.destination import Destination
from ternmq.server.config import HttpConfig
from ternmq.server.http._base import ApiError, Handler, HttpHost

__all__ = [
    "Gate",
    "broker_admin",
    "may_admin",
    "require_admin",
    "require_broker_admin",
    "user_of",
]

REALM: Final = 'Basic realm="ternmq"'
# The principal of the request being handled (None: anonymous): each request is handled in
# its own task, whose context the middleware sets.
_USER: Final[contextvars.ContextVar[str | None]] = contextvars.ContextVar("user", default=None)
CACHE_LIMIT: Final = 1024  # remembered logins at most
CHECK_TIMEOUT: Final = 30.0  # seconds a request waits for its password check
# Paths served to everybody (the console asks for credentials itself, in its pages).
PUBLIC_PREFIXES: Final = ("/console/", "/api/health")
PUBLIC_EXACT: Final = frozenset({"/", "/favicon.ico", "/index.html"})


class Gate:
    """The authentication middleware of the HTTP listener and its cache of logins.

    Args:
        host: the server (its authenticator, admission and config).
        config: the ``[http]`` settings.
    """

    def __init__(self, host: HttpHost, config: HttpConfig) -> None:
        self.host = host
        self.config = config
        self._key = os.urandom(32)
        self._cache: dict[tuple[str, bytes], float] = {}  # -> monotonic expiry
        self._public: tuple[str, ...] = PUBLIC_PREFIXES

    def add_public(self, prefix: str) -> None:
        """Serve paths starting with ``prefix`` without HTTP credentials: for a route that
        authenticates in its own protocol (STOMP over WebSocket checks CONNECT's login)."""
        if prefix not in self._public:
            self._public = (*self._public, prefix)

    def is_public(self, path: str) -> bool:
        """Whether ``path`` is served without credentials."""
        if path in PUBLIC_EXACT or path.startswith(self._public):
            return True
        return path == "/metrics" and not self.config.metrics_auth

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Resolve the request's user (401 when refused) unless the path is public."""
        _USER.set(None)
        if self.is_public(request.path):
            return await handler(request)
        header = request.headers.get("Authorization")
        if header is None:
            if not self.host.config.anonymous_allowed:
                raise ApiError(
                    401,
                    "credentials required: this broker admits no anonymous users; log in "
                    "with HTTP Basic authentication",
                    {"WWW-Authenticate": REALM},
                )
            return await handler(request)
        user, password = _parse_basic(header)
        address = request.remote or "?"
        if not self._remembered(user, password):
            error = await self._check(address, user, password)
            if error is not None:
                raise ApiError(401, error, {"WWW-Authenticate": REALM})
            self._remember(user, password)
        _USER.set(self.host.principal(user))
        return await handler(request)

    def _digest(self, password: str) -> bytes:
        return hmac.new(self._key, password.encode("utf-8"), hashlib.sha256).digest()

    def _remembered(self, user: str, password: str) -> bool:
        if self.config.auth_cache_seconds <= 0:
            return False
        key = (user, self._digest(password))
        expiry = self._cache.get(key)
        if expiry is None:
            return False
        if expiry < time.monotonic():
            del self._cache[key]
            return False
        return True

    def _remember(self, user: str, password: str) -> None:
        ttl = self.config.auth_cache_seconds
        if ttl <= 0:
            return
        cache = self._cache
        if len(cache) >= CACHE_LIMIT:
            now = time.monotonic()
            for k in [k for k, exp in cache.items() if exp < now]:
                del cache[k]
            if len(cache) >= CACHE_LIMIT:
                cache.clear()
        cache[(user, self._digest(password))] = time.monotonic() + ttl

    async def _check(self, address: str, user: str, password: str) -> str | None:
        """The authenticator's verdict on the credentials (None: accepted)."""
        loop = self.host.loop
        fut: asyncio.Future[str | None] = loop.create_future()

        def verdict(error: str | None) -> None:
            if not fut.done():
                fut.set_result(error)

        check = self.host.authenticate(address, user, password, verdict)
        try:
            return await asyncio.wait_for(fut, CHECK_TIMEOUT)
        except TimeoutError:
            return "the password check took too long: try again"
        finally:
            if check is not None and not fut.done():
                check.cancelled = True


def _parse_basic(header: str) -> tuple[str, str]:
    """(user, password) of a Basic ``Authorization`` header.

    Raises:
        ApiError: 401, the header is not HTTP Basic credentials.
    """
    scheme, _, value = header.strip().partition(" ")
    if scheme.lower() != "basic":
        raise ApiError(
            401,
            f"unsupported authorization scheme {scheme[:20]!r}: use HTTP Basic",
            {"WWW-Authenticate": REALM},
        )
    try:
        text = base64.b64decode(value.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise ApiError(
            401,
            "malformed Basic credentials: base64 of USER:PASSWORD in UTF-8",
            {"WWW-Authenticate": REALM},
        ) from None
    user, sep, password = text.partition(":")
    if not sep or not user:
        raise ApiError(
            401, "malformed Basic credentials: give USER:PASSWORD", {"WWW-Authenticate": REALM}
        )
    return user, password


def user_of(request: web.Request) -> str | None:
    """The principal of the request being handled (None: anonymous); ``request`` names the
    request the caller handles (the user is kept in the task's context)."""
    return _USER.get()


def may_admin(host: HttpHost, user: str | None, name: str, temporary: bool = False) -> bool:
    """Whether ``user`` holds ``admin`` on the destination named ``name`` (always without
    permissions; temporary destinations are not checked, as ``ternmq stat`` does not)."""
    auth = host.authorizer
    return auth is None or temporary or auth(user, "admin", name)


def broker_admin(host: HttpHost, user: str | None) -> bool:
    """Whether ``user`` holds ``admin`` on every destination (``>`` for both kinds)."""
    auth = host.authorizer
    return auth is None or auth.grants_everything(user, "admin")


def require_admin(host: HttpHost, request: web.Request, dest: Destination) -> None:
    """Refuse the request unless its user holds ``admin`` on ``dest``.

    Raises:
        ApiError: 403.
    """
    user = user_of(request)
    if not may_admin(host, user, str(dest), dest.is_temporary):
        who = user if user is not None else "anonymous"
        raise ApiError(
            403,
            f"user {who!r} is not allowed to administer {dest}: grant it the 'admin' "
            "permission on that destination",
        )


def require_broker_admin(host: HttpHost, request: web.Request, what: str) -> None:
    """Refuse the request unless its user holds ``admin`` on every destination.

    Raises:
        ApiError: 403.
    """
    user = user_of(request)
    if not broker_admin(host, user):
        who = user if user is not None else "anonymous"
        raise ApiError(
            403,
            f"user {who!r} may not {what}: that needs the 'admin' permission on every "
            "destination (pattern '>')",
        )
