"""Conformance tests of group EXC: exception types and when they are raised (catalog
``requirements-api-a.md``, EXC-01..EXC-15 and scenarios S-EXC-1..S-EXC-3).

The simplified API's side of the runtime flavours (``JMSContext`` raising
``XRuntimeException``) belongs to the CTX suite; here the classic API and ``ternmq.errors``
(``to_runtime``, ``runtime_api``) are tested. S-EXC-2 needs a tcp factory to a closed port;
its vm stand-in is a connection whose embedded broker was stopped.
"""

from __future__ import annotations

import inspect
import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import pytest

import ternmq
from ternmq import errors
from ternmq.broker.embedded import EmbeddedBroker
from ternmq.client import Connection, ConnectionFactory, Session
from ternmq.destination import Queue, Topic
from ternmq.errors import (
    IllegalStateException,
    IllegalStateRuntimeException,
    InvalidClientIDException,
    InvalidDestinationException,
    InvalidSelectorException,
    JMSException,
    JMSRuntimeException,
    JMSSecurityException,
    MessageEOFException,
    MessageFormatException,
    MessageNotReadableException,
    MessageNotWriteableException,
    ResourceAllocationException,
    TransactionInProgressException,
    TransactionRolledBackException,
    UnsupportedOperationException,
)
from ternmq.message import BytesMessage, Message, StreamMessage, TextMessage
from ternmq.store import MemoryStore, Op

from ._helpers import Q, Worker, browse_via, not_raising_checked, send_via, wait_for

WAIT = 5.0  # upper bound for "expect something"

# EXC-02: the checked types that have a runtime twin, and those that have none.
TWINNED = {
    "IllegalStateException": "IllegalStateRuntimeException",
    "InvalidClientIDException": "InvalidClientIDRuntimeException",
    "InvalidDestinationException": "InvalidDestinationRuntimeException",
    "InvalidSelectorException": "InvalidSelectorRuntimeException",
    "JMSSecurityException": "JMSSecurityRuntimeException",
    "MessageFormatException": "MessageFormatRuntimeException",
    "MessageNotWriteableException": "MessageNotWriteableRuntimeException",
    "ResourceAllocationException": "ResourceAllocationRuntimeException",
    "TransactionInProgressException": "TransactionInProgressRuntimeException",
    "TransactionRolledBackException": "TransactionRolledBackRuntimeException",
}
UNTWINNED = ("MessageEOFException", "MessageNotReadableException")


# ---- broker state (the only place that reaches below the public API) -------------------------
class FailingStore(MemoryStore):
    """A store whose writes fail with an OSError once armed (EXC-04: provider I/O failure)."""

    def __init__(self) -> None:
        super().__init__()
        self.armed = False

    def write(self, ops: Sequence[Op]) -> None:
        if self.armed and ops:
            raise OSError(28, "No space left on device")
        super().write(ops)


# ---- helpers ---------------------------------------------------------------------------------


class Completion:
    """A completion listener that records outcomes (and optionally runs code in on_completion)."""

    def __init__(self, action: Callable[[], None] | None = None) -> None:
        self.outcomes: list[tuple[str, Any]] = []
        self.done = threading.Event()
        self.action = action

    def on_completion(self, message: Message) -> None:
        try:
            if self.action is not None:
                self.action()
            self.outcomes.append(("completed", message))
        except BaseException as exc:
            self.outcomes.append(("raised", exc))
        finally:
            self.done.set()

    def on_exception(self, message: Message, exception: Exception) -> None:
        self.outcomes.append(("failed", exception))
        self.done.set()


def _checked(exc: BaseException, cls: type[JMSException]) -> None:
    """EXC-03: a classic-API exception is the checked type, never a runtime flavour."""
    assert isinstance(exc, cls), f"{exc!r} is not a {cls.__name__}"
    assert not isinstance(exc, JMSRuntimeException), f"{exc!r} is a runtime flavour"


def _raises_checked(cls: type[JMSException], fn: Callable[[], object]) -> JMSException:
    with pytest.raises(cls) as ei:
        fn()
    _checked(ei.value, cls)
    return ei.value


# ---- shape of the hierarchy ------------------------------------------------------------------
def test_exc_01_jms_exception_carries_text_code_and_link() -> None:
    """EXC-01: JMSException is an Exception with a provider text (str), an error_code (str or
    None) and a linked_exception (or None); a link is also the __cause__."""
    assert issubclass(JMSException, Exception)
    plain = JMSException("the text")
    assert str(plain) == "the text"
    assert plain.error_code is None and plain.linked_exception is None
    assert plain.__cause__ is None
    cause = ConnectionRefusedError(111, "Connection refused")
    linked = JMSException("cannot reach 127.0.0.1:1", "E-CONNECT", cause)
    assert str(linked) == "cannot reach 127.0.0.1:1"
    assert linked.error_code == "E-CONNECT"
    assert linked.linked_exception is cause
    assert linked.__cause__ is cause
    other = OSError("later")
    linked.set_linked_exception(other)
    assert linked.linked_exception is other and linked.__cause__ is other
    by_keyword = IllegalStateException("closed", linked_exception=cause)
    assert by_keyword.linked_exception is cause and by_keyword.__cause__ is cause
    assert by_keyword.error_code is None


