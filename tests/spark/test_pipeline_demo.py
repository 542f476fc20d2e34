"""The example pipeline (``ternmq pipeline-demo``) end to end, small: two runs of the
windowed revenue query, the second resumed from the checkpoint."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest

from ternmq.spark.pipeline_demo import run_demo

pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]


def test_pipeline_demo_resumes_and_publishes_each_alert_once(
    spark: Any, broker_url: str, tmp_path: pathlib.Path
) -> None:
    """Run 1 reads the first round of orders, run 2 (same checkpoint) only the second;
    finished windows land in Parquet once each, and one alert per window above the
    threshold reaches topic://alerts (none twice)."""
    lines: list[str] = []
    figures = run_demo(tmp_path / "demo", broker_url, orders=300, out=lines.append, spark=spark)
    assert figures["run1_read"] == 300
    assert figures["run2_read"] == 300, "the second run must resume after the first"
    assert figures["windows"] > 0
    # windows past the watermark are final; the last ones of run 2 stay open
    assert 300 <= figures["orders_in_windows"] < 600
    assert figures["alerts"] == figures["alerts_expected"] > 0
    assert any("resumed from the checkpoint" in line for line in lines)
