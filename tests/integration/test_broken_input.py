"""Broken pages, links and headers through the real parse -> dedup -> store -> extract_links
stages (real Redis and database): no batch fails, every page ends with a status and, where it
yields nothing, a reason; every link queued is a request URL; every refused link is counted.

The corpus: markup as the real web breaks it (unclosed and misnested tags, broken comments and
entities, bad bytes, XML declarations, every encoding declaration shape) and, as links, every
input of the web-platform-tests URL cases (`.venv/testdata/urltestdata.json`, see the Makefile)
in `<a>`, `<base>`, `<link rel=canonical>` and `Location`.
"""

from __future__ import annotations

import gzip
import hashlib
import html
import json
from collections import Counter
from pathlib import Path

import pytest
import sqlalchemy as sa

from crawlapp.adapters.context import Context
from crawlapp.adapters.db.engine import upgrade
from crawlapp.adapters.db.models import Url
from crawlapp.core.records import Link, Page, Status
from crawlapp.core.settings import load_settings
from crawlapp.core.urls import host_of, request_url, url_hash
from crawlapp.stages.dedup import dedup_pages
from crawlapp.stages.linking import extract_links
from crawlapp.stages.parsing import parse_pages
from crawlapp.stages.storing import store_pages

URLTESTDATA = Path(__file__).resolve().parents[2] / ".venv" / "testdata" / "urltestdata.json"
BASE = "http://broken.test/dir/page.html"

MARKUP: list[bytes] = [
    b"",
    b"   \n\t ",
    b"<",
    b"<html",
    b"<a href=",
    b"<a href='/unterminated>text</a>",
    b'<a href="/ok">ok</a><a href="/x" <b>bad attr</b>',
    b"<!-- never closed <a href='/in-comment'>x</a>",
    b"<!--> <a href='/after-odd-comment'>x</a>",
    b"<table><a href='/in-table'>x</a><tr><td><div></table></div>",
    b"<p><b><i>misnested</b></i></p><a href='/m'>m</a>",
    b"<a href='/a'><a href='/b'>nested anchors</a></a>",
    b"&amp &lt; &#0; &#x110000; &#xD800; &notanentity; <a href='/e?a=1&amp;b=2&c'>e</a>",
    b"\x00\x01\x02<a href='/nul\x00byte'>nul</a>",
    b"\xff\xfe\xfa broken utf-8 <a href='/bytes\xff'>b</a>",
    b"\xef\xbb\xbf<title>bom</title><a href='/bom'>bom</a>",
    b"\xef\xbb<a href='/partial-bom'>p</a>",
    b"\xff\xfe<\x00a\x00 \x00h\x00r\x00e\x00f\x00=\x00/\x00u\x00>\x00",
    b'<?xml version="1.0" encoding="UTF-8"?><html xmlns="http://www.w3.org/1999/xhtml">'
    b'<head><title>x</title></head><body><a href="ch01.html">c</a></body></html>',
    b'<?xml version="1.0" encoding="nonsense"?><a href="/x">x</a>',
    b'<?xml version="1.0" encoding="UTF-16"?><a href="/utf16-declared">x</a>',
    b"<?xml <a href='/pi'>x</a>",
    b"<![CDATA[ <a href='/cdata'>x</a> ]]>",
    b"<meta charset='no-such-charset'><a href='/cs'>x</a>",
    b"<meta http-equiv=Content-Type content='text/html; charset=\"'><a href='/q'>x</a>",
    b"<base href='http://[oops/'><a href='rel'>rel</a>",
    b"<base href='javascript:alert(1)'><a href='rel2'>rel</a>",
    b"<base href=''><base href='//other.test/'><a href='x'>x</a>",
    b"<link rel=canonical href='http://[::1'><a href='/c'>c</a>",
    b"<link rel=canonical href=''><link rel=canonical href='mailto:x@y'>",
    b"<a href='   '>blank</a><a>no href</a><a href='#'>frag</a><a href='#top'>t</a>",
    b"<a href='\t/ta\nb\r'>tabs</a><a href=' /spaced link '>s</a>",
    b"<a href='http://evil.com\xef\xbc\x8fx'>fullwidth solidus</a>",
    b"<a href='//[::1/x'>x</a><a href='http://a]b/'>x</a><a href='http://[oops/'>x</a>",
    b"<a href='http://" + b"a" * 5000 + b".com/'>long host</a>",
    b"<a href='/" + b"x" * 10000 + b"'>long path</a>",
    b"<div>" * 3000 + b"<a href='/deep'>deep</a>",
    b"<script><a href='/in-script'></script><style>a{}</style><noscript><a href='/ns'>n</a>",
    b"<svg><a xlink:href='/svg'>s</a></svg><math><a href='/math'>m</a></math>",
    b"<frameset><frame src='/f'></frameset><area href='/area'><a href=/unquoted>u</a>",
    b"<meta name=robots content='noindex, nofollow, none, ,,, :'><a href='/nf'>x</a>",
    b"<title>" + "\u00e9\u4e2d\U0001f600".encode() * 500 + b"</title>",
    bytes(range(256)) * 4,
]


