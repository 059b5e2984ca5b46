"""The queries of the crawler, each one round trip per batch, on SQLite and Postgres alike."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Integer,
    and_,
    bindparam,
    cast,
    func,
    select,
    text,
    tuple_,
    update,
)
from sqlalchemy.orm import Session as Session  # the type of the sessions callers pass

from crawlapp.adapters.db.batching import (
    chunks,
    column_arrays,
    dialect_insert,
    executemany,
    insert_many,
    of_hashes,
    on_postgres,
    unnested,
)
from crawlapp.adapters.db.models import (
    Deny,
    Fetch,
    Host,
    HostAuthority,
    HostCount,
    HostLink,
    Link,
    SeedScope,
    Url,
    host_count_deltas,
)
from crawlapp.core.records import RobotsAnswer, Status
from crawlapp.core.rows import (
    FetchOutcome,
    HistoryRow,
    LinkEdge,
    LinkedPage,
    Lowered,
    Previous,
    UrlRow,
)


def add_urls(session: Session, rows: Sequence[UrlRow]) -> set[str]:
    """Insert URL rows that are new; return the url_hash of those actually inserted."""
    if not rows:
        return set()
    return set(insert_many(session, Url, column_arrays(rows, UrlRow._fields), ["url_hash"],
                           Url.url_hash).scalars())


_LOWERED = ("v_hash", "v_depth", "v_priority", "v_authority", "v_link_context")


def lower_depths(session: Session, rows: Sequence[UrlRow]) -> tuple[set[str], list[Lowered]]:
    """Give known URLs the smaller depth of `rows` where it is smaller, and the row's
    priority (with its authority and link context) where that is higher (a closer link
    weighs more).

    Returns the url_hash of every row that is known, and the rows whose depth changed.
    """
    wanted = {row.url_hash: row for row in rows}
    known: set[str] = set()
    lowered: list[Lowered] = []
    scores: list[tuple[str, int, float, float | None, float | None]] = []
    for chunk in chunks(list(wanted)):
        found = session.execute(of_hashes(session, select(
            Url.url_hash, Url.url, Url.status, Url.depth, Url.priority, Url.authority,
            Url.link_context, Url.hops), chunk)).all()
        known.update(h for h, *_ in found)
        for h, url, status, depth, *kept, hops in found:
            row = wanted[h]
            if depth <= row.depth:
                continue
            better = row.priority > (kept[0] or 0.0)
            priority, authority, link_context = (
                (row.priority, row.authority, row.link_context) if better else kept)
            priority = priority or 0.0
            lowered.append(Lowered(h, url, status, depth, row.depth, priority, hops or 0))
            scores.append((h, row.depth, priority, authority, link_context))
    if scores:
        executemany(session, "lower_depths", lambda: update(Url).where(
            Url.url_hash == bindparam("v_hash")).values(
                depth=bindparam("v_depth"), priority=bindparam("v_priority"),
                authority=bindparam("v_authority"), link_context=bindparam("v_link_context")),
            column_arrays(scores, _LOWERED))
    return known, lowered


def depths(session: Session, hashes: Sequence[str]) -> dict[str, int]:
    """The recorded depth of each of these URLs the database knows."""
    found: dict[str, int] = {}
    for chunk in chunks(list(dict.fromkeys(hashes))):
        found.update((h, depth) for h, depth in session.execute(
            of_hashes(session, select(Url.url_hash, Url.depth), chunk)))
    return found


def set_status(session: Session, hashes: Sequence[str], status: str) -> None:
    for chunk in chunks(hashes):
        session.execute(update(Url).where(Url.url_hash.in_(chunk)).values(status=status))


def link_targets(session: Session, sources: Sequence[str]) -> list[tuple[str, str, bool]]:
    """(source_hash, target url, nofollow) of every recorded link out of `sources`."""
    out: list[tuple[str, str, bool]] = []
    for chunk in chunks(sources):
        out += [(s, u, bool(n)) for s, u, n in session.execute(
            select(Link.source_hash, Url.url, Link.nofollow)
            .join(Url, Url.url_hash == Link.target_hash).where(Link.source_hash.in_(chunk)))]
    return out


def priorities_with_status(session: Session, hashes: Sequence[str], status: str,
                           found_by: datetime | None = None) -> dict[str, tuple[float, int]]:
    """The priority and hops of each of these URLs whose row has `status` (and was
    discovered by `found_by`, if given)."""
    found: dict[str, tuple[float, int]] = {}
    for chunk in chunks(hashes):
        query = of_hashes(session, select(Url.url_hash, Url.priority, Url.hops), chunk).where(
            Url.status == status)
        if found_by is not None:
            query = query.where(Url.discovered_at <= found_by)
        found.update((h, (priority or 0.0, hops or 0))
                     for h, priority, hops in session.execute(query))
    return found


# The columns a fetch result writes onto its URL row.
FETCH_COLUMNS = FetchOutcome._fields[1:]
# The columns a 304 Not Modified writes: the stored content stays as it was.
NOT_MODIFIED_COLUMNS = ("status", "last_fetched_at", "http_status", "next_crawl_at", "changes")
# The columns a re-crawl that left its page's copy as it was writes (core/recrawl.py:
# unrefreshed): why, and when it is tried again; the copy, its fetch time and validators stay.
HELD_COPY_COLUMNS = ("status", "last_error", "next_crawl_at")
_FLAGS = ("content_dedup", "noindex", "rendered")


def record_fetches(session: Session, rows: Sequence[FetchOutcome],
                   columns: Sequence[str] = FETCH_COLUMNS) -> None:
    """Write fetch outcomes onto their URL rows (one statement; the last row of a URL wins);
    failures bump fail_count."""
    if not rows:
        return
    values = column_arrays(list({row.url_hash: row for row in rows}.values()),
                           FetchOutcome._fields)
    given = ({col: values[col] for col in (*columns, "url_hash")}
             | {col: [bool(v) for v in values[col]] for col in _FLAGS if col in columns}
             | {"failed": [int(status == Status.FAILED) for status in values["status"]]})
    if on_postgres(session):
        types = {col: Url.__table__.c[col].type for col in (*columns, "url_hash")}
        outcomes = unnested(types | {"failed": Integer()}, given)
        session.connection().execute(
            update(Url).where(Url.url_hash == outcomes.c.url_hash).values(
                {col: outcomes.c[col] for col in columns}
                | {"fail_count": Url.fail_count + outcomes.c.failed}))
        return
    executemany(session, ("record_fetches", tuple(columns)), lambda: (
        update(Url).where(Url.url_hash == bindparam("v_url_hash"))
        .values({col: bindparam(f"v_{col}") for col in columns}
                | {"fail_count": Url.fail_count + bindparam("v_failed")})),
        {f"v_{name}": values for name, values in given.items()})


def add_fetch_history(session: Session, rows: Sequence[HistoryRow]) -> None:
    """Append a batch's kept fetches to the fetch history (one INSERT); a fetch recorded
    already (its batch stored again) is left as it is."""
    if rows:
        insert_many(session, Fetch, column_arrays(rows, HistoryRow._fields),
                    ["url_hash", "fetched_at"])


def add_fetch_months(session: Session) -> list[str]:
    """Make sure the fetch history has a partition for this month and the next (Postgres,
    migration 0010; a fetch of a month without one waits in the default partition, which
    this empties of that month). The partitions' names; none on SQLite."""
    if not on_postgres(session):
        return []
    return list(session.execute(text(
        "SELECT fetches_add_month(now()) UNION "
        "SELECT fetches_add_month(now() + interval '1 month')")).scalars())


