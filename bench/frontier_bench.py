"""Frontier memory and dispatch rate: `python -m bench.frontier_bench [--urls N] [--hosts H]`.

Fills the Redis frontier (on a redis-server of its own) with N URLs over H hosts, reports Redis
bytes per queued URL, then leases and releases hosts as fast as it can and reports the
dispatch rate (leases per second).
"""

from __future__ import annotations

import argparse
import random
import time

import redis

from bench.services import own_redis
from crawlapp.adapters.redis.frontier import RedisFrontier
from crawlapp.core.records import QueuedURL, Release


def synthetic_urls(hosts: int, per_host: int, rng: random.Random) -> list[QueuedURL]:
    words = ["news", "article", "products", "blog", "category", "page", "item", "docs"]
    urls = []
    for h in range(hosts):
        host = f"www.site{h}-{rng.choice(words)}.example.com"
        for i in range(per_host):
            path = f"/{rng.choice(words)}/{rng.choice(words)}-{i}-{rng.randrange(10**6)}.html"
            urls.append(QueuedURL(f"https://{host}{path}", rng.randrange(6), rng.random()))
    return urls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--urls", type=int, default=1_000_000)
    parser.add_argument("--hosts", type=int, default=10_000)
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--batch", type=int, default=50)
    args = parser.parse_args()
    with own_redis() as url:
        _measure(redis.Redis.from_url(url), args)


def _measure(client: redis.Redis, args: argparse.Namespace) -> None:
    frontier = RedisFrontier(client, "bench", args.shards)
    urls = synthetic_urls(args.hosts, args.urls // args.hosts, random.Random(1))
    mean_len = sum(len(u.url) for u in urls) / len(urls)
    before = int(client.info("memory")["used_memory"])
    started = time.perf_counter()
    for i in range(0, len(urls), 5000):
        frontier.add(urls[i:i + 5000], time.time())
    fill = time.perf_counter() - started
    used = int(client.info("memory")["used_memory"]) - before
    print(f"queued {len(urls):,} URLs (mean length {mean_len:.0f} chars) over {args.hosts:,} "
          f"hosts in {fill:.1f} s ({len(urls) / fill:,.0f} URLs/s)")
    print(f"Redis memory: {used / 2**20:.1f} MiB = {used / len(urls):.1f} bytes per queued URL")

    leased = 0
    started = time.perf_counter()
    now = time.time()
    while time.perf_counter() - started < 10:
        leases, _ = frontier.dispatch(range(args.shards), now, max_hosts=args.batch,
                                      lease_seconds=60, max_leased=10**9)
        batch = [lease for shard in leases.values() for lease in shard]
        frontier.release([Release(lease, now) for lease in batch])
        leased += len(batch)
    elapsed = time.perf_counter() - started
    print(f"dispatch: {leased / elapsed:,.0f} leases/s (lease + release, batches of up to "
          f"{args.batch} per shard, {args.shards} shards per round trip)")


if __name__ == "__main__":
    main()
