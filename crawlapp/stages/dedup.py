"""Stage 3, dedup: exact copies by content hash, near copies by SimHash, claimed atomically.

Redis names stored originals only (the dedup index, adapters/redis/dedup_index.py: content
claims and SimHash tables). One claim per page looks both up and files the page in one step: a
page whose hash another page claimed is an exact copy of it; else a page within `max_distance`
bits of a filed fingerprint is a near copy of that original and claims nothing; else it claims
its hash and files its fingerprint. So the owner of a claim is always an original (never a near
copy or a canonical pointer), a near copy of a near copy points at the stored original, and two
workers processing copies at the same moment still yield one original.

An exact copy keeps its body (as a copy: crawlapp.core.bodies) until the store stage, which
writes it if its key is missing: a row never names a body that was not written before it,
whatever became of the original's batch. When the store stage finds that a page stopped
being a stored original (its body changed, it failed, is noindex, a canonical pointer or a
copy now, or was taken down), it releases what the page held in the index (`superseded`,
then DedupIndex.release) and hands its copies to another original (`adopt`); copies whose
original changed while they were on their way are looked up again (`recheck`).
"""

from __future__ import annotations

from collections.abc import Sequence

from crawlapp.adapters.context import Context
from crawlapp.adapters.db import dedup_rows
from crawlapp.adapters.db.repository import Session
from crawlapp.adapters.redis.dedup_index import LOOK, NEAR, NO_NEAR, ORIGINAL, Claim, Held, Outcome
from crawlapp.core.bodies import restore_original, set_aside
from crawlapp.core.records import Page
from crawlapp.core.rows import PageRow, Repointed
from crawlapp.core.simhash import hamming
from crawlapp.core.urls import url_hash


def held_by(row: PageRow) -> Held:
    """What a row holds in the dedup index, were it a stored original."""
    return Held(row.url_hash, row.content_hash, row.fingerprint)


def _claim_of(page: Page) -> Claim:
    return Claim(page.url_hash, page.content_hash or "", page.simhash)


def _mark(page: Page, outcome: Outcome) -> None:
    page.content_dedup = outcome.kind != ORIGINAL
    page.duplicate_of = outcome.owner if outcome.kind != ORIGINAL else None
    page.near_duplicate = outcome.kind == NEAR


def _defer_to_canonicals(ctx: Context, pages: list[Page]) -> None:
    """A page whose <link rel=canonical> names another URL is kept as a pointer to it, not
    stored, unless that URL itself defers to another one (two pages naming each other must
    not both go unstored: the second to be parsed is stored)."""
    declaring = [(p, url_hash(p.canonical)) for p in pages if p.canonical]
    if not declaring:
        return
    pointers: dict[str, str] = {}
    for (page, target), target_defers in zip(
            declaring, ctx.canonicals.deferring(target for _, target in declaring), strict=True):
        if target_defers:
            page.canonical = None
            continue
        page.duplicate_of = target
        page.unstored = "canonical"
        pointers[page.url_hash] = target
    ctx.canonicals.point(pointers)


def dedup_pages(ctx: Context, pages: list[Page]) -> list[Page]:
    """Mark pages not to store (noindex, or another URL is canonical), then claim the content
    of the others: originals keep their body, exact copies keep it as a copy (written only
    if missing), near copies and pages not stored lose it (or, with CRAWL_ARCHIVE_UNSTORED,
    keep it apart: the body as fetched, for the fetch history only)."""
    _defer_to_canonicals(ctx, pages)
    for page in pages:
        if page.noindex and not page.unstored:
            page.unstored = "noindex"
    claimants = [p for p in pages if p.content_hash and not p.unstored]
    outcomes = ctx.dedup_index.claim([_claim_of(p) for p in claimants],
                                     ctx.settings.near_duplicate_bits)
    for page, outcome in zip(claimants, outcomes, strict=True):
        _mark(page, outcome)
    for page in pages:
        set_aside(page, ctx.settings.archive_unstored)
    return pages


def _same_content(page: Page, content_hash: str | None, fingerprint: int | None,
                  max_distance: int) -> bool:
    """Whether a copy has its original's content: an exact copy its hash, a near copy a
    fingerprint within `max_distance` bits."""
    if not page.near_duplicate:
        return content_hash == page.content_hash
    return (fingerprint is not None and page.simhash is not None
            and hamming(fingerprint, page.simhash) <= max_distance)


