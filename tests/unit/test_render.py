"""The render stage's pure parts: which pages are rendered, which sub-requests are refused
before any lookup, one request at a time per host at its delay, the rendered page record."""

from __future__ import annotations

import asyncio
import gzip
import time
from dataclasses import replace

import pytest

from crawlapp.adapters.browser.renderer import (
    HostSlots,
    Rendered,
    Renderer,
    _Tab,
    browser_headers,
    refusal,
)
from crawlapp.core.app_shell import MIN_TEXT, is_shell, shell_hints
from crawlapp.core.records import Fetched, Handover, Lease, Link, Page, Status
from crawlapp.core.render_rule import render_reason, shares_slots, wants_render
from crawlapp.core.settings import load_settings
from crawlapp.observe.stats import render_summary
from crawlapp.stages.rendering import SubresourceCache, apply_render

HTML = "text/html; charset=utf-8"
TEXT = " ".join(["word"] * 80)
SHELL = (b'<html><head><script src="/static/main.3f2a.js"></script></head><body>'
         b'<noscript>You need to enable JavaScript to run this app.</noscript>'
         b'<div id="root"></div></body></html>')


@pytest.mark.parametrize(("body", "hints"), [
    (SHELL, ["little_text", "noscript", "app_root", "bundles"]),
    (b'<html><body><div id="app"></div><script>start()</script></body></html>',
     ["little_text", "app_root"]),
    (b"<html><body><app-root></app-root><script src=/a.js></script></body></html>",
     ["little_text", "app_root", "bundles"]),
    (f'<html><body><div id="root"><p>{TEXT}</p></div><script src="/a.js"></script>'
     f"</body></html>".encode(), ["app_root", "bundles"]),
    (b"<html><body><p>Short page, no scripts.</p><noscript>x</noscript></body></html>", []),
    (b"<html><body><script>var x = 1;</script><p>tiny</p></body></html>", ["little_text"]),
    (b"", []),
])
def test_shell_hints(body: bytes, hints: list[str]) -> None:
    assert shell_hints(body, HTML) == hints


def test_a_shell_has_little_text_and_another_hint() -> None:
    assert is_shell(["little_text", "noscript"]) and is_shell(["little_text", "bundles"])
    assert not is_shell(["little_text"])  # a short page with a script is no app
    assert not is_shell(["app_root", "bundles", "noscript"])  # its text is there already


def test_render_reason_host_patterns_first_then_shell() -> None:
    plain = f"<html><body><p>{TEXT}</p></body></html>".encode()
    patterns = ("app.example.com", "*.spa.test")
    assert render_reason("app.example.com", plain, HTML, patterns, MIN_TEXT) == "host"
    assert render_reason("x.spa.test:8080", plain, HTML, patterns, MIN_TEXT) == "host"
    assert render_reason("example.com", plain, HTML, patterns, MIN_TEXT) is None
    assert render_reason("example.com", SHELL, HTML, patterns, MIN_TEXT) == "shell"
    assert render_reason("app.example.com", SHELL, "application/pdf", patterns, MIN_TEXT) is None
    assert render_reason("example.com", SHELL, HTML, (), min_text=0) is None


def test_wants_render_only_with_the_setting_and_a_fetched_page() -> None:
    page = Page(host="example.com", status=Status.FETCHED, content_type=HTML)
    assert wants_render(load_settings({}), page, SHELL) is None  # off by default
    on = load_settings({"CRAWL_RENDER": "true"})
    assert wants_render(on, page, SHELL) == "shell"
    assert wants_render(on, replace(page, not_modified=True), SHELL) is None
    assert wants_render(on, replace(page, status=Status.FAILED), SHELL) is None


