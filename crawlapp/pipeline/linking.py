"""Stage 5, extract_links: new URLs into the database and the frontier, edges recorded."""

from __future__ import annotations

import time
from collections import Counter
from datetime import UTC, datetime
from typing import Any

from crawlapp.context import Context
from crawlapp.db import repository
from crawlapp.frontier import QueuedURL
from crawlapp.pipeline.pages import Page
from crawlapp.priority import depth_priority
from crawlapp.urls import host_of, url_hash


def plan_links(pages: list[Page], max_depth: int, now: datetime
               ) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]], Counter[str]]:
    """The URL rows to add (by hash, shallowest depth wins), the edges, and refusals. Pure."""
    rows: dict[str, dict[str, Any]] = {}
    edges: dict[tuple[str, str], dict[str, Any]] = {}
    refused: Counter[str] = Counter()
    for page in pages:
        hop = 0 if page.get("status") == "redirected" else 1
        depth = int(page["depth"]) + hop
        for target, anchor, nofollow in page.get("links") or ():
            target_hash = url_hash(target)
            edges.setdefault((page["url_hash"], target_hash), {
                "source_hash": page["url_hash"], "target_hash": target_hash,
                "anchor": anchor or None, "nofollow": bool(nofollow)})
            if nofollow:
                refused["nofollow"] += 1
                continue
            if depth > max_depth:
                refused["over_depth"] += 1
                continue
            known = rows.get(target_hash)
            if known is None or known["depth"] > depth:
                rows[target_hash] = {
                    "url_hash": target_hash, "url": target, "host": host_of(target),
                    "depth": depth, "priority": depth_priority(depth), "status": "queued",
                    "discovered_at": now}
    return rows, list(edges.values()), refused


def enqueue_new(ctx: Context, rows: dict[str, dict[str, Any]],
                edges: list[dict[str, Any]] | None = None) -> int:
    """Insert the rows that are new and queue exactly those; commit after the frontier has them."""
    with ctx.sessions.begin() as session:
        new = repository.add_urls(session, list(rows.values()))
        ctx.frontier.add((QueuedURL(rows[h]["url"], rows[h]["depth"], rows[h]["priority"])
                          for h in new), time.time())
        if edges:
            repository.add_links(session, edges)
    return len(new)


def extract_links(ctx: Context, pages: list[Page]) -> tuple[int, Counter[str]]:
    """Returns how many new URLs were queued, and the links refused by reason."""
    rows, edges, refused = plan_links(pages, ctx.settings.max_depth, datetime.now(UTC))
    return enqueue_new(ctx, rows, edges), refused
