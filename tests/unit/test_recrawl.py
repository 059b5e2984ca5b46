import pytest

from crawlapp.core.priority import Weights, refresh_priority
from crawlapp.core.records import Status
from crawlapp.core.recrawl import (
    DAY,
    HOUR,
    MAX_LEAD,
    BadRule,
    Bounds,
    RecrawlRules,
    Unrefreshed,
    next_schedule,
    recheck_after,
    tier_of,
    unrefreshed,
)

BOUNDS = Bounds(low=HOUR, high=60 * DAY, first=DAY)


def test_first_interval_depends_on_importance() -> None:
    assert next_schedule(0.0, None, True, 0.9, BOUNDS).interval == DAY
    assert next_schedule(0.0, None, True, 0.1, BOUNDS).interval == 7 * DAY
    assert next_schedule(0.0, None, True, 0.9, Bounds(5, 7200, 120)).interval == 120


def test_changes_shorten_and_stability_lengthens_within_bounds() -> None:
    assert next_schedule(100.0, DAY, True, 0.5, BOUNDS).interval == DAY / 2
    assert next_schedule(100.0, DAY, False, 0.5, BOUNDS).next_at == 100.0 + 1.5 * DAY
    assert next_schedule(0.0, HOUR, True, 0.5, BOUNDS).interval == HOUR
    assert next_schedule(0.0, 60 * DAY, False, 0.5, BOUNDS).interval == 60 * DAY
    assert next_schedule(0.0, 8.0, True, 0.5, Bounds(5, 7200, 120)).interval == 5


def test_a_page_moves_between_tiers_as_it_changes() -> None:
    interval = DAY
    tiers = []
    for _ in range(6):
        schedule = next_schedule(0.0, interval, True, 0.5, BOUNDS)
        interval = schedule.interval
        tiers.append(schedule.tier)
    assert tiers[0] == "daily" and tiers[-1] == "hourly"


@pytest.mark.parametrize(("interval", "tier"), [(30, "minutes"), (HOUR, "hourly"),
                                                (DAY, "daily"), (7 * DAY, "weekly"),
                                                (30 * DAY, "monthly"), (400 * DAY, "monthly")])
def test_tiers(interval: float, tier: str) -> None:
    assert tier_of(interval) == tier


RULES = RecrawlRules.parse("""
# news hourly, the archive yearly
news.example.com            ttl=3600
*.example.com               min=600 max=86400
https://example.com/archive/  min=31536000
https://example.com/archive/2024/  ttl=7200   # the longest prefix wins
""")


@pytest.mark.parametrize(("url", "host", "bounds"), [
    ("https://news.example.com/a", "news.example.com", Bounds(HOUR, 60 * DAY, DAY, 3600)),
    ("https://www.example.com/", "www.example.com", Bounds(600, DAY, DAY)),
    ("https://example.com/", "example.com", Bounds(600, DAY, DAY)),
    ("https://example.com/archive/x", "example.com", Bounds(60 * DAY, 365 * DAY, DAY)),
    ("https://example.com/archive/2024/x", "example.com", Bounds(HOUR, 60 * DAY, DAY, 7200)),
    ("https://other.org/", "other.org", BOUNDS),
])
def test_rules_pick_the_longest_prefix_then_the_closest_host(url: str, host: str,
                                                             bounds: Bounds) -> None:
    assert RULES.bounds(url, host, BOUNDS) == bounds
    assert bounds.clamp(1.0) == (bounds.fixed or bounds.low)


@pytest.mark.parametrize("text", ["example.com", "example.com min=abc", "example.com ttl=-1",
                                  "exa mple.com ttl=5", "not a host! ttl=5",
                                  "example.com every=5"])
def test_bad_rules_are_refused_with_their_line(text: str) -> None:
    with pytest.raises(BadRule, match="line 1"):
        RecrawlRules.parse(text)


