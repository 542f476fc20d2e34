#!/usr/bin/env python3
"""Check that every MUST of the catalog groups ternmq claims is named by a test.

Runs the shared catalog tool (``../shared/tools/catalog_coverage.py``, next to the clone)
twice: once on the groups that are *enforced* (a missing MUST fails the build) and once,
for information only, on every group. The enforced list grows as features land.
"""

from __future__ import annotations

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SHARED_TOOL = ROOT.parent / "shared" / "tools" / "catalog_coverage.py"

# Groups whose every MUST must be named by a test. Extend when an area is complete.
ENFORCED = [
    "HDR",
    "PROP",
    "BODY",
    "SEL",  # message model and selectors
    "CONN",
    "SESS",
    "TX",
    "PROD",
    "CONS",
    "EXC",  # API part A (XA: not offered, XA-01)
    "SUB",
    "PTP",
    "TMP",
    "REL",
    "CTX",  # API part B (ASF: not offered, ASF-01)
]


def main() -> int:
    if not SHARED_TOOL.exists():
        print(
            f"catalog coverage: {SHARED_TOOL} not found (shared/ is not beside this clone); skipped"
        )
        return 0
    tests = str(ROOT / "tests")
    print("catalog coverage (all groups, informational):")
    subprocess.run([sys.executable, str(SHARED_TOOL), "--tests", tests], check=False)
    print(f"catalog coverage (enforced: {','.join(ENFORCED)}):")
    done = subprocess.run(
        [sys.executable, str(SHARED_TOOL), "--tests", tests, "--groups", ",".join(ENFORCED)],
        check=False,
    )
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
