"""crawlapp.core.html on pages as real sites serve them: XML declarations, XHTML, byte order marks,
legacy encodings named in the header, a <meta> or nowhere, bytes that break the encoding;
and `problem`, which says why a page gave nothing."""

from __future__ import annotations

import codecs
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crawlapp.core.html import (
    ParsedPage,
    choose_encoding,
    codec_for,
    declared_encoding,
    decode_body,
    parse_html,
)
from testweb.site import Web, WebSpec

XHTML_HEAD = ('<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Transitional//EN" '
              '"http://www.w3.org/TR/xhtml1/DTD/xhtml1-transitional.dtd">\n'
              '<html xmlns="http://www.w3.org/1999/xhtml"><head>')
DOCBOOK = (XHTML_HEAD + '<meta http-equiv="Content-Type" content="text/html; charset={meta}" />'
           '<title>1.2. Größe — Überblick</title><link rel="next" href="ch03.html" /></head>'
           '<body><div class="navheader"><table summary="Navigation header"><tr><td>'
           '<a accesskey="p" href="ch01.html">Prev</a></td><td><a accesskey="n" '
           'href="ch03.html">Next</a></td></tr></table></div><p>Café, naïve “quotes”.</p>'
           '<a id="x"/><p>After an empty anchor.</p></body></html>')


def _page(body: bytes, content_type: str | None) -> tuple[str, list[str], str]:
    page = parse_html(body, content_type)
    assert page.problem is None, page.problem
    return page.title, [link.url for link in page.links], page.text


# --- XML declarations and XHTML ------------------------------------------------------------------

@pytest.mark.parametrize(("declaration", "content_type"), [
    ('<?xml version="1.0" encoding="UTF-8" standalone="no"?>', "text/html"),
    ('<?xml version="1.0" encoding="UTF-8"?>', "text/html; charset=utf-8"),
    ('<?xml version="1.0"?>', "text/html"),
    ("<?xml version='1.0' encoding='utf-8'?>", None),
    ('<?xml version="1.0" encoding="UTF-8"?>', "application/xhtml+xml"),
    ('<?xml version="1.0" encoding="UTF-8"?>', "application/xhtml+xml; charset=utf-8"),
])
def test_xml_declaration_no_longer_empties_the_page(declaration: str,
                                                    content_type: str | None) -> None:
    body = (declaration + "\n" + DOCBOOK.format(meta="UTF-8")).encode()
    title, links, text = _page(body, content_type)
    assert title == "1.2. Größe — Überblick"
    assert links == ["ch01.html", "ch03.html"]
    assert "café, naïve “quotes”." in text and "after an empty anchor." in text
    assert "xml version" not in text


def test_declaration_in_another_encoding_than_the_header_loses_to_the_header() -> None:
    body = ('<?xml version="1.0" encoding="ISO-8859-1"?>\n'
            + DOCBOOK.format(meta="ISO-8859-1")).encode("utf-8")
    assert _page(body, "text/html; charset=utf-8")[0] == "1.2. Größe — Überblick"
    latin = ('<?xml version="1.0" encoding="ISO-8859-1"?>\n'
             + DOCBOOK.format(meta="ISO-8859-1").replace("—", "-").replace("“", '"')
             .replace("”", '"')).encode("latin-1")
    assert _page(latin, "text/html")[0] == "1.2. Größe - Überblick"  # the declaration alone
    assert _page(latin, "text/html; charset=iso-8859-1")[0] == "1.2. Größe - Überblick"


