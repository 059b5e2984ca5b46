"""Stage 1, fetch: renew the leases, learn robots.txt, fetch the batch, release the hosts."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

from crawlapp.context import Context
from crawlapp.fetch import Fetched, Fetcher, run_in_thread_loop, start_at
from crawlapp.frontier import Lease
from crawlapp.frontier.redis_frontier import Release
from crawlapp.pipeline import robots_cache
from crawlapp.pipeline.pages import Page, apply_fetch, blocked, page_for
from crawlapp.robots import MAX_ROBOTS_BYTES, RobotsPolicy, decode_robots, effective_delay
from crawlapp.urls import origin_of

log = logging.getLogger(__name__)


@dataclass
class Plan:
    """What the batch does with each held lease."""

    robots: list[Lease]      # origin's robots.txt unknown: fetch it in this slot, URL waits
    pages: list[Lease]       # allowed: fetch the URL
    refused: list[tuple[Lease, str]]  # not fetched, with the reason


def plan_batch(leases: list[Lease], policies: dict[str, RobotsPolicy | None],
               user_agent: str) -> Plan:
    """Sort leases by what robots.txt says of their URL. Pure."""
    plan = Plan([], [], [])
    for lease in leases:
        policy = policies.get(origin_of(lease.url))
        if policy is None:
            plan.robots.append(lease)
        elif policy.allowed(lease.url, user_agent):
            plan.pages.append(lease)
        else:
            reason = "robots" if policy.mode == "rules" else f"robots_{policy.status or 'error'}"
            plan.refused.append((lease, reason))
    return plan


def _robots_policy(status: int | None, error: str | None, body: bytes) -> RobotsPolicy:
    if error or status is None:
        return RobotsPolicy(0)
    if 300 <= status < 400:
        return RobotsPolicy(404)  # redirects of robots.txt are not followed yet: allow all
    return RobotsPolicy(status, decode_robots(body) if 200 <= status < 300 else "")


async def _fetch_all(fetcher: Fetcher, plan: Plan
                     ) -> tuple[list[tuple[Lease, RobotsPolicy, float]], list[tuple[Lease, Fetched]]]:
    robots_calls = [start_at(lease.not_before, fetcher.get(origin_of(lease.url) + "/robots.txt",
                                                           max_bytes=MAX_ROBOTS_BYTES))
                    for lease in plan.robots]
    page_calls = [start_at(lease.not_before, fetcher.get(lease.url)) for lease in plan.pages]
    results = await asyncio.gather(*robots_calls, *page_calls)
    robots = [(lease, _robots_policy(r.status, r.error, r.body), r.ended)
              for lease, r in zip(plan.robots, results[:len(plan.robots)], strict=True)]
    pages = list(zip(plan.pages, results[len(plan.robots):], strict=True))
    return robots, pages


def fetch_batch(ctx: Context, leases: list[Lease]) -> list[Page]:
    """Fetch one batch; every held lease is released, with the host's next allowed time."""
    settings = ctx.settings
    ua = settings.product_token
    held_flags = ctx.frontier.renew(leases, time.time(), settings.lease_seconds)
    held = [lease for lease, ok in zip(leases, held_flags, strict=True) if ok]
    if len(held) < len(leases):
        log.warning("%d lease(s) expired before the batch ran; their URLs were requeued",
                    len(leases) - len(held))
    policies = robots_cache.load(ctx, {origin_of(lease.url) for lease in held})
    plan = plan_batch(held, policies, ua)
    robots, fetched = run_in_thread_loop(settings, lambda f: _fetch_all(f, plan))

    def delay(policy: RobotsPolicy | None) -> float:
        crawl_delay = policy.crawl_delay(ua) if policy else None
        return effective_delay(crawl_delay, settings.default_delay, settings.max_crawl_delay)

    learned = {origin_of(lease.url): policy for lease, policy, _ in robots}
    robots_cache.save(ctx, learned, ua)
    releases = [Release(lease, ended + delay(policy), requeue=True)
                for lease, policy, ended in robots]
    pages: list[Page] = []
    now = time.time()
    for lease, reason in plan.refused:
        pages.append(blocked(page_for(lease), reason, now))
        releases.append(Release(lease, max(now, lease.not_before)))
    for lease, result in fetched:
        pages.append(apply_fetch(page_for(lease), result))
        policy = policies.get(origin_of(lease.url))
        releases.append(Release(lease, result.ended + delay(policy)))
    ctx.frontier.release(releases)
    return pages
