"""Tests of the test web's opt-in cases (testweb/cases.py) and of what came with them:
expectation helpers, generations, streamed bodies, the log's bytes field. Pure, except one
live test against a background server."""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import http.client
import inspect
import json
import re
import signal
import socket
import time
import tracemalloc
import xml.etree.ElementTree as ET
import zlib
from html.parser import HTMLParser
from itertools import combinations
from pathlib import Path
from urllib.parse import quote, urldefrag, urljoin, urlsplit

import pytest

from crawlapp.core.html import ParsedPage, choose_encoding
from testweb import cases, serverlog
from testweb.__main__ import main
from testweb.hosts import CASE_GROUPS, CASE_HOSTS, Response, WebSpec
from testweb.server import (
    GenerationSwitch,
    _send,
    add_spec_arguments,
    spec_argv,
    spec_from_args,
    start_in_background,
)
from testweb.serverlog import Request
from testweb.site import Web

DEFAULT = WebSpec(hosts=20, pages_per_host=10, port=8080)
CASES = WebSpec(hosts=20, pages_per_host=10, port=8080, cases=True)
# Recorded from the web before the cases were added: every response (status, headers, body)
# of the expected pages, robots.txt and /private/secret.html of each host, and every outlinks().
DEFAULT_RESPONSES_SHA256 = "96fcb3ba09fc61824e27d74d60dff539189ae42e9d1c204b77af7bbc872228bb"
DEFAULT_OUTLINKS_SHA256 = "eb8171ca0f1186a4d2333818658031ec2100c7235f9a229e880b69fe4925f079"
DEFAULT_EXPECTED_SHA256 = {
    0: (20, "77d3e5c64afd1c96ecf54ce07c4435fa1cdb19af2e1387e0f96ff28019c023a0"),
    1: (180, "0f98632aa981c8f6e4ea72dc73327b5c0cd27f797daca638efe4f2ad4dbe1057"),
    5: (220, "4b04b4ca57d95cc5f2d0917fb0dc681a0e4cbc2ee1933453d53b83f9c0284943"),
}
H0 = "127.0.1.1:8080"


@pytest.fixture(scope="module")
def web() -> Web:
    return Web(CASES)


def _get(web: Web, url: str, headers: dict[str, str] | None = None) -> Response:
    parts = urlsplit(url)
    return web.respond(parts.netloc, parts.path + (f"?{parts.query}" if parts.query else ""),
                       headers)


def _url(web: Web, kind: str, path: str) -> str:
    return f"http://{web.case_hosts()[kind]}{path}"


class _Doc(HTMLParser):
    """What a careful link extractor sees in a page."""

    def __init__(self, encoding: str = "utf-8") -> None:
        super().__init__()
        self.encoding = encoding  # what the query of a link is percent-encoded in (WHATWG)
        self.anchors: list[tuple[str, str]] = []  # (href, rel)
        self.base: str | None = None
        self.canonical: str | None = None
        self.robots = ""
        self.text: list[str] = []
        self.depth = self.max_depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "a" and "href" in a:
            self.anchors.append((a["href"], a.get("rel", "")))
        elif tag == "base" and self.base is None:
            self.base = a.get("href")
        elif tag == "link" and a.get("rel") == "canonical":
            self.canonical = a.get("href")
        elif tag == "meta" and a.get("name", "").lower() == "robots":
            self.robots = a.get("content", "").lower()
        elif tag == "div":
            self.depth += 1
            self.max_depth = max(self.max_depth, self.depth)

    def handle_endtag(self, tag: str) -> None:
        self.depth -= tag == "div"

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def followed(self, url: str) -> list[str]:
        """Canonical absolute targets of the followable links of the page at `url`: empty
        hrefs, other schemes and hrefs no URL parser accepts are skipped."""
        if "nofollow" in self.robots.split(","):
            return []
        base = urljoin(url, self.base) if self.base else url
        targets = []
        for href, rel in self.anchors:
            if not href.strip() or "nofollow" in rel.lower().split():
                continue
            try:
                target = urldefrag(urljoin(base, href.strip())).url
            except ValueError:  # an unclosed bracket, a host that NFKC turns into a path
                continue
            if urlsplit(target).scheme not in ("http", "https"):
                continue
            address, mark, query = target.partition("?")
            query = quote(query, safe="".join(map(chr, range(0x21, 0x7f))), encoding=self.encoding,
                          errors="xmlcharrefreplace")
            targets.append(cases.canonical_url(address + mark + query))
        return targets


def _doc(response: Response) -> _Doc:
    """The page read as a browser reads it: BOM, header charset, the page's declaration."""
    codec, skip, strict = choose_encoding(response.body, response.header("Content-Type"))
    parser = _Doc(ParsedPage(encoding=codec).url_encoding)
    parser.feed(response.body[skip:].decode(codec, "strict" if strict else "replace"))
    return parser


def _sha(lines: list[str]) -> str:
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


# --- the default web is unchanged ---------------------------------------------------------------

def test_default_web_is_unchanged() -> None:
    web = Web(DEFAULT)
    for depth, (count, pages_sha) in DEFAULT_EXPECTED_SHA256.items():
        pages = sorted(web.expected_pages(depth))
        assert (len(pages), _sha(pages)) == (count, pages_sha)
    urls = (sorted(web.expected_pages(5)) + [f"{s}robots.txt" for s in sorted(web.seeds())]
            + [f"{s}private/secret.html" for s in sorted(web.seeds())])
    digest = hashlib.sha256()
    for url in urls:
        response = _get(web, url)
        for part in (url, str(response.status), repr(response.headers)):
            digest.update(part.encode())
        digest.update(response.body)
    assert digest.hexdigest() == DEFAULT_RESPONSES_SHA256
    outlinks = hashlib.sha256()
    for url in sorted(web.expected_pages(5)):
        outlinks.update(url.encode() + repr(web.outlinks(url)).encode())
    assert outlinks.hexdigest() == DEFAULT_OUTLINKS_SHA256
    home = web.respond(H0, "/")
    assert home.header("ETag") == '"b59922cbdfbd4616"' and home.stream is None
    assert home.header("Last-Modified") == "Tue, 14 Nov 2023 22:13:20 GMT"


def test_default_web_has_no_cases() -> None:
    web = Web(DEFAULT)
    assert web.case_kinds == () and web.host_count == 20 and len(web.hosts()) == 20
    assert web.respond("127.0.1.21:8080", "/").status == 404
    assert web.never_fetch() == [f"{web.base_url(i)}/private/" for i in range(20)]
    assert (web.trap_prefixes(), web.redirect_cases(), web.sitemap_pages(), web.case_urls(),
            web.spelling_groups(), web.canonical_links()) == ({}, [], set(), {}, {}, {})
    assert web.duplicate_groups() == {"exact": [], "near": []}
    assert web.expected_pages(5, sitemaps=True, traps=True) == web.expected_pages(5)
    assert web.at_generation(0).respond(H0, "/p/1.html") == web.respond(H0, "/p/1.html")


