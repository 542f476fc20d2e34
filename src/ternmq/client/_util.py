"""Small helpers shared by the client modules."""

from __future__ import annotations

import urllib.parse

from ternmq import errors
from ternmq.errors import JMSException
from ternmq.protocol import commands as c

__all__ = ["check_reply", "parse_url"]

_ERRORS: dict[str, type[JMSException]] = {
    name: obj
    for name, obj in vars(errors).items()
    if isinstance(obj, type) and issubclass(obj, JMSException)
}


def check_reply(reply: c.Reply) -> c.Reply:
    """Return ``reply``, or raise the JMS exception an ``Error`` reply names."""
    if isinstance(reply, c.Error):
        cls = _ERRORS.get(reply.kind, JMSException)
        raise cls(reply.message)
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
