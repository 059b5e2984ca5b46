"""Every crawlctl command against the real Redis and Postgres: what it prints, what it changes,
and for bad input a one-line error, exit code 2 and nothing changed.

Most commands run in this process through click's CliRunner on a small state written through
the repository and frontier APIs (no page is fetched: the hosts are never contacted). The
commands that read the Celery broker, and the long-running ones, run as subprocesses.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result
from sqlalchemy import select

from crawlapp.adapters.blobstore import body_key
from crawlapp.adapters.context import _CONTEXTS, Context, get_context
from crawlapp.adapters.db import repository
from crawlapp.adapters.db.engine import upgrade
from crawlapp.adapters.db.models import Url
from crawlapp.adapters.redis.dedup_index import LOOK, NEAR, NO_NEAR, Claim, Held, Outcome
from crawlapp.cli import cli
from crawlapp.core.records import Link, Page, QueuedURL, RobotsAnswer, Status
from crawlapp.core.rows import FetchOutcome, HistoryRow, LinkEdge, UrlRow
from crawlapp.core.settings import get_settings
from crawlapp.core.urls import url_hash
from crawlapp.observe.stats import recrawl_tiers
from crawlapp.stages.admission import admit
from crawlapp.stages.linking import extract_links
from tests.conftest import _free_port, crawl_env
from tests.e2e.helpers import CRAWLCTL, crawl_web, crawlctl
from testweb.site import WebSpec

pytestmark = pytest.mark.e2e
A, B, SHOP = "127.0.0.2:8001", "b.test", "shop.b.test"
NOW = datetime.now(UTC)


@pytest.fixture
def env(tmp_path: Path, redis_url: str, pg_url: str) -> dict[str, str]:
    return crawl_env(tmp_path, redis_url, DATABASE_URL=pg_url, CRAWL_DEFAULT_DELAY="0.2")


@pytest.fixture
def run(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Result]]:
    """crawlctl in this process, on `env` (settings and connections built afresh)."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)

    def fresh() -> None:
        get_settings.cache_clear()
        _CONTEXTS.clear()

    fresh()
    runner = CliRunner()
    yield lambda *args, input=None: runner.invoke(cli, list(args), input=input,
                                                  prog_name="crawlctl")
    fresh()


def _row(url: str, status: str, depth: int = 1) -> UrlRow:
    return UrlRow(url_hash(url), url, url.split("/")[2], depth, status, NOW,
                  priority=1.0 - depth / 10)


def _fetched(ctx: Context, url: str, body: bytes, dedup_of: str | None = None) -> FetchOutcome:
    content_hash = hashlib.sha256(body).hexdigest()
    ctx.blobs.put(body_key(content_hash), gzip.compress(body), "text/html")
    return FetchOutcome(url_hash(url), "fetched", last_fetched_at=NOW, http_status=200,
                        content_type="text/html", content_length=len(body),
                        content_hash=content_hash, storage_key=body_key(content_hash),
                        content_dedup=dedup_of is not None,
                        duplicate_of=url_hash(dedup_of) if dedup_of else None, title=url,
                        next_crawl_at=datetime.fromtimestamp(time.time() + 3600, UTC))