# --- flags and layout ---------------------------------------------------------------------------

def test_case_flags_and_host_layout(web: Web) -> None:
    assert CASES.case_groups == CASE_GROUPS and len(web.case_kinds) == len(CASE_HOSTS)
    assert web.host_count == 20 + len(CASE_HOSTS) and len(web.hosts()) == web.host_count
    assert web.seeds() == Web(DEFAULT).seeds()
    assert [web.host_index(n) for n in web.case_hosts().values()] == list(range(20, 20 + len(CASE_HOSTS)))
    assert web.case_hosts()["robots-500"] == "127.0.1.21:8080"
    only = Web(WebSpec(hosts=5, trap_cases=True, dedup_cases=True))
    assert only.case_kinds == ("traps", "dedup-0", "dedup-1", "dedup-2", "dedup-3")
    assert only.case_host("traps") == 5 and only.case_host("links") is None
    assert only.host_index("127.0.1.11:8080") is None
    with pytest.raises(ValueError):
        WebSpec(hosts=63750, cases=True)
    for bad in ({"generation": -1}, {"change_fraction": 1.5}, {"big_page_bytes": 10},
                {"drip_seconds": -1.0}):
        with pytest.raises(ValueError):
            WebSpec(**bad)  # type: ignore[arg-type]


def test_host_0_links_every_case_host_and_other_pages_stay(web: Web) -> None:
    plain = Web(DEFAULT)
    links = web.outlinks(web.seeds()[0])
    assert links is not None
    assert links[:-len(CASE_HOSTS)] == plain.outlinks(plain.seeds()[0])
    assert links[-len(CASE_HOSTS):] == [f"http://{n}/" for n in web.case_hosts().values()]
    for url in sorted(plain.expected_pages(5) - {plain.seeds()[0]}):
        assert _get(web, url) == _get(plain, url)
    assert plain.expected_pages(5) < web.expected_pages(5)


def test_outlinks_are_what_a_careful_extractor_finds(web: Web) -> None:
    """On every expected page: anchors parsed from the HTML (base applied, nofollow dropped,
    script and comments ignored), canonicalised, are exactly the outlinks()."""
    pages = web.expected_pages(5, sitemaps=True, traps=True)
    assert len(pages) > 300
    for url in pages:
        outlinks = web.outlinks(url)
        assert outlinks is not None, url
        doc = _doc(_get(web, url))
        assert doc.followed(url) == [cases.canonical_url(link) for link in outlinks], url


def test_responses_are_deterministic(web: Web) -> None:
    again = Web(CASES)
    for url in sorted(web.expected_pages(5, sitemaps=True)) + list(web.case_urls().values()):
        first, second = _get(web, url), _get(again, url)
        assert (first.status, first.headers, first.body) == (
            second.status, second.headers, second.body)
        if not url.endswith(("/big.html", "/bomb.html")):  # (streams of those: hashed below)
            assert list(first.chunks()) == list(second.chunks())
    for name in ("big", "bomb"):
        digests = []
        for each in (web, again):
            digest = hashlib.sha256()
            for chunk in _get(each, web.case_urls()[name]).chunks():
                digest.update(chunk)
            digests.append(digest.digest())
        assert digests[0] == digests[1]


# --- robots ---------------------------------------------------------------------------------------

def test_robots_cases(web: Web) -> None:
    r500, r404, r301 = (web.case_hosts()[k] for k in ("robots-500", "robots-404",
                                                     "robots-redirect"))
    assert web.respond(r500, "/robots.txt").status == 500
    assert web.respond(r404, "/robots.txt").status == 404
    moved = web.respond(r301, "/robots.txt")
    assert (moved.status, moved.header("Location")) == (301, f"http://{r301}/robots-real.txt")
    real = web.respond(r301, "/robots-real.txt")
    assert (real.status, real.body) == (200, b"User-agent: *\nDisallow: /blocked/\n")
    for netloc in (r500, r404, r301):
        assert web.respond(netloc, "/").status == 200  # served, whether allowed or not
    assert web.disallowed(f"http://{r500}/") and web.disallowed(f"http://{r500}/page-1.html")
    assert not web.disallowed(f"http://{r500}/robots.txt")
    assert not web.disallowed(f"http://{r404}/private/open.html")
    assert web.disallowed(f"http://{r301}/blocked/secret.html")
    assert not web.disallowed(f"http://{r301}/private/visible.html")
    expected = web.expected_pages(5)
    assert not any(url.startswith(f"http://{r500}/") for url in expected)
    assert {f"http://{r404}/private/open.html", f"http://{r301}/private/visible.html",
            f"http://{r301}/open.html"} <= expected
    assert f"http://{r301}/blocked/secret.html" not in expected
    assert f"http://{r500}/" in web.never_fetch() and f"http://{r301}/blocked/" in web.never_fetch()
    assert not any(p.startswith(f"http://{r404}/") for p in web.never_fetch())


# --- heavy: big page, bomb, drip -----------------------------------------------------------------

def _consume(response: Response) -> tuple[int, int]:
    """(body bytes, peak traced memory) of reading a streamed response."""
    assert response.stream is not None and response.body == b""
    stream = response.stream()
    assert inspect.isgenerator(stream)
    tracemalloc.start()
    try:
        total = sum(len(item) for item in stream if isinstance(item, bytes))
        return total, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_big_page_is_streamed(web: Web) -> None:
    response = _get(web, web.case_urls()["big"])
    assert response.status == 200 and response.header("Content-Type") == "text/html; charset=utf-8"
    assert response.header("Content-Length") == str(20 * 1024 * 1024)
    size, peak = _consume(response)
    assert size == 20 * 1024 * 1024 and peak < 1 << 20
    assert response.stream is not None
    chunks = list(cases.big_stream(5000))
    body = b"".join(c for c in chunks if isinstance(c, bytes))
    assert len(body) == 5000 and body.startswith(b"<!DOCTYPE html>")
    assert body.endswith(b"</html>\n")
    assert _get(web, web.case_urls()["big"]).stream is not None


