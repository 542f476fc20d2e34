"""Connection factory and connection (JMS 2.0 §4.2, §4.3; catalog CONN).

Theory of operation
-------------------
A connection is a state machine (STOPPED -> STARTED <-> STOPPED -> CLOSED; FAILED when the
broker link is lost, which behaves as closed for every later call, A-10). Its transport
carries requests to the broker and calls the connection's
:class:`~ternmq.client._hot.EventRouter` with events: a delivery goes straight to its
consumer's buffer under that consumer's session lock, anything else to
:meth:`Connection._on_event` (a failover route calls that for every event). No client lock is ever
held while calling the transport, and the transport never calls back into the broker from a
delivery, so locks cannot be taken in opposite orders.

Routing: ``request``, ``submit``, ``oneway``, ``flush`` and ``next_corr`` are bound in
``__init__`` to the connection's *route* (no call layer per request): :class:`_DirectRoute`
over one transport, or, for a ``failover:`` URL, :class:`~ternmq.client._failover.FailoverRoute`,
the one home of reconnecting (see :mod:`ternmq.client._failover`). The connection only tells
the route when it is ready and when it closes, and re-creates its state on a new link when
asked (:meth:`Connection._replay`).
"""

from __future__ import annotations

import enum
import itertools
import logging
import queue
import threading
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from ternmq.client._failover import (
    FailoverOptions,
    FailoverRoute,
    is_failover_url,
    parse_failover_url,
)
from ternmq.client._hot import EventRouter, MessageIds
from ternmq.client._metadata import ConnectionMetaData
from ternmq.client._route import DirectRoute
from ternmq.client._util import check_reply, parse_url
from ternmq.client.context import JMSContext
from ternmq.client.session import Session
from ternmq.destination import Destination
from ternmq.errors import (
    IllegalStateException,
    InvalidClientIDException,
    JMSException,
    JMSSecurityException,
)
from ternmq.message import DEFAULT_BUDGET, PickleBudget
from ternmq.protocol import commands as c
from ternmq.transport._options import flag_option

if TYPE_CHECKING:
    from ternmq.broker.clock import Clock
    from ternmq.client._types import OnewayFn, RequestFn, Route, SubmitFn
    from ternmq.client.consumer import MessageConsumer
    from ternmq.transport._base import Transport
    from ternmq.transport.tcp import TcpOptions

__all__ = ["Connection", "ConnectionFactory", "ConnectionMetaData"]

log = logging.getLogger("ternmq.client")

ExceptionListener = Callable[[JMSException], object]


class _State(enum.Enum):
    STOPPED = "stopped"
    STARTED = "started"
    CLOSED = "closed"


# Legal state changes of a connection; anything else is a programming error (STYLE rule 2).
_TRANSITIONS: dict[tuple[_State, str], _State] = {
    (_State.STOPPED, "start"): _State.STARTED,
    (_State.STARTED, "start"): _State.STARTED,
    (_State.STARTED, "stop"): _State.STOPPED,
    (_State.STOPPED, "stop"): _State.STOPPED,
    (_State.STOPPED, "close"): _State.CLOSED,
    (_State.STARTED, "close"): _State.CLOSED,
    (_State.CLOSED, "close"): _State.CLOSED,
}


_CLIENT_OPTIONS: Final = ("prefetch", "client_id", "block_on_non_persistent_send")
_VM_OPTIONS: Final = ("data_dir", "store")  # where an embedded broker keeps its store

# Requests that change nothing in the broker: in flight when a failover link died, they are
# simply sent again on the new link.
_RESENDABLE: Final = (
    c.Pull,
    c.Browse,
    c.Stat,
    c.GetBounds,
    c.ReadRange,
    c.BrowseMessages,
    c.GetMessage,
    c.ListConnections,
    c.ListSubscriptions,
)