def previous_fetches(session: Session, hashes: Sequence[str]) -> dict[str, Previous]:
    found: dict[str, Previous] = {}
    for chunk in chunks(hashes):
        for h, content, last, nxt, priority, changes, links, lastmod, words in session.execute(
                of_hashes(session, select(
                    Url.url_hash, Url.content_hash, Url.last_fetched_at, Url.next_crawl_at,
                    func.coalesce(Url.link_context, Url.priority), Url.changes,
                    Url.links_digest, Url.sitemap_lastmod, Url.text_digest), chunk)):
            found[h] = Previous(content, last, nxt, priority or 0.0, changes, links, lastmod,
                                words)
    return found


def urls_by_hash(session: Session, hashes: Sequence[str]) -> list[Url]:
    rows: list[Url] = []
    for chunk in chunks(hashes):
        rows += session.scalars(of_hashes(session, select(Url), chunk))
    return rows


def add_links(session: Session, edges: Sequence[LinkEdge]) -> None:
    if edges:
        insert_many(session, Link, column_arrays(edges, LinkEdge._fields))


def set_scores(session: Session, scores: Sequence[tuple[str, float, float]]) -> None:
    """(url_hash, priority, authority) of rows scored again (a re-crawl's freshness)."""
    if scores:
        session.connection().execute(
            update(Url).where(Url.url_hash == bindparam("v_hash")).values(
                priority=bindparam("v_priority"), authority=bindparam("v_authority")),
            [{"v_hash": h, "v_priority": p, "v_authority": a} for h, p, a in scores])


