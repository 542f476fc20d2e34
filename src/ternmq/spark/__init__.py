"""ternmq as a PySpark data source, format ``"ternmq"`` (needs ``pip install 'ternmq[spark]'``).

::

    import ternmq.spark
    ternmq.spark.register(spark)          # automatic on import when a session is active

    # a snapshot of a queue (nothing is consumed), taken when the DataFrame is first planned:
    # later actions on it (and on DataFrames derived from it) see the same messages
    df = spark.read.format("ternmq").option("url", "tcp://127.0.0.1:61616") \\
        .option("destination", "queue://orders").load()

    # a stream: exactly once through the checkpoint; completed batches are acknowledged
    orders = (spark.readStream.format("ternmq").option("url", url)
              .option("destination", "topic://events").option("subscription", "spark-events")
              .option("maxMessagesPerTrigger", 10000).load())
    (orders.selectExpr("upper(text_body) AS body").writeStream.format("ternmq")
        .option("url", url).option("destination", "queue://out")
        .option("checkpointLocation", "/data/ckpt/events").trigger(availableNow=True).start())

The broker must be a network broker (``ternmq serve``: ``tcp://`` or ``tls://``): Spark's
executors are other processes. Workers import this package by reference, so ternmq must be
installed in the Python that ``PYSPARK_PYTHON`` names.

Read options (all strings, names in any case)
---------------------------------------------
``url`` (required), ``user``, ``password``
    the broker and the credentials.
``destination`` (required)
    ``queue://NAME`` or ``topic://NAME``.
``subscription``
    topics only, required there: the name of a shared durable subscription (no client id).
    A stream creates it if absent (with ``selector``), so its backlog holds everything
    published from then on; a batch read needs it to exist.
``selector``
    a JMS message selector: only matching messages are read. On a queue a stream's commit
    removes only matching messages, so other readers' messages stay.
``startingPosition``
    ``earliest`` (default: every message held when the query first starts) or ``latest``
    (only later ones). Used only for a new checkpoint.
``maxMessagesPerTrigger``
    admission control: at most this many messages per micro-batch (also under
    ``trigger(availableNow=True)``, which then runs several batches up to the position held
    when it started).
``messagesPerPartition`` (default 50,000), ``partitions``
    how a range is split into Spark partitions: runs of about that many held messages (the
    broker is asked where each ends), or ``partitions`` ranges of equal sequence width.
``readChunkSize`` (default 10,000)
    messages per ``read_range`` request and per Arrow record batch.

Offsets are ``{"seq": n}``: the broker's sequence numbers of the destination (monotonic, not
dense). A micro-batch reads ``(start, end]`` without consuming, so a replay after a crash
reads the same messages. Once Spark has recorded a batch as done, everything up to its end
is acknowledged (removed): when Spark plans the next batch (``latestOffset(start)``, so the
last batch of an ``availableNow`` run is acknowledged too) or calls ``commit(end)``, which
lags one batch. The messages of a batch read are not consumed.

Read schema (:data:`SCHEMA`, :data:`SCHEMA_DDL`)
-------------------------------------------------
================== ================================ ============================================
column             type                             meaning
================== ================================ ============================================
message_id         string                           JMSMessageID (``ID:...``)
destination        string                           ``queue://NAME`` / ``topic://NAME``
sequence           bigint                           the broker's sequence number (the offset)
timestamp          timestamp                        JMSTimestamp (UTC instant; null if unset)
delivery_mode      string                           ``PERSISTENT`` or ``NON_PERSISTENT``
priority           int                              JMSPriority 0 … 9
expiration         timestamp                        JMSExpiration (null = never expires)
correlation_id     string                           JMSCorrelationID (a bytes form as UTF-8,
                                                    undecodable octets as ``\\xNN``)
type               string                           JMSType
reply_to           string                           JMSReplyTo as ``queue://...`` text
redelivered        boolean                          JMSRedelivered, or delivery_count > 1
delivery_count     int                              JMSXDeliveryCount (1 = first delivery)
properties         map<string, string>              every property in its Java String form
                                                    (``getStringProperty``), null for null
typed_properties   map<string, struct<...>>         every property with its JMS type: see below
body_type          string                           ``text``, ``bytes``, ``map``, ``stream``,
                                                    ``object`` or ``message`` (no body)
text_body          string                           Text: the text. Map: a JSON object, Stream:
                                                    a JSON array (byte[] values as base64).
                                                    Object: JSON of the object when it unpickles
                                                    with builtins only, else null
bytes_body         binary                           Bytes: the octets. Object: the pickled
                                                    octets
================== ================================ ============================================

``typed_properties`` values are ``struct<type string, string_value string, long_value bigint,
double_value double, boolean_value boolean>`` (:data:`TYPED_PROPERTY`): ``type`` is the JMS
type name (``boolean``, ``byte``, ``short``, ``int``, ``long``, ``float``, ``double``,
``String``, or ``null`` for a null value) and exactly the field for that type is set:
``boolean_value``; ``long_value`` for the four integral types; ``double_value`` for float
and double (a float widened exactly); ``string_value``. Timestamps are Spark timestamps
(microseconds, UTC); epoch-ms values outside years 0001-9999 are clamped.

Writing
-------
``df.write.format("ternmq")`` and ``df.writeStream.format("ternmq")`` take these columns
(names in any case; any other column is an error when the query starts — ``select`` first):

* ``body`` (required): string -> TextMessage, binary -> BytesMessage;
* ``destination``: ``queue://NAME`` / ``topic://NAME`` per row (null: the option);
* ``correlation_id`` (string or binary), ``type``, ``reply_to`` (destination text);
* ``priority`` (integral 0 … 9), ``delivery_mode`` (``PERSISTENT``/``NON_PERSISTENT`` or
  2/1), ``expiration`` (timestamp, or bigint epoch ms; 0 = never), ``time_to_live``
  (integral ms, used when expiration is null or 0); nulls take the option defaults;
* ``properties``: ``map<string, V>`` with V string, boolean, tinyint, smallint, int,
  bigint, float or double (the JMS type follows V); ``typed_properties``: the read schema's
  map (any subset of the value fields), so a read DataFrame's properties round-trip.

Write options: ``url``, ``user``, ``password``, ``destination`` (the default for rows
without one), ``deliveryMode`` (default PERSISTENT), ``priority`` (default 4),
``timeToLive`` (ms, default 0 = never), ``sinkId`` and ``batchId`` (batch writes, default
0).

Each task stages its rows on the broker under its own transaction id (durable, invisible);
the driver's commit publishes all tasks' messages atomically under ``(sinkId, batch id)``,
and the broker publishes nothing for a pair it has already committed. A stream's sink id is
``sinkId``, else the ``checkpointLocation`` option of the ``writeStream`` (one of the two is
required), so a micro-batch replayed after a crash is published once. A batch write's sink
id is a fresh uuid unless ``sinkId`` is given; with ``sinkId``/``batchId`` a re-run of the
same job publishes nothing. ``mode("overwrite")`` is refused: use ``mode("append")``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ternmq.spark._options import OptionError
from ternmq.spark._schema import SCHEMA, SCHEMA_DDL, TYPED_PROPERTY, TYPED_PROPERTY_DDL
from ternmq.spark._source import TernmqDataSource
from ternmq.spark._write import WRITE_COLUMNS, RowError, SchemaError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "SCHEMA",
    "SCHEMA_DDL",
    "TYPED_PROPERTY",
    "TYPED_PROPERTY_DDL",
    "WRITE_COLUMNS",
    "OptionError",
    "RowError",
    "SchemaError",
    "TernmqDataSource",
    "local_session",
    "register",
]


def register(spark: SparkSession) -> None:
    """Register the ``"ternmq"`` format with ``spark`` (registration is per session).

    Raises:
        pyspark.errors.PySparkException: Spark refuses the registration.
    """
    spark.dataSource.register(TernmqDataSource)


def local_session(app_name: str = "ternmq", master: str = "local[2]") -> SparkSession:
    """A local SparkSession set up for ternmq on this machine, with the format registered.

    Spark's Python workers get this interpreter (``PYSPARK_PYTHON``, unless set: it must be
    one with ternmq and pyarrow installed) and everything stays on loopback
    (``SPARK_LOCAL_IP``, driver host and bind address 127.0.0.1); no web UI, no console
    progress bar, two shuffle partitions, session time zone UTC, log level ERROR. An active
    session is returned as it is (``getOrCreate``), registered.

    Raises:
        pyspark.errors.PySparkException: Spark cannot start (e.g. no ``java`` on PATH).
    """
    import os
    import sys

    from pyspark.sql import SparkSession as _Session

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = (
        _Session.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark


def _register_active() -> None:
    """Register with the active session, if there is one (never in an executor worker)."""
    try:
        from pyspark.sql import SparkSession

        spark = SparkSession.getActiveSession()
    except Exception:  # no JVM here (a worker), or Spark Connect without a session
        return
    if spark is not None:
        register(spark)


_register_active()
