"""A page's bodies: what was fetched, what was rendered, and which of them the store stage
keeps and the WARC export writes. Pure: no I/O.

Every body is gzip-compressed once, where it is made (GZIP_LEVEL, no mtime: the same bytes
always give the same blob), and named by the SHA-256 of the bytes it holds (its blob key's).
A page record (crawlapp.core.records.Page) carries them in four wire fields, which only the
functions here write: `body_gz`, the page's content (its rendered DOM if rendered, else its
body as fetched; its hash is `content_hash`), which an exact copy carries as `copy_gz`, and
`raw_gz` (hashed `raw_hash`), its body as fetched when that is not its content. `bodies_of`
reads them as one record; `keep` decides what the store keeps of them and which one the fetch
history names for the WARC export.

How each stage moves them: the fetch stage makes the body as fetched the content of a 2xx
answer (`fetched_content`), else keeps it apart for the archive (`fetched_apart`); the render
stage makes the DOM the content (`rendered_content`), the body as fetched kept apart or
dropped; a page whose parsing failed drops its content (`drop_content`); the dedup stage sets
an exact copy's content aside as a copy, drops that of a page not stored, or keeps it for the
archive (`set_aside`); a copy found to be an original again takes it back (`restore_original`).
"""

from __future__ import annotations

import gzip
import hashlib
from typing import NamedTuple

from crawlapp.core.records import Page, Status

GZIP_LEVEL = 1  # compressed once, where the body is made: speed over a few % of size
# What a rendered page's body as fetched is written as (the page's own type is the DOM's).
FETCHED_OF_RENDERED_TYPE = "text/html"


class Body(NamedTuple):
    """One body: `gz`, its bytes gzip-compressed; `sha256`, the hex SHA-256 of the bytes it
    holds; `content_type`, the media type it is written to the blob store with."""

    gz: bytes
    sha256: str
    content_type: str | None = None


def compress(data: bytes) -> Body:
    """A body made of `data` (no content type: the page's says it)."""
    return Body(gzip.compress(data, compresslevel=GZIP_LEVEL, mtime=0),
                hashlib.sha256(data).hexdigest())


class Bodies(NamedTuple):
    """What a page record carries of its bodies. `content`: what it holds to store, its
    rendered DOM (`rendered`) if it was rendered, else its body as fetched; `apart`: its body as
    fetched carried beside the content, for the archive only (a rendered page's with
    CRAWL_RENDER_STORE_RAW, a robots.txt answer's, a redirect's or an error answer's, an
    answer too large, a page not stored with CRAWL_ARCHIVE_UNSTORED); `copy`: the content
    is an exact copy's, written only if its key is missing."""

    content: Body | None
    apart: Body | None
    rendered: Body | None
    copy: bool

    @property
    def fetched(self) -> Body | None:
        """The body as fetched, when the record still carries it."""
        return self.apart if self.apart is not None or self.rendered is not None \
            else self.content


def bodies_of(page: Page) -> Bodies:
    """A page's bodies, read from its wire fields."""
    gz = page.body_gz if page.body_gz is not None else page.copy_gz
    content = (Body(gz, page.content_hash or "", page.content_type)
               if gz is not None else None)
    apart = (Body(page.raw_gz, page.raw_hash or "",
                  FETCHED_OF_RENDERED_TYPE if page.rendered else page.content_type)
             if page.raw_gz is not None else None)
    return Bodies(content, apart, content if page.rendered else None, page.body_gz is None
                  and page.copy_gz is not None)


def fetched_content(page: Page, body: Body) -> None:
    """A 2xx answer's body: the page's content."""
    page.content_hash = body.sha256
    page.body_gz = body.gz


def fetched_apart(page: Page, body: Body) -> None:
    """Any other answer's body (a robots.txt, a redirect, an error, an answer too large):
    kept apart, for the archive."""
    page.raw_hash = body.sha256
    page.raw_gz = body.gz


def rendered_content(page: Page, dom: Body, keep_fetched: bool) -> None:
    """The rendered DOM becomes the page's content; its body as fetched is kept apart with
    `keep_fetched` (CRAWL_RENDER_STORE_RAW), else dropped."""
    if keep_fetched:
        page.raw_gz, page.raw_hash = page.body_gz, page.content_hash
    page.rendered = True
    page.content_hash = dom.sha256
    page.body_gz = dom.gz


def drop_content(page: Page) -> None:
    """The page's content is not carried on (its parsing failed)."""
    page.body_gz = None


def set_aside(page: Page, archive_unstored: bool) -> None:
    """Once the dedup stage has marked the page: an exact copy carries its content as a copy;
    a near copy or a page not stored (noindex, canonical pointer) drops it, or keeps it apart
    as its body as fetched with `archive_unstored` (a rendered page's DOM is never kept)."""
    if page.content_dedup and not page.near_duplicate and page.body_gz is not None:
        page.copy_gz, page.body_gz = page.body_gz, None
    elif page.content_dedup or page.unstored:
        if archive_unstored and not page.rendered:
            page.raw_gz, page.raw_hash = page.body_gz, page.content_hash
        page.body_gz = None


def restore_original(page: Page) -> None:
    """An exact copy found to be an original after all: its content is its own again."""
    page.body_gz, page.copy_gz = page.copy_gz, None


def take(page: Page) -> Bodies:
    """The page's bodies, taken out of its record (the store stage, once it writes them)."""
    bodies = bodies_of(page)
    page.body_gz = page.copy_gz = page.raw_gz = None
    return bodies


class Kept(NamedTuple):
    """What the store stage keeps of a page: `stored`, the hash of the content its row names
    (storage_key) when the page is stored, with `content` the body to write under it (None
    when the record carries none); `archived`, its body as fetched, written for the fetch
    history (raw_storage_key); `warc`, the hash of the body the fetch history names for this
    answer, which the WARC export writes (`warc_body`)."""

    stored: str | None
    content: Body | None
    archived: Body | None
    warc: str | None


def keep(page: Page, bodies: Bodies, dropped: bool, archive_unstored: bool) -> Kept:
    """What the store keeps of a page and its `bodies`. It stores the content of a page that
    has some (an exact copy's too: the store writes missing keys only, so a row never names a
    body that is not there), unless the page is a near copy, is not stored (noindex,
    canonical pointer) or was taken down meanwhile (`dropped`). It archives the body as
    fetched carried apart of a robots.txt answer, and of a page not taken down that is stored,
    is not a 2xx or 304 answer, or is kept with `archive_unstored` (CRAWL_ARCHIVE_UNSTORED)."""
    stored = (page.content_hash if not dropped and page.content_hash
              and not page.near_duplicate and not page.unstored else None)
    archiving = page.status == Status.ROBOTS or (not dropped and (
        stored is not None or page.status != Status.FETCHED or archive_unstored))
    apart = bodies.apart
    archived = apart if archiving and apart is not None and apart.sha256 else None
    return Kept(stored, bodies.content if stored is not None else None, archived,
                warc_body(page.rendered, stored, archived.sha256 if archived else None))


def warc_body(rendered: bool, stored: str | None, archived: str | None) -> str | None:
    """Which body the fetch history names for a page's answer, so the WARC export writes as
    its response, of the one `stored` and the one `archived` (their hashes or their keys): its
    body as fetched, so the archived one for a rendered page or a page not stored, else the
    stored one. None when neither was kept (a rendered page's body as fetched dropped)."""
    return archived if rendered or not stored else stored