def test_gzip_bomb_is_small_lazy_and_valid(web: Web) -> None:
    response = _get(web, web.case_urls()["bomb"])
    assert response.header("Content-Encoding") == "gzip"
    length = int(response.header("Content-Length") or 0)
    assert length < 2 * 1024 * 1024  # 1 GiB of zeros in about 1 MiB
    size, peak = _consume(response)
    assert size == length and peak < 4 << 20
    assert response.stream is not None
    compressed = b"".join(c for c in response.stream() if isinstance(c, bytes))
    assert compressed[:2] == b"\x1f\x8b"
    assert int.from_bytes(compressed[-4:], "little") == (1 << 30) % (1 << 32)
    inflater = zlib.decompressobj(31)
    head = inflater.decompress(compressed, 64 << 20)
    assert len(head) == 64 << 20 and not head.strip(b"\0")
    for n in (0, 1, 4096, (1 << 20) + 3, 5 << 20):
        assert cases.crc32_zeros(n) == zlib.crc32(bytes(n))
    for n in (1, 1000, 1 << 20, 3 * (1 << 20) + 5):  # gzip checks CRC-32 and length
        data = b"".join(c for c in cases.bomb_stream(n) if isinstance(c, bytes))
        assert len(data) == cases.bomb_length(n) and gzip.decompress(data) == bytes(n)


def test_drip_stream_pauses_between_bytes() -> None:
    web = Web(WebSpec(hosts=2, heavy_cases=True, drip_seconds=3.0))
    response = _get(web, web.case_urls()["drip"])
    assert response.stream is not None
    items = list(response.stream())
    pauses = [item for item in items if isinstance(item, float)]
    assert pauses == [0.3] * cases.DRIP_BYTES
    dripped = items[1:-1]
    assert all(isinstance(item, float) for item in dripped[0::2])
    assert dripped[1::2] == [b"."] * cases.DRIP_BYTES
    body = b"".join(response.chunks())
    assert len(body) == int(response.header("Content-Length") or 0)
    assert body.startswith(b"<!DOCTYPE html>") and body.endswith(b"</html>\n")


async def _open_send(writer: object, response: Response, head_only: bool, sent: list[int]) -> None:
    """`_send` on a connection its client keeps open."""
    await _send(asyncio.StreamReader(), writer, response, head_only, True, sent)  # type: ignore[arg-type]


def test_streamed_send_counts_bytes_and_pauses() -> None:
    class Writer:
        def __init__(self) -> None:
            self.data = bytearray()

        def write(self, data: bytes) -> None:
            self.data += data

        async def drain(self) -> None:
            pass

    web = Web(WebSpec(hosts=2, heavy_cases=True, drip_seconds=0.2))
    response = _get(web, web.case_urls()["drip"])
    writer, sent = Writer(), [0]
    started = time.monotonic()
    asyncio.run(_open_send(writer, response, False, sent))
    assert time.monotonic() - started >= 0.18
    head, _, body = bytes(writer.data).partition(b"\r\n\r\n")
    assert body == b"".join(response.chunks()) and sent[0] == len(body)
    assert b"Content-Length: %d" % len(body) in head
    writer, sent = Writer(), [0]
    asyncio.run(_open_send(writer, response, True, sent))
    assert writer.data.endswith(b"\r\n\r\n") and sent[0] == 0


def test_a_paused_response_ends_when_its_client_goes_away() -> None:
    class Writer:
        def write(self, data: bytes) -> None:
            pass

        async def drain(self) -> None:
            pass

    web = Web(WebSpec(hosts=1, render_cases=True))
    response = _get(web, web.case_urls()["slow-js"])

    async def main() -> float:
        reader = asyncio.StreamReader()
        asyncio.get_running_loop().call_later(0.1, reader.feed_eof)  # the client closes
        started = time.monotonic()
        with pytest.raises(ConnectionResetError):
            await _send(reader, Writer(), response, False, True, [0])  # type: ignore[arg-type]
        return time.monotonic() - started

    assert asyncio.run(main()) < 1.0  # not the script's 20 s


# --- redirects ------------------------------------------------------------------------------------

def _follow(web: Web, url: str, limit: int = 20) -> tuple[list[str], list[int], str | None]:
    chain: list[str] = []
    statuses: list[int] = []
    while len(chain) < limit:
        response = _get(web, url)
        if response.status not in (301, 302, 303, 307, 308):
            return chain, statuses, url if response.status == 200 else None
        chain.append(url)
        statuses.append(response.status)
        url = urljoin(url, response.header("Location") or "")
        if url in chain:
            return chain, statuses, None
    raise AssertionError("redirects without end")


def test_redirect_cases(web: Web) -> None:
    found = {case.name: case for case in web.redirect_cases()}
    assert set(found) == {"loop", "hops", "moved", "robots"}
    for case in found.values():
        assert _follow(web, case.start) == (list(case.chain), list(case.statuses), case.final)
    assert found["loop"].loop and found["loop"].chain[1].endswith("/loop/b")
    assert found["hops"].hops == 8 and found["hops"].final is not None
    assert _get(web, found["hops"].final).status == 200
    expected = web.expected_pages(5)
    assert found["hops"].final not in expected and found["moved"].final not in expected


# --- odd pages ------------------------------------------------------------------------------------

def test_many_links_page(web: Web) -> None:
    url = web.case_urls()["links-10k"]
    doc = _doc(_get(web, url))
    many = [href for href, _ in doc.anchors if href.startswith("/many/")]
    assert len(many) == 10_000 == len(set(many))
    statuses = [_get(web, urljoin(url, href)).status for href in many[95:105]]
    assert statuses == [200] * 5 + [404] * 5
    expected = web.expected_pages(5)
    assert url in expected and not any("/many/" in page for page in expected)


def test_deep_dom_bad_utf8_and_charset(web: Web) -> None:
    urls = web.case_urls()
    deep = _doc(_get(web, urls["deep-dom"]))
    assert deep.max_depth == cases.DOM_DEPTH
    bad = _get(web, urls["bad-utf8"])
    assert bad.header("Content-Type") == "text/html; charset=utf-8"
    with pytest.raises(UnicodeDecodeError):
        bad.body.decode()
    assert _doc(bad).followed(urls["bad-utf8"])[-1].endswith("/after-bad-utf8.html")
    page = _get(web, urls["charset"])
    assert page.header("Content-Type") == "text/html; charset=windows-1252"
    assert b'<meta charset="utf-8">' in page.body
    with pytest.raises(UnicodeDecodeError):
        page.body.decode("utf-8")
    assert cases.CHARSET_TEXT in page.body.decode("windows-1252")
    assert _doc(page).followed(urls["charset"])[-1] == urls["charset-link"]
    assert _get(web, urls["charset-link"]).status == 200
    expected = web.expected_pages(5)
    assert {urls["deep-dom"], urls["bad-utf8"], urls["charset"], urls["charset-link"],
            urls["bad-utf8"].replace("bad-utf8", "after-bad-utf8")} <= expected


