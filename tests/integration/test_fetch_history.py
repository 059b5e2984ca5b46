"""The fetch history on SQLite and Postgres: what the store stage records (once, however often
a batch is stored), what migration 0009 fills in from the URL rows, and the WARC export of it
(revisits, robots.txt answers, --since and --host)."""

from __future__ import annotations

import copy
import gzip
import hashlib
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa
from warcio.archiveiterator import ArchiveIterator

from crawlapp.adapters.blobstore import body_key
from crawlapp.adapters.context import Context
from crawlapp.adapters.db.engine import upgrade
from crawlapp.adapters.db.models import Fetch
from crawlapp.core.records import Fetched, Lease, RobotsAnswer
from crawlapp.core.settings import load_settings
from crawlapp.ops import exporting
from crawlapp.ops.exporting import export_warc
from crawlapp.ops.seeding import add_seeds
from crawlapp.ops.takedown import delete
from crawlapp.ops.warc import IDENTICAL_PAYLOAD, SERVER_NOT_MODIFIED
from crawlapp.stages.dedup import dedup_pages
from crawlapp.stages.pages import apply_fetch, page_for, robots_page
from crawlapp.stages.storing import store_pages

A, B = "a.test", "b.test"
SENT = "Host: a.test\r\nUser-Agent: test-bot/1.0\r\nIf-None-Match: \"v1\""
T0 = 1_700_000_000.0


@pytest.fixture(params=["sqlite", "postgres"])
def ctx(request: pytest.FixtureRequest, tmp_path: Path, redis_url: str) -> Context:
    env = {"CRAWL_DATA_DIR": str(tmp_path), "CRAWL_REDIS_URL": redis_url,
           "CRAWL_USER_AGENT": "test-bot/1.0"}
    if request.param == "postgres":
        env["DATABASE_URL"] = request.getfixturevalue("pg_url")
    return Context(load_settings(env))


def fetched(url: str, status: int, body: bytes, when: float, etag: str = '"v1"') -> Fetched:
    headers = f"Content-Type: text/html\r\nETag: {etag}\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2"
    return Fetched(url, status, {"content-type": "text/html", "etag": etag}, body,
                   ended=when, request_headers=SENT, response_headers=headers,
                   ip_address="127.0.0.1")


def store(ctx: Context, *answers: Fetched) -> None:
    pages = [apply_fetch(page_for(Lease(0, f.url.split("/")[2], "t", f.url, 0)), f,
                         ctx.settings.archive_answer_bytes)
             for f in answers]
    batch = dedup_pages(ctx, pages)
    store_pages(ctx, copy.deepcopy(batch))
    passed_on = store_pages(ctx, batch)  # redelivered: recorded once
    # The header blocks are in the history: the links stage gets none, a retry all of them.
    assert [(p.request_headers, p.response_headers) for p in passed_on] == [("", "")] * len(batch)
    assert all(p.request_headers == SENT for p in batch)


def history(ctx: Context) -> list[tuple[str, int, bool, bool]]:
    with ctx.sessions() as session:
        return [(r.url, r.http_status, r.not_modified, r.storage_key is not None)
                for r in session.scalars(sa.select(Fetch).order_by(Fetch.id))]


def records(paths: list[Path]) -> list[tuple[str, str, str | None]]:
    out = []
    for path in paths:
        with path.open("rb") as stream:
            out += [(r.rec_type, r.rec_headers.get_header("WARC-Target-URI"),
                     r.rec_headers.get_header("WARC-Profile"))
                    for r in ArchiveIterator(stream) if r.rec_type not in ("warcinfo", "request")]
    return out


