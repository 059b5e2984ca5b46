"""Exporting stored pages: database rows and stored bodies, written as WARC."""

from __future__ import annotations

import gzip
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import BinaryIO

from sqlalchemy import select

from crawlapp.context import Context
from crawlapp.db.models import Url
from crawlapp.warc import PageRecord, write_records

CHUNK = 500


def stored_pages(ctx: Context, since: datetime | None = None, host: str | None = None
                 ) -> Iterator[PageRecord]:
    """Every page with a stored body, oldest first, with the headers kept for it."""
    query = select(Url).where(Url.storage_key.is_not(None), Url.http_status.is_not(None))
    if since is not None:
        query = query.where(Url.last_fetched_at >= since)
    if host is not None:
        query = query.where(Url.host == host)
    last_id = 0
    while True:
        with ctx.sessions() as session:
            rows = session.scalars(query.where(Url.id > last_id).order_by(Url.id).limit(CHUNK)).all()
        if not rows:
            return
        last_id = rows[-1].id
        for row in rows:
            headers = {name: value for name, value in (
                ("Content-Type", row.content_type), ("ETag", row.etag),
                ("Last-Modified", row.last_modified)) if value}
            fetched = row.last_fetched_at or row.discovered_at
            yield PageRecord(row.url, fetched.replace(tzinfo=fetched.tzinfo or UTC),
                             int(row.http_status or 0), headers,
                             gzip.decompress(ctx.blobs.get(row.storage_key or "")),
                             ctx.settings.user_agent)


def export_warc(ctx: Context, out: BinaryIO, since: datetime | None = None,
                host: str | None = None, progress: Callable[[int], None] = lambda n: None) -> int:
    """Write the selected pages to `out`; returns how many were written."""
    def counted() -> Iterator[PageRecord]:
        for n, record in enumerate(stored_pages(ctx, since, host), start=1):
            if n % 1000 == 0:
                progress(n)
            yield record

    return write_records(out, counted())
