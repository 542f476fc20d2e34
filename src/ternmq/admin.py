"""The operator's operations on a running broker, from Python (not part of JMS).

Theory of operation
-------------------
A thin public face over ``ternmq.client._admin``: :class:`Admin` wraps an open
:class:`~ternmq.Connection` and sends the broker's admin requests on it (what ``ternmq stat``,
``purge``, ``move``, ``connections`` ... and the HTTP API do). The broker checks the ``admin``
permission of the connection's user on each destination concerned; refusals are the JMS
exceptions of ``ternmq.errors``. Example::

    from ternmq import ConnectionFactory
    from ternmq.admin import Admin

    with ConnectionFactory("tcp://127.0.0.1:61616").create_connection("ops", "pw") as conn:
        admin = Admin(conn)
        moved = admin.move("queue://DLQ", "queue://orders", "region = 'EU'")
"""

from __future__ import annotations

from ternmq.client._admin import Admin, HeldMessage
from ternmq.protocol.commands import ConnectionInfo, DestinationStat, SubscriptionInfo

__all__ = ["Admin", "ConnectionInfo", "DestinationStat", "HeldMessage", "SubscriptionInfo"]
