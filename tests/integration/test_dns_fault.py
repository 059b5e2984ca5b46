"""Names resolved through a Redis fault (a real redis-server stopped or frozen mid-test, a
real HTTP server): the shared DNS cache is asked off the fetch loop, a Redis that fails or
hangs leaves each process to resolve alone, and a look-up that fails through the crawler's
own fault is a `resolver` error (tried again, uncounted), never the name's answer."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Iterator

import pytest
import redis

from crawlapp.adapters.http import Fetcher
from crawlapp.adapters.redis.dnscache import REDIS_WAIT, DnsCache, Resolution
from crawlapp.adapters.redis.local import RedisServer
from crawlapp.core.settings import load_settings
from tests.loopback import QuietHandler, serving, with_longest_stall

pytestmark = pytest.mark.integration


class _Host(QuietHandler):
    def do_GET(self) -> None:  # noqa: N802
        self.send_body(self.headers["Host"].encode())


@pytest.fixture
def port() -> Iterator[int]:
    with serving(_Host) as port:
        yield port


@pytest.fixture
def server() -> Iterator[RedisServer]:
    """A redis-server of this test's own, to stop or freeze."""
    own = RedisServer()
    own.start()
    yield own
    if own.proc is not None and own.proc.poll() is None:
        os.kill(own.proc.pid, signal.SIGCONT)
    own.stop()


class Table:
    """A resolver answering from a table, counting its calls."""

    def __init__(self, table: dict[str, Resolution]) -> None:
        self.table = table
        self.calls: list[str] = []

    async def __call__(self, host: str) -> Resolution:
        self.calls.append(host)
        await asyncio.sleep(0.01)
        return self.table.get(host, Resolution(error="dns"))


NAMES = {f"h{i}.example.test": Resolution(("127.0.0.1",)) for i in range(20)}


def _resolve_all(cache: DnsCache, names: list[str]) -> tuple[list[Resolution], float]:
    """The answers, and the longest the loop stalled meanwhile."""
    async def main() -> tuple[list[Resolution], float]:
        return await with_longest_stall(asyncio.gather(*(cache.resolve(n) for n in names)))
    return asyncio.run(main())


def test_names_resolve_while_redis_is_stopped(server: RedisServer) -> None:
    lookup = Table(NAMES)
    cache = DnsCache(redis.Redis.from_url(server.url), "crawl", ttl=300, negative_ttl=5,
                     lookup=lookup)
    first, _ = _resolve_all(cache, ["h0.example.test"])
    assert first == [NAMES["h0.example.test"]]
    server.stop()
    names = [f"h{i}.example.test" for i in range(1, 20)] + ["gone.example.test"]
    answers, _ = _resolve_all(cache, names)
    assert answers[:-1] == [NAMES[n] for n in names[:-1]]
    assert answers[-1].error == "dns"  # the name's own answer, kept
    assert sorted(lookup.calls) == sorted(["h0.example.test", *names])


def test_a_frozen_redis_never_stalls_the_loop(server: RedisServer) -> None:
    """A Redis that takes the connection and never answers (a master partitioned away, as in
    a failover): each look-up waits REDIS_WAIT at most, the loop's other work goes on, and
    the process resolves alone until Redis answers again."""
    lookup = Table(NAMES)
    cache = DnsCache(redis.Redis.from_url(server.url), "crawl", ttl=300, negative_ttl=5,
                     lookup=lookup)
    _resolve_all(cache, ["h0.example.test"])  # connected
    assert server.proc is not None
    os.kill(server.proc.pid, signal.SIGSTOP)
    started = time.monotonic()
    names = [f"h{i}.example.test" for i in range(1, 20)]
    answers, longest_gap = _resolve_all(cache, names)
    took = time.monotonic() - started
    os.kill(server.proc.pid, signal.SIGCONT)
    assert answers == [NAMES[n] for n in names]
    # the loop ran its ticker throughout: a look-up asking the frozen Redis on the loop would
    # stall it REDIS_WAIT at least (a busy test machine delays a tick by tenths of a second)
    assert longest_gap < REDIS_WAIT
    assert took < REDIS_WAIT + 2.0  # every name waited for Redis once at most
    assert sorted(lookup.calls[1:]) == sorted(names)


def test_a_fetch_gets_its_page_with_redis_stopped(server: RedisServer, port: int) -> None:
    settings = load_settings({"CRAWL_ALLOWED_NETWORKS": "127.0.0.0/8"})
    lookup = Table({"www.example.test": Resolution(("127.0.0.1",))})
    fetcher = Fetcher(settings, DnsCache(redis.Redis.from_url(server.url), "crawl", ttl=300,
                                         negative_ttl=5, lookup=lookup))
    server.stop()
    got = asyncio.run(fetcher.get(f"http://www.example.test:{port}/"))
    assert (got.status, got.error, got.body) == (200, None, f"www.example.test:{port}".encode())


def test_a_look_up_failing_through_our_fault_is_ours_and_not_kept(server: RedisServer) -> None:
    """The resolver failing as the process does (not the name's answer) is a `resolver`
    error: kept nowhere, asked again next time (and then answered)."""
    client = redis.Redis.from_url(server.url)
    answers = [Resolution(error="resolver"), Resolution(("127.0.0.1",))]

    async def failing_once(host: str) -> Resolution:
        return answers.pop(0)

    cache = DnsCache(client, "crawl", ttl=300, negative_ttl=5, lookup=failing_once)
    fetcher = Fetcher(load_settings({"CRAWL_ALLOWED_NETWORKS": "127.0.0.0/8"}), cache)
    got = asyncio.run(fetcher.get("http://www.example.test:1/"))
    assert (got.status, got.error) == (None, "resolver")
    deadline = time.monotonic() + 2
    while client.exists("crawl:dns-lock:www.example.test") and time.monotonic() < deadline:
        time.sleep(0.01)  # the lock goes from the cache's own thread
    assert client.get("crawl:dns:www.example.test") is None
    assert not client.exists("crawl:dns-lock:www.example.test")
    again, _ = _resolve_all(cache, ["www.example.test"])
    assert again == [Resolution(("127.0.0.1",))]
