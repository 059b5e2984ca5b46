"""Migration 0010 on Postgres: urls, links and fetches become partitioned tables without losing a
row or an id, new rows land in partitions, the conflict paths still hold, and the downgrade
gives the plain tables back."""

from __future__ import annotations

from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.orm import Session

from crawlapp.adapters.db import repository
from crawlapp.adapters.db.engine import MIGRATIONS_DIR, get_engine, normalize_url, upgrade
from crawlapp.core.rows import HistoryRow, LinkEdge, UrlRow
from crawlapp.core.settings import Settings, load_settings
from crawlapp.core.urls import url_hash

NOW = datetime(2026, 1, 10, tzinfo=UTC)
OLD_MONTHS = [datetime(2025, 3, 5, tzinfo=UTC), datetime(2025, 11, 30, 23, 59, tzinfo=UTC),
              datetime(2026, 1, 1, tzinfo=UTC)]
URLS = [f"http://h{i % 5}.example.com/p{i}" for i in range(200)]


def _settings(pg_url: str, tmp_path: Path) -> Settings:
    return load_settings({"DATABASE_URL": pg_url, "CRAWL_DATA_DIR": str(tmp_path)})


def downgrade(settings: Settings, revision: str) -> None:
    """`alembic downgrade revision`, as an operator runs it."""
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("sqlalchemy.url", normalize_url(settings.database_url))
    command.downgrade(config, revision)


def _fill_old_tables(engine: sa.Engine) -> None:
    with engine.begin() as conn:
        conn.execute(sa.text(
            "INSERT INTO urls (url_hash, url, host, depth, status, priority, discovered_at, "
            "content_dedup, fail_count) VALUES (:h, :u, :host, 3, 'queued', 0.5, :now, false, 0)"),
            [{"h": url_hash(u), "u": u, "host": u.split("/")[2], "now": NOW} for u in URLS])
        conn.execute(sa.text("INSERT INTO links (source_hash, target_hash, nofollow) "
                             "VALUES (:s, :t, false)"),
                     [{"s": url_hash(a), "t": url_hash(b)} for a, b in pairwise(URLS)])
        conn.execute(sa.text(
            "INSERT INTO fetches (url_hash, url, host, fetched_at, http_status, not_modified, "
            "robots) VALUES (:h, :u, 'h0.example.com', :at, 200, false, false)"),
            [{"h": url_hash(u), "u": u, "at": OLD_MONTHS[i % 3]} for i, u in enumerate(URLS)])


def _snapshot(conn: sa.Connection) -> dict[str, set[tuple[object, ...]]]:
    return {"urls": set(conn.execute(sa.text("SELECT id, url_hash, url, host, depth FROM urls"))),
            "links": set(conn.execute(sa.text("SELECT source_hash, target_hash FROM links"))),
            "fetches": set(conn.execute(sa.text("SELECT id, url_hash, fetched_at FROM fetches")))}


def _partitions(conn: sa.Connection, table: str) -> set[str]:
    return set(conn.execute(sa.text(
        "SELECT inhrelid::regclass::text FROM pg_inherits WHERE inhparent = CAST(:t AS regclass)"),
        {"t": table}).scalars())


def _where(conn: sa.Connection, table: str, column: str, value: str) -> str:
    """The partition holding the row of `table` whose `column` is `value`."""
    return str(conn.execute(sa.text(f"SELECT tableoid::regclass::text FROM {table} "
                                    f"WHERE {column} = :v"), {"v": value}).scalar_one())


def _row(u: str, depth: int) -> UrlRow:
    return UrlRow(url_hash(u), u, u.split("/")[2], depth, "queued", NOW, priority=1.0)