def test_s_exc_2_vm_stand_in_failure_is_linked(make_broker: Callable[..., EmbeddedBroker]) -> None:
    """S-EXC-2 (vm stand-in: the embedded broker was stopped), EXC-01, EXC-04, CONN-04: the
    provider failure surfaces as a JMSException naming the broker address; calls on the
    connection then raise IllegalStateException whose linked_exception and __cause__ are
    that failure; nothing leaks as OSError/RuntimeError."""
    b = make_broker()
    conn = ConnectionFactory(b.url).create_connection()
    reported: list[JMSException] = []
    conn.exception_listener = reported.append
    s = conn.create_session()
    b.stop()
    assert wait_for(lambda: len(reported) == 1)
    failure = reported[0]
    _checked(failure, JMSException)
    assert b.url in str(failure)
    for fn in (conn.create_session, lambda: s.create_producer(Q).send(Message())):
        with pytest.raises(JMSException) as ei:
            fn()
        _checked(ei.value, IllegalStateException)
        assert ei.value.linked_exception is failure
        assert ei.value.__cause__ is failure
    conn.close()


def test_exc_02_runtime_twins_exactly_ten() -> None:
    """EXC-02: JMSRuntimeException subclasses JMSException; exactly ten runtime twins exist,
    each subclassing JMSRuntimeException and its checked twin; MessageEOFException and
    MessageNotReadableException have none. The same names are exported by ``ternmq``."""
    assert issubclass(JMSRuntimeException, JMSException)
    runtime_names = {
        name
        for name, obj in vars(errors).items()
        if inspect.isclass(obj)
        and issubclass(obj, JMSRuntimeException)
        and obj is not JMSRuntimeException
    }
    assert runtime_names == set(TWINNED.values())
    for checked_name, twin_name in TWINNED.items():
        checked, twin = getattr(errors, checked_name), getattr(errors, twin_name)
        assert issubclass(checked, JMSException)
        assert not issubclass(checked, JMSRuntimeException)
        assert issubclass(twin, JMSRuntimeException) and issubclass(twin, checked)
        assert getattr(ternmq, twin_name) is twin
        assert getattr(ternmq, checked_name) is checked
    for name in UNTWINNED:
        cls = getattr(errors, name)
        assert issubclass(cls, JMSException)
        stem = name.removesuffix("Exception")
        assert not hasattr(errors, f"{stem}RuntimeException")
        assert not hasattr(ternmq, f"{stem}RuntimeException")


def test_exc_02_unsupported_operation_is_jms_and_type_error() -> None:
    """EXC-02 (API.md, A-04): UnsupportedOperationException is both a JMSException and a
    TypeError, and not a runtime flavour."""
    assert issubclass(UnsupportedOperationException, JMSException)
    assert issubclass(UnsupportedOperationException, TypeError)
    assert not issubclass(UnsupportedOperationException, JMSRuntimeException)


def test_exc_12_transaction_in_progress_types() -> None:
    """EXC-12 (SHOULD; not reachable in ternmq v1, which has no XA): the type exists with its
    runtime twin, both catchable as TransactionInProgressException."""
    twin = errors.TransactionInProgressRuntimeException
    exc = twin("in a distributed transaction")
    assert isinstance(exc, TransactionInProgressException)
    assert isinstance(exc, JMSRuntimeException)
    assert issubclass(TransactionInProgressException, JMSException)


def test_s_exc_1_classic_commit_on_auto_session_is_checked(connection: Connection) -> None:
    """S-EXC-1 (classic half; the context half is the CTX suite's), EXC-02, EXC-03, EXC-05:
    session.commit() on an AUTO session raises IllegalStateException that is not a
    JMSRuntimeException; the runtime flavour ternmq.errors makes of it is an
    IllegalStateRuntimeException, an IllegalStateException and a JMSRuntimeException."""
    s = connection.create_session(False, Session.AUTO_ACKNOWLEDGE)
    e = _raises_checked(IllegalStateException, s.commit)
    assert type(e) is IllegalStateException
    r = errors.to_runtime(e)
    assert isinstance(r, IllegalStateRuntimeException)
    assert isinstance(r, IllegalStateException)
    assert isinstance(r, JMSRuntimeException)
    assert str(r) == str(e)


