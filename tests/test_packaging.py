"""How ternmq installs: what ``make run`` puts in the virtual environment, and a
``pyproject.toml`` that builds without deprecation warnings."""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import tomllib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_license_is_an_spdx_expression() -> None:
    """A table (``{ text = ... }``) makes every install print a setuptools warning."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["license"] == "Apache-2.0"


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize("target", ["run", "demo"])
def test_running_the_broker_installs_no_test_tools(target: str) -> None:
    """``make run`` and ``make demo`` install ternmq and its runtime dependencies only."""
    plan = subprocess.run(
        ["make", "-n", "-B", target], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert plan.returncode == 0, plan.stderr
    installs = [line for line in plan.stdout.splitlines() if "pip install" in line]
    assert any(line.rstrip().endswith("-e .") for line in installs), plan.stdout
    assert not any("[dev" in line or "[spark" in line for line in installs), plan.stdout


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_the_tests_install_the_test_tools() -> None:
    plan = subprocess.run(
        ["make", "-n", "-B", "test"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert plan.returncode == 0, plan.stderr
    assert "'.[dev]'" in plan.stdout
