"""Sitemaps (sitemaps.org 0.9): parse a urlset or a sitemap index, safely. Pure: no I/O."""

from __future__ import annotations

import io
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from lxml import etree

MAX_URLS = 50_000
MAX_BYTES = 50 * 1024 * 1024
GZIP_MAGIC = b"\x1f\x8b"
# root element -> (entry element, SitemapResult field its <loc> values go to)
ROOTS = {"urlset": ("url", "urls"), "sitemapindex": ("sitemap", "sitemaps")}


@dataclass
class SitemapResult:
    """The page URLs of a urlset, the sitemap URLs of an index, and reason codes for problems.

    `errors` holds one code per problem: "too_large", "too_many_urls", "not_xml",
    "gzip_error", "not_sitemap", and one "cross_host" or "bad_loc" per dropped <loc>.
    """

    urls: list[str] = field(default_factory=list)
    sitemaps: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    lastmods: dict[str, float] = field(default_factory=dict)  # <loc> -> its <lastmod>


def lastmod_time(text: str) -> float | None:
    """A <lastmod> (W3C Datetime: a date, or a date and time with its zone, UTC when none is
    given) as a POSIX time; a date alone is its day's start. None when it is not one."""
    text = text.strip()
    if len(text) < 10:  # a year or a month alone says too little to act on
        return None
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return None
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()


def _gunzip(data: bytes, max_bytes: int) -> tuple[bytes, list[str]]:
    """At most max_bytes (> 0) of a gzip stream, never more, whatever it would expand to."""
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        xml = inflater.decompress(data, max_bytes)
        more = inflater.decompress(inflater.unconsumed_tail, 1)
    except zlib.error:
        return b"", ["gzip_error"]
    if more:
        return xml, ["too_large"]
    return xml, [] if inflater.eof else ["gzip_error"]  # not eof: a truncated stream


def _xml_bytes(data: bytes, max_bytes: int) -> tuple[bytes, list[str]]:
    """The XML to parse: decompressed when gzip, cut at max_bytes ("too_large")."""
    if data[:2] == GZIP_MAGIC:
        return _gunzip(data, max_bytes)
    if len(data) > max_bytes:
        return data[:max_bytes], ["too_large"]
    return data, []


def _host(url: str) -> str | None:
    """The lower-case, IDNA-encoded host of an http(s) URL; None for anything else."""
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").rstrip(".")
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not host:
        return None
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        return host


def _local_name(element: etree._Element) -> str:
    tag = element.tag
    return tag.rpartition("}")[2] if isinstance(tag, str) else ""


def _loc_problem(loc: str, base_host: str | None) -> str | None:
    """Why a <loc> is dropped: "bad_loc" when not an http(s) URL, "cross_host" off the host."""
    host = _host(loc)
    if host is None:
        return "bad_loc"
    return None if host == base_host else "cross_host"


def _release(element: etree._Element) -> None:
    """Free a finished entry and the siblings before it, so memory stays flat."""
    element.clear(keep_tail=True)
    parent = element.getparent()
    while parent is not None and element.getprevious() is not None:
        del parent[0]


def _entry_locs(events: etree.iterparse, entry: str) -> Iterator[tuple[str, str | None]]:
    """The <loc> and <lastmod> texts of each `entry` element (not <image:loc> inside
    <image:image>), freeing each entry once it is done."""
    loc: str | None = None
    lastmod: str | None = None
    for event, element in events:
        if event != "end":
            continue
        name = _local_name(element)
        if name == entry:
            if loc is not None:
                yield loc, lastmod
            loc = lastmod = None
            _release(element)
        elif name in ("loc", "lastmod") and _local_name(element.getparent()) == entry:
            if name == "loc":
                loc = (element.text or "").strip()
            else:
                lastmod = element.text or ""


def _collect(xml: bytes, base_url: str, max_urls: int, result: SitemapResult) -> None:
    """Fill `result` from the XML; raises XMLSyntaxError, keeping what came before."""
    from lxml import etree  # imported here: see parse_sitemap
    events = etree.iterparse(io.BytesIO(xml), events=("start", "end"), resolve_entities=False,
                             no_network=True, huge_tree=False, load_dtd=False)
    first = next(events, None)
    root = ROOTS.get(_local_name(first[1]) if first else "")
    if root is None:
        result.errors.append("not_sitemap")
        return
    entry, target = root
    kept: list[str] = getattr(result, target)
    base_host = _host(base_url)
    for count, (loc, lastmod) in enumerate(_entry_locs(events, entry), start=1):
        if count > max_urls:
            result.errors.append("too_many_urls")
            return
        problem = _loc_problem(loc, base_host)
        if problem:
            result.errors.append(problem)
            continue
        kept.append(loc)
        if lastmod is not None and (when := lastmod_time(lastmod)) is not None:
            result.lastmods[loc] = when


def parse_sitemap(data: bytes, base_url: str, max_urls: int = MAX_URLS,
                  max_bytes: int = MAX_BYTES) -> SitemapResult:
    """Parse a sitemap (plain or gzip) fetched from `base_url`; never raises.

    Keeps the http(s) <loc> values on the host of `base_url`; stops after max_urls entries
    or max_bytes of (decompressed) XML, keeping what was parsed up to there. Entities are
    not expanded and no DTD or network resource is loaded (no XXE, no billion laughs).
    """
    # Imported here: lxml is for the parse stage (the fetch workers use default_sitemap only).
    from lxml import etree

    result = SitemapResult()
    xml, result.errors = _xml_bytes(data, max_bytes)
    try:
        _collect(xml, base_url, max_urls, result)
    except etree.XMLSyntaxError:
        if "too_large" not in result.errors and "gzip_error" not in result.errors:
            result.errors.append("not_xml")
    return result


SITEMAP_TYPES = ("application/xml", "text/xml", "application/gzip", "application/x-gzip")


def is_sitemap(url: str, content_type: str | None) -> bool:
    """A response to parse as a sitemap: an XML or gzip type, or a .xml / .xml.gz path."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    path = urlsplit(url).path.lower()
    return media in SITEMAP_TYPES or path.endswith((".xml", ".xml.gz"))


def default_sitemap(origin: str) -> str:
    """Where a sitemap is looked for when robots.txt names none: origin/sitemap.xml."""
    return origin.rstrip("/") + "/sitemap.xml"
