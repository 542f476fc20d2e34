"""A small HTTP client for the listener's tests: one request, the status and the JSON."""

from __future__ import annotations

import base64
import http.client
import json
import urllib.parse
from collections.abc import Iterable
from typing import Any

TIMEOUT = 15.0


class Reply:
    """An HTTP answer: status, headers and body (``json()`` parses it)."""

    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body

    def json(self) -> Any:
        """The body as JSON."""
        return json.loads(self.body)

    def __repr__(self) -> str:
        return f"<Reply {self.status} {self.body[:300]!r}>"


class Http:
    """Requests to one HTTP listener (``http://HOST:PORT``), optionally with Basic credentials."""

    def __init__(self, url: str, user: str | None = None, password: str | None = None) -> None:
        parts = urllib.parse.urlsplit(url)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 80
        self.auth = None
        if user is not None:
            token = base64.b64encode(f"{user}:{password or ''}".encode()).decode()
            self.auth = f"Basic {token}"

    def as_user(self, user: str | None, password: str | None = None) -> Http:
        """The same listener with other credentials (None: anonymous)."""
        return Http(f"http://{self.host}:{self.port}", user, password)

    def request(
        self,
        method: str,
        path: str,
        body: object = None,
        *,
        raw: bytes | Iterable[bytes] | None = None,
        headers: dict[str, str] | None = None,
    ) -> Reply:
        """Send one request; ``body`` as JSON, or ``raw`` octets."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=TIMEOUT)
        try:
            hdrs = dict(headers or {})
            data = raw
            if body is not None:
                data = json.dumps(body).encode()
                hdrs.setdefault("Content-Type", "application/json")
            if self.auth is not None:
                hdrs.setdefault("Authorization", self.auth)
            chunked = hdrs.get("Transfer-Encoding") == "chunked"
            conn.request(method, path, body=data, headers=hdrs, encode_chunked=chunked)
            resp = conn.getresponse()
            return Reply(resp.status, dict(resp.getheaders()), resp.read())
        finally:
            conn.close()

    def get(self, path: str) -> Reply:
        """GET ``path``."""
        return self.request("GET", path)

    def post(self, path: str, body: object = None) -> Reply:
        """POST ``path`` with a JSON body."""
        return self.request("POST", path, body if body is not None else {})

    def delete(self, path: str) -> Reply:
        """DELETE ``path``."""
        return self.request("DELETE", path)


def q(name: str) -> str:
    """The API path of queue ``name``."""
    return f"/api/destinations/queue/{urllib.parse.quote(name, safe='')}"


def t(name: str) -> str:
    """The API path of topic ``name``."""
    return f"/api/destinations/topic/{urllib.parse.quote(name, safe='')}"