def test_non_html_resources(web: Web) -> None:
    urls = web.case_urls()
    png, pdf = _get(web, urls["image"]), _get(web, urls["pdf"])
    assert png.header("Content-Type") == "image/png" and png.body.startswith(b"\x89PNG\r\n")
    assert pdf.header("Content-Type") == "application/pdf" and pdf.body.startswith(b"%PDF-1.4")
    assert pdf.body.rstrip().endswith(b"%%EOF")
    home = _url(web, "odd", "/")
    assert b'<img src="/img/x.png"' in _get(web, home).body
    assert {urls["image"], urls["pdf"]} <= set(web.outlinks(home) or [])
    assert web.outlinks(urls["image"]) is None
    assert not {urls["image"], urls["pdf"]} & web.expected_pages(5)


# --- links ----------------------------------------------------------------------------------------

def test_spellings_lead_to_canonical_pages(web: Web) -> None:
    url = web.case_urls()["spellings"]
    groups = web.spelling_groups()
    assert len(groups) == 4 and sum(map(len, groups.values())) == len(cases.SPELLINGS)
    doc = _doc(_get(web, url))
    hrefs = [href for href, _ in doc.anchors if "canon" in href]
    assert hrefs == [href for group in groups.values() for href in group]
    assert any(h.startswith("//") for h in hrefs) and any(h.startswith("HTTP://") for h in hrefs)
    assert any(h != h.strip() for h in hrefs) and any("utm_source" in h for h in hrefs)
    expected = web.expected_pages(5)
    for canonical, spellings in groups.items():
        assert canonical in expected
        body = _get(web, canonical).body
        for href in spellings:
            target = urldefrag(urljoin(url, href.strip())).url
            assert cases.canonical_url(target) == canonical
            assert _get(web, target).body == body  # every spelling is served, identically
    canon_pages = {u for u in expected if "/canon/" in u and "/sub/" not in u}
    assert canon_pages == set(groups)


def test_base_nofollow_hidden_and_canonical(web: Web) -> None:
    urls = web.case_urls()
    never = web.never_fetch()
    based = _doc(_get(web, urls["base"]))
    assert based.base == "/canon/sub/"
    assert web.outlinks(urls["base"]) == [_url(web, "links", p) for p in (
        "/", "/canon/sub/page.html", "/canon/a.html", "/based/real.html")]
    assert {_url(web, "links", "/based/page.html"), _url(web, "links", "/a.html")} <= set(never)

    nofollow = _doc(_get(web, urls["nofollow"]))
    assert ("/nofollow-only.html", "nofollow") in nofollow.anchors
    assert web.outlinks(urls["nofollow"]) == [
        _url(web, "links", "/"), urls["nofollow"], _url(web, "links", "/followed.html")]
    meta = _doc(_get(web, urls["meta-nofollow"]))
    assert meta.robots == "nofollow" and web.outlinks(urls["meta-nofollow"]) == []

    hidden = _get(web, urls["hidden"])
    for path in ("/script-only.html", "/script-written.html", "/comment-only.html"):
        assert path.encode() in hidden.body
        assert not any(href == path for href, _ in _doc(hidden).anchors)
        assert _url(web, "links", path) in never
    expected = web.expected_pages(5, sitemaps=True, traps=True)
    assert not web.never_fetch_violations(expected)
    for path in cases.LINKS_NEVER:
        assert _url(web, "links", path) not in expected

    canonical = web.canonical_links()
    assert len(canonical) == 3 and set(canonical.values()) == {
        _url(web, "links", "/canonical/article.html")}
    for page, target in canonical.items():
        assert urljoin(page, _doc(_get(web, page)).canonical or "") == target
        assert page in expected


# --- traps ----------------------------------------------------------------------------------------

def test_traps_go_on_forever(web: Web) -> None:
    prefixes = web.trap_prefixes()
    assert set(prefixes) == {"calendar", "session", "repeat", "deep"}
    expected = web.expected_pages(5)
    for name, prefix in prefixes.items():
        url = web.case_urls()[name]
        assert url.startswith(prefix) and url in expected
        seen = {url}
        for _ in range(40):
            assert _get(web, url).status == 200, url
            links = [link for link in web.outlinks(url) or [] if link.startswith(prefix)]
            assert links, url
            url = links[-1]
            assert url not in seen
            seen.add(url)
        assert sum(page.startswith(prefix) for page in expected) == 1
    assert _get(web, prefixes["calendar"] + "2026/12").status == 200
    assert web.outlinks(prefixes["calendar"] + "2026/12") is not None
    assert prefixes["calendar"] + "2027/1" in (web.outlinks(prefixes["calendar"] + "2026/12")
                                                or [])
    assert _get(web, prefixes["repeat"] + "a/b/a/b/a/").status == 200
    deep = web.expected_pages(6, traps=True)
    assert sum(page.startswith(prefixes["deep"]) for page in deep) == 5  # depths 2 .. 6


# --- sitemaps -------------------------------------------------------------------------------------

def _locs(xml: bytes) -> list[str]:
    return [el.text or "" for el in ET.fromstring(xml).iter()
            if el.tag.endswith("}loc")]


def test_sitemaps(web: Web) -> None:
    index_host, plain_host = (web.case_hosts()[k] for k in ("sitemap-index", "sitemap-plain"))
    robots = web.respond(index_host, "/robots.txt").body.decode()
    assert f"Sitemap: http://{index_host}/sitemap_index.xml" in robots.splitlines()
    assert "Disallow: /private/" in robots
    index = web.respond(index_host, "/sitemap_index.xml")
    assert index.header("Content-Type") == "application/xml"
    (child,) = _locs(index.body)
    assert child == f"http://{index_host}/sitemap-pages.xml.gz"
    packed = _get(web, child)
    assert packed.header("Content-Type") == "application/gzip"
    assert packed.header("Content-Encoding") is None
    listed = _locs(gzip.decompress(packed.body))
    plain_robots = web.respond(plain_host, "/robots.txt").body.decode()
    assert f"Sitemap: http://{plain_host}/sitemap.xml" in plain_robots
    listed += _locs(web.respond(plain_host, "/sitemap.xml").body)
    assert all(_get(web, url).status == 200 for url in listed)
    without = web.expected_pages(5)
    only = web.sitemap_pages()
    assert len(only) == 8 and only == set(listed) - without
    assert web.expected_pages(5, sitemaps=True) - without == only
    assert only <= web.expected_pages(2, sitemaps=True)  # hosts at depth 1, pages at 2
    assert not only & web.expected_pages(1, sitemaps=True)


