"""Server config of duplicate detection (PSF-09): ``id_cache_size`` is a destination-policy
key of ``[broker]`` (the default) and of ``[destinations."..."]``; a negative value is refused
with a message naming the table and the key; the example config sets it."""

from __future__ import annotations

import pathlib

import pytest

from ternmq.server import load_config
from ternmq.server.config import parse_config

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "docs" / "ternmq.example.toml"


def test_psf_09_id_cache_size_per_destination_and_default() -> None:
    """PSF-09: the default policy's cache size comes from ``[broker]``, a destination's from its
    own table (other keys inherited); without either it is 20,000."""
    cfg = parse_config(
        {
            "broker": {"id_cache_size": 500},
            "destinations": {"queue://orders": {"id_cache_size": 0}, "topic://t": {}},
        }
    ).broker
    assert cfg.default_policy.id_cache_size == 500
    assert cfg.policy_for("queue://orders").id_cache_size == 0
    assert cfg.policy_for("topic://t").id_cache_size == 500
    assert parse_config({}).broker.policy_for("queue://x").id_cache_size == 20_000
    assert load_config(EXAMPLE).broker.policy_for("queue://orders").id_cache_size == 100_000


@pytest.mark.parametrize(
    "data, where",
    [
        ({"broker": {"id_cache_size": -1}}, r"\[broker\]"),
        ({"destinations": {"queue://q": {"id_cache_size": -5}}}, 'destinations."queue://q"'),
    ],
)
def test_psf_09_negative_id_cache_size_is_refused(data: dict[str, object], where: str) -> None:
    """PSF-09: a negative ``id_cache_size`` is a config error naming where and what is allowed."""
    with pytest.raises(ValueError, match=where) as info:
        parse_config(data)
    assert "id_cache_size must be 0 (duplicate detection off) or more" in str(info.value)
