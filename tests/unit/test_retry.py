"""The retry rule (core/retry.py): every outcome's row pinned as the crawler behaves, the
servers' waits and limits as their callers use them, and docs/retries.md not drifting."""

from __future__ import annotations

from pathlib import Path

import pytest

from crawlapp.app import stages
from crawlapp.app.beat import RETRY_SECONDS
from crawlapp.core import retry_doc
from crawlapp.core.retry import (
    FETCH,
    MET,
    SERVERS,
    FetchRule,
    HostTry,
    Outcome,
    RobotsTry,
    Server,
    UrlTry,
    fetch_rule,
    outcome_of,
)
from crawlapp.core.settings import load_settings

C, U, F = UrlTry.COUNTED, UrlTry.UNCOUNTED, UrlTry.FINAL
GOOD, KEPT, WAITS, THROTTLED, BACKED_OFF, GIVEN_UP = (
    HostTry.GOOD, HostTry.KEPT, HostTry.WAITS, HostTry.THROTTLED, HostTry.BACKED_OFF,
    HostTry.UNREACHABLE)
STANDS, R_BACKED_OFF, R_AGAIN, R_GIVEN_UP = (
    RobotsTry.STANDS, RobotsTry.BACKED_OFF, RobotsTry.AGAIN, RobotsTry.GIVEN_UP)

# (status, error, Retry-After) -> outcome, URL, host, robots.txt, grace
TABLE = [
    (200, None, None, Outcome.ANSWERED, F, GOOD, STANDS, False),
    (304, None, None, Outcome.ANSWERED, F, GOOD, STANDS, False),
    (301, None, None, Outcome.ANSWERED, F, GOOD, STANDS, False),
    (404, None, None, Outcome.ANSWERED, F, GOOD, STANDS, False),
    (429, None, "2", Outcome.RETRY_AFTER, C, WAITS, R_BACKED_OFF, False),
    (503, None, "Wed, 21 Oct 2015 07:28:00 GMT", Outcome.RETRY_AFTER, C, WAITS, R_BACKED_OFF,
     False),
    (429, None, None, Outcome.OVERLOADED, C, THROTTLED, R_BACKED_OFF, False),
    (503, None, "soon", Outcome.OVERLOADED, C, THROTTLED, R_BACKED_OFF, False),
    (503, "timeout", "2", Outcome.BROKEN_RETRY_AFTER, F, WAITS, R_BACKED_OFF, True),
    (429, "protocol", None, Outcome.BROKEN_OVERLOADED, F, THROTTLED, R_BACKED_OFF, True),
    (503, "connect", None, Outcome.OVERLOADED, C, THROTTLED, R_BACKED_OFF, False),
    (503, "too_large", None, Outcome.TOO_LARGE, F, GOOD, R_AGAIN, True),
    (500, None, None, Outcome.SERVER_ERROR, C, BACKED_OFF, R_BACKED_OFF, False),
    (502, None, None, Outcome.SERVER_ERROR, C, BACKED_OFF, R_BACKED_OFF, False),
    (504, None, None, Outcome.SERVER_ERROR, C, BACKED_OFF, R_BACKED_OFF, False),
    (501, None, None, Outcome.OTHER_5XX, F, GOOD, R_AGAIN, False),
    (505, None, None, Outcome.OTHER_5XX, F, GOOD, R_AGAIN, False),
    (None, "connect", None, Outcome.CONNECT, C, BACKED_OFF, R_BACKED_OFF, False),
    (None, "timeout", None, Outcome.TIMEOUT, F, BACKED_OFF, R_BACKED_OFF, True),
    (200, "timeout", None, Outcome.TIMEOUT, F, BACKED_OFF, R_BACKED_OFF, True),
    (200, "protocol", None, Outcome.PROTOCOL, F, BACKED_OFF, R_BACKED_OFF, True),
    (200, "too_large", None, Outcome.TOO_LARGE, F, GOOD, R_AGAIN, True),
    (None, "dns", None, Outcome.DNS, F, GIVEN_UP, R_GIVEN_UP, False),
    (None, "resolver", None, Outcome.RESOLVER, U, KEPT, R_AGAIN, False),
    (None, "tls", None, Outcome.TLS, F, GIVEN_UP, R_GIVEN_UP, False),
    (None, "tls_certificate", None, Outcome.TLS, F, GIVEN_UP, R_GIVEN_UP, False),
    (None, "invalid_host", None, Outcome.INVALID_HOST, F, GIVEN_UP, R_GIVEN_UP, False),
    (None, "ssrf_loopback", None, Outcome.ADDRESS_REFUSED, F, GIVEN_UP, R_GIVEN_UP, False),
    (None, "ssrf_not_global", None, Outcome.ADDRESS_REFUSED, F, GIVEN_UP, R_GIVEN_UP, False),
    (None, "invalid_url", None, Outcome.OTHER_ERROR, F, GOOD, R_AGAIN, False),
    (200, "unsupported_encoding", None, Outcome.OTHER_ERROR, F, GOOD, R_AGAIN, False),
    (None, "http_ReadError", None, Outcome.OTHER_ERROR, F, GOOD, R_AGAIN, False),
    (None, "error_ValueError", None, Outcome.OTHER_ERROR, F, GOOD, R_AGAIN, False),
    (None, None, None, Outcome.OTHER_ERROR, F, GOOD, R_AGAIN, False),
]


