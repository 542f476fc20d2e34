"""``ternmq serve``: the network broker.

Theory of operation
-------------------
:class:`BrokerServer` is a :class:`~ternmq.broker.host.BrokerHost` (which builds the
:class:`~ternmq.broker.engine.Broker` on the store of ``config.data_dir`` and owns the duties
every host shares) that runs on one asyncio event loop (uvloop when it is installed). The loop
is the broker's only owner, as the embedded broker's lock is in ``broker/embedded.py``: every
``handle``, ``tick`` and ``drop_connection`` runs on the loop thread. Work from other threads
comes back through the loop:

- the store's writer thread reports finished batches through the broker's ``run_in_owner``,
  which is this server's :meth:`BrokerServer.run_in_owner`, ``loop.call_soon_threadsafe``; a
  small batch that finds the writer idle and that a request awaiting its reply made is
  instead written by the loop itself once it has read what its clients sent (owner commits,
  ``store/sqlite.py``), and its replies leave in the same callback;
- password hashing runs in a small thread pool and hands its verdict back the same way.

Time-driven work (scheduled delivery, redelivery delay, the expiry reaper, blocked sends) is
one ``loop.call_later`` for ``broker.next_deadline()``, re-armed (``BrokerHost.rearm``) after
every batch of requests, every store completion and every tick. A second periodic callback
sweeps the connections for heartbeats.

Live/backup (a PostgreSQL store shared by several servers, ``store/pg_live.py``): before it
opens the store, :meth:`BrokerServer.start` takes the store's live lock. While another
server holds it this one is a backup: it logs ``event=backup``, serves only its HTTP listener
(``/api/health`` answers 503 with role ``backup``), and tries again every
``pg_live.POLL_INTERVAL`` seconds; once it holds the lock it opens the store with the lock's
fence, recovers, and listens. A live whose lock is lost (its lock session ended, or a commit
was refused by the fence) logs ``event=fenced`` and stops at once: its clients are closed
and nothing more is committed; ``ternmq serve`` then exits with status 1.

Stopping (SIGTERM, SIGINT, :meth:`BrokerServer.stop`): the listeners close first (no new
connections), then ``broker.shutdown()`` writes every batch still queued in the store, releases
the replies that waited for it, tells each client ``ConnectionFailed`` and closes the store;
then the sockets close once their last octets are sent (or after ``limits.shutdown_grace``).
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import contextlib
import errno
import gc
import logging
import os
import signal
import ssl
import sys
import threading
import time
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, Final, TypeVar

from ternmq.broker.clock import Clock
from ternmq.broker.engine import BrokerConnection
from ternmq.broker.host import BrokerHost
from ternmq.errors import JMSException, ResourceAllocationException
from ternmq.protocol import commands as c
from ternmq.server._gateway import ConnectionHost, GatewayConnection, Verdict
from ternmq.server._memory import MemoryReturn, proc_rss
from ternmq.server._stomp_ws import setup as stomp_ws_setup
from ternmq.server.admission import Admission, PasswordCheck
from ternmq.server.config import Limits, ListenerConfig, ServerConfig, TlsConfig, load_config
from ternmq.server.http import HttpFrontend, add_routes, build_frontend
from ternmq.server.logs import LEVELS, log_event, setup_logging
from ternmq.server.openwire import OpenWireConnection
from ternmq.server.stomp import NativeOrStompConnection, StompConnection
from ternmq.store import Store, describe_store, is_postgres
from ternmq.store.pg_live import POLL_INTERVAL, LiveLock
from ternmq.store.postgres import PostgresStore

__all__ = ["BrokerServer", "ServerThread", "build_parser", "main"]

log = logging.getLogger("ternmq.server")
T = TypeVar("T")

# The gateways a listener may serve, by its ``protocol`` (config.LISTENER_PROTOCOLS): each a
# factory of one connection per accepted socket.
# The native listener also serves STOMP and OpenWire, told apart by the first octets of a
# connection.
GATEWAYS: Final[Mapping[str, Callable[[ConnectionHost, str], GatewayConnection]]] = {
    "native": NativeOrStompConnection,
    "stomp": StompConnection,
    "openwire": OpenWireConnection,
}
add_routes(stomp_ws_setup)  # STOMP over WebSocket at /stomp on the HTTP listener


def new_event_loop() -> asyncio.AbstractEventLoop:
    """A uvloop event loop if uvloop is importable, else asyncio's default."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
    return loop


