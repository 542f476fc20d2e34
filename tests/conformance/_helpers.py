"""Helpers shared by the conformance tests (one copy of each; the test files import them).

Only the public client API is used, plus the admin ``Stat`` request (what ``ternmq stat``
shows: :func:`broker_stats` and the helpers on it) for requirements about what the broker
holds, except in :func:`lose_link`, which cuts the link under the client, and
:func:`stored_counts`, which stops the broker to read its store.

Every helper that waits takes a ``timeout``; its default is the wait the files that call it
without one always used: 2.0 s for a message that must arrive (:func:`receive`,
:func:`receive_texts`), 0.1 s of silence for "nothing more" (:func:`drain`,
:func:`drain_texts`), 0.05 s for that in :func:`drain_via` / :func:`drain_messages_via`, and
5.0 s for threads and conditions (:meth:`Worker.join`, :func:`join_thread`, :func:`wait_for`).
A file that waits differently passes its own.

Naming: ``*_via(factory, ...)`` helpers open a connection of their own and close it again;
the others work on the session or consumer they are given.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ternmq.broker.embedded import EmbeddedBroker
from ternmq.client import Connection, ConnectionFactory, MessageConsumer, Session
from ternmq.client._admin import stat
from ternmq.destination import Queue, Topic
from ternmq.errors import JMSException, JMSRuntimeException
from ternmq.message import DeliveryMode, Message, TextMessage
from ternmq.protocol.commands import DestinationStat, SubscriptionStat
from ternmq.store import Store

# destinations several files use by these names
Q = Queue("Q")
Q2 = Queue("Q2")
R = Queue("R")
T = Topic("T")

# short names of session modes and delivery modes
AUTO = Session.AUTO_ACKNOWLEDGE
CLIENT = Session.CLIENT_ACKNOWLEDGE
DUPS_OK = Session.DUPS_OK_ACKNOWLEDGE
TRANSACTED = Session.SESSION_TRANSACTED
NP = DeliveryMode.NON_PERSISTENT
P = DeliveryMode.PERSISTENT

# types of the ``make_broker`` and ``connect`` fixtures
MakeBroker = Callable[..., EmbeddedBroker]
Connect = Callable[..., Connection]


@dataclasses.dataclass(frozen=True)
class CrashBroker:
    """A broker a test may crash (the ``crash_broker`` fixture): ``url``, and ``crash()``,
    which ends it as a crash would (nothing more reaches its store) and returns the URL of a
    broker recovered from that store."""

    url: str
    crash: Callable[[], str]


# ---- threads and polling ---------------------------------------------------------------------
class Worker:
    """Run ``fn(*args)`` on a daemon thread; remember its result, its exception and when it
    finished (``finished_at``, monotonic); ``done`` is set when it has."""

    def __init__(self, fn: Callable[..., Any], *args: Any) -> None:
        self.result: Any = None
        self.error: BaseException | None = None
        self.finished_at: float | None = None
        self.done = threading.Event()
        self._fn = fn
        self._args = args
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            self.result = self._fn(*self._args)
        except BaseException as exc:
            self.error = exc
        finally:
            self.finished_at = time.monotonic()
            self.done.set()

    def start(self) -> Worker:
        self.thread.start()
        return self

    def join(self, timeout: float = 5.0) -> Any:
        """Wait for the thread (it must finish in ``timeout``); re-raise its exception or
        return its result."""
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the worker thread did not finish in time"
        if self.error is not None:
            raise self.error
        return self.result


def join_thread(t: threading.Thread, timeout: float = 5.0) -> None:
    """Join ``t``, which must finish within ``timeout`` seconds."""
    t.join(timeout)
    assert not t.is_alive(), "thread did not finish"


def wait_for(pred: Callable[[], bool], timeout: float = 5.0) -> bool:
    """Poll ``pred`` until it holds or ``timeout`` seconds pass; return whether it holds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.005)
    return pred()


# ---- reading messages ------------------------------------------------------------------------
def text(m: Message | None) -> str | None:
    """The text of ``m``, which must be a TextMessage (so not None)."""
    assert isinstance(m, TextMessage), f"expected a TextMessage, got {m!r}"
    return m.text


def text_or_none(m: Message | None) -> str | None:
    """The text of ``m`` (a TextMessage), or None for None ("nothing was received")."""
    assert m is None or isinstance(m, TextMessage)
    return None if m is None else m.text


def texts(msgs: Iterable[Message]) -> list[str | None]:
    """The texts of ``msgs`` (TextMessages), in order."""
    return [text_or_none(m) for m in msgs]


