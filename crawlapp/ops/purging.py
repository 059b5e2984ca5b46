"""Emptying Celery queues by hand (`crawlctl queues purge`), audited. The URLs of a purged
batch go back to the frontier once its deadline passes, like those of a batch lost with a
worker."""

from __future__ import annotations

from crawlapp.adapters import broker
from crawlapp.adapters.context import Context
from crawlapp.ops.takedown import audit


def purge_queues(ctx: Context, names: list[str]) -> dict[str, int]:
    """Delete the waiting messages of these queues; how many each held."""
    purged = broker.purge(ctx.settings.broker_url, names)
    audit(ctx, "queues purge", ",".join(names), purged)
    return purged
