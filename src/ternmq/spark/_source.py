"""The ``ternmq`` data source: batch and stream readers, batch and stream writers.

Theory of operation
-------------------
Spark runs the pieces of a Python data source in different processes (see
``../shared/notes/spark-datasource-facts.md``): planning (``reader()``, ``writer()``, batch
``partitions()``) in pooled planner processes on the driver; a stream reader's offsets,
``partitions()`` and ``commit()`` in one long-lived runner process per query; ``read()`` and
``write()`` in executor workers on *pickled copies*; a writer's ``commit()``/``abort()`` in yet
another driver process. So every object here holds only options (frozen, picklable values);
each executor call opens its own broker connection and closes it, and the stream reader's
cached driver connection is dropped when it is pickled.

Reading. A queue or a durable subscription is a log of messages with monotonic sequence
numbers (:mod:`ternmq.client.sequenced`). A Spark offset is ``{"seq": n}`` meaning "every
message with seq <= n"; a micro-batch is the range ``(start, end]``, split into
:class:`SeqRange` partitions, and ``read_range`` reads it without consuming, so a replay after
a crash reads the same messages again. Everything up to the end of a batch that Spark has
recorded as done is acknowledged (removed): at ``latestOffset(start)`` of the next batch's
planning (``start`` is that end) and at ``commit(end)``, which Spark calls one batch late and
never for a run's last batch. A batch read plans ``log_bounds`` once and reads that snapshot;
it never acknowledges.

Writing. Each task stages its rows under its own transaction id, which the broker keeps
durable and invisible; the driver's ``commit`` publishes the tasks' transactions atomically
and records ``(sink id, batch id)``. A batch replayed after a crash (Spark re-runs a batch
whose commit it did not record) commits under a batch id the broker already has, which
publishes nothing: exactly once per batch. The transaction id is
``spark-<sink digest>-b<batch>-p<partition>-a<attempt>-<random>`` (partition and attempt
from ``TaskContext``), unique per task attempt even across driver restarts, so a crashed
attempt's orphaned rows never mix with a retry's; the broker drops orphans of a sink when a
later batch of it commits.
"""

from __future__ import annotations

import hashlib
import itertools
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from pyspark import TaskContext
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamArrowWriter,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from ternmq.client import sequenced as seqlog
from ternmq.client.connection import ConnectionFactory
from ternmq.errors import (
    InvalidDestinationException,
    InvalidSelectorException,
    JMSException,
    JMSSecurityException,
)
from ternmq.message import Message
from ternmq.spark._options import OptionError, ReadOptions, WriteOptions, split_by_count, split_even
from ternmq.spark._schema import SCHEMA, records_to_batch
from ternmq.spark._write import WriteLayout, batch_to_messages, check_write_schema

if TYPE_CHECKING:
    from ternmq.client.connection import Connection

__all__ = [
    "BatchReader",
    "BatchWriter",
    "SeqRange",
    "StagedWrite",
    "StreamReader",
    "StreamWriter",
    "TernmqDataSource",
    "make_txid",
]

_R = TypeVar("_R")

# Errors a reconnect cannot cure: raised at once instead of retried on a fresh connection.
_NOT_RETRIED = (InvalidDestinationException, InvalidSelectorException, JMSSecurityException)


def _connect(url: str, user: str | None, password: str | None) -> Connection:
    """A new connection to the broker (not started: the sequenced calls need no delivery)."""
    return ConnectionFactory(url).create_connection(user, password)


@dataclass(frozen=True)
class SeqRange(InputPartition):
    """One input partition: the messages with ``after < seq <= upto``."""

    after: int
    upto: int


def _read_batches(opts: ReadOptions, partition: InputPartition) -> Iterator[Any]:
    """Arrow record batches of the messages of one partition, in sequence order."""
    if not isinstance(partition, SeqRange) or partition.upto <= partition.after:
        return  # Spark replaces an empty partition list by [InputPartition(None)]
    conn = _connect(opts.url, opts.user, opts.password)
    try:
        for chunk in seqlog.read_range(
            conn,
            opts.destination,
            partition.after,
            partition.upto,
            subscription=opts.subscription,
            selector=opts.selector,
            limit=opts.read_chunk,
        ):
            if chunk:
                yield records_to_batch(chunk)
    finally:
        conn.close()


