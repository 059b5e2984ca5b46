import gzip
import ipaddress
from collections import Counter

import pytest

from crawlapp.core.html import decode_body, parse_html, robots_directives
from crawlapp.core.netguard import refusal_reason
from crawlapp.core.priority import Weights, depth_priority, queue_score, refresh_priority
from crawlapp.core.records import FetchError, Link, Page, Status
from crawlapp.core.settings import load_settings
from crawlapp.stages.parsing import parse_page

LOOPBACK = (ipaddress.ip_network("127.0.0.0/8"),)


@pytest.mark.parametrize(("address", "reason"), [
    ("127.0.0.1", "ssrf_loopback"), ("::1", "ssrf_loopback"),
    ("::ffff:127.0.0.1", "ssrf_loopback"), ("169.254.169.254", "ssrf_link_local"),
    ("0.0.0.0", "ssrf_unspecified"), ("10.1.2.3", "ssrf_private"), ("192.168.1.1", "ssrf_private"),
    ("224.0.0.1", "ssrf_multicast"), ("8.8.8.8", None), ("2001:4860:4860::8888", None),
    ("not-an-ip", "ssrf_bad_address"), ("100.64.0.1", "ssrf_not_global"),
])
def test_refusal_reasons(address: str, reason: str | None) -> None:
    assert refusal_reason(address, ()) == reason


def test_allowed_networks_exempt_their_addresses_only() -> None:
    assert refusal_reason("127.0.1.5", LOOPBACK) is None
    assert refusal_reason("::ffff:127.0.0.1", LOOPBACK) is None
    assert refusal_reason("10.0.0.1", LOOPBACK) == FetchError.ADDRESS_PRIVATE


def test_priority_decays_with_depth_and_orders_the_queue() -> None:
    now = 1_800_000_000.0
    assert depth_priority(0) == 1.0
    assert depth_priority(1) > depth_priority(2) > 0
    assert queue_score(depth_priority(0), now) < queue_score(depth_priority(3), now)


def test_ageing_lets_a_low_score_overtake_newer_better_ones() -> None:
    now = 1_800_000_000.0
    assert queue_score(0.1, now) < queue_score(1.0, now + 3600)
    assert queue_score(0.1, now) > queue_score(1.0, now + 60)


def test_re_crawls_queue_earliest_due_first_after_new_urls_until_overdue() -> None:
    weights, now = Weights(), 1_800_000_000.0
    new = queue_score(weights.priority(0.2, 0.5, depth_priority(1)), now)

    def recrawl(due_in: float) -> float:
        return queue_score(refresh_priority(weights, 0.2, due_in), now)

    # The score is the due time's, whenever the page was queued: earliest due first.
    assert recrawl(60.0) - recrawl(0.0) == pytest.approx(60.0 / 3600, abs=1e-5)
    assert recrawl(-120.0) < recrawl(0.0) < recrawl(600.0)
    assert new < recrawl(0.0) and new < recrawl(-240.0)  # a new URL first...
    assert recrawl(-300.0) < new  # ...unless the re-crawl is overdue by 4.5 minutes
    assert refresh_priority(weights, 0.2, 10 * 3600.0) == 0.0  # clamped


def test_links_titles_base_and_nofollow() -> None:
    page = parse_html(
        b"<HTML><head><TITLE> A  page </TITLE><base href='http://b.com/d/'></head><body>"
        b"<A HREF=one.html>One <b>bold</b></A><area href='/map'>"
        b"<a href='x' rel='nofollow'>x</a><a>no href</a>"
        b"<a href='c'>caf&eacute; <!-- no -->au <?pi no?>lait<img alt='no'></a>"
        b"<a href='t'>  two\n\tlines &amp; more </a>"
        b"<script>document.write('<a href=\"s.html\">')</script><!-- <a href='c.html'> -->"
        b"</body></HTML>", "text/html")
    assert page.title == "A page"
    assert page.base == "http://b.com/d/"
    assert [(link.url, link.anchor, link.nofollow) for link in page.links] == [
        ("one.html", "One bold", False), ("/map", "", False), ("x", "x", True),
        ("c", "caf\u00e9 au lait", False), ("t", "two lines & more", False)]


