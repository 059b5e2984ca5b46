"""The dispatcher: leases ready hosts and sends their batches, sleeping until the next is ready."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable

from crawlapp.context import Context
from crawlapp.frontier import Lease

log = logging.getLogger(__name__)
SendBatch = Callable[[int, str, list[Lease]], None]
BATCH_DEADLINE = 1800.0  # a batch not finished by then no longer keeps the crawl busy


def dispatch_once(ctx: Context, send: SendBatch) -> tuple[int, float | None]:
    """Lease the ready hosts of every shard and send one batch per shard.

    Returns the size of the largest batch sent and the earliest time another host is ready.
    """
    settings = ctx.settings
    now = time.time()
    leases, next_ready = ctx.frontier.dispatch(
        range(settings.shards), now, settings.batch_size, settings.lease_seconds,
        settings.max_leased_per_shard)
    for shard, batch in leases.items():
        batch_id = uuid.uuid4().hex
        ctx.frontier.track_batch(batch_id, now + BATCH_DEADLINE)
        send(shard, batch_id, batch)
    return max(map(len, leases.values()), default=0), next_ready


def run(ctx: Context, send: SendBatch, stop: threading.Event) -> None:
    """Dispatch until `stop` is set; wake at the next ready time, and at least every interval."""
    interval = ctx.settings.dispatch_interval
    while not stop.is_set():
        try:
            largest, next_ready = dispatch_once(ctx, send)
        except Exception:  # a Redis or broker hiccup must not end the dispatcher
            log.exception("dispatch failed; retrying")
            stop.wait(1.0)
            continue
        if largest >= ctx.settings.batch_size:
            continue  # more hosts may be ready than one batch held
        wait = interval if next_ready is None else min(interval, max(0.0, next_ready - time.time()))
        stop.wait(max(wait, 0.001))
