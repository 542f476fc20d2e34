"""The Python admin client (``ternmq.admin.Admin``) over every transport: destinations,
messages (browse, get, delete, move), connections and subscriptions, and the JMS exceptions
of bad input. Permission refusals: tests/cli/test_admin.py (a served broker with users) and
tests/unit/test_admin_requests_engine.py (the engine with an authorizer)."""

from __future__ import annotations

import pytest

from ternmq.admin import Admin
from ternmq.client import Connection, ConnectionFactory
from ternmq.destination import Queue, Topic
from ternmq.errors import (
    IllegalStateException,
    InvalidDestinationException,
    InvalidSelectorException,
    JMSException,
)

from ._helpers import Connect, new_session, receive, send, texts, wait_for

pytestmark = pytest.mark.also_failover


def _fill(conn: Connection, queue: Queue, *regions: str) -> list[str]:
    s = new_session(conn)
    p = s.create_producer(queue)
    ids = []
    for i, region in enumerate(regions):
        m = s.create_text_message(f"{region}{i}")
        m.set_string_property("region", region)
        p.send(m)
        assert m.jms_message_id is not None
        ids.append(m.jms_message_id)
    s.close()
    return ids


def test_destinations_create_stat_delete(connection: Connection) -> None:
    admin = Admin(connection)
    admin.create_destination("queue://adm.q")
    admin.create_destination(Topic("adm.t"))
    names = [d.name for d in admin.stat()]
    assert "queue://adm.q" in names and "topic://adm.t" in names
    with pytest.raises(IllegalStateException, match="exists already"):
        admin.create_destination(Queue("adm.q"))
    with pytest.raises(InvalidDestinationException, match="not a destination"):
        admin.create_destination("adm.q")
    _fill(connection, Queue("adm.q"), "EU", "US")
    assert admin.delete_destination("queue://adm.q") == 2
    assert admin.delete_destination("topic://adm.t") == 0
    with pytest.raises(InvalidDestinationException, match="does not exist"):
        admin.delete_destination("queue://adm.q")


def test_browse_get_delete_and_move(connection: Connection) -> None:
    admin = Admin(connection)
    dlq, orders = Queue("adm.dlq"), Queue("adm.orders")
    admin.create_destination(orders)
    ids = _fill(connection, dlq, "EU", "US", "EU", "US", "EU")
    page, more = admin.browse(dlq, limit=2)
    assert [h.message.get_body(str) for h in page] == ["EU0", "US1"] and more
    assert [h.id for h in page] == ids[:2]
    assert all(h.state == "ready" and h.delivery_count == 0 for h in page)
    page, more = admin.browse(dlq, "region = 'EU'", offset=1, limit=5)
    assert [h.message.get_body(str) for h in page] == ["EU2", "EU4"] and not more
    assert [h.id for h in admin.messages(dlq, page=2)] == ids  # all pages
    one = admin.get_message(dlq, ids[3])
    assert one.message.get_body(str) == "US3"
    assert one.message.get_string_property("region") == "US"
    admin.delete_message(dlq, ids[3])
    with pytest.raises(InvalidDestinationException, match="no message"):
        admin.get_message(dlq, ids[3])
    assert admin.move(dlq, orders, "region = 'EU'") == 3
    assert [h.id for h in admin.messages(dlq)] == [ids[1]]
    s = new_session(connection)
    connection.start()
    consumer = s.create_consumer(orders)
    moved = [receive(consumer) for _ in range(3)]
    assert texts(moved) == ["EU0", "EU2", "EU4"]
    assert [m.get_string_property("region") for m in moved] == ["EU"] * 3
    assert admin.move(dlq, orders) == 1
    assert admin.stat(dlq)[0].depth == 0