def seed_state(ctx: Context) -> None:
    """Host A: three fetched pages (two share one body), one queued; b.test and its shop
    subdomain: queued URLs and a fetched page with a re-crawl; links between them."""
    upgrade(ctx.settings)
    a = f"http://{A}"
    fetched = [f"{a}/", f"{a}/copy", f"{a}/solo", f"http://{B}/f"]
    queued = [f"{a}/q", f"http://{B}/1", f"http://{B}/2", f"http://{SHOP}/x"]
    with ctx.sessions.begin() as session:
        repository.add_urls(session, [_row(u, "queued", depth=0 if u == f"{a}/" else 1)
                                      for u in fetched + queued])
        stored = [(f"{a}/", _fetched(ctx, f"{a}/", b"<p>home</p>")),
                  (f"{a}/copy", _fetched(ctx, f"{a}/copy", b"<p>home</p>", f"{a}/")),
                  (f"{a}/solo", _fetched(ctx, f"{a}/solo", b"<p>solo</p>")),
                  (f"http://{B}/f", _fetched(ctx, f"http://{B}/f", b"<p>b</p>"))]
        repository.record_fetches(session, [row for _, row in stored])
        repository.add_fetch_history(session, [
            HistoryRow(row.url_hash, url, url.split("/")[2], NOW, 200,
                       request_headers=f"Host: {A}",
                       response_headers="Content-Type: text/html", storage_key=row.storage_key)
            for url, row in stored])
        repository.add_links(session, [
            LinkEdge(url_hash(f"{a}/"), url_hash(t), anchor, nofollow)
            for t, anchor, nofollow in ((f"{a}/copy", "a copy", False), (f"{a}/solo", None, True),
                                        (f"http://{B}/1", "B one", False))]
            + [LinkEdge(url_hash(f"{a}/solo"), url_hash(f"{a}/"), "home", False)])
        repository.save_robots(session, [RobotsAnswer(a, 200, "User-agent: *\nCrawl-delay: 2\n", 2.0)],
                               [NOW])
    ctx.frontier.add([QueuedURL(u, 1, 0.9) for u in queued], time.time())
    ctx.dedup_index.restore([Held(url_hash(f"{a}/"),
                                  _fetched(ctx, f"{a}/", b"<p>home</p>").content_hash, None)])


def state(ctx: Context) -> dict[str, Any]:
    """Everything a command could change."""
    audit = ctx.settings.data_dir / "audit.log"
    with ctx.sessions() as session:
        rows = {r.url: (r.status, r.storage_key, r.last_error)
                for r in session.scalars(select(Url))}
        denied = [d.pattern for d in repository.denylist(session)]
    blobs = sorted(str(p.relative_to(ctx.settings.blob_dir))
                   for p in ctx.settings.blob_dir.rglob("*.gz"))
    return {"rows": rows, "denied": denied, "blobs": blobs,
            "frontier": [s.urls_queued for s in ctx.frontier.stats(time.time())],
            "parked": ctx.frontier.parked(), "recrawl": recrawl_tiers(ctx, time.time()),
            "redis_denylist": sorted(ctx.redis.smembers(ctx.denylist.key)),
            "audit": audit.read_text() if audit.exists() else ""}


def ok(result: Result, *expected: str) -> str:
    assert result.exit_code == 0, (result.output, result.exception)
    for text in expected:
        assert text in result.stdout, result.stdout
    return result.stdout


def refused(result: Result, ctx: Context, before: dict[str, Any], *expected: str,
            code: int = 2) -> None:
    """Bad input: exit 2 (or `code`), one line on stderr naming the problem, nothing changed."""
    assert result.exit_code == code, (result.output, result.exception)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output, result.stderr
    for text in expected:
        assert text in lines[0], lines[0]
    assert state(ctx) == before


def test_every_command_has_help_with_an_example(run: Callable[..., Result]) -> None:
    def walk(command: click.Command, path: list[str]) -> Iterator[list[str]]:
        yield path
        if isinstance(command, click.Group):
            for name, sub in command.commands.items():
                yield from walk(sub, [*path, name])

    paths = list(walk(cli, []))
    assert len(paths) >= 25
    for path in paths:
        ok(run(*path, "--help"), "Usage: crawlctl", "Example: crawlctl")