def _wpt_inputs() -> list[tuple[str, str | None]]:
    if not URLTESTDATA.exists():
        pytest.fail(f"{URLTESTDATA} is missing: run `make test`")
    cases = [c for c in json.loads(URLTESTDATA.read_text(encoding="utf-8")) if isinstance(c, dict)]
    return [(c["input"], c.get("base")) for c in cases]


def _page(path: str, body: bytes, content_type: str = "text/html") -> Page:
    url = request_url(path, BASE)
    return Page(url=url, url_hash=url_hash(url), host=host_of(url), depth=0,
                status=Status.FETCHED, http_status=200, fetched_at=1.0e9,
                content_type=content_type, content_hash=hashlib.sha256(body).hexdigest(),
                content_length=len(body), body_gz=gzip.compress(body, mtime=0))


def _redirect(path: str, location: str) -> Page:
    url = request_url(path, BASE)
    return Page(url=url, url_hash=url_hash(url), host=host_of(url), depth=0,
                status=Status.REDIRECTED, http_status=301, fetched_at=1.0e9, location=location)


def _corpus() -> list[Page]:
    pages = [_page(f"/markup/{i}", body) for i, body in enumerate(MARKUP)]
    pages += [_page(f"/typed/{i}", b"<a href='/t'>t</a>", ctype) for i, ctype in enumerate([
        "text/html; charset=", "text/html; charset=\"utf-8", "application/xhtml+xml",
        "text/html;;;charset=utf-16", "TEXT/HTML; CHARSET=SHIFT_JIS", "text/html; charset=x" * 50])]
    inputs = _wpt_inputs()
    for start in range(0, len(inputs), 50):
        chunk = inputs[start:start + 50]
        anchors = "".join(f"<a href=\"{html.escape(i, quote=True)}\">l</a>" for i, _ in chunk)
        pages.append(_page(f"/wpt/{start}", anchors.encode("utf-8", "surrogatepass")))
    for n, (raw, base) in enumerate(inputs[::7]):
        body = (f"<base href=\"{html.escape(base or '', quote=True)}\">"
                f"<link rel=canonical href=\"{html.escape(raw, quote=True)}\">"
                f"<a href=\"{html.escape(raw, quote=True)}\">x</a>")
        pages.append(_page(f"/based/{n}", body.encode("utf-8", "surrogatepass")))
    pages += [_redirect(f"/redirect/{n}", raw) for n, (raw, _) in enumerate(inputs[::5])]
    pages.append(_redirect("/redirect/ipv6", "http://[::1"))
    return pages


def _ctx(tmp_path: Path, redis_url: str) -> Context:
    settings = load_settings({"CRAWL_DATA_DIR": str(tmp_path), "CRAWL_REDIS_URL": redis_url,
                              "CRAWL_SHARDS": "2", "CRAWL_MAX_DEPTH": "3"})
    upgrade(settings)
    return Context(settings)


def test_broken_pages_and_links_never_fail_a_batch(tmp_path: Path, redis_url: str) -> None:
    ctx = _ctx(tmp_path, redis_url)
    pages = _corpus()
    parsed, counts = parse_pages(pages, ctx.settings)
    assert len(parsed) == len(pages)
    assert not [k for k in counts if k.startswith("parse_error:")]  # no page raised
    assert counts["rejected:malformed"] > 100  # the WPT failure inputs, counted
    unread = {p.url.rsplit("/", 1)[1]: p.error for p in parsed
              if p.url.startswith(f"{BASE.rsplit('/', 2)[0]}/markup/")
              and (p.error or "").startswith("unread:")}
    assert (unread.get("0") or "").startswith("unread: empty")  # an empty body says so
    stored = store_pages(ctx, dedup_pages(ctx, parsed))
    extracted = extract_links(ctx, stored)
    assert extracted.added > 100
    with ctx.sessions() as session:
        rows = session.scalars(sa.select(Url).where(Url.status == "queued")).all()
    assert rows, "links of the corpus were queued"
    for row in rows:  # every queued URL is its own request URL, with its politeness key
        assert request_url(row.url) == row.url
        assert row.host == host_of(row.url)


def test_a_page_whose_parsing_raises_is_recorded_and_the_rest_go_on(tmp_path: Path,
                                                                    redis_url: str) -> None:
    ctx = _ctx(tmp_path, redis_url)
    good = _page("/good", b"<title>g</title><a href='/next'>n</a>")
    bad = _page("/bad", b"<a href='/x'>x</a>")
    bad.body_gz = b"not gzip"  # a body the stage cannot even read
    parsed, counts = parse_pages([bad, good], ctx.settings)
    assert parsed[0].status == Status.FAILED
    assert (parsed[0].error or "").startswith("parse error: BadGzipFile")
    assert counts == Counter({"parse_error:BadGzipFile": 1})
    assert parsed[1].links == [Link("http://broken.test/next", "n")]
    extracted = extract_links(ctx, store_pages(ctx, dedup_pages(ctx, parsed)))
    assert extracted.added == 1