def test_exc_03_to_runtime_maps_every_checked_type() -> None:
    """EXC-03: the runtime flavour of a checked exception is its twin when one exists (same
    text, code and link), else a JMSRuntimeException linking the checked one; the
    runtime_api wrapper used by the simplified API raises only runtime flavours."""
    cause = OSError("low level")
    for checked_name, twin_name in TWINNED.items():
        e = getattr(errors, checked_name)("why", "CODE", cause)
        r = errors.to_runtime(e)
        assert type(r) is getattr(errors, twin_name)
        assert (str(r), r.error_code, r.linked_exception) == ("why", "CODE", cause)
    for name in (*UNTWINNED, "JMSException", "UnsupportedOperationException"):
        e = getattr(errors, name)("why")
        r = errors.to_runtime(e)
        assert type(r) is JMSRuntimeException
        assert r.linked_exception is e
        assert str(r) == "why"
    already = IllegalStateRuntimeException("x")
    assert errors.to_runtime(already) is already
    sel = errors.to_runtime(InvalidSelectorException("bad", selector="a =", position=3))
    assert isinstance(sel, errors.InvalidSelectorRuntimeException)
    assert (sel.selector, sel.position) == ("a =", 3)

    @errors.runtime_api
    def simplified(exc: JMSException) -> None:
        raise exc

    for checked_name in (*TWINNED, *UNTWINNED):
        with pytest.raises(JMSRuntimeException):
            simplified(getattr(errors, checked_name)("x"))
    with pytest.raises(IllegalStateRuntimeException) as ei:
        simplified(IllegalStateException("closed"))
    assert isinstance(ei.value.__cause__, IllegalStateException)
    with pytest.raises(ValueError):  # non-JMS errors pass through unchanged

        @errors.runtime_api
        def plain() -> None:
            raise ValueError("not JMS")

        plain()


def test_exc_03_classic_objects_raise_checked_flavours(
    make_broker: Callable[..., EmbeddedBroker],
) -> None:
    """EXC-03: Connection, Session, MessageProducer, MessageConsumer, QueueBrowser and message
    methods raise the checked flavour, never a runtime twin."""
    b = make_broker(auto_create=False, queues=("Q",))
    f = ConnectionFactory(b.url)
    conn = f.create_connection()
    conn.start()
    s = conn.create_session()
    tx = conn.create_session(True)
    _raises_checked(IllegalStateException, s.rollback)
    _raises_checked(IllegalStateException, tx.recover)
    _raises_checked(InvalidSelectorException, lambda: s.create_consumer(Q, "x ="))
    _raises_checked(InvalidSelectorException, lambda: s.create_browser(Q, "x ="))
    _raises_checked(InvalidDestinationException, lambda: s.create_consumer(Queue("NOPE")))
    _raises_checked(
        InvalidDestinationException, lambda: s.create_producer(Queue("NOPE")).send(Message())
    )
    _raises_checked(UnsupportedOperationException, lambda: s.create_producer(None).send(Message()))
    _raises_checked(MessageFormatException, lambda: s.create_producer(Q).send("not a message"))
    k = s.create_consumer(Q)
    k.message_listener = lambda m: None
    _raises_checked(IllegalStateException, k.receive_no_wait)
    k.message_listener = None  # before the send: a listener may take the message
    s.create_producer(Q).send(s.create_text_message("ro"))
    received = k.receive(WAIT)
    assert isinstance(received, TextMessage)
    _raises_checked(MessageNotWriteableException, lambda: setattr(received, "text", "rw"))
    _raises_checked(MessageNotWriteableException, lambda: received.set_int_property("n", 1))
    _raises_checked(
        MessageFormatException, lambda: received.get_boolean_property("JMSXDeliveryCount")
    )
    with f.create_connection() as holder, f.create_connection() as late:
        holder.client_id = "ID"
        _raises_checked(InvalidClientIDException, lambda: setattr(late, "client_id", "ID"))
    conn.close()
    _raises_checked(IllegalStateException, conn.create_session)
    _raises_checked(IllegalStateException, s.create_text_message)
    _raises_checked(IllegalStateException, k.receive_no_wait)
    _raises_checked(IllegalStateException, received.acknowledge)


def test_exc_04_store_failure_surfaces_as_jms_exception(
    make_broker: Callable[..., EmbeddedBroker], transport: str
) -> None:
    """EXC-04: a failure inside the provider (here the broker's store cannot write) surfaces
    from the API call as a JMSException that says what failed, never as a bare OSError.
    In-process the store is a FailingStore; a ``ternmq serve`` process gets a file-size limit
    of 0, so SQLite's writes fail as on a full disk."""
    fail: Callable[[bool], None]
    if transport in ("tcp", "tls", "tcp+postgres"):
        b: Any = make_broker()
        fail, cause = b.fail_writes, "disk I/O error"
    else:
        store = FailingStore()
        b = make_broker(store=store)
        fail, cause = (lambda on: setattr(store, "armed", on)), "No space left on device"
    with ConnectionFactory(b.url).create_connection() as conn:
        s = conn.create_session()
        p = s.create_producer(Q)
        p.send(s.create_text_message("before"))
        fail(True)
        try:
            with pytest.raises(Exception) as ei:
                p.send(s.create_text_message("during"))
        finally:
            fail(False)
        assert isinstance(ei.value, JMSException), f"leaked {ei.value!r}"
        assert not isinstance(ei.value, OSError)
        assert "store" in str(ei.value) and cause in str(ei.value), str(ei.value)
        p.send(s.create_text_message("after"))  # the connection survived


