"""HTTP/2 where the server offers it (CRAWL_HTTP2), and TLS sessions resumed: the fetch stage's
client against the test web over TLS on loopback (ALPN h2 or http/1.1), judged from the
server's request log: which protocol each request came over, on how many connections, on a
resumed session or not, and what the record says."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from crawlapp.adapters.http import Fetcher
from crawlapp.adapters.redis.dnscache import DnsCache
from crawlapp.core.records import Fetched, Page
from crawlapp.core.settings import load_settings
from crawlapp.stages.pages import apply_fetch
from testweb.server import BackgroundServer, start_in_background
from testweb.serverlog import Request, load
from testweb.site import Web, WebSpec
from testweb.tls import Authority, web_certificate

# Pages of ~20,000 words: each body is several times HTTP/2's initial 64 KiB window.
SPEC = WebSpec(hosts=2, pages_per_host=4, port=0, crawl_delay_every=0, words_per_page=20_000,
               tls=True)


@pytest.fixture(scope="module")
def authority(tmp_path_factory: pytest.TempPathFactory) -> Authority:
    return Authority(tmp_path_factory.mktemp("ca"))


def _crawl(authority: Authority, tmp_path: Path, http2: str, max_origins: int = 2048
           ) -> tuple[Web, list[Fetched], list[Request]]:
    """Every page of both hosts, one at a time (home pages, then pages, alternating between
    the hosts), by one Fetcher keeping connections to `max_origins` origins."""
    settings = load_settings({"CRAWL_ALLOWED_NETWORKS": "127.0.0.0/8", "CRAWL_HTTP2": http2,
                              "CRAWL_CA_BUNDLE": str(authority.cert_file)})
    fetcher = Fetcher(settings, DnsCache(None, "test", 60, 60), max_origins)
    log = str(tmp_path / "requests.jsonl")
    server: BackgroundServer
    with start_in_background(Web(SPEC), log, tls=web_certificate(authority, Web(SPEC))) as server:
        web = server.web
        urls = [*web.seeds(), *(f"{base}p/{k}.html" for k in range(1, 4) for base in web.seeds())]

        async def fetch_all() -> list[Fetched]:
            return [await fetcher.get(url) for url in urls]

        fetched = asyncio.run(fetch_all())
        time.sleep(0.3)  # the server's log is flushed every 0.2 s
    return web, fetched, load(log)


def test_http2_is_spoken_where_the_server_offers_it(authority: Authority, tmp_path: Path) -> None:
    web, fetched, requests = _crawl(authority, tmp_path, "true")
    assert [(f.status, f.error, f.http_version) for f in fetched] == [(200, None, "HTTP/2")] * 8
    assert all(len(f.body) > 2 * 65_536 for f in fetched)  # past the first windows
    assert [(r.proto, r.tls, r.status) for r in requests] == [("2", True, 200)] * 8
    # One connection per origin, every request of a host on it.
    assert {r.host: {r.conn} for r in requests} == {
        host: {next(r.conn for r in requests if r.host == host)} for host in web.hosts()}
    # What the archive needs of an exchange, over h2 as over HTTP/1.1.
    assert {f.ip_address for f in fetched} == {host.rsplit(":", 1)[0] for host in web.hosts()}
    assert all("content-type: text/html" in f.response_headers for f in fetched)
    page = apply_fetch(Page(url=fetched[0].url), fetched[0])
    assert page.http_version == "HTTP/2"


def test_http1_over_tls_unless_the_setting_asks_for_http2(authority: Authority,
                                                          tmp_path: Path) -> None:
    _, fetched, requests = _crawl(authority, tmp_path, "false")
    assert [(f.status, f.http_version) for f in fetched] == [(200, "HTTP/1.1")] * 8
    assert [(r.proto, r.tls) for r in requests] == [("1.1", True)] * 8
    assert len({r.conn for r in requests}) == 2  # keep-alive: one connection a host


@pytest.mark.parametrize("http2", ["false", "true"])
def test_a_connection_made_again_resumes_its_tls_session(authority: Authority, tmp_path: Path,
                                                         http2: str) -> None:
    """With one origin kept, each request closes the other host's connection: every
    connection after a host's first resumes the session that host's last one ended with."""
    web, fetched, requests = _crawl(authority, tmp_path, http2, max_origins=1)
    assert [f.status for f in fetched] == [200] * 8
    assert [(r.host, r.resumed) for r in requests] == [
        (host, index >= 2) for index, host in enumerate(web.hosts() * 4)]
    assert len({r.conn for r in requests}) == 8
