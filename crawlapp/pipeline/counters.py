"""Crawl counters kept in one Redis hash, so every worker process adds to the same numbers."""

from __future__ import annotations

from collections.abc import Mapping

from crawlapp.context import Context


def bump(ctx: Context, counts: Mapping[str, int], prefix: str = "",
         refused: Mapping[tuple[str, str], int] | None = None) -> None:
    """Add `counts` to the crawl counters, and count refused links by reason (the counters)
    and by host (one hash per reason), in one round trip."""
    items = {f"{prefix}{k}": v for k, v in counts.items() if v}
    if not items and not refused:
        return
    pipe = ctx.redis.pipeline(transaction=False)
    for field, value in items.items():
        pipe.hincrby(ctx.key("counters"), field, value)
    for (reason, host), n in (refused or {}).items():
        pipe.hincrby(ctx.key("counters"), f"refused:{reason}", n)
        pipe.hincrby(ctx.key("refused", reason), host, n)
    pipe.execute()


def read(ctx: Context) -> dict[str, int]:
    return {k.decode(): int(v) for k, v in ctx.redis.hgetall(ctx.key("counters")).items()}
