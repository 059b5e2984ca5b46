"""The Redis frontier's scripts on the real Redis."""

from __future__ import annotations

import redis

from crawlapp.adapters.redis.frontier import QueuedURL, RedisFrontier
from crawlapp.adapters.redis.frontier.redis_frontier import Release

NOW = 1_000_000.0


def frontier(url: str, shards: int = 2) -> RedisFrontier:
    return RedisFrontier(redis.Redis.from_url(url), "t", shards)


def lease_all(f: RedisFrontier, now: float, max_hosts: int = 100, lease: float = 60.0,
              max_leased: int = 1000):  # type: ignore[no-untyped-def]
    leases, next_ready = f.dispatch(range(f.shards), now, max_hosts, lease, max_leased)
    return [lease for batch in leases.values() for lease in batch], next_ready


def test_one_url_per_host_is_leased_and_the_host_waits_its_delay(redis_url: str) -> None:
    f = frontier(redis_url)
    assert f.add([QueuedURL(f"http://a.com/{i}", 1, 0.5) for i in range(3)]
                 + [QueuedURL("http://b.com/", 0, 1.0)], NOW) == 4
    leases, _ = lease_all(f, NOW)
    assert sorted(lease.host for lease in leases) == ["a.com", "b.com"]
    again, _ = lease_all(f, NOW + 1)
    assert again == []  # both hosts are busy
    a = next(lease for lease in leases if lease.host == "a.com")
    assert f.release([Release(a, NOW + 2)]) == 1
    early, next_ready = lease_all(f, NOW + 1.9)
    assert early == [] and next_ready == NOW + 2
    later, _ = lease_all(f, NOW + 2)
    assert [lease.host for lease in later] == ["a.com"]


def test_best_priority_first_and_duplicates_are_queued_once(redis_url: str) -> None:
    f = frontier(redis_url, shards=1)
    f.add([QueuedURL("http://a.com/low", 3, 0.1), QueuedURL("http://a.com/high", 1, 0.9)], NOW)
    assert f.add([QueuedURL("http://a.com/low", 3, 0.1)], NOW) == 0
    order = []
    now = NOW
    while True:
        leases, _ = lease_all(f, now)
        if not leases:
            break
        order.append(leases[0].url)
        f.release([Release(leases[0], now)])
        now += 1
    assert order == ["http://a.com/high", "http://a.com/low"]


def test_expired_lease_returns_its_url_and_a_stale_release_is_ignored(redis_url: str) -> None:
    f = frontier(redis_url, shards=1)
    f.add([QueuedURL("http://a.com/x", 0, 1.0)], NOW)
    (first,), _ = lease_all(f, NOW, lease=10)
    assert f.renew([first], NOW + 5, 10) == [0]
    (second,), _ = lease_all(f, NOW + 16, lease=10)  # the lease ran out at NOW + 15
    assert second.url == first.url and second.token != first.token
    assert f.renew([first], NOW + 16, 10) == [None]
    assert f.release([Release(first, NOW + 100)]) == 0
    assert f.release([Release(second, NOW + 17)]) == 1
    assert f.is_idle(NOW + 20)


def test_requeue_puts_the_url_back_and_leased_hosts_are_capped(redis_url: str) -> None:
    f = frontier(redis_url, shards=1)
    f.add([QueuedURL(f"http://h{i}.com/", 0, 1.0) for i in range(5)], NOW)
    leases, _ = lease_all(f, NOW, max_leased=3)
    assert len(leases) == 3
    f.release([Release(lease, NOW + 1, requeue=True) for lease in leases])
    stats = f.stats(NOW + 1)[0]
    assert stats.urls_queued == 5 and stats.hosts_leased == 0
    assert stats.hosts_ready + stats.hosts_waiting == 5


def test_failures_park_a_host_until_its_time_and_are_reported(redis_url: str) -> None:
    f = frontier(redis_url, shards=1)
    f.add([QueuedURL(f"http://a.com/{i}", 1, 0.5) for i in range(2)], NOW)
    (lease,), _ = lease_all(f, NOW)
    f.release([Release(lease, NOW + 600, requeue=True, failures=8, park_reason="8 failures")])
    assert f.parked() == {"a.com": (NOW + 600, "8 failures")}
    assert f.is_idle(NOW + 1)  # parked hosts keep their URLs for later
    f.add([QueuedURL("http://a.com/new", 1, 0.5)], NOW + 2)
    assert lease_all(f, NOW + 599)[0] == []
    (back,), _ = lease_all(f, NOW + 600)
    assert back.host == "a.com" and f.renew([back], NOW + 600, 60) == [8]
    f.release([Release(back, NOW + 601)])  # a success clears the failure count
    (again,), _ = lease_all(f, NOW + 601)
    assert f.renew([again], NOW + 601, 60) == [0]


def test_pause_and_resume_an_idle_a_ready_and_a_leased_host(redis_url: str) -> None:
    f = frontier(redis_url, shards=1)
    f.add([QueuedURL("http://a.com/1", 1, 0.5), QueuedURL("http://b.com/1", 1, 0.5)], NOW)
    (lease_a,), _ = lease_all(f, NOW, max_hosts=1)
    f.pause("a.com")
    f.pause("b.com")
    f.pause("c.com")
    f.release([Release(lease_a, NOW + 1, requeue=True)])
    assert set(f.parked()) == {"a.com", "b.com", "c.com"}
    assert lease_all(f, NOW + 10)[0] == []
    f.add([QueuedURL("http://c.com/1", 1, 0.5)], NOW + 10)
    assert lease_all(f, NOW + 11)[0] == []
    assert f.resume("a.com", NOW + 20) and f.resume("c.com", NOW + 20)
    assert not f.resume("nothing.com", NOW + 20)
    leases, _ = lease_all(f, NOW + 20)
    assert sorted(lease.host for lease in leases) == ["a.com", "c.com"]
