"""The fetcher's SSRF guard on the fleet's DNS cache (real Redis, a real HTTP server)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
import redis

from crawlapp.adapters.http import Fetcher
from crawlapp.adapters.redis import dnscache
from crawlapp.adapters.redis.dnscache import DnsCache, Resolution
from crawlapp.core.settings import load_settings
from tests.loopback import QuietHandler, serving

pytestmark = pytest.mark.integration


class _Echo(QuietHandler):
    def do_GET(self) -> None:  # noqa: N802
        self.send_body(f"{self.headers['Host']}|{self.headers.get('From')}|{self.path}".encode())


@pytest.fixture
def port() -> Iterator[int]:
    with serving(_Echo) as port:
        yield port


class CountingLookup:
    """A resolver that answers from a table, slowly, and counts its calls."""

    def __init__(self, table: dict[str, Resolution]) -> None:
        self.table = table
        self.calls = 0

    async def __call__(self, host: str) -> Resolution:
        self.calls += 1
        await asyncio.sleep(0.2)
        return self.table.get(host, Resolution(error="dns"))


def _fetcher(redis_url: str, lookup: CountingLookup, allowed: str = "") -> Fetcher:
    settings = load_settings({"CRAWL_ALLOWED_NETWORKS": allowed, "CRAWL_FROM": "ops@example.com"})
    client = redis.Redis.from_url(redis_url)
    return Fetcher(settings, DnsCache(client, "crawl", ttl=300, negative_ttl=5, lookup=lookup))


def test_connects_to_the_checked_address_with_the_name_in_host(redis_url: str, port: int) -> None:
    lookup = CountingLookup({"www.example.test": Resolution(("127.0.0.1",))})
    fetcher = _fetcher(redis_url, lookup, allowed="127.0.0.0/8")
    first = asyncio.run(fetcher.get(f"http://www.example.test:{port}/a?b=1"))
    again = asyncio.run(_fetcher(redis_url, lookup, "127.0.0.0/8").get(
        f"http://www.example.test:{port}/c"))
    assert (first.status, first.body) == (200, f"www.example.test:{port}|ops@example.com|/a?b=1"
                                          .encode())
    assert again.status == 200
    assert lookup.calls == 1  # the second fetcher read the fleet's cache


@pytest.mark.parametrize("address", ["127.0.0.1", "::1", "::ffff:127.0.0.1", "169.254.169.254",
                                     "0.0.0.0", "10.1.2.3"])
def test_a_name_resolving_to_a_forbidden_address_is_refused(redis_url: str, address: str) -> None:
    lookup = CountingLookup({"evil.test": Resolution(("93.184.216.34", address))})
    result = asyncio.run(_fetcher(redis_url, lookup).get("http://evil.test/"))
    assert result.status is None and result.error is not None
    assert result.error.startswith("ssrf_")


def test_literal_addresses_are_checked_without_a_lookup(redis_url: str, port: int) -> None:
    lookup = CountingLookup({})
    refused = asyncio.run(_fetcher(redis_url, lookup).get(f"http://127.0.0.1:{port}/"))
    allowed = asyncio.run(_fetcher(redis_url, lookup, "127.0.0.0/8").get(
        f"http://127.0.0.1:{port}/"))
    assert refused.error == "ssrf_loopback"
    assert allowed.status == 200
    assert lookup.calls == 0


def test_one_lookup_per_name_across_the_fleet_and_negative_answers_expire(
        redis_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # How the caches share a look-up, not how long one waits for Redis (test_dns_fault.py):
    # a first Redis call slower than REDIS_WAIT on a loaded machine resolved alone (two
    # look-ups; seen once in make test).
    monkeypatch.setattr(dnscache, "REDIS_WAIT", 30.0)
    lookup = CountingLookup({})
    client = redis.Redis.from_url(redis_url)
    caches = [DnsCache(client, "crawl", ttl=300, negative_ttl=5, lookup=lookup) for _ in range(4)]

    async def all_at_once() -> list[Resolution]:
        return list(await asyncio.gather(*(c.resolve("gone.test") for c in caches)))

    answers = asyncio.run(all_at_once())
    assert [a.error for a in answers] == ["dns"] * 4
    assert lookup.calls == 1
    assert 0 < client.pttl("crawl:dns:gone.test") <= 5000
