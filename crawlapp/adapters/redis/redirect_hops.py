"""How many redirects led to a URL waiting to be fetched (the parse stage stops a chain at
CRAWL_MAX_REDIRECTS). One key per redirect target, `<prefix>:hops:<url hash>`, written by the
links stage, read and deleted by the fetch stage, and expiring after TTL whatever happens to
the URL (a target refused or never fetched leaves nothing behind for long). No rebuild: a
lost count only lets a chain run CRAWL_MAX_REDIRECTS hops more."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from crawlapp.adapters.context import Context
from crawlapp.core.urls import url_hash

TTL = 7 * 86400


def key(ctx: Context, url: str) -> str:
    return ctx.key("hops", url_hash(url))


def record(ctx: Context, hops: Mapping[str, int]) -> None:
    """Remember the hops that led to each redirect target, in one round trip."""
    if not hops:
        return
    pipe = ctx.redis.pipeline(transaction=False)
    for url, n in hops.items():
        pipe.set(key(ctx, url), n, ex=TTL)
    pipe.execute()


def keys(ctx: Context, urls: Iterable[str]) -> list[str]:
    """The keys of these URLs, to read (MGET) or forget (DEL) in a caller's round trip."""
    return [key(ctx, url) for url in urls]