def test_upgrade_keeps_every_row_and_partitions_new_ones(pg_url: str, tmp_path: Path) -> None:
    settings = _settings(pg_url, tmp_path)
    upgrade(settings, "0009")
    engine = get_engine(settings)
    _fill_old_tables(engine)
    with engine.connect() as conn:
        before = _snapshot(conn)
    upgrade(settings)
    with engine.connect() as conn:
        assert _snapshot(conn) == before
        urls_parts = _partitions(conn, "urls")
        assert len(urls_parts) == 32 and len(_partitions(conn, "links")) == 32
        # every month of the old history has its partition, and the default is empty
        assert {"fetches_2025_03", "fetches_2025_11", "fetches_2026_01",
                "fetches_default"} <= _partitions(conn, "fetches")
        assert conn.execute(sa.text("SELECT count(*) FROM fetches_default")).scalar() == 0
        # 23:59 UTC on Nov 30 is November's, whatever the session's time zone
        assert _where(conn, "fetches", "url", URLS[1]) == "fetches_2025_11"
        assert {_where(conn, "urls", "url_hash", url_hash(u)) for u in URLS} <= urls_parts
        assert conn.execute(sa.text(
            "SELECT count(*) FROM ONLY urls")).scalar() == 0  # the parent holds no row
        last_id = max(i for i, *_ in before["urls"])

    new_url = "http://h9.example.com/new"
    with Session(engine) as session, session.begin():
        # one new row, one known row (the conflict lands in another partition than the new one)
        added = repository.add_urls(session, [_row(new_url, 1), _row(URLS[7], 1)])
        assert added == {url_hash(new_url)}
        known, lowered = repository.lower_depths(session, [_row(URLS[8], 1)])
        assert known == {url_hash(URLS[8])} and lowered[0].new_depth == 1
        repository.add_links(session, [LinkEdge(url_hash(new_url), url_hash(URLS[0]), None,
                                                False)])
        repository.add_links(session, [LinkEdge(url_hash(URLS[0]), url_hash(URLS[1]), None,
                                                False)])
        repository.add_fetch_history(session, [
            HistoryRow(url_hash(new_url), new_url, "h9.example.com", at, 200)
            for at in (NOW, NOW, datetime(2031, 6, 1, tzinfo=UTC))])
    with engine.connect() as conn:
        row = conn.execute(sa.text("SELECT id, depth FROM urls WHERE url_hash = :h"),
                           {"h": url_hash(new_url)}).one()
        assert row.id == last_id + 1  # the old sequence goes on
        assert conn.execute(sa.text("SELECT count(*) FROM urls")).scalar() == len(URLS) + 1
        assert conn.execute(sa.text("SELECT depth FROM urls WHERE url_hash = :h"),
                            {"h": url_hash(URLS[7])}).scalar() == 3  # conflict: left alone
        assert _where(conn, "urls", "url_hash", url_hash(new_url)) in urls_parts
        assert _where(conn, "links", "source_hash", url_hash(new_url)) in _partitions(conn,
                                                                                   "links")
        assert conn.execute(sa.text("SELECT count(*) FROM links")).scalar() == len(URLS)
        months = {at: part for at, part in conn.execute(sa.text(
            "SELECT fetched_at, tableoid::regclass::text FROM fetches WHERE url_hash = :h"),
            {"h": url_hash(new_url)})}
        assert months == {NOW: "fetches_2026_01",
                          datetime(2031, 6, 1, tzinfo=UTC): "fetches_default"}

    # A month without a partition waits in the default one; making it moves the rows over.
    with Session(engine) as session, session.begin():
        session.execute(sa.text("SELECT fetches_add_month(:m)"),
                        {"m": datetime(2031, 6, 20, tzinfo=UTC)})
        assert repository.add_fetch_months(session)  # this month's and the next, idempotent
        assert set(repository.add_fetch_months(session)) == set(
            repository.add_fetch_months(session))
    with engine.connect() as conn:
        assert _where(conn, "fetches", "fetched_at", "2031-06-01T00:00:00+00:00") \
            == "fetches_2031_06"
        assert conn.execute(sa.text("SELECT count(*) FROM fetches_default")).scalar() == 0
        after = _snapshot(conn)

    downgrade(settings, "0009")
    with engine.connect() as conn:
        assert _snapshot(conn) == after
        kinds = {name: kind for name, kind in conn.execute(sa.text(
            "SELECT relname, relkind FROM pg_class WHERE relname IN ('urls', 'links', 'fetches')"
        ))}
        assert kinds == {"urls": "r", "links": "r", "fetches": "r"}
        assert not _partitions(conn, "urls")
        assert conn.execute(sa.text("SELECT to_regprocedure('fetches_add_month(timestamptz)')"
                                    )).scalar() is None
        last_id = conn.execute(sa.text("SELECT max(id) FROM urls")).scalar_one()
    with Session(engine) as session, session.begin():
        assert repository.add_urls(session, [_row("http://h9.example.com/after", 0)])
    with engine.connect() as conn:  # the sequence is the plain table's again
        assert conn.execute(sa.text("SELECT max(id) FROM urls")).scalar() > last_id
    upgrade(settings)  # and up again, over the rows the downgrade kept
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM urls")).scalar() == len(URLS) + 2
