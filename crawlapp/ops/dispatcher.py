"""The dispatcher: leases ready hosts and sends their batches, sleeping until the next is ready."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable

from crawlapp.adapters.context import Context
from crawlapp.adapters.db import links_unread, repository
from crawlapp.adapters.errors import Outage
from crawlapp.adapters.redis.doorbell import Doorbell
from crawlapp.core.errors import FrontierLayoutError
from crawlapp.core.records import Lease, QueuedURL, Release, Status
from crawlapp.core.recrawl import validators
from crawlapp.core.retry import SERVERS, Server
from crawlapp.core.urls import url_hash
from crawlapp.ops.rebuild import ensure_frontier
from crawlapp.stages.admission import requeue, send_back

log = logging.getLogger(__name__)
SendBatch = Callable[[int, str, list[Lease]], None]
LOST_BATCH_CHECK_SECONDS = 2.0  # longest wait between looks (each looks for lost batches)


def dispatch_once(ctx: Context, send: SendBatch, due_within: float | None = None,
                  now: float | None = None) -> tuple[int, float | None]:
    """Lease the ready hosts of every shard and send one batch per shard.

    A shard's batch is sent once full, or once its earliest host is due within
    `due_within` seconds (default: the whole lookahead, so it is sent at once).
    Returns the size of the largest batch sent and the earliest time another host is ready
    (`now` when the pipeline is full: look again soon; None: no host waits). `now`: the
    look's time (default: the time after the frontier is checked).
    """
    settings = ctx.settings
    restored = ensure_frontier(ctx)  # before every dispatch: never lease from a half frontier
    if restored is not None:
        log.warning("Redis had lost the frontier; rebuilt from the database: %s", restored)
    now = time.time() if now is None else now
    if ctx.batches.in_flight() >= settings.max_batches_in_flight:
        # Backpressure: the pipeline is behind. A batch left waiting in a queue past its
        # leases would be taken for lost and fetched again; hosts simply wait instead (and
        # the dispatcher looks again as soon as it may: a batch ending rings no bell).
        return 0, now
    due_by = now + (settings.dispatch_lookahead if due_within is None else due_within)
    # Ridden through a failover as one call: a shard whose leases were taken before the
    # reply was lost (a master killed, a connection cut; the other shards' replies with it)
    # gives them again to the same call, instead of holding its hosts until they expire.
    call = uuid.uuid4().hex[:12]
    leases, next_ready = ctx.steady(lambda: ctx.frontier.dispatch(
        range(settings.shards), now, max_hosts=settings.batch_size,
        lease_seconds=settings.lease_seconds, max_leased=settings.max_leased_per_shard,
        lookahead=settings.dispatch_lookahead, due_by=due_by, per_lease=settings.urls_per_lease,
        call=call, warm_hosts=settings.warm_hosts, warm_seconds=settings.warm_seconds),
        "dispatching")
    failed: Exception | None = None
    for shard, batch in leases.items():
        try:
            _send(ctx, send, shard, batch)
        except Exception as exc:  # the other shards' batches go on; raised after them
            failed = failed or exc
    if failed is not None:
        raise failed
    return max(map(len, leases.values()), default=0), next_ready


def _send(ctx: Context, send: SendBatch, shard: int, batch: list[Lease]) -> None:
    """Track a batch leased and send it. Its leases are already taken: through a Redis
    failover the batch is tracked once Redis is back, and a batch that cannot be tracked or
    sent gives its leases back at once, rather than holding its hosts until they expire."""
    batch_id = uuid.uuid4().hex
    # In flight until its leases would expire; each stage extends it when it starts.
    deadline = max(lease.not_before for lease in batch) + ctx.settings.lease_seconds
    try:
        ctx.steady(lambda: ctx.batches.track(batch_id, deadline, batch), f"batch {batch_id}")
        send(shard, batch_id, batch)
    except Exception:
        ctx.steady(lambda: _give_back(ctx, batch), f"batch {batch_id}'s leases")
        ctx.batches.finish(batch_id)
        raise


def _give_back(ctx: Context, batch: list[Lease]) -> None:
    """End the leases of a batch not sent, their URLs back as they were and each host
    ready at its time, its failures in a row kept (as renew reads them)."""
    failures = ctx.frontier.renew(batch, time.time(), ctx.settings.lease_seconds)
    ctx.frontier.release([Release(lease, lease.not_before, requeue=True, failures=n)
                          for lease, n in zip(batch, failures, strict=True) if n is not None])


def recover_lost_batches(ctx: Context, now: float) -> int:
    """Queue again the URLs of batches lost with a worker that are still 'queued' in the
    database (not stored yet), a re-crawl with its copy's validators (the worker may have
    forgotten them once asked, and died before handing its pages on), and the pages of those
    lost after their store whose links were not admitted (fetched again: links_unread), then
    forget those batches. Returns how many URLs.

    A URL a lease holds is left to it: a lease the lost batch held hands its URLs back as it
    expires, and one of another batch is fetching it already (when this ran every 2 s, the
    lost batch's expired lease could hand its URLs to another batch first: queued here too,
    such a page was asked twice, the second time in full, its validators forgotten by that
    batch's end). The dispatcher runs it at each look, at the time and before the look's
    dispatch, which is what hands an expired lease's URLs back. So is a URL of another batch
    in flight: a lost batch's host whose lease ended before the batch's deadline (each host's
    lease runs from its own time) had its URL handed back, leased to that batch and asked,
    its page on its way to its row."""
    lost = ctx.batches.expired(now)
    if not lost:
        return 0
    elsewhere = ctx.batches.urls_in_flight(now)
    pairs = {url_hash(url): (url, depth) for batch in lost.values() for url, depth in batch
             if url not in elsewhere}
    with ctx.sessions.begin() as session:
        waiting = [r for r in repository.urls_by_hash(session, list(pairs))
                   if r.status == Status.QUEUED]
        unread = links_unread.refetch(session, list(lost))
    ctx.validators.store({pairs[r.url_hash][0]: v for r in waiting
                          if (v := validators(r.etag, r.last_modified))})
    requeue(ctx, [QueuedURL(*pairs[r.url_hash], r.priority or 0.0, hops=r.hops or 0)
                  for r in waiting], now, unless_leased=True)
    send_back(ctx, unread)
    for batch_id in lost:
        ctx.batches.finish(batch_id)
    return len(waiting) + len(unread)


def run(ctx: Context, send: SendBatch, stop: threading.Event) -> None:
    """Dispatch until `stop` is set, sleeping between looks until the next host is due.

    Each look leases the hosts that become ready within the lookahead, but sends a shard's
    batch only when it is full or its earliest host would otherwise be late by the next
    look: batches gather up to a lookahead's worth of hosts, and each request still starts
    at its host's own time (the fetch task waits for each lease's not_before). Between
    looks it sleeps until that earliest host is due (at most LOST_BATCH_CHECK_SECONDS, at
    least CRAWL_DISPATCH_INTERVAL), or until the frontier's doorbell rings: URLs queued or
    a lease released may make a host ready sooner.
    """
    interval = ctx.settings.dispatch_interval
    bell = ctx.doorbell
    bell.subscribe()
    outage = Outage(log, "dispatch", "trying again")
    try:
        while not stop.is_set():
            try:
                # Lost batches first, at the time the dispatch goes by: a lost batch's lease
                # that expired by then is still held until the dispatch hands its URLs back,
                # so none of them is queued twice (recover_lost_batches). The looks come as
                # hosts come due, at an expired lease's end, so the same time matters.
                now = time.time()
                recovered = recover_lost_batches(ctx, now)
                if recovered:
                    log.warning("%d URL(s) of lost batches queued again", recovered)
                largest, next_ready = dispatch_once(ctx, send, due_within=2 * interval, now=now)
            except FrontierLayoutError:  # CRAWL_SHARDS does not fit: no try fixes it
                raise
            except Exception as exc:  # a Redis or broker hiccup must not end the dispatcher
                outage.failed(exc)
                stop.wait(SERVERS[Server.DISPATCHER].wait(outage.failures))
                continue
            outage.ended()
            if largest < ctx.settings.batch_size:  # a full batch: more hosts may be ready now
                _sleep(bell, stop, _until_due(next_ready, time.time(), interval), interval)
    finally:
        bell.close()


def _until_due(next_ready: float | None, now: float, interval: float) -> float:
    """Seconds until a look would send the batch of the next host due at `next_ready`
    (None: none waits), within [interval, LOST_BATCH_CHECK_SECONDS]."""
    if next_ready is None:
        return LOST_BATCH_CHECK_SECONDS
    return min(LOST_BATCH_CHECK_SECONDS, max(interval, next_ready - 2 * interval - now))


def _sleep(bell: Doorbell, stop: threading.Event, seconds: float, slice_: float) -> None:
    """Sleep `seconds`, or until the doorbell rings or `stop` is set (looked at every
    `slice_` seconds)."""
    deadline = time.monotonic() + seconds
    while not stop.is_set() and (left := deadline - time.monotonic()) > 0:
        if bell.wait(min(left, slice_)):
            return
