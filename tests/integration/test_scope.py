"""Crawl scope on the real Postgres and Redis: the seeds' rules recorded and served to the
link path by P:scope, off-scope hops kept on the rows and the frontier members, and both
restored by a rebuild after Redis lost its data."""

from __future__ import annotations

import time
from pathlib import Path

from sqlalchemy import select

from crawlapp.adapters.context import Context
from crawlapp.adapters.db.engine import upgrade
from crawlapp.adapters.db.models import Url
from crawlapp.adapters.redis import keys
from crawlapp.core.records import Link, Page, Release, Status
from crawlapp.core.scope import EXCLUDED, OUT_OF_SCOPE
from crawlapp.core.settings import load_settings
from crawlapp.core.urls import shard_of, url_hash
from crawlapp.observe.stats import collect
from crawlapp.ops.rebuild import rebuild
from crawlapp.ops.seeding import add_seeds
from crawlapp.stages.linking import extract_links


def make_ctx(tmp_path: Path, redis_url: str, pg_url: str) -> Context:
    settings = load_settings({"CRAWL_DATA_DIR": str(tmp_path), "CRAWL_REDIS_URL": redis_url,
                              "DATABASE_URL": pg_url, "CRAWL_SHARDS": "2",
                              "CRAWL_SCOPE": "host", "CRAWL_SCOPE_HOPS": "1",
                              "CRAWL_SCOPE_EXCLUDE": "re:/private/"})
    upgrade(settings)
    return Context(settings)


def page(url: str, links: list[str], hops: int = 0) -> Page:
    return Page(url=url, url_hash=url_hash(url), depth=0, status=Status.FETCHED,
                links=[Link(link) for link in links], hops=hops)


def leased(ctx: Context) -> dict[str, tuple[int, int]]:
    """Every queued URL handed out (one per host at a time): url -> (depth, hops)."""
    got: dict[str, tuple[int, int]] = {}
    now = time.time() + 3600
    while True:
        leases, _ = ctx.frontier.dispatch(range(2), now, max_hosts=100, lease_seconds=60, max_leased=1000)
        if not leases:
            return got
        for lease in (lease for batch in leases.values() for lease in batch):
            got[lease.url] = (lease.depth, lease.hops)
            ctx.frontier.release([Release(lease, now)])


def test_scope_rules_serve_links_and_come_back_with_hops_after_a_rebuild(
        tmp_path: Path, redis_url: str, pg_url: str) -> None:
    ctx = make_ctx(tmp_path, redis_url, pg_url)
    add_seeds(ctx, ["http://www.a.test/"])                    # CRAWL_SCOPE: host
    add_seeds(ctx, ["http://www.b.co.uk/"], scope="domain")
    add_seeds(ctx, ["http://c.test/docs/index.html"], scope="prefix")
    rules = ctx.scopes.rules_for(["www.a.test", "news.b.co.uk:8080", "c.test", "x.test"])
    assert not rules.any
    assert rules.hosts == {"www.a.test"} and rules.domains == {"b.co.uk"}
    assert rules.prefixes == {"c.test": ("http://c.test/docs/",)}
    ctx.frontier.dispatch(range(2), time.time() + 3600, max_hosts=100, lease_seconds=60,
                          max_leased=1000)  # the seeds, out of the way

    done = extract_links(ctx, [
        page("http://www.a.test/", ["http://www.a.test/1", "http://a.test/", "http://x.test/",
                                    "http://www.a.test/private/1", "http://news.b.co.uk/",
                                    "http://c.test/docs/api/", "http://c.test/blog/"]),
        page("http://x.test/", ["http://y.test/", "http://x.test/2"], hops=1),
    ])
    assert done.refused == {(OUT_OF_SCOPE, "y.test"): 1, (OUT_OF_SCOPE, "x.test"): 1,
                            (EXCLUDED, "www.a.test"): 1}
    with ctx.sessions() as session:
        hops = {url: n for url, n in session.execute(select(Url.url, Url.hops))}
    assert hops == {"http://www.a.test/": 0, "http://www.b.co.uk/": 0,
                    "http://c.test/docs/index.html": 0, "http://www.a.test/1": 0,
                    "http://a.test/": 1, "http://x.test/": 1, "http://news.b.co.uk/": 0,
                    "http://c.test/docs/api/": 0, "http://c.test/blog/": 1}
    ctx.counters.bump({}, refused=done.refused)  # as the extract_links task does
    assert collect(ctx)["refused_links"] == {OUT_OF_SCOPE: 2, EXCLUDED: 1}

    queue = keys.QUEUE.of("crawl", shard=shard_of("a.test", 2), host="a.test")
    assert ctx.redis.zrange(queue, 0, -1) == [b"1.1\th/"]  # depth 1, one off-scope hop

    ctx.redis.flushdb()  # Redis lost everything
    assert ctx.scopes.rules_for(["x.test"]).any  # no rules known: everything in scope
    restored = rebuild(ctx)
    assert restored["scope_rules"] == 3
    assert ctx.scopes.rules_for(["news.b.co.uk"]).domains == {"b.co.uk"}
    assert leased(ctx) == {"http://www.a.test/": (0, 0), "http://www.b.co.uk/": (0, 0),
                           "http://c.test/docs/index.html": (0, 0),
                           "http://www.a.test/1": (1, 0), "http://a.test/": (1, 1),
                           "http://x.test/": (1, 1), "http://news.b.co.uk/": (1, 0),
                           "http://c.test/docs/api/": (1, 0), "http://c.test/blog/": (1, 1)}


def test_a_seed_with_scope_any_opens_the_whole_crawl(tmp_path: Path, redis_url: str,
                                                     pg_url: str) -> None:
    ctx = make_ctx(tmp_path, redis_url, pg_url)
    add_seeds(ctx, ["http://www.a.test/"])
    assert not ctx.scopes.rules_for(["x.test"]).any
    add_seeds(ctx, ["http://www.a.test/", "http://z.test/"], scope="any")
    assert ctx.scopes.rules_for(["x.test"]).any
