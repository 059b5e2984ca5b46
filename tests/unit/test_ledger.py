"""The lease ledger: every way a lease of a fetch batch ends, and the releases that end them
carrying their host's state after its last request."""

from __future__ import annotations

import math

import pytest

from crawlapp.core.ledger import End, LeaseLedger, given_up
from crawlapp.core.politeness import Throttle
from crawlapp.core.records import Fetched, Lease, ParkKind, ParkReason, Release
from crawlapp.core.robots import RobotsPolicy, robots_answer
from crawlapp.core.settings import load_settings

SETTINGS = load_settings({"CRAWL_DEFAULT_DELAY": "1", "CRAWL_DELAY_MARGIN": "0"})
BACKOFF = SETTINGS.backoff
DELAY_3 = robots_answer("http://a.test/robots.txt", 200, None,
                        b"User-agent: *\nCrawl-delay: 3\nDisallow: /private\n", None, 0)


def lease(path: str, host: str = "a.test", not_before: float = 0.0) -> Lease:
    return Lease(0, host, "token", f"http://{host}{path}", 1, not_before)


def answer(status: int | None, ended: float, error: str | None = None,
           headers: dict[str, str] | None = None) -> Fetched:
    return Fetched("", status, headers or {}, b"", error, ended - 0.1, ended)


def ledger(failures: dict[str, int] | None = None,
           policies: dict[str, RobotsPolicy | None] | None = None,
           throttles: dict[str, Throttle] | None = None) -> LeaseLedger:
    return LeaseLedger(SETTINGS, dict(policies or {}), throttles or {},
                       failures or {"a.test": 0, "b.test": 0}, jitter=lambda: 0.0)


def by_url(releases: list[Release]) -> dict[str, Release]:
    return {r.lease.url: r for r in releases}


def test_an_answered_page_frees_its_host_a_delay_after_the_answer() -> None:
    book, first = ledger(), lease("/1")
    assert book.next_start(first, answer(200, 100.0)) == 101.0  # the chain goes on
    book.answered(first, answer(200, 100.0), retry=False)
    (ended,) = book.releases()
    assert ended == Release(first, 101.0)


def test_the_robots_crawl_delay_sets_the_hosts_next_time() -> None:
    book, page = ledger(policies={"http://a.test": DELAY_3}), lease("/1")
    book.answered(page, answer(404, 50.0), retry=False)
    assert book.settled(page).next_time == 53.0


def test_a_retried_url_goes_back_behind_its_hosts_others_and_the_host_is_throttled() -> None:
    book, page = ledger(), lease("/1")
    assert book.next_start(page, answer(503, 100.0)) is None  # nothing more asked of it
    book.answered(page, answer(503, 100.0), retry=True)
    (ended,) = book.releases()
    assert (ended.requeue, ended.behind) == (True, True)
    assert ended.next_time == 100.0 + BACKOFF.throttle_seconds
    assert book.raised["a.test"].level == 1


def test_a_failed_url_past_its_retries_is_done_and_its_host_backs_off() -> None:
    book, page = ledger({"a.test": 2}), lease("/1")
    book.answered(page, answer(500, 100.0), retry=False)
    (ended,) = book.releases()
    assert (ended.requeue, ended.failures, ended.park_reason) == (False, 3, None)
    assert ended.next_time == 100.0 + 4  # the delay doubled for each failure past the first


def test_a_host_failing_too_often_in_a_row_is_parked() -> None:
    book, page = ledger({"a.test": BACKOFF.park_after - 1}), lease("/1")
    book.answered(page, answer(None, 100.0, error="timeout"), retry=False)
    (ended,) = book.releases()
    assert ended.park_reason == ParkReason(
        ParkKind.FAILING, f"{BACKOFF.park_after} failures in a row, last: timeout")
    assert ended.next_time >= 100.0 + BACKOFF.park_seconds


def test_a_robots_txt_that_fails_defers_its_host_and_its_waiting_urls_alike() -> None:
    book, asker, other = ledger(), lease("/1"), lease("/2")
    ended = book.robots(asker, answer(503, 100.0))
    book.waiting(other)
    assert (ended.requeue, ended.behind, ended.failures) == (True, False, 1)
    assert ended.next_time == 100.0 + BACKOFF.robots_retry
    waiting = book.settled(other)
    assert (waiting.requeue, waiting.behind) == (True, False)
    assert (waiting.next_time, waiting.failures) == (ended.next_time, ended.failures)
    assert [r.lease for r in book.releases()] == [asker, other]


def test_an_unreachable_host_is_given_up_and_its_url_not_requeued() -> None:
    book, asker = ledger({"a.test": BACKOFF.give_up_after - 1}), lease("/1")
    ended = book.robots(asker, answer(None, 100.0, error="dns"))
    assert given_up(ended) and not ended.requeue
    assert ended.park_reason == ParkReason(ParkKind.UNREACHABLE, "dns")
    assert math.isinf(ended.next_time)


