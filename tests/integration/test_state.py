"""Database repository and blob stores on the real Postgres, SQLite and the S3 server."""

from __future__ import annotations

import gzip
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy.exc import DBAPIError

from crawlapp.adapters.blobstore import LocalBlobStore, S3BlobStore, body_key, open_blobstore
from crawlapp.adapters.db import repository
from crawlapp.adapters.db.engine import session_factory, upgrade
from crawlapp.adapters.db.models import Host
from crawlapp.core.records import RobotsAnswer
from crawlapp.core.rows import FetchOutcome, LinkEdge, UrlRow
from crawlapp.core.settings import load_settings
from crawlapp.core.urls import url_hash

NOW = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture(params=["sqlite", "postgres"])
def sessions(request: pytest.FixtureRequest, tmp_path: Path):  # type: ignore[no-untyped-def]
    env = {"CRAWL_DATA_DIR": str(tmp_path)}
    if request.param == "postgres":
        env["DATABASE_URL"] = request.getfixturevalue("pg_url")
    settings = load_settings(env)
    upgrade(settings)
    return session_factory(settings)


def row(url: str, depth: int = 0) -> UrlRow:
    return UrlRow(url_hash(url), url, "a.com", depth, "queued", NOW, priority=1.0)


def test_only_new_urls_are_reported_new(sessions) -> None:  # type: ignore[no-untyped-def]
    with sessions.begin() as s:
        assert repository.add_urls(s, [row("http://a.com/1"), row("http://a.com/2")]) == {
            url_hash("http://a.com/1"), url_hash("http://a.com/2")}
    with sessions.begin() as s:
        assert repository.add_urls(s, [row("http://a.com/2"), row("http://a.com/3")]) == {
            url_hash("http://a.com/3")}
        assert repository.status_counts(s) == {"queued": 3}


def test_fetch_results_and_links_are_recorded_once(sessions) -> None:  # type: ignore[no-untyped-def]
    h = url_hash("http://a.com/1")
    with sessions.begin() as s:
        repository.add_urls(s, [row("http://a.com/1")])
        edge = LinkEdge(h, url_hash("http://a.com/2"), "two", False)
        repository.add_links(s, [edge, edge])
        repository.add_links(s, [edge])
        repository.record_fetches(s, [FetchOutcome(h, "failed", last_error="timeout",
                                                   last_fetched_at=NOW)])
        repository.record_fetches(s, [FetchOutcome(h, "fetched", http_status=200,
                                                   content_hash="ab" * 32, last_fetched_at=NOW)])
    with sessions() as s:
        url = repository.get_url(s, h)
        assert url is not None
        assert (url.status, url.http_status, url.fail_count) == ("fetched", 200, 1)
        assert repository.outbound_links(s, h) == 1


def test_a_batch_of_rows_is_written_whole_with_every_value(sessions) -> None:  # type: ignore[no-untyped-def]
    """A batch with a URL twice, odd characters in text columns, None and flags: each row
    once, each value as given (on Postgres the rows go as arrays: batching.unnested)."""
    odd = 'http://a.com/q?x="a,b"&y={1}\\z'
    rows = [row("http://a.com/1", depth=3)._replace(hops=0, link_context=0.5),
            row(odd)._replace(hops=2, link_context=None),
            row("http://a.com/1", depth=3)._replace(hops=0, link_context=0.5)]
    with sessions.begin() as s:
        assert repository.add_urls(s, rows) == {url_hash("http://a.com/1"), url_hash(odd)}
        repository.record_fetches(s, [
            FetchOutcome(url_hash(odd), "failed", last_error="timeout", last_fetched_at=NOW),
            FetchOutcome(url_hash(odd), "fetched", http_status=200,
                         title='a "title", {with} \\ marks', simhash=-(2 ** 63), noindex=True,
                         last_fetched_at=NOW)])
    with sessions() as s:
        url = repository.get_url(s, url_hash(odd))
        assert url is not None
        assert (url.url, url.hops, url.link_context, url.depth) == (odd, 2, None, 0)
        assert (url.status, url.http_status, url.title, url.simhash, url.noindex,
                url.last_error, url.fail_count) == (
            "fetched", 200, 'a "title", {with} \\ marks', -(2 ** 63), True, None, 0)