def ssl_context(tls: TlsConfig) -> ssl.SSLContext:
    """The server-side TLS context of a listener.

    Raises:
        OSError: a file cannot be read, or is not a valid certificate or key.
    """
    for what, path in (("tls.cert", tls.cert), ("tls.key", tls.key), ("tls.cafile", tls.cafile)):
        if not path:
            continue
        try:  # readable? (the ssl module's own error names no file)
            with open(path, "rb") as f:
                f.read(1)
        except OSError as exc:
            raise OSError(f"{what} {path}: {exc.strerror or exc}") from exc
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        ctx.load_cert_chain(tls.cert, tls.key)
    except ssl.SSLError as exc:
        raise OSError(
            f"tls.cert {tls.cert} and tls.key {tls.key}: not a PEM certificate chain and its "
            f"private key ({exc.reason or exc}); the key may be missing, encrypted or not the "
            "certificate's"
        ) from exc
    if tls.cafile:
        try:
            ctx.load_verify_locations(tls.cafile)
        except ssl.SSLError as exc:
            raise OSError(
                f"tls.cafile {tls.cafile}: not PEM CA certificates ({exc.reason or exc})"
            ) from exc
        ctx.verify_mode = ssl.CERT_REQUIRED if tls.verify_client else ssl.CERT_OPTIONAL
    return ctx


