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

Theory of operation
-------------------
:class:`FailoverRoute` is the one home of failover's routing: a connection made from a
``failover:`` URL binds its ``request``, ``submit``, ``oneway``, ``flush`` and ``next_corr``
to it (a plain connection binds them to its direct route instead), so no routing path asks
"am I failover?". A lost link is not reported; a reconnect thread closes the dead transport
(its reader has ended: no stale delivery can arrive after that), makes every session drop
what it held from the old link (buffers, unacknowledged deliveries: the broker takes them
back and redelivers them; a transaction in progress becomes rollback-only) and bumps the
session's *epoch*, then opens a new link and has the connection re-create its state on it
(client id, temporary destinations by name, sessions, consumers with their ids) before
installing it. Meanwhile every call that needs the broker waits (:meth:`FailoverRoute.link`).
Delivery ids are per link, so a request or an acknowledgement that carries ids is bound to
the epoch it read them in (its ``bound``, the session's ledger): sent on a later link it would
name other messages, so it is dropped or scrubbed. A request that was on the wire when the
link died is in doubt: it raises ``JMSException`` saying so (never silently retried), except
read-only ones (pull, browse, stat) and sends with a duplicate id outside a transaction,
which are sent again. What the route needs of its connection is :class:`FailoverOwner`.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import random
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Final, Protocol

import msgspec

from ternmq.client._util import check_reply, parse_url
from ternmq.errors import JMSException
from ternmq.protocol import commands as c
from ternmq.transport._options import flag_option, seconds_option

if TYPE_CHECKING:
    from ternmq.client._types import Bound
    from ternmq.transport._base import NetworkTransport
    from ternmq.transport._pending import PendingReply
    from ternmq.transport.tcp import TcpOptions, TcpTransport

__all__ = [
    "FailoverOptions",
    "FailoverOwner",
    "FailoverRoute",
    "is_failover_url",
    "parse_failover_url",
]

log = logging.getLogger("ternmq.client")

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


class FailoverOwner(Protocol):
    """What a :class:`FailoverRoute` needs of its connection (a ``Connection``)."""

    connection_id: str

    @property
    def closed(self) -> bool:
        """True once closed (or failed)."""
        ...

    def _check_open(self) -> None:
        """Raise IllegalStateException if the connection is closed or failed."""
        ...

    def _on_event(self, cmd: c.Command) -> None:
        """A delivery or event of the current link."""
        ...

    def _resendable(self, req: c.Request) -> bool:
        """Whether ``req``, in flight when a link died, may simply go again."""
        ...

    def _drop_link_state(self) -> None:
        """Every session forgets what it held from the lost link (epochs bump)."""
        ...

    def _replay(self, ask: Callable[[c.Request], c.Reply]) -> str:
        """Re-create the connection's state through ``ask``; return the new connection id.

        Raises:
            JMSException: the broker refused a step or the link failed.
        """
        ...

    def _fail(self, exc: JMSException) -> None:
        """The connection failed for good: report ``exc``."""
        ...


class FailoverRoute:
    """A connection's requests over whichever link the failover keeps alive (see the module
    docstring).

    Raises (on construction):
        JMSException: no broker of the list could be reached.
    """

    def __init__(self, options: FailoverOptions, owner: FailoverOwner) -> None:
        self._fo = options
        self._owner = owner
        self._link_cond = threading.Condition(threading.Lock())
        self._reconnecting = False
        self._closing = False
        self._ready = False
        self._link_no = 0  # the current link; a candidate link being set up has a higher one
        self._corrs = itertools.count(1)  # correlation numbers outlive links
        self._transport: NetworkTransport
        self._transport, self._target = options.open(self._events(0))

    @property
    def transport(self) -> NetworkTransport:
        """The link in use now (perhaps lost, while a reconnect runs)."""
        return self._transport

    # ---- routing -------------------------------------------------------------------------
    def request(self, req: c.Request, bound: Bound | None = None, epoch: int = 0) -> c.Reply:
        """Send a request to the broker and return its reply (no error check).

        ``bound``/``epoch``: the request carries delivery ids that ``bound`` (a session's
        ledger) read in ``epoch``; after a failover it is scrubbed of them.

        Raises:
            JMSException: the connection is closed, or the link was lost while the request
                was in flight (the text says that its outcome is unknown).
        """
        while True:
            pending, req = self._submit_bound(req, bound, epoch)
            if pending is None:
                return c.Ok(corr=req.corr)  # nothing left to say on the new link
            try:
                return pending.result()
            except JMSException as exc:
                if self._owner.closed or self._closing:
                    raise
                if self._owner._resendable(req):
                    continue  # safe to repeat on the new link
                raise self._in_doubt(req, exc) from exc

    def submit(self, req: c.Request, lazy: bool = False) -> PendingReply:
        """Send a request without waiting (on the current link, written at once).

        Raises:
            JMSException: the connection is closed, or the link was lost during the write.
        """
        pending, _ = self._submit_bound(req, None, 0)
        assert pending is not None
        return pending

    def oneway(
        self, req: c.Request, bound: Bound | None = None, epoch: int = 0, lazy: bool = False
    ) -> None:
        """Send a request that needs no reply; dropped if the connection closes meanwhile or
        ``bound`` read its ids on an older link. Raises nothing."""
        try:
            transport = self.link()
        except JMSException:
            return  # closed, or given up waiting: what it acknowledged comes back anyway
        if bound is not None and bound.epoch != epoch:
            return
        transport.send_oneway(req, lazy)

    def flush(self) -> None:
        """Write what waits for company (lazy requests) now: before a thread blocks."""
        self._transport.flush()

    def next_corr(self) -> int:
        """A fresh request correlation number (they outlive links)."""
        return next(self._corrs)

    def link(self) -> NetworkTransport:
        """The transport to use now: waits while the connection reconnects (at most the
        failover ``timeout``).

        Raises:
            JMSException: the connection is closed, failed for good, is closing while it
                reconnects, or the wait timed out.
        """
        transport = self._transport
        if not self._reconnecting and not transport.lost:
            return transport
        fo = self._fo
        deadline = None if fo.timeout is None else time.monotonic() + fo.timeout
        with self._link_cond:
            while self._reconnecting or self._transport.lost:
                if self._owner.closed:
                    self._owner._check_open()
                if self._closing:
                    raise JMSException("the connection is closing while it reconnects")
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise JMSException(
                        f"the connection is reconnecting to {fo.describe()} and did not "
                        f"succeed within the failover timeout ({fo.timeout} s)"
                    )
                self._link_cond.wait(left)
            return self._transport

    def _submit_bound(
        self, req: c.Request, bound: Bound | None, epoch: int
    ) -> tuple[PendingReply | None, c.Request]:
        if not req.corr:
            req = msgspec.structs.replace(req, corr=next(self._corrs))
        while True:
            transport = self.link()
            if bound is not None and bound.epoch != epoch:
                scrubbed = bound.scrub(req)
                if scrubbed is None:
                    return None, req
                req = scrubbed
            try:
                return transport.submit(req), req
            except JMSException:
                if self._owner.closed or self._closing:
                    raise
                if not transport.lost:
                    raise
                # Lost between link() and the write: the request may be partly written,
                # so only a resendable one goes again; the others are in doubt.
                if not self._owner._resendable(req):
                    raise self._in_doubt(req, None) from None

    def _in_doubt(self, req: c.Request, cause: JMSException | None) -> JMSException:
        fo = self._fo
        if isinstance(req, c.Send):
            text = (
                f"the connection to the broker was lost before the broker confirmed this send "
                f"to {req.destination}; ternmq reconnects ({fo.describe()}), but whether the "
                "broker has the message is unknown. Send it again with the same "
                "JMS_TernMQ_DuplicateID property set to make the resend safe (PSF-09)"
            )
        elif isinstance(req, c.Commit):
            text = (
                "the connection to the broker was lost during commit(); ternmq reconnects "
                f"({fo.describe()}), but whether the transaction was committed is unknown (REL-06)"
            )
        else:
            text = (
                f"the connection to the broker was lost during this call ({type(req).__name__}); "
                f"ternmq reconnects ({fo.describe()}): check the outcome and repeat the call"
            )
        return JMSException(text, linked_exception=cause)

    # ---- life cycle ----------------------------------------------------------------------
    def ready(self) -> None:
        """The connection is set up: from now on a lost link starts a reconnect."""
        self._ready = True
        if self._transport.lost:
            self._link_lost(0)  # lost during the handshake, before anyone could hear of it

    def start_close(self) -> None:
        """The connection is closing: a reconnect in progress gives up; calls stop waiting."""
        with self._link_cond:
            self._closing = True
            self._link_cond.notify_all()

    def end_close(self) -> tuple[NetworkTransport, bool]:
        """The connection is closed: the link to close, and whether a reconnect was in
        progress (then no ``Disconnect`` is said)."""
        with self._link_cond:
            self._link_cond.notify_all()
            return self._transport, self._reconnecting

    # ---- reconnecting --------------------------------------------------------------------
    def _events(self, link: int) -> Callable[[c.Command], None]:
        return lambda cmd: self._on_event(cmd, link)

    def _on_event(self, cmd: c.Command, link: int) -> None:
        if isinstance(cmd, c.ConnectionFailed):
            self._link_lost(link)
        else:
            self._owner._on_event(cmd)

    def _link_lost(self, link: int) -> None:
        """The link numbered ``link`` failed: start reconnecting if it is the current one."""
        with self._link_cond:
            if (
                link != self._link_no
                or self._reconnecting
                or not self._ready
                or self._closing
                or self._owner.closed
            ):
                return
            self._reconnecting = True
            old = self._transport
            self._link_cond.notify_all()
        threading.Thread(
            target=self._reconnect, args=(old,), name="ternmq-reconnect", daemon=True
        ).start()

    def _reconnect(self, old: NetworkTransport) -> None:
        fo = self._fo
        owner = self._owner
        log.warning(
            "connection %s: the link to %s was lost (%s); reconnecting",
            owner.connection_id,
            old.address,
            old.failure_cause or "closed by the server",
        )
        try:
            old.close()  # joins its reader: no delivery of the old link arrives after this
        except Exception:
            log.debug("closing the lost link", exc_info=True)
        owner._drop_link_state()
        timeout = max(t.connect_timeout for _, t in fo.targets)
        last: JMSException | None = None
        rounds = 0
        for delay in fo.delays():
            with self._link_cond:
                if delay > 0:
                    self._link_cond.wait(delay)
                if self._closing or owner.closed:
                    self._reconnecting = False
                    self._link_cond.notify_all()
                    return
                self._link_no += 1
                n = self._link_no
            rounds += 1
            try:
                transport, target = fo.open(self._events(n), self._target)
            except JMSException as exc:
                last = exc
                continue

            def ask(req: c.Request, transport: TcpTransport = transport) -> c.Reply:
                return check_reply(transport.request(req, timeout))

            try:
                new_id = owner._replay(ask)
            except JMSException as exc:
                last = exc
                log.info("reconnect: setting up the new link failed: %s", exc)
                transport.close()
                continue
            with self._link_cond:
                if self._closing or owner.closed:
                    self._reconnecting = False
                    self._link_cond.notify_all()
                    transport.close()
                    return
                self._transport, self._target = transport, target
                if transport.lost:
                    continue  # lost again while being set up: another round
                self._reconnecting = False
                self._link_cond.notify_all()
            log.warning(
                "connection %s reconnected to %s after %d round(s) (broker connection %s)",
                owner.connection_id,
                fo.targets[target][0],
                rounds,
                new_id,
            )
            return
        failure = JMSException(
            f"connection to {fo.describe()} lost and not re-established after "
            f"{rounds} round(s) of attempts: {last}",
            linked_exception=last,
        )
        with self._link_cond:
            self._reconnecting = False
        owner._fail(failure)
        with self._link_cond:
            self._link_cond.notify_all()
