"""Link extraction on the real database and Redis: new URLs queued once, depths kept shortest."""

from __future__ import annotations

import time
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

import pytest
import redis
import sqlalchemy as sa
from sqlalchemy.orm import Session

from crawlapp.adapters.context import Context
from crawlapp.adapters.db import repository
from crawlapp.adapters.db.engine import upgrade
from crawlapp.adapters.redis.frontier.redis_frontier import decode_member
from crawlapp.core.errors import NotQueued
from crawlapp.core.records import Lease, Link, Page, QueuedURL, Status
from crawlapp.core.rows import FetchOutcome
from crawlapp.core.settings import load_settings
from crawlapp.core.urls import url_hash
from crawlapp.stages.admission import admit
from crawlapp.stages.linking import extract_links, plan_links

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def make_ctx(tmp_path: Path, redis_url: str, **extra: str) -> Context:
    settings = load_settings({"CRAWL_DATA_DIR": str(tmp_path), "CRAWL_REDIS_URL": redis_url,
                              "CRAWL_SHARDS": "2", "CRAWL_MAX_DEPTH": "3", **extra})
    upgrade(settings)
    return Context(settings)


def page(url: str, depth: int, links: list[str], status: Status = Status.FETCHED) -> Page:
    return Page(url=url, url_hash=url_hash(url), depth=depth, status=status,
                links=[Link(link) for link in links])


def queued_members(ctx: Context) -> list[str]:
    """Queued URLs as "depth<TAB>url"."""
    members = []
    for key in ctx.redis.scan_iter(match="*:q:*"):
        host = key.decode().split(":q:", 1)[1]
        for member in ctx.redis.zrange(key, 0, -1):
            depth, url, _ = decode_member(host, member.decode())
            members.append(f"{depth}\t{url}")
    return sorted(members)


def extract(ctx: Context, pages: list[Page]) -> int:
    rows, edges, _ = plan_links(pages, ctx.settings.max_depth, NOW, ctx.settings.traps)
    return len(admit(ctx, rows, edges))


def test_links_are_queued_once_and_too_deep_ones_are_recorded(tmp_path: Path,
                                                              redis_url: str) -> None:
    ctx = make_ctx(tmp_path, redis_url)
    assert extract(ctx, [page("http://a.com/", 0, ["http://a.com/1", "http://b.com/"])]) == 2
    assert extract(ctx, [page("http://b.com/", 1, ["http://a.com/1"])]) == 0
    assert queued_members(ctx) == ["1\thttp://a.com/1", "1\thttp://b.com/"]
    extract(ctx, [page("http://a.com/deep", 3, ["http://a.com/too-deep"])])
    with ctx.sessions() as s:
        assert repository.status_counts(s)["too_deep"] == 1
    assert "4\thttp://a.com/too-deep" not in queued_members(ctx)


def test_a_shorter_path_lowers_depth_and_unlocks_pages_beyond_the_limit(tmp_path: Path,
                                                                        redis_url: str) -> None:
    ctx = make_ctx(tmp_path, redis_url)
    # A long path finds /x at depth 3 (the limit): its link /y is too deep (4).
    extract(ctx, [page("http://a.com/p2", 2, ["http://a.com/x"])])
    extract(ctx, [page("http://a.com/x", 3, ["http://a.com/y"])])
    with ctx.sessions.begin() as s:  # /x was fetched meanwhile
        repository.record_fetches(s, [FetchOutcome(url_hash("http://a.com/x"), "fetched",
                                                   last_fetched_at=NOW)])
    assert "4\thttp://a.com/y" not in queued_members(ctx)
    # A shorter path finds /x at depth 1: /y is now at depth 2 and gets queued.
    extract(ctx, [page("http://a.com/", 0, ["http://a.com/x", "http://a.com/q"])])
    extract(ctx, [page("http://a.com/q", 1, ["http://a.com/p2"])])
    members = queued_members(ctx)
    assert "2\thttp://a.com/y" in members
    assert [m for m in members if m.endswith("/p2")] == ["2\thttp://a.com/p2"]  # not lowered
    with ctx.sessions() as s:
        row = repository.get_url(s, url_hash("http://a.com/y"))
        assert row is not None and (row.depth, row.status) == (2, "queued")


