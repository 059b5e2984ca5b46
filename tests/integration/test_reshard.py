"""Laying the frontier out anew when CRAWL_SHARDS changes, on real Redis (one server and a
Redis Cluster): every host moves to its shard under the new number with its URLs, next
time, parking, failures and boost; nothing moves while a host is leased; a process whose
number differs from the frontier's is refused with the reason, never left to strand URLs in
shards no dispatcher reads."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from crawlapp.adapters.context import Context
from crawlapp.adapters.redis import keys
from crawlapp.adapters.redis.client import Client, connect
from crawlapp.adapters.redis.frontier import RedisFrontier
from crawlapp.core.errors import FrontierLayoutError
from crawlapp.core.records import PAUSED, HostState, HostStatus, ParkKind, ParkReason, QueuedURL, Release
from crawlapp.core.settings import MAX_SHARDS, load_settings
from crawlapp.core.urls import shard_of
from crawlapp.ops import dispatcher, rebuild
from tests.conftest import crawl_env

pytestmark = pytest.mark.integration
HOSTS = [f"h{n}.example" for n in range(40)]
LATER = 10_000.0  # seconds from now: a time no test waits for


def _urls(host: str) -> list[QueuedURL]:
    n = int(host[1:].split(".")[0])
    return [QueuedURL(f"http://{host}/{page}?q={page}", page % 3, priority=page * 0.5,
                      hops=1 if page == 2 else 0)
            for page in range(1 + n % 4)]


def _lay_out_a_crawl(client: Client, now: float) -> RedisFrontier:
    """A frontier of 8 shards with hosts in every state: ready with URLs, waiting, idle with
    a next time to keep, parked with a reason, paused, failing, boosted, and an expired lease
    whose URL must come back."""
    old = RedisFrontier(client, "t", 8)
    old.add([u for host in HOSTS for u in _urls(host)], now)
    old.boost({"h1.example": 0.9, "h5.example": 0.4})
    leases, _ = old.dispatch(range(8), now, max_hosts=100, lease_seconds=60, max_leased=100)
    by_host = {lease.host: lease for batch in leases.values() for lease in batch}
    old.release([
        Release(by_host["h0.example"], now + LATER),  # its only URL fetched: idle till then
        Release(by_host["h3.example"], now + 5, requeue=True, failures=2),  # failing
        Release(by_host["h7.example"], now + LATER, requeue=True, failures=5,
                park_reason=ParkReason(ParkKind.UNREACHABLE, "dns")),
        *(Release(lease, now - 1, requeue=True) for host, lease in by_host.items()
          if host not in ("h0.example", "h3.example", "h7.example", "h11.example"))])
    old.pause("h9.example")
    old.mark_alive(now)
    # h11's lease is never released: it expires (lease_seconds 60) before the reshard's time
    return old


def _state(frontier: RedisFrontier, now: float) -> dict[str, HostState]:
    return frontier.host_states(HOSTS, now)


def _queued(frontier: RedisFrontier, now: float) -> set[tuple[int, str, int]]:
    """Every URL waiting in the frontier, as (depth, url, hops), draining it."""
    urls = set()
    for host in HOSTS:
        frontier.resume(host, now)
    while True:
        leases, _ = frontier.dispatch(range(frontier.shards), now + 2 * LATER, max_hosts=1000,
                                      lease_seconds=60, max_leased=1000, per_lease=100)
        got = [lease for batch in leases.values() for lease in batch]
        if not got:
            return urls
        urls |= {(lease.depth, lease.url, lease.hops) for lease in got}
        frontier.release([Release(lease, now) for lease in got])


@pytest.fixture(params=["redis", "cluster"])
def client(request: pytest.FixtureRequest) -> Client:
    if request.param == "redis":
        return connect(request.getfixturevalue("redis_url"), False)
    return connect(request.getfixturevalue("redis_cluster_url"), True)


@pytest.mark.parametrize("shards", [4, 3, 16])
def test_every_host_moves_to_its_shard_with_its_urls_and_state(client: Client,
                                                                shards: int) -> None:
    now = time.time()
    old = _lay_out_a_crawl(client, now)
    later = now + 61  # h11's lease has expired
    before = _state(old, later)
    assert before["h11.example"].status == HostStatus.LEASED
    new = RedisFrontier(client, "t", shards)
    moved, held = new.reshard(later, MAX_SHARDS)
    assert held == 0
    assert moved == sum(shard_of(h, 8) != shard_of(h, shards) for h in HOSTS)
    assert new.layout() == shards
    assert set(new.shards_holding(MAX_SHARDS)) <= set(range(shards))
    after = _state(new, later)
    for host in HOSTS:
        if host == "h11.example":  # its lease ended: its URL is back, the host ready
            assert after[host].queued == len(_urls(host)) and after[host].status == HostStatus.READY
        else:
            assert after[host] == before[host], host
    assert after["h7.example"].label == "unreachable: dns" and after["h7.example"].failures == 5
    assert after["h9.example"].park == PAUSED and after["h3.example"].failures == 2
    assert sum(s.urls_queued for s in new.stats(later)) == sum(len(_urls(h)) for h in HOSTS) - 1
    # h0's next time is remembered: a URL queued for it now waits until then
    new.add([QueuedURL("http://h0.example/new", 1, 0.0)], later)
    assert new.host_states(["h0.example"], later)["h0.example"].until == pytest.approx(now + LATER)
    expected = {(u.depth, u.url, u.hops) for h in HOSTS for u in _urls(h)} | {
        (1, "http://h0.example/new", 0)}
    expected -= {(0, "http://h0.example/0?q=0", 0)}  # fetched before the reshard
    assert _queued(new, later) == expected


def test_a_boosted_host_keeps_its_boost_in_its_new_shard(client: Client) -> None:
    now = time.time()
    old = RedisFrontier(client, "t", 8)
    old.boost({"h1.example": 0.9})
    RedisFrontier(client, "t", 3).reshard(now, MAX_SHARDS)
    boost = keys.BOOST.of("t", shard=shard_of("h1.example", 3))
    assert float(client.hget(boost, "h1.example")) == 0.9  # type: ignore[arg-type]


def test_nothing_moves_while_a_host_is_leased(client: Client) -> None:
    now = time.time()
    old = RedisFrontier(client, "t", 8)
    old.add([QueuedURL(f"http://{h}/", 0, 0.0) for h in HOSTS], now)
    leases, _ = old.dispatch(range(8), now, max_hosts=1, lease_seconds=60, max_leased=1)
    assert leases
    before = _state(old, now)
    new = RedisFrontier(client, "t", 4)
    old.mark_alive(now)
    assert new.reshard(now, MAX_SHARDS) == (0, sum(map(len, leases.values())))
    assert _state(old, now) == before
    assert new.layout() == 8  # still laid out in 8


def test_a_frontier_that_is_not_whole_is_not_marked_whole(client: Client) -> None:
    """Redis lost the frontier: the rebuild from the database must still run after a reshard."""
    now = time.time()
    RedisFrontier(client, "t", 8).add([QueuedURL(f"http://{h}/", 0, 0.0) for h in HOSTS], now)
    new = RedisFrontier(client, "t", 4)
    assert new.reshard(now, MAX_SHARDS)[0] > 0
    assert new.layout() is None and set(new.shards_holding(MAX_SHARDS)) <= set(range(4))


def test_a_reshard_cut_short_goes_on_where_it_stopped(client: Client,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A failure between moving a host's URLs in and taking them out of its old shard, or
    between two shards, leaves nothing lost nor counted twice once run again."""
    now = time.time()
    old = RedisFrontier(client, "t", 8)
    old.add([u for host in HOSTS for u in _urls(host)], now)
    new = RedisFrontier(client, "t", 4)
    calls = {"n": 0}
    real = new._move_out

    def fail_on_the_third(*args: object) -> int:
        calls["n"] += 1
        if calls["n"] == 3:
            raise ConnectionError("Redis went away")
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(new, "_move_out", fail_on_the_third)
    with pytest.raises(ConnectionError):
        new.reshard(now, MAX_SHARDS)
    monkeypatch.undo()
    # a host copied to its new shard but still in its old one (the worst cut)
    stranded = next(h for h in HOSTS if shard_of(h, 8) >= 4)
    RedisFrontier(client, "t", 4).add(_urls(stranded), now)
    new.reshard(now, MAX_SHARDS)
    total = sum(len(_urls(h)) for h in HOSTS)
    assert sum(s.urls_queued for s in new.stats(now)) == total
    assert len(_queued(new, now)) == total
    assert new.reshard(now, MAX_SHARDS) == (0, 0)


