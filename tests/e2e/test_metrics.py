"""End to end: the Prometheus endpoint during and after a crawl agrees with the database."""

from __future__ import annotations

import os
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
import sqlalchemy as sa
from prometheus_client.parser import text_string_to_metric_families

from crawlapp.adapters.db.models import Url
from tests.conftest import _free_port, crawl_env
from tests.e2e.helpers import CRAWLCTL, kill, start_crawl
from testweb.server import start_in_background
from testweb.site import Web, WebSpec

pytestmark = pytest.mark.e2e
SPEC = WebSpec(hosts=4, pages_per_host=8, port=0, crawl_delay_every=0, robots_cases=True,
               trap_cases=True, dedup_cases=True)
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(port: int) -> Samples:
    """Every sample of the endpoint, keyed by (sample name, sorted labels)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def scrape_when_up(port: int, proc: subprocess.Popen[bytes], timeout: float = 60) -> Samples:
    deadline = time.monotonic() + timeout
    while True:
        try:
            return scrape(port)
        except OSError:
            assert proc.poll() is None and time.monotonic() < deadline, "no metrics endpoint"
            time.sleep(0.2)


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def total(samples: Samples, name: str) -> float:
    return sum(v for (n, _), v in samples.items() if n == name)


def test_metrics_agree_with_the_database(tmp_path: Path, redis_url: str, pg_url: str) -> None:
    crawl_port, serve_port = _free_port(), _free_port()
    env = crawl_env(tmp_path, redis_url, DATABASE_URL=pg_url, CRAWL_DEFAULT_DELAY="0.2",
                    CRAWL_METRICS_PORT=str(crawl_port))
    with start_in_background(Web(SPEC), str(tmp_path / "requests.jsonl")) as server:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("\n".join(server.web.seeds()) + "\n")
        crawl = start_crawl(env, seeds, tmp_path / "crawl.out")
        try:
            during = scrape_when_up(crawl_port, crawl)
            while value(during, "crawl_pages_total", status="fetched") == 0:
                assert crawl.poll() is None, (tmp_path / "crawl.out").read_text()
                time.sleep(0.3)
                during = scrape(crawl_port)
        finally:
            assert crawl.wait(300) == 0, (tmp_path / "crawl.out").read_text()

    # The crawl's own endpoint stopped with it; a standalone exporter reads the same Redis.
    exporter = subprocess.Popen([*CRAWLCTL, "metrics", "serve", "--port", str(serve_port)],
                                env={**os.environ, **env},
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        after = scrape_when_up(serve_port, exporter)
    finally:
        kill(exporter.pid)
        exporter.wait()

    for name in ("crawl_pages_total", "crawl_fetch_duration_seconds_count"):
        assert 0 < total(during, name) <= total(after, name)

    engine = sa.create_engine(pg_url.replace("postgresql://", "postgresql+psycopg://"))
    with engine.connect() as conn:
        by_status = dict(conn.execute(sa.select(Url.status, sa.func.count())
                                      .group_by(Url.status)).all())
        stored = conn.scalar(sa.select(sa.func.count()).where(
            Url.storage_key.is_not(None), Url.content_dedup.is_(False)))
        distinct_bodies = conn.scalar(sa.select(sa.func.count(sa.distinct(Url.storage_key))))
        duplicates = conn.scalar(sa.select(sa.func.count()).where(Url.content_dedup.is_(True)))
        body_bytes = conn.scalar(sa.select(sa.func.sum(Url.content_length))) or 0
        robots = set(conn.scalars(sa.text(  # robots.txt, redirect and error answers are
            "SELECT storage_key FROM fetches WHERE robots OR http_status >= 300")))  # stored too
    engine.dispose()
    root = tmp_path / "var" / "blobs"
    blobs = [p for p in root.rglob("*") if p.is_file()
             and p.relative_to(root).as_posix() not in robots]
    assert robots

    for status in ("fetched", "redirected", "failed", "blocked"):
        assert value(after, "crawl_pages_total", status=status) == by_status.get(status, 0), status
    assert value(after, "crawl_robots_blocked_total") == by_status["blocked"] > 0
    assert value(after, "crawl_stored_bodies_total") == stored == distinct_bodies == len(blobs)
    assert value(after, "crawl_stored_bytes_total") == sum(p.stat().st_size for p in blobs)
    assert value(after, "crawl_fetched_bytes_total") >= body_bytes > 0
    content_hits = (value(after, "crawl_dedup_hits_total", kind="exact")
                    + value(after, "crawl_dedup_hits_total", kind="near"))
    assert content_hits == duplicates > 0
    assert value(after, "crawl_dedup_hits_total", kind="url") > 0
    assert total(after, "crawl_links_refused_total") > 0

    requests = value(after, "crawl_fetch_duration_seconds_count")
    assert requests == value(after, "crawl_fetch_duration_seconds_bucket", le="+Inf")
    assert requests == total(after, "crawl_responses_total")
    assert requests == (by_status.get("fetched", 0) + by_status.get("redirected", 0)
                        + by_status.get("failed", 0) + value(after, "crawl_fetch_retries_total"))
    assert 0 < value(after, "crawl_fetch_duration_seconds_sum") < requests * 30

    assert value(after, "crawl_frontier_urls") == 0
    assert value(after, "crawl_frontier_hosts", state="busy") == 0
    assert total(after, "crawl_recrawl_pages") == by_status["fetched"]
    assert total(after, "crawl_recrawl_overdue") == 0
