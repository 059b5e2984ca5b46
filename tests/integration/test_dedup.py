"""Content dedup on the real Redis: exact and near copies, and two workers racing."""

from __future__ import annotations

import threading
from hashlib import sha256
from pathlib import Path

import pytest

from crawlapp.adapters.context import Context
from crawlapp.adapters.redis.dedup_index import EXACT, NEAR, ORIGINAL, Claim, Held
from crawlapp.core.records import Page
from crawlapp.core.settings import load_settings
from crawlapp.core.simhash import simhash
from crawlapp.core.urls import url_hash
from crawlapp.stages.dedup import dedup_pages

ARTICLE = " ".join(f"word{i % 97} token{i % 89} term{i % 83}" for i in range(400))


def make_ctx(tmp_path: Path, redis_url: str) -> Context:
    return Context(load_settings({"CRAWL_DATA_DIR": str(tmp_path), "CRAWL_REDIS_URL": redis_url}))


def page(url: str, text: str, content_hash: str, canonical: str | None = None,
         noindex: bool = False) -> Page:
    return Page(url=url, url_hash=url_hash(url), content_hash=content_hash,
                simhash=simhash(text), body_gz=b"...", canonical=canonical, noindex=noindex)


def test_exact_and_near_copies_point_to_the_first(tmp_path: Path, redis_url: str) -> None:
    ctx = make_ctx(tmp_path, redis_url)
    edited = ARTICLE.replace("word5 token5", "word5 changed", 1)
    first, exact, near = dedup_pages(ctx, [
        page("http://a.com/1", ARTICLE, "aa" * 32),
        page("http://b.com/1", ARTICLE, "aa" * 32),
        page("http://c.com/1", edited, "cc" * 32),
    ])
    assert not first.content_dedup and first.body_gz is not None
    assert exact.duplicate_of == first.url_hash and exact.body_gz is None
    assert near.duplicate_of == first.url_hash and near.near_duplicate
    other = dedup_pages(ctx, [page("http://d.com/1", "something else " * 50, "dd" * 32)])[0]
    assert not other.content_dedup
    again = dedup_pages(ctx, [page("http://a.com/1", ARTICLE, "aa" * 32)])[0]
    assert not again.content_dedup  # a redelivered original stays the original


def test_two_workers_racing_on_near_copies_yield_one_original(tmp_path: Path,
                                                              redis_url: str) -> None:
    ctx = make_ctx(tmp_path, redis_url)
    copies = [page(f"http://m{i}.com/a", ARTICLE + f" byline{i}", f"{i:02x}" * 32)
              for i in range(8)]
    results: list[Page] = []
    barrier = threading.Barrier(8)

    def work(p: Page) -> None:
        barrier.wait()
        results.extend(dedup_pages(Context(ctx.settings), [p]))

    threads = [threading.Thread(target=work, args=(p,)) for p in copies]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    originals = [p for p in results if not p.content_dedup]
    assert len(originals) == 1
    assert {p.duplicate_of for p in results if p.content_dedup} == {originals[0].url_hash}


def test_pages_naming_another_canonical_url_or_noindex_are_not_stored(tmp_path: Path,
                                                                      redis_url: str) -> None:
    ctx = make_ctx(tmp_path, redis_url)
    article = page("http://a.com/article", ARTICLE, "aa" * 32)
    printed = page("http://a.com/print", ARTICLE + " print", "bb" * 32,
                   canonical="http://a.com/article")
    hidden = page("http://a.com/private", "private " * 40, "cc" * 32, noindex=True)
    printed, hidden, article = dedup_pages(ctx, [printed, hidden, article])
    assert printed.unstored == "canonical" and printed.body_gz is None
    assert printed.duplicate_of == article.url_hash
    assert hidden.unstored == "noindex" and hidden.body_gz is None
    assert not article.content_dedup and article.body_gz is not None  # print did not claim it


def test_two_pages_naming_each_other_canonical_keep_one_body(tmp_path: Path,
                                                             redis_url: str) -> None:
    ctx = make_ctx(tmp_path, redis_url)
    first = page("http://a.com/x", ARTICLE, "aa" * 32, canonical="http://a.com/y")
    second = page("http://a.com/y", ARTICLE, "aa" * 32, canonical="http://a.com/x")
    (first,) = dedup_pages(ctx, [first])
    (second,) = dedup_pages(ctx, [second])
    assert first.unstored == "canonical"
    assert second.unstored is None and second.body_gz is not None and second.canonical is None


@pytest.mark.parametrize("server", ["redis_url", "redis_cluster_url"])
def test_the_index_files_finds_and_releases_a_batch_on_one_redis_and_on_a_cluster(
        tmp_path: Path, server: str, request: pytest.FixtureRequest) -> None:
    """A batch's look-ups and table writes go as a few scripts on one Redis (one a hash slot
    on a cluster): exact copies, near copies across batches, the table entries listed with
    their owners, and released again."""
    env = {"CRAWL_DATA_DIR": str(tmp_path), "CRAWL_REDIS_URL": request.getfixturevalue(server)}
    if server == "redis_cluster_url":
        env["CRAWL_REDIS_CLUSTER"] = "true"
    index = Context(load_settings(env)).dedup_index
    texts = [" ".join(f"w{n}x{i}" for i in range(300)) for n in range(40)]
    first = [Claim(url_hash(f"http://a.test/{n}"), sha256(t.encode()).hexdigest(), simhash(t))
             for n, t in enumerate(texts)]
    assert [o.kind for o in index.claim(first, 3)] == [ORIGINAL] * 40
    near = [Claim(url_hash(f"http://b.test/{n}"), sha256(f"b{n}".encode()).hexdigest(),
                  c.fingerprint ^ 0b101) for n, c in enumerate(first)]  # 2 bits off each
    exact = [Claim(url_hash(f"http://c.test/{n}"), c.content_hash, None)
             for n, c in enumerate(first)]
    outcomes = index.claim(near + exact, 3)
    assert [(o.kind, o.owner) for o in outcomes] == [(NEAR, c.url_hash) for c in first] + [
        (EXACT, c.url_hash) for c in first]
    entries = [e for chunk in index.table_entries(100) for e in chunk]
    assert len(entries) == len(index.tables.keys) * 40
    assert {e.owner for e in entries} == {c.url_hash for c in first}
    index.release(Held(c.url_hash, c.content_hash, c.fingerprint) for c in first)
    assert [e for chunk in index.table_entries(100) for e in chunk] == []
    assert [o.kind for o in index.claim(near, 3)] == [ORIGINAL] * 40
