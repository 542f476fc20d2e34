"""Automatic reconnection: the ``failover:`` URL and the reconnect schedule (CONN-30, issue 5).

``failover:(tcp://a:61616,tls://b:61617?cafile=ca.pem)?max_reconnect_attempts=20&prefetch=10``
names the brokers to try, in order (each with its own transport options), and after the
parentheses the failover options and the connection factory's own options. The single-broker
form ``failover:tcp://a:61616?...`` is accepted too (the options then belong to the failover).

Failover options (ActiveMQ Classic's names, in snake case):

- ``initial_reconnect_delay`` (seconds, default 0.1): the wait before the second round of
  attempts; every later round waits twice as long as the one before ...
- ``max_reconnect_delay`` (seconds, default 5) ... but never longer than this.
- ``max_reconnect_attempts`` (default -1: no limit): rounds over the broker list before the
  connection gives up and reports the failure to its exception listener (0: never reconnect).
- ``timeout`` (seconds, default -1: as long as reconnecting lasts): how long an API call made
  while the connection is reconnecting waits for it before raising ``JMSException``.
- ``randomize`` (true/false, default false): shuffle the list before each round.

What the connection does on a reconnect is described in docs/operations.md ("Failover").
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Final

from ternmq.client._util import parse_url
from ternmq.errors import JMSException
from ternmq.transport._options import flag_option, seconds_option

if TYPE_CHECKING:
    from ternmq.protocol import commands as c
    from ternmq.transport.tcp import TcpOptions, TcpTransport

__all__ = ["FailoverOptions", "is_failover_url", "parse_failover_url"]

FAILOVER_OPTIONS: Final = (
    "initial_reconnect_delay",
    "max_reconnect_delay",
    "max_reconnect_attempts",
    "timeout",
    "randomize",
)


@dataclasses.dataclass(frozen=True)
class FailoverOptions:
    """The brokers of a ``failover:`` URL and how to reconnect to them."""

    targets: tuple[tuple[str, TcpOptions], ...]  # (the broker's URL, how to connect)
    initial_delay: float = 0.1
    max_delay: float = 5.0
    max_attempts: int = -1
    timeout: float | None = None
    randomize: bool = False

    def describe(self) -> str:
        """The brokers, for messages: ``tcp://a:1, tcp://b:2``."""
        return ", ".join(url for url, _ in self.targets)

    def open(
        self, on_event: Callable[[c.Command], None], first: int = 0
    ) -> tuple[TcpTransport, int]:
        """One round: try each broker once, starting at index ``first``; return the first
        link that opens and its index.

        Raises:
            JMSException: no broker could be reached; the text names each and why.
        """
        order = [(first + k) % len(self.targets) for k in range(len(self.targets))]
        if self.randomize:
            random.shuffle(order)
        errors = []
        for i in order:
            url, opts = self.targets[i]
            try:
                return opts.connect(on_event), i
            except JMSException as exc:
                errors.append(f"{url}: {exc}")
        raise JMSException("no broker of the failover list could be reached: " + "; ".join(errors))

    def delays(self) -> Iterator[float]:
        """The wait before each round of reconnect attempts (0 before the first), as many
        as ``max_attempts`` allows."""
        delay = 0.0
        rounds = 0
        while self.max_attempts < 0 or rounds < self.max_attempts:
            rounds += 1
            yield delay
            delay = self.initial_delay if not delay else min(self.max_delay, delay * 2)


def is_failover_url(url: str) -> bool:
    """True for a ``failover:`` URL."""
    return url[:9].lower() == "failover:"


def parse_failover_url(
    url: str, client_options: tuple[str, ...]
) -> tuple[FailoverOptions, dict[str, str]]:
    """Split a ``failover:`` URL into its brokers and options; return the failover settings
    and the connection factory's own options (``client_options``) found after the list.

    Raises:
        JMSException: a malformed list, a broker URL that is not tcp:// or tls://, an unknown
            option, or a bad value; the text names it.
    """
    from ternmq.transport.tcp import parse_tcp_url

    rest = url[9:]
    if rest.startswith("//"):
        rest = rest[2:]
    if rest.startswith("("):
        end = rest.find(")")
        if end < 0:
            raise JMSException(f"{url!r}: the broker list has no closing parenthesis")
        inner, tail = rest[1:end], rest[end + 1 :]
        if tail and not tail.startswith("?"):
            raise JMSException(f"{url!r}: only ?options may follow the broker list")
        members = [m.strip() for m in inner.split(",") if m.strip()]
        query = tail[1:]
    else:
        member, _, query = rest.partition("?")
        members = [member] if member else []
    if not members:
        raise JMSException(
            f"{url!r} names no broker: write failover:(tcp://HOST:PORT,tcp://HOST2:PORT)"
        )
    _, _, opts = parse_url(f"x://?{query}")
    for name in opts:
        if name not in FAILOVER_OPTIONS and name not in client_options:
            raise JMSException(
                f"unknown option {name!r} in {url!r}; after the broker list a failover URL "
                f"takes {', '.join((*FAILOVER_OPTIONS, *client_options))} (transport options "
                "such as heartbeat go inside, on each broker's URL)"
            )
    targets = []
    for member in members:
        scheme, location, member_opts = parse_url(member)
        if scheme not in ("tcp", "tls"):
            raise JMSException(
                f"{member!r} in {url!r}: failover works over tcp:// and tls:// brokers only"
            )
        opts_of_member = parse_tcp_url(scheme, location, member_opts, url, client_options=())
        targets.append((member, opts_of_member))
    initial = seconds_option(opts, "initial_reconnect_delay", 0.1, url, zero_ok=True)
    max_delay = seconds_option(opts, "max_reconnect_delay", 5.0, url, zero_ok=True)
    timeout = seconds_option(opts, "timeout", -1.0, url, zero_ok=True, negative_ok=True)
    try:
        attempts = int(opts.get("max_reconnect_attempts", "-1"))
    except ValueError:
        raise JMSException(
            f"max_reconnect_attempts in {url!r} must be an integer (-1: no limit)"
        ) from None
    failover = FailoverOptions(
        targets=tuple(targets),
        initial_delay=initial,
        max_delay=max(initial, max_delay),
        max_attempts=max(-1, attempts),
        timeout=None if timeout < 0 else timeout,
        randomize=flag_option(opts, "randomize", False, url),
    )
    return failover, {k: v for k, v in opts.items() if k in client_options}
