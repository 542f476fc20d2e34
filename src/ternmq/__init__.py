"""ternmq: a JMS 2.0 message provider for Python.

The public names of ``API.md`` are importable from here; everything else is internal.
"""

from __future__ import annotations

from ternmq.destination import (
    Destination,
    Queue,
    TemporaryQueue,
    TemporaryTopic,
    Topic,
    destination,
)
from ternmq.errors import (
    IllegalStateException,
    IllegalStateRuntimeException,
    InvalidClientIDException,
    InvalidClientIDRuntimeException,
    InvalidDestinationException,
    InvalidDestinationRuntimeException,
    InvalidSelectorException,
    InvalidSelectorRuntimeException,
    JMSException,
    JMSRuntimeException,
    JMSSecurityException,
    JMSSecurityRuntimeException,
    MessageEOFException,
    MessageFormatException,
    MessageFormatRuntimeException,
    MessageNotReadableException,
    MessageNotWriteableException,
    MessageNotWriteableRuntimeException,
    ResourceAllocationException,
    ResourceAllocationRuntimeException,
    TransactionInProgressException,
    TransactionInProgressRuntimeException,
    TransactionRolledBackException,
    TransactionRolledBackRuntimeException,
    UnsupportedOperationException,
)

__version__ = "0.1.0"

__all__ = [
    "Destination",
    "IllegalStateException",
    "IllegalStateRuntimeException",
    "InvalidClientIDException",
    "InvalidClientIDRuntimeException",
    "InvalidDestinationException",
    "InvalidDestinationRuntimeException",
    "InvalidSelectorException",
    "InvalidSelectorRuntimeException",
    "JMSException",
    "JMSRuntimeException",
    "JMSSecurityException",
    "JMSSecurityRuntimeException",
    "MessageEOFException",
    "MessageFormatException",
    "MessageFormatRuntimeException",
    "MessageNotReadableException",
    "MessageNotWriteableException",
    "MessageNotWriteableRuntimeException",
    "Queue",
    "ResourceAllocationException",
    "ResourceAllocationRuntimeException",
    "TemporaryQueue",
    "TemporaryTopic",
    "Topic",
    "TransactionInProgressException",
    "TransactionInProgressRuntimeException",
    "TransactionRolledBackException",
    "TransactionRolledBackRuntimeException",
    "UnsupportedOperationException",
    "destination",
]
