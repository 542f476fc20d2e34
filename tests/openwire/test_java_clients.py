"""ActiveMQ's Java client (plain JMS 1.1, and Spring's JmsTemplate) against ternmq and against
ActiveMQ's own broker: the same programs, the same expectations.

Theory of operation: ``clients/ScenarioRunner.java`` (with ``SpringScenario.java`` when
Spring's jars are there) is compiled once with ``javac`` against Debian's jars; one runner JVM
per broker reads scenario names on stdin and answers one JSON line each (see its header).
The reference is ActiveMQ 5.17's broker embedded from Debian's ``activemq-broker.jar``
(``clients/ReferenceBroker.java``, persistence off); ternmq is a real ``ternmq serve`` reached
on its main port as ``tcp://127.0.0.1:PORT`` with no option, exactly as an application
configures ActiveMQ. Each test runs one scenario on one broker and compares what the JMS API
handed the program with what JMS says it must be, so both brokers meet one expectation. The
only per-broker parameter is the dead-letter queue's name: ActiveMQ's is ``ActiveMQ.DLQ``,
ternmq's ``DLQ`` (its ``dead_letter_queue`` default). The cross-language tests pair the Java
client with ternmq's Python client on the same queue, both ways, typed properties checked by
every getter on both sides. Skipped, saying why, only when the JDK or Debian's jars are
missing (``tools/system-deps.sh`` installs them).
"""

from __future__ import annotations

import json
import pathlib
import queue
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from openwire._java import (
    BROKER_JARS,
    CLIENT_JARS,
    QUIET_LOGGING,
    SPRING_JARS,
    compiled,
    has_jars,
    reference_broker,
)
from server._support import ServerProcess
from ternmq import (
    ConnectionFactory,
    MapMessage,
    Message,
    MessageFormatException,
    Queue,
    Session,
    TextMessage,
)

pytestmark = pytest.mark.timeout(600)

CLIENTS = pathlib.Path(__file__).parent / "clients"
BROKERS = ("activemq", "ternmq")
DLQ = {"activemq": "ActiveMQ.DLQ", "ternmq": "DLQ"}
SCENARIO_TIMEOUT = 120.0  # a scenario waits at most 10 s per message it must get
TEXT = "h\u00e9llo \u2603 \U0001f600 end"
BMP_TEXT = "h\u00e9llo \u2603 end"  # map entries: ActiveMQ's client reads them as UTF-8


class JavaPrograms:
    """The compiled programs: the ``java`` command prefix, and whether Spring is in."""

    def __init__(self, command: list[str], spring: bool) -> None:
        self.command = command
        self.spring = spring


@pytest.fixture(scope="module")
def java(tmp_path_factory: pytest.TempPathFactory) -> JavaPrograms:
    """Compile the runner (and Spring's scenario when its jars are there)."""
    sources = [CLIENTS / "ScenarioRunner.java", CLIENTS / "ReferenceBroker.java"]
    jar_sets = [CLIENT_JARS, BROKER_JARS, QUIET_LOGGING]
    spring = has_jars(SPRING_JARS)
    if spring:
        sources.append(CLIENTS / "SpringScenario.java")
        jar_sets.append(SPRING_JARS)
    command = compiled(sources, tmp_path_factory.mktemp("java-clients"), *jar_sets)
    quiet = "-Dorg.apache.commons.logging.Log=org.apache.commons.logging.impl.NoOpLog"
    return JavaPrograms([command[0], "-Xmx256m", quiet, *command[1:]], spring)


