"""Draining the re-crawl schedule: Redis topped up from the database with the pages coming due
within CRAWL_RECRAWL_WINDOW, then due pages back into the frontier with their validators,
scored again (their host's authority now, their freshness: how overdue they are)."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from datetime import UTC, datetime

from crawlapp.adapters.context import Context
from crawlapp.adapters.db import repository, schedule
from crawlapp.adapters.db.models import Url
from crawlapp.core.priority import NEW_FRESHNESS, depth_priority, freshness, refresh_priority
from crawlapp.core.records import QueuedURL, Status
from crawlapp.core.recrawl import RECRAWLED_STATUSES, timestamp, validators
from crawlapp.stages import revisiting
from crawlapp.stages.admission import requeue

CLAIM_SECONDS = 300.0  # a claim not acknowledged by then goes back to its tier
DRAIN_LIMIT = 2000
# A page known stale (its sitemap's lastmod) is taken as overdue by up to this much, the
# longer the slower it changes: ahead of the pages merely due, behind new URLs (4.5 minutes).
STALE_AHEAD = 240.0
LOAD_CHUNK = 5000  # scheduled rows read from the database at a time


def _moment(at: float | None) -> datetime | None:
    return None if at is None else datetime.fromtimestamp(at, UTC)


def load_window(ctx: Context, now: float, full: bool = False) -> int | None:
    """Move the Redis horizon to now + CRAWL_RECRAWL_WINDOW, then load the database's pages
    due between the previous horizon and it (`full`, or no horizon: every page due before
    it, overdue ones included). The horizon moves before the query: see recrawl_sets.py for
    why no page stored meanwhile is missed. Returns how many were loaded (None: another load
    is running)."""
    load = ctx.recrawls.begin_load(now + ctx.settings.recrawl_window, now, full)
    if load is None:
        return None
    loaded, done = 0, False
    try:
        for rows in schedule.due(ctx.sessions, _moment(load.since), _moment(load.until),
                                 LOAD_CHUNK):
            ctx.recrawls.load([r.planned() for r in rows])
            loaded += len(rows)
        done = True
    finally:
        ctx.recrawls.end_load(load, done)
    return loaded


def drain(ctx: Context, now: float | None = None, limit: int = DRAIN_LIMIT) -> int:
    """Load the window's pages coming due, claim due pages, queue them again (bypassing URL
    dedup) with their stored ETag and Last-Modified for a conditional GET, then acknowledge
    the claims. Pages of hosts on the denylist stay in the database (unblock restores them).
    Returns how many were queued."""
    now = time.time() if now is None else now
    load_window(ctx, now)
    claims = ctx.recrawls.claim(now, limit, CLAIM_SECONDS)
    if not claims:
        return 0
    hashes = [c.split("|", 1)[1] for c in claims]
    with ctx.sessions.begin() as session:
        rows = [r for r in repository.urls_by_hash(session, hashes)
                if r.status in RECRAWLED_STATUSES]
        denied = ctx.denylist.denied_hosts({r.host for r in rows})
        rows = [r for r in rows if r.host not in denied]
        repository.set_status(session, [r.url_hash for r in rows], Status.QUEUED)
        packed = {r.url: v for r in rows if (v := validators(r.etag, r.last_modified))}
        ctx.validators.store(packed)
        scored = rescore(ctx, rows, now)
        repository.set_scores(session, [(url_hash, item.priority, authority)
                                        for url_hash, item, authority in scored])
        requeue(ctx, [item for _, item, _ in scored], unless_leased=True)
    ctx.recrawls.acknowledge(claims)
    return len(rows)


def rescore(ctx: Context, rows: Sequence[Url], now: float
            ) -> list[tuple[str, QueuedURL, float]]:
    """(url_hash, the URL with its new priority, its host's authority) of each row. A page
    the `optimal` policy planned (it has a change record) goes by when it is due
    (core/priority.py: refresh_priority), due as its host's plan has it now
    (core/freshness.py: best_interval; the plan that queued it is a fraction of its interval
    old, core/recrawl.py: EARLY), or, when its sitemap's lastmod moved past its copy, overdue by
    STALE_AHEAD the more the slower it changes: of the pages known stale the slowest first,
    as a fetch of it stays fresh the longest. A hub whose visits its links earned
    (core/freshness.py: HostPlan.hub_visits) is discovery: queued as a new URL of its depth.
    Another page goes by the time since its last fetch over its re-crawl interval."""
    from crawlapp.core.freshness import (  # numpy: control only
        ChangeRecord,
        best_interval,
        hub_driven,
        kind_of,
    )
    authority = ctx.authority.load(r.host for r in rows)
    settings = ctx.settings
    weights = settings.priority_weights
    default = settings.recrawl_bounds
    planned = [r for r in rows if r.changes is not None and r.last_fetched_at is not None
               and r.next_crawl_at is not None]
    # A host's multiplier moves only with its sums, which the store stage's visits move and
    # solve again: the drain takes the one kept, whatever its age, and solves only a host
    # without one (a solve is ~1.5 ms: a drain of 2,000 pages of as many hosts would be 3 s).
    solved: dict[str, dict[str, float]] = {}
    plans, trusted = (revisiting.host_plans(ctx, {r.host for r in planned}, solved, math.inf)
                      if settings.recrawl_policy == "optimal" else ({}, frozenset()))
    out = []
    for r in rows:
        last, nxt = r.last_fetched_at, r.next_crawl_at
        since = now - timestamp(last) if last else 0.0
        context = r.link_context if r.link_context is not None else depth_priority(r.depth)
        if r.changes is not None and last is not None and nxt is not None:
            record = ChangeRecord.unpack(r.changes)
            bounds = settings.recrawl_rule_set.bounds(r.url, r.host, default)
            plan = plans.get(r.host)
            if plan is None:  # the `adaptive` policy: when its queueing time says
                interval, prior = (bounds.due_after((nxt - last).total_seconds()),
                                   1.0 / bounds.first)
                hub = record.hub_rate
            else:
                kind = kind_of(r.url)
                best = best_interval(record, plan, bounds, r.depth, kind,
                                     r.host in trusted and r.sitemap_lastmod is not None)
                interval, prior = best.interval, plan.prior_of(kind)
                hub = record.hub_rate * plan.hub_scale  # its claim, as its host grants it
            due = timestamp(last) + interval
            if r.sitemap_lastmod is not None and r.sitemap_lastmod > last:  # known stale
                lasts = 1.0 / record.rate(prior)
                due = min(due, now - STALE_AHEAD * lasts / (lasts + bounds.first))
            if hub_driven(hub, interval):  # a visit for its links: discovery
                score = weights.priority(authority[r.host], NEW_FRESHNESS, context)
            else:
                score = refresh_priority(weights, authority[r.host], due - now)
        else:
            fresh = freshness(since, (nxt - last).total_seconds() if last and nxt else None)
            score = weights.priority(authority[r.host], fresh, context)
        out.append((r.url_hash, QueuedURL(r.url, r.depth, score), authority[r.host]))
    if solved:
        pipe = ctx.redis.pipeline(transaction=False)
        ctx.change_rates.add({}, solved, pipe)
        pipe.execute()
    return out
