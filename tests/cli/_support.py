"""Helpers of the command-line tests: an embedded broker per test and an in-process runner."""

from __future__ import annotations

import dataclasses

import pytest

from ternmq import cli


@dataclasses.dataclass
class Run:
    """What one ``ternmq ...`` invocation did."""

    code: int
    out: str
    err: str


def run(capsys: pytest.CaptureFixture[str], url: str | None, *argv: str) -> Run:
    """Run ``ternmq ARGV --url URL`` in this process and capture its output."""
    capsys.readouterr()
    args = list(argv) + (["--url", url] if url is not None else [])
    code = cli.main(args)
    captured = capsys.readouterr()
    return Run(code, captured.out, captured.err)


def one_line_error(r: Run, code: int, *fragments: str) -> None:
    """``r`` failed with ``code`` and one ``ternmq: error:`` line holding ``fragments``."""
    assert r.code == code, (r.code, r.out, r.err)
    lines = r.err.strip().splitlines()
    assert len(lines) == 1, r.err
    assert lines[0].startswith("ternmq: error: "), r.err
    assert "Traceback" not in r.err
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