class ConnectionFactory:
    """Creates connections and contexts to one broker.

    Args:
        url: ``vm://NAME`` (an embedded broker in this process, started on first use),
            ``tcp://HOST:PORT`` or ``tls://HOST:PORT`` (a ``ternmq serve`` server; IPv6 as
            ``[::1]:61616``; the port defaults to 61616 / 61617);
            options after ``?``: ``prefetch`` (messages buffered per consumer, default 100,
            0 = pull one at a time), ``client_id`` (an administratively configured id),
            ``data_dir`` (vm only: the embedded broker keeps its state in this directory and
            recovers it on start), ``store`` (vm only: the same for any store,
            ``store=postgresql://USER:PASSWORD@HOST:PORT/DB`` for PostgreSQL),
            ``block_on_non_persistent_send`` (see the argument);
            tcp and tls: ``heartbeat`` (seconds, default 30, 0 = off),
            ``connect_timeout`` (seconds, default 10); tls only: ``cafile``, ``certfile`` and
            ``keyfile`` (a client certificate), ``verify`` (true/false, default true),
            ``server_hostname`` (see :func:`ternmq.transport.tcp.parse_tcp_url`).
            ``failover:(tcp://HOST:PORT,tls://HOST2:PORT)?OPTIONS`` reconnects automatically
            when the link is lost (see :mod:`ternmq.client._failover` for its options:
            ``max_reconnect_attempts``, ``initial_reconnect_delay``, ``max_reconnect_delay``,
            ``timeout``, ``randomize``).
        user: default user name.
        password: default password.
        prefetch: consumer prefetch, overriding the URL option.
        client_id: administratively configured client id for every connection (CONN-07).
        block_on_non_persistent_send: False (the default, catalog A-08): a synchronous
            NON_PERSISTENT send does not wait for the broker's receipt (it is pipelined,
            several times the throughput over a network); a refusal is raised by the
            session's *next* send, its ``commit()`` (which then rolls back) or the close of
            the session, context or connection, and on a lost link the messages not yet
            received by the broker are lost, as NON_PERSISTENT allows. True: such a send
            waits for the receipt, so its errors are raised by that ``send()`` (PROD-13).
            PERSISTENT sends always wait. Overrides the URL option.
        trusted_modules: modules whose classes ObjectMessage bodies may contain (default:
            builtins only).
        pickle_budget: how much an ObjectMessage body received on this factory's
            connections may build when read (objects, bytes, nesting depth); default
            ``ternmq.message.PickleBudget()`` (1,000,000 objects, 64 MiB, depth 1,000).

    Raises:
        JMSException: the URL cannot be parsed or names an unknown transport.
    """

    def __init__(
        self,
        url: str = "vm://local",
        user: str | None = None,
        password: str | None = None,
        *,
        prefetch: int | None = None,
        client_id: str | None = None,
        block_on_non_persistent_send: bool | None = None,
        trusted_modules: frozenset[str] | set[str] | list[str] | None = None,
        pickle_budget: PickleBudget | None = None,
    ) -> None:
        self.url = url
        self._failover: FailoverOptions | None = None
        self._tcp: TcpOptions | None = None
        if is_failover_url(url):
            self._failover, opts = parse_failover_url(url, _CLIENT_OPTIONS)
            scheme, location = "failover", self._failover.describe()
        else:
            scheme, location, opts = parse_url(url)
            if scheme not in ("vm", "tcp", "tls"):
                raise JMSException(
                    f"unsupported transport {scheme!r} in {url!r}: use vm://NAME, "
                    "tcp://HOST:PORT, tls://HOST:PORT or failover:(tcp://HOST:PORT,...)"
                )
            if not location:
                raise JMSException(
                    f"{url!r} names no broker: write vm://NAME, tcp://HOST:PORT or tls://HOST:PORT"
                )
        if scheme in ("tcp", "tls"):
            from ternmq.transport.tcp import parse_tcp_url

            self._tcp = parse_tcp_url(scheme, location, opts, url, client_options=_CLIENT_OPTIONS)
        elif scheme == "vm":
            known = (*_CLIENT_OPTIONS, *_VM_OPTIONS)
            for name in opts:
                if name not in known:
                    raise JMSException(
                        f"unknown option {name!r} in {url!r}; vm:// takes " + ", ".join(known)
                    )
        self._scheme = scheme
        self._location = location
        self.user = user
        self.password = password
        try:
            self.prefetch = int(opts.get("prefetch", 100)) if prefetch is None else int(prefetch)
        except ValueError as exc:
            raise JMSException(f"prefetch must be an integer in {url!r}") from exc
        if self.prefetch < 0:
            raise JMSException("prefetch must be 0 (pull) or more")
        self.client_id = client_id if client_id is not None else opts.get("client_id")
        if block_on_non_persistent_send is None:
            block_on_non_persistent_send = flag_option(
                opts, "block_on_non_persistent_send", False, url
            )
        self.block_on_non_persistent_send = bool(block_on_non_persistent_send)
        if opts.get("store") and opts.get("data_dir"):
            raise JMSException(f"give store or data_dir in {url!r}, not both")
        self.data_dir = opts.get("store") or opts.get("data_dir") or None
        self.trusted_modules = frozenset(trusted_modules) if trusted_modules is not None else None
        self.pickle_budget = DEFAULT_BUDGET if pickle_budget is None else pickle_budget

    def _transport(self, on_event: Callable[[c.Command], None]) -> Transport:
        """A new link to the one broker of a plain (not failover) URL."""
        if self._tcp is not None:
            return self._tcp.connect(on_event)
        from ternmq.broker.embedded import get_embedded
        from ternmq.transport.vm import VmTransport

        return VmTransport(get_embedded(self._location, data_dir=self.data_dir), on_event)

    def create_connection(self, user: str | None = None, password: str | None = None) -> Connection:
        """Open a connection in stopped mode (classic API).

        Raises:
            JMSSecurityException: bad credentials.
            JMSException: the broker cannot be reached.
        """
        return Connection(
            self,
            user if user is not None else self.user,
            password if password is not None else self.password,
        )

    def create_context(
        self,
        user: str | None = None,
        password: str | None = None,
        session_mode: int = 1,
    ) -> JMSContext:
        """Open a connection and a session as one :class:`JMSContext` (simplified API).

        Raises:
            JMSSecurityRuntimeException: bad credentials.
            JMSRuntimeException: the broker cannot be reached or the mode is invalid.
        """
        return JMSContext._create(self, user, password, session_mode)