def _points_at_original(page: Page, batch: dict[str, Page], rows: dict[str, PageRow],
                        max_distance: int) -> bool:
    """Whether a copy's original still is one with its content once the batch is stored: as
    the batch has it when it is one of the batch's originals (the claim the copy found may be
    one an earlier fetch of that page made, of other content), else as the database has it
    now. An original still 'queued' is not taken on trust: its batch may be on its way, or it
    may have been queued again (its claims released, its copies handed over before this one
    was written); the copy looks it up again, and the index tells which."""
    original = batch.get(page.duplicate_of or "")
    if original is not None:
        return _same_content(page, original.content_hash, original.simhash, max_distance)
    target = rows.get(page.duplicate_of or "")
    return target is not None and target.original and _same_content(
        page, target.content_hash, target.fingerprint, max_distance)


def recheck(ctx: Context, pages: list[Page], rows: dict[str, PageRow]) -> list[str]:
    """Copies whose original changed after the dedup stage looked (a batch stored or took it
    down since, or this batch stores other content for it) or is not stored yet are claimed
    again: an exact copy (it carries its body) as in the dedup stage, a near copy only by
    looking up another original. Returns the near copies left without one: their body is
    gone, they must be fetched again."""
    max_distance = ctx.settings.near_duplicate_bits
    originals = {p.url_hash: p for p in pages if p.content_hash and not p.content_dedup
                 and not p.unstored}
    stale = [p for p in pages if p.content_dedup
             and not _points_at_original(p, originals, rows, max_distance)]
    exact = [p for p in stale if not p.near_duplicate]
    for page, outcome in zip(exact, ctx.dedup_index.claim([_claim_of(p) for p in exact],
                                                          max_distance), strict=True):
        _mark(page, outcome)
        if outcome.kind == ORIGINAL:
            restore_original(page)
    near = [p for p in stale if p.near_duplicate]
    left = []
    for page, outcome in zip(near, ctx.dedup_index.claim([_claim_of(p) for p in near],
                                                         max_distance, LOOK), strict=True):
        if outcome.owner:
            page.duplicate_of = outcome.owner
        else:
            left.append(page.url_hash)
    return left


def superseded(pages: list[Page], rows: dict[str, PageRow], dropped: set[str]
               ) -> tuple[list[Held], list[str]]:
    """What a batch about to be written takes away: the claims and table members of pages that
    were stored originals and will not be (or not of the same content), plus those the dedup
    stage made for pages `dropped` from the batch; and the pages whose copies need another
    original. `pages` carry their storage_key already."""
    held: list[Held] = []
    orphaned: list[str] = []
    for page in pages:
        h = page.url_hash
        if page.not_modified:
            continue
        now_original = h not in dropped and bool(page.storage_key) and not page.content_dedup
        if h in dropped and page.content_hash and not page.content_dedup and not page.unstored:
            held.append(Held(h, page.content_hash, page.simhash))
        old = rows.get(h)
        if old is None or not old.original:
            continue
        claim_kept = now_original and page.content_hash == old.content_hash
        band_kept = now_original and page.simhash == old.fingerprint
        if not (claim_kept and band_kept):
            held.append(Held(h, None if claim_kept else old.content_hash,
                             None if band_kept else old.fingerprint))
        if not claim_kept:
            orphaned.append(h)
    return held, orphaned


def adopt(ctx: Context, session: Session, orphans: Sequence[str]) -> list[str]:
    """Hand the copies of `orphans` (pages that stopped being stored originals, their claims
    released) to another original: exact copies whose body is in the store claim their hash
    again (the oldest becomes the original, the others its copies); near copies take the
    closest original filed. Returns the copies left without one, to be fetched again."""
    copies = dedup_rows.copies_of(session, orphans)
    keys = [r.storage_key for r in copies if r.storage_key and r.content_hash]
    missing = ctx.blobs.missing(keys) if keys else set()
    exact = [r for r in copies if r.storage_key and r.content_hash
             and r.storage_key not in missing]
    near = [r for r in copies if not r.storage_key and r.content_hash]
    moved = [Repointed(row.url_hash, outcome.kind != ORIGINAL, outcome.owner)
             for row, outcome in zip(exact, ctx.dedup_index.claim(
                 [Claim(r.url_hash, r.content_hash or "", r.fingerprint) for r in exact],
                 NO_NEAR), strict=True)]
    looked = ctx.dedup_index.claim(
        [Claim(r.url_hash, r.content_hash or "", r.fingerprint) for r in near],
        ctx.settings.near_duplicate_bits, LOOK)
    moved += [Repointed(r.url_hash, True, o.owner)
              for r, o in zip(near, looked, strict=True) if o.owner]
    dedup_rows.repoint(session, moved)
    kept = {m.url_hash for m in moved}
    return [r.url_hash for r in copies if r.url_hash not in kept]