def test_every_kept_fetch_is_recorded_once_and_exported(ctx: Context, tmp_path: Path) -> None:
    upgrade(ctx.settings)
    page, other, gone = f"http://{A}/p", f"http://{B}/q", f"http://{A}/404"
    add_seeds(ctx, [page, other, gone])
    robots = robots_page(fetched(f"http://{A}/robots.txt", 200, b"User-agent: *\n", T0),
                         A, [], RobotsAnswer(f"http://{A}", 200, "User-agent: *\n", None))
    batch = dedup_pages(ctx, [robots])
    store_pages(ctx, batch)
    store(ctx, fetched(page, 200, b"<p>one</p>", T0 + 1), fetched(other, 200, b"<p>b</p>", T0 + 1),
          fetched(gone, 404, b"nope", T0 + 1))
    store(ctx, fetched(page, 304, b"", T0 + 100))
    store(ctx, fetched(page, 200, b"<p>one</p>", T0 + 200, etag='"v2"'))  # same body again
    store(ctx, fetched(page, 200, b"<p>two</p>", T0 + 300, etag='"v3"'))
    assert history(ctx) == [(f"http://{A}/robots.txt", 200, False, True),
                            (page, 200, False, True), (other, 200, False, True),
                            (gone, 404, False, True), (page, 304, True, False),
                            (page, 200, False, True), (page, 200, False, True)]
    with ctx.sessions() as session:
        first = session.scalars(sa.select(Fetch).where(Fetch.url == page)).first()
    assert first is not None and first.response_headers is not None
    assert first.response_headers.count("Set-Cookie") == 2 and first.ip_address == "127.0.0.1"
    assert first.request_headers == SENT and first.payload_digest.startswith("sha1:")

    everything = export_warc(ctx, tmp_path / "all.warc.gz")
    assert (everything.written, everything.revisits, everything.answers,
            everything.robots) == (6, 2, 1, 1)
    assert records(everything.paths) == [
        ("response", f"http://{A}/robots.txt", None), ("response", page, None),
        ("response", other, None), ("response", gone, None),
        ("revisit", page, SERVER_NOT_MODIFIED), ("revisit", page, IDENTICAL_PAYLOAD),
        ("response", page, None)]
    # From a later date, of one host: the revisits still refer to the first response.
    later = export_warc(ctx, tmp_path / "later.warc.gz", host=A,
                        since=datetime.fromtimestamp(T0 + 50, UTC))
    assert records(later.paths) == records(everything.paths)[4:]
    with later.paths[0].open("rb") as stream:
        refers = [r.rec_headers.get_header("WARC-Refers-To-Date") for r in ArchiveIterator(stream)
                  if r.rec_type == "revisit"]
    assert refers == ["2023-11-14T22:13:21Z"] * 2  # T0 + 1

    # A takedown forgets the URL's history and every body it names.
    counts = delete(ctx, url=page)
    assert (counts["fetches_forgotten"], counts["bodies_removed"]) == (4, 2)
    assert [url for url, *_ in history(ctx)] == [f"http://{A}/robots.txt", other, gone]
    after = export_warc(ctx, tmp_path / "after.warc.gz")
    assert (after.written, after.robots, after.skipped) == (2, 1, {})


def test_migration_0009_keeps_the_last_stored_fetch_of_each_url(ctx: Context,
                                                                tmp_path: Path) -> None:
    upgrade(ctx.settings, "0006")
    now = datetime.fromtimestamp(T0, UTC)
    body = b"<p>kept</p>"
    key = body_key(hashlib.sha256(body).hexdigest())
    ctx.blobs.put(key, gzip.compress(body), "text/html")
    rows = [("http://a.test/ok", 200, key, None, False), ("http://a.test/nm", 304, key, None, False),
            ("http://a.test/r", 200, "bodies/rendered", key, True),
            ("http://a.test/r2", 200, "bodies/rendered", None, True),
            ("http://a.test/none", 404, None, None, False)]
    with ctx.sessions.begin() as session:
        for n, (url, status, storage, raw, rendered) in enumerate(rows):
            session.execute(sa.text(
                "INSERT INTO urls (url_hash, url, host, depth, status, priority, discovered_at, "
                "last_fetched_at, http_status, content_type, etag, storage_key, raw_storage_key, "
                "rendered, content_dedup, fail_count, noindex) VALUES (:h, :u, 'a.test', 0, "
                "'fetched', 1.0, :now, :now, :s, 'text/html', '\"e\"', :k, :raw, :r, :f, 0, :f)"),
                {"h": f"{n:032d}", "u": url, "now": now, "s": status, "k": storage, "raw": raw,
                 "r": rendered, "f": False})
    upgrade(ctx.settings)
    with ctx.sessions() as session:
        found = {r.url: (r.http_status, r.storage_key, r.response_headers, r.request_headers)
                 for r in session.scalars(sa.select(Fetch))}
    headers = 'Content-Type: text/html\r\nETag: "e"'
    assert found == {"http://a.test/ok": (200, key, headers, None),
                     "http://a.test/nm": (200, key, headers, None),  # the 200's body it names
                     "http://a.test/r": (200, key, headers, None)}  # the body as fetched
    exported = export_warc(ctx, tmp_path / "old.warc.gz")
    assert exported.written == 3 and not exported.skipped
    with exported.paths[0].open("rb") as stream:
        sent = [r.http_headers.headers for r in ArchiveIterator(stream) if r.rec_type == "request"]
    assert sent[0] == [("Host", "a.test"), ("User-Agent", "test-bot/1.0")]  # as exports had it


