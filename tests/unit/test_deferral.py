"""When a crawl run until idle is done, and why the hosts it leaves for later wait."""

from __future__ import annotations

import time

import pytest

from crawlapp.core.deferral import is_done, robots_failed, waiting_reason
from crawlapp.observe.stats import deferred_lines

NOW = 1_000_000.0


@pytest.mark.parametrize(("next_due", "horizon", "done"), [
    (None, 30.0, True),           # nothing queued, nothing leased
    (NOW, 30.0, False),           # a lease held, or a host ready now
    (NOW + 30.0, 30.0, False),    # due within the horizon: waited for
    (NOW + 30.5, 30.0, True),     # later: left for the next crawl
    (NOW + 240.0, 30.0, True),    # robots.txt asked again in four minutes
    (NOW + 0.5, 0.0, True),       # horizon 0: only what is due now is waited for
    (NOW - 5.0, 0.0, False),      # overdue
])
def test_a_crawl_is_done_when_nothing_is_due_within_the_horizon(
        next_due: float | None, horizon: float, done: bool) -> None:
    assert is_done(next_due, NOW, horizon) is done


def test_robots_answers_that_allow_nothing_for_now() -> None:
    assert [s for s in (None, 0, 200, 301, 404, 429, 500, 503) if robots_failed(s)] == [
        0, 429, 500, 503]


@pytest.mark.parametrize(("failures", "throttled", "robots", "reason"), [
    (1, False, 503, "robots.txt answered 503"),
    (3, False, 0, "robots.txt not answered"),
    (2, False, 200, "backing off after 2 failure(s) in a row"),
    (0, True, 200, "throttled (429/503 without Retry-After)"),
    (1, True, 200, "throttled (429/503 without Retry-After)"),
    (0, False, 503, "asked to wait (Retry-After or Crawl-delay)"),  # robots.txt since answered
    (0, False, None, "asked to wait (Retry-After or Crawl-delay)"),
])
def test_why_a_host_waits(failures: int, throttled: bool, robots: int | None,
                          reason: str) -> None:
    assert waiting_reason(failures, throttled, robots) == reason


def test_deferred_hosts_for_people() -> None:
    until = time.mktime((2024, 5, 1, 12, 34, 56, 0, 0, -1))
    deferred = {f"h{i}.com": {"reason": "robots.txt answered 503", "until": until}
                for i in range(3)}
    assert deferred_lines(deferred, limit=2) == [
        "h0.com: robots.txt answered 503, asked again at 12:34:56",
        "h1.com: robots.txt answered 503, asked again at 12:34:56",
        "... and 1 more (crawlctl hosts --errors)"]
