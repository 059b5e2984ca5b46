"""The render stage: pages the fetch stage handed over, rendered under the lease they were
fetched with, then released with their host's next allowed time.

A render is one request slot of its host: the host stays leased until its page is rendered
and every request it made has ended, and the page's sub-requests to one host go one at a
time, each no earlier than the host's delay after the previous request ended (the page's own
fetch first). When fetches hold politeness slots (core/render_rule.shares_slots: a key wider
than the host, or other hosts allowed), each sub-request also holds its key's slot, as a
fetch does, so that another host is asked one request at a time and a delay apart across
fetch workers and browsers; one that cannot have it within the page's budget is refused
('politeness'). Each sub-request passes the denylist, robots.txt and the SSRF guard of the
fetcher. An origin whose robots.txt is not known yet (another allowed host the crawl has not
reached) has it fetched first, in its host's turn, once a batch: an answer that stands (2xx,
4xx) is cached and recorded as the fetch stage does it; one that does not (no answer, 5xx, a
redirect) refuses the origin's requests ('robots_unknown') and leaves it to the fetch stage.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
import uuid
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import TypeVar

from crawlapp.adapters.browser.cdp import find_chromium
from crawlapp.adapters.browser.renderer import Answer, HostSlots, Rendered, Renderer
from crawlapp.adapters.context import Context
from crawlapp.adapters.errors import transient_errors
from crawlapp.adapters.http import Fetcher, run_on_fetch_loop
from crawlapp.adapters.redis import robots_cache
from crawlapp.core.bodies import compress, rendered_content
from crawlapp.core.errors import TransientError
from crawlapp.core.politeness import politeness_key
from crawlapp.core.records import Fetched, Handover, Page, Release
from crawlapp.core.render_rule import shares_slots
from crawlapp.core.robots import MAX_ROBOTS_BYTES, RobotsPolicy, effective_delay
from crawlapp.core.scope import hostname, is_address
from crawlapp.core.settings import Settings
from crawlapp.core.urls import host_of, origin_of
from crawlapp.stages.pages import body_of, robots_page, robots_policy, sitemap_links

log = logging.getLogger(__name__)
T = TypeVar("T")
RENDERED_TYPE = "text/html; charset=utf-8"
CACHE_SECONDS = 300.0  # a script or an XHR answer serves every page rendered meanwhile
CACHE_ENTRIES = 512
CACHE_MAX_BYTES = 1 << 20


class SubresourceCache:
    """Successful sub-request answers by URL and the Origin asked with (a CORS answer may
    name it), for a while, so pages sharing a script do not ask their host for it again
    (bounded: entries and body size)."""

    def __init__(self) -> None:
        self._entries: OrderedDict[tuple[str, str | None], tuple[float, Fetched]] = \
            OrderedDict()

    def get(self, url: str, origin: str | None = None) -> Fetched | None:
        entry = self._entries.get((url, origin))
        if entry is None or entry[0] < time.monotonic():
            return None
        self._entries.move_to_end((url, origin))
        return entry[1]

    def put(self, result: Fetched, origin: str | None = None) -> None:
        if result.error or result.status != 200 or len(result.body) > CACHE_MAX_BYTES:
            return
        self._entries[(result.url, origin)] = (time.monotonic() + CACHE_SECONDS, result)
        self._entries.move_to_end((result.url, origin))
        while len(self._entries) > CACHE_ENTRIES:
            self._entries.popitem(last=False)


_CACHE = SubresourceCache()  # used on the process's fetch loop only


def apply_render(page: Page, rendered: Rendered, store_raw: bool) -> Page:
    """The page with its rendered DOM as content (its body as fetched kept apart with
    `store_raw`); unchanged but for `render_error` when rendering failed."""
    page = page.copy()
    if rendered.html is None:
        page.render_error = rendered.error or "failed"
        return page
    body = rendered.html.encode("utf-8")
    rendered_content(page, compress(body), store_raw)
    page.content_type = RENDERED_TYPE
    page.content_length = len(body)
    return page


# This process's renderer, with the event loop its browser runs on.
_RENDERER: tuple[int, Renderer, asyncio.AbstractEventLoop] | None = None
_RENDERER_LOCK = threading.Lock()
_CPU_REPORTED = [0.0]


def _renderer(settings: Settings) -> Renderer:
    """This process's renderer (a forked child starts its own); called on the fetch loop."""
    global _RENDERER
    with _RENDERER_LOCK:
        if _RENDERER is None or _RENDERER[0] != os.getpid():
            path = find_chromium(settings.chromium_path)
            if path is None:  # every page then goes on unrendered (render_error 'browser')
                log.error("no Chromium found: run `make install-render` or set CRAWL_CHROMIUM")
            renderer = Renderer(path or "chromium", settings.user_agent, settings.render_recycle,
                                settings.render_max_memory_mb << 20)
            _RENDERER = (os.getpid(), renderer, asyncio.get_running_loop())
        return _RENDERER[1]


