"""Administrative requests over an open connection (used by the ``ternmq`` command line).

Not part of the JMS API: these helpers send the broker's admin requests (``Stat``,
``Purge``) on a :class:`~ternmq.client.connection.Connection` and turn the replies into
values or JMS exceptions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ternmq.client._util import check_reply, expect_reply
from ternmq.destination import Destination
from ternmq.errors import JMSException
from ternmq.protocol import commands as c

if TYPE_CHECKING:
    from ternmq.client.connection import Connection

__all__ = ["purge", "stat", "stat_result"]


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
    conn._check_open()
    reply = check_reply(conn.request(c.Purge(destination=str(destination))))
    if not isinstance(reply, c.Ok) or reply.value is None:
        raise JMSException(f"unexpected reply to Purge: {reply!r}")
    return int(reply.value)
