"""Fault etiquette as the servers see it: a host with a few broken pages is still crawled at
its allowed rate; a 429 without Retry-After throttles its host, doubling; a robots.txt that
answers 503 defers its host, and is asked again."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from tests.conftest import crawl_env
from tests.e2e.helpers import Answer, ScriptedHost, crawlctl, serving

pytestmark = pytest.mark.e2e
HTML = {"Content-Type": "text/html"}
DELAY = 0.8  # the 0.05 s CRAWL_DELAY_MARGIN is 6 % of it
PAGES = 30


def _robots(path: str) -> Answer | None:
    return (200, {"Content-Type": "text/plain"}, b"User-agent: *\nAllow: /\n") \
        if path == "/robots.txt" else None


def _broken_pages(path: str, before: int) -> Answer:
    """The busiest host: PAGES pages, one always 500, one 503 with Retry-After: 1 once."""
    if (robots := _robots(path)) is not None:
        return robots
    if path == "/":
        links = "".join(f"<a href='/p/{i}'>{i}</a>" for i in range(PAGES))
        return 200, HTML, f"<a href='/e/500'>x</a><a href='/e/flaky'>y</a>{links}".encode()
    if path == "/e/500":
        return 500, HTML, b"broken"
    if path == "/e/flaky" and before == 0:
        return 503, {**HTML, "Retry-After": "1"}, b"busy"
    return 200, HTML, f"<p>page {path}</p>".encode()


def _throttling(path: str, before: int) -> Answer:
    """A host answering /slow with 429 and no Retry-After, twice."""
    if (robots := _robots(path)) is not None:
        return robots
    if path == "/":
        return 200, HTML, b"<a href='/slow'>s</a><a href='/a'>a</a><a href='/b'>b</a>"
    if path == "/slow" and before < 2:
        return 429, HTML, b"too many requests"
    return 200, HTML, f"<p>page {path}</p>".encode()


def _robots_down_once(path: str, before: int) -> Answer:
    if path == "/robots.txt" and before == 0:
        return 503, HTML, b"down for maintenance"
    if (robots := _robots(path)) is not None:
        return robots
    return 200, HTML, f"<p>page {path}</p>".encode()


def test_broken_pages_a_throttling_host_and_a_robots_txt_down(tmp_path: Path,
                                                               redis_url: str) -> None:
    hosts = {"127.0.3.11": ScriptedHost(_broken_pages), "127.0.3.12": ScriptedHost(_throttling),
             "127.0.3.13": ScriptedHost(_robots_down_once)}
    env = crawl_env(tmp_path, redis_url, CRAWL_DEFAULT_DELAY=str(DELAY),
                    CRAWL_THROTTLE_SECONDS="1", CRAWL_ROBOTS_RETRY="1.5")
    with serving(hosts) as bases:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("".join(f"{base}/\n" for base in bases.values()))
        done = crawlctl(env, "crawl", "--seeds", str(seeds), "--until-idle")
    assert done.returncode == 0, done.stdout + done.stderr
    broken, throttling, robots_down = (sorted(h.log, key=lambda r: r[1]) for h in hosts.values())

    # One host at a time, the delay apart, on every host.
    for log in (broken, throttling, robots_down):
        assert all(b[1] - a[2] >= DELAY for a, b in itertools.pairwise(log)), log

    # The broken page is tried 1 + CRAWL_MAX_RETRIES times, never twice in a row: the
    # host's other pages go between, and the host keeps its rate.
    tries = [i for i, r in enumerate(broken) if r[0] == "/e/500"]
    assert len(tries) == 3 and all(b - a > 1 for a, b in itertools.pairwise(tries)), broken
    assert [r[3] for r in broken if r[0] == "/e/flaky"] == [503, 200]
    flaky = next(i for i, r in enumerate(broken) if r[0] == "/e/flaky")
    assert broken[flaky + 1][1] - broken[flaky][2] >= 1.0  # its Retry-After
    # robots.txt, /sitemap.xml, /, the pages, /e/500 three times, /e/flaky twice
    assert len(broken) == 3 + PAGES + 3 + 2
    floor = len(broken) * DELAY
    span = broken[-1][2] - broken[0][1]
    assert span <= 1.15 * floor, (span, floor)

    # 429 without Retry-After: the host waits CRAWL_THROTTLE_SECONDS, then twice that.
    throttled = [i for i, r in enumerate(throttling) if r[3] == 429]
    assert len(throttled) == 2 and [r[3] for r in throttling if r[0] == "/slow"] == [429, 429, 200]
    waits = [throttling[i + 1][1] - throttling[i][2] for i in throttled]
    assert waits[0] >= 1.0 and waits[1] >= 2.0, throttling

    # robots.txt 503: the host is deferred CRAWL_ROBOTS_RETRY, then robots.txt asked again.
    assert [r[:1] + r[3:] for r in robots_down[:3]] == [
        ("/robots.txt", 503), ("/robots.txt", 200), ("/", 200)]
    assert robots_down[1][1] - robots_down[0][2] >= 1.5
