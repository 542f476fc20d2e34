#!/usr/bin/env python3
"""Rewrite the web console's screenshots in ``docs/img/console-*.png``.

Runs the console's browser tests (``tests/console/test_console.py``: a real ``ternmq serve``
and Debian's headless Chromium) with ``TERNMQ_CONSOLE_SCREENSHOTS`` set, so each test saves
the pages it visits. Needs ``/usr/bin/chromium`` and the dev extra (Playwright).

Usage: ``python tools/console_screenshots.py [OUTPUT_DIR]`` (default ``docs/img``).
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def main(argv: list[str]) -> int:
    """Run the console tests with screenshots on; return pytest's exit code."""
    out = pathlib.Path(argv[0]).resolve() if argv else ROOT / "docs" / "img"
    if not pathlib.Path("/usr/bin/chromium").exists():
        print("console_screenshots: /usr/bin/chromium is missing (apt-get install -y chromium)")
        return 2
    env = dict(os.environ, TERNMQ_CONSOLE_SCREENSHOTS=str(out))
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT / "src"), env.get("PYTHONPATH", "")) if p
    )
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    cmd.append(str(ROOT / "tests" / "console" / "test_console.py"))
    code = subprocess.call(cmd, cwd=ROOT, env=env)
    if code == 0:
        for png in sorted(out.glob("console-*.png")):
            print(f"wrote {png.relative_to(ROOT) if png.is_relative_to(ROOT) else png}")
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
