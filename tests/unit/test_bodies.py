"""Which body a page carries from stage to stage, and which one the store keeps and the WARC
export writes (crawlapp.core.bodies), case by case."""

from __future__ import annotations

import gzip
import hashlib

from crawlapp.core.bodies import (
    FETCHED_OF_RENDERED_TYPE,
    Kept,
    bodies_of,
    compress,
    keep,
    rendered_content,
    set_aside,
    take,
)
from crawlapp.core.records import Fetched, FetchError, Lease, Page, Status
from crawlapp.stages.pages import apply_fetch, page_for

HTML = b"<html><body><p>a page</p></body></html>"
DOM = b"<html><head></head><body><p>a page</p><p>and what its script wrote</p></body></html>"
FETCHED_HASH = hashlib.sha256(HTML).hexdigest()
DOM_HASH = hashlib.sha256(DOM).hexdigest()
TYPE = "text/html; charset=latin-1"


def fetched(status: int = 200, body: bytes = HTML, error: str | None = None,
            truncated: bool = False) -> Page:
    """A page as the fetch stage hands it on."""
    lease = Lease(0, "a.test", "tok", "http://a.test/p", 1)
    return apply_fetch(page_for(lease), Fetched(lease.url, status, {"content-type": TYPE}, body,
                                                error, 1.0, 2.0, truncated=truncated), 4096)


def rendered(keep_fetched: bool) -> Page:
    """A page as the render stage hands it on."""
    page = fetched()
    rendered_content(page, compress(DOM), keep_fetched)
    page.content_type = "text/html; charset=utf-8"
    return page


def deduped(page: Page, archive_unstored: bool = False, *, copy_of: str | None = None,
            near: bool = False, noindex: bool = False) -> Page:
    """The page once the dedup stage marked it (an exact or a near copy of `copy_of`, or
    noindex) and set its bodies aside."""
    if noindex:
        page.noindex, page.unstored = True, "noindex"
    if copy_of is not None:
        page.content_dedup, page.duplicate_of, page.near_duplicate = True, copy_of, near
    set_aside(page, archive_unstored)
    return page


def kept(page: Page, archive_unstored: bool = False, dropped: bool = False) -> Kept:
    return keep(page, take(page), dropped, archive_unstored)


def test_an_original_stores_its_body_as_fetched_which_the_warc_writes() -> None:
    page = deduped(fetched())
    assert bodies_of(page).fetched == bodies_of(page).content
    decided = kept(page)
    assert decided.stored == FETCHED_HASH and decided.content is not None
    assert gzip.decompress(decided.content.gz) == HTML and decided.content.content_type == TYPE
    assert decided.archived is None and decided.warc == FETCHED_HASH
    assert page.body_gz is None  # taken out of the record
    assert kept(deduped(fetched()), archive_unstored=True) == decided
    assert kept(deduped(fetched()), dropped=True) == Kept(None, None, None, None)  # taken down


def test_an_exact_copy_carries_its_body_as_a_copy_written_only_if_missing() -> None:
    page = deduped(fetched(), copy_of="b" * 32)
    assert (page.body_gz, bodies_of(page).copy) == (None, True)
    decided = kept(page)
    assert decided.stored == FETCHED_HASH and decided.content is not None
    assert gzip.decompress(decided.content.gz) == HTML
    assert decided.archived is None and decided.warc == FETCHED_HASH


def test_a_near_copy_keeps_nothing_but_its_body_as_fetched_with_archive_unstored() -> None:
    page = deduped(fetched(), copy_of="b" * 32, near=True)
    assert bodies_of(page).fetched is None
    assert kept(page) == Kept(None, None, None, None)
    decided = kept(deduped(fetched(), True, copy_of="b" * 32, near=True), archive_unstored=True)
    assert decided.stored is None and decided.content is None and decided.archived is not None
    assert gzip.decompress(decided.archived.gz) == HTML and decided.archived.content_type == TYPE
    assert decided.warc == FETCHED_HASH


def test_a_rendered_page_stores_its_dom_and_the_warc_writes_its_body_as_fetched() -> None:
    page = deduped(rendered(keep_fetched=True))
    bodies = bodies_of(page)
    assert bodies.rendered == bodies.content and bodies.fetched is not None
    assert gzip.decompress(bodies.fetched.gz) == HTML
    decided = kept(page)
    assert decided.stored == DOM_HASH and decided.content is not None
    assert gzip.decompress(decided.content.gz) == DOM
    assert decided.content.content_type == "text/html; charset=utf-8"
    assert decided.archived is not None and decided.archived.sha256 == FETCHED_HASH
    assert decided.archived.content_type == FETCHED_OF_RENDERED_TYPE
    assert decided.warc == FETCHED_HASH
    # Without CRAWL_RENDER_STORE_RAW the body as fetched is gone: nothing for the WARC.
    decided = kept(deduped(rendered(keep_fetched=False)))
    assert decided.stored == DOM_HASH and decided.archived is None and decided.warc is None


def test_a_noindex_page_stores_nothing_and_archives_its_body_as_fetched_if_asked() -> None:
    assert kept(deduped(fetched(), noindex=True)) == Kept(None, None, None, None)
    decided = kept(deduped(fetched(), True, noindex=True), archive_unstored=True)
    assert decided.stored is None and decided.archived is not None
    assert decided.archived.sha256 == FETCHED_HASH and decided.warc == FETCHED_HASH
    # A rendered one: its DOM is never kept, its body as fetched only with both settings.
    page = deduped(rendered(keep_fetched=True), True, noindex=True)
    assert bodies_of(page).rendered is None
    decided = kept(page, archive_unstored=True)
    assert decided.archived is not None and decided.archived.sha256 == FETCHED_HASH
    assert kept(deduped(rendered(keep_fetched=True), noindex=True)).archived is None


def test_an_answer_too_large_is_archived_as_far_as_it_was_read() -> None:
    page = deduped(fetched(body=HTML[:10], error=FetchError.TOO_LARGE, truncated=True))
    assert (page.status, page.truncated, page.content_hash) == (Status.FAILED, True, None)
    decided = kept(page)
    assert decided.stored is None and decided.content is None and decided.archived is not None
    assert gzip.decompress(decided.archived.gz) == HTML[:10]
    assert decided.warc == hashlib.sha256(HTML[:10]).hexdigest()
    too_large = deduped(fetched(body=HTML[:10], error=FetchError.TOO_LARGE, truncated=True))
    assert kept(too_large, dropped=True) == Kept(None, None, None, None)
