"""The send window of a session: pipelined and asynchronous sends in flight (A-08, PROD-22..28).

Theory of operation
-------------------
An asynchronous send (completion listener) and, unless ``block_on_non_persistent_send`` is
true, a synchronous NON_PERSISTENT send return before the broker's receipt. At most
:data:`SEND_WINDOW` of each kind are in flight per session; the next one waits for the
oldest (STYLE rule 4: this object is the arithmetic that says whether and what to send next).

Outside a transaction most pipelined sends are *quiet* (``Send.quiet``: no reply unless
refused, then a ``SendFailed`` event); one in every :data:`QUIET_RUN` is an ordinary request
whose reply vouches for the quiet ones before it (:meth:`SendWindow.quiet_next`), and the
window counts the sends each reply vouches for (:meth:`SendWindow.pipeline`). A refused
pipelined send is kept in :attr:`SendWindow.failure` and raised by the next send
(:meth:`SendWindow.check`) or, if none comes, by the session's close; in a transaction it also
dooms the transaction (the ``doom`` callback). Completion listeners run in send order on the
window's completion thread (:meth:`SendWindow.complete_later`); :meth:`SendWindow.wait` waits
for every send in flight (commit, rollback, close). Measured, pinned, 1 -> 1: a reply per send
cost the client ~2.5 µs of its ~21 µs per message.

The producer's compiled :class:`~ternmq.client._hot.Sender` holds this object directly and
reads ``inflight`` and ``failure`` per send. This module is compiled too (``setup.py``'s
COMPILED); the constants are plain module globals (not ``Final``), read at each use in both
builds, so a test may patch them.
"""

from __future__ import annotations

import collections
import logging
import queue
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from ternmq.client._util import check_reply, error_of
from ternmq.errors import JMSException
from ternmq.protocol import commands as c

if TYPE_CHECKING:
    from ternmq.destination import Destination
    from ternmq.transport._pending import PendingReply

__all__ = ["QUIET_RUN", "SEND_WINDOW", "SendWindow"]

log = logging.getLogger("ternmq.client")

SEND_WINDOW = 1000  # sends of one session in flight (pipelined, or awaiting a completion)
QUIET_RUN = 32  # one pipelined send in this many is answered (at most SEND_WINDOW // 2)


