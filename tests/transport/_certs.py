"""Self-signed certificates for TLS tests, made with the ``openssl`` command (no runtime
dependency); without it, the certificates that ship with CPython's own tests."""

from __future__ import annotations

import dataclasses
import pathlib
import sysconfig

import pytest

from _openssl import self_signed_cert


@dataclasses.dataclass(frozen=True)
class CertPair:
    """A certificate (its own CA) and its key, both PEM files."""

    cert: str
    key: str


def make_cert(directory: pathlib.Path, name: str, common_name: str = "localhost") -> CertPair:
    """A self-signed certificate for ``common_name`` (also valid for 127.0.0.1 and ::1)."""
    made = self_signed_cert(directory, name, common_name)
    if made is None:
        return _cpython_cert(common_name)
    return CertPair(*made)


def _cpython_cert(common_name: str) -> CertPair:
    if common_name != "localhost":
        pytest.skip("no openssl command: only CPython's localhost test certificate is available")
    for sub in ("test/certdata", "test"):
        base = pathlib.Path(sysconfig.get_paths()["stdlib"]) / sub
        if (base / "keycert.pem").exists():
            return CertPair(str(base / "keycert.pem"), str(base / "keycert.pem"))
    pytest.skip("neither the openssl command nor CPython's test certificates are available")