# --- content duplicates ---------------------------------------------------------------------------

def _words(body: bytes) -> list[str]:
    return re.sub(r"<[^>]+>", " ", body.decode()).split()


def test_duplicate_groups(web: Web) -> None:
    groups = web.duplicate_groups()
    (mirrors,) = groups["exact"]
    syndicated, canonical = groups["near"]
    assert len(mirrors) == 3 and len({urlsplit(u).path for u in mirrors}) == 1
    assert len({urlsplit(u).netloc for u in mirrors}) == 3
    assert len({_get(web, url).body for url in mirrors}) == 1
    bodies = [_get(web, url).body for url in syndicated]
    assert len(syndicated) == 4 and len(set(bodies)) == 4
    words = [_words(body) for body in bodies]
    assert all(590 <= len(w) <= 620 for w in words)
    assert sum(a != b for a, b in zip(words[0], words[1], strict=True)) == 1  # a word changed
    assert b'class="byline"' in bodies[2] and len(words[2]) == len(words[0]) + 5
    assert 8 <= len(words[0]) - len(words[3]) <= 16  # a sentence removed
    for a, b in combinations(words, 2):
        shingles_a = {tuple(a[k:k + 3]) for k in range(len(a) - 2)}
        shingles_b = {tuple(b[k:k + 3]) for k in range(len(b) - 2)}
        assert len(shingles_a & shingles_b) / len(shingles_a | shingles_b) > 0.9
    assert set(canonical) == set(web.canonical_links())
    # no other expected page has the body (or the prose) of another
    by_body: dict[bytes, list[str]] = {}
    by_text: dict[str, list[str]] = {}
    for url in web.expected_pages(5, sitemaps=True, traps=True):
        body = _get(web, url).body
        by_body.setdefault(hashlib.sha256(body).digest(), []).append(url)
        prose = " ".join(re.findall(r"<p>([^<]*)</p>", body.decode(errors="replace")))
        if len(prose) > 1000:
            by_text.setdefault(prose, []).append(url)
    assert [sorted(g) for g in by_body.values() if len(g) > 1] == [sorted(mirrors)]
    shared = [set(g) for g in by_text.values() if len(g) > 1]
    assert set(mirrors) in shared and set(canonical) in shared
    assert all(any(g <= set(declared) for declared in [mirrors, syndicated, canonical])
               for g in shared)


# --- validators and generations -------------------------------------------------------------------

def test_validators_per_host(web: Web) -> None:
    hosts = web.case_hosts()
    sent = {kind: web.validators(hosts[kind]) for kind in
            ("fresh-both", "fresh-etag", "fresh-lm", "fresh-none", "links")}
    assert sent == {"fresh-both": ("ETag", "Last-Modified"), "fresh-etag": ("ETag",),
                    "fresh-lm": ("Last-Modified",), "fresh-none": (),
                    "links": ("ETag", "Last-Modified")}
    for kind, names in sent.items():
        full = web.respond(hosts[kind], "/")
        assert tuple(k for k, _ in full.headers if k in ("ETag", "Last-Modified")) == names
        old = "Mon, 01 Jan 2001 00:00:00 GMT"
        late = "Mon, 01 Jan 2035 00:00:00 GMT"
        by_tag = web.respond(hosts[kind], "/", {"if-none-match": full.header("ETag") or '"x"'})
        by_date = web.respond(hosts[kind], "/", {"if-modified-since": late})
        assert by_tag.status == (304 if "ETag" in names else 200)
        assert by_date.status == (304 if "Last-Modified" in names else 200)
        assert web.respond(hosts[kind], "/", {"if-modified-since": old}).status == 200
    assert all(Web(DEFAULT).validators(n) == ("ETag", "Last-Modified")
               for n in Web(DEFAULT).hosts())
    varied = Web(WebSpec(hosts=16, vary_validators=True))
    kinds = [varied.validators(n) for n in varied.hosts()]
    assert kinds.count(()) == 2 and kinds.count(("ETag",)) == 2
    assert kinds.count(("Last-Modified",)) == 2 and kinds.count(("ETag", "Last-Modified")) == 10
    assert varied.respond(varied.netloc(7), "/").header("ETag") is None


def test_generations_change_some_pages() -> None:
    base = Web(WebSpec(hosts=20, pages_per_host=10, cases=True, change_fraction=0.3))
    later = base.at_generation(1)
    assert later.expected_pages(5) == base.expected_pages(5)
    changed = later.changed_pages(0)
    pages = base.expected_pages(5)
    assert 0.15 * len(pages) < len(changed) < 0.45 * len(pages)
    assert changed == Web(later.spec).changed_pages(0)  # deterministic
    assert later.changed_pages(1) == set() and base.changed_pages(0) == set()
    for url in sorted(pages):
        old, new = _get(base, url), _get(later, url)
        assert (old.body != new.body) == (url in changed), url
        assert _doc(old).anchors == _doc(new).anchors
        if url in changed:
            if old.header("ETag"):
                assert old.header("ETag") != new.header("ETag")
                assert _get(later, url, {"if-none-match": old.header("ETag") or ""}).status == 200
            if old.header("Last-Modified"):
                assert old.header("Last-Modified") != new.header("Last-Modified")
        else:
            assert old.headers == new.headers
            if old.header("ETag"):
                assert _get(later, url, {"if-none-match": old.header("ETag") or ""}).status == 304
    mirrors = base.duplicate_groups()["exact"][0]
    assert not set(mirrors) & changed
    two = base.at_generation(2)
    assert later.changed_pages(0) <= two.changed_pages(0) | two.changed_pages(1) | changed
    assert two.changed_pages(1) == {
        url for url in pages if _get(later, url).body != _get(two, url).body}
    assert Web(WebSpec(hosts=20, generation=3, change_fraction=0.0)).changed_pages(0) == set()


def test_generation_switch_reads_the_file(tmp_path: Path) -> None:
    web = Web(WebSpec(hosts=2))
    path = tmp_path / "generation"
    switch = GenerationSwitch(web, str(path))
    assert switch.web() is web and switch.generation == 0  # no file yet
    path.write_text("2\n")
    assert switch.web().spec.generation == 2
    assert switch.web() is switch.web()
    path.write_text("garbage")
    assert switch.web().spec.generation == 2
    switch.bump()
    assert switch.web().spec.generation == 3
    path.write_text("0")
    assert switch.web() is web


# --- never_fetch, logs, command line ------------------------------------------------------------

