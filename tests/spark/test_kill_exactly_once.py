"""Exactly-once through crashes: a streaming query from a queue into another queue (and
into Parquet) is SIGKILLed, whole process group (driver JVM, Python workers), several times
and restarted from its checkpoint each time.

The broker is a real ``ternmq serve`` process that outlives the kills. Kill points are taken
when the sink has published part of the output, which lands most kills in the worst window
(a batch published by the sink, not yet in Spark's commit log): the restarted query replays
that batch, and the broker's (sink, batch) record turns the replay into a no-op.

Checked after the last run: every input message is in the output exactly once, and the
source queue is empty (the source acknowledges what the checkpoint has committed).
"""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from server._support import ServerProcess
from ternmq.client import Connection, ConnectionFactory
from ternmq.client._admin import stat
from ternmq.client.sequenced import commit_staged, log_bounds, read_range, stage
from ternmq.errors import InvalidDestinationException
from ternmq.message import TextMessage
from ternmq.message.codec import decode_message

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(900)]

JOB = pathlib.Path(__file__).with_name("_kill_job.py")
RUN_TIMEOUT = 240.0  # one Spark run, start-up included, on a loaded 2-core machine


@pytest.fixture
def server(tmp_path: pathlib.Path) -> Iterator[str]:
    """A ``ternmq serve`` process on port 0 (killed after the test); yields its url."""
    proc = ServerProcess(tmp_path / "broker", None, tmp_path)
    try:
        yield f"tcp://127.0.0.1:{proc.port}"
    finally:
        proc.kill()


def _seed(conn: Connection, dest: str, n: int) -> list[str]:
    bodies = [f"order-{i:06d}" for i in range(n)]

    def messages() -> Iterator[tuple[str, TextMessage]]:
        for i, body in enumerate(bodies):
            m = TextMessage()
            m.text = body
            m.set_int_property("oid", i)
            yield dest, m

    stage(conn, "seed", 0, "seed-0", messages())
    assert commit_staged(conn, "seed", 0, ["seed-0"]).published == n
    return bodies


def _depth(conn: Connection, dest: str) -> int:
    try:
        return stat(conn, dest)[0].depth
    except InvalidDestinationException:
        return 0


def _job(
    url: str, source: str, sink: str, checkpoint: pathlib.Path, per_trigger: int, log: pathlib.Path
) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    with open(log, "ab") as out:
        return subprocess.Popen(
            [sys.executable, str(JOB), url, source, sink, str(checkpoint), str(per_trigger)],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,  # its own process group: the JVM and workers die with it
        )


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(30)


def _run_until(proc: subprocess.Popen[bytes], done: object, log: pathlib.Path) -> bool:
    """Wait until ``done()`` (then SIGKILL the group: True) or the job exits (False)."""
    deadline = time.monotonic() + RUN_TIMEOUT
    try:
        while time.monotonic() < deadline:
            if done():  # type: ignore[operator]
                _kill_group(proc)
                return True
            if proc.poll() is not None:
                return False
            time.sleep(0.05)
        raise AssertionError(
            f"the Spark job made no progress in {RUN_TIMEOUT} s:\n"
            + log.read_text(errors="replace")[-4000:]
        )
    except BaseException:
        _kill_group(proc)
        raise


def _finish(proc: subprocess.Popen[bytes], log: pathlib.Path) -> None:
    try:
        rc = proc.wait(RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise
    assert rc == 0, log.read_text(errors="replace")[-4000:]


def _texts(conn: Connection, dest: str) -> list[str]:
    b = log_bounds(conn, dest)
    return [
        decode_message(r.data).get_body(str)
        for chunk in read_range(conn, dest, b.earliest, b.latest)
        for r in chunk
    ]


def test_queue_to_queue_exactly_once_through_three_sigkills(
    server: str, tmp_path: pathlib.Path
) -> None:
    """SIGKILL the Spark driver's process group three times while a stream copies 20,000
    messages between queues, restart from the checkpoint each time: the output queue holds
    every input message exactly once and the input queue ends empty."""
    n, per_trigger = 20_000, 2_000
    src, sink = "queue://kill-in", "queue://kill-out"
    checkpoint, log = tmp_path / "checkpoint", tmp_path / "job.log"
    with ConnectionFactory(server).create_connection() as conn:
        expected = _seed(conn, src, n)
        kills = 0
        for threshold in (4_000, 10_000, 14_000):
            proc = _job(server, src, sink, checkpoint, per_trigger, log)
            killed = _run_until(proc, lambda t=threshold: _depth(conn, sink) >= t, log)
            assert killed, "the job finished before the kill point: " + log.read_text()[-2000:]
            kills += 1
        assert kills == 3
        assert 0 < _depth(conn, sink) < n or _depth(conn, sink) == n
        _finish(_job(server, src, sink, checkpoint, per_trigger, log), log)
        got = _texts(conn, sink)
        assert len(got) == n, (
            f"{len(got) - len(set(got))} duplicates, {len(set(expected) - set(got))} missing"
        )
        assert sorted(got) == expected
        assert _depth(conn, src) == 0, "the source queue still holds acknowledged input"


def _parquet_rows(path: pathlib.Path) -> list[str]:
    """The rows of Spark's file sink as a Spark reader sees them: only the files its
    ``_spark_metadata`` log lists (files of a killed batch are not part of the output)."""
    import pyarrow.parquet as pq

    files: set[str] = set()
    meta = path / "_spark_metadata"
    logs = [p for p in meta.iterdir() if p.name.split(".")[0].isdigit()]  # not .N.crc
    for entry in sorted(logs, key=lambda p: int(p.name.split(".")[0])):
        for line in entry.read_text().splitlines()[1:]:
            rec = json.loads(line)
            if rec.get("action", "add") == "add":
                files.add(rec["path"])
            else:
                files.discard(rec["path"])
    rows: list[str] = []
    for f in sorted(files):
        local = f.removeprefix("file:")
        rows += pq.read_table(local).column("text_body").to_pylist()
    return rows


def test_queue_to_parquet_exactly_once_through_a_sigkill(
    server: str, tmp_path: pathlib.Path
) -> None:
    """The same with Spark's Parquet file sink: one SIGKILL once some batches are written,
    a restart, and the committed files hold every input message once."""
    n, per_trigger = 6_000, 1_000
    src = "queue://kill-parquet-in"
    out, checkpoint, log = tmp_path / "parquet", tmp_path / "checkpoint-pq", tmp_path / "pq.log"
    with ConnectionFactory(server).create_connection() as conn:
        expected = _seed(conn, src, n)
        commits = checkpoint / "commits"
        proc = _job(server, src, f"parquet:{out}", checkpoint, per_trigger, log)

        def two_batches_done() -> bool:
            return commits.is_dir() and len([p for p in commits.iterdir() if p.name.isdigit()]) >= 2

        assert _run_until(proc, two_batches_done, log), "finished before the kill point"
        _finish(_job(server, src, f"parquet:{out}", checkpoint, per_trigger, log), log)
        rows = _parquet_rows(out)
        assert sorted(rows) == expected
        assert _depth(conn, src) == 0
