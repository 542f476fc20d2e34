"""The operator's requests of the native protocol, answered with ``broker/admin.py``.

Theory of operation
-------------------
The engine runs these handlers as it runs every request (``Broker.handle``): a handler's
store operations join the request's batch, and its reply leaves through the engine's ordered
output gate, so a change is answered once it is durable, exactly as the HTTP API's changes
(which call the same functions of ``admin.py`` through ``admin.change``). The logic of each
operation lives in ``admin.py`` once; a handler only checks the permission, calls it and
shapes the reply.

Permissions are those of the HTTP API and of ``Stat``/``Purge``: the ``admin`` action on each
destination concerned (a move needs it on both queues); listing and closing connections needs
it on every destination (``>``), as they span them all. Without an authorizer everything is
allowed. A subscription list leaves out the topics the user may not administer and counts
them (``hidden``).

A browse page is bounded twice: at most ``limit`` messages (``admin.MAX_PAGE``), and it ends
early once its encoded messages pass :data:`PAGE_BYTES` (``more`` then says so, and the client
continues at ``offset + len(messages)``), so a page of large messages stays one modest frame.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, Protocol, runtime_checkable

from ternmq.broker import admin
from ternmq.broker._ports import AdminEngine
from ternmq.broker._queue import INFLIGHT, SCHEDULED, Entry
from ternmq.broker._records import BrokerConnection
from ternmq.destination import Destination
from ternmq.errors import IllegalStateException, JMSSecurityException
from ternmq.protocol import commands as c

__all__ = ["HANDLERS", "PAGE_BYTES"]

PAGE_BYTES: Final = 1 << 20  # encoded message octets after which a browse page ends early


@runtime_checkable
class _BrokerWide(Protocol):
    """An authorizer that can say whether a user holds an action on every destination
    (the server's ``security.Authorizer``)."""

    def grants_everything(self, user: str | None, action: str) -> bool:
        """Whether ``user`` holds ``action`` (or ``admin``) on every destination."""
        ...


def _who(conn: BrokerConnection) -> str:
    return f"user {conn.user!r}" if conn.user is not None else "an anonymous connection"


def _may(broker: AdminEngine, conn: BrokerConnection, dest: Destination) -> bool:
    auth = broker.authorizer
    return auth is None or dest.is_temporary or auth(conn.user, "admin", str(dest))


def _dest(broker: AdminEngine, conn: BrokerConnection, text: str) -> Destination:
    """The destination ``text`` names, which ``conn``'s user may administer (it need not
    exist: the operation says so).

    Raises:
        InvalidDestinationException: ``text`` is not a destination name.
        JMSSecurityException: the user lacks ``admin`` on it.
    """
    dest = admin.parse(text)
    if not _may(broker, conn, dest):
        raise JMSSecurityException(
            f"{_who(conn)} is not allowed to administer {dest}: grant it the 'admin' "
            "permission on that destination"
        )
    return dest


def _require_broker_admin(broker: AdminEngine, conn: BrokerConnection, what: str) -> None:
    """Refuse unless ``conn``'s user holds ``admin`` on every destination (with an authorizer
    that cannot tell, on every destination that exists).

    Raises:
        JMSSecurityException: it does not.
    """
    auth = broker.authorizer
    if auth is None:
        return
    if isinstance(auth, _BrokerWide):
        allowed = auth.grants_everything(conn.user, "admin")
    else:
        allowed = all(_may(broker, conn, d) for d in (*broker.queues, *broker.topics))
    if not allowed:
        raise JMSSecurityException(
            f"{_who(conn)} may not {what}: that needs the 'admin' permission on every "
            "destination (pattern '>')"
        )


def _count(corr: int, n: int) -> c.Ok:
    return c.Ok(corr=corr, value=str(n))


# ---- destinations ---------------------------------------------------------------------------
def on_create_destination(
    broker: AdminEngine, conn: BrokerConnection, req: c.CreateDestination
) -> c.Reply:
    """``CreateDestination``: see ``admin.create_destination``."""
    admin.create_destination(broker, _dest(broker, conn, req.destination))
    return c.Ok(corr=req.corr)


def on_delete_destination(
    broker: AdminEngine, conn: BrokerConnection, req: c.DeleteDestination
) -> c.Reply:
    """``DeleteDestination``: see ``admin.delete_destination``; with ``force`` the
    connections holding consumers on it are closed first (not the asker's own)."""
    dest = admin.existing(broker, _dest(broker, conn, req.destination))
    if req.force and not dest.is_temporary:  # (a temporary one is refused below)
        holders = admin.holders(broker, dest)
        if any(h is conn for h in holders):
            raise IllegalStateException(
                f"this connection has a consumer on {dest}: close it before deleting {dest}"
            )
        for holder in holders:
            broker.close_connection(holder, f"{dest} was deleted by an administrator")
    return _count(req.corr, admin.delete_destination(broker, dest))


# ---- messages -------------------------------------------------------------------------------
def _held(e: Entry, mid: str, data: bytes) -> c.AdminMessage:
    state: Any = (
        "in_flight" if e.state == INFLIGHT else "scheduled" if e.state == SCHEDULED else "ready"
    )
    return c.AdminMessage(id=mid, state=state, delivery_count=e.count, message=data)


def on_browse_messages(
    broker: AdminEngine, conn: BrokerConnection, req: c.BrowseMessages
) -> c.Reply:
    """``BrowseMessages``: see ``admin.browse`` and the module doc (the page's byte bound)."""
    dest = _dest(broker, conn, req.destination)
    page, more = admin.browse(broker, dest, req.selector, req.offset, req.limit)
    out: list[c.AdminMessage] = []
    size = 0
    for e, msg in page:
        if size >= PAGE_BYTES:
            more = True
            break
        data = broker.data(e)
        size += len(data)
        out.append(_held(e, admin.message_id(e, msg), data))
    return c.MessagePage(corr=req.corr, messages=out, more=more)


def on_get_message(broker: AdminEngine, conn: BrokerConnection, req: c.GetMessage) -> c.Reply:
    """``GetMessage``: see ``admin.find_message``."""
    dest = _dest(broker, conn, req.destination)
    e, msg = admin.find_message(broker, dest, req.message_id)
    held = _held(e, admin.message_id(e, msg), broker.data(e))
    return c.MessagePage(corr=req.corr, messages=[held])


def on_delete_message(broker: AdminEngine, conn: BrokerConnection, req: c.DeleteMessage) -> c.Reply:
    """``DeleteMessage``: see ``admin.delete_message``."""
    admin.delete_message(broker, _dest(broker, conn, req.destination), req.message_id)
    return c.Ok(corr=req.corr)


def on_move_messages(broker: AdminEngine, conn: BrokerConnection, req: c.MoveMessages) -> c.Reply:
    """``MoveMessages``: see ``admin.move`` (``admin`` on both queues)."""
    source = _dest(broker, conn, req.destination)
    target = _dest(broker, conn, req.target)
    return _count(req.corr, admin.move(broker, conn.user, source, target, req.selector))


# ---- connections ----------------------------------------------------------------------------
def _number(cid: str) -> int:
    tail = cid.rpartition(":")[2]
    return int(tail) if tail.isdigit() else 0


def on_list_connections(
    broker: AdminEngine, conn: BrokerConnection, req: c.ListConnections
) -> c.Reply:
    """``ListConnections``: every open connection, by number."""
    _require_broker_admin(broker, conn, "list the connections")
    out = [
        c.ConnectionInfo(
            id=other.id,
            protocol=other.protocol,
            user=other.user,
            client_id=other.client_id,
            address=other.address,
            connected_at=other.connected_at,
            sessions=len(other.sessions),
            consumers=sum(len(s.consumers) for s in other.sessions.values()),
        )
        for other in broker.connections.values()
        if not other.closed
    ]
    out.sort(key=lambda info: _number(info.id))
    return c.ConnectionList(corr=req.corr, connections=out)


def on_close_connection(
    broker: AdminEngine, conn: BrokerConnection, req: c.CloseConnection
) -> c.Reply:
    """``CloseConnection``: its unacknowledged messages go back; the asker's own connection
    is refused (close it as a client does)."""
    _require_broker_admin(broker, conn, "close connections")
    other = broker.connections.get(req.connection_id)
    if other is None or other.closed:
        raise admin.NotFound(f"no open connection {req.connection_id!r}")
    if other is conn:
        raise IllegalStateException(
            "that is this very connection: close it with Connection.close() instead"
        )
    broker.close_connection(other, "closed by an administrator")
    return c.Ok(corr=req.corr)


# ---- subscriptions --------------------------------------------------------------------------
def on_list_subscriptions(
    broker: AdminEngine, conn: BrokerConnection, req: c.ListSubscriptions
) -> c.Reply:
    """``ListSubscriptions``: those of the topics the user may administer."""
    out: list[c.SubscriptionInfo] = []
    hidden = 0
    for sub in admin.subscriptions(broker):
        if not _may(broker, conn, sub.topic):
            hidden += 1
            continue
        out.append(
            c.SubscriptionInfo(
                id=sub.queue.key,
                topic=str(sub.topic),
                name=sub.key[1] if sub.key is not None else None,
                client_id=sub.client_id,
                durable=sub.durable,
                shared=sub.shared,
                selector=sub.selector_text,
                consumers=len(sub.queue.consumers),
                depth=sub.queue.depth,
            )
        )
    return c.SubscriptionList(corr=req.corr, subscriptions=out, hidden=hidden)


def on_delete_subscription(
    broker: AdminEngine, conn: BrokerConnection, req: c.DeleteSubscription
) -> c.Reply:
    """``DeleteSubscription``: see ``admin.delete_subscription`` (``admin`` on its topic)."""
    sub = admin.find_subscription(broker, req.subscription_id)
    _dest(broker, conn, str(sub.topic))
    admin.delete_subscription(broker, req.subscription_id)
    return c.Ok(corr=req.corr)


HANDLERS: dict[type, Callable[[AdminEngine, BrokerConnection, Any], c.Reply | None]] = {
    c.CreateDestination: on_create_destination,
    c.DeleteDestination: on_delete_destination,
    c.BrowseMessages: on_browse_messages,
    c.GetMessage: on_get_message,
    c.DeleteMessage: on_delete_message,
    c.MoveMessages: on_move_messages,
    c.ListConnections: on_list_connections,
    c.CloseConnection: on_close_connection,
    c.ListSubscriptions: on_list_subscriptions,
    c.DeleteSubscription: on_delete_subscription,
}
