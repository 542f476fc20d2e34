"""Durable state of a broker: the store interface and its implementations."""

from ternmq.store._base import (
    AddMessage,
    AddStaged,
    AddSubscription,
    MemoryStore,
    Op,
    Recovered,
    RemoveDestination,
    RemoveMessage,
    RemoveStaged,
    RemoveSubscription,
    ReserveSeq,
    SetDeliveryCount,
    SetSinkBatch,
    StagedRecord,
    Store,
    StoredMessage,
)

__all__ = [
    "AddMessage",
    "AddStaged",
    "AddSubscription",
    "MemoryStore",
    "Op",
    "Recovered",
    "RemoveDestination",
    "RemoveMessage",
    "RemoveStaged",
    "RemoveSubscription",
    "ReserveSeq",
    "SetDeliveryCount",
    "SetSinkBatch",
    "StagedRecord",
    "Store",
    "StoredMessage",
]
