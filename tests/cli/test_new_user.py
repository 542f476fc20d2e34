"""What a new user tripped over on the command line: a closed pipe, an interrupted loop, a
listing the user may not see, a log key with a space."""

from __future__ import annotations

import base64
import io
import json
import logging
import pathlib
import re
import shlex
import subprocess
import sys

import pytest

from ternmq import ConnectionFactory, DeliveryMode, EmbeddedBroker, MessageProducer, Queue
from ternmq.broker.engine import Broker
from ternmq.client import _admin
from ternmq.client.consumer import MessageConsumer
from ternmq.protocol import commands as c
from ternmq.server.logs import KeyValueFormatter, log_event

from ._support import one_line_error, run


def _send(url: str, queue: str, count: int) -> None:
    with ConnectionFactory(url).create_connection() as conn:
        s = conn.create_session()
        p = s.create_producer(Queue(queue))
        p.delivery_mode = DeliveryMode.PERSISTENT
        for i in range(count):
            p.send(s.create_text_message(f"m{i}"))


def _depth(url: str, queue: str) -> int:
    with ConnectionFactory(url).create_connection() as conn:
        return _admin.stat(conn, f"queue://{queue}")[0].depth


class _PipeClosedAfter(io.StringIO):
    """A stdout whose reader goes away after ``messages`` whole messages were written."""

    def __init__(self, messages: int) -> None:
        super().__init__()
        self.left = messages

    def write(self, text: str) -> int:
        if text.startswith("message ID:"):
            if self.left == 0:
                raise BrokenPipeError(32, "Broken pipe")
            self.left -= 1
        return super().write(text)


