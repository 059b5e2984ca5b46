"""HTML parsing for the pipeline: charset, title, visible text and links. Pure: no I/O.

The body is handed to libxml2 as bytes, never as a decoded str: lxml refuses a str that
carries an XML declaration with an encoding, which every DocBook and many XHTML pages begin
with. Which encoding the bytes are in is decided here (choose_encoding), in the order the
WHATWG encoding sniffing algorithm uses: byte order mark, then the Content-Type charset,
then what the document declares (<meta charset>, <meta http-equiv>, <?xml encoding?>), then
UTF-8, then detection. A declared encoding the bytes do not fit strictly gives way to the
next declared one that does fit; when none does, the first is used with U+FFFD for the bad
bytes (as browsers do), so one stray byte never turns a whole page into mojibake.

UTF-8 bodies (nearly all) go to the parser as they are; any other encoding is decoded by
Python and passed on re-encoded as UTF-8, so libxml2 only ever reads UTF-8.
"""

from __future__ import annotations

import codecs
import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from bs4.dammit import EncodingDetector
from lxml import etree

from crawlapp.core.records import Link

_CHARSET_RE = re.compile(r"charset\s*=\s*[\"']?([\w.:-]+)", re.I)
_LINK_TAGS = ("a", "area")
_INVISIBLE = ("script", "style", "noscript", "template")
_BOILERPLATE = ("nav", "header", "footer", "aside")
# <link rel> values that name another page of the site (navigation a browser or a reader
# offers: next, search, index, ...), followed like links in a navigation bar; stylesheets,
# icons and preloads are not pages.
_PAGE_RELS = frozenset({"next", "prev", "previous", "search", "index", "contents", "start",
                        "first", "last", "up", "help", "glossary", "home", "alternate"})
_SNIFF_BYTES = 4096  # how far into the body declarations and detection look
_XHTML_PREFIX_RE = re.compile(rb"xmlns:([A-Za-z_][\w.-]*)\s*=\s*[\"']http://www\.w3\.org/1999/xhtml")
_BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"),
         (codecs.BOM_UTF16_BE, "utf-16-be"))
# WHATWG Encoding Standard labels Python does not know, and the WHATWG decoders that Python
# spells differently: latin-1 and ASCII labels mean windows-1252, Shift_JIS means the
# Windows code page 932, and so on.
_LABEL_ALIASES = {
    "x-sjis": "cp932", "windows-31j": "cp932", "ms932": "cp932", "csshiftjis": "cp932",
    "x-euc-jp": "euc_jp", "cseucpkdfmtjapanese": "euc_jp", "x-gbk": "gbk", "x-cp1252": "cp1252",
    "unicode-1-1-utf-8": "utf-8", "unicode11utf8": "utf-8", "unicode20utf8": "utf-8",
    "x-unicode20utf8": "utf-8", "x-mac-roman": "mac_roman", "x-mac-cyrillic": "mac_cyrillic",
    "x-mac-ukrainian": "mac_cyrillic", "iso-8859-8-i": "iso8859_8", "csiso88598i": "iso8859_8",
    "logical": "iso8859_8", "dos-874": "cp874", "windows-874": "cp874", "x-user-defined": "cp1252",
    "ucs-2": "utf-16-le", "unicode": "utf-16-le", "unicodefeff": "utf-16-le",
    "csunicode": "utf-16-le", "iso-10646-ucs-2": "utf-16-le", "unicodefffe": "utf-16-be",
}
_CODEC_SUPERSETS = {
    "iso8859-1": "cp1252", "ascii": "cp1252", "iso8859-9": "cp1254", "iso8859-11": "cp874",
    "tis-620": "cp874", "shift_jis": "cp932", "euc_kr": "cp949", "gb2312": "gbk",
    "big5": "big5hkscs", "utf-16": "utf-16-le",
}
# Not web encodings (UTF-7 is banned from the web: it hides markup), or not text at all.
_REFUSED_CODECS = frozenset({"utf-7", "idna", "punycode", "unicode-escape", "raw-unicode-escape",
                             "undefined", "utf-32", "utf-32-le", "utf-32-be", "mbcs", "oem"})
