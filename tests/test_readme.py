"""Every Python block of README.md runs as it stands (the README's promise)."""

from __future__ import annotations

import pathlib
import re

import pytest

README = pathlib.Path(__file__).resolve().parent.parent / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


def test_readme_has_examples() -> None:
    """The README shows the concepts with code (connection, ack modes, topics, selectors)."""
    assert len(BLOCKS) >= 5


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_example_runs(code: str) -> None:
    """Run one README example in a fresh namespace."""
    exec(compile(code, str(README), "exec"), {"__name__": "readme_example"})
