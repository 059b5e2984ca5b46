"""Crawl counters kept in one Redis hash, so every worker process adds to the same numbers."""

from __future__ import annotations

from collections.abc import Mapping

from crawlapp.context import Context


def bump(ctx: Context, counts: Mapping[str, int], prefix: str = "") -> None:
    """Add `counts` to the crawl counters in one round trip."""
    items = {f"{prefix}{k}": v for k, v in counts.items() if v}
    if not items:
        return
    pipe = ctx.redis.pipeline(transaction=False)
    for field, value in items.items():
        pipe.hincrby(ctx.key("counters"), field, value)
    pipe.execute()


def read(ctx: Context) -> dict[str, int]:
    return {k.decode(): int(v) for k, v in ctx.redis.hgetall(ctx.key("counters")).items()}
