"""Postgres at scale: `make bench-db` (`python -m bench.db_bench`). A benchmark, not a test.

Creates a database of its own (BENCH_DB_NAME, default crawl_bench_db, marked with a comment; a
database of that name without the mark is refused, never dropped), migrates it to head (the
partitioned tables of 0010), loads BENCH_DB_ROWS (default 10,000,000) synthetic URL rows through
repository.add_urls, the admission stage's insert, a tenth as many fetches through
repository.add_fetch_history, and the link edges of the fetched pages among a tenth of the
rows, BENCH_DB_LINKS_PER_PAGE (40) each, through repository.add_links, the link stage's insert
(50 pages per call, as a batch); then folds the host counters (migration 0011) as the beat
task does, times the hot queries warm (median of BENCH_DB_RUNS) and prints each one's plan
with EXPLAIN ANALYZE when BENCH_DB_EXPLAIN=1.

Hosts: 100,000 names whose sizes follow a power law (Zipf, exponent 1.1), as on the web.
The insert rate is measured per rows per add_urls call (one transaction each): 50, 500, 5000.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import sqlalchemy as sa
from sqlalchemy.orm import Session

from crawlapp.adapters.db import repository
from crawlapp.adapters.db.engine import session_factory, upgrade
from crawlapp.adapters.db.models import Fetch, HostCount, Url, host_count_deltas
from crawlapp.core.records import Status
from crawlapp.core.rows import FetchOutcome, HistoryRow, LinkEdge, UrlRow
from crawlapp.core.settings import load_settings
from crawlapp.stages.admission import url_row

SERVER = os.environ.get("BENCH_PG_SERVER", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
NAME = os.environ.get("BENCH_DB_NAME", "crawl_bench_db")
ROWS = int(os.environ.get("BENCH_DB_ROWS", "10000000"))
RUNS = int(os.environ.get("BENCH_DB_RUNS", "7"))
EXPLAIN = os.environ.get("BENCH_DB_EXPLAIN") == "1"
LINKS_PER_PAGE = int(os.environ.get("BENCH_DB_LINKS_PER_PAGE", "40"))
PAGES_PER_LINK_BATCH = 50
# Anchor texts of link edges (None: an image or empty link), lengths as on the web.
ANCHORS = [None, "Home", "Read more", "Contact us", "Privacy policy", "Next page",
           "How to size a Postgres database", "2026 annual report (PDF)", "Products",
           "Sign in", "The history of the city and its bridges", "Terms of service"]
MARK = "made by bench/db_bench.py; dropped by its next run"
HOSTS = 100_000
ZIPF_EXPONENT = 1.1
BATCH_SIZES = (50, 500, 5000)
NOW = datetime(2026, 11, 15, tzinfo=UTC)


def own_database() -> str:
    """(Re)create the bench's database; its URL. Drops only a database carrying MARK."""
    admin = sa.create_engine(SERVER, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        if conn.scalar(sa.text("SELECT 1 FROM pg_database WHERE datname = :d"), {"d": NAME}):
            comment = conn.scalar(sa.text(
                "SELECT shobj_description(oid, 'pg_database') FROM pg_database "
                "WHERE datname = :d"), {"d": NAME})
            if comment != MARK:
                sys.exit(f"database {NAME} exists and is not the bench's own: left alone")
            conn.execute(sa.text(f'DROP DATABASE "{NAME}" WITH (FORCE)'))
        conn.execute(sa.text(f'CREATE DATABASE "{NAME}"'))
        conn.execute(sa.text(f"COMMENT ON DATABASE \"{NAME}\" IS '{MARK}'"))
    admin.dispose()
    return sa.engine.make_url(SERVER).set(database=NAME).render_as_string(hide_password=False)


class Web:
    """Synthetic URLs: host i of HOSTS by a power law, a path numbered per URL."""

    def __init__(self, seed: int = 7) -> None:
        self.rng = np.random.default_rng(seed)
        self.hosts = [f"www.site{i}.example{i % 50}.com" for i in range(HOSTS)]
        self.count = 0
        # The url_hash of the first tenth of the URLs (link targets) and of the fetched ones
        # among them (link sources).
        self.known: list[str] = []
        self.fetched: list[str] = []

    def rows(self, n: int) -> list[UrlRow]:
        picks = (self.rng.zipf(ZIPF_EXPONENT, n) - 1) % HOSTS
        statuses = self.rng.choice([Status.QUEUED, Status.FETCHED, Status.FAILED], n,
                                   p=[0.6, 0.35, 0.05])
        out = []
        for pick, status in zip(picks.tolist(), statuses.tolist(), strict=True):
            host = self.hosts[pick]
            self.count += 1
            row = url_row(f"http://{host}/page/{self.count}", self.count % 8, 20, NOW,
                          host=host)._replace(status=status, priority=1.0 / (1 + self.count % 8))
            if self.count <= ROWS // 10:
                self.known.append(row.url_hash)
                if status == Status.FETCHED:
                    self.fetched.append(row.url_hash)
            out.append(row)
        return out

    def edges(self, sources: list[str]) -> list[LinkEdge]:
        """LINKS_PER_PAGE edges out of each source page to known URLs, 2 % nofollow."""
        targets = self.rng.integers(0, len(self.known), (len(sources), LINKS_PER_PAGE))
        anchors = self.rng.integers(0, len(ANCHORS), targets.shape)
        nofollow = self.rng.random(targets.shape) < 0.02
        return [LinkEdge(source, self.known[t], ANCHORS[a], bool(f))
                for source, ts, ans, fs in zip(sources, targets.tolist(), anchors.tolist(),
                                               nofollow.tolist(), strict=True)
                for t, a, f in zip(ts, ans, fs, strict=True)]


def insert(sessions: Callable[[], Session], rows: list[UrlRow], size: int) -> float:
    """Rows per second inserting `rows`, `size` per add_urls call and transaction."""
    started = time.perf_counter()
    for i in range(0, len(rows), size):
        with sessions() as session, session.begin():
            repository.add_urls(session, rows[i:i + size])
    return len(rows) / (time.perf_counter() - started)


def load(sessions: Callable[[], Session], web: Web) -> dict[int, float]:
    """Load ROWS URL rows; the insert rate per batch size (each on a sample of the load)."""
    sample = max(1000, min(200_000, ROWS // 20))
    rates = {size: insert(sessions, web.rows(sample), size) for size in BATCH_SIZES}
    started, done = time.perf_counter(), web.count
    while web.count < ROWS:
        insert(sessions, web.rows(min(100_000, ROWS - web.count)), BATCH_SIZES[-1])
        if (web.count - done) % 1_000_000 < 100_000:
            print(f"  {web.count:>12,} rows, {(web.count - done) / (time.perf_counter() - started):,.0f}"
                  " rows/s", flush=True)
    return rates


def load_fetches(sessions: Callable[[], Session], n: int) -> None:
    """`n` fetches of the first URLs over six months, through the store stage's insert."""
    with sessions() as session, session.begin():
        session.execute(sa.text("SELECT fetches_add_month(:m - make_interval(months => k)) "
                                "FROM generate_series(0, 6) AS k"), {"m": NOW})
        urls = session.execute(sa.select(Url.url_hash, Url.url, Url.host)
                               .order_by(Url.id).limit(n)).all()
    for i in range(0, len(urls), 5000):
        with sessions() as session, session.begin():
            repository.add_fetch_history(session, [
                HistoryRow(h, u, host, NOW - timedelta(minutes=(n - i - j) * 180 * 24 * 60 // n),
                           200, ip_address="127.0.0.1",
                           response_headers="Content-Type: text/html",
                           storage_key=f"bodies/{h}")
                for j, (h, u, host) in enumerate(urls[i:i + 5000])])


def load_links(sessions: Callable[[], Session], web: Web) -> float:
    """The link edges of web.fetched, a batch of pages per add_links call and transaction;
    edges per second."""
    started = time.perf_counter()
    for i in range(0, len(web.fetched), PAGES_PER_LINK_BATCH):
        edges = web.edges(web.fetched[i:i + PAGES_PER_LINK_BATCH])
        with sessions() as session, session.begin():
            repository.add_links(session, edges)
    return len(web.fetched) * LINKS_PER_PAGE / (time.perf_counter() - started)


def fold_counters(sessions: Callable[[], Session]) -> tuple[int, int, float]:
    """Fold the host counters' deltas as the beat task does: (delta rows, counts changed,
    seconds)."""
    with sessions() as session, session.begin():
        deltas = session.scalar(sa.select(sa.func.count()).select_from(host_count_deltas))
        started = time.perf_counter()
        folded = repository.fold_host_counts(session)
    return int(deltas or 0), folded, time.perf_counter() - started


def timed(sessions: Callable[[], Session], work: Callable[[Session], object]) -> float:
    """Median milliseconds of `work`, warm (one run first), each run rolled back."""
    times = []
    for _ in range(RUNS + 1):
        with sessions() as session:
            started = time.perf_counter()
            work(session)
            times.append((time.perf_counter() - started) * 1000)
            session.rollback()
    return statistics.median(times[1:])


def explain(sessions: Callable[[], Session], name: str, stmt: Any) -> None:
    sql = str(stmt.compile(dialect=sa.dialects.postgresql.dialect(),
                           compile_kwargs={"literal_binds": True}))
    with sessions() as session:
        plan = session.execute(sa.text(f"EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) "
                                       f"{sql}")).scalars().all()
        session.rollback()
    print(f"\n-- {name}\n" + "\n".join(plan))


def queries(session: Session, web: Web) -> Iterator[tuple[str, Callable[[Session], object],
                                                         Any]]:
    """(name, work, a statement to EXPLAIN or None) of each hot query."""
    known = [h for h, in session.execute(sa.select(Url.url_hash).where(
        Url.id.in_(np.random.default_rng(1).integers(1, ROWS, 500).tolist())))]
    fresh = web.rows(500)
    deeper = [row._replace(url_hash=h, depth=0, priority=2.0)
              for row, h in zip(fresh, known, strict=False)]
    one = known[0]
    big_host, small_host = web.hosts[0], web.hosts[HOSTS // 2]
    mid_id = ROWS // 2
    first_fetch = session.scalar(sa.select(Fetch).order_by(Fetch.id.desc()).limit(1))
    stored = [FetchOutcome(h, Status.FETCHED, last_fetched_at=NOW, http_status=200)
              for h in known]
    yield ("add_urls, 500 new rows", lambda s: repository.add_urls(s, fresh), None)
    yield ("add_urls, 500 known rows (conflict)",
           lambda s: repository.add_urls(s, deeper), None)
    yield ("lower_depths, 500 known rows", lambda s: repository.lower_depths(s, deeper),
           sa.select(Url.url_hash, Url.depth).where(Url.url_hash.in_(known[:20])))
    yield ("record_fetches, 500 rows (store)",
           lambda s: repository.record_fetches(s, stored, repository.NOT_MODIFIED_COLUMNS),
           sa.update(Url).where(Url.url_hash == one).values(http_status=200))
    yield ("page show (get_url + outbound)",
           lambda s: (repository.get_url(s, one), repository.outbound_links(s, one)),
           sa.select(Url).where(Url.url_hash == one))
    yield ("recrawl --host, largest host",
           lambda s: repository.url_hashes_of_host(s, big_host),
           sa.select(Url.url_hash).where(Url.host == big_host))
    yield ("recrawl --host, a median host",
           lambda s: repository.url_hashes_of_host(s, small_host),
           sa.select(Url.url_hash).where(Url.host == small_host))
    rebuild = (sa.select(Url.id, Url.url, Url.host).where(Url.status == Status.QUEUED,
                                                         Url.id > mid_id)
               .order_by(Url.id).limit(500))
    yield ("rebuild scan chunk (queued, id >, 500)", lambda s: s.execute(rebuild).all(), rebuild)
    export = sa.select(Fetch).where(Fetch.id > 1000).order_by(Fetch.id).limit(500)
    yield ("WARC export chunk (id >, 500)", lambda s: s.scalars(export).all(), export)
    by_host = (sa.select(Fetch).where(Fetch.host == big_host, Fetch.id > 0)
               .order_by(Fetch.id).limit(500))
    yield ("WARC export --host chunk", lambda s: s.scalars(by_host).all(), by_host)
    prior = (sa.select(Fetch).where(Fetch.url_hash == first_fetch.url_hash,
                                    Fetch.id < first_fetch.id, Fetch.storage_key.is_not(None))
             .order_by(Fetch.id.desc()).limit(1))
    yield ("WARC export: a 304's prior fetch", lambda s: s.scalars(prior).first(), prior)
    yield ("crawlctl hosts (host counters)", repository.host_status_counts, None)
    scan = sa.select(Url.host, Url.status, sa.func.count()).group_by(Url.host, Url.status)
    yield ("crawlctl hosts before 0011 (scan of urls)", lambda s: s.execute(scan).all(), scan)


def main() -> None:
    url = own_database()
    settings = load_settings({"DATABASE_URL": url, "CRAWL_DATA_DIR": str(Path("var").resolve())})
    upgrade(settings)
    sessions = session_factory(settings)
    web = Web()
    print(f"database {NAME}: loading {ROWS:,} URL rows", flush=True)
    started = time.perf_counter()
    rates = load(sessions, web)
    load_fetches(sessions, max(1000, ROWS // 10))
    print(f"loading {len(web.fetched) * LINKS_PER_PAGE:,} link edges", flush=True)
    link_rate = load_links(sessions, web)
    deltas, folded, fold_seconds = fold_counters(sessions)
    with sessions() as session, session.begin():
        session.execute(sa.text("ANALYZE"))
    print(f"loaded in {time.perf_counter() - started:,.0f} s\n")
    print("bytes on disk per row (tables, their partitions, indexes and TOAST):")
    with sessions() as session:
        for table in ("urls", "fetches", "links", "host_counts"):
            rows, size = session.execute(sa.text(
                f"SELECT (SELECT count(*) FROM {table}), coalesce((SELECT sum("
                f"pg_total_relation_size(relid)) FROM pg_partition_tree('{table}')), "
                f"pg_total_relation_size('{table}'))")).one()
            print(f"  {table:<11} {rows:>12,} rows  {size / 2**20:>9,.0f} MiB  "
                  f"{size / max(rows, 1):>6,.0f} B/row")
    print()
    print("insert rate through repository.add_urls (rows per call, one transaction each):")
    for size, rate in rates.items():
        print(f"  {size:>5} rows/call  {rate:>10,.0f} rows/s")
    print(f"link edges through repository.add_links ({PAGES_PER_LINK_BATCH} pages of "
          f"{LINKS_PER_PAGE} links per call): {link_rate:,.0f} edges/s")
    with sessions() as session:
        pairs = session.scalar(sa.select(sa.func.count()).select_from(HostCount))
    print(f"host counters: the load appended {deltas:,} delta rows; folding them took "
          f"{fold_seconds:,.2f} s, {folded:,} (host, status) counts, {pairs:,} in all")
    print(f"\nhot queries at {ROWS:,} URL rows, {max(1000, ROWS // 10):,} fetches "
          f"(median of {RUNS}, warm):")
    with sessions() as session:
        hot = list(queries(session, web))
    for name, work, _ in hot:
        print(f"  {name:<42} {timed(sessions, work):>10.2f} ms", flush=True)
    if EXPLAIN:
        for name, _, stmt in hot:
            if stmt is not None:
                explain(sessions, name, stmt)


if __name__ == "__main__":
    main()