@pytest.mark.parametrize(("url", "kind", "method", "reason"), [
    ("http://a.test/app.js", "Script", "GET", None),
    ("http://a.test/api/x.json", "XHR", "GET", None),
    ("http://a.test/logo.png", "Image", "GET", "type"),
    ("http://a.test/f.woff2", "Font", "GET", "type"),
    ("http://a.test/v.mp4", "Media", "GET", "type"),
    ("http://a.test/favicon.ico", "Other", "GET", "type"),
    ("http://a.test/api", "Fetch", "POST", "method"),
    ("ftp://a.test/x", "Script", "GET", "scheme"),
    ("http://b.test/x.js", "Script", "GET", "other_host"),
    ("http://a.test:8080/x.js", "Script", "GET", "other_host"),  # another port, another host
    ("http://cdn.static.test/x.js", "Script", "GET", None),
    ("http://user@a.test/x.js", "Script", "GET", None),
])
def test_sub_request_refusals(url: str, kind: str, method: str, reason: str | None) -> None:
    assert refusal(url, kind, method, "a.test", ("*.static.test",)) == reason


def test_host_slots_one_at_a_time_each_a_delay_after_the_last_end() -> None:
    spans: list[tuple[float, float]] = []

    async def call() -> Fetched:
        start = time.time()
        await asyncio.sleep(0.05)
        spans.append((start, time.time()))
        return Fetched("http://a.test/", 200, started=start, ended=time.time())

    async def main() -> list[Fetched | None]:
        first = time.time() + 0.1
        slots = HostSlots({"a.test": first}, lambda host: 0.1)
        far = time.time() + 10
        results = await asyncio.gather(*(slots.run("a.test", call, far) for _ in range(3)))
        late = await slots.run("a.test", call, time.time())  # its turn comes after the deadline
        assert spans[0][0] >= first
        return [*results, late]

    results = asyncio.run(main())
    assert results[-1] is None and all(results[:3])
    assert len(spans) == 3
    for (_, end), (start, _) in zip(spans, spans[1:], strict=False):
        assert start - end >= 0.1


def test_host_slots_a_cancelled_request_ends_its_turn_when_cancelled() -> None:
    async def endless() -> Fetched:
        await asyncio.sleep(60)
        raise AssertionError("not cancelled")

    async def main() -> tuple[float, float]:
        slots = HostSlots({}, lambda host: 0.5)
        task = asyncio.create_task(slots.run("a.test", endless, time.time() + 10))
        await asyncio.sleep(0.05)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return time.time(), slots.next_time["a.test"]

    cancelled, next_time = asyncio.run(main())
    assert cancelled <= next_time <= cancelled + 0.5 + 0.01


class _Turns:
    """A key's turns in memory: who holds it, when it is next free."""

    def __init__(self, free_at: float) -> None:
        self.free_at, self.held = free_at, False
        self.given: list[float] = []

    async def take(self, host: str, deadline: float) -> tuple[str, float] | None:
        assert not self.held
        self.held = True
        return "token", self.free_at

    async def give_back(self, host: str, token: str, next_time: float) -> None:
        assert self.held and token == "token"
        self.held, self.free_at = False, next_time
        self.given.append(next_time)


def test_host_slots_hold_the_key_and_wait_for_its_time() -> None:
    async def call() -> Fetched:
        assert turns.held
        return Fetched("http://b.test/", 200, started=time.time(), ended=time.time())

    free_at = time.time() + 0.2
    turns = _Turns(free_at)
    slots = HostSlots({}, lambda host: 0.3, turns)

    async def main() -> tuple[float, Fetched | None, Fetched | None]:
        started = free_at
        first = await slots.run("b.test", call, time.time() + 5)
        # Another host of the key (CRAWL_POLITENESS_KEY=domain): the key's time is too late.
        late = await slots.run("c.b.test", call, time.time() + 0.1)
        return started, first, late

    started, first, late = asyncio.run(main())
    assert first is not None and first.started >= started and late is None
    assert not turns.held and turns.given[0] >= first.ended + 0.3
    assert turns.given[1] == turns.given[0]  # not asked: the key's time stands


