"""``failover:`` URLs (CONN-30): parsing, options, errors that name what to fix, the reconnect
schedule, and the initial connection walking the broker list."""

from __future__ import annotations

import socket

import pytest

from ternmq import ConnectionFactory, JMSException
from ternmq.client._failover import is_failover_url, parse_failover_url

CLIENT = ("prefetch", "client_id", "block_on_non_persistent_send")


def test_conn_30_list_form_with_member_and_failover_options() -> None:
    fo, client = parse_failover_url(
        "failover:(tcp://a:1?heartbeat=5,tls://b?verify=false)"
        "?max_reconnect_attempts=7&initial_reconnect_delay=0.5&max_reconnect_delay=3"
        "&timeout=2&randomize=true&prefetch=9",
        CLIENT,
    )
    assert [url for url, _ in fo.targets] == ["tcp://a:1?heartbeat=5", "tls://b?verify=false"]
    (_, a), (_, b) = fo.targets
    assert (a.host, a.port, a.heartbeat, a.ssl_context) == ("a", 1, 5.0, None)
    assert (b.host, b.port) == ("b", 61617) and b.ssl_context is not None
    assert (fo.max_attempts, fo.initial_delay, fo.max_delay, fo.timeout, fo.randomize) == (
        7,
        0.5,
        3.0,
        2.0,
        True,
    )
    assert client == {"prefetch": "9"}
    assert fo.describe() == "tcp://a:1?heartbeat=5, tls://b?verify=false"


def test_conn_30_single_broker_form_and_defaults() -> None:
    assert is_failover_url("FAILOVER:tcp://x:2") and not is_failover_url("tcp://x:2")
    fo, client = parse_failover_url("failover:tcp://x:2", CLIENT)
    assert [u for u, _ in fo.targets] == ["tcp://x:2"] and client == {}
    assert (fo.max_attempts, fo.initial_delay, fo.max_delay, fo.timeout, fo.randomize) == (
        -1,
        0.1,
        5.0,
        None,
        False,
    )


def test_conn_30_reconnect_schedule_doubles_up_to_the_maximum() -> None:
    fo, _ = parse_failover_url(
        "failover:(tcp://x:2)?initial_reconnect_delay=0.1&max_reconnect_delay=0.5"
        "&max_reconnect_attempts=6",
        CLIENT,
    )
    assert list(fo.delays()) == [0.0, 0.1, 0.2, 0.4, 0.5, 0.5]
    never, _ = parse_failover_url("failover:(tcp://x:2)?max_reconnect_attempts=0", CLIENT)
    assert list(never.delays()) == []
    forever, _ = parse_failover_url("failover:(tcp://x:2)", CLIENT)
    schedule = forever.delays()
    assert [next(schedule) for _ in range(100)][-1] == 5.0


@pytest.mark.parametrize(
    ("url", "text"),
    [
        ("failover:()", "names no broker"),
        ("failover:(tcp://a:1", "closing parenthesis"),
        ("failover:(tcp://a:1)x", "only .options may follow"),
        ("failover:(vm://local)", "tcp:// and tls://"),
        ("failover:(tcp://a:1)?heartbeat=3", "go inside"),
        ("failover:(tcp://a:1)?max_reconnect_attempts=many", "max_reconnect_attempts"),
        ("failover:(tcp://a:1)?initial_reconnect_delay=-1", "initial_reconnect_delay"),
        ("failover:(tcp://a:1)?randomize=perhaps", "randomize"),
        ("failover:(tcp://a:1?prefetch=3)", "unknown option 'prefetch'"),
    ],
)
def test_conn_30_bad_failover_urls_say_what_to_fix(url: str, text: str) -> None:
    with pytest.raises(JMSException, match=text):
        ConnectionFactory(url)


def test_conn_30_first_connection_tries_each_broker_and_names_them_all() -> None:
    dead = []
    for _ in range(2):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        dead.append(s.getsockname()[1])
        s.close()  # nothing listens there now
    url = f"failover:(tcp://127.0.0.1:{dead[0]},tcp://127.0.0.1:{dead[1]})"
    with pytest.raises(JMSException) as info:
        ConnectionFactory(url).create_connection()
    assert str(dead[0]) in str(info.value) and str(dead[1]) in str(info.value)
