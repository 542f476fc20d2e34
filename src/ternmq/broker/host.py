"""The broker host: what runs a :class:`~ternmq.broker.engine.Broker`, for both of its owners.

Theory of operation
-------------------
The engine is plain synchronous code that exactly one owner may enter at a time: the
embedded broker's lock (``broker/embedded.py``) or the server's event loop
(``server/app.py``). Around it every owner has the same duties, and they live here, once, in
:class:`BrokerHost`, the base class of both:

- **building** the store (:func:`ternmq.store.open_store`) and the broker from settings;
- **the owner hand-off**: the broker reports work from other threads (the store writer's
  completions) through the ``run_in_owner`` collaborator it is built with, this host's
  :meth:`BrokerHost.run_in_owner`;
- **owner commits**: a store that offers them (``Store.set_owner_commits`` returns True)
  becomes :attr:`BrokerHost.owner_store`, and announces a small batch through
  :meth:`BrokerHost._commit_soon`; the owner then calls its ``commit_due`` where it may block
  for one commit (``store/sqlite.py``);
- **deferred inserts**: with ``dispatch_hold`` above 0 the broker may deliver a PERSISTENT
  message before its insert is written and defer the insert (``Broker.enable_deferral``);
  the host ends each deferral after that many seconds (:meth:`BrokerHost._defer_soon`);
- **time**: :meth:`BrokerHost.rearm` arms the host's one timer for
  ``broker.next_deadline()`` (only when it changed), asking the clock how long to sleep
  (``Clock.sleep_time``: a fake clock says "never", and calls the host back through
  :meth:`BrokerHost._on_clock_jump` when a test advances it); :meth:`BrokerHost._on_timer`
  lets time act and arms the timer again;
- **warnings**: what the broker did on its own reaches :meth:`BrokerHost._warn`;
- **stats**: :meth:`BrokerHost.stats`, what the broker holds, per destination.

A host supplies only its I/O: how a callable reaches the owner context (:meth:`run_in_owner`),
when an announced owner commit runs (:meth:`_commit_soon`), when a deferral ends
(:meth:`_defer_soon`), the timer itself (:meth:`_arm`),
how a clock jump enters the owner context (:meth:`_on_clock_jump`) and where warnings are
logged (:meth:`_warn`). This module imports no thread, loop or log: those are the hosts'.
"""

from __future__ import annotations

import abc
import os
from collections.abc import Callable
from typing import Literal

from ternmq.broker.clock import Clock, SystemClock
from ternmq.broker.config import BrokerConfig
from ternmq.broker.engine import Authorizer, Broker, RequestCheck
from ternmq.protocol import commands as c
from ternmq.store import Store, open_store

__all__ = ["BrokerHost"]