def test_meta_robots_nofollow_and_link_cap() -> None:
    body = b"<meta name='robots' content='noindex, NOFOLLOW'>" + b"<a href='a'>a</a>" * 50
    page = parse_html(body, None, max_links=10)
    assert page.meta_nofollow
    assert len(page.links) == 10


@pytest.mark.parametrize("body", [b"", b"\x00\xff\xfe", b"<<<>>>", b"<?xml version='1.0'?><a/>"])
def test_garbage_never_raises(body: bytes) -> None:
    assert parse_html(body, "text/html").links == []


def test_pages_with_an_xml_declaration_are_read_and_empty_ones_say_so() -> None:
    page = parse_html(b'<?xml version="1.0" encoding="UTF-8"?>\n<html xmlns="http://www.w3.org/1999/'
                      b'xhtml"><head><title>Chapter 2</title></head><body><a accesskey="n" '
                      b'href="ch03.html">Next</a></body></html>', "text/html")
    assert (page.title, [link.url for link in page.links], page.problem) == (
        "Chapter 2", ["ch03.html"], None)
    assert parse_html(b"", "text/html").problem == "empty body"
    assert parse_html(b"<html><body><div></div></body></html>", None).problem == \
        "no text and no links"


def test_charset_header_then_meta_then_detection() -> None:
    latin = "<meta charset='iso-8859-1'><p>café</p>".encode("latin-1")
    assert "café" in decode_body(latin, None)
    assert "café" in decode_body("<p>café</p>".encode(), "text/html; charset=utf-8")


def test_links_in_navigation_and_without_anchor_rank_lower() -> None:
    from crawlapp.core.priority import link_priority

    page = parse_html(b"<nav><a href='/menu'>Menu</a></nav><main><a href='/story'>Story</a>"
                      b"<a href='/bare'><img src=x></a></main><footer><a href='/legal'>L</a>"
                      b"</footer>", "text/html")
    context = {link.url: link.boilerplate for link in page.links}
    assert context == {"/menu": True, "/story": False, "/bare": False, "/legal": True}
    story = link_priority(1, False, "Story")
    assert story == depth_priority(1)
    assert story > link_priority(1, False, "") > link_priority(1, True, "Menu")
    assert link_priority(1, True, "Menu") > link_priority(2, False, "Story") * 0.8


def test_canonical_link_and_robots_directives() -> None:
    page = parse_html(b"<head><link rel='alternate' href='/amp'>"
                      b"<LINK REL='Canonical' HREF=' /article '>"
                      b"<meta name=ROBOTS content='NoIndex'></head><a href=x>x</a>", "text/html")
    assert page.canonical == "/article"
    assert page.meta_noindex and not page.meta_nofollow
    assert parse_html(b"<a href=x>x</a>", "text/html").canonical is None


@pytest.mark.parametrize(("value", "directives"), [
    (None, (False, False)), ("", (False, False)), ("noindex", (False, True)),
    ("NOFOLLOW, noarchive", (True, False)), ("none", (True, True)),
    ("crawlapp: noindex", (False, True)), ("index, follow", (False, False)),
])
def test_robots_directives(value: str | None, directives: tuple[bool, bool]) -> None:
    assert robots_directives(value) == directives


def test_parse_page_records_another_canonical_and_queues_it() -> None:
    settings = load_settings({})
    body = (b"<head><link rel=canonical href='/article?utm_source=x'></head>"
            b"<meta name=robots content=nofollow><a href='/other'>o</a>")
    page = Page(url="http://a.com/print", status=Status.FETCHED, content_type="text/html",
                body_gz=gzip.compress(body))
    parsed = parse_page(page, settings, Counter())
    # the request URL as written; its dedup key drops the tracking parameter
    assert parsed.canonical == "http://a.com/article?utm_source=x"
    assert parsed.links == [Link("http://a.com/article?utm_source=x")]  # no /other
    same = Page(url="http://a.com/article", status=Status.FETCHED, content_type="text/html",
                body_gz=gzip.compress(b"<link rel=canonical href='/article?utm_source=y'>"))
    assert parse_page(same, settings, Counter()).canonical is None
