"""The dispatcher on the real Redis and database: backpressure from batches in flight."""

from __future__ import annotations

import time
from pathlib import Path

from crawlapp.context import Context
from crawlapp.db.engine import upgrade
from crawlapp.dispatcher import dispatch_once
from crawlapp.frontier import Lease
from crawlapp.seeding import add_seeds
from crawlapp.settings import load_settings


def test_no_batch_leaves_while_the_pipeline_holds_the_limit(tmp_path: Path,
                                                            redis_url: str) -> None:
    settings = load_settings({"CRAWL_DATA_DIR": str(tmp_path), "CRAWL_REDIS_URL": redis_url,
                              "CRAWL_SHARDS": "1", "CRAWL_MAX_BATCHES_IN_FLIGHT": "1",
                              "CRAWL_ALLOWED_NETWORKS": "127.0.0.0/8"})
    upgrade(settings)
    ctx = Context(settings)
    add_seeds(ctx, ["http://127.0.0.2:9/", "http://127.0.0.3:9/"])
    sent: list[tuple[str, list[Lease]]] = []

    def send(shard: int, batch_id: str, leases: list[Lease]) -> None:
        sent.append((batch_id, leases))

    ctx.frontier.track_batch("earlier", time.time() + 60)
    assert dispatch_once(ctx, send) == (0, None) and sent == []
    ctx.frontier.finish_batch("earlier")
    largest, _ = dispatch_once(ctx, send)
    assert largest == 2 and len(sent) == 1
    assert dispatch_once(ctx, send) == (0, None)  # the batch just sent is the one in flight
