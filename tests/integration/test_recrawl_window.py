"""The re-crawl window on the real Redis and databases: Redis holds the pages due before its
horizon, the database every page's next fetch; the drain loads the window's pages coming due
before it claims, whatever the order of a store and a load, and after Redis lost the window."""

from __future__ import annotations

import gzip
import hashlib
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from crawlapp.adapters.context import Context
from crawlapp.adapters.db import repository, schedule
from crawlapp.adapters.db.engine import get_engine, upgrade
from crawlapp.adapters.redis import keys
from crawlapp.core.records import Page, Status
from crawlapp.core.recrawl import DAY
from crawlapp.core.rows import ScheduledRow, UrlRow
from crawlapp.core.settings import load_settings
from crawlapp.core.urls import url_hash
from crawlapp.observe.stats import recrawl_tiers
from crawlapp.ops import takedown
from crawlapp.ops.rebuild import rebuild
from crawlapp.ops.recrawl import recrawl
from crawlapp.stages import recrawling
from crawlapp.stages.dedup import dedup_pages
from crawlapp.stages.recrawling import drain
from crawlapp.stages.storing import store_pages
from tests.integration.test_partitions import downgrade

T = float(int(time.time()))
WINDOW = 3600.0  # the default CRAWL_RECRAWL_WINDOW
URLS = [f"http://w{i % 2}.test/p{i}" for i in range(6)]


@pytest.fixture(params=["sqlite", "postgres"])
def ctx(request: pytest.FixtureRequest, tmp_path: Path, redis_url: str) -> Context:
    # the adaptive rule: a page's first re-crawl is queued a first interval (a day) after it
    env = {"CRAWL_DATA_DIR": str(tmp_path), "CRAWL_REDIS_URL": redis_url,
           "CRAWL_RECRAWL_POLICY": "adaptive"}
    if request.param == "postgres":
        env["DATABASE_URL"] = request.getfixturevalue("pg_url")
    settings = load_settings(env)
    upgrade(settings)
    ctx = Context(settings)
    with ctx.sessions.begin() as session:  # important pages: a first fetch is due a day later
        repository.add_urls(session, [UrlRow(url_hash(u), u, u.split("/")[2], 0, "queued",
                                             datetime.now(UTC), priority=1.0) for u in URLS])
    return ctx


def store(ctx: Context, url: str, due: float) -> None:
    """The dedup and store stages' batch of one page of its own content, fetched a day
    before `due` (its first fetch)."""
    body = f"<p>{url}</p>".encode()
    page = Page(url=url, url_hash=url_hash(url), host=url.split("/")[2], depth=0,
                status=Status.FETCHED, fetched_at=due - DAY, http_status=200,
                content_type="text/html", content_hash=hashlib.sha256(body).hexdigest(),
                content_length=len(body), body_gz=gzip.compress(body))
    store_pages(ctx, dedup_pages(ctx, [page]))


def in_redis(ctx: Context) -> dict[str, tuple[str, float]]:
    """url -> (tier, next fetch time) of each page in the re-crawl sets."""
    by_hash = {url_hash(u): u for u in URLS}
    found: dict[str, tuple[str, float]] = {}
    for part in ctx.recrawls._parts:
        for tier, key in part.tiers.items():
            for member, score in ctx.dedup_redis.zrange(key, 0, -1, withscores=True):
                assert by_hash[member.decode()] not in found, "a page in two tiers"
                found[by_hash[member.decode()]] = (tier, score)
    return found


def status(ctx: Context, url: str) -> str:
    with ctx.sessions() as session:
        row = repository.get_url(session, url_hash(url))
    assert row is not None
    return row.status