def browser_cpu() -> float:
    """CPU seconds this process's browsers used since the previous call (0 if none)."""
    if _RENDERER is None or _RENDERER[0] != os.getpid():
        return 0.0
    renderer = _RENDERER[1]
    used = renderer.cpu_seconds()
    delta, _CPU_REPORTED[0] = max(0.0, used - _CPU_REPORTED[0]), used
    return delta


async def _steady_off_loop(ctx: Context, call: Callable[[], T], what: str) -> T:
    """`call()` on Redis, ridden through a failover (`Context.steady`) in the loop's executor:
    the tries again never stall the browser's loop; past the ride-out, a TransientError."""
    def steady() -> T:
        with transient_errors():
            return ctx.steady(call, what)
    return await asyncio.get_running_loop().run_in_executor(None, steady)


class _KeyTurns:
    """The politeness slots of the keys a render asks (adapters/redis/slots.py), taken around
    each of its requests under a holder of the request's own, polled while another holds
    them; Redis is called from the loop's executor."""

    POLL_SECONDS = 0.1

    def __init__(self, ctx: Context, fetcher: Fetcher) -> None:
        self.ctx, self.fetcher = ctx, fetcher
        self.batch = uuid.uuid4().hex[:12]
        self._keys: dict[str, str] = {}
        self._taken = 0

    async def _key(self, host: str) -> str:
        if host not in self._keys:
            kind, address = self.ctx.settings.politeness_key, None
            if kind == "ip" and self.fetcher.dns is not None and not is_address(hostname(host)):
                answer = await self.fetcher.dns.resolve(hostname(host))
                address = answer.addresses[0] if answer.addresses else None
            self._keys[host] = politeness_key(kind, host, address)
        return self._keys[host]

    async def take(self, host: str, deadline: float) -> tuple[str, float] | None:
        key = await self._key(host)
        self._taken += 1
        holder = f"render-{self.batch}-{self._taken}"
        held_until = deadline + self.ctx.settings.fetch_timeout  # then taken for dead
        while True:
            now = time.time()
            got = (await _steady_off_loop(
                self.ctx, partial(self.ctx.slots.take, [key], holder, now, held_until),
                "taking a slot"))[key]
            if got is not None:
                return holder, got
            if now + self.POLL_SECONDS > deadline:
                return None
            await asyncio.sleep(self.POLL_SECONDS)

    async def give_back(self, host: str, token: str, next_time: float) -> None:
        key = await self._key(host)
        await _steady_off_loop(self.ctx, lambda: self.ctx.slots.give_back({key: next_time}, token),
                               "giving a slot back")


