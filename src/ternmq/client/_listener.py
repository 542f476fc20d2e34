"""The listener thread of a session: message listeners, one at a time (JMS 2.0 §6.2.7;
SESS-06, CONS-09..CONS-14).

Theory of operation
-------------------
Message listeners of a session run one at a time on the session's own delivery thread,
started the first time one of its consumers gets a listener. The thread waits on the
session's lock (the ledger's condition) for a buffered delivery of a consumer with a
listener, round-robin over those consumers while the connection is started, and hands it
over on the ledger's one path. After the call it acknowledges automatically (AUTO,
DUPS_OK), or, when the listener raised, returns the message for immediate redelivery
(REL-17). A listener that calls ``recover()`` makes the session redeliver the message it is
running (:attr:`ListenerThread.recovered`), and nothing is acknowledged after it. When no
delivery is left to run, the thread writes what the listeners pipelined (``flush``).

:attr:`ListenerThread.ident` and :attr:`ListenerThread.running` let ``close`` and
``recover`` know whether they are called from inside a listener (and of which consumer).
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from ternmq.client._ledger import AUTO, DUPS_OK
from ternmq.errors import JMSException
from ternmq.protocol import commands as c

if TYPE_CHECKING:
    from ternmq.client._ledger import DeliveryLedger
    from ternmq.client._types import ConsumerPort, SessionState

__all__ = ["ListenerThread"]

log = logging.getLogger("ternmq.client")


class ListenerThread:
    """Runs a session's message listeners (see the module docstring).

    Args:
        session: the session (its id, and its closing and closed flags).
        ledger: the session's delivery ledger (its lock, mode, connection and consumers,
            the hand-over and the acknowledgements).
    """

    def __init__(self, session: SessionState, ledger: DeliveryLedger) -> None:
        self._session = session
        self._mode = ledger.mode
        self._link = ledger.link
        self._ledger = ledger
        self._consumers = ledger.consumers
        self._thread: threading.Thread | None = None
        self.ident: int | None = None
        self.running: ConsumerPort | None = None  # whose listener runs now
        self.current_delivery: int | None = None
        self.recovered = False  # the running listener called recover()
        self._rr = 0

    def changed(self) -> None:
        """A consumer's listener was set or cleared: start the thread if one is needed."""
        with self._ledger.cond:
            if self._thread is None and any(
                k._listener is not None for k in self._consumers.values()
            ):
                self._thread = threading.Thread(
                    target=self._loop, name=f"ternmq-session-{self._session._id}", daemon=True
                )
                self._thread.start()
            self._ledger.cond.notify_all()

    def _next(self) -> tuple[ConsumerPort, c.Deliver] | None:
        """Under the lock: the next delivery for a listener, round-robin over consumers."""
        if not self._link.started:
            return None
        consumers = [k for k in self._consumers.values() if k._listener is not None and k._buffer]
        if not consumers:
            return None
        self._rr = (self._rr + 1) % len(consumers)
        k = consumers[self._rr]
        return k, k._buffer.popleft()

    def _loop(self) -> None:
        self.ident = threading.get_ident()
        conn = self._link
        conn._listener_threads.add(self.ident)
        ledger = self._ledger
        session = self._session
        cond = ledger.cond
        try:
            while True:
                with cond:
                    item = self._next()
                    while item is None:
                        if session._closing or session._closed:
                            return
                        cond.wait()
                        item = self._next()
                    consumer, d = item
                    self.running = consumer
                    self.current_delivery = d.delivery_id
                    epoch = ledger.epoch
                try:
                    self._run(consumer, d, epoch)
                finally:
                    with cond:
                        self.running = None
                        self.current_delivery = None
                        self.recovered = False
                        cond.notify_all()
                        idle = not any(k._buffer for k in self._consumers.values())
                if idle:
                    conn.flush()  # nothing to run next: what the listener pipelined goes now
        finally:
            conn._listener_threads.discard(self.ident)
            with cond:
                self._thread = None

    def _run(self, consumer: ConsumerPort, d: c.Deliver, epoch: int) -> None:
        ledger = self._ledger
        msg = ledger.hand_over(consumer, d, epoch)
        if msg is None:
            return
        listener = consumer._listener
        failed = False
        try:
            if listener is not None:
                listener(msg)
        except Exception:
            failed = True
            log.exception("message listener of consumer %s raised", consumer._id)
        if self._session._closed or self.recovered:
            return
        if self._mode in (AUTO, DUPS_OK):
            if failed:  # REL-17: redeliver at once
                ledger.flush_dups()
                with ledger.cond:
                    delivered = [*ledger.delivered_ids(), d.delivery_id]
                try:
                    ledger.release_ids(
                        c.Release(session_id=self._session._id, delivered=delivered), epoch
                    )
                except JMSException:
                    log.exception("could not return a failed message")
            else:
                ledger.after_receive(d.delivery_id, epoch)

    def wait_idle(self) -> None:
        """Return once no listener runs (at once on the listener thread itself)."""
        if threading.get_ident() == self.ident:
            return
        with self._ledger.cond:
            self._ledger.cond.wait_for(lambda: self.running is None)
