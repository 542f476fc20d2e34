"""Crash tests: SIGKILL a broker process at random moments and check what survived.

REL-01, PROD-13, PROD-15, PROD-22 (once ``send()`` returned or its completion listener ran, a
PERSISTENT message survives a crash; acknowledged, it never comes back), REL-05/REL-06 (no
second copy, no duplicate), REL-09 and SUB-17 (queue contents, durable subscription
definitions and their backlogs survive), TX-02/TX-03/TX-04/TX-15 (a committed transaction's
sends and receives survive as a whole, an uncommitted or rolled-back one's never show; an
in-doubt commit is all or nothing), REL-12 and A-15 (a message delivered to the application
before the crash comes back with ``jms_redelivered`` True and ``JMSXDeliveryCount`` >= 2),
PROD-17 (a delayed message is not delivered before its delivery time, before or after the
crash), SUB-01/SUB-03 (the selector of a durable subscription still applies after restart).
Also ``what-users-ask-for.md`` item 5: kill -9 must not lose confirmed messages.

How: ``_crash_worker.py`` runs producer and consumer threads that journal every completed
step (see its docstring). The test starts it, waits until it is busy, waits a random 0.05-1.2 s
more, and kills the broker:

- embedded: the worker runs the broker on a fresh data dir; its process group is SIGKILLed;
- network: the broker is a ``ternmq serve`` process (port 0, a fresh data dir) and the worker's
  clients reach it over ``tcp://``; the worker is frozen (SIGSTOP, so its journal ends where the
  application was), the server SIGKILLed, then the worker killed.

Then the data dir is reopened (an ``EmbeddedBroker`` in this process, or a new ``ternmq serve``
on it), every queue and both durable subscriptions are drained (re-attached with the same
client id, name, topic and selector; the admin ``Stat`` request says how many messages each
holds) and the result is checked against the journal. ``KILLS`` runs of each, each on a fresh
directory under ``tmp_path``. The random moments come from ``random.Random(seed)``; the base
seed is printed in every failure and can be fixed with ``TERNMQ_CRASH_SEED``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import random
import re
import select
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import defaultdict
from typing import Any

import pytest

from ternmq.broker.embedded import EmbeddedBroker
from ternmq.client import ConnectionFactory, Session
from ternmq.client._admin import stat
from ternmq.destination import Queue, Topic
from ternmq.store.sqlite import SqliteStore

WORKER = pathlib.Path(__file__).with_name("_crash_worker.py")
KILLS = 20
BASE_SEED = int(os.environ.get("TERNMQ_CRASH_SEED", random.SystemRandom().randrange(2**31)))
CLIENT_ID = "crash-sub"
SELECTOR = "kind = 'keep'"
READY_TIMEOUT = 20.0  # the worker's start (interpreter, imports, broker) on a loaded machine
DRAIN_TIMEOUT = 20.0
QUIET = 0.05  # a receive that waits this long and finds nothing ends a drain (with depth 0)
STOP_TIMEOUT = 30.0  # a graceful stop of the verifying server
# The worker's settings: nothing dead-letters (the verifier's receipts count as deliveries).
SERVER_CONFIG = 'log_level = "warning"\n[broker]\nmax_delivery_attempts = -1\n'
_LISTENING = re.compile(rb"ternmq listening on (tcp://127\.0\.0\.1:\d+)")

# Where a message sent to each journal ``dest`` must be found.
PLACES: dict[str, tuple[str, ...]] = {
    "CQ": ("CQ",),
    "TQ": ("TQ",),
    "FQ": ("FQ",),
    "DQ": ("DQ",),
    "T+": ("dsub", "idle"),
    "T-": ("idle",),
}
QUEUES = ("CQ", "TQ", "FQ", "DQ", "DLQ")
SUBSCRIPTIONS = {"dsub": SELECTOR, "idle": None}


# ---- running and killing the worker -------------------------------------------------------
@dataclasses.dataclass
class Run:
    seed: int
    data_dir: pathlib.Path
    journal: pathlib.Path
    delay: float = 0.0

    def where(self) -> str:
        return (
            f"seed={self.seed} (TERNMQ_CRASH_SEED={BASE_SEED}), killed {self.delay:.3f} s "
            f"after ready, data dir {self.data_dir}"
        )


class Server:
    """A ``ternmq serve`` process on ``data_dir`` (127.0.0.1, port 0), its log in ``workdir``.

    Raises:
        AssertionError: it did not print its listening line within ``READY_TIMEOUT``.
    """

    def __init__(self, workdir: pathlib.Path, data_dir: pathlib.Path) -> None:
        config = workdir / "server.toml"
        config.write_text(SERVER_CONFIG, encoding="utf-8")
        self.log_path = workdir / "server.log"
        script = pathlib.Path(sys.executable).with_name("ternmq")
        serve = [str(script)] if script.exists() else [sys.executable, "-m", "ternmq.cli"]
        argv = [*serve, "serve", "--port", "0", "--http-port", "-1", "--config", str(config)]
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [*argv, "--data-dir", str(data_dir)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=log,
                start_new_session=True,
            )
        try:
            self.url = self._listening()
        except BaseException:
            self.kill()
            raise

    def _listening(self) -> str:
        assert self.proc.stdout is not None
        fd, buf = self.proc.stdout.fileno(), b""
        deadline = time.monotonic() + READY_TIMEOUT
        while (m := _LISTENING.search(buf)) is None:
            left = deadline - time.monotonic()
            ready = select.select([fd], [], [], left)[0] if left > 0 else []
            chunk = os.read(fd, 4096) if ready else b""
            if not chunk:
                raise AssertionError(f"ternmq serve did not start; log:\n{self.log()}")
            buf += chunk
        return m.group(1).decode()

    def log(self) -> str:
        return _read(self.log_path).decode(errors="replace")[-4000:]

    def kill(self) -> None:
        """SIGKILL and wait (a no-op once it is gone)."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()

    def stop(self) -> int | None:
        """SIGTERM; the exit status (None: it did not stop in time and was killed)."""
        self.proc.terminate()
        try:
            return self.proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            return None
        finally:
            self.kill()