class Connection:
    """A connection to a broker (classic API). Create it with
    :meth:`ConnectionFactory.create_connection`; it starts in stopped mode (CONN-10)."""

    def __init__(self, factory: ConnectionFactory, user: str | None, password: str | None) -> None:
        self._factory = factory
        self._lock = threading.RLock()
        self._state = _State.STOPPED
        self._delivering = False  # _state is STARTED (read per message: no property call)
        self._closed = False  # _state is CLOSED (read per send: no call)
        self._failure: JMSException | None = None
        self._sessions: list[Session] = []
        self._consumers: dict[int, MessageConsumer] = {}
        self._ids = itertools.count(1)
        self._message_ids = MessageIds(uuid.uuid4().hex[:12])
        self._client_id: str | None = None
        self._client_id_admin = factory.client_id is not None
        self._client_id_locked = False
        self._exception_listener: ExceptionListener | None = None
        self._exc_queue: queue.SimpleQueue[JMSException | None] | None = None
        self.prefetch = factory.prefetch
        self.block_np_sends = factory.block_on_non_persistent_send
        self.local = factory._scheme == "vm"  # in-process: a delivery is buffered when made
        self.trusted_modules = factory.trusted_modules
        self.pickle_budget = factory.pickle_budget
        self._listener_threads: set[int] = set()
        self._temporaries: set[Destination] = set()
        self._failover = factory._failover
        self._user, self._password = user, password
        self.connection_id = ""
        route: Route
        try:
            if self._failover is not None:
                route = FailoverRoute(self._failover, self)
            else:
                # deliveries straight to the consumers' buffers (compiled), the rest here
                route = DirectRoute(
                    factory._transport(EventRouter(self._consumers, self._on_event))
                )
        except JMSException:
            raise
        except OSError as exc:
            raise JMSException(
                f"cannot reach the broker at {factory.url}: {exc}", linked_exception=exc
            ) from exc
        self._route = route
        # The routing methods are the route's own (no call layer per request): see the
        # module docstring and the class attributes below.
        self.request = route.request
        self.submit = route.submit
        self.oneway = route.oneway
        self.flush = route.flush
        self.next_corr = route.next_corr
        transport = route.transport
        self.clock: Clock = transport.clock
        reply = transport.request(
            c.Connect(user=user, password=password, client_id=factory.client_id)
        )
        try:
            check_reply(reply)
        except JMSSecurityException:
            transport.close()
            raise
        except JMSException:
            transport.close()
            raise
        assert isinstance(reply, c.Connected)
        self.connection_id = reply.connection_id
        if factory.client_id is not None:
            self._client_id = factory.client_id
        route.ready()

    # Bound to the route's methods in __init__ (documented there: DirectRoute and
    # FailoverRoute): send a request and wait for its reply; send without waiting; send
    # expecting no reply; write what lazy requests left waiting; a fresh correlation number.
    request: RequestFn
    submit: SubmitFn
    oneway: OnewayFn
    flush: Callable[[], None]
    next_corr: Callable[[], int]

    @property
    def _transport(self) -> Transport:
        """The link in use now."""
        return self._route.transport

    # ---- identity ----------------------------------------------------------------------
    @property
    def client_id(self) -> str | None:
        """The client identifier, or None (CONN-05..CONN-08).

        Raises:
            IllegalStateException: the connection is closed (CONN-22).
        """
        self._check_open()
        return self._client_id

    @client_id.setter
    def client_id(self, value: str) -> None:
        with self._lock:
            self._check_open()
            if self._client_id_admin:
                raise IllegalStateException(
                    "the client id was configured on the connection factory and cannot be changed"
                )
            if self._client_id_locked or self._client_id is not None:
                raise IllegalStateException(
                    "the client id can only be set right after the connection is created, "
                    "before any other action"
                )
            if not isinstance(value, str) or not value:
                raise InvalidClientIDException(f"invalid client id {value!r}: use a non-empty str")
            check_reply(self.request(c.SetClientId(client_id=value)))
            self._client_id = value
            self._client_id_locked = True

    def _lock_client_id(self) -> None:
        self._client_id_locked = True

    # ---- life cycle ----------------------------------------------------------------------
    def start(self) -> None:
        """Start (or resume) delivery of incoming messages (CONN-10..CONN-13).

        Raises:
            IllegalStateException: the connection is closed.
        """
        with self._lock:
            self._check_open()
            self._lock_client_id()
            was = self._state
            self._enter(_TRANSITIONS[(self._state, "start")])
            sessions = list(self._sessions)
        if was is _State.STOPPED:
            for s in sessions:
                s._on_connection_started()

    def stop(self) -> None:
        """Pause delivery; returns once no message listener of this connection is running
        and none will be called until :meth:`start` (CONN-14, CONN-15).

        Raises:
            IllegalStateException: called from a message listener of this connection, or
                the connection is closed.
        """
        self._check_not_in_listener("stop()")
        with self._lock:
            self._check_open()
            self._lock_client_id()
            self._enter(_TRANSITIONS[(self._state, "stop")])
            sessions = list(self._sessions)
        for s in sessions:
            s._wait_listener_idle()

    @property
    def started(self) -> bool:
        """True while delivery is on."""
        return self._delivering

    def _enter(self, state: _State) -> None:
        """Under ``_lock``: the connection is in ``state`` now."""
        self._state = state
        self._delivering = state is _State.STARTED
        self._closed = state is _State.CLOSED

    def close(self) -> None:
        """Close the connection: wait for running listeners, close every session (rolling back
        transactions, returning unacknowledged messages), delete temporary destinations
        (CONN-18..CONN-22). A second call does nothing.

        Raises:
            IllegalStateException: called from a message listener or a completion listener
                of this connection (CONN-19).
            JMSException: the broker refused a pipelined NON_PERSISTENT send that no later
                send of its session reported (A-08; the first such refusal); the connection
                is closed all the same.
        """
        self._check_not_in_listener("close()")
        with self._lock:
            if self._state is _State.CLOSED:
                return
            sessions = list(self._sessions)
        for s in sessions:
            s._check_not_in_completion("close() of its connection")
        self._route.start_close()  # a reconnect in progress gives up; calls stop waiting
        refusal: JMSException | None = None
        for s in sessions:
            refused = s._close(from_connection=True)
            refusal = refusal or refused
        with self._lock:
            self._enter(_TRANSITIONS[(self._state, "close")])
        transport, reconnecting = self._route.end_close()
        try:
            if self._failure is None and not reconnecting:
                transport.request(c.Disconnect())
        except JMSException:
            pass
        transport.close()
        if self._exc_queue is not None:
            self._exc_queue.put(None)
        if refusal is not None:
            raise refusal

    @property
    def closed(self) -> bool:
        """True once closed (or failed)."""
        return self._state is _State.CLOSED

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- sessions ------------------------------------------------------------------------
    def create_session(
        self,
        transacted: bool | int = False,
        acknowledge_mode: int = 1,
        *,
        session_mode: int | None = None,
    ) -> Session:
        """Create a session (CONN, SESS-01..SESS-05).

        ``create_session(True)`` is transacted; ``create_session(False, mode)`` uses ``mode``;
        a plain ``int`` as the only argument, or ``session_mode=``, is a JMS 2.0
        ``session_mode``.

        Raises:
            IllegalStateException: the connection is closed.
            JMSException: an invalid acknowledge mode, or ``session_mode`` given beside a
                positional argument.
        """
        if session_mode is not None:
            if transacted is not False or acknowledge_mode != 1:
                raise JMSException(
                    "create_session: give session_mode alone, or transacted and "
                    "acknowledge_mode, not both"
                )
            transacted = int(session_mode)
        if isinstance(transacted, bool):
            if transacted:
                mode = Session.SESSION_TRANSACTED
            else:
                mode = acknowledge_mode
                if mode == Session.SESSION_TRANSACTED:
                    mode = Session.AUTO_ACKNOWLEDGE
        elif isinstance(transacted, int):
            mode = transacted
        else:
            raise JMSException(
                f"create_session: expected a bool or a session mode, not {transacted!r}"
            )
        if mode not in (0, 1, 2, 3):
            raise JMSException(
                f"invalid session mode {mode}: use SESSION_TRANSACTED (0), AUTO_ACKNOWLEDGE (1), "
                "CLIENT_ACKNOWLEDGE (2) or DUPS_OK_ACKNOWLEDGE (3)"
            )
        with self._lock:
            self._check_open()
            self._lock_client_id()
            sid = next(self._ids)
            check_reply(self.request(c.CreateSession(session_id=sid, transacted=mode == 0)))
            session = Session(self, sid, mode)
            self._sessions.append(session)
            return session

    # ---- exception listener ------------------------------------------------------------
    @property
    def exception_listener(self) -> ExceptionListener | None:
        """Called (on a dedicated thread, one call at a time) when the connection fails.

        Raises:
            IllegalStateException: the connection is closed (CONN-22).
        """
        self._check_open()
        return self._exception_listener

    @exception_listener.setter
    def exception_listener(self, listener: ExceptionListener | None) -> None:
        self._check_open()
        self._exception_listener = listener

    @property
    def metadata(self) -> ConnectionMetaData:
        """Provider and JMS version information (CONN-23)."""
        self._check_open()
        return ConnectionMetaData()

    # ---- failover ------------------------------------------------------------------------
    @property
    def _failing_over(self) -> bool:
        """True for a connection with a ``failover:`` URL."""
        return self._failover is not None

    def _resendable(self, req: c.Request) -> bool:
        """Whether ``req``, in flight when a failover link died, may simply go again: it
        changes nothing in the broker, or it is a send outside a transaction that carries a
        ``JMS_TernMQ_DuplicateID`` (the broker drops the copy if the first one got in, PSF-09).
        A transacted send is not: its transaction died with the link."""
        if isinstance(req, _RESENDABLE):
            return True
        if isinstance(req, c.Send) and req.duplicate_id is not None:
            with self._lock:
                return any(s._id == req.session_id and s._mode != 0 for s in self._sessions)
        return False

    def _drop_link_state(self) -> None:
        """Failover, before the new link exists: every session forgets the old link's
        deliveries (the broker returns them to their queues) and bumps its epoch."""
        with self._lock:
            sessions = list(self._sessions)
        for s in sessions:
            s._on_link_lost()

    def _replay(self, ask: Callable[[c.Request], c.Reply]) -> str:
        """Re-create this connection's state on a new link through ``ask`` (a checked
        request on it): identity, temporary destinations (same names), sessions and
        consumers (same ids). Returns the broker's id of the new connection.

        Raises:
            JMSException: the broker refused a step or the link failed.
        """
        reply = ask(c.Connect(user=self._user, password=self._password, client_id=self._client_id))
        assert isinstance(reply, c.Connected)
        for dest in list(self._temporaries):
            ask(c.CreateTemporary(topic=dest.is_topic, name=str(dest).partition("://")[2]))
        with self._lock:
            sessions = [s for s in self._sessions if not (s._closed or s._closing)]
        for s in sessions:
            ask(c.CreateSession(session_id=s._id, transacted=s._mode == 0))
            with s._cond:
                consumers = [k for k in s._consumers.values() if not k._closed]
            for k in consumers:
                ask(k._create_request(k._prefetch if k._credit_granted else 0))
        return reply.connection_id

    def next_id(self) -> int:
        """A connection-unique number for sessions, consumers and producers."""
        return next(self._ids)

    def next_message_id(self) -> str:
        """A new JMSMessageID (``ID:`` prefixed, unique across connections, HDR)."""
        return self._message_ids.next()

    def _check_open(self) -> None:
        if self._closed:
            if self._failure is not None:
                raise IllegalStateException(
                    f"the connection failed: {self._failure}", linked_exception=self._failure
                )
            raise IllegalStateException("the connection is closed")

    def _check_not_in_listener(self, what: str) -> None:
        if threading.get_ident() in self._listener_threads:
            raise IllegalStateException(
                f"{what} of a connection cannot be called from one of its own message "
                "listeners (it would deadlock)"
            )

    def _remove_session(self, session: Session) -> None:
        with self._lock:
            if session in self._sessions:
                self._sessions.remove(session)

    def _on_event(self, cmd: c.Command) -> None:
        if type(cmd) is c.Deliver:  # the hot case first, without a subclass check
            consumer = self._consumers.get(cmd.consumer_id)
            if consumer is not None:
                consumer._push(cmd)
        elif isinstance(cmd, c.SendFailed):
            with self._lock:
                session = next((s for s in self._sessions if s._id == cmd.session_id), None)
            if session is not None:
                session._on_send_failed(cmd)
        elif isinstance(cmd, c.ConnectionFailed):  # a failover route handles it before
            # CONN-27: linked to the cause (the OSError) when the transport knows one
            route = getattr(self, "_route", None)
            cause = getattr(route.transport, "failure_cause", None) if route else None
            self._fail(
                JMSException(
                    f"connection to {self._factory.url} lost: {cmd.message}",
                    linked_exception=cause,
                )
            )

    def _fail(self, exc: JMSException) -> None:
        with self._lock:
            if self._state is _State.CLOSED:
                return
            self._failure = exc
            self._enter(_State.CLOSED)
            sessions = list(self._sessions)
        for s in sessions:
            s._abort()
        listener = self._exception_listener
        if listener is not None:
            self._report(exc)

    def _report(self, exc: JMSException) -> None:
        """Hand ``exc`` to the exception listener on its own thread, one at a time (CONN-29)."""
        if self._exc_queue is None:
            self._exc_queue = queue.SimpleQueue()
            threading.Thread(
                target=self._exception_loop, name="ternmq-exceptions", daemon=True
            ).start()
        self._exc_queue.put(exc)

    def _exception_loop(self) -> None:
        q = self._exc_queue
        assert q is not None
        while True:
            exc = q.get()
            if exc is None:
                return
            listener = self._exception_listener
            if listener is None:
                continue
            try:
                listener(exc)
            except Exception:
                log.exception("the exception listener raised (ignored)")

    def _delete_temporary(self, dest: Destination) -> None:
        if self._state is _State.CLOSED:
            return  # deleted with the connection: a second delete is a no-op (TMP-05, TMP-07)
        check_reply(self.request(c.DeleteTemporary(destination=str(dest))))
        self._temporaries.discard(dest)
