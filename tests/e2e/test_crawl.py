"""End to end: `crawlctl crawl` runs real Celery workers against the generated test web.

Every verdict comes from the test web's own request log, never from the crawler's reports.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from crawlapp.adapters.redis import keys
from crawlapp.adapters.redis.client import connect
from crawlapp.core.settings import load_settings
from crawlapp.core.urls import host_of, shard_of
from crawlapp.ops.warc import read_records
from tests.conftest import crawl_env
from tests.e2e.helpers import start_crawl
from testweb.server import start_in_background
from testweb.serverlog import fetched_urls, load, summary
from testweb.site import Web, WebSpec

pytestmark = pytest.mark.e2e
CRAWLCTL = [sys.executable, "-m", "crawlapp.cli"]
MAX_DEPTH = 5


def crawlctl(env: dict[str, str], *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CRAWLCTL, *args], env={**os.environ, **env}, text=True,
                          capture_output=True, timeout=timeout, check=False)


def crawl_and_judge(tmp_path: Path, env: dict[str, str], spec: WebSpec, delay: float) -> Web:
    """Crawl the web to idle, then check politeness and coverage from the server's log."""
    log = str(tmp_path / "requests.jsonl")
    with start_in_background(Web(spec), log) as server:
        web = server.web
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("\n".join(web.seeds()) + "\n")
        done = crawlctl(env, "crawl", "--seeds", str(seeds), "--until-idle", "--workers", "2")
        assert done.returncode == 0, done.stderr + done.stdout
    requests = load(log)
    verdict = summary(requests, web, delay)
    assert verdict["gap_violations"] == 0, verdict
    assert verdict["overlaps"] == 0, verdict
    assert verdict["robots_first_violations"] == 0, verdict
    assert verdict["disallowed_requests"] == 0, verdict
    assert verdict["duplicate_fetches"] == 0, verdict
    fetched = set(fetched_urls(requests))
    expected = web.expected_pages(MAX_DEPTH)
    assert expected - fetched == set()
    assert all(r.ua.startswith("crawlapp/") for r in requests)
    return web


def test_embedded_default_crawls_every_page_politely(tmp_path: Path, redis_url: str) -> None:
    delay = 0.5
    env = crawl_env(tmp_path, redis_url, CRAWL_DEFAULT_DELAY=str(delay))
    spec = WebSpec(hosts=6, pages_per_host=8, port=0, crawl_delay_every=3)
    web = crawl_and_judge(tmp_path, env, spec, delay)

    stats = json.loads(crawlctl(env, "stats", "--json").stdout)
    assert stats["fetched"] == len(web.expected_pages(MAX_DEPTH))
    assert stats["queued"] == 0 and stats["frontier"]["urls_queued"] == 0
    assert stats["blocked_robots"] == spec.hosts  # each home page links to /private/
    page_url = sorted(web.expected_pages(MAX_DEPTH))[0]
    shown = crawlctl(env, "page", "show", page_url, "--json", "--body")
    page = json.loads(shown.stdout)
    assert page["status"] == "fetched" and page["http_status"] == 200
    assert page["storage_key"].startswith("bodies/") and "<html" in page["body"].lower()
    assert (tmp_path / "var" / "blobs" / page["storage_key"]).exists()

    warc = tmp_path / "crawl.warc.gz"
    exported = crawlctl(env, "export", "warc", "--out", str(warc))
    assert exported.returncode == 0, exported.stderr
    records = {r["url"]: r for r in read_records(warc) if not r["url"].endswith("/robots.txt")}
    pages = {url for url, r in records.items() if r["status"] == 200}
    assert pages == web.expected_pages(MAX_DEPTH)
    assert {r["status"] for url, r in records.items() if url not in pages} <= {404}  # lost links
    assert records[page_url]["status"] == 200
    assert records[page_url]["body"].decode() == page["body"]
    assert records[page_url]["headers"]["ETag"] == page["etag"]


