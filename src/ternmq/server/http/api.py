"""The JSON API under ``/api/`` (docs/http-api.md).

Theory of operation
-------------------
Each handler runs on the server's event loop, the broker's owner, so it calls the
operator's operations of ``broker/admin.py`` directly and synchronously. A change (create,
delete, purge, send, move) runs through ``admin.change``, and the handler answers only once
the change's store batch is durable (the engine's ordered output gate tells it), so a 2xx
means a persistent message deleted or moved stays so after a crash. Every handler asks for
the ``admin`` permission on the destination it reads or changes (``_auth.require_admin``);
the lists show only what the user may administer.

Errors are the engine's JMS exceptions, mapped once (:func:`_status`): unknown things 404,
conflicts 409, bad names, selectors and values 400, refusals 403, a full destination 503.

The overview's rates come from the counters: each overview request keeps a sample (time,
total enqueued, total dequeued) for :data:`RATE_WINDOW` seconds, and the rate is the change
since the oldest sample at least a second old; nothing runs between requests.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import collections
import json
import math
import time
from collections.abc import Callable
from typing import Any, Final

from aiohttp import web

from ternmq._version import __version__
from ternmq.broker import admin
from ternmq.broker._queue import INFLIGHT, READY, SCHEDULED, Entry
from ternmq.broker.engine import Broker
from ternmq.destination import Destination
from ternmq.errors import (
    InvalidSelectorException,
    JMSException,
    JMSSecurityException,
    ResourceAllocationException,
    TransactionRolledBackException,
)
from ternmq.message import BytesMessage, Message, TextMessage
from ternmq.protocol import commands as c
from ternmq.server.http._auth import (
    may_admin,
    require_admin,
    require_broker_admin,
    user_of,
)
from ternmq.server.http._base import ApiError, HttpHost, json_response
from ternmq.server.http._frontend import HttpFrontend

__all__ = ["RATE_WINDOW", "destination_json", "setup"]

RATE_WINDOW: Final = 10.0  # seconds of overview samples kept for the rates
PREVIEW_CHARS: Final = 120  # characters of a body shown in a browse summary
DEFAULT_PAGE: Final = 50
KINDS: Final = ("queue", "topic")
_STATES: Final = {READY: "ready", INFLIGHT: "in_flight", SCHEDULED: "scheduled"}


def _status(exc: JMSException) -> int:
    """The HTTP status of an engine refusal."""
    if isinstance(exc, admin.NotFound):
        return 404
    if isinstance(exc, admin.Conflict | TransactionRolledBackException):
        return 409
    if isinstance(exc, JMSSecurityException):
        return 403
    if isinstance(exc, ResourceAllocationException):
        return 503
    return 400  # bad names, selectors (InvalidSelectorException), values


def destination_json(st: c.DestinationStat) -> dict[str, object]:
    """The API's object of one destination (its counters)."""
    return {
        "name": st.name,
        "kind": st.kind,
        "depth": st.depth,
        "in_flight": st.in_flight,
        "scheduled": st.scheduled,
        "consumers": st.consumers,
        "enqueued": st.enqueued,
        "dequeued": st.dequeued,
        "expired": st.expired,
        "dead_lettered": st.dead_lettered,
        "redelivered": st.redelivered,
        "duplicates": st.duplicates,
        "memory_bytes": st.memory_bytes,
        "paged": st.paged,
        "subscriptions": len(st.subscriptions),
    }


def _plain(value: object) -> object:
    """A JSON value for a property or body item: octets as base64, non-finite floats as
    their text."""
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def _body_type(msg: Message) -> str:
    kind = type(msg).body_type
    return "none" if kind == "message" else kind


def _body(msg: Message) -> object:
    """The body as JSON: text, base64 octets, an object (map), a list (stream); never an
    ObjectMessage's pickle (the broker does not unpickle what clients send)."""
    if isinstance(msg, TextMessage):
        return msg.text
    if isinstance(msg, BytesMessage):
        return base64.b64encode(bytes(msg._buffer)).decode("ascii")
    kind = type(msg).body_type
    if kind == "map":
        return {k: _plain(v) for k, v in getattr(msg, "_map", {}).items()}
    if kind == "stream":
        return [_plain(v) for v in getattr(msg, "_items", [])]
    return None


def _preview(msg: Message) -> str:
    body = _body(msg)
    if body is None:
        return ""
    text = body if isinstance(body, str) else json.dumps(body, separators=(",", ":"))
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"


