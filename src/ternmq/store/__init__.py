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
    "describe_store",
    "is_postgres",
    "open_store",
]

_POSTGRES_SCHEMES = ("postgresql", "postgres")


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
    first use, or ``postgresql://USER:PASSWORD@HOST:PORT/DB`` for the PostgreSQL store (its
    schema is created on first start). ``fsync`` is the durability setting of both
    (``store/sqlite.py``, ``store/postgres.py``), ``fsync_interval`` SQLite's;
    ``batch_scheduling`` runs the writer thread under ``SCHED_BATCH`` (``ternmq._sched``).

    Raises:
        JMSException: the target names a kind of store ternmq does not have, the directory is
            in use by another process, the database cannot be reached (the message names its
            host and the cause), or the store cannot be opened.
    """
    if target is None:
        return MemoryStore()
    text = os.fspath(target)
    scheme, sep, rest = text.partition(":")
    if is_postgres(text):
        from ternmq.store.postgres import PostgresStore

        return PostgresStore(text, fsync, batch_scheduling=batch_scheduling)
    if sep and rest.startswith("//") and scheme.isalpha() and len(scheme) > 1:
        raise JMSException(
            f"no store of kind {scheme!r} ({describe_store(text)}): give a directory (or "
            "sqlite:PATH) for the embedded SQLite store, postgresql://USER:PASSWORD@HOST:PORT/DB "
            "for PostgreSQL, or leave it out for a store in memory"
        )
    if scheme == "sqlite" and sep:
        text = rest
    from ternmq.store.sqlite import SqliteStore

    return SqliteStore(text, fsync, fsync_interval, batch_scheduling=batch_scheduling)


def is_postgres(target: str | os.PathLike[str] | None) -> bool:
    """Whether ``target`` names a PostgreSQL store (one a live/backup group can share)."""
    if target is None:
        return False
    scheme, sep, _ = os.fspath(target).partition(":")
    return bool(sep) and scheme.lower() in _POSTGRES_SCHEMES


def describe_store(target: str | os.PathLike[str] | None) -> str:
    """``target`` as logs and messages may show it: a PostgreSQL URL as
    ``postgresql://HOST:PORT/DB`` (no user, no password), a path as itself, None as
    ``memory``."""
    if target is None:
        return "memory"
    text = os.fspath(target)
    scheme, sep, rest = text.partition(":")
    if sep and scheme.lower() in _POSTGRES_SCHEMES:
        from ternmq.store.postgres import describe

        return f"postgresql://{describe(text)}"
    if sep and rest.startswith("//"):
        return f"{scheme}://{rest[2:].rpartition('@')[2]}"  # no credentials
    return text
