"""The operator's requests of the native protocol on the engine itself: the ``admin``
permission (a plain callable authorizer and the server's ``Authorizer``), the byte bound of a
browse page, the wire encoding, and error kinds a client can raise."""

from __future__ import annotations

import pytest

from ternmq.broker import _admin_requests
from ternmq.broker.engine import Broker, BrokerConnection
from ternmq.errors import IllegalStateException, InvalidDestinationException, JMSSecurityException
from ternmq.message import TextMessage
from ternmq.message.codec import decode_message, encode_message
from ternmq.protocol import commands as c
from ternmq.protocol import frames
from ternmq.server.security import Authorizer


class _Client:
    """One connection to ``broker`` as ``user``, with a session."""

    def __init__(self, broker: Broker, user: str | None) -> None:
        self.out: list[c.Command] = []
        self.broker = broker
        self.conn: BrokerConnection = broker.connect(self.out.append)
        self.corr = 0
        self.call(c.Connect(user=user))
        self.call(c.CreateSession(session_id=1))

    def call(self, req: c.Request) -> c.Command:
        self.corr += 1
        self.broker.handle(self.conn, type(req)(**{**_fields(req), "corr": self.corr}))
        (reply,) = [x for x in self.out if getattr(x, "corr", None) == self.corr]
        return reply

    def send(self, dest: str, text: str) -> None:
        msg = TextMessage(text)
        reply = self.call(
            c.Send(session_id=1, destination=dest, message=encode_message(msg), persistent=False)
        )
        assert isinstance(reply, c.Ok), reply


def _fields(req: c.Request) -> dict[str, object]:
    return {f: getattr(req, f) for f in req.__struct_fields__}


def _refused(reply: c.Command, kind: type[Exception], *fragments: str) -> None:
    assert isinstance(reply, c.Error), reply
    assert reply.kind == kind.__name__, reply
    for fragment in fragments:
        assert fragment in reply.message, reply.message


def test_the_admin_permission_per_destination_with_a_plain_authorizer() -> None:
    """A plain ``(user, action, dest) -> bool`` authorizer: each destination named needs
    ``admin``; connections need it on every destination that exists."""

    def authorizer(user: str | None, action: str, dest: str) -> bool:
        return action != "admin" or user == "root" or dest.startswith("queue://ops.")

    broker = Broker(authorizer=authorizer)
    root, ops = _Client(broker, "root"), _Client(broker, "ops")
    root.send("queue://secret", "s")
    assert ops.call(c.CreateDestination(destination="queue://ops.a")) == c.Ok(corr=ops.corr)
    for req in (
        c.CreateDestination(destination="queue://other"),
        c.DeleteDestination(destination="queue://secret"),
        c.BrowseMessages(destination="queue://secret"),
        c.GetMessage(destination="queue://secret", message_id="ID:x"),
        c.DeleteMessage(destination="queue://secret", message_id="ID:x"),
        c.MoveMessages(destination="queue://secret", target="queue://ops.a"),
        c.MoveMessages(destination="queue://ops.a", target="queue://secret"),
    ):
        _refused(ops.call(req), JMSSecurityException, "user 'ops'", "'admin' permission")
    _refused(ops.call(c.ListConnections()), JMSSecurityException, "may not list the connections")
    _refused(
        ops.call(c.CloseConnection(connection_id=root.conn.id)),
        JMSSecurityException,
        "may not close connections",
    )
    assert not root.conn.closed
    listing = root.call(c.ListConnections())
    assert isinstance(listing, c.ConnectionList)
    assert [i.id for i in listing.connections] == [root.conn.id, ops.conn.id]
    assert [i.user for i in listing.connections] == ["root", "ops"]
    page = root.call(c.BrowseMessages(destination="queue://secret"))
    assert isinstance(page, c.MessagePage) and len(page.messages) == 1
    # A grant on every existing destination is enough for the plain authorizer.
    assert root.call(c.DeleteDestination(destination="queue://secret")) == c.Ok(
        corr=root.corr, value="1"
    )
    assert isinstance(ops.call(c.ListConnections()), c.ConnectionList)


