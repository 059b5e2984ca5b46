"""Politeness as the server sees it: under CPU load, with Retry-After and Crawl-delay."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.conftest import crawl_env
from tests.e2e.helpers import LoggedSite, crawlctl
from testweb.server import start_in_background
from testweb.serverlog import fetched_urls, load, summary
from testweb.site import Web, WebSpec

pytestmark = pytest.mark.e2e
BURN = "import time\nend = time.time() + 120\nwhile time.time() < end: pass\n"


def test_no_gap_shorter_than_the_delay_while_the_cpu_is_busy(tmp_path: Path,
                                                             redis_url: str) -> None:
    delay = 0.5
    env = crawl_env(tmp_path, redis_url, CRAWL_DEFAULT_DELAY=str(delay))
    log = str(tmp_path / "requests.jsonl")
    burners = [subprocess.Popen([sys.executable, "-c", BURN]) for _ in range(3)]
    try:
        with start_in_background(Web(WebSpec(hosts=8, pages_per_host=6, port=0,
                                             crawl_delay_every=4)), log) as server:
            seeds = tmp_path / "seeds.txt"
            seeds.write_text("\n".join(server.web.seeds()))
            done = crawlctl(env, "crawl", "--seeds", str(seeds), "--until-idle")
            assert done.returncode == 0, done.stdout + done.stderr
    finally:
        for proc in burners:
            proc.kill()
    requests = load(log)
    verdict = summary(requests, server.web, delay)
    assert verdict["gap_violations"] == 0 and verdict["overlaps"] == 0, verdict
    crawl_delay_hosts = [h for h in server.web.hosts() if server.web.delay_for(h, delay) == 2.0]
    assert len(crawl_delay_hosts) == 2
    assert server.web.expected_pages(5) <= set(fetched_urls(requests))


class _Site(LoggedSite):
    """A one-host site: robots.txt asks for Crawl-delay 100, /busy answers 429 once."""

    def __init__(self) -> None:
        super().__init__()
        self.busy_once = True

    def answer(self, path: str) -> tuple[int, dict[str, str], bytes]:
        html = {"Content-Type": "text/html"}
        if path == "/robots.txt":
            return 200, {"Content-Type": "text/plain"}, b"User-agent: *\nCrawl-delay: 100\n"
        if path == "/":
            return 200, html, b"<a href='/busy'>b</a><a href='/a'>a</a><a href='/b'>b</a>"
        if path == "/busy" and self.busy_once:
            self.busy_once = False
            return 429, {"Retry-After": "2"}, b"slow down"
        return 200, html, f"<p>page {path}</p>".encode()


def test_retry_after_is_honoured_and_crawl_delay_is_capped(tmp_path: Path,
                                                           redis_url: str) -> None:
    site = _Site()
    server = ThreadingHTTPServer(("127.0.3.1", 0), site.handler())
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.3.1:{server.server_address[1]}"
    env = crawl_env(tmp_path, redis_url, CRAWL_DEFAULT_DELAY="0.2", CRAWL_MAX_CRAWL_DELAY="1")
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(base + "/\n")
    started = time.time()
    try:
        done = crawlctl(env, "crawl", "--seeds", str(seeds), "--until-idle")
    finally:
        server.shutdown()
    assert done.returncode == 0, done.stdout + done.stderr
    assert time.time() - started < 60  # the 100 s Crawl-delay was capped at 1 s
    log = sorted(site.log, key=lambda r: r[1])
    assert [r[0] for r in log].count("/busy") == 2
    gaps = [(b[1] - a[2], a) for a, b in zip(log, log[1:], strict=False)]
    assert all(gap >= 1.0 for gap, _ in gaps), gaps  # capped Crawl-delay, still above default
    after_429 = [gap for gap, prev in gaps if prev[3] == 429]
    assert after_429 and after_429[0] >= 2.0
    page = json.loads(crawlctl(env, "page", "show", base + "/busy", "--json").stdout)
    assert page["http_status"] == 200 and page["status"] == "fetched"
