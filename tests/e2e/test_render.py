"""The render stage end to end: pages whose links only their scripts write are found with
CRAWL_RENDER and not without (those behind a cross-origin JSON fetch too); the scripts'
requests keep the host's politeness, images and other hosts are never asked for; another
allowed host keeps its own delay across the crawler's fetches and the renders' requests; a
page whose script never ends is cut at the time budget while the render worker lives on, and
a script still being answered then is cut before its host is asked again."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from crawlapp.adapters.browser.cdp import find_chromium
from tests.conftest import crawl_env, own_redis_url
from tests.e2e.helpers import crawl_web, crawlctl
from testweb.cases import SLOW_SCRIPT_SECONDS
from testweb.serverlog import (
    Request,
    fetched_urls,
    gap_violations,
    never_fetch_violations,
    overlaps,
    summary,
)
from testweb.site import Web, WebSpec

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(
    find_chromium() is None,
    reason="Chromium is not installed (`make install-render` installs it with apt)")]
DELAY = 0.3
# The judge allows a request 50 ms early: the test server notices a client that went
# away only at its next look (testweb/server.py PAUSE_CHECK), later still on a loaded machine,
# so an aborted request's logged end can trail the crawler's by a few tens of milliseconds.
SLACK = 0.05
BUDGET = 10.0  # a loaded machine renders slowly; the slow script (20 s) still runs past it
SPEC = WebSpec(hosts=1, pages_per_host=2, port=0, crawl_delay_every=0, render_cases=True)
ASSETS = urlsplit(Web(SPEC).case_urls()["assets"]).hostname or ""  # its port is the server's


BROWSER_CPU: dict[int, float] = {}  # browser process -> most CPU seconds read of it


def _tree_of(root: int) -> set[int]:
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        try:
            parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (ValueError, OSError):
            continue
    tree, grew = {root}, True
    while grew:
        more = {pid for pid, parent in parents.items() if parent in tree} - tree
        tree |= more
        grew = bool(more)
    return tree


def _read_browsers(crawl: subprocess.Popen[bytes]) -> None:
    """Every 0.1 s while the crawl runs, each browser process's own CPU (from /proc, not
    the crawler's figures), kept at its most: what the browsers used, however they ended."""
    tick = os.sysconf("SC_CLK_TCK")
    while crawl.poll() is None:
        for pid in _tree_of(crawl.pid):
            try:
                comm = Path(f"/proc/{pid}/comm").read_text()
                stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if "chrom" in comm:
                BROWSER_CPU[pid] = max(BROWSER_CPU.get(pid, 0.0),
                                       (int(stat[11]) + int(stat[12])) / tick)
        time.sleep(0.1)


def _crawl(tmp_path: Path, watch: bool = False, **extra: str
           ) -> tuple[Web, list[Request], str, dict[str, str]]:
    import redis

    redis_url = own_redis_url()
    redis.Redis.from_url(redis_url).flushdb()
    env = crawl_env(tmp_path, redis_url, CRAWL_DEFAULT_DELAY=str(DELAY), **extra)
    web, requests, output = crawl_web(tmp_path, env, SPEC,
                                      during=_read_browsers if watch else lambda crawl: None)
    return web, requests, output, env


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> tuple[Web, list[Request]]:
    web, requests, _, _ = _crawl(tmp_path_factory.mktemp("plain"))
    return web, requests


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory
             ) -> tuple[Web, list[Request], str, dict[str, str]]:
    return _crawl(tmp_path_factory.mktemp("rendered"), watch=True, CRAWL_RENDER="true",
                  CRAWL_RENDER_TIMEOUT=str(BUDGET), CRAWL_RENDER_STORE_RAW="true",
                  CRAWL_RENDER_OTHER_HOSTS=ASSETS)


def test_script_links_are_found_only_with_rendering(plain, rendered) -> None:  # type: ignore[no-untyped-def]
    web, requests = plain
    assert web.render_pages() and not set(web.render_pages()) & set(fetched_urls(requests))
    assert web.case_urls()["app-js"] not in fetched_urls(requests)
    web, requests, _, _ = rendered
    fetched = fetched_urls(requests)
    assert set(web.render_pages()) <= set(fetched)
    assert fetched[web.case_urls()["app"]] == 1  # rendered from the body the fetch got


def test_sub_requests_keep_politeness_and_the_guards(rendered) -> None:  # type: ignore[no-untyped-def]
    web, requests, _, _ = rendered
    verdict = summary(requests, web, DELAY, SLACK)
    assert verdict["gap_violations"] == 0 and verdict["overlaps"] == 0, verdict
    assert verdict["robots_first_violations"] == 0 and verdict["duplicate_fetches"] == 0
    assert never_fetch_violations(requests, web) == []  # no image, no other host
    app_js = [r for r in requests if r.url == web.case_urls()["app-js"]]
    assert len(app_js) == 1 and all("crawlapp" in r.ua for r in app_js)


