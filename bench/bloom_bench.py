"""Tier-1 URL dedup on Redis: `python -m bench.bloom_bench --urls N --fp P --batch B`.

Fills a Bloom filter sized for N URLs with N synthetic URL hashes (check_and_add), then
checks N fresh ones, and prints the measured false-positive rate, memory, round trips per
batch and speed. Runs on a redis-server of its own, stopped at the end.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence

import mmh3
import redis

from bench.services import own_redis
from crawlapp.adapters.redis.urlseen import RedisBloom
from crawlapp.core.bloom import DEFAULT_MAX_SHARD_BITS, BloomShape, expected_fp_rate


def url_hashes(start: int, count: int) -> list[bytes]:
    """Distinct synthetic URL hashes, as the crawler passes them: bytes.fromhex(url_hash(url))."""
    urls = (f"https://host{n % 100_000}.example/page/{n}" for n in range(start, start + count))
    return [mmh3.hash_bytes(url.encode()) for url in urls]


class SendCounter:
    """Counts writes to Redis, i.e. round trips, by wrapping the connection's send."""

    def __init__(self) -> None:
        self.sends = 0
        original = redis.connection.AbstractConnection.send_packed_command

        def counting(conn: redis.connection.AbstractConnection, command: object,
                     check_health: bool = True) -> None:
            self.sends += 1
            original(conn, command, check_health)

        redis.connection.AbstractConnection.send_packed_command = counting  # type: ignore


def run_phase(name: str, op: Callable[[Sequence[bytes]], list[bool]], start: int, total: int,
              batch: int, sends: SendCounter) -> int:
    """Feed `total` items from `start` to `op` in batches; print the speed and return how
    many were reported maybe seen."""
    maybe_seen, busy, batches = 0, 0.0, 0
    sends_before = sends.sends
    for lo in range(start, start + total, batch):
        items = url_hashes(lo, min(batch, start + total - lo))
        began = time.perf_counter()
        maybe_seen += sum(op(items))
        busy += time.perf_counter() - began
        batches += 1
    print(f"{name}: {total:,} URLs in {busy:.1f} s = {total / busy:,.0f} URLs/s, "
          f"{(sends.sends - sends_before) / batches:.2f} round trips per batch of {batch}",
          flush=True)
    return maybe_seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--urls", type=int, default=100_000, help="URLs to add, then to check")
    parser.add_argument("--fp", type=float, default=0.001, help="target false-positive rate")
    parser.add_argument("--batch", type=int, default=500, help="URLs per round trip")
    parser.add_argument("--shard-bits", type=int, default=DEFAULT_MAX_SHARD_BITS,
                        help="most bits in one Redis key")
    args = parser.parse_args()
    n = args.urls
    shape = BloomShape.for_capacity(n, args.fp, max_shard_bits=args.shard_bits)
    with own_redis() as url:
        _measure(redis.Redis.from_url(url), n, shape, args)


def _measure(client: redis.Redis, n: int, shape: BloomShape, args: argparse.Namespace) -> None:
    bloom = RedisBloom(client, "bench", shape)
    sends = SendCounter()
    print(f"{shape}: {shape.bits / n:.2f} bits and {shape.hashes} hashes per URL, "
          f"expected false positives {expected_fp_rate(shape, n):.5f}", flush=True)
    wall = time.perf_counter()
    fill_fp = run_phase("fill (check_and_add)", bloom.check_and_add, 0, n, args.batch, sends)
    check_fp = run_phase("check", bloom.check, n, n, args.batch, sends)
    wall = time.perf_counter() - wall
    server = client.info("memory")["used_memory_human"]
    bitmap = bloom.memory_bytes()
    print(f"false positives on {n:,} fresh URLs: {check_fp:,} = {check_fp / n:.5f} "
          f"(target {args.fp}); while filling: {fill_fp:,} = {fill_fp / n:.5f}")
    print(f"bits per URL: {bitmap * 8 / n:.2f} (bitmaps {bitmap / 2**20:.1f} MiB by "
          f"MEMORY USAGE; {shape.bits / n:.2f} by size); Redis used_memory "
          f"{server} (whole server, every database)")
    print(f"wall time with URL generation: {wall:.1f} s")


if __name__ == "__main__":
    main()
