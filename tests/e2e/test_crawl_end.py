"""A crawl run until idle ends when its work ends: the last host, whose robots.txt answers
503, is left for later (reported with its time), and the next crawl asks it again at that
time, not earlier, and crawls it once robots.txt answers 200. Each crawl's tail after its
last request is at most CRAWL_IDLE_HORIZON and STOP seconds (docs/settings.md). Judged from
the servers' logs."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from crawlapp.core.urls import host_of
from tests.conftest import crawl_env
from tests.e2e.helpers import Answer, ScriptedHost, crawlctl, serving
from testweb.server import start_in_background
from testweb.serverlog import fetched_urls, load
from testweb.site import Web, WebSpec

pytestmark = pytest.mark.e2e
DELAY = 0.3
RETRY = 30.0  # CRAWL_ROBOTS_RETRY: past the rest of the first crawl (slow on a busy machine)
HORIZON = 2.0  # of the first crawl
HTML = {"Content-Type": "text/html"}
PAGES = ["/", "/a", "/b"]
STOP = 5.0  # seconds a crawl may take past CRAWL_IDLE_HORIZON to see it is idle and stop


def _robots_down_once(path: str, before: int) -> Answer:
    """robots.txt answers 503 the first time, then allows everything; / links to /a and /b."""
    if path == "/robots.txt":
        if before == 0:
            return 503, HTML, b"down for maintenance"
        return 200, {"Content-Type": "text/plain"}, b"User-agent: *\nAllow: /\n"
    if path == "/":
        return 200, HTML, b"<a href='/a'>a</a><a href='/b'>b</a>"
    return 200, HTML, f"<p>page {path}</p>".encode()


def test_a_host_whose_robots_txt_fails_is_left_for_the_next_crawl(tmp_path: Path,
                                                                  redis_url: str) -> None:
    env = crawl_env(tmp_path, redis_url, CRAWL_DEFAULT_DELAY=str(DELAY),
                    CRAWL_ROBOTS_RETRY=str(RETRY), CRAWL_IDLE_HORIZON=str(HORIZON))
    down = ScriptedHost(_robots_down_once)
    log = str(tmp_path / "requests.jsonl")
    spec = WebSpec(hosts=2, pages_per_host=3, port=0, crawl_delay_every=0)
    with start_in_background(Web(spec), log) as server, \
            serving({"127.0.3.21": down}) as bases:
        web = server.web
        late = bases["127.0.3.21"]
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("\n".join([*web.seeds(), f"{late}/"]) + "\n")
        first = crawlctl(env, "crawl", "--seeds", str(seeds), "--until-idle", timeout=120)
        first_ended = time.time()
        assert first.returncode == 0, first.stdout + first.stderr
        stats = json.loads(crawlctl(env, "stats", "--json").stdout)
        hosts = json.loads(crawlctl(env, "hosts", "--errors", "--json").stdout)
        asked_first = list(down.log)
        # With the default horizon, the host is due soon enough for the next crawl to wait.
        second = crawlctl({**env, "CRAWL_IDLE_HORIZON": "30"}, "crawl", "--until-idle",
                          timeout=120)
        second_ended = time.time()
        assert second.returncode == 0, second.stdout + second.stderr

    # The first crawl covered the test web and ended without waiting for the deferred host:
    # its robots.txt was asked once, and the crawl was over before it was due again.
    requests = load(log)
    assert set(fetched_urls(requests)) >= web.expected_pages(5)
    (robots_503,) = asked_first
    assert robots_503[0] == "/robots.txt" and robots_503[3] == 503
    assert first_ended < robots_503[2] + RETRY
    assert max(r.end for r in requests) < first_ended  # the second crawl asked it nothing
    first_tail = first_ended - max(max(r.end for r in requests), robots_503[2])
    assert first_tail <= HORIZON + STOP, f"the first crawl's tail: {first_tail:.1f} s"

    # ... and listed the host as deferred, with why and when it is asked again.
    name = host_of(f"{late}/")
    deferred = stats["hosts_deferred"][name]
    assert deferred["reason"] == "robots.txt answered 503"
    assert robots_503[2] + RETRY <= deferred["until"] <= robots_503[2] + RETRY + 1
    assert "1 host(s) deferred" in first.stdout
    assert f"{name}: robots.txt answered 503, asked again at " in first.stdout
    row = next(h for h in hosts if h["host"] == name)
    assert row["deferred"] == deferred["reason"] and row["until"] == deferred["until"]

    # The second crawl asked robots.txt again no earlier than that time, then the pages (and
    # the sitemap a robots.txt answer suggests), each once.
    later = down.log[len(asked_first):]
    assert later[0][0] == "/robots.txt" and later[0][3] == 200
    assert later[0][1] >= deferred["until"]
    assert sorted(path for path, _, _, _ in later[1:]) == sorted([*PAGES, "/sitemap.xml"])
    assert "deferred" not in second.stdout
    second_tail = second_ended - max(end for _, _, end, _ in later)
    assert second_tail <= 30 + STOP, f"the second crawl's tail: {second_tail:.1f} s"
