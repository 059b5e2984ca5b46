"""Stage 4, store: bodies to the blob store first, then the batch's URL rows, robots.txt
answers and fetch history (each fetch whose answer is kept, for the WARC export), in one
transaction. Every row naming a body is written after that body: the invariant
`crawlctl verify` checks."""

from __future__ import annotations

from datetime import UTC, datetime

from crawlapp.adapters.blobstore import body_key
from crawlapp.adapters.context import Context
from crawlapp.adapters.db import dedup_rows, links_unread, repository
from crawlapp.adapters.redis import robots_cache
from crawlapp.core.bodies import keep, take, warc_body
from crawlapp.core.records import Page, Status
from crawlapp.core.recrawl import Unrefreshed, unrefreshed
from crawlapp.core.rows import FetchOutcome, HistoryRow, PageRow, Previous
from crawlapp.core.simhash import to_signed
from crawlapp.stages import dedup, revisiting
from crawlapp.stages.admission import send_back


def _outcome(page: Page, next_crawl_at: float | None,
             record: tuple[bytes | None, int | None]) -> FetchOutcome:
    when = page.fetched_at
    return FetchOutcome(
        url_hash=page.url_hash, status=page.status,
        last_fetched_at=datetime.fromtimestamp(when, UTC) if when else None,
        http_status=page.http_status, content_type=page.content_type,
        content_length=page.content_length, content_hash=page.content_hash,
        content_dedup=page.content_dedup, duplicate_of=page.duplicate_of,
        storage_key=page.storage_key, title=page.title,
        simhash=to_signed(page.simhash) if page.simhash is not None else None,
        etag=page.etag, last_modified=page.last_modified,
        last_error=page.error,
        redirect_to=page.links[0].url if page.status == Status.REDIRECTED and page.links
        else None,
        redirect_hops=page.redirect_hops or None,
        next_crawl_at=(datetime.fromtimestamp(next_crawl_at, UTC)
                       if next_crawl_at is not None else None),
        canonical_url=page.canonical, noindex=page.noindex,
        rendered=page.rendered, render_error=page.render_error,
        raw_storage_key=page.raw_storage_key, changes=record[0], links_digest=record[1],
        text_digest=page.text_digest)


def _record(page: Page, plan: revisiting.Plan, previous: dict[str, Previous]
            ) -> tuple[bytes | None, int | None]:
    """A page's change record and link digest: the plan's, else what its row held (a failed
    fetch forgets nothing of the page's changes)."""
    if page.url_hash in plan.records:
        return plan.records[page.url_hash]
    before = previous.get(page.url_hash)
    return (before.changes, before.links_digest) if before else (None, None)


def _held_copies(pages: list[Page], rows: dict[str, PageRow]) -> dict[str, Unrefreshed]:
    """The pages whose row holds a copy (a content hash) that this fetch leaves as it was, and
    why (core/recrawl.py: unrefreshed): a site down for an hour, or a robots.txt that
    disallows a page for a while, must not take pages out of the collection, nor out of its
    schedule."""
    out: dict[str, Unrefreshed] = {}
    for page in pages:
        row = rows.get(page.url_hash)
        why = unrefreshed(page.status, page.http_status, page.error)
        if why is not None and row is not None and row.content_hash is not None:
            out[page.url_hash] = why
    return out


def _bodies(pages: list[Page], dropped: set[str], archive_unstored: bool
            ) -> list[tuple[str, bytes, str | None]]:
    """Take each page's bodies out of it and give it the storage keys of what the store keeps
    (crawlapp.core.bodies.keep): the (key, body, content type) to write."""
    uploads = []
    for page in pages:
        kept = keep(page, take(page), page.url_hash in dropped, archive_unstored)
        if kept.stored is not None:
            page.storage_key = body_key(kept.stored)
            if kept.content is not None:
                uploads.append((page.storage_key, kept.content.gz, kept.content.content_type))
        if kept.archived is not None:
            page.raw_storage_key = body_key(kept.archived.sha256)
            uploads.append((page.raw_storage_key, kept.archived.gz, kept.archived.content_type))
    return uploads