class BrokerServer(BrokerHost):
    """The network broker: listeners, connections, and the broker they share.

    Args:
        config: the server settings.
        store: the store to use instead of the one ``open_store`` opens in ``config.data_dir``
            (tests).
        clock: the broker's time source (default: the system clock).

    Raises:
        ValueError: a malformed password hash or permission pattern.
    """

    def __init__(
        self, config: ServerConfig, *, store: Store | None = None, clock: Clock | None = None
    ) -> None:
        super().__init__(clock)
        self.config = config
        self.authenticator = config.authenticator()
        self.authorizer = config.authorizer()
        self.connections: set[GatewayConnection] = set()
        self.addresses: list[str] = []
        self.stopping = False
        self.executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=4, thread_name_prefix="ternmq-auth"
        )
        self.admission = Admission(config.limits)
        # Whether free heap pages go back to the system after a large backlog drained
        # (_memory.py): in ``ternmq serve`` only, an embedding process keeps its own policy.
        self.memory_return = MemoryReturn(None, proc_rss)
        self._store = store
        self.role = "live"  # "backup" while another server holds the store's live lock
        self.fenced = False  # the live lock was lost: the server stopped serving
        self._live_lock: LiveLock | None = None
        self._fencing: asyncio.Task[None] | None = None  # the stop a lost live lock began
        self._servers: list[asyncio.Server] = []
        self._bound: list[tuple[str, str]] = []  # (protocol, address) of each server
        self._http: HttpFrontend | None = None  # the HTTP listener's application, if any
        self.http_addresses: list[str] = []  # http://HOST:PORT of the HTTP listener
        self.stomp_addresses: list[str] = []  # tcp://HOST:PORT of STOMP-only listeners
        self.started_at = 0.0  # wall-clock seconds the server started at
        self._timer: asyncio.TimerHandle | None = None
        self._sweeper: asyncio.TimerHandle | None = None
        self._stopped: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._to_flush: list[GatewayConnection] = []  # connections with output, this iteration
        self._inline_posts: list[Callable[[], None]] | None = None  # see _commit_due
        # A request that awaits a reply made a store batch since the last _commit_due: only
        # then may the loop write the batch itself (see ConnectionHost.due_awaited).
        self.due_awaited = False

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The event loop the server runs on (set by :meth:`start`)."""
        assert self._loop is not None, "the server is not started"
        return self._loop

    async def start(self) -> None:
        """Open the store and the broker, then every listener.

        Raises:
            JMSException: the data dir is in use by another process or cannot be opened.
            OSError: a listener cannot bind, or a TLS file is unusable.
        """
        self._loop = asyncio.get_running_loop()
        self._stopped = asyncio.Event()
        self.started_at = time.time()
        cfg = self.config
        # Listeners first (TLS files read, ports bound, nothing accepted yet): a bad file or a
        # port in use is reported before the data dir is opened and recovered.
        try:
            for listener in cfg.all_listeners():
                if listener.protocol == "stomp" and cfg.stomp_port is None:
                    try:  # the default STOMP port: STOMP is served on the main port anyway
                        await self._bind(listener)
                    except OSError as exc:
                        log_event(
                            log,
                            logging.WARNING,
                            "listener_skipped",
                            protocol="stomp",
                            problem=str(exc),
                            hint="set --stomp-port N (0: a free port, -1: off)",
                        )
                    continue
                await self._bind(listener)
        except BaseException:
            for server in self._servers:
                server.close()
            await self._close_http()
            raise
        store = self._store
        if store is None and is_postgres(cfg.store_target):
            try:
                store = await self._become_live(cfg.store_target)
            except BaseException:
                for server in self._servers:
                    server.close()
                await self._close_http()
                raise
            if store is None:  # stopped while a backup
                return
        try:
            broker = self._start_broker(
                cfg.broker_config(),
                store,
                cfg.store_target,
                fsync=cfg.fsync,
                fsync_interval=cfg.fsync_interval,
                authorizer=self.authorizer,
                request_check=self.check_request,
                populate_user_id=cfg.populate_user_id,
            )
        except BaseException:
            for server in self._servers:
                server.close()
            raise
        log_event(
            log,
            logging.INFO,
            "recovered",
            data_dir=describe_store(cfg.store_target) if self._store is None else None,
            **{k: v for k, v in broker.recovered.items()},
        )
        try:
            for server, (protocol, address) in zip(self._servers, self._bound, strict=True):
                if server.is_serving():
                    continue  # the HTTP listener of a backup
                await server.start_serving()
                _log_listening(protocol, address)
        except BaseException:
            await self.stop()
            raise
        self._loop_thread = threading.get_ident()
        self.memory_return.note(broker.total_bytes + broker.staged_bytes)  # the floor
        self._arm_sweeper()
        self.rearm()

    async def _become_live(self, url: str) -> Store | None:
        """Take the live lock of the PostgreSQL store at ``url``, a backup (HTTP listener
        only) until then; the store opened with the lock's fence, or None if the server was
        stopped meanwhile.

        Raises:
            JMSException: the database cannot be reached at the first attempt, or the store
                cannot be opened.
        """
        lock = self._live_lock = LiveLock(url)
        loop = self.loop
        while not self.stopping:
            try:
                if await loop.run_in_executor(None, lock.try_acquire):
                    break
                problem = None
            except JMSException as exc:
                if self.role != "backup":
                    raise  # start-up against an unreachable database fails
                problem = str(exc)
            if self.role != "backup":
                self.role = "backup"
                log_event(log, logging.INFO, "backup", store=describe_store(url))
                for server, (protocol, address) in zip(self._servers, self._bound, strict=True):
                    if protocol == "http":
                        await server.start_serving()
                        _log_listening(protocol, address)
            elif problem is not None:
                log_event(log, logging.WARNING, "backup_retry", problem=problem)
            await asyncio.sleep(POLL_INTERVAL)
        if self.stopping:  # stopped while a backup (or while it tried): let the lock go
            lock.close()
            return None
        assert lock.fence is not None  # try_acquire returned True
        if self.role == "backup":
            log_event(
                log, logging.INFO, "takeover", store=describe_store(url), epoch=lock.fence.epoch
            )
        self.role = "live"
        lock.watch(self._lock_lost)
        try:
            return await loop.run_in_executor(
                None,
                lambda: PostgresStore(
                    url, self.config.fsync, batch_scheduling=True, fence=lock.fence
                ),
            )
        except BaseException:
            lock.close()
            raise

    def _lock_lost(self, reason: str) -> None:
        """The live lock is lost (any thread): stop serving at once."""
        with contextlib.suppress(RuntimeError):  # the loop is closed: nothing left to stop
            self.loop.call_soon_threadsafe(self._fence, reason)

    def _fence(self, reason: str) -> None:
        """On the loop: log ``event=fenced`` and stop (clients closed, nothing committed)."""
        if self.stopping or self.fenced:
            return
        self.fenced = True
        log_event(log, logging.ERROR, "fenced", problem=reason)
        self._fencing = self.loop.create_task(self.stop())

    async def _bind(self, listener: ListenerConfig) -> None:
        """Bind ``listener``'s socket (and load its TLS files) without accepting yet: the
        server starts serving once the broker has recovered.

        Raises:
            OSError: the port cannot be bound, or a TLS file is missing or unusable (the
                message names the listener's address and the file).
        """
        scheme = listener.scheme
        if listener.protocol == "http":
            scheme = "https" if listener.tls is not None else "http"
        where = f"{scheme}://{listener.bind}:{listener.port}"
        try:
            ctx = ssl_context(listener.tls) if listener.tls is not None else None
        except OSError as exc:
            raise OSError(f"listener {where}: {exc}") from exc
        if listener.protocol == "http":
            if self._http is None:
                self._http = build_frontend(self)
            make: Callable[[], asyncio.BaseProtocol] = await self._http.protocol_factory()
        else:
            factory = GATEWAYS[listener.protocol]
            persistent = bool(listener.stomp_persistent_default)

            def make() -> asyncio.BaseProtocol:
                conn = factory(self, scheme)
                if isinstance(conn, (StompConnection, NativeOrStompConnection)):
                    conn.stomp_persistent_default = persistent
                return conn

        server = await self.loop.create_server(
            make,
            listener.bind,
            listener.port,
            ssl=ctx,
            ssl_handshake_timeout=self.config.limits.handshake_timeout if ctx else None,
            backlog=1024,
            start_serving=False,
        )
        self._servers.append(server)
        address = where
        for sock in server.sockets[:1]:
            host, port = sock.getsockname()[:2]
            shown = f"[{host}]" if ":" in str(host) else str(host)
            address = f"{scheme}://{shown}:{port}"
        if listener.protocol == "http":
            self.http_addresses.append(address)  # not a messaging URL: kept apart
        elif listener.protocol == "stomp":
            self.stomp_addresses.append(address)  # not a ternmq URL either
        elif listener.protocol == "openwire":
            pass  # an ActiveMQ client's URL, not a ternmq one: in the listening log line
        else:
            self.addresses.append(address)
        self._bound.append((listener.protocol, address))

    async def _close_http(self) -> None:
        """Close the HTTP listener's connections and application (idempotent)."""
        http = self._http
        if http is not None:
            with contextlib.suppress(Exception):
                await http.close(self.config.limits.shutdown_grace)

    async def wait_stopped(self) -> None:
        """Return once :meth:`stop` has finished."""
        assert self._stopped is not None, "the server is not started"
        await self._stopped.wait()

    async def stop(self) -> None:
        """Stop gracefully: no new connections, queued store writes finished and their
        replies sent, every client told ``ConnectionFailed`` and closed. Idempotent."""
        if self.stopping:
            if self._stopped is not None:
                await self._stopped.wait()
            return
        self.stopping = True
        log_event(log, logging.INFO, "stopping", connections=len(self.connections))
        for server in self._servers:
            server.close()
        for handle in (self._timer, self._sweeper):
            if handle is not None:
                handle.cancel()
        self._timer = self._sweeper = None
        broker = self.broker
        if broker is not None:
            try:
                broker.shutdown()  # writes what the store holds, tells every client
            except JMSException as exc:  # a fenced live may not write what it held
                log_event(log, logging.WARNING, "store_close_failed", problem=str(exc))
            finally:
                self.broker = None
        if self._live_lock is not None:
            self._live_lock.close()  # after the store: a backup takes over once it is closed
        for conn in list(self.connections):
            conn.close("the server is stopping")
        pending = [conn.closed for conn in self.connections if not conn.closed.done()]
        if pending:
            await asyncio.wait(pending, timeout=self.config.limits.shutdown_grace)
        for conn in list(self.connections):
            if conn.transport is not None:
                conn.transport.abort()
        await self._close_http()
        for server in self._servers:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 1.0)
        self.executor.shutdown(wait=False, cancel_futures=True)
        log_event(log, logging.INFO, "stopped")
        if self._stopped is not None:
            self._stopped.set()

    # ---- the broker's owner ---------------------------------------------------------------
    def _warn(self, event: str, **fields: object) -> None:
        """The broker's ``on_warning``: one ``key=value`` warning line of this server's log."""
        log_event(log, logging.WARNING, event, **fields)

    def run_in_owner(self, fn: Callable[[], None]) -> None:
        """The broker's ``run_in_owner``: run ``fn`` on the loop thread (store completions)."""
        posts = self._inline_posts
        if posts is not None and threading.get_ident() == self._loop_thread:
            posts.append(fn)  # reported by a commit on the loop: _commit_due runs it
            return
        try:
            self.loop.call_soon_threadsafe(self._owned, fn)
        except RuntimeError:
            pass  # the loop is closed: the broker is gone with it

    def _owned(self, fn: Callable[[], None]) -> None:
        if self.broker is None:
            return
        fn()
        self.rearm()

    def _commit_soon(self) -> None:
        """The store's owner-commit hook (on the loop thread, inside a request): a batch waits
        for an idle writer; decide once this iteration's requests are handled."""
        self.loop.call_soon(self._commit_due)

    def _commit_due(self) -> None:
        """Let the store write a small batch here rather than wake its writer thread
        (``Store.commit_due``), then release what the commit made durable and write the
        replies now: a lone synchronous producer saves two thread hand-overs and two loop
        iterations per send. Only if a request that awaits a reply made a batch since the
        last call (``due_awaited``): one-way acknowledgements wait for nobody, and the loop
        should not stop reading for their fsync. The loop blocks for that one commit; batches
        that arrive while the writer works, or large ones, stay the writer's."""
        store = self.owner_store
        if store is None:
            return
        here, self.due_awaited = self.due_awaited, False
        posts: list[Callable[[], None]] = []
        self._inline_posts = posts
        try:
            store.commit_due(here)  # one-way requests only (acknowledgements): the writer's
        finally:
            self._inline_posts = None
        for fn in posts:
            self._owned(fn)
        if self._to_flush:
            self._flush_all()

    def _defer_soon(self, token: int) -> None:
        """The broker's ``on_defer``: a PERSISTENT message went to a waiting consumer before
        its insert was written (``Broker.enable_deferral``); write it after ``dispatch_hold``
        seconds unless the consumer's acknowledgement cancels it first."""
        broker = self.broker
        if broker is not None:
            self.loop.call_later(broker.config.dispatch_hold, self._end_deferral, token)

    def _end_deferral(self, token: int) -> None:
        broker = self.broker
        if broker is None:
            return
        self.due_awaited = True  # the sender awaits this commit: the loop may write it
        broker.end_deferral(token)

    def flush_soon(self, conn: GatewayConnection) -> None:
        """Write ``conn``'s output at the end of this loop iteration, with every other
        connection's: one callback per iteration, not one per connection."""
        to_flush = self._to_flush
        if not to_flush:
            self.loop.call_soon(self._flush_all)
        to_flush.append(conn)

    def _flush_all(self) -> None:
        to_flush, self._to_flush = self._to_flush, []
        for conn in to_flush:
            conn.flush()

    def _arm(self, due: int | None) -> None:
        """``BrokerHost.rearm``'s timer: one ``loop.call_later`` for ``due``, or none."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if due is not None and not self.stopping:
            self._timer = self.loop.call_later(self.clock.sleep_time(due), self._fire)

    def _fire(self) -> None:
        self._timer = None
        self._on_timer()

    def _on_clock_jump(self) -> None:
        """A fake clock moved (tests): run the due work now. From another thread this
        waits until the loop has run it, so ``clock.advance()`` returns after the broker
        acted, as with the embedded broker; fake time never arms a real timer."""
        loop = self._loop
        if loop is None or self.broker is None or self.stopping or loop.is_closed():
            return
        if threading.get_ident() == self._loop_thread:
            self._on_timer()
            return
        done: concurrent.futures.Future[None] = concurrent.futures.Future()

        def run() -> None:
            try:
                self._on_timer()
            finally:
                done.set_result(None)

        try:
            loop.call_soon_threadsafe(run)
        except RuntimeError:
            return
        with contextlib.suppress(concurrent.futures.TimeoutError):
            done.result(10)

    def _arm_sweeper(self) -> None:
        limits = self.config.limits
        interval = limits.heartbeat
        if limits.frame_timeout:
            interval = min(interval, limits.frame_timeout)
        self._sweeper = self.loop.call_later(max(0.02, interval / 4), self._sweep)

    def _sweep(self) -> None:
        if self.stopping:
            return
        now = self.loop.time()
        for conn in list(self.connections):
            conn.check_timers(now)
        broker = self.broker
        if broker is not None:
            held = broker.total_bytes + broker.staged_bytes
            returned = self.memory_return.note(held)
            if returned is not None:
                log_event(log, logging.INFO, "memory_returned", held=held, returned=returned)
        self._arm_sweeper()

    # ---- ConnectionHost: what a gateway connection may ask ---------------------------------
    @property
    def limits(self) -> Limits:
        """The per-connection and server-wide bounds (``config.limits``)."""
        return self.config.limits

    def register(self, conn: GatewayConnection) -> bool:
        """Admit a new socket; False beyond twice ``limits.max_connections``: sockets that
        have not connected yet count too, and are refused before they cost a decoder and a
        timer."""
        cap = 2 * self.config.limits.max_connections
        if cap and len(self.connections) >= cap:
            log_event(log, logging.WARNING, "too_many_sockets", peer=conn.peer, limit=cap)
            return False
        admission = self.admission
        refused = admission.admit(conn.address)
        if refused is not None:
            skipped = admission.should_log("too_many_pending", conn.address, self.loop.time())
            if skipped is not None:
                log_event(
                    log,
                    logging.WARNING,
                    "too_many_pending",
                    peer=conn.peer,
                    limit=refused,
                    value=getattr(self.config.limits, refused),
                    not_logged=skipped,
                )
            return False
        conn.pending = True
        self.connections.add(conn)
        return True

    def opened(self, conn: GatewayConnection) -> None:
        """``conn`` is authenticated: it no longer counts as pending."""
        if conn.pending:
            conn.pending = False
            self.admission.settled(conn.address)

    def unregister(self, conn: GatewayConnection) -> None:
        """Forget a socket that is gone (idempotent)."""
        self.connections.discard(conn)
        self.opened(conn)

    def authenticate(
        self, address: str, user: str | None, password: str | None, verdict: Verdict
    ) -> PasswordCheck | None:
        """Check credentials of a peer at ``address``: refused at once while the address is
        locked out for failed logins (see ``Admission``), checked at once when no password
        is hashed, else queued per address and run in the executor with the verdict handed
        back to the loop (dropped if the loop is gone). ``verdict`` gets None (accepted) or
        the reason of the refusal. Returns the check while it is queued or running."""
        admission = self.admission
        now = self.loop.time()
        locked = admission.locked_for(address, now)
        if locked:
            skipped = admission.should_log("login_throttled", address, now)
            if skipped is not None:
                log_event(
                    log,
                    logging.WARNING,
                    "login_throttled",
                    address=address,
                    retry_in_s=f"{locked:.0f}",
                    not_logged=skipped,
                )
            verdict(_throttled(address, locked))
            return None
        auth = self.authenticator
        if not auth.needs_hashing(user):
            error = auth.check(user, password)
            self._login_outcome(address, error)
            verdict(error)
            return None
        check = PasswordCheck(address, user, password, verdict)
        if admission.start(check):
            self._run_check(check)
        return check

    def _run_check(self, check: PasswordCheck) -> None:
        """Run ``check`` in the executor; its outcome comes back to the loop."""
        password, check.password = check.password, None
        fut = self.executor.submit(self.authenticator.check, check.user, password)
        loop = self.loop

        def done(f: concurrent.futures.Future[str | None]) -> None:
            try:
                loop.call_soon_threadsafe(self._check_done, f, check)
            except RuntimeError:
                pass  # the loop is gone (server stopped)

        fut.add_done_callback(done)

    def _check_done(self, fut: concurrent.futures.Future[str | None], check: PasswordCheck) -> None:
        """On the loop: a password check finished; start the next of its address, record
        the outcome, hand the verdict to the connection (unless it is gone)."""
        if not fut.cancelled():
            try:
                error = fut.result()
            except Exception as exc:
                error = f"authentication failed: {exc}"
            self._login_outcome(check.address, error)
            if not check.cancelled:
                check.verdict(error)
        admission = self.admission
        address = check.address
        nxt = admission.finished(address)
        while nxt is not None and not self.stopping:
            locked = admission.locked_for(address, self.loop.time())
            if not locked:
                self._run_check(nxt)
                return
            # Queued before the address was locked out: refused without a password check.
            nxt.password = None
            nxt.verdict(_throttled(address, locked))
            nxt = admission.finished(address)

    def _login_outcome(self, address: str, error: str | None) -> None:
        """Count a login's outcome against ``address``; log a lock-out. (The refusal itself
        is logged once, by the connection: ``auth_failed`` with its peer and reason.)"""
        now = self.loop.time()
        backoff = self.admission.record(address, error is not None, now)
        if backoff:
            log_event(
                log,
                logging.WARNING,
                "login_throttled",
                address=address,
                retry_in_s=f"{backoff:.0f}",
                reason="too many failed logins",
            )

    def principal(self, user: str | None) -> str | None:
        """The user an accepted connection acts as (None: anonymous)."""
        return self.authenticator.principal(user)

    def check_request(self, conn: BrokerConnection, req: c.Request) -> None:
        """The broker's ``request_check``: the per-connection limits. (Permissions, ``admin``
        for the operator requests included, are checked by the engine's authorizer.)

        Raises:
            ResourceAllocationException: a session, consumer or temporary destination limit
                is reached.
        """
        t = type(req)
        limits = self.config.limits
        if t is c.CreateSession:
            _within(
                limits.max_sessions_per_connection,
                len(conn.sessions),
                "max_sessions_per_connection",
                "sessions open: close one first",
            )
        elif t is c.CreateConsumer:
            _within(
                limits.max_consumers_per_connection,
                sum(len(s.consumers) for s in conn.sessions.values()),
                "max_consumers_per_connection",
                "consumers open: close one first",
            )
        elif t is c.CreateTemporary:
            _within(
                limits.max_temporaries_per_connection,
                len(conn.temporaries),
                "max_temporaries_per_connection",
                "temporary destinations: delete one first, or reuse the ones it has",
            )


def _log_listening(protocol: str, url: str) -> None:
    """The ``event=listening`` line of one listener: ``address`` is its real ``HOST:PORT``
    (an IPv6 host in brackets), ``url`` the same with its scheme (``tcp``, ``tls``, ``http``,
    ``https``), which says whether it speaks TLS."""
    log_event(
        log, logging.INFO, "listening", protocol=protocol, address=url.split("://", 1)[1], url=url
    )


def _within(limit: int, held: int, name: str, what: str) -> None:
    """Raise unless one more fits: ``held`` of ``limit`` (0 = unlimited) are in use.

    Raises:
        ResourceAllocationException: "this connection has {name} ({limit}) {what}".
    """
    if limit and held >= limit:
        raise ResourceAllocationException(f"this connection has {name} ({limit}) {what}")


def _throttled(address: str, locked: float) -> str:
    """The refusal of a login from an address locked out for ``locked`` more seconds."""
    return (
        f"too many failed logins from {address}: logins from it are refused for {locked:.0f} s more"
    )


class ServerThread:
    """A :class:`BrokerServer` on its own event-loop thread: for tests and for embedding a
    network broker in a process that has other work to do.

    Args:
        config: the server settings (use port 0 to let the system choose).
        **kwargs: passed to :class:`BrokerServer` (``store``, ``clock``).
    """

    def __init__(self, config: ServerConfig, **kwargs: Any) -> None:
        self.server = BrokerServer(config, **kwargs)
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None

    @property
    def addresses(self) -> list[str]:
        """The listeners' addresses, ``tcp://HOST:PORT`` / ``tls://HOST:PORT``."""
        return list(self.server.addresses)

    @property
    def url(self) -> str:
        """The first listener's address."""
        return self.server.addresses[0]

    @property
    def http_url(self) -> str:
        """The HTTP listener's address, ``http://HOST:PORT`` (``https://`` with TLS).

        Raises:
            JMSException: the server has no HTTP listener (``ServerConfig.http``).
        """
        if not self.server.http_addresses:
            raise JMSException("this server has no HTTP listener: set ServerConfig.http")
        return self.server.http_addresses[0]

    @property
    def stomp_address(self) -> tuple[str, int]:
        """``(host, port)`` of the first STOMP-only listener (for a STOMP client).

        Raises:
            JMSException: the server has no STOMP-only listener (``stomp_port`` -1, or its
                default port was taken).
        """
        if not self.server.stomp_addresses:
            raise JMSException("this server has no STOMP listener: set ServerConfig.stomp_port")
        host, _, port = self.server.stomp_addresses[0].partition("://")[2].rpartition(":")
        return host.strip("[]"), int(port)

    def start(self, timeout: float = 30.0) -> ServerThread:
        """Start the loop thread and wait until every listener is bound.

        Raises:
            JMSException: the data dir is in use, or the server did not start in time.
            OSError: a listener cannot bind.
        """
        self._thread = threading.Thread(target=self._run, name="ternmq-server", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout):
            raise JMSException(f"the server did not start within {timeout} s")
        if self._error is not None:
            raise self._error
        return self

    def _run(self) -> None:
        loop = new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._main())
        finally:
            loop.close()

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        try:
            await self.server.start()
        except BaseException as exc:
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        await self._stop.wait()
        await self.server.stop()

    def call(self, fn: Callable[[], T], timeout: float = 10.0) -> T:
        """Run ``fn`` on the server's loop (where the broker may be touched); its result.

        Raises:
            whatever ``fn`` raises; TimeoutError if the loop does not run it in time.
        """

        async def run() -> T:
            return fn()

        return self._submit(run(), timeout)

    def _submit(self, coro: Coroutine[Any, Any, T], timeout: float) -> T:
        assert self._loop is not None, "the server thread is not started"
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the server gracefully and join its thread. Idempotent."""
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(stop.set)
        if self._thread is not None:
            self._thread.join(timeout)

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# ---- the command line -----------------------------------------------------------------------
def build_parser(prog: str = "ternmq serve") -> argparse.ArgumentParser:
    """The options of ``ternmq serve``."""
    p = argparse.ArgumentParser(
        prog=prog,
        description="Run the ternmq network broker (native protocol over TCP/TLS).",
    )
    p.add_argument("--config", metavar="PATH", help="TOML config file (docs/operations.md)")
    p.add_argument("--bind", metavar="ADDR", help="address of the TCP listener (default 127.0.0.1)")
    p.add_argument(
        "--port",
        type=int,
        metavar="N",
        help="port of the TCP listener (default 61616; 0 picks a free one; -1 turns it off)",
    )
    p.add_argument(
        "--stomp-port",
        type=int,
        metavar="N",
        help="port of the STOMP-only listener (default 61613; 0 picks a free one, -1 turns "
        "it off; STOMP is served on --port too)",
    )
    p.add_argument(
        "--openwire-port",
        type=int,
        metavar="N",
        help="port of an OpenWire-only listener (default none: OpenWire is served on --port; "
        "0 picks a free one)",
    )
    p.add_argument(
        "--http-port",
        type=int,
        metavar="N",
        help="port of the HTTP listener: console, JSON API, /metrics (default 8161; 0 picks a "
        "free one, -1 turns it off)",
    )
    p.add_argument("--data-dir", metavar="DIR", help="durable store directory (default ./data)")
    p.add_argument(
        "--store",
        metavar="URL",
        help="the durable store: a directory, sqlite:PATH, or "
        "postgresql://USER:PASSWORD@HOST:PORT/DB (overrides --data-dir; docs/operations.md)",
    )
    p.add_argument("--log-level", choices=sorted(LEVELS), help="default info")
    p.add_argument(
        "--cpu-affinity",
        metavar="CPUS",
        type=_cpu_list,
        help="run on these CPUs only, e.g. 1 or 0,1 (default: any; docs/operations.md)",
    )
    return p


def _cpu_list(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a list of CPU numbers (e.g. 1, or 0,1)"
        ) from None


def pin_to_cpus(cpus: tuple[int, ...]) -> None:
    """Restrict this process to ``cpus`` (call before any thread starts: threads inherit
    the calling thread's affinity). Nothing to do for an empty tuple.

    The server's work is serialized by the GIL, so spreading its threads (event loop, store
    writer) over several CPUs buys little, while every wake-up of a thread on another CPU
    costs an inter-processor interrupt: ~20 us against ~5 us on the same CPU on a 2-vCPU VM
    (docs/operations.md "CPU affinity" has the measurements).

    Raises:
        ValueError: the platform cannot pin, or a CPU is not available to this process.
    """
    if not cpus:
        return
    if not hasattr(os, "sched_setaffinity"):
        raise ValueError("cpu_affinity needs os.sched_setaffinity (Linux); remove the setting")
    count = os.cpu_count() or 1
    try:
        if max(cpus) >= count:  # the kernel would drop it silently if another one exists
            raise OSError(errno.EINVAL, "no such CPU")
        os.sched_setaffinity(0, cpus)
    except OSError as exc:  # EINVAL: none of them is online or in this process's cpuset
        raise ValueError(
            f"cpu_affinity {','.join(map(str, cpus))}: not available to this process "
            f"({exc.strerror}; this machine has CPUs 0-{count - 1})"
        ) from exc


# Young-generation threshold of the garbage collector in ``ternmq serve`` (CPython's default
# is 700). Each request allocates a few container objects that die young; collecting every
# 700 of them, and the older generations behind them, cost ~3 us of the ~45 us of server CPU
# of a persistent send at 64 producers. The broker's state has no reference cycles to speak
# of, so fewer collections keep little garbage around for longer.
GC_THRESHOLDS: Final = (20_000, 50, 100)


def _tune_gc() -> None:
    """Set the collector for a long-running server process (``ternmq serve`` only: an
    embedding process keeps its own settings): what start-up made (modules, the recovered
    state) moves to the permanent generation, never scanned again, and young collections
    run every :data:`GC_THRESHOLDS` allocations."""
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


async def _serve(config: ServerConfig) -> int:
    server = BrokerServer(config)
    server.memory_return = MemoryReturn.for_this_process()
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    stopping: list[asyncio.Task[None]] = []  # a reference keeps the task alive

    def on_signal(sig: signal.Signals) -> None:
        log_event(log, logging.INFO, "signal", signal=sig.name)
        stop.set()
        if server.role == "backup":  # start() waits for the live lock: stop waiting
            stopping.append(loop.create_task(server.stop()))

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_signal, sig)
    try:
        await server.start()
    except (OSError, JMSException) as exc:
        log_event(log, logging.ERROR, "start_failed", problem=str(exc))
        print(f"ternmq serve: cannot start: {exc}", file=sys.stderr, flush=True)
        return 1
    _tune_gc()
    for address in server.addresses:
        print(f"ternmq listening on {address}", flush=True)
    waiter = asyncio.ensure_future(server.wait_stopped())
    stopper = asyncio.ensure_future(stop.wait())
    await asyncio.wait({waiter, stopper}, return_when=asyncio.FIRST_COMPLETED)
    stopper.cancel()
    await server.stop()
    waiter.cancel()
    return 1 if server.fenced else 0


def main(argv: list[str] | None = None) -> int:
    """``ternmq serve``: run until SIGTERM/SIGINT; 0 after a graceful stop, 1 if the server
    cannot start (port in use, data dir locked) or lost the live lock of its PostgreSQL store
    (fenced), 2 for a bad command line or config."""
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    try:
        config = load_config(args.config).with_overrides(
            bind=args.bind,
            port=args.port,
            data_dir=args.data_dir,
            store=args.store,
            log_level=args.log_level,
            cpu_affinity=args.cpu_affinity,
            stomp_port=args.stomp_port,
            http_port=args.http_port,
            openwire_port=args.openwire_port,
        )
        if not config.all_listeners():
            raise ValueError("every listener is off (-1): give at least one a port")
        pin_to_cpus(config.cpu_affinity)
    except ValueError as exc:
        print(f"ternmq serve: {exc}", file=sys.stderr)
        return 2
    setup_logging(config.log_level)
    if config.cpu_affinity:
        log_event(log, logging.INFO, "cpu_affinity", cpus=",".join(map(str, config.cpu_affinity)))
    with asyncio.Runner(loop_factory=new_event_loop) as runner:
        return runner.run(_serve(config))
