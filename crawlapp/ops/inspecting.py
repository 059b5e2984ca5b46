"""What the crawler knows of one page, of its links, of an origin's robots.txt and of the
denylist: the reads behind `page show`, `links`, `robots check --host` and `block --list`."""

from __future__ import annotations

import gzip
from typing import Any

from crawlapp.adapters.context import Context
from crawlapp.adapters.db import repository
from crawlapp.core.robots import RobotsPolicy
from crawlapp.core.urls import dedup_key, url_hash

# The URL row's columns `page show` lists, in its order.
PAGE_COLUMNS = (
    "url_hash", "host", "depth", "status", "priority", "authority", "link_context",
    "http_status", "content_type", "content_length", "content_hash", "content_dedup",
    "duplicate_of", "storage_key", "title",
    "etag", "last_modified", "redirect_to", "redirect_hops", "canonical_url", "noindex",
    "rendered", "render_error", "raw_storage_key", "discovered_at", "last_fetched_at",
    "next_crawl_at", "sitemap_lastmod", "fail_count", "last_error")


def page(ctx: Context, url: str, with_body: bool = False) -> dict[str, Any] | None:
    """The row of request URL `url` with its dedup key, SimHash in hex and number of
    outbound links, and with `with_body` the stored body as text; None if it is not known."""
    with ctx.sessions() as session:
        row = repository.get_url(session, url_hash(url))
        if row is None:
            return None
        data = ({"url": row.url, "key": dedup_key(row.url)}
                | {col: getattr(row, col) for col in PAGE_COLUMNS})
        data["simhash"] = f"{row.simhash & (2**64 - 1):016x}" if row.simhash is not None else None
        data["outbound_links"] = repository.outbound_links(session, row.url_hash)
        data["changes"] = _changes(row.changes)
    if with_body and data["storage_key"]:
        data["body"] = gzip.decompress(ctx.blobs.get(data["storage_key"])).decode(
            "utf-8", errors="replace")
    return data


def _changes(packed: bytes | None) -> dict[str, Any] | None:
    """What the re-crawl policy learned of a page's changes (core/freshness.py): the changes
    and seconds its visits saw, its estimated change rate as a mean interval (the prior of
    a page without history: its own record only), its link changes, its last change seen."""
    from crawlapp.core.freshness import ChangeRecord  # numpy: for this command only
    if packed is None:
        return None
    record = ChangeRecord.unpack(packed)
    seen = record.changes + record.censored
    watched = record.exposure + record.censored_time
    return {"changes_seen": round(seen, 2), "seconds_watched": round(watched, 1),
            "mean_change_interval": round(1 / rate, 1)
            if (rate := record.rate(1 / max(watched, 1.0))) > 0 else None,
            "link_changes_seen": round(record.link_changes, 2),
            "visits_a_second_for_links": round(record.hub_rate, 6),
            "expected_freshness": round(record.freshness, 4),
            "last_change_seen_between": [record.changed_after, record.changed_by]
            if record.changed_by else None}


def links(ctx: Context, url: str, inbound: bool, limit: int) -> list[dict[str, Any]] | None:
    """The recorded links out of request URL `url` (into it with `inbound`), `limit` at
    most: the other URL, its dedup key, anchor, nofollow and status; None if it is not known."""
    with ctx.sessions() as session:
        if repository.get_url(session, url_hash(url)) is None:
            return None
        found = repository.links_of(session, url_hash(url), inbound, limit)
    return [{"url": f.url, "key": dedup_key(f.url), "anchor": f.anchor, "nofollow": f.nofollow,
             "status": f.status} for f in found]


def robots_policy(ctx: Context, origin: str) -> RobotsPolicy | None:
    """The robots.txt policy the crawler holds for an origin (the hosts table), if any."""
    with ctx.sessions() as session:
        known = repository.robots_of(session, origin)
    return None if known is None else RobotsPolicy(*known)


def denylist(ctx: Context) -> list[dict[str, Any]]:
    """The denylist's entries by pattern: pattern, reason, created_at."""
    with ctx.sessions() as session:
        return [{"pattern": d.pattern, "reason": d.reason, "created_at": d.created_at}
                for d in repository.denylist(session)]
