"""Self-signed certificates for the TLS tests, made with the ``openssl`` command (one place
for tests/transport, tests/server and the tls:// conformance run), and the TLS listener of a
gateway (tests/stomp_gateway, tests/openwire)."""

from __future__ import annotations

import pathlib
import re
import shutil
import ssl
import subprocess
from typing import Protocol

import pytest


def self_signed_cert(
    directory: pathlib.Path, name: str, common_name: str = "localhost"
) -> tuple[str, str] | None:
    """``(cert, key)`` paths of a fresh self-signed EC certificate for ``common_name`` (also
    valid for 127.0.0.1 and ::1), written as ``NAME.pem`` and ``NAME.key`` in ``directory``;
    None when there is no ``openssl`` command."""
    openssl = shutil.which("openssl")
    if openssl is None:
        return None
    cert, key = directory / f"{name}.pem", directory / f"{name}.key"
    subprocess.run(
        [
            openssl,
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "2",
            "-subj",
            f"/CN={common_name}",
            "-addext",
            f"subjectAltName=DNS:{common_name},IP:127.0.0.1,IP:::1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return str(cert), str(key)


class _Logged(Protocol):
    def wait_log(self, pattern: str, timeout: float = ...) -> str: ...


def tls_listener(directory: pathlib.Path, protocol: str) -> tuple[str, ssl.SSLContext]:
    """The config of an extra ``protocol`` listener on TLS (port 0) with a fresh self-signed
    certificate, and a client context that trusts it; skips the test when there is no
    ``openssl`` command (one place for the STOMP and OpenWire TLS listener tests)."""
    made = self_signed_cert(directory, protocol)
    if made is None:
        pytest.skip("no openssl command")
    cert, key = made
    config = (
        f'[[listeners]]\nprotocol = "{protocol}"\nport = 0\n'
        f'tls = {{ cert = "{cert}", key = "{key}" }}\n'
    )
    return config, ssl.create_default_context(cafile=cert)


def tls_listener_port(server: _Logged, protocol: str) -> int:
    """The port of ``server``'s TLS listener of ``protocol``, read from its
    ``event=listening`` log line."""
    line = server.wait_log(rf"event=listening protocol={protocol} address=\S+ url=tls://")
    m = re.search(r"tls://127\.0\.0\.1:(\d+)", line)
    assert m is not None, line
    return int(m.group(1))
