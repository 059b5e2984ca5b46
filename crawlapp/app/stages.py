"""The five chained stages: fetch, parse, dedup, store, extract_links. Each takes a batch.
With CRAWL_RENDER, a sixth, render, takes the pages of a fetch batch that need rendering and
passes them on to the same parse, dedup, store and extract_links.

Every stage marks its batch as in flight for another lease period when it starts, so a
batch whose worker died stops holding up `crawl --until-idle` once its leases expire (its
URLs are back in the frontier by then, or its message is redelivered).

Batches travel in their wire form (lists, see crawlapp.core.records); each task reads its
batch into records and hands the next one the wire form of what its stage returns.
"""

from __future__ import annotations

import logging
import sys
import time
import uuid
from collections import Counter
from contextlib import suppress
from typing import Any

from celery.exceptions import Ignore, Retry
from celery.signals import worker_process_shutdown
from celery.utils.time import get_exponential_backoff_interval

from crawlapp.adapters.blobstore import upload_threads_cpu
from crawlapp.adapters.context import Context, get_context, timed
from crawlapp.adapters.errors import transient_errors
from crawlapp.app import app, preload
from crawlapp.app.chain import send_render
from crawlapp.core.errors import NotQueued, TransientError
from crawlapp.core.records import Handover, Lease, Page, QueuedURL, Status
from crawlapp.core.retry import SERVERS, Server
from crawlapp.stages.tallies import store_counts

# The modules of each queue's stage: each task imports its stage in its body, and a worker
# imports those of the queues it consumes when it starts (before a prefork pool forks, so its
# processes inherit them): a fetch worker never loads the parsers or the database.
STAGE_MODULES = {
    "fetch": ("crawlapp.adapters.http", "crawlapp.stages.fetching"),
    "render": ("crawlapp.adapters.http", "crawlapp.stages.rendering"),
    "parse": ("crawlapp.stages.parsing",),
    "dedup": ("crawlapp.adapters.db.engine", "crawlapp.stages.dedup"),
    "store": ("crawlapp.adapters.db.engine", "crawlapp.stages.storing"),
    "links": ("crawlapp.adapters.db.engine", "crawlapp.stages.linking"),
}
preload(STAGE_MODULES)

# A server that failed (TransientError, raised by the adapters) is retried as core/retry.py
# says: jittered backoff doubling from 2 s up to 10 s (a 60 s cap left batches waiting most
# of a minute after a short outage), 60 tries. Politeness never waits through a retry.
STAGE = SERVERS[Server.STAGE]
BACKOFF, BACKOFF_MAX = int(STAGE.first), int(STAGE.cap)
RETRY = {"autoretry_for": (TransientError,), "retry_backoff": BACKOFF,
         "retry_backoff_max": BACKOFF_MAX, "retry_jitter": STAGE.jitter,
         "max_retries": STAGE.tries_again}


Wire = list[list[Any]]
log = logging.getLogger(__name__)


def _pages(raw: Wire) -> list[Page]:
    return [Page.from_wire(page) for page in raw]


def _wire(pages: list[Page]) -> Wire:
    return [page.to_wire() for page in pages]


def _fetch_loop_cpu() -> float:
    from crawlapp.adapters.http import fetch_loop_cpu  # imported here: see STAGE_MODULES
    return fetch_loop_cpu()


def _render_cpu() -> float:
    """The browser's CPU, and the loop's that drives it (a render worker's loop serves renders
    only)."""
    from crawlapp.stages.rendering import browser_cpu  # imported here: see STAGE_MODULES
    return browser_cpu() + _fetch_loop_cpu()


def _started(batch_id: str) -> Context:
    """The fetched batch in flight for another while (`_in_flight`), marked through a Redis
    failover: a stage that failed on it would be tried again only after its backoff, by which
    time its batch may be taken for lost and its pages fetched again."""
    ctx = get_context()
    _in_flight(ctx, batch_id, fetched=True)
    return ctx


def _in_flight(ctx: Context, batch_id: str, fetched: bool) -> None:
    """A batch whose leases are held (`fetched` False: its fetch or render runs) is in flight
    for a lease period: past it, its leases have ended and its URLs are back. A batch fetched
    holds pages, and no lease: it is taken for lost (its URLs queued again, to be fetched
    again) only once no stage has started on it for a lease period and the longest wait
    between a stage's tries, so that a stage in its backoff or a queue behind does not
    cost it its pages."""
    seconds = ctx.settings.lease_seconds + (BACKOFF_MAX if fetched else 0)
    ctx.steady(lambda: ctx.batches.track(batch_id, time.time() + seconds), f"batch {batch_id}")


def _taken_up(batch_id: str, stage: str) -> Context:
    """Take up a batch's fetch or render, then mark the batch in flight.

    A second delivery while the first run may still hold its leases is ignored (acknowledged,
    its chain ended): both would ask the same hosts at once. If the first run died, its leases
    run out and its URLs come back through the frontier. The copy is dropped before it marks
    the batch in flight: once the first run has ended the batch, the crawl would wait a lease
    period for a batch nothing holds."""
    ctx = get_context()
    attempt = app.current_task.request.retries or 0
    run = uuid.uuid4().hex  # one token through a failover's tries again
    if not ctx.steady(lambda: ctx.batches.take_up(batch_id, stage, attempt,
                                                  int(ctx.settings.lease_seconds), run),
                      f"batch {batch_id}"):
        log.warning("batch %s: its %s was delivered again while taken up; this copy is "
                    "dropped", batch_id, stage)
        ctx.counters.bump({"batches:delivered_twice": 1})
        raise Ignore()
    _in_flight(ctx, batch_id, fetched=False)
    return ctx