@pytest.fixture
def ctx(tmp_path: Path, redis_url: str) -> Context:
    return Context(load_settings(crawl_env(tmp_path, redis_url, CRAWL_SHARDS="4")))


def test_ensure_frontier_refuses_another_number_unless_asked_to_lay_it_out(ctx: Context) -> None:
    now = time.time()
    old = RedisFrontier(ctx.redis, ctx.settings.redis_prefix, 8)
    old.add([u for host in HOSTS for u in _urls(host)], now)
    old.mark_alive(now)
    ctx.url_seen.mark_alive(now)
    with pytest.raises(FrontierLayoutError, match=r"laid out in 8 shards and CRAWL_SHARDS is 4: "
                       r"set CRAWL_SHARDS=8.*crawlctl frontier reshard"):
        rebuild.ensure_frontier(ctx)
    with pytest.raises(FrontierLayoutError):  # the dispatcher stops, saying why
        dispatcher.run(ctx, lambda *a: None, threading.Event())
    assert rebuild.ensure_frontier(ctx, lay_out=True) is None
    assert ctx.frontier.layout() == 4
    assert rebuild.ensure_frontier(ctx) is None
    assert sum(s.urls_queued for s in ctx.frontier.stats(now)) == sum(len(_urls(h)) for h in HOSTS)


