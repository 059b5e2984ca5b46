"""Frontier memory and dispatch rate: `python -m bench.frontier_bench [--urls N] [--hosts H]`.

Fills the Redis frontier (on a redis-server of its own) with N URLs over H hosts, reports Redis
bytes per queued URL, then leases and releases hosts as fast as it can for `--seconds` and
reports the dispatch rate (leases per second), each dispatch's latency (p50, p99: one round
trip to every shard) and Redis' CPU (INFO cpu) per dispatch and release; then as long again
with Redis' time in scripts (INFO commandstats) read around each dispatch, its time per
dispatch alone.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import redis

from bench.services import own_redis
from crawlapp.adapters.redis.frontier import RedisFrontier
from crawlapp.core.records import Lease, QueuedURL, Release


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
    parser.add_argument("--per-lease", type=int, default=1)
    parser.add_argument("--warm-hosts", type=int, default=0)
    parser.add_argument("--seconds", type=float, default=10.0)
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

    now = time.time()

    def dispatch() -> list[Lease]:
        leases, _ = frontier.dispatch(range(args.shards), now, max_hosts=args.batch,
                                      lease_seconds=60, max_leased=10**9,
                                      per_lease=args.per_lease, warm_hosts=args.warm_hosts,
                                      warm_seconds=60)
        return [lease for shard in leases.values() for lease in shard]

    leased, took = 0, []
    cpu = _redis_cpu(client)
    started = time.perf_counter()
    while time.perf_counter() - started < args.seconds:
        begun = time.perf_counter()
        batch = dispatch()
        took.append(time.perf_counter() - begun)
        frontier.release([Release(lease, now) for lease in batch])
        leased += len(batch)
    elapsed = time.perf_counter() - started
    cpu = _redis_cpu(client) - cpu
    p50, p99 = (statistics.quantiles(took, n=100)[n] * 1000 for n in (49, 98))
    print(f"dispatch: {leased / elapsed:,.0f} leases/s (lease + release, batches of up to "
          f"{args.batch} per shard, {args.shards} shards per round trip); a dispatch "
          f"p50 {p50:.2f} ms, p99 {p99:.2f} ms; Redis CPU {cpu / len(took) * 1e6:,.0f} us "
          f"per dispatch and release ({len(took):,} of them)")

    in_scripts, rounds = 0.0, 0
    started = time.perf_counter()
    while time.perf_counter() - started < args.seconds:
        before = _script_usec(client)
        batch = dispatch()
        in_scripts += _script_usec(client) - before
        frontier.release([Release(lease, now) for lease in batch])
        rounds += 1
    print(f"Redis time in the dispatch scripts: {in_scripts / rounds:,.0f} us per dispatch "
          f"({in_scripts / rounds / args.shards:,.0f} us per shard, {rounds:,} dispatches)")


def _redis_cpu(client: redis.Redis) -> float:
    """CPU seconds Redis used so far (user and system)."""
    info = client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def _script_usec(client: redis.Redis) -> int:
    """Microseconds Redis spent in EVAL so far."""
    return int(client.info("commandstats").get("cmdstat_eval", {}).get("usec", 0))


if __name__ == "__main__":
    main()
