"""The fetch stage without a server: the Fetcher on httpx.MockTransport (headers, limits,
decoding, errors), and a batch leased from the in-memory frontier, planned by robots.txt,
fetched no earlier than its leases allow and turned into page records."""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import logging
import math
import time
import zlib
from base64 import b32encode
from collections.abc import Callable
from dataclasses import replace

import brotli
import httpcore
import httpx
import pytest
import zstandard

from crawlapp.adapters.http import Fetched, Fetcher
from crawlapp.adapters.memory_frontier import MemoryFrontier
from crawlapp.core.records import HostState, Lease, QueuedURL, Release
from crawlapp.core.robots import MAX_ROBOTS_BYTES, RobotsPolicy, robots_answer
from crawlapp.core.settings import load_settings
from crawlapp.stages.fetching import (
    Fetches,
    Plan,
    _fetch_all,
    fetch_chain,
    host_chains,
    plan_batch,
)
from crawlapp.stages.pages import apply_fetch, page_for, robots_policy, sitemap_links
from crawlapp.stages.releasing import EarlyRelease, EarlySlotReturn, chain_rule
from tests.mock_web import Handler, answer, mock_fetcher, site

UA = load_settings({}).product_token
DISALLOW_PRIVATE = robots_answer("http://a.test/robots.txt", 200, None,
                                 b"User-agent: *\nDisallow: /private\n", None, 0)


LEASE = Lease(0, "a.test", "token", "http://a.test/p", 0)


def once(_: Lease, __: Fetched) -> None:
    """A fetch chain's `after` that asks each host one URL."""
    return None


def get(handler: Handler, **env: str) -> Fetched:
    return asyncio.run(mock_fetcher(handler, **env).get("http://a.test/"))


def test_a_fetcher_needs_a_dns_cache_or_a_pool() -> None:
    with pytest.raises(ValueError, match="DNS cache"):
        Fetcher(load_settings({}), None)


def test_the_request_carries_the_crawlers_headers_and_the_answer_is_kept() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return answer(200, b"<p>hi</p>", {"Content-Type": "text/html", "ETag": '"v1"',
                                           "Set-Cookie": "a=b"})

    fetcher = mock_fetcher(handler, CRAWL_FROM="ops@example.com")
    result = asyncio.run(fetcher.get("http://a.test/p?q=1", {"If-None-Match": '"v0"'}))
    (request,) = seen
    assert str(request.url) == "http://a.test/p?q=1"
    assert request.headers["user-agent"] == fetcher.settings.user_agent
    assert request.headers["from"] == "ops@example.com"
    assert request.headers["if-none-match"] == '"v0"'
    assert (result.status, result.body, result.error) == (200, b"<p>hi</p>", None)
    assert result.headers == {"content-type": "text/html", "etag": '"v1"'}  # the kept ones
    assert 0 < result.started <= result.ended


def test_the_request_is_the_request_url_as_serialized_and_its_validators_bytes() -> None:
    """The target is the request URL's path and query as they are (what a browser sends:
    `|` and `^` raw, escapes kept), the Host its authority without user info; a validator
    read as UTF-8 goes back as its own bytes."""
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return answer(200, b"<p>hi</p>", {"Content-Type": "text/html"})

    fetcher = mock_fetcher(handler)
    etag = '"caf\u20ac"'
    result = asyncio.run(fetcher.get("http://u:p@a.test:8080/a|b^c?q=%20x&r", {"If-None-Match": etag}))
    bare = asyncio.run(fetcher.get("http://a.test"))
    assert (result.error, bare.error) == (None, None)
    assert seen[0].url.raw_path == b"/a|b^c?q=%20x&r" and seen[1].url.raw_path == b"/"
    assert seen[0].headers.raw[0] == (b"Host", b"a.test:8080")
    assert (b"If-None-Match", etag.encode()) in seen[0].headers.raw


