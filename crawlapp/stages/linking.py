"""Stage 5, extract_links: new URLs into the database and the frontier, edges recorded.

A URL's depth is its shortest distance from a seed. When a known URL is found again
closer to a seed, its depth is lowered: a waiting URL moves to its new depth, a URL that
was too deep becomes queued, and a fetched page passes the shorter distance on to the
pages it links to (from the recorded link edges), so no page within the depth limit is
missed because a longer path happened to find it first.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import NamedTuple

from crawlapp.adapters.context import Context
from crawlapp.adapters.db import repository
from crawlapp.core.priority import link_priority
from crawlapp.core.records import Page, QueuedURL, Status
from crawlapp.core.rows import LinkEdge
from crawlapp.core.scope import UNSCOPED, Scope
from crawlapp.core.traps import TrapRules
from crawlapp.core.urls import dedup_key, host_of, origin_of, url_hash
from crawlapp.stages import sitemapping
from crawlapp.stages.admission import FOLLOWED_STATUSES, Rows, add_row, admit, url_row


def plan_links(pages: list[Page], max_depth: int, now: datetime, traps: TrapRules,
               denied: frozenset[str] = frozenset(), scope: Scope = UNSCOPED
               ) -> tuple[Rows, list[LinkEdge], Counter[tuple[str, str]]]:
    """The URL rows to add (by hash, shallowest depth wins), the edges, and the links
    refused (nofollow, a `denied` host, out of `scope` or excluded, trap rules on the dedup
    key: a session id the key drops is no trap), counted by (reason, host). A link out of
    scope but allowed by CRAWL_SCOPE_HOPS carries one hop more than its page. Pure."""
    rows: Rows = {}
    edges: dict[tuple[str, str], LinkEdge] = {}
    refused: Counter[tuple[str, str]] = Counter()
    today = now.date()
    # What depends on the URL alone, once per URL of the batch (pages share many links).
    named: dict[str, tuple[str, str]] = {}  # url -> (host, url hash)
    trapped: dict[str, str | None] = {}
    for page in pages:
        depth = page.depth + FOLLOWED_STATUSES.get(page.status, 1)
        for link in page.links:
            url = link.url
            if (known := named.get(url)) is None:
                known = named[url] = (host_of(url), url_hash(url))
            host, key = known
            out_of_scope, hops = scope.check(url, host, page.hops)
            row = url_row(url, depth, max_depth, now,
                          link_priority(depth, link.boilerplate, link.anchor), hops, host, key)
            edges.setdefault((page.url_hash, key), LinkEdge(page.url_hash, key,
                                                            link.anchor or None, link.nofollow))
            reason = "nofollow" if link.nofollow else "denylist" if host in denied else out_of_scope
            if not reason:
                if url not in trapped:
                    trapped[url] = traps.refusal(dedup_key(url), today)
                reason = trapped[url]
            if reason:
                refused[(reason, host)] += 1
                continue
            if row.status == Status.TOO_DEEP:
                refused[(Status.TOO_DEEP, host)] += 1
            add_row(rows, row)
    return rows, list(edges.values()), refused


def host_links(pages: list[Page], rows: Rows, edges: list[LinkEdge]
               ) -> set[tuple[str, str]]:
    """The host graph's edges of these pages: (source host, target host) of each followed
    link (not nofollow, not a robots.txt's sitemap, to a URL admitted: `rows`) between two
    different hosts. Reads the hosts `plan_links` found, per link only dict lookups. Pure."""
    sources = {page.url_hash: host_of(page.url) for page in pages
               if page.status != Status.ROBOTS and page.links}
    return {(source, target) for edge in edges
            if not edge.nofollow and (source := sources.get(edge.source_hash))
            and (row := rows.get(edge.target_hash)) and (target := row.host) != source}


def _blocked_by_robots(ctx: Context, rows: Rows) -> Rows:
    """The rows, those queued whose origin's robots.txt is known and disallows them recorded
    as blocked, with the rule; the others are checked again just before their fetch."""
    policies = ctx.robots.load({origin_of(row.url) for row in rows.values()
                                if row.status == Status.QUEUED})
    agent = ctx.settings.product_token
    checked: Rows = {}
    for h, row in rows.items():
        policy = policies.get(origin_of(row.url))
        if (row.status == Status.QUEUED and policy is not None and policy.mode == "rules"
                and not policy.allowed(row.url, agent)):
            row = row._replace(status=Status.BLOCKED,
                               last_error=policy.refusal(row.url, agent))
        checked[h] = row
    return checked


def _record_hops(ctx: Context, pages: list[Page]) -> None:
    """A redirect's target remembers how many hops led to it (the parse stage stops a chain)."""
    ctx.hops.record({page.links[0].url: page.redirect_hops + 1 for page in pages
                     if page.status == Status.REDIRECTED and page.links})


def _at_known_depths(ctx: Context, pages: list[Page]) -> None:
    """Give each page with links the smaller of its lease's depth and its row's: a URL found
    closer to a seed while it was fetched had its row lowered while still queued, so no
    link edge passed that on, and its links would be planned one level too deep."""
    rows = [page for page in pages if page.links and page.status != Status.ROBOTS]
    if not rows:
        return
    with ctx.sessions() as session:
        known = repository.depths(session, [page.url_hash for page in rows])
    for page in rows:
        page.depth = min(page.depth, known.get(page.url_hash, page.depth))


class Extracted(NamedTuple):
    """What extract_links did: new URLs recorded, distinct link targets already known (URL
    dedup hits), links refused by (reason, host), new URLs recorded as blocked by robots.txt,
    known pages made due by their sitemap's lastmod."""

    added: int
    known: int
    refused: Counter[tuple[str, str]]
    robots_blocked: int
    sitemap_due: int = 0  # known pages a sitemap's lastmod made due


def extract_links(ctx: Context, pages: list[Page], carried: Sequence[QueuedURL] = (),
                  carried_since: float | None = None, batch_id: str | None = None
                  ) -> Extracted:
    """Admit the pages' links (of stored batch `batch_id`, see admit); `carried`: what an
    earlier try, begun at `carried_since`, left unqueued (see admit)."""
    settings = ctx.settings
    _at_known_depths(ctx, pages)
    hosts = {host_of(link.url) for page in pages for link in page.links}
    pipe = ctx.redis.pipeline(transaction=False)
    denied_reply, rules_reply = ctx.denylist.read(hosts, pipe), ctx.scopes.read(hosts, pipe)
    authority = ctx.authority.read(hosts, pipe)
    replies = pipe.execute()
    scope = Scope(rules_reply(replies), settings.scope_include, settings.scope_exclude,
                  settings.scope_hops)
    rows, edges, refused = plan_links(pages, settings.max_depth, datetime.now(UTC),
                                      settings.traps, denied_reply(replies), scope)
    rows = _blocked_by_robots(ctx, rows)
    _record_hops(ctx, pages)
    added = admit(ctx, rows, edges, host_links(pages, rows, edges), authority(replies), carried,
                  carried_since, batch_id)
    blocked = sum(1 for h in added if rows[h].status == Status.BLOCKED)
    due = sitemapping.freshen(ctx, pages)
    return Extracted(len(added), max(0, len(rows) - len(added)), refused, blocked, due)
