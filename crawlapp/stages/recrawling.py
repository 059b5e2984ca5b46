"""Draining the re-crawl schedule: due pages go back into the frontier with their validators."""

from __future__ import annotations

import time

from crawlapp.adapters.context import Context
from crawlapp.adapters.db import repository
from crawlapp.core.records import Status
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
        requeue(ctx, rows)
    ctx.recrawls.acknowledge(claims)
    return len(rows)