def delivery_count(m: Message) -> int:
    """JMSXDeliveryCount of a received message."""
    return m.get_int_property("JMSXDeliveryCount")


def marks(m: Message) -> tuple[str | None, bool, int]:
    """(text, jms_redelivered, JMSXDeliveryCount) of a received message."""
    return text_or_none(m), m.jms_redelivered, delivery_count(m)


# ---- sessions, sending -----------------------------------------------------------------------
def new_session(conn: Connection, mode: int = AUTO) -> Session:
    """A session of ``conn`` in ``mode`` (transacted when ``mode`` is TRANSACTED)."""
    return conn.create_session(mode == TRANSACTED, mode)


def text_message(
    session: Session, text: str, **props: bool | int | float | str | None
) -> TextMessage:
    """A TextMessage of ``session`` with ``text`` and the given properties."""
    m = session.create_text_message(text)
    for name, value in props.items():
        m.set_object_property(name, value)
    return m


def send(session: Session, dest: Queue | Topic, *texts: str, **kw: Any) -> list[TextMessage]:
    """Send one TextMessage per text (in order) through a new producer of ``session``, which
    is closed after; ``kw`` go to every ``send()``. Returns the messages sent."""
    producer = session.create_producer(dest)
    sent = []
    for t in texts:
        m = session.create_text_message(t)
        producer.send(m, **kw)
        sent.append(m)
    producer.close()
    return sent


def send_via(factory: ConnectionFactory, dest: Queue | Topic, *texts: str) -> None:
    """Send texts from a connection of their own (AUTO session), then close it: the sends
    have returned when this does."""
    with factory.create_connection() as conn:
        send(conn.create_session(), dest, *texts)


# ---- receiving, draining, browsing -----------------------------------------------------------
def receive(consumer: MessageConsumer, timeout: float = 2.0) -> Message:
    """The next message, which must arrive within ``timeout`` seconds."""
    m = consumer.receive(timeout)
    assert m is not None, "expected a message"
    return m


def receive_texts(consumer: MessageConsumer, n: int, timeout: float = 2.0) -> list[str | None]:
    """The texts of exactly ``n`` messages, each of which must arrive within ``timeout``."""
    out: list[str | None] = []
    for _ in range(n):
        m = consumer.receive(timeout)
        assert m is not None, f"expected {n} messages, got only {out}"
        out.append(text(m))
    return out


def drain(consumer: MessageConsumer, timeout: float = 0.1) -> list[Message]:
    """Every message that arrives until none comes for ``timeout`` seconds."""
    out = []
    while (m := consumer.receive(timeout)) is not None:
        out.append(m)
    return out


def drain_texts(consumer: MessageConsumer, timeout: float = 0.1) -> list[str | None]:
    """Like :func:`drain`, as texts."""
    return texts(drain(consumer, timeout))


def drain_messages_via(
    factory: ConnectionFactory, dest: Queue, timeout: float = 0.05
) -> list[Message]:
    """Consume (AUTO) everything currently available on ``dest`` from a connection of its
    own; "nothing more" is a receive that waits ``timeout`` seconds for nothing."""
    with factory.create_connection() as conn:
        conn.start()
        return drain(conn.create_session().create_consumer(dest), timeout)


def drain_via(factory: ConnectionFactory, dest: Queue, timeout: float = 0.05) -> list[str | None]:
    """Like :func:`drain_messages_via`, as texts."""
    return [text(m) for m in drain_messages_via(factory, dest, timeout)]


def browse(session: Session, queue: Queue, selector: str | None = None) -> list[str | None]:
    """The texts a browser of ``session`` on ``queue`` shows (the browser is closed after)."""
    browser = session.create_browser(queue, selector)
    try:
        return texts(browser)
    finally:
        browser.close()


def browse_via(factory: ConnectionFactory, queue: Queue = Q) -> list[str | None]:
    """The texts a browser of a connection of its own shows on ``queue`` (a browser does not
    consume; in-flight messages are included)."""
    with factory.create_connection() as conn:
        return [text(m) for m in conn.create_session().create_browser(queue)]


# ---- exceptions ------------------------------------------------------------------------------
def not_raising_checked(
    cases: Mapping[str, Callable[[], object]], cls: type[JMSException]
) -> list[str]:
    """Call every case; list those that do not raise the checked ``cls`` (no exception,
    another exception, or a runtime flavour of ``cls``). Empty when every case raises it."""
    wrong: list[str] = []
    for name, fn in cases.items():
        try:
            fn()
        except cls as exc:
            if isinstance(exc, JMSRuntimeException):
                wrong.append(f"{name}: runtime flavour {exc!r}")
        except Exception as exc:
            wrong.append(f"{name}: {exc!r}")
        else:
            wrong.append(f"{name}: no exception")
    return wrong


