import pytest

from crawlapp.core.politeness import Backoff, host_next, is_retryable, is_transient, parse_retry_after

POLICY = Backoff(max_backoff=60, max_retry_after=120, park_after=3, park_seconds=600)


def test_success_waits_the_delay_and_resets_failures() -> None:
    assert host_next(100.0, 1.0, 200, None, None, failures=2, policy=POLICY) == (
        host_next(100.0, 1.0, 404, None, None, failures=0, policy=POLICY))
    nxt = host_next(100.0, 1.0, 200, None, None, failures=2, policy=POLICY)
    assert (nxt.next_time, nxt.failures, nxt.park_reason) == (101.0, 0, None)


@pytest.mark.parametrize(("status", "error", "transient"), [
    (200, None, False), (404, None, False), (429, None, True), (500, None, True),
    (503, None, True), (None, "timeout", True), (None, "connect", True),
    (None, "too_large", False), (None, "ssrf_private", False),
])
def test_transient_failures(status: int | None, error: str | None, transient: bool) -> None:
    assert is_transient(status, error) is transient


def test_backoff_grows_exponentially_and_is_capped() -> None:
    waits = [host_next(0.0, 1.0, 500, None, None, failures=f, policy=Backoff(park_after=99)
                       ).next_time for f in range(10)]
    assert waits[:4] == [2.0, 4.0, 8.0, 16.0]
    assert max(waits) == 300.0


def test_retry_after_seconds_and_dates_are_honoured_and_capped() -> None:
    assert host_next(10.0, 1.0, 429, None, "2", 0, POLICY).next_time == 12.0
    assert host_next(10.0, 1.0, 503, None, "100000", 0, POLICY).next_time == 130.0
    date = "Wed, 21 Oct 2015 07:28:00 GMT"
    now = parse_retry_after(date, 0.0)
    assert now is not None and now > 1e9
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", 1445412480.0 + 5) == 0.0
    assert parse_retry_after("soon", 0.0) is None
    assert parse_retry_after(None, 0.0) is None


def test_an_abandoned_response_adds_a_grace_period() -> None:
    assert host_next(0.0, 1.0, 200, "too_large", None, 0, POLICY).next_time == 6.0
    assert host_next(0.0, 1.0, None, "timeout", None, 0, POLICY).next_time == 7.0
    assert host_next(0.0, 1.0, None, "connect", None, 0, POLICY).next_time == 2.0


def test_a_host_failing_again_and_again_is_parked_with_a_reason() -> None:
    nxt = host_next(0.0, 1.0, None, "timeout", None, failures=2, policy=POLICY)
    assert nxt.failures == 3 and nxt.next_time == 605.0
    assert nxt.park_reason is not None and "timeout" in nxt.park_reason


@pytest.mark.parametrize(("status", "error", "retry"), [
    (503, None, True), (429, None, True), (None, "connect", True), (None, "timeout", False),
    (404, None, False), (None, "too_large", False),
])
def test_which_failures_are_retried(status: int | None, error: str | None, retry: bool) -> None:
    assert is_retryable(status, error) is retry
