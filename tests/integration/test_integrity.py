"""Integrity of stored content on the real Redis and Postgres, whatever the order of arrival:
no row names a body that is not in the store; content claims and SimHash bands name stored
originals only; every copy points at a stored original of its content.

Pages are fetched (exact copies, near copies of near copies, canonical pointers, noindex pages,
failures, 304s, re-crawls with changed bodies) in batches that go through the real dedup and
store stages in any order, each stage possibly delivered twice and a store delivered again
long after; pages are taken down at any time. A Hypothesis test draws EXAMPLES sequences of
such steps, up to 30 steps each (INTEGRITY_EXAMPLES, 200 unless set: more for a longer hunt)."""

from __future__ import annotations

import copy
import gzip
import hashlib
import os
import shutil
import time
from datetime import UTC, datetime
from itertools import combinations
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from crawlapp.adapters.context import Context
from crawlapp.adapters.db import repository
from crawlapp.adapters.db.dedup_rows import rows_by_hash
from crawlapp.adapters.db.engine import upgrade
from crawlapp.adapters.db.models import Url
from crawlapp.core.records import Link, Page, Status
from crawlapp.core.rows import UrlRow
from crawlapp.core.settings import load_settings
from crawlapp.core.simhash import hamming, simhash
from crawlapp.core.urls import url_hash
from crawlapp.ops import takedown
from crawlapp.stages.dedup import dedup_pages, held_by
from crawlapp.stages.storing import store_pages

ARTICLE = " ".join(f"word{i % 97} token{i % 89} term{i % 83}" for i in range(400))
OTHER = " ".join(f"alpha{i % 71} beta{i % 67} gamma{i % 61}" for i in range(300))
A2 = ARTICLE.replace("word7 token7", "word7 altered", 1)
TEXTS = {  # distances: a~a1 1, a~a2 3, a2~a4 1, a~a4 4 (a near copy of a near copy), b~b1 3
    "a": ARTICLE, "a1": ARTICLE.replace("word5 token5", "word5 changed", 1), "a2": A2,
    "a4": A2.replace("word2 token2", "word2 fresh", 1), "b": OTHER,
    "b1": OTHER.replace("alpha3 beta3", "alpha3 delta", 1), "empty": ""}
# Two byte forms of each text: same fingerprint, other content hash (the shape of the bug).
BODIES = {f"{name}{form}": (text, f"<html><!--{form}--><p>{text}</p></html>".encode())
          for name, text in TEXTS.items() for form in ("", "'")}
URLS = [f"http://h{i % 2}.test/p{i}" for i in range(5)]
MAX_DISTANCE = 3

FETCHED = st.tuples(st.just("fetched"), st.sampled_from(
                        ["a", "a'", "a1", "a1'", "a2", "a4", "b", "b1'", "empty"]),
                    st.sampled_from([False] * 5 + [True]),  # noindex
                    st.sampled_from([None] * 5 + list(range(len(URLS)))))  # canonical URL
OUTCOME = st.one_of(FETCHED, FETCHED, FETCHED, st.just(("failed",)),
                    st.just(("not_modified",)))


def make_ctx(tmp_path: Path, redis_url: str, pg_url: str) -> Context:
    return Context(load_settings({"CRAWL_DATA_DIR": str(tmp_path), "CRAWL_REDIS_URL": redis_url,
                                  "DATABASE_URL": pg_url}))


def fetched_page(url: str, outcome: tuple[Any, ...]) -> Page:
    """A page as the parse stage hands it to dedup."""
    page = Page(url=url, url_hash=url_hash(url), host=url.split("/")[2], depth=0,
                status=Status.FETCHED, fetched_at=time.time())
    if outcome[0] == "failed":
        page.status, page.http_status, page.error = Status.FAILED, 404, "http 404"
        return page
    if outcome[0] == "not_modified":
        page.http_status, page.not_modified = 304, True
        return page
    _, body_name, noindex, canonical = outcome
    text, body = BODIES[body_name]
    page.http_status, page.content_type = 200, "text/html"
    page.content_hash, page.content_length = hashlib.sha256(body).hexdigest(), len(body)
    page.body_gz, page.simhash = gzip.compress(body), simhash(text) if text else None
    page.title, page.noindex = body_name, noindex
    if canonical is not None and URLS[canonical] != url:
        page.canonical, page.links = URLS[canonical], [Link(URLS[canonical])]
    return page