def test_a_waiting_url_moves_to_its_new_depth_without_a_second_entry(tmp_path: Path,
                                                                      redis_url: str) -> None:
    ctx = make_ctx(tmp_path, redis_url)
    extract(ctx, [page("http://a.com/far", 3, ["http://b.com/z"])])  # too deep
    extract(ctx, [page("http://a.com/mid", 2, ["http://b.com/z"])])  # depth 3: queued
    extract(ctx, [page("http://a.com/", 0, ["http://b.com/z"])])     # depth 1: moved
    assert [m for m in queued_members(ctx) if m.endswith("b.com/z")] == ["1\thttp://b.com/z"]
    assert ctx.frontier.stats(time.time())[0].urls_queued + \
        ctx.frontier.stats(time.time())[1].urls_queued == 1


def test_traps_are_refused_and_patterns_capped_per_host(tmp_path: Path, redis_url: str) -> None:
    ctx = make_ctx(tmp_path, redis_url, CRAWL_TRAP_PATTERN_CAP="3", CRAWL_MAX_DEPTH="9")
    rows, edges, refused = plan_links(
        [page("http://a.com/", 0, ["http://a.com/cal/1999/01/01", "http://a.com/r/x/y/x/y/x/y",
                                   "http://a.com/ok"])],
        ctx.settings.max_depth, NOW, ctx.settings.traps)
    assert set(refused) == {("calendar", "a.com"), ("repeating_path", "a.com")}
    assert [row.url for row in rows.values()] == ["http://a.com/ok"]
    assert len(edges) == 3  # edges are recorded even for refused links
    extract(ctx, [page("http://a.com/list", 0, [f"http://a.com/item/{i}" for i in range(5)]
                       + ["http://b.com/item/1"])])
    with ctx.sessions() as s:
        assert repository.status_counts(s) == {"queued": 4, "trap": 2}


def test_the_link_context_priority_reaches_the_row_and_the_recrawl_tier(tmp_path: Path,
                                                                          redis_url: str) -> None:
    from crawlapp.core.priority import link_priority
    from crawlapp.core.recrawl import DAY, UNIMPORTANT_FIRST, tier_of
    from crawlapp.stages.pages import page_for
    from crawlapp.stages.storing import store_pages

    ctx = make_ctx(tmp_path, redis_url, CRAWL_RECRAWL_POLICY="adaptive")
    home = Page(url="http://a.com/d/", url_hash=url_hash("http://a.com/d/"), depth=1,
                status=Status.FETCHED, links=[Link("http://a.com/content", "Read the story"),
                                              Link("http://a.com/nav", boilerplate=True)])
    rows, edges, _ = plan_links([home], ctx.settings.max_depth, NOW, ctx.settings.traps)
    admit(ctx, rows, edges)
    with ctx.sessions() as s:
        rows_of = {u: repository.get_url(s, url_hash(u))
                   for u in ("http://a.com/content", "http://a.com/nav")}
    stored = {u: r.link_context for u, r in rows_of.items()}  # type: ignore[union-attr]
    assert stored == {"http://a.com/content": link_priority(2, False, "Read the story"),
                      "http://a.com/nav": link_priority(2, True, "")}
    weights = ctx.settings.priority_weights  # a host not scored yet: authority 0, new: 0.5
    assert {u: r.priority for u, r in rows_of.items()} == {  # type: ignore[union-attr]
        u: weights.priority(0.0, 0.5, context) for u, context in stored.items()}
    pages = []
    for url in stored:  # both fetched: the store stage schedules them by the link context
        page = page_for(Lease(0, "a.com", "t", url, 2))
        page.status, page.http_status, page.fetched_at = Status.FETCHED, 200, NOW.timestamp()
        page.content_type = "text/html"
        pages.append(page)
    store_pages(ctx, pages)
    with ctx.sessions() as s:
        tiers = {u: tier_of((r.next_crawl_at - r.last_fetched_at).total_seconds())
                 for u in stored if (r := repository.get_url(s, url_hash(u))) is not None}
    assert tiers == {"http://a.com/content": tier_of(DAY),
                     "http://a.com/nav": tier_of(UNIMPORTANT_FIRST * DAY)}
    # found again closer to a seed by a link with words: nearer, and worth more
    closer = Page(url="http://a.com/", url_hash=url_hash("http://a.com/"), depth=0,
                  status=Status.FETCHED, links=[Link("http://a.com/nav", "Navigation")])
    rows, edges, _ = plan_links([closer], ctx.settings.max_depth, NOW, ctx.settings.traps)
    admit(ctx, rows, edges)
    with ctx.sessions() as s:
        row = repository.get_url(s, url_hash("http://a.com/nav"))
        assert row is not None and (row.depth, row.link_context) == (1, link_priority(1, False, "N"))
        assert row.priority == weights.priority(0.0, 0.5, row.link_context)