def test_namespaced_xhtml_links_are_found() -> None:
    plain = (b'<?xml version="1.0" encoding="UTF-8"?>\n<html xmlns="http://www.w3.org/1999/xhtml">'
             b'<head><title>T</title></head><body><p><a href="a.html">A</a></p>'
             b'<svg xmlns="http://www.w3.org/2000/svg"><a href="b.html">B</a></svg>'
             b'<map name="m"><area href="c.html" /></map></body></html>')
    assert _page(plain, "application/xhtml+xml")[1] == ["a.html", "b.html", "c.html"]
    prefixed = (b'<?xml version="1.0"?>\n<h:html xmlns:h="http://www.w3.org/1999/xhtml">'
                b"<h:head><h:title>Prefixed</h:title><h:base href='/d/' /></h:head>"
                b"<h:body><h:nav><h:a href='x.html'>X</h:a></h:nav><h:p>Text "
                b"<h:a href='y.html' rel='nofollow'>Y</h:a></h:p></h:body></h:html>")
    page = parse_html(prefixed, "application/xhtml+xml")
    assert page.title == "Prefixed" and page.base == "/d/"
    assert [(link.url, link.nofollow, link.boilerplate) for link in page.links] == [
        ("x.html", False, True), ("y.html", True, False)]


# --- byte order marks and encodings --------------------------------------------------------------

@pytest.mark.parametrize(("codec", "bom"), [
    ("utf-8", codecs.BOM_UTF8), ("utf-16-le", codecs.BOM_UTF16_LE),
    ("utf-16-be", codecs.BOM_UTF16_BE), ("utf-16-le", b""), ("utf-16-be", b""),
])
@pytest.mark.parametrize("content_type", [None, "text/html", "text/html; charset=utf-8"])
def test_byte_order_marks_win(codec: str, bom: bytes, content_type: str | None) -> None:
    document = ('<?xml version="1.0" encoding="UTF-16"?>\n' if "16" in codec else "") + (
        '<html><head><meta charset="utf-16"><title>Grüße</title></head>'
        '<body><a href="/ü">ü</a></body></html>')
    body = bom + document.encode(codec)
    assert _page(body, content_type)[:2] == ("Grüße", ["/ü"])
    assert decode_body(body, content_type).startswith("<")  # the BOM is not text


@pytest.mark.parametrize(("codec", "declared_in", "label"), [
    ("cp1252", "header", "windows-1252"), ("cp1252", "meta", "windows-1252"),
    ("cp1252", "header", "ISO-8859-1"), ("cp1252", "http-equiv", "iso-8859-1"),
    ("shift_jis", "header", "Shift_JIS"), ("cp932", "http-equiv", "Shift_JIS"),
    ("cp932", "meta", "x-sjis"), ("euc_jp", "header", "EUC-JP"), ("euc_jp", "meta", "euc-jp"),
    ("euc_jp", "xml", "EUC-JP"), ("gbk", "meta", "gb2312"), ("cp1251", "header", "windows-1251"),
])
def test_legacy_encodings_declared_in_header_or_document(codec: str, declared_in: str,
                                                         label: str) -> None:
    text = "Café “€” déjà" if codec == "cp1252" else {
        "cp1251": "Привет, мир", "gbk": "中文网页"}.get(codec, "日本語のテキスト")
    if codec == "cp932":
        text += "①"  # NEC row 13: Windows' Shift_JIS, which is what the web calls Shift_JIS
    head = {"meta": f'<meta charset="{label}">',
            "http-equiv": f'<meta http-equiv="Content-Type" content="text/html; charset={label}">',
            "xml": "", "header": ""}[declared_in]
    prefix = f'<?xml version="1.0" encoding="{label}"?>\n' if declared_in == "xml" else ""
    body = (f"{prefix}<html><head>{head}<title>{text}</title></head><body><p>{text}</p>"
            f'<a href="/{text}">{text}</a></body></html>').encode(codec)
    content_type = f"text/html; charset={label}" if declared_in == "header" else "text/html"
    title, links, page_text = _page(body, content_type)
    assert (title, links) == (text, [f"/{text}"])
    assert text.lower() in page_text


def test_header_wins_over_meta_and_meta_wins_when_the_header_does_not_fit() -> None:
    body = '<meta charset="utf-8"><title>Café – 5 €</title>'.encode("cp1252")
    assert _page(body, "text/html; charset=windows-1252")[0] == "Café – 5 €"
    assert choose_encoding(body, "text/html; charset=windows-1252")[0] == "cp1252"
    wrong = '<meta charset="windows-1252"><title>Café – 5 €</title>'.encode("cp1252")
    assert _page(wrong, "text/html; charset=utf-8")[0] == "Café – 5 €"  # utf-8 cannot be right


