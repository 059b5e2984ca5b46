"""The parse stage without a server, on page records made the fetch stage's way (a Fetcher on
httpx.MockTransport, then apply_fetch): links of HTML pages, redirects and sitemaps, the pages
that have none, and the counters of what was refused."""

from __future__ import annotations

import asyncio
import dataclasses
from collections import Counter

from crawlapp.core.records import Fetched, Lease, Link, RobotsAnswer
from crawlapp.core.settings import load_settings
from crawlapp.core.urls import host_of
from crawlapp.stages.pages import Page, apply_fetch, page_for, robots_page
from crawlapp.stages.parsing import parse_pages
from tests.mock_web import Answer, mock_fetcher, site

SETTINGS = load_settings({"CRAWL_MAX_REDIRECTS": "3"})
HTML = {"Content-Type": "text/html; charset=utf-8"}


def fetch(answers: dict[str, Answer], **extra: int) -> list[Page]:
    """Each URL of `answers` fetched and recorded as the fetch stage records it."""
    fetcher = mock_fetcher(site(answers))

    async def all_of() -> list[Page]:
        results = await asyncio.gather(*(fetcher.get(url) for url in answers))
        return [dataclasses.replace(
                    apply_fetch(page_for(Lease(0, host_of(r.url), "t", r.url, 1)), r, 1 << 20),
                    **extra)
                for r in results]

    return asyncio.run(all_of())


def parse(answers: dict[str, Answer], **extra: int) -> tuple[list[Page], Counter[str]]:
    return parse_pages(fetch(answers, **extra), SETTINGS)


def test_links_of_a_page_resolved_against_its_base_once_each() -> None:
    body = (b"<title>Home</title><base href='/docs/'>"
            b"<nav><a href='/'>Top</a></nav>"
            b"<a href='intro.html'>Intro</a><a href='intro.html#part'>Intro again</a>"
            b"<a href='ext' rel='nofollow'>Elsewhere</a><a href='javascript:go()'>js</a>"
            b"<a href='http://[::1'>broken</a><a href='mailto:x@a.test'>mail</a>")
    (page,), counts = parse({"http://a.test/": (200, HTML, body)})
    assert page.title == "Home"
    assert page.links == [Link("http://a.test/", "Top", False, True),
                          Link("http://a.test/docs/intro.html", "Intro", False, False),
                          Link("http://a.test/docs/ext", "Elsewhere", True, False)]
    assert counts == Counter({"rejected:malformed": 1, "rejected:scheme_javascript": 1,
                             "rejected:scheme_mailto": 1})


def test_robots_headers_keep_the_links_out_or_the_page_unindexed() -> None:
    body = b"<p>text</p><a href='/next'>next</a>"
    (nofollow, noindex), _ = parse({
        "http://a.test/nofollow": (200, {**HTML, "X-Robots-Tag": "nofollow"}, body),
        "http://a.test/noindex": (200, {**HTML, "X-Robots-Tag": "noindex"}, body)})
    assert nofollow.links == [] and not nofollow.noindex
    assert noindex.noindex and noindex.links == [Link("http://a.test/next", "next")]


def test_a_redirect_has_its_target_as_its_one_link_within_the_hop_limit() -> None:
    answers = {"http://a.test/old": (301, {"Location": "/new?x=1"}, b""),
               "http://a.test/bad": (302, {"Location": "http://[::1"}, b"")}
    (moved, bad), counts = parse(answers)
    assert moved.status == "redirected" and moved.links == [Link("http://a.test/new?x=1")]
    assert bad.links == [] and bad.error == "redirect to a URL refused: malformed"
    (far, _), more = parse(answers, redirect_hops=3)
    assert far.links == [] and far.error == "redirect chain stopped after 3 hops"
    assert counts == Counter({"rejected:malformed": 1})
    assert more == Counter({"rejected:too_many_redirects": 2})


def test_a_sitemap_lists_its_urls_as_links() -> None:
    body = (b'<?xml version="1.0" encoding="UTF-8"?>'
            b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            b"<url><loc>http://a.test/a</loc></url><url><loc>http://a.test/b</loc></url>"
            b"</urlset>")
    (page,), _ = parse({"http://a.test/sitemap.xml": (200, {"Content-Type": "application/xml"},
                                                      body)})
    assert page.links == [Link("http://a.test/a"), Link("http://a.test/b")]


def test_pages_without_links_to_read() -> None:
    answers = {"http://a.test/same": (304, {}, b""),
               "http://a.test/img": (200, {"Content-Type": "image/png"}, b"\x89PNG<a href=x>"),
               "http://a.test/gone": (404, HTML, b"<a href='/x'>x</a>")}
    pages, counts = parse(answers)
    assert [(p.status, p.not_modified, p.links) for p in pages] == [
        ("fetched", True, []), ("fetched", False, []), ("failed", False, [])]
    assert counts == Counter()


def test_a_robots_record_keeps_its_sitemaps() -> None:
    record = robots_page(Fetched("http://a.test/robots.txt", 200, ended=1.0), "a.test",
                         ["http://a.test/map.xml"], RobotsAnswer("http://a.test", 200, "", None))
    (parsed,), counts = parse_pages([dataclasses.replace(record)], SETTINGS)
    assert parsed == record and counts == Counter()
