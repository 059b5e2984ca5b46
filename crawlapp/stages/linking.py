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
from typing import Any, NamedTuple

from sqlalchemy.orm import Session

from crawlapp.adapters.context import Context
from crawlapp.adapters.db import repository
from crawlapp.core.priority import depth_priority, link_priority
from crawlapp.core.records import Page, QueuedURL, Status
from crawlapp.core.traps import PatternBudget, TrapRules, url_pattern
from crawlapp.core.urls import dedup_key, host_of, origin_of, url_hash

Rows = dict[str, dict[str, Any]]
# status of a page -> depth its links add (a robots.txt record's sitemaps are at depth 0)
FOLLOWED_STATUSES: dict[str, int] = {Status.FETCHED: 1, Status.REDIRECTED: 0, Status.ROBOTS: 1}


def url_row(url: str, depth: int, max_depth: int, now: datetime,
            priority: float | None = None) -> dict[str, Any]:
    return {"url_hash": url_hash(url), "url": url, "host": host_of(url), "depth": depth,
            "priority": depth_priority(depth) if priority is None else priority,
            "discovered_at": now,
            "status": Status.QUEUED if depth <= max_depth else Status.TOO_DEEP}


def _add_row(rows: Rows, row: dict[str, Any]) -> None:
    known = rows.get(row["url_hash"])
    if known is None or known["depth"] > row["depth"]:
        rows[row["url_hash"]] = row


def plan_links(pages: list[Page], max_depth: int, now: datetime, traps: TrapRules,
               denied: frozenset[str] = frozenset()
               ) -> tuple[Rows, list[dict[str, Any]], Counter[tuple[str, str]]]:
    """The URL rows to add (by hash, shallowest depth wins), the edges, and the links
    refused (nofollow, a `denied` host, trap rules on the dedup key: a session id the key
    drops is no trap), counted by (reason, host). Pure."""
    rows: Rows = {}
    edges: dict[tuple[str, str], dict[str, Any]] = {}
    refused: Counter[tuple[str, str]] = Counter()
    for page in pages:
        depth = page.depth + FOLLOWED_STATUSES.get(page.status, 1)
        for link in page.links:
            row = url_row(link.url, depth, max_depth, now,
                          link_priority(depth, link.boilerplate, link.anchor))
            edges.setdefault((page.url_hash, row["url_hash"]), {
                "source_hash": page.url_hash, "target_hash": row["url_hash"],
                "anchor": link.anchor or None, "nofollow": link.nofollow})
            reason = ("nofollow" if link.nofollow else "denylist" if row["host"] in denied
                      else traps.refusal(dedup_key(link.url), now.date()))
            if reason:
                refused[(reason, row["host"])] += 1
                continue
            if row["status"] == Status.TOO_DEEP:
                refused[(Status.TOO_DEEP, row["host"])] += 1
            _add_row(rows, row)
    return rows, list(edges.values()), refused


def _room(counts: Counter[str], totals: list[int], cap: int) -> dict[str, int]:
    """How many of this batch's URLs each key may still admit, from the totals after adding."""
    return {key: cap - (int(total) - n) for (key, n), total in zip(counts.items(), totals,
                                                                    strict=True)}


def _within_budget(ctx: Context, session: Session, candidates: list[QueuedURL]
                   ) -> list[QueuedURL]:
    """Count newly queued URLs per host and per (host, URL pattern) in one round trip.

    URLs past CRAWL_MAX_PAGES_PER_HOST become 'over_budget', and URLs past
    CRAWL_TRAP_PATTERN_CAP of one pattern on one host become 'trap', instead of queued.
    """
    if not candidates:
        return candidates
    hosts = [host_of(item.url) for item in candidates]
    patterns = [PatternBudget.key(host, url_pattern(dedup_key(item.url)))
                for host, item in zip(hosts, candidates, strict=True)]
    per_host, per_pattern = Counter(hosts), Counter(patterns)
    host_totals, pattern_totals = ctx.budgets.add(per_host, per_pattern)
    host_room = _room(per_host, host_totals, ctx.settings.max_pages_per_host)
    pattern_room = _room(per_pattern, pattern_totals, ctx.settings.trap_pattern_cap)
    kept: list[QueuedURL] = []
    refused: dict[str, list[str]] = {Status.OVER_BUDGET: [], Status.TRAP: []}
    for host, pattern, item in zip(hosts, patterns, candidates, strict=True):
        host_room[host] -= 1
        pattern_room[pattern] -= 1
        if host_room[host] < 0:
            refused[Status.OVER_BUDGET].append(url_hash(item.url))
        elif pattern_room[pattern] < 0:
            refused[Status.TRAP].append(url_hash(item.url))
        else:
            kept.append(item)
    for status, hashes in refused.items():
        repository.set_status(session, hashes, status)
    return kept


