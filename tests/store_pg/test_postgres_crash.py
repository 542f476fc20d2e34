"""Crash tests of the PostgreSQL store: ``tests/durability/test_crash.py``'s SIGKILL runs,
with the broker on a fresh PostgreSQL database instead of a data directory.

REL-01, REL-05, REL-06, REL-09, REL-12, SUB-17, TX-02..TX-04, TX-15, PROD-13, PROD-15,
PROD-17, PROD-22, A-15: a ``ternmq serve --store postgresql://...`` process (and an embedded
broker on ``store=postgresql://...``) SIGKILLed at a random moment under the crash worker's
producers, consumers and transactions; a new one on the same database must hold every send
that returned, nothing acknowledged or committed, each message at most once, redelivered
ones flagged. The journal, the worker and the checker are those of ``test_crash.py``; the
seed is printed in every failure and can be fixed with ``TERNMQ_CRASH_SEED``.
"""

from __future__ import annotations

import pathlib

import pytest

from durability.test_crash import (
    BASE_SEED,
    drain_embedded,
    drain_served,
    read_journal,
    run_and_kill,
)
from durability.test_crash import _verify as verify

KILLS = 5


@pytest.mark.parametrize("run_no", range(KILLS))
def test_sigkill_of_ternmq_serve_on_postgresql_loses_and_duplicates_nothing(
    tmp_path: pathlib.Path, pg_url: str, run_no: int
) -> None:
    """The promises of a SIGKILLed ``ternmq serve --store postgresql://...`` over tcp://,
    checked through a new server on the same database."""
    run = run_and_kill(tmp_path, BASE_SEED + 5000 + run_no, network=True, store=pg_url)
    journal = read_journal(run.journal)
    got, recovered = drain_served(tmp_path, run.data_dir, pg_url)
    verify(run, journal, got, recovered)


@pytest.mark.parametrize("run_no", range(2))
def test_sigkill_of_an_embedded_broker_on_postgresql_loses_and_duplicates_nothing(
    tmp_path: pathlib.Path, pg_url: str, run_no: int
) -> None:
    """The same promises for an embedded broker on the PostgreSQL store (the worker's process
    group SIGKILLed), checked through an embedded broker in this process."""
    run = run_and_kill(tmp_path, BASE_SEED + 6000 + run_no, store=pg_url)
    journal = read_journal(run.journal)
    got, recovered = drain_embedded(pg_url)
    verify(run, journal, got, recovered)
