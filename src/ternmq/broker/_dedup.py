"""Duplicate detection for resends (catalog PSF-09, REL-06; Artemis's ``_AMQ_DUPL_ID``).

Theory of operation
-------------------
A producer that cannot tell whether a send or a commit took effect (JMS 2.0 §4.4.13: the
connection failed before the receipt) may send the same message again. If the message
carries the String property ``JMS_TernMQ_DuplicateID`` (copied by the client into
``Send.duplicate_id``), the destination remembers the id once the send takes effect, and a
later send with an id it remembers is acknowledged without being enqueued: the application
resends whatever is in doubt and gets exactly one copy.

Each destination (``queue://NAME``, ``topic://NAME``, temporary ones too) has its own cache of
the latest ``id_cache_size`` ids of its policy (default 20,000; 0 turns detection off): an
insertion-ordered map id -> ordinal ``n`` (1, 2, ... per destination, continued across
restarts), from which the oldest id is evicted when a new one would exceed the size. A topic
remembers the id of the publish, whatever its subscriptions, so a repeated publish reaches no
subscription.

Durability: the id of a PERSISTENT send to a non-temporary destination is written with the
message, as an ``AddDuplicateId`` operation in the same store batch (one atomic group commit:
after a crash the message and its id are both there or both absent); the operation names the
ordinals the store may forget. Ids of NON_PERSISTENT sends and of temporary destinations are
remembered in memory only (their messages do not survive the broker either). After a restart
a destination remembers the latest stored ids within its (possibly changed) cache size.

Transactions follow Artemis: the ids of a transaction's sends are checked and recorded at
commit, never at ``send()``; if any of them is remembered, or repeats an id of the same
transaction, the whole transaction is rolled back and the commit raises
TransactionRolledBackException naming the id, so that an application that redoes an in-doubt
transaction learns that the first attempt committed. A rolled-back send records nothing.

A duplicate's ``Ok`` leaves after every store batch before it (the engine keeps output in
order behind pending batches), so a resend is confirmed only once the original is durable.
If the store then fails to write the original (a disk error), the original's sender gets the
error and the id is forgotten (:meth:`DuplicateIds.forget`), but a resend answered in that
window has already been confirmed: a known limit, as rare as a failing disk.

This module holds the caches only; ``engine.py`` asks it at its few hooks (send, blocked
send, commit, recovery, store failure, temporary destination deletion).
"""

from __future__ import annotations

import collections
from collections.abc import Iterable

from ternmq.broker.config import BrokerConfig
from ternmq.destination import Destination, TemporaryQueue, TemporaryTopic
from ternmq.errors import JMSException, TransactionRolledBackException
from ternmq.protocol.commands import DUPLICATE_ID_PROPERTY, Send
from ternmq.store import AddDuplicateId

__all__ = ["MAX_DUPLICATE_ID_CHARS", "DuplicateIds"]

#: The longest ``JMS_TernMQ_DuplicateID`` accepted, in characters (a UUID has 36): the caches
#: hold up to ``id_cache_size`` ids per destination, so an id must stay small.
MAX_DUPLICATE_ID_CHARS = 1024


class _Cache:
    """The remembered ids of one destination, oldest first."""

    __slots__ = ("duplicates", "ids", "next_n", "size")

    def __init__(self, size: int) -> None:
        self.size = size
        self.ids: collections.OrderedDict[str, int] = collections.OrderedDict()
        self.next_n = 1
        self.duplicates = 0  # sends refused as duplicates (stat)