# ---- completion listener ---------------------------------------------------------------------
class Completion:
    """A completion listener that records the outcome of asynchronous sends; ``action`` runs
    first in ``on_completion`` (what it raises goes to ``errors``)."""

    def __init__(self, action: Callable[[Message], None] | None = None) -> None:
        self.action = action
        self.completed: list[Message] = []
        self.failed: list[tuple[Message, Exception]] = []
        self.errors: list[BaseException] = []
        self.done = threading.Event()

    def on_completion(self, message: Message) -> None:
        try:
            if self.action is not None:
                self.action(message)
        except Exception as exc:
            self.errors.append(exc)
        finally:
            self.completed.append(message)
            self.done.set()

    def on_exception(self, message: Message, exception: Exception) -> None:
        self.failed.append((message, exception))
        self.done.set()


def send_async_slowly(
    session: Session, dest: Queue | Topic, *texts: str, delay: float = 0.05
) -> tuple[Completion, list[str | None]]:
    """Send ``texts`` asynchronously through a new producer of ``session`` (left open); each
    completion callback sleeps ``delay`` seconds, then appends the text to the returned list."""
    finished: list[str | None] = []

    def slow(m: Message) -> None:
        time.sleep(delay)
        finished.append(text(m))

    listener = Completion(slow)
    producer = session.create_producer(dest)
    for t in texts:
        producer.send(session.create_text_message(t), completion_listener=listener)
    return listener, finished


# ---- broker and transport internals (only where no public API shows the state) ---------------
def lose_link(conn: Connection) -> None:
    """Cut the link of ``conn`` to the broker without ``close()``: over tcp the socket is
    dropped without a goodbye (``TcpTransport.abort``, which returns once the server has
    seen it); on vm the transport is closed (the stand-in for a lost socket)."""
    transport = conn._transport
    abort = getattr(transport, "abort", None)
    if abort is not None:
        abort()
    else:
        transport.close()


# ---- what the broker holds: the admin Stat request --------------------------------------------
def broker_stats(broker: EmbeddedBroker) -> list[DestinationStat]:
    """What the admin ``Stat`` request (``ternmq stat``) shows of every destination,
    temporary ones included, read over a connection of its own."""
    with ConnectionFactory(broker.url).create_connection() as conn:
        return stat(conn)


def held_bytes(broker: EmbeddedBroker) -> int:
    """Bytes of message data the broker holds in memory, all destinations together."""
    return sum(d.memory_bytes for d in broker_stats(broker))


def queue_depth(broker: EmbeddedBroker, queue: Queue) -> int:
    """Messages ``queue`` holds (waiting, scheduled, in flight); 0 when it does not exist."""
    return next((d.depth for d in broker_stats(broker) if d.name == str(queue)), 0)


def exists(broker: EmbeddedBroker, dest: Queue | Topic) -> bool:
    """Whether the broker has the destination ``dest``."""
    return any(d.name == str(dest) for d in broker_stats(broker))


def subscriptions(broker: EmbeddedBroker, topic: Topic) -> list[SubscriptionStat]:
    """The subscriptions of ``topic`` (sorted by name; none when the topic does not exist)."""
    return next((d.subscriptions for d in broker_stats(broker) if d.name == str(topic)), [])


def stored_counts(broker: EmbeddedBroker) -> dict[str, int]:
    """Messages per destination key in the broker's store: what a restart would recover.

    The broker is stopped (every connection to it fails), its store read, and the broker
    started again on the same store and URL; the test goes on with new connections. A store
    is the broker's own business, so this is the one helper that reads one: a server's or an
    embedded broker's data directory or PostgreSQL database with the store's ``load()``, or
    the embedded broker's memory store.
    """
    broker.stop()
    try:
        # a server's store URL (tcp+postgres), else a data directory (or a PostgreSQL URL)
        data_dir = getattr(broker, "store", None) or getattr(broker, "data_dir", None)
        if data_dir is not None:
            from ternmq.store import open_store

            store: Store = open_store(str(data_dir), batch_scheduling=False)
            try:
                messages = store.load().messages
            finally:
                store.close()
        else:
            memory = broker._store
            assert memory is not None
            messages = memory.load().messages
    finally:
        broker.start()
    return {key: len(msgs) for key, msgs in messages.items() if msgs}