def test_the_server_authorizer_asks_for_the_everything_pattern() -> None:
    auth = Authorizer({"root": {"admin": [">"]}, "ops": {"admin": ["queue://>", "topic://>"]}})
    broker = Broker(authorizer=auth)
    root, ops = _Client(broker, "root"), _Client(broker, "ops")
    assert isinstance(root.call(c.ListConnections()), c.ConnectionList)
    # queue://> and topic://> cover every destination too, but not as the pattern '>'
    _refused(ops.call(c.ListConnections()), JMSSecurityException, "pattern '>'")
    hidden_sub = _Client(broker, "root")
    hidden_sub.call(c.SetClientId(client_id="c"))
    reply = hidden_sub.call(
        c.CreateConsumer(
            session_id=1, consumer_id=1, destination="topic://t", subscription="s", kind="durable"
        )
    )
    assert isinstance(reply, c.Ok), reply
    nobody = Authorizer({"root": {"admin": [">"]}})
    broker.authorizer = nobody
    subs = ops.call(c.ListSubscriptions())
    assert subs == c.SubscriptionList(corr=ops.corr, subscriptions=[], hidden=1)


def test_a_browse_page_ends_early_past_its_byte_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_admin_requests, "PAGE_BYTES", 1000)
    broker = Broker()
    client = _Client(broker, None)
    for i in range(5):
        client.send("queue://big", f"{i}" + "x" * 600)
    page = client.call(c.BrowseMessages(destination="queue://big", limit=5))
    assert isinstance(page, c.MessagePage)
    assert len(page.messages) == 2 and page.more  # 2 x ~650 octets pass 1000
    rest = client.call(c.BrowseMessages(destination="queue://big", offset=2, limit=5))
    assert isinstance(rest, c.MessagePage)
    texts = [decode_message(m.message).get_body(str) for m in page.messages + rest.messages]
    assert [str(t)[0] for t in texts[:4]] == ["0", "1", "2", "3"]


def test_internal_errors_reach_the_client_as_their_public_class() -> None:
    broker = Broker()
    client = _Client(broker, None)
    client.call(c.CreateDestination(destination="queue://x"))
    _refused(client.call(c.CreateDestination(destination="queue://x")), IllegalStateException)
    _refused(
        client.call(c.GetMessage(destination="queue://nope", message_id="ID:1")),
        InvalidDestinationException,
        "does not exist",
    )
    _refused(
        client.call(c.CloseConnection(connection_id=client.conn.id)),
        IllegalStateException,
        "this very connection",
    )


def test_admin_commands_round_trip_on_the_wire() -> None:
    cmds: list[frames.WireCommand] = [
        c.CreateDestination(corr=1, destination="queue://q"),
        c.DeleteDestination(corr=2, destination="topic://t", force=True),
        c.BrowseMessages(corr=3, destination="queue://q", selector="a = 1", offset=5, limit=9),
        c.GetMessage(corr=4, destination="queue://q", message_id="seq:7"),
        c.DeleteMessage(corr=5, destination="queue://q", message_id="ID:1"),
        c.MoveMessages(corr=6, destination="queue://a", target="queue://b", selector=None),
        c.ListConnections(corr=7),
        c.CloseConnection(corr=8, connection_id="ID:3"),
        c.ListSubscriptions(corr=9),
        c.DeleteSubscription(corr=10, subscription_id="sub:u:c:s"),
        c.MessagePage(
            corr=3,
            messages=[c.AdminMessage(id="ID:1", state="in_flight", delivery_count=2, message=b"m")],
            more=True,
        ),
        c.ConnectionList(
            corr=7, connections=[c.ConnectionInfo(id="ID:1", protocol="native", address="h:1")]
        ),
        c.SubscriptionList(
            corr=9, subscriptions=[c.SubscriptionInfo(id="s", topic="topic://t")], hidden=2
        ),
    ]
    decoder = frames.FrameDecoder()
    assert decoder.feed(b"".join(frames.encode(x) for x in cmds)) == cmds
