"""Administrative requests over an open connection: the operator's operations of a broker.

Theory of operation
-------------------
Not part of the JMS API. Each function sends one of the broker's admin requests (``Stat``,
``Purge``, ``CreateDestination`` ... ``DeleteSubscription``: ``protocol/commands.py``) on a
:class:`~ternmq.client.connection.Connection` and turns the reply into values or the JMS
exception the broker named; :class:`Admin` binds them to one connection (the public face is
``ternmq.admin``, used by the ``ternmq`` command line). The broker checks the ``admin``
permission and answers a change once it is durable; nothing here caches or retries.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import TYPE_CHECKING, Literal

from ternmq.client._util import check_reply, expect_reply
from ternmq.destination import Destination
from ternmq.errors import JMSException
from ternmq.message import Message
from ternmq.message.codec import decode_message
from ternmq.protocol import commands as c

if TYPE_CHECKING:
    from ternmq.client.connection import Connection

__all__ = ["Admin", "HeldMessage", "purge", "stat", "stat_result"]


def stat(conn: Connection, destination: Destination | str | None = None) -> list[c.DestinationStat]:
    """The state of ``destination`` (or of every destination the user may administer, sorted
    by name).

    Raises:
        InvalidDestinationException: the destination does not exist or cannot be parsed.
        JMSSecurityException: the user may not administer the broker.
        IllegalStateException: the connection is closed.
        JMSException: the broker link failed.
    """
    return stat_result(conn, destination).destinations


def stat_result(conn: Connection, destination: Destination | str | None = None) -> c.StatResult:
    """:func:`stat`'s whole reply: the destinations, and how many were ``hidden`` because the
    user may not administer them.

    Raises:
        InvalidDestinationException: the destination does not exist or cannot be parsed.
        JMSSecurityException: the user may not administer the broker.
        IllegalStateException: the connection is closed.
        JMSException: the broker link failed.
    """
    conn._check_open()
    text = None if destination is None else str(destination)
    return expect_reply(conn.request(c.Stat(destination=text)), c.StatResult, "Stat")


def purge(conn: Connection, destination: Destination | str) -> int:
    """Remove every message of a queue that is not in flight; return how many went.

    Raises:
        InvalidDestinationException: the destination does not exist, is a topic or cannot be
            parsed.
        JMSSecurityException: the user may not administer the broker.
        IllegalStateException: the connection is closed.
        JMSException: the broker link failed or the store could not record the removal.
    """
    return _counted(conn, c.Purge(destination=str(destination)))


def _counted(conn: Connection, req: c.Request) -> int:
    """The count an ``Ok`` reply to ``req`` carries."""
    conn._check_open()
    reply = check_reply(conn.request(req))
    if not isinstance(reply, c.Ok) or reply.value is None:
        raise JMSException(f"unexpected reply to {type(req).__name__}: {reply!r}")
    return int(reply.value)


def _done(conn: Connection, req: c.Request) -> None:
    """Send ``req`` and wait for its ``Ok``."""
    conn._check_open()
    expect_reply(conn.request(req), c.Ok, type(req).__name__)


@dataclasses.dataclass(frozen=True, slots=True)
class HeldMessage:
    """A message a queue holds, as an operator sees it.

    Attributes:
        id: its name for :meth:`Admin.get_message` and :meth:`Admin.delete_message`: the
            JMSMessageID, or ``seq:N`` when its producer disabled message ids.
        state: ``ready``, ``scheduled`` (delivery delay) or ``in_flight`` (with a consumer).
        delivery_count: deliveries so far (0: never delivered).
        message: the message, read-only, with its headers and properties.
    """

    id: str
    state: Literal["ready", "scheduled", "in_flight"]
    delivery_count: int
    message: Message


def _held(m: c.AdminMessage) -> HeldMessage:
    return HeldMessage(
        id=m.id, state=m.state, delivery_count=m.delivery_count, message=decode_message(m.message)
    )


class Admin:
    """The operator's operations on the broker at the other end of ``connection``.

    Every call needs the ``admin`` permission on the destinations it names (listing and
    closing connections: on every destination); a change returns once the broker has made it
    durable. The connection stays the caller's: close it when done.

    Args:
        connection: an open connection (``vm://`` or ``tcp://``), of any user.

    Refusals raise the JMS exception the broker names: JMSSecurityException (no
    permission), InvalidDestinationException (an unknown or malformed destination, message
    or subscription, or a topic where a queue is needed), InvalidSelectorException,
    IllegalStateException (it exists, or is in use), TransactionRolledBackException (a move
    the target cannot take), IllegalStateException (the connection is closed),
    JMSException (the link failed).
    """

    def __init__(self, connection: Connection) -> None:
        self.connection = connection

    # ---- destinations -----------------------------------------------------------------------
    def stat(self, destination: Destination | str | None = None) -> list[c.DestinationStat]:
        """The counters of ``destination``, or of every destination the user may administer.

        Raises:
            InvalidDestinationException: it does not exist or cannot be parsed.
            JMSSecurityException: the user may not administer it.
        """
        return stat(self.connection, destination)

    def create_destination(self, destination: Destination | str) -> None:
        """Create queue or topic ``destination``.

        Raises:
            IllegalStateException: it exists.
            InvalidDestinationException: the name cannot be parsed, or is temporary.
            JMSSecurityException: the user may not administer it.
        """
        _done(self.connection, c.CreateDestination(destination=str(destination)))

    def delete_destination(self, destination: Destination | str, force: bool = False) -> int:
        """Delete ``destination`` with its messages (a topic: with its subscriptions);
        returns how many messages it held. With ``force`` the connections that have
        consumers on it are closed first; without, it is refused while it has any.

        Raises:
            InvalidDestinationException: it does not exist, or is temporary.
            IllegalStateException: it has consumers (and not ``force``).
            JMSSecurityException: the user may not administer it.
        """
        return _counted(
            self.connection, c.DeleteDestination(destination=str(destination), force=force)
        )

    def purge(self, destination: Destination | str) -> int:
        """Remove every message of a queue that is not in flight; returns how many went.

        Raises:
            InvalidDestinationException: it does not exist, or is a topic.
            JMSSecurityException: the user may not administer it.
        """
        return purge(self.connection, destination)

    # ---- messages ---------------------------------------------------------------------------
    def browse(
        self,
        destination: Destination | str,
        selector: str | None = None,
        offset: int = 0,
        limit: int = 50,
    ) -> tuple[list[HeldMessage], bool]:
        """One page of a queue's messages (ready, scheduled, in flight; in delivery order)
        that match ``selector``: those after the first ``offset`` matches, at most
        ``limit`` (1..500); and whether more follow. A page of large messages may hold
        fewer than ``limit``: continue at ``offset + len(page)``.

        Raises:
            InvalidDestinationException: the queue does not exist, or is a topic.
            InvalidSelectorException: the selector does not parse.
            JMSSecurityException: the user may not administer it.
            JMSException: ``offset`` or ``limit`` is out of range.
        """
        self.connection._check_open()
        req = c.BrowseMessages(
            destination=str(destination), selector=selector, offset=offset, limit=limit
        )
        page = expect_reply(self.connection.request(req), c.MessagePage, "BrowseMessages")
        return [_held(m) for m in page.messages], page.more

    def messages(
        self, destination: Destination | str, selector: str | None = None, page: int = 100
    ) -> Iterator[HeldMessage]:
        """Every message of a queue that matches ``selector``, fetched ``page`` at a time
        (a queue that changes meanwhile may show a message twice or skip one).

        Raises:
            as :meth:`browse`.
        """
        offset = 0
        while True:
            held, more = self.browse(destination, selector, offset, page)
            yield from held
            offset += len(held)
            if not more or not held:
                return

    def get_message(self, destination: Destination | str, message_id: str) -> HeldMessage:
        """The message ``message_id`` of a queue.

        Raises:
            InvalidDestinationException: the queue or the message does not exist, or it is
                a topic.
            JMSSecurityException: the user may not administer it.
        """
        self.connection._check_open()
        req = c.GetMessage(destination=str(destination), message_id=message_id)
        page = expect_reply(self.connection.request(req), c.MessagePage, "GetMessage")
        if len(page.messages) != 1:
            raise JMSException(f"unexpected reply to GetMessage: {len(page.messages)} messages")
        return _held(page.messages[0])

    def delete_message(self, destination: Destination | str, message_id: str) -> None:
        """Drop the message ``message_id`` of a queue (a persistent one leaves the store).

        Raises:
            InvalidDestinationException: the queue or the message does not exist, or it is
                a topic.
            IllegalStateException: the message is in flight to a consumer.
            JMSSecurityException: the user may not administer it.
        """
        _done(
            self.connection,
            c.DeleteMessage(destination=str(destination), message_id=message_id),
        )

    def move(
        self,
        source: Destination | str,
        target: Destination | str,
        selector: str | None = None,
    ) -> int:
        """Move the messages of queue ``source`` that are not in flight and match
        ``selector`` (every one for None) to queue ``target``, all or none, each with its
        headers and properties (the dead-letter queue's retry); returns how many moved.

        Raises:
            InvalidDestinationException: a queue does not exist, one is a topic, or they are
                the same.
            InvalidSelectorException: the selector does not parse.
            TransactionRolledBackException: ``target`` cannot take them all (none moved).
            JMSSecurityException: the user may not administer one of them.
        """
        req = c.MoveMessages(destination=str(source), target=str(target), selector=selector)
        return _counted(self.connection, req)

    # ---- connections and subscriptions ------------------------------------------------------
    def connections(self) -> list[c.ConnectionInfo]:
        """The open connections (this one included), by number.

        Raises:
            JMSSecurityException: the user lacks ``admin`` on every destination.
        """
        self.connection._check_open()
        reply = self.connection.request(c.ListConnections())
        return expect_reply(reply, c.ConnectionList, "ListConnections").connections

    def close_connection(self, connection_id: str) -> None:
        """Close connection ``connection_id`` (an ``ID:N`` of :meth:`connections`); its
        unacknowledged messages go back to their destinations.

        Raises:
            InvalidDestinationException: there is no such open connection.
            IllegalStateException: it is this admin's own connection.
            JMSSecurityException: the user lacks ``admin`` on every destination.
        """
        _done(self.connection, c.CloseConnection(connection_id=connection_id))

    def subscriptions(self) -> list[c.SubscriptionInfo]:
        """The subscriptions of the topics the user may administer, by topic and name.

        Raises:
            JMSException: the link failed.
        """
        return self.subscription_list().subscriptions

    def subscription_list(self) -> c.SubscriptionList:
        """:meth:`subscriptions`' whole reply: with how many were ``hidden`` (topics the user
        may not administer).

        Raises:
            JMSException: the link failed.
        """
        self.connection._check_open()
        reply = self.connection.request(c.ListSubscriptions())
        return expect_reply(reply, c.SubscriptionList, "ListSubscriptions")

    def delete_subscription(self, subscription_id: str) -> None:
        """Delete a durable subscription (an ``id`` of :meth:`subscriptions`) that has no
        active consumer, with its messages.

        Raises:
            InvalidDestinationException: there is no such subscription.
            IllegalStateException: it has an active consumer, or is not durable.
            JMSSecurityException: the user may not administer its topic.
        """
        _done(self.connection, c.DeleteSubscription(subscription_id=subscription_id))
