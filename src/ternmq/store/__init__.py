"""Durable state of a broker: the store interface and its implementations."""

from ternmq.store._base import (
    AddMessage,
    AddSubscription,
    MemoryStore,
    Op,
    Recovered,
    RemoveDestination,
    RemoveMessage,
    RemoveSubscription,
    SetDeliveryCount,
    Store,
    StoredMessage,
)

__all__ = [
    "AddMessage",
    "AddSubscription",
    "MemoryStore",
    "Op",
    "Recovered",
    "RemoveDestination",
    "RemoveMessage",
    "RemoveSubscription",
    "SetDeliveryCount",
    "Store",
    "StoredMessage",
]
