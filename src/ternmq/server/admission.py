"""What an unauthenticated peer may cost the server: pending sockets, failed logins, checks.

Theory of operation
-------------------
Nothing here does I/O or reads a clock: the server (``server/app.py``) passes the time in and
acts on the answers, on the event loop thread (its only caller).

- *Pending sockets* (accepted, not yet authenticated) are counted per address and in all:
  :meth:`Admission.admit` refuses a socket past ``limits.max_pending_per_address`` or
  ``limits.max_pending``; :meth:`Admission.settled` forgets it once authenticated or gone.
- *Failed logins* per address: ``limits.login_failures`` within ``limits.login_window``
  lock the address out for ``limits.login_backoff`` seconds, doubled at each lock-out that
  follows within the window, up to ``limits.login_backoff_max``
  (:meth:`Admission.locked_for`, :meth:`Admission.record`). A locked address's logins are
  refused without a password check.
- *Password checks* (scrypt in a small thread pool): at most
  ``limits.auth_checks_per_address`` of one address run at once; the rest wait in that
  address's own queue (:meth:`Admission.start`, :meth:`Admission.finished`), so a flood from
  one address never holds every worker and another address's client gets one promptly.
- :meth:`Admission.should_log` rate-limits the events an abusive peer could repeat.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import Final

from ternmq.server.config import Limits

__all__ = ["LOG_INTERVAL", "Admission", "PasswordCheck"]

LOG_INTERVAL: Final = 10.0  # seconds between two log lines of one repeated refusal


class PasswordCheck:
    """One ``Connect``'s password check, queued or running.

    Attributes:
        address: the peer's address (no port).
        user: the user name sent.
        password: the password sent (dropped once the check ran).
        verdict: called on the loop with None (accepted) or the reason of the refusal.
        queued: still waiting for a worker.
        cancelled: its connection is gone: skip it.
    """

    __slots__ = ("address", "cancelled", "password", "queued", "user", "verdict")

    def __init__(
        self,
        address: str,
        user: str | None,
        password: str | None,
        verdict: Callable[[str | None], None],
    ) -> None:
        self.address = address
        self.user = user
        self.password = password
        self.verdict = verdict
        self.queued = False
        self.cancelled = False


class Admission:
    """The budget of unauthenticated peers (see the module doc).

    Args:
        limits: the server's bounds.
    """

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.pending = 0
        self._pending: dict[str, int] = {}
        self._failures: dict[str, collections.deque[float]] = {}
        self._locked_until: dict[str, float] = {}
        self._backoff: dict[str, float] = {}
        self._running: dict[str, int] = {}
        self._queues: dict[str, collections.deque[PasswordCheck]] = {}
        self._logged: dict[tuple[str, str], float] = {}
        self._suppressed: dict[tuple[str, str], int] = {}

    # ---- pending sockets ------------------------------------------------------------------
    def admit(self, address: str) -> str | None:
        """Count a new unauthenticated socket from ``address``; the name of the limit that
        refuses it instead (it is then not counted)."""
        limits = self.limits
        n = self._pending.get(address, 0)
        if limits.max_pending_per_address and n >= limits.max_pending_per_address:
            return "max_pending_per_address"
        if limits.max_pending and self.pending >= limits.max_pending:
            return "max_pending"
        self._pending[address] = n + 1
        self.pending += 1
        return None

    def settled(self, address: str) -> None:
        """A socket counted by :meth:`admit` is authenticated or gone."""
        n = self._pending.get(address, 0) - 1
        if n > 0:
            self._pending[address] = n
        else:
            self._pending.pop(address, None)
        self.pending = max(0, self.pending - 1)

    # ---- failed logins --------------------------------------------------------------------
    def locked_for(self, address: str, now: float) -> float:
        """Seconds ``address`` stays locked out at ``now`` (0: it may log in)."""
        until = self._locked_until.get(address)
        if until is None:
            return 0.0
        if now >= until:
            del self._locked_until[address]
            return 0.0
        return until - now

    def record(self, address: str, failed: bool, now: float) -> float:
        """The outcome of a password check of ``address`` at ``now``; the seconds of the
        lock-out it starts (0: none). A success forgets the address's failures."""
        limits = self.limits
        if not failed:
            self._failures.pop(address, None)
            return 0.0
        if not limits.login_failures:
            return 0.0
        times = self._failures.setdefault(address, collections.deque())
        times.append(now)
        while times and now - times[0] > limits.login_window:
            times.popleft()
        if len(times) < limits.login_failures:
            return 0.0
        times.clear()
        last_until = self._locked_until.get(address)
        previous = self._backoff.get(address)
        if (
            previous is not None
            and last_until is not None
            and now - last_until > (limits.login_window)
        ):
            previous = None  # a quiet window since the last lock-out: start over
        backoff = (
            limits.login_backoff
            if previous is None
            else min(previous * 2, max(limits.login_backoff_max, limits.login_backoff))
        )
        self._backoff[address] = backoff
        self._locked_until[address] = now + backoff
        if len(self._backoff) > 4 * (limits.max_pending or 1024):
            self._forget_old(now)
        return backoff

    def _forget_old(self, now: float) -> None:
        """Drop lock-out records that expired a window ago (bounds the tables)."""
        window = self.limits.login_window
        for address, until in list(self._locked_until.items()):
            if now - until > window:
                del self._locked_until[address]
        for address in list(self._backoff):
            if address not in self._locked_until:
                del self._backoff[address]
        for address, times in list(self._failures.items()):
            if not times or now - times[-1] > window:
                del self._failures[address]

    # ---- password checks ------------------------------------------------------------------
    def start(self, check: PasswordCheck) -> bool:
        """Whether ``check`` may run now (its address has a free slot); else it is queued
        (``check.queued``) until :meth:`finished` hands it out."""
        address = check.address
        running = self._running.get(address, 0)
        if running < self.limits.auth_checks_per_address:
            self._running[address] = running + 1
            return True
        check.queued = True
        self._queues.setdefault(address, collections.deque()).append(check)
        return False

    def finished(self, address: str) -> PasswordCheck | None:
        """A check of ``address`` finished: the next queued one of that address to run (its
        slot is taken over), skipping cancelled ones; None frees the slot."""
        queue = self._queues.get(address)
        while queue:
            check = queue.popleft()
            if not check.cancelled:
                check.queued = False
                return check
        self._queues.pop(address, None)
        n = self._running.get(address, 0) - 1
        if n > 0:
            self._running[address] = n
        else:
            self._running.pop(address, None)
        return None

    # ---- logs -----------------------------------------------------------------------------
    def should_log(self, event: str, key: str, now: float) -> int | None:
        """Whether to log ``event`` for ``key`` at ``now``: None while the last line is less
        than :data:`LOG_INTERVAL` old (the occurrence is counted), else how many were not
        logged since."""
        k = (event, key)
        last = self._logged.get(k)
        if last is not None and now - last < LOG_INTERVAL:
            self._suppressed[k] = self._suppressed.get(k, 0) + 1
            return None
        if len(self._logged) > 4096:
            self._logged.clear()
            self._suppressed.clear()
        self._logged[k] = now
        return self._suppressed.pop(k, 0)
