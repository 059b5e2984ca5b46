"""Faults during a crawl: a fetch worker killed mid-batch, Redis losing the frontier."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
import redis

from crawlapp.testweb.serverlog import Request, fetched_urls, summary
from crawlapp.testweb.site import Web, WebSpec
from tests.conftest import crawl_env
from tests.e2e.helpers import crawl_web, crawlctl, kill, wait_for_child

pytestmark = pytest.mark.e2e
SPEC = WebSpec(hosts=10, pages_per_host=8, port=0, crawl_delay_every=0)


def _judge(tmp_path: Path, env: dict[str, str], web: Web, requests: list[Request],
           delay: float, bodies: bool = True) -> None:
    verdict = summary(requests, web, delay)
    assert verdict["overlaps"] == 0 and verdict["gap_violations"] == 0, verdict
    assert web.expected_pages(5) - set(fetched_urls(requests)) == set()
    stats = json.loads(crawlctl(env, "stats", "--json").stdout)
    assert stats["fetched"] == len(web.expected_pages(5))
    assert stats["queued"] == 0
    if bodies:  # (a flushed Redis forgets which bodies it claimed: copies may be stored again)
        stored = list((tmp_path / "var" / "blobs").rglob("*.gz"))
        assert len(stored) == stats["stored"]  # no body stored twice


def test_fetch_worker_killed_mid_batch_loses_nothing(tmp_path: Path, redis_url: str) -> None:
    delay = 0.5
    env = crawl_env(tmp_path, redis_url, CRAWL_DEFAULT_DELAY=str(delay),
                    CRAWL_LEASE_SECONDS="4")

    def kill_twice(crawl: subprocess.Popen[bytes]) -> None:
        for _ in range(2):
            time.sleep(3)
            kill(wait_for_child(crawl.pid, "-P threads"))

    web, requests, output = crawl_web(tmp_path, env, SPEC, kill_twice)
    _judge(tmp_path, env, web, requests, delay)
    assert "starting it again" in output


def test_redis_losing_the_frontier_is_rebuilt_from_the_database(tmp_path: Path,
                                                                redis_url: str) -> None:
    delay = 0.5
    env = crawl_env(tmp_path, redis_url, CRAWL_DEFAULT_DELAY=str(delay),
                    CRAWL_LEASE_SECONDS="4")

    def flush(crawl: subprocess.Popen[bytes]) -> None:
        time.sleep(4)
        redis.Redis.from_url(redis_url).flushdb()  # frontier, caches and queued tasks gone

    web, requests, _ = crawl_web(tmp_path, env, SPEC, flush)
    flushed_at = min(r.start for r in requests) + 4
    assert any(r.start > flushed_at for r in requests)  # the crawl went on after the flush
    _judge(tmp_path, env, web, requests, delay, bodies=False)