def _summary(e: Entry, msg: Message) -> dict[str, object]:
    return {
        "id": admin.message_id(e, msg),
        "timestamp": msg.jms_timestamp,
        "priority": e.stored.priority,
        "persistent": e.stored.persistent,
        "redelivered": e.count > 0 or msg.jms_redelivered,
        "delivery_count": e.count,
        "correlation_id": msg.jms_correlation_id,
        "type": msg.jms_type,
        "body_type": _body_type(msg),
        "size": e.stored.size,
        "preview": _preview(msg),
    }


def _detail(dest: Destination, e: Entry, msg: Message) -> dict[str, object]:
    reply_to = msg.jms_reply_to
    headers = {
        "JMSMessageID": msg.jms_message_id,
        "JMSTimestamp": msg.jms_timestamp,
        "JMSCorrelationID": msg.jms_correlation_id,
        "JMSReplyTo": str(reply_to) if reply_to is not None else None,
        "JMSDestination": str(msg.jms_destination) if msg.jms_destination else None,
        "JMSDeliveryMode": "PERSISTENT" if e.stored.persistent else "NON_PERSISTENT",
        "JMSRedelivered": e.count > 0 or msg.jms_redelivered,
        "JMSType": msg.jms_type,
        "JMSExpiration": e.stored.expiration,
        "JMSDeliveryTime": msg.jms_delivery_time,
        "JMSPriority": e.stored.priority,
        "JMSXDeliveryCount": e.count + 1,
    }
    props = {name: _plain(msg._properties[name]) for name in sorted(msg._properties)}
    return {
        "id": admin.message_id(e, msg),
        "destination": str(dest),
        "state": _STATES.get(e.state, "gone"),
        "size": e.stored.size,
        "headers": headers,
        "properties": props,
        "body_type": _body_type(msg),
        "body": _body(msg),
    }