def test_a_304_after_a_lost_body_is_skipped_not_pointed_at_an_older_one(ctx: Context,
                                                                       tmp_path: Path) -> None:
    upgrade(ctx.settings)
    page = f"http://{A}/p"
    add_seeds(ctx, [page])
    store(ctx, fetched(page, 200, b"<p>one</p>", T0))
    store(ctx, fetched(page, 200, b"<p>two</p>", T0 + 100, etag='"v2"'))
    store(ctx, fetched(page, 304, b"", T0 + 200, etag='"v2"'))
    ctx.blobs.delete(body_key(hashlib.sha256(b"<p>two</p>").hexdigest()))
    exported = export_warc(ctx, tmp_path / "lost.warc.gz")
    assert exported.written == 1 and exported.skipped == {
        exporting.BODY_MISSING: 1, exporting.ORIGINAL_LOST: 1}
    assert f"{exporting.ORIGINAL_LOST}: http://a.test/p" in exported.describe()


def test_revisits_of_urls_past_the_export_memory(ctx: Context, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(exporting, "REMEMBERED", 1)
    upgrade(ctx.settings)
    one, two = f"http://{A}/1", f"http://{A}/2"
    add_seeds(ctx, [one, two])
    store(ctx, fetched(one, 200, b"<p>1</p>", T0), fetched(two, 200, b"<p>2</p>", T0))
    store(ctx, fetched(one, 304, b"", T0 + 100), fetched(two, 304, b"", T0 + 100))
    store(ctx, fetched(one, 200, b"<p>1</p>", T0 + 200), fetched(two, 200, b"<p>2</p>", T0 + 200))
    exported = export_warc(ctx, tmp_path / "small.warc.gz")
    assert (exported.written, exported.revisits, exported.skipped) == (6, 2, {})
    # `one` is forgotten when `two` comes: its 304 asks the history; unchanged 200s of
    # forgotten URLs are written whole (valid, only not deduplicated).
    assert records(exported.paths)[2:] == [
        ("revisit", one, SERVER_NOT_MODIFIED), ("revisit", two, SERVER_NOT_MODIFIED),
        ("response", one, None), ("response", two, None)]
    with exported.paths[0].open("rb") as stream:
        refers = [r.rec_headers.get_header("WARC-Refers-To-Date") for r in ArchiveIterator(stream)
                  if r.rec_type == "revisit"]
    assert refers == ["2023-11-14T22:13:20Z"] * 2  # T0, from the history and from memory


def test_redirects_error_answers_and_unstored_pages_are_archived(ctx: Context,
                                                                 tmp_path: Path) -> None:
    upgrade(ctx.settings)
    archiving = Context(replace(ctx.settings, archive_unstored=True, archive_answer_bytes=8))
    moved, broken, hidden, plain = (f"http://{A}/{name}" for name in
                                    ("moved", "broken", "hidden", "plain"))
    add_seeds(ctx, [moved, broken, hidden, plain])
    redirect = fetched(moved, 301, b"<a href=/there>moved</a>", T0)
    redirect.headers["location"] = "/there"
    redirect.response_headers += "\r\nLocation: /there"
    pages = [apply_fetch(page_for(Lease(0, A, "t", f.url, 0)), f, 8) for f in (
        redirect, fetched(broken, 501, b"no", T0), fetched(hidden, 200, b"<p>noindex</p>", T0))]
    pages[2].noindex = True
    store_pages(archiving, dedup_pages(archiving, pages))
    store(archiving, fetched(hidden, 304, b"", T0 + 100))
    store(ctx, fetched(plain, 200, b"<p>noindex too</p>", T0 + 200))  # archived by nobody:
    with ctx.sessions.begin() as session:  # its row stands for a noindex page's, whose 304
        session.execute(sa.delete(Fetch).where(Fetch.url == plain))  # finds nothing before it
    store(ctx, fetched(plain, 304, b"", T0 + 300))

    exported = export_warc(ctx, tmp_path / "answers.warc.gz")
    assert (exported.written, exported.revisits, exported.answers, exported.truncated) == (
        4, 1, 2, 1)
    assert exported.skipped == {exporting.NO_ORIGINAL: 1}
    assert "CRAWL_ARCHIVE_UNSTORED" in exported.describe() and plain in exported.describe()
    assert records(exported.paths) == [("response", moved, None), ("response", broken, None),
                                       ("response", hidden, None),
                                       ("revisit", hidden, SERVER_NOT_MODIFIED)]
    with exported.paths[0].open("rb") as stream:
        answers = {r.rec_headers.get_header("WARC-Target-URI"): (
            r.http_headers.get_statuscode(), r.http_headers.get_header("Location"),
            r.rec_headers.get_header("WARC-Truncated"), r.content_stream().read())
            for r in ArchiveIterator(stream) if r.rec_type == "response"}
    assert answers == {moved: ("301", "/there", "length", b"<a href="),
                       broken: ("501", None, None, b"no"),
                       hidden: ("200", None, None, b"<p>noindex</p>")}