def test_endless_script_is_cut_at_the_budget_worker_alive(rendered) -> None:  # type: ignore[no-untyped-def]
    web, _, output, env = rendered
    assert "starting it again" not in output
    stats = json.loads(crawlctl(env, "stats", "--json").stdout)["render"]
    assert stats["errors"] == {"timeout": 2}  # the endless script, the slow one
    assert stats["rendered"] == stats["pages"] - 2 >= 1
    assert stats["cpu_seconds"] > 0 and stats["refused"].get("other_host", 0) >= 1
    loop = json.loads(crawlctl(env, "page", "show", web.case_urls()["loop"], "--json").stdout)
    assert loop["status"] == "fetched" and not loop["rendered"]
    assert loop["render_error"] == "timeout"


def test_page_show_tells_a_rendered_page_both_bodies_and_delete_removes_them(rendered) -> None:  # type: ignore[no-untyped-def]
    web, _, _, env = rendered
    shown = crawlctl(env, "page", "show", web.case_urls()["app"], "--json", "--body")
    app = json.loads(shown.stdout)
    assert app["rendered"] is True and app["raw_storage_key"]
    assert app["raw_storage_key"] != app["storage_key"]
    assert all(f"/js/{k}.html" in app["body"] for k in (1, 2, 3))
    assert app["outbound_links"] >= 3
    deleted = crawlctl(env, "delete", web.case_urls()["app"], "--yes")
    assert "bodies removed 2" in deleted.stdout, deleted  # the rendered and the raw body


def test_a_request_still_running_at_the_budget_ends_before_its_host_goes_on(rendered) -> None:  # type: ignore[no-untyped-def]
    web, requests, _, _ = rendered
    slow = [r for r in requests if r.url == web.case_urls()["slow-js"]]
    assert len(slow) == 1 and slow[0].aborted, slow  # the client went away
    assert slow[0].end - slow[0].start < min(BUDGET, SLOW_SCRIPT_SECONDS - 5)  # at the budget
    host = [r for r in requests if r.host == slow[0].host]
    later = [r for r in host if r.start > slow[0].start]
    assert later, "the host was never asked again after its render timed out"
    assert min(r.start for r in later) >= slow[0].end + DELAY - SLACK
    assert overlaps(host) == [] and gap_violations(host, lambda h: DELAY, SLACK) == []


def test_another_allowed_host_keeps_its_delay_across_fetches_and_renders(rendered) -> None:  # type: ignore[no-untyped-def]
    web, requests, _, _ = rendered
    assets = [r for r in requests if urlsplit(r.url).hostname == ASSETS]
    delay = web.delay_for(assets[0].host, DELAY)
    assert delay > DELAY  # its robots.txt's Crawl-delay
    rendered_asks = [r for r in assets if r.path.startswith("/api/routes-")]
    crawled = [r for r in assets if r.path.startswith("/docs/")]
    assert rendered_asks and len(crawled) == 12  # asked by renders, and crawled itself
    # The renders asked it while it was being crawled: between two of the crawler's fetches.
    assert any(crawled[0].start < r.start < crawled[-1].start for r in rendered_asks)
    assert overlaps(assets) == [] and gap_violations(assets, lambda h: delay, SLACK) == []


def test_routes_behind_a_cross_origin_fetch_are_found(rendered) -> None:  # type: ignore[no-untyped-def]
    web, requests, _, _ = rendered
    assert set(web.cross_origin_pages()) <= set(fetched_urls(requests))


def test_render_cpu_and_the_crawls_memory_count_the_browser(rendered) -> None:  # type: ignore[no-untyped-def]
    _, _, output, env = rendered
    stats = json.loads(crawlctl(env, "stats", "--json").stdout)["render"]
    browsers = sum(BROWSER_CPU.values())
    assert browsers > 0.5, BROWSER_CPU
    # The browser's own processes (read from outside, a lower bound) and the worker driving
    # it: the stage's figure has them all, and not much more.
    assert 0.9 * browsers <= stats["cpu_seconds"] <= 1.5 * browsers + 2.0, (stats, browsers)
    print(f"render CPU: stats {stats['cpu_seconds']:.2f} s, browser processes {browsers:.2f} s")
    found = re.search(r"peak memory of the crawl's processes (\d+) MiB \(PSS: (.*)\)", output)
    assert found, output
    shares = dict(part.rsplit(" ", 1) for part in found[2].split(", "))
    assert int(shares["browser"]) >= 50 and {"crawl", "render-worker"} <= shares.keys()
    assert int(found[1]) >= sum(map(int, shares.values())) - len(shares)  # rounding
