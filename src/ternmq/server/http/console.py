"""The web console's files: ``/`` and ``/console/*`` from ``ternmq/server/console/``.

Theory of operation
-------------------
The console is static files (HTML, JavaScript, CSS) shipped in the package and served as
they are; every figure it shows comes from the JSON API. ``/`` is its ``index.html``;
``/console/PATH`` any other file under the directory (aiohttp's static route refuses paths
that leave it). Nothing is fetched from the internet. A package without the console answers
404 with a message saying so.
"""

from __future__ import annotations

import pathlib
from typing import Final

from aiohttp import web

from ternmq.server.http._base import ApiError
from ternmq.server.http._frontend import HttpFrontend

__all__ = ["CONSOLE_DIR", "setup"]

CONSOLE_DIR: Final = pathlib.Path(__file__).resolve().parent.parent / "console"


def setup(app: web.Application, frontend: HttpFrontend) -> None:
    """Add ``/`` (the console's ``index.html``) and ``/console/*`` (its files)."""
    directory = CONSOLE_DIR

    async def index(request: web.Request) -> web.StreamResponse:
        page = directory / "index.html"
        if not page.is_file():
            raise ApiError(
                404,
                "the web console is not installed in this package: use the JSON API under "
                "/api/ (docs/http-api.md)",
            )
        return web.FileResponse(page, headers={"Cache-Control": "no-cache"})

    app.router.add_get("/", index)
    app.router.add_get("/index.html", index)
    if directory.is_dir():
        app.router.add_static("/console/", directory, follow_symlinks=False)