def _split(opts: ReadOptions, conn: Connection, after: int, upto: int) -> list[InputPartition]:
    """Partitions of ``(after, upto]`` per the ``partitions``/``messagesPerPartition`` options."""
    if opts.partitions is not None:
        ranges = split_even(after, upto, opts.partitions)
    else:

        def next_cut(cursor: int, n: int) -> int:
            bounds = seqlog.log_bounds(
                conn, opts.destination, subscription=opts.subscription, after=cursor, max_messages=n
            )
            return bounds.latest

        ranges = split_by_count(after, upto, opts.messages_per_partition, next_cut)
    return [SeqRange(a, b) for a, b in ranges]


def _check_read_schema(schema: StructType) -> None:
    if schema.simpleString() != SCHEMA.simpleString():
        raise OptionError(
            "the ternmq source has a fixed schema (ternmq.spark.SCHEMA_DDL); do not pass "
            f".schema(...), select columns after load() instead; got {schema.simpleString()}"
        )


class BatchReader(DataSourceReader):
    """``spark.read.format("ternmq")``: a snapshot of the messages held now, not consumed.

    The snapshot is fixed when Spark plans the query (``log_bounds`` in :meth:`partitions`);
    reading it twice gives the same rows as long as nothing acknowledged them meanwhile.
    """

    def __init__(self, options: ReadOptions) -> None:
        self._opts = options

    def partitions(self) -> Sequence[InputPartition]:
        """Split the destination's current ``(earliest, latest]`` range (driver).

        Raises:
            JMSException: the broker cannot be reached, or the destination or subscription
                does not exist or may not be browsed.
        """
        opts = self._opts
        conn = _connect(opts.url, opts.user, opts.password)
        try:
            bounds = seqlog.log_bounds(conn, opts.destination, subscription=opts.subscription)
            return _split(opts, conn, bounds.earliest, bounds.latest)
        finally:
            conn.close()

    def read(self, partition: InputPartition) -> Iterator[Any]:
        """Arrow record batches of the partition's messages (executor).

        Raises:
            JMSException: the broker cannot be reached or refuses the read.
        """
        return _read_batches(self._opts, partition)


class StreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``spark.readStream.format("ternmq")``: offsets are broker sequence numbers.

    Offsets, partitions and commits run in the query's runner process on the driver over one
    cached connection (reopened once if it fails); ``read`` runs in executors.
    """

    def __init__(self, options: ReadOptions) -> None:
        self._opts = options
        self._conn: Connection | None = None
        self._subscribed = False
        self._target: int | None = None
        self._initial: int | None = None  # what initialOffset() returned in this process
        self._acked: int | None = None
        self._ack_reply: Callable[[], int] | None = None  # an acknowledgement under way

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_conn"] = None  # never ship a socket to an executor
        state["_subscribed"] = False
        state["_ack_reply"] = None
        return state

    # ---- driver side -------------------------------------------------------------------

    def _call(self, fn: Callable[[Connection], _R]) -> _R:
        """Run ``fn`` on the cached connection (after making sure a topic's subscription
        exists); on failure retry once on a fresh connection."""
        opts = self._opts
        for attempt in (0, 1):
            if self._conn is None:
                self._conn = _connect(opts.url, opts.user, opts.password)
            conn = self._conn
            try:
                if opts.is_topic and not self._subscribed:
                    assert opts.subscription is not None
                    seqlog.ensure_subscription(
                        conn, opts.destination, opts.subscription, opts.selector
                    )
                    self._subscribed = True
                return fn(conn)
            except _NOT_RETRIED:
                raise
            except JMSException:
                self._close()
                if attempt:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except JMSException:
                pass

    def _latest(self, after: int | None = None, max_messages: int | None = None) -> int:
        opts = self._opts
        bounds = self._call(
            lambda conn: seqlog.log_bounds(
                conn,
                opts.destination,
                subscription=opts.subscription,
                after=after,
                max_messages=max_messages,
            )
        )
        return bounds.latest

    def initialOffset(self) -> dict[str, int]:
        """Where a new query starts: ``{"seq": earliest}`` (every message held now) or
        ``{"seq": latest}`` (only messages arriving later), per ``startingPosition``.

        Spark calls it only for a new checkpoint. For a topic the shared durable
        subscription is created first, so the backlog exists from then on.

        Raises:
            JMSException: the broker cannot be reached or refuses the request.
        """
        opts = self._opts
        bounds = self._call(
            lambda conn: seqlog.log_bounds(conn, opts.destination, subscription=opts.subscription)
        )
        seq = bounds.latest if opts.starting_position == "latest" else bounds.earliest
        self._initial = seq
        return {"seq": seq}

    def getDefaultReadLimit(self) -> ReadLimit:
        """``ReadMaxRows(maxMessagesPerTrigger)`` when that option is set, else all available."""
        limit = self._opts.max_messages_per_trigger
        return ReadAllAvailable() if limit is None else ReadMaxRows(limit)

    def prepareForTriggerAvailableNow(self) -> None:
        """Fix the end of an ``availableNow`` run: the latest position held now.

        Raises:
            JMSException: the broker cannot be reached or refuses the request.
        """
        self._target = self._latest()

    def latestOffset(self, start: dict[str, int], limit: ReadLimit) -> dict[str, int]:
        """The end of the next micro-batch: the latest held position, at most ``max_rows``
        messages after ``start`` under ``ReadMaxRows``, at most the ``availableNow`` target,
        and never before ``start``. Also acknowledges everything up to ``start`` (a completed
        batch), unless ``start`` is this query's initial offset: without waiting for the
        broker when a new batch follows (:meth:`partitions` collects the reply), else before
        returning.

        Raises:
            JMSException: the broker cannot be reached or refuses the request.
        """
        after = int(start["seq"])
        self._settle_ack()
        if isinstance(limit, ReadMaxRows):
            end = self._latest(after, int(limit.max_rows))
        else:
            end = self._latest()
        if self._target is not None:
            end = min(end, self._target)
        end = max(end, after)
        # ``start`` is the end of a batch Spark has completed and written to its commit log
        # (a batch still to be replayed after a restart is run without asking for offsets),
        # so everything up to it is done: acknowledge it now rather than wait for
        # ``commit()``, which lags a batch and never comes for the last batch of an
        # ``availableNow`` run or while no new data arrives. Not the initial offset of a new
        # query, which is a starting point (``startingPosition``), not a completed batch.
        if after != self._initial and (self._acked is None or after > self._acked):
            if end > after:
                # A new batch follows: the broker removes the messages while Spark writes
                # its offset log; partitions() (or the next call) collects the reply.
                self._ack_reply = self._call(lambda conn: self._ack_later(conn, after))
            else:  # nothing new (e.g. the end of an availableNow run): done on return
                self.commit(start)
            self._acked = after
        return {"seq": end}

    def _settle_ack(self) -> None:
        """Wait for the acknowledgement under way, if any. A refusal is raised; a lost link
        is not (acknowledgements are cumulative: the next one covers these messages)."""
        wait, self._ack_reply = self._ack_reply, None
        if wait is not None:
            try:
                wait()
            except _NOT_RETRIED:
                raise
            except JMSException:
                self._close()

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> Sequence[InputPartition]:
        """Split ``(start, end]`` into :class:`SeqRange` partitions.

        Raises:
            JMSException: the broker cannot be reached (splitting by message count asks it).
        """
        self._settle_ack()
        after, upto = int(start["seq"]), int(end["seq"])
        if upto <= after:
            return []
        return self._call(lambda conn: _split(self._opts, conn, after, upto))

    def commit(self, end: dict[str, int]) -> None:
        """Acknowledge every message up to ``end``: Spark will never ask for them again.

        On a queue with a ``selector`` only matching messages are removed.

        Raises:
            JMSException: the broker cannot be reached or refuses the request.
        """
        self._settle_ack()
        upto = int(end["seq"])
        self._call(lambda conn: self._ack_later(conn, upto)())

    def _ack_later(self, conn: Connection, upto: int) -> Callable[[], int]:
        """Send the cumulative acknowledgement up to ``upto``; the returned function waits
        for it (:func:`ternmq.client.sequenced.ack_upto_later`)."""
        opts = self._opts
        return seqlog.ack_upto_later(
            conn,
            opts.destination,
            upto,
            subscription=opts.subscription,
            selector=None if opts.is_topic else opts.selector,
        )

    def stop(self) -> None:
        """Wait for an acknowledgement under way and close the driver connection (Spark 4.3
        does not call this; the runner process ends with the query). Never raises."""
        try:
            self._settle_ack()
        except JMSException:
            pass
        self._close()

    # ---- executor side -------------------------------------------------------------------

    def read(self, partition: InputPartition) -> Iterator[Any]:
        """Arrow record batches of the partition's messages (executor).

        Raises:
            JMSException: the broker cannot be reached or refuses the read.
        """
        return _read_batches(self._opts, partition)


# ---- writers ---------------------------------------------------------------------------


@dataclass(frozen=True)
class StagedWrite(WriterCommitMessage):
    """What a writer task reports to the driver: its transaction id and how many messages
    it staged under it."""

    txid: str
    count: int
    batch_id: int
    partition: int
    attempt: int


def make_txid(sink_id: str, batch_id: int, partition: int, attempt: int) -> str:
    """A staged-transaction id unique per (sink, batch, partition, attempt) and per call.

    The sink id enters as a digest (it may be a long checkpoint path); a random suffix keeps
    a task re-run after a driver crash apart from its orphaned earlier attempt.
    """
    digest = hashlib.sha256(sink_id.encode("utf-8")).hexdigest()[:12]
    return f"spark-{digest}-b{batch_id}-p{partition}-a{attempt}-{uuid.uuid4().hex[:12]}"


def _messages(
    batches: Iterable[Any], layout: WriteLayout, opts: WriteOptions
) -> Iterator[tuple[str, Message]]:
    for batch in batches:
        now_ms = int(time.time() * 1000)
        yield from batch_to_messages(batch, layout, opts, now_ms)


def _stage_task(
    opts: WriteOptions,
    layout: WriteLayout,
    sink_id: str,
    batch_id: int,
    batches: Iterable[Any],
) -> StagedWrite:
    """Executor: stage every row of this task under one fresh txid.

    ``stage`` consumes the rows lazily in bounded requests (and encodes one while the
    previous is in flight), so a task never holds more than one Arrow batch and one request.
    """
    ctx = TaskContext.get()
    partition = ctx.partitionId() if ctx is not None else 0
    attempt = ctx.attemptNumber() if ctx is not None else 0
    txid = make_txid(sink_id, batch_id, partition, attempt)
    messages = _messages(batches, layout, opts)
    first = next(messages, None)
    count = 0
    if first is not None:
        conn = _connect(opts.url, opts.user, opts.password)
        try:
            count = seqlog.stage(conn, sink_id, batch_id, txid, itertools.chain([first], messages))
        except BaseException:
            try:  # best effort: the broker also drops orphans when a later batch commits
                seqlog.abort_staged(conn, [txid])
            except Exception:
                pass
            raise
        finally:
            conn.close()
    return StagedWrite(
        txid=txid, count=count, batch_id=batch_id, partition=partition, attempt=attempt
    )


def _staged(messages: Sequence[WriterCommitMessage | None]) -> list[StagedWrite]:
    return [m for m in messages if isinstance(m, StagedWrite)]


def _commit(
    opts: WriteOptions, sink_id: str, batch_id: int, messages: Sequence[WriterCommitMessage | None]
) -> seqlog.CommitResult:
    txids = [m.txid for m in _staged(messages) if m.count > 0]
    conn = _connect(opts.url, opts.user, opts.password)
    try:
        return seqlog.commit_staged(conn, sink_id, batch_id, txids)
    finally:
        conn.close()


def _abort(opts: WriteOptions, messages: Sequence[WriterCommitMessage | None]) -> None:
    txids = [m.txid for m in _staged(messages)]
    if not txids:
        return
    conn = _connect(opts.url, opts.user, opts.password)
    try:
        seqlog.abort_staged(conn, txids)
    finally:
        conn.close()


class BatchWriter(DataSourceArrowWriter):
    """``df.write.format("ternmq")``: every task stages its rows; the driver's commit
    publishes all of them at once, or none (abort).

    The sink id defaults to a fresh uuid per write job; with a ``sinkId`` (and ``batchId``)
    option, running the same job again publishes nothing the second time.
    """

    def __init__(self, options: WriteOptions, layout: WriteLayout, sink_id: str) -> None:
        self._opts = options
        self._layout = layout
        self.sink_id = sink_id

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        """Stage this task's rows (executor); returns a :class:`StagedWrite`.

        Raises:
            RowError: a row cannot become a message.
            JMSException: the broker cannot be reached or refuses the messages.
        """
        return _stage_task(self._opts, self._layout, self.sink_id, self._opts.batch_id, iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """Publish every task's staged messages atomically (driver).

        Raises:
            JMSException: the broker cannot be reached or refuses the commit.
        """
        _commit(self._opts, self.sink_id, self._opts.batch_id, messages)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """Drop the staged messages of the tasks that succeeded (driver).

        Raises:
            JMSException: the broker cannot be reached.
        """
        _abort(self._opts, messages)


class StreamWriter(DataSourceStreamArrowWriter):
    """``df.writeStream.format("ternmq")``: staged per task, published once per
    (sink id, micro-batch id) by the driver's commit."""

    def __init__(self, options: WriteOptions, layout: WriteLayout, sink_id: str) -> None:
        self._opts = options
        self._layout = layout
        self.sink_id = sink_id

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        """Stage this task's rows under the micro-batch id (executor).

        Raises:
            RowError: a row cannot become a message.
            JMSException: the broker cannot be reached or refuses the messages.
            RuntimeError: the task carries no streaming batch id.
        """
        ctx = TaskContext.get()
        text = ctx.getLocalProperty("streaming.sql.batchId") if ctx is not None else None
        if text is None:
            raise RuntimeError("a ternmq stream writer task carries no streaming.sql.batchId")
        return _stage_task(self._opts, self._layout, self.sink_id, int(text), iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Publish the micro-batch's staged messages and record ``(sink id, batchId)``;
        a replayed batch publishes nothing (driver).

        Raises:
            JMSException: the broker cannot be reached or refuses the commit.
        """
        _commit(self._opts, self.sink_id, int(batchId), messages)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Drop the staged messages of the micro-batch's successful tasks (driver).

        Raises:
            JMSException: the broker cannot be reached.
        """
        _abort(self._opts, messages)


class TernmqDataSource(DataSource):
    """The Spark data source of format ``"ternmq"`` (see the ``ternmq.spark`` docstring for
    the options and the schema)."""

    @classmethod
    def name(cls) -> str:
        """The format name: ``"ternmq"``."""
        return "ternmq"

    def schema(self) -> StructType:
        """The fixed row schema of readers, :data:`ternmq.spark.SCHEMA`."""
        return SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        """A batch reader (driver).

        Raises:
            OptionError: a missing or invalid option, or a user-given schema.
        """
        _check_read_schema(schema)
        return BatchReader(ReadOptions.parse(self.options))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        """A stream reader (driver).

        Raises:
            OptionError: a missing or invalid option, or a user-given schema.
        """
        _check_read_schema(schema)
        return StreamReader(ReadOptions.parse(self.options))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        """A batch writer (driver). Writing always appends (publishes); ``overwrite`` is
        refused, since a writer cannot purge a destination.

        Raises:
            OptionError: a missing or invalid option, or ``mode("overwrite")``.
            SchemaError: a column that does not map onto a message.
        """
        if overwrite:
            raise OptionError(
                'ternmq publishes messages and cannot overwrite a destination: use mode("append")'
            )
        opts = WriteOptions.parse(self.options)
        layout = check_write_schema(schema, default_destination=opts.destination)
        sink_id = opts.sink_id or f"spark-batch-{uuid.uuid4()}"
        return BatchWriter(opts, layout, sink_id)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        """A stream writer (driver; Spark asks again for every micro-batch's commit). The
        sink id is the ``sinkId`` option, else the query's ``checkpointLocation`` option;
        every output mode publishes each micro-batch's rows.

        Raises:
            OptionError: a missing or invalid option, or neither sinkId nor
                checkpointLocation given as an option.
            SchemaError: a column that does not map onto a message.
        """
        opts = WriteOptions.parse(self.options)
        layout = check_write_schema(schema, default_destination=opts.destination)
        sink_id = opts.sink_id or opts.checkpoint_location
        if sink_id is None:
            raise OptionError(
                "a ternmq stream sink needs a stable sink id to publish each batch once: set "
                '.option("checkpointLocation", DIR) on the writeStream (or .option("sinkId", '
                "NAME))"
            )
        return StreamWriter(opts, layout, sink_id)
