"""The package version (kept apart so that any module can import it without cycles)."""

__version__ = "0.1.0"
