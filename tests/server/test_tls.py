"""The TLS listener: a server certificate, and optional client certificates (``cafile`` +
``verify_client``). Certificates are made for the test with the ``openssl`` command."""

from __future__ import annotations

import pathlib
import shutil
import ssl
import subprocess

import pytest

from _openssl import self_signed_cert
from ternmq.protocol import commands as c

from ._support import Raw
from .conftest import Serve

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")


def _cert(directory: pathlib.Path, name: str) -> tuple[pathlib.Path, pathlib.Path]:
    made = self_signed_cert(directory, name)
    assert made is not None  # the module is skipped without openssl
    return pathlib.Path(made[0]), pathlib.Path(made[1])


def _config(cert: pathlib.Path, key: pathlib.Path, client_ca: pathlib.Path | None) -> str:
    text = f'[[listeners]]\nport = 0\n[[listeners]]\nport = 0\n[listeners.tls]\ncert = "{cert}"\n'
    text += f'key = "{key}"\n'
    if client_ca is not None:
        text += f'cafile = "{client_ca}"\nverify_client = true\n'
    return text


def test_tls_listener(serve: Serve, tmp_path: pathlib.Path) -> None:
    cert, key = _cert(tmp_path, "server")
    server = serve(_config(cert, key, None))
    ctx = ssl.create_default_context(cafile=str(cert))
    with Raw(server.ports["tls"], tls=ctx) as cl:
        assert isinstance(cl.connect(), c.Connected)
        assert isinstance(cl.request(c.CreateSession(session_id=1)), c.Ok)
    server.wait_log(r"event=connection_open .*listener=tls")


def test_tls_client_certificate_required(serve: Serve, tmp_path: pathlib.Path) -> None:
    cert, key = _cert(tmp_path, "server")
    client_cert, client_key = _cert(tmp_path, "client")
    server = serve(_config(cert, key, client_cert))
    with_cert = ssl.create_default_context(cafile=str(cert))
    with_cert.load_cert_chain(str(client_cert), str(client_key))
    with Raw(server.ports["tls"], tls=with_cert) as cl:
        assert isinstance(cl.connect(), c.Connected)
    without = ssl.create_default_context(cafile=str(cert))
    try:
        with Raw(server.ports["tls"], tls=without) as cl:
            reply = cl.connect()  # TLS 1.3 reports the refusal on the first read (or EOF)
    except (OSError, AssertionError):
        reply = None
    assert reply is None, "a client without a certificate was admitted"


def _serve_once(tmp_path: pathlib.Path, config: str) -> subprocess.CompletedProcess[str]:
    from ._support import SERVE

    cfg = tmp_path / "server.toml"
    cfg.write_text(config, encoding="utf-8")
    return subprocess.run(
        [*SERVE, "--config", str(cfg), "--data-dir", str(tmp_path / "data")],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_tls_start_up_errors_name_the_file_before_the_data_dir_is_opened(
    tmp_path: pathlib.Path,
) -> None:
    """A missing or unusable TLS file is named, with its listener, and the server fails
    before it opens (and recovers) its data dir."""
    cert, key = _cert(tmp_path, "server")
    missing = tmp_path / "nowhere" / "server.pem"
    proc = _serve_once(tmp_path, _config(missing, key, None))
    assert proc.returncode == 1, proc.stderr
    assert f"tls.cert {missing}: No such file or directory" in proc.stderr
    assert "listener tls://" in proc.stderr
    assert not (tmp_path / "data").exists()
    # a PEM with no private key given as the key: both files named, and what is wrong
    proc = _serve_once(tmp_path, _config(cert, cert, None))
    assert proc.returncode == 1, proc.stderr
    assert f"tls.cert {cert} and tls.key {cert}" in proc.stderr
    assert "private key" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "data").exists()
