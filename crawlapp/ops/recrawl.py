"""Making pages due for a fetch again by hand (`crawlctl recrawl`); a running crawl's beat
picks them up."""

from __future__ import annotations

import time

from crawlapp.adapters.context import Context
from crawlapp.adapters.db import repository
from crawlapp.core.urls import url_hash
from crawlapp.ops.rebuild import restore_recrawls


def recrawl(ctx: Context, urls: list[str] | None = None, host: str | None = None,
            now: bool = False) -> int:
    """Make the pages of these request URLs, or of a host, or (neither given) every page due
    now, or with `now` False at each page's next crawl time. Returns how many."""
    hashes: list[str] | None = None
    if urls is not None:
        hashes = [url_hash(u) for u in urls]
    elif host is not None:
        with ctx.sessions() as session:
            hashes = repository.url_hashes_of_host(session, host)
    return restore_recrawls(ctx, hashes, time.time() if now else None)
