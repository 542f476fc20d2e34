"""Fixtures of the PostgreSQL store tests: a real PostgreSQL server for the session and a
fresh database per test (``tests/_postgres.py``)."""

from __future__ import annotations

from _postgres import pg_url, postgres_server

__all__ = ["pg_url", "postgres_server"]
