"""A crawl run stage by stage in the test's own process (no Celery): each batch dispatched,
fetched, parsed, deduplicated, stored and its links admitted, until the crawl is idle
(`crawl`); or dispatched and fetched only (`fetch_until_idle`)."""

from __future__ import annotations

import time
from typing import Protocol

from crawlapp.adapters.context import Context
from crawlapp.core.records import Lease, Page, QueuedURL
from crawlapp.ops.dispatcher import dispatch_once
from crawlapp.stages.dedup import dedup_pages
from crawlapp.stages.fetching import fetch_batch
from crawlapp.stages.linking import extract_links
from crawlapp.stages.parsing import parse_pages
from crawlapp.stages.storing import store_pages


class Step(Protocol):
    def scan(self) -> None:
        """Called after each dispatch and each batch."""


class Nothing:
    def scan(self) -> None:
        pass


def crawl(ctx: Context, seen: Step, deadline: float) -> None:
    """Dispatch and run every stage of each batch in this process until the crawl is idle."""
    sent: list[tuple[str, list[Lease]]] = []
    while ((not ctx.frontier.is_idle(time.time()) or ctx.batches.in_flight())
           and time.monotonic() < deadline):
        dispatch_once(ctx, lambda shard, batch_id, leases: sent.append((batch_id, leases)))
        seen.scan()
        while sent:
            batch_id, leases = sent.pop()
            pages, _, _ = fetch_batch(ctx, leases)
            pages, counts = parse_pages(pages, ctx.settings)
            ctx.counters.bump(counts)
            pages = store_pages(ctx, dedup_pages(ctx, pages))
            done = extract_links(ctx, pages)
            ctx.counters.bump({"urls:known": done.known}, refused=done.refused)
            ctx.counters.add_stage_cpu("extract_links", 0.001)
            seen.scan()
            ctx.batches.finish(batch_id)
        time.sleep(0.02)
    assert ctx.frontier.is_idle(time.time()) and not ctx.batches.in_flight()


def fetch_until_idle(ctx: Context, urls: list[str], limit: float = 30.0
                     ) -> tuple[list[Page], list[list[Lease]]]:
    """Queue `urls` (the first first), then dispatch and only fetch until the frontier is
    idle: the page records and the batches' leases."""
    ctx.frontier.add([QueuedURL(u, 0, 1.0 - n / 100) for n, u in enumerate(urls)], time.time())
    pages: list[Page] = []
    batches: list[list[Lease]] = []
    deadline = time.monotonic() + limit
    sent: list[tuple[str, list[Lease]]] = []
    while not ctx.frontier.is_idle(time.time()) or ctx.batches.in_flight():
        assert time.monotonic() < deadline, "the frontier never went idle"
        dispatch_once(ctx, lambda shard, batch_id, leases: sent.append((batch_id, leases)))
        while sent:
            batch_id, leases = sent.pop()
            found, _, _ = fetch_batch(ctx, leases)
            pages += found
            batches.append(leases)
            ctx.batches.finish(batch_id)
        time.sleep(0.02)
    return pages, batches
