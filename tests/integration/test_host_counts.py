"""The host counters (migration 0011) equal a GROUP BY of urls after every kind of write: a
crawl of the test web through every stage on Postgres (inserts, fetched, failed, blocked,
redirected, too deep, over budget, dedup's re-queues), the re-crawl drain, the denylist and its
lifting, takedowns, a DELETE and an UPDATE by hand; `crawlctl hosts` shows the scan's counts.
The migration fills them from the rows there are, on SQLite and Postgres, and its downgrade
drops them."""

from __future__ import annotations

import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session

from crawlapp.adapters.context import Context
from crawlapp.adapters.db import repository
from crawlapp.adapters.db.engine import get_engine, upgrade
from crawlapp.core.records import Status
from crawlapp.core.rows import FetchOutcome, UrlRow
from crawlapp.core.settings import Settings, load_settings
from crawlapp.core.urls import url_hash
from crawlapp.observe.stats import host_report
from crawlapp.ops import rebuild, takedown
from crawlapp.ops.seeding import add_seeds
from crawlapp.stages.recrawling import drain
from tests.integration.in_process import crawl
from tests.integration.test_partitions import downgrade
from tests.integration.test_redis_keys import Seen
from testweb.server import start_in_background
from testweb.site import Web, WebSpec

NOW = datetime(2026, 3, 1, tzinfo=UTC)
Counts = dict[tuple[str, str], int]


def scanned(engine: sa.Engine) -> Counts:
    """What the counters must say: the GROUP BY of urls they replace."""
    with engine.connect() as conn:
        return {(h, s): n for h, s, n in conn.execute(sa.text(
            "SELECT host, status, count(*) FROM urls GROUP BY host, status"))}


def counted(engine: sa.Engine) -> Counts:
    with Session(engine) as session:
        return {(h, s): n for h, by_status in repository.host_status_counts(session).items()
                for s, n in by_status.items()}


def folded(engine: sa.Engine) -> Counts:
    """The counters table alone, zeros left out."""
    with engine.connect() as conn:
        return {(h, s): n for h, s, n in conn.execute(sa.text(
            "SELECT host, status, n FROM host_counts WHERE n <> 0"))}


def assert_exact(engine: sa.Engine) -> Counts:
    expected = scanned(engine)
    assert counted(engine) == expected
    return expected


def test_the_counters_follow_every_write_of_a_crawl(tmp_path: Path, redis_url: str,
                                                    pg_url: str) -> None:
    # Depth 1: the fetched depth-1 pages link to depth 2 (too_deep rows) while the home
    # pages' links pass each host's budget of 6 (over_budget). At depth 2, a run in four had
    # no too_deep row: the pages at the limit could all fall past the budget.
    settings = load_settings({"CRAWL_DATA_DIR": str(tmp_path), "CRAWL_REDIS_URL": redis_url,
                              "DATABASE_URL": pg_url, "CRAWL_ALLOWED_NETWORKS": "127.0.0.0/8",
                              "CRAWL_DEFAULT_DELAY": "0.01", "CRAWL_MAX_DEPTH": "1",
                              "CRAWL_MAX_PAGES_PER_HOST": "6"})
    upgrade(settings)
    engine = get_engine(settings)
    ctx = Context(settings)
    spec = WebSpec(hosts=3, pages_per_host=6, port=0, crawl_delay_every=0, link_cases=True,
                   dedup_cases=True, recrawl_cases=True)
    with start_in_background(Web(spec), str(tmp_path / "requests.jsonl")) as server:
        add_seeds(ctx, server.web.seeds())
        crawl(ctx, Seen(ctx), time.monotonic() + 120)
        after_crawl = assert_exact(engine)
        assert {Status.FETCHED, Status.FAILED, Status.BLOCKED, Status.TOO_DEEP,
                Status.OVER_BUDGET} <= {s for _, s in after_crawl}

        with Session(engine) as session, session.begin():
            assert repository.fold_host_counts(session) > 0
        assert folded(engine) == after_crawl  # all folded: the deltas are empty
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT count(*) FROM host_count_deltas")).scalar() == 0

        assert drain(ctx, time.time() + 10**9) > 0  # fetched pages queued again for re-crawl
        before = assert_exact(engine)
        host = min(h for h, s in before if s == Status.QUEUED)
        assert takedown.block(ctx, host, "test")
        assert assert_exact(engine)[(host, Status.BLOCKED)] > before.get((host, Status.BLOCKED), 0)
        assert takedown.unblock(ctx, host)
        assert assert_exact(engine) == before
        crawl(ctx, Seen(ctx), time.monotonic() + 120)
        assert_exact(engine)

    hosts = sorted({h for h, _ in after_crawl})

    fetched = [u for u, s in _urls(engine).items() if s == Status.FETCHED]
    takedown.delete(ctx, url=fetched[0])
    takedown.delete(ctx, url="http://never.example/seen")  # a tombstone row
    takedown.delete(ctx, host=hosts[1])
    deleted = assert_exact(engine)
    assert deleted[("never.example", Status.DELETED)] == 1
    assert deleted[(hosts[1], Status.DELETED)] > 0

    with engine.begin() as conn:
        conn.execute(sa.text("DELETE FROM urls WHERE host = :h"), {"h": hosts[1]})
        conn.execute(sa.text("UPDATE urls SET host = 'moved.example' WHERE url_hash = :h"),
                     {"h": url_hash(fetched[1])})
    by_scan = assert_exact(engine)
    assert not any(h == hosts[1] for h, _ in by_scan)

    # `crawlctl hosts` shows the scan's counts, and the rebuild counts each host's budget
    # from them
    shown = {h["host"]: h for h in host_report(ctx, top=1000)}
    per_host: dict[str, Counter[str]] = {}
    for (h, s), n in by_scan.items():
        per_host.setdefault(h, Counter())[s] = n
    assert set(shown) == set(per_host)
    for h, c in per_host.items():
        assert {k: shown[h][k] for k in ("pages", "fetched", "failed", "blocked", "queued",
                                         "deleted")} == {
            "pages": c.total(), "fetched": c[Status.FETCHED], "failed": c[Status.FAILED],
            "blocked": c[Status.BLOCKED], "queued": c[Status.QUEUED],
            "deleted": c[Status.DELETED]}
    budgeted = {h for h, c in per_host.items()
                if c.total() - c[Status.TOO_DEEP] - c[Status.OVER_BUDGET]}
    assert rebuild.rebuild(ctx)["hosts_counted"] == len(budgeted)


