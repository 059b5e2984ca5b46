"""The page record that travels between stages, as a plain dict (msgpack on the wire).

Keys: url (the request URL), url_hash (of its dedup key), host, depth, status
('fetched', 'redirected', 'failed', 'blocked'), http_status, error (also "unread: <why>" for
a page that yielded nothing), fetched_at (UNIX time), content_type, etag, last_modified,
location, x_robots, content_hash, content_length, body_gz (gzip bytes, until stored), copy_gz
(an exact copy's body, written by the store stage only if its key is missing), not_modified
(a 304), redirect_hops, simhash, title, links ([request URL, anchor, nofollow, boilerplate]
lists), canonical (the page's <link rel=canonical> when it names another URL), noindex,
unstored ('canonical' or 'noindex': body not kept), content_dedup, duplicate_of,
storage_key, next_crawl_at;
robots ([origin, status, body, crawl delay], on a 'robots' record only).
"""

from __future__ import annotations

import gzip
import hashlib
from typing import Any

from crawlapp.adapters.http import Fetched
from crawlapp.adapters.redis.frontier import Lease
from crawlapp.core.records import Status
from crawlapp.core.urls import url_hash

Page = dict[str, Any]
GZIP_LEVEL = 1  # compressed once, in the fetch stage: speed over a few % of size


def page_for(lease: Lease) -> Page:
    return {"url": lease.url, "url_hash": url_hash(lease.url), "host": lease.host,
            "depth": lease.depth}


def status_of(fetched: Fetched) -> str:
    if fetched.error or fetched.status is None:
        return Status.FAILED
    if 200 <= fetched.status < 300 or fetched.status == 304:
        return Status.FETCHED
    if 300 <= fetched.status < 400:
        return Status.REDIRECTED
    return Status.FAILED


def apply_fetch(page: Page, fetched: Fetched) -> Page:
    """Fill a page record from what its request got; the body is gzip-compressed once here."""
    headers = fetched.headers
    page.update(status=status_of(fetched), http_status=fetched.status, error=fetched.error,
                fetched_at=fetched.ended, content_type=headers.get("content-type"),
                etag=headers.get("etag"), last_modified=headers.get("last-modified"),
                location=headers.get("location"), x_robots=headers.get("x-robots-tag"))
    if fetched.status == 304:
        page["not_modified"] = True  # a conditional GET: nothing changed, nothing to store
    elif page["status"] == Status.FETCHED:
        page["content_hash"] = hashlib.sha256(fetched.body).hexdigest()
        page["content_length"] = len(fetched.body)
        page["body_gz"] = gzip.compress(fetched.body, compresslevel=GZIP_LEVEL, mtime=0)
    return page


def robots_page(robots_url: str, host: str, sitemaps: list[str], when: float,
                robots: list[object]) -> Page:
    """A record of a robots.txt answer: `robots` for its hosts row (written by the store
    stage), and its sitemaps as links, so they are queued (at depth 0, like seeds) by
    extract_links. It has no URL row of its own."""
    return {"url": robots_url, "url_hash": url_hash(robots_url), "host": host, "depth": -1,
            "status": Status.ROBOTS, "fetched_at": when, "robots": robots,
            "links": [[u, "", False] for u in sitemaps]}


def blocked(page: Page, reason: str, when: float) -> Page:
    page.update(status=Status.BLOCKED, error=reason, fetched_at=when)
    return page
