"""Adding seeds: URL rows at depth 0, queued in the frontier."""

from __future__ import annotations

from datetime import UTC, datetime

from crawlapp.adapters.context import Context
from crawlapp.ops.rebuild import ensure_frontier
from crawlapp.stages.admission import admit, url_row


def add_seeds(ctx: Context, urls: list[str]) -> int:
    """Insert and queue the seeds not known yet (a known URL moves to depth 0); returns how
    many were new."""
    ensure_frontier(ctx)
    now = datetime.now(UTC)
    rows = {row["url_hash"]: row for row in (url_row(u, 0, ctx.settings.max_depth, now)
                                             for u in urls)}
    return admit(ctx, rows)