def run_and_kill(tmp_path: pathlib.Path, seed: int, *, network: bool = False) -> Run:
    """Start the worker (and, with ``network``, the server it uses), wait for its ``ready``
    line, then a random moment; kill the broker (see the module docstring)."""
    run = Run(seed, tmp_path / "data", tmp_path / "journal.jsonl")
    run.delay = random.Random(seed).uniform(0.05, 1.2)
    stderr = tmp_path / "worker.err"
    server = Server(tmp_path, run.data_dir) if network else None
    try:
        where = str(run.data_dir) if server is None else server.url
        with stderr.open("wb") as err:
            proc = subprocess.Popen(
                [sys.executable, str(WORKER), where, str(run.journal), str(seed)],
                start_new_session=True,
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
        try:
            deadline = time.monotonic() + READY_TIMEOUT
            while b'"op":"ready"' not in _read(run.journal):
                if proc.poll() is not None or time.monotonic() > deadline:
                    text = _read(stderr).decode(errors="replace")
                    pytest.fail(f"the crash worker never became ready ({run.where()}):\n{text}")
                time.sleep(0.01)
            time.sleep(run.delay)  # the random moment of the crash, not a synchronisation
            assert proc.poll() is None, (
                f"the worker ended before the kill ({run.where()}):\n"
                + _read(stderr).decode(errors="replace")
            )
            if server is not None:
                assert server.proc.poll() is None, f"the server died ({run.where()}):\n" + (
                    server.log()
                )
                os.killpg(proc.pid, signal.SIGSTOP)
                _, status = os.waitpid(proc.pid, os.WUNTRACED)  # frozen: the journal is final
                assert os.WIFSTOPPED(status), f"the worker did not stop: status {status}"
                server.kill()
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    finally:
        if server is not None:
            server.kill()
    return run


def _read(path: pathlib.Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return b""


def read_journal(path: pathlib.Path) -> list[dict[str, Any]]:
    """The journal's complete lines (a torn last line, cut by the kill, is dropped)."""
    data = _read(path)
    lines = data.split(b"\n")
    return [json.loads(line) for line in lines[:-1] if line]


# ---- draining the restarted broker --------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Got:
    uid: str
    redelivered: bool
    count: int
    delivery_time: int
    at: int


def _depths(admin: Any) -> dict[str, int]:
    """Messages the broker holds per place (waiting, scheduled or in flight), from the admin
    Stat request; a place it does not have holds 0."""
    out: dict[str, int] = {}
    for d in stat(admin):
        if d.name.startswith("queue://"):
            out[d.name.removeprefix("queue://")] = d.depth
        for sub in d.subscriptions:
            if sub.name.startswith(f"{CLIENT_ID}:"):
                out[sub.name.removeprefix(f"{CLIENT_ID}:")] = sub.depth
    return out


def drain(url: str) -> tuple[dict[str, list[Got]], list[str]]:
    """Receive everything the restarted broker at ``url`` holds, one thread per place;
    nothing is acknowledged. Returns what each place held and the durable subscriptions the
    broker had recovered before they were re-attached."""
    factory = ConnectionFactory(url)
    with factory.create_connection() as admin:
        recovered = sorted(
            sub.name
            for d in stat(admin)
            for sub in d.subscriptions
            if sub.kind in ("durable", "shared_durable")
        )
        conn = factory.create_connection()
        conn.client_id = CLIENT_ID
        got: dict[str, list[Got]] = {p: [] for p in (*QUEUES, *SUBSCRIPTIONS)}
        consumers = {}
        for place in got:
            session = conn.create_session(False, Session.CLIENT_ACKNOWLEDGE)
            if place in SUBSCRIPTIONS:
                consumers[place] = session.create_durable_consumer(
                    Topic("T"), place, SUBSCRIPTIONS[place]
                )
            else:
                consumers[place] = session.create_consumer(Queue(place))
        conn.start()
        deadline = time.monotonic() + DRAIN_TIMEOUT

        def take(place: str) -> None:
            consumer = consumers[place]
            out = got[place]
            while time.monotonic() < deadline:
                m = consumer.receive(QUIET)
                if m is not None:
                    uid = m.get_string_property("uid")
                    out.append(
                        Got(
                            str(uid),
                            m.jms_redelivered,
                            m.get_int_property("JMSXDeliveryCount"),
                            m.jms_delivery_time,
                            time.time_ns() // 1_000_000,
                        )
                    )
                elif len(out) >= _depths(admin).get(place, 0):
                    return

        threads = [threading.Thread(target=take, args=(p,), daemon=True) for p in got]
        for t in threads:
            t.start()
        for t in threads:
            t.join(DRAIN_TIMEOUT + 5)
        depths = _depths(admin)
        stuck = [p for p in got if len(got[p]) < depths.get(p, 0)]
        assert not stuck, f"could not drain {stuck} within {DRAIN_TIMEOUT} s"
        conn.close()
    return got, recovered


def drain_embedded(data_dir: pathlib.Path) -> tuple[dict[str, list[Got]], list[str]]:
    """:func:`drain` with an embedded broker on ``data_dir`` in this process."""
    name = f"crash-verify-{uuid.uuid4().hex[:8]}"
    embedded = EmbeddedBroker(name, str(data_dir), max_delivery_attempts=-1).start()
    try:
        return drain(embedded.url)
    finally:
        embedded.stop()


def drain_served(
    workdir: pathlib.Path, data_dir: pathlib.Path
) -> tuple[dict[str, list[Got]], list[str]]:
    """:func:`drain` with a new ``ternmq serve`` process on ``data_dir``, which must then
    stop gracefully (exit status 0)."""
    server = Server(workdir, data_dir)
    try:
        result = drain(server.url)
    finally:
        code = server.stop()
    assert code == 0, f"the verifying server exited with {code}:\n{server.log()}"
    return result


# ---- the journal's promises ---------------------------------------------------------------
@dataclasses.dataclass
class Promises:
    """What the journal proves the application was told before the kill."""

    dest: dict[str, str] = dataclasses.field(default_factory=dict)  # uid -> journal dest
    tx_of: dict[str, str] = dataclasses.field(default_factory=dict)  # uid -> transaction
    sent: dict[str, int] = dataclasses.field(default_factory=dict)  # uid -> delivery time
    tx_state: dict[str, str] = dataclasses.field(default_factory=dict)
    tx_sends: dict[str, list[str]] = dataclasses.field(default_factory=lambda: defaultdict(list))
    tx_acks: dict[str, list[tuple[str, str]]] = dataclasses.field(default_factory=dict)
    acked: set[tuple[str, str]] = dataclasses.field(default_factory=set)
    ack_begun: set[tuple[str, str]] = dataclasses.field(default_factory=set)
    received: dict[tuple[str, str], list[dict[str, Any]]] = dataclasses.field(
        default_factory=lambda: defaultdict(list)
    )
    errors: list[str] = dataclasses.field(default_factory=list)
    problems: list[str] = dataclasses.field(default_factory=list)

    @classmethod
    def of(cls, journal: list[dict[str, Any]]) -> Promises:
        p = cls()
        for rec in journal:
            op = rec["op"]
            if op == "send":
                p.dest[rec["uid"]] = rec["dest"]
                if rec["tx"] is not None:
                    p.tx_of[rec["uid"]] = rec["tx"]
                    p.tx_sends[rec["tx"]].append(rec["uid"])
                    p.tx_state.setdefault(rec["tx"], "open")
            elif op == "sent":
                p.sent[rec["uid"]] = rec["dt"]
            elif op == "recv":
                key = (rec["place"], rec["uid"])
                if key in p.acked:  # REL-05 before the crash already
                    p.problems.append(f"{key} received again after it was acknowledged")
                p.received[key].append(rec)
                if rec["tx"] is not None:
                    p.tx_state.setdefault(rec["tx"], "open")
            elif op == "ack-begin":
                p.ack_begun.update((rec["place"], u) for u in rec["uids"])
            elif op == "acked":
                p.acked.update((rec["place"], u) for u in rec["uids"])
            elif op == "commit-begin":
                p.tx_state[rec["tx"]] = "committing"
                p.tx_acks[rec["tx"]] = [(a[0], a[1]) for a in rec["acks"]]
            elif op == "committed":
                p.tx_state[rec["tx"]] = "committed"
                p.acked.update(p.tx_acks[rec["tx"]])
            elif op == "rollback-begin":
                p.tx_state[rec["tx"]] = "rolling back"
            elif op == "rolledback":
                p.tx_state[rec["tx"]] = "rolled back"
            elif op == "error":
                p.errors.append(f"{rec['thread']}: {rec['text']}")
        return p


def check(journal: list[dict[str, Any]], got: dict[str, list[Got]]) -> list[str]:
    """Every violated invariant, as readable lines (empty: all hold)."""
    p = Promises.of(journal)
    problems = list(p.problems) + [f"worker error: {e}" for e in p.errors]
    present: dict[str, dict[str, Got]] = {}
    for place, items in got.items():
        present[place] = {}
        for g in items:
            if g.uid in present[place]:  # REL-06: at most one copy per place
                problems.append(f"{place}: {g.uid} delivered twice after restart")
            present[place][g.uid] = g
    if got["DLQ"]:
        problems.append(f"DLQ holds {[g.uid for g in got['DLQ']]} (nothing may dead-letter)")

    def is_present(place: str, uid: str) -> bool:
        return uid in present.get(place, {})

    # In-doubt commits (commit() called, its return not journaled): decide by the evidence,
    # which must be all-or-nothing (TX-02) -- then treat as committed or rolled back.
    for tx, state in p.tx_state.items():
        if state != "committing":
            continue
        evidence = [
            any(is_present(pl, u) or (pl, u) in p.received for pl in PLACES[p.dest[u]])
            for u in p.tx_sends.get(tx, [])
        ] + [not is_present(pl, u) for pl, u in p.tx_acks.get(tx, [])]
        if len(set(evidence)) > 1:
            problems.append(f"in-doubt commit {tx} took effect only in part: {evidence}")
        elif evidence and evidence[0]:
            p.tx_state[tx] = "committed"
            p.acked.update(p.tx_acks.get(tx, []))
        else:
            p.tx_state[tx] = "rolled back"
    ack_doubt = p.ack_begun - p.acked
    for tx, state in p.tx_state.items():
        if state == "committing":
            ack_doubt.update(p.tx_acks.get(tx, []))

    # Promised: a send that returned, a committed transaction's sends, anything a consumer
    # saw (a delivery leaves the broker only after the send's batch is durable).
    promised = {u for u in p.sent if u not in p.tx_of}
    promised |= {u for u, tx in p.tx_of.items() if p.tx_state.get(tx) == "committed"}
    promised |= {u for _, u in p.received}
    for uid, tx in p.tx_of.items():
        if p.tx_state.get(tx) == "committed":
            continue
        # TX-03, TX-04, TX-15: never visible, before or after the crash
        for place in PLACES[p.dest[uid]]:
            if is_present(place, uid):
                problems.append(f"{place}: {uid} of {p.tx_state[tx]} transaction {tx} present")
            if (place, uid) in p.received:
                problems.append(f"{place}: {uid} of {p.tx_state[tx]} transaction {tx} received")
    for uid in sorted(promised):
        dest = p.dest.get(uid)
        if dest is None:
            problems.append(f"{uid} received but never sent")
            continue
        for place in PLACES[dest]:
            key = (place, uid)
            if key in p.acked or key in ack_doubt or is_present(place, uid):
                continue
            problems.append(f"{place}: {uid} LOST (promised, not acknowledged, not present)")
    for place, uid in sorted(p.acked):
        if is_present(place, uid):
            problems.append(f"{place}: {uid} DUPLICATE (acknowledged before the kill, present)")
    for place, by_uid in present.items():
        if place == "DLQ":
            continue
        for uid, g in by_uid.items():
            dest = p.dest.get(uid)
            if dest is None or place not in PLACES[dest]:
                problems.append(f"{place}: {uid} present but never sent there (dest {dest})")
            if (place, uid) in p.received and not (g.redelivered and g.count >= 2):
                problems.append(  # REL-12, A-15
                    f"{place}: {uid} was delivered before the kill but came back with "
                    f"redelivered={g.redelivered}, JMSXDeliveryCount={g.count}"
                )
            if uid in p.sent and g.delivery_time != p.sent[uid]:
                problems.append(
                    f"{place}: {uid} delivery time {g.delivery_time} != sent {p.sent[uid]}"
                )
            if g.at < g.delivery_time:  # PROD-17 after restart
                problems.append(f"{place}: {uid} delivered {g.delivery_time - g.at} ms early")
    for (place, uid), recs in p.received.items():
        if place == "dsub" and p.dest.get(uid) == "T-":
            problems.append(f"dsub received {uid}, which its selector excludes")
        for rec in recs:
            if rec["at"] < rec["dt"]:  # PROD-17 before the crash
                problems.append(f"{place}: {uid} delivered {rec['dt'] - rec['at']} ms early")
    return problems


def _summary(journal: list[dict[str, Any]], got: dict[str, list[Got]]) -> str:
    ops: dict[str, int] = defaultdict(int)
    for rec in journal:
        ops[rec["op"]] += 1
    held = {place: len(items) for place, items in got.items()}
    return f"journal {dict(ops)}; after restart {held}"


def _verify(
    run: Run, journal: list[dict[str, Any]], got: dict[str, list[Got]], recovered: list[str]
) -> None:
    """Check the drained broker against the journal, then its store against the drain."""
    problems = check(journal, got)
    if not {"crash-sub:dsub", "crash-sub:idle"} <= set(recovered):
        problems.append(f"durable subscriptions after restart: {recovered} (REL-09, SUB-17)")
    assert not problems, (
        f"{len(problems)} violations ({run.where()}); {_summary(journal, got)}:\n"
        + "\n".join(problems[:25])
    )
    # The verifying restart acknowledged nothing: the store still holds what it delivered.
    store = SqliteStore(run.data_dir)
    try:
        stored = {k: len(v) for k, v in store.load().messages.items()}
    finally:
        store.close()
    for place in QUEUES:
        assert stored.get(f"queue://{place}", 0) == len(got[place]), (
            f"{place}: {stored.get(f'queue://{place}', 0)} stored after the verifying run, "
            f"{len(got[place])} delivered in it ({run.where()})"
        )
    in_subs = sum(n for key, n in stored.items() if not key.startswith("queue://"))
    assert in_subs == len(got["dsub"]) + len(got["idle"]), (
        f"durable subscriptions: {in_subs} stored after the verifying run, "
        f"{len(got['dsub']) + len(got['idle'])} delivered in it ({run.where()})"
    )


@pytest.mark.parametrize("run_no", range(KILLS))
def test_sigkill_at_a_random_moment_loses_and_duplicates_nothing(
    tmp_path: pathlib.Path, run_no: int
) -> None:
    """REL-01, REL-05, REL-06, REL-09, REL-12, SUB-17, TX-02..TX-04, TX-15, PROD-13, PROD-15,
    PROD-17, PROD-22, A-15: after a SIGKILL at a random moment and a restart, every send that
    returned is there, nothing acknowledged or committed comes back, no rolled-back or
    uncommitted send appears, each message at most once, and messages delivered before the
    kill carry the redelivered flag and a count >= 2."""
    run = run_and_kill(tmp_path, BASE_SEED + run_no)
    journal = read_journal(run.journal)
    got, recovered = drain_embedded(run.data_dir)
    _verify(run, journal, got, recovered)


@pytest.mark.parametrize("run_no", range(KILLS))
def test_sigkill_of_ternmq_serve_over_tcp_loses_and_duplicates_nothing(
    tmp_path: pathlib.Path, run_no: int
) -> None:
    """REL-01, REL-05, REL-06, REL-09, REL-12, SUB-17, TX-02..TX-04, TX-15, PROD-13, PROD-15,
    PROD-17, PROD-22, A-15, over the network: the same promises when the broker is a
    ``ternmq serve`` process SIGKILLed at a random moment under clients that reach it over
    tcp://, and a new ``ternmq serve`` recovers its data dir."""
    run = run_and_kill(tmp_path, BASE_SEED + 1000 + run_no, network=True)
    journal = read_journal(run.journal)
    got, recovered = drain_served(tmp_path, run.data_dir)
    _verify(run, journal, got, recovered)


# ---- the checker itself -------------------------------------------------------------------
def _rec(op: str, **fields: Any) -> dict[str, Any]:
    return {"op": op, **fields}


def _send(dest: str, uid: str, tx: str | None = None, sent: bool = True) -> list[dict[str, Any]]:
    out = [_rec("send", dest=dest, uid=uid, tx=tx)]
    if sent and tx is None:
        out.append(_rec("sent", uid=uid, dt=0))
    return out


def _recv(place: str, uid: str, tx: str | None = None, at: int = 10, dt: int = 0) -> Any:
    return _rec("recv", place=place, uid=uid, count=1, redelivered=False, at=at, dt=dt, tx=tx)


def _got(*uids: str, redelivered: bool = False, count: int = 1) -> list[Got]:
    return [Got(u, redelivered, count, 0, 100) for u in uids]


def _empty() -> dict[str, list[Got]]:
    return {p: [] for p in (*QUEUES, *SUBSCRIPTIONS)}


def test_the_checker_accepts_what_the_promises_allow() -> None:
    """The checker's positive control: in-doubt sends may be missing, in-doubt
    acknowledgements may come back (flagged), committed transactions are whole, a received
    message back with its flags is fine."""
    journal = [
        _rec("ready"),
        *_send("CQ", "cq-1"),
        *_send("CQ", "cq-2", sent=False),  # send() never returned: may be absent
        *_send("CQ", "cq-3"),
        _recv("CQ", "cq-3"),
        _rec("ack-begin", place="CQ", uids=["cq-3"]),  # acknowledge() never returned
        *_send("TQ", "tq-1", "p1"),
        *_send("TQ", "tq-2", "p1"),
        _rec("commit-begin", tx="p1", acks=[]),
        _rec("committed", tx="p1"),
        _recv("TQ", "tq-1", "c1"),
        *_send("FQ", "f.tq-1.c1", "c1"),
        _rec("commit-begin", tx="c1", acks=[["TQ", "tq-1"]]),  # in doubt: took effect
        *_send("T+", "t-1"),
        *_send("T-", "t-2"),
        _recv("dsub", "t-1"),
        _rec("ack-begin", place="dsub", uids=["t-1"]),
        _rec("acked", place="dsub", uids=["t-1"]),
    ]
    got = _empty()
    got["CQ"] = _got("cq-1") + _got("cq-3", redelivered=True, count=2)
    got["TQ"] = _got("tq-2")
    got["FQ"] = _got("f.tq-1.c1")
    got["idle"] = _got("t-1", "t-2")
    assert check(journal, got) == []


def test_the_checker_flags_each_kind_of_violation() -> None:
    """The checker's negative control: a loss, a duplicate of an acknowledged message, a
    second copy, a missing redelivered flag, a rolled-back send present, a received send of
    an open transaction, a partial in-doubt commit, an early delivery, a selector breach."""
    journal = [
        *_send("CQ", "cq-1"),  # lost
        *_send("CQ", "cq-2"),
        _recv("CQ", "cq-2"),
        _rec("ack-begin", place="CQ", uids=["cq-2"]),
        _rec("acked", place="CQ", uids=["cq-2"]),  # yet present
        *_send("CQ", "cq-3"),
        _recv("CQ", "cq-3"),  # comes back unflagged
        *_send("CQ", "cq-4"),  # comes back twice
        *_send("TQ", "tq-1", "p1"),
        _rec("rollback-begin", tx="p1"),
        _rec("rolledback", tx="p1"),  # yet present
        *_send("TQ", "tq-2", "p2"),
        *_send("TQ", "tq-3", "p2"),
        _rec("commit-begin", tx="p2", acks=[]),  # in doubt, only half present
        *_send("TQ", "tq-4", "p3"),
        _recv("TQ", "tq-4", "c1"),  # open transaction's send seen
        *_send("DQ", "dq-1"),
        _recv("DQ", "dq-1", at=5, dt=10),  # early
        _rec("ack-begin", place="DQ", uids=["dq-1"]),
        _rec("acked", place="DQ", uids=["dq-1"]),
        *_send("T-", "t-1"),
        _recv("dsub", "t-1"),  # the selector excludes it
        _rec("ack-begin", place="dsub", uids=["t-1"]),
        _rec("acked", place="dsub", uids=["t-1"]),
        _rec("error", thread="x", text="boom"),
    ]
    got = _empty()
    got["CQ"] = _got("cq-2", "cq-3", "cq-4", "cq-4")
    got["TQ"] = _got("tq-1", "tq-2")
    got["idle"] = _got("t-1")
    problems = "\n".join(check(journal, got))
    for expected in (
        "CQ: cq-1 LOST",
        "CQ: cq-2 DUPLICATE",
        "CQ: cq-3 was delivered before the kill but came back with redelivered=False",
        "CQ: cq-4 delivered twice",
        "TQ: tq-1 of rolled back transaction p1 present",
        "in-doubt commit p2 took effect only in part",
        "TQ: tq-4 of open transaction p3 received",
        "DQ: dq-1 delivered 5 ms early",
        "dsub received t-1",
        "worker error: x: boom",
    ):
        assert expected in problems, f"{expected!r} not flagged in:\n{problems}"