@pytest.mark.parametrize(("status", "error", "retry_after", "outcome", "url", "host",
                          "robots", "grace"), TABLE)
def test_each_outcome_is_retried_backed_off_or_final_as_the_table_says(
        status: int | None, error: str | None, retry_after: str | None, outcome: Outcome,
        url: UrlTry, host: HostTry, robots: RobotsTry, grace: bool) -> None:
    assert outcome_of(status, error, retry_after) is outcome
    assert fetch_rule(status, error, retry_after) == FetchRule(url, host, robots, grace)


def test_the_table_has_a_row_and_words_for_every_outcome() -> None:
    assert set(FETCH) == set(MET) == set(Outcome) == {row[3] for row in TABLE}


@pytest.mark.parametrize(("outcome", "count", "most", "again"), [
    (Outcome.SERVER_ERROR, 1, 2, True), (Outcome.SERVER_ERROR, 2, 2, True),
    (Outcome.SERVER_ERROR, 3, 2, False), (Outcome.OVERLOADED, 1, 0, False),
    (Outcome.CONNECT, 3, 3, True),
    # A failure of ours goes back whatever its count: no limit (docs/retries.md).
    (Outcome.RESOLVER, 1000, 2, True),
    (Outcome.TIMEOUT, 1, 2, False), (Outcome.ANSWERED, 0, 2, False),
])
def test_a_url_goes_back_at_most_crawl_max_retries_times(outcome: Outcome, count: int,
                                                          most: int, again: bool) -> None:
    assert FETCH[outcome].url_again(count, most) is again


@pytest.mark.parametrize(("outcome", "failures", "most", "final"), [
    (Outcome.SERVER_ERROR, 2, 2, False), (Outcome.SERVER_ERROR, 3, 2, True),
    (Outcome.TIMEOUT, 1, 0, True), (Outcome.OVERLOADED, 3, 2, True),
    # Never "nothing allowed" for these: asked again (no limit), or given up with the host.
    (Outcome.RESOLVER, 9, 2, False), (Outcome.OTHER_5XX, 9, 2, False),
    (Outcome.DNS, 9, 2, False),
])
def test_a_robots_txt_that_allows_nothing_stands_past_crawl_max_retries(
        outcome: Outcome, failures: int, most: int, final: bool) -> None:
    assert FETCH[outcome].robots_final(failures, most) is final


def test_the_servers_are_tried_again_as_their_callers_do() -> None:
    rows = {who: (r.first, r.cap, r.jitter, r.tries_again, r.for_setting)
            for who, r in SERVERS.items()}
    assert rows == {
        Server.STAGE: (2.0, 10.0, True, 60, ""),
        Server.RIDE_OUT: (0.1, 0.5, True, None, "CRAWL_REDIS_RIDE_OUT"),
        Server.NEXT_STAGE: (0.5, 1.0, False, None, "CRAWL_REDIS_RIDE_OUT"),
        Server.CLUSTER: (0.1, 1.0, False, 10, ""),
        Server.BLOB_STORE: (0.05, 20.0, True, 5, ""),
        Server.DISPATCHER: (0.1, 1.0, False, None, ""),
        Server.BEAT: (5.0, 5.0, False, None, ""),
    }
    assert [SERVERS[Server.DISPATCHER].wait(n) for n in range(1, 8)] == [
        0.1, 0.2, 0.4, 0.8, 1.0, 1.0, 1.0]
    assert SERVERS[Server.DISPATCHER].wait(10**6) == 1.0
    assert RETRY_SECONDS == 5.0
    assert {k: v for k, v in stages.RETRY.items() if k != "autoretry_for"} == {
        "retry_backoff": 2, "retry_backoff_max": 10, "retry_jitter": True, "max_retries": 60}
    # A chain's next task through a broker outage: waits of 0.5 s, then 1 s, for the ride-out.
    assert stages.app.conf.task_publish_retry_policy == {
        "max_retries": 1 + 30, "interval_start": 0.5, "interval_step": 0.5, "interval_max": 1.0}


def test_the_blob_store_asks_boto3_for_five_tries_again(tmp_path: Path) -> None:
    from crawlapp.adapters.blobstore import S3BlobStore, open_blobstore

    store = open_blobstore(load_settings({"CRAWL_DATA_DIR": str(tmp_path),
                                          "S3_BUCKET": "b",
                                          "S3_ENDPOINT_URL": "http://127.0.0.1:9"}))
    assert isinstance(store, S3BlobStore)
    assert store.client.meta.config.retries == {"total_max_attempts": 6, "mode": "standard"}


def test_retries_doc_is_up_to_date() -> None:
    assert retry_doc.DOC_PATH.read_text() == retry_doc.render(), \
        "docs/retries.md drifted from crawlapp/core/retry.py: run `make docs`"
