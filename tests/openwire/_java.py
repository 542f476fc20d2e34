"""Java programs the OpenWire tests (and the OpenWire benchmark) compile against Debian's jars.

The programs live in ``java/`` (codec and mapping fixtures) and ``clients/`` (JMS
applications: the scenario runner, the reference broker, the benchmark).

Theory of operation: :func:`compile_java` finds ``javac``/``java`` (JDK 17) and the jars in
``/usr/share/java`` (``libactivemq-java``; Spring's from ``libspring-jms-java``), compiles the
given sources into a directory with ``javac``, and answers the ``java -cp ...`` prefix that
runs them. When a tool or jar is missing it raises :class:`JavaMissing` saying what to
install (``tools/system-deps.sh`` installs both packages); :func:`compiled` (and
:func:`program`) turn that into ``pytest.skip`` with that reason; :func:`has_jars` asks
before an optional part (Spring's scenario). :func:`reference_broker` runs ActiveMQ's own broker,
embedded from Debian's jars, as the reference the tests and the benchmark compare ternmq
with. The rest drives ``java/OpenWireMapping.java`` for the mapping tests.
"""

from __future__ import annotations

import contextlib
import pathlib
import shutil
import subprocess
from collections.abc import Iterator, Sequence

import pytest

from ternmq.protocol import openwire as ow

JAVA_DIR = pathlib.Path("/usr/share/java")
SOURCES = pathlib.Path(__file__).parent / "java"
# ActiveMQ's client: what a JMS application puts on its class path.
CLIENT_JARS = ("activemq-client.jar", "hawtbuf.jar", "geronimo-jms_1.1_spec.jar", "slf4j-api.jar")
# ActiveMQ's own broker, embedded as the reference (KahaDB for persistent runs).
BROKER_JARS = (
    "activemq-broker.jar",
    "activemq-kahadb-store.jar",
    "activemq-protobuf.jar",
    "geronimo-j2ee-management-1.1-spec.jar",
)
# Spring's JmsTemplate and what it loads.
SPRING_JARS = (
    "spring3-jms.jar",
    "spring3-core.jar",
    "spring3-beans.jar",
    "spring3-context.jar",
    "spring3-transaction.jar",
    "commons-logging.jar",
)
QUIET_LOGGING = ("slf4j-nop.jar",)  # no log binding warning on stderr


class JavaMissing(Exception):
    """Java or a jar the program needs is not installed; the message says what to install."""


def classpath(*jar_sets: Sequence[str]) -> str:
    """The class path of these jars in ``/usr/share/java``.

    Raises:
        JavaMissing: a jar is missing (the message names the Debian package).
    """
    jars = [jar for jars in jar_sets for jar in jars]
    missing = [jar for jar in jars if not (JAVA_DIR / jar).exists()]
    if missing:
        packages = {
            "libspring-jms-java" if j in SPRING_JARS else "libactivemq-java" for j in missing
        }
        install = " ".join(sorted(packages))
        raise JavaMissing(
            f"{', '.join(missing)} missing from {JAVA_DIR}: apt-get install {install}"
        )
    return ":".join(str(JAVA_DIR / jar) for jar in jars)


def compile_java(
    sources: Sequence[pathlib.Path], out: pathlib.Path, *jar_sets: Sequence[str]
) -> list[str]:
    """Compile ``sources`` into ``out`` against the jars; answer ``[java, -cp, PATH]``.

    Raises:
        JavaMissing: no JDK, or a jar is missing.
        subprocess.CalledProcessError: javac failed (its output in ``stderr``).
    """
    javac, java = shutil.which("javac"), shutil.which("java")
    if javac is None or java is None:
        raise JavaMissing(
            "javac and java (JDK 17) are needed: apt-get install openjdk-17-jdk-headless"
        )
    path = classpath(*jar_sets)
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [javac, "-nowarn", "-d", str(out), "-cp", path, *map(str, sources)],
        check=True,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return [java, "-cp", f"{out}:{path}"]


