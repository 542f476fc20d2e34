"""The embedded broker: a broker inside this process, reachable as ``vm://NAME``.

Theory of operation
-------------------
An :class:`EmbeddedBroker` is a :class:`~ternmq.broker.host.BrokerHost` (which builds the
:class:`~ternmq.broker.engine.Broker` and owns the duties every host shares) whose owner
context is a lock. Clients reach it through :class:`~ternmq.transport.vm.VmTransport`, which
carries the same request values as the network protocol but calls :meth:`Broker.handle`
directly, on the caller's thread, under the lock. That lock is what makes the broker
single-owner: exactly one thread is inside the engine at a time. Replies and events leave
through callbacks that only append to client buffers (they never call back into the broker),
so no lock order can deadlock.

Replies are the exception to "callbacks only append": waking the thread that waits for a
reply is a system call (several microseconds), and a thread woken while the waker still holds
the lock would only go to sleep again on it. So the transport takes the reply's waiter out of
its table under the lock (exactly once, as before) and queues the pair on
:attr:`EmbeddedBroker._replies`; whoever releases the lock then wakes them all. A reply thus
wakes its caller after the deliveries its request caused were buffered, as the protocol
requires (``commands.py``).

Why not a broker thread that takes requests from a queue? Every request would then cost two
thread hand-offs (each a GIL hand-over, tens of microseconds); calling under a lock costs a
lock acquire. The engine is the same either way; the network server (``ternmq.server``) owns
it from its asyncio event loop instead.

With a store that has owner commits (SQLite), a small batch that finds the store's writer
idle is written by the thread whose request made it, after it lets go of the lock
(``store/sqlite.py``): a lone producer's persistent send then waits for its fsync on its own
thread, with no writer to wake and no completion to hand back. A one-way request (an
acknowledgement) waits for nothing, so its batch goes to the writer thread; so do batches
that other threads submit meanwhile, in one group commit.

A thread that does block for its reply (its batch waits behind another commit) blocks under
``SCHED_BATCH`` (``PendingReply(defer_wakeup=True)``, ``ternmq._sched``): the thread that will
wake it holds the GIL, so it should not preempt it; the store's writer runs so too.

A PERSISTENT message that goes at once to a consumer waiting for it may have its insert
deferred for ``dispatch_hold`` seconds (``Broker.enable_deferral``): if the consumer's
acknowledgement comes first, neither the insert nor the removal is written, and the sender's
send returns without an fsync. A *hold* thread ends each deferral that runs out
(:meth:`EmbeddedBroker._defer_soon`); it keeps real time, whatever the broker's clock, and
ends itself after ``HOLD_LINGER`` seconds without a deferral.

Time-driven work (delivery delay, redelivery delay, the expiry reaper) runs on one timer
thread that exists only while something is pending *and* a connection is open: with no
connection nobody can see time act, so the thread ends (the broker is *dormant*), and the
next connection (or :meth:`EmbeddedBroker.stats`) first lets time catch up, on its own
thread, before it goes on. An embedded broker with no open connection holds no thread for
long: the hold thread and the store's writer end within seconds of their last work. With a
fake clock (``ternmq.testing.FakeClock``) no timer is armed: advancing the clock runs that
work synchronously instead.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from ternmq.broker._posting import ReplyWaiter, drain, post, resolve_replies, try_drain
from ternmq.broker.clock import Clock
from ternmq.broker.config import BrokerConfig, DestinationPolicy
from ternmq.broker.engine import BrokerConnection
from ternmq.broker.host import BrokerHost
from ternmq.errors import JMSException
from ternmq.protocol import commands as c
from ternmq.store import Store, describe_store

__all__ = ["EmbeddedBroker", "ReplyWaiter", "get_embedded"]

log = logging.getLogger("ternmq.broker")

HOLD_LINGER = 1.0  # seconds the hold thread waits for another deferral before it ends

_registry: dict[str, EmbeddedBroker] = {}
_registry_lock = threading.Lock()


def _stop_durable_brokers() -> None:
    """At interpreter exit, stop every embedded broker that keeps a data dir, so that what its
    store still queues (one-way acknowledgements, most of all) is written before the process
    ends: an acknowledged message must not come back after a normal exit."""
    with _registry_lock:
        durable = [b for b in _registry.values() if b.data_dir is not None]
    for broker in durable:
        with contextlib.suppress(Exception):
            broker.stop()


atexit.register(_stop_durable_brokers)


class EmbeddedBroker(BrokerHost):
    """A broker running inside this process, reachable as ``vm://NAME``.

    Args:
        name: the broker's name (its URL is ``vm://NAME``).
        data_dir: directory of the durable SQLite store (created if missing; :meth:`start`
            recovers what it holds); None keeps everything in this process's memory.
        clock: time source; a fake clock (``ternmq.testing.FakeClock``) makes time-driven
            behaviour deterministic.
        store: an explicit store (default: a memory store, durable for the process).
        users: ``{user: password}`` to require authentication (default: anyone may connect).
        **settings: :class:`~ternmq.broker.config.BrokerConfig` fields, destination-policy
            fields such as ``max_delivery_attempts`` that set the default policy, and with a
            ``data_dir`` ``fsync`` (``"always"``, the default, or ``"batch"``) and
            ``fsync_interval`` (seconds, for ``"batch"``); as in the server's config also
            ``destinations`` (``{"queue://orders": {"max_delivery_attempts": 3}}``: policy
            fields of one destination, over the default policy) and ``populate_user_id``
            (stamp ``JMSXUserID`` with the authenticated user on every send).

    Raises:
        TypeError: an unknown setting (or policy field), or both ``store`` and ``data_dir``.
        ValueError: a ``destinations`` name that is not ``queue://NAME`` or ``topic://NAME``.

    :meth:`start` raises :class:`~ternmq.errors.JMSException` when another process uses the
    ``data_dir`` (its lock file) or the directory holds a store of another schema.
    """

    def __init__(
        self,
        name: str = "local",
        data_dir: str | None = None,
        *,
        clock: Clock | None = None,
        store: Store | None = None,
        users: dict[str, str] | None = None,
        **settings: Any,
    ) -> None:
        super().__init__(clock)
        fsync = settings.pop("fsync", "always")
        batch_interval = settings.pop("fsync_interval", 0.05)
        self._populate_user_id = bool(settings.pop("populate_user_id", False))
        destinations: dict[str, dict[str, Any]] = settings.pop("destinations", None) or {}
        self.name = name
        self.data_dir = None if data_dir is None else str(data_dir)
        self.config = _with_destinations(BrokerConfig.from_settings(**settings), destinations)
        self._fsync = fsync
        self._batch_interval = batch_interval
        if store is not None and data_dir is not None:
            raise TypeError("give either store or data_dir, not both")
        self._store: Store | None = store
        self._users = users
        self.lock = threading.Lock()
        self._timer: threading.Thread | None = None
        self._timer_wake = threading.Condition(threading.Lock())
        # One-way requests (acks, credit) wait here until a thread holds the lock; see
        # broker/_posting.py.
        self._posted: collections.deque[Callable[[], None]] = collections.deque()
        # No connection is open since the last one closed: no timer thread runs (_catch_up).
        self._dormant = False
        # The owner store announced a batch; the thread that released the lock writes it.
        self._commit_pending = False
        # Replies produced under the lock, resolved by the holder once it let go; see _resolve.
        self._replies: collections.deque[tuple[ReplyWaiter, c.Reply]] = collections.deque()
        # The deferral the hold thread ends: (time.monotonic() due, token), or None. The broker
        # defers one batch at a time, so only the latest counts.
        self._hold: tuple[float, int] | None = None
        self._hold_thread: threading.Thread | None = None
        self._hold_wake = threading.Condition(threading.Lock())

    @property
    def url(self) -> str:
        """``vm://NAME``."""
        return f"vm://{self.name}"

    @property
    def running(self) -> bool:
        """True between :meth:`start` and :meth:`stop`."""
        return self.broker is not None

    def start(self) -> EmbeddedBroker:
        """Start the broker and register it under its name; a no-op if running.

        Raises:
            JMSException: another embedded broker of this name is running, or the
                ``data_dir`` cannot be opened (see the class doc).
        """
        with _registry_lock:
            other = _registry.get(self.name)
            if other is not None and other is not self:
                raise JMSException(f"an embedded broker named {self.name!r} is already running")
            if self.broker is None:
                broker = self._start_broker(
                    self.config,
                    self._store,
                    self.data_dir,
                    fsync=self._fsync,
                    fsync_interval=self._batch_interval,
                    users=self._users,
                    populate_user_id=self._populate_user_id,
                )
                if self.data_dir is None:
                    self._store = broker.store  # a restart recovers from the same memory
                else:
                    log.info(
                        "embedded broker %s recovered from %s: %s",
                        self.url,
                        describe_store(self.data_dir),
                        ", ".join(f"{v} {k}" for k, v in broker.recovered.items()),
                    )
            _registry[self.name] = self
        with self._owner():
            running = self.broker
            if running is not None and not running.connections:
                self._dormant = True  # what it recovered waits for the first connection
        self._reschedule()
        return self

    def stop(self) -> None:
        """Stop the broker: every connection is told and closed. A no-op if stopped. On an
        object that is not running, it stops the running broker of its name, however that
        started (a ``vm://NAME`` URL starts one on first use)."""
        with _registry_lock:
            running = _registry.get(self.name)
            if running is self:
                del _registry[self.name]
        if running is not None and running is not self and self.broker is None:
            running.stop()
            return
        with self._owner():
            broker, self.broker = self.broker, None
            if broker is not None:
                self._drain()
                broker.shutdown()
                self._drain()  # completions the store reported while closing
            self._disarm()
        with self._hold_wake:  # shutdown wrote what was deferred: the hold thread may end
            self._hold = None
            self._hold_wake.notify()
        if self.data_dir is not None:
            self._store = None  # a restart reopens the directory (and recovers from it)

    def __enter__(self) -> EmbeddedBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stats(self) -> list[c.DestinationStat]:
        """What the broker holds, every destination sorted by name (temporary ones
        included), as the admin ``Stat`` request shows it; empty while stopped. Safe from
        any thread (it takes the broker lock)."""
        with self._owner():
            self._catch_up(connecting=False)
            return super().stats()

    # ---- used by VmTransport ------------------------------------------------------------
    def _connect(self, emit: Callable[[c.Command], None]) -> BrokerConnection:
        """Open the broker side of a vm connection whose output goes to ``emit``.

        Raises:
            JMSException: the broker is stopped.
        """
        with self._owner():
            broker = self.broker
            if broker is None:
                raise JMSException(f"the embedded broker {self.url} is stopped")
            self._catch_up(connecting=True)
            return broker.connect(emit)

    def _submit(self, conn: BrokerConnection, req: c.Request) -> None:
        """Handle ``req`` of ``conn`` on this thread, under the lock (the hot path).

        Raises:
            JMSException: the broker is stopped.
        """
        with self.lock:  # the hot path: re-checks the posted queue itself, below
            broker = self.broker
            if broker is None:
                raise JMSException(f"the embedded broker {self.url} is stopped")
            self._drain()  # earlier one-way requests first: per-connection order holds
            store = self.owner_store
            batches = 0 if store is None else store.batches
            broker.handle(conn, req)
            # The caller waits for this request's reply: if it made a store batch, the reply
            # waits for that commit anyway, and this thread may as well write it.
            mine = store is not None and store.batches != batches
            deadline = broker.next_deadline()
        if self._replies:
            resolve_replies(self._replies)
        if self._commit_pending:
            self._commit_due(mine)
        if self._posted:
            try_drain(self)
        if deadline is not None and (self._timer_due is None or deadline < self._timer_due):
            self._reschedule()

    @contextlib.contextmanager
    def _owner(self) -> Iterator[None]:
        """Hold the broker lock; after releasing it, run whatever was posted meanwhile.

        Every holder must re-check the posted queue after releasing the lock: work posted
        while it held the lock (a store completion, a one-way ack) found the lock busy and
        relies on the holder to run it.
        """
        with self.lock:
            yield
        if self._replies:
            self._resolve()
        if self._posted:
            self._try_drain()
        if self._commit_pending:
            self._commit_due(False)

    def _post(self, conn: BrokerConnection, req: c.Request) -> None:
        """Have the broker handle the one-way ``req`` of ``conn`` without ever blocking on
        the lock (``broker/_posting.py``, compiled, which ``VmTransport`` calls directly)."""
        post(self, conn, req)

    def _drop(self, conn: BrokerConnection) -> None:
        """The vm connection closed: the broker releases whatever it held."""
        with self._owner():
            broker = self.broker
            if broker is not None:
                broker.drop_connection(conn)
                if not broker.connections:
                    self._dormant = True
                    self._disarm()  # the timer thread ends; the next connection wakes it

    # ---- the host's I/O: the lock is the owner context ----------------------------------
    def _warn(self, event: str, **fields: object) -> None:
        """The broker's ``on_warning``: something it did on its own, for the log."""
        log.warning(
            "embedded broker %s: %s %s",
            self.url,
            event,
            " ".join(f"{k}={v!r}" for k, v in fields.items()),
        )

    def run_in_owner(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` in the broker's owner context (store completions, from its thread):
        queued, and run by whichever thread holds the lock next."""
        self._posted.append(fn)
        self._try_drain()

    def _try_drain(self) -> None:
        """Drain the posted queue if the lock is free, again while more arrives; then wake
        the reply waiters and hand on a due store batch (``broker/_posting.py``, compiled)."""
        try_drain(self)

    def _commit_soon(self) -> None:
        """The store's owner-commit hook (called inside ``handle``, under the lock): a batch
        waits for an idle writer; the thread that releases the lock writes it."""
        self._commit_pending = True

    def _commit_due(self, here: bool) -> None:
        """Hand the store's due batch on, without the broker lock. ``here``: this thread made
        a request whose reply waits for that batch, so it writes the batch itself if the
        writer is idle (``Store.commit_due``): a lone producer's persistent send then costs
        no thread hand-over; its completion comes back through :meth:`run_in_owner` and
        resolves its reply before it waits. Otherwise (a one-way acknowledgement, a timer,
        a batch of another thread's) the writer thread takes it: nobody waits for it here.
        Batches submitted meanwhile by other threads go to the writer, in one group commit."""
        self._commit_pending = False
        store = self.owner_store
        if store is not None:
            store.commit_due(here)

    def _resolve(self) -> None:
        """Wake the callers of the replies queued under the lock (called without it). Every
        holder calls this after releasing the lock, so none is left behind; two threads doing
        so at once each wake different callers (deque operations are atomic)."""
        resolve_replies(self._replies)

    def _drain(self) -> None:
        """Run everything posted so far, in order (the caller holds the lock)."""
        drain(self._posted)

    # ---- deferred inserts -----------------------------------------------------------------
    def _defer_soon(self, token: int) -> None:
        """The broker's ``on_defer`` (under the lock): have the hold thread end the deferral
        ``token`` after ``dispatch_hold`` seconds, starting that thread if it is not running."""
        assert self.broker is not None
        due = time.monotonic() + self.broker.config.dispatch_hold
        with self._hold_wake:
            self._hold = (due, token)
            if self._hold_thread is None:
                self._hold_thread = threading.Thread(
                    target=self._hold_loop, name=f"ternmq-hold-{self.name}", daemon=True
                )
                self._hold_thread.start()
            # else it waits for an earlier deferral's due time (settled by now: the broker
            # starts one only when the last is gone) or for none: either way it looks again

    def _hold_loop(self) -> None:
        wake = self._hold_wake
        while True:
            with wake:
                hold = self._hold
                if hold is None:
                    if self.broker is not None:
                        wake.wait(HOLD_LINGER)
                    if self._hold is None:
                        self._hold_thread = None
                        return
                    continue
                due, token = hold
                delay = due - time.monotonic()
                if delay > 0:
                    wake.wait(delay)
                    continue
                self._hold = None
            self._end_deferral(token)

    def _end_deferral(self, token: int) -> None:
        """The hold of deferral ``token`` ran out: the acknowledgements posted meanwhile
        first (one may settle it), then the broker writes what is left of it; the writer
        thread commits it, and the sender's reply leaves once it is durable."""
        with self._owner():
            broker = self.broker
            if broker is not None:
                self._drain()
                broker.end_deferral(token)

    # ---- the timer ----------------------------------------------------------------------
    def tick(self) -> None:
        """Run due time-driven work now (the timer thread and fake clocks call this)."""
        with self._owner():
            self._on_timer()

    def _on_clock_jump(self) -> None:
        """A fake clock moved: run the due work now, on the thread that moved it."""
        self.tick()

    def _reschedule(self) -> None:
        """Arm the timer thread for the broker's next deadline."""
        with self._owner():
            self.rearm()

    def _catch_up(self, *, connecting: bool) -> None:
        """A dormant broker (no connection since its last one closed) is about to be seen
        (under the lock): let time act now. A connection ends the dormancy (the timer is
        armed for what comes next); a look at :meth:`stats` does not."""
        if self._dormant:
            self._dormant = not connecting
            self._on_timer()

    def _arm(self, due: int | None) -> None:
        """Start the timer thread for ``due`` (under the lock, from :meth:`rearm`), or wake
        it to wait for the new deadline, or to end itself (``due`` None). While dormant no
        thread starts: the next connection lets time act."""
        if self._dormant and due is not None:
            self._timer_due = None  # so that waking up arms it again
            due = None
        with self._timer_wake:
            if due is not None and (self._timer is None or not self._timer.is_alive()):
                self._timer = threading.Thread(
                    target=self._timer_loop, name=f"ternmq-timer-{self.name}", daemon=True
                )
                self._timer.start()
            else:
                self._timer_wake.notify_all()

    def _timer_loop(self) -> None:
        clock = self.clock
        while True:
            with self._timer_wake:
                deadline = self._timer_due
                if deadline is None:
                    self._timer = None
                    return
                delay = clock.sleep_time(deadline)
                if delay > 0:
                    self._timer_wake.wait(min(delay, 60.0))
                    continue
            self.tick()


def _with_destinations(config: BrokerConfig, tables: dict[str, dict[str, Any]]) -> BrokerConfig:
    """``config`` with the per-destination policies ``tables`` (name -> policy fields, each
    over the default policy), as the server's ``[destinations."NAME"]`` tables.

    Raises:
        TypeError: a field that is not a destination-policy field.
        ValueError: a name that is not ``queue://NAME`` or ``topic://NAME``.
    """
    if not tables:
        return config
    policies = dict(config.policies)
    known = {f.name for f in dataclasses.fields(DestinationPolicy)}
    for name, fields in tables.items():
        if not (name.startswith("queue://") or name.startswith("topic://")):
            raise ValueError(f"destinations: name {name!r} as queue://NAME or topic://NAME")
        unknown = sorted(set(fields) - known)
        if unknown:
            raise TypeError(f"destinations[{name!r}]: unknown policy setting {unknown[0]!r}")
        policies[name] = dataclasses.replace(config.default_policy, **fields)
    return dataclasses.replace(config, policies=policies)


def get_embedded(name: str, *, create: bool = True, data_dir: str | None = None) -> EmbeddedBroker:
    """The running embedded broker called ``name``; started (on ``data_dir`` if given) if absent.

    Raises:
        JMSException: none is running and ``create`` is False; or it runs on another data dir;
            or ``data_dir`` is held by another process.
    """
    with _registry_lock:
        broker = _registry.get(name)
    if broker is None:
        if not create:
            raise JMSException(f"no embedded broker named {name!r} is running")
        try:
            return EmbeddedBroker(name, data_dir).start()
        except JMSException:
            with _registry_lock:
                broker = _registry.get(name)
            if broker is None:
                raise
    if data_dir is not None and broker.data_dir != str(data_dir):
        raise JMSException(
            f"the embedded broker {name!r} already runs on "
            f"{describe_store(broker.data_dir)!r}, not {describe_store(data_dir)!r}"
        )
    return broker