def test_a_page_due_after_the_window_waits_in_the_database_until_the_window_reaches_it(
        ctx: Context) -> None:
    far, near = URLS[0], URLS[1]
    assert drain(ctx, T) == 0  # loads the window: nothing is scheduled yet
    store(ctx, far, T + DAY)
    assert in_redis(ctx) == {}  # beyond the horizon: only its row knows it
    assert recrawl_tiers(ctx, T)["daily"] == {"pages": 1, "overdue": 0}
    assert recrawl_tiers(ctx, T + DAY)["daily"] == {"pages": 1, "overdue": 1}

    assert drain(ctx, T + DAY - 1800) == 0  # the window reaches it: loaded, not yet due
    assert in_redis(ctx) == {far: ("daily", T + DAY)}
    store(ctx, near, T + DAY + 600)  # within the loaded window: the store writes it
    assert in_redis(ctx)[near] == ("daily", T + DAY + 600)
    assert ctx.recrawls.pending(T + DAY) == 1

    assert drain(ctx, T + DAY + 1) == 1
    assert status(ctx, far) == Status.QUEUED and in_redis(ctx) == {near: ("daily", T + DAY + 600)}
    assert drain(ctx, T + DAY + 2) == 0  # queued once
    assert sum(s.urls_queued for s in ctx.frontier.stats(T + DAY + 2)) == 1
    assert recrawl_tiers(ctx, T + DAY + 700) == {
        "minutes": {"pages": 0, "overdue": 0}, "hourly": {"pages": 0, "overdue": 0},
        "daily": {"pages": 1, "overdue": 1},
        "weekly": {"pages": 0, "overdue": 0}, "monthly": {"pages": 0, "overdue": 0}}


def test_a_page_stored_while_the_window_loads_is_in_redis_whatever_the_order(
        ctx: Context, monkeypatch: pytest.MonkeyPatch) -> None:
    """The store commits its row before it reads the horizon; the load moves the horizon
    before it reads the database: each page stored around a load is loaded, or written by
    the store, or both."""
    drain(ctx, T)  # the horizon at T + WINDOW
    before, between, after = URLS[:3]
    due = {u: T + WINDOW + 600 * (i + 1) for i, u in enumerate((before, between, after))}
    store(ctx, before, due[before])  # reads the horizon before the load moves it
    assert in_redis(ctx) == {}
    real_due = schedule.due

    def racing(*args: Any) -> Iterator[list[ScheduledRow]]:
        store(ctx, between, due[between])  # after the horizon moved, before the query
        pages = list(real_due(*args))
        store(ctx, after, due[after])  # after the query, before the load writes
        return iter(pages)

    monkeypatch.setattr(recrawling.schedule, "due", racing)
    assert recrawling.load_window(ctx, T + WINDOW) == 2  # the horizon to T + 2 * WINDOW
    assert in_redis(ctx) == {u: ("daily", at) for u, at in due.items()}
    assert ctx.recrawls.until() == T + 2 * WINDOW