class BrokerHost(abc.ABC):
    """The shared part of the two brokers' hosts (see the module doc).

    Args:
        clock: the broker's time source (default: the system clock).

    Attributes:
        clock: the broker's time source.
        broker: the running broker, None while stopped.
        owner_store: the broker's store if it has owner commits, else None.
    """

    def __init__(self, clock: Clock | None = None) -> None:
        self.clock: Clock = clock or SystemClock()
        self.broker: Broker | None = None
        self.owner_store: Store | None = None
        self._timer_due: int | None = None  # the deadline the timer is armed for
        self._listening = False  # the clock knows _on_clock_jump

    # ---- what each host provides: its own I/O ---------------------------------------------
    @abc.abstractmethod
    def run_in_owner(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` in the owner context, soon; called from any thread (the broker's
        ``run_in_owner``: store completions come back this way)."""

    @abc.abstractmethod
    def _commit_soon(self) -> None:
        """The store's owner-commit hook (called in the owner context, inside a request): a
        batch waits for an idle writer; the host calls ``owner_store.commit_due`` soon."""

    @abc.abstractmethod
    def _arm(self, due: int | None) -> None:
        """Wake :meth:`_on_timer` in the owner context at ``due`` (epoch ms, the clock's
        :meth:`~ternmq.broker.clock.Clock.sleep_time` says how long that is); None cancels.
        :meth:`rearm` calls it in the owner context, only with a changed deadline."""

    @abc.abstractmethod
    def _on_clock_jump(self) -> None:
        """The clock moved (a fake clock's ``advance``): run :meth:`_on_timer` in the owner
        context, and return once it ran."""

    @abc.abstractmethod
    def _defer_soon(self, token: int) -> None:
        """The broker's ``on_defer`` (in the owner context): a PERSISTENT message went to a
        waiting consumer before its insert was written; call ``broker.end_deferral(token)``
        in the owner context after ``config.dispatch_hold`` seconds of real time (not the
        broker's clock: a fake clock must not hold a sender) unless the consumer's
        acknowledgement settled it first (``Broker.enable_deferral``)."""

    @abc.abstractmethod
    def _warn(self, event: str, **fields: object) -> None:
        """The broker's ``on_warning``: something it did on its own, for the host's log."""

    # ---- the shared duties ----------------------------------------------------------------
    def _start_broker(
        self,
        config: BrokerConfig,
        store: Store | None,
        data_dir: str | os.PathLike[str] | None,
        *,
        fsync: Literal["always", "batch"] = "always",
        fsync_interval: float = 0.05,
        users: dict[str, str] | None = None,
        authorizer: Authorizer | None = None,
        request_check: RequestCheck | None = None,
        populate_user_id: bool = False,
    ) -> Broker:
        """Build the broker on ``store``, or on the store :func:`~ternmq.store.open_store`
        opens for ``data_dir`` (a memory store for None), and make it :attr:`broker`: wired to
        this host's owner hand-off, warnings, owner commits and clock. The store is closed if
        the broker cannot start.

        Raises:
            JMSException: the store cannot be opened (in use by another process, another
                schema) or recovered.
        """
        if store is None:
            # the writer thread under SCHED_BATCH: see ternmq._sched
            store = open_store(data_dir, fsync=fsync, fsync_interval=fsync_interval)
        try:
            broker = Broker(
                config,
                store,
                self.clock,
                users,
                authorizer=authorizer,
                request_check=request_check,
                populate_user_id=populate_user_id,
                run_in_owner=self.run_in_owner,
                on_warning=self._warn,
            )
        except BaseException:
            store.close()
            raise
        owner_commits = store.set_owner_commits(self._commit_soon)
        self.owner_store = store if owner_commits else None
        if config.dispatch_hold > 0:
            broker.enable_deferral(self._defer_soon)  # a synchronous store ignores it
        self._timer_due = None
        self.broker = broker
        if not self._listening:
            self.clock.add_listener(self._on_clock_jump)
            self._listening = True
        return broker

    def rearm(self) -> None:
        """Arm the timer for the broker's next deadline (cheap when it did not change). Call
        it in the owner context, after anything that may have moved the deadline."""
        broker = self.broker
        if broker is None:
            return
        due = broker.next_deadline()
        if due == self._timer_due:
            return
        self._timer_due = due
        if due is not None and self.clock.sleep_time(due) == float("inf"):
            due = None  # the clock calls _on_clock_jump when it moves: no timer
        self._arm(due)

    def _on_timer(self) -> None:
        """The timer fired (or the clock jumped): let time act, then arm the timer for what
        comes next. In the owner context."""
        self._timer_due = None
        broker = self.broker
        if broker is not None:
            broker.tick()
        self.rearm()

    def _disarm(self) -> None:
        """Cancel the timer (the broker stops)."""
        self._timer_due = None
        self._arm(None)

    def stats(self) -> list[c.DestinationStat]:
        """What the broker holds, every destination sorted by name (temporary ones
        included), as the admin ``Stat`` request shows it; empty while stopped. Call it in the
        owner context (the embedded broker's override takes its lock)."""
        broker = self.broker
        if broker is None:
            return []
        return broker.stats()
