"""The re-crawl sets on the real Redis: due members claimed once, crash-safe."""

from __future__ import annotations

from pathlib import Path

from crawlapp.adapters.context import Context
from crawlapp.adapters.redis import recrawl_sets
from crawlapp.core.settings import load_settings

NOW = 1_800_000_000.0


def make_ctx(tmp_path: Path, redis_url: str) -> Context:
    return Context(load_settings({"CRAWL_DATA_DIR": str(tmp_path), "CRAWL_REDIS_URL": redis_url}))


def test_due_members_are_claimed_once(tmp_path: Path, redis_url: str) -> None:
    ctx = make_ctx(tmp_path, redis_url)
    recrawl_sets.schedule(ctx, [("a", "daily", NOW - 10), ("b", "hourly", NOW - 5),
                                ("c", "weekly", NOW + 100)])
    first = recrawl_sets.claim(ctx, NOW, 10, 60)
    assert sorted(first) == ["daily|a", "hourly|b"]
    assert recrawl_sets.claim(ctx, NOW, 10, 60) == []  # a second beat gets nothing
    assert recrawl_sets.pending(ctx, NOW) == 2  # claimed, not yet acknowledged
    recrawl_sets.acknowledge(ctx, first)
    assert recrawl_sets.pending(ctx, NOW) == 0
    assert recrawl_sets.stats(ctx, NOW)["weekly"] == {"pages": 1, "overdue": 0}


def test_a_drain_that_died_after_claiming_loses_nothing(tmp_path: Path, redis_url: str) -> None:
    ctx = make_ctx(tmp_path, redis_url)
    recrawl_sets.schedule(ctx, [("a", "daily", NOW - 10)])
    assert recrawl_sets.claim(ctx, NOW, 10, 60) == ["daily|a"]  # ...and the drain dies here
    assert recrawl_sets.claim(ctx, NOW + 30, 10, 60) == []
    assert recrawl_sets.claim(ctx, NOW + 61, 10, 60) == ["daily|a"]  # the claim expired


def test_a_page_moves_between_tiers_and_can_be_made_due(tmp_path: Path, redis_url: str) -> None:
    ctx = make_ctx(tmp_path, redis_url)
    recrawl_sets.schedule(ctx, [("a", "daily", NOW + 10)])
    recrawl_sets.schedule(ctx, [("a", "hourly", NOW + 5)])
    stats = recrawl_sets.stats(ctx, NOW)
    assert stats["daily"]["pages"] == 0 and stats["hourly"]["pages"] == 1
    assert recrawl_sets.make_due(ctx, ["a", "zzz"], NOW) == 1
    assert recrawl_sets.claim(ctx, NOW, 10, 60) == ["hourly|a"]