def test_exc_04_refused_persistent_send_is_never_delivered(
    make_broker: Callable[..., EmbeddedBroker], transport: str
) -> None:
    """EXC-04, PROD-13, PROD-15: a PERSISTENT send the store could not make durable raises,
    and the message was never accepted: consumers waiting on the queue, on a durable and on a
    non-durable subscription of the topic never get it, though they get the messages sent
    before and after it (and a browser never shows it)."""
    fail: Callable[[bool], None]
    if transport in ("tcp", "tls", "tcp+postgres"):
        b: Any = make_broker()
        fail = b.fail_writes
    else:
        store = FailingStore()
        b = make_broker(store=store)
        fail = lambda on: setattr(store, "armed", on)  # noqa: E731
    topic = Topic("exc04t")
    with ConnectionFactory(b.url).create_connection() as conn:
        conn.client_id = "exc04"
        s = conn.create_session()
        consumers = [
            conn.create_session().create_consumer(Q),
            conn.create_session().create_durable_consumer(topic, "dur"),
            conn.create_session().create_consumer(topic),
        ]
        conn.start()
        p = s.create_producer(None)
        for dest in (Q, topic):
            p.send(s.create_text_message("before"), destination=dest)
        fail(True)
        try:
            for dest in (Q, topic):
                with pytest.raises(JMSException, match="store"):
                    p.send(s.create_text_message("refused"), destination=dest)
        finally:
            fail(False)
        for dest in (Q, topic):
            p.send(s.create_text_message("after"), destination=dest)
        for k in consumers:
            got = []
            while (m := k.receive(1.0)) is not None:
                got.append(m.text)  # type: ignore[attr-defined]
                if got[-1] == "after":
                    break
            assert got == ["before", "after"], got
            assert k.receive(0.2) is None
        for k in consumers:
            k.close()
        s.unsubscribe("dur")
    assert browse_via(ConnectionFactory(b.url)) == []


def test_exc_04_java_native_mappings_and_most_specific_subclass(
    make_broker: Callable[..., EmbeddedBroker],
) -> None:
    """EXC-04: NumberFormatException maps to ValueError, NullPointerException to TypeError;
    elsewhere the most specific standard subclass is raised (a missing destination is an
    InvalidDestinationException, not a plain JMSException)."""
    m = Message()
    m.set_string_property("n", "twelve")
    with pytest.raises(ValueError):
        m.get_int_property("n")
    bm = BytesMessage()
    with pytest.raises(TypeError):
        bm.write_bytes(None)  # type: ignore[arg-type]
    b = make_broker(auto_create=False, queues=("Q",))
    with ConnectionFactory(b.url).create_connection() as conn:
        s = conn.create_session()
        with pytest.raises(JMSException) as ei:
            s.create_producer(Topic("NOPE")).send(Message())
        assert type(ei.value) is InvalidDestinationException


# ---- when each must be raised ----------------------------------------------------------------
def test_exc_05_illegal_state_required_cases(factory: ConnectionFactory) -> None:
    """EXC-05: IllegalStateException for commit()/rollback() on non-transacted sessions
    (TX-05), recover() on a transacted one (SESS-23), a late client id (CONN-07), an
    administrative client id (CONN-06), acknowledge() after the session closed (SESS-18)."""
    with factory.create_connection() as conn:
        conn.start()
        for mode in (
            Session.AUTO_ACKNOWLEDGE,
            Session.CLIENT_ACKNOWLEDGE,
            Session.DUPS_OK_ACKNOWLEDGE,
        ):
            s = conn.create_session(False, mode)
            _raises_checked(IllegalStateException, s.commit)
            _raises_checked(IllegalStateException, s.rollback)
        _raises_checked(IllegalStateException, conn.create_session(True).recover)
        _raises_checked(IllegalStateException, lambda: setattr(conn, "client_id", "late"))
        cs = conn.create_session(False, Session.CLIENT_ACKNOWLEDGE)
        cs.create_producer(Q).send(cs.create_text_message("a"))
        m = cs.create_consumer(Q).receive(WAIT)
        assert m is not None
        cs.close()
        _raises_checked(IllegalStateException, m.acknowledge)
    admin = ConnectionFactory(factory.url, client_id="ADMIN")
    with admin.create_connection() as c:
        _raises_checked(IllegalStateException, lambda: setattr(c, "client_id", "mine"))


