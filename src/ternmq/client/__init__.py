"""The JMS client API: classic (connection, session, producer, consumer, browser) and
simplified (context)."""

from ternmq.client.connection import Connection, ConnectionFactory, ConnectionMetaData
from ternmq.client.consumer import MessageConsumer, QueueBrowser
from ternmq.client.context import JMSConsumer, JMSContext, JMSProducer
from ternmq.client.producer import CompletionListener, MessageProducer
from ternmq.client.session import Session

__all__ = [
    "CompletionListener",
    "Connection",
    "ConnectionFactory",
    "ConnectionMetaData",
    "JMSConsumer",
    "JMSContext",
    "JMSProducer",
    "MessageConsumer",
    "MessageProducer",
    "QueueBrowser",
    "Session",
]
