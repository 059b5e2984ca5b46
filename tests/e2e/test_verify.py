"""`crawlctl verify` end to end. On the embedded default: a crawl leaves it nothing to find;
bodies deleted by hand are each found, an export skips and names them, and `--repair` makes
the next crawl store them again. On Postgres and S3 (moto): claims, bands and copy chains,
--host, --sample, bad input, the last verify in `stats` and the metrics."""

from __future__ import annotations

import gzip
import hashlib
import json
import sqlite3
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from crawlapp.adapters.blobstore import S3BlobStore, body_key
from crawlapp.adapters.context import _CONTEXTS, Context, get_context
from crawlapp.adapters.db import repository
from crawlapp.adapters.db.engine import upgrade
from crawlapp.adapters.redis.dedup_index import Held
from crawlapp.cli import cli
from crawlapp.core.rows import FetchOutcome, UrlRow
from crawlapp.core.settings import get_settings
from crawlapp.core.simhash import to_signed
from crawlapp.core.urls import url_hash
from crawlapp.observe.metrics import verify_families
from crawlapp.observe.stats import verify_line
from crawlapp.ops.warc import read_records
from tests.conftest import crawl_env
from tests.e2e.helpers import crawlctl
from testweb.server import start_in_background
from testweb.site import Web, WebSpec

pytestmark = pytest.mark.e2e
DELAY = 0.2


def page_records(warc: Path) -> list[dict[str, Any]]:
    """The export's response records of pages (robots.txt answers left out)."""
    return [r for r in read_records(warc) if not r["url"].endswith("/robots.txt")]


def verify_json(env: dict[str, str], *args: str) -> tuple[int, dict[str, Any]]:
    done = crawlctl(env, "verify", "--json", *args)
    return done.returncode, json.loads(done.stdout)


def test_bodies_deleted_by_hand_are_found_and_the_next_crawl_restores_them(
        tmp_path: Path, redis_url: str) -> None:
    env = crawl_env(tmp_path, redis_url, CRAWL_DEFAULT_DELAY=str(DELAY))
    spec = WebSpec(hosts=3, pages_per_host=6, port=0, crawl_delay_every=0, dedup_cases=True,
                   trap_cases=True)
    db, blobs, warc = tmp_path / "var" / "crawl.db", tmp_path / "var" / "blobs", tmp_path / "w.gz"
    with start_in_background(Web(spec), str(tmp_path / "requests.jsonl")) as server:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("\n".join(server.web.seeds()) + "\n")
        first = crawlctl(env, "crawl", "--seeds", str(seeds), "--until-idle")
        assert first.returncode == 0, first.stdout + first.stderr
        code, report = verify_json(env)
        assert code == 0 and report["rows"] > 0 and not any(report["problems"].values()), report
        keys = sorted({k for (k,) in sqlite3.connect(db).execute(
            "select storage_key from urls where storage_key is not null")})
        gone = keys[:3]
        for key in gone:
            (blobs / key).unlink()
        named = {u for (u,) in sqlite3.connect(db).execute(
            f"select url from urls where storage_key in ({','.join('?' * len(gone))})", gone)}
        stored = sqlite3.connect(db).execute(
            "select count(*) from urls where storage_key is not null").fetchone()[0]
        answers = sqlite3.connect(db).execute(  # redirects and error answers, kept too
            "select count(*) from fetches where http_status >= 300 and not robots").fetchone()[0]

        code, report = verify_json(env)
        assert code == 1 and report["problems"]["missing_body"] == len(named), report
        assert set(report["examples"]["missing_body"]) <= named
        exported = crawlctl(env, "export", "warc", "--out", str(warc))
        assert exported.returncode == 0, exported.stderr
        assert f"{stored + answers - len(named)} pages written" in exported.stdout
        assert f"{len(named)} page(s) skipped, body missing from the store" in exported.stdout
        assert len(page_records(warc)) == stored + answers - len(named)

        code, report = verify_json(env, "--repair")
        assert code == 0 and report["repaired"]["pages_requeued"] >= len(named), report
        again = crawlctl(env, "crawl", "--until-idle")
        assert again.returncode == 0, again.stdout + again.stderr
    assert all((blobs / key).exists() for key in gone)
    code, report = verify_json(env)
    assert code == 0 and not any(report["problems"].values()), report
    exported = crawlctl(env, "export", "warc", "--out", str(warc))
    assert "skipped" not in exported.stdout and len(page_records(warc)) >= stored
    last = json.loads(crawlctl(env, "stats", "--json").stdout)["last_verify"]
    assert last["rows"] == report["rows"] and "no problems" in verify_line(last)


@pytest.fixture
def run(tmp_path: Path, redis_url: str, pg_url: str, s3_endpoint: str,
        monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Result]]:
    """crawlctl in this process, on Postgres and a fresh S3 bucket."""
    env = crawl_env(tmp_path, redis_url, DATABASE_URL=pg_url, S3_ENDPOINT_URL=s3_endpoint,
                    S3_BUCKET=f"verify-{time.time_ns()}")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    get_settings.cache_clear()
    _CONTEXTS.clear()
    yield lambda *args: CliRunner().invoke(cli, list(args), prog_name="crawlctl")
    get_settings.cache_clear()
    _CONTEXTS.clear()