@app.task(name="crawl.fetch")
@transient_errors()
@timed("fetch", elsewhere=_fetch_loop_cpu)
def fetch(batch_id: str, leases: Wire) -> Wire:
    from crawlapp.stages.fetching import fetch_batch  # imported here: see STAGE_MODULES
    ctx = _taken_up(batch_id, "fetch")
    pages, retried, handovers = fetch_batch(ctx, [Lease.from_wire(raw) for raw in leases])
    counts = Counter(p.status for p in pages if p.status != Status.RETRIED) + Counter(
        h.page.status for h in handovers)  # answers to retry are fetch:retried
    # The pages go on even with Redis gone past its ride-out: their batch, still in flight
    # until its leases' deadline, may be taken for lost, and their counts are lost.
    with suppress(TransientError), transient_errors():
        _in_flight(ctx, batch_id, fetched=True)
        ctx.steady(lambda: ctx.counters.bump({f"pages:{k}": v for k, v in counts.items()}
                                             | {"fetch:retried": retried}), "counting pages")
    if handovers:
        send_render(ctx, batch_id, handovers)
    return _wire(pages)


@app.task(name="crawl.render", **RETRY)
@transient_errors()
@timed("render", elsewhere=_render_cpu)
def render(batch_id: str, handovers: Wire) -> Wire:
    """Render the pages handed over by a fetch batch, under their leases."""
    from crawlapp.stages.rendering import render_batch  # imported here: see STAGE_MODULES
    ctx = _taken_up(batch_id, "render")
    return _wire(render_batch(ctx, [Handover.from_wire(raw) for raw in handovers]))


@app.task(name="crawl.parse", **RETRY)
@transient_errors()
@timed("parse")
def parse(pages: Wire, batch_id: str) -> Wire:
    from crawlapp.stages.parsing import parse_pages  # imported here: see STAGE_MODULES
    ctx = _started(batch_id)
    parsed, counts = parse_pages(_pages(pages), ctx.settings)
    ctx.counters.bump(counts)
    return _wire(parsed)


@app.task(name="crawl.dedup", **RETRY)
@transient_errors()
@timed("dedup")
def dedup(pages: Wire, batch_id: str) -> Wire:
    from crawlapp.stages.dedup import dedup_pages  # imported here: see STAGE_MODULES
    return _wire(dedup_pages(_started(batch_id), _pages(pages)))


@app.task(name="crawl.store", **RETRY)
@transient_errors()
@timed("store", elsewhere=upload_threads_cpu)
def store(pages: Wire, batch_id: str) -> Wire:
    from crawlapp.stages.storing import store_pages  # imported here: see STAGE_MODULES
    ctx = _started(batch_id)
    batch = _pages(pages)
    counts = store_counts(batch)  # before the bodies leave the batch, added once stored
    stored = store_pages(ctx, batch, batch_id)
    ctx.counters.bump(counts)
    return _wire(stored)


def _retry_with(exc: TransientError, **kwargs: Any) -> Retry:
    """The current task tried again as RETRY makes it, with these keyword arguments: what
    the try that failed hands the next one."""
    task = app.current_task
    countdown = get_exponential_backoff_interval(BACKOFF, task.request.retries, BACKOFF_MAX,
                                                 full_jitter=STAGE.jitter)
    return task.retry(kwargs={**(task.request.kwargs or {}), **kwargs}, exc=exc,
                      countdown=countdown)


@app.task(name="crawl.extract_links", **RETRY)
@transient_errors()
@timed("extract_links")
def extract_links(pages: Wire, batch_id: str, carried: Wire | None = None,
                  carried_since: float | None = None) -> int:
    """`carried`: the URLs an earlier try, begun at `carried_since`, left unqueued
    (crawlapp.stages.admission.admit)."""
    from crawlapp.stages.linking import extract_links as extract_links_stage  # see STAGE_MODULES
    ctx = _started(batch_id)
    try:
        done = extract_links_stage(ctx, _pages(pages),
                                   [QueuedURL.from_wire(q) for q in carried or ()], carried_since,
                                   batch_id)
    except NotQueued as exc:
        raise _retry_with(exc, carried=[q.to_wire() for q in exc.urls],
                          carried_since=exc.since) from exc
    ctx.counters.bump({"urls:known": done.known, "pages:blocked": done.robots_blocked,
                       "recrawl:sitemap_due": done.sitemap_due},
                  refused=done.refused)
    ctx.batches.finish(batch_id)
    return done.added


@worker_process_shutdown.connect
def _stop_browser(**_: Any) -> None:
    if "crawlapp.stages.rendering" in sys.modules:  # a process that never loaded it has no browser
        from crawlapp.stages.rendering import close_renderer
        close_renderer()