def _settle(ctx: Context, session: Session, rows: Rows, now: datetime) -> tuple[int, Rows]:
    """Insert new rows, lower known depths; queue what must be; return the next wave of rows.

    Two-tier URL dedup: the Bloom filter answers for the whole batch in one round trip;
    "definitely new" rows are inserted (ON CONFLICT still guards a Bloom filter that lost
    its state), "maybe seen" rows are looked up, and those the database does not know (a
    Bloom false positive) are inserted too, so a false positive never loses a URL.
    """
    max_depth = ctx.settings.max_depth
    maybe_seen = ctx.url_seen.check_and_add([bytes.fromhex(h) for h in rows])
    new = repository.add_urls(session, [row for row, seen in zip(rows.values(), maybe_seen,
                                                                    strict=True) if not seen])
    known, lowered = repository.lower_depths(
        session, [row for h, row in rows.items() if h not in new])
    new |= repository.add_urls(session, [row for h, row in rows.items()
                                         if h not in new and h not in known])
    for h in new:
        rows[h]["new"] = True
    fresh = [QueuedURL(rows[h]["url"], rows[h]["depth"], rows[h]["priority"])
             for h in new if rows[h]["status"] == Status.QUEUED]
    unblocked = [item for item in lowered
                 if item.status == Status.TOO_DEEP and item.new_depth <= max_depth]
    repository.set_status(session, [item.url_hash for item in unblocked], Status.QUEUED)
    fresh += [QueuedURL(item.url, item.new_depth, item.priority) for item in unblocked]
    queue = _within_budget(ctx, session, fresh)
    queue += [QueuedURL(item.url, item.new_depth, item.priority, replaces_depth=item.old_depth)
              for item in lowered if item.status == Status.QUEUED]
    ctx.frontier.add(queue, time.time())
    passed_on = {item.url_hash: item.new_depth + FOLLOWED_STATUSES[item.status]
                 for item in lowered if item.status in FOLLOWED_STATUSES}
    wave: Rows = {}
    for source, target, nofollow in repository.link_targets(session, list(passed_on)):
        if not nofollow:
            _add_row(wave, url_row(target, passed_on[source], max_depth, now))
    return len(new), wave


def _blocked_by_robots(ctx: Context, rows: Rows) -> None:
    """Record queued rows whose origin's robots.txt is known and disallows them as blocked,
    with the rule; the others are checked again just before their fetch."""
    policies = ctx.robots.load({origin_of(row["url"]) for row in rows.values()
                                if row["status"] == Status.QUEUED})
    agent = ctx.settings.product_token
    for row in rows.values():
        policy = policies.get(origin_of(row["url"]))
        if (row["status"] == Status.QUEUED and policy is not None and policy.mode == "rules"
                and not policy.allowed(row["url"], agent)):
            row.update(status=Status.BLOCKED,
                       last_error=f"robots: {policy.blocking_rule(row['url'], agent)}")


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


def _record_hops(ctx: Context, pages: list[Page]) -> None:
    """A redirect's target remembers how many hops led to it (the parse stage stops a chain)."""
    ctx.hops.record({page.links[0].url: page.redirect_hops + 1 for page in pages
                     if page.status == Status.REDIRECTED and page.links})


class Extracted(NamedTuple):
    """What extract_links did: new URLs recorded, distinct link targets already known (URL
    dedup hits), links refused by (reason, host), new URLs recorded as blocked by robots.txt."""

    added: int
    known: int
    refused: Counter[tuple[str, str]]
    robots_blocked: int


def extract_links(ctx: Context, pages: list[Page]) -> Extracted:
    denied = ctx.denylist.denied_hosts(
        host_of(link.url) for page in pages for link in page.links)
    rows, edges, refused = plan_links(pages, ctx.settings.max_depth, datetime.now(UTC),
                                      ctx.settings.traps, denied)
    _blocked_by_robots(ctx, rows)
    _record_hops(ctx, pages)
    added = enqueue_new(ctx, rows, edges)
    blocked = sum(1 for row in rows.values() if row["status"] == Status.BLOCKED and row.get("new"))
    return Extracted(added, max(0, len(rows) - added), refused, blocked)
