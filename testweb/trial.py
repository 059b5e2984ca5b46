"""One measured crawl of a generated web by `crawlctl crawl --until-idle` (demo and benchmark)."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from testweb.server import start_in_background
from testweb.serverlog import load, summary
from testweb.site import Web, WebSpec


@dataclass
class Trial:
    web: Web
    returncode: int
    wall: float
    cpu: float
    stats: dict[str, Any]
    verdict: dict[str, int]
    log_path: str

    @property
    def pages(self) -> int:
        return int(self.stats.get("fetched", 0))


def crawlctl(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "crawlapp.cli", *args], env=env, text=True,
                          capture_output=True, check=False)


def trial_env(data_dir: Path, redis_url: str, **extra: str) -> dict[str, str]:
    """A crawler environment on the embedded default, in `data_dir`, on `redis_url`."""
    env = {**os.environ, "CRAWL_DATA_DIR": str(data_dir), "CELERY_BROKER_URL": redis_url,
           "CRAWL_REDIS_URL": redis_url, "CRAWL_ALLOWED_NETWORKS": "127.0.0.0/8"}
    for name in ("DATABASE_URL", "S3_ENDPOINT_URL", "S3_BUCKET"):
        env.pop(name, None)
    env.update(extra)
    return env


def run_trial(spec: WebSpec, env: dict[str, str], *, quiet: bool = False) -> Trial:
    """Serve `spec`, crawl it to idle with a fresh state, and judge it from the server log."""
    import redis

    data_dir = Path(env["CRAWL_DATA_DIR"])
    shutil.rmtree(data_dir, ignore_errors=True)
    data_dir.mkdir(parents=True)
    redis.Redis.from_url(env["CRAWL_REDIS_URL"]).flushdb()
    if env["CELERY_BROKER_URL"] != env["CRAWL_REDIS_URL"]:
        redis.Redis.from_url(env["CELERY_BROKER_URL"]).flushdb()
    log = str(data_dir / "testweb-requests.jsonl")
    with start_in_background(Web(spec), log) as server:
        seeds = data_dir / "seeds.txt"
        seeds.write_text("\n".join(server.web.seeds()) + "\n")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "crawlapp.cli", "crawl", "--seeds",
                               str(seeds), "--until-idle"], env=env, check=False,
                              stdout=subprocess.DEVNULL if quiet else None)
        wall = time.monotonic() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    stats = json.loads(crawlctl(env, "stats", "--json").stdout or "{}")
    default_delay = float(env.get("CRAWL_DEFAULT_DELAY", "1.0"))
    verdict = summary(load(log), server.web, default_delay)
    return Trial(server.web, done.returncode, wall, cpu, stats, verdict, log)