def test_the_exchange_is_kept_whole_for_the_fetch_history() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers=[("Content-Type", "text/html"),
                                            ("Set-Cookie", "a=1"), ("set-cookie", "b=2"),
                                            ("Content-Encoding", "gzip"), (b"X-Odd", b"\xe9")],
                              stream=httpx.ByteStream(gzip.compress(b"<p>hi</p>")))

    result = asyncio.run(mock_fetcher(handler).get("http://a.test/p", {"If-None-Match": '"v0"'}))
    sent = [line.partition(": ")[0] for line in result.request_headers.split("\r\n")]
    assert sent[:4] == ["Host", "User-Agent", "Accept", "Accept-Encoding"]
    assert "If-None-Match: \"v0\"" in result.request_headers.split("\r\n")
    assert result.response_headers.split("\r\n") == [  # order, case and repeats as received
        "Content-Type: text/html", "Set-Cookie: a=1", "set-cookie: b=2",
        "Content-Encoding: gzip", "X-Odd: \xe9"]
    assert result.ip_address is None  # no network stream under a mock pool
    page = apply_fetch(page_for(LEASE), result, 1 << 20)
    assert (page.request_headers, page.response_headers) == (result.request_headers,
                                                             result.response_headers)
    digest = "sha1:" + b32encode(hashlib.sha1(b"<p>hi</p>").digest()).decode()
    assert page.payload_digest == digest  # of the decoded body, as stored


@pytest.mark.parametrize("encoding, encode", [
    ("gzip", gzip.compress),
    ("deflate", zlib.compress),
    ("br", brotli.compress),
    ("zstd", zstandard.compress),
    ("identity", lambda body: body),
])
def test_bodies_are_decoded(encoding: str, encode: Callable[[bytes], bytes]) -> None:
    body = b"<a href=/x>x</a>" * 100
    result = get(lambda _: answer(200, encode(body), {"Content-Encoding": encoding}))
    assert (result.status, result.body, result.error) == (200, body, None)


@pytest.mark.parametrize("headers, body, error", [
    ({"Content-Encoding": "compress"}, b"x", "unsupported_encoding"),
    ({"Content-Encoding": "gzip"}, b"not gzip at all", "protocol"),
    ({"Content-Encoding": "br"}, b"not brotli at all", "protocol"),
    ({"Content-Encoding": "zstd"}, b"not zstd at all", "protocol"),
    ({"Content-Length": str(10**9)}, b"", "too_large"),  # refused before reading
    ({}, b"x" * 2048, "too_large"),
    ({"Content-Encoding": "gzip"}, gzip.compress(b"\0" * 4096, mtime=0), "too_large"),  # inflated
])
def test_bodies_past_the_limits_or_unreadable_are_errors(headers: dict[str, str], body: bytes,
                                                          error: str) -> None:
    result = get(lambda _: answer(200, body, headers), CRAWL_MAX_BODY_BYTES="1024")
    assert (result.status, result.error) == (200, error)


BOMB_BYTES = 64 * 1024 * 1024  # of zeros, a few KiB on the wire in any coding
BOMBS: dict[str, Callable[[bytes], bytes]] = {
    "gzip": lambda data: gzip.compress(data, compresslevel=9, mtime=0),
    "br": lambda data: brotli.compress(data, quality=5),
    "zstd": zstandard.compress,
}


@pytest.fixture(scope="module", params=sorted(BOMBS))
def bomb(request: pytest.FixtureRequest) -> tuple[str, bytes]:
    """(coding, BOMB_BYTES of zeros after a line of text, in it)."""
    return request.param, BOMBS[request.param](b"Sitemap: http://a.test/map.xml\n"
                                               + b"\0" * BOMB_BYTES)


@pytest.mark.parametrize("url", ["http://a.test/page.html", "http://a.test/sitemap.xml"])
def test_a_bomb_in_any_coding_is_too_large(bomb: tuple[str, bytes], url: str) -> None:
    encoding, raw = bomb
    fetcher = mock_fetcher(lambda _: answer(200, raw, {"Content-Encoding": encoding}),
                           CRAWL_MAX_BODY_BYTES=str(1 << 20))
    result = asyncio.run(fetcher.get(url))
    assert (result.status, result.error, result.truncated) == (200, "too_large", True)
    assert result.body == (b"Sitemap: http://a.test/map.xml\n" + b"\0" * BOMB_BYTES)[:1 << 20]
    page = apply_fetch(page_for(replace(LEASE, url=url)), result, 1 << 20)
    assert (page.status, page.error, page.truncated) == ("failed", "too_large", True)
    assert page.raw_gz is not None and gzip.decompress(page.raw_gz) == result.body  # archived


def test_a_robots_txt_bomb_in_any_coding_is_cut_at_its_cap(bomb: tuple[str, bytes]) -> None:
    encoding, raw = bomb
    fetcher = mock_fetcher(lambda _: answer(200, raw, {"Content-Encoding": encoding}))
    result = asyncio.run(fetcher.get("http://a.test/robots.txt", max_bytes=MAX_ROBOTS_BYTES,
                                     truncate=True))
    assert (result.error, len(result.body)) == (None, MAX_ROBOTS_BYTES)
    assert sitemap_links("http://a.test", robots_policy(result, None)) == [
        "http://a.test/map.xml"]