def add_host_links(session: Session, pairs: Iterable[tuple[str, str]]) -> None:
    """Record host graph edges (source host, target host); known ones are left as they are.
    One INSERT for a batch's pairs, deduplicated and sorted (concurrent batches lock shared
    rows in the same order)."""
    unique = sorted(set(pairs))
    if unique:
        insert_many(session, HostLink, column_arrays(unique, ("source_host", "target_host")))


def host_link_chunks(session: Session, size: int) -> Iterable[list[tuple[str, str]]]:
    """Every host graph edge, `size` at a time in key order (keyset pagination: each chunk
    is one indexed range read, however large the table)."""
    after: tuple[str, str] | None = None
    while True:
        query = select(HostLink.source_host, HostLink.target_host)
        if after is not None:
            query = query.where(tuple_(HostLink.source_host, HostLink.target_host) > after)
        chunk = [(s, t) for s, t in session.execute(
            query.order_by(HostLink.source_host, HostLink.target_host).limit(size))]
        if not chunk:
            return
        yield chunk
        after = chunk[-1]


AUTHORITY_ROWS_PER_CALL = 5000  # an executemany's rows, built and held at once (of millions of hosts)


def save_authority(session: Session, scores: Sequence[tuple[str, float]],
                   computed_at: datetime) -> None:
    """Store each host's authority (replacing the last computation's)."""
    stmt = dialect_insert(session, HostAuthority)
    stmt = stmt.on_conflict_do_update(index_elements=["host"], set_={
        "score": stmt.excluded.score, "computed_at": stmt.excluded.computed_at})
    for chunk in chunks(scores, AUTHORITY_ROWS_PER_CALL):
        session.connection().execute(stmt, [{"host": h, "score": s, "computed_at": computed_at}
                                            for h, s in chunk])


def authority_of(session: Session, hosts: Sequence[str]) -> dict[str, float]:
    """The stored authority of these hosts (hosts not scored are left out)."""
    found: dict[str, float] = {}
    for chunk in chunks(hosts):
        found.update(session.execute(select(HostAuthority.host, HostAuthority.score)
                                     .where(HostAuthority.host.in_(chunk))).all())
    return found


_ROBOTS = ("robots_status", "robots_body", "crawl_delay", "robots_fetched_at")


def save_robots(session: Session, answers: Iterable[RobotsAnswer],
                fetched_at: Iterable[datetime]) -> None:
    """Record each robots.txt answer, fetched at its time, on its origin's hosts row (one
    statement; an origin answered twice keeps its last answer)."""
    rows = {answer.origin: (answer.origin, answer.status, answer.body, answer.crawl_delay, at)
            for answer, at in zip(answers, fetched_at, strict=True)}
    if not rows:
        return

    def statement() -> Any:
        insert = dialect_insert(session, Host).values(
            {name: bindparam(name) for name in ("origin", *_ROBOTS)})
        return insert.on_conflict_do_update(index_elements=["origin"], set_={
            name: insert.excluded[name] for name in _ROBOTS})

    executemany(session, "save_robots", statement,
                column_arrays(list(rows.values()), ("origin", *_ROBOTS)))


def robots_of(session: Session, origin: str) -> tuple[int, str] | None:
    """(status, body) of the robots.txt answer recorded for an origin, if any."""
    row = session.execute(select(Host.robots_status, Host.robots_body)
                          .where(Host.origin == origin)).first()
    if row is None or row.robots_status is None:
        return None
    return int(row.robots_status), row.robots_body or ""


