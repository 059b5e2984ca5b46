"""How a leased batch enters the pipeline: one chain of the five stages per batch, and one
render chain for the pages of a fetched batch that need rendering."""

from __future__ import annotations

import time

from celery import Signature, chain

from crawlapp.adapters.context import Context
from crawlapp.app import app
from crawlapp.core.queues import fetch_queue, render_queue
from crawlapp.core.records import Handover, Lease

AFTER_FETCH = ("crawl.parse", "crawl.dedup", "crawl.store", "crawl.extract_links")


def _rest(batch_id: str) -> list[Signature]:
    """parse, dedup, store and extract_links of one batch (queues from task_routes)."""
    return [app.signature(name, args=(batch_id,)) for name in AFTER_FETCH]


def send_batch(shard: int, batch_id: str, leases: list[Lease]) -> None:
    """fetch on queue fetch.<shard>, then parse, dedup, store and extract_links."""
    chain(
        app.signature("crawl.fetch", args=(batch_id, [lease.to_wire() for lease in leases]),
                      immutable=True, queue=fetch_queue(shard)),
        *_rest(batch_id),
    ).apply_async()


def send_render(ctx: Context, batch_id: str, handovers: list[Handover]) -> None:
    """render on queue render.<shard> (the shard of the fetch batch the pages come from), then
    the same parse, dedup, store and extract_links, as a batch of its own in flight."""
    render_id = f"{batch_id}.render"
    ctx.steady(lambda: ctx.batches.track(render_id, time.time() + ctx.settings.lease_seconds,
                                         [h.lease for h in handovers]), f"batch {render_id}")
    chain(
        app.signature("crawl.render", args=(render_id, [h.to_wire() for h in handovers]),
                      immutable=True, queue=render_queue(handovers[0].lease.shard)),
        *_rest(render_id),
    ).apply_async()
