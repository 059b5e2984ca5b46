"""The crawler on the test web's hard cases, judged from the server's log and the database:
robots.txt answering 500, 404 and a redirect; a 20 MiB page, a gzip bomb, a page that drips
past the fetch timeout; a redirect loop and a chain of 8 hops; link spellings, nofollow,
<base href>, links only in scripts and comments; traps; sitemaps; mirrors and syndication."""

from __future__ import annotations

import itertools
import re
import sqlite3
from collections import Counter
from itertools import combinations
from pathlib import Path

import pytest

from crawlapp.core.simhash import from_signed, hamming
from crawlapp.core.urls import url_hash
from tests.conftest import crawl_env, own_redis_url
from tests.e2e.helpers import crawl_web
from testweb.cases import canonical_url
from testweb.serverlog import canonical_fetches, never_fetch_violations, summary, trap_requests
from testweb.site import Web, WebSpec

pytestmark = pytest.mark.e2e
DELAY = 0.2
MEMORY_BOUND_MIB = 200  # a worker idles at ~100 MiB; the body cap (10 MiB) bounds the rest
SPEC = WebSpec(hosts=3, pages_per_host=4, port=0, crawl_delay_every=0, robots_cases=True,
               heavy_cases=True, link_cases=True, trap_cases=True, sitemap_cases=True,
               dedup_cases=True, drip_seconds=4.0)


@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Web, list, Path, str]:
    import redis

    tmp_path = tmp_path_factory.mktemp("cases")
    redis_url = own_redis_url()
    redis.Redis.from_url(redis_url).flushdb()
    env = crawl_env(tmp_path, redis_url, CRAWL_DEFAULT_DELAY=str(DELAY),
                    CRAWL_FETCH_TIMEOUT="3")
    web, requests, output = crawl_web(tmp_path, env, SPEC)
    return web, requests, tmp_path / "var" / "crawl.db", output


def test_politeness_and_robots_hold_on_every_case_host(crawled) -> None:  # type: ignore[no-untyped-def]
    web, requests, _, output = crawled
    verdict = summary(requests, web, DELAY)
    assert verdict["gap_violations"] == 0 and verdict["overlaps"] == 0, verdict
    assert verdict["robots_first_violations"] == 0
    assert never_fetch_violations(requests, web) == []
    assert "starting it again" not in output  # no worker died on the hostile pages


def test_workers_stay_up_with_bounded_memory(crawled) -> None:  # type: ignore[no-untyped-def]
    """The 20 MiB page, the gzip bomb and the endless trickle are read in bounded pieces."""
    output = crawled[3]
    found = re.search(r"(\d+) restart\(s\), peak worker memory (\d+) MiB", output)
    assert found, output
    restarts, peak = int(found[1]), int(found[2])
    assert restarts == 0
    assert 0 < peak < MEMORY_BOUND_MIB


def test_every_reachable_page_once_in_canonical_form(crawled) -> None:  # type: ignore[no-untyped-def]
    web, requests, _, _ = crawled
    fetched = Counter(canonical_url(r.url) for r in requests if r.path != "/robots.txt")
    expected = {canonical_url(u) for u in web.expected_pages(5, sitemaps=True)}
    assert expected - set(fetched) == set()
    assert all(n == 1 for n in canonical_fetches(requests, web).values())
    assert [u for u in expected if fetched[u] > 1] == []
    assert all(u in fetched for u in web.sitemap_pages())


def test_traps_and_redirect_chains_are_cut_short(crawled) -> None:  # type: ignore[no-untyped-def]
    web, requests, _, _ = crawled
    traps = trap_requests(requests, web)
    assert traps["calendar"] <= 30 and traps["session"] <= 2
    assert traps["repeat"] <= 6 and traps["deep"] <= 7
    paths = Counter(r.url for r in requests)
    for case in web.redirect_cases():
        if case.loop:
            assert all(paths[url] == 1 for url in case.chain)
        elif len(case.chain) > 5:
            assert [url for url in case.chain[6:] if paths[url]] == []
            assert case.final is not None and paths[case.final] == 0


def test_heavy_pages_are_abandoned_and_recorded_with_a_reason(crawled) -> None:  # type: ignore[no-untyped-def]
    web, requests, db, _ = crawled
    cases = web.case_urls()
    rows = dict(sqlite3.connect(db).execute(
        "select url, last_error from urls where url in (?, ?, ?)",
        (cases["big"], cases["bomb"], cases["drip"])).fetchall())
    assert rows == {cases["big"]: "too_large", cases["bomb"]: "too_large",
                    cases["drip"]: "timeout"}
    assert Counter(r.url for r in requests)[cases["drip"]] == 1


def test_one_stored_body_per_group_of_copies(crawled) -> None:  # type: ignore[no-untyped-def]
    """Exact copies: one original. Near copies: no two originals within 3 bits of each other
    (a 64-bit SimHash of ~600 words puts most small edits within 3 bits, not all: the test
    web's byline copy lands 5-6 bits away and rightly stays an original of its own)."""
    web, _, db, _ = crawled
    conn = sqlite3.connect(db)

    def marks(group: list[str]) -> list[tuple[int, str | None, int | None]]:
        return [conn.execute("select content_dedup, duplicate_of, simhash from urls "
                             "where url_hash = ?", (url_hash(canonical_url(u)),)).fetchone()
                for u in group]

    for group in web.duplicate_groups()["exact"]:
        assert [m[0] for m in marks(group)].count(0) == 1, group
    for group in web.duplicate_groups()["near"]:
        rows = marks(group)
        hashes = {url_hash(canonical_url(u)) for u in group}
        assert all(m[1] in hashes for m in rows if m[0])
        originals = [from_signed(m[2]) for m in rows if not m[0] and m[1] is None]
        assert originals and all(hamming(a, b) > 3 for a, b in combinations(originals, 2))
    for variant, article in web.canonical_links().items():
        if variant != article:  # a page naming another canonical URL points to it, unstored
            row = conn.execute("select canonical_url, duplicate_of, storage_key from urls "
                               "where url_hash = ?", (url_hash(canonical_url(variant)),)).fetchone()
            assert row == (canonical_url(article), url_hash(canonical_url(article)), None)
    keys = [k for (k,) in conn.execute(  # the pages' bodies, and the robots.txt answers'
        "select storage_key from urls where storage_key is not null "
        "union select storage_key from fetches where storage_key is not null")]
    bodies = list((db.parent / "blobs").rglob("*.gz"))
    assert len(bodies) == len(keys)


def test_robots_decisions_are_recorded_with_their_rule(crawled) -> None:  # type: ignore[no-untyped-def]
    """A 500 robots.txt is asked again with backoff (1 + CRAWL_MAX_RETRIES times), then the
    host's URLs are blocked; a URL a rule disallows names that rule."""
    web, requests, db, _ = crawled
    hosts = web.case_hosts()
    asked = sorted(r.start for r in requests
                   if r.host == hosts["robots-500"] and r.path == "/robots.txt")
    assert len(asked) == 3
    assert all(later - earlier >= 2 * DELAY for earlier, later in itertools.pairwise(asked))
    errors = dict(sqlite3.connect(db).execute(
        "select url, last_error from urls where status = 'blocked'").fetchall())
    assert errors[f"http://{hosts['robots-500']}/"] == "robots: robots.txt 500: nothing allowed"
    assert errors[f"http://{hosts['robots-redirect']}/blocked/secret.html"] == \
        "robots: Disallow: /blocked/"
