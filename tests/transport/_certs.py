"""Self-signed certificates for TLS tests, made with the ``openssl`` command (no runtime
dependency); without it, the certificates that ship with CPython's own tests."""

from __future__ import annotations

import dataclasses
import pathlib
import shutil
import subprocess
import sysconfig

import pytest


@dataclasses.dataclass(frozen=True)
class CertPair:
    """A certificate (its own CA) and its key, both PEM files."""

    cert: str
    key: str


def make_cert(directory: pathlib.Path, name: str, common_name: str = "localhost") -> CertPair:
    """A self-signed certificate for ``common_name`` (also valid for 127.0.0.1 and ::1)."""
    openssl = shutil.which("openssl")
    if openssl is None:
        return _cpython_cert(common_name)
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
    )
    return CertPair(str(cert), str(key))


def _cpython_cert(common_name: str) -> CertPair:
    if common_name != "localhost":
        pytest.skip("no openssl command: only CPython's localhost test certificate is available")
    for sub in ("test/certdata", "test"):
        base = pathlib.Path(sysconfig.get_paths()["stdlib"]) / sub
        if (base / "keycert.pem").exists():
            return CertPair(str(base / "keycert.pem"), str(base / "keycert.pem"))
    pytest.skip("neither the openssl command nor CPython's test certificates are available")
