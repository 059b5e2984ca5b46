"""Leases of several URLs through the fetch stage, on the real Redis frontier and a real HTTP
server on loopback: a host's URLs are asked one after the other, each a delay after the
previous answer; a host that answers 503 is asked nothing more in that batch, and the URLs
not asked go back to its queue and are fetched later."""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from crawlapp.adapters import http as fetch
from crawlapp.adapters.context import Context
from crawlapp.core.robots import RobotsPolicy
from crawlapp.core.settings import load_settings
from crawlapp.ops.rebuild import mark_alive
from tests.integration.in_process import fetch_until_idle

pytestmark = pytest.mark.integration
DELAY = 0.2


class _Log(http.server.BaseHTTPRequestHandler):
    """200 to every path but the first request to /2, which gets a 503; each request's
    (path, start, end) is logged."""

    log: list[tuple[str, float, float]] = []
    lock = threading.Lock()

    def do_GET(self) -> None:  # noqa: N802
        started = time.time()
        with self.lock:
            again = any(path == self.path for path, _, _ in self.log)
        self.send_response(503 if self.path == "/2" and not again else 200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", "2")
        self.end_headers()
        ended = time.time()  # before the body: the crawler cannot have read it all earlier
        self.wfile.write(b"ok")
        with self.lock:
            self.log.append((self.path, started, ended))

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[int]:
    _Log.log = []
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Log)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield httpd.server_address[1]
    httpd.shutdown()


@pytest.fixture
def ctx(tmp_path: Path, redis_url: str, monkeypatch: pytest.MonkeyPatch) -> Context:
    monkeypatch.setattr(fetch, "_LOOP", None)  # a fetch loop with these settings
    settings = load_settings({
        "CRAWL_DATA_DIR": str(tmp_path), "CRAWL_REDIS_URL": redis_url, "CRAWL_SHARDS": "1",
        "CRAWL_ALLOWED_NETWORKS": "127.0.0.0/8", "CRAWL_DEFAULT_DELAY": str(DELAY),
        "CRAWL_DELAY_MARGIN": "0", "CRAWL_DISPATCH_LOOKAHEAD": "0",
        "CRAWL_THROTTLE_SECONDS": "0.5", "CRAWL_URLS_PER_LEASE": "4", "CRAWL_FETCH_TIMEOUT": "5"})
    ctx = Context(settings)
    mark_alive(ctx)  # the frontier is whole: nothing to rebuild from a database
    return ctx


def test_a_hosts_urls_are_asked_a_delay_apart_and_those_not_asked_come_back(
        ctx: Context, server: int) -> None:
    origin = f"http://127.0.0.1:{server}"
    ctx.robots.save({origin: RobotsPolicy(404, "")})  # allow all
    urls = [f"{origin}/{n}" for n in range(6)]
    pages, batches = fetch_until_idle(ctx, urls)
    # the first lease holds /0../3; /2 answers 503: /3 is not asked and goes back with /2
    assert [lease.url for lease in batches[0]] == urls[:4]
    assert [lease.url for lease in batches[1]] == [urls[3], urls[4], urls[5], urls[2]]
    log = sorted(_Log.log, key=lambda entry: entry[1])
    assert [path for path, _, _ in log[:3]] == ["/0", "/1", "/2"]
    assert sorted(path for path, _, _ in log[3:]) == ["/2", "/3", "/4", "/5"]
    for (_, _, ended), (_, started, _) in zip(log, log[1:], strict=False):
        assert started >= ended + DELAY  # one request at a time, a delay apart
    fetched = sorted(p.url for p in pages if p.status == "fetched")
    assert fetched == urls and len(batches) < len(urls)
    assert ctx.frontier.stats(time.time())[0].urls_queued == 0
