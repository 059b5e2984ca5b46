"""The rows of stored pages as dedup, the store stage and verify look at them: what a page
stores, the copies that point at it, and pages sent back to be fetched afresh."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from sqlalchemy import ColumnElement, bindparam, func, or_, select, update
from sqlalchemy.orm import Session, sessionmaker

from crawlapp.adapters.db.batching import chunks, in_id_order
from crawlapp.adapters.db.models import Url
from crawlapp.core.records import QueuedURL, Status
from crawlapp.core.rows import PageRow, Repointed
from crawlapp.core.simhash import from_signed

PAGE_COLUMNS = (Url.id, Url.url_hash, Url.url, Url.host, Url.status, Url.content_hash,
                Url.simhash, Url.content_dedup, Url.duplicate_of, Url.storage_key,
                Url.raw_storage_key, Url.canonical_url)


def _page_row(raw: Any) -> PageRow:
    fingerprint = from_signed(raw.simhash) if raw.simhash is not None else None
    return PageRow(raw.id, raw.url_hash, raw.url, raw.host, raw.status, raw.content_hash,
                   fingerprint, bool(raw.content_dedup), raw.duplicate_of, raw.storage_key,
                   raw.raw_storage_key, raw.canonical_url)


def rows_by_hash(session: Session, hashes: Iterable[str]) -> dict[str, PageRow]:
    found: dict[str, PageRow] = {}
    for chunk in chunks(sorted(set(hashes))):
        for raw in session.execute(select(*PAGE_COLUMNS).where(Url.url_hash.in_(chunk))):
            found[raw.url_hash] = _page_row(raw)
    return found


def copies_of(session: Session, originals: Sequence[str]) -> list[PageRow]:
    """The copies (not taken down) that point at these pages, oldest first."""
    return [_page_row(raw) for chunk in chunks(originals) for raw in session.execute(
        select(*PAGE_COLUMNS).where(Url.duplicate_of.in_(chunk), Url.content_dedup.is_(True),
                                    Url.status != Status.DELETED).order_by(Url.id))]


def repoint(session: Session, copies: Sequence[Repointed]) -> None:
    """Write each copy's new original (or that it is an original now)."""
    if copies:
        session.connection().execute(
            update(Url).where(Url.url_hash == bindparam("h"))
            .values(content_dedup=bindparam("dup"), duplicate_of=bindparam("of")),
            [{"h": h, "dup": dup, "of": of} for h, dup, of in copies])


# What a page queued again forgets of its last fetch: the next one stores it afresh (no
# validators, so the server cannot answer 304).
FORGOTTEN: dict[str, object] = {
    "status": Status.QUEUED, "storage_key": None, "raw_storage_key": None, "content_hash": None,
    "simhash": None, "content_dedup": False, "duplicate_of": None, "etag": None,
    "last_modified": None, "next_crawl_at": None}


def mark_refetch(session: Session, hashes: Sequence[str], reason: str) -> dict[str, QueuedURL]:
    """Mark these pages (taken-down ones excepted) queued, forgetting what was stored of them;
    returns the URLs by url_hash, to queue once the transaction is committed."""
    out: dict[str, QueuedURL] = {}
    for chunk in chunks(hashes):
        where = (Url.url_hash.in_(chunk), Url.status != Status.DELETED)
        out.update((h, QueuedURL(url, depth, priority)) for h, url, depth, priority in
                   session.execute(select(Url.url_hash, Url.url, Url.depth, Url.priority)
                                   .where(*where)))
        session.execute(update(Url).where(*where).values(**FORGOTTEN, last_error=reason))
    return out


def _to_check(host: str | None) -> list[ColumnElement[bool]]:
    """Rows with something to check: a body, or a copy's pointer. Taken-down rows have none."""
    where = [Url.status != Status.DELETED, or_(Url.storage_key.is_not(None),
                                               Url.raw_storage_key.is_not(None),
                                               Url.content_dedup.is_(True))]
    return where + ([Url.host == host] if host else [])


def count_to_check(session: Session, host: str | None) -> int:
    """How many rows (of `host`) have something to check."""
    return int(session.scalar(select(func.count()).where(*_to_check(host))) or 0)


def sample_to_check(session: Session, host: str | None, size: int) -> list[int]:
    """The ids of `size` rows (of `host`) with something to check, drawn at random."""
    return list(session.scalars(select(Url.id).where(*_to_check(host)).order_by(func.random())
                                .limit(size)))


def rows_to_check(sessions: sessionmaker[Session], host: str | None, ids: list[int] | None,
                  size: int) -> Iterator[list[PageRow]]:
    """The rows (of `host`, or those of `ids`) with something to check, in id order, `size`
    at a time."""
    where = _to_check(host) if ids is None else [Url.id.in_(ids)]
    return in_id_order(sessions, lambda session, after: map(_page_row, session.execute(
        select(*PAGE_COLUMNS).where(*where, Url.id > after).order_by(Url.id).limit(size))))


def host_known(session: Session, host: str) -> bool:
    """Whether any URL row is of `host`."""
    return session.scalar(select(Url.id).where(Url.host == host).limit(1)) is not None
