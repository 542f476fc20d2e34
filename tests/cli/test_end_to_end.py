"""End to end: ``ternmq serve`` in one process, ``ternmq send`` and ``receive`` in others,
over ``tcp://``."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import threading

PYTHON = [sys.executable, "-m", "ternmq.cli"]


def _ternmq(*argv: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TERNMQ_")}
    return subprocess.run(
        [*PYTHON, *argv], capture_output=True, text=True, timeout=timeout, env=env, check=False
    )


def test_send_and_receive_through_a_served_broker(tmp_path: pathlib.Path) -> None:
    log = (tmp_path / "server.log").open("w")  # a file, so that a chatty server never blocks
    argv = [*PYTHON, "serve", "--port", "0", "--http-port", "-1"]  # no HTTP listener
    server = subprocess.Popen(
        [*argv, "--data-dir", str(tmp_path / "data")],
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
    )
    try:
        stdout = server.stdout
        assert stdout is not None
        first: list[str] = []
        reader = threading.Thread(target=lambda: first.append(stdout.readline()), daemon=True)
        reader.start()
        reader.join(30)
        assert first and first[0].startswith("ternmq listening on tcp://127.0.0.1:"), (
            first,
            server.poll(),
            (tmp_path / "server.log").read_text(),
        )
        url = first[0].split(" on ", 1)[1].strip()
        port = int(url.rsplit(":", 1)[1])
        assert port > 0

        sent = _ternmq("send", "queue://hello", "--text", "hi", "--url", url)
        assert sent.returncode == 0, sent.stderr
        assert sent.stdout.startswith("sent 1 message to queue://hello (persistent, priority 4)")
        assert sent.stderr == ""

        got = _ternmq("receive", "queue://hello", "--url", url)
        assert got.returncode == 0, got.stderr
        lines = got.stdout.splitlines()
        assert lines[0].startswith("message ID:")
        assert "  JMSDestination: queue://hello" in lines
        assert lines[-1] == "  text: hi"

        again = _ternmq("receive", "queue://hello", "--timeout", "0.5", "--url", url)
        assert again.returncode == 1
        assert again.stderr.strip() == (
            "ternmq: error: no message arrived on queue://hello within 0.5 s"
        )

        stat = _ternmq("stat", "queue://hello", "--url", url)
        assert stat.returncode == 0, stat.stderr
        row = stat.stdout.splitlines()[1].split()
        assert row[:3] == ["queue://hello", "queue", "0"]
    finally:
        server.kill()
        server.wait(10)
        if server.stdout is not None:
            server.stdout.close()
        log.close()


def test_unreachable_tcp_broker() -> None:
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"tcp://127.0.0.1:{port}"
    r = _ternmq("stat", "--url", url)
    assert r.returncode == 1
    assert r.stderr.startswith(f"ternmq: error: cannot reach the broker at {url}: ")
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