def test_truncate_keeps_the_first_bytes_of_a_long_body() -> None:
    fetcher = mock_fetcher(lambda _: answer(200, b"a" * 3000))
    result = asyncio.run(fetcher.get("http://a.test/robots.txt", max_bytes=1024, truncate=True))
    assert (result.error, result.body) == (None, b"a" * 1024)


@pytest.mark.parametrize("exc, error", [
    (httpcore.ConnectError("refused"), "connect"),
    (httpcore.ReadTimeout("slow"), "timeout"),
    (httpcore.RemoteProtocolError("bad"), "protocol"),
    (httpcore.ReadError("reset"), "http_ReadError"),
    (RuntimeError("bug"), "error_RuntimeError"),
])
def test_network_failures_are_the_requests_error(exc: Exception, error: str) -> None:
    def handler(_: httpx.Request) -> httpx.Response:
        raise exc

    result = get(handler)
    assert (result.status, result.error) == (None, error)


def test_a_batch_from_the_frontier_planned_fetched_and_recorded() -> None:
    """a.test's and c.test's robots.txt are known (no /private), b.test's is not: its lease
    fetches robots.txt in the page's slot and the page waits in the frontier."""
    frontier = MemoryFrontier(shards=1)
    now = time.time()
    frontier.add([QueuedURL("http://a.test/page", 1, 0.9), QueuedURL("http://b.test/page", 1, 0.9),
                  QueuedURL("http://c.test/private/x", 1, 0.9)], now)
    leases = frontier.dispatch([0], now, max_hosts=10, lease_seconds=60, max_leased=100)[0][0]
    policies: dict[str, RobotsPolicy | None] = {"http://a.test": DISALLOW_PRIVATE,
                                                "http://c.test": DISALLOW_PRIVATE}
    plan = plan_batch(leases, policies, UA)
    assert [lease.host for lease in plan.robots] == ["b.test"]
    assert [lease.host for lease in plan.pages] == ["a.test"]
    assert [(lease.host, why) for lease, why in plan.refused] == [
        ("c.test", f"robots: {DISALLOW_PRIVATE.blocking_rule('http://c.test/private/x', UA)}")]

    handler = site({
        "http://a.test/page": (200, {"Content-Type": "text/html"}, b"<p>a</p>"),
        "http://b.test/robots.txt": (200, {}, b"Sitemap: http://b.test/map.xml\n"
                                     + b"#" * (2 * MAX_ROBOTS_BYTES))})
    robots, fetched, _, _ = asyncio.run(_fetch_all(mock_fetcher(handler), plan, policies, {}, once,
                                                     math.inf))
    assert [r.url for r in robots + fetched] == ["http://b.test/robots.txt", "http://a.test/page"]
    assert len(robots[0].body) == MAX_ROBOTS_BYTES and robots[0].error is None  # cut, not refused
    learned = robots_policy(robots[0], None)
    assert learned.allowed("http://b.test/page", UA)
    assert sitemap_links("http://b.test", learned) == ["http://b.test/map.xml"]
    (page,) = [apply_fetch(page_for(lease), result, 1 << 20)
               for lease, result in zip(plan.pages, fetched, strict=True)]
    assert page.status == "fetched" and page.body_gz is not None
    assert gzip.decompress(page.body_gz) == b"<p>a</p>"

    frontier.release([Release(plan.robots[0], now + 1, requeue=True)]
                     + [Release(lease, now + 1) for lease in plan.pages]
                     + [Release(lease, now + 1) for lease, _ in plan.refused])
    assert frontier.host_states(["b.test"], now)["b.test"].queued == 1  # the page waits
    assert sum(s.urls_queued for s in frontier.stats(now)) == 1


