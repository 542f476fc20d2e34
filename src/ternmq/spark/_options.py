"""Options of the ``ternmq`` data source, parsed once on the driver, and sequence-range splits.

Spark hands a data source its options as a case-insensitive mapping of strings (``.option("x",
5)`` arrives as ``"5"``); :class:`ReadOptions` and :class:`WriteOptions` turn them into typed,
frozen, picklable values, so a mistake is reported when the query is planned (with the option's
name and what to write instead) rather than in an executor.

A range of sequence numbers ``(after, upto]`` is split into partitions either evenly by
sequence width (:func:`split_even`, option ``partitions``) or into runs of about
``messagesPerPartition`` held messages (:func:`split_by_count`, which asks the broker where
each run ends). Sequence numbers are not dense, so only the second gives even partitions.

Pure module: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final, Literal

from ternmq.destination import Destination, Topic, destination
from ternmq.errors import InvalidDestinationException
from ternmq.message import DeliveryMode

__all__ = [
    "DEFAULT_MESSAGES_PER_PARTITION",
    "DEFAULT_READ_CHUNK",
    "MAX_PARTITIONS",
    "OptionError",
    "ReadOptions",
    "WriteOptions",
    "parse_delivery_mode",
    "split_by_count",
    "split_even",
]

#: Messages per input partition when neither ``partitions`` nor ``messagesPerPartition`` is set.
#: A Spark task costs some 60 ms of fixed overhead on a local 2-core machine (measured: 100k
#: messages read in 0.7 s as 2 partitions, 1.3 s as 10), so partitions are large by default.
DEFAULT_MESSAGES_PER_PARTITION: Final = 50_000
#: Messages per ``read_range`` request and per Arrow record batch (option ``readChunkSize``).
DEFAULT_READ_CHUNK: Final = 10_000
#: Upper bound on the partitions of one range; past it the last partition takes the rest.
MAX_PARTITIONS: Final = 10_000


class OptionError(ValueError):
    """An option of the ``ternmq`` data source is missing or has an invalid value."""


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in options.items() if v is not None}


def _int(opts: dict[str, str], key: str, name: str, *, minimum: int) -> int | None:
    text = opts.get(key)
    if text is None or text.strip() == "":
        return None
    try:
        value = int(text.strip())
    except ValueError:
        raise OptionError(f"option {name}={text!r} is not an integer") from None
    if value < minimum:
        raise OptionError(f"option {name}={value} must be at least {minimum}")
    return value


def _url(opts: dict[str, str]) -> str:
    url = opts.get("url", "").strip()
    if not url:
        raise OptionError(
            'option url is required: .option("url", "tcp://HOST:PORT") (a ternmq serve broker)'
        )
    if url.startswith("vm:"):
        raise OptionError(
            f"option url={url!r}: Spark executors are separate processes, so an embedded "
            "vm:// broker cannot be shared with them; run `ternmq serve` and use tcp://HOST:PORT"
        )
    if not url.startswith(("tcp://", "tls://")):
        raise OptionError(f"option url={url!r} must be tcp://HOST:PORT or tls://HOST:PORT")
    return url


def _destination(text: str, name: str = "destination") -> Destination:
    try:
        dest = destination(text.strip())
    except InvalidDestinationException as exc:
        raise OptionError(
            f"option {name}={text!r}: write 'queue://NAME' or 'topic://NAME' ({exc})"
        ) from None
    if dest.is_temporary:
        raise OptionError(f"option {name}={text!r}: temporary destinations cannot be used")
    return dest


def parse_delivery_mode(value: str | int, what: str = "deliveryMode") -> int:
    """The JMS delivery mode (1 or 2) of ``"PERSISTENT"``, ``"NON_PERSISTENT"`` (any case,
    ``-`` for ``_`` allowed), ``"2"``/``"1"`` or the ints 2/1.

    Raises:
        OptionError: any other value (a ``ValueError``).
    """
    if isinstance(value, int) and not isinstance(value, bool):
        if value in (1, 2):
            return value
    elif isinstance(value, str):
        text = value.strip().upper().replace("-", "_")
        if text in ("1", "2"):
            return int(text)
        if text in DeliveryMode.__members__:
            return int(DeliveryMode[text])
    raise OptionError(f"{what}={value!r}: use PERSISTENT or NON_PERSISTENT (or 2 / 1)")


@dataclass(frozen=True, slots=True)
class ReadOptions:
    """What a reader (batch or stream) needs, parsed from the data source options.

    Attributes:
        url: ``tcp://`` or ``tls://`` URL of the broker.
        user: user name or None.
        password: password or None.
        destination: ``queue://NAME`` or ``topic://NAME`` (normalised text).
        subscription: the shared durable subscription read on a topic (None for a queue).
        selector: a JMS message selector or None.
        max_messages_per_trigger: admission control of a stream (None = all available).
        starting_position: where a new stream query starts: ``earliest`` or ``latest``.
        partitions: split each range evenly into this many partitions (None: by count).
        messages_per_partition: messages per partition when splitting by count.
        read_chunk: messages per ``read_range`` request (and per Arrow batch).
    """

    url: str
    user: str | None
    password: str | None
    destination: str
    subscription: str | None
    selector: str | None
    max_messages_per_trigger: int | None
    starting_position: Literal["earliest", "latest"]
    partitions: int | None
    messages_per_partition: int
    read_chunk: int

    @property
    def is_topic(self) -> bool:
        """True when the destination is a topic (read through ``subscription``)."""
        return self.destination.startswith("topic://")

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> ReadOptions:
        """Parse Spark's option mapping (keys in any case, values strings).

        Raises:
            OptionError: a required option is missing or a value is invalid; the message
                names the option and says what to write.
        """
        opts = _lower(options)
        url = _url(opts)
        text = opts.get("destination", "").strip()
        if not text:
            raise OptionError(
                'option destination is required: .option("destination", "queue://orders") '
                'or "topic://events" with .option("subscription", NAME)'
            )
        dest = _destination(text)
        subscription = opts.get("subscription", "").strip() or None
        if isinstance(dest, Topic) and subscription is None:
            raise OptionError(
                f'destination {text!r} is a topic: set .option("subscription", NAME), the '
                "shared durable subscription whose backlog is read"
            )
        if not isinstance(dest, Topic) and subscription is not None:
            raise OptionError(
                f"option subscription={subscription!r} applies to topics only, and "
                f"{text!r} is a queue"
            )
        position = opts.get("startingposition", "earliest").strip().lower()
        if position not in ("earliest", "latest"):
            raise OptionError(f"option startingPosition={position!r}: use earliest or latest")
        selector = opts.get("selector", "").strip() or None
        per_partition = _int(opts, "messagesperpartition", "messagesPerPartition", minimum=1)
        chunk = _int(opts, "readchunksize", "readChunkSize", minimum=1)
        return cls(
            url=url,
            user=opts.get("user") or None,
            password=opts.get("password") or None,
            destination=str(dest),
            subscription=subscription,
            selector=selector,
            max_messages_per_trigger=_int(
                opts, "maxmessagespertrigger", "maxMessagesPerTrigger", minimum=1
            ),
            starting_position="latest" if position == "latest" else "earliest",
            partitions=_int(opts, "partitions", "partitions", minimum=1),
            messages_per_partition=per_partition or DEFAULT_MESSAGES_PER_PARTITION,
            read_chunk=chunk or DEFAULT_READ_CHUNK,
        )


@dataclass(frozen=True, slots=True)
class WriteOptions:
    """What a writer (batch or stream) needs, parsed from the data source options.

    Attributes:
        url: ``tcp://`` or ``tls://`` URL of the broker.
        user: user name or None.
        password: password or None.
        destination: default destination text (a ``destination`` column overrides it per
            row), or None when every row must name one.
        sink_id: the ``sinkId`` option, or None (the writer then picks its default).
        batch_id: the ``batchId`` option of a batch write (default 0); a stream's batch ids
            are Spark's.
        checkpoint_location: the ``checkpointLocation`` option as the stream writer sees it.
        delivery_mode: default JMS delivery mode (2 = PERSISTENT).
        priority: default JMS priority (0 … 9).
        time_to_live: default time to live in ms (0 = never expires).
    """

    url: str
    user: str | None
    password: str | None
    destination: str | None
    sink_id: str | None
    batch_id: int
    checkpoint_location: str | None
    delivery_mode: int
    priority: int
    time_to_live: int

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> WriteOptions:
        """Parse Spark's option mapping (keys in any case, values strings).

        Raises:
            OptionError: a required option is missing or a value is invalid.
        """
        opts = _lower(options)
        url = _url(opts)
        text = opts.get("destination", "").strip()
        dest = str(_destination(text)) if text else None
        priority = _int(opts, "priority", "priority", minimum=0)
        if priority is not None and priority > 9:
            raise OptionError(f"option priority={priority} must be in 0 … 9")
        mode = opts.get("deliverymode")
        return cls(
            url=url,
            user=opts.get("user") or None,
            password=opts.get("password") or None,
            destination=dest,
            sink_id=opts.get("sinkid", "").strip() or None,
            batch_id=_int(opts, "batchid", "batchId", minimum=0) or 0,
            checkpoint_location=opts.get("checkpointlocation", "").strip() or None,
            delivery_mode=2 if mode is None else parse_delivery_mode(mode),
            priority=4 if priority is None else priority,
            time_to_live=_int(opts, "timetolive", "timeToLive", minimum=0) or 0,
        )


def split_even(after: int, upto: int, parts: int) -> list[tuple[int, int]]:
    """Split ``(after, upto]`` into at most ``parts`` contiguous ranges of equal sequence width.

    Returns ``[]`` for an empty range. The ranges cover ``(after, upto]`` exactly, in order;
    since sequence numbers are not dense, the ranges may hold different numbers of messages.

    Raises:
        ValueError: ``parts`` is below 1.
    """
    if parts < 1:
        raise ValueError(f"parts must be at least 1, not {parts}")
    width = upto - after
    if width <= 0:
        return []
    parts = min(parts, width)
    cuts = [after + (width * i) // parts for i in range(parts + 1)]
    return [(cuts[i], cuts[i + 1]) for i in range(parts) if cuts[i] < cuts[i + 1]]


def split_by_count(
    after: int,
    upto: int,
    per_partition: int,
    next_cut: Callable[[int, int], int],
    *,
    max_partitions: int = MAX_PARTITIONS,
) -> list[tuple[int, int]]:
    """Split ``(after, upto]`` into ranges of about ``per_partition`` held messages each.

    ``next_cut(cursor, n)`` returns the sequence number of the ``n``-th held message after
    ``cursor`` (or the last held one when fewer are held): ``log_bounds(after=cursor,
    max_messages=n).latest``. Returns ``[]`` for an empty range; the ranges cover ``(after,
    upto]`` exactly, in order. Once nothing more is held below ``upto``, or ``max_partitions``
    is reached, the last range extends to ``upto``. A range no wider than ``per_partition``
    positions is one partition without asking ``next_cut`` (a stream's micro-batch, usually).

    Raises:
        ValueError: ``per_partition`` or ``max_partitions`` is below 1.
    """
    if per_partition < 1 or max_partitions < 1:
        raise ValueError("per_partition and max_partitions must be at least 1")
    ranges: list[tuple[int, int]] = []
    cursor = after
    width = upto - after
    while cursor < upto:
        if len(ranges) + 1 >= max_partitions or (not ranges and width <= per_partition):
            cut = upto  # (positions are distinct: a range this narrow holds few enough)
        else:
            cut = next_cut(cursor, per_partition)
        if cut <= cursor and ranges:  # nothing held after the cursor: the last range ends it
            ranges[-1] = (ranges[-1][0], upto)
            break
        if cut <= cursor or cut > upto:
            cut = upto
        ranges.append((cursor, cut))
        cursor = cut
    return ranges
