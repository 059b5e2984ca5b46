"""Rendering one page in headless Chromium, every request of it answered by the crawler.

The browser itself reaches no network: the page's document is the body the fetch stage got,
and each sub-request (script, XHR, frame, stylesheet) is paused by the DevTools Fetch
domain, judged by `refusal` and by the caller's `answer` (SSRF guard, robots.txt,
politeness), fetched by the crawler's own client and handed back, or failed. Images,
media and fonts are never fetched.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit

from crawlapp.adapters.browser.cdp import Browser, BrowserGone
from crawlapp.adapters.proctree import TreeCpu, tree_usage
from crawlapp.core import hostpatterns
from crawlapp.core.records import Fetched

log = logging.getLogger(__name__)
SKIPPED_TYPES = frozenset({"Image", "Media", "Font", "Ping", "Manifest", "CSPViolationReport",
                           "Prefetch", "Other", "TextTrack", "SignedExchange", "WebSocket", "EventSource"})
SETTLE_SECONDS = 0.5  # after the load event, the page is done once no request ran this long
CLOSE_SECONDS = 2.0
# Not handed to the browser: the connection's own (hop by hop), and the body's framing and
# coding, since the body handed over is decoded and whole.
DROPPED_HEADERS = frozenset({"connection", "keep-alive", "proxy-connection", "transfer-encoding",
                             "te", "trailer", "upgrade", "content-encoding", "content-length"})
OUTER_HTML = "document.documentElement ? document.documentElement.outerHTML : ''"
# A refusal, or the response to hand to the page.
Answer = Fetched | str
# Answers a request for a URL, with the Origin header the browser sent it with (a
# cross-origin request's: servers that allow a list of origins answer CORS to it), if any.
Answerer = Callable[[str, str | None], Awaitable[Answer]]


def refusal(url: str, resource_type: str, method: str, page_host: str,
            other_hosts: Iterable[str]) -> str | None:
    """Why a sub-request of a page on `page_host` (host[:port]) is refused before any lookup,
    or None. Pure.

    Images, media and fonts are not fetched; only GETs over http(s); other hosts only when
    they match one of the `other_hosts` patterns (host or *.domain)."""
    if resource_type in SKIPPED_TYPES:
        return "type"
    if method != "GET":
        return "method"
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "scheme"
    host = parts.netloc.rpartition("@")[2].lower()
    if host != page_host and hostpatterns.denied_by(host, other_hosts) is None:
        return "other_host"
    return None


class Turns(Protocol):
    """Turns of a politeness key shared with other processes (fetch workers, browsers)."""

    async def take(self, host: str, deadline: float) -> tuple[str, float] | None:
        """Hold `host`'s key: (a token, the key's next allowed time), or None when it could
        not be had by `deadline` (UNIX time)."""

    async def give_back(self, host: str, token: str, next_time: float) -> None:
        """Give the key back, free from `next_time`."""


class HostSlots:
    """One request at a time per host, each starting no earlier than the host's next time
    (the previous request's end plus the host's delay), and, with `turns`, holding its
    politeness key meanwhile (no earlier than the key's own next time either). A request
    cancelled (its render ended first) ends when it is cancelled: the host's next time
    counts from then."""

    def __init__(self, next_time: dict[str, float], delay_for: Callable[[str], float],
                 turns: Turns | None = None) -> None:
        self.next_time = dict(next_time)
        self.delay_for = delay_for
        self.turns = turns
        self._locks: dict[str, asyncio.Lock] = {}

    async def run(self, host: str, call: Callable[[], Awaitable[Fetched]], deadline: float
                  ) -> Fetched | None:
        """Await `call()` in the host's next turn; None (not called) if that turn comes after
        `deadline` (UNIX time)."""
        lock = self._locks.setdefault(host, asyncio.Lock())
        async with lock:
            start = self.next_time.get(host, 0.0)
            if start > deadline:
                return None
            turn = await self.turns.take(host, deadline) if self.turns is not None else None
            if self.turns is not None and turn is None:
                return None
            start = max(start, turn[1]) if turn is not None else start
            called = False
            try:
                if start > deadline:
                    return None
                if start > time.time():
                    await asyncio.sleep(start - time.time())
                called = True
                try:
                    return await call()
                finally:
                    self.next_time[host] = time.time() + self.delay_for(host)
            finally:
                if turn is not None and self.turns is not None:
                    await self.turns.give_back(host, turn[0], self.next_time[host] if called
                                               else turn[1])


def browser_headers(got: Fetched) -> list[dict[str, str]]:
    """The response's headers for the browser, as the server sent them (each repeated one on
    its own; CORS, caching and content type included) but those DROPPED_HEADERS. Pure."""
    pairs = [line.split(":", 1) for line in got.response_headers.split("\r\n") if ":" in line]
    if not pairs:  # an answer made without the wire's headers
        pairs = [[name, value] for name, value in got.headers.items()]
    headers = [{"name": name.strip(), "value": value.strip()} for name, value in pairs
               if name.strip().lower() not in DROPPED_HEADERS]
    if not any(h["name"].lower() == "content-type" for h in headers):
        headers.append({"name": "Content-Type", "value": "application/octet-stream"})
    return headers


@dataclass
class Rendered:
    """What rendering a page gave: its DOM as HTML, or why not; and its sub-requests."""

    html: str | None = None
    error: str | None = None
    fetched: int = 0
    refused: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0


@dataclass
class _Tab:
    url: str
    body: bytes
    content_type: str
    answer: Answerer
    page_host: str
    other_hosts: tuple[str, ...]
    result: Rendered
    loaded: asyncio.Event = field(default_factory=asyncio.Event)
    pending: int = 0
    last_activity: float = field(default_factory=time.monotonic)
    document_served: bool = False
    requests: set[asyncio.Task[None]] = field(default_factory=set)  # answering paused ones

    async def abort(self) -> None:
        """Cancel the requests still being answered and wait until each has ended (its
        connection closed), so that none outlives the render."""
        running = list(self.requests)
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)


class Renderer:
    """A browser kept across pages, started again after `recycle_after` pages, when its
    processes' memory passes `max_rss` bytes, or after a page ran out of time."""

    def __init__(self, path: str, user_agent: str, recycle_after: int, max_rss: int) -> None:
        self.path = path
        self.user_agent = user_agent
        self.recycle_after = recycle_after
        self.max_rss = max_rss
        self.browser: Browser | None = None
        self.pages = 0
        self.restarts = 0
        self.cpu = TreeCpu()  # of every browser started, however it ended
        self._tabs: dict[str, _Tab] = {}

    async def _ensure(self) -> Browser:
        if self.browser is None or self.browser.proc is None or \
                self.browser.proc.returncode is not None:
            await self.close()
            self.browser = Browser(self.path, self._event)
            await self.browser.start()
            self.pages = 0
        return self.browser

    async def close(self) -> None:
        for tab in list(self._tabs.values()):
            await tab.abort()
        if self.browser is not None:
            self.cpu.read(self.browser.pid)  # its processes' last reading before the kill
            await self.browser.close()
            self.browser = None
            self.restarts += 1
        self.cpu.read(None)
        self._tabs.clear()

    def cpu_seconds(self) -> float:
        """CPU seconds of every browser this renderer started, its processes gone included."""
        return self.cpu.read(self.browser.pid if self.browser else None)

    def usage(self) -> tuple[float, int]:
        """CPU seconds and resident bytes of the running browser's processes."""
        pid = self.browser.pid if self.browser else None
        return tree_usage(pid) if pid else (0.0, 0)

    async def render(self, url: str, body: bytes, content_type: str, answer: Answerer,
                     budget: float, other_hosts: tuple[str, ...] = ()) -> Rendered:
        """Load `url` with `body` as its document and return the DOM once the page has loaded
        and its requests have settled, or an error: 'timeout' once `budget` seconds are spent."""
        started = time.monotonic()
        result = Rendered()
        session: str | None = None
        target = ""
        broken = False
        try:
            browser = await self._ensure()
            async with asyncio.timeout(budget):
                target = (await browser.send("Target.createTarget", {"url": "about:blank"}))[
                    "targetId"]
                session = (await browser.send("Target.attachToTarget",
                                              {"targetId": target, "flatten": True}
                                              ))["sessionId"]
                tab = _Tab(url, body, content_type, answer, urlsplit(url).netloc.lower(),
                           other_hosts, result)
                self._tabs[session] = tab
                await browser.send("Fetch.enable", {"patterns": [{"urlPattern": "*"}]}, session)
                await browser.send("Emulation.setUserAgentOverride",
                                   {"userAgent": self.user_agent}, session)
                await browser.send("Page.enable", {}, session)
                await browser.send("Page.navigate", {"url": url}, session)
                await tab.loaded.wait()
                while tab.pending or time.monotonic() - tab.last_activity < SETTLE_SECONDS:
                    await asyncio.sleep(0.05)
                dom = await browser.send("Runtime.evaluate",
                                         {"expression": OUTER_HTML, "returnByValue": True},
                                         session)
                result.html = str(dom["result"].get("value") or "")
        except TimeoutError:
            result.error = "timeout"
        except (BrowserGone, RuntimeError, OSError) as exc:
            log.warning("rendering %s failed: %s", url, exc)
            result.error = "browser"
            broken = True
        finally:
            # Every request of the page ends before the render does, whatever ended it.
            ended = self._tabs.pop(session, None) if session is not None else None
            if ended is not None:
                await ended.abort()
        if broken:
            await self.close()
        elif target:  # the renderer may be stuck in a script: end its tab
            await self._close_tab(browser, target)
        self.pages += 1
        self.cpu_seconds()  # a reading a page, so that a process that ends loses little
        if self.browser is not None and (self.pages >= self.recycle_after
                                         or self.usage()[1] > self.max_rss):
            await self.close()
        result.seconds = time.monotonic() - started
        return result

    async def _close_tab(self, browser: Browser, target: str) -> None:
        try:
            async with asyncio.timeout(CLOSE_SECONDS):
                await browser.send("Target.closeTarget", {"targetId": target})
        except (TimeoutError, BrowserGone, RuntimeError) as exc:
            log.warning("closing a tab failed (%s); the browser starts again", exc)
            await self.close()

    def _event(self, session: str | None, message: dict[str, Any]) -> Awaitable[None] | None:
        tab = self._tabs.get(session or "")
        if tab is None:
            return None
        method = message.get("method")
        if method == "Page.loadEventFired":
            tab.loaded.set()
        elif method == "Fetch.requestPaused":
            tab.pending += 1
            task = asyncio.get_running_loop().create_task(
                self._paused(session, tab, message["params"]))
            tab.requests.add(task)
            task.add_done_callback(tab.requests.discard)
        return None

    async def _paused(self, session: str | None, tab: _Tab, params: dict[str, Any]) -> None:
        request_id = params["requestId"]
        request = params["request"]
        url, kind = request["url"].split("#", 1)[0], params.get("resourceType", "Other")
        try:
            if kind == "Document" and not tab.document_served:
                tab.document_served = True
                self._fulfill(session, request_id, 200,
                              [{"name": "Content-Type", "value": tab.content_type}], tab.body)
                return
            reason = refusal(url, kind, request.get("method", "GET"), tab.page_host,
                             tab.other_hosts)
            origin = next((value for name, value in request.get("headers", {}).items()
                           if name.lower() == "origin"), None)
            try:
                got: Answer = reason if reason else await tab.answer(url, origin)
            except Exception as exc:  # a store the answer needs failed: refused, and said
                log.warning("answering %s for the browser failed: %r", url, exc)
                got = "error"
            if isinstance(got, str):
                tab.result.refused[got] += 1
                self._fail(session, request_id)
            elif got.error or got.status is None:
                tab.result.refused[got.error or "failed"] += 1
                self._fail(session, request_id)
            else:
                tab.result.fetched += 1
                self._fulfill(session, request_id, got.status, browser_headers(got), got.body)
        finally:
            tab.pending -= 1
            tab.last_activity = time.monotonic()

    def _fulfill(self, session: str | None, request_id: str, status: int,
                 headers: list[dict[str, str]], body: bytes) -> None:
        if self.browser is not None:
            self.browser.post("Fetch.fulfillRequest", {
                "requestId": request_id, "responseCode": status, "responseHeaders": headers,
                "body": base64.b64encode(body).decode()}, session)

    def _fail(self, session: str | None, request_id: str) -> None:
        if self.browser is not None:
            self.browser.post("Fetch.failRequest",
                              {"requestId": request_id, "errorReason": "BlockedByClient"}, session)