@pytest.mark.parametrize("label", ["foobar-9", "utf-7", "base64", "rot13", "x-unknown", "",
                                   "utf-32", "'", "charset"])
def test_header_charset_that_is_no_web_encoding_is_ignored(label: str) -> None:
    body = '<meta charset="windows-1252"><title>Crème</title><a href="/x">x</a>'.encode("cp1252")
    assert codec_for(label) is None
    assert _page(body, f"text/html; charset={label}")[:2] == ("Crème", ["/x"])
    utf8 = "<title>Crème</title>".encode()
    assert _page(utf8, f"text/html; charset={label}")[0] == "Crème"


def test_web_labels_map_to_the_decoders_browsers_use() -> None:
    assert [codec_for(label) for label in (
        "UTF8", "latin1", "US-ASCII", "iso-8859-9", "Shift_JIS", "windows-31j", "euc-kr",
        "gb2312", "big5", "x-user-defined", "unicode", "utf-16", "UTF-16BE")] == [
        "utf-8", "cp1252", "cp1252", "cp1254", "cp932", "cp932", "cp949", "gbk", "big5hkscs",
        "cp1252", "utf-16-le", "utf-16-le", "utf-16-be"]
    assert declared_encoding(b'<meta charset="utf-16"><p>ascii</p>') == "utf-8"
    assert ParsedPage(encoding="utf-16-be").url_encoding == "utf-8"
    assert ParsedPage(encoding="cp932").url_encoding == "cp932"


def test_bytes_invalid_in_the_declared_encoding_become_replacement_characters() -> None:
    body = (b'<meta charset="utf-8"><title>Caf\xc3\xa9 \xff broken</title><p>d\xc3\xa9j\xc3\xa0 '
            b'\xed\xa0\x80 vu \xe2\x82</p><a href="/caf\xc3\xa9">after</a>')
    title, links, text = _page(body, "text/html; charset=utf-8")
    assert title == "Café \ufffd broken" and links == ["/café"]  # the rest stays UTF-8
    assert "déjà" in text
    assert choose_encoding(body, "text/html; charset=utf-8") == ("utf-8", 0, False)
    sjis = "<title>日本</title><p>テキスト</p>".encode("cp932") + b"\x81\xff<a href='/x'>x</a>"
    title, links, _ = _page(sjis, "text/html; charset=Shift_JIS")
    assert title == "日本" and links == ["/x"]
    nul = b"<title>a\x00b</title><p>t\x00ext</p><a href='/n'>n</a>"
    assert _page(nul, "text/html")[:2] == ("a\ufffdb", ["/n"])


def test_undeclared_pages_are_utf8_or_detected() -> None:
    """Detection (charset_normalizer, as before) is sound on Cyrillic and CJK; on short
    Latin-1 text it may guess another code page, so such pages had better declare theirs."""
    assert _page("<title>naïve</title>".encode(), None)[0] == "naïve"
    for text, codec in (("Это простой текст на русском языке. ", "cp1251"),
                        ("東京の天気は晴れです。明日は雨が降るでしょう。", "shift_jis")):
        body = f"<title>{text.strip()}</title><p>{text * 10}</p>".encode(codec)
        assert _page(body, "text/html")[0] == text.strip()


def test_hrefs_lose_only_what_the_url_parser_strips() -> None:
    body = ('<a href=" \t/a b\t.html\n ">1</a><a href="/nbsp\u00a0">2</a><a href="\u3000/w">3</a>'
            '<a href=" ">4</a><a href="">5</a><a>6</a><a href="http://[oops/">7</a>'
            '<a href="javascript:void(0)">8</a>').encode()
    assert _page(body, "text/html")[1] == [
        "/a b\t.html", "/nbsp\u00a0", "\u3000/w", "http://[oops/", "javascript:void(0)"]


