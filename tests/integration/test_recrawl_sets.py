"""The re-crawl sets on the real Redis: due members claimed once, crash-safe."""

from __future__ import annotations

from pathlib import Path

from crawlapp.adapters.context import Context
from crawlapp.core.settings import load_settings

NOW = 1_800_000_000.0


def make_ctx(tmp_path: Path, redis_url: str) -> Context:
    return Context(load_settings({"CRAWL_DATA_DIR": str(tmp_path), "CRAWL_REDIS_URL": redis_url}))


def test_due_members_are_claimed_once(tmp_path: Path, redis_url: str) -> None:
    ctx = make_ctx(tmp_path, redis_url)
    ctx.recrawls.schedule([("a", "daily", NOW - 10), ("b", "hourly", NOW - 5),
                                ("c", "weekly", NOW + 100)])
    first = ctx.recrawls.claim(NOW, 10, 60)
    assert sorted(first) == ["daily|a", "hourly|b"]
    assert ctx.recrawls.claim(NOW, 10, 60) == []  # a second beat gets nothing
    assert ctx.recrawls.pending(NOW) == 2  # claimed, not yet acknowledged
    ctx.recrawls.acknowledge(first)
    assert ctx.recrawls.pending(NOW) == 0
    assert ctx.recrawls.stats(NOW)["weekly"] == {"pages": 1, "overdue": 0}


def test_a_drain_that_died_after_claiming_loses_nothing(tmp_path: Path, redis_url: str) -> None:
    ctx = make_ctx(tmp_path, redis_url)
    ctx.recrawls.schedule([("a", "daily", NOW - 10)])
    assert ctx.recrawls.claim(NOW, 10, 60) == ["daily|a"]  # ...and the drain dies here
    assert ctx.recrawls.claim(NOW + 30, 10, 60) == []
    assert ctx.recrawls.claim(NOW + 61, 10, 60) == ["daily|a"]  # the claim expired


def test_a_page_moves_between_tiers_and_can_be_made_due(tmp_path: Path, redis_url: str) -> None:
    ctx = make_ctx(tmp_path, redis_url)
    ctx.recrawls.schedule([("a", "daily", NOW + 10)])
    ctx.recrawls.schedule([("a", "hourly", NOW + 5)])
    stats = ctx.recrawls.stats(NOW)
    assert stats["daily"]["pages"] == 0 and stats["hourly"]["pages"] == 1
    assert ctx.recrawls.make_due(["a", "zzz"], NOW) == 1
    assert ctx.recrawls.claim(NOW, 10, 60) == ["hourly|a"]


def test_one_schedule_of_many_pages_in_several_parts(tmp_path: Path, redis_url: str) -> None:
    """Each page ends in exactly the tier of its last item, whichever part it falls in."""
    ctx = Context(load_settings({"CRAWL_DATA_DIR": str(tmp_path), "CRAWL_REDIS_URL": redis_url,
                                 "CRAWL_REDIS_PARTS": "4"}))
    tiers = ["hourly", "daily", "weekly", "monthly"]
    ctx.recrawls.schedule([(f"p{n}", tiers[n % 4], NOW + n) for n in range(40)])
    ctx.recrawls.schedule([(f"p{n}", tiers[(n + 1) % 4], NOW - n) for n in range(0, 40, 2)]
                          + [("p1", "hourly", NOW + 1), ("p1", "monthly", NOW - 1)])
    assert {tier: s["pages"] for tier, s in ctx.recrawls.stats(NOW).items()} == {
        "hourly": 0, "daily": 19, "weekly": 0, "monthly": 21}
    claimed = ctx.recrawls.claim(NOW, 100, 60)
    assert sorted(claimed) == sorted([f"{tiers[(n + 1) % 4]}|p{n}" for n in range(0, 40, 2)]
                                     + ["monthly|p1"])
