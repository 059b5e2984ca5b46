"""Stage 3, dedup: the first page with a content hash is the original; later ones point to it."""

from __future__ import annotations

from crawlapp.context import Context
from crawlapp.pipeline.pages import Page


def dedup_pages(ctx: Context, pages: list[Page]) -> list[Page]:
    """Claim each content hash atomically (SET NX) in one round trip; mark the duplicates."""
    hashed = [p for p in pages if p.get("content_hash")]
    if not hashed:
        return pages
    pipe = ctx.redis.pipeline(transaction=False)
    for page in hashed:
        key = ctx.key("content", page["content_hash"])
        pipe.set(key, page["url_hash"], nx=True)
        pipe.get(key)
    replies = pipe.execute()
    for i, page in enumerate(hashed):
        owner = replies[2 * i + 1].decode()
        if owner != page["url_hash"]:
            page.update(content_dedup=True, duplicate_of=owner)
            page.pop("body_gz", None)
    return pages
