"""Self-signed certificates for the TLS tests, made with the ``openssl`` command (one place
for tests/transport, tests/server and the tls:// conformance run)."""

from __future__ import annotations

import pathlib
import shutil
import subprocess


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