def test_a_failing_answer_refuses_its_request_and_says_so(caplog: pytest.LogCaptureFixture
                                                          ) -> None:
    async def broken(url: str, origin: str | None) -> Fetched:
        raise ConnectionError("the store is away")

    tab = _Tab("http://a.test/", b"", HTML, broken, "a.test", (), Rendered(), pending=1)
    paused = {"requestId": "1", "resourceType": "Script",
              "request": {"url": "http://a.test/app.js", "method": "GET", "headers": {}}}
    asyncio.run(Renderer("chromium", "ua", 1, 1 << 30)._paused(None, tab, paused))
    assert tab.result.refused == {"error": 1} and tab.pending == 0
    assert "the store is away" in caplog.text


def test_browser_headers_as_the_server_sent_them_but_framing_and_coding() -> None:
    got = Fetched("http://b.test/a.json", 200, headers={"content-type": "application/json"},
                  response_headers="Content-Type: application/json\r\nContent-Encoding: gzip\r\n"
                                   "Content-Length: 12\r\nAccess-Control-Allow-Origin: *\r\n"
                                   "Vary: Origin\r\nVary: Accept\r\nConnection: keep-alive")
    assert browser_headers(got) == [
        {"name": "Content-Type", "value": "application/json"},
        {"name": "Access-Control-Allow-Origin", "value": "*"},
        {"name": "Vary", "value": "Origin"}, {"name": "Vary", "value": "Accept"}]
    made = Fetched("http://b.test/x", 200, headers={"etag": "\"1\""})
    assert browser_headers(made) == [{"name": "etag", "value": "\"1\""},
                                     {"name": "Content-Type", "value": "application/octet-stream"}]


def test_fetches_and_renders_share_slots_with_a_wider_key_or_other_hosts() -> None:
    assert not shares_slots(load_settings({}))
    assert not shares_slots(load_settings({"CRAWL_RENDER": "true"}))
    assert shares_slots(load_settings({"CRAWL_RENDER": "true", "CRAWL_RENDER_OTHER_HOSTS": "b.test"}))
    assert not shares_slots(load_settings({"CRAWL_RENDER_OTHER_HOSTS": "b.test"}))
    assert shares_slots(load_settings({"CRAWL_POLITENESS_KEY": "domain"}))


def test_apply_render_swaps_the_body_and_keeps_the_raw_one_on_request() -> None:
    page = Page(url="http://a.test/", status=Status.FETCHED,
                content_type="text/html; charset=latin-1", body_gz=gzip.compress(SHELL),
                content_hash="raw-hash", content_length=len(SHELL))
    done = apply_render(page, Rendered(html="<html><body><a href=/x>é</a></body></html>"), True)
    assert done.rendered and done.content_type == "text/html; charset=utf-8"
    assert gzip.decompress(done.body_gz or b"").decode() == (
        "<html><body><a href=/x>é</a></body></html>")
    assert done.raw_gz == page.body_gz and done.raw_hash == "raw-hash"
    assert done.content_hash != "raw-hash"
    failed = apply_render(page, Rendered(error="timeout"), True)
    assert failed.render_error == "timeout" and not failed.rendered
    assert failed.body_gz == page.body_gz and failed.raw_gz is None
    assert apply_render(page, Rendered(html="<html></html>"), False).raw_gz is None
    assert not page.rendered and page.raw_gz is None  # the record handed in is left as it was


def test_handover_round_trips_the_wire() -> None:
    lease = Lease(3, "a.test", "tok", "http://a.test/", 2, 12.5)
    page = Page(url="http://a.test/", status=Status.FETCHED, body_gz=b"\x1f",
                links=[Link("http://a.test/x", "X", False, True)])
    handover = Handover(page, lease, 99.5, 1)
    assert Handover.from_wire(handover.to_wire()) == handover