def test_exc_05_closed_objects(factory: ConnectionFactory) -> None:
    """EXC-05 (CONN-22, SESS-30, CONS-17, PROD-14): any method but close() on a closed
    connection, session, producer, consumer or browser raises IllegalStateException."""
    conn = factory.create_connection()
    s = conn.create_session()
    p, k, br = s.create_producer(Q), s.create_consumer(Q), s.create_browser(Q)
    p.close()
    _raises_checked(IllegalStateException, lambda: p.send(Message()))
    k.close()
    _raises_checked(IllegalStateException, k.receive_no_wait)
    br.close()
    _raises_checked(IllegalStateException, lambda: list(br))
    s.close()
    _raises_checked(IllegalStateException, s.create_message)
    conn.close()
    _raises_checked(IllegalStateException, conn.start)
    for obj in (p, k, br, s, conn):
        obj.close()


@pytest.mark.parametrize(
    "call", ["connection.stop", "connection.close", "session.close", "consumer.close"]
)
def test_exc_05_stop_or_close_from_message_listener(factory: ConnectionFactory, call: str) -> None:
    """EXC-05 (CONN-16, CONN-19, SESS-28, CONS-16): stop()/close() of the listener's own
    connection, session or consumer inside the listener raise IllegalStateException."""
    conn = factory.create_connection()
    s = conn.create_session()
    k = s.create_consumer(Q)
    target = {"connection": conn, "session": s, "consumer": k}[call.split(".")[0]]
    seen: list[BaseException | None] = []
    done = threading.Event()

    def listener(m: Message) -> None:
        try:
            getattr(target, call.split(".")[1])()
            seen.append(None)
        except BaseException as exc:
            seen.append(exc)
        finally:
            done.set()

    k.message_listener = listener
    conn.start()
    send_via(factory, Q, "x")
    assert done.wait(WAIT)
    assert len(seen) == 1 and seen[0] is not None
    _checked(seen[0], IllegalStateException)
    Worker(conn.close).start().join()


@pytest.mark.parametrize(
    "call",
    ["session.close", "session.commit", "session.rollback", "producer.close", "connection.close"],
)
def test_exc_05_close_commit_rollback_from_completion_listener(
    factory: ConnectionFactory, call: str
) -> None:
    """EXC-05 (PROD-28, TX-10, CONN-19): close(), commit() and rollback() of the sending
    objects inside a completion listener raise IllegalStateException."""
    conn = factory.create_connection()
    s = conn.create_session(True)
    p = s.create_producer(Q)
    target = {"session": s, "producer": p, "connection": conn}[call.split(".")[0]]
    listener = Completion(lambda: getattr(target, call.split(".")[1])())
    p.send(s.create_text_message("async"), completion_listener=listener)
    assert listener.done.wait(WAIT)
    assert len(listener.outcomes) == 1 and listener.outcomes[0][0] == "raised"
    _checked(listener.outcomes[0][1], IllegalStateException)
    s.commit()  # the session is still usable from the application thread
    assert browse_via(factory) == ["async"]
    Worker(conn.close).start().join()


def test_exc_06_security_exception_on_rejected_credentials(
    make_broker: Callable[..., EmbeddedBroker],
) -> None:
    """EXC-06 (CONN-03): a rejected user name / password raises JMSSecurityException (checked
    flavour) from create_connection()."""
    b = make_broker(users={"app": "secret"})
    f = ConnectionFactory(b.url)
    e = _raises_checked(JMSSecurityException, lambda: f.create_connection("app", "guess"))
    assert "app" in str(e)
    _raises_checked(JMSSecurityException, f.create_connection)
    f.create_connection("app", "secret").close()


def test_exc_07_invalid_client_id(factory: ConnectionFactory) -> None:
    """EXC-07 (CONN-08): InvalidClientIDException for a duplicate of an id in use and for
    refused values."""
    with factory.create_connection() as a, factory.create_connection() as b:
        a.client_id = "dup"
        _raises_checked(InvalidClientIDException, lambda: setattr(b, "client_id", "dup"))
        _raises_checked(InvalidClientIDException, lambda: setattr(b, "client_id", ""))
        _raises_checked(InvalidClientIDException, lambda: setattr(b, "client_id", "x" * 300))
        b.client_id = "unique"
        assert (a.client_id, b.client_id) == ("dup", "unique")


