"""Host authority on the real databases and Redis: the host graph the links stage records, the
computation, where its scores go (table, authority hash, frontier boost) and the priorities
of new and re-crawled URLs."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from crawlapp.adapters.context import Context
from crawlapp.adapters.db import repository
from crawlapp.adapters.db.engine import upgrade
from crawlapp.adapters.db.models import HostAuthority, HostLink
from crawlapp.adapters.redis import keys
from crawlapp.adapters.redis.change_rates import ALL_HOSTS
from crawlapp.core.freshness import HostRates
from crawlapp.core.priority import NEW_FRESHNESS, REFRESH_FRESHNESS, link_priority
from crawlapp.core.records import Link, Page, Status
from crawlapp.core.rows import FetchOutcome
from crawlapp.core.settings import load_settings
from crawlapp.core.urls import shard_of, url_hash
from crawlapp.ops import authority
from crawlapp.ops.rebuild import rebuild
from crawlapp.stages.linking import extract_links
from crawlapp.stages.recrawling import drain

LEAVES = [f"leaf{i}.com" for i in range(5)]


@pytest.fixture(params=["sqlite", "postgres"])
def ctx(request: pytest.FixtureRequest, tmp_path: Path, redis_url: str) -> Context:
    env = {"CRAWL_DATA_DIR": str(tmp_path), "CRAWL_REDIS_URL": redis_url, "CRAWL_SHARDS": "2"}
    if request.param == "postgres":
        env["DATABASE_URL"] = request.getfixturevalue("pg_url")
    settings = load_settings(env)
    upgrade(settings)
    return Context(settings)


def page(url: str, links: list[Link], status: Status = Status.FETCHED) -> Page:
    return Page(url=url, url_hash=url_hash(url), depth=0, status=status, links=links)


def test_the_host_graph_scores_the_hub_and_reaches_redis_and_the_rows(
        ctx: Context, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(authority, "LOAD_CHUNK", 2)  # the edges are read in several chunks
    pages = [page(f"http://{leaf}/{n}", [Link("http://hub.com/", "Hub"),
                                         Link("http://hub.com/more", "More"),
                                         Link(f"http://{leaf}/{n + 1}", "Next"),
                                         Link("http://spam.com/", "x", nofollow=True)])
             for leaf in LEAVES for n in range(2)]
    pages.append(page("http://hub.com/", [Link("http://leaf0.com/0", "Leaf")]))
    pages.append(page("http://leaf0.com/robots.txt", [Link("http://maps.com/sitemap.xml")],
                      Status.ROBOTS))
    extract_links(ctx, pages)
    extract_links(ctx, pages[:3])  # again: each pair once
    with ctx.sessions() as session:
        graph = set(session.execute(select(HostLink.source_host, HostLink.target_host)).all())
    # cross-host, followed links only, once per pair
    assert graph == {(leaf, "hub.com") for leaf in LEAVES} | {("hub.com", "leaf0.com")}
    assert ctx.authority.load(["hub.com"]) == {"hub.com": 0.0}  # not scored yet

    assert authority.compute(ctx) == 6
    with ctx.sessions() as session:
        stored = dict(session.execute(select(HostAuthority.host, HostAuthority.score)).all())
    assert stored["hub.com"] == 1.0 and stored["leaf1.com"] == 0.0
    assert 0.0 < stored["leaf0.com"] < 1.0  # the hub links back to it
    assert ctx.authority.load(stored) == stored
    boost = keys.BOOST.of(ctx.settings.redis_prefix, shard=shard_of("hub.com", 2))
    assert float(ctx.redis.hget(boost, "hub.com") or 0) == 1.0
    # the fleet's re-crawl budget is solved at its pages' mean importance
    with ctx.sessions() as session:
        rows = {h: sum(c.values()) for h, c in repository.host_status_counts(session).items()}
    fleet = HostRates.parse(ctx.change_rates.load([])[ALL_HOSTS])
    assert fleet.importance == pytest.approx(
        sum((1 + stored.get(h, 0.0)) * n for h, n in rows.items()) / sum(rows.values()))
    assert 1.0 < fleet.importance < 2.0
    rebuild(ctx, dedup=False)  # the fleet's sums summed again keep it
    assert HostRates.parse(ctx.change_rates.load([])[ALL_HOSTS]).importance == pytest.approx(
        fleet.importance)

    # a URL found now gets its host's authority, and the combined priority
    extract_links(ctx, [page("http://leaf3.com/9", [Link("http://hub.com/new", "New"),
                                                    Link("http://leaf4.com/new", "New")])])
    weights = ctx.settings.priority_weights
    with ctx.sessions() as session:
        for url, score in (("http://hub.com/new", 1.0), ("http://leaf4.com/new", 0.0)):
            row = repository.get_url(session, url_hash(url))
            assert row is not None
            assert (row.authority, row.link_context) == (score, link_priority(1, False, "New"))
            assert row.priority == weights.priority(score, NEW_FRESHNESS, row.link_context)
    # the stored figures are replaced, not added to
    assert authority.compute(ctx) == 6
    with ctx.sessions() as session:
        assert session.query(HostAuthority).count() == 6


def test_a_recrawl_is_scored_by_how_overdue_it_is(ctx: Context) -> None:
    extract_links(ctx, [page("http://a.com/", [Link("http://hub.com/x", "X")])])
    ctx.authority.store({"hub.com": 0.8})
    now = time.time()
    fetched = datetime.fromtimestamp(now, UTC) - timedelta(hours=2)
    with ctx.sessions.begin() as session:  # fetched two hours ago, due after one
        repository.record_fetches(session, [FetchOutcome(
            url_hash("http://hub.com/x"), Status.FETCHED, last_fetched_at=fetched,
            next_crawl_at=fetched + timedelta(hours=1))])
    ctx.recrawls.schedule([(url_hash("http://hub.com/x"), "hourly", now - 3600)])
    assert drain(ctx, now) == 1
    with ctx.sessions() as session:
        row = repository.get_url(session, url_hash("http://hub.com/x"))
    assert row is not None and row.status == Status.QUEUED and row.authority == 0.8
    # overdue: the most a re-crawl's freshness counts (below a new URL's), without a record
    assert row.priority == ctx.settings.priority_weights.priority(0.8, REFRESH_FRESHNESS,
                                                                  row.link_context)