def test_subresource_cache_keeps_successes_only() -> None:
    cache = SubresourceCache()
    cache.put(Fetched("http://a.test/app.js", 200, body=b"x"))
    cache.put(Fetched("http://a.test/missing.js", 404))
    cache.put(Fetched("http://a.test/slow.js", error="timeout"))
    assert cache.get("http://a.test/app.js") is not None
    assert cache.get("http://a.test/missing.js") is None and cache.get("http://a.test/slow.js") is None
    # A cross-origin answer serves the pages of the origin it was asked for (CORS names it).
    cache.put(Fetched("http://b.test/a.json", 200, body=b"[]"), "http://a.test")
    assert cache.get("http://b.test/a.json", "http://a.test") is not None
    assert cache.get("http://b.test/a.json", "http://c.test") is None
    assert cache.get("http://b.test/a.json") is None


def test_render_summary() -> None:
    counts = {"render:pages": 4, "render:rendered": 3, "render:error_timeout": 1,
              "render:ms": 8000, "render:subrequests": 6, "render:cached": 2,
              "render:robots_learned": 1, "render:refused_type": 5,
              "render:refused_other_host": 1, "pages:fetched": 9}
    summary = render_summary(counts, {"render": 3.5, "fetch": 1.0})
    assert summary == {"pages": 4, "rendered": 3, "errors": {"timeout": 1}, "lease_lost": 0,
                       "seconds": 8.0, "seconds_per_page": 2.0, "cpu_seconds": 3.5,
                       "subrequests": 6, "cached": 2, "robots_learned": 1,
                       "refused": {"type": 5, "other_host": 1}}
    assert render_summary({}, {})["seconds_per_page"] == 0.0


def test_render_settings() -> None:
    settings = load_settings({"CRAWL_RENDER_HOSTS": "App.Example.com, *.spa.test",
                              "CRAWL_RENDER_OTHER_HOSTS": "cdn.test"})
    assert not settings.render
    assert settings.render_hosts == ("app.example.com", "*.spa.test")
    assert settings.render_other_hosts == ("cdn.test",)
    from crawlapp.core.settings import SettingsError

    with pytest.raises(SettingsError, match="CRAWL_RENDER_HOSTS"):
        load_settings({"CRAWL_RENDER_HOSTS": "not a host"})
    with pytest.raises(SettingsError, match="CRAWL_RENDER_TIMEOUT"):
        load_settings({"CRAWL_RENDER": "true", "CRAWL_RENDER_TIMEOUT": "200",
                       "CRAWL_LEASE_SECONDS": "100"})


def test_a_missing_browser_leaves_the_page_unrendered() -> None:
    from crawlapp.adapters.browser.renderer import Renderer

    async def refuse(url: str) -> str:
        return "never asked"

    renderer = Renderer("/nonexistent/chromium", "crawlapp", 10, 1 << 30)
    rendered = asyncio.run(renderer.render("http://a.test/", SHELL, HTML, refuse, 5.0))
    assert rendered.html is None and rendered.error == "browser"


@pytest.mark.parametrize("render", ["true", "false"])
def test_crawl_starts_a_render_worker_only_with_rendering_on(render: str) -> None:
    import json
    import os
    import subprocess
    import sys

    script = ("import json; from crawlapp.adapters.context import Context; "
              "from crawlapp.core.settings import get_settings; "
              "from crawlapp.ops.runner import child_commands; "
              "print(json.dumps(child_commands(Context(get_settings()), 2)))")
    env = {**os.environ, "CRAWL_RENDER": render, "CRAWL_SHARDS": "3", "CRAWL_RENDER_PROCESSES": "2"}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                         check=True).stdout
    commands = json.loads(out)
    if render == "false":
        assert "render-worker" not in commands
        return
    worker = commands["render-worker"]
    assert worker[worker.index("-Q") + 1] == "render.0,render.1,render.2"
    assert worker[worker.index("-P") + 1] == "prefork" and worker[worker.index("-c") + 1] == "2"
