from dataclasses import replace

import pytest

from crawlapp.core.politeness import (
    Answer,
    Throttle,
    host_next,
    parse_retry_after,
    politeness_key,
    requeues_url,
)
from crawlapp.core.records import ParkKind, ParkReason
from crawlapp.core.retry import HostTry, fetch_rule
from crawlapp.core.settings import load_settings

DEFAULT_POLICY = load_settings({}).backoff
POLICY = replace(DEFAULT_POLICY, max_backoff=60, max_retry_after=120, park_after=3, park_seconds=600)


def test_success_waits_the_delay_and_resets_failures() -> None:
    assert host_next(100.0, 1.0, Answer(200), failures=2, policy=POLICY) == (
        host_next(100.0, 1.0, Answer(404), failures=0, policy=POLICY))
    nxt = host_next(100.0, 1.0, Answer(200), failures=2, policy=POLICY)
    assert (nxt.next_time, nxt.failures, nxt.park_reason) == (101.0, 0, None)


@pytest.mark.parametrize(("status", "error", "transient"), [
    (200, None, False), (404, None, False), (429, None, True), (500, None, True),
    (503, None, True), (None, "timeout", True), (None, "connect", True),
    (None, "too_large", False), (None, "ssrf_private", False),
])
def test_failures_that_back_the_host_off(status: int | None, error: str | None,
                                         transient: bool) -> None:
    backed_off = (HostTry.WAITS, HostTry.THROTTLED, HostTry.BACKED_OFF)
    assert (fetch_rule(status, error).host in backed_off) is transient


def test_backoff_grows_exponentially_and_is_capped() -> None:
    policy = replace(DEFAULT_POLICY, park_after=99)
    waits = [host_next(0.0, 1.0, Answer(500), failures=f, policy=policy).next_time
             for f in range(10)]
    assert waits[:4] == [1.0, 2.0, 4.0, 8.0]  # one failure costs only the delay
    assert max(waits) == 300.0


def test_retry_after_seconds_and_dates_are_honoured_and_capped() -> None:
    assert host_next(10.0, 1.0, Answer(429, None, "2"), 0, POLICY).next_time == 12.0
    assert host_next(10.0, 1.0, Answer(503, None, "100000"), 0, POLICY).next_time == 130.0
    date = "Wed, 21 Oct 2015 07:28:00 GMT"
    now = parse_retry_after(date, 0.0)
    assert now is not None and now > 1e9
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", 1445412480.0 + 5) == 0.0
    assert parse_retry_after("soon", 0.0) is None
    assert parse_retry_after(None, 0.0) is None


def test_an_abandoned_response_adds_a_grace_period() -> None:
    assert host_next(0.0, 1.0, Answer(200, "too_large"), 0, POLICY).next_time == 6.0
    assert host_next(0.0, 1.0, Answer(None, "timeout"), 0, POLICY).next_time == 6.0
    assert host_next(0.0, 1.0, Answer(None, "connect"), 0, POLICY).next_time == 1.0


def test_a_host_failing_again_and_again_is_parked_with_a_reason() -> None:
    nxt = host_next(0.0, 1.0, Answer(None, "timeout"), failures=2, policy=POLICY)
    assert nxt.failures == 3 and nxt.next_time == 605.0
    assert nxt.park_reason == ParkReason(ParkKind.FAILING, "3 failures in a row, last: timeout")


@pytest.mark.parametrize(("status", "error", "retry"), [
    (503, None, True), (429, None, True), (None, "connect", True), (None, "timeout", False),
    (404, None, False), (None, "too_large", False),
])
def test_which_failures_are_retried(status: int | None, error: str | None, retry: bool) -> None:
    assert requeues_url(status, error) is retry


def test_429_or_503_without_retry_after_throttles_60_s_doubling_to_a_day_with_jitter() -> None:
    policy = DEFAULT_POLICY
    first = host_next(0.0, 1.0, Answer(429), 0, policy)
    assert first.next_time == 60.0 and first.failures == 0
    assert first.throttle == Throttle(1, 60.0 + 1800.0)
    second = host_next(100.0, 1.0, Answer(503), 0, policy, throttled=1)
    assert second.next_time == 220.0 and second.throttle == Throttle(2, 220.0 + 1800.0)
    capped = host_next(0.0, 1.0, Answer(429), 0, policy, throttled=30, jitter=0.999)
    assert 86400.0 <= capped.next_time < 86400.0 * 1.1
    jittered = host_next(0.0, 1.0, Answer(429), 0, policy, jitter=0.5)
    assert jittered.next_time == 63.0


def test_a_throttle_level_is_forgiven_after_a_quiet_half_hour() -> None:
    throttle = host_next(0.0, 1.0, Answer(429), 0, DEFAULT_POLICY, throttled=2).throttle
    assert throttle is not None and throttle.level == 3
    assert throttle.level_at(240.0 + 1799.0) == 3
    assert throttle.level_at(240.0 + 1800.0) == 0


def test_a_retry_after_is_obeyed_as_it_is_without_escalating() -> None:
    nxt = host_next(0.0, 1.0, Answer(503, None, "3"), 5, DEFAULT_POLICY, throttled=4)
    assert (nxt.next_time, nxt.failures, nxt.throttle) == (3.0, 5, None)
    assert host_next(0.0, 1.0, Answer(429, None, "999999"), 0, DEFAULT_POLICY).next_time == 86400.0


def test_a_failing_robots_txt_defers_its_host_for_minutes() -> None:
    policy = DEFAULT_POLICY
    nxt = host_next(0.0, 1.0, Answer(503), 0, policy, robots=True)
    assert (nxt.next_time, nxt.failures, nxt.throttle) == (60.0, 1, None)
    assert host_next(0.0, 1.0, Answer(500), 1, policy, robots=True).next_time == 120.0
    assert host_next(0.0, 1.0, Answer(429, None, "900"), 1, policy, robots=True).next_time == 900.0
    assert host_next(0.0, 1.0, Answer(None, "connect"), 0, policy, robots=True).next_time == 60.0
    assert host_next(0.0, 1.0, Answer(200), 2, policy, robots=True).failures == 0


def test_the_politeness_key_by_host_domain_or_address() -> None:
    assert politeness_key("host", "docs.example.co.uk:8080") == "docs.example.co.uk:8080"
    assert politeness_key("domain", "docs.example.co.uk:8080") == "domain:example.co.uk"
    assert politeness_key("domain", "WWW.Example.COM.") == "domain:example.com"
    assert politeness_key("domain", "127.0.0.1:80") == "domain:127.0.0.1"
    assert politeness_key("ip", "a.test:80", "10.0.0.7") == "ip:10.0.0.7"
    assert politeness_key("ip", "[::1]:8080") == "ip:::1"  # an address is its own key


@pytest.mark.parametrize("robots", [False, True])
def test_a_failure_of_ours_requeues_the_url_and_leaves_the_host_as_it_stood(robots: bool) -> None:
    """The crawler's resolver failing (`resolver`: Redis and the system's resolver both
    failing the process) is not the host's failure: a delay, its failures kept, never
    parked or given up."""
    assert requeues_url(None, "resolver")
    assert fetch_rule(None, "resolver").host is HostTry.KEPT
    policy = replace(POLICY, give_up_after=1, park_after=1)
    nxt = host_next(10.0, 1.0, Answer(None, "resolver"), failures=2, policy=policy,
                    robots=robots)
    assert (nxt.next_time, nxt.failures, nxt.park_reason) == (11.0, 2, None)