def test_a_lost_window_is_loaded_again_overdue_pages_included(ctx: Context,
                                                              monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    overdue, soon, later, far = URLS[:4]
    drain(ctx, T)
    store(ctx, overdue, T + 100)
    store(ctx, soon, T + 1800)
    store(ctx, far, T + 3 * DAY)
    assert set(in_redis(ctx)) == {overdue, soon}
    ctx.dedup_redis.delete(ctx.recrawls.horizon, *(key for part in ctx.recrawls._parts
                                                   for key in part.tiers.values()))
    assert drain(ctx, T + 200) == 1  # no horizon: everything due before T + 200 + WINDOW
    assert status(ctx, overdue) == Status.QUEUED and set(in_redis(ctx)) == {soon}

    # A load that dies leaves where it started: the next one loads from there.
    store(ctx, later, T + 200 + WINDOW + 60)
    assert later not in in_redis(ctx)
    def failing(*args: Any) -> Iterator[list[ScheduledRow]]:
        raise ConnectionError("database gone")

    monkeypatch.setattr(recrawling.schedule, "due", failing)
    with pytest.raises(ConnectionError):
        drain(ctx, T + 300)
    monkeypatch.undo()
    assert ctx.recrawls.until() == T + 300 + WINDOW
    drain(ctx, T + 400)
    assert in_redis(ctx)[later] == ("daily", T + 200 + WINDOW + 60)

    # A rebuild loads the window anew and resets the horizon.
    ctx.dedup_redis.delete(*(key for key in ctx.dedup_redis.scan_iter("*recrawl*")))
    restored = rebuild(ctx, hot=False, dedup=True)
    assert restored["recrawls"] == 1 and set(in_redis(ctx)) == {soon}
    assert ctx.recrawls.until() == pytest.approx(time.time() + WINDOW, abs=60)


def test_an_operator_makes_a_far_page_due_puts_it_back_and_takes_one_down(ctx: Context) -> None:
    far, gone = URLS[0], URLS[2]
    drain(ctx, T)
    store(ctx, far, T + DAY)
    store(ctx, gone, T + 1000)
    assert recrawl(ctx, [far], now=True) == 1  # due now, though far beyond the window
    assert in_redis(ctx)[far][1] <= time.time()
    assert recrawl(ctx, [far]) == 1  # back at its next time: beyond the window, out of Redis
    assert set(in_redis(ctx)) == {gone}
    recrawl(ctx, [far], now=True)
    recrawling.load_window(ctx, T + DAY - 100)  # a load of its time leaves it due now
    assert in_redis(ctx)[far][1] <= time.time()
    counts = takedown.delete(ctx, url=gone)
    assert counts["recrawls_stopped"] == 1 and set(in_redis(ctx)) == {far}
    assert drain(ctx, T + DAY + 1) == 1
    assert status(ctx, far) == Status.QUEUED and status(ctx, gone) == Status.DELETED


def test_the_drain_skips_denied_hosts_until_they_are_unblocked(ctx: Context) -> None:
    page = URLS[1]
    host = page.split("/")[2]
    drain(ctx, T)
    store(ctx, page, T + 2 * DAY)
    counts = takedown.block(ctx, host, "test")
    assert counts is not None and counts["recrawls_stopped"] == 1
    assert drain(ctx, T + 10 * DAY) == 0  # loaded, claimed, not queued
    assert status(ctx, page) == Status.FETCHED and in_redis(ctx) == {}
    unblocked = takedown.unblock(ctx, host)
    assert unblocked is not None and unblocked["recrawls_restored"] == 1
    assert drain(ctx, T + 10 * DAY) == 1 and status(ctx, page) == Status.QUEUED


def test_the_horizon_key_is_the_registry_s(ctx: Context) -> None:
    drain(ctx, T)
    assert keys.RECRAWL_HORIZON.matches(ctx.settings.redis_prefix, ctx.recrawls.horizon)


def _schedule_indexes(engine: sa.Engine) -> set[str]:
    """The indexes on urls' next_crawl_at (on Postgres the parent's and each partition's)."""
    query = ("SELECT name FROM sqlite_master WHERE type = 'index' AND sql LIKE '%next_crawl_at%'"
             if engine.dialect.name == "sqlite" else
             "SELECT relname FROM pg_class WHERE relkind IN ('i', 'I') AND relname LIKE "
             "'%next_crawl_at%'")
    with engine.connect() as conn:
        return set(conn.execute(sa.text(query)).scalars())


def test_migration_0013_indexes_the_schedule_and_its_downgrade_drops_it(ctx: Context) -> None:
    engine = get_engine(ctx.settings)
    found = _schedule_indexes(engine)
    assert "ix_urls_next_crawl_at" in found
    assert len(found) == (1 if engine.dialect.name == "sqlite" else 33)  # and 32 partitions
    downgrade(ctx.settings, "0012")
    assert _schedule_indexes(engine) == set()
    upgrade(ctx.settings)
    assert _schedule_indexes(engine) == found
