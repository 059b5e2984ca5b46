"""A crawl's state spreads evenly over a Redis Cluster's masters: after a crawl of 300 hosts,
each master holds keys and memory within 25 % of their mean (content claims and SimHash
bands a key each, the Bloom filter and the other growing structures in parts placed one per
share of the slot space: adapters/redis/parts.py)."""

from __future__ import annotations

import time
from pathlib import Path

from crawlapp.adapters.context import Context
from crawlapp.adapters.db.engine import upgrade
from crawlapp.adapters.redis import keys
from crawlapp.core.settings import load_settings
from crawlapp.ops.seeding import add_seeds
from tests.integration.in_process import Nothing, crawl
from testweb.server import start_in_background
from testweb.serverlog import fetched_urls, load
from testweb.site import Web, WebSpec

SPEC = WebSpec(hosts=300, pages_per_host=3, port=0, crawl_delay_every=0)


def spread(values: list[int]) -> tuple[float, float]:
    """The smallest and the largest of `values` over their mean."""
    mean = sum(values) / len(values)
    return min(values) / mean, max(values) / mean


def test_keys_and_memory_per_master_stay_within_a_quarter_of_the_mean(
        tmp_path: Path, redis_url: str, redis_cluster_url: str) -> None:
    settings = load_settings({"CRAWL_DATA_DIR": str(tmp_path), "CRAWL_REDIS_URL": redis_cluster_url,
                              "CRAWL_REDIS_CLUSTER": "true", "CELERY_BROKER_URL": redis_url,
                              "CRAWL_ALLOWED_NETWORKS": "127.0.0.0/8", "CRAWL_SHARDS": "32",
                              "CRAWL_DEFAULT_DELAY": "0.01", "CRAWL_MAX_DEPTH": "3"})
    assert settings.redis_parts == 32  # the cluster's default
    upgrade(settings)
    ctx = Context(settings)
    with start_in_background(Web(SPEC), str(tmp_path / "requests.jsonl")) as server:
        add_seeds(ctx, server.web.seeds())
        crawl(ctx, Nothing(), time.monotonic() + 300)
    assert server.web.expected_pages(3) - set(fetched_urls(load(str(tmp_path / "requests.jsonl")))) \
        == set()

    masters = [ctx.redis.get_redis_connection(node) for node in ctx.redis.get_primaries()]
    assert len(masters) == 3
    key_counts = [int(m.dbsize()) for m in masters]
    memory = [int(m.info("memory")["used_memory_dataset"]) for m in masters]
    claims = [sum(1 for _ in m.scan_iter(match=keys.DEDUP_BUCKET.of("crawl", bucket="*"),
                                         count=1000)) for m in masters]
    print(f"keys per master {key_counts}, dataset bytes {memory}, dedup buckets {claims}")
    assert min(claims) > 0  # the dedup index is on every master, not under one tag
    for low, high in (spread(key_counts), spread(memory)):
        assert 0.75 <= low and high <= 1.25, (key_counts, memory)
