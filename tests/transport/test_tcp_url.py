"""tcp:// and tls:// URLs of ConnectionFactory: addresses, options, and their errors."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from ternmq import ConnectionFactory, JMSException
from ternmq.transport.tcp import DEFAULT_HEARTBEAT, TcpOptions

from ._certs import make_cert


def options(url: str) -> TcpOptions:
    f = ConnectionFactory(url)
    assert f._tcp is not None
    return f._tcp


@pytest.mark.parametrize(
    ("url", "host", "port"),
    [
        ("tcp://127.0.0.1:61616", "127.0.0.1", 61616),
        ("tcp://broker.example:5000/", "broker.example", 5000),
        ("tcp://broker.example", "broker.example", 61616),
        ("tls://broker.example", "broker.example", 61617),
        ("tcp://[::1]:61616", "::1", 61616),
        ("tcp://[fe80::1]", "fe80::1", 61616),
        ("TCP://h:1", "h", 1),
    ],
)
def test_addresses(url: str, host: str, port: int) -> None:
    o = options(url)
    assert (o.host, o.port) == (host, port)


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("tcp://:61616", "names no host"),
        ("tcp://h:0", "bad port '0'"),
        ("tcp://h:70000", "bad port '70000'"),
        ("tcp://h:abc", "bad port 'abc'"),
        ("tcp://::1:61616", "brackets"),
        ("tcp://[::1", "IPv6"),
        ("tcp://[::1]x", "IPv6"),
        ("tcp://[]:1", "IPv6"),
        ("udp://h:1", "unsupported transport 'udp'"),
        ("tcp://", "names no broker"),
    ],
)
def test_bad_addresses(url: str, says: str) -> None:
    with pytest.raises(JMSException, match=says.replace("[", r"\[")):
        ConnectionFactory(url)


def test_defaults_and_options() -> None:
    o = options("tcp://h:1")
    assert o.heartbeat == DEFAULT_HEARTBEAT and o.connect_timeout == 10.0
    assert o.ssl_context is None
    o = options("tcp://h:1?heartbeat=2.5&connect_timeout=0.5&prefetch=7&client_id=me")
    assert (o.heartbeat, o.connect_timeout) == (2.5, 0.5)
    f = ConnectionFactory("tcp://h:1?prefetch=7&client_id=me")
    assert (f.prefetch, f.client_id) == (7, "me")
    assert options("tcp://h:1?heartbeat=0").heartbeat == 0


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("heartbeat=-1", "heartbeat='-1'"),
        ("heartbeat=soon", "heartbeat='soon'"),
        ("heartbeat=inf", "heartbeat='inf'"),
        ("connect_timeout=0", "connect_timeout='0'"),
        ("connect_timeout=nan", "connect_timeout='nan'"),
        ("prefetch=x", "prefetch"),
        ("prefech=1", "unknown option 'prefech'"),
        ("data_dir=/tmp/x", "data_dir is a vm:// option"),
        ("cafile=/x.pem", "'cafile' in .* applies to tls:// URLs only"),
        ("verify=false", "'verify' in .* applies to tls:// URLs only"),
    ],
)
def test_bad_tcp_options(query: str, says: str) -> None:
    with pytest.raises(JMSException, match=says):
        ConnectionFactory(f"tcp://h:1?{query}")


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("prefech=0", "unknown option 'prefech' in 'vm://opts\\?prefech=0'; vm:// takes prefetch"),
        ("heartbeat=5", "unknown option 'heartbeat'"),  # a tcp:// option: no link to watch
    ],
)
def test_bad_vm_options(query: str, says: str) -> None:
    """A misspelt or foreign option of a ``vm://`` URL is refused, as for ``tcp://``,
    naming the options it takes; the known ones are read."""
    with pytest.raises(JMSException, match=says):
        ConnectionFactory(f"vm://opts?{query}")
    f = ConnectionFactory("vm://opts?prefetch=3&client_id=me&block_on_non_persistent_send=true")
    assert (f.prefetch, f.client_id, f.block_on_non_persistent_send) == (3, "me", True)


def test_tls_context_defaults() -> None:
    ctx = options("tls://h").ssl_context
    assert isinstance(ctx, ssl.SSLContext)
    assert ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname
    ctx = options("tls://h?verify=false").ssl_context
    assert ctx is not None and ctx.verify_mode == ssl.CERT_NONE and not ctx.check_hostname
    assert options("tls://h?server_hostname=broker.example").server_hostname == "broker.example"


def test_tls_files(tmp_path: Path) -> None:
    pair = make_cert(tmp_path, "c")
    o = options(f"tls://h?cafile={pair.cert}&certfile={pair.cert}&keyfile={pair.key}")
    assert o.ssl_context is not None
    assert o.ssl_context.cert_store_stats()["x509_ca"] == 1


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("verify=maybe", "verify='maybe'.*true or false"),
        ("cafile=/nonexistent/ca.pem", "cafile='/nonexistent/ca.pem'.*cannot load"),
        ("certfile=/nonexistent/c.pem", "certfile='/nonexistent/c.pem'.*client certificate"),
        ("keyfile=/k.pem", "keyfile .* needs certfile"),
        ("heartbeat=x", "heartbeat='x'"),
    ],
)
def test_bad_tls_options(query: str, says: str) -> None:
    with pytest.raises(JMSException, match=says):
        ConnectionFactory(f"tls://h?{query}")


def test_vm_urls_are_unchanged() -> None:
    f = ConnectionFactory("vm://x?prefetch=3&data_dir=/tmp/d")
    assert f._tcp is None and f.prefetch == 3 and f.data_dir == "/tmp/d"
