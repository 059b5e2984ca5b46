"""Page records as the fetch stage makes them (crawlapp.core.records.Page): from a lease, filled
from what its request got, a robots.txt answer, a URL refused."""

from __future__ import annotations

import gzip
import hashlib
from base64 import b32encode

from crawlapp.core.bodies import bodies_of, compress, fetched_apart, fetched_content
from crawlapp.core.records import Fetched, Lease, Link, Page, RobotsAnswer, Status, with_note
from crawlapp.core.robots import RobotsPolicy, robots_answer
from crawlapp.core.sitemaps import default_sitemap
from crawlapp.core.urls import request_urls, url_hash


def page_for(lease: Lease) -> Page:
    return Page(url=lease.url, url_hash=url_hash(lease.url), host=lease.host, depth=lease.depth,
                hops=lease.hops)


def status_of(fetched: Fetched) -> Status:
    if fetched.error or fetched.status is None:
        return Status.FAILED
    if 200 <= fetched.status < 300 or fetched.status == 304:
        return Status.FETCHED
    if 300 <= fetched.status < 400:
        return Status.REDIRECTED
    return Status.FAILED


def apply_fetch(page: Page, fetched: Fetched, answer_bytes: int) -> Page:
    """Fill a page record from what its request got; the body is gzip-compressed once here.
    A redirect's or an error answer's body is kept apart for the archive, its first
    `answer_bytes` only (`truncated` when longer); so is a 2xx answer too large, as much of
    it as was read (`truncated`)."""
    headers = fetched.headers
    page.status = status_of(fetched)
    page.http_status = fetched.status
    page.error = fetched.error and with_note(fetched.error, fetched.error_note)
    page.fetched_at = fetched.ended
    page.content_type = headers.get("content-type")
    page.etag = headers.get("etag")
    page.last_modified = headers.get("last-modified")
    page.location = headers.get("location")
    page.x_robots = headers.get("x-robots-tag")
    _keep_exchange(page, fetched)
    if fetched.status == 304:
        page.not_modified = True  # a conditional GET: nothing changed, nothing to store
    elif page.status == Status.FETCHED:
        fetched_content(page, compress(fetched.body))
        page.content_length = len(fetched.body)
        page.payload_digest = payload_digest(fetched.body)
    elif fetched.status is not None and (not fetched.error or fetched.truncated):
        too_large = fetched.truncated and 200 <= fetched.status < 300
        kept = fetched.body if too_large else fetched.body[:answer_bytes]
        page.truncated = fetched.truncated or len(kept) < len(fetched.body)
        _keep_raw(page, kept)
    return page


def payload_digest(body: bytes) -> str:
    """The WARC payload digest of a body as Heritrix and Common Crawl write it."""
    return "sha1:" + b32encode(hashlib.sha1(body).digest()).decode("ascii")


def _keep_exchange(page: Page, fetched: Fetched) -> None:
    """The request and response headers, server address and protocol, for the fetch
    history."""
    page.request_headers = fetched.request_headers
    page.response_headers = fetched.response_headers
    page.ip_address = fetched.ip_address
    page.http_version = fetched.http_version
    page.cipher_suite = fetched.cipher_suite


def robots_page(fetched: Fetched, host: str, sitemaps: list[str], robots: RobotsAnswer,
                hops: int = 0) -> Page:
    """A record of a robots.txt answer: `robots` for its hosts row (written by the store
    stage), and its sitemaps as links, so they are queued (at depth 0, like seeds) by
    extract_links. It has no URL row of its own; an HTTP answer's body travels apart,
    stored for the fetch history. `hops` are those of the URL it was fetched for (its
    sitemaps are one off-scope hop further when out of scope)."""
    page = Page(url=fetched.url, url_hash=url_hash(fetched.url), host=host, depth=-1,
                status=Status.ROBOTS, fetched_at=fetched.ended, robots=robots,
                links=[Link(u) for u in sitemaps], hops=hops)
    if fetched.status is not None and not fetched.error:
        page.http_status = fetched.status
        page.content_type = fetched.headers.get("content-type")
        _keep_raw(page, fetched.body)
        _keep_exchange(page, fetched)
        page.truncated = fetched.truncated  # cut at MAX_ROBOTS_BYTES
    return page


def robots_policy(result: Fetched, before: RobotsPolicy | None = None) -> RobotsPolicy:
    """The policy a robots.txt answer gives; `before`, the origin's policy when this answer
    is a hop of its redirect."""
    hops = before.redirect[0] if before is not None and before.mode == "redirect" else 0
    return robots_answer(result.url, result.status, result.error, result.body,
                         result.headers.get("location"), hops)


def sitemap_links(origin: str, policy: RobotsPolicy) -> list[str]:
    """The sitemap URLs a robots.txt names; /sitemap.xml when it names none. Pure."""
    if policy.mode == "rules":
        named = policy.sitemaps() or [default_sitemap(origin)]
    elif policy.mode == "allow_all":
        named = [default_sitemap(origin)]
    else:
        return []
    links, _ = request_urls(named)
    return links


def _keep_raw(page: Page, body: bytes) -> None:
    """The body as fetched, to store beside the page's own for the fetch history."""
    fetched_apart(page, compress(body))
    page.payload_digest = payload_digest(body)


def body_of(page: Page) -> bytes:
    """The page's content, decompressed (empty when the record carries none)."""
    content = bodies_of(page).content
    return gzip.decompress(content.gz) if content is not None else b""


def blocked(page: Page, reason: str, when: float) -> Page:
    page.status = Status.BLOCKED
    page.error = reason
    page.fetched_at = when
    return page