def status_counts(session: Session) -> dict[str, int]:
    rows = session.execute(select(Url.status, func.count()).group_by(Url.status)).all()
    return {status: int(n) for status, n in rows}


def dedup_count(session: Session) -> int:
    return int(session.scalar(select(func.count()).where(Url.content_dedup.is_(True))) or 0)


def fetch_window(session: Session) -> tuple[datetime | None, datetime | None]:
    """The first and last fetch times of the crawl."""
    first, last = session.execute(
        select(func.min(Url.last_fetched_at), func.max(Url.last_fetched_at))).one()
    return first, last


def stored_bodies(session: Session) -> int:
    """How many distinct bodies the pages point to."""
    return int(session.scalar(select(func.count(func.distinct(Url.storage_key)))
                              .where(Url.storage_key.is_not(None))) or 0)


def get_url(session: Session, url_hash: str) -> Url | None:
    return session.scalar(select(Url).where(Url.url_hash == url_hash))


def outbound_links(session: Session, url_hash: str) -> int:
    return int(session.scalar(select(func.count()).where(Link.source_hash == url_hash)) or 0)


def host_status_counts(session: Session) -> dict[str, dict[str, int]]:
    """URL rows per host and status, from the counters (migration 0011), not a scan of urls.
    On Postgres the folded totals joined with the deltas not folded yet (one statement, so
    exact; the deltas are a minute's at most); SQLite's triggers keep the totals themselves."""
    query = select(HostCount.host, HostCount.status, HostCount.n).where(HostCount.n != 0)
    if on_postgres(session):
        d = host_count_deltas.c
        pending = select(d.host, d.status, cast(func.sum(d.n), BigInteger).label("n")) \
            .group_by(d.host, d.status).subquery()
        n = func.coalesce(HostCount.n, 0) + func.coalesce(pending.c.n, 0)
        query = select(func.coalesce(HostCount.host, pending.c.host),
                       func.coalesce(HostCount.status, pending.c.status), n).select_from(
            HostCount.__table__.join(pending, and_(HostCount.host == pending.c.host,
                                                   HostCount.status == pending.c.status),
                                     full=True)).where(n != 0)
    out: dict[str, dict[str, int]] = {}
    for host, status, count in session.execute(query):
        out.setdefault(host, {})[status] = count
    return out


def fold_host_counts(session: Session) -> int:
    """Move the committed per-statement deltas into the host counters (Postgres; SQLite's
    triggers write the counters themselves). How many (host, status) counts changed."""
    if not on_postgres(session):
        return 0
    return int(session.scalar(text("SELECT host_counts_fold()")) or 0)


def hosts_table(session: Session) -> list[Host]:
    return list(session.scalars(select(Host)))


def links_of(session: Session, url_hash: str, inbound: bool, limit: int) -> list[LinkedPage]:
    """The pages at the other end of the links into or out of a page."""
    here, there = (Link.target_hash, Link.source_hash) if inbound else (Link.source_hash,
                                                                       Link.target_hash)
    rows = session.execute(select(Url.url, Link.anchor, Link.nofollow, Url.status)
                           .join(Url, Url.url_hash == there).where(here == url_hash)
                           .order_by(Url.url).limit(limit))
    return [LinkedPage(u, a, bool(n), s) for u, a, n, s in rows]


def add_scope_rules(session: Session, rules: Sequence[tuple[str, str]], now: datetime) -> None:
    """Record the (kind, value) scope rules of seeds (a known rule stays as it is)."""
    if rules:
        session.execute(dialect_insert(session, SeedScope).on_conflict_do_nothing(),
                        [{"kind": kind, "value": value, "created_at": now}
                         for kind, value in dict.fromkeys(rules)])


def scope_rules(session: Session) -> list[tuple[str, str]]:
    return [(kind, value) for kind, value in session.execute(
        select(SeedScope.kind, SeedScope.value))]


def denylist(session: Session) -> list[Deny]:
    return list(session.scalars(select(Deny).order_by(Deny.pattern)))


def url_hashes_of_host(session: Session, host: str) -> list[str]:
    """The url_hash of every URL row of a host (its politeness key)."""
    return list(session.scalars(select(Url.url_hash).where(Url.host == host)))