def test_no_request_starts_before_its_lease_allows() -> None:
    frontier = MemoryFrontier(shards=1)
    now = time.time()
    frontier.add([QueuedURL(f"http://a.test/{i}", 0, 1.0) for i in range(2)], now)
    (first,) = frontier.dispatch([0], now, max_hosts=10, lease_seconds=60, max_leased=100)[0][0]
    frontier.release([Release(first, now + 0.3)])  # the host's delay
    (second,) = frontier.dispatch([0], now, max_hosts=10, lease_seconds=60, max_leased=100,
                                  lookahead=1.0)[0][0]
    assert second.not_before == now + 0.3
    started: list[float] = []

    def handler(_: httpx.Request) -> httpx.Response:
        started.append(time.time())
        return answer(200)

    plan = plan_batch([second], {"http://a.test": DISALLOW_PRIVATE}, UA)
    asyncio.run(_fetch_all(mock_fetcher(handler), plan, {}, {}, once, math.inf))
    assert started and started[0] >= now + 0.3


def test_a_host_is_released_as_its_request_ends_not_with_the_batch() -> None:
    """a.test answers at once, b.test's lease starts later: a.test is free again (its next
    time set) while b.test's request is still waiting to start."""
    frontier = MemoryFrontier(shards=1)
    now = time.time()
    frontier.add([QueuedURL("http://a.test/1", 0, 1.0), QueuedURL("http://a.test/2", 0, 1.0),
                  QueuedURL("http://b.test/1", 0, 1.0)], now)
    leases = frontier.dispatch([0], now, max_hosts=10, lease_seconds=60, max_leased=100)[0][0]
    slow = {lease.host: lease for lease in leases}["b.test"]
    leases = [lease if lease is not slow else replace(slow, not_before=now + 1.5)
              for lease in leases]
    seen: dict[str, HostState] = {}

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.host == "b.test":  # by then a.test has been released
            seen["a.test"] = frontier.host_states(["a.test"], time.time())["a.test"]
        return answer(200)

    def ended(chain: list[Lease], _: list[Fetched]) -> list[Release]:
        return [Release(lease, now + 10) for lease in chain]

    early = EarlyRelease(frontier, ended)
    plan = plan_batch(leases, {"http://a.test": DISALLOW_PRIVATE,
                               "http://b.test": DISALLOW_PRIVATE}, UA)
    asyncio.run(_fetch_all(mock_fetcher(handler), plan, {}, {}, once, math.inf, early))
    assert (seen["a.test"].status, seen["a.test"].until) == ("waiting", now + 10)
    assert set(early.released) == {"http://a.test/1", "http://b.test/1"}


def test_a_hosts_slot_goes_back_as_its_request_ends_not_with_the_batch() -> None:
    """With politeness slots, a.test's key is given back (free from its next time) while
    b.test's request still waits; the leases stay for the batch's end."""
    frontier = MemoryFrontier(shards=1)
    now = time.time()
    frontier.add([QueuedURL("http://a.test/1", 0, 1.0), QueuedURL("http://b.test/1", 0, 1.0)],
                 now)
    leases = frontier.dispatch([0], now, max_hosts=10, lease_seconds=60, max_leased=100)[0][0]
    leases = [replace(lease, not_before=now + 1.0) if lease.host == "b.test" else lease
              for lease in leases]
    given: list[tuple[dict[str, float], str, float]] = []

    class Slots:
        def give_back(self, next_times: dict[str, float], holder: str) -> None:
            given.append((next_times, holder, time.time()))

    class Ctx:
        slots = Slots()
        frontier = MemoryFrontier(shards=1)  # not used: the leases go with the batch

    def ended(chain: list[Lease], _: list[Fetched]) -> list[Release]:
        return [Release(lease, now + 10) for lease in chain]

    early = EarlySlotReturn(Ctx(), "batch-1",  # type: ignore[arg-type]
                            {"a.test": "a.test", "b.test": "b.test"}, ended)
    plan = plan_batch(leases, {"http://a.test": DISALLOW_PRIVATE,
                               "http://b.test": DISALLOW_PRIVATE}, UA)
    asyncio.run(_fetch_all(mock_fetcher(lambda request: answer(200)), plan, {}, {}, once,
                           math.inf, early))
    assert [g[:2] for g in given] == [({"a.test": now + 10}, "batch-1"),
                                      ({"b.test": now + 10}, "batch-1")]
    assert given[0][2] < now + 1.0 <= given[1][2]  # a.test's before b.test's request
    assert early.released == {}  # the leases go with the batch


def test_a_host_renders_load_from_is_asked_one_url_a_batch() -> None:
    def next_start(lease: Lease, result: Fetched) -> float | None:
        return 5.0

    def lease(host: str) -> Lease:
        return Lease(0, host, "token", f"http://{host}/", 0)

    got = Fetched("http://x/", 200)
    assert chain_rule(load_settings({}), next_start) is next_start
    rule = chain_rule(load_settings({"CRAWL_RENDER": "true",
                                     "CRAWL_RENDER_OTHER_HOSTS": "*.cdn.test"}), next_start)
    assert rule(lease("static.cdn.test"), got) is None
    assert rule(lease("a.test"), got) == 5.0


