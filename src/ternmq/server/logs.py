"""Structured logs of the server: one line per event, ``key=value`` fields.

A line looks like::

    ts=2026-05-09T10:00:00.123Z level=warning logger=ternmq.server event=protocol_error
    peer=127.0.0.1:53122 conn=ID:7 problem="frame of 99999999 octets exceeds max_frame (...)"

(on one line). Values with spaces, quotes or ``=`` are JSON-quoted. Records of other loggers
(the store, the engine) that carry no fields are shown as ``msg="..."``.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Final

__all__ = ["KeyValueFormatter", "log_event", "setup_logging"]

LEVELS: Final = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}


def _quote(value: object) -> str:
    text = str(value)
    if not text or any(ch in text for ch in ' "=\t\n\r\\') or not text.isprintable():
        return json.dumps(text, ensure_ascii=False)
    return text


def _key(name: str) -> str:
    """A field name as a logfmt key: anything but letters, digits, ``_``, ``.`` and ``-``
    becomes ``_`` (``staged transactions`` -> ``staged_transactions``)."""
    if name.isidentifier():
        return name
    return "".join(ch if ch.isalnum() or ch in "_.-" else "_" for ch in name) or "_"


def log_event(logger: logging.Logger, level: int, event: str, /, **fields: object) -> None:
    """Log ``event`` with ``fields`` as one ``key=value`` line (None values are left out)."""
    if not logger.isEnabledFor(level):
        return
    parts = [f"event={event}"]
    parts.extend(f"{_key(k)}={_quote(v)}" for k, v in fields.items() if v is not None)
    logger.log(level, " ".join(parts), extra={"kv": True})


class KeyValueFormatter(logging.Formatter):
    """Formats records as ``ts=... level=... logger=... <fields>``."""

    def format(self, record: logging.LogRecord) -> str:
        ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        head = (
            f"ts={ts}.{int(record.msecs):03d}Z level={record.levelname.lower()} "
            f"logger={record.name}"
        )
        if getattr(record, "kv", False):
            body = record.getMessage()
        else:
            body = f"msg={_quote(record.getMessage())}"
        line = f"{head} {body}"
        if record.exc_info:
            line += f" exc={_quote(self.formatException(record.exc_info))}"
        return line


def setup_logging(level: str) -> None:
    """Send every ``ternmq`` logger to stderr in the key=value format at ``level``.

    Raises:
        ValueError: an unknown level name.
    """
    try:
        lvl = LEVELS[level]
    except KeyError:
        raise ValueError(f"unknown log level {level!r}: use one of {', '.join(LEVELS)}") from None
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(KeyValueFormatter())
    root = logging.getLogger("ternmq")
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(lvl)
    root.propagate = False
