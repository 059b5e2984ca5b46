"""Exporting the fetch history as WARC: every kept fetch, oldest first, with its stored body.

A 304 becomes a server-not-modified revisit of the URL's last 2xx response, a 2xx with the
same payload as that response an identical-payload-digest revisit; redirects and error
answers are responses written whole (no revisit refers to them); robots.txt answers are
fetches of their own. A fetch whose body cannot be read (missing from the store, or not
gzip) is skipped, counted and named in the summary (`crawlctl verify --repair` queues such
pages again), as is a 304 whose earlier response was never kept (a near copy, a noindex or
canonicalized page, unless CRAWL_ARCHIVE_UNSTORED kept it); the rest is exported.
"""

from __future__ import annotations

import gzip
import zlib
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from urllib.parse import urlsplit

from crawlapp.adapters.blobstore import BodyMissing
from crawlapp.adapters.context import Context
from crawlapp.adapters.db import maintenance
from crawlapp.adapters.db.models import Fetch
from crawlapp.core.settings import Settings
from crawlapp.ops.warc import (
    FORMAT,
    FetchRecord,
    Original,
    WarcFiles,
    parse_header_block,
    warc_date,
)
from crawlapp.stages.pages import payload_digest

CHUNK = 500  # fetch history rows read at a time (each with its header blocks, a few kB)
EXAMPLES = 20  # skipped pages named in the summary, per reason
MAX_SIZE = 1_000_000_000  # bytes of one WARC file, by default
# URLs whose last response an export keeps in memory (~500 B each), for their revisits: past
# them, a 304 asks the database and an unchanged 200 is written whole.
REMEMBERED = 1_000_000
BODY_MISSING = "body missing from the store"
BODY_UNREADABLE = "body unreadable"
NO_ORIGINAL = ("304 with no earlier response kept (a near copy, or a noindex or canonicalized "
               "page: CRAWL_ARCHIVE_UNSTORED keeps them)")
ORIGINAL_LOST = "304 of a response whose body cannot be read"
_REPAIRABLE = frozenset({BODY_MISSING, BODY_UNREADABLE})