def rows(ctx: Context) -> dict[str, Url]:
    with ctx.sessions() as session:
        return {r.url_hash: r for r in session.scalars(sa.select(Url))}


def assert_bodies_are_there(ctx: Context) -> None:
    """No row names a body that is not in the store."""
    for row in rows(ctx).values():
        for key in (row.storage_key, row.raw_storage_key):
            assert key is None or ctx.blobs.exists(key), (row.url, key)


def assert_redis_names_stored_originals(ctx: Context) -> None:
    with ctx.sessions() as session:
        known = rows_by_hash(session, [r for r in rows(ctx)])
    index = ctx.dedup_index
    for entries in index.entries(100):
        for entry in entries:
            owner = known.get(entry.owner)
            assert owner is not None and owner.original, (entry, owner)
            assert index.files(held_by(owner), entry), (entry, owner)
    for bands in index.table_entries(100):
        for band in bands:
            owner = known.get(band.owner or "")
            assert owner is not None and owner.original, (band, owner)
            assert owner.fingerprint == band.fingerprint, (band, owner)


def assert_copies_point_at_stored_originals(ctx: Context) -> None:
    """An exact copy at an original of its hash, a near copy at one within 3 bits; not at a
    near copy, a canonical pointer or a page not stored. A takedown leaves the copies of the
    page taken down pointing at it (takedown.delete does not hand them over; verify does)."""
    with ctx.sessions() as session:
        known = rows_by_hash(session, [r for r in rows(ctx)])
    for row in known.values():
        if not row.content_dedup or row.status == "deleted":
            continue
        original = known.get(row.duplicate_of or "")
        assert original is not None, row
        if original.status == "deleted":
            continue
        assert original.original, (row, original)
        if row.storage_key:
            assert original.content_hash == row.content_hash, (row, original)
        else:
            assert row.fingerprint is not None and original.fingerprint is not None
            assert hamming(row.fingerprint, original.fingerprint) <= MAX_DISTANCE, (row, original)


def assert_consistent(ctx: Context) -> None:
    assert_bodies_are_there(ctx)
    assert_redis_names_stored_originals(ctx)
    assert_copies_point_at_stored_originals(ctx)


def test_the_texts_have_the_distances_the_cases_need() -> None:
    fp = {name: simhash(text) for name, text in TEXTS.items() if text}
    assert hamming(fp["a"], fp["a1"]) <= MAX_DISTANCE and hamming(fp["a"], fp["a2"]) <= MAX_DISTANCE
    assert hamming(fp["a2"], fp["a4"]) <= MAX_DISTANCE < hamming(fp["a"], fp["a4"])
    assert hamming(fp["b"], fp["b1"]) <= MAX_DISTANCE
    assert all(hamming(fp[x], fp[y]) > 20 for x, y in combinations(fp, 2) if x[0] != y[0])


@pytest.fixture
def ctx(tmp_path: Path, redis_url: str, pg_url: str) -> Context:
    ctx = make_ctx(tmp_path, redis_url, pg_url)
    upgrade(ctx.settings)
    return ctx


def crawl_in_order(ctx: Context, *batches: list[Page]) -> None:
    for batch in batches:
        store_pages(ctx, dedup_pages(ctx, batch))


def add_rows(ctx: Context, urls: list[str]) -> None:
    with ctx.sessions.begin() as session:
        repository.add_urls(session, [UrlRow(url_hash(u), u, u.split("/")[2], 0, "queued",
                                             datetime.now(UTC), priority=1.0) for u in urls])


