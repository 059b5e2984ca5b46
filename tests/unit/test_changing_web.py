"""The changing web (testweb/changing.py): determinism, versions at the drawn change times,
conditional requests by validator kind, true sitemap lastmods, news home pages, stable links;
and one live server with its log."""

from __future__ import annotations

import argparse
import http.client
import time
import xml.etree.ElementTree as ET
from calendar import timegm
from dataclasses import replace
from email.utils import formatdate
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from crawlapp.core.html import parse_html
from crawlapp.core.settings import load_settings
from crawlapp.core.textchanges import text_digest
from testweb import serverlog
from testweb.changing import (
    LATIN1_PAGE,
    SITEMAP,
    VALIDATOR_KINDS,
    XHTML_PAGE,
    ChangingSpec,
    ChangingWeb,
)
from testweb.server import (
    add_changing_arguments,
    changing_argv,
    changing_spec_from_args,
    start_changing_in_background,
)

T0 = 1_700_000_000.0
SMALL = ChangingSpec(hosts=8, pages_per_host=12, port=8080, seed=3, duration=600,
                     news_hosts=3, sitemap_hosts=2, article_interval=30.0)
SITEMAP_NS = "{http://www.sitemaps.org/schemas/sitemap/0.9}"


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.hrefs.append(dict(attrs).get("href") or "")

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _parse(body: bytes, encoding: str = "utf-8") -> _Links:
    parser = _Links()
    parser.feed(body.decode(encoding))
    return parser


@pytest.fixture(scope="module")
def web() -> ChangingWeb:
    return ChangingWeb(SMALL, T0)


def _changing_page(web: ChangingWeb, host: int, least: int = 3) -> int:
    """A page of `host` with at least `least` changes."""
    return next(j for j, changes in enumerate(web.schedule.changes[host]) if len(changes) >= least)


def test_deterministic_for_a_seed(web: ChangingWeb) -> None:
    again = ChangingWeb(SMALL, T0)
    for i in range(SMALL.hosts):
        assert all(np.array_equal(a, b) for a, b in zip(web.schedule.changes[i],
                                                        again.schedule.changes[i], strict=True))
        assert np.array_equal(web.schedule.articles[i], again.schedule.articles[i])
    for path in ("/", "/p/4.html", SITEMAP, "/a/0.html"):
        assert web.respond(web.netloc(0), path, at=300.0) == again.respond(again.netloc(0), path,
                                                                           at=300.0)
    other = ChangingWeb(replace(SMALL, seed=4), T0)
    assert not all(np.array_equal(a, b) for a, b in zip(web.schedule.changes[0],
                                                        other.schedule.changes[0], strict=True))


def test_change_rates_and_times(web: ChangingWeb) -> None:
    big = ChangingWeb(ChangingSpec(hosts=4, pages_per_host=500, duration=0, news_hosts=0,
                                   sitemap_hosts=0))
    rates = big.schedule.rates
    assert 0.15 < np.mean(rates == 0) < 0.25  # a fifth never change
    changing = rates[rates > 0]
    assert changing.min() >= 1 / 3600 and changing.max() <= 1 / 20
    assert 0.4 < np.mean(changing > 1 / np.sqrt(20 * 3600)) < 0.6  # log-uniform around it
    for host in web.schedule.changes:
        for changes in host:
            assert np.all(np.diff(changes) >= 1) and np.all(changes % 1 == 0.5)
            assert len(changes) == 0 or changes[-1] <= SMALL.horizon + 1
    longer = ChangingWeb(replace(SMALL, duration=1200))
    first = web.schedule.changes[1][2]
    assert np.array_equal(longer.schedule.changes[1][2][:len(first)], first)


