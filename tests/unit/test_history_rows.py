"""Which fetches the store stage keeps in the fetch history, and under which body key."""

from __future__ import annotations

import gzip
import hashlib
from dataclasses import replace

from crawlapp.adapters.blobstore import body_key
from crawlapp.core.records import Fetched, Lease, Page, RobotsAnswer, Status
from crawlapp.core.rows import HistoryRow
from crawlapp.stages.pages import apply_fetch, page_for, payload_digest
from crawlapp.stages.storing import _bodies, _history_row
from crawlapp.stages.tallies import store_counts

FETCHED = Page(url="http://a.test/p", url_hash="a" * 32, host="a.test", status=Status.FETCHED,
               http_status=200, fetched_at=1.0, content_hash="ab" * 32, body_gz=b"gz",
               request_headers="Host: a.test", response_headers="ETag: \"v\"",
               ip_address="127.0.0.1", payload_digest="sha1:X")


def row_of(page: Page, archive_unstored: bool = False) -> HistoryRow | None:
    page = replace(page)
    _bodies([page], set(), archive_unstored)
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
    assert row_of(replace(FETCHED, status=Status.FAILED, http_status=None, error="timeout",
                          content_hash=None, body_gz=None)) is None
    # A rendered near copy's body as fetched (CRAWL_RENDER_STORE_RAW) goes with its page.
    assert row_of(replace(FETCHED, near_duplicate=True, content_dedup=True, rendered=True,
                          body_gz=None, raw_gz=b"raw", raw_hash="ef" * 32)) is None


def test_unstored_pages_are_kept_with_their_body_as_fetched_for_the_archive() -> None:
    """CRAWL_ARCHIVE_UNSTORED: the dedup stage hands their body over as `raw_gz`."""
    for unstored in (replace(FETCHED, near_duplicate=True, content_dedup=True),
                     replace(FETCHED, unstored="noindex"), replace(FETCHED, unstored="canonical")):
        unstored = replace(unstored, body_gz=None, raw_gz=b"gz", raw_hash="ab" * 32)
        assert row_of(unstored) is None
        row = row_of(unstored, archive_unstored=True)
        assert row is not None and row.storage_key == body_key("ab" * 32)


def answered(status: int, body: bytes, headers: dict[str, str], bound: int) -> Page:
    fetched = Fetched("http://a.test/x", status, headers, body, ended=2.0,
                      request_headers="Host: a.test", response_headers="Server: t")
    return apply_fetch(page_for(Lease(0, "a.test", "t", "http://a.test/x", 0)), fetched, bound)


def test_redirects_and_error_answers_are_kept_with_their_body_bounded() -> None:
    moved = answered(301, b"<a href=/y>moved</a>", {"location": "/y"}, 1024)
    assert (moved.status, moved.truncated, moved.body_gz) == (Status.REDIRECTED, False, None)
    row = row_of(moved)
    assert row is not None and (row.http_status, row.truncated) == (301, False)
    assert row.storage_key == body_key(hashlib.sha256(b"<a href=/y>moved</a>").hexdigest())
    big = answered(503, b"x" * 5000, {}, 1000)
    assert big.status == Status.FAILED and big.truncated
    assert gzip.decompress(big.raw_gz or b"") == b"x" * 1000
    assert big.payload_digest == payload_digest(b"x" * 1000)  # of the body as archived
    row = row_of(big)
    assert row is not None and row.truncated and row.http_status == 503
    assert store_counts([big, moved])["archive:truncated"] == 1
    retried = replace(answered(503, b"busy", {}, 1000), status=Status.RETRIED)
    row = row_of(retried)  # a try whose URL goes back is an exchange of its own
    assert row is not None and (row.http_status, row.robots) == (503, False)
    bare = answered(404, b"gone", {}, 0)  # the status line and headers only
    assert bare.truncated and gzip.decompress(bare.raw_gz or b"") == b""


def test_a_robots_answer_is_kept_with_its_body() -> None:
    robots = Page(url="http://a.test/robots.txt", url_hash="b" * 32, host="a.test",
                  depth=-1, status=Status.ROBOTS, http_status=200, fetched_at=1.0,
                  robots=RobotsAnswer("http://a.test", 200, "", None), raw_gz=b"gz",
                  raw_hash="12" * 32)
    row = row_of(robots)
    assert row is not None and row.robots is True
    assert row.storage_key == body_key("12" * 32)
    assert row_of(replace(robots, http_status=None, raw_gz=None, raw_hash=None)) is None
