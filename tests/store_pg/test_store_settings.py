"""How a store is named: ``ternmq serve --store`` and the config key ``store``,
``vm://NAME?store=``, and ``describe_store`` (what logs and messages may show).

No database is needed here: these are the settings' paths up to ``open_store``.
"""

from __future__ import annotations

import pytest

from ternmq.client import ConnectionFactory
from ternmq.errors import JMSException
from ternmq.server.app import build_parser
from ternmq.server.config import ServerConfig, parse_config
from ternmq.store import describe_store

PG = "postgresql://ternmq:s3cret@db.example:5433/broker"


def test_the_store_key_overrides_data_dir_and_the_flags_override_the_file() -> None:
    """Config ``store`` wins over ``data_dir``; ``--store`` over both; ``--data-dir`` alone
    over a file's ``store`` (the command line names the store last)."""
    assert ServerConfig().store_target == "./data"
    cfg = parse_config({"data_dir": "/var/lib/ternmq", "store": PG})
    assert (cfg.store, cfg.store_target) == (PG, PG)
    assert cfg.with_overrides(store="sqlite:/tmp/x").store_target == "sqlite:/tmp/x"
    assert cfg.with_overrides(data_dir="/srv/d").store_target == "/srv/d"
    assert parse_config({"data_dir": "/srv/e"}).store_target == "/srv/e"
    with pytest.raises(ValueError, match="store"):
        parse_config({"store": 5})


def test_ternmq_serve_takes_store() -> None:
    """``ternmq serve --store URL`` parses next to ``--data-dir``."""
    args = build_parser().parse_args(["--store", PG, "--data-dir", "/d"])
    assert (args.store, args.data_dir) == (PG, "/d")


def test_describe_store_never_shows_credentials() -> None:
    """A PostgreSQL URL loses user and password; other URLs their credentials; paths and
    None stay readable."""
    assert describe_store(PG) == "postgresql://db.example:5433/broker"
    assert describe_store("postgres://u:p@h/db") == "postgresql://h:5432/db"
    assert describe_store("mongodb://u:p@h:1/db") == "mongodb://h:1/db"
    assert describe_store("/var/lib/ternmq") == "/var/lib/ternmq"
    assert describe_store(None) == "memory"


def test_vm_store_option_and_its_misuse() -> None:
    """``vm://NAME?store=URL`` names the embedded broker's store; with ``data_dir`` too it
    is refused; on tcp:// it is refused with a hint that a server has ``--store``."""
    assert ConnectionFactory(f"vm://x?store={PG}").data_dir == PG
    with pytest.raises(JMSException, match="not both"):
        ConnectionFactory(f"vm://x?store={PG}&data_dir=/d")
    with pytest.raises(JMSException, match="a server has its own --store"):
        ConnectionFactory(f"tcp://127.0.0.1:61616?store={PG}")