def _urls(engine: sa.Engine) -> dict[str, str]:
    with engine.connect() as conn:
        return dict(conn.execute(sa.text("SELECT url, status FROM urls ORDER BY id")).all())


def _row(i: int, status: str) -> UrlRow:
    url = f"http://h{i % 4}.example.com/p{i}"
    return UrlRow(url_hash(url), url, f"h{i % 4}.example.com", 1, status, NOW, priority=0.5)


STATUSES = [Status.QUEUED, Status.FETCHED, Status.FAILED, Status.BLOCKED, Status.TOO_DEEP]


@pytest.fixture(params=["sqlite", "postgres"])
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    env = {"CRAWL_DATA_DIR": str(tmp_path)}
    if request.param == "postgres":
        env["DATABASE_URL"] = request.getfixturevalue("pg_url")
    return load_settings(env)


def test_the_migration_fills_the_counters_and_its_downgrade_drops_them(settings: Settings
                                                                       ) -> None:
    upgrade(settings, "0010")
    engine = get_engine(settings)
    with Session(engine) as session, session.begin():
        repository.add_urls(session, [_row(i, STATUSES[i % 5]) for i in range(300)])
    upgrade(settings)
    assert folded(engine) == scanned(engine) and len(scanned(engine)) == 20

    with Session(engine) as session, session.begin():
        repository.add_urls(session, [_row(i, Status.QUEUED) for i in range(250, 400)])
        repository.set_status(session, [_row(i, "").url_hash
                                        for i in range(0, 100, 3)], Status.OVER_BUDGET)
        repository.record_fetches(session, [
            FetchOutcome(_row(i, "").url_hash, Status.FAILED if i % 7 else Status.FETCHED,
                         last_fetched_at=NOW) for i in range(300, 340)])
    assert_exact(engine)

    downgrade(settings, "0010")
    tables = sa.inspect(engine).get_table_names()
    assert "host_counts" not in tables and "host_count_deltas" not in tables
    with Session(engine) as session, session.begin():  # urls writes without the triggers
        assert repository.add_urls(session, [_row(i, Status.QUEUED) for i in range(400, 410)])
    upgrade(settings)
    assert folded(engine) == scanned(engine)
    assert sum(scanned(engine).values()) == 410


def test_a_database_whose_tables_were_dropped_migrates_again(pg_url: str, tmp_path: Path) -> None:
    """The functions the migrations made outlive a DROP TABLE of every table (as `make bench`
    resets its database): migrating again replaces them."""
    settings = load_settings({"CRAWL_DATA_DIR": str(tmp_path), "DATABASE_URL": pg_url})
    upgrade(settings)
    engine = get_engine(settings)
    with engine.begin() as conn:
        for table in sa.inspect(engine).get_table_names():
            conn.execute(sa.text(f'DROP TABLE IF EXISTS "{table}" CASCADE'))
    upgrade(settings)
    with Session(engine) as session, session.begin():
        repository.add_urls(session, [_row(i, Status.QUEUED) for i in range(10)])
    assert sum(assert_exact(engine).values()) == 10