def test_versions_change_at_the_change_times(web: ChangingWeb) -> None:
    j = _changing_page(web, 0)
    path, netloc = f"/p/{j}.html", web.netloc(0)
    changes = web.schedule.changes[0][j]
    bodies = []
    for v, at in enumerate(changes[:3]):
        before = web.respond(netloc, path, at=at - 0.01)
        after = web.respond(netloc, path, at=at)
        assert dict(before.logged)["ver"] == v and dict(after.logged)["ver"] == v + 1
        assert before.body != after.body and before.header("ETag") != after.header("ETag")
        assert after.header("Last-Modified") == formatdate(T0 + at - 0.5, usegmt=True)
        assert web.respond(netloc, path, at=at + 0.4).body == after.body
        bodies.append(before.body)
    assert web.respond(netloc, path, at=0.0).header("Last-Modified") == formatdate(T0, usegmt=True)
    assert len(set(bodies)) == 3


@pytest.mark.parametrize("host", range(4))
def test_conditional_requests_by_validator_kind(web: ChangingWeb, host: int) -> None:
    kind = VALIDATOR_KINDS[host % 4]
    assert web.validators(host) == kind
    j = _changing_page(web, host, least=2)
    path, netloc = f"/p/{j}.html", web.netloc(host)
    first, second = web.schedule.changes[host][j][:2]
    got = web.respond(netloc, path, at=first + 0.1)
    assert (got.header("ETag") is not None, got.header("Last-Modified") is not None) == (
        "ETag" in kind, "Last-Modified" in kind)
    asks = []
    if got.header("ETag"):
        asks.append({"if-none-match": got.header("ETag") or ""})
    if got.header("Last-Modified"):
        asks.append({"if-modified-since": got.header("Last-Modified") or ""})
    for headers in asks:
        same = web.respond(netloc, path, headers, at=second - 0.1)
        assert (same.status, same.body, dict(same.logged)) == (304, b"", {"ver": 1})
        assert {k for k, _ in same.headers} == set(kind)
        assert web.respond(netloc, path, headers, at=second).status == 200
    stale = {"if-none-match": "\"other\"", "if-modified-since": "Mon, 01 Jan 2001 00:00:00 GMT"}
    assert web.respond(netloc, path, stale, at=second - 0.1).status == 200
    if not kind:  # nothing to match: always the whole page
        assert web.respond(netloc, path, {"if-modified-since": formatdate(T0 + 1e6, usegmt=True)},
                           at=first + 0.1).status == 200


def test_roles_of_hosts(web: ChangingWeb) -> None:
    default = ChangingWeb(ChangingSpec())
    assert len(default.news_hosts) == 7 and len(default.sitemap_hosts) == 4
    sitemaps = set(default.sitemap_hosts)
    assert sitemaps & set(default.news_hosts) and sitemaps - set(default.news_hosts)
    for i in range(SMALL.hosts):
        robots = web.respond(web.netloc(i), "/robots.txt").body.decode()
        assert "Disallow: /private/" in robots and "Crawl-delay" not in robots
        assert (f"Sitemap: {web.base_url(i)}{SITEMAP}" in robots) == (i in web.sitemap_hosts)
        assert (web.respond(web.netloc(i), SITEMAP).status == 200) == (i in web.sitemap_hosts)
        assert (len(web.schedule.articles[i]) > 0) == (i in web.news_hosts)
    delayed = ChangingWeb(ChangingSpec(hosts=4, news_hosts=1, sitemap_hosts=1, duration=0,
                                       crawl_delay_every=2, crawl_delay=3.0))
    assert [delayed.crawl_delay(i) for i in range(4)] == [None, 3.0, None, 3.0]
    assert delayed.delay_for(delayed.netloc(1), 1.0) == 3.0
    assert web.disallowed(f"{web.base_url(0)}/private/secret.html")


