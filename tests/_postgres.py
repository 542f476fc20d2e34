"""A real PostgreSQL server for the tests of the PostgreSQL store (one place for
tests/store_pg, the conformance run on PostgreSQL and the crash tests).

:class:`PgServer` runs ``initdb`` in a temporary directory and ``postgres`` on 127.0.0.1, a
free port, its unix socket in that directory, as a non-root user: PostgreSQL refuses to run
as root, so when this process is root the binaries run as ``postgres`` (``runuser``), the
directory owned by that user. Binaries come from ``pg_config --bindir``, else
``/usr/lib/postgresql/*/bin``. :func:`postgres_server` is the session fixture (skipped, with
the reason, only when no PostgreSQL binaries exist); :meth:`PgServer.new_database` gives each
test a database of its own; :meth:`PgServer.stop` and :meth:`PgServer.start` take the server
away and bring it back (the database-loss tests).
"""

from __future__ import annotations

import contextlib
import glob
import os
import pathlib
import pwd
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator

import psycopg
import pytest

START_TIMEOUT = 30.0
PASSWORD = "ternmq-test"
USER = "ternmq"


def bindir() -> pathlib.Path | None:
    """Where ``initdb`` and ``postgres`` are, or None when PostgreSQL is not installed."""
    pg_config = shutil.which("pg_config")
    if pg_config is not None:
        out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, check=False)
        path = pathlib.Path(out.stdout.strip())
        if (path / "initdb").exists() and (path / "postgres").exists():
            return path
    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        path = pathlib.Path(candidate)
        if (path / "initdb").exists() and (path / "postgres").exists():
            return path
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PgServer:
    """One PostgreSQL cluster in ``directory`` (see the module doc)."""

    def __init__(self, directory: pathlib.Path, binaries: pathlib.Path) -> None:
        self.bin = binaries
        self.dir = directory
        self.data = directory / "pgdata"
        self.port = _free_port()
        self.log = directory / "postgres.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self._spent: list[str] = []  # databases to drop (see done)
        self._spent_lock = threading.Lock()
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            self.as_user = ["runuser", "-u", "postgres", "--"]
            entry = pwd.getpwnam("postgres")
            os.chown(directory, entry.pw_uid, entry.pw_gid)
        pwfile = directory / "pwfile"
        pwfile.write_text(PASSWORD + "\n", encoding="utf-8")
        if self.as_user:
            os.chown(pwfile, pwd.getpwnam("postgres").pw_uid, -1)
        done = subprocess.run(
            [
                *self.as_user,
                str(self.bin / "initdb"),
                "-D",
                str(self.data),
                "-U",
                USER,
                "--pwfile",
                str(pwfile),
                "-A",
                "scram-sha-256",
                "-E",
                "UTF8",
                "--no-sync",
            ],
            check=False,
            capture_output=True,
        )
        if done.returncode != 0:
            raise AssertionError(f"initdb failed: {done.stderr.decode(errors='replace')}")

    def url(self, dbname: str = "postgres", password: str = PASSWORD) -> str:
        """The ``postgresql://`` URL of ``dbname`` on this server."""
        return f"postgresql://{USER}:{password}@127.0.0.1:{self.port}/{dbname}"

    def start(self) -> None:
        """Start the server (again) on its port and wait until it accepts connections.

        Raises:
            AssertionError: it did not start within ``START_TIMEOUT``.
        """
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                [
                    *self.as_user,
                    str(self.bin / "postgres"),
                    "-D",
                    str(self.data),
                    "-h",
                    "127.0.0.1",
                    "-p",
                    str(self.port),
                    "-k",
                    str(self.dir),
                    "-c",
                    "max_connections=200",
                    "-c",
                    "shared_buffers=64MB",
                ],
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                psycopg.connect(self.url(), connect_timeout=2).close()
                return
            except psycopg.OperationalError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    text = self.log.read_text(errors="replace")[-3000:]
                    raise AssertionError(f"PostgreSQL did not start:\n{text}") from None
                time.sleep(0.1)

    def stop(self, mode: str = "fast") -> None:
        """Stop the server: ``fast`` (SIGINT: clients disconnected, a clean shutdown) or
        ``immediate`` (SIGQUIT: as a crash). A no-op if it is not running."""
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        pg_ctl = str(self.bin / "pg_ctl")
        subprocess.run(
            [*self.as_user, pg_ctl, "-D", str(self.data), "-m", mode, "-w", "stop"],
            check=False,
            capture_output=True,
        )
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)

    def new_database(self) -> str:
        """A fresh empty database; its URL. The databases given up with :meth:`done` are
        dropped first (a long run would otherwise leave hundreds of them: gigabytes)."""
        name = f"t_{uuid.uuid4().hex[:12]}"
        with self._spent_lock:  # pool threads ask at the same time
            spent, self._spent = self._spent, []
        with psycopg.connect(self.url(), autocommit=True) as conn:
            for old in spent:
                conn.execute(f"DROP DATABASE IF EXISTS {old} WITH (FORCE)")
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def done(self, url: str) -> None:
        """The test of ``url``'s database has ended: drop it with the next
        :meth:`new_database` (by then whatever the test started is gone too)."""
        with self._spent_lock:
            self._spent.append(url.rpartition("/")[2])


def start_postgres(directory: pathlib.Path) -> PgServer:
    """A running :class:`PgServer` in ``directory``; the test is skipped when PostgreSQL is
    not installed."""
    binaries = bindir()
    if binaries is None:
        pytest.skip(
            "no PostgreSQL binaries (pg_config --bindir, /usr/lib/postgresql/*/bin): install "
            "postgresql (the CI script .ci/run does) to run the PostgreSQL store tests"
        )
    server = PgServer(directory, binaries)
    server.start()
    return server


@contextlib.contextmanager
def _running_postgres() -> Iterator[PgServer]:
    """A running :class:`PgServer` in a directory of its own under the system's temporary
    directory (pytest's are private to root: the ``postgres`` user could not enter them),
    stopped and removed on the way out."""
    directory = pathlib.Path(tempfile.mkdtemp(prefix="ternmq-pg-"))
    try:
        server = start_postgres(directory)
        try:
            yield server
        finally:
            server.stop()
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PgServer]:
    """A PostgreSQL server for the whole session (see the module doc). Tests must not stop
    it or cut connections other than their own database's: other tests (and, under
    pytest-xdist, warm conformance servers of the same worker) use it at the same time. A
    test that takes the whole server down uses :func:`private_postgres`."""
    with _running_postgres() as server:
        yield server


@pytest.fixture
def private_postgres() -> Iterator[PgServer]:
    """A PostgreSQL server of this test's own, for tests that stop or restart the server
    itself (an outage): the session's server stays up for everyone else."""
    with _running_postgres() as server:
        yield server


@pytest.fixture
def pg_url(postgres_server: PgServer) -> Iterator[str]:
    """The URL of a fresh database on the session's PostgreSQL server (dropped later)."""
    url = postgres_server.new_database()
    yield url
    postgres_server.done(url)
