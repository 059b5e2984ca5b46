"""The operators' queries: what a rebuild of Redis reads back, what a takedown or the
denylist changes, and the fetch history a WARC export writes."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import ColumnElement, CursorResult, Select, delete, or_, select, update
from sqlalchemy.orm import Session, sessionmaker

from crawlapp.adapters.db.batching import HasId, chunks, in_id_order
from crawlapp.adapters.db.models import Deny, Fetch, Host, Url
from crawlapp.core import hostpatterns
from crawlapp.core.records import Status
from crawlapp.core.rows import (
    CanonicalPointer,
    ChangeRow,
    HostRow,
    QueuedRow,
    Removal,
    StoredContent,
    TakenDownRow,
    UrlKey,
)

R = TypeVar("R", bound=HasId)


def _pages(sessions: sessionmaker[Session], query: Select[*tuple[Any, ...]],
           make: Callable[..., R], size: int) -> Iterator[list[R]]:
    """The rows of `query` on urls, `size` at a time in id order, each made by `make`."""
    return in_id_order(sessions, lambda session, after: (make(*raw) for raw in session.execute(
        query.where(Url.id > after).order_by(Url.id).limit(size))))


# Rebuilding Redis

def crawl_delays(session: Session) -> list[tuple[str, float | None]]:
    """(origin, Crawl-delay) of each origin whose robots.txt sets one."""
    return [(origin, delay) for origin, delay in session.execute(
        select(Host.origin, Host.crawl_delay).where(Host.crawl_delay.is_not(None)))]


def queued_rows(sessions: sessionmaker[Session], size: int) -> Iterator[list[QueuedRow]]:
    """Every 'queued' row, `size` at a time."""
    return _pages(sessions, select(Url.id, Url.url, Url.host, Url.depth, Url.priority, Url.hops,
                                   Url.etag, Url.last_modified).where(Url.status == Status.QUEUED),
                  QueuedRow, size)


def change_records(sessions: sessionmaker[Session], size: int
                   ) -> Iterator[list[ChangeRow]]:
    """The change record of every page that has one (not taken down), `size` at a time."""
    return _pages(sessions, select(Url.id, Url.host, Url.url, Url.changes).where(
        Url.changes.is_not(None), Url.status != Status.DELETED), ChangeRow, size)


def url_keys(sessions: sessionmaker[Session], size: int) -> Iterator[list[UrlKey]]:
    """The url_hash of every row, `size` at a time."""
    return _pages(sessions, select(Url.id, Url.url_hash), UrlKey, size)


def stored_contents(sessions: sessionmaker[Session], size: int) -> Iterator[list[StoredContent]]:
    """The content hash and SimHash of every stored original, `size` at a time."""
    return _pages(sessions, select(Url.id, Url.url_hash, Url.content_hash, Url.simhash).where(
        Url.content_dedup.is_(False), Url.storage_key.is_not(None),
        Url.content_hash.is_not(None) | Url.simhash.is_not(None)), StoredContent, size)


def canonical_pointers(sessions: sessionmaker[Session], size: int
                       ) -> Iterator[list[CanonicalPointer]]:
    """Every page (not taken down) that defers to its canonical URL, `size` at a time."""
    return _pages(sessions, select(Url.id, Url.url_hash, Url.canonical_url).where(
        Url.canonical_url.is_not(None), Url.status != Status.DELETED), CanonicalPointer, size)


def robots_answers(session: Session) -> list[tuple[str, int, str, datetime]]:
    """(origin, status, body, fetched at) of each robots.txt answer the hosts table keeps."""
    return [(origin, status, body or "", fetched_at) for origin, status, body, fetched_at in
            session.execute(select(Host.origin, Host.robots_status, Host.robots_body,
                                   Host.robots_fetched_at))
            if status is not None and fetched_at is not None]


def denied_patterns(session: Session) -> list[str]:
    return list(session.scalars(select(Deny.pattern)))


# The denylist and takedowns

def deny(session: Session, pattern: str, reason: str | None, now: datetime) -> bool:
    """Put `pattern` on the denylist; False if it was there already."""
    if session.get(Deny, pattern) is not None:
        return False
    session.add(Deny(pattern=pattern, reason=reason, created_at=now))
    return True


def lift(session: Session, pattern: str) -> list[str] | None:
    """Take `pattern` off the denylist; the patterns left (None if it was not on it)."""
    entry = session.get(Deny, pattern)
    if entry is None:
        return None
    session.delete(entry)
    return list(session.scalars(select(Deny.pattern).where(Deny.pattern != pattern)))


def _of_pattern(pattern: str) -> ColumnElement[bool]:
    exact, likes = hostpatterns.sql_host_filter(pattern)
    return or_(Url.host.in_(exact), *(Url.host.like(p) for p in likes))


def rows_of_pattern(session: Session, pattern: str) -> list[HostRow]:
    """The rows of the hosts a denylist pattern names."""
    return [HostRow(*raw) for raw in session.execute(
        select(Url.url_hash, Url.url, Url.host, Url.depth, Url.priority, Url.hops, Url.status,
               Url.last_error).where(_of_pattern(pattern)))]


def block_rows(session: Session, hashes: Sequence[str], reason: str) -> None:
    for chunk in chunks(hashes):
        session.execute(update(Url).where(Url.url_hash.in_(chunk))
                        .values(status=Status.BLOCKED, last_error=reason))


def rows_to_take_down(session: Session, url_hash: str | None, host: str | None
                      ) -> list[TakenDownRow]:
    """The row of `url_hash`, or every row of `host`."""
    return [TakenDownRow._make(raw) for raw in session.execute(
        select(Url.url_hash, Url.url, Url.host, Url.depth, Url.hops, Url.status,
               Url.storage_key, Url.raw_storage_key, Url.content_hash, Url.simhash)
        .where(_taken_down(url_hash, host)))]


def _taken_down(url_hash: str | None, host: str | None) -> ColumnElement[bool]:
    return Url.url_hash == url_hash if url_hash else Url.host == host


def take_down(session: Session, rows: Iterable[TakenDownRow], live: Sequence[str],
              url_hash: str | None, host: str | None) -> Removal:
    """Mark the `live` rows (of `rows`, those of `url_hash` or `host`) deleted, forgetting
    what was stored of them, and delete their fetch history; what it removed.

    A rendered page may keep its body as fetched too (raw_storage_key), and the fetch
    history names the bodies of earlier fetches (and, of a host, its robots.txt)."""
    where = _taken_down(url_hash, host)
    in_history = Fetch.url_hash == url_hash if url_hash else Fetch.host == host
    keys = sorted({k for r in rows for k in (r.storage_key, r.raw_storage_key) if k}
                  | {k for k in session.scalars(select(Fetch.storage_key).where(in_history))
                     if k})
    shared: set[str] = set()
    for chunk in chunks(keys):
        for column in (Url.storage_key, Url.raw_storage_key):
            shared.update(session.scalars(select(column).where(column.in_(chunk), ~where)))
        shared.update(session.scalars(select(Fetch.storage_key).where(
            Fetch.storage_key.in_(chunk), ~in_history)))
    forgotten: CursorResult[Any] = session.execute(  # type: ignore[assignment]
        delete(Fetch).where(in_history))  # a DELETE's result is a CursorResult (its rowcount)
    for chunk in chunks(live):
        session.execute(update(Url).where(Url.url_hash.in_(chunk)).values(
            status=Status.DELETED, storage_key=None, raw_storage_key=None, content_hash=None,
            simhash=None, title=None,
            etag=None, last_modified=None, next_crawl_at=None, last_error="deleted"))
    return Removal(keys, shared, forgotten.rowcount)


# The fetch history

def fetch_history(sessions: sessionmaker[Session], host: str | None, size: int
                  ) -> Iterator[list[Fetch]]:
    """The fetch history (of one host), oldest first, `size` at a time."""
    query = select(Fetch)
    if host is not None:
        query = query.where(Fetch.host == host)
    return in_id_order(sessions, lambda session, after: session.scalars(
        query.where(Fetch.id > after).order_by(Fetch.id).limit(size)).all())


def response_before(session: Session, fetch: Fetch) -> Fetch | None:
    """The last 2xx answer to the URL before `fetch` whose body is stored (what a 304
    confirms)."""
    return session.scalars(select(Fetch).where(
        Fetch.url_hash == fetch.url_hash, Fetch.id < fetch.id, Fetch.storage_key.is_not(None),
        Fetch.http_status >= 200, Fetch.http_status < 300).order_by(Fetch.id.desc()).limit(1)
    ).first()
