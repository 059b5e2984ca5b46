"""Migration 0012 on SQLite and Postgres (where the fetch history is partitioned by month):
the fetches recorded before it keep their rows, untruncated and of no known protocol, and the
export writes them as before; a fetch recorded after it keeps its flags."""

from __future__ import annotations

import gzip
import hashlib
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa

from crawlapp.adapters.blobstore import body_key
from crawlapp.adapters.context import Context
from crawlapp.adapters.db import repository
from crawlapp.adapters.db.engine import upgrade
from crawlapp.adapters.db.models import Fetch
from crawlapp.core.rows import HistoryRow
from crawlapp.core.settings import load_settings
from crawlapp.ops.exporting import export_warc
from crawlapp.ops.warc import read_records
from tests.integration.test_partitions import downgrade

BEFORE = datetime(2026, 1, 1, tzinfo=UTC)
AFTER = datetime(2026, 2, 1, tzinfo=UTC)


@pytest.fixture(params=["sqlite", "postgres"])
def ctx(request: pytest.FixtureRequest, tmp_path: Path, redis_url: str) -> Context:
    env = {"CRAWL_DATA_DIR": str(tmp_path), "CRAWL_REDIS_URL": redis_url}
    if request.param == "postgres":
        env["DATABASE_URL"] = request.getfixturevalue("pg_url")
    return Context(load_settings(env))


def test_earlier_fetches_stay_whole_and_later_ones_keep_their_flags(ctx: Context,
                                                                   tmp_path: Path) -> None:
    upgrade(ctx.settings, "0011")
    body = b"<h1>404 Not Found</h1>"
    key = body_key(hashlib.sha256(body).hexdigest())
    ctx.blobs.put(key, gzip.compress(body), "text/html")
    with ctx.sessions.begin() as session:
        session.execute(sa.text(
            "INSERT INTO fetches (url_hash, url, host, fetched_at, http_status, storage_key, "
            "not_modified, robots) VALUES ('h1', 'http://a.test/old', 'a.test', :at, 404, :k, "
            ":f, :f)"), {"at": BEFORE, "k": key, "f": False})
    upgrade(ctx.settings)
    with ctx.sessions.begin() as session:
        repository.add_fetch_history(session, [HistoryRow(
            "h2", "http://a.test/new", "a.test", AFTER, 404, storage_key=key, truncated=True,
            http_version="HTTP/2", cipher_suite="TLS_AES_128_GCM_SHA256")])
    with ctx.sessions() as session:
        rows = [(r.url, r.truncated, r.http_version, r.cipher_suite)
                for r in session.scalars(sa.select(Fetch).order_by(Fetch.fetched_at))]
    assert rows == [("http://a.test/old", False, None, None),
                    ("http://a.test/new", True, "HTTP/2", "TLS_AES_128_GCM_SHA256")]
    exported = export_warc(ctx, tmp_path / "both.warc.gz")
    assert (exported.answers, exported.truncated, exported.skipped) == (2, 1, {})
    assert [(r["url"], r["status"], r["body"]) for r in read_records(exported.paths[0])] == [
        ("http://a.test/old", 404, body), ("http://a.test/new", 404, body)]
    downgrade(ctx.settings, "0011")  # leaves the rows
    with ctx.sessions() as session:
        assert session.scalar(sa.text("SELECT count(*) FROM fetches")) == 2
