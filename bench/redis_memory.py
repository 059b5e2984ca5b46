"""What a crawl's state costs in Redis: MEMORY USAGE of every key of the registry
(adapters/redis/keys.py), summed by key template and by family, and the bytes per known URL
beyond the Bloom filter (which is sized once by CRAWL_EXPECTED_URLS, whatever the crawl)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import redis

from crawlapp.adapters.redis import keys

PREFIX = "crawl"
PIPELINE = 1000  # keys asked about per round trip
Sizes = dict[str, tuple[int, int, int]]  # template -> (keys, items, bytes)

FAMILIES: dict[str, tuple[keys.Key, ...]] = {
    "frontier": (*keys.FRONTIER, keys.ALIVE),
    "batches": (keys.BATCHES, keys.BATCH_URLS, keys.BATCH_RUN),
    "dedup": (keys.DEDUP_BUCKET, keys.NEAR_TABLE, keys.DEDUP_LOCK, keys.DEDUP_ALIVE, keys.CANONICAL),
    "recrawl": tuple(k for k in keys.ALL if k.template.startswith("P:recrawl")),
    "budgets": (keys.HOSTCOUNT, keys.PATTERNS),
    "fetch state": (keys.ROBOTS, keys.DNS, keys.DNS_LOCK, keys.HOPS, keys.VALIDATORS,
                    keys.RETRIES, keys.SLOT, keys.THROTTLE),
}
_FAMILY_OF = {k.template: family for family, members in FAMILIES.items() for k in members}
_COUNT = {"zset": "ZCARD", "hash": "HLEN", "set": "SCARD"}


def family(template: str) -> str:
    """The family of a key template: one of FAMILIES, "bloom" or "other"."""
    return "bloom" if template == keys.BLOOM.template else _FAMILY_OF.get(template, "other")


def snapshot(client: redis.Redis) -> Sizes:
    """Keys, items (members of a set, sorted set or hash; one per string) and bytes (MEMORY
    USAGE, SAMPLES 0) of each key template found in `client`, PIPELINE keys a round trip."""
    found: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    names: list[tuple[bytes, keys.Key]] = []

    def ask() -> None:
        pipe = client.pipeline(transaction=False)
        for name, key in names:
            pipe.memory_usage(name, samples=0)
            if key.type in _COUNT:
                pipe.execute_command(_COUNT[key.type], name)
        replies = iter(pipe.execute())
        for _, key in names:
            entry = found[key.template]
            entry[0] += 1
            entry[2] += int(next(replies) or 0)
            entry[1] += int(next(replies) or 0) if key.type in _COUNT else 1
        names.clear()

    for name in client.scan_iter(count=PIPELINE):
        key = keys.key_of(PREFIX, name.decode())
        if key is not None:  # not the broker's own keys (Celery on the same Redis)
            names.append((name, key))
        if len(names) == PIPELINE:
            ask()
    ask()
    return {template: (k, i, b) for template, (k, i, b) in found.items()}


def per_url(sizes: Sizes, known_urls: int) -> dict[str, Any]:
    """Bytes beyond the Bloom filter, in all and per known URL, and per known URL by family."""
    by_family: dict[str, int] = defaultdict(int)
    for template, (_, _, size) in sizes.items():
        by_family[family(template)] += size
    beyond = sum(size for name, size in by_family.items() if name != "bloom")
    urls = max(known_urls, 1)
    return {"known_urls": known_urls, "bytes_beyond_bloom": beyond,
            "bytes_per_url": round(beyond / urls, 1),
            "bytes_per_url_by_family": {name: round(size / urls, 1)
                                        for name, size in sorted(by_family.items())
                                        if name != "bloom"},
            "bloom_bytes": by_family.get("bloom", 0)}