def _history_row(page: Page) -> HistoryRow | None:
    """The fetch history's row of a page whose answer is kept (its body as fetched stored,
    a 304, a robots.txt answer, a redirect or an error answer); None for the others."""
    key = warc_body(page.rendered, page.storage_key, page.raw_storage_key)
    if page.http_status is None or not (key or page.not_modified):
        return None
    return HistoryRow(
        url_hash=page.url_hash, url=page.url, host=page.host,
        fetched_at=datetime.fromtimestamp(page.fetched_at, UTC),
        http_status=page.http_status, ip_address=page.ip_address,
        request_headers=page.request_headers, response_headers=page.response_headers,
        storage_key=key, payload_digest=page.payload_digest,
        not_modified=page.not_modified, robots=page.status == Status.ROBOTS,
        truncated=page.truncated, http_version=page.http_version,
        cipher_suite=page.cipher_suite)


def store_pages(ctx: Context, pages: list[Page], batch_id: str | None = None) -> list[Page]:
    """Write the bodies the batch names (missing ones only), then commit every page's row,
    robots.txt answer and fetch history row in one transaction (and, for batch `batch_id`,
    its pages with links to admit: links_unread), then schedule the next fetch
    of each page (its row's next_crawl_at; Redis too when it falls within the loaded window);
    bodies leave the batch. Pages taken down meanwhile are
    not written. Pages that stop being stored originals give up their content claims, and
    their copies go to another original (or back to the frontier). Running it twice on a
    batch changes nothing. The header blocks leave the batch with the bodies."""
    # Work on copies: the batch as received stays whole (bodies included), so a task retried
    # after a failure below uploads the same bodies again.
    pages = [page.copy() for page in pages]
    robots_pages = [p for p in pages if p.robots is not None]
    robots = [p.robots for p in robots_pages if p.robots is not None]
    robots_at = [p.fetched_at for p in robots_pages]
    retried = [p for p in pages if p.status == Status.RETRIED]
    urls = [p for p in pages if p.status not in (Status.ROBOTS, Status.RETRIED)]
    with ctx.sessions() as session:
        rows = dedup_rows.rows_by_hash(session, [p.url_hash for p in urls] + [
            p.duplicate_of for p in urls if p.content_dedup and p.duplicate_of])
    dropped = {p.url_hash for p in urls
               if (row := rows.get(p.url_hash)) is not None and row.status == Status.DELETED}
    kept = [p for p in urls if p.url_hash not in dropped]
    copies = _held_copies(kept, rows)
    refetch = dedup.recheck(ctx, kept, rows)
    ctx.blobs.put_many(_bodies(pages, dropped, ctx.settings.archive_unstored))
    held, orphaned = dedup.superseded([p for p in urls if p.url_hash not in copies], rows,
                                      dropped)
    with ctx.sessions.begin() as session:
        robots_cache.write(session, robots, robots_at)
        previous = repository.previous_fetches(session, [p.url_hash for p in kept])
        plan = revisiting.plan(ctx, kept, previous, copies)
        plan.set_delays(ctx, robots_pages)
        next_at = {planned.url_hash: planned.next_at for planned in plan.planned}
        ctx.dedup_index.release(held)  # before the rows change: no claim outlives its original
        rows_out = [_outcome(page, next_at.get(page.url_hash), _record(page, plan, previous))
                    for page in kept]
        repository.record_fetches(session, [r for r, p in zip(rows_out, kept, strict=True)
                                            if not p.not_modified and p.url_hash not in copies])
        repository.record_fetches(session, [r for r, p in zip(rows_out, kept, strict=True)
                                            if p.not_modified],
                                  repository.NOT_MODIFIED_COLUMNS)
        repository.record_fetches(session, [
            r._replace(status=Status.FETCHED, last_error=p.error or f"HTTP {p.http_status}")
            for r, p in zip(rows_out, kept, strict=True) if p.url_hash in copies],
            repository.HELD_COPY_COLUMNS)
        repository.add_fetch_history(session, [
            entry for page in [*kept, *robots_pages, *retried]
            if (entry := _history_row(page)) is not None])
        queued = dedup_rows.mark_refetch(session, refetch + dedup.adopt(ctx, session, orphaned),
                                         "requeued: its original is no longer stored")
        if batch_id is not None:
            links_unread.note(session, batch_id, [p.url_hash for p in kept if p.links],
                              datetime.now(UTC))
    ctx.recrawls.schedule(plan.planned)  # after the commit: see recrawl_sets.py
    plan.commit(ctx)
    send_back(ctx, queued)
    for page in pages:  # in the fetch history now; the links stage does not read them
        page.request_headers = page.response_headers = ""
    return pages
