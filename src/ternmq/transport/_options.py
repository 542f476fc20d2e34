"""URL option parsing shared by the connection factory and the network transports."""

from __future__ import annotations

from ternmq.errors import JMSException

__all__ = ["flag_option"]


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
