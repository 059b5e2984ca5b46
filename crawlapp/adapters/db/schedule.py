"""The re-crawl schedule in the database: the next_crawl_at of the pages a drain re-crawls
(RECRAWLED_STATUSES: neither queued nor blocked nor deleted). Redis holds only its near
future (adapters/redis/recrawl_sets.py), loaded from here a window at a time through the
index on (next_crawl_at, id) (migration 0012)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from functools import partial
from typing import Any

from sqlalchemy import ColumnElement, bindparam, case, func, select, tuple_, update
from sqlalchemy.orm import Session, sessionmaker

from crawlapp.adapters.db.batching import chunks, executemany, in_key_order, of_hashes, on_postgres
from crawlapp.adapters.db.models import Url
from crawlapp.core.recrawl import RECRAWLED_STATUSES, TIERS, tier_of
from crawlapp.core.rows import ScheduledRow, SitemapEntry

_ROWS = select(Url.id, Url.url_hash, Url.last_fetched_at, Url.next_crawl_at)
_SCHEDULED = (Url.status.in_(RECRAWLED_STATUSES), Url.next_crawl_at.is_not(None))


def due(sessions: sessionmaker[Session], since: datetime | None, until: datetime | None,
        size: int) -> Iterator[list[ScheduledRow]]:
    """The pages due in [since, until) (None: no bound; overdue pages are due after no
    `since`), `size` at a time in (next_crawl_at, id) order: each page one range of the
    index."""
    # The status as an expression, only a filter: given `status IN`, SQLite's planner (no
    # statistics) would read every fetched page by the status index and sort them.
    query = _ROWS.where(Url.status.concat("").in_(RECRAWLED_STATUSES),
                        Url.next_crawl_at.is_not(None))
    if since is not None:
        query = query.where(Url.next_crawl_at >= since)
    if until is not None:
        query = query.where(Url.next_crawl_at < until)

    def read(session: Session, after: tuple[datetime, int] | None) -> Iterable[ScheduledRow]:
        page = query if after is None else query.where(
            tuple_(Url.next_crawl_at, Url.id) > tuple_(*after))
        return map(ScheduledRow._make, session.execute(
            page.order_by(Url.next_crawl_at, Url.id).limit(size)))

    return in_key_order(sessions, read, lambda row: (row.next_crawl_at, row.id))


def scheduled(sessions: sessionmaker[Session], size: int, hashes: Sequence[str]
              ) -> Iterator[list[ScheduledRow]]:
    """The pages of `hashes` with a next crawl time, `size` hashes at a time."""
    for chunk in chunks(hashes, size):
        with sessions() as session:
            yield [ScheduledRow._make(raw) for raw in session.execute(
                of_hashes(session, _ROWS.where(*_SCHEDULED), chunk))]


def _seconds(session: Session, later: Any, earlier: Any) -> ColumnElement[Any]:
    """`later` - `earlier` in seconds (SQLite keeps times as text)."""
    if on_postgres(session):
        return func.extract("epoch", later - earlier)
    return (func.julianday(later) - func.julianday(earlier)) * 86400


def tiers(session: Session, now: datetime) -> dict[str, dict[str, int]]:
    """Pages per re-crawl tier, and how many of them are overdue: one pass over the
    scheduled rows, grouped by interval (to the second: a few hundred distinct ones)."""
    interval = func.round(_seconds(session, Url.next_crawl_at,
                                   func.coalesce(Url.last_fetched_at, Url.next_crawl_at)))
    out = {name: {"pages": 0, "overdue": 0} for name, _ in TIERS}
    for seconds, pages, overdue in session.execute(
            select(interval, func.count(), func.sum(case((Url.next_crawl_at <= now, 1), else_=0)))
            .where(*_SCHEDULED).group_by(interval)):
        tier = out[tier_of(float(seconds))]
        tier["pages"] += int(pages)
        tier["overdue"] += int(overdue or 0)
    return out


def count(session: Session, hashes: Sequence[str]) -> int:
    """How many of the pages of `hashes` have a next crawl time."""
    return sum(int(session.execute(of_hashes(session, select(func.count()).select_from(Url)
                                             .where(*_SCHEDULED), chunk)).scalar_one())
               for chunk in chunks(hashes))


def sitemap_entries(session: Session, hashes: Sequence[str]) -> list[SitemapEntry]:
    """What the rows of the URLs a sitemap lists hold for its lastmods."""
    out: list[SitemapEntry] = []
    for chunk in chunks(hashes):
        out += map(SitemapEntry._make, session.execute(of_hashes(session, select(
            Url.id, Url.url_hash, Url.host, Url.status, Url.last_fetched_at, Url.next_crawl_at,
            Url.changes, Url.sitemap_lastmod, Url.last_error), chunk)))
    return out


def set_sitemap_lastmods(session: Session, lastmods: Sequence[tuple[str, datetime]],
                         due: Sequence[tuple[str, datetime]]) -> None:
    """Record the <lastmod> a sitemap gave each URL ((url_hash, lastmod)), and make the pages
    of `due` ((url_hash, now)) due at that time."""
    for column, rows in (("sitemap_lastmod", lastmods), ("next_crawl_at", due)):
        if rows:
            executemany(session, ("sitemap", column), partial(_set_time, column),
                        {"v_hash": [h for h, _ in rows], "v_when": [w for _, w in rows]})


def _set_time(column: str) -> Any:
    return update(Url).where(Url.url_hash == bindparam("v_hash")).values(
        {column: bindparam("v_when")})
