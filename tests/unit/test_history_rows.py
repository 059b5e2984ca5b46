"""Which fetches the store stage keeps in the fetch history, and under which body key."""

from __future__ import annotations

from dataclasses import replace

from crawlapp.adapters.blobstore import body_key
from crawlapp.core.records import Page, RobotsAnswer, Status
from crawlapp.core.rows import HistoryRow
from crawlapp.stages.storing import _bodies, _history_row

FETCHED = Page(url="http://a.test/p", url_hash="a" * 32, host="a.test", status=Status.FETCHED,
               http_status=200, fetched_at=1.0, content_hash="ab" * 32, body_gz=b"gz",
               request_headers="Host: a.test", response_headers="ETag: \"v\"",
               ip_address="127.0.0.1", payload_digest="sha1:X")


def row_of(page: Page) -> HistoryRow | None:
    page = replace(page)
    _bodies([page], set())
    return _history_row(page)


def test_a_stored_page_is_kept_with_its_exchange() -> None:
    row = row_of(FETCHED)
    assert row is not None and row.storage_key == body_key("ab" * 32)
    assert (row.request_headers, row.ip_address, row.not_modified, row.robots) == (
        "Host: a.test", "127.0.0.1", False, False)


def test_a_304_is_kept_without_a_body() -> None:
    row = row_of(replace(FETCHED, http_status=304, not_modified=True, content_hash=None,
                         body_gz=None, payload_digest=None))
    assert row is not None and row.storage_key is None and row.not_modified is True


def test_a_rendered_page_is_kept_with_its_body_as_fetched_only() -> None:
    rendered = replace(FETCHED, rendered=True, content_hash="cd" * 32)
    assert row_of(rendered) is None  # CRAWL_RENDER_STORE_RAW off: the fetched body is gone
    row = row_of(replace(rendered, raw_gz=b"raw", raw_hash="ef" * 32))
    assert row is not None and row.storage_key == body_key("ef" * 32)


def test_pages_without_a_kept_body_are_not_kept() -> None:
    assert row_of(replace(FETCHED, near_duplicate=True, content_dedup=True)) is None
    assert row_of(replace(FETCHED, unstored="noindex")) is None
    assert row_of(replace(FETCHED, status=Status.FAILED, http_status=404, content_hash=None,
                          body_gz=None)) is None
    assert row_of(replace(FETCHED, status=Status.REDIRECTED, http_status=301,
                          content_hash=None, body_gz=None)) is None


def test_a_robots_answer_is_kept_with_its_body() -> None:
    robots = Page(url="http://a.test/robots.txt", url_hash="b" * 32, host="a.test",
                  depth=-1, status=Status.ROBOTS, http_status=200, fetched_at=1.0,
                  robots=RobotsAnswer("http://a.test", 200, "", None), raw_gz=b"gz",
                  raw_hash="12" * 32)
    row = row_of(robots)
    assert row is not None and row.robots is True
    assert row.storage_key == body_key("12" * 32)
    assert row_of(replace(robots, http_status=None, raw_gz=None, raw_hash=None)) is None
