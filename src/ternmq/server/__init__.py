"""The network broker: ``ternmq serve``, the native protocol over TCP/TLS, its config and its
security (see ``docs/operations.md`` and ``docs/protocol.md``)."""

from ternmq.server.app import BrokerServer, ServerThread, main
from ternmq.server.config import ServerConfig, load_config
from ternmq.server.security import hash_password

__all__ = ["BrokerServer", "ServerConfig", "ServerThread", "hash_password", "load_config", "main"]
