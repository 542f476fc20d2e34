"""ternmq: a JMS 2.0 message provider for Python.

The public names of ``API.md`` are importable from here; everything else is internal.
Besides them, ``ternmq.compiled()`` lists the modules that run compiled (a release build made
with ``TERNMQ_MYPYC=1``); ``TERNMQ_PURE_PYTHON=1`` runs the pure-Python sources instead.
"""

from __future__ import annotations

# First of all (its import installs the finder): under TERNMQ_PURE_PYTHON=1 every ternmq
# module below imports from its .py source.
from ternmq._variant import compiled as compiled
from ternmq._version import __version__
from ternmq.broker.embedded import EmbeddedBroker
from ternmq.client import (
    CompletionListener,
    Connection,
    ConnectionFactory,
    ConnectionMetaData,
    JMSConsumer,
    JMSContext,
    JMSProducer,
    MessageConsumer,
    MessageProducer,
    QueueBrowser,
    Session,
)
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
from ternmq.message import (
    BytesMessage,
    DeliveryMode,
    MapMessage,
    Message,
    ObjectMessage,
    StreamMessage,
    TextMessage,
)

__all__ = [
    "__version__",
    "BytesMessage",
    "CompletionListener",
    "Connection",
    "ConnectionFactory",
    "ConnectionMetaData",
    "DeliveryMode",
    "Destination",
    "EmbeddedBroker",
    "MapMessage",
    "Message",
    "MessageConsumer",
    "MessageProducer",
    "ObjectMessage",
    "QueueBrowser",
    "Session",
    "StreamMessage",
    "TextMessage",
    "IllegalStateException",
    "IllegalStateRuntimeException",
    "InvalidClientIDException",
    "InvalidClientIDRuntimeException",
    "InvalidDestinationException",
    "InvalidDestinationRuntimeException",
    "InvalidSelectorException",
    "InvalidSelectorRuntimeException",
    "JMSConsumer",
    "JMSContext",
    "JMSProducer",
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
