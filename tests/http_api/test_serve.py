"""The HTTP listener of a real ``ternmq serve`` process: ``--http-port``, its log line, TLS
from the ``[http]`` table, and the config that sets it."""

from __future__ import annotations

import json
import pathlib
import shutil
import ssl
import urllib.request

import pytest

from _openssl import self_signed_cert
from server._support import ServerProcess
from ternmq.server.app import build_parser
from ternmq.server.config import (
    DEFAULT_HTTP_PORT,
    HttpConfig,
    ServerConfig,
    load_config,
    parse_config,
)

from ._client import Http


def _serve(tmp_path: pathlib.Path, config: str | None = None) -> ServerProcess:
    return ServerProcess(tmp_path / "data", config, tmp_path, http=True)


def test_serve_logs_and_serves_http(tmp_path: pathlib.Path) -> None:
    server = _serve(tmp_path)
    try:
        url = server.http_url
        assert url.startswith("http://127.0.0.1:")
        http = Http(url)
        assert http.get("/api/health").json() == {"status": "ok", "role": "live"}
        assert http.post("/api/destinations", {"name": "queue://served"}).status == 201
        metrics = http.get("/metrics").body.decode()
        assert 'ternmq_destination_messages{destination="queue://served"} 0.0' in metrics
        assert 'ternmq_connections{protocol="native"} 0.0' in metrics
        assert "process_cpu_seconds_total" in metrics
        assert server.stop() == 0
    finally:
        server.kill()


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")
def test_serve_https_from_the_http_table(tmp_path: pathlib.Path) -> None:
    made = self_signed_cert(tmp_path, "web")
    assert made is not None
    cert, key = made
    server = _serve(tmp_path, f'[http]\nport = 0\n[http.tls]\ncert = "{cert}"\nkey = "{key}"\n')
    try:
        url = server.http_url
        assert url.startswith("https://127.0.0.1:")
        ctx = ssl.create_default_context(cafile=cert)
        with urllib.request.urlopen(url + "/api/health", context=ctx, timeout=10) as resp:
            assert json.loads(resp.read()) == {"status": "ok", "role": "live"}
    finally:
        server.kill()


def test_a_missing_tls_file_names_the_http_listener(tmp_path: pathlib.Path) -> None:
    cfg = '[http]\nport = 0\n[http.tls]\ncert = "/nonexistent.pem"\nkey = "/nonexistent.key"\n'
    with pytest.raises(AssertionError, match=r"https://127\.0\.0\.1:0: tls\.cert /nonexistent"):
        ServerProcess(tmp_path / "data", cfg, tmp_path, http=True)


def test_http_config() -> None:
    assert ServerConfig().http is None  # embedding: no HTTP listener unless asked
    assert load_config(None).http == HttpConfig()
    assert HttpConfig().port == DEFAULT_HTTP_PORT == 8161
    cfg = parse_config({"http": {"port": 0, "metrics_auth": True, "max_body": 10}})
    assert cfg.http == HttpConfig(port=0, metrics_auth=True, max_body=10)
    assert [ls.protocol for ls in cfg.all_listeners()] == ["native", "http"]
    off = parse_config({"http": {"port": -1}})
    assert [ls.protocol for ls in off.all_listeners()] == ["native"]
    assert parse_config({}).with_overrides(http_port=-1).all_listeners()[-1].protocol == "native"
    moved = parse_config({}).with_overrides(bind="0.0.0.0", http_port=9000)
    assert moved.all_listeners()[-1].bind == "0.0.0.0" and moved.all_listeners()[-1].port == 9000
    for bad in (
        {"http": {"port": 70000}},
        {"http": {"max_body": 0}},
        {"http": {"nope": 1}},
        {"listeners": [{"protocol": "http"}]},
    ):
        with pytest.raises(ValueError):
            parse_config(bad)
    with pytest.raises(ValueError, match="--http-port"):
        ServerConfig().with_overrides(http_port=-2)
    assert build_parser().parse_args(["--http-port", "0"]).http_port == 0
