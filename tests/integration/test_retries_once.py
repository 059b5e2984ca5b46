"""A fetch batch counts its URLs' failures once, however often a Redis fault makes it send
them again (`Context.steady` runs the whole round trip again): on one Redis and on a
cluster."""

from __future__ import annotations

from pathlib import Path

import pytest

from crawlapp.adapters.context import Context
from crawlapp.adapters.redis import keys
from crawlapp.core.records import Fetched, Lease
from crawlapp.core.settings import load_settings
from crawlapp.stages.fetching import _Known, _retries

pytestmark = pytest.mark.integration
NOTHING_KNOWN = _Known({}, frozenset(), {}, {}, {})


def _lease(path: str) -> Lease:
    return Lease(0, "a.test", "t", f"http://a.test{path}", 0)


def _answer(lease: Lease, status: int | None, error: str | None = None) -> tuple[Lease, Fetched]:
    return lease, Fetched(lease.url, status, error=error)


@pytest.fixture(params=["server", "cluster"])
def ctx(request: pytest.FixtureRequest, tmp_path: Path) -> Context:
    cluster = request.param == "cluster"
    url = request.getfixturevalue("redis_cluster_url" if cluster else "redis_url")
    return Context(load_settings({"CRAWL_DATA_DIR": str(tmp_path), "CRAWL_REDIS_URL": url,
                                  "CRAWL_REDIS_CLUSTER": str(cluster).lower(),
                                  "CRAWL_MAX_RETRIES": "2"}))


def test_a_batch_sent_again_counts_its_failures_once(ctx: Context) -> None:
    failing, fetched, ours = _lease("/busy"), _lease("/ok"), _lease("/resolver")
    asked = [_answer(failing, 503), _answer(fetched, 200), _answer(ours, None, "resolver")]
    first = _retries(ctx, "run-1", asked, [], NOTHING_KNOWN)
    again = _retries(ctx, "run-1", asked, [], NOTHING_KNOWN)  # the same batch, replayed
    assert first == again == {failing.url, ours.url}
    hash_key = keys.RETRIES.of(ctx.settings.redis_prefix)
    assert ctx.redis.hgetall(hash_key) == {failing.url.encode(): b"1"}  # ours: not counted
    assert _retries(ctx, "run-2", asked, [], NOTHING_KNOWN) == {failing.url, ours.url}
    assert ctx.redis.hget(hash_key, failing.url) == b"2"
    # The third failure is past CRAWL_MAX_RETRIES: given up, its count forgotten, and a
    # replay of that batch gives it up again rather than counting from nothing.
    assert _retries(ctx, "run-3", asked, [], NOTHING_KNOWN) == {ours.url}
    assert _retries(ctx, "run-3", asked, [], NOTHING_KNOWN) == {ours.url}
    assert ctx.redis.hgetall(hash_key) == {}
    run = keys.RETRIES_RUN.of(ctx.settings.redis_prefix, run="run-3")
    assert 0 < ctx.redis.pttl(run) <= (ctx.settings.redis_ride_out + 60) * 1000


def test_a_url_answered_forgets_its_count(ctx: Context) -> None:
    page = _lease("/flaky")
    assert _retries(ctx, "run-1", [_answer(page, 500)], [], NOTHING_KNOWN) == {page.url}
    assert _retries(ctx, "run-2", [_answer(page, 200)], [], NOTHING_KNOWN) == set()
    assert ctx.redis.hgetall(keys.RETRIES.of(ctx.settings.redis_prefix)) == {}
