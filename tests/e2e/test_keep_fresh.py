"""A crawl that keeps its collection fresh, end to end: `crawlctl crawl` without --until-idle
on a web whose pages change (testweb/changing.py), judged from the server's log: pages
fetched again with their validators, unchanged ones answered 304, changing ones fresher than
round robin would keep them in the same requests, new articles found within seconds, a
sitemap's lastmods acted on, politeness kept, and the crawl stopped by Ctrl-C; and started
again, going on with its schedule."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import crawl_env
from tests.e2e.helpers import CRAWLCTL, crawlctl, keep_fresh
from testweb.changing import ChangingSpec
from testweb.freshness import achieved_capacity, baselines, discovery, judge
from testweb.server import start_changing_in_background
from testweb.serverlog import load

pytestmark = pytest.mark.e2e
DELAY = 0.25
RUN = 75.0  # seconds of crawling
WINDOW = (35.0, RUN)  # judged: after the first pass and a few visits of each page
SPEC = ChangingSpec(hosts=3, pages_per_host=24, seed=3, duration=RUN + 60, min_interval=4,
                    max_interval=300, news_hosts=1, article_interval=4, sitemap_hosts=1,
                    dynamic_every=3)  # host 2 writes a token of each request into its pages


def test_a_crawl_without_until_idle_keeps_a_changing_web_fresh(tmp_path: Path,
                                                               redis_url: str) -> None:
    env = crawl_env(tmp_path, redis_url, CRAWL_DEFAULT_DELAY=str(DELAY),
                    CRAWL_RECRAWL_MIN_INTERVAL="1", CRAWL_RECRAWL_MAX_INTERVAL="120",
                    CRAWL_RECRAWL_FIRST_INTERVAL="6")
    web, t0, requests = keep_fresh(tmp_path, env, SPEC, RUN)
    stats = json.loads(crawlctl(env, "stats", "--json").stdout)
    verdict = judge(web, requests, t0, *WINDOW, delay=DELAY)
    assert (verdict.overlaps, verdict.gaps, verdict.disallowed) == (0, 0, 0)

    pages = [r for r in requests if re.fullmatch(r"/p/[0-9]+\.html", r.path)]
    visits = Counter(r.url for r in pages)
    assert len(visits) == SPEC.hosts * SPEC.pages_per_host
    assert sum(n >= 3 for n in visits.values()) >= len(visits) // 2  # fetched again and again
    again = [r for r in pages if r.status in (200, 304) and visits[r.url] > 1
             and web.validators(web.host_index(r.host) or 0)]
    assert sum(1 for r in again if r.inm or r.ims) >= 0.5 * len(again)
    assert Counter(r.status for r in pages)[304] > 0  # unchanged: no body sent again

    # fresher than round robin in the requests it made, within reach of the optimum
    capacity = achieved_capacity(web, requests, t0, *WINDOW)
    best = baselines(web, capacity, *WINDOW)
    assert verdict.pages.no_sitemap is not None and best.round_robin.no_sitemap is not None
    assert verdict.pages.no_sitemap > 0.9 * best.round_robin.no_sitemap, (verdict, best)

    found = discovery(web, requests, t0, 20.0, RUN)  # the articles of [20 s, RUN - 30 s]
    assert found.articles >= 3 and found.missed == 0, found
    assert found.median is not None and found.median < 12, found

    fresh = stats["freshness"]
    assert fresh["policy"] == "optimal" and 0 < fresh["estimated"] <= 1

    # its progress line a minute in (--progress 60 by default)
    lines = re.findall(r"(\d+) pages in 60 s \(.*/s\): (\d+) new, (\d+) again \((\d+) changed, "
                       r"(\d+) unchanged\), \d+ failed; \d+ fetched in all; \d+ URLs queued, "
                       r"\d+ batches in flight; freshness [\d.]+% estimated",
                       (tmp_path / "crawl.out").read_text())
    assert len(lines) == 1, (tmp_path / "crawl.out").read_text()
    asked, new, again, changed, unchanged = map(int, lines[0])
    assert asked > 100 and again > new and again >= changed + unchanged and unchanged > 0
    assert re.search(r"this run: \d+ pages in 7\d s", (tmp_path / "crawl.out").read_text())
    assert fresh["fetches"]["refresh"] > fresh["fetches"]["discovery"] > 0
    assert fresh["refreshes"]["made_due_by_sitemaps"] > 0

    # the dynamic host's pages that kept their version are seen unchanged, token or not
    dynamic = 2
    assert web.dynamic(dynamic) and fresh["refreshes"]["markup_only"] > 0
    kept = [r.url for r in pages if web.host_index(r.host) == dynamic and visits[r.url] >= 3
            and web.version(dynamic, r.path, RUN) == 0]
    assert kept
    for url in sorted(set(kept))[:3]:
        shown = json.loads(crawlctl(env, "page", "show", url, "--json").stdout)
        assert shown["changes"]["changes_seen"] == 0, shown


RESTART_SPEC = ChangingSpec(hosts=3, pages_per_host=16, seed=4, duration=120, min_interval=4,
                            max_interval=300, news_hosts=1, article_interval=4,
                            sitemap_hosts=1)
LEG = 35.0  # seconds of each crawl, before and after the restart


def test_a_crawl_stopped_and_started_again_goes_on_with_its_schedule(tmp_path: Path,
                                                                      redis_url: str) -> None:
    """Ctrl-C, then `crawlctl crawl` again on the same state: the pages are re-crawled on the
    schedule they had, with their validators, not discovered again; the hosts' politeness
    holds across the restart; the new articles of the pause are found."""
    env = crawl_env(tmp_path, redis_url, CRAWL_DEFAULT_DELAY=str(DELAY),
                    CRAWL_RECRAWL_MIN_INTERVAL="1", CRAWL_RECRAWL_MAX_INTERVAL="120",
                    CRAWL_RECRAWL_FIRST_INTERVAL="6")
    log = str(tmp_path / "requests.jsonl")
    stopped = restarted = 0.0
    with start_changing_in_background(RESTART_SPEC, log) as server:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("\n".join(server.seeds()) + "\n")
        for leg in ("first", "second"):
            if leg == "second":
                time.sleep(3)  # stopped a while: pages come due meanwhile
                restarted = time.time()
            with open(tmp_path / f"crawl-{leg}.out", "wb") as out:
                crawl = subprocess.Popen([*CRAWLCTL, "crawl", "--seeds", str(seeds)],
                                         env={**os.environ, **env}, stdout=out,
                                         stderr=subprocess.STDOUT)
            time.sleep(LEG)
            crawl.send_signal(signal.SIGINT)
            assert crawl.wait(60) in (0, 130, -signal.SIGINT), \
                (tmp_path / f"crawl-{leg}.out").read_text()
            stopped = stopped or time.time()
        web, t0 = server.web, server.t0
    requests = load(log)
    verdict = judge(web, requests, t0, 0.0, time.time() - t0, delay=DELAY)
    assert (verdict.overlaps, verdict.gaps, verdict.disallowed) == (0, 0, 0)
    pages = [r for r in requests if re.fullmatch(r"/p/[0-9]+\.html", r.path)]
    before = {r.url for r in pages if r.start < restarted}
    after = [r for r in pages if r.start >= restarted]
    assert len(before) == RESTART_SPEC.hosts * RESTART_SPEC.pages_per_host  # a first pass
    assert {r.url for r in after} <= before and len(after) >= len(before)  # re-crawled on
    validated = [r for r in after if web.validators(web.host_index(r.host) or 0)]
    assert validated and all(r.inm or r.ims for r in validated)  # as known pages, not new
    # the articles published from the first crawl's stop to 15 s before the second's: found
    published = {(web.netloc(a.host), a.path) for a in web.articles()
                 if stopped - t0 <= a.born <= restarted + LEG - 15 - t0}
    fetched = {(r.host, r.path) for r in requests if r.start >= restarted}
    assert published and published <= fetched, sorted(published - fetched)