def test_an_exact_copy_of_a_near_copy_points_at_the_stored_original(ctx: Context) -> None:
    """The issue's case: /r/a/b/ is a near copy of /r/a/ (not stored); /r/a/b/a/b/ has its
    bytes. It must not take the storage key of a body nobody stored."""
    a, ab, abab = (f"http://t.test/r/{p}" for p in ("a/", "a/b/", "a/b/a/b/"))
    add_rows(ctx, [a, ab, abab])
    crawl_in_order(ctx, [fetched_page(a, ("fetched", "a", False, None))],
                   [fetched_page(ab, ("fetched", "a'", False, None))],
                   [fetched_page(abab, ("fetched", "a'", False, None))])
    found = rows(ctx)
    assert found[url_hash(ab)].duplicate_of == found[url_hash(abab)].duplicate_of == url_hash(a)
    assert found[url_hash(abab)].storage_key is None
    assert_consistent(ctx)


def test_an_exact_copy_stored_before_its_original_writes_the_body_it_names(ctx: Context
                                                                           ) -> None:
    original, copy_ = URLS[:2]
    add_rows(ctx, URLS[:2])
    first = dedup_pages(ctx, [fetched_page(original, ("fetched", "a", False, None))])
    second = dedup_pages(ctx, [fetched_page(copy_, ("fetched", "a", False, None))])
    assert second[0].duplicate_of == url_hash(original)
    store_pages(ctx, second)  # the original's batch is still on its way (or lost)
    assert_bodies_are_there(ctx)
    store_pages(ctx, first)
    assert_consistent(ctx)


def test_copies_of_a_page_whose_body_changed_go_to_another_original(ctx: Context) -> None:
    first, copy_, near = URLS[:3]
    add_rows(ctx, URLS[:3])
    crawl_in_order(ctx, [fetched_page(first, ("fetched", "a", False, None)),
                         fetched_page(copy_, ("fetched", "a", False, None)),
                         fetched_page(near, ("fetched", "a1", False, None))])
    crawl_in_order(ctx, [fetched_page(first, ("fetched", "b", False, None))])
    found = rows(ctx)
    assert not found[url_hash(copy_)].content_dedup  # the exact copy is the original now
    assert found[url_hash(near)].duplicate_of == url_hash(copy_)
    assert_consistent(ctx)


# One step of a crawl: a fetch batch; the dedup stage of a batch fetched (delivered twice:
# two store tasks); the store stage of a batch deduped (its first delivery, or a redelivery
# of one stored before, maybe long after); a takedown. Indexes pick among the waiting ones.
FETCH = st.tuples(st.just("fetch"), st.lists(
    st.tuples(st.integers(0, len(URLS) - 1), OUTCOME), min_size=1, max_size=3,
    unique_by=lambda item: item[0]))
DEDUP = st.tuples(st.just("dedup"), st.integers(0, 3), st.sampled_from([False] * 3 + [True]))
STORE = st.tuples(st.just("store"), st.integers(0, 3))
STEP = st.one_of(FETCH, FETCH, DEDUP, DEDUP, STORE, STORE,
                 st.tuples(st.just("store_again"), st.integers(0, 7)),
                 st.tuples(st.just("take_down"), st.integers(0, len(URLS) - 1)))
EXAMPLES = int(os.environ.get("INTEGRITY_EXAMPLES", "200"))


