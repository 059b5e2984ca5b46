"""Every key a crawl writes is one of the registry's (adapters/redis/keys.py), of its type,
and the caches among them expire: a small crawl of the test web, stage by stage, on the real
Redis, SCANned after every step; on one server and on a Redis Cluster (SCAN walks every
master; a command or script on keys of several slots fails there)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import redis

from crawlapp.adapters.context import Context
from crawlapp.adapters.db.engine import upgrade
from crawlapp.adapters.redis import keys
from crawlapp.adapters.redis.client import Client, flush
from crawlapp.adapters.redis.frontier import RedisFrontier
from crawlapp.core.records import QueuedURL, Release
from crawlapp.core.settings import load_settings
from crawlapp.core.urls import url_hash
from crawlapp.ops import rebuild, takedown, verify
from crawlapp.ops.recrawl import recrawl
from crawlapp.ops.seeding import add_seeds
from crawlapp.stages.recrawling import drain
from tests.integration.in_process import crawl
from testweb.server import start_in_background
from testweb.site import Web, WebSpec

SPEC = WebSpec(hosts=2, pages_per_host=3, port=0, crawl_delay_every=0, link_cases=True,
               dedup_cases=True, recrawl_cases=True)
EXPIRING = {keys.ROBOTS, keys.DNS, keys.DNS_LOCK, keys.HOPS, keys.BATCH_RUN, keys.DEDUP_LOCK}
# What CRAWL_DEDUP_REDIS_URL holds: the structures that grow with the crawl.
DEDUP_ROLE = {keys.BLOOM, keys.DEDUP_BUCKET, keys.NEAR_TABLE, keys.DEDUP_LOCK, keys.CANONICAL,
              keys.RECRAWL_TIER, keys.RECRAWL_CLAIMED, keys.RECRAWL_HORIZON, keys.DEDUP_ALIVE}


class Seen:
    """The registry's keys found so far in `client` (the context's Redis by default),
    checked as they are found; with `only`, each must be one of those."""

    def __init__(self, ctx: Context, client: Client | None = None,
                 only: set[keys.Key] | None = None) -> None:
        self.ctx = ctx
        self.client = client or ctx.redis
        self.only = only
        self.found: set[keys.Key] = set()

    def scan(self) -> None:
        prefix = self.ctx.settings.redis_prefix
        for raw in self.client.scan_iter(count=1000):
            name = raw.decode()
            if name.startswith("_kombu") or name in ("unacked", "unacked_index"):
                continue
            key = keys.key_of(prefix, name)
            assert key is not None, f"{name} is not in the key registry"
            assert self.only is None or key in self.only, f"{name} is not in its role's Redis"
            assert self.client.type(name).decode() == key.type, name
            if key in EXPIRING:
                assert self.client.ttl(name) > 0, f"{name} does not expire"
            self.found.add(key)


@pytest.fixture(params=["server", "cluster"])
def state_redis(request: pytest.FixtureRequest) -> dict[str, str]:
    """The crawl state's Redis settings: one server, or a Redis Cluster."""
    if request.param == "server":
        return {"CRAWL_REDIS_URL": request.getfixturevalue("redis_url")}
    return {"CRAWL_REDIS_URL": request.getfixturevalue("redis_cluster_url"),
            "CRAWL_REDIS_CLUSTER": "true",
            "CELERY_BROKER_URL": request.getfixturevalue("redis_url")}


def test_a_crawl_writes_only_keys_of_the_registry(tmp_path: Path,
                                                  state_redis: dict[str, str]) -> None:
    settings = load_settings({"CRAWL_DATA_DIR": str(tmp_path), **state_redis,
                              "CRAWL_ALLOWED_NETWORKS": "127.0.0.0/8", "CRAWL_SHARDS": "2",
                              "CRAWL_DEFAULT_DELAY": "0.01", "CRAWL_MAX_DEPTH": "3"})
    upgrade(settings)
    ctx = Context(settings)
    seen = Seen(ctx)
    with start_in_background(Web(SPEC), str(tmp_path / "requests.jsonl")) as server:
        add_seeds(ctx, server.web.seeds())
        crawl(ctx, seen, time.monotonic() + 120)
        recrawl(ctx, now=True)  # every page again, with its validators
        seen.scan()  # in its tier (the crawl's next fetches are beyond the window)
        assert drain(ctx) > 0
        seen.scan()
        crawl(ctx, seen, time.monotonic() + 120)
    ctx.workers.report()
    verify.verify(ctx, repair=True)
    host = server.web.seeds()[0].split("/")[2]
    takedown.block(ctx, host, "test")
    seen.scan()
    takedown.unblock(ctx, host)
    takedown.delete(ctx, url=server.web.seeds()[-1])
    seen.scan()
    rebuild.rebuild(ctx)
    seen.scan()
    assert seen.found >= {keys.READY, keys.IDLE, keys.LEASES, keys.TOKEN, keys.LEASED,
                          keys.QUEUED, keys.QUEUE, keys.ALIVE, keys.BATCHES, keys.BATCH_URLS,
                          keys.BLOOM, keys.DEDUP_BUCKET, keys.NEAR_TABLE, keys.CANONICAL, keys.ROBOTS,
                          keys.VALIDATORS, keys.RECRAWL_TIER, keys.RECRAWL_HORIZON,
                          keys.HOSTCOUNT, keys.PATTERNS,
                          keys.COUNTERS, keys.REFUSED, keys.STAGE_CPU, keys.DENYLIST,
                          keys.WORKERS, keys.VERIFY}
    assert not ctx.redis.exists(*ctx.validators.keys)  # each re-crawl fetched forgot its own