class Runner:
    """One ScenarioRunner JVM: a scenario line in, its JSON result line out.

    A runner that does not answer within SCENARIO_TIMEOUT is killed (the test fails with its
    stderr); the next scenario starts a fresh one.
    """

    def __init__(self, command: list[str], url: str, dlq: str, log: pathlib.Path) -> None:
        self._argv = [*command, "ScenarioRunner", url, dlq]
        self._log_path = log
        self._proc: subprocess.Popen[str] | None = None
        self._lines: queue.Queue[str | None] = queue.Queue()

    def _start(self) -> subprocess.Popen[str]:
        if self._proc is not None and self._proc.poll() is None:
            return self._proc
        self._lines = queue.Queue()
        log = open(self._log_path, "a", encoding="utf-8")  # noqa: SIM115 - closed by close()
        self._log = log
        proc = subprocess.Popen(
            self._argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            encoding="utf-8",
        )
        lines = self._lines

        def read() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                lines.put(line)
            lines.put(None)

        threading.Thread(target=read, daemon=True).start()
        self._proc = proc
        return proc

    def run(self, scenario: str) -> dict[str, Any]:
        """Run one scenario line; its result (asserting the runner answered in time)."""
        proc = self._start()
        assert proc.stdin is not None
        proc.stdin.write(scenario + "\n")
        proc.stdin.flush()
        try:
            line = self._lines.get(timeout=SCENARIO_TIMEOUT)
        except queue.Empty:
            line = None
        if line is None:
            self.close()
            raise AssertionError(
                f"runner gave no answer to {scenario!r} within {SCENARIO_TIMEOUT:.0f} s; "
                f"stderr:\n{self._log_path.read_text(encoding='utf-8')[-4000:]}"
            )
        result: dict[str, Any] = json.loads(line)
        return result

    def close(self) -> None:
        """Stop the JVM (closing stdin ends it; killed if it lingers)."""
        if self._proc is None:
            return
        proc, self._proc = self._proc, None
        try:
            if proc.stdin is not None:
                proc.stdin.close()
            proc.wait(10)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait(10)
        finally:
            self._log.close()


