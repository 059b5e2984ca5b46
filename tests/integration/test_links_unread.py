"""A stored batch whose links stage never ran (its message lost with the broker's Redis, or the
batch taken for lost after its store): its pages with links are fetched again, in full, by the
rebuild or by the lost-batch recovery, rather than their links lost."""

from __future__ import annotations

import time
from pathlib import Path

import sqlalchemy as sa

from crawlapp.adapters.context import Context
from crawlapp.adapters.db import repository
from crawlapp.core.records import Lease, Link, Page, Status
from crawlapp.core.urls import url_hash
from crawlapp.ops.dispatcher import recover_lost_batches
from crawlapp.ops.rebuild import rebuild
from crawlapp.stages.linking import extract_links
from crawlapp.stages.pages import page_for
from crawlapp.stages.storing import store_pages
from tests.integration.test_linking import make_ctx, page, queued_members

HOME, LEAF = "http://a.com/", "http://a.com/leaf"


def _stored(ctx: Context, batch_id: str) -> list[Page]:
    """HOME (with a link) and LEAF (none) fetched with validators and stored as `batch_id`."""
    pages = []
    for url, links in ((HOME, [Link("http://a.com/1")]), (LEAF, [])):
        fetched = page_for(Lease(0, "a.com", "t", url, 0))
        fetched.status, fetched.http_status, fetched.fetched_at = Status.FETCHED, 200, time.time()
        fetched.content_type, fetched.etag, fetched.links = "text/html", '"v1"', links
        pages.append(fetched)
    return store_pages(ctx, pages, batch_id)


def _seed(ctx: Context) -> None:
    extract_links(ctx, [page("http://a.com/seed", 0, [HOME, LEAF])])
    ctx.redis.delete(*ctx.redis.scan_iter(match="*:q:*"))  # both leased since


def _unread(ctx: Context) -> list[str]:
    with ctx.sessions() as s:
        return list(s.scalars(sa.text("SELECT batch_id FROM links_unread")))


def _row(ctx: Context, url: str) -> tuple[str, str | None]:
    with ctx.sessions() as s:
        row = repository.get_url(s, url_hash(url))
        assert row is not None
        return row.status, row.etag


def test_the_links_stage_reads_what_the_store_noted(tmp_path: Path, redis_url: str) -> None:
    ctx = make_ctx(tmp_path, redis_url)
    _seed(ctx)
    pages = _stored(ctx, "b1")
    assert _unread(ctx) == ["b1"]
    extract_links(ctx, pages, batch_id="b1")
    assert _unread(ctx) == []
    assert rebuild(ctx)["links_unread"] == 0
    assert _row(ctx, HOME) == (Status.FETCHED, '"v1"')


def test_a_rebuild_fetches_again_the_pages_whose_links_were_lost(tmp_path: Path,
                                                                 redis_url: str) -> None:
    ctx = make_ctx(tmp_path, redis_url)
    _seed(ctx)
    _stored(ctx, "b1")  # its links stage's message went with the broker's Redis
    ctx.redis.flushdb()
    assert rebuild(ctx)["links_unread"] == 1
    assert _row(ctx, HOME) == (Status.QUEUED, None)  # in full: a 304 would bring no links
    assert _row(ctx, LEAF) == (Status.FETCHED, '"v1"')  # no links to lose
    assert queued_members(ctx) == [f"1\t{HOME}"] and _unread(ctx) == []


def test_a_batch_lost_after_its_store_has_its_pages_fetched_again(tmp_path: Path,
                                                                  redis_url: str) -> None:
    ctx = make_ctx(tmp_path, redis_url)
    _seed(ctx)
    ctx.batches.track("b1", time.time() + 60, [Lease(0, "a.com", "t", u, 0) for u in (HOME, LEAF)])
    _stored(ctx, "b1")
    assert recover_lost_batches(ctx, time.time() + 3600) == 1
    assert _row(ctx, HOME) == (Status.QUEUED, None)
    assert queued_members(ctx) == [f"1\t{HOME}"] and _unread(ctx) == []
    assert ctx.batches.in_flight() == 0
