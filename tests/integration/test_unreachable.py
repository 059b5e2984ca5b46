"""Every host ends: a host that cannot be reached for a reason that will not change soon (the
private-address guard, no DNS name, an invalid host name, TLS) is given up after
CRAWL_GIVE_UP_AFTER tries, with its reason, one warning, and its waiting URL recorded failed.
The real Redis frontier and the fetch stage, against a real HTTP(S) server on loopback."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from crawlapp.adapters import http as fetch
from crawlapp.adapters.context import Context
from crawlapp.adapters.redis.dnscache import DnsCache, Resolution
from crawlapp.core.records import Page
from crawlapp.core.robots import RobotsPolicy
from crawlapp.core.settings import load_settings
from crawlapp.observe.stats import given_up_hosts
from crawlapp.ops.rebuild import mark_alive
from tests.integration.in_process import fetch_until_idle
from tests.tls import hello_server, self_signed

pytestmark = pytest.mark.integration
GIVE_UP_AFTER = 3


@pytest.fixture
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, int]]:
    """(scheme, port) of a server that answers 200 to everything: HTTP, or HTTPS with a
    self-signed certificate when the test is parametrized with "tls"."""
    tls = getattr(request, "param", None) == "tls"
    with hello_server(self_signed(tmp_path) if tls else None) as port:
        yield ("https" if tls else "http"), port


class Names:
    """A resolver from a table: a name missing from it does not resolve."""

    def __init__(self, table: dict[str, tuple[str, ...]]) -> None:
        self.table = table

    async def __call__(self, host: str) -> Resolution:
        await asyncio.sleep(0)
        found = self.table.get(host)
        return Resolution(found) if found else Resolution(error="dns")


@pytest.fixture
def make_ctx(tmp_path: Path, redis_url: str, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """A Context on the tests' Redis whose fetch loop (process-wide) is its own."""

    def build(allowed: str, names: dict[str, tuple[str, ...]]) -> Context:
        monkeypatch.setattr(fetch, "_LOOP", None)
        settings = load_settings({
            "CRAWL_DATA_DIR": str(tmp_path), "CRAWL_REDIS_URL": redis_url, "CRAWL_SHARDS": "2",
            "CRAWL_ALLOWED_NETWORKS": allowed, "CRAWL_DEFAULT_DELAY": "0.05",
            "CRAWL_DELAY_MARGIN": "0", "CRAWL_DISPATCH_LOOKAHEAD": "0",
            "CRAWL_GIVE_UP_AFTER": str(GIVE_UP_AFTER), "CRAWL_FETCH_TIMEOUT": "5"})
        ctx = Context(settings)
        ctx.dns_cache = lambda: DnsCache(ctx.redis, settings.redis_prefix, 300, 1,  # type: ignore[method-assign]
                                         lookup=Names(names))
        mark_alive(ctx)  # the frontier is whole: nothing to rebuild from a database
        return ctx

    return build


def _check_given_up(ctx: Context, pages: list[Page], host: str, error: str,
                    caplog: pytest.LogCaptureFixture, note: str = "") -> None:
    """`host` is given up for `error`, shown with its `note` (a TLS failure's reason)."""
    shown = f"{error} ({note})" if note else error
    robots = [p for p in pages if p.status == "robots"]
    failed = [p for p in pages if p.status == "failed"]
    assert len(robots) == GIVE_UP_AFTER  # robots.txt asked that many times, then no more
    assert [p.error for p in failed] == [f"unreachable: {shown}"]
    assert given_up_hosts(ctx) == {host: error}
    assert ctx.counters.read().get(f"unreachable:{error}") == 1
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING
                and r.getMessage().startswith("giving up")]
    assert len(warnings) == 1 and host in warnings[0].getMessage()
    assert note in warnings[0].getMessage()
    state = ctx.frontier.host_states([host], time.time())[host]
    assert state.label == f"unreachable: {shown}" and state.until is None


