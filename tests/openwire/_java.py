"""Compile and run a Java test program against Debian's ActiveMQ client jars.

The programs in ``java/`` are compiled at test time with ``javac``; a test that needs them is
skipped, saying what to install, when the JDK or the ``libactivemq-java`` jars are missing.
"""

from __future__ import annotations

import pathlib
import shutil
import subprocess

import pytest

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