def test_redirect_hops_are_bounded_by_fetch_and_by_time(tmp_path: Path, redis_url: str) -> None:
    from crawlapp.adapters.redis import keys, redirect_hops
    from crawlapp.core.records import Fetched
    from crawlapp.stages.fetching import _known, _retries
    from crawlapp.stages.linking import extract_links

    ctx = make_ctx(tmp_path, redis_url)
    moved = Page(url="http://a.com/old", url_hash=url_hash("http://a.com/old"), depth=0,
                 status=Status.REDIRECTED, redirect_hops=2, links=[Link("http://a.com/new")])
    extract_links(ctx, [moved])
    key = ctx.hops.key("http://a.com/new")
    assert 0 < ctx.redis.ttl(key) <= redirect_hops.TTL  # gone within a week, whatever happens
    lease = Lease(0, "a.com", "t", "http://a.com/new", 1)
    plain = Lease(0, "a.com", "t", "http://a.com/plain", 1)
    ctx.validators.store({"http://a.com/new": '"v1"\t', "http://a.com/plain": '"v2"\t'})
    known = _known(ctx, [lease, plain])
    assert known.hops == {"http://a.com/new": 3, "http://a.com/plain": 0}
    assert set(known.validators) == {"http://a.com/new", "http://a.com/plain"}
    ctx.hops.record({"http://a.com/plain": 1})  # found as a redirect's target while fetched
    assert _retries(ctx, "run", [(lease, Fetched(lease.url, 200)),
                                 (plain, Fetched(plain.url, 200))],
                    [], known) == set()  # fetched
    assert not ctx.redis.exists(key)
    assert _known(ctx, [lease, plain]).validators == {}
    # Only a count there when the batch began is deleted: this one waits out its TTL.
    assert ctx.redis.exists(ctx.hops.key("http://a.com/plain"))
    ctx.hops.forget(["http://a.com/plain"])
    assert list(ctx.redis.scan_iter(match=keys.HOPS.of(ctx.settings.redis_prefix, url_hash="*"))) == []


def test_a_page_found_closer_while_it_was_fetched_passes_the_smaller_depth_on(
        tmp_path: Path, redis_url: str) -> None:
    ctx = make_ctx(tmp_path, redis_url)
    extract(ctx, [page("http://a.com/p2", 2, ["http://a.com/x"])])  # /x queued at 3, the limit
    extract(ctx, [page("http://a.com/", 0, ["http://a.com/x"])])    # found at 1 while leased
    # /x's fetch still carries its lease's depth 3: its link /y is at depth 2, not too deep.
    extract_links(ctx, [page("http://a.com/x", 3, ["http://a.com/y"])])
    assert "2\thttp://a.com/y" in queued_members(ctx)
    with ctx.sessions() as s:
        row = repository.get_url(s, url_hash("http://a.com/y"))
        assert row is not None and (row.depth, row.status) == (2, "queued")


def _lost_commit(monkeypatch: pytest.MonkeyPatch, went_through: bool) -> None:
    """The next commit fails as a connection lost at COMMIT does, having gone through or not."""
    real = Session.commit

    def commit(session: Session) -> None:
        monkeypatch.setattr(Session, "commit", real)
        if went_through:
            real(session)
        raise sa.exc.OperationalError("COMMIT", {}, Exception("server closed the connection"))

    monkeypatch.setattr(Session, "commit", commit)