def test_a_value_too_long_for_its_column_fails_the_batch(pg_url: str, tmp_path: Path) -> None:
    """Not cut short: Postgres's varchar(255) column refuses a longer host."""
    settings = load_settings({"CRAWL_DATA_DIR": str(tmp_path), "DATABASE_URL": pg_url})
    upgrade(settings)
    too_long = row("http://a.com/long")._replace(host="h" * 300)
    with session_factory(settings)() as s, pytest.raises(DBAPIError, match="too long"):
        repository.add_urls(s, [row("http://a.com/ok"), too_long])


def test_local_blob_store_writes_a_key_once(tmp_path: Path) -> None:
    store = LocalBlobStore(tmp_path)
    key = body_key("ab" * 32)
    assert store.put_many([(key, b"one", "text/html")]) == 1
    assert store.put(key, b"two", "text/html") is False
    assert store.get(key) == b"one"
    large = bytes(range(256)) * 40_000  # 10 MB, written whole
    assert store.put(body_key("cd" * 32), large, None)
    assert store.get(body_key("cd" * 32)) == large


def test_local_blob_store_writes_into_a_folder_removed_since_and_leaves_no_temporary_file(
        tmp_path: Path) -> None:
    store = LocalBlobStore(tmp_path)
    first, second = body_key("ab" * 32), body_key("ab" * 31 + "cd")  # the same folder
    assert store.put(first, b"one", None)
    assert store.delete(first)
    (tmp_path / first).parent.rmdir()  # emptied and removed by hand
    assert store.put(second, b"two", None)
    assert store.get(second) == b"two"
    assert sorted(p.name for p in (tmp_path / second).parent.iterdir()) == [
        (tmp_path / second).name]


def test_s3_blob_store_round_trip(s3_endpoint: str, tmp_path: Path) -> None:
    settings = load_settings({"CRAWL_DATA_DIR": str(tmp_path), "S3_ENDPOINT_URL": s3_endpoint,
                              "S3_BUCKET": "crawl-test"})
    store = open_blobstore(settings)
    assert isinstance(store, S3BlobStore)
    store.ensure_bucket()
    body = gzip.compress(b"<html>hi</html>")
    keys = [body_key(f"{i:02x}" * 32) for i in range(3)]
    assert store.put_many([(k, body, "text/html") for k in keys]) == 3
    assert store.put_many([(k, body, "text/html") for k in keys]) == 0
    assert store.put(keys[0], gzip.compress(b"other"), "text/html") is False  # one request
    assert gzip.decompress(store.get(keys[0])) == b"<html>hi</html>"


@pytest.mark.parametrize("bad", ["../../etc/passwd", "ABCDEF0123456789", "abc"])
def test_object_keys_come_only_from_hashes(bad: str) -> None:
    with pytest.raises(ValueError):
        body_key(bad)


def test_robots_answers_are_recorded_in_one_statement_the_last_one_kept(sessions) -> None:  # type: ignore[no-untyped-def]
    later = datetime(2026, 1, 2, tzinfo=UTC)
    with sessions.begin() as s:
        repository.save_robots(s, [RobotsAnswer("http://a.com", 200, "User-agent: *\n", None),
                                   RobotsAnswer("http://b.com", 404, "", None)], [NOW, NOW])
    with sessions.begin() as s:
        repository.save_robots(s, [
            RobotsAnswer("http://a.com", 503, "", None),
            RobotsAnswer("http://a.com", 200, "User-agent: *\nCrawl-delay: 2\n", 2.0),
            RobotsAnswer("http://c.com", 200, "Disallow: /", None)], [NOW, later, later])
        repository.save_robots(s, [], [])
    with sessions() as s:
        assert repository.robots_of(s, "http://a.com") == (200, "User-agent: *\nCrawl-delay: 2\n")
        assert repository.robots_of(s, "http://b.com") == (404, "")
        assert repository.robots_of(s, "http://c.com") == (200, "Disallow: /")
        host = s.get(Host, "http://a.com")
        assert host is not None and host.crawl_delay == 2.0
        assert host.robots_fetched_at.replace(tzinfo=UTC) == later
