"""The dispatcher: leases ready hosts and sends their batches, sleeping until the next is ready."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable

from crawlapp.adapters.context import Context
from crawlapp.adapters.db import repository
from crawlapp.core.records import Lease, QueuedURL, Status
from crawlapp.core.urls import url_hash
from crawlapp.ops.rebuild import ensure_frontier
from crawlapp.stages.admission import requeue

log = logging.getLogger(__name__)
SendBatch = Callable[[int, str, list[Lease]], None]
LOST_BATCH_CHECK_SECONDS = 2.0  # how often the dispatcher looks for batches lost with a worker


def dispatch_once(ctx: Context, send: SendBatch, due_within: float | None = None
                  ) -> tuple[int, float | None]:
    """Lease the ready hosts of every shard and send one batch per shard.

    A shard's batch is sent once full, or once its earliest host is due within
    `due_within` seconds (default: the whole lookahead, so it is sent at once).
    Returns the size of the largest batch sent and the earliest time another host is ready.
    """
    settings = ctx.settings
    restored = ensure_frontier(ctx)  # before every dispatch: never lease from a half frontier
    if restored is not None:
        log.warning("Redis had lost the frontier; rebuilt from the database: %s", restored)
    now = time.time()
    if ctx.batches.in_flight() >= settings.max_batches_in_flight:
        # Backpressure: the pipeline is behind. A batch left waiting in a queue past its
        # leases would be taken for lost and fetched again; hosts simply wait instead.
        return 0, None
    due_by = now + (settings.dispatch_lookahead if due_within is None else due_within)
    leases, next_ready = ctx.frontier.dispatch(
        range(settings.shards), now, settings.batch_size, settings.lease_seconds,
        settings.max_leased_per_shard, settings.dispatch_lookahead, due_by, settings.urls_per_lease)
    for shard, batch in leases.items():
        batch_id = uuid.uuid4().hex
        # In flight until its leases would expire; each stage extends it when it starts.
        ctx.batches.track(batch_id, max(lease.not_before for lease in batch)
                          + settings.lease_seconds, batch)
        send(shard, batch_id, batch)
    return max(map(len, leases.values()), default=0), next_ready


def recover_lost_batches(ctx: Context, now: float) -> int:
    """Queue again the URLs of batches lost with a worker that are still 'queued' in the
    database (not stored yet), then forget those batches. Returns how many URLs."""
    lost = ctx.batches.expired(now)
    if not lost:
        return 0
    pairs = {url: depth for batch in lost.values() for url, depth in batch}
    with ctx.sessions() as session:
        waiting = repository.priorities_with_status(session, [url_hash(u) for u in pairs],
                                                    Status.QUEUED)
    found = {u: waiting[h] for u in pairs if (h := url_hash(u)) in waiting}
    requeue(ctx, [QueuedURL(u, pairs[u], priority, hops=hops)
                  for u, (priority, hops) in found.items()], now)
    for batch_id in lost:
        ctx.batches.finish(batch_id)
    return len(waiting)


def run(ctx: Context, send: SendBatch, stop: threading.Event) -> None:
    """Dispatch every interval until `stop` is set.

    Each tick leases the hosts that become ready within the lookahead, but sends a shard's
    batch only when it is full or its earliest host would otherwise be late by the next
    tick: batches gather up to a lookahead's worth of hosts, and each request still starts
    at its host's own time (the fetch task waits for each lease's not_before).
    """
    interval = ctx.settings.dispatch_interval
    checked = 0.0
    while not stop.is_set():
        try:
            if time.monotonic() - checked > LOST_BATCH_CHECK_SECONDS:
                checked = time.monotonic()
                recovered = recover_lost_batches(ctx, time.time())
                if recovered:
                    log.warning("%d URL(s) of lost batches queued again", recovered)
            largest, _ = dispatch_once(ctx, send, due_within=2 * interval)
        except Exception:  # a Redis or broker hiccup must not end the dispatcher
            log.exception("dispatch failed; retrying")
            stop.wait(1.0)
            continue
        if largest < ctx.settings.batch_size:  # a full batch: more hosts may be ready now
            stop.wait(interval)