def test_never_fetch_and_case_report(web: Web) -> None:
    never = web.never_fetch()
    assert all(f"{web.base_url(i)}/private/" in never for i in range(20))
    assert not web.never_fetch_violations(web.expected_pages(5, sitemaps=True, traps=True))
    r500 = web.case_hosts()["robots-500"]
    links = web.case_hosts()["links"]
    traps = web.case_hosts()["traps"]
    requests = [Request(r500, "/robots.txt", 0, 1, 500), Request(r500, "/", 2, 3, 200),
                Request(links, "/canon/a.html", 0, 1, 200),
                Request(links, "/canon/q.html?b=2&a=1", 2, 3, 200),
                Request(links, "/canon/q.html?a=1&b=2&utm_source=x", 4, 5, 200),
                Request(links, "/comment-only.html", 6, 7, 200),
                Request(traps, "/deep/1", 0, 1, 200), Request(traps, "/deep/2", 2, 3, 200),
                Request(traps, "/cal/2026/11", 4, 5, 200),
                Request(web.case_hosts()["heavy"], "/bomb.html", 0, 1, 200, bytes=10,
                        aborted=True)]
    assert web.never_fetch_violations(r.url for r in requests) == [
        f"http://{r500}/", f"http://{links}/comment-only.html"]
    assert [r.url for r in serverlog.never_fetch_violations(requests, web)] == [
        f"http://{r500}/", f"http://{links}/comment-only.html"]
    assert serverlog.trap_requests(requests, web) == {
        "calendar": 1, "session": 0, "repeat": 0, "deep": 2}
    fetches = serverlog.canonical_fetches(requests, web)
    assert fetches[f"http://{links}/canon/q.html?a=1&b=2"] == 2
    assert fetches[f"http://{links}/canon/a.html"] == 1
    report = serverlog.case_report(requests, web)
    assert report["never_fetch_violations"] == {"count": 2, "first": [
        f"http://{r500}/", f"http://{links}/comment-only.html"]}
    assert report["heavy"] == {"big": {"requests": 0, "bytes": 0, "aborted": 0},
                               "bomb": {"requests": 1, "bytes": 10, "aborted": 1},
                               "drip": {"requests": 0, "bytes": 0, "aborted": 0}}


def test_spec_command_line_round_trip_with_cases() -> None:
    import argparse

    parser = argparse.ArgumentParser()
    add_spec_arguments(parser)
    for spec in (WebSpec(hosts=3, port=0, cases=True, drip_seconds=1.5, generation=2),
                 WebSpec(hosts=4, trap_cases=True, link_cases=True, vary_validators=True,
                         big_page_bytes=4096, bomb_bytes=1 << 20, change_fraction=0.1),
                 WebSpec()):
        assert spec_from_args(parser.parse_args(spec_argv(spec))) == spec
    assert spec_argv(WebSpec()) == ["--hosts", "20", "--pages", "10", "--port", "8080",
                                    "--seed", "1", "--crawl-delay-every", "10", "--words", "300"]


# --- live -----------------------------------------------------------------------------------------