class _Answers:
    """Sub-request answers of the batch: checks, then the fetcher in the host's turn."""

    def __init__(self, ctx: Context, fetcher: Fetcher, policies: dict[str, RobotsPolicy | None],
                 slots: HostSlots) -> None:
        self.ctx = ctx
        self.fetcher = fetcher
        self.policies = policies
        self.slots = slots
        self.cached = 0  # answers served from the cache
        self.faults = 0  # checks Redis could not answer, through its ride-out
        self.origins: dict[str, str] = {}  # host -> the origin its robots.txt is of
        # (origin, host, answer, policy) of each robots.txt learned
        self.learned: list[tuple[str, str, Fetched, RobotsPolicy]] = []
        self._asking: dict[str, asyncio.Lock] = {}  # origin -> held while its robots.txt is asked
        self._asked: set[str] = set()  # origins whose robots.txt was asked (answer or not)

    async def answer(self, url: str, sent_origin: str | None, deadline: float) -> Answer:
        """Check a sub-request, then fetch it in its host's turn (the browser's Origin header
        sent along)."""
        host, origin = host_of(url), origin_of(url)
        self.origins.setdefault(host, origin)
        if origin not in self.policies:
            try:
                policy, denied = await _steady_off_loop(
                    self.ctx, lambda: self._cached(origin, host), f"checking {origin}")
            except TransientError as exc:
                log.warning("checking %s for a render failed: %s", url, exc)
                self.faults += 1
                return "redis"
            self.policies.setdefault(origin, policy)  # another request may have asked it
            if denied:
                return "denylist"
        policy = self.policies.get(origin)
        if policy is None and origin not in self._asked:
            # Asked by the request that needs it first (so cancelled with it when its render
            # ends), the others waiting for the answer.
            async with self._asking.setdefault(origin, asyncio.Lock()):
                if origin not in self._asked:
                    await self._robots(origin, host, deadline)
                    self._asked.add(origin)
            policy = self.policies.get(origin)
        if policy is None or policy.mode == "redirect":
            return "robots_unknown"
        if not policy.allowed(url, self.ctx.settings.product_token):
            return "robots"
        cached = _CACHE.get(url, sent_origin)
        if cached is not None:
            self.cached += 1
            return cached
        extra = {"Origin": sent_origin} if sent_origin else None
        result: Fetched | None = await self.slots.run(
            host, lambda: self.fetcher.get(url, extra), deadline)
        if result is None:
            return "politeness"
        _CACHE.put(result, sent_origin)
        return result

    def _cached(self, origin: str, host: str) -> tuple[RobotsPolicy | None, bool]:
        """The origin's cached robots.txt policy and whether the denylist covers its host,
        in one round trip."""
        pipe = self.ctx.redis.pipeline(transaction=False)
        policies = self.ctx.robots.read([origin], pipe)
        denied = self.ctx.denylist.read([host], pipe)
        replies = pipe.execute()
        return policies(replies)[origin], bool(denied(replies))

    async def _robots(self, origin: str, host: str, deadline: float) -> None:
        """Ask the origin's robots.txt in its host's turn; its policy kept (in `policies`
        and `learned`) when the answer stands: 2xx or 4xx."""
        got = await self.slots.run(host, lambda: self.fetcher.get(
            f"{origin}/robots.txt", max_bytes=MAX_ROBOTS_BYTES, truncate=True), deadline)
        if got is None:
            return
        policy = robots_policy(got)
        if policy.mode in ("rules", "allow_all"):
            self.policies[origin] = policy
            self.learned.append((origin, host, got, policy))

    def delay(self, host: str) -> float:
        """The host's delay after a request: its robots.txt's Crawl-delay or the default."""
        policy = self.policies.get(self.origins.get(host, f"http://{host}"))
        settings = self.ctx.settings
        return effective_delay(policy.crawl_delay(settings.product_token) if policy else None,
                               settings.default_delay, settings.max_crawl_delay
                               ) + settings.delay_margin


