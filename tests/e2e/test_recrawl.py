"""Re-crawl end to end: crawl, change part of the web, `crawlctl recrawl --all --now`, crawl
again. Judged from the server's log (conditional requests, 304s) and the stored bodies."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from crawlapp.core.urls import url_hash
from tests.conftest import crawl_env
from tests.e2e.helpers import crawlctl
from testweb.server import start_in_background
from testweb.serverlog import load
from testweb.site import Web, WebSpec

pytestmark = pytest.mark.e2e
DELAY = 0.2


def test_recrawl_sends_validators_and_stores_only_what_changed(tmp_path: Path,
                                                               redis_url: str) -> None:
    env = crawl_env(tmp_path, redis_url, CRAWL_DEFAULT_DELAY=str(DELAY))
    log = str(tmp_path / "requests.jsonl")
    spec = WebSpec(hosts=3, pages_per_host=5, port=0, crawl_delay_every=0, recrawl_cases=True,
                   vary_validators=True)
    db = tmp_path / "var" / "crawl.db"
    with start_in_background(Web(spec), log) as server:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("\n".join(server.web.seeds()))
        first = crawlctl(env, "crawl", "--seeds", str(seeds), "--until-idle")
        assert first.returncode == 0, first.stdout + first.stderr
        before = dict(sqlite3.connect(db).execute(
            "select url_hash, content_hash from urls where status = 'fetched'").fetchall())
        stats = json.loads(crawlctl(env, "stats", "--json").stdout)
        assert sum(t["pages"] for t in stats["recrawl"].values()) == len(before)
        assert sum(t["overdue"] for t in stats["recrawl"].values()) == 0

        server.set_generation(1)
        due = crawlctl(env, "recrawl", "--all", "--now")
        assert due.returncode == 0 and f"{len(before)} page(s)" in due.stdout
        second = crawlctl(env, "crawl", "--until-idle")
        assert second.returncode == 0, second.stdout + second.stderr
    web = server.web
    refetched = [r for r in load(log) if r.gen == 1 and r.path != "/robots.txt"]
    assert Counter(r.url for r in refetched).most_common(1)[0][1] == 1  # none fetched twice
    assert {r.url for r in refetched} >= {u for u in web.expected_pages(5)}
    with_validators = [r for r in refetched if web.validators(r.host)]
    carrying = [r for r in with_validators if r.inm or r.ims]
    assert len(carrying) >= 0.95 * len(with_validators) > 0
    changed = web.changed_pages(0)
    assert changed
    for request in refetched:
        if request.url in changed:
            assert request.status == 200
        elif web.validators(request.host):
            assert request.status == 304, request
    after = dict(sqlite3.connect(db).execute(
        "select url_hash, content_hash from urls where status = 'fetched'").fetchall())
    assert set(after) == set(before)
    for url in web.expected_pages(5):
        h = url_hash(url)
        assert (after[h] != before[h]) == (url in changed), url
    keys = {k for (k,) in sqlite3.connect(db).execute(
        "select distinct storage_key from urls where storage_key is not null")}
    bodies = list((tmp_path / "var" / "blobs").rglob("*.gz"))
    robots = {k for (k,) in sqlite3.connect(db).execute(  # robots.txt, redirect and error
        "select storage_key from fetches where (robots or http_status >= 300) "  # answers too
        "and not not_modified")}
    assert len(bodies) == len(before) + len(changed) + len(robots)  # one new body per change
    assert len(keys) == len(after)
