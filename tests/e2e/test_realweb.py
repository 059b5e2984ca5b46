"""The crawler on pages as real sites serve them (the test web's realweb hosts): a DocBook
XHTML manual, a Sphinx site and a CMS with query-routed URLs, wildcard robots.txt rules, odd
encodings, malformed links, an empty page. Judged from the server's request log (what went on
the wire, byte for byte) and from what the crawler stored."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path
from urllib.parse import urldefrag, urlsplit

import pytest

from tests.conftest import crawl_env, own_redis_url
from tests.e2e.helpers import crawl_web, crawlctl
from testweb.serverlog import Request, must_fetch_misses, never_fetch_violations, summary
from testweb.site import Web, WebSpec

pytestmark = pytest.mark.e2e
DELAY = 0.2
SPEC = WebSpec(hosts=2, pages_per_host=3, port=0, crawl_delay_every=0, realweb_cases=True)


@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory
            ) -> tuple[Web, list[Request], dict[str, str], Path, str]:
    import redis

    tmp_path = tmp_path_factory.mktemp("realweb")
    redis_url = own_redis_url()
    redis.Redis.from_url(redis_url).flushdb()
    env = crawl_env(tmp_path, redis_url, CRAWL_DEFAULT_DELAY=str(DELAY), CRAWL_FETCH_TIMEOUT="3")
    web, requests, output = crawl_web(tmp_path, env, SPEC)
    return web, requests, env, tmp_path / "var" / "crawl.db", output


def _on_host(web: Web, kinds: tuple[str, ...], urls: list[str] | dict[str, str]) -> list[str]:
    netlocs = {web.case_hosts()[kind] for kind in kinds}
    return [url for url in urls if urlsplit(url).netloc in netlocs]


def test_every_linked_target_is_requested_exactly_as_written(crawled) -> None:  # type: ignore[no-untyped-def]
    """Path and query byte for byte: no reordering, no re-encoding, no "=" added, the query of
    a legacy-encoded page in that page's encoding."""
    web, requests, _, _, _ = crawled
    misses = must_fetch_misses(requests, web)
    asked = Counter(r.url for r in requests)
    near = {miss: sorted(u for u in asked if u.split("?")[0] == miss.split("?")[0] and u != miss)
            for miss in misses}
    assert misses == [], json.dumps(near, indent=1, ensure_ascii=False)
    assert [url for url in web.must_fetch() if asked[url] > 1] == []


def test_nothing_robots_txt_disallows_is_requested_in_any_spelling(crawled) -> None:  # type: ignore[no-untyped-def]
    web, requests, _, _, _ = crawled
    bad = [f"{r.url} -> {r.status}" for r in never_fetch_violations(requests, web)]
    assert bad == []
    assert summary(requests, web, DELAY)["disallowed_requests"] == 0
    assert not set(web.must_not_fetch()) & {r.url for r in requests}


def test_politeness_holds(crawled) -> None:  # type: ignore[no-untyped-def]
    web, requests, _, _, output = crawled
    verdict = summary(requests, web, DELAY)
    assert verdict["overlaps"] == 0 and verdict["gap_violations"] == 0, verdict
    assert verdict["robots_first_violations"] == 0
    assert "starting it again" not in output  # no worker died on a malformed page


def test_docbook_and_sphinx_pages_have_titles_and_their_links_were_followed(crawled) -> None:  # type: ignore[no-untyped-def]
    web, requests, env, db, _ = crawled
    conn = sqlite3.connect(db)
    titles = web.page_titles()
    pages = _on_host(web, ("docbook", "sphinx"), titles)
    assert len(pages) == 20
    stored = dict(conn.execute(
        f"select url, title from urls where url in ({','.join('?' * len(pages))})", pages))
    assert {url: stored.get(url) for url in pages} == {url: titles[url] for url in pages}
    asked = {r.url for r in requests}
    for url in pages:
        targets = {urldefrag(u).url for u in web.outlinks(url) or []}
        assert targets, url
        recorded = {u for (u,) in conn.execute(
            "select t.url from links l join urls s on s.url_hash = l.source_hash "
            "join urls t on t.url_hash = l.target_hash where s.url = ?", (url,))}
        assert targets - {url} <= recorded, (url, sorted(targets - recorded))
        assert targets <= asked, (url, sorted(targets - asked))
    index = _on_host(web, ("docbook",), pages)[0]
    shown = crawlctl(env, "page", "show", index, "--json")
    assert shown.returncode == 0, shown.stderr
    data = json.loads(shown.stdout)
    assert (data["title"], data["status"]) == (titles[index], "fetched")
    assert data["outbound_links"] >= 10
    links = crawlctl(env, "links", index, "--json")
    assert links.returncode == 0, links.stderr
    statuses = {d["url"]: d["status"] for d in json.loads(links.stdout)}
    assert all(statuses.get(u) == "fetched" for u in web.outlinks(index) or [] if u != index)


def test_odd_encodings_are_read_right(crawled) -> None:  # type: ignore[no-untyped-def]
    """The windows-1252, Shift_JIS and UTF-16 pages and the pages they link (non-ASCII paths
    in UTF-8) have the titles they were written with."""
    web, _, _, db, _ = crawled
    titles = web.page_titles()
    pages = _on_host(web, ("cms",), titles)
    conn = sqlite3.connect(db)
    stored = dict(conn.execute(
        f"select url, title from urls where url in ({','.join('?' * len(pages))})", pages))
    assert {url: stored.get(url) for url in pages} == {url: titles[url] for url in pages}


def test_pages_that_yield_nothing_say_why(crawled) -> None:  # type: ignore[no-untyped-def]
    """The empty page and the page of bare markup are fetched and say why nothing came of
    them (crawlapp.core.html's ParsedPage.problem, on the page row as `problem` or in last_error
    as "unread: <problem>")."""
    web, _, env, _, _ = crawled
    problems = {}
    for url in web.page_problems():
        shown = crawlctl(env, "page", "show", url, "--json")
        assert shown.returncode == 0, shown.stderr
        data = json.loads(shown.stdout)
        assert (data["status"], data["http_status"]) == ("fetched", 200)
        problems[url] = data.get("problem") or (data.get("last_error") or "").removeprefix(
            "unread: ")
    assert problems == web.page_problems()


def test_malformed_links_and_redirect_cost_nothing_else(crawled) -> None:  # type: ignore[no-untyped-def]
    """Unparsable hrefs are skipped, the good links after them followed; a Location no URL
    parser accepts ends that redirect with an error, nothing more."""
    web, requests, _, db, _ = crawled
    cases = web.case_urls()
    rows = {url: (status, error) for url, status, error in sqlite3.connect(db).execute(
        "select url, status, last_error from urls where url in (?, ?)",
        (cases["cms-malformed"], cases["cms-bad-redirect"]))}
    assert rows[cases["cms-malformed"]] == ("fetched", None)
    status, error = rows[cases["cms-bad-redirect"]]
    assert status == "redirected" and error
    good = [u for u in web.outlinks(cases["cms-malformed"]) or [] if not web.disallowed(u)]
    answered = {r.url: r.status for r in requests}
    assert {u: answered.get(u) for u in good} == dict.fromkeys(good, 200)
