"""Stage 4, store: bodies to the blob store first, then the URL rows, in one transaction."""

from __future__ import annotations

from datetime import UTC, datetime

from crawlapp.blobstore import body_key
from crawlapp.context import Context
from crawlapp.db import repository
from crawlapp.pipeline.pages import Page
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
    }


def store_pages(ctx: Context, pages: list[Page]) -> list[Page]:
    """Write new bodies (idempotent), then commit every page's row; bodies leave the batch."""
    uploads = []
    for page in pages:
        if page.get("content_hash") and not page.get("near_duplicate"):
            page["storage_key"] = body_key(page["content_hash"])
        body = page.pop("body_gz", None)
        if body is not None:
            uploads.append((page["storage_key"], body, page.get("content_type")))
    ctx.blobs.put_many(uploads)
    with ctx.sessions.begin() as session:
        repository.record_fetches(session, [_row(page) for page in pages])
    return pages