def test_sitemap_lists_the_true_last_changes(web: ChangingWeb) -> None:
    for i in web.sitemap_hosts:
        at = 400.0
        root = ET.fromstring(web.respond(web.netloc(i), SITEMAP, at=at).body)
        lastmods = {url.findtext(f"{SITEMAP_NS}loc"): url.findtext(f"{SITEMAP_NS}lastmod")
                    for url in root}
        expected_paths = {"/", *(f"/p/{j}.html" for j in range(SMALL.pages_per_host)),
                          *(f"/a/{n}.html" for n in range(web.published(i, at)))}
        assert set(lastmods) == {web.base_url(i) + path for path in expected_paths}
        for loc, stamp in lastmods.items():
            assert loc is not None and stamp is not None
            path = loc.removeprefix(web.base_url(i))
            state = web.state(i, path, at)
            assert state is not None
            seconds = timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ"))
            assert seconds == int(T0 + state[1]), path  # the change's second (t0: never changed)
        changed = [j for j in range(SMALL.pages_per_host) if len(web.schedule.changes[i][j])]
        assert changed  # some lastmods are not t0


def test_news_home_page_lists_the_latest_articles(web: ChangingWeb) -> None:
    i = web.news_hosts[0]
    published = web.schedule.articles[i]
    assert len(published) > SMALL.latest
    for n in (0, SMALL.latest + 2):
        at = float(published[n])
        before = _parse(web.respond(web.netloc(i), "/", at=at - 0.1).body).hrefs
        after = _parse(web.respond(web.netloc(i), "/", at=at).body).hrefs
        assert f"/a/{n}.html" not in before and f"/a/{n}.html" in after
        listed = [h for h in after if h.startswith("/a/")]
        assert listed == [f"/a/{k}.html" for k in range(n, max(n - SMALL.latest, -1), -1)]
        assert web.respond(web.netloc(i), f"/a/{n}.html", at=at - 0.1).status == 404
        article = web.respond(web.netloc(i), f"/a/{n}.html", at=at)
        assert article.status == 200 and dict(article.logged)["ver"] == 0
        assert web.respond(web.netloc(i), f"/a/{n}.html", at=at + 500).body == article.body
    plain = next(h for h in range(SMALL.hosts) if h not in web.news_hosts)
    home = web.respond(web.netloc(plain), "/", at=500.0)
    assert home.body == web.respond(web.netloc(plain), "/", at=0.0).body
    assert all(not h.startswith("/a/") for h in _parse(home.body).hrefs)


def test_home_links_every_page_and_page_links_stay_across_versions(web: ChangingWeb) -> None:
    hrefs = _parse(web.respond(web.netloc(2), "/", at=0.0).body).hrefs
    assert {f"/p/{j}.html" for j in range(SMALL.pages_per_host)} <= set(hrefs)
    assert "/private/secret.html" in hrefs and f"{web.base_url(3)}/" in hrefs
    for j in range(SMALL.pages_per_host):
        changes = web.schedule.changes[2][j]
        kind = web.respond(web.netloc(2), f"/p/{j}.html").header("Content-Type") or ""
        encoding = "latin-1" if "iso-8859-1" in kind else "utf-8"
        seen = [_parse(web.respond(web.netloc(2), f"/p/{j}.html", at=at).body, encoding)
                for at in [0.0, *changes[:3]]]
        assert all(page.hrefs == seen[0].hrefs for page in seen)
        assert len({" ".join(page.text) for page in seen}) == len(seen)


def test_odd_pages(web: ChangingWeb) -> None:
    xhtml = web.respond(web.netloc(0), f"/p/{XHTML_PAGE}.html")
    assert xhtml.header("Content-Type") == "application/xhtml+xml; charset=utf-8"
    assert ET.fromstring(xhtml.body).tag == "{http://www.w3.org/1999/xhtml}html"
    latin = web.respond(web.netloc(0), f"/p/{LATIN1_PAGE}.html")
    assert latin.header("Content-Type") == "text/html; charset=iso-8859-1"
    assert b"charset" not in latin.body and "Zürich" in latin.body.decode("latin-1")
    with pytest.raises(UnicodeDecodeError):
        latin.body.decode("utf-8")
    odd = _parse(web.respond(web.netloc(0), "/p/3.html").body).hrefs
    assert "http://[::1" in odd and "javascript:void(0)" in odd
    for path in ("/p/99.html", "/p/1.html?x=1", "/a/999.html", "/nothing", "/p/01.html"):
        assert web.respond(web.netloc(0), path, at=100.0).status == 404
    assert web.respond("127.0.9.9:8080", "/").status == 404