def test_a_frontier_of_an_earlier_release_is_taken_as_it_is_only_if_it_fits(ctx: Context) -> None:
    """Releases before this one noted no number of shards (P:alive held a time alone)."""
    now = time.time()
    alive = keys.ALIVE.of(ctx.settings.redis_prefix)
    ctx.url_seen.mark_alive(now)
    fits = [h for h in HOSTS if shard_of(h, 8) < 4 and shard_of(h, 8) == shard_of(h, 4)]
    RedisFrontier(ctx.redis, ctx.settings.redis_prefix, 8).add(
        [QueuedURL(f"http://{h}/", 0, 0.0) for h in fits], now)
    ctx.redis.set(alive, str(now))
    assert ctx.frontier.layout() == 0
    assert rebuild.ensure_frontier(ctx) is None
    assert ctx.frontier.layout() == 4
    ctx.redis.set(alive, str(now))  # now with a host in a shard past CRAWL_SHARDS
    RedisFrontier(ctx.redis, ctx.settings.redis_prefix, 8).add(
        [QueuedURL(f"http://{next(h for h in HOSTS if shard_of(h, 8) >= 4)}/", 0, 0.0)], now)
    with pytest.raises(FrontierLayoutError, match="another number of shards"):
        rebuild.ensure_frontier(ctx)
    assert rebuild.ensure_frontier(ctx, lay_out=True) is None
    assert set(ctx.frontier.shards_holding(MAX_SHARDS)) <= set(range(4))


def test_a_held_lease_stops_the_reshard_with_the_reason(ctx: Context) -> None:
    now = time.time()
    old = RedisFrontier(ctx.redis, ctx.settings.redis_prefix, 8)
    old.add([QueuedURL("http://h1.example/", 0, 0.0)], now)
    old.mark_alive(now)
    old.dispatch(range(8), now, max_hosts=10, lease_seconds=60, max_leased=10)
    with pytest.raises(FrontierLayoutError, match=r"1 host\(s\) are leased"):
        rebuild.reshard(ctx)
    assert old.shards_holding(MAX_SHARDS) == [shard_of("h1.example", 8)]


def test_a_worker_with_another_number_of_shards_does_not_start(tmp_path: Path,
                                                              redis_url: str) -> None:
    env = crawl_env(tmp_path, redis_url, CRAWL_SHARDS="2")
    settings = load_settings(env)
    RedisFrontier(connect(redis_url, False), settings.redis_prefix, 4).mark_alive(time.time())
    worker = subprocess.run(
        [sys.executable, "-m", "celery", "-A", "crawlapp.app", "worker", "-Q", "fetch.0",
         "--pool", "solo", "--without-mingle", "--without-gossip"],
        env={**os.environ, **env}, capture_output=True, text=True, timeout=60)
    assert worker.returncode == 1, worker.stderr[-2000:]
    assert "laid out in 4 shards and CRAWL_SHARDS is 2" in worker.stderr