def test_live_streams_generations_and_log(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "requests.jsonl"
    spec = WebSpec(hosts=2, pages_per_host=3, port=0, heavy_cases=True, recrawl_cases=True,
                   drip_seconds=1.0, change_fraction=1.0)  # every page changes every generation
    with start_in_background(Web(spec), str(log)) as server:
        web = server.web
        heavy = web.case_host("heavy")
        assert heavy is not None
        with socket.create_connection((web.host_addr(heavy), server.port), timeout=10) as sock:
            sock.sendall(b"GET /big.html HTTP/1.1\r\nConnection: close\r\n\r\n")
            received = bytearray()
            while chunk := sock.recv(1 << 20):
                received += chunk
        head, _, body = bytes(received).partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200 OK") and b"Content-Length: 20971520" in head
        assert len(body) == 20 * 1024 * 1024 and body.endswith(b"</html>\n")

        connection = http.client.HTTPConnection(web.host_addr(heavy), server.port, timeout=5)
        started = time.monotonic()
        connection.request("GET", "/drip.html")
        reply = connection.getresponse()
        first = reply.read(10)
        dripped = reply.read()
        elapsed = time.monotonic() - started
        assert first + dripped == b"".join(web.respond(web.netloc(heavy), "/drip.html").chunks())
        assert 0.9 <= elapsed < 5
        connection.close()

        fresh = web.case_host("fresh-both")
        assert fresh is not None
        connection = http.client.HTTPConnection(web.host_addr(fresh), server.port, timeout=5)

        def page(j: int) -> bytes:
            connection.request("GET", f"/v/{j}.html")
            return connection.getresponse().read()

        before = [page(j) for j in range(8)]
        server.set_generation(3)
        after = [page(j) for j in range(8)]
        expect = server.web.at_generation(3)
        assert after == [expect.respond(expect.netloc(fresh), f"/v/{j}.html").body
                         for j in range(8)]
        assert before != after and server.web.spec.generation == 3
        server.process.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + 5
        while page(0) != expect.at_generation(4).respond(expect.netloc(fresh), "/v/0.html").body:
            assert time.monotonic() < deadline, "SIGUSR1 did not move the generation on"
            time.sleep(0.05)
        connection.close()

    requests = serverlog.load(str(log))
    big, drip = requests[0], requests[1]
    assert (big.path, big.bytes, big.aborted, drip.path, drip.bytes) == (
        "/big.html", 20 * 1024 * 1024, False, "/drip.html", len(first + dripped))
    assert drip.end - drip.start >= 0.9
    versions = [r.gen for r in requests if r.path.startswith("/v/")]
    assert versions[:16] == [0] * 8 + [3] * 8 and versions[-1] == 4
    assert all(r.bytes > 0 for r in requests if r.path.startswith("/v/"))
    raw = json.loads(log.read_text().splitlines()[0])
    assert raw["bytes"] == 20 * 1024 * 1024 and raw["gen"] == 0 and "aborted" not in raw

    check = ["check", "--log", str(log), "--hosts", "2", "--pages", "3", "--port", "0",
             "--case", "heavy", "--case", "recrawl"]
    assert main(check) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["cases"]["heavy"]["big"] == {"requests": 1, "bytes": 20 * 1024 * 1024,
                                               "aborted": 0}


# --- realweb: DocBook, Sphinx, a CMS ---------------------------------------------------------------

REALWEB = WebSpec(hosts=2, pages_per_host=3, port=8080, realweb_cases=True)


@pytest.fixture(scope="module")
def real() -> Web:
    return Web(REALWEB)


def _target(url: str) -> str:
    return "/" + url.partition("://")[2].partition("/")[2]


def test_realweb_group_is_opt_in() -> None:
    assert "realweb" in CASE_GROUPS and WebSpec().case_groups == ()
    assert Web(REALWEB).case_kinds == ("docbook", "sphinx", "cms")
    assert CASES.case_groups[-1] == "realweb"  # `cases` is every group
    plain = Web(WebSpec(hosts=2, pages_per_host=3, port=8080))
    assert (plain.must_fetch(), plain.must_not_fetch(), plain.page_titles(),
            plain.page_problems()) == ([], [], {}, {})
    import argparse

    parser = argparse.ArgumentParser()
    add_spec_arguments(parser)
    assert spec_from_args(parser.parse_args(spec_argv(REALWEB))) == REALWEB
    assert "--case" in spec_argv(REALWEB) and "realweb" in spec_argv(REALWEB)


def test_realweb_must_fetch_is_reachable_and_allowed(real: Web) -> None:
    must = real.must_fetch()
    assert len(must) == len(set(must)) > 40
    statuses = {url: _get(real, url).status for url in must}
    assert {url for url, status in statuses.items() if status != 200} == {
        _url(real, "cms", "/go/bad-redirect")}
    assert real.never_fetch_violations(must) == []
    assert not any(real.disallowed(url) for url in must)
    expected = real.expected_pages(5)
    redirect = _url(real, "cms", "/go/bad-redirect")
    # the pages whose links keep their wire form under urljoin are the expected pages too
    assert {u for u in must if u != redirect} <= expected | {u for u in must if "%" in u}
    assert set(real.page_titles()) <= set(must) and set(real.page_problems()) <= set(must)


def test_realweb_must_not_fetch_in_any_spelling(real: Web) -> None:
    never = real.must_not_fetch()
    assert real.never_fetch_violations(never) == never
    cms = real.case_hosts()["cms"]
    spellings = ["/?q=user/login/", "/?q=user%2Flogin%2F", "/?q=user/login/&x=1",
                 "/?x=1&q=user/login/", "/list?sort=price&color=red",
                 "/list?color=red&sort=price", "/list?sort=price", "/list?color=red&sort=",
                 "/en/../list?color=red"]
    urls = [f"http://{cms}{s}" for s in spellings]
    assert real.never_fetch_violations(urls) == urls
    # robots.txt read on the URL as written: "/*?sort=" misses "&sort=", so a crawler that
    # reorders the query before matching gets past it (forbidden() still catches that)
    assert [u for u in urls if real.disallowed(u)] == [
        f"http://{cms}{s}" for s in ("/?q=user/login/", "/?q=user/login/&x=1",
                                     "/list?sort=price&color=red", "/list?sort=price")]
    fine = [f"http://{cms}{s}" for s in ("/", "/?p=12", "/list?color=red", "/?q=news",
                                         "/p?print", "/sorted.html")]
    assert real.never_fetch_violations(fine) == []
    robots = real.respond(cms, "/robots.txt").body.decode()
    assert "Disallow: /*?sort=\n" in robots and "Disallow: /?q=user/login/\n" in robots
    for prefix in ("/wp-content/", "/http:", "/javascript:", "/?feed="):
        assert f"http://{cms}{prefix}" in real.never_fetch()


def test_cms_query_routes_answer_only_the_spelling_linked(real: Web) -> None:
    cms = real.case_hosts()["cms"]

    def status(target: str) -> int:
        return real.respond(cms, target).status

    assert [status(t) for t in ("/index.php?/blog/post-1", "/index.php?/blog/post-2",
                                "/?p=12", "/p?print", "/list?color=red",
                                "/thumb?w=200&h=100&sig=abc")] == [200] * 6
    assert [status(t) for t in ("/index.php?%2Fblog%2Fpost-1=", "/p?print=", "/p",
                                "/thumb?h=100&sig=abc&w=200", "/thumb?w=200&h=100&sig=abc&",
                                "/thumb", "/list?color=blue")] == [404, 404, 404, 403, 403, 403,
                                                                   404]
    assert b"About us" in real.respond(cms, "/?p=12").body
    assert "Widget News – Just".encode() in real.respond(cms, "/?feed=rss2").body  # the home page
    assert status("/?q=user%2Flogin%2F") == 200 and b"Log in" in real.respond(
        cms, "/?q=user%2Flogin%2F").body  # served to whoever asks: robots.txt must stop it
    home = _doc(_get(real, f"http://{cms}/"))
    hrefs = [href for href, _ in home.anchors]
    assert {"index.php?/blog/post-1", "/?p=12", "/p?print", "/list?sort=price&color=red",
            "/thumb?w=200&h=100&sig=abc", "/?q=user/login/"} <= set(hrefs)
    assert b'href="/thumb?w=200&amp;h=100&amp;sig=abc"' in real.respond(cms, "/").body
    post = real.outlinks(f"http://{cms}/index.php?/blog/post-1") or []
    assert post[-1] == f"http://{cms}/index.php?/blog/post-2"  # from href="?/blog/post-2"
    bad = real.respond(cms, "/go/bad-redirect")
    assert (bad.status, bad.header("Location")) == (302, "http://[::1")


def test_docbook_pages_as_docbook_writes_them(real: Web) -> None:
    from testweb import realweb

    docbook = real.case_hosts()["docbook"]
    names = [page[0] for page in realweb.DOCBOOK]
    for k, name in enumerate(names):
        response = real.respond(docbook, f"/docs/{name}")
        body = response.body
        assert body.startswith(b"<?xml version=\"1.0\"") and b"XHTML 1.0 Transitional" in body
        assert b'<html xmlns="http://www.w3.org/1999/xhtml">' in body
        assert b'summary="Navigation header"' in body and b'summary="Navigation footer"' in body
        if k + 1 < len(names):
            assert f'<a accesskey="n" href="{names[k + 1]}">'.encode() in body
            assert f'<link rel="next" href="{names[k + 1]}"'.encode() in body
        root = ET.fromstring(body)  # well-formed XML, as the XSL writes it
        ns = "{http://www.w3.org/1999/xhtml}"
        hrefs = [a.get("href") for a in root.iter(f"{ns}a") if a.get("href")]
        assert [urljoin(f"http://{docbook}/docs/{name}", h).partition("#")[0] for h in hrefs] \
            == real.outlinks(f"http://{docbook}/docs/{name}")
    content_types = {name: real.respond(docbook, f"/docs/{name}").header("Content-Type")
                     for name in names}
    assert content_types["release.xhtml"] == "application/xhtml+xml; charset=utf-8"
    assert content_types["tutorial-arch.html"] == "text/html; charset=utf-8"
    assert {content_types[n] for n in names if n not in ("release.xhtml", "tutorial-arch.html")} \
        == {"text/html"}
    arch = real.respond(docbook, "/docs/tutorial-arch.html").body
    assert b'encoding="ISO-8859-1"' in arch and "Überblick".encode() in arch  # UTF-8 bytes
    latin = real.respond(docbook, "/docs/release-1-0.html").body
    assert b'encoding="ISO-8859-1"' in latin and b"charset=" not in latin
    assert "Größe".encode("latin-1") in latin
    with pytest.raises(UnicodeDecodeError):
        latin.decode()
    assert real.respond(docbook, "/docs/preface.html").body.startswith(b'<?xml version="1.0"?>')
    toc = real.outlinks(f"http://{docbook}/docs/index.html") or []
    assert {f"http://{docbook}/docs/{name}" for name in names[1:]} <= set(toc)
    for prefix in ("/docs/stylesheet.css", "/docs/images/"):
        assert f"http://{docbook}{prefix}" in real.never_fetch()
        assert prefix.encode()[6:] in real.respond(docbook, "/docs/tutorial-install.html").body \
            or prefix.endswith(".css")


def test_sphinx_pages_as_sphinx_writes_them(real: Web) -> None:
    sphinx = real.case_hosts()["sphinx"]
    root = f"http://{sphinx}/en/latest/"
    usage = _get(real, root + "guide/usage.html")
    body = usage.body.decode()
    assert body.startswith("<!DOCTYPE html>") and 'data-content_root="../"' in body
    assert '<link rel="stylesheet" type="text/css" href="../_static/alabaster.css' in body
    assert '<script src="../_static/doctools.js' in body
    doc = _doc(usage)
    hrefs = [href for href, _ in doc.anchors]
    assert "#usage" in hrefs and "../intro.html#getting-started" in hrefs
    assert "../_sources/guide/usage.rst.txt" in hrefs  # rel=nofollow: not followed
    assert not any("_static" in href for href in hrefs)  # assets: only <link> and <script>
    followed = real.outlinks(root + "guide/usage.html") or []
    assert root + "guide/usage.html" in followed and root + "intro.html" in followed
    assert not any("_sources" in url or "_static" in url for url in followed)
    index = real.outlinks(root + "index.html") or []
    assert {root + "genindex.html", root + "search.html"} <= set(index)
    assert {f"{root}{p}" for p in ("intro.html", "install.html", "guide/index.html",
                                   "guide/usage.html", "guide/config.html", "api.html")} \
        <= set(index)
    assert b'action="../search.html" method="get"' in usage.body
    for prefix in ("_static/", "_sources/", "searchindex.js", "search.html?"):
        assert root + prefix in real.never_fetch()
    assert real.never_fetch_violations([root + "search.html?q=widget"]) != []
    assert real.never_fetch_violations([root + "guide/../intro.html"]) != []
    assert _get(real, root + "guide/../intro.html").status == 404


def test_cms_encodings_malformed_links_and_empty_pages(real: Web) -> None:
    from testweb import realweb

    cms = real.case_hosts()["cms"]
    base = f"http://{cms}"
    cp1252 = _get(real, base + "/enc/cp1252.html")
    assert cp1252.header("Content-Type") == "text/html; charset=windows-1252"
    assert "Café prices – “today”".encode("cp1252") in cp1252.body
    sjis = _get(real, base + "/enc/sjis.html")
    assert sjis.header("Content-Type") == "text/html" and b"charset=Shift_JIS" in sjis.body
    assert "日本語のページ①".encode("cp932") in sjis.body
    utf16 = _get(real, base + "/enc/utf16.html")
    assert utf16.body.startswith(b"\xff\xfe<\x00!\x00") and utf16.header("Content-Type") == "text/html"
    for path, page in realweb.ENCODED_PAGES.items():
        doc = _doc(_get(real, base + path))
        wire = [base + target for _, target in page[5]]
        assert doc.followed(base + path) == [cases.canonical_url(u) for u in wire], path
        assert all(_get(real, url).status == 200 for url in wire)
    malformed = _doc(_get(real, base + "/malformed.html"))
    hrefs = [href for href, _ in malformed.anchors]
    for href in realweb.MALFORMED_HREFS:
        assert href in hrefs
    assert realweb.SPACED_HREF in hrefs
    assert real.outlinks(base + "/malformed.html") == [
        base + "/", base + "/?p=12", base + realweb.LOGIN, base + realweb.SPACED_TARGET,
        base + "/after-malformed.html"]
    empty = _get(real, base + "/empty.html")
    assert (empty.status, empty.body, empty.header("Content-Length")) == (200, b"", "0")
    bare = _doc(_get(real, base + "/bare.html"))
    assert bare.anchors == [] and "".join(bare.text).strip() == ""
    assert real.page_problems() == {base + "/empty.html": "empty body",
                                    base + "/bare.html": "no text and no links"}


def test_live_realweb_targets_arrive_byte_for_byte(tmp_path: Path) -> None:
    """Through the real server: each target is answered as the web says and logged exactly
    as sent; must_fetch_misses() and never_fetch_violations() judge the log."""
    log = tmp_path / "requests.jsonl"
    spec = WebSpec(hosts=1, pages_per_host=2, port=0, realweb_cases=True)
    sent = ["/index.php?/blog/post-1", "/p?print", "/thumb?w=200&h=100&sig=abc",
            "/thumb?h=100&sig=abc&w=200", "/enc/find?q=caf%E9", "/enc/find?q=caf%C3%A9",
            "/tabbed/page%20one.html", "/?q=user%2Flogin%2F", "/list?color=red&sort=price"]
    with start_in_background(Web(spec), str(log)) as server:
        web = server.web
        cms = web.case_host("cms")
        assert cms is not None
        connection = http.client.HTTPConnection(web.host_addr(cms), server.port, timeout=5)
        statuses = []
        for target in sent:
            connection.request("GET", target)
            reply = connection.getresponse()
            reply.read()
            statuses.append(reply.status)
        connection.close()
    assert statuses == [200, 200, 200, 403, 200, 404, 200, 200, 200]
    requests = serverlog.load(str(log))
    assert [r.path for r in requests] == sent
    violations = serverlog.never_fetch_violations(requests, web)
    assert [r.path for r in violations] == ["/?q=user%2Flogin%2F", "/list?color=red&sort=price"]
    misses = serverlog.must_fetch_misses(requests, web)
    netloc = web.netloc(cms)
    assert f"http://{netloc}/thumb?w=200&h=100&sig=abc" not in misses
    assert f"http://{netloc}/index.php?/blog/post-2" in misses
    report = serverlog.case_report(requests, web)
    assert report["must_fetch_missing"]["count"] == len(misses)  # type: ignore[index]
    assert report["never_fetch_violations"]["count"] == 2  # type: ignore[index]
