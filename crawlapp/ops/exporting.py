"""Exporting stored pages: database rows and stored bodies, written as WARC.

A page whose body cannot be read (missing from the store, or not gzip) is skipped, counted and
named in the summary; the rest is exported (`crawlctl verify --repair` queues such pages again).
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import BinaryIO

from sqlalchemy import select

from crawlapp.adapters.blobstore import BodyMissing
from crawlapp.adapters.context import Context
from crawlapp.adapters.db.models import Url
from crawlapp.ops.warc import PageRecord, write_records

CHUNK = 500
EXAMPLES = 20  # skipped pages named in the summary, per reason


@dataclass
class Exported:
    """What an export wrote, and what it skipped by reason, with the first few URLs of each."""

    written: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    examples: dict[str, list[str]] = field(default_factory=dict)

    def skip(self, reason: str, url: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1
        named = self.examples.setdefault(reason, [])
        if len(named) < EXAMPLES:
            named.append(url)

    def describe(self) -> str:
        """One line per reason: how many pages were skipped, and which (the first few)."""
        return "\n".join(
            f"{n} page(s) skipped, {reason}: {', '.join(self.examples[reason])}"
            + (f" and {n - EXAMPLES} more" if n > EXAMPLES else "")
            for reason, n in self.skipped.items())


def _body(ctx: Context, row: Url, exported: Exported) -> bytes | None:
    """The page's stored body, decompressed; None (counted as skipped) if it cannot be read."""
    try:
        return gzip.decompress(ctx.blobs.get(row.storage_key or ""))
    except BodyMissing:
        exported.skip("body missing from the store", row.url)
    except (OSError, EOFError, zlib.error):  # gzip.BadGzipFile is an OSError
        exported.skip("body unreadable", row.url)
    return None


def stored_pages(ctx: Context, exported: Exported, since: datetime | None = None,
                 host: str | None = None) -> Iterator[PageRecord]:
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
            body = _body(ctx, row, exported)
            if body is None:
                continue
            headers = {name: value for name, value in (
                ("Content-Type", row.content_type), ("ETag", row.etag),
                ("Last-Modified", row.last_modified)) if value}
            fetched = row.last_fetched_at or row.discovered_at
            yield PageRecord(row.url, fetched.replace(tzinfo=fetched.tzinfo or UTC),
                             int(row.http_status or 0), headers, body, ctx.settings.user_agent)


def export_warc(ctx: Context, out: BinaryIO, since: datetime | None = None,
                host: str | None = None, progress: Callable[[int], None] = lambda n: None
                ) -> Exported:
    """Write the selected pages to `out`; returns what was written and skipped."""
    exported = Exported()

    def counted() -> Iterator[PageRecord]:
        for n, record in enumerate(stored_pages(ctx, exported, since, host), start=1):
            if n % 1000 == 0:
                progress(n)
            yield record

    exported.written = write_records(out, counted())
    return exported