def test_bad_input_raises_the_jms_exception(connection: Connection) -> None:
    admin = Admin(connection)
    q = Queue("adm.bad")
    _fill(connection, q, "EU")
    admin.create_destination(Queue("adm.bad2"))
    admin.create_destination(Topic("adm.t2"))
    with pytest.raises(InvalidSelectorException):
        admin.browse(q, "region ===")
    with pytest.raises(InvalidSelectorException):
        admin.move(q, Queue("adm.bad2"), "region ===")
    with pytest.raises(InvalidDestinationException, match="is a topic"):
        admin.browse(Topic("adm.t2"), limit=1)
    with pytest.raises(InvalidDestinationException, match="is a topic"):
        admin.move(q, Topic("adm.t2"))
    with pytest.raises(InvalidDestinationException, match="does not exist"):
        admin.browse(Queue("adm.none"))
    with pytest.raises(InvalidDestinationException, match="both source and target"):
        admin.move(q, q)
    with pytest.raises(JMSException, match=r"limit 1\.\.500"):
        admin.browse(q, limit=0)
    with pytest.raises(InvalidDestinationException, match="no subscription"):
        admin.delete_subscription("sub:u::nothing")
    with pytest.raises(InvalidDestinationException, match="no open connection"):
        admin.close_connection("ID:999999")
    assert [h.message.get_body(str) for h in admin.messages(q)] == ["EU0"]  # unchanged


def test_connections_and_close(
    connect: Connect, factory: ConnectionFactory, transport: str
) -> None:
    mine = connect()
    admin = Admin(mine)
    other = factory.create_connection()
    other.client_id = "adm-other"
    try:
        s = new_session(other, 2)  # CLIENT_ACKNOWLEDGE
        other.start()
        q = Queue("adm.held")
        send(new_session(mine), q, "held")
        assert receive(s.create_consumer(q)).get_body(str) == "held"  # unacknowledged
        infos = {i.id: i for i in admin.connections()}
        info = infos[other.connection_id]
        assert (info.client_id, info.sessions, info.consumers) == ("adm-other", 1, 1)
        assert mine.connection_id in infos
        with pytest.raises(IllegalStateException, match="this very connection"):
            admin.close_connection(mine.connection_id)
        closed_id = other.connection_id
        before = set(infos)
        admin.close_connection(closed_id)
        assert closed_id not in {i.id for i in admin.connections()}
        # its unacknowledged message went back, redelivered (unless a failover client
        # already took it again on its new link)
        assert wait_for(lambda: _ended(admin, other, before, transport))
        if transport != "failover":
            (held,) = list(admin.messages(q))
            assert held.message.get_body(str) == "held" and held.delivery_count == 1
    finally:
        other.close()


def _ended(admin: Admin, conn: Connection, before: set[str], transport: str) -> bool:
    """Whether ``conn``, closed by an operator while the broker's connections were
    ``before``, has heard of it: it fails, or over failover it is back as a new broker
    connection (to a failover client a closed link is a lost one). (Over failover nothing
    is asked of it meanwhile: a request made while its link is down waits for the reconnect
    holding the connection's lock, which the reconnect needs: a known problem of the
    failover client.)"""
    if transport == "failover":
        return any(i.id not in before for i in admin.connections())
    try:
        conn.create_session().close()
    except JMSException:
        return True
    return False


def test_subscriptions_list_and_delete(connect: Connect) -> None:
    conn = connect("adm-subs")
    admin = Admin(conn)
    s = new_session(conn)
    durable = s.create_durable_consumer(Topic("adm.news"), "d", "n > 1")
    plain = s.create_consumer(Topic("adm.news"))
    subs = [x for x in admin.subscriptions() if x.topic == "topic://adm.news"]
    assert sorted((x.durable, x.name, x.consumers) for x in subs) == [
        (False, None, 1),
        (True, "d", 1),
    ]
    (d,) = [x for x in subs if x.durable]
    assert (d.client_id, d.selector) == ("adm-subs", "n > 1")
    (p,) = [x for x in subs if not x.durable]
    with pytest.raises(IllegalStateException, match="active consumer"):
        admin.delete_subscription(d.id)
    with pytest.raises(IllegalStateException, match="not durable"):
        admin.delete_subscription(p.id)
    durable.close()
    plain.close()
    admin.delete_subscription(d.id)
    assert not [x for x in admin.subscriptions() if x.topic == "topic://adm.news"]


def test_delete_destination_with_consumers(
    connect: Connect, factory: ConnectionFactory, transport: str
) -> None:
    admin = Admin(connect())
    holder = factory.create_connection()
    try:
        holder.create_session().create_consumer(Queue("adm.busy"))
        with pytest.raises(IllegalStateException, match="has consumers"):
            admin.delete_destination("queue://adm.busy")
        closed_id = holder.connection_id
        before = {i.id for i in admin.connections()}
        assert admin.delete_destination("queue://adm.busy", force=True) == 0
        assert closed_id not in {i.id for i in admin.connections()}
        assert wait_for(lambda: _ended(admin, holder, before, transport))
    finally:
        holder.close()