# --- problem ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("body", "problem"), [
    (b"", "empty body"), (b" \r\n\t ", "empty body"),
    (b"<html><head></head><body><div><img src='x.png'></div></body></html>",
     "no text and no links"),
    (b"<!-- nothing but a comment -->", "no text and no links"),
    (b'<?xml version="1.0" encoding="UTF-8"?>', "no text and no links"),
    (b"<script>document.write('<a href=x>x</a>')</script><style>p{}</style>",
     "no text and no links"),
    (b"\x00" * 64, "no text and no links"),
    (codecs.BOM_UTF16_LE, "no text and no links"),
    (b"<title>Only a title</title>", None), (b"<a href='/x'></a>", None),
    (b"<link rel=canonical href='/c'>", None), (b"plain words", None),
])
def test_problem_says_why_a_page_gave_nothing(body: bytes, problem: str | None) -> None:
    assert parse_html(body, "text/html").problem == problem


def test_a_parser_failure_is_a_problem_not_an_exception(monkeypatch: pytest.MonkeyPatch) -> None:
    from crawlapp.core import html

    def broken(data: bytes, parser: object) -> None:
        raise MemoryError("libxml2 gave up")

    monkeypatch.setattr(html.etree, "fromstring", broken)
    page = parse_html(b"<title>x</title>", "text/html")
    assert page.problem == "unparsable: MemoryError" and page.links == []


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2048), st.sampled_from([
    None, "text/html", "text/html; charset=utf-16", "text/html; charset=shift_jis",
    "application/xhtml+xml; charset=iso-8859-1", "text/html; charset=bogus"]),
    st.sampled_from([b"", b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff",
                     b'<?xml version="1.0" encoding="UTF-16"?>', b"<meta charset=euc-jp>"]))
def test_any_bytes_give_a_page_or_a_problem(body: bytes, content_type: str | None,
                                            prefix: bytes) -> None:
    page = parse_html(prefix + body, content_type)
    assert isinstance(page.problem, str | None)
    assert page.problem is not None or page.text or page.links or page.canonical
    assert isinstance(decode_body(prefix + body, content_type), str)


# --- the generated real-web pages, and the cost -------------------------------------------------

def test_realweb_pages_read_as_their_sites_wrote_them() -> None:
    web = Web(WebSpec(hosts=1, realweb_cases=True))
    titles, problems = web.page_titles(), web.page_problems()
    assert len(titles) >= 25 and len(problems) == 2
    for url in web.must_fetch():
        netloc, _, target = url.partition("://")[2].partition("/")
        response = web.respond(netloc, "/" + target)
        if response.status != 200:
            continue
        page = parse_html(response.body, response.header("Content-Type"))
        assert page.problem == problems.get(url), url
        if url in titles:
            assert page.title == titles[url], url
        wanted = web.outlinks(url) or []
        assert bool(page.links) == bool(wanted), url


def test_parse_cost_stays_low() -> None:
    """The pipeline's parse stage: a few hundred microseconds of CPU a page at most."""
    web = Web(WebSpec(hosts=2, pages_per_host=20, realweb_cases=True))
    bodies = []
    for url in sorted(web.expected_pages(5)):
        netloc, _, target = url.partition("://")[2].partition("/")
        response = web.respond(netloc, "/" + target)
        bodies.append((response.body, response.header("Content-Type")))
    start = time.process_time()
    for _ in range(5):
        for body, content_type in bodies:
            parse_html(body, content_type)
    per_page = (time.process_time() - start) / (5 * len(bodies))
    assert per_page < 0.002, f"{per_page * 1000:.2f} CPU-ms a page"


def test_link_rels_that_name_pages_are_followed_and_assets_are_not() -> None:
    # Sphinx links its search page only from <head>; feeds, stylesheets and icons are no pages
    body = (b'<html><head><title>t</title><link rel="search" title="Search" href="search.html"/>'
            b'<link rel="stylesheet" href="_static/basic.css"/><link rel="icon" href="f.ico"/>'
            b'<link rel="alternate" type="application/rss+xml" href="feed.xml"/>'
            b'<link rel="next" href="b.html"/><link rel="prev nofollow" href="a.html"/>'
            b'</head><body><a href="b.html">Next</a></body></html>')
    page = parse_html(body, "text/html")
    assert [(link.url, link.nofollow) for link in page.links] == [
        ("b.html", False), ("search.html", False), ("a.html", True)]
