"""Fixtures of the Spark tests: one local SparkSession per test session, a network broker per
test.

The environment that Spark's Python workers inherit is set before the session starts
(``PYSPARK_PYTHON`` = this interpreter, which has ternmq and pyarrow installed;
``SPARK_LOCAL_IP`` keeps the driver on loopback). See
``../shared/notes/spark-datasource-facts.md`` §4.
"""

from __future__ import annotations

import os
import pathlib
import sys
from collections.abc import Iterator
from typing import Any

import pytest

try:  # not a skip: `make test` installs the extra, and CI must run these tests
    import pyarrow  # noqa: F401
    import pyspark  # noqa: F401
except ImportError as exc:
    raise pytest.UsageError(
        f"tests/spark need the spark extra ({exc}): pip install -e '.[dev,spark]' "
        "(make test installs it)"
    ) from exc


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """A ``local[2]`` SparkSession with the ``ternmq`` format registered."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    import ternmq.spark

    session = ternmq.spark.local_session("ternmq-tests")
    yield session
    session.stop()


@pytest.fixture
def broker_url(tmp_path: pathlib.Path) -> Iterator[str]:
    """A network broker (the server of ``ternmq serve``, in this process, on a thread)
    listening on 127.0.0.1 port 0 with a fresh data directory; yields its ``tcp://`` url."""
    from ternmq.server.app import ServerThread
    from ternmq.server.config import ListenerConfig, ServerConfig

    config = ServerConfig(
        listeners=(ListenerConfig(bind="127.0.0.1", port=0),),
        data_dir=str(tmp_path / "broker"),
        fsync="batch",
        log_level="warning",
    )
    thread = ServerThread(config).start()
    try:
        yield thread.url
    finally:
        thread.stop()