@dataclass
class Exported:
    """What an export wrote (pages, of which revisits, and redirects and error answers, and
    bodies cut; robots.txt answers; the files), and what it skipped by reason, with the
    first few URLs of each."""

    written: int = 0
    revisits: int = 0
    answers: int = 0
    truncated: int = 0
    robots: int = 0
    paths: list[Path] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    examples: dict[str, list[str]] = field(default_factory=dict)

    def skip(self, reason: str, url: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1
        named = self.examples.setdefault(reason, [])
        if len(named) < EXAMPLES:
            named.append(url)

    def describe(self) -> str:
        """One line per reason: how many pages were skipped, and which (the first few)."""
        return "\n".join(
            f"{n} page(s) skipped, {reason}: {', '.join(self.examples[reason])}"
            + (f" and {n - EXAMPLES} more" if n > EXAMPLES else "")
            + (" (crawlctl verify --repair queues them again)" if reason in _REPAIRABLE else "")
            for reason, n in self.skipped.items())


def warcinfo(settings: Settings) -> dict[str, str]:
    """The warcinfo fields: the crawler, its version and the settings that shape a crawl
    (no URL of a service: they may carry passwords)."""
    return {
        "software": f"crawlapp/{version('crawlapp')}",
        **FORMAT,
        "http-header-user-agent": settings.user_agent,
        **({"http-header-from": settings.from_address} if settings.from_address else {}),
        "robots": "obey",
        "crawl-default-delay": str(settings.default_delay),
        "crawl-max-crawl-delay": str(settings.max_crawl_delay),
        "crawl-max-depth": str(settings.max_depth),
        "crawl-max-pages-per-host": str(settings.max_pages_per_host),
        "crawl-max-redirects": str(settings.max_redirects),
        "crawl-max-body-bytes": str(settings.max_body_bytes),
        "crawl-fetch-binaries": str(settings.fetch_binaries).lower(),
        "crawl-render": str(settings.render).lower(),
        "crawl-scope": settings.scope,
        "crawl-scope-hops": str(settings.scope_hops),
        "crawl-politeness-key": settings.politeness_key,
    }


def _body(ctx: Context, row: Fetch, exported: Exported) -> bytes | None:
    """The fetch's stored body, decompressed; None (counted as skipped) if it cannot be read."""
    try:
        return gzip.decompress(ctx.blobs.get(row.storage_key or ""))
    except BodyMissing:
        exported.skip(BODY_MISSING, row.url)
    except (OSError, EOFError, zlib.error):  # gzip.BadGzipFile is an OSError
        exported.skip(BODY_UNREADABLE, row.url)
    return None


def _history(ctx: Context, host: str | None) -> Iterator[Fetch]:
    """The fetch history (of one host), oldest first."""
    for rows in maintenance.fetch_history(ctx.sessions, host, CHUNK):
        yield from rows


def _utc(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _request_headers(ctx: Context, row: Fetch) -> list[tuple[str, str]]:
    """The headers sent; for a fetch from before the history kept them, Host and User-Agent."""
    if row.request_headers is not None:
        return parse_header_block(row.request_headers)
    return [("Host", urlsplit(row.url).netloc), ("User-Agent", ctx.settings.user_agent)]


class _Originals:
    """The response each URL's revisits refer to: its last one written (or before `since`,
    that would have been), for the REMEMBERED URLs seen last; for the others a 304 asks the
    fetch history for the URL's fetch before it."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.known: OrderedDict[str, Original] = OrderedDict()
        self.lost: set[str] = set()  # URLs whose last body could not be read

    def get(self, url_hash: str) -> Original | None:
        found = self.known.get(url_hash)
        if found is not None:
            self.known.move_to_end(url_hash)
        return found

    def put(self, url_hash: str, original: Original) -> None:
        self.lost.discard(url_hash)
        self.known[url_hash] = original
        self.known.move_to_end(url_hash)
        if len(self.known) > REMEMBERED:
            self.known.popitem(last=False)

    def lose(self, url_hash: str) -> None:
        self.known.pop(url_hash, None)
        self.lost.add(url_hash)

    def of_304(self, row: Fetch) -> Original | None:
        """What a 304 revisits: the URL's last 2xx response, from memory or the history."""
        found = self.get(row.url_hash)
        if found is not None or row.url_hash in self.lost:
            return found
        with self.ctx.sessions() as session:
            prior = maintenance.response_before(session, row)
        if prior is None or not prior.payload_digest:
            return None
        return Original(prior.url, warc_date(_utc(prior.fetched_at)), prior.payload_digest)


def _write_history(ctx: Context, exported: Exported, since: datetime | None, host: str | None,
                   write: Callable[[FetchRecord, bool], Original | None]) -> None:
    """Hand every fetch (from `since`) to `write`, oldest first, with whether it is a
    robots.txt answer: a response, or a revisit of the URL's last 2xx response (`write`
    returns the one it wrote). Fetches before `since` are not written, but a revisit may
    refer to them."""
    last = _Originals(ctx)
    for row in _history(ctx, host):
        fetched_at = _utc(row.fetched_at)
        wanted = since is None or fetched_at >= _utc(since)
        if row.not_modified:
            if not wanted:
                continue
            if (original := last.of_304(row)) is None:
                exported.skip(ORIGINAL_LOST if row.url_hash in last.lost else NO_ORIGINAL,
                              row.url)
            else:
                write(_record(ctx, row, b"", original), row.robots)
            continue
        if not 200 <= row.http_status < 300 or row.truncated:  # a redirect, an error answer
            # or an answer too large: no original for later revisits
            if wanted and (body := _body(ctx, row, exported)) is not None:
                write(_record(ctx, row, body, None), row.robots)
            continue
        original = last.get(row.url_hash)
        if not wanted and row.payload_digest:  # known without reading the body
            if original is None or original.digest != row.payload_digest:
                last.put(row.url_hash, Original(row.url, warc_date(fetched_at),
                                                row.payload_digest))
            continue
        body = _body(ctx, row, exported)
        if body is None:  # a later 304 is not of an earlier response: skipped too
            last.lose(row.url_hash)
            continue
        digest = row.payload_digest or payload_digest(body)
        if original is not None and original.digest == digest:
            if wanted:
                write(_record(ctx, row, body, original), row.robots)
        elif not wanted:
            last.put(row.url_hash, Original(row.url, warc_date(fetched_at), digest))
        elif (written := write(_record(ctx, row, body, None), row.robots)) is not None:
            last.put(row.url_hash, written)


def _record(ctx: Context, row: Fetch, body: bytes, original: Original | None) -> FetchRecord:
    return FetchRecord(row.url, _utc(row.fetched_at), row.http_status,
                       _request_headers(ctx, row), parse_header_block(row.response_headers),
                       body, row.ip_address, original, row.truncated, row.http_version,
                       row.cipher_suite)


def export_warc(ctx: Context, out: Path, since: datetime | None = None,
                host: str | None = None, max_size: int = MAX_SIZE,
                progress: Callable[[int], None] = lambda n: None) -> Exported:
    """Write the fetch history (from `since`, of `host`) to `out`, split past `max_size`
    bytes; returns what was written and skipped."""
    exported = Exported()
    files = WarcFiles(out, warcinfo(ctx.settings), max_size)

    def write(fetch: FetchRecord, robots: bool) -> Original | None:
        written = files.write(fetch)
        if robots:
            exported.robots += 1
        else:
            exported.written += 1
            exported.revisits += fetch.revisit_of is not None
            exported.answers += fetch.revisit_of is None and (
                not 200 <= fetch.http_status < 300 or fetch.truncated)
            exported.truncated += fetch.truncated
            if exported.written % 1000 == 0:
                progress(exported.written)
        return written

    try:
        _write_history(ctx, exported, since, host, write)
    finally:
        files.close()
    exported.paths = files.paths
    return exported


def cdxj_path(out: Path) -> Path:
    """Where the CDXJ index of an export to `out` goes: beside it, <stem>.cdxj."""
    name = out.name
    stem = name.removesuffix(".warc.gz") if name.endswith(".warc.gz") else out.stem
    return out.with_name(f"{stem}.cdxj")


def write_cdxj(paths: list[Path], index: Path) -> None:
    """A sorted CDXJ index of the WARC files (cdxj-indexer, as pywb reads it; file names
    relative to the index's folder)."""
    from cdxj_indexer.main import write_cdx_index

    write_cdx_index(str(index), [str(p) for p in paths],
                    {"sort": True, "dir_root": str(index.parent)})
