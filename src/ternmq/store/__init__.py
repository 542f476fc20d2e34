"""Durable state of a broker: the store interface, its implementations, and
:func:`open_store`, the one place a broker's store is built.

What lives where: ``_base.py`` the interface (``Store``, the operation values, what
``load`` returns) and ``MemoryStore``; ``_writer.py`` group commit, the writer thread and
owner commits for any transactional store (``GroupCommitWriter`` and the ``Backend``
protocol a store implements to use it); ``sqlite.py`` the embedded SQLite store, the first
such backend. A new kind of store implements ``Store`` (and ``Backend`` if it commits
transactions) and gets a scheme in :func:`open_store`.
"""

from __future__ import annotations

import os
from typing import Literal

from ternmq.errors import JMSException
from ternmq.store._base import (
    AddDuplicateId,
    AddMessage,
    AddStaged,
    AddSubscription,
    MemoryStore,
    Op,
    Recovered,
    RemoveDestination,
    RemoveMessage,
    RemoveRange,
    RemoveStaged,
    RemoveSubscription,
    ReserveSeq,
    SetDeliveryCount,
    SetSinkBatch,
    StagedRecord,
    Store,
    StoredMessage,
    StoreFullError,
)

__all__ = [
    "AddDuplicateId",
    "AddMessage",
    "AddStaged",
    "AddSubscription",
    "MemoryStore",
    "Op",
    "Recovered",
    "RemoveDestination",
    "RemoveMessage",
    "RemoveRange",
    "RemoveStaged",
    "RemoveSubscription",
    "ReserveSeq",
    "SetDeliveryCount",
    "SetSinkBatch",
    "StagedRecord",
    "Store",
    "StoredMessage",
    "StoreFullError",
    "open_store",
]


def open_store(
    target: str | os.PathLike[str] | None,
    *,
    fsync: Literal["always", "batch"] = "always",
    fsync_interval: float = 0.05,
    batch_scheduling: bool = True,
) -> Store:
    """Open the store a broker keeps its state in.

    ``target`` is None for a :class:`MemoryStore` (state lives as long as the process), a
    directory path (or ``sqlite:PATH``) for the embedded SQLite store, which is created on
    first use. ``fsync`` and ``fsync_interval`` are the SQLite store's durability settings
    (``store/sqlite.py``); ``batch_scheduling`` runs its writer thread under ``SCHED_BATCH``
    (``ternmq._sched``).

    Raises:
        JMSException: the target names a kind of store ternmq does not have, the directory is
            in use by another process, or it cannot be opened.
    """
    if target is None:
        return MemoryStore()
    text = os.fspath(target)
    scheme, sep, rest = text.partition(":")
    if sep and rest.startswith("//") and scheme.isalpha() and len(scheme) > 1:
        raise JMSException(
            f"no store of kind {scheme!r} ({text}): give a directory for the embedded SQLite "
            "store, or leave it out for a store in memory"
        )
    if scheme == "sqlite" and sep:
        text = rest
    from ternmq.store.sqlite import SqliteStore

    return SqliteStore(text, fsync, fsync_interval, batch_scheduling=batch_scheduling)
