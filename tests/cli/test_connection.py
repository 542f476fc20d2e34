"""Options every operator command shares (--url, --user, --password and their environment
variables) and the one-line errors for brokers that cannot be used."""

from __future__ import annotations

import pytest

from ternmq import ConnectionFactory, EmbeddedBroker, JMSException, cli

from ._support import one_line_error, run

COMMANDS = [
    ["send", "queue://q", "--text", "x"],
    ["receive", "queue://q", "--timeout", "0"],
    ["browse", "queue://q"],
    ["stat"],
    ["purge", "queue://q"],
    ["bench", "--messages", "1"],
]


@pytest.mark.parametrize("argv", COMMANDS, ids=[a[0] for a in COMMANDS])
def test_unreachable_broker_is_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, argv: list[str]
) -> None:
    def refuse(self: ConnectionFactory, *a: object, **k: object) -> None:
        raise JMSException("[Errno 111] Connection refused")

    monkeypatch.setattr(ConnectionFactory, "create_connection", refuse)
    r = run(capsys, "vm://nowhere", *argv)
    one_line_error(r, 1, "cannot reach the broker at vm://nowhere: [Errno 111] Connection refused")
    assert r.out == ""


def test_unreachable_broker_messages(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    errors: list[BaseException] = [
        OSError("no route to host"),
        JMSException("cannot reach the broker at tcp://h:1: timed out"),
    ]

    def refuse(self: ConnectionFactory, *a: object, **k: object) -> None:
        raise errors.pop(0)

    monkeypatch.setattr(ConnectionFactory, "create_connection", refuse)
    one_line_error(
        run(capsys, "vm://x", "stat"), 1, "cannot reach the broker at vm://x: no route to host"
    )
    r = run(capsys, "vm://x", "stat")
    one_line_error(r, 1)
    assert r.err == "ternmq: error: cannot reach the broker at tcp://h:1: timed out\n"


@pytest.mark.parametrize("url", ["nonsense", "ftp://host", "vm://"])
def test_bad_url(capsys: pytest.CaptureFixture[str], url: str) -> None:
    one_line_error(run(capsys, url, "stat"), 2, f"invalid broker URL {url!r}")


def test_credentials_and_environment(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with EmbeddedBroker("cliauth", users={"ops": "s3cret"}) as b:
        r = run(capsys, b.url, "stat")
        one_line_error(r, 1, "the broker at vm://cliauth refused the connection")
        r = run(capsys, b.url, "stat", "--user", "ops", "--password", "wrong")
        one_line_error(r, 1, "refused the connection", "authentication failed")
        r = run(capsys, b.url, "send", "queue://q", "--text", "a", "--user", "ops",
                "--password", "s3cret")  # fmt: skip
        assert r.code == 0, r.err
        monkeypatch.setenv("TERNMQ_URL", b.url)
        monkeypatch.setenv("TERNMQ_USER", "ops")
        monkeypatch.setenv("TERNMQ_PASSWORD", "s3cret")
        r = run(capsys, None, "receive", "queue://q")
        assert r.code == 0 and "text: a" in r.out
        r = run(capsys, None, "stat", "--password", "wrong")  # the option beats the variable
        one_line_error(r, 1, "refused the connection")


def test_default_url_is_tcp(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.DEFAULT_URL == "tcp://127.0.0.1:61616"
    capsys.readouterr()
    with pytest.raises(SystemExit):
        cli.main(["stat", "--help"])
    assert "tcp://127.0.0.1:61616" in capsys.readouterr().out


def test_vm_url_starts_an_embedded_broker(capsys: pytest.CaptureFixture[str]) -> None:
    from ternmq.broker.embedded import get_embedded

    try:
        r = run(capsys, "vm://cli-autostart", "send", "queue://q", "--text", "kept")
        assert r.code == 0
        r = run(capsys, "vm://cli-autostart", "receive", "queue://q")
        assert "text: kept" in r.out
    finally:
        get_embedded("cli-autostart").stop()


def test_no_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        cli.main([])
    assert info.value.code == 2


def test_demo_still_runs(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["demo"]) == 0
    assert "done." in capsys.readouterr().out


def test_unexpected_broker_error_is_one_line(
    capsys: pytest.CaptureFixture[str], broker: EmbeddedBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A JMS failure after connecting (here: the store refusing) is one line, exit 1."""
    from ternmq.client import _admin

    def fail(*a: object, **k: object) -> int:
        raise JMSException("store failure: disk full")

    monkeypatch.setattr(_admin, "purge", fail)
    r = run(capsys, broker.url, "send", "queue://q", "--text", "x")
    assert r.code == 0
    one_line_error(run(capsys, broker.url, "purge", "queue://q"), 1, "store failure: disk full")


def test_interrupt_exits_130(
    capsys: pytest.CaptureFixture[str], broker: EmbeddedBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ternmq.client import _admin

    def interrupt(*a: object, **k: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(_admin, "stat_result", interrupt)
    r = run(capsys, broker.url, "stat")
    one_line_error(r, 130, "interrupted")
