"""The render stage's sub-request answers on the real Redis: an origin whose robots.txt the
crawl has not learned yet has it asked first, once, in its host's turn."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx

from crawlapp.adapters.browser.renderer import HostSlots
from crawlapp.adapters.context import Context
from crawlapp.adapters.redis.local import RedisServer
from crawlapp.core.records import Fetched, Link, Status
from crawlapp.core.settings import load_settings
from crawlapp.stages.rendering import _Answers, _learned_robots
from tests.loopback import with_longest_stall
from tests.mock_web import mock_fetcher, site

CDN = "http://cdn.test"


def _asked(tmp_path: Path, redis_url: str, robots: tuple[int, dict[str, str], bytes]
           ) -> tuple[Context, _Answers, list[str], list[object]]:
    """Two sub-requests to CDN at once, one of them under a path its robots.txt disallows:
    the context, the answers, the URLs the server was asked and what each request got."""
    ctx = Context(load_settings({"CRAWL_DATA_DIR": str(tmp_path), "CRAWL_REDIS_URL": redis_url,
                                 "CRAWL_RENDER_OTHER_HOSTS": "cdn.test"}))
    answers_of = site({f"{CDN}/robots.txt": robots,
                       f"{CDN}/api/a.json": (200, {"content-type": "application/json"}, b"{}")})
    asked: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        asked.append(str(request.url))
        return answers_of(request)

    answers = _Answers(ctx, mock_fetcher(handler), {}, HostSlots({}, lambda host: 0.0))

    async def both() -> list[object]:
        deadline = time.time() + 10
        return list(await asyncio.gather(answers.answer(f"{CDN}/api/a.json", None, deadline),
                                         answers.answer(f"{CDN}/private/b.json", None, deadline)))

    return ctx, answers, asked, asyncio.run(both())


def test_an_unknown_robots_txt_is_asked_first_then_kept_and_recorded(tmp_path: Path,
                                                                      redis_url: str) -> None:
    ctx, answers, asked, got = _asked(tmp_path, redis_url,
                                      (200, {}, b"User-agent: *\nDisallow: /private\n"))
    assert asked == [f"{CDN}/robots.txt", f"{CDN}/api/a.json"]  # once, before the others
    assert isinstance(got[0], Fetched) and got[0].status == 200 and got[1] == "robots"
    assert ctx.robots.load([CDN])[CDN] is None  # cached once the batch is rendered
    records = _learned_robots(ctx, answers.learned)
    policy = ctx.robots.load([CDN])[CDN]
    assert policy is not None and not policy.allowed(f"{CDN}/private/c", "crawlapp")
    assert [(r.status, r.url, r.links) for r in records] == [
        (Status.ROBOTS, f"{CDN}/robots.txt", [Link(f"{CDN}/sitemap.xml")])]
    assert records[0].robots is not None and records[0].raw_gz  # stored as the fetch stage's


def test_a_robots_txt_that_gives_no_answer_refuses_the_origin_for_the_batch(
        tmp_path: Path, redis_url: str) -> None:
    ctx, answers, asked, got = _asked(tmp_path, redis_url, (503, {}, b"busy"))
    assert asked == [f"{CDN}/robots.txt"] and got == ["robots_unknown", "robots_unknown"]
    assert answers.learned == [] and _learned_robots(ctx, answers.learned) == []
    assert ctx.robots.load([CDN])[CDN] is None  # left to the fetch stage, which tries again


def test_a_check_redis_cannot_answer_refuses_the_request_without_stalling_the_loop(
        tmp_path: Path) -> None:
    """Redis stopped under a render: the robots.txt and denylist read is tried again for the
    ride-out in the loop's executor (the browser's loop goes on), then the request is
    refused as 'redis' and counted a fault (the page is then not taken for rendered)."""
    server = RedisServer()
    ctx = Context(load_settings({"CRAWL_DATA_DIR": str(tmp_path),
                                 "CRAWL_REDIS_URL": f"{server.start()}/0",
                                 "CRAWL_REDIS_RIDE_OUT": "1"}))
    asked: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        asked.append(str(request.url))
        return httpx.Response(200)

    answers = _Answers(ctx, mock_fetcher(handler), {}, HostSlots({}, lambda host: 0.0))
    server.stop()

    got, longest_gap = asyncio.run(with_longest_stall(
        answers.answer(f"{CDN}/a.js", None, time.time() + 10)))
    assert (got, answers.faults, asked) == ("redis", 1, [])
    # the read riding out on the loop would stall it the whole ride-out (1 s) at least; a busy
    # test machine delays a tick by tenths of a second
    assert longest_gap < 1.0
