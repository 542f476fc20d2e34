"""Broker settings: one frozen dataclass, every bound with a name and a documented default."""

from __future__ import annotations

import dataclasses
from typing import Literal

__all__ = ["BrokerConfig", "DestinationPolicy"]

FullPolicy = Literal["page", "block", "fail"]


@dataclasses.dataclass(frozen=True)
class DestinationPolicy:
    """Per-destination behaviour (PSF-01, PSF-02, PSF-05, PSF-07, PSF-09).

    Attributes:
        max_delivery_attempts: deliveries before a message is dead-lettered; -1 = unlimited.
        dead_letter_queue: queue that receives dead letters (auto-created); None drops them.
        redelivery_delay: seconds before a returned message may be delivered again.
        redelivery_multiplier: back-off factor applied per further attempt.
        max_redelivery_delay: cap of the back-off, seconds (None = 10 x redelivery_delay).
        expiry_queue: queue that receives expired messages; None discards them (the default).
        max_bytes: memory limit of the destination's messages, bytes; 0 = only the global one.
        full_policy: what a send to a full destination does (PSF-07): ``page`` (default)
            keeps PERSISTENT messages of queues and durable subscriptions on disk only and
            reads them back as consumers drain (needs a disk store); other messages wait as
            with ``block``. ``block`` waits up to ``block_timeout`` for room, then raises
            ResourceAllocationException; ``fail`` raises it at once.
        block_timeout: seconds a blocked send waits before ResourceAllocationException.
        exclusive: queues only: deliver to the oldest consumer only, the next takes over (PSF-04).
        id_cache_size: duplicate detection (PSF-09): how many of the latest
            ``JMS_TernMQ_DuplicateID`` values the destination remembers (Artemis's
            ``id-cache-size``); a send repeating one of them is acknowledged but not enqueued.
            Older ids are forgotten, in memory and in the store. 0 turns detection off.

    Raises:
        ValueError: ``id_cache_size`` is negative.
    """

    max_delivery_attempts: int = 10
    dead_letter_queue: str | None = "DLQ"
    redelivery_delay: float = 0.0
    redelivery_multiplier: float = 1.0
    max_redelivery_delay: float | None = None
    expiry_queue: str | None = None
    max_bytes: int = 0
    full_policy: FullPolicy = "page"
    block_timeout: float = 30.0
    exclusive: bool = False
    id_cache_size: int = 20_000

    def __post_init__(self) -> None:
        if self.id_cache_size < 0:
            raise ValueError(
                f"id_cache_size must be 0 (duplicate detection off) or more, not "
                f"{self.id_cache_size}"
            )


@dataclasses.dataclass(frozen=True)
class BrokerConfig:
    """Broker-wide settings.

    Attributes:
        auto_create: a send to, or consumer on, an unknown queue/topic creates it (PSF-06).
            When False only ``queues`` and ``topics`` exist, and naming another one raises
            InvalidDestinationException.
        queues: names of queues that exist from the start.
        topics: names of topics that exist from the start.
        default_policy: the policy of every destination without its own.
        policies: per-destination policies, keyed by ``queue://NAME`` / ``topic://NAME``.
        max_memory_bytes: broker-wide limit of message bytes held (0 = unlimited).
        expiry_scan_interval: seconds between two runs of the expiry reaper (PSF-05).
        staged_timeout: seconds a staged transaction (the Spark sink's two-phase publish)
            may go without a ``Stage`` before the broker aborts it as abandoned: a writer
            that died and whose sink never commits again would otherwise keep it on disk
            and in memory for ever (0 = never). Checked by the reaper, so an abort comes up
            to ``expiry_scan_interval`` later.
        max_message_bytes: largest encoded message accepted.
        max_connections: connection limit (0 = unlimited).
        groups: dispatch by ``JMSXGroupID`` (PSF-03).
        persist_delivery_count: write "delivered" to the store before a persistent message is
            dispatched (A-15), so it comes back marked redelivered after a crash. Turning it
            off saves one write per delivery (Artemis's default), a documented deviation.
        dispatch_hold: seconds the broker holds back the insert of a PERSISTENT message
            that it delivered at once to a waiting consumer, so that the consumer's
            acknowledgement, if it comes first, cancels the write (concurrent store and
            dispatch, as ActiveMQ Classic's for queues); the sender's reply still waits
            until the message is durable or acknowledged. 0 turns it off: every PERSISTENT
            message is durable before it is delivered. Only with a durable store that
            writes on its own thread (SQLite, PostgreSQL); a memory store never holds.
    """

    auto_create: bool = True
    queues: tuple[str, ...] = ()
    topics: tuple[str, ...] = ()
    default_policy: DestinationPolicy = DestinationPolicy()
    policies: dict[str, DestinationPolicy] = dataclasses.field(default_factory=dict)
    max_memory_bytes: int = 512 * 1024 * 1024
    expiry_scan_interval: float = 30.0
    staged_timeout: float = 24 * 3600.0
    max_message_bytes: int = 16 * 1024 * 1024
    max_connections: int = 0
    groups: bool = True
    persist_delivery_count: bool = True
    dispatch_hold: float = 0.002

    def __post_init__(self) -> None:
        if not 0 <= self.dispatch_hold <= 1:
            raise ValueError(
                f"dispatch_hold must be between 0 and 1 second (0 = off), not {self.dispatch_hold}"
            )

    def policy_for(self, destination: str) -> DestinationPolicy:
        """The policy of ``destination`` (its text form)."""
        return self.policies.get(destination, self.default_policy)

    @classmethod
    def from_settings(cls, **settings: object) -> BrokerConfig:
        """Build a config from keyword settings; destination-policy fields given at top level
        (``max_delivery_attempts=3``) set the default policy.

        Raises:
            TypeError: an unknown setting name.
        """
        top = {f.name for f in dataclasses.fields(cls)}
        pol = {f.name for f in dataclasses.fields(DestinationPolicy)}
        kwargs: dict[str, object] = {}
        pkw: dict[str, object] = {}
        for key, value in settings.items():
            if key in top:
                kwargs[key] = tuple(value) if key in ("queues", "topics") else value  # type: ignore[arg-type]
            elif key in pol:
                pkw[key] = value
            else:
                raise TypeError(f"unknown broker setting {key!r}")
        if pkw:
            base = kwargs.get("default_policy", DestinationPolicy())
            kwargs["default_policy"] = dataclasses.replace(base, **pkw)  # type: ignore[type-var]
        return cls(**kwargs)  # type: ignore[arg-type]
