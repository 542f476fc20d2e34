"""``ternmq bench``: throughput, latency percentiles, progress output and its bounds."""

from __future__ import annotations

import io
import re
import time

import pytest

from ternmq import ConnectionFactory, EmbeddedBroker
from ternmq.client import _admin

from ._support import one_line_error, run

SUMMARY = re.compile(
    r"sent +(\d+) in [\d.]+ s = [\d,]+ msg/s\n"
    r"received (\d+) in [\d.]+ s = [\d,]+ msg/s \([\d.]+ MiB/s\)\n"
    r"latency ms: p50 ([\d.]+)  p99 ([\d.]+)  p999 ([\d.]+)  max ([\d.]+)\n$"
)


def _summary(out: str) -> tuple[int, int, list[float]]:
    m = SUMMARY.search(out)
    assert m is not None, out
    lat = [float(x) for x in m.groups()[2:]]
    return int(m.group(1)), int(m.group(2)), lat


def test_bench_queue(capsys: pytest.CaptureFixture[str], broker: EmbeddedBroker) -> None:
    r = run(capsys, broker.url, "bench", "--messages", "500", "--destination", "bq")
    assert r.code == 0, r.err
    assert r.out.startswith(
        "bench: 500 messages of 256 B to queue://bq, 1 producer, 1 consumer, "
        "non-persistent, pipelined (sends do not wait for the broker's receipt)\n"
    )
    sent, got, lat = _summary(r.out)
    assert (sent, got) == (500, 500)
    assert lat == sorted(lat) and lat[0] >= 0
    with ConnectionFactory(broker.url).create_connection() as conn:
        (st,) = _admin.stat(conn, "queue://bq")
        assert (st.depth, st.enqueued, st.dequeued) == (0, 500, 500)


def test_bench_blocking_mode(capsys: pytest.CaptureFixture[str], broker: EmbeddedBroker) -> None:
    """--blocking, or the URL's block_on_non_persistent_send=true, measures sends that each
    wait for the broker's receipt, and says so."""
    blocking = "non-persistent, blocking (each send waits for the broker's receipt)\n"
    r = run(capsys, broker.url, "bench", "--messages", "50", "--blocking")
    assert r.code == 0, r.err
    assert r.out.splitlines()[0].endswith(blocking.rstrip()), r.out
    assert _summary(r.out)[:2] == (50, 50)
    sep = "&" if "?" in broker.url else "?"
    url = f"{broker.url}{sep}block_on_non_persistent_send=true"
    r = run(capsys, url, "bench", "--messages", "50")
    assert r.code == 0, r.err
    assert r.out.splitlines()[0].endswith(blocking.rstrip()), r.out


def test_bench_topic_persistent_many(
    capsys: pytest.CaptureFixture[str], broker: EmbeddedBroker
) -> None:
    r = run(
        capsys, broker.url, "bench", "--messages", "301", "--producers", "2", "--consumers", "3",
        "--topic", "--persistent", "--size", "10",
    )  # fmt: skip
    assert r.code == 0, r.err
    assert ", 2 producers, 3 consumers, persistent (each send waits" in r.out
    assert "to topic://bench-" in r.out
    sent, got, _ = _summary(r.out)
    assert (sent, got) == (301, 903)  # every consumer gets every message


def test_bench_queue_competing_consumers(
    capsys: pytest.CaptureFixture[str], broker: EmbeddedBroker
) -> None:
    r = run(capsys, broker.url, "bench", "--messages", "400", "--consumers", "4", "--size", "0")
    assert r.code == 0, r.err
    assert _summary(r.out)[:2] == (400, 400)


def test_bench_rate_and_plain_progress(
    capsys: pytest.CaptureFixture[str], broker: EmbeddedBroker
) -> None:
    started = time.monotonic()
    r = run(capsys, broker.url, "bench", "--messages", "30", "--rate", "20")
    elapsed = time.monotonic() - started
    assert r.code == 0, r.err
    assert elapsed >= 1.4  # 30 messages at 20/s
    assert _summary(r.out)[:2] == (30, 30)
    progress = [x for x in r.err.splitlines() if x]
    assert progress and all(x.startswith("bench: ") for x in progress)
    assert "received " in progress[0] and "msg/s" in progress[0]
    assert "\r" not in r.err


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_bench_progress_bar_on_a_tty(
    capsys: pytest.CaptureFixture[str], broker: EmbeddedBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = _Tty()
    monkeypatch.setattr("sys.stderr", fake)
    r = run(capsys, broker.url, "bench", "--messages", "10", "--rate", "20")
    assert r.code == 0
    text = fake.getvalue()
    assert "\r[" in text and "100.0%" in text and "10/10" in text
    assert text.endswith("\n")


def test_bench_duration_bound(capsys: pytest.CaptureFixture[str], broker: EmbeddedBroker) -> None:
    started = time.monotonic()
    r = run(
        capsys, broker.url, "bench", "--messages", "1000", "--rate", "20", "--duration", "0.5",
        "--destination", "slow",
    )  # fmt: skip
    assert time.monotonic() - started < 5
    assert r.code == 0, r.err
    sent, got, _ = _summary(r.out)
    assert 0 < got <= sent < 1000
    assert f"bench: stopped after --duration 0.5 s with {got} of 1000 messages received" in r.err
    with ConnectionFactory(broker.url).create_connection() as conn:
        assert _admin.stat(conn, "queue://slow")[0].depth == 0  # leftovers purged


def test_bench_errors(capsys: pytest.CaptureFixture[str], broker: EmbeddedBroker) -> None:
    one_line_error(
        run(capsys, broker.url, "bench", "--destination", "a b"), 2, "invalid queue name"
    )
    for argv in (["--messages", "0"], ["--producers", "0"], ["--rate", "-1"], ["--size", "-1"]):
        with pytest.raises(SystemExit):
            run(capsys, broker.url, "bench", *argv)


def test_bench_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with EmbeddedBroker("clibench-auth", users={"u": "p"}) as b:
        r = run(capsys, b.url, "bench", "--messages", "10", "--user", "u", "--password", "x")
        one_line_error(r, 1, f"the broker at {b.url} refused the connection")
        r = run(capsys, b.url, "bench", "--messages", "10", "--user", "u", "--password", "p")
        assert r.code == 0