_UTF16 = frozenset({"utf-16-le", "utf-16-be"})
_PARSER = etree.HTMLParser(encoding="utf-8")
# The text of an element and its descendants joined, as "".join(itertext()) gives it
# (comments and processing instructions are not text), in half its time.
_TEXT_CONTENT = etree.XPath("string()", smart_strings=False)
# What the URL parser strips from both ends of an href: C0 controls and space, not U+00A0.
_C0_SPACE = "".join(map(chr, range(0x21)))


@dataclass
class ParsedPage:
    title: str = ""
    links: list[Link] = field(default_factory=list)
    base: str | None = None
    canonical: str | None = None  # <link rel=canonical href>, unresolved
    meta_nofollow: bool = False
    meta_noindex: bool = False
    text: str = ""
    encoding: str = "utf-8"  # the Python codec the body was read with
    # None when the page yielded text (other than U+FFFD), links or a canonical URL; else why not:
    # "empty body", "no text and no links" or "unparsable: <ExceptionClass>".
    problem: str | None = None

    @property
    def url_encoding(self) -> str:
        """The encoding the WHATWG URL parser percent-encodes this page's link queries in
        (the document's "output encoding": UTF-8 for UTF-16 documents)."""
        return "utf-8" if self.encoding in _UTF16 else self.encoding


def _is_page_type(media_type: str | None) -> bool:
    """True for a <link type> that may be a page (none given, HTML or XHTML): an alternate
    feed or PDF is not followed as one."""
    return media_type is None or is_html(media_type)


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


@functools.lru_cache(maxsize=256)
def codec_for(label: str | None) -> str | None:
    """The Python codec that decodes what an encoding label (a charset name) means on the web,
    or None if the label names no encoding a web page can be in."""
    if not label:
        return None
    label = label.strip().lower()
    if label in _LABEL_ALIASES:
        return _LABEL_ALIASES[label]
    try:
        info = codecs.lookup(label)
    except LookupError:
        return None
    if not getattr(info, "_is_text_encoding", True) or info.name in _REFUSED_CODECS:
        return None
    return _CODEC_SUPERSETS.get(info.name, info.name)


def bom_encoding(body: bytes) -> tuple[str | None, int]:
    """(codec, BOM length) from a byte order mark, or from the first bytes of UTF-16 text
    without one ("<" then a zero byte: little-endian; the other way round: big-endian)."""
    for bom, codec in _BOMS:
        if body.startswith(bom):
            return codec, len(bom)
    if body[:1] == b"<" and body[1:2] == b"\x00" and body[2:3] not in (b"", b"\x00"):
        return "utf-16-le", 0
    if body[:1] == b"\x00" and body[1:2] == b"<" and body[3:4] not in (b"", b"\x00"):
        return "utf-16-be", 0
    return None, 0


def declared_encoding(body: bytes) -> str | None:
    """The codec the document itself names near its start: <?xml encoding?>, <meta charset>
    or <meta http-equiv=Content-Type>. A declaration of UTF-16 in a document readable as
    ASCII is wrong by construction, and means UTF-8 (as in the WHATWG prescan)."""
    codec = codec_for(EncodingDetector.find_declared_encoding(body[:_SNIFF_BYTES], is_html=True))
    return "utf-8" if codec in _UTF16 else codec


def _detected(body: bytes) -> Iterator[str]:
    """Codecs guessed from the bytes (slow: only for pages that declare nothing usable)."""
    for label in EncodingDetector(body[:_SNIFF_BYTES], is_html=True).encodings:
        codec = codec_for(label)
        if codec is not None and codec not in _UTF16:
            yield codec


def _fits(body: bytes, codec: str) -> bool:
    try:
        body.decode(codec)
    except (LookupError, UnicodeDecodeError):
        return False
    return True


def choose_encoding(body: bytes, content_type: str | None) -> tuple[str, int, bool]:
    """(codec, BOM length, strict) for reading `body`: `strict` False when no candidate fits
    the bytes and the codec is to be applied with U+FFFD for what does not fit."""
    codec, skip = bom_encoding(body)
    if codec is not None:
        return codec, skip, _fits(body[skip:], codec)
    header = codec_for(header_charset(content_type))
    if header is not None and _fits(body, header):
        return header, 0, True
    declared = declared_encoding(body)  # only looked for when the header does not settle it
    if declared is not None and declared != header and _fits(body, declared):
        return declared, 0, True
    if "utf-8" not in (header, declared) and _fits(body, "utf-8"):
        return "utf-8", 0, True
    named = header or declared
    if named is not None:
        return named, 0, False
    for codec in _detected(body):
        if _fits(body, codec):
            return codec, 0, True
    return "cp1252", 0, False