def test_a_crawl_with_another_number_of_shards_lays_the_frontier_out_anew(
        tmp_path: Path, redis_url: str) -> None:
    """CRAWL_SHARDS changed between two runs (a new default, a bigger fleet): every URL queued
    under 8 shards, laid out in 3 by `crawlctl frontier reshard`, is crawled by a crawl of 4
    (which lays it out anew by itself), none left in a shard no dispatcher reads; a command
    that would queue URLs under yet another number is refused with the reason."""
    delay = 0.2
    env = crawl_env(tmp_path, redis_url, CRAWL_DEFAULT_DELAY=str(delay), CRAWL_SHARDS="8")
    spec = WebSpec(hosts=12, pages_per_host=4, port=0)
    log = str(tmp_path / "requests.jsonl")
    with start_in_background(Web(spec), log) as server:
        web = server.web
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("\n".join(web.seeds()) + "\n")
        assert any(shard_of(host_of(url), 8) >= 4 for url in web.seeds())
        added = crawlctl(env, "seed", "add", "--file", str(seeds))
        assert added.returncode == 0, added.stderr
        refused = crawlctl({**env, "CRAWL_SHARDS": "2"}, "seed", "add", "--file", str(seeds))
        assert refused.returncode == 2
        assert "laid out in 8 shards and CRAWL_SHARDS is 2" in refused.stderr
        resharded = crawlctl({**env, "CRAWL_SHARDS": "3"}, "frontier", "reshard")
        assert resharded.returncode == 0, resharded.stderr
        assert resharded.stdout.startswith("laid out in 3 shards: ")
        done = crawlctl({**env, "CRAWL_SHARDS": "4"}, "crawl", "--until-idle", "--workers", "2")
        assert done.returncode == 0, done.stderr + done.stdout
    verdict = summary(load(log), web, delay)
    assert verdict["gap_violations"] == verdict["overlaps"] == verdict["duplicate_fetches"] == 0
    assert web.expected_pages(MAX_DEPTH) - set(fetched_urls(load(log))) == set()


def test_a_crawl_whose_frontier_is_laid_out_anew_by_another_process_stops_saying_why(
        tmp_path: Path, redis_url: str) -> None:
    """Another process lays the frontier out in another number of shards mid-crawl: the
    crawl's dispatcher stops, and so does the crawl, with the reason (never a crawl left
    waiting on a dispatcher that is gone)."""
    env = crawl_env(tmp_path, redis_url, CRAWL_DEFAULT_DELAY="0.5")
    out = tmp_path / "crawl.out"
    with start_in_background(Web(WebSpec(hosts=3, pages_per_host=40, port=0)),
                             str(tmp_path / "requests.jsonl")) as server:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("\n".join(server.web.seeds()) + "\n")
        requests = tmp_path / "requests.jsonl"
        crawl = start_crawl(env, seeds, out)
        deadline = time.monotonic() + 60  # the workers are up (they check the layout first)
        while (not requests.exists() or requests.stat().st_size == 0) and time.monotonic() < deadline:
            time.sleep(0.2)
        alive = keys.ALIVE.of(load_settings(env).redis_prefix)
        connect(redis_url, False).set(alive, f"8 {time.time()}")
        assert crawl.wait(60) == 2, out.read_text()
    assert "laid out in 8 shards and CRAWL_SHARDS is 4" in out.read_text()


def test_postgres_and_s3_backends(tmp_path: Path, redis_url: str, pg_url: str,
                                  s3_endpoint: str) -> None:
    delay = 0.3
    env = crawl_env(tmp_path, redis_url, CRAWL_DEFAULT_DELAY=str(delay), DATABASE_URL=pg_url,
                    S3_ENDPOINT_URL=s3_endpoint, S3_BUCKET="e2e-bodies")
    spec = WebSpec(hosts=4, pages_per_host=6, port=0, crawl_delay_every=0)
    web = crawl_and_judge(tmp_path, env, spec, delay)
    page_url = sorted(web.expected_pages(MAX_DEPTH))[-1]
    page = json.loads(crawlctl(env, "page", "show", page_url, "--json", "--body").stdout)
    assert page["status"] == "fetched" and "<html" in page["body"].lower()


def test_bad_input_is_refused_with_exit_2_and_nothing_written(tmp_path: Path,
                                                             redis_url: str) -> None:
    env = crawl_env(tmp_path, redis_url)
    missing = crawlctl(env, "crawl", "--seeds", str(tmp_path / "nope.txt"), "--until-idle")
    assert missing.returncode == 2 and "cannot read" in missing.stderr
    bad_url = crawlctl(env, "seed", "add", "mailto:someone@example.com")
    assert bad_url.returncode == 2 and "scheme_mailto" in bad_url.stderr
    bad_setting = crawlctl({**env, "CRAWL_MAX_DEPTH": "deep"}, "stats")
    assert bad_setting.returncode == 2 and "CRAWL_MAX_DEPTH" in bad_setting.stderr
    assert len(bad_setting.stderr.strip().splitlines()) <= 3
    assert not (tmp_path / "var" / "crawl.db").exists()