def test_exc_08_invalid_destination_cases(make_broker: Callable[..., EmbeddedBroker]) -> None:
    """EXC-08: InvalidDestinationException for None where one is required, an object that is
    not a ternmq Queue/Topic, a deleted temporary destination, another connection's temporary
    queue used for a consumer, and a destination that does not exist with auto-create off."""
    b = make_broker(auto_create=False, queues=("Q",))
    f = ConnectionFactory(b.url)
    with f.create_connection() as conn, f.create_connection() as other:
        s = conn.create_session()
        so = other.create_session()
        anonymous = s.create_producer(None)
        cases: dict[str, Callable[[], object]] = {
            "consumer(None)": lambda: s.create_consumer(None),  # type: ignore[arg-type]
            "browser(None)": lambda: s.create_browser(None),  # type: ignore[arg-type]
            "browser(topic)": lambda: s.create_browser(Topic("T")),  # type: ignore[arg-type]
            "consumer(str)": lambda: s.create_consumer("queue://Q"),  # type: ignore[arg-type]
            "producer(str)": lambda: s.create_producer("queue://Q"),  # type: ignore[arg-type]
            "send(destination=str)": lambda: anonymous.send(
                Message(),
                destination="queue://Q",  # type: ignore[arg-type]
            ),
            "send to missing queue": lambda: anonymous.send(Message(), destination=Queue("NO")),
            "send to missing topic": lambda: anonymous.send(Message(), destination=Topic("NO")),
            "consumer on missing queue": lambda: s.create_consumer(Queue("NO")),
            "consumer on missing topic": lambda: s.create_consumer(Topic("NO")),
            "browse missing queue": lambda: list(s.create_browser(Queue("NO"))),
        }
        foreign = so.create_temporary_queue()
        cases["consumer on foreign temporary queue"] = lambda: s.create_consumer(foreign)
        deleted = s.create_temporary_queue()
        deleted.delete()
        cases["send to deleted temporary queue"] = lambda: anonymous.send(
            Message(), destination=deleted
        )
        cases["consumer on deleted temporary queue"] = lambda: s.create_consumer(deleted)
        assert not_raising_checked(cases, InvalidDestinationException) == []
        anonymous.send(s.create_text_message("ok"), destination=Q)
        assert browse_via(f) == ["ok"]


def test_exc_09_invalid_selector_at_every_creating_call(connection: Connection) -> None:
    """EXC-09 (CONS-01): a syntactically invalid selector raises InvalidSelectorException at
    create_consumer, create_durable_consumer, create_shared_consumer,
    create_shared_durable_consumer and create_browser."""
    connection.stop()
    conn = connection
    t = Topic("T")
    s = conn.create_session()
    bad = "price >"
    calls: dict[str, Callable[[], object]] = {
        "create_consumer(queue)": lambda: s.create_consumer(Q, bad),
        "create_consumer(topic)": lambda: s.create_consumer(t, bad),
        "create_shared_consumer": lambda: s.create_shared_consumer(t, "sh", bad),
        "create_shared_durable_consumer": lambda: s.create_shared_durable_consumer(t, "sd", bad),
        "create_browser": lambda: s.create_browser(Q, bad),
    }
    for name, fn in calls.items():
        with pytest.raises(InvalidSelectorException) as ei:
            fn()
            pytest.fail(f"{name} did not raise")
        _checked(ei.value, InvalidSelectorException)


def test_exc_09_invalid_selector_on_durable_consumer(factory: ConnectionFactory) -> None:
    """EXC-09: create_durable_consumer (with a client id) rejects an invalid selector, and
    leaves no subscription behind."""
    with factory.create_connection() as conn:
        conn.client_id = "C"
        s = conn.create_session()
        _raises_checked(
            InvalidSelectorException, lambda: s.create_durable_consumer(Topic("T"), "d", "a <>")
        )
        with pytest.raises(InvalidDestinationException):
            s.unsubscribe("d")  # nothing was created


def test_exc_10_message_format_and_body_state_exceptions(connection: Connection) -> None:
    """EXC-10: MessageFormatException for unsupported types and incompatible reads (and a
    non-message handed to send, PROD-06); MessageEOFException at the end of a body;
    MessageNotReadableException for a write-only body; MessageNotWriteableException for a
    read-only one. All checked flavours."""
    m = Message()
    _raises_checked(MessageFormatException, lambda: m.set_object_property("l", [1, 2]))
    _raises_checked(MessageFormatException, lambda: m.set_object_property("big", 2**63))
    m.set_boolean_property("flag", True)
    _raises_checked(MessageFormatException, lambda: m.get_int_property("flag"))
    sm = StreamMessage()
    _raises_checked(MessageFormatException, lambda: sm.write_object({"a": 1}))
    sm.write_boolean(True)
    _raises_checked(MessageNotReadableException, sm.read_boolean)
    sm.reset()
    _raises_checked(MessageFormatException, sm.read_short)
    bm = BytesMessage()
    bm.write_short(7)
    _raises_checked(MessageNotReadableException, bm.read_short)
    bm.reset()
    assert bm.read_short() == 7
    _raises_checked(MessageEOFException, bm.read_int)
    s = connection.create_session()
    p = s.create_producer(Q)
    _raises_checked(MessageFormatException, lambda: p.send("plain text"))  # type: ignore[arg-type]
    p.send(s.create_text_message("ro"))
    received = s.create_consumer(Q).receive(WAIT)
    assert received is not None
    _raises_checked(MessageNotWriteableException, lambda: received.set_string_property("a", "b"))
    _raises_checked(MessageNotWriteableException, lambda: setattr(received, "text", "x"))


