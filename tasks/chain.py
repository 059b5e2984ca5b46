"""How a leased batch enters the pipeline: one chain of the five stages per batch."""

from __future__ import annotations

from celery import chain

from crawlapp.frontier import Lease
from tasks.stages import dedup, extract_links, fetch, parse, store


def send_batch(shard: int, batch_id: str, leases: list[Lease]) -> None:
    """fetch on queue fetch.<shard>, then parse, dedup, store and extract_links."""
    chain(
        fetch.si(batch_id, [lease.to_wire() for lease in leases]).set(queue=f"fetch.{shard}"),
        parse.s(batch_id), dedup.s(batch_id), store.s(batch_id), extract_links.s(batch_id),
    ).apply_async()