A, B = "a.test", "b.test"
NOW = datetime.now(UTC)


def _page(ctx: Context, url: str, body: bytes | None, fingerprint: int,
          copy_of: str | None = None) -> FetchOutcome:
    """A fetched page's row; its body stored unless `body` is None (a near copy)."""
    content_hash = hashlib.sha256(body or url.encode()).hexdigest()
    if body is not None:
        ctx.blobs.put(body_key(content_hash), gzip.compress(body), "text/html")
    return FetchOutcome(url_hash(url), "fetched", last_fetched_at=NOW, http_status=200,
                        content_type="text/html", content_hash=content_hash,
                        storage_key=body_key(content_hash) if body is not None else None,
                        simhash=to_signed(fingerprint), content_dedup=copy_of is not None,
                        duplicate_of=url_hash(copy_of) if copy_of else None)


def seed_state(ctx: Context) -> dict[str, FetchOutcome]:
    """a.test: an original, its exact copy, its near copy, a page whose body will go missing;
    b.test: one original. Redis: their claims and table members, plus a claim and a fingerprint that
    name a copy (stale)."""
    upgrade(ctx.settings)
    assert isinstance(ctx.blobs, S3BlobStore)
    ctx.blobs.ensure_bucket()
    orig, copy_, near, lone, b = (f"http://{A}/orig", f"http://{A}/copy", f"http://{A}/near",
                                  f"http://{A}/lone", f"http://{B}/one")
    pages = {orig: _page(ctx, orig, b"<p>a</p>", 0x1111),
             copy_: _page(ctx, copy_, b"<p>a</p>", 0x1111, copy_of=orig),
             near: _page(ctx, near, None, 0x1113, copy_of=orig),
             lone: _page(ctx, lone, b"<p>lone</p>", 0x2222 << 32),
             b: _page(ctx, b, b"<p>b</p>", 0x3333 << 48)}
    with ctx.sessions.begin() as session:
        repository.add_urls(session, [UrlRow(url_hash(u), u, u.split("/")[2], 0, "queued", NOW,
                                             priority=1.0) for u in pages])
        repository.record_fetches(session, list(pages.values()))
    index = ctx.dedup_index
    index.restore(Held(pages[url].url_hash, pages[url].content_hash,
                       pages[url].simhash & (2**64 - 1)) for url in (orig, lone, b))
    # what a crash between dedup and store leaves: a near copy's claim and fingerprint
    index.restore([Held(url_hash(near), pages[near].content_hash, 0x1113)])
    ctx.blobs.delete(pages[lone].storage_key)
    return pages


def test_verify_on_s3_finds_each_kind_of_problem_and_repairs_it(
        run: Callable[..., Result]) -> None:
    ctx = get_context()
    seed_state(ctx)

    for args, text in ((["--host", "nosuch.test"], "no pages of nosuch.test"),
                       (["--sample", "-1"], "--sample"), (["--sample", "0"], "--sample"),
                       (["--host", "bad host"], "host")):
        refused = run("verify", *args)
        assert refused.exit_code == 2 and text in refused.output, (args, refused.output)
    assert ctx.verify_report.last() is None

    found = run("verify", "--json")
    assert found.exit_code == 1, found.output
    report = json.loads(found.stdout)
    tables = len(ctx.dedup_index.tables.keys)  # the near-copy tables: a member in each
    assert report["problems"] == {"missing_body": 1, "broken_chain": 0, "stale_claim": 2,
                                  "stale_band": tables}, report
    assert report["examples"]["missing_body"] == [f"http://{A}/lone"]
    # claims: a content hash and a fingerprint of each of the three originals, and of the
    # near copy (stale); band entries: a table member of each fingerprint in each table
    assert (report["rows"], report["claims"], report["band_entries"]) == (5, 8, 4 * tables)
    problems = {s.labels["kind"]: s.value for f in verify_families(ctx.verify_report.last())
                for s in f.samples if f.name == "crawl_verify_problems"}
    assert problems["missing_body"] == 1 and problems["stale_band"] == tables

    on_b = run("verify", "--host", B)
    assert on_b.exit_code == 0 and "problems: none" in on_b.stdout, on_b.output
    assert json.loads(run("verify", "--sample", "2", "--json").stdout)["rows"] == 2

    repaired = run("verify", "--repair")
    assert repaired.exit_code == 0, repaired.output
    assert f"pages requeued 1, claims dropped 2, band entries dropped {tables}" in repaired.stdout
    with ctx.sessions() as session:
        lone = repository.get_url(session, url_hash(f"http://{A}/lone"))
        assert lone is not None and (lone.status, lone.storage_key) == ("queued", None)
    assert sum(s.urls_queued for s in ctx.frontier.stats(time.time())) == 1
    clean = run("verify")
    assert clean.exit_code == 0 and "problems: none" in clean.stdout, clean.output
    assert "no problems" in verify_line(ctx.verify_report.last())
