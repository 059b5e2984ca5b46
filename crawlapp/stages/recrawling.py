"""Draining the re-crawl schedule: due pages go back into the frontier with their validators,
scored again (their host's authority now, their freshness: how overdue they are)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import UTC

from crawlapp.adapters.context import Context
from crawlapp.adapters.db import repository
from crawlapp.adapters.db.models import Url
from crawlapp.core.priority import depth_priority, freshness
from crawlapp.core.records import QueuedURL, Status
from crawlapp.core.recrawl import validators
from crawlapp.stages.admission import requeue

CLAIM_SECONDS = 300.0  # a claim not acknowledged by then goes back to its tier
DRAIN_LIMIT = 2000
RECRAWLED_STATUSES = (Status.FETCHED, Status.REDIRECTED, Status.FAILED)


def drain(ctx: Context, now: float | None = None, limit: int = DRAIN_LIMIT) -> int:
    """Claim due pages, queue them again (bypassing URL dedup) with their stored ETag and
    Last-Modified for a conditional GET, then acknowledge the claims. Returns how many."""
    claims = ctx.recrawls.claim(time.time() if now is None else now, limit, CLAIM_SECONDS)
    if not claims:
        return 0
    hashes = [c.split("|", 1)[1] for c in claims]
    with ctx.sessions.begin() as session:
        rows = [r for r in repository.urls_by_hash(session, hashes)
                if r.status in RECRAWLED_STATUSES]
        repository.set_status(session, [r.url_hash for r in rows], Status.QUEUED)
        packed = {r.url: v for r in rows if (v := validators(r.etag, r.last_modified))}
        ctx.validators.store(packed)
        scored = rescore(ctx, rows, time.time() if now is None else now)
        repository.set_scores(session, [(url_hash, item.priority, authority)
                                        for url_hash, item, authority in scored])
        requeue(ctx, [item for _, item, _ in scored])
    ctx.recrawls.acknowledge(claims)
    return len(rows)


def rescore(ctx: Context, rows: Sequence[Url], now: float
            ) -> list[tuple[str, QueuedURL, float]]:
    """(url_hash, the URL with its new priority, its host's authority) of each row: the
    freshness of a page is the time since its last fetch over its re-crawl interval."""
    authority = ctx.authority.load(r.host for r in rows)
    weights = ctx.settings.priority_weights
    out = []
    for r in rows:
        last, nxt = r.last_fetched_at, r.next_crawl_at
        fresh = freshness(
            now - last.replace(tzinfo=last.tzinfo or UTC).timestamp() if last else 0.0,
            (nxt - last).total_seconds() if last and nxt else None)
        context = r.link_context if r.link_context is not None else depth_priority(r.depth)
        score = weights.priority(authority[r.host], fresh, context)
        out.append((r.url_hash, QueuedURL(r.url, r.depth, score), authority[r.host]))
    return out