def test_exc_11_connection_limit(make_broker: Callable[..., EmbeddedBroker]) -> None:
    """EXC-11 (SHOULD): create_connection() beyond the broker's connection limit raises
    ResourceAllocationException; the existing connection is unaffected; after it closes a new
    one can connect."""
    b = make_broker(max_connections=1)
    f = ConnectionFactory(b.url)
    first = f.create_connection()
    _raises_checked(ResourceAllocationException, f.create_connection)
    first.start()
    s = first.create_session()
    s.create_producer(Q).send(s.create_text_message("fine"))
    assert s.create_consumer(Q).receive(WAIT).text == "fine"  # type: ignore[union-attr]
    first.close()
    f.create_connection().close()


def test_exc_11_full_destination_fail_policy(make_broker: Callable[..., EmbeddedBroker]) -> None:
    """EXC-11 (SHOULD), EXC-14: a send to a destination full under the "fail" policy raises
    ResourceAllocationException when synchronous and reaches on_exception when asynchronous."""
    b = make_broker(max_bytes=2000, full_policy="fail")
    f = ConnectionFactory(b.url)
    with f.create_connection() as conn:
        s = conn.create_session()
        p = s.create_producer(Q)
        big = "x" * 1200
        p.send(s.create_text_message(big))
        e = _raises_checked(ResourceAllocationException, lambda: p.send(s.create_text_message(big)))
        assert "queue://Q" in str(e) and "max_bytes=2000" in str(e)
        listener = Completion()
        p.send(s.create_text_message(big), completion_listener=listener)
        assert listener.done.wait(WAIT)
        assert [o[0] for o in listener.outcomes] == ["failed"]
        _checked(listener.outcomes[0][1], ResourceAllocationException)
        assert browse_via(f) == [big]


def test_exc_13_commit_that_rolls_back(make_broker: Callable[..., EmbeddedBroker]) -> None:
    """EXC-13 (TX-06): a commit() that results in a rollback raises
    TransactionRolledBackException (checked flavour): none of the transaction's sends is
    delivered, its received message comes back redelivered, and the session goes on."""
    b = make_broker(max_bytes=2000, full_policy="fail")
    f = ConnectionFactory(b.url)
    send_via(f, Queue("IN"), "in")
    with f.create_connection() as conn:
        conn.start()
        tx = conn.create_session(True)
        k = tx.create_consumer(Queue("IN"))
        got = k.receive(WAIT)
        assert got is not None and got.text == "in"  # type: ignore[attr-defined]
        p = tx.create_producer(Q)
        p.send(tx.create_text_message("a" * 1200))
        p.send(tx.create_text_message("b" * 1200))
        e = _raises_checked(TransactionRolledBackException, tx.commit)
        assert "queue://Q" in str(e)
        assert browse_via(f) == []
        again = k.receive(WAIT)
        assert again is not None and again.text == "in"  # type: ignore[attr-defined]
        assert again.jms_redelivered is True
        assert again.get_int_property("JMSXDeliveryCount") == 2
        p.send(tx.create_text_message("small"))
        tx.commit()
        assert browse_via(f) == ["small"]
        assert browse_via(f, Queue("IN")) == []


def test_exc_14_each_error_reported_in_exactly_one_place(
    make_broker: Callable[..., EmbeddedBroker],
) -> None:
    """EXC-14 (CONN-28): a failure during a call is raised to the caller; an asynchronous-send
    failure goes to on_exception only (never raised from a later call); a connection failure
    goes to the exception listener only."""
    b = make_broker(auto_create=False, queues=("Q",))
    conn = ConnectionFactory(b.url).create_connection()
    exception_listener_calls: list[JMSException] = []
    conn.exception_listener = exception_listener_calls.append
    conn.start()
    s = conn.create_session()
    anonymous = s.create_producer(None)
    _raises_checked(
        InvalidDestinationException, lambda: anonymous.send(Message(), destination=Queue("NO"))
    )
    listener = Completion()
    anonymous.send(Message(), destination=Queue("NO"), completion_listener=listener)
    assert listener.done.wait(WAIT)
    assert [o[0] for o in listener.outcomes] == ["failed"]
    _checked(listener.outcomes[0][1], InvalidDestinationException)
    # later, unrelated calls do not raise the asynchronous failure
    anonymous.send(s.create_text_message("next"), destination=Q)
    ok = Completion()
    anonymous.send(s.create_text_message("async ok"), destination=Q, completion_listener=ok)
    assert ok.done.wait(WAIT)
    assert [o[0] for o in ok.outcomes] == ["completed"]
    k = s.create_consumer(Q)
    assert [k.receive(WAIT).text for _ in range(2)] == ["next", "async ok"]  # type: ignore[union-attr]
    time.sleep(0.1)
    assert exception_listener_calls == []
    assert len(listener.outcomes) == 1
    waiter = Worker(k.receive).start()
    time.sleep(0.05)
    b.stop()
    assert waiter.join(1.0) is None  # the failure is not raised to the blocked caller
    assert wait_for(lambda: len(exception_listener_calls) == 1)
    time.sleep(0.1)
    assert len(exception_listener_calls) == 1
    conn.close()