class SendWindow:
    """The sends of one session that returned before the broker's receipt.

    Args:
        session_id: the session's id (names the completion thread).
        transacted: a transacted session: every pipelined send is answered.
        failover: the connection reconnects; a pipelined send lost with a link is then only
            logged (at most once, as NON_PERSISTENT allows).
        gone: True once the session is closed or its connection failed (refusals then go
            unreported: the loss is reported already).
        doom: marks the session's transaction rollback-only with the given refusal.
    """

    __slots__ = (
        "_doom",
        "_failover",
        "_gone",
        "_id",
        "_sends_done",
        "completion_ident",
        "completions",
        "failure",
        "inflight",
        "inflight_sends",
        "pending_sends",
        "quiet",
        "transacted",
    )

    def __init__(
        self,
        session_id: int,
        transacted: bool,
        failover: bool,
        gone: Callable[[], bool],
        doom: Callable[[JMSException], None],
    ) -> None:
        self._id = session_id
        self.transacted = transacted
        self._failover = failover
        self._gone = gone
        self._doom = doom
        # answered pipelined NON_PERSISTENT sends, oldest first, each with the number of
        # sends its reply vouches for (itself and the quiet ones just before it)
        self.inflight: collections.deque[tuple[PendingReply, Destination, int]] = (
            collections.deque()
        )
        self.inflight_sends = 0  # the sum of those numbers
        self.quiet = 0  # quiet sends since the last answered one
        self.failure: JMSException | None = None  # the first pipelined one refused
        self.completions: queue.SimpleQueue[Callable[[], None] | None] | None = None
        self.completion_ident: int | None = None
        self.pending_sends = 0
        self._sends_done = threading.Condition(threading.Lock())

    # ---- pipelined sends -----------------------------------------------------------------
    def quiet_next(self) -> bool:
        """Whether the next pipelined send may be quiet (then counted as such)."""
        if self.transacted:
            return False  # commit() must know every refusal before it asks: all answered
        if self.quiet + 1 < min(QUIET_RUN, SEND_WINDOW // 2):
            self.quiet += 1
            return True
        return False

    def pipeline(self, pending: PendingReply, dest: Destination) -> None:
        """Track an answered pipelined send (it vouches for the quiet ones before it); past
        the window, wait for the oldest to be answered.

        Raises:
            JMSException: never for the sends settled here (a refusal is kept for later).
        """
        covers = self.quiet + 1
        self.quiet = 0
        self.inflight.append((pending, dest, covers))
        self.inflight_sends += covers
        while self.inflight_sends > SEND_WINDOW:
            self._settle_oldest()

    def _settle_oldest(self) -> None:
        pending, dest, covers = self.inflight.popleft()
        self.inflight_sends -= covers
        self._settle(pending, dest)

    def check(self) -> None:
        """Before a send: settle the pipelined sends already answered, and raise (once) the
        first refusal among them.

        Raises:
            JMSException: an earlier pipelined send of this session was refused.
        """
        inflight = self.inflight
        while inflight and inflight[0][0].done:
            self._settle_oldest()
        failure = self.failure
        if failure is not None:
            self.failure = None
            raise failure

    def _settle(self, pending: PendingReply, dest: Destination | str) -> None:
        reply = pending.reply
        if reply is not None and type(reply) is not c.Error:
            return  # answered and accepted (set once, before the handle is released)
        try:
            check_reply(pending.result())
        except JMSException as exc:
            if self._failover and pending.error is not None:
                if not self._gone():
                    log.warning(
                        "a pipelined NON_PERSISTENT send to %s was lost with the link", dest
                    )
                return  # at most once, as NON_PERSISTENT allows; a transaction is doomed
            self.refused(exc, dest)

    def on_send_failed(self, event: c.SendFailed) -> None:
        """Reader thread: the broker refused a quiet send of this session."""
        self.refused(error_of(event.kind, event.message), event.destination)

    def refused(self, exc: JMSException, dest: Destination | str) -> None:
        """Keep the first refusal of a pipelined send for the next send (and the commit)."""
        if self._gone():
            return  # the link is gone: at most once, and the loss is reported already
        failure = type(exc)(
            f"a pipelined NON_PERSISTENT send to {dest} failed: {exc} "
            "(a pipelined send reports it at the next send, commit or close; "
            "block_on_non_persistent_send=true raises it from the send itself)",
            exc.error_code,
            exc,
        )
        log.warning("%s", failure)
        if self.failure is None:
            self.failure = failure
        if self.transacted:
            self._doom(failure)  # the next commit() rolls back (TX-06)

    # ---- asynchronous sends --------------------------------------------------------------
    def complete_later(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` on the completion thread, after earlier completions (PROD-22..PROD-25).
        Past :data:`SEND_WINDOW` completions to come, wait for the oldest (unless called from
        a completion listener, which the wait would deadlock). Raises nothing."""
        if self.completions is None:
            self.completions = queue.SimpleQueue()
            threading.Thread(
                target=self._completion_loop, name=f"ternmq-completion-{self._id}", daemon=True
            ).start()
        with self._sends_done:
            if threading.get_ident() != self.completion_ident:
                self._sends_done.wait_for(lambda: self.pending_sends < SEND_WINDOW)
            self.pending_sends += 1
        self.completions.put(fn)

    def _completion_loop(self) -> None:
        self.completion_ident = threading.get_ident()
        q = self.completions
        assert q is not None
        while True:
            fn = q.get()
            if fn is None:
                return
            try:
                fn()
            except Exception:
                log.exception("a completion listener raised (ignored)")
            finally:
                with self._sends_done:
                    self.pending_sends -= 1
                    self._sends_done.notify_all()

    def wait(self) -> None:
        """Wait until every pipelined send is answered and every asynchronous send's
        completion listener has run (PROD-27). Raises nothing: refusals are kept."""
        while self.inflight:
            try:
                self._settle_oldest()
            except IndexError:  # emptied by another thread meanwhile
                break
        if threading.get_ident() == self.completion_ident:
            return
        with self._sends_done:
            self._sends_done.wait_for(lambda: self.pending_sends == 0)

    def forget_failure(self) -> None:
        """Commit or rollback: a kept refusal is reported as (or dropped with) the outcome."""
        self.failure = None

    def close(self) -> None:
        """The session closed: the completion thread ends after the completions queued."""
        if self.completions is not None:
            self.completions.put(None)
