import gzip
import time
import tracemalloc
import zlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crawlapp.core.robots import RobotsPolicy
from crawlapp.core.sitemaps import default_sitemap, parse_sitemap

BASE = "https://example.com/sitemap.xml"
NS = b'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def urlset(*locs: str, ns: bytes = NS) -> bytes:
    entries = b"".join(b"<url><loc>%s</loc></url>" % loc.encode() for loc in locs)
    return b'<?xml version="1.0" encoding="UTF-8"?>\n<urlset %s>%s</urlset>' % (ns, entries)


def test_urlset_with_namespace_whitespace_and_cdata() -> None:
    data = (b'<?xml version="1.0"?><urlset ' + NS
            + b' xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">'
            + b"<url>\n  <loc>\n   https://example.com/a  \n</loc>"
            + b"<lastmod>2024-01-01</lastmod></url>"
            + b"<url><loc><![CDATA[ https://example.com/b?x=1&y=2 ]]></loc>"
            + b"<image:image><image:loc>https://example.com/i.png</image:loc></image:image></url>"
            + b"<url><loc>https://example.com/c?x=1&amp;y=2</loc></url></urlset>")
    result = parse_sitemap(data, BASE)
    assert result.urls == ["https://example.com/a", "https://example.com/b?x=1&y=2",
                           "https://example.com/c?x=1&y=2"]
    assert result.sitemaps == []
    assert result.errors == []


def test_urlset_without_namespace() -> None:
    result = parse_sitemap(urlset("https://example.com/a", "http://example.com/b", ns=b""), BASE)
    assert result.urls == ["https://example.com/a", "http://example.com/b"]
    assert result.errors == []


def test_sitemap_index() -> None:
    data = (b"<sitemapindex " + NS + b"><sitemap><loc>https://example.com/s1.xml.gz</loc>"
            b"<lastmod>2024-01-01</lastmod></sitemap>"
            b"<sitemap><loc> https://EXAMPLE.com/s2.xml </loc></sitemap></sitemapindex>")
    result = parse_sitemap(data, BASE)
    assert result.sitemaps == ["https://example.com/s1.xml.gz", "https://EXAMPLE.com/s2.xml"]
    assert result.urls == []
    assert result.errors == []


def test_entries_of_the_other_kind_are_ignored() -> None:
    data = (b"<urlset><sitemap><loc>https://example.com/s.xml</loc></sitemap>"
            b"<url><loc>https://example.com/a</loc></url></urlset>")
    assert parse_sitemap(data, BASE).urls == ["https://example.com/a"]
    assert parse_sitemap(data, BASE).sitemaps == []


def test_gzip_sitemap() -> None:
    data = gzip.compress(urlset("https://example.com/a", "https://example.com/b"))
    result = parse_sitemap(data, "https://example.com/sitemap.xml.gz")
    assert result.urls == ["https://example.com/a", "https://example.com/b"]
    assert result.errors == []


def test_gzip_bomb_stops_at_the_cap_in_bounded_memory() -> None:
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = b"\0" * (1 << 20)
    bomb = b"".join(packer.compress(zeros) for _ in range(200)) + packer.flush()
    assert len(bomb) < 1 << 20  # 200 MiB of zeros
    cap = 8 << 20
    tracemalloc.start()
    started = time.monotonic()
    try:
        result = parse_sitemap(bomb, BASE, max_bytes=cap)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "too_large" in result.errors
    assert result.urls == result.sitemaps == []
    assert peak < 3 * cap
    assert time.monotonic() - started < 10


def test_gzip_sitemap_over_the_cap_keeps_what_came_before() -> None:
    data = gzip.compress(urlset(*(f"https://example.com/p{i}" for i in range(5000))))
    result = parse_sitemap(data, BASE, max_bytes=10_000)
    assert result.errors == ["too_large"]
    assert 0 < len(result.urls) < 5000
    assert result.urls == [f"https://example.com/p{i}" for i in range(len(result.urls))]


