"""What the archive says it cut, from real answers of a loopback server through the fetcher,
the store stage and the WARC export: a robots.txt past 500 KiB and a 2xx answer past
CRAWL_MAX_BODY_BYTES (streamed: the bytes read kept; declared by Content-Length: none) are
response records marked `WARC-Truncated: length`, and the files pass `warcio check`."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from crawlapp.adapters.context import Context
from crawlapp.adapters.db.engine import upgrade
from crawlapp.adapters.http import Fetcher
from crawlapp.adapters.redis import robots_cache
from crawlapp.adapters.redis.dnscache import DnsCache
from crawlapp.core.records import Lease, Status
from crawlapp.core.robots import MAX_ROBOTS_BYTES
from crawlapp.core.settings import load_settings
from crawlapp.ops.exporting import export_warc
from crawlapp.ops.seeding import add_seeds
from crawlapp.stages.dedup import dedup_pages
from crawlapp.stages.pages import apply_fetch, page_for, robots_page, robots_policy
from crawlapp.stages.storing import store_pages
from tests.loopback import QuietHandler, serving

pytestmark = pytest.mark.integration
CAP = 4096  # CRAWL_MAX_BODY_BYTES
ROBOTS = b"User-agent: *\nDisallow: /private\n" + b"# padding\n" * (MAX_ROBOTS_BYTES // 10)
STREAMED = b"<p>" + b"x" * (3 * CAP) + b"</p>"


class _Site(QuietHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802
        if self.path == "/robots.txt":
            self.send_body(ROBOTS)
        elif self.path == "/streamed":  # no Content-Length: read until the cap
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(STREAMED)
            self.close_connection = True
        else:  # /declared: its Content-Length says it is too large
            self.send_body(STREAMED, "text/html")


@pytest.fixture
def origin() -> Iterator[str]:
    with serving(_Site) as port:
        yield f"http://127.0.0.1:{port}"


def test_cut_answers_are_archived_marked_truncated(tmp_path: Path, redis_url: str,
                                                   origin: str) -> None:
    ctx = Context(load_settings({"CRAWL_DATA_DIR": str(tmp_path), "CRAWL_REDIS_URL": redis_url,
                                 "CRAWL_ALLOWED_NETWORKS": "127.0.0.0/8",
                                 "CRAWL_MAX_BODY_BYTES": str(CAP)}))
    upgrade(ctx.settings)
    host = origin.removeprefix("http://")
    streamed, declared = f"{origin}/streamed", f"{origin}/declared"
    add_seeds(ctx, [streamed, declared])
    fetcher = Fetcher(ctx.settings, DnsCache(None, "test", 60, 60))

    async def fetch_all() -> list:
        return [await fetcher.get(f"{origin}/robots.txt", max_bytes=MAX_ROBOTS_BYTES,
                                  truncate=True),
                await fetcher.get(streamed), await fetcher.get(declared)]

    robots, big, said_big = asyncio.run(fetch_all())
    assert (robots.truncated, len(robots.body), robots.error) == (True, MAX_ROBOTS_BYTES, None)
    assert (big.error, big.truncated, big.body) == ("too_large", True, STREAMED[:CAP])
    assert (said_big.error, said_big.truncated, said_big.body) == ("too_large", True, b"")

    policy = robots_policy(robots)
    pages = [robots_page(robots, host, [], robots_cache.record(origin, policy, "crawlapp"))]
    pages += [apply_fetch(page_for(Lease(0, host, "t", f.url, 0)), f,
                          ctx.settings.archive_answer_bytes) for f in (big, said_big)]
    assert [(p.status, p.truncated) for p in pages] == [
        (Status.ROBOTS, True), (Status.FAILED, True), (Status.FAILED, True)]
    store_pages(ctx, dedup_pages(ctx, pages))

    exported = export_warc(ctx, tmp_path / "cuts.warc.gz")
    assert (exported.written, exported.robots, exported.truncated) == (2, 1, 2)
    (path,) = exported.paths
    with path.open("rb") as stream:
        responses = {r.rec_headers.get_header("WARC-Target-URI"): (
            r.rec_headers.get_header("WARC-Truncated"), r.http_headers.get_statuscode(),
            r.content_stream().read()) for r in ArchiveIterator(stream)
            if r.rec_type == "response"}
    assert responses == {f"{origin}/robots.txt": ("length", "200", ROBOTS[:MAX_ROBOTS_BYTES]),
                         streamed: ("length", "200", STREAMED[:CAP]),
                         declared: ("length", "200", b"")}
    check = subprocess.run([str(Path(sys.executable).parent / "warcio"), "check", "-v",
                            str(path)], capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stdout + check.stderr
