"""Suite-wide test configuration."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

from _postgres import pg_url, postgres_server

__all__ = ["pg_url", "postgres_server"]  # fixtures: a real PostgreSQL (tests/_postgres.py)

# CI runs derandomized so a red build is reproducible; locally, random exploration.
settings.register_profile(
    "ci", derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")
