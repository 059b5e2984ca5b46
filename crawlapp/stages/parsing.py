"""Stage 2, parse: title and links of each HTML page, resolved to their request URLs.

Nothing one page holds can fail the batch: a link or `Location` that is not a URL is a
rejection counted by reason, and an unexpected error while parsing a page is recorded on that
page (status failed, error naming the exception) while the rest of the batch goes on.
"""

from __future__ import annotations

import logging
from collections import Counter

from crawlapp.core.bodies import drop_content
from crawlapp.core.html import is_html, parse_html, robots_directives
from crawlapp.core.records import Link, Page, Status
from crawlapp.core.settings import Settings
from crawlapp.core.simhash import simhash
from crawlapp.core.sitemaps import is_sitemap, parse_sitemap
from crawlapp.core.textchanges import text_digest
from crawlapp.core.urls import URLRejected, dedup_key, request_url
from crawlapp.stages.pages import body_of

log = logging.getLogger(__name__)


def _redirect(page: Page, location: str, settings: Settings, counts: Counter[str]) -> Page:
    """The redirect's target as the page's one link, or the reason it is not followed."""
    if page.redirect_hops >= settings.max_redirects:
        page.error = f"redirect chain stopped after {settings.max_redirects} hops"
        counts["rejected:too_many_redirects"] += 1
        return page
    try:
        target = request_url(location, page.url, max_length=settings.max_url_length)
        page.links = [Link(target)]
    except URLRejected as exc:
        page.error = f"redirect to a URL refused: {exc.reason}"
        counts[f"rejected:{exc.reason}"] += 1
    return page


def _html(page: Page, settings: Settings, counts: Counter[str]) -> Page:
    parsed = parse_html(body_of(page), page.content_type, settings.max_links_per_page)
    page.title = parsed.title
    page.simhash = simhash(parsed.text) if parsed.text else None
    page.text_digest = text_digest(parsed.text, settings.change_ignore) if parsed.text else None
    if parsed.problem:
        page.error = f"unread: {parsed.problem}"
        counts[f"unread:{parsed.problem.split(':', 1)[0]}"] += 1
    header_nofollow, header_noindex = robots_directives(page.x_robots)
    if parsed.meta_noindex or header_noindex:
        page.noindex = True
    base = page.url
    if parsed.base:
        try:
            base = request_url(parsed.base, page.url, encoding=parsed.url_encoding)
        except URLRejected:
            pass
    seen: set[str] = set()
    if parsed.canonical:
        try:
            canonical = request_url(parsed.canonical, base, max_length=settings.max_url_length,
                                    encoding=parsed.url_encoding)
        except URLRejected as exc:
            counts[f"rejected:{exc.reason}"] += 1
        else:
            if dedup_key(canonical) != dedup_key(page.url):
                page.canonical = canonical
                page.links.append(Link(canonical))
                seen.add(canonical)
    if parsed.meta_nofollow or header_nofollow:
        return page
    for link in parsed.links:
        try:
            target = request_url(link.url, base, max_length=settings.max_url_length,
                                 encoding=parsed.url_encoding)
        except URLRejected as exc:
            counts[f"rejected:{exc.reason}"] += 1
            continue
        if target not in seen:
            seen.add(target)
            page.links.append(Link(target, link.anchor, link.nofollow, link.boilerplate))
    return page


def parse_page(page: Page, settings: Settings, counts: Counter[str]) -> Page:
    """Add `title` and `links` (resolved to their request URLs) to a page."""
    if page.status == Status.ROBOTS:
        return page  # its links are the sitemaps it names, resolved already
    page.links = []
    if page.status == Status.REDIRECTED and page.location:
        return _redirect(page, page.location, settings, counts)
    if page.status != Status.FETCHED or page.not_modified:
        return page
    if is_sitemap(page.url, page.content_type):
        found = parse_sitemap(body_of(page), page.url)
        urls: dict[str, None] = {}
        lastmods: dict[str, float] = {}
        for loc in found.sitemaps + found.urls:
            try:
                url = request_url(loc, max_length=settings.max_url_length)
            except URLRejected as exc:
                counts[f"rejected:{exc.reason}"] += 1
                continue
            urls.setdefault(url)
            if loc in found.lastmods:
                lastmods[url] = found.lastmods[loc]
        page.links = [Link(u) for u in urls]
        page.lastmods = lastmods or None
        return page
    if not is_html(page.content_type):
        return page
    return _html(page, settings, counts)


def parse_pages(pages: list[Page], settings: Settings) -> tuple[list[Page], Counter[str]]:
    """Parse each page of a batch. Returns the pages and the batch's counters: links and
    redirects refused (`rejected:<reason>`), pages that yielded nothing (`unread:<reason>`)
    and pages whose parsing raised (`parse_error:<class>`, recorded failed on the page)."""
    counts: Counter[str] = Counter()
    out = []
    for page in pages:
        try:
            out.append(parse_page(page, settings, counts))
        except Exception as exc:  # one page's content must never fail its batch
            log.exception("parsing %s failed", page.url)
            name = type(exc).__name__
            page.status = Status.FAILED
            page.error = f"parse error: {name}: {str(exc)[:200]}"
            page.links = []
            drop_content(page)
            counts[f"parse_error:{name}"] += 1
            out.append(page)
    return out, counts