def test_s_exc_3_failing_listener_dead_letters_and_connection_survives(
    make_broker: Callable[..., EmbeddedBroker], caplog: pytest.LogCaptureFixture
) -> None:
    """S-EXC-3, EXC-14, EXC-15 (CONS-12, CONS-14): a listener that raises ValueError for m1 in
    AUTO mode with a redelivery limit of 3 is called 3 times for m1 (counts 1, 2, 3), then m1
    is dead-lettered; the exception listener is never called; m2 is delivered afterwards; the
    failures are logged with the consumer's identity."""
    caplog.set_level(logging.ERROR)
    b = make_broker(max_delivery_attempts=3)
    f = ConnectionFactory(b.url)
    conn = f.create_connection()
    exception_listener_calls: list[JMSException] = []
    conn.exception_listener = exception_listener_calls.append
    calls: list[tuple[str, int, bool]] = []

    def listener(m: Message) -> None:
        calls.append(
            (m.text, m.get_int_property("JMSXDeliveryCount"), m.jms_redelivered)  # type: ignore[attr-defined]
        )
        if m.text == "m1":  # type: ignore[attr-defined]
            raise ValueError("cannot process m1")

    s = conn.create_session(False, Session.AUTO_ACKNOWLEDGE)
    s.create_consumer(Q).message_listener = listener
    conn.start()
    send_via(f, Q, "m1")
    assert wait_for(lambda: len(calls) == 3)
    time.sleep(0.1)
    assert calls == [("m1", 1, False), ("m1", 2, True), ("m1", 3, True)]
    send_via(f, Q, "m2")
    assert wait_for(lambda: len(calls) == 4)
    assert calls[3] == ("m2", 1, False)
    assert browse_via(f) == []
    dead = conn.create_session().create_consumer(Queue("DLQ")).receive(WAIT)
    assert dead is not None and dead.text == "m1"  # type: ignore[attr-defined]
    assert exception_listener_calls == []
    failures = [r for r in caplog.records if r.exc_info and r.exc_info[0] is ValueError]
    assert len(failures) == 3
    assert all("consumer" in r.getMessage() for r in failures)
    conn.close()


def test_exc_15_completion_listener_exception_is_contained(
    factory: ConnectionFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """EXC-15: an exception escaping a completion listener is logged; the completion thread
    survives (later completions run) and no unrelated API call raises it."""
    caplog.set_level(logging.ERROR)
    done: list[str] = []

    class Raising:
        def on_completion(self, message: Message) -> None:
            done.append("raising")
            raise RuntimeError("completion listener bug")

        def on_exception(self, message: Message, exception: Exception) -> None:
            done.append("unexpected failure")

    with factory.create_connection() as conn:
        s = conn.create_session()
        p = s.create_producer(Q)
        p.send(s.create_text_message("1"), completion_listener=Raising())
        ok = Completion()
        p.send(s.create_text_message("2"), completion_listener=ok)
        assert ok.done.wait(WAIT)
        assert done == ["raising"] and [o[0] for o in ok.outcomes] == ["completed"]
        p.send(s.create_text_message("3"))
        s.close()
    assert any(r.exc_info is not None and r.exc_info[0] is RuntimeError for r in caplog.records)
    assert browse_via(factory) == ["1", "2", "3"]


def test_exc_15_exception_listener_exception_is_contained(
    make_broker: Callable[..., EmbeddedBroker], caplog: pytest.LogCaptureFixture
) -> None:
    """EXC-15: an exception escaping the exception listener is logged and does not propagate
    into the application's calls (stopping the broker, closing the connection)."""
    caplog.set_level(logging.ERROR)
    b = make_broker()
    conn = ConnectionFactory(b.url).create_connection()
    called = threading.Event()

    def on_exception(exc: JMSException) -> None:
        called.set()
        raise RuntimeError("exception listener bug")

    conn.exception_listener = on_exception
    b.stop()
    assert called.wait(WAIT)
    assert wait_for(
        lambda: any(
            r.exc_info is not None and r.exc_info[0] is RuntimeError for r in caplog.records
        )
    )
    conn.close()
    with pytest.raises(IllegalStateException):
        conn.create_session()
