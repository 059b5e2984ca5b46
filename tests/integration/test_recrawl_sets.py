"""The re-crawl sets on the real Redis: due members claimed once, crash-safe."""

from __future__ import annotations

from pathlib import Path

from crawlapp.adapters.context import Context
from crawlapp.adapters.redis.recrawl_sets import LOAD_LEASE
from crawlapp.core.settings import load_settings

NOW = 1_800_000_000.0


def make_ctx(tmp_path: Path, redis_url: str, **env: str) -> Context:
    """A context whose re-crawl sets are loaded up to NOW + 1000 (no database page due)."""
    ctx = Context(load_settings({"CRAWL_DATA_DIR": str(tmp_path), "CRAWL_REDIS_URL": redis_url,
                                 **env}))
    load = ctx.recrawls.begin_load(NOW + 1000, NOW)
    assert load is not None and load.since is None  # a new Redis: nothing loaded yet
    ctx.recrawls.end_load(load, True)
    return ctx


def members(ctx: Context) -> dict[str, set[str]]:
    """The members of each tier, over every part."""
    found: dict[str, set[str]] = {}
    for part in ctx.recrawls._parts:
        for tier, key in part.tiers.items():
            found.setdefault(tier, set()).update(m.decode() for m in ctx.dedup_redis.zrange(key, 0, -1))
    return found


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
    assert members(ctx)["weekly"] == {"c"}


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
    assert members(ctx)["daily"] == set() and members(ctx)["hourly"] == {"a"}
    ctx.recrawls.make_due([("a", "hourly", NOW)])
    assert ctx.recrawls.claim(NOW, 10, 60) == ["hourly|a"]


def test_one_schedule_of_many_pages_in_several_parts(tmp_path: Path, redis_url: str) -> None:
    """Each page ends in exactly the tier of its last item, whichever part it falls in."""
    ctx = make_ctx(tmp_path, redis_url, CRAWL_REDIS_PARTS="4")
    tiers = ["hourly", "daily", "weekly", "monthly"]
    ctx.recrawls.schedule([(f"p{n}", tiers[n % 4], NOW + n) for n in range(40)])
    ctx.recrawls.schedule([(f"p{n}", tiers[(n + 1) % 4], NOW - n) for n in range(0, 40, 2)]
                          + [("p1", "hourly", NOW + 1), ("p1", "monthly", NOW - 1)])
    assert {tier: len(members) for tier, members in members(ctx).items()} == {
        "minutes": 0, "hourly": 0, "daily": 19, "weekly": 0, "monthly": 21}
    claimed = ctx.recrawls.claim(NOW, 100, 60)
    assert sorted(claimed) == sorted([f"{tiers[(n + 1) % 4]}|p{n}" for n in range(0, 40, 2)]
                                     + ["monthly|p1"])


def test_one_load_at_a_time_and_each_starts_where_the_last_finished(tmp_path: Path,
                                                                    redis_url: str) -> None:
    ctx = make_ctx(tmp_path, redis_url)  # loaded up to NOW + 1000
    first = ctx.recrawls.begin_load(NOW + 2000, NOW)
    assert first is not None and first.since == NOW + 1000 and ctx.recrawls.until() == NOW + 2000
    assert ctx.recrawls.begin_load(NOW + 2005, NOW + 5) is None  # the first holds its lease
    ctx.recrawls.end_load(first, False)  # it died: its lease goes, its start stays
    second = ctx.recrawls.begin_load(NOW + 2010, NOW + 10)
    assert second is not None and second.since == NOW + 1000
    overlapping = ctx.recrawls.begin_load(NOW + 2020, NOW + 10 + LOAD_LEASE + 1)  # lease over
    assert overlapping is not None and overlapping.since == NOW + 1000
    ctx.recrawls.end_load(second, True)  # a later load began: the start stays for it
    assert ctx.recrawls.begin_load(NOW + 2030, NOW + 20) is None
    ctx.recrawls.end_load(overlapping, True)
    third = ctx.recrawls.begin_load(NOW + 2040, NOW + 30)
    assert third is not None and third.since == NOW + 2020
    full = ctx.recrawls.begin_load(NOW + 2050, NOW + 40, full=True)  # a rebuild: whatever runs
    assert full is not None and full.since is None and ctx.recrawls.until() == NOW + 2050
