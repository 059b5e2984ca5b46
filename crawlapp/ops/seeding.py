"""Adding seeds: URL rows at depth 0, queued in the frontier, and the scope rules they add."""

from __future__ import annotations

from datetime import UTC, datetime

from crawlapp.adapters.context import Context
from crawlapp.adapters.db import repository
from crawlapp.core.scope import seed_rule
from crawlapp.ops.rebuild import ensure_frontier
from crawlapp.stages.admission import admit, url_row


def add_seeds(ctx: Context, urls: list[str], scope: str | None = None) -> int:
    """Record the seeds' scope rules (`scope`, default CRAWL_SCOPE: any, host, domain or
    prefix), then insert and queue the seeds not known yet (a known URL moves to depth 0);
    returns how many were new. Seeds are in scope whatever the rules say."""
    ensure_frontier(ctx)
    now = datetime.now(UTC)
    kind = scope or ctx.settings.scope
    with ctx.sessions.begin() as session:
        repository.add_scope_rules(session, [seed_rule(u, kind) or ("any", "") for u in urls],
                                   now)
        rules = repository.scope_rules(session)
    ctx.scopes.load(rules)
    rows = {row.url_hash: row for row in (url_row(u, 0, ctx.settings.max_depth, now)
                                          for u in urls)}
    return len(admit(ctx, rows))