def test_plain_sitemap_over_the_cap() -> None:
    data = urlset(*(f"https://example.com/p{i}" for i in range(1000)))
    result = parse_sitemap(data, BASE, max_bytes=len(data) // 2)
    assert result.errors == ["too_large"]
    assert 0 < len(result.urls) < 1000


@pytest.mark.parametrize("data", [
    b"\x1f\x8b" + b"not really gzip",
    b"\x1f\x8b",
])
def test_broken_gzip(data: bytes) -> None:
    assert parse_sitemap(data, BASE).errors == ["gzip_error"]


def test_truncated_gzip_keeps_what_came_before() -> None:
    data = gzip.compress(urlset(*(f"https://example.com/p{i}" for i in range(2000))))
    result = parse_sitemap(data[: len(data) // 2], BASE)
    assert result.errors == ["gzip_error"]
    assert 0 < len(result.urls) < 2000


@pytest.mark.parametrize(("data", "urls", "errors"), [
    (b"<urlset><url><loc>https://example.com/a</loc></url><url><loc>https://exa",
     ["https://example.com/a"], ["not_xml"]),
    (b"<urlset><url><loc>https://example.com/a</loc></url></urlset><trailing/>",
     ["https://example.com/a"], ["not_xml"]),
    (b"", [], ["not_xml"]),
    (b"User-agent: *\nDisallow:\n", [], ["not_xml"]),
    (b"<!DOCTYPE html><html><body><p>Not found</p></body></html>", [], ["not_sitemap"]),
    (b"<html><body><url><loc>https://example.com/a</loc></url></body></html>", [],
     ["not_sitemap"]),
    (b'<?xml version="1.0" encoding="bogus"?><urlset/>', [], ["not_xml"]),
])
def test_malformed_or_foreign_documents(data: bytes, urls: list[str], errors: list[str]) -> None:
    result = parse_sitemap(data, BASE)
    assert (result.urls, result.errors) == (urls, errors)


def test_utf16_and_bom() -> None:
    utf16 = ('<?xml version="1.0" encoding="UTF-16"?><urlset><url>'
             "<loc>https://example.com/caf\u00e9</loc></url></urlset>").encode("utf-16")
    assert parse_sitemap(utf16, BASE).urls == ["https://example.com/caf\u00e9"]
    assert parse_sitemap(b"\xef\xbb\xbf" + urlset("https://example.com/a"), BASE).urls == [
        "https://example.com/a"]


def test_external_entities_are_never_read(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("https://example.com/SECRET")
    uri = secret.as_uri().encode()
    documents = [
        b'<?xml version="1.0"?><!DOCTYPE urlset [<!ENTITY x SYSTEM "' + uri + b'">]>'
        b"<urlset><url><loc>&x;</loc></url><url><loc>https://example.com/&x;</loc></url></urlset>",
        b'<?xml version="1.0"?><!DOCTYPE urlset [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
        b"<urlset><url><loc>&x;</loc></url></urlset>",
        b'<?xml version="1.0"?><!DOCTYPE urlset [<!ENTITY % p SYSTEM "' + uri + b'"> %p;]>'
        b"<urlset><url><loc>https://example.com/a</loc></url></urlset>",
        b'<?xml version="1.0"?><!DOCTYPE urlset SYSTEM "' + uri + b'">'
        b"<urlset><url><loc>https://example.com/a</loc></url></urlset>",
    ]
    for data in documents:
        result = parse_sitemap(data, BASE)
        text = repr(result)
        assert "SECRET" not in text and "root:" not in text


def test_billion_laughs_is_not_expanded() -> None:
    entities = b'<!ENTITY lol0 "lol">' + b"".join(
        b'<!ENTITY lol%d "%s">' % (i, b"&lol%d;" % (i - 1) * 10) for i in range(1, 10))
    data = (b'<?xml version="1.0"?><!DOCTYPE urlset [' + entities + b"]>"
            b"<urlset><url><loc>https://example.com/&lol9;</loc></url></urlset>")
    started = time.monotonic()
    result = parse_sitemap(data, BASE)
    assert time.monotonic() - started < 2
    assert all(len(url) < 100 for url in result.urls)


def test_cross_host_and_bad_locs_are_dropped_and_counted() -> None:
    data = urlset(
        "https://example.com/keep",
        "http://example.com/other-scheme",
        "https://EXAMPLE.com./case-and-dot",
        "https://evil.com/x",
        "https://www.example.com/subdomain",
        "https://example.com.evil.com/x",
        "ftp://example.com/x",
        "/relative",
        "",
        "javascript:alert(1)",
        "https://example.com:8443/port",
    )
    result = parse_sitemap(data, BASE)
    assert result.urls == ["https://example.com/keep", "http://example.com/other-scheme",
                           "https://EXAMPLE.com./case-and-dot", "https://example.com:8443/port"]
    assert sorted(result.errors) == ["bad_loc"] * 4 + ["cross_host"] * 3


def test_idna_host_matches_its_unicode_form() -> None:
    data = urlset("https://xn--mnchen-3ya.de/a", "https://münchen.de/b")
    assert parse_sitemap(data, "https://münchen.de/sitemap.xml").urls == [
        "https://xn--mnchen-3ya.de/a", "https://münchen.de/b"]


def test_url_cap() -> None:
    data = urlset(*(f"https://example.com/p{i}" for i in range(10)))
    result = parse_sitemap(data, BASE, max_urls=3)
    assert result.urls == ["https://example.com/p0", "https://example.com/p1",
                           "https://example.com/p2"]
    assert result.errors == ["too_many_urls"]
    assert parse_sitemap(data, BASE, max_urls=10).errors == []


def test_url_cap_counts_dropped_entries_and_index_entries() -> None:
    data = urlset(*(f"https://other.com/p{i}" for i in range(10)))
    assert parse_sitemap(data, BASE, max_urls=2).errors == ["cross_host"] * 2 + ["too_many_urls"]
    index = b"<sitemapindex>" + b"".join(
        b"<sitemap><loc>https://example.com/s%d.xml</loc></sitemap>" % i for i in range(5)
    ) + b"</sitemapindex>"
    result = parse_sitemap(index, BASE, max_urls=4)
    assert len(result.sitemaps) == 4
    assert result.errors == ["too_many_urls"]


def test_a_full_size_sitemap() -> None:
    data = urlset(*(f"https://example.com/p{i}" for i in range(50_000)))
    result = parse_sitemap(data, BASE)
    assert len(result.urls) == 50_000
    assert result.errors == []


def test_the_sitemaps_robots_txt_names() -> None:
    body = ("\ufeffSitemap: https://example.com/s1.xml\n"
            "User-agent: *\nDisallow: /private\n"
            "sitemap:https://example.com/s2.xml   \r\n"
            "  SITEMAP :  https://example.com/s3.xml # the news\n"
            "Sitemap: https://example.com/s1.xml\n"
            "Sitemap:\n"
            "# Sitemap: https://example.com/commented.xml\n"
            "Sitemaps: https://example.com/not-a-key.xml\n")
    assert RobotsPolicy(200, body).sitemaps() == ["https://example.com/s1.xml",
                                                  "https://example.com/s2.xml",
                                                  "https://example.com/s3.xml"]
    assert RobotsPolicy(200, "").sitemaps() == []


def test_default_sitemap() -> None:
    assert default_sitemap("https://example.com") == "https://example.com/sitemap.xml"
    assert default_sitemap("http://example.com:8080") == "http://example.com:8080/sitemap.xml"


XMLISH = st.text(alphabet=st.sampled_from(list('<>/="?! xmlurlsetloc:&;#[]ENTITYhtps.\x00')),
                 max_size=300).map(str.encode)


@settings(max_examples=500)
@given(st.binary(max_size=2000) | XMLISH)
def test_arbitrary_bytes_never_raise(data: bytes) -> None:
    parse_sitemap(data, BASE, max_urls=50, max_bytes=1000)


@settings(max_examples=200)
@given(st.binary(max_size=500) | XMLISH, st.integers(min_value=0, max_value=600))
def test_arbitrary_gzip_never_raises(data: bytes, cut: int) -> None:
    parse_sitemap(gzip.compress(data)[:cut], BASE, max_urls=50, max_bytes=100)


def test_lastmods_are_read_in_any_order_and_any_w3c_form() -> None:
    data = (b"<urlset " + NS + b">"
            b"<url><lastmod>2024-05-01T10:20:30+02:00</lastmod><loc>https://example.com/a</loc></url>"
            b"<url><loc>https://example.com/b</loc><lastmod>2024-05-01</lastmod></url>"
            b"<url><loc>https://example.com/c</loc><lastmod>2024-05-01T08:20:30.5Z</lastmod></url>"
            b"<url><loc>https://example.com/d</loc><lastmod>2024-05</lastmod></url>"
            b"<url><loc>https://example.com/e</loc><lastmod>last tuesday</lastmod></url>"
            b"<url><loc>https://other.org/f</loc><lastmod>2024-05-01</lastmod></url>"
            b"<url><loc>https://example.com/g</loc></url></urlset>")
    result = parse_sitemap(data, BASE)
    assert result.urls == [f"https://example.com/{c}" for c in "abcdeg"]
    assert result.lastmods == {"https://example.com/a": 1714551630.0,
                               "https://example.com/b": 1714521600.0,
                               "https://example.com/c": 1714551630.5}
    assert result.errors == ["cross_host"]


def test_a_sitemap_index_gives_its_sitemaps_lastmods() -> None:
    data = (b"<sitemapindex " + NS + b"><sitemap><loc>https://example.com/s1.xml</loc>"
            b"<lastmod>2024-01-01T00:00:00Z</lastmod></sitemap></sitemapindex>")
    assert parse_sitemap(data, BASE).lastmods == {"https://example.com/s1.xml": 1704067200.0}
