"""The Redis key registry: every key documented, spelled from one template, grouped by
hash tag so that each script touches one cluster slot."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from redis.crc import REDIS_CLUSTER_HASH_SLOTS, key_slot

from crawlapp.adapters.redis import dedup_index, keys, recrawl_sets, urlseen
from crawlapp.adapters.redis.frontier import scripts
from crawlapp.adapters.redis.lua import Lua
from crawlapp.adapters.redis.parts import Parts

SIZING = Path(__file__).parents[2] / "docs" / "sizing.md"
PARTS = {"shard": 3, "host": "a.com:8080", "batch": "ab12.render", "part": "{7.3}", "bucket": "1f",
         "table": 7, "url_hash": "0" * 32, "origin": "https://a.com", "tier": "daily",
         "reason": "pattern_cap", "stage": "fetch", "key": "ip:127.0.0.1", "run": "9c0f"}


def build(key: keys.Key, prefix: str = "crawl") -> str:
    return key.of(prefix, **{p: PARTS[p] for p in re.findall(r"<(\w+)>", key.template)})


def hash_tag(name: str) -> str:
    """What Redis Cluster hashes: the part between the first { and the next }, if any."""
    start = name.find("{")
    end = name.find("}", start + 1)
    return name[start + 1:end] if start >= 0 and end > start + 1 else name


def test_every_key_is_listed_in_the_sizing_document() -> None:
    text = SIZING.read_text(encoding="utf-8")
    missing = [k.template for k in keys.ALL if f"| `{k.template}` | {k.type} |" not in text]
    assert missing == [], f"add these keys to the table in {SIZING.name}: {missing}"


def test_templates_are_unique_under_the_prefix_and_described() -> None:
    assert len({k.template for k in keys.ALL}) == len(keys.ALL)
    for k in keys.ALL:
        assert k.template.startswith(("P:", "{P:")), k
        assert k.type in {"string", "hash", "set", "zset"} and k.about, k


@pytest.mark.parametrize("key", keys.ALL, ids=lambda k: k.template)
def test_each_key_built_is_recognised_as_its_own_template(key: keys.Key) -> None:
    for prefix in ("crawl", "other.crawl-2"):
        name = build(key, prefix)
        assert keys.key_of(prefix, name) is key, name
        assert keys.key_of("x" + prefix, name) is None


def test_keys_read_together_share_a_hash_tag() -> None:
    shard = {hash_tag(build(k)) for k in keys.FRONTIER}
    assert shard == {"crawl:f:3"}
    assert {hash_tag(build(k)) for k in (keys.RECRAWL_TIER, keys.RECRAWL_CLAIMED)} == {"7.3"}
    assert {hash_tag(build(k)) for k in (keys.BATCHES, keys.BATCH_URLS)} == {"crawl:batches"}


def test_every_lua_script_declares_its_keys() -> None:
    found = [v for module in (scripts, dedup_index, recrawl_sets, urlseen)
             for v in vars(module).values() if isinstance(v, Lua)]
    assert len(found) == 19
    for script in found:
        assert "KEYS[" in script.source
        assert "ARGV[1] .." not in script.source and "p .. ':" not in script.source


@pytest.mark.parametrize("count", [1, 3, 32, 64])
def test_parts_fall_one_per_share_of_the_slot_space(count: int) -> None:
    cut = Parts(count)
    slots = [key_slot(f"crawl:bloom:{tag}".encode()) for tag in cut.tags]
    assert [slot * count // REDIS_CLUSTER_HASH_SLOTS for slot in slots] == list(range(count))
    on_three = Counter(slot * 3 // REDIS_CLUSTER_HASH_SLOTS for slot in slots)  # 3 equal masters
    assert max(on_three.values()) - min(on_three.values()) <= 1
    assert cut.of("http://a.com/") == Parts(count).of("http://a.com/") < count
    assert hash_tag(keys.RECRAWL_TIER.of("crawl", part=cut.tags[-1], tier="daily")) \
        == hash_tag(keys.RECRAWL_CLAIMED.of("crawl", part=cut.tags[-1]))


def test_a_structure_has_at_least_one_part() -> None:
    with pytest.raises(ValueError):
        Parts(0)
