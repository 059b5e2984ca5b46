import pytest

from crawlapp.core.recrawl import DAY, HOUR, MAX_INTERVAL, MIN_INTERVAL, next_schedule, tier_of


def test_first_interval_depends_on_importance() -> None:
    assert next_schedule(0.0, None, True, 0.9).interval == DAY
    assert next_schedule(0.0, None, True, 0.1).interval == 7 * DAY


def test_changes_shorten_and_stability_lengthens_within_bounds() -> None:
    assert next_schedule(100.0, DAY, True, 0.5) .interval == DAY / 2
    assert next_schedule(100.0, DAY, False, 0.5).next_at == 100.0 + 1.5 * DAY
    assert next_schedule(0.0, MIN_INTERVAL, True, 0.5).interval == MIN_INTERVAL
    assert next_schedule(0.0, MAX_INTERVAL, False, 0.5).interval == MAX_INTERVAL


def test_a_page_moves_between_tiers_as_it_changes() -> None:
    interval = DAY
    tiers = []
    for _ in range(6):
        schedule = next_schedule(0.0, interval, True, 0.5)
        interval = schedule.interval
        tiers.append(schedule.tier)
    assert tiers[0] == "daily" and tiers[-1] == "hourly"


@pytest.mark.parametrize(("interval", "tier"), [(HOUR, "hourly"), (DAY, "daily"),
                                                (7 * DAY, "weekly"), (30 * DAY, "monthly")])
def test_tiers(interval: float, tier: str) -> None:
    assert tier_of(interval) == tier
