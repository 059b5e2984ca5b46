"""A crawl whose state is in a Redis Cluster (CRAWL_REDIS_CLUSTER=true; the Celery broker a
plain Redis): polite and complete, and still polite and complete when a master dies
mid-crawl and its replica takes over (CRAWL_REDIS_REPLICA_ACKS=auto, the default: no lease or
release is lost with the master)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from crawlapp.adapters.redis.local import RedisClusterServers
from crawlapp.core.urls import url_hash
from tests.conftest import crawl_env
from tests.e2e.helpers import crawl_web, crawlctl
from testweb.serverlog import Request, fetched_urls, summary
from testweb.site import Web, WebSpec

pytestmark = pytest.mark.e2e
SPEC = WebSpec(hosts=10, pages_per_host=8, port=0, crawl_delay_every=0)
DELAY = 0.5


def cluster_env(tmp_path: Path, redis_url: str, cluster_url: str, **extra: str
                ) -> dict[str, str]:
    return crawl_env(tmp_path, redis_url, CRAWL_REDIS_URL=cluster_url,
                     CRAWL_REDIS_CLUSTER="true", CRAWL_DEFAULT_DELAY=str(DELAY),
                     CRAWL_LEASE_SECONDS="4", CRAWL_SHARDS="8", **extra)


def judge(env: dict[str, str], web: Web, requests: list[Request]) -> dict[str, int]:
    """Every expected page fetched, none missing; the server log's verdict."""
    verdict = summary(requests, web, DELAY)
    assert web.expected_pages(5) - set(fetched_urls(requests)) == set()
    stats = json.loads(crawlctl(env, "stats", "--json").stdout)
    assert stats["fetched"] == len(web.expected_pages(5)) and stats["queued"] == 0, stats
    return verdict


def test_a_crawl_on_a_cluster_is_polite_and_fetches_each_page_once(
        tmp_path: Path, redis_url: str, redis_cluster_url: str) -> None:
    env = cluster_env(tmp_path, redis_url, redis_cluster_url)
    web, requests, _ = crawl_web(tmp_path, env, SPEC)
    verdict = judge(env, web, requests)
    assert verdict["gap_violations"] == 0 and verdict["overlaps"] == 0, verdict
    assert verdict["duplicate_fetches"] == 0, verdict


def test_a_master_killed_mid_crawl_its_replica_takes_over(
        tmp_path: Path, redis_url: str, redis_cluster_url: str,
        redis_cluster: RedisClusterServers) -> None:
    env = cluster_env(tmp_path, redis_url, redis_cluster_url)  # replica acks: auto, the default
    killed: list[float] = []

    def kill_a_master(crawl: subprocess.Popen[bytes]) -> None:
        """Partway: once the crawl has made a dozen requests (its start-up is behind it)."""
        log = tmp_path / "requests.jsonl"
        deadline = time.monotonic() + 60
        while not (log.exists() and len(log.read_bytes().splitlines()) >= 12):
            assert time.monotonic() < deadline and crawl.poll() is None, "the crawl did not start"
            time.sleep(0.2)
        assert crawl.poll() is None, "the crawl ended before a master was killed"
        port, pid = next(iter(redis_cluster.master_pids().items()))
        os.kill(pid, signal.SIGKILL)
        killed.append(time.time())
        redis_cluster.nodes[port].wait()

    started = time.monotonic()
    web, requests, _ = crawl_web(tmp_path, env, SPEC, kill_a_master)
    took = time.monotonic() - started
    verdict = judge(env, web, requests)
    assert any(r.start > killed[0] for r in requests)  # the crawl went on after the kill
    print(f"failover: {len(web.expected_pages(5))} pages expected, "
          f"{len(fetched_urls(requests))} fetched, {verdict}, {took:.1f} s")
    assert verdict["overlaps"] == 0 and verdict["gap_violations"] == 0, verdict
    # At least once: a batch lost while no master served its shard (its fetch could not
    # release its hosts, or its stages outlived its 4 s leases in retries) has its URLs
    # fetched again; never before the kill. Each URL is one page (judge: as many fetched as
    # expected), and its fetch history holds no more fetches than requests were made.
    asked = fetched_urls(requests)
    assert all(sorted(r.start for r in requests if r.url == url)[1] > killed[0]
               for url, n in asked.items() if n > 1), asked
    with sqlite3.connect(tmp_path / "var" / "crawl.db") as db:
        recorded = dict(db.execute("SELECT url_hash, COUNT(*) FROM fetches GROUP BY url_hash"))
    assert {url_hash(url) for url in web.expected_pages(5)} <= recorded.keys()
    assert all(recorded.get(url_hash(url), 0) <= n for url, n in asked.items()), recorded
