"""Stage 5, extract_links: new URLs into the database and the frontier, edges recorded.

A URL's depth is its shortest distance from a seed. When a known URL is found again
closer to a seed, its depth is lowered: a waiting URL moves to its new depth, a URL that
was too deep becomes queued, and a fetched page passes the shorter distance on to the
pages it links to (from the recorded link edges), so no page within the depth limit is
missed because a longer path happened to find it first.
"""

from __future__ import annotations

import time
from collections import Counter
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.orm import Session

from crawlapp.context import Context
from crawlapp.db import repository
from crawlapp.frontier import QueuedURL
from crawlapp.pipeline.pages import Page
from crawlapp.priority import depth_priority
from crawlapp.urls import host_of, url_hash

Rows = dict[str, dict[str, Any]]
FOLLOWED_STATUSES = {"fetched": 1, "redirected": 0}  # status -> depth added by its links


def url_row(url: str, depth: int, max_depth: int, now: datetime) -> dict[str, Any]:
    return {"url_hash": url_hash(url), "url": url, "host": host_of(url), "depth": depth,
            "priority": depth_priority(depth), "discovered_at": now,
            "status": "queued" if depth <= max_depth else "too_deep"}


def _add_row(rows: Rows, row: dict[str, Any]) -> None:
    known = rows.get(row["url_hash"])
    if known is None or known["depth"] > row["depth"]:
        rows[row["url_hash"]] = row


def plan_links(pages: list[Page], max_depth: int, now: datetime
               ) -> tuple[Rows, list[dict[str, Any]], Counter[str]]:
    """The URL rows to add (by hash, shallowest depth wins), the edges, and refusals. Pure."""
    rows: Rows = {}
    edges: dict[tuple[str, str], dict[str, Any]] = {}
    refused: Counter[str] = Counter()
    for page in pages:
        depth = int(page["depth"]) + FOLLOWED_STATUSES.get(page.get("status", ""), 1)
        for target, anchor, nofollow in page.get("links") or ():
            row = url_row(target, depth, max_depth, now)
            edges.setdefault((page["url_hash"], row["url_hash"]), {
                "source_hash": page["url_hash"], "target_hash": row["url_hash"],
                "anchor": anchor or None, "nofollow": bool(nofollow)})
            if nofollow:
                refused["nofollow"] += 1
                continue
            if row["status"] == "too_deep":
                refused["too_deep"] += 1
            _add_row(rows, row)
    return rows, list(edges.values()), refused


def _within_budget(ctx: Context, session: Session, candidates: list[QueuedURL]
                   ) -> list[QueuedURL]:
    """Count newly queued URLs per host; those past CRAWL_MAX_PAGES_PER_HOST become
    'over_budget' instead of queued."""
    per_host = Counter(host_of(item.url) for item in candidates)
    if not per_host:
        return candidates
    pipe = ctx.redis.pipeline(transaction=False)
    for host, n in per_host.items():
        pipe.hincrby(ctx.key("hostcount"), host, n)
    totals = dict(zip(per_host, pipe.execute(), strict=True))
    room = {host: ctx.settings.max_pages_per_host - (int(totals[host]) - n)
            for host, n in per_host.items()}
    kept: list[QueuedURL] = []
    over: list[str] = []
    for item in candidates:
        host = host_of(item.url)
        if room[host] > 0:
            room[host] -= 1
            kept.append(item)
        else:
            over.append(url_hash(item.url))
    repository.set_status(session, over, "over_budget")
    return kept


def _settle(ctx: Context, session: Session, rows: Rows, now: datetime) -> tuple[int, Rows]:
    """Insert new rows, lower known depths; queue what must be; return the next wave of rows."""
    max_depth = ctx.settings.max_depth
    new = repository.add_urls(session, list(rows.values()))
    lowered = repository.lower_depths(
        session, [row for h, row in rows.items() if h not in new])
    fresh = [QueuedURL(rows[h]["url"], rows[h]["depth"], rows[h]["priority"])
             for h in new if rows[h]["status"] == "queued"]
    unblocked = [item for item in lowered
                 if item.status == "too_deep" and item.new_depth <= max_depth]
    repository.set_status(session, [item.url_hash for item in unblocked], "queued")
    fresh += [QueuedURL(item.url, item.new_depth, depth_priority(item.new_depth))
              for item in unblocked]
    queue = _within_budget(ctx, session, fresh)
    queue += [QueuedURL(item.url, item.new_depth, depth_priority(item.new_depth),
                        replaces_depth=item.old_depth)
              for item in lowered if item.status == "queued"]
    ctx.frontier.add(queue, time.time())
    passed_on = {item.url_hash: item.new_depth + FOLLOWED_STATUSES[item.status]
                 for item in lowered if item.status in FOLLOWED_STATUSES}
    wave: Rows = {}
    for source, target, nofollow in repository.link_targets(session, list(passed_on)):
        if not nofollow:
            _add_row(wave, url_row(target, passed_on[source], max_depth, now))
    return len(new), wave


def enqueue_new(ctx: Context, rows: Rows, edges: list[dict[str, Any]] | None = None) -> int:
    """Record the rows and edges and queue what is new; commit after the frontier has them."""
    now = datetime.now(UTC)
    added = 0
    with ctx.sessions.begin() as session:
        if edges:
            repository.add_links(session, edges)
        while rows:
            new, rows = _settle(ctx, session, rows, now)
            added += new
    return added


def extract_links(ctx: Context, pages: list[Page]) -> tuple[int, Counter[str]]:
    """Returns how many new URLs were recorded, and the links refused by reason."""
    rows, edges, refused = plan_links(pages, ctx.settings.max_depth, datetime.now(UTC))
    return enqueue_new(ctx, rows, edges), refused