def test_a_dynamic_host_writes_a_token_of_each_request_and_no_validators() -> None:
    dynamic = ChangingWeb(replace(SMALL, dynamic_every=2), T0)
    assert [dynamic.dynamic(i) for i in range(4)] == [False, True, False, True]
    j = _changing_page(dynamic, 1, least=1)
    change = dynamic.schedule.changes[1][j][0]
    netloc, path = dynamic.netloc(1), f"/p/{j}.html"
    one, two, new = (dynamic.respond(netloc, path, at=at)
                     for at in (change - 3.0, change - 1.0, change + 1.0))
    assert dynamic.validators(1) == () and one.header("ETag") is None
    assert one.header("Last-Modified") is None
    assert one.body != two.body and b'name="token"' in one.body  # the same version, new bytes
    text = [parse_html(r.body, "text/html", 100).text for r in (one, two, new)]
    assert text[0] != text[1] and "served at" in text[0]  # the time it shows moves too
    # the page's text but for the times it shows moves with its version alone
    digest = [text_digest(t, load_settings({}).change_ignore) for t in text]
    assert digest[0] == digest[1] != digest[2]
    for page in (f"/p/{XHTML_PAGE}.html", f"/p/{LATIN1_PAGE}.html", "/"):
        assert b'name="token"' in dynamic.respond(netloc, page, at=10.0).body
    assert ET.fromstring(dynamic.respond(netloc, f"/p/{XHTML_PAGE}.html", at=10.0).body) \
        is not None  # still well-formed
    assert b"token" not in dynamic.respond(netloc, "/robots.txt", at=10.0).body
    # the other hosts as before
    assert dynamic.respond(dynamic.netloc(0), path, at=5.0).body == \
        ChangingWeb(SMALL, T0).respond(dynamic.netloc(0), path, at=5.0).body


def test_command_line_round_trip() -> None:
    parser = argparse.ArgumentParser()
    add_changing_arguments(parser)
    assert changing_spec_from_args(parser.parse_args([])) == ChangingSpec()
    assert changing_spec_from_args(parser.parse_args(changing_argv(SMALL))) == SMALL


def test_spec_is_validated() -> None:
    bad: dict[str, Any]
    for bad in ({"hosts": 0}, {"news_hosts": 30}, {"sitemap_hosts": -1}, {"min_interval": 0},
                {"min_interval": 10, "max_interval": 5}, {"static_fraction": 1.5},
                {"dynamic_every": -1}):
        with pytest.raises(ValueError):
            ChangingSpec(**bad)


def test_live_server_logs_versions(tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    spec = ChangingSpec(hosts=2, pages_per_host=4, news_hosts=1, sitemap_hosts=1, duration=30)
    with start_changing_in_background(spec, str(log)) as server:
        web = server.web
        assert server.port > 0 and server.seeds() == web.seeds() and server.t0 % 1 == 0
        connection = http.client.HTTPConnection(web.host_addr(1), server.port, timeout=5)
        connection.request("GET", "/p/0.html")
        first = connection.getresponse()
        first.read()
        connection.request("GET", "/p/0.html", headers={"If-None-Match": first.getheader("ETag", "")})
        second = connection.getresponse()
        second.read()
        connection.request("GET", SITEMAP)
        connection.getresponse().read()
        connection.close()
    requests = serverlog.load(str(log))
    assert [(r.path, r.status) for r in requests] == [
        ("/p/0.html", 200), ("/p/0.html", second.status), (SITEMAP, 200)]
    for request in requests:
        assert request.ver == web.version(1, request.path, request.start - server.t0)
