"""URL option parsing shared by the connection factory and the network transports."""

from __future__ import annotations

import math

from ternmq.errors import JMSException

__all__ = ["flag_option", "seconds_option"]


def flag_option(opts: dict[str, str], name: str, default: bool, url: str) -> bool:
    """The true/false option ``name`` of a URL (``true``/``false``, ``1``/``0``, ``yes``/``no``,
    ``on``/``off``), or ``default`` when it is absent.

    Raises:
        JMSException: any other value.
    """
    text = opts.get(name)
    if text is None:
        return default
    low = text.strip().lower()
    if low in ("true", "1", "yes", "on"):
        return True
    if low in ("false", "0", "no", "off"):
        return False
    raise JMSException(f"option {name}={text!r} in {url!r}: use true or false")


def seconds_option(
    opts: dict[str, str],
    name: str,
    default: float,
    url: str,
    *,
    zero_ok: bool,
    negative_ok: bool = False,
) -> float:
    """The option ``name`` of a URL as a finite number of seconds, or ``default`` when it is
    absent. ``zero_ok``: 0 is allowed (e.g. "off"); ``negative_ok``: a negative value is
    allowed (e.g. -1, "no limit").

    Raises:
        JMSException: not a number, not finite, or out of the allowed range.
    """
    if name not in opts:
        return default
    text = opts[name]
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or (value < 0 and not negative_ok) or (value == 0 and not zero_ok):
        least = "0 (off) or more" if zero_ok else "more than 0"
        if negative_ok:
            least += ", or -1 for no limit"
        raise JMSException(f"option {name}={text!r} in {url!r}: use a number of seconds, {least}")
    return value
