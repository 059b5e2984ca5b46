"""HTML parsing for the pipeline: charset, title, visible text and links. Pure: no I/O."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

import lxml.html
from bs4.dammit import EncodingDetector
from lxml import etree

_CHARSET_RE = re.compile(r"charset\s*=\s*[\"']?([\w.:-]+)", re.I)
_LINK_TAGS = ("a", "area")
_INVISIBLE = ("script", "style", "noscript", "template")
_BOILERPLATE = ("nav", "header", "footer", "aside")


@dataclass
class Link:
    url: str
    anchor: str
    nofollow: bool
    boilerplate: bool = False  # inside <nav>, <header>, <footer> or <aside>


@dataclass
class ParsedPage:
    title: str = ""
    links: list[Link] = field(default_factory=list)
    base: str | None = None
    canonical: str | None = None  # <link rel=canonical href>, unresolved
    meta_nofollow: bool = False
    meta_noindex: bool = False
    text: str = ""


def text_of(root: etree._Element) -> str:
    """The lower-cased visible text under `root`: scripts, styles and comments dropped.

    Strips those elements from the tree, so call it after everything else is read.
    """
    etree.strip_elements(root, *_INVISIBLE, etree.Comment, etree.ProcessingInstruction,
                         with_tail=False)
    return " ".join(" ".join(root.itertext()).split()).lower()


def header_charset(content_type: str | None) -> str | None:
    """The charset parameter of a Content-Type header, if any."""
    if not content_type:
        return None
    match = _CHARSET_RE.search(content_type)
    return match.group(1).lower() if match else None


def _candidates(body: bytes, content_type: str | None) -> Iterator[str | None]:
    """Encodings to try, lazily: header, BOM, <meta>, strict UTF-8, then detection (slow)."""
    yield header_charset(content_type)
    _, bom = EncodingDetector.strip_byte_order_mark(body[:4])
    yield bom
    yield EncodingDetector.find_declared_encoding(body[:4096], is_html=True)
    yield "utf-8"
    yield from EncodingDetector(body[:4096], is_html=True).encodings


def decode_body(body: bytes, content_type: str | None) -> str:
    """Decode an HTML body: header charset, else BOM or <meta> charset, else detection."""
    for encoding in _candidates(body, content_type):
        if not encoding:
            continue
        try:
            text = body.decode(encoding)
        except (LookupError, UnicodeDecodeError):
            continue
        return text[1:] if text.startswith("\ufeff") else text
    return body.decode("utf-8", errors="replace")


def robots_directives(value: str | None) -> tuple[bool, bool]:
    """(nofollow, noindex) from a meta robots content or an X-Robots-Tag header value."""
    words = {w.strip() for w in (value or "").lower().replace(";", ",").split(",")}
    words |= {w.split(":", 1)[1].strip() for w in words if ":" in w}  # "bot: noindex"
    none = "none" in words
    return none or "nofollow" in words, none or "noindex" in words


def is_html(content_type: str | None) -> bool:
    if not content_type:
        return True
    media = content_type.split(";", 1)[0].strip().lower()
    return media in ("text/html", "application/xhtml+xml", "")


def parse_html(body: bytes, content_type: str | None, max_links: int = 1000) -> ParsedPage:
    """Title, <base href>, meta robots nofollow, the <a>/<area> links (unresolved) and the
    visible text of a page."""
    text = decode_body(body, content_type)
    if not text.strip():
        return ParsedPage()
    try:
        root = lxml.html.document_fromstring(text)
    except (etree.ParserError, ValueError):
        return ParsedPage()
    page = ParsedPage()
    title = root.find(".//title")
    if title is not None and title.text:
        page.title = " ".join(title.text.split())[:512]
    base = root.find(".//base[@href]")
    if base is not None:
        page.base = base.get("href", "").strip() or None
    for link in root.iterfind(".//link[@rel]"):
        if "canonical" in link.get("rel", "").lower().split() and link.get("href", "").strip():
            page.canonical = link.get("href", "").strip()
            break
    for meta in root.iterfind(".//meta[@name]"):
        if meta.get("name", "").lower() == "robots":
            page.meta_nofollow, page.meta_noindex = robots_directives(meta.get("content"))
    # The set holds the elements themselves: lxml then hands out the same proxy objects.
    boilerplate = {a for box in root.iter(_BOILERPLATE) for a in box.iter(_LINK_TAGS)}
    for element in root.iter(_LINK_TAGS):
        href = element.get("href")
        if href is None or not href.strip():
            continue
        rel = (element.get("rel") or "").lower().split()
        anchor = " ".join(element.text_content().split())[:256]
        page.links.append(Link(href.strip(), anchor, "nofollow" in rel,
                               element in boilerplate))
        if len(page.links) >= max_links:
            break
    page.text = text_of(root)
    return page