def test_receive_acknowledges_only_what_it_wrote_out(
    capsys: pytest.CaptureFixture[str],
    broker: EmbeddedBroker,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _send(broker.url, "p", 10)
    out = _PipeClosedAfter(2)
    monkeypatch.setattr(sys, "stdout", out)
    from ternmq import cli

    code = cli.main(["receive", "queue://p", "--count", "10", "--url", broker.url])
    monkeypatch.undo()
    assert code == 141
    assert capsys.readouterr().err == ""  # ends quietly: no traceback, no complaint
    assert out.getvalue().count("message ID:") == 2
    assert _depth(broker.url, "p") == 8  # the two written were consumed, nothing else


def test_browse_into_a_closed_pipe_ends_quietly(
    capsys: pytest.CaptureFixture[str],
    broker: EmbeddedBroker,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _send(broker.url, "b", 5)
    monkeypatch.setattr(sys, "stdout", _PipeClosedAfter(1))
    from ternmq import cli

    code = cli.main(["browse", "queue://b", "--url", broker.url])
    monkeypatch.undo()
    assert code == 141
    assert capsys.readouterr().err == ""
    assert _depth(broker.url, "b") == 5


def _cli(*argv: str) -> list[str]:
    return [
        sys.executable,
        "-c",
        "import sys; from ternmq.cli import main; sys.exit(main())",
        *argv,
    ]


def test_receive_piped_into_head_loses_nothing_and_prints_no_traceback(
    tmp_path: pathlib.Path,
) -> None:
    """A real pipe: ``ternmq receive ... | head -2``. What head did not take stays queued,
    apart from what went into the pipe before head left (at most the pipe's buffer)."""
    url = f"vm://piped?data_dir={tmp_path / 'data'}"
    sent = 1000  # ~400 KB of output: more than a pipe holds, so the writer meets the close
    with EmbeddedBroker("piped", data_dir=str(tmp_path / "data")):
        _send("vm://piped", "p", sent)
    argv = _cli("receive", "queue://p", "--count", "0", "--timeout", "2", "--url", url)
    script = " ".join(shlex.quote(a) for a in argv)
    proc = subprocess.run(
        ["bash", "-c", f"{script} | head -2; echo status=${{PIPESTATUS[0]}} >&2"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr
    assert "status=141" in proc.stderr, proc.stderr
    assert len(proc.stdout.splitlines()) == 2
    with EmbeddedBroker("piped", data_dir=str(tmp_path / "data")):
        left = _depth("vm://piped", "p")
    # Only what was written out was acknowledged (and written to the store at exit): the
    # pipe's buffer (64 KiB) holds at most ~200 of these messages; the rest stayed queued.
    assert sent - 250 <= left < sent


def test_interrupted_send_says_how_far_it_got(
    capsys: pytest.CaptureFixture[str],
    broker: EmbeddedBroker,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real_send = MessageProducer.send
    calls = 0

    def send(self: MessageProducer, *a: object, **k: object) -> None:
        nonlocal calls
        calls += 1
        if calls == 3:
            raise KeyboardInterrupt
        real_send(self, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(MessageProducer, "send", send)
    r = run(capsys, broker.url, "send", "queue://s", "--count", "5", "--text", "x")
    one_line_error(r, 130, "interrupted: sent 2 of 5 messages to queue://s", "last id ID:")


def test_interrupted_receive_says_how_far_it_got(
    capsys: pytest.CaptureFixture[str],
    broker: EmbeddedBroker,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _send(broker.url, "r", 5)
    real_receive = MessageConsumer.receive
    calls = 0

    def receive(self: MessageConsumer, timeout: float | None = None) -> object:
        nonlocal calls
        calls += 1
        if calls == 3:
            raise KeyboardInterrupt
        return real_receive(self, timeout)

    monkeypatch.setattr(MessageConsumer, "receive", receive)
    r = run(capsys, broker.url, "receive", "queue://r", "--count", "0")
    assert r.code == 130
    assert "interrupted: received 2 messages from queue://r" in r.err
    assert r.out.count("message ID:") == 2
    assert _depth(broker.url, "r") == 3


def test_stat_says_what_the_user_may_not_see(
    capsys: pytest.CaptureFixture[str],
    broker: EmbeddedBroker,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def nothing_visible(conn: object, dest: object = None) -> c.StatResult:
        return c.StatResult(destinations=[], hidden=3)

    monkeypatch.setattr(_admin, "stat_result", nothing_visible)
    r = run(capsys, broker.url, "stat")
    one_line_error(r, 1, "3 destinations not shown", "an anonymous connection", "'admin'")

    def some_visible(conn: object, dest: object = None) -> c.StatResult:
        shown = c.DestinationStat(name="queue://mine", kind="queue")
        return c.StatResult(destinations=[shown], hidden=1)

    monkeypatch.setattr(_admin, "stat_result", some_visible)
    r = run(capsys, broker.url, "stat")
    assert r.code == 0
    assert "queue://mine" in r.out
    assert "1 destination not shown" in r.err


def test_the_broker_counts_what_a_listing_hides() -> None:
    def authorizer(user: str | None, action: str, dest: str) -> bool:
        return action != "admin" or dest == "queue://a"

    broker = Broker(authorizer=authorizer)
    out: list[c.Command] = []
    conn = broker.connect(out.append)
    broker.handle(conn, c.Connect(corr=1, user="ops"))
    broker.handle(conn, c.CreateSession(corr=2, session_id=1))
    for i, name in enumerate(("a", "b", "c")):
        broker.handle(
            conn, c.Send(corr=3 + i, session_id=1, destination=f"queue://{name}", message=b"")
        )
    broker.handle(conn, c.Stat(corr=9))
    listing = out[-1]
    assert isinstance(listing, c.StatResult)
    assert [d.name for d in listing.destinations] == ["queue://a"]
    assert listing.hidden == 2
    # an old reply without the field still decodes (hidden = 0)
    assert c.StatResult(destinations=[]).hidden == 0


def test_log_keys_are_logfmt() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(KeyValueFormatter())
    log = logging.getLogger("ternmq.test-logfmt")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        log_event(log, logging.INFO, "recovered", **{"staged transactions": 0, "queues": 2})
    finally:
        log.removeHandler(handler)
    line = stream.getvalue().strip()
    assert "staged_transactions=0" in line
    for token in line.split(" "):
        assert re.fullmatch(r"[A-Za-z0-9_.-]+=\S+", token), token


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from ternmq import __version__, cli

    with pytest.raises(SystemExit) as exit_:
        cli.main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.startswith(f"ternmq {__version__} (Python 3.")


def test_send_file_text_bytes_stdin_and_headers(
    capsys: pytest.CaptureFixture[str],
    broker: EmbeddedBroker,
    tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text_file = tmp_path / "order.json"
    text_file.write_text('{"id": 7, "note": "ünïcode"}\n', encoding="utf-8")
    binary = tmp_path / "blob.bin"
    binary.write_bytes(b"\x00\xff\xfe binary")
    r = run(
        capsys,
        broker.url,
        "send",
        "queue://f",
        "--file",
        str(text_file),
        "--correlation-id",
        "c-1",
        "--reply-to",
        "queue://replies",
        "--type",
        "order",
    )
    assert r.code == 0, r.err
    assert run(capsys, broker.url, "send", "queue://f", "--file", str(binary)).code == 0
    assert (
        run(capsys, broker.url, "send", "queue://f", "--file", str(text_file), "--bytes").code == 0
    )
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"from stdin")))
    assert run(capsys, broker.url, "send", "queue://f", "--file", "-").code == 0
    monkeypatch.undo()
    r = run(capsys, broker.url, "receive", "queue://f", "--count", "4", "--json")
    assert r.code == 0, r.err
    first, second, third, fourth = (json.loads(line) for line in r.out.splitlines())
    assert first["kind"] == "text" and first["text"] == text_file.read_text(encoding="utf-8")
    assert first["correlation_id"] == "c-1"
    assert first["reply_to"] == "queue://replies"
    assert first["type"] == "order"
    assert first["properties"]["JMSXDeliveryCount"] == 1
    assert second["kind"] == "bytes"
    assert base64.b64decode(second["bytes"]["base64"]) == binary.read_bytes()
    assert third["kind"] == "bytes"
    assert base64.b64decode(third["bytes"]["base64"]) == text_file.read_bytes()
    assert fourth["kind"] == "text" and fourth["text"] == "from stdin"
    one_line_error(
        run(capsys, broker.url, "send", "queue://f", "--file", str(tmp_path / "missing")),
        2,
        "cannot read",
        "missing",
    )


def test_browse_json_is_one_object_per_line(
    capsys: pytest.CaptureFixture[str], broker: EmbeddedBroker
) -> None:
    with ConnectionFactory(broker.url).create_connection() as conn:
        s = conn.create_session()
        p = s.create_producer(Queue("j"))
        m = s.create_map_message()
        m.set_int("n", 5)
        m.set_bytes("raw", b"\x01\x02")
        m.set_string_property("region", "EU")
        p.send(m)
        st = s.create_stream_message()
        st.write_string("a")
        st.write_int(2)
        p.send(st)
    r = run(capsys, broker.url, "browse", "queue://j", "--json")
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert len(lines) == 2  # the summary went to stderr
    mapped, streamed = (json.loads(line) for line in lines)
    assert mapped["kind"] == "map"
    assert mapped["map"] == {"n": 5, "raw": {"base64": "AQI="}}
    assert mapped["properties"]["region"] == "EU"
    assert streamed["kind"] == "stream" and streamed["stream"] == ["a", 2]
    assert "2 messages on queue://j" in r.err


def test_passwd_hashes_for_the_config(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from ternmq import cli
    from ternmq.server.security import verify_password

    monkeypatch.setattr(sys, "stdin", io.StringIO("s3cret pass\n"))
    assert cli.main(["passwd", "--stdin"]) == 0
    stored = capsys.readouterr().out.strip()
    assert stored.startswith("scrypt$") and verify_password("s3cret pass", stored)
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n"))
    assert cli.main(["passwd", "--stdin"]) == 2
    assert "empty password" in capsys.readouterr().err
    answers = iter(["one", "two"])
    monkeypatch.setattr("getpass.getpass", lambda prompt="": next(answers))
    assert cli.main(["passwd"]) == 2
    assert "differ" in capsys.readouterr().err