def test_commands_on_a_seeded_crawl(run: Callable[..., Result], env: dict[str, str],
                                    tmp_path: Path) -> None:
    ctx = get_context()
    seed_state(ctx)
    a = f"http://{A}"
    before = state(ctx)

    # db upgrade, seed add
    ok(run("db", "upgrade"), "newest schema")
    refused(run("db", "upgrade", "now"), ctx, before, "unexpected extra argument")
    refused(run("seed", "add", "mailto:someone@example.com"), ctx, before, "scheme_mailto")
    refused(run("seed", "add"), ctx, before, "give URLs or --file")
    refused(run("crawl", "--seeds", str(tmp_path / "nope.txt")), ctx, before, "cannot read")
    refused(run("crawl", "--workers", "0"), ctx, before, "--workers")
    ok(run("seed", "add", f"{a}/new"), "1 new seed(s) queued")
    before = state(ctx)

    # page show, links
    page = json.loads(ok(run("page", "show", f"{a}/", "--json")))
    assert (page["status"], page["outbound_links"]) == ("fetched", 3)
    refused(run("page", "show", f"{a}/unknown"), ctx, before, "not known")
    out = json.loads(ok(run("links", f"{a}/", "--json")))
    assert [(d["url"], d["anchor"], d["nofollow"]) for d in out] == [
        (f"{a}/copy", "a copy", False), (f"{a}/solo", None, True), (f"http://{B}/1", "B one", False)]
    assert "<- http://127.0.0.2:8001/solo  [fetched]  'home'" in ok(run("links", f"{a}/", "--in"))
    refused(run("links", f"{a}/unknown"), ctx, before, "not known")
    refused(run("links", "ftp://x"), ctx, before, "scheme_ftp")

    # hosts
    by_host = {h["host"]: h for h in json.loads(ok(run("hosts", "--json")))}
    assert by_host[A] | {"until": None, "frontier_state": None} == by_host[A] | {
        "pages": 5, "fetched": 3, "queued": 2, "failed": 0, "robots_status": 200,
        "crawl_delay": 2.0, "frontier_queued": 2, "denied_by": None, "until": None,
        "frontier_state": None}
    assert by_host[A]["frontier_state"] in ("ready", "waiting")
    assert by_host[B]["frontier_queued"] == 2 and by_host[SHOP]["queued"] == 1
    assert [h["host"] for h in json.loads(ok(run("hosts", "--top", "1", "--json")))] == [A]
    assert json.loads(ok(run("hosts", "--errors", "--json"))) == []
    assert A in ok(run("hosts"))
    refused(run("hosts", "--top", "0"), ctx, before, "--top")

    # frontier
    ok(run("frontier", "pause", B), f"paused {B}")
    assert "parked b.test: paused" in ok(run("frontier", "stats"))
    assert json.loads(ok(run("hosts", "--errors", "--json")))[0]["frontier_state"] == "paused"
    ok(run("frontier", "resume", B), f"resumed {B}")
    assert json.loads(ok(run("frontier", "stats", "--json")))["totals"]["urls_queued"] == 5
    refused(run("frontier", "resume", B), ctx, before, "neither paused nor parked")
    refused(run("frontier", "pause", "bad host"), ctx, before)
    refused(run("frontier", "rebuild", "now"), ctx, before, "unexpected extra argument")

    # recrawl, export warc
    assert ok(run("recrawl", "--host", A, "--now")).strip() == "3 page(s) due now"
    before = state(ctx)
    refused(run("recrawl"), ctx, before, "give URLs, or --host HOST, or --all")
    warc = tmp_path / "a.warc.gz"
    ok(run("export", "warc", "--host", A, "--out", str(warc), "--cdxj"), "3 pages written")
    index = (tmp_path / "a.cdxj").read_text().splitlines()
    assert len(index) == 3 and all('"filename": "a.warc.gz"' in line for line in index)
    refused(run("export", "warc", "--out", str(tmp_path / "x.warc.gz"), "--since", "soon"), ctx,
            before, "--since")
    assert not (tmp_path / "x.warc.gz").exists()
    refused(run("export", "warc", "--out", str(tmp_path / "none" / "x.warc.gz")), ctx, before,
            "no folder")
    refused(run("export", "warc", "--out", str(tmp_path / "x.warc.gz"), "--max-size", "0"), ctx,
            before, "--max-size")
    before = state(ctx)

    # block: drops the queued URLs, marks the rows, stops re-crawls; enforced when linking
    refused(run("block", "*."), ctx, before, "not a host or *.domain pattern")
    refused(run("block"), ctx, before, "give a HOST or *.DOMAIN pattern, or --list")
    ok(run("block", "*.B.test", "--reason", "owner asked"),
       "blocked *.b.test: hosts 2, urls dropped 3, rows blocked 3, recrawls stopped 1")
    ok(run("block", "*.b.test"), "on the denylist already")
    assert [e["pattern"] for e in json.loads(ok(run("block", "--list", "--json")))] == ["*.b.test"]
    after = state(ctx)
    assert after["rows"][f"http://{B}/1"] == ("blocked", None, "denylist: *.b.test")
    assert after["rows"][f"http://{B}/f"][0] == "fetched"
    assert sum(after["frontier"]) == 2 and after["redis_denylist"] == [b"*.b.test"]
    page = Page(url=f"{a}/", url_hash=url_hash(f"{a}/"), host=A, depth=0, status=Status.FETCHED,
                links=[Link(f"http://{SHOP}/new"), Link(f"{a}/fresh")])
    added, _, refusals, *_ = extract_links(ctx, [page])
    assert added == 1 and refusals == {("denylist", SHOP): 1}
    assert state(ctx)["rows"].get(f"http://{SHOP}/new") is None
    before = state(ctx)

    # unblock puts it all back; frontier rebuild restores the Redis copy of the denylist
    refused(run("unblock", "nothere.test"), ctx, before, "not on the denylist")
    refused(run("unblock", "bad_host-.test"), ctx, before)
    ok(run("unblock", "*.b.test"), "unblocked *.b.test: hosts 2, urls queued 3, recrawls restored 1")
    assert state(ctx)["rows"][f"http://{B}/1"][0] == "queued"
    ok(run("block", B))
    ctx.redis.delete(ctx.denylist.key)
    assert "denylist=1" in ok(run("frontier", "rebuild"))
    assert state(ctx)["redis_denylist"] == [b"b.test"]
    before = state(ctx)

    # delete: bodies shared with another page stay; never queued again; idempotent; audited
    refused(run("delete"), ctx, before, "give a URL or --host HOST")
    refused(run("delete", f"{a}/", "--host", A), ctx, before, "give a URL or --host HOST")
    refused(run("delete", "javascript:alert(1)", "--yes"), ctx, before)
    refused(run("delete", f"{a}/", input="n\n"), ctx, before, "nothing changed", code=1)
    ok(run("delete", f"{a}/solo", "--yes"), "rows deleted 1, bodies removed 1, bodies kept shared 0")
    ok(run("delete", f"{a}/", "--yes"), "rows deleted 1, bodies removed 0, bodies kept shared 1")
    # the deleted original's exact copy, whose body is still stored, becomes the original
    home = _fetched(ctx, f"{a}/", b"<p>home</p>").content_hash
    assert ctx.dedup_index.claim([Claim(url_hash(f"{a}/new"), home, None)], NO_NEAR, LOOK) == [
        Outcome(NEAR, url_hash(f"{a}/copy"))]
    ok(run("delete", "--host", A, "--yes"),
       "rows deleted 4, bodies removed 1, bodies kept shared 0, urls dropped 3")
    after = state(ctx)
    ok(run("delete", "--host", A, "--yes"), "rows deleted 0, bodies removed 0")
    assert state(ctx) | {"audit": ""} == after | {"audit": ""}
    ok(run("delete", f"{a}/never-seen", "--yes"), "rows deleted 1")
    assert not [b for b in after["blobs"] if "home" in b] and len(after["blobs"]) == 1  # b.test/f
    assert {status for url, (status, *_) in state(ctx)["rows"].items() if A in url} == {"deleted"}
    assert admit(ctx, {url_hash(f"{a}/q"): _row(f"{a}/q", "queued", depth=0)}) == set()
    assert "content_claims=1" in ok(run("frontier", "rebuild"))  # b.test/f only
    assert state(ctx)["frontier"] == after["frontier"]
    audit = [json.loads(line) for line in (ctx.settings.data_dir / "audit.log").read_text()
             .splitlines()]
    assert [(e["command"], e["target"]) for e in audit][-3:] == [
        ("delete", f"host {A}"), ("delete", f"host {A}"), ("delete", f"{a}/never-seen")]
    assert audit[0]["command"] == "block" and audit[0]["counts"]["urls_dropped"] == 3

    # the broker's commands run as their own process (the broker is chosen at import)
    ctx.redis.lpush("parse", b"{}")
    assert json.loads(crawlctl(env, "queues", "--json").stdout)["parse"] == 1
    assert json.loads(crawlctl(env, "stats", "--json").stdout)["queues"]["parse"] == 1
    before = state(ctx)
    for args, code, text in ((["queues", "purge", "nosuch"], 2, "no such queue: nosuch"),
                             (["queues", "purge"], 2, "give queue NAMEs or --all"),
                             (["queues", "purge", "parse"], 1, "nothing changed"),
                             (["stats", "--watch", "--json"], 2, "does not go with --json"),
                             (["stats", "--interval", "0"], 2, "--interval")):
        done = crawlctl(env, *args)
        assert done.returncode == code and done.stderr.count("\n") == 1 and text in done.stderr, (
            args, done.stderr)
    assert state(ctx) == before and ctx.redis.llen("parse") == 1
    done = crawlctl(env, "queues", "purge", "--all", "--yes")
    assert done.returncode == 0 and "1 message(s) purged" in done.stdout
    assert ctx.redis.llen("parse") == 0