class DuplicateIds:
    """The duplicate-id caches of one broker, keyed by destination text.

    Args:
        config: where each destination's ``id_cache_size`` comes from.
    """

    def __init__(self, config: BrokerConfig) -> None:
        self._config = config
        self._caches: dict[str, _Cache] = {}

    def _cache(self, key: str) -> _Cache:
        cache = self._caches.get(key)
        if cache is None:
            cache = self._caches[key] = _Cache(self._config.policy_for(key).id_cache_size)
        return cache

    @staticmethod
    def check_id(dup_id: str) -> None:
        """Refuse an id the caches will not hold.

        Raises:
            JMSException: the id is empty or longer than :data:`MAX_DUPLICATE_ID_CHARS`.
        """
        if not dup_id or len(dup_id) > MAX_DUPLICATE_ID_CHARS:
            raise JMSException(
                f"{DUPLICATE_ID_PROPERTY} must have 1 to {MAX_DUPLICATE_ID_CHARS} characters, "
                f"not {len(dup_id)}: use a short unique key such as a UUID"
            )

    def seen(self, dest: Destination, dup_id: str) -> bool:
        """Whether ``dest`` remembers ``dup_id`` (then the send is a duplicate: counted)."""
        cache = self._caches.get(str(dest))
        if cache is None or dup_id not in cache.ids:
            return False
        cache.duplicates += 1
        return True

    def record(self, dest: Destination, dup_id: str, persistent: bool) -> AddDuplicateId | None:
        """Remember that a send with ``dup_id`` took effect on ``dest``; returns the store
        operation to write with that send's batch (None: kept in memory only)."""
        key = str(dest)
        cache = self._cache(key)
        if not cache.size:
            return None
        n = cache.next_n
        cache.next_n = n + 1
        ids = cache.ids
        ids[dup_id] = n
        if len(ids) > cache.size:
            ids.popitem(last=False)
        if not persistent or isinstance(dest, (TemporaryQueue, TemporaryTopic)):
            return None
        return AddDuplicateId(key, n, dup_id, n - cache.size)

    def check_transaction(self, sends: Iterable[tuple[Destination, Send]]) -> None:
        """Before a commit publishes ``sends``: none may repeat a remembered id or an id of
        an earlier send of the same transaction to the same destination.

        Raises:
            TransactionRolledBackException: a duplicate (the whole transaction is dropped).
        """
        mine: set[tuple[str, str]] = set()
        for dest, send in sends:
            dup_id = send.duplicate_id
            if dup_id is None:
                continue
            key = str(dest)
            cache = self._cache(key)
            if not cache.size:
                continue
            if dup_id in cache.ids or (key, dup_id) in mine:
                cache.duplicates += 1
                raise TransactionRolledBackException(
                    f"the transaction was rolled back: {key} already accepted a send with "
                    f"{DUPLICATE_ID_PROPERTY} {dup_id!r} (duplicate detection, PSF-09), so a "
                    "transaction with these sends has committed before: do not redo it"
                )
            mine.add((key, dup_id))

    def forget(self, dest: str, dup_id: str) -> None:
        """A send that recorded ``dup_id`` did not take effect after all (its store batch
        failed): a resend of it is accepted again."""
        cache = self._caches.get(dest)
        if cache is not None:
            cache.ids.pop(dup_id, None)

    def drop(self, dest: Destination) -> None:
        """``dest`` (a temporary destination) is gone, and its cache with it."""
        self._caches.pop(str(dest), None)

    def restore(self, stored: dict[str, list[tuple[int, str]]]) -> None:
        """Rebuild the caches from what the store kept (``(n, id)``, oldest first): the ids
        within the latest ``id_cache_size`` ordinals of each destination."""
        for key, rows in stored.items():
            if not rows:
                continue
            cache = self._cache(key)
            last = rows[-1][0]
            cache.next_n = last + 1
            for n, dup_id in rows:
                if n > last - cache.size:
                    cache.ids.pop(dup_id, None)  # re-accepted after eviction: the latest n
                    cache.ids[dup_id] = n

    def duplicates(self, dest: Destination) -> int:
        """How many sends to ``dest`` were refused as duplicates since the broker started."""
        cache = self._caches.get(str(dest))
        return 0 if cache is None else cache.duplicates
