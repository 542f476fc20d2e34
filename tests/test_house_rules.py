"""House rules that a test can check: the public surface and the purity of the core."""

from __future__ import annotations

import ast
import pathlib

import ternmq

SRC = pathlib.Path(ternmq.__file__).resolve().parent

PUBLIC = {
    # API.md: factory, connection, session, producer, consumer, browser, context
    "ConnectionFactory",
    "Connection",
    "ConnectionMetaData",
    "Session",
    "MessageProducer",
    "MessageConsumer",
    "QueueBrowser",
    "CompletionListener",
    "JMSContext",
    "JMSProducer",
    "JMSConsumer",
    "EmbeddedBroker",
    # destinations
    "Destination",
    "Queue",
    "Topic",
    "TemporaryQueue",
    "TemporaryTopic",
    "destination",
    # messages and constants
    "Message",
    "TextMessage",
    "BytesMessage",
    "MapMessage",
    "StreamMessage",
    "ObjectMessage",
    "DeliveryMode",
    # exceptions (EXC-01, EXC-02)
    "JMSException",
    "JMSRuntimeException",
    "IllegalStateException",
    "IllegalStateRuntimeException",
    "InvalidClientIDException",
    "InvalidClientIDRuntimeException",
    "InvalidDestinationException",
    "InvalidDestinationRuntimeException",
    "InvalidSelectorException",
    "InvalidSelectorRuntimeException",
    "JMSSecurityException",
    "JMSSecurityRuntimeException",
    "MessageEOFException",
    "MessageFormatException",
    "MessageFormatRuntimeException",
    "MessageNotReadableException",
    "MessageNotWriteableException",
    "MessageNotWriteableRuntimeException",
    "ResourceAllocationException",
    "ResourceAllocationRuntimeException",
    "TransactionInProgressException",
    "TransactionInProgressRuntimeException",
    "TransactionRolledBackException",
    "TransactionRolledBackRuntimeException",
    "UnsupportedOperationException",
    "__version__",
}


def test_public_names_are_pinned() -> None:
    """STYLE rule 7: ``ternmq.__all__`` is exactly the API.md surface, and each name imports."""
    assert set(ternmq.__all__) == PUBLIC
    for name in PUBLIC:
        assert getattr(ternmq, name) is not None


FORBIDDEN = {
    "socket",
    "asyncio",
    "threading",
    "time",
    "logging",
    "selectors",
    "ssl",
    "subprocess",
    "multiprocessing",
    "concurrent",
}


def _imports(path: pathlib.Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


def test_pure_packages_do_no_io() -> None:
    """STYLE rule 1: message/, selector/ and protocol/ import no socket, thread, clock or log."""
    for package in ("message", "selector", "protocol"):
        for path in (SRC / package).rglob("*.py"):
            bad = _imports(path) & FORBIDDEN
            assert not bad, f"{path.relative_to(SRC)} imports {sorted(bad)}"


def test_broker_core_has_no_io() -> None:
    """ARCHITECTURE: broker/ is synchronous, lock-free code (the clock module aside, and the
    embedded host, whose owner context is a lock and whose timer is a thread)."""
    for path in (SRC / "broker").rglob("*.py"):
        if path.name in ("clock.py", "embedded.py"):
            continue
        bad = _imports(path) & (FORBIDDEN - {"time"})
        assert not bad, f"{path.relative_to(SRC)} imports {sorted(bad)}"


def test_xa_01_asf_01_not_offered() -> None:
    """XA-01 (S-XA-1), ASF-01: ternmq v1 offers no XA and no application-server facilities, so
    it exposes none of their names; local transactions still work (covered by the TX suite).
    The "MUST if offered" items XA-02..XA-05 and ASF-02..ASF-07 therefore do not apply."""
    for name in (
        "XAConnectionFactory",
        "XAConnection",
        "XASession",
        "XAJMSContext",
        "ServerSessionPool",
        "ServerSession",
        "ConnectionConsumer",
    ):
        assert not hasattr(ternmq, name)
    from ternmq.client import Connection

    for name in (
        "create_connection_consumer",
        "create_durable_connection_consumer",
        "create_shared_connection_consumer",
        "create_shared_durable_connection_consumer",
    ):
        assert not hasattr(Connection, name)


def test_spark_is_optional() -> None:
    """Only ``ternmq.spark`` (the extra ``ternmq[spark]``) may import pyspark, pyarrow or py4j:
    ``import ternmq`` and every other module work without them."""
    optional = {"pyspark", "pyarrow", "py4j"}
    for path in SRC.rglob("*.py"):
        if (SRC / "spark") in path.parents:
            continue
        bad = _imports(path) & optional
        assert not bad, f"{path.relative_to(SRC)} imports {sorted(bad)}"