def test_crawl_watch_dispatcher_and_metrics(env: dict[str, str], tmp_path: Path) -> None:
    spec = WebSpec(hosts=2, pages_per_host=4, port=0, crawl_delay_every=0)
    watched: dict[str, str] = {}

    def watch(crawl: subprocess.Popen[bytes]) -> None:
        time.sleep(2)  # the crawl has created its tables
        live = subprocess.Popen([*CRAWLCTL, "stats", "--watch", "--interval", "0.5"],
                                env={**os.environ, **env, "COLUMNS": "120"}, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert live.stdout is not None and live.stderr is not None
        lines = []
        while "Ctrl-C to quit" not in (line := live.stdout.readline()):  # a whole frame is out
            assert line, live.stderr.read()
            lines.append(line)
        live.send_signal(signal.SIGINT)
        rest, watched["err"] = live.communicate(timeout=30)
        watched["out"] = "".join(lines) + rest
        watched["code"] = str(live.returncode)

    web, requests, output = crawl_web(tmp_path, env, spec, watch)
    assert watched["code"] == "0", watched
    for title in ("rate, last minute", "shards", "errors by kind", "top hosts"):
        assert title in watched["out"], watched["out"]
    assert "idle after" in output

    hosts = json.loads(crawlctl(env, "hosts", "--json").stdout)
    pages = {r.url for r in requests if not r.url.endswith("/robots.txt")}
    assert sum(h["fetched"] + h["failed"] for h in hosts) == len(pages)
    assert {h["frontier_state"] for h in hosts} == {"idle"}

    for args in (["dispatcher"], ["metrics", "serve", "--port", str(port := _free_port())]):
        proc = subprocess.Popen([*CRAWLCTL, *args], env={**os.environ, **env},
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(2)
        if args[0] == "metrics":
            deadline = time.monotonic() + 30  # a loaded machine starts the process slowly
            while True:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                                timeout=10) as resp:
                        assert b"crawl_pages" in resp.read()
                    break
                except urllib.error.URLError:
                    assert time.monotonic() < deadline and proc.poll() is None, \
                        proc.communicate()
                    time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0, proc.communicate()
    for args, text in ((["dispatcher", "now"], "unexpected extra argument"),
                       (["metrics", "serve", "--port", "70000"], "--port")):
        done = crawlctl(env, *args)
        assert done.returncode == 2 and done.stderr.count("\n") == 1 and text in done.stderr
    assert collect_fetched(env) == sum(h["fetched"] for h in hosts)


def collect_fetched(env: dict[str, str]) -> int:
    return int(json.loads(crawlctl(env, "stats", "--json").stdout)["fetched"])