def test_an_unreachable_host_below_the_limit_backs_off_and_asks_again() -> None:
    book, asker = ledger(), lease("/1")
    ended = book.robots(asker, answer(None, 100.0, error="ssrf_private"))
    assert not given_up(ended) and ended.requeue and ended.failures == 1


def test_a_refused_url_ends_now_or_at_its_hosts_time_with_its_failures() -> None:
    book, refused = ledger({"b.test": 4}), lease("/private", "b.test", not_before=90.0)
    book.refused(refused, now=80.0)
    assert book.releases() == [Release(refused, 90.0, failures=4)]


def test_a_refused_url_of_a_host_that_was_asked_carries_the_hosts_state() -> None:
    book, refused, page = ledger(), lease("/private"), lease("/1")
    book.refused(refused, now=80.0)
    book.answered(page, answer(200, 100.0), retry=False)
    assert book.settled(refused) == Release(refused, 101.0)


def test_urls_not_asked_go_back_with_the_hosts_state_after_its_last_request() -> None:
    book, first, second = ledger(), lease("/1"), lease("/2")
    assert book.next_start(first, answer(None, 100.0, error="connect")) is None
    book.not_asked(second)
    book.answered(first, answer(None, 100.0, error="connect"), retry=True)
    releases = by_url(book.releases())
    assert releases[second.url].requeue and not releases[second.url].behind
    assert releases[second.url].next_time == releases[first.url].next_time
    assert releases[second.url].failures == releases[first.url].failures == 1


def test_a_host_in_good_standing_again_has_its_failures_forgotten() -> None:
    book, first, second = ledger({"a.test": 3}), lease("/1"), lease("/2")
    assert book.next_start(first, answer(200, 100.0)) == 101.0
    assert book.failures["a.test"] == 0
    book.refused(second, now=100.0)  # a refusal after it carries no failure either
    assert book.releases()[0].failures == 0


def test_a_host_released_early_is_not_released_again() -> None:
    book, first, second, third = ledger(), lease("/1"), lease("/2"), lease("/3")
    results = [answer(200, 100.0), answer(200, 101.5)]
    assert book.next_start(first, results[0]) == 101.0
    assert book.next_start(second, results[1]) == 102.5
    early = book.host_answered([first, second, third], results)
    assert early is not None
    assert [(r.lease, r.next_time, r.requeue) for r in early] == [
        (first, 102.5, False), (second, 102.5, False), (third, 102.5, True)]
    book.sent_early(by_url(early))
    book.answered(first, results[0], retry=False)
    book.answered(second, results[1], retry=False)
    book.not_asked(third)
    assert book.releases() == []


def test_a_host_whose_chain_ends_with_an_answer_to_retry_is_not_released_early() -> None:
    book, first = ledger(), lease("/1")
    assert book.host_answered([first], [answer(429, 100.0)]) is None


def test_a_page_kept_to_render_is_not_released() -> None:
    book, page = ledger(), lease("/1")
    book.answered(page, answer(200, 100.0), retry=False)
    book.keep(page)
    assert book.releases() == [] and book.settled(page).next_time == 101.0


def test_releases_come_in_the_order_the_leases_ended_by_kind() -> None:
    book = ledger()
    asked, not_asked = lease("/1"), lease("/2")
    asker, waiting, refused = lease("/1", "b.test"), lease("/2", "b.test"), lease("/x", "b.test")
    book.answered(asked, answer(None, 100.0, error="connect"), retry=True)
    book.not_asked(not_asked)
    book.robots(asker, answer(500, 100.0))
    book.waiting(waiting)
    book.refused(refused, now=100.0)
    assert [r.lease for r in book.releases()] == [asker, refused, waiting, not_asked, asked]
    assert list(End) == [End.ROBOTS, End.REFUSED, End.WAITING, End.NOT_ASKED, End.ANSWERED]


@pytest.mark.parametrize("status", [301, 404, 410])
def test_any_final_answer_leaves_the_host_in_good_standing(status: int) -> None:
    book, page = ledger({"a.test": 1}), lease("/1")
    assert book.next_start(page, answer(status, 10.0)) == 11.0


@pytest.mark.parametrize("reason", [
    ParkReason(ParkKind.PAUSED), ParkReason(ParkKind.UNREACHABLE, "ssrf_loopback"),
    ParkReason(ParkKind.FAILING, "8 failures in a row, last: 503")])
def test_a_park_reason_is_kept_as_its_text_and_read_back(reason: ParkReason) -> None:
    assert ParkReason.parse(str(reason)) == reason


def test_a_failure_of_ours_sends_the_url_back_and_the_host_keeps_its_count() -> None:
    book, page = ledger(failures={"a.test": 1}), lease("/1")
    assert book.next_start(page, answer(None, 100.0, "resolver")) is None
    book.answered(page, answer(None, 100.0, "resolver"), retry=True)
    (ended,) = book.releases()
    assert (ended.next_time, ended.failures, ended.requeue, ended.park_reason) == (
        101.0, 1, True, None)