class Crawl:
    """Batches on their way through the dedup and store stages."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        ctx.redis.flushdb()
        with ctx.sessions.begin() as session:
            session.execute(sa.text("TRUNCATE urls, links, hosts, denylist"))
        shutil.rmtree(ctx.settings.blob_dir, ignore_errors=True)
        add_rows(ctx, URLS)
        self.fetched: list[list[Page]] = []
        self.deduped: list[list[Page]] = []  # each to be stored at least once
        self.stored: list[list[Page]] = []  # may be delivered again at any time

    def status(self, url: str) -> str:
        with self.ctx.sessions() as session:
            return session.scalar(sa.select(Url.status).where(Url.url_hash == url_hash(url))) or ""

    def fetch(self, items: list[tuple[int, tuple[Any, ...]]]) -> None:
        """Never a page taken down; a 304 only for a page stored before."""
        batch = []
        for i, outcome in items:
            status = self.status(URLS[i])
            if status != "deleted" and (outcome[0] != "not_modified" or status == "fetched"):
                batch.append(fetched_page(URLS[i], outcome))
        if batch:
            self.fetched.append(batch)

    def dedup(self, i: int, twice: bool) -> None:
        if self.fetched:
            batch = self.fetched.pop(i % len(self.fetched))
            for _ in range(1 + twice):
                self.deduped.append(dedup_pages(self.ctx, copy.deepcopy(batch)))

    def store(self, i: int) -> None:
        if self.deduped:
            message = self.deduped.pop(i % len(self.deduped))
            store_pages(self.ctx, copy.deepcopy(message))
            self.stored.append(message)

    def store_again(self, i: int) -> None:
        if self.stored:
            store_pages(self.ctx, copy.deepcopy(self.stored[i % len(self.stored)]))

    def take_down(self, i: int) -> None:
        takedown.delete(self.ctx, url=URLS[i])

    def settle(self) -> None:
        """Every batch on its way goes through its stages."""
        while self.fetched or self.deduped:
            self.dedup(0, False)
            self.store(0)


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(steps=st.lists(STEP, min_size=4, max_size=30))
# /p4 is deduped as an exact copy of /p2 by the claim of a batch storing /p2 with b1', then
# stored in the batch that stores /p2 with a, after /p2 failed: it must claim b1' again.
@example(steps=[
    ("fetch", [(2, ("fetched", "b1'", False, None))]),
    ("fetch", [(4, ("fetched", "b1'", False, None)), (2, ("fetched", "a", False, None))]),
    ("fetch", [(2, ("failed",))]),
    ("dedup", 0, False), ("dedup", 0, False), ("store", 0), ("dedup", 0, False),
    ("store", 1), ("store", 0)])
# /p0 is deduped as an exact copy of /p4 (b), which a batch then stores; a batch stored next
# finds /p4 a near copy whose original changed (a4 of a2) and queues it again, releasing its
# claim: /p0's batch, stored last, must not trust the queued /p4 (it claims b itself).
@example(steps=[
    ("fetch", [(2, ("fetched", "a2", False, None))]), ("dedup", 0, False), ("store", 0),
    ("fetch", [(4, ("fetched", "a4", False, None))]), ("dedup", 0, False),
    ("fetch", [(4, ("fetched", "b", False, None))]), ("dedup", 0, False),
    ("fetch", [(0, ("fetched", "b", False, None))]), ("dedup", 0, False),
    ("store", 1), ("fetch", [(2, ("fetched", "b1'", False, None))]), ("dedup", 0, False),
    ("store", 2), ("store", 0), ("store", 0)])
@example(steps=[  # the same, as Hypothesis found it
    ("dedup", 0, False), ("dedup", 0, False), ("fetch", [(0, ("not_modified",))]),
    ("fetch", [(0, ("fetched", "a", True, None)), (1, ("failed",))]),
    ("fetch", [(4, ("fetched", "b1'", False, None)), (2, ("fetched", "a", False, None))]),
    ("fetch", [(1, ("fetched", "a", False, None))]),
    ("fetch", [(2, ("fetched", "b1'", False, None)), (1, ("failed",)), (0, ("failed",))]),
    ("store", 2), ("dedup", 3, False), ("take_down", 0), ("store_again", 2),
    ("dedup", 3, False), ("fetch", [(3, ("not_modified",)), (0, ("failed",))]),
    ("fetch", [(0, ("failed",)), (1, ("fetched", "a'", True, None)), (2, ("failed",))]),
    ("dedup", 2, False)])
def test_any_order_of_arrival_keeps_the_invariant(ctx: Context,
                                                  steps: list[tuple[Any, ...]]) -> None:
    crawl = Crawl(ctx)
    for name, *args in steps:
        getattr(crawl, name)(*args)
        assert_bodies_are_there(ctx)
        if not crawl.deduped:  # else claims of batches on their way have no rows yet
            assert_consistent(ctx)
    crawl.settle()
    assert_consistent(ctx)
