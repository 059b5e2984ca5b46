"""A host that cannot be reached for a reason that will not change soon is given up after a
bounded number of tries and time; the reasons read as sentences."""

from __future__ import annotations

from dataclasses import replace

import pytest

from crawlapp.adapters.http import valid_host_name
from crawlapp.core.politeness import (
    Answer,
    host_next,
    requeues_url,
    unreachable_sentence,
)
from crawlapp.core.records import ParkKind, ParkReason
from crawlapp.core.retry import HostTry, fetch_rule
from crawlapp.core.settings import SettingsError, load_settings

POLICY = replace(load_settings({}).backoff, max_backoff=60, park_after=8, give_up_after=3)


@pytest.mark.parametrize("error", ["ssrf_loopback", "ssrf_private", "ssrf_not_global", "dns",
                                   "invalid_host", "tls", "tls_certificate"])
def test_unreachable_errors_give_a_host_up_after_its_tries(error: str) -> None:
    assert fetch_rule(None, error).host is HostTry.UNREACHABLE and not requeues_url(None, error)
    first = host_next(10.0, 1.0, Answer(None, error), 0, POLICY)
    second = host_next(20.0, 1.0, Answer(None, error), first.failures, POLICY)
    third = host_next(30.0, 1.0, Answer(None, error), second.failures, POLICY)
    assert (first.next_time, first.failures, first.park_reason) == (12.0, 1, None)
    assert (second.next_time, second.failures, second.park_reason) == (24.0, 2, None)
    assert (third.failures, third.park_reason) == (3, ParkReason(ParkKind.UNREACHABLE, error))
    assert str(third.park_reason) == f"unreachable: {error}"
    assert third.next_time == float("inf")  # until an operator resumes it


@pytest.mark.parametrize(("status", "error"), [(200, None), (404, None), (503, None),
                                               (None, "timeout"), (None, "connect")])
def test_other_outcomes_never_give_a_host_up(status: int | None, error: str | None) -> None:
    assert fetch_rule(status, error).host is not HostTry.UNREACHABLE
    nxt = host_next(0.0, 1.0, Answer(status, error), 2, POLICY)
    assert nxt.park_reason is None or nxt.park_reason.kind is not ParkKind.UNREACHABLE


def test_the_time_spent_before_giving_up_is_bounded() -> None:
    policy = replace(POLICY, max_backoff=5, give_up_after=10)
    waits, failures, end = [], 0, 0.0
    for _ in range(9):
        nxt = host_next(end, 1.0, Answer(None, "dns"), failures, policy)
        waits.append(nxt.next_time - end)
        end, failures = nxt.next_time, nxt.failures
    assert max(waits) == 5 and sum(waits) <= 9 * 5


def test_reasons_read_as_sentences() -> None:
    assert "private-address guard" in unreachable_sentence("ssrf_loopback")
    assert "loopback" in unreachable_sentence("ssrf_loopback")
    assert "CRAWL_ALLOWED_NETWORKS" in unreachable_sentence("ssrf_private")
    assert "DNS" in unreachable_sentence("dns")
    assert "host name" in unreachable_sentence("invalid_host")
    assert "certificate" in unreachable_sentence("tls_certificate")


@pytest.mark.parametrize(("host", "valid"), [
    ("example.com", True), ("xn--bcher-kva.example", True), ("under_score.example", True),
    ("example.com.", True), ("a" * 63 + ".test", True), ("a" * 64 + ".test", False),
    ("a..b.test", False), ("-a.test", False), ("a-.test", False), ("", False),
    (".".join(["abcdefgh"] * 29), False),
])
def test_host_names_dns_can_be_asked_for(host: str, valid: bool) -> None:
    assert valid_host_name(host) is valid


def test_give_up_after_is_a_setting() -> None:
    assert load_settings({}).backoff.give_up_after == 3
    assert load_settings({"CRAWL_GIVE_UP_AFTER": "5"}).backoff.give_up_after == 5
    with pytest.raises(SettingsError, match="CRAWL_GIVE_UP_AFTER"):
        load_settings({"CRAWL_GIVE_UP_AFTER": "0"})
