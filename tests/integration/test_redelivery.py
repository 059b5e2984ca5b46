"""At-least-once delivery: every stage of a batch run twice on the same message, on the real
Redis, Postgres and the test web. Nothing is fetched, stored, linked or queued twice."""

from __future__ import annotations

import copy
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from crawlapp.adapters.context import Context
from crawlapp.adapters.db.engine import upgrade
from crawlapp.core.records import Lease
from crawlapp.core.settings import load_settings
from crawlapp.ops.dispatcher import dispatch_once
from crawlapp.ops.recrawl import recrawl
from crawlapp.ops.seeding import add_seeds
from crawlapp.stages.dedup import dedup_pages
from crawlapp.stages.fetching import fetch_batch
from crawlapp.stages.linking import extract_links
from crawlapp.stages.parsing import parse_pages
from crawlapp.stages.recrawling import drain
from crawlapp.stages.storing import store_pages
from testweb.server import start_in_background
from testweb.serverlog import load
from testweb.site import Web, WebSpec

SPEC = WebSpec(hosts=2, pages_per_host=3, port=0, crawl_delay_every=0)


def twice(stage: Callable[[Any], Any], message: Any) -> Any:
    """Run `stage` on two copies of one message, as a redelivery would; both answers agree."""
    first = stage(copy.deepcopy(message))
    assert stage(copy.deepcopy(message)) == first
    return first


def counts(ctx: Context) -> dict[str, int]:
    with ctx.sessions() as session:
        db = {table: int(session.scalar(sa.text(f"SELECT count(*) FROM {table}")) or 0)
              for table in ("urls", "links", "hosts", "fetches")}
    frontier = sum(s.urls_queued for s in ctx.frontier.stats(time.time()))
    bodies = len(list(ctx.settings.blob_dir.rglob("*.gz")))
    return db | {"frontier": frontier, "bodies": bodies}


def run_batch_twice(ctx: Context, leases: list[Lease]) -> None:
    pages, _, _ = fetch_batch(ctx, leases)
    again, _, _ = fetch_batch(ctx, leases)  # the leases were released: nothing is fetched
    assert again == []
    pages = twice(lambda p: parse_pages(p, ctx.settings)[0], pages)
    pages = twice(lambda p: dedup_pages(ctx, p), pages)
    pages = twice(lambda p: store_pages(ctx, p), pages)
    before = counts(ctx)
    extract_links(ctx, copy.deepcopy(pages))
    after = counts(ctx)
    again = extract_links(ctx, copy.deepcopy(pages))
    assert again.added == 0 and counts(ctx) == after, (before, after)


def test_every_stage_delivered_twice_changes_nothing(tmp_path: Path, redis_url: str,
                                                     pg_url: str) -> None:
    settings = load_settings({"CRAWL_DATA_DIR": str(tmp_path), "CRAWL_REDIS_URL": redis_url,
                              "DATABASE_URL": pg_url, "CRAWL_ALLOWED_NETWORKS": "127.0.0.0/8",
                              "CRAWL_SHARDS": "2", "CRAWL_DEFAULT_DELAY": "0.05"})
    upgrade(settings)
    ctx = Context(settings)
    log = str(tmp_path / "requests.jsonl")
    with start_in_background(Web(SPEC), log) as server:
        add_seeds(ctx, server.web.seeds())
        expected = server.web.expected_pages(5)
        deadline = time.monotonic() + 60
        sent: list[tuple[str, list[Lease]]] = []
        while ((not ctx.frontier.is_idle(time.time()) or ctx.batches.in_flight())
               and time.monotonic() < deadline):
            dispatch_once(ctx, lambda shard, batch_id, leases: sent.append((batch_id, leases)))
            while sent:
                batch_id, leases = sent.pop()
                run_batch_twice(ctx, leases)
                ctx.batches.finish(batch_id)
            time.sleep(0.05)
        assert ctx.frontier.is_idle(time.time()) and not ctx.batches.in_flight()
    requests = Counter(r.url for r in load(log))
    assert set(requests) >= expected and max(requests.values()) == 1  # each URL fetched once
    final = counts(ctx)
    with ctx.sessions() as session:  # robots.txt, redirect and error answers are kept too
        answers = len(set(session.scalars(sa.text(
            "SELECT storage_key FROM fetches WHERE (robots OR http_status >= 300) "
            "AND NOT not_modified"))))
    assert answers > 1 and final["bodies"] == len(expected) + answers and final["frontier"] == 0
    with ctx.sessions() as session:
        assert session.scalar(sa.text("SELECT count(*) FROM urls WHERE status = 'fetched'")) \
            == len(expected)

    # The re-crawl tick delivered twice queues each due page once.
    recrawl(ctx, now=True)
    assert drain(ctx) == len(expected)
    assert drain(ctx) == 0
    assert counts(ctx)["frontier"] == len(expected)


def test_a_fetch_delivered_again_after_its_batch_ended_leaves_it_ended(
        tmp_path: Path, redis_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A broker cut loses a fetch's acknowledgement: its message comes back while its run's
    record holds, and the copy is dropped without marking the batch in flight again (the
    crawl waited a lease period for a batch that nothing held)."""
    from crawlapp.app import stages

    ctx = Context(load_settings({"CRAWL_DATA_DIR": str(tmp_path),
                                 "CRAWL_REDIS_URL": redis_url}))
    monkeypatch.setattr(stages, "get_context", lambda: ctx)
    assert stages.fetch.apply(args=("b1", [])).successful()
    ctx.batches.finish("b1")  # its chain ran to its end
    again = stages.fetch.apply(args=("b1", []))
    assert again.state == "IGNORED" and ctx.batches.in_flight() == 0
