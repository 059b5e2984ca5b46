"""`make bench-redis-sizing`: bytes per item of every Redis structure, from MEMORY USAGE on a
filled instance (a benchmark, not a test).

It crawls a generated web (BENCH_SIZES' first HOSTSxPAGES, 200x20 by default, with the
benchmark's case hosts) with a Redis of its own, takes a snapshot of every key while the
frontier is at its fullest (the crawl is sampled every few seconds, less often as sampling
grows slower) and once more at the end (the structures that grow with the crawl), and
prints, per key template of the registry: keys, items (members of a set, sorted set or hash;
one per string), bytes (MEMORY USAGE, SAMPLES 0) and bytes per item; then the bytes per
known URL beyond the Bloom filter, by family (bench/redis_memory.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from tempfile import TemporaryDirectory

import redis

from bench import services
from bench.__main__ import CASES, parse_sizes
from bench.redis_memory import Sizes, per_url, snapshot
from crawlapp.adapters.redis import keys
from testweb.server import start_in_background
from testweb.site import Web, WebSpec
from testweb.trial import crawlctl, trial_env


def _table(title: str, sizes: Sizes) -> str:
    lines = [title, f"{'key':44} {'keys':>8} {'items':>9} {'bytes':>11} {'B/item':>8}"]
    for template, (count, items, size) in sorted(sizes.items(), key=lambda kv: -kv[1][2]):
        lines.append(f"{template:44} {count:8} {items:9} {size:11} {size / max(items, 1):8.0f}")
    return "\n".join(lines)


def main() -> int:
    hosts, pages = parse_sizes(os.environ.get("BENCH_SIZES", "200x20"))[0]
    with TemporaryDirectory(prefix="crawl-sizing-") as tmp, services.own_redis() as url:
        env = trial_env(Path(tmp) / "var", url, CRAWL_DEFAULT_DELAY="1")
        client = redis.Redis.from_url(url)
        fullest: Sizes = {}
        with start_in_background(Web(WebSpec(hosts=hosts, pages_per_host=pages, port=0, **CASES)),
                                 str(Path(tmp) / "requests.jsonl")) as server:
            seeds = Path(tmp) / "seeds.txt"
            seeds.write_text("\n".join(server.web.seeds()) + "\n")
            crawl = subprocess.Popen([sys.executable, "-m", "crawlapp.cli", "crawl", "--seeds",
                                      str(seeds), "--until-idle"], env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            pause = 5.0
            while crawl.poll() is None:
                time.sleep(pause)
                took = time.monotonic()
                sizes = snapshot(client)
                pause = max(5.0, 9 * (time.monotonic() - took))  # sampling takes <10 % of a core
                queued = sizes.get(keys.QUEUE.template, (0, 0, 0))[1]
                if queued >= fullest.get(keys.QUEUE.template, (0, 0, 0))[1]:
                    fullest = sizes
            end = snapshot(client)
        print(f"web {hosts}x{pages}; Redis {url}")
        print(_table("at the fullest frontier", fullest))
        print()
        print(_table("at the end of the crawl", end))
        known = int(json.loads(crawlctl(env, "stats", "--json").stdout or "{}").get("discovered", 0))
        cost = per_url(end, known)
        print(f"\n{known} known URLs: {cost['bytes_per_url']} B per known URL beyond the Bloom "
              f"filter ({cost['bytes_beyond_bloom']} B); by family: "
              + ", ".join(f"{k} {v}" for k, v in cost["bytes_per_url_by_family"].items()))
        return crawl.returncode


if __name__ == "__main__":
    raise SystemExit(main())
