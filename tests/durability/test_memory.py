"""A queue ten times deeper than its memory limit keeps the broker's resident memory under
the limit plus a stated overhead (PSF-07; issue "bounded memory").

Stated overhead: 8 MiB fixed (SQLite page caches of the writer and reader connections, one
open transaction's worth of messages, allocator slack) plus 1 KiB per message held (the
in-memory index entry that keeps priority order and selectors working while the body is on
disk). The worker fills 50 MB of 20 KB messages into a queue limited to 5 MB, so without
paging its memory would grow by about 50 MB and the assertion would fail.
"""

from __future__ import annotations

import pathlib
import subprocess
import sys

WORKER = pathlib.Path(__file__).with_name("_memory_worker.py")
LIMIT = 5_000_000
SIZE = 20_000
FIXED_OVERHEAD = 8 * 1024 * 1024
PER_MESSAGE_OVERHEAD = 1024


def test_psf_07_resident_memory_stays_bounded(tmp_path: pathlib.Path) -> None:
    """PSF-07: fill to 10x the limit, drain in priority and FIFO order; the peak resident
    memory above the warmed-up baseline stays under limit + stated overhead."""
    done = subprocess.run(
        [sys.executable, str(WORKER), str(tmp_path), str(LIMIT), str(SIZE)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    baseline, peak_fill, peak_drain, in_order, count = map(int, done.stdout.split())
    bound = LIMIT + FIXED_OVERHEAD + PER_MESSAGE_OVERHEAD * count
    assert in_order == 1, "the deep queue did not drain in priority/FIFO order"
    growth = max(peak_fill, peak_drain) - baseline
    assert growth < bound, (
        f"resident memory grew by {growth / 1e6:.1f} MB for {count} messages "
        f"({count * SIZE / 1e6:.0f} MB of data); bound {bound / 1e6:.1f} MB"
    )
