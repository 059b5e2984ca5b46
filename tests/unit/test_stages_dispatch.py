"""Batches lost with a worker, on a Context whose frontier is in memory and whose database
is SQLite: no server. (Dispatching itself first checks that Redis still holds the frontier,
so it needs Redis: tests/integration/test_dispatch.py.)"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from crawlapp.adapters.context import Context
from crawlapp.adapters.db import repository
from crawlapp.adapters.db.engine import upgrade
from crawlapp.adapters.memory_frontier import MemoryFrontier
from crawlapp.adapters.redis.frontier.redis_frontier import Release
from crawlapp.core.records import QueuedURL, Status
from crawlapp.core.settings import load_settings
from crawlapp.core.urls import url_hash
from crawlapp.ops.dispatcher import recover_lost_batches
from crawlapp.stages.linking import url_row

NOW = 1_800_000_000.0


def test_a_lost_batch_queues_again_only_its_urls_not_stored_yet(tmp_path: Path) -> None:
    settings = load_settings({"CRAWL_DATA_DIR": str(tmp_path), "CRAWL_SHARDS": "1"})
    upgrade(settings)
    ctx = Context(settings, frontier_override=MemoryFrontier(settings.shards))
    waiting, stored = "http://a.test/waiting", "http://b.test/stored"
    with ctx.sessions.begin() as session:
        found = datetime.now(UTC)
        repository.add_urls(session, [url_row(waiting, 2, 5, found, priority=0.25),
                                      url_row(stored, 1, 5, found)])
        repository.set_status(session, [url_hash(stored)], Status.FETCHED)
    ctx.frontier.add([QueuedURL(waiting, 2, 0.25), QueuedURL(stored, 1, 0.5)], NOW)
    leases = ctx.frontier.dispatch([0], NOW, 10, 60, 100)[0][0]
    ctx.frontier.track_batch("lost", NOW + 60, leases)
    ctx.frontier.release([Release(lease, NOW + 1) for lease in leases])  # leases ran out

    assert recover_lost_batches(ctx, NOW + 30) == 0  # not past its deadline yet
    assert recover_lost_batches(ctx, NOW + 61) == 1
    assert ctx.frontier.batches_in_flight(NOW + 61) == 0
    (again,) = ctx.frontier.dispatch([0], NOW + 61, 10, 60, 100)[0][0]
    assert (again.url, again.depth) == (waiting, 2)