async def _render_all(ctx: Context, fetcher: Fetcher, held: list[Handover],
                      policies: dict[str, RobotsPolicy | None]
                      ) -> tuple[list[tuple[Rendered, float]], _Answers]:
    """Render the held pages one after the other; each page's host's next time after it,
    and the sub-requests' answers (how many the cache gave, robots.txt files learned). A
    page one of whose checks Redis could not answer is not rendered (render_error 'redis'):
    its DOM would lack what the refused request brings."""
    settings = ctx.settings
    renderer = _renderer(settings)
    answers: _Answers
    slots = HostSlots({h.lease.host: h.next_time for h in held},
                      lambda host: answers.delay(host),
                      _KeyTurns(ctx, fetcher) if shares_slots(settings) else None)
    answers = _Answers(ctx, fetcher, policies, slots)
    answers.origins.update((h.lease.host, origin_of(h.lease.url)) for h in held)
    out = []
    for i, handover in enumerate(held):
        if i:  # the pages still waiting keep their leases
            await _steady_off_loop(ctx, partial(ctx.frontier.renew, [h.lease for h in held[i:]],
                                                time.time(), settings.lease_seconds),
                                   "renewing leases")
        deadline = time.time() + settings.render_timeout

        async def answer(url: str, sent_origin: str | None, end: float = deadline) -> Answer:
            return await answers.answer(url, sent_origin, end)

        page, faults = handover.page, answers.faults
        rendered = await renderer.render(
            page.url, body_of(page), page.content_type or "text/html",
            answer, settings.render_timeout, settings.render_other_hosts)
        if answers.faults > faults:
            rendered = replace(rendered, html=None, error="redis")
        out.append((rendered, slots.next_time[handover.lease.host]))
    return out, answers


def render_batch(ctx: Context, handovers: list[Handover]) -> list[Page]:
    """Render the pages whose lease is still held (the others went back to the frontier when
    their lease expired: they are dropped here), release their hosts, count what happened."""
    settings = ctx.settings
    held_failures = ctx.frontier.renew([h.lease for h in handovers], time.time(),
                                       settings.lease_seconds)
    held = [h for h, f in zip(handovers, held_failures, strict=True) if f is not None]
    policies = ctx.robots.load({origin_of(h.lease.url) for h in held})
    try:
        results, answers = run_on_fetch_loop(
            settings, ctx.dns_cache, lambda fetcher: _render_all(ctx, fetcher, held, policies))
    except BaseException:
        # Give the hosts back at the time the fetch set; the URLs are handled (fetched).
        ctx.frontier.release([Release(h.lease, h.next_time, False, h.failures) for h in held])
        raise
    ctx.frontier.release([Release(h.lease, max(h.next_time, next_time), False, h.failures)
                          for h, (_, next_time) in zip(held, results, strict=True)])
    counts: Counter[str] = Counter({"render:lease_lost": len(handovers) - len(held),
                                    "render:cached": answers.cached,
                                    "render:robots_learned": len(answers.learned)})
    pages = _learned_robots(ctx, answers.learned)
    for handover, (rendered, _) in zip(held, results, strict=True):
        pages.append(apply_render(handover.page, rendered, settings.render_store_raw))
        counts["render:pages"] += 1
        counts["render:rendered" if rendered.html is not None else
               f"render:error_{rendered.error}"] += 1
        counts["render:ms"] += round(rendered.seconds * 1000)
        counts["render:subrequests"] += rendered.fetched
        counts.update({f"render:refused_{k}": v for k, v in rendered.refused.items()})
    ctx.counters.bump(counts)
    return pages


def _learned_robots(ctx: Context, learned: list[tuple[str, str, Fetched, RobotsPolicy]]
                    ) -> list[Page]:
    """Cache the robots.txt files renders fetched, and make their records (stored and their
    sitemaps queued downstream, as the fetch stage's)."""
    if not learned:
        return []
    ctx.robots.save({origin: policy for origin, _, _, policy in learned})
    ua = ctx.settings.product_token
    return [robots_page(got, host, sitemap_links(origin, policy),
                        robots_cache.record(origin, policy, ua))
            for origin, host, got, policy in learned]


def close_renderer() -> None:
    """Stop this process's browser (at worker shutdown)."""
    if _RENDERER is not None and _RENDERER[0] == os.getpid():
        asyncio.run_coroutine_threadsafe(_RENDERER[1].close(), _RENDERER[2]).result(10)
