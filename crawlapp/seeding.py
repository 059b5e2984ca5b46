"""Adding seeds: new URL rows at depth 0, queued in the frontier."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from crawlapp.context import Context
from crawlapp.pipeline.linking import enqueue_new
from crawlapp.priority import depth_priority
from crawlapp.urls import host_of, url_hash


def add_seeds(ctx: Context, urls: list[str]) -> int:
    """Insert and queue the seeds not known yet; returns how many were new."""
    now = datetime.now(UTC)
    rows: dict[str, dict[str, Any]] = {
        url_hash(u): {"url_hash": url_hash(u), "url": u, "host": host_of(u), "depth": 0,
                      "priority": depth_priority(0), "status": "queued", "discovered_at": now}
        for u in urls}
    return enqueue_new(ctx, rows)