def test_the_shortest_interval_in_use_sets_the_drain_s_pace() -> None:
    assert RULES.shortest(HOUR) == 600
    assert RULES.shortest(60) == 60
    assert RecrawlRules(()).shortest(HOUR) == HOUR


def test_a_page_is_queued_half_its_interval_early_and_its_due_time_recovered() -> None:
    bounds = Bounds(low=5, high=7200, first=120)
    assert bounds.queue_after(600) == pytest.approx(300)
    assert bounds.due_after(bounds.queue_after(600)) == pytest.approx(600)
    assert bounds.queue_after(9) == 5  # never sooner than the minimum...
    assert bounds.due_after(5) == 5  # ...which is then its due time
    fixed = Bounds(low=5, high=7200, first=120, fixed=3600)
    assert fixed.queue_after(3600) == 3600 and fixed.due_after(3600) == 3600  # a ttl on time


def test_a_long_interval_is_queued_within_the_reach_of_its_queue_value() -> None:
    """A page due in two hours is queued MAX_LEAD before, not an hour: its queue value tells
    due times apart that far ahead (an hour ahead it would be clamped, going by when it was
    queued instead)."""
    bounds = Bounds(low=5, high=86400, first=120)
    for interval in (1800.0, 7200.0, 86400.0):
        assert bounds.queue_after(interval) == pytest.approx(interval - MAX_LEAD)
        assert bounds.due_after(bounds.queue_after(interval)) == pytest.approx(interval)
    weights = Weights()
    reach = [refresh_priority(weights, 0.0, ahead) for ahead in (MAX_LEAD - 60, MAX_LEAD)]
    assert 0.0 < reach[1] < reach[0]


@pytest.mark.parametrize(("status", "http_status", "error", "why"), [
    (Status.FAILED, 503, None, Unrefreshed.FAILED),          # the server's trouble
    (Status.FAILED, 500, None, Unrefreshed.FAILED),
    (Status.FAILED, 429, None, Unrefreshed.FAILED),
    (Status.FAILED, None, "timeout", Unrefreshed.FAILED),    # no answer
    (Status.FAILED, None, "dns", Unrefreshed.FAILED),
    (Status.BLOCKED, None, "robots: Disallow: /p/1", Unrefreshed.REFUSED),
    (Status.BLOCKED, None, "robots: robots.txt 503: nothing allowed", Unrefreshed.REFUSED),
    (Status.BLOCKED, None, "denylist", None),                # the operator's: as it says
    (Status.FAILED, 404, None, None),                        # gone: the page's new state
    (Status.FAILED, 410, None, None),
    (Status.FAILED, 403, None, None),
    (Status.REDIRECTED, 301, None, None),                    # moved
    (Status.FETCHED, 200, None, None),
])
def test_a_refresh_that_fails_or_is_refused_leaves_the_copy(
        status: Status, http_status: int | None, error: str | None,
        why: Unrefreshed | None) -> None:
    assert unrefreshed(status, http_status, error) is why


def test_a_copy_left_is_tried_again_after_as_long_as_it_went_unconfirmed() -> None:
    bounds = Bounds(low=5.0, high=7200.0, first=120.0)
    assert recheck_after(Unrefreshed.FAILED, 300.0, DAY, bounds) == 300.0
    assert recheck_after(Unrefreshed.FAILED, 600.0, DAY, bounds) == 600.0  # doubling in a row
    assert recheck_after(Unrefreshed.FAILED, 1.0, DAY, bounds) == 5.0
    assert recheck_after(Unrefreshed.FAILED, 5 * DAY, DAY, bounds) == 7200.0
    assert recheck_after(Unrefreshed.REFUSED, 300.0, 600.0, bounds) == 600.0  # robots.txt read again
    assert recheck_after(Unrefreshed.REFUSED, 300.0, DAY, bounds) == 7200.0
    assert recheck_after(Unrefreshed.FAILED, 300.0, DAY, Bounds(5.0, 7200.0, 120.0, 60.0)) == 60.0
