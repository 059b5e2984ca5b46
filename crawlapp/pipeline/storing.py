"""Stage 4, store: bodies to the blob store first, then the batch's URL rows and robots.txt
answers, in one transaction."""

from __future__ import annotations

from datetime import UTC, datetime

from crawlapp import recrawl_sets
from crawlapp.blobstore import body_key
from crawlapp.context import Context
from crawlapp.db import repository
from crawlapp.pipeline import robots_cache
from crawlapp.pipeline.pages import Page
from crawlapp.recrawl import next_schedule
from crawlapp.simhash import to_signed


def _row(page: Page) -> dict[str, object]:
    when = page.get("fetched_at")
    return {
        "url_hash": page["url_hash"], "status": page["status"],
        "last_fetched_at": datetime.fromtimestamp(when, UTC) if when else None,
        "http_status": page.get("http_status"), "content_type": page.get("content_type"),
        "content_length": page.get("content_length"), "content_hash": page.get("content_hash"),
        "content_dedup": bool(page.get("content_dedup")), "duplicate_of": page.get("duplicate_of"),
        "storage_key": page.get("storage_key"), "title": page.get("title"),
        "simhash": to_signed(page["simhash"]) if page.get("simhash") is not None else None,
        "etag": page.get("etag"), "last_modified": page.get("last_modified"),
        "last_error": page.get("error"),
        "redirect_to": page["links"][0][0] if page["status"] == "redirected" and page.get("links")
        else None,
        "redirect_hops": page.get("redirect_hops") or None,
        "next_crawl_at": page.get("next_crawl_at"),
        "canonical_url": page.get("canonical"), "noindex": bool(page.get("noindex")),
        "rendered": bool(page.get("rendered")), "render_error": page.get("render_error"),
        "raw_storage_key": page.get("raw_storage_key"),
    }


def _schedule(pages: list[Page], previous: dict[str, repository.Previous]
              ) -> list[tuple[str, str, float]]:
    """Each fetched page's next fetch: (url_hash, tier, time); sets page['next_crawl_at']."""
    planned = []
    for page in pages:
        if page["status"] != "fetched":
            continue
        before = previous.get(page["url_hash"])
        changed = not page.get("not_modified") and (
            before is None or before.content_hash != page.get("content_hash"))
        plan = next_schedule(page["fetched_at"], before.interval if before else None, changed,
                             float(page.get("priority") or 0.0))
        page["next_crawl_at"] = datetime.fromtimestamp(plan.next_at, UTC)
        planned.append((page["url_hash"], plan.tier, plan.next_at))
    return planned


def store_pages(ctx: Context, pages: list[Page]) -> list[Page]:
    """Write new bodies (idempotent), then commit every page's row and robots.txt answer in
    one transaction, then schedule the next fetch of each page (the database keeps
    next_crawl_at too); bodies leave the batch. Running it twice on a batch changes nothing."""
    # Work on copies: the batch as received stays whole (bodies included), so a task retried
    # after a failure below uploads the same bodies again.
    pages = [dict(page) for page in pages]
    uploads = []
    for page in pages:
        if (page.get("content_hash") and not page.get("near_duplicate")
                and not page.get("unstored")):
            page["storage_key"] = body_key(page["content_hash"])
        body = page.pop("body_gz", None)
        if body is not None:
            uploads.append((page["storage_key"], body, page.get("content_type")))
        raw = page.pop("raw_gz", None)  # a rendered page's body as fetched (render_store_raw)
        if raw is not None and page.get("storage_key"):
            page["raw_storage_key"] = body_key(page["raw_hash"])
            uploads.append((page["raw_storage_key"], raw, "text/html"))
    ctx.blobs.put_many(uploads)
    robots = [p for p in pages if p["status"] == "robots"]
    urls = [p for p in pages if p["status"] != "robots"]
    with ctx.sessions.begin() as session:
        robots_cache.write(session, [p["robots"] for p in robots], [p["fetched_at"] for p in robots])
        previous = repository.previous_fetches(
            session, [p["url_hash"] for p in urls if p["status"] == "fetched"])
        planned = _schedule(urls, previous)
        rows = [_row(page) for page in urls]
        repository.record_fetches(session, [r for r, p in zip(rows, urls, strict=True)
                                            if not p.get("not_modified")])
        repository.record_fetches(session, [r for r, p in zip(rows, urls, strict=True)
                                            if p.get("not_modified")],
                                  repository.NOT_MODIFIED_COLUMNS)
    recrawl_sets.schedule(ctx, planned)
    for page in pages:
        page.pop("next_crawl_at", None)  # a datetime: not for the wire
    return pages