@pytest.fixture(scope="module")
def activemq(java: JavaPrograms, tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """ActiveMQ's own broker on a free port (persistence off); its port."""
    log = tmp_path_factory.mktemp("activemq") / "broker.log"
    with reference_broker(java.command, log) as port:
        yield port


@pytest.fixture(scope="module")
def ternmq(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A real ``ternmq serve`` (default config, fresh data dir)."""
    work = tmp_path_factory.mktemp("ternmq")
    server = ServerProcess(work / "data", None, work)
    try:
        yield server
    finally:
        server.kill()


@pytest.fixture(scope="module")
def runners(
    request: pytest.FixtureRequest, java: JavaPrograms, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Runner]]:
    """A lazily started runner per broker (a broker is only started once a test needs it)."""
    made: dict[str, Runner] = {}

    class Lazy(dict[str, Runner]):
        def __missing__(self, broker: str) -> Runner:
            if broker == "activemq":
                port = request.getfixturevalue("activemq")
            else:
                port = request.getfixturevalue("ternmq").port
            log = tmp_path_factory.mktemp(f"runner-{broker}") / "stderr.log"
            runner = Runner(java.command, f"tcp://127.0.0.1:{port}", DLQ[broker], log)
            made[broker] = self[broker] = runner
            return runner

    try:
        yield Lazy()
    finally:
        for runner in made.values():
            runner.close()


def scenario(runners: dict[str, Runner], broker: str, line: str) -> Any:
    """Run a scenario; assert it completed; what it received."""
    result = runners[broker].run(line)
    assert result["ok"], f"{broker}: {line}: {result.get('error')}\n{result.get('trace', '')}"
    return result["received"]


# ---- what JMS says the programs must see ------------------------------------------------

_GETTERS = ("boolean", "byte", "short", "int", "long", "float", "double", "String")
_MFE = "MessageFormatException"


def _row(values: dict[str, str], obj: str | None) -> dict[str, str]:
    row = {getter: values.get(getter, _MFE) for getter in _GETTERS}
    if obj is not None:
        row["Object"] = obj
    return row


def getter_matrix(with_object: bool = True) -> dict[str, dict[str, str]]:
    """Every getter on each typed property, per JMS's property conversion table."""

    def o(text: str) -> str | None:
        return text if with_object else None

    def ints(v: str, *getters: str) -> dict[str, str]:
        return {g: v for g in (*getters, "String")}

    return {
        "pBoolean": _row({"boolean": "true", "String": "true"}, o("Boolean:true")),
        "pByte": _row(ints("-5", "byte", "short", "int", "long"), o("Byte:-5")),
        "pShort": _row(ints("300", "short", "int", "long"), o("Short:300")),
        "pInt": _row(ints("70000", "int", "long"), o("Integer:70000")),
        "pLong": _row(ints("1099511627776", "long"), o("Long:1099511627776")),
        "pFloat": _row(ints("1.5", "float", "double"), o("Float:1.5")),
        "pDouble": _row(ints("-2.25", "double"), o("Double:-2.25")),
        "pString": _row(
            {
                "boolean": "false",
                **ints("42", "byte", "short", "int", "long"),
                "float": "42.0",
                "double": "42.0",
            },
            o("String:42"),
        ),
    }


# (scenario, what the program must receive); ``None`` marks "no further message".
EXPECTED: dict[str, Any] = {
    "queue": ["m0", "m1", "m2", None],
    "topic": {"s1": ["a", "b", None], "s2": ["a", "b", None]},
    "durable": {"while_offline": "while offline", "after_unsubscribe": None},
    "selectors": {
        "topic": {
            "n > 2": ["m3", "m4", "m5"],
            "color = 'red' AND n < 4": ["m0", "m2"],
            "flag = TRUE": ["m0", "m3"],
            "price BETWEEN 2.0 AND 6.0": ["m2", "m3", "m4"],
            "big >= 30000000000": ["m3", "m4", "m5"],
            "color IN ('blue') OR n = 0": ["m0", "m1", "m3", "m5"],
            "b <> 1 AND sh < 3 AND f > 0.2": ["m2"],
            "color LIKE 'r%'": ["m0", "m2", "m4"],
            "nosuch IS NULL AND n = 1": ["m1"],
            "JMSPriority = 4 AND JMSType = 'kind2'": ["m2"],
        },
        "queue_blue": ["m1", "m3", "m5"],
        "queue_rest": ["m0", "m2", "m4"],
    },
    # body | JMSRedelivered | JMSXDeliveryCount
    "client_ack_recover": ["m0|false|1", "m1|false|1", "m0|true|2", "m1|true|2", None],
    "dups_ok": {"received": ["m0", "m1", "m2", "m3", "m4"], "left": []},
    "transacted": {
        "before_commit": None,
        "consumed": ["c1|false|1", "c1|true|2", "c2|false|1", None],
        "left_after_commit": [],
    },
    # the replier (a connection of its own) sees JMSReplyTo as a TemporaryQueue / TemporaryTopic
    **{
        f"temp_{kind}_request_reply": {
            "replier_saw": "true|ping",
            "reply": "echo:ping",
            "correlated": True,
        }
        for kind in ("queue", "topic")
    },
    # body | delivered on the session's own thread
    "listener": ["l0|true", "l1|true", "l2|true"],
    "priority": [f"p{p}|{p}" for p in range(9, -1, -1)],
    "expiry": {"received": "long-lived", "expiration": 0, "after": None},
    "persistence": ["persistent|true", "non-persistent|false"],
    "browser": {
        "all": ["b0", "b1", "b2"],
        "selected": ["b1", "b2"],
        "consumed": ["b0", "b1", "b2"],
        "after": [],
    },
    # maximumRedeliveries = 2: three deliveries, then the client's poison ack dead-letters it
    "dlq": {
        "deliveries": ["poison|false|1", "poison|true|2", "poison|true|3"],
        "dead_letter": "poison",
        "left_in_queue": [],
    },
    "spring": {
        "string": "String:hello from spring",
        "map": {
            "count": "Integer:3",
            "name": "String:widget",
            "ok": "Boolean:true",
            "price": "Double:9.99",
        },
        "nothing_left": True,
    },
}

_BYTES = "byte[]:0102ff"
_FIVE = ["Boolean:true", "Byte:-5", "Short:300", "Character:Z", "Integer:70000"]
_WIDE = ["Long:1099511627776", "Float:1.5", "Double:-2.25", f"String:{TEXT}", _BYTES]
EXPECTED["body_types"] = [
    {"kind": "text", "body": TEXT, "properties": getter_matrix()},
    {
        "kind": "bytes",
        # 30 octets of primitives, writeUTF's 2 + 21 (modified UTF-8), 3 raw octets
        "length": 56,
        "body": [True, -5, 300, "Z", 70000, 1 << 40, "1.5", "-2.25", TEXT, 3, _BYTES, -1],
        "properties": getter_matrix(),
    },
    {
        "kind": "map",
        "body": {
            "Boolean": "Boolean:true",
            "Byte": "Byte:-5",
            "Character": "Character:Z",
            "Double": "Double:-2.25",
            "Float": "Float:1.5",
            "Integer": "Integer:70000",
            "Long": "Long:1099511627776",
            "Short": "Short:300",
            "String": f"String:{BMP_TEXT}",
            "bytes": _BYTES,
        },
        "properties": getter_matrix(),
    },
    {"kind": "stream", "body": [*_FIVE, *_WIDE, "EOF"], "properties": getter_matrix()},
    {"kind": "object", "body": "TreeMap:{a=1, b=two}", "properties": getter_matrix()},
    {"kind": "message", "properties": getter_matrix()},
]


@pytest.mark.parametrize("broker", BROKERS)
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_scenario(runners: dict[str, Runner], java: JavaPrograms, broker: str, name: str) -> None:
    if name == "spring" and not java.spring:
        pytest.skip("Spring's jars are missing: apt-get install libspring-jms-java")
    assert scenario(runners, broker, name) == EXPECTED[name]


# ---- Java <-> Python on ternmq --------------------------------------------------------


def python_getter_matrix(message: Message) -> dict[str, dict[str, str]]:
    """The Python client's getters on the typed properties, written as Java prints them."""

    def show(value: object) -> str:
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)

    out: dict[str, dict[str, str]] = {}
    for prop in getter_matrix():
        row = {}
        for getter in _GETTERS:
            get = getattr(message, f"get_{getter.lower()}_property")
            try:
                row[getter] = show(get(prop))
            except MessageFormatException:
                row[getter] = _MFE
            except ValueError:
                row[getter] = "NumberFormatException"
        out[prop] = row
    return out


def set_typed_properties(message: Message) -> None:
    """The properties ScenarioRunner.setTypedProperties sets, from Python."""
    message.set_boolean_property("pBoolean", True)
    message.set_byte_property("pByte", -5)
    message.set_short_property("pShort", 300)
    message.set_int_property("pInt", 70000)
    message.set_long_property("pLong", 1 << 40)
    message.set_float_property("pFloat", 1.5)
    message.set_double_property("pDouble", -2.25)
    message.set_string_property("pString", "42")


def test_java_producer_python_consumer(runners: dict[str, Runner], ternmq: ServerProcess) -> None:
    name = f"ow.java-to-python.{time.monotonic_ns()}"
    message_ids = scenario(runners, "ternmq", f"send_typed {name}")
    factory = ConnectionFactory(f"tcp://127.0.0.1:{ternmq.port}")
    with factory.create_connection() as conn:
        consumer = conn.create_session(False, Session.AUTO_ACKNOWLEDGE).create_consumer(Queue(name))
        conn.start()
        text, mapped = consumer.receive(10.0), consumer.receive(10.0)
        assert consumer.receive(0.5) is None
    assert isinstance(text, TextMessage) and isinstance(mapped, MapMessage)
    assert [text.jms_message_id, mapped.jms_message_id] == message_ids
    assert text.text == TEXT
    assert (text.jms_correlation_id, text.jms_type) == ("corr-java", "from-java")
    expected = getter_matrix(with_object=False)
    assert python_getter_matrix(text) == expected
    assert python_getter_matrix(mapped) == expected
    assert sorted(mapped.get_map_names()) == ["count", "name", "ok", "price"]
    assert mapped.get_int("count") == 3
    assert mapped.get_string("name") == "widget"
    assert mapped.get_double("price") == 9.99
    assert mapped.get_boolean("ok") is True
    with pytest.raises(MessageFormatException):
        mapped.get_boolean("count")  # an int stays an int


def test_python_producer_java_consumer(runners: dict[str, Runner], ternmq: ServerProcess) -> None:
    name = f"ow.python-to-java.{time.monotonic_ns()}"
    factory = ConnectionFactory(f"tcp://127.0.0.1:{ternmq.port}")
    with factory.create_connection() as conn:
        session = conn.create_session(False, Session.AUTO_ACKNOWLEDGE)
        producer = session.create_producer(Queue(name))
        text = session.create_text_message(TEXT)
        set_typed_properties(text)
        text.jms_correlation_id = "corr-python"
        text.jms_type = "from-python"
        producer.send(text)
        mapped = session.create_map_message()
        set_typed_properties(mapped)
        mapped.set_int("count", 3)
        mapped.set_string("name", "widget")
        mapped.set_double("price", 9.99)
        mapped.set_boolean("ok", True)
        mapped.set_bytes("raw", b"\x01\x02\xff")
        producer.send(mapped)
    received = scenario(runners, "ternmq", f"receive_typed {name}")
    assert received == [
        {
            "kind": "text",
            "body": TEXT,
            "properties": getter_matrix(),
            "correlation_id": "corr-python",
            "type": "from-python",
        },
        {
            "kind": "map",
            "body": {
                "count": "Integer:3",
                "name": "String:widget",
                "ok": "Boolean:true",
                "price": "Double:9.99",
                "raw": _BYTES,
            },
            "properties": getter_matrix(),
            "correlation_id": None,
            "type": None,
        },
    ]