def test_a_hosts_urls_are_asked_one_after_the_other_each_a_delay_after_the_last_answer() -> None:
    """a.test's lease holds four URLs: each request starts no sooner than the previous one
    ended + the delay `after` gives, never two at once; /2 answers 503 (`after` says stop)
    and /3 is not asked. b.test's single URL is asked meanwhile."""
    frontier = MemoryFrontier(shards=1)
    now = time.time()
    frontier.add([QueuedURL(f"http://a.test/{i}", 0, 1.0 - i / 100) for i in range(4)]
                 + [QueuedURL("http://b.test/0", 0, 1.0)], now)
    leases = frontier.dispatch([0], now, max_hosts=10, lease_seconds=60, max_leased=100, per_lease=4)[0][0]
    assert [lease.url for lease in leases] == [f"http://a.test/{i}" for i in range(4)] + [
        "http://b.test/0"]
    assert host_chains(leases) == [[0, 1, 2, 3], [4]]
    spans: dict[str, list[tuple[float, float]]] = {}
    running: set[str] = set()
    overlapped: list[str] = []

    async def slow(request: httpx.Request) -> httpx.Response:
        host = request.url.host
        if host in running:
            overlapped.append(host)
        running.add(host)
        started = time.time()
        await asyncio.sleep(0.02)
        running.discard(host)
        spans.setdefault(host, []).append((started, time.time()))
        return answer(503 if request.url.path == "/2" else 200)

    delay = 0.05

    def after(_: Lease, result: Fetched) -> float | None:
        return None if result.status == 503 else result.ended + delay

    policies: dict[str, RobotsPolicy | None] = {"http://a.test": DISALLOW_PRIVATE,
                                                "http://b.test": DISALLOW_PRIVATE}
    plan = plan_batch(leases, policies, UA)
    fetched = asyncio.run(_fetch_all(mock_fetcher(slow), plan, {}, {}, after, math.inf)).pages
    assert [r.status if r else None for r in fetched] == [200, 200, 503, None, 200]
    a = spans["a.test"]
    assert len(a) == 3 and not overlapped
    for n in (1, 2):  # each start a delay after the previous answer was read
        assert a[n][0] >= fetched[n - 1].ended + delay  # type: ignore[union-attr]
        assert fetched[n - 1].ended >= a[n - 1][1]  # type: ignore[union-attr]


def test_a_chain_asks_no_further_url_past_its_cutoff() -> None:
    leases = [replace(LEASE, url=f"http://a.test/{i}") for i in range(3)]
    asked: list[str] = []

    async def get(lease: Lease) -> Fetched:
        asked.append(lease.url)
        return Fetched(lease.url, 200, ended=time.time())

    results = asyncio.run(fetch_chain(leases, get, lambda _, r: r.ended, cutoff=0.0))
    assert asked == ["http://a.test/0"] and len(results) == 1  # the first is always asked


