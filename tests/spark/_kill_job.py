"""A streaming job that the exactly-once kill test starts, SIGKILLs and restarts.

Usage: ``python _kill_job.py URL SOURCE SINK CHECKPOINT PER_TRIGGER``

Reads the queue ``SOURCE`` with the ``ternmq`` source (``maxMessagesPerTrigger`` =
``PER_TRIGGER``), upper-cases nothing (the point is the delivery guarantee, not the
transformation) and writes either to the ternmq queue ``SINK`` (``queue://...``: body and
properties carried over) or, with ``parquet:PATH``, to Spark's Parquet file sink. Trigger
``availableNow``: the job ends by itself when it has caught up (exit code 0).
"""

from __future__ import annotations

import os
import sys

os.environ["PYSPARK_PYTHON"] = sys.executable
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

import ternmq.spark


def main() -> int:
    url, source, sink, checkpoint, per_trigger = sys.argv[1:6]
    spark = ternmq.spark.local_session("ternmq-kill-job")
    df = (
        spark.readStream.format("ternmq")
        .option("url", url)
        .option("destination", source)
        .option("maxMessagesPerTrigger", per_trigger)
        .load()
    )
    if sink.startswith("parquet:"):
        writer = (
            df.select("sequence", "message_id", "text_body")
            .writeStream.format("parquet")
            .option("path", sink.removeprefix("parquet:"))
        )
    else:
        writer = (
            df.selectExpr("text_body AS body", "properties")
            .writeStream.format("ternmq")
            .option("url", url)
            .option("destination", sink)
        )
    query = writer.option("checkpointLocation", checkpoint).trigger(availableNow=True).start()
    query.awaitTermination()
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
