"""Faults during a crawl: a fetch worker killed mid-batch, Redis losing the frontier."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import redis

from crawlapp.testweb.server import start_in_background
from crawlapp.testweb.serverlog import fetched_urls, load, summary
from crawlapp.testweb.site import Web, WebSpec
from tests.conftest import crawl_env
from tests.e2e.helpers import crawlctl, kill, start_crawl, wait_for_child

pytestmark = pytest.mark.e2e
SPEC = WebSpec(hosts=10, pages_per_host=8, port=0, crawl_delay_every=0)


def _judge(tmp_path: Path, env: dict[str, str], web: Web, log: str, delay: float) -> None:
    requests = load(log)
    verdict = summary(requests, web, delay)
    assert verdict["overlaps"] == 0 and verdict["gap_violations"] == 0, verdict
    assert web.expected_pages(5) - set(fetched_urls(requests)) == set()
    stats = json.loads(crawlctl(env, "stats", "--json").stdout)
    assert stats["fetched"] == len(web.expected_pages(5))
    assert stats["queued"] == 0
    bodies = list((tmp_path / "var" / "blobs").rglob("*.gz"))
    assert len(bodies) == stats["stored"]  # no body stored twice


def test_fetch_worker_killed_mid_batch_loses_nothing(tmp_path: Path, redis_url: str) -> None:
    delay = 0.5
    env = crawl_env(tmp_path, redis_url, CRAWL_DEFAULT_DELAY=str(delay),
                    CRAWL_LEASE_SECONDS="4")
    log = str(tmp_path / "requests.jsonl")
    with start_in_background(Web(SPEC), log) as server:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("\n".join(server.web.seeds()))
        crawl = start_crawl(env, seeds, tmp_path / "crawl.out")
        for _ in range(2):
            time.sleep(3)
            kill(wait_for_child(crawl.pid, "-P threads"))
        assert crawl.wait(240) == 0, (tmp_path / "crawl.out").read_text()
    _judge(tmp_path, env, server.web, log, delay)
    assert "starting it again" in (tmp_path / "crawl.out").read_text()


def test_redis_losing_the_frontier_is_rebuilt_from_the_database(tmp_path: Path,
                                                                redis_url: str) -> None:
    delay = 0.5
    env = crawl_env(tmp_path, redis_url, CRAWL_DEFAULT_DELAY=str(delay),
                    CRAWL_LEASE_SECONDS="4")
    log = str(tmp_path / "requests.jsonl")
    with start_in_background(Web(SPEC), log) as server:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("\n".join(server.web.seeds()))
        crawl = start_crawl(env, seeds, tmp_path / "crawl.out")
        time.sleep(4)
        redis.Redis.from_url(redis_url).flushdb()  # frontier, caches and queued tasks gone
        assert crawl.wait(240) == 0, (tmp_path / "crawl.out").read_text()
    requests = load(log)
    flushed_at = min(r.start for r in requests) + 4
    assert any(r.start > flushed_at for r in requests)  # the crawl went on after the flush
    assert server.web.expected_pages(5) - set(fetched_urls(requests)) == set()
    verdict = summary(requests, server.web, delay)
    assert verdict["overlaps"] == 0 and verdict["gap_violations"] == 0, verdict
    stats = json.loads(crawlctl(env, "stats", "--json").stdout)
    assert stats["queued"] == 0 and stats["fetched"] == len(server.web.expected_pages(5))