def decode_body(body: bytes, content_type: str | None) -> str:
    """Decode an HTML body: BOM, header charset, the document's own declaration, UTF-8, then
    detection; the byte order mark is dropped."""
    codec, skip, strict = choose_encoding(body, content_type)
    return body[skip:].decode(codec, "strict" if strict else "replace")


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


def _unprefix(root: etree._Element, body: bytes) -> None:
    """Rename <x:a> to <a> where the document binds a prefix x to the XHTML namespace (the
    HTML parser keeps such names whole); unprefixed XHTML needs nothing."""
    prefixes = {m.group(1).decode("ascii") + ":"
                for m in _XHTML_PREFIX_RE.finditer(body, 0, _SNIFF_BYTES)}
    if not prefixes:  # xmlns:og, xmlns:fb and the like: nothing to rename
        return
    for element in root.iter(etree.Element):
        prefix = element.tag.partition(":")[0] + ":"
        if prefix in prefixes:
            element.tag = element.tag[len(prefix):]


def parse_html(body: bytes, content_type: str | None, max_links: int = 1000) -> ParsedPage:
    """Title, <base href>, meta robots nofollow, the <a>/<area> links (unresolved) and the
    visible text of a page. Never raises: a page that yields nothing says why in `problem`."""
    if not body or body.isspace():  # (isspace stops at the first other byte: no copy)
        return ParsedPage(problem="empty body")
    try:
        codec, skip, strict = choose_encoding(body, content_type)
        if codec == "utf-8" and strict:
            data = body[skip:]
        else:
            data = body[skip:].decode(codec, "replace").encode("utf-8", "replace")
        root = etree.fromstring(data, _PARSER)
        page = ParsedPage(encoding=codec)
        if root is None:  # nothing but comments, a declaration or white space
            page.problem = "no text and no links"
            return page
        if b"xmlns:" in data[:_SNIFF_BYTES]:
            _unprefix(root, data)
        _read(root, page, max_links)
    except Exception as exc:  # noqa: BLE001 - any bytes at all may come off the wire
        return ParsedPage(problem=f"unparsable: {type(exc).__name__}")
    if not page.links and page.canonical is None and not page.text.replace("\ufffd", "").strip():
        page.problem = "no text and no links"  # replacement characters alone are no text
    return page


def _read(root: etree._Element, page: ParsedPage, max_links: int) -> None:
    title = root.find(".//title")
    if title is not None and title.text:
        page.title = " ".join(title.text.split())[:512]
    base = root.find(".//base[@href]")
    if base is not None:
        page.base = base.get("href", "").strip() or None
    related = []  # <link rel=next|search|...>: after the page's own <a> links
    for link in root.iterfind(".//link[@rel]"):
        rels = set(link.get("rel", "").lower().split())
        href = (link.get("href") or "").strip(_C0_SPACE)
        if not href:
            continue
        if "canonical" in rels and page.canonical is None:
            page.canonical = href
        elif rels & _PAGE_RELS and _is_page_type(link.get("type")):
            related.append(Link(href, "", "nofollow" in rels, True))
    for meta in root.iterfind(".//meta[@name]"):
        if meta.get("name", "").lower() == "robots":
            page.meta_nofollow, page.meta_noindex = robots_directives(meta.get("content"))
    # The set holds the elements themselves: lxml then hands out the same proxy objects.
    boilerplate = {a for box in root.iter(_BOILERPLATE) for a in box.iter(_LINK_TAGS)}
    for element in root.iter(_LINK_TAGS):
        href = (element.get("href") or "").strip(_C0_SPACE)
        if not href:
            continue
        rel = (element.get("rel") or "").lower().split()
        # An anchor of text alone (most) is the element's text; else its text nodes'.
        anchor = " ".join(((element.text or "") if len(element) == 0
                           else _TEXT_CONTENT(element)).split())[:256]
        page.links.append(Link(href, anchor, "nofollow" in rel,
                               element in boilerplate))
        if len(page.links) >= max_links:
            break
    linked = {link.url for link in page.links}
    page.links += [link for link in related if link.url not in linked][:max_links - len(page.links)]
    page.text = text_of(root)