def test_a_chain_ends_early_once_its_lease_is_asked_to_yield(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The batch looks for leases asked to end early (the frontier's `yielding`) while chains
    of several URLs run: a host asked asks nothing more, the others go on; a host of one URL
    is not looked for, nor a host whose chain ended."""
    monkeypatch.setattr("crawlapp.stages.fetching.YIELD_POLL", 0.02)
    leases = ([replace(LEASE, url=f"http://{h}.test/{i}", host=f"{h}.test") for h in "ab"
               for i in range(4)] + [replace(LEASE, url="http://c.test/0", host="c.test")])
    asked: list[str] = []
    looked: list[set[str]] = []

    async def handler(request: httpx.Request) -> httpx.Response:
        asked.append(str(request.url))
        return answer(200)

    def yielding(watched: list[Lease]) -> set[str]:
        looked.append({lease.host for lease in watched})
        return {"a.test"} if "http://a.test/0" in asked else set()

    chain_ended: dict[str, float] = {}

    def ended(chain: list[Lease], _: list[Fetched]) -> None:
        chain_ended[chain[0].host] = time.time()

    plan = plan_batch(leases, {f"http://{h}.test": DISALLOW_PRIVATE for h in "abc"}, UA)
    _, fetched, yielded, _ = asyncio.run(_fetch_all(
        mock_fetcher(handler), plan, {}, {}, lambda _, r: r.ended + 0.3, math.inf,
        EarlyRelease(MemoryFrontier(shards=1), ended), yielding))
    assert [r is not None for r in fetched] == [True, False, False, False] + [True] * 5
    assert yielded == {"a.test"} and looked[0] == {"a.test", "b.test"}
    assert all("c.test" not in hosts for hosts in looked) and looked[-1] == {"b.test"}
    # a.test's chain ended as it heard, not at its next request's time
    assert chain_ended["a.test"] < fetched[0].ended + 0.2  # type: ignore[union-attr]


def test_a_host_asking_its_robots_txt_asks_nothing_else_in_that_batch() -> None:
    leases = [replace(LEASE, url=url) for url in
              ("http://a.test/1", "https://a.test/2", "http://a.test/private/3",
               "https://a.test/4")]
    plan = plan_batch(leases, {"http://a.test": DISALLOW_PRIVATE}, UA)
    assert [lease.url for lease in plan.robots] == ["https://a.test/2"]
    assert [lease.url for lease in plan.waiting] == ["https://a.test/4", "http://a.test/1"]
    assert plan.pages == [] and [lease.url for lease, _ in plan.refused] == [
        "http://a.test/private/3"]


def test_a_host_leased_twice_at_once_is_still_asked_one_request_at_a_time(
        caplog: pytest.LogCaptureFixture) -> None:
    """Behind the frontier's leases, the fetch process's own turns (stages/turns.py): a batch
    whose lease of a.test comes while another batch's chain of a.test runs (the frontier
    handing out a host still held) waits for that chain's end and the delay its rule gave
    after its last answer, and says so, as does one that comes less than a delay after a chain's last
    answer; b.test, leased once, and a chain started in its turn, wait for nothing."""
    delay = 0.1
    spans: list[tuple[str, float, float]] = []

    async def handler(request: httpx.Request) -> httpx.Response:
        started = time.time()
        await asyncio.sleep(0.02)
        spans.append((request.url.host + request.url.path, started, time.time()))
        return answer(200)

    def lease(host: str, token: str, n: int, at: float) -> Lease:
        return Lease(0, host, token, f"http://{host}/{token}{n}", 0, at)

    def plan(leases: list[Lease]) -> Plan:
        return plan_batch(leases, {f"http://{x.host}": DISALLOW_PRIVATE for x in leases}, UA)

    async def batches() -> tuple[Fetches, Fetches, Fetches, Fetches]:
        fetcher, now = mock_fetcher(handler), time.time()
        first = asyncio.ensure_future(_fetch_all(
            fetcher, plan([lease("a.test", "A", n, now) for n in range(3)]), {}, {},
            lambda _, r: r.ended + 2 * delay, math.inf, min_delay=delay))  # its Crawl-delay
        await asyncio.sleep(0.05)  # a.test's chain is under way
        second = await _fetch_all(
            fetcher, plan([lease("a.test", "B", 0, time.time()), lease("b.test", "C", 0, 0.0)]),
            {}, {}, once, math.inf, min_delay=delay)
        third = await _fetch_all(fetcher, plan([lease("a.test", "D", 0, time.time() + delay)]),
                                 {}, {}, once, math.inf, min_delay=delay)
        fourth = await _fetch_all(fetcher, plan([lease("a.test", "E", 0, time.time())]),
                                  {}, {}, once, math.inf, min_delay=delay)
        return await first, second, third, fourth

    with caplog.at_level(logging.ERROR, "crawlapp.stages.turns"):
        fetches = asyncio.run(batches())
    assert [f.held for f in fetches] == [set(), {"a.test"}, set(), {"a.test"}]
    a = sorted((start, end, path) for path, start, end in spans if path.startswith("a.test"))
    assert [path for _, _, path in a] == ["a.test/A0", "a.test/A1", "a.test/A2", "a.test/B0",
                                          "a.test/D0", "a.test/E0"]
    for (_, end, _), (start, _, _) in zip(a, a[1:], strict=False):
        assert start >= end + delay  # one at a time, each a delay after the last
    assert a[3][0] >= a[2][1] + 2 * delay  # B0 after A's chain as its own rule allowed
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 2 and "a.test was leased to B while the lease A" in said[0]
    assert "a.test was leased to E less than a delay after its last answer" in said[1]
