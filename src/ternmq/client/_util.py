"""Small helpers shared by the client modules."""

from __future__ import annotations

import urllib.parse
from typing import TypeVar

from ternmq import errors
from ternmq.errors import JMSException
from ternmq.protocol import commands as c

__all__ = ["check_reply", "error_of", "expect_reply", "parse_url"]

_R = TypeVar("_R")

_ERRORS: dict[str, type[JMSException]] = {
    name: obj
    for name, obj in vars(errors).items()
    if isinstance(obj, type) and issubclass(obj, JMSException)
}


def error_of(kind: str, message: str) -> JMSException:
    """The JMS exception the broker named (``kind``, a class name) with its ``message``."""
    return _ERRORS.get(kind, JMSException)(message)


def check_reply(reply: c.Reply) -> c.Reply:
    """Return ``reply``, or raise the JMS exception an ``Error`` reply names."""
    if isinstance(reply, c.Error):
        raise error_of(reply.kind, reply.message)
    return reply


def expect_reply(reply: c.Reply, kind: type[_R], what: str) -> _R:
    """``reply`` if it is a ``kind``; the JMS exception of an ``Error`` reply; otherwise
    JMSException naming the unexpected reply to ``what`` (a request name)."""
    reply = check_reply(reply)
    if not isinstance(reply, kind):
        raise JMSException(f"unexpected reply to {what}: {type(reply).__name__}")
    return reply


def parse_url(url: str) -> tuple[str, str, dict[str, str]]:
    """Split ``scheme://location?opt=v`` into (scheme, location, options).

    Raises:
        JMSException: the URL has no scheme.
    """
    scheme, sep, rest = url.partition("://")
    if not sep or not scheme:
        raise JMSException(f"cannot parse broker URL {url!r}: write e.g. 'vm://local'")
    location, _, query = rest.partition("?")
    opts = dict(urllib.parse.parse_qsl(query, keep_blank_values=True))
    return scheme.lower(), location, opts
