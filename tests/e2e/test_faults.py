"""Faults during a crawl: a fetch worker killed mid-batch, Redis losing the frontier, Redis (the
broker and the crawl's state), Postgres and the S3 server refusing connections for 10 s."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import time
from pathlib import Path

import boto3
import pytest
import redis
import sqlalchemy as sa

from crawlapp.adapters.db.engine import get_engine, normalize_url
from crawlapp.core.settings import load_settings
from tests.conftest import crawl_env
from tests.e2e.helpers import (
    by_name,
    crawl_web,
    crawlctl,
    hosts_file_namespace,
    kill,
    named,
    wait_for_child,
)
from tests.faults import FaultProxy
from testweb.serverlog import Request, fetched_urls, longest_quiet, repeats, summary
from testweb.site import Web, WebSpec

pytestmark = pytest.mark.e2e
SPEC = WebSpec(hosts=10, pages_per_host=8, port=0, crawl_delay_every=0)
OUTAGE_SPEC = WebSpec(hosts=8, pages_per_host=12, port=0, crawl_delay_every=0)
OUTAGE_AFTER_REQUESTS, OUTAGE_SECONDS = 20, 10.0


def _judge(tmp_path: Path, env: dict[str, str], web: Web, requests: list[Request],
           delay: float, bodies: bool = True, once: bool = False) -> None:
    verdict = summary(requests, web, delay)
    assert verdict["overlaps"] == 0 and verdict["gap_violations"] == 0, verdict
    if once:  # no lease expired: a page fetched twice would be a redelivered batch
        assert verdict["duplicate_fetches"] == 0, verdict
    assert web.expected_pages(5) - set(fetched_urls(requests)) == set()
    stats = json.loads(crawlctl(env, "stats", "--json").stdout)
    assert stats["fetched"] == len(web.expected_pages(5))
    assert stats["queued"] == 0
    if bodies:  # (a flushed Redis forgets which bodies it claimed: copies may be stored again)
        stored = list((tmp_path / "var" / "blobs").rglob("*.gz"))
        engine = get_engine(load_settings(env))
        with engine.connect() as conn:  # robots.txt, redirect and error answers are kept too
            robots = conn.scalar(sa.text("SELECT count(DISTINCT storage_key) FROM fetches "
                                         "WHERE robots OR http_status >= 300"))
        assert len(stored) == stats["stored"] + robots  # no body stored twice


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


def test_redis_refusing_connections_for_10s_loses_nothing(tmp_path: Path, redis_url: str) -> None:
    """The broker and every Redis structure of the crawl unreachable at once: no worker dies
    of it (each waits for Redis and goes on), no page is fetched twice nor a host too soon, and
    the crawl's output says it once a process, not once a retry."""
    delay = 0.5
    server = redis.Redis.from_url(redis_url).connection_pool.connection_kwargs
    with FaultProxy(int(server["port"]), str(server["host"])).running() as proxy:
        proxied = redis_url.replace(f":{server['port']}/", f":{proxy.port}/", 1)
        env = crawl_env(tmp_path, proxied, CRAWL_DEFAULT_DELAY=str(delay))
        web, requests = _crawl_through_outage(tmp_path, env, proxy)
        _judge(tmp_path, env, web, requests, delay, once=True)
    output = (tmp_path / "crawl.out").read_text()
    assert "exited with status" not in output, output  # no worker died of it
    assert output.count("Traceback") <= 2, output  # said once, not at every retry


def _crawl_through_outage(tmp_path: Path, env: dict[str, str], proxy: FaultProxy,
                          names: bool = False) -> tuple[Web, list[Request]]:
    """Crawl OUTAGE_SPEC (its hosts by name with `names`: a hosts file of the test's own, the
    names kept a second in the DNS cache) with `proxy` down for OUTAGE_SECONDS once the crawl
    is under way; checks that the crawler met the outage and went on after it. The log is
    returned as the crawl asked it (by name)."""
    log = tmp_path / "requests.jsonl"

    def outage(crawl: subprocess.Popen[bytes]) -> None:
        deadline = time.monotonic() + 60
        while (not log.exists() or log.read_text().count("\n") < OUTAGE_AFTER_REQUESTS) \
                and time.monotonic() < deadline:
            time.sleep(0.1)
        proxy.outage(OUTAGE_SECONDS)

    spec = named(OUTAGE_SPEC) if names else OUTAGE_SPEC
    wrap = hosts_file_namespace(tmp_path, Web(spec).name_addresses()) if names else []
    web, requests, _ = crawl_web(tmp_path, {**env, "CRAWL_DNS_TTL": "1"} if names else env,
                                 spec, outage, wrap=wrap)
    requests = by_name(requests, web)
    assert proxy.dropped > 0  # the crawler tried to reach the server while it was down
    assert proxy.up_at and any(r.start > proxy.up_at for r in requests)  # and went on after
    assert proxy.down_at is not None
    again, quiet = repeats(requests), longest_quiet(requests, proxy.down_at)
    print(f"outage: {again} repeats, longest quiet {quiet:.1f} s after the outage began")
    # No page fetched again (the stages wait the outage out with their batch in flight), and
    # requests again within the stages' longest backoff of the server's return.
    assert again == 0 and quiet <= OUTAGE_SECONDS + 15, (again, quiet)
    return web, requests


@pytest.mark.parametrize("names", [False, True], ids=["addresses", "names"])
def test_postgres_refusing_connections_for_10s_loses_nothing(tmp_path: Path, redis_url: str,
                                                             pg_url: str, names: bool) -> None:
    delay = 0.5
    server = sa.make_url(normalize_url(pg_url))
    with FaultProxy(server.port or 5432, server.host or "127.0.0.1").running() as proxy:
        proxied = server.set(host="127.0.0.1", port=proxy.port)
        env = crawl_env(tmp_path, redis_url, CRAWL_DEFAULT_DELAY=str(delay),
                        DATABASE_URL=proxied.render_as_string(hide_password=False))
        web, requests = _crawl_through_outage(tmp_path, env, proxy, names)
        _judge(tmp_path, env, web, requests, delay, once=True)
    engine = sa.create_engine(server)
    with engine.connect() as conn:
        hosts = conn.execute(sa.text("SELECT count(*) FROM hosts WHERE robots_status = 200"))
        assert hosts.scalar() == OUTAGE_SPEC.hosts  # robots.txt answers recorded, none lost
    engine.dispose()


def test_s3_server_down_for_10s_loses_no_body(tmp_path: Path, redis_url: str,
                                              s3_endpoint: str) -> None:
    delay = 0.5
    bucket = f"faults-{time.time_ns()}"
    with FaultProxy(int(s3_endpoint.rsplit(":", 1)[1])).running() as proxy:
        env = crawl_env(tmp_path, redis_url, CRAWL_DEFAULT_DELAY=str(delay),
                        S3_ENDPOINT_URL=f"http://127.0.0.1:{proxy.port}", S3_BUCKET=bucket)
        web, requests = _crawl_through_outage(tmp_path, env, proxy)
        _judge(tmp_path, env, web, requests, delay, bodies=False, once=True)
    db = tmp_path / "var" / "crawl.db"
    keys = {k for (k,) in sqlite3.connect(db).execute(
        "SELECT storage_key FROM urls WHERE storage_key IS NOT NULL UNION "
        "SELECT storage_key FROM fetches WHERE storage_key IS NOT NULL")}
    s3 = boto3.client("s3", endpoint_url=s3_endpoint)
    stored = {o["Key"] for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket)
              for o in page.get("Contents", [])}
    assert keys and keys == stored  # every body a row or the history names, and no other
