"""``ternmq stat --wide`` and ``--json``: the per-destination counters (issue 16)."""

from __future__ import annotations

import json

import pytest

from ternmq import ConnectionFactory, EmbeddedBroker, Queue, Session

from ._support import run


def test_stat_wide_and_json_show_every_counter(
    capsys: pytest.CaptureFixture[str], broker: EmbeddedBroker
) -> None:
    with ConnectionFactory(broker.url).create_connection() as conn:
        conn.start()
        s = conn.create_session(False, Session.CLIENT_ACKNOWLEDGE)
        p = s.create_producer(Queue("w"))
        for i in range(3):
            p.send(s.create_text_message(f"m{i}"))
        k = s.create_consumer(Queue("w"))
        first = k.receive(1.0)
        assert first is not None
        s.recover()  # seen by the application, so it comes back redelivered
        again = k.receive(1.0)
        assert again is not None and again.jms_redelivered
        again.acknowledge()
    narrow = run(capsys, broker.url, "stat", "queue://w").out.splitlines()[0].split()
    r = run(capsys, broker.url, "stat", "queue://w", "--wide")
    assert r.code == 0, r.err
    header, row = (line.split() for line in r.out.splitlines())
    # The usual columns first, then the rest of the counters.
    assert header[: len(narrow)] == narrow
    assert header[len(narrow) :] == [
        "scheduled",
        "memory",
        "expired",
        "dead-lettered",
        "redelivered",
    ]
    cells = dict(zip(header, row))
    assert (cells["depth"], cells["enqueued"], cells["dequeued"]) == ("2", "3", "1")
    assert (cells["expired"], cells["dead-lettered"], cells["redelivered"]) == ("0", "0", "1")
    assert int(cells["memory"]) > 0
    (d,) = json.loads(run(capsys, broker.url, "stat", "queue://w", "--json").out)
    assert (d["redelivered"], d["expired"], d["dead_lettered"]) == (1, 0, 0)
