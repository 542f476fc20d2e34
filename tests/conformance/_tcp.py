"""The ``tcp`` transport of the conformance suite: a real network server per broker.

:class:`ServerBroker` stands in for :class:`~ternmq.transport.vm.EmbeddedBroker` when a test
runs over tcp. It runs the server of ``ternmq serve`` (:class:`~ternmq.server.app.BrokerServer`,
its asyncio/uvloop event loop, the native protocol, a SqliteStore in a fresh data directory)
on a thread of the test process, listening on 127.0.0.1 port 0; clients reach it through
:class:`~ternmq.transport.tcp.TcpTransport` over a real socket.

Why in-process and not one ``ternmq serve`` subprocess: tests need a fresh broker each (they
reuse names such as ``Q`` and client ids, and many set broker settings, users or an explicit
store), and a server process costs ~0.35 s of interpreter start-up, x ~600 tests. An
in-process server starts in milliseconds and takes the same settings objects as the
embedded broker; ``tests/transport/test_tcp_server.py`` covers the command-line server
itself. Broker internals (``broker.broker``) are the server's engine, read from the test
thread as the vm tests read theirs. What stays vm-only carries ``@pytest.mark.vm_only``: the
fake clock (it would have to drive both the server's timers and the client's clock), and
CONS-06 across two connections (``receive_no_wait`` would need a round trip to the broker
to see a delivery still in flight on the other socket).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ternmq.broker.config import BrokerConfig
from ternmq.broker.engine import Broker
from ternmq.server.app import ServerThread
from ternmq.server.config import Limits, ListenerConfig, ServerConfig, UserConfig
from ternmq.server.security import hash_password
from ternmq.store import Store

# Settings of EmbeddedBroker that are not BrokerConfig fields, and where they go on a server.
_SERVER_FIELDS = ("fsync", "fsync_interval")


class ServerBroker:
    """A network broker with the embedded broker's test-facing surface: ``url``, ``broker``
    (the engine, for the few tests that inspect it), ``stop()`` and ``start()`` (a restart on
    the same port and the same store or data directory).

    Args:
        data_dir: the SqliteStore directory (unless ``settings`` has ``store``).
        settings: what ``make_broker(**settings)`` got: BrokerConfig and destination-policy
            fields, ``users`` ({name: password}), ``store``, ``fsync``, ``fsync_interval``,
            ``data_dir``.

    Raises:
        TypeError: ``clock`` (a fake clock cannot drive a server: mark the test vm_only).
    """

    def __init__(self, data_dir: str, **settings: Any) -> None:
        if "clock" in settings:
            raise TypeError(
                "a fake clock cannot drive a network server: mark the test "
                "@pytest.mark.vm_only('fake clock')"
            )
        self._store: Store | None = settings.pop("store", None)
        data_dir = str(settings.pop("data_dir", data_dir))
        users = settings.pop("users", None) or {}
        server_kw = {k: settings.pop(k) for k in _SERVER_FIELDS if k in settings}
        limits = Limits(max_connections=int(settings.get("max_connections", 0)))
        broker = BrokerConfig.from_settings(**settings)
        self.config = ServerConfig(
            listeners=(ListenerConfig(bind="127.0.0.1", port=0),),
            data_dir=data_dir,
            limits=limits,
            broker=broker,
            users={
                name: UserConfig(password=hash_password(pw, n=2**4)) for name, pw in users.items()
            },
            log_level="warning",
            **server_kw,
        )
        self._thread: ServerThread | None = None
        self.url = ""

    def start(self) -> ServerBroker:
        """Start the server (again: on the same port, store and data directory)."""
        if self._thread is None:
            kwargs: dict[str, Any] = {} if self._store is None else {"store": self._store}
            self._thread = ServerThread(self.config, **kwargs).start()
            if not self.url:
                self.url = self._thread.url
                port = int(self.url.rsplit(":", 1)[1])
                listener = dataclasses.replace(self.config.listeners[0], port=port)
                self.config = dataclasses.replace(self.config, listeners=(listener,))
        return self

    def stop(self) -> None:
        """Stop the server gracefully (every client is told ``ConnectionFailed``)."""
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.stop()

    @property
    def broker(self) -> Broker | None:
        """The server's engine while it runs (read-only use: it belongs to the loop thread)."""
        return self._thread.server.broker if self._thread is not None else None