def test_the_times_of_idle_hosts_are_forgotten_once_passed(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    frontier = RedisFrontier(client, "t", 1)
    idle = keys.IDLE.of("t", shard=0)
    frontier.add([QueuedURL("http://a.com/", 0, 1.0)], 100.0)
    (lease,) = frontier.dispatch([0], 100.0, max_hosts=10, lease_seconds=60.0, max_leased=10)[0][0]
    frontier.release([Release(lease, 110.0)])
    assert client.zscore(idle, "a.com") == 110.0  # nothing queued: its next time is kept
    frontier.dispatch([0], 105.0, max_hosts=10, lease_seconds=60.0, max_leased=10)
    assert client.zscore(idle, "a.com") == 110.0
    frontier.dispatch([0], 111.0, max_hosts=10, lease_seconds=60.0, max_leased=10)
    assert client.zscore(idle, "a.com") is None  # a time past constrains nothing
    frontier.add([QueuedURL("http://a.com/2", 0, 1.0)], 112.0)
    assert client.zscore(keys.READY.of("t", shard=0), "a.com") == 112.0


@pytest.fixture(params=["server", "cluster"])
def dedup_redis(request: pytest.FixtureRequest, redis_url: str) -> dict[str, str]:
    """The dedup role's Redis settings: another database of the server, or a Redis Cluster
    (the hot state staying on one server)."""
    if request.param == "server":
        return {"CRAWL_DEDUP_REDIS_URL": redis_url.rsplit("/", 1)[0] + "/2"}
    return {"CRAWL_DEDUP_REDIS_URL": request.getfixturevalue("redis_cluster_url"),
            "CRAWL_DEDUP_CLUSTER": "true"}


def test_each_role_on_its_own_redis_and_a_lost_one_rebuilt_alone(
        tmp_path: Path, redis_url: str, dedup_redis: dict[str, str]) -> None:
    """With CRAWL_DEDUP_REDIS_URL, the structures that grow with the crawl are all in that
    Redis and nothing else is; when it restarts empty, only it is rebuilt."""
    settings = load_settings({"CRAWL_DATA_DIR": str(tmp_path), "CRAWL_REDIS_URL": redis_url,
                              **dedup_redis,
                              "CRAWL_ALLOWED_NETWORKS": "127.0.0.0/8", "CRAWL_SHARDS": "2",
                              "CRAWL_DEFAULT_DELAY": "0.01", "CRAWL_MAX_DEPTH": "3"})
    upgrade(settings)
    ctx = Context(settings)
    flush(ctx.dedup_redis)
    hot_role = set(keys.ALL) - DEDUP_ROLE
    hot, dedup = Seen(ctx, ctx.redis, hot_role), Seen(ctx, ctx.dedup_redis, DEDUP_ROLE)

    class Both:
        def scan(self) -> None:
            hot.scan()
            dedup.scan()

    with start_in_background(Web(SPEC), str(tmp_path / "requests.jsonl")) as server:
        add_seeds(ctx, server.web.seeds())
        crawl(ctx, Both(), time.monotonic() + 120)
        recrawl(ctx, now=True)
        Both().scan()
        assert drain(ctx) > 0
        crawl(ctx, Both(), time.monotonic() + 120)
    assert dedup.found >= {keys.BLOOM, keys.DEDUP_BUCKET, keys.NEAR_TABLE, keys.RECRAWL_TIER,
                           keys.RECRAWL_HORIZON,
                           keys.DEDUP_ALIVE}
    assert hot.found >= {keys.READY, keys.QUEUE, keys.ALIVE, keys.ROBOTS, keys.COUNTERS}
    seen_before = ctx.url_seen.check([bytes.fromhex(url_hash(u)) for u in server.web.seeds()])
    alive_before = ctx.redis.get(keys.ALIVE.of(settings.redis_prefix))
    flush(ctx.dedup_redis)  # the dedup Redis restarted empty
    restored = rebuild.ensure_frontier(ctx)
    assert restored is not None and restored["urls_seen"] > 0 and restored["content_claims"] > 0
    assert "urls_queued" not in restored and "robots_cached" not in restored
    assert ctx.redis.get(keys.ALIVE.of(settings.redis_prefix)) == alive_before
    assert ctx.url_seen.check([bytes.fromhex(url_hash(u)) for u in server.web.seeds()]) \
        == seen_before == [True] * len(seen_before)
    assert rebuild.ensure_frontier(ctx) is None
    dedup.scan()
    flush(ctx.dedup_redis)