@pytest.mark.parametrize(("allowed", "names", "url", "host", "error"), [
    ("", {}, "http://127.0.0.1:{port}/", "127.0.0.1:{port}", "ssrf_loopback"),
    ("", {"intranet.test": ("10.1.2.3",)}, "http://intranet.test:{port}/a",
     "intranet.test:{port}", "ssrf_private"),
    ("127.0.0.0/8", {}, "http://gone.test:{port}/", "gone.test:{port}", "dns"),
    ("127.0.0.0/8", {}, "http://" + "a" * 64 + ".test:{port}/", "a" * 64 + ".test:{port}",
     "invalid_host"),
    ("127.0.0.0/8", {}, "http://a..b.test:{port}/", "a..b.test:{port}", "invalid_host"),
])
def test_an_unreachable_host_is_given_up_with_its_reason(
        make_ctx, server: tuple[str, int], caplog: pytest.LogCaptureFixture,  # type: ignore[no-untyped-def]
        allowed: str, names: dict[str, tuple[str, ...]], url: str, host: str, error: str) -> None:
    caplog.set_level(logging.WARNING, logger="crawlapp.stages.fetching")
    ctx = make_ctx(allowed, names)
    _, port = server
    started = time.monotonic()
    pages, _ = fetch_until_idle(ctx, [url.format(port=port)])
    assert time.monotonic() - started < 15
    _check_given_up(ctx, pages, host.format(port=port), error, caplog)


@pytest.mark.parametrize("server", ["tls"], indirect=True)
def test_a_host_whose_tls_certificate_does_not_verify_is_given_up(
        make_ctx, server: tuple[str, int], caplog: pytest.LogCaptureFixture) -> None:  # type: ignore[no-untyped-def]
    caplog.set_level(logging.WARNING, logger="crawlapp.stages.fetching")
    ctx = make_ctx("127.0.0.0/8", {})
    scheme, port = server
    assert scheme == "https"
    pages, _ = fetch_until_idle(ctx, [f"https://127.0.0.1:{port}/"])
    _check_given_up(ctx, pages, f"127.0.0.1:{port}", "tls_certificate", caplog,
                    note="self-signed certificate")


def test_pages_of_a_host_that_became_unreachable_end_too(
        make_ctx, server: tuple[str, int], caplog: pytest.LogCaptureFixture) -> None:  # type: ignore[no-untyped-def]
    """robots.txt known (cached), then every page refused: the host is given up after that
    many pages failed, the rest of its URLs stay queued (parked), and the crawl ends."""
    caplog.set_level(logging.WARNING, logger="crawlapp.stages.fetching")
    ctx = make_ctx("", {})
    _, port = server
    origin = f"http://127.0.0.1:{port}"
    ctx.robots.save({origin: RobotsPolicy(404, "")})  # allow all
    urls = [f"{origin}/{n}" for n in range(6)]
    pages, _ = fetch_until_idle(ctx, urls)
    failed = [p for p in pages if p.status == "failed"]
    assert [p.error for p in failed] == ["ssrf_loopback"] * GIVE_UP_AFTER
    assert given_up_hosts(ctx) == {f"127.0.0.1:{port}": "ssrf_loopback"}
    state = ctx.frontier.host_states([f"127.0.0.1:{port}"], time.time())[f"127.0.0.1:{port}"]
    assert state.queued == len(urls) - GIVE_UP_AFTER
    assert len([r for r in caplog.records if r.getMessage().startswith("giving up")]) == 1
    # An operator who allows the network resumes the host: its other URLs are fetched.
    assert ctx.frontier.resume(f"127.0.0.1:{port}", time.time())
    allowing = make_ctx("127.0.0.0/8", {})
    pages, _ = fetch_until_idle(allowing, [])
    assert sorted(p.http_status or 0 for p in pages) == [200] * (len(urls) - GIVE_UP_AFTER)


def test_a_host_that_answers_is_never_given_up(
        make_ctx, server: tuple[str, int]) -> None:  # type: ignore[no-untyped-def]
    ctx = make_ctx("127.0.0.0/8", {})
    _, port = server
    pages, _ = fetch_until_idle(ctx, [f"http://127.0.0.1:{port}/{n}" for n in range(3)])
    assert sorted(p.status for p in pages) == ["fetched"] * 3 + ["robots"]
    assert given_up_hosts(ctx) == {}