class Api:
    """The handlers of the JSON API (see the module doc).

    Args:
        frontend: the HTTP listener.
    """

    def __init__(self, frontend: HttpFrontend) -> None:
        self.frontend = frontend
        self.host: HttpHost = frontend.host
        self._samples: collections.deque[tuple[float, int, int]] = collections.deque()

    # ---- plumbing ---------------------------------------------------------------------------
    @property
    def broker(self) -> Broker:
        """The broker (503 while the server stops)."""
        broker = self.host.broker
        if broker is None:
            if self.host.role == "backup":
                raise ApiError(503, "this server is a backup: ask the live server of its group")
            raise ApiError(503, "the broker is stopping: try again on a running broker")
        return broker

    def _dest(self, request: web.Request, *, exists: bool = True) -> Destination:
        """The destination of the path (``{kind}/{name}``) that the user may administer."""
        kind = request.match_info["kind"]
        name = request.match_info["name"]
        if kind not in KINDS:
            raise ApiError(400, f"unknown destination kind {kind!r}: use queue or topic")
        try:
            dest = admin.parse(f"{kind}://{name}")
        except JMSException as exc:
            raise ApiError(400, str(exc)) from None
        require_admin(self.host, request, dest)
        if exists:
            try:
                admin.existing(self.broker, dest)
            except JMSException as exc:
                raise ApiError(404, str(exc)) from None
        return dest

    async def _json(self, request: web.Request) -> dict[str, Any]:
        """The request's JSON object body (400 if it is not one)."""
        try:
            data = await request.json(loads=json.loads)
        except (ValueError, UnicodeDecodeError):
            raise ApiError(400, "the body is not valid JSON: send a JSON object") from None
        if not isinstance(data, dict):
            raise ApiError(400, "the body must be a JSON object")
        return data

    async def _change(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn`` as an admin change and wait until its store batch is durable."""
        broker = self.broker
        fut: asyncio.Future[c.Command] = self.host.loop.create_future()

        def done(cmd: c.Command) -> None:
            if not fut.done():
                fut.set_result(cmd)

        try:
            result = admin.change(broker, fn, done)
        except JMSException as exc:
            raise ApiError(_status(exc), str(exc)) from None
        finally:
            self.host.rearm()
        outcome = await fut
        if isinstance(outcome, c.Error):
            raise ApiError(500, outcome.message)
        return result

    def _read(self, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except JMSException as exc:
            raise ApiError(_status(exc), str(exc)) from None

    # ---- health and overview ----------------------------------------------------------------
    async def health(self, request: web.Request) -> web.StreamResponse:
        """``GET /api/health``."""
        if self.host.role == "backup":
            return json_response({"status": "waiting for the live lock", "role": "backup"}, 503)
        if self.host.broker is None:
            return json_response({"status": "stopped", "role": "live"}, 503)
        return json_response({"status": "ok", "role": "live"})

    async def overview(self, request: web.Request) -> web.StreamResponse:
        """``GET /api/overview``: totals over the destinations the user may administer."""
        broker = self.broker
        user = user_of(request)
        stats = [st for st in broker.stats() if self._visible(user, st)]
        enq = sum(st.enqueued for st in stats)
        deq = sum(st.dequeued for st in stats)
        now = time.monotonic()
        rates = self._rates(now, enq, deq)
        return json_response(
            {
                "version": __version__,
                "uptime_seconds": round(time.time() - self.frontend.started, 3),
                "connections": len(broker.connections),
                "destinations": len(stats),
                "messages": sum(st.depth for st in stats),
                "consumers": sum(st.consumers for st in stats),
                "enqueued": enq,
                "dequeued": deq,
                "rates": rates,
            }
        )

    def _visible(self, user: str | None, st: c.DestinationStat) -> bool:
        return may_admin(self.host, user, st.name, st.kind.startswith("temp-"))

    def _rates(self, now: float, enq: int, deq: int) -> dict[str, float]:
        samples = self._samples
        while samples and now - samples[0][0] > RATE_WINDOW:
            samples.popleft()
        base = None
        for sample in samples:
            if now - sample[0] >= 1.0:
                base = sample
        samples.append((now, enq, deq))
        if base is None:
            return {"enqueued_per_second": 0.0, "dequeued_per_second": 0.0}
        span = now - base[0]
        return {
            "enqueued_per_second": round(max(0, enq - base[1]) / span, 3),
            "dequeued_per_second": round(max(0, deq - base[2]) / span, 3),
        }

    # ---- destinations -----------------------------------------------------------------------
    async def list_destinations(self, request: web.Request) -> web.StreamResponse:
        """``GET /api/destinations``."""
        user = user_of(request)
        stats = self.broker.stats()
        return json_response([destination_json(st) for st in stats if self._visible(user, st)])

    async def create_destination(self, request: web.Request) -> web.StreamResponse:
        """``POST /api/destinations {"name": "queue://x"}``."""
        data = await self._json(request)
        name = data.get("name")
        if not isinstance(name, str):
            raise ApiError(400, 'give the destination as {"name": "queue://NAME"}')
        dest = self._read(lambda: admin.parse(name))
        require_admin(self.host, request, dest)
        broker = self.broker
        await self._change(lambda: admin.create_destination(broker, dest))
        return json_response(destination_json(broker.stat(dest)), 201)

    async def get_destination(self, request: web.Request) -> web.StreamResponse:
        """``GET /api/destinations/{kind}/{name}``."""
        dest = self._dest(request)
        return json_response(destination_json(self.broker.stat(dest)))

    async def delete_destination(self, request: web.Request) -> web.StreamResponse:
        """``DELETE /api/destinations/{kind}/{name}[?force=true]``: with force, the
        connections holding consumers on it are closed first."""
        dest = self._dest(request)
        broker = self.broker
        if _flag(request, "force"):
            ids = {conn.id for conn in admin.holders(broker, dest)}
            for gateway in list(self.host.connections):
                if gateway.conn is not None and gateway.conn.id in ids:
                    gateway.close(f"{dest} was deleted by an administrator", drop=True)
        await self._change(lambda: admin.delete_destination(broker, dest))
        return web.Response(status=204)

    async def purge(self, request: web.Request) -> web.StreamResponse:
        """``POST /api/destinations/{kind}/{name}/purge``."""
        dest = self._dest(request)
        broker = self.broker
        n = await self._change(lambda: admin.purge(broker, dest))
        return json_response({"purged": n})

    # ---- messages ---------------------------------------------------------------------------
    async def browse(self, request: web.Request) -> web.StreamResponse:
        """``GET .../messages?selector=S&offset=0&limit=50``."""
        dest = self._dest(request)
        offset = _int(request, "offset", 0)
        limit = _int(request, "limit", DEFAULT_PAGE)
        selector = request.query.get("selector") or None
        broker = self.broker
        try:
            page, more = admin.browse(broker, dest, selector, offset, limit)
        except InvalidSelectorException as exc:
            raise ApiError(400, f"bad selector: {exc}") from None
        except JMSException as exc:
            raise ApiError(_status(exc), str(exc)) from None
        return json_response(
            {
                "messages": [_summary(e, msg) for e, msg in page],
                "offset": offset,
                "limit": limit,
                "more": more,
            }
        )

    async def get_message(self, request: web.Request) -> web.StreamResponse:
        """``GET .../messages/{id}``."""
        dest = self._dest(request)
        mid = request.match_info["id"]
        e, msg = self._read(lambda: admin.find_message(self.broker, dest, mid))
        return json_response(_detail(dest, e, msg))

    async def delete_message(self, request: web.Request) -> web.StreamResponse:
        """``DELETE .../messages/{id}``."""
        dest = self._dest(request)
        mid = request.match_info["id"]
        broker = self.broker
        await self._change(lambda: admin.delete_message(broker, dest, mid))
        return web.Response(status=204)

    async def send(self, request: web.Request) -> web.StreamResponse:
        """``POST .../messages {"body": ..., "body_type": "text"|"bytes", ...}``."""
        dest = self._dest(request)
        data = await self._json(request)
        broker = self.broker
        msg = self._read(lambda: _message(data, broker.clock.now_ms()))
        user = user_of(request)
        mid = await self._change(lambda: admin.send(broker, user, dest, msg))
        return json_response({"id": mid}, 201)

    async def move(self, request: web.Request) -> web.StreamResponse:
        """``POST .../move {"to": "queue://orders", "selector": "..."}``."""
        source = self._dest(request)
        data = await self._json(request)
        to, selector = data.get("to"), data.get("selector")
        if not isinstance(to, str):
            raise ApiError(400, 'give the target as {"to": "queue://NAME"}')
        if selector is not None and not isinstance(selector, str):
            raise ApiError(400, "selector must be a string (a JMS message selector)")
        target = self._read(lambda: admin.parse(to))
        require_admin(self.host, request, target)
        broker = self.broker
        user = user_of(request)
        n = await self._change(lambda: admin.move(broker, user, source, target, selector))
        return json_response({"moved": n})

    # ---- connections ------------------------------------------------------------------------
    async def list_connections(self, request: web.Request) -> web.StreamResponse:
        """``GET /api/connections`` (needs ``admin`` on every destination)."""
        require_broker_admin(self.host, request, "list the connections")
        out = []
        for gw in self.host.connections:
            conn = gw.conn
            if conn is None or conn.closed:
                continue
            out.append(
                {
                    "id": conn.id,
                    "protocol": gw.protocol,
                    "user": conn.user,
                    "client_id": conn.client_id,
                    "address": gw.peer,
                    "listener": gw.scheme,
                    "connected_at": round(gw.connected_at, 3),
                    "sessions": len(conn.sessions),
                    "consumers": sum(len(s.consumers) for s in conn.sessions.values()),
                }
            )
        out.sort(key=lambda d: int(str(d["id"]).rpartition(":")[2] or 0))
        return json_response(out)

    async def close_connection(self, request: web.Request) -> web.StreamResponse:
        """``DELETE /api/connections/{id}``: close it (its unacknowledged messages go back)."""
        require_broker_admin(self.host, request, "close connections")
        cid = request.match_info["id"]
        for gw in list(self.host.connections):
            if gw.conn is not None and gw.conn.id == cid and not gw.conn.closed:
                gw.close("closed by an administrator", drop=True)
                return web.Response(status=204)
        raise ApiError(404, f"no open connection {cid!r}")

    # ---- subscriptions ----------------------------------------------------------------------
    async def list_subscriptions(self, request: web.Request) -> web.StreamResponse:
        """``GET /api/subscriptions``: those of topics the user may administer."""
        user = user_of(request)
        out = []
        for sub in admin.subscriptions(self.broker):
            if not may_admin(self.host, user, str(sub.topic), sub.topic.is_temporary):
                continue
            name = sub.key[1] if sub.key is not None else None
            out.append(
                {
                    "id": sub.queue.key,
                    "topic": str(sub.topic),
                    "name": name,
                    "client_id": sub.client_id,
                    "durable": sub.durable,
                    "shared": sub.shared,
                    "selector": sub.selector_text,
                    "consumers": len(sub.queue.consumers),
                    "depth": sub.queue.depth,
                }
            )
        return json_response(out)

    async def delete_subscription(self, request: web.Request) -> web.StreamResponse:
        """``DELETE /api/subscriptions/{id}``: a durable one without an active consumer."""
        sid = request.match_info["id"]
        broker = self.broker
        sub = self._read(lambda: admin.find_subscription(broker, sid))
        require_admin(self.host, request, sub.topic)
        await self._change(lambda: admin.delete_subscription(broker, sid))
        return web.Response(status=204)


def _flag(request: web.Request, name: str) -> bool:
    return request.query.get(name, "").lower() in ("1", "true", "yes")


def _int(request: web.Request, name: str, default: int) -> int:
    text = request.query.get(name)
    if text is None or text == "":
        return default
    try:
        return int(text)
    except ValueError:
        raise ApiError(400, f"{name}={text[:40]!r} is not a whole number") from None


def _message(data: dict[str, Any], now: int) -> Message:
    """The message a send request describes.

    Raises:
        ApiError: 400, a field has the wrong type or value.
        JMSException: a property name or value the message model refuses.
    """
    body_type = data.get("body_type", "text")
    body = data.get("body")
    msg: Message
    if body_type == "text":
        if body is not None and not isinstance(body, str):
            raise ApiError(400, 'a "text" body is a JSON string (or null)')
        msg = TextMessage(body)
    elif body_type == "bytes":
        if not isinstance(body, str):
            raise ApiError(400, 'a "bytes" body is a base64 JSON string')
        try:
            octets = base64.b64decode(body, validate=True)
        except binascii.Error:
            raise ApiError(400, 'a "bytes" body must be valid base64') from None
        bmsg = BytesMessage()
        bmsg.write_bytes(octets)
        bmsg.reset()
        msg = bmsg
    else:
        raise ApiError(400, f"body_type {str(body_type)[:20]!r}: use text or bytes")
    props = data.get("properties", {})
    if not isinstance(props, dict):
        raise ApiError(400, "properties must be a JSON object of name: value")
    for name, value in props.items():
        if not isinstance(value, bool | int | float | str | None):
            raise ApiError(400, f"property {name!r}: give a boolean, number, string or null")
        try:
            msg.set_object_property(name, value)
        except ValueError as exc:
            raise ApiError(400, f"property {name!r}: {exc}") from None
    persistent = data.get("persistent", True)
    priority = data.get("priority", 4)
    ttl = data.get("time_to_live_ms", 0)
    if not isinstance(persistent, bool):
        raise ApiError(400, "persistent must be true or false")
    if not isinstance(priority, int) or isinstance(priority, bool) or not 0 <= priority <= 9:
        raise ApiError(400, "priority must be a whole number 0..9")
    if not isinstance(ttl, int) or isinstance(ttl, bool) or ttl < 0:
        raise ApiError(400, "time_to_live_ms must be a whole number >= 0 (0: never expires)")
    for field in ("correlation_id", "type"):
        value = data.get(field)
        if value is not None and not isinstance(value, str):
            raise ApiError(400, f"{field} must be a string")
    msg.jms_delivery_mode = 2 if persistent else 1
    msg.jms_priority = priority
    msg.jms_expiration = now + ttl if ttl else 0
    msg.jms_correlation_id = data.get("correlation_id")
    msg.jms_type = data.get("type")
    return msg


def setup(app: web.Application, frontend: HttpFrontend) -> None:
    """Add the routes of the JSON API."""
    api = Api(frontend)
    dest = "/api/destinations/{kind}/{name}"
    r = app.router
    r.add_get("/api/health", api.health)
    r.add_get("/api/overview", api.overview)
    r.add_get("/api/destinations", api.list_destinations)
    r.add_post("/api/destinations", api.create_destination)
    r.add_get(dest, api.get_destination)
    r.add_delete(dest, api.delete_destination)
    r.add_post(dest + "/purge", api.purge)
    r.add_get(dest + "/messages", api.browse)
    r.add_post(dest + "/messages", api.send)
    r.add_get(dest + "/messages/{id}", api.get_message)
    r.add_delete(dest + "/messages/{id}", api.delete_message)
    r.add_post(dest + "/move", api.move)
    r.add_get("/api/connections", api.list_connections)
    r.add_delete("/api/connections/{id}", api.close_connection)
    r.add_get("/api/subscriptions", api.list_subscriptions)
    r.add_delete("/api/subscriptions/{id}", api.delete_subscription)
