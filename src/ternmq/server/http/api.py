"""The JSON API under ``/api/`` (docs/http-api.md).

Theory of operation
-------------------
Each handler runs on the server's event loop, the broker's owner, so it calls the engine's
admin operations (``broker/admin.py``) directly and synchronously; a change that writes to
the store (delete, move, purge, send of a PERSISTENT message) is answered only once its
store batch is durable (``admin.durable`` waits on the engine's ordered output gate). Every
handler checks the ``admin`` permission of the destination it reads or changes
(``_auth.require_admin``); the lists show only what the user may administer.
"""

from __future__ import annotations

from aiohttp import web

from ternmq.server.http._base import json_response
from ternmq.server.http._frontend import HttpFrontend

__all__ = ["setup"]


def setup(app: web.Application, frontend: HttpFrontend) -> None:
    """Add the routes of the JSON API."""
    host = frontend.host

    async def health(request: web.Request) -> web.StreamResponse:
        if host.broker is None:
            return json_response({"status": "stopped", "role": "live"}, 503)
        return json_response({"status": "ok", "role": "live"})

    app.router.add_get("/api/health", health)
