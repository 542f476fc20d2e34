"""Compile and run a Java test program against Debian's ActiveMQ client jars.

The programs in ``java/`` are compiled at test time with ``javac``; a test that needs them is
skipped, saying what to install, when the JDK or the ``libactivemq-java`` jars are missing.
"""

from __future__ import annotations

import pathlib
import shutil
import subprocess

import pytest

from ternmq.protocol import openwire as ow

JAVA_DIR = pathlib.Path("/usr/share/java")
CLIENT_JARS = ("activemq-client.jar", "hawtbuf.jar", "geronimo-jms_1.1_spec.jar", "slf4j-api.jar")
SOURCES = pathlib.Path(__file__).parent / "java"


def compile_java(source: pathlib.Path, out: pathlib.Path, main_class: str) -> list[str]:
    """Compile ``source`` into ``out``; answer the command line that runs ``main_class``.

    Skips the calling test when ``javac``/``java`` or a jar is missing.
    """
    javac, java = shutil.which("javac"), shutil.which("java")
    if javac is None or java is None:
        pytest.skip("javac and java (JDK 17) are needed: apt-get install openjdk-17-jdk-headless")
    missing = [jar for jar in CLIENT_JARS if not (JAVA_DIR / jar).exists()]
    if missing:
        pytest.skip(
            f"{', '.join(missing)} missing from {JAVA_DIR}: apt-get install libactivemq-java"
        )
    classpath = ":".join(str(JAVA_DIR / jar) for jar in CLIENT_JARS)
    subprocess.run(
        [javac, "-nowarn", "-d", str(out), "-cp", classpath, str(source)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return [java, "-cp", f"{out}:{classpath}", main_class]


#: What Java's JMS getters read, by label then key: (Java class, value as printed).
Reading = dict[str, dict[str, tuple[str, str]]]


def mapping_program(out: pathlib.Path) -> list[str]:
    """``java/OpenWireMapping.java`` compiled into ``out``: the command that runs it."""
    return compile_java(SOURCES / "OpenWireMapping.java", out, "OpenWireMapping")


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