def compiled(
    sources: Sequence[pathlib.Path], out: pathlib.Path, *jar_sets: Sequence[str]
) -> list[str]:
    """:func:`compile_java` for a test (``[java, -cp, PATH]``); skips the calling test
    (saying what to install) when Java or a jar is missing."""
    try:
        return compile_java(sources, out, *jar_sets)
    except JavaMissing as missing:
        pytest.skip(str(missing))


def program(
    sources: Sequence[pathlib.Path], out: pathlib.Path, main_class: str, *jar_sets: Sequence[str]
) -> list[str]:
    """:func:`compiled` with ``jar_sets`` (default: CLIENT_JARS): the command line that runs
    ``main_class``."""
    return [*compiled(sources, out, *(jar_sets or (CLIENT_JARS,))), main_class]


def has_jars(*jar_sets: Sequence[str]) -> bool:
    """Whether every jar of ``jar_sets`` is in ``/usr/share/java``."""
    try:
        classpath(*jar_sets)
    except JavaMissing:
        return False
    return True


@contextlib.contextmanager
def reference_broker(
    java: Sequence[str], log: pathlib.Path, data_dir: pathlib.Path | None = None
) -> Iterator[int]:
    """ActiveMQ's own broker (``clients/ReferenceBroker.java``, compiled into ``java``'s
    class path with BROKER_JARS) on a free port: persistence off, or KahaDB in ``data_dir``.
    Yields its port; stopped (stdin closed, killed if it lingers) on exit.

    Raises:
        AssertionError: it did not print its port (its log in the message).
    """
    argv = [*java, "ReferenceBroker", *([str(data_dir)] if data_dir is not None else [])]
    with open(log, "w", encoding="utf-8") as err:
        proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True
        )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # printed once the broker listens
        assert line.startswith("port "), (
            f"ActiveMQ's broker did not start: {line!r}\n{log.read_text()}"
        )
        yield int(line.split()[1])
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()


#: What Java's JMS getters read, by label then key: (Java class, value as printed).
Reading = dict[str, dict[str, tuple[str, str]]]


def mapping_program(out: pathlib.Path) -> list[str]:
    """``java/OpenWireMapping.java`` (with ``OpenWireFixtures.java``, whose wire format and hex
    helpers it uses) compiled into ``out``: the command that runs it."""
    sources = [SOURCES / "OpenWireMapping.java", SOURCES / "OpenWireFixtures.java"]
    return program(sources, out, "OpenWireMapping")


def java_produced(java: list[str]) -> dict[str, ow.Message]:
    """The messages ``OpenWireMapping produce`` marshals, by label, decoded by ternmq's codec."""
    run = subprocess.run(java, check=True, capture_output=True, text=True, timeout=300)
    frames = {}
    for line in run.stdout.splitlines():
        label, frame = line.split()
        (command,) = ow.FrameParser().feed(bytes.fromhex(frame))
        assert isinstance(command, ow.Message)
        frames[label] = command
    return frames


def java_reads(java: list[str], commands: dict[str, ow.Message]) -> Reading:
    """What ``OpenWireMapping consume`` (Java's JMS getters) reads from each of ``commands``."""
    lines = "".join(f"{label} {ow.encode_frame(c).hex()}\n" for label, c in commands.items())
    run = subprocess.run(
        [*java, "consume"], input=lines, check=True, capture_output=True, text=True, timeout=300
    )
    reading: Reading = {}
    for line in run.stdout.splitlines():
        label, key, cls, value = line.split(" ")
        reading.setdefault(label, {})[key] = (cls, value)
    return reading


def text_of(reading: dict[str, tuple[str, str]], key: str) -> tuple[str, str | None]:
    """(Java class, the value as text) of ``key`` in one message's reading (None for null)."""
    cls, value = reading[key]
    if cls == "null":
        return cls, None
    return cls, "" if value == "-" else bytes.fromhex(value).decode()