def _frontier_down_once(monkeypatch: pytest.MonkeyPatch, ctx: Context) -> None:
    real = ctx.frontier.add

    def add(urls: Iterable[QueuedURL], now: float) -> int:
        monkeypatch.setattr(ctx.frontier, "add", real)
        raise redis.ConnectionError("Connection reset by peer")

    monkeypatch.setattr(ctx.frontier, "add", add)


HOME = page("http://a.com/", 0, ["http://a.com/1", "http://b.com/"])
QUEUED = ["1\thttp://a.com/1", "1\thttp://b.com/"]


@pytest.mark.parametrize("went_through", [False, True])
def test_a_failed_commit_queues_nothing_and_hands_its_urls_to_the_next_try(
        tmp_path: Path, redis_url: str, monkeypatch: pytest.MonkeyPatch,
        went_through: bool) -> None:
    ctx = make_ctx(tmp_path, redis_url)
    _lost_commit(monkeypatch, went_through)
    with pytest.raises(NotQueued, match="^the database is unavailable") as failed:
        extract(ctx, [HOME])
    assert queued_members(ctx) == []  # no URL reaches the frontier before its row is committed
    assert sorted(q.url for q in failed.value.urls) == ["http://a.com/1", "http://b.com/"]
    rows, edges, _ = plan_links([HOME], ctx.settings.max_depth, NOW, ctx.settings.traps)
    assert len(admit(ctx, rows, edges, carried=failed.value.urls)) == (0 if went_through else 2)
    assert queued_members(ctx) == QUEUED
    with ctx.sessions() as s:
        assert repository.status_counts(s)["queued"] == 2


def test_a_frontier_failing_after_the_commit_hands_its_urls_to_the_next_try(
        tmp_path: Path, redis_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    ctx = make_ctx(tmp_path, redis_url)
    _frontier_down_once(monkeypatch, ctx)
    with pytest.raises(NotQueued, match="^Redis is unavailable") as failed:
        extract(ctx, [HOME])
    assert extract(ctx, [HOME]) == 0 and queued_members(ctx) == []  # the rows are known now
    with ctx.sessions.begin() as s:  # one of them fetched since (another batch queued it)
        repository.set_status(s, [url_hash("http://a.com/1")], Status.FETCHED)
    rows, edges, _ = plan_links([HOME], ctx.settings.max_depth, NOW, ctx.settings.traps)
    admit(ctx, rows, edges, carried=failed.value.urls)
    assert queued_members(ctx) == ["1\thttp://b.com/"]


def test_a_url_another_batch_found_after_a_failed_commit_is_not_queued_again(
        tmp_path: Path, redis_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The commit did not go through; before the next try another batch finds one of the
    URLs, queues it, and it is leased (its row 'queued' until its page is stored): the next
    try queues it no more, which would fetch it twice."""
    ctx = make_ctx(tmp_path, redis_url)
    _lost_commit(monkeypatch, went_through=False)
    with pytest.raises(NotQueued) as failed:
        extract(ctx, [HOME])
    other = page("http://a.com/2", 0, ["http://a.com/1"])
    rows, edges, _ = plan_links([other], ctx.settings.max_depth, datetime.now(UTC),
                                ctx.settings.traps)
    admit(ctx, rows, edges)
    leases, _ = ctx.frontier.dispatch(range(2), time.time() + 60, max_hosts=10,
                                      lease_seconds=60, max_leased=10)
    assert [lease.url for shard in leases.values() for lease in shard] == ["http://a.com/1"]
    rows, edges, _ = plan_links([HOME], ctx.settings.max_depth, NOW, ctx.settings.traps)
    admit(ctx, rows, edges, carried=failed.value.urls, carried_since=failed.value.since)
    assert queued_members(ctx) == ["1\thttp://b.com/"]


def test_the_links_task_tries_again_with_the_urls_it_left_unqueued(
        tmp_path: Path, redis_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from crawlapp.app import stages
    ctx = make_ctx(tmp_path, redis_url)
    monkeypatch.setattr(stages, "get_context", lambda: ctx)
    monkeypatch.setattr("crawlapp.adapters.context.get_context", lambda: ctx)
    _frontier_down_once(monkeypatch, ctx)
    result = stages.extract_links.apply(args=([HOME.to_wire()], "batch-1"))
    assert result.successful() and result.result == 0  # its rows were new on the first try
    assert queued_members(ctx) == QUEUED
