"""Stage 2, parse: title and links of each HTML page, resolved to their canonical form."""

from __future__ import annotations

import gzip
from collections import Counter

from crawlapp.html import is_html, parse_html, robots_directives
from crawlapp.pipeline.pages import Page
from crawlapp.settings import Settings
from crawlapp.simhash import simhash
from crawlapp.sitemaps import is_sitemap, parse_sitemap
from crawlapp.urls import URLRejected, canonicalize, canonicalize_many


def parse_page(page: Page, settings: Settings, rejected: Counter[str]) -> Page:
    """Add `title` and `links` ([canonical url, anchor, nofollow]) to a fetched HTML page."""
    if page.get("status") == "robots":
        return page  # its links are the sitemaps it names, canonical already
    page["links"] = []
    if page.get("status") == "redirected" and page.get("location"):
        if int(page.get("redirect_hops") or 0) >= settings.max_redirects:
            page["error"] = f"redirect chain stopped after {settings.max_redirects} hops"
            rejected["too_many_redirects"] += 1
            return page
        try:
            target = canonicalize(page["location"], page["url"],
                                  max_length=settings.max_url_length)
            page["links"] = [[target, "", False]]
        except URLRejected as exc:
            page["error"] = f"redirect to a URL refused: {exc.reason}"
            rejected[exc.reason] += 1
        return page
    if page.get("status") != "fetched" or page.get("not_modified"):
        return page
    if is_sitemap(page["url"], page.get("content_type")):
        found = parse_sitemap(gzip.decompress(page["body_gz"]), page["url"])
        page["links"] = [[u, "", False] for u in canonicalize_many(
            found.sitemaps + found.urls, max_length=settings.max_url_length)[0]]
        return page
    if not is_html(page.get("content_type")):
        return page
    parsed = parse_html(gzip.decompress(page["body_gz"]), page.get("content_type"),
                        settings.max_links_per_page)
    page["title"] = parsed.title
    page["simhash"] = simhash(parsed.text) if parsed.text else None
    header_nofollow, header_noindex = robots_directives(page.get("x_robots"))
    if parsed.meta_noindex or header_noindex:
        page["noindex"] = True
    base = page["url"]
    if parsed.base:
        try:
            base = canonicalize(parsed.base, page["url"])
        except URLRejected:
            pass
    seen: set[str] = set()
    if parsed.canonical:
        try:
            canonical = canonicalize(parsed.canonical, base, max_length=settings.max_url_length)
        except URLRejected as exc:
            rejected[exc.reason] += 1
        else:
            if canonical != page["url"]:
                page["canonical"] = canonical
                page["links"].append([canonical, "", False, False])
                seen.add(canonical)
    if parsed.meta_nofollow or header_nofollow:
        return page
    for link in parsed.links:
        try:
            target = canonicalize(link.url, base, max_length=settings.max_url_length)
        except URLRejected as exc:
            rejected[exc.reason] += 1
            continue
        if target not in seen:
            seen.add(target)
            page["links"].append([target, link.anchor, link.nofollow, link.boilerplate])
    return page


def parse_pages(pages: list[Page], settings: Settings) -> tuple[list[Page], Counter[str]]:
    rejected: Counter[str] = Counter()
    return [parse_page(page, settings, rejected) for page in pages], rejected
