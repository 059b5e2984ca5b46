"""The dedup key of links, row by row (each resolved to its request URL first, as the crawler
does), plus the idempotence of the key."""

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from hypothesis.provisional import urls

from crawlapp.core.urls import URLRejected, dedup_key, request_url


def canonicalize(href: str, base: str | None = None) -> str:
    """The dedup key of a link `href` found on a page at `base`."""
    return dedup_key(request_url(href, base))


def _row(*values: str, reason: str, id: str | None = None) -> object:
    """A row that once showed a bug in crawlapp/core/urls.py; `reason` says which."""
    return pytest.param(*values, id=id)


CANONICAL = [
    # scheme and host case
    ("HTTPS://WWW.Example.Org/Path", "https://www.example.org/Path"),
    ("HtTp://example.com/", "http://example.com/"),
    ("http://EXAMPLE.com/A/B?X=Y", "http://example.com/A/B?X=Y"),
    ("HTTPS://EXAMPLE.COM:443/A/B", "https://example.com/A/B"),
    # IDNA hosts
    ("http://münchen.de/", "http://xn--mnchen-3ya.de/"),
    ("http://ÉXAMPLE.com", "http://xn--xample-9ua.com/"),
    ("http://Bücher.DE/", "http://xn--bcher-kva.de/"),
    ("http://例え.テスト/", "http://xn--r8jz45g.xn--zckzah/"),
    ("http://xn--mnchen-3ya.de/", "http://xn--mnchen-3ya.de/"),
    ("http://ＥＸＡＭＰＬＥ.com/", "http://example.com/"),
    ("http://faß.de/", "http://xn--fa-hia.de/"),  # UTS #46, as browsers: not IDNA 2003's fass
    ("http://ex%41mple.com/", "http://example.com/"),
    ("http:example.com", "http://example.com/"),
    ("http://example.com:0/", "http://example.com:0/"),
    # IP literals
    ("http://127.0.0.1:80/", "http://127.0.0.1/"),
    ("http://[::1]:8080/", "http://[::1]:8080/"),
    ("http://[::1]:80/", "http://[::1]/"),
    ("http://[2001:DB8::1]/", "http://[2001:db8::1]/"),
    # ports
    ("https://example.com:443", "https://example.com/"),
    ("HTTP://EXAMPLE.COM:80", "http://example.com/"),
    ("http://example.com:080/", "http://example.com/"),
    ("http://example.com:443/", "http://example.com:443/"),
    ("https://example.com:80/", "https://example.com:80/"),
    ("https://example.com:8443/x", "https://example.com:8443/x"),
    ("http://example.com:65535/", "http://example.com:65535/"),
    ("http://example.com:/", "http://example.com/"),
    # fragments
    ("http://example.com/a#", "http://example.com/a"),
    ("http://example.com/#top", "http://example.com/"),
    ("http://example.com/?a=1#x", "http://example.com/?a=1"),
    ("http://example.com/p#!/hashbang/route", "http://example.com/p"),
    # dot segments
    ("http://example.com/a/./b", "http://example.com/a/b"),
    ("http://example.com/a/../b", "http://example.com/b"),
    ("http://example.com/../a", "http://example.com/a"),
    ("http://example.com/a/b/..", "http://example.com/a/"),
    ("http://example.com/a/b/../", "http://example.com/a/"),
    ("http://example.com/a/.", "http://example.com/a/"),
    ("http://example.com/../../../a", "http://example.com/a"),
    ("http://example.com/a/b/c/../../d", "http://example.com/a/d"),
    ("http://example.com/a/%2e%2e/b", "http://example.com/b"),
    ("http://example.com/a/%2E/b", "http://example.com/a/b"),
    ("http://example.com/a//b", "http://example.com/a//b"),
    # percent-encoding
    ("http://example.com/%41", "http://example.com/A"),
    ("http://example.com/%7E", "http://example.com/~"),
    ("http://example.com/%7euser/%7E", "http://example.com/~user/~"),
    ("http://example.com/a%2fb", "http://example.com/a%2Fb"),
    ("http://example.com/caf%c3%a9", "http://example.com/caf%C3%A9"),
    ("http://example.com/%e2%82%ac", "http://example.com/%E2%82%AC"),
    ("http://example.com/€", "http://example.com/%E2%82%AC"),
    ("http://example.com/%e9", "http://example.com/%E9"),
    ("http://example.com/a b", "http://example.com/a%20b"),
    ("http://example.com/a%20b", "http://example.com/a%20b"),
    ("http://example.com/a+b", "http://example.com/a+b"),
    ("http://example.com/é?é=é", "http://example.com/%C3%A9?%C3%A9=%C3%A9"),
    ("http://example.com/?q=café", "http://example.com/?q=caf%C3%A9"),
    ("http://example.com/?€=1", "http://example.com/?%E2%82%AC=1"),
    ("http://example.com/?q=%41", "http://example.com/?q=A"),
    ("http://example.com/?q=%e9", "http://example.com/?q=%E9"),
    ("http://example.com/?q=a b", "http://example.com/?q=a+b"),
    ("http://example.com/?q=a%20b", "http://example.com/?q=a+b"),
    ("http://example.com/?q=a+b", "http://example.com/?q=a+b"),
    ("http://example.com/?a=%2B", "http://example.com/?a=%2B"),
    ("http://example.com/?a=%26", "http://example.com/?a=%26"),
    ("http://example.com/?a=%zz", "http://example.com/?a=%25zz"),
    # query order and shape
    ("http://example.com/?z=1&a=2&m=3", "http://example.com/?a=2&m=3&z=1"),
    ("http://example.com/?a=2&a=1", "http://example.com/?a=1&a=2"),
    ("http://example.com/?Q=1&q=2", "http://example.com/?Q=1&q=2"),
    ("http://example.com/?b&a", "http://example.com/?a=&b="),
    ("http://example.com/?", "http://example.com/"),
    ("http://example.com/?&", "http://example.com/"),
    ("http://example.com/?a=1&&b=2", "http://example.com/?a=1&b=2"),
    # tracking and session-id parameters
    ("http://example.com/?utm_medium=x", "http://example.com/"),
    ("http://example.com/?UTM_CAMPAIGN=x&b=1", "http://example.com/?b=1"),
    ("http://example.com/?utm_source=a&utm_medium=b&utm_campaign=c", "http://example.com/"),
    ("http://example.com/?a=1&UTM_Source=2", "http://example.com/?a=1"),
    ("http://example.com/?xutm_source=1", "http://example.com/?xutm_source=1"),
    ("http://example.com/?a=1&fbclid=2", "http://example.com/?a=1"),
    ("http://example.com/?gclid=x&q=y", "http://example.com/?q=y"),
    ("http://example.com/?msclkid=1&z=0", "http://example.com/?z=0"),
    ("http://example.com/?sid=1", "http://example.com/"),
    ("http://example.com/?SID=1&page=2", "http://example.com/?page=2"),
    ("http://example.com/?sessionid=1&z=2", "http://example.com/?z=2"),
    ("http://example.com/?jsessionid=1", "http://example.com/"),
    ("http://example.com/?phpsessid=a&b=2&a=1", "http://example.com/?a=1&b=2"),
    ("http://example.com/?utm_source=1&q=a%2Fb", "http://example.com/?q=a%2Fb"),
    _row("http://example.com/?q=caf%E9&utm_source=x", "http://example.com/?q=caf%E9",
         reason="dropping a tracking parameter re-encodes the rest as UTF-8, losing raw bytes"),
    # whitespace
    ("\t http://example.com/\n", "http://example.com/"),
    ("http://example.com/ ", "http://example.com/"),
    # empty path, user info, trailing dot
    ("http://Example.com#x", "http://example.com/"),
    ("https://example.com?a=1", "https://example.com/?a=1"),
    ("http://user@example.com/", "http://example.com/"),
    ("http://user:pw@example.com:8080/", "http://example.com:8080/"),
    ("https://:pw@Example.com/x", "https://example.com/x"),
    ("http://example.com./", "http://example.com/"),
    ("http://example.com.:80/", "http://example.com/"),
    ("http://EXAMPLE.com./x", "http://example.com/x"),
]

BASE = "http://example.com/a/b/page.html?x=1#f"

RELATIVE = [
    ("c", BASE, "http://example.com/a/b/c"),
    ("../c", BASE, "http://example.com/a/c"),
    ("../../../../c", BASE, "http://example.com/c"),
    ("..", BASE, "http://example.com/a/"),
    ("./", BASE, "http://example.com/a/b/"),
    ("/r", BASE, "http://example.com/r"),
    ("/./a/../b", BASE, "http://example.com/b"),
    ("//Other.ORG:80/x", BASE, "http://other.org/x"),
    ("//o.com/", "https://example.com/dir/", "https://o.com/"),
    ("?b=1&a=2#f", BASE, "http://example.com/a/b/page.html?a=2&b=1"),
    ("#frag", BASE, "http://example.com/a/b/page.html?x=1"),
    ("c?utm_source=1", BASE, "http://example.com/a/b/c"),
    ("g;x", BASE, "http://example.com/a/b/g;x"),
    ("c d", BASE, "http://example.com/a/b/c%20d"),
    ("ü", BASE, "http://example.com/a/b/%C3%BC"),
    ("HTTP://X.COM", BASE, "http://x.com/"),
    ("x", "http://example.com:8080/a/b", "http://example.com:8080/a/x"),
    ("?q", "https://example.com", "https://example.com/?q="),
    _row("?", BASE, "http://example.com/a/b/page.html",
         reason="urljoin keeps the base query for an empty query (RFC 3986 5.2.2 drops it)"),
    ("", BASE, "http://example.com/a/b/page.html?x=1"),  # WHATWG: the base itself
]

REJECTED = [
    ("javascript:void(0)", "scheme_javascript"),
    ("JavaScript:alert(1)", "scheme_javascript"),
    ("mailto:x@y.z", "scheme_mailto"),
    ("data:text/plain,hi", "scheme_data"),
    ("tel:+123", "scheme_tel"),
    ("ftp://x.com/", "scheme_ftp"),
    ("file:///etc/passwd", "scheme_file"),
    ("file://host/x", "scheme_file"),
    ("about:blank", "scheme_about"),
    ("example.com", "scheme_missing"),
    ("//example.com/", "scheme_missing"),
    ("/path", "scheme_missing"),
    ("http://", "malformed"),
    ("https://:80/", "malformed"),
    ("http://example.com:65536/", "malformed"),
    ("http://example.com:abc/", "malformed"),
    ("http://example.com:-1/", "malformed"),
    ("http://example.com:8080:90/", "malformed"),
    ("http://exa mple.com/", "malformed"),
    ("http://a.com/" + "x" * 2100, "too_long"),
    ("   ", "empty"),
    _row("http://exa\x00mple.com/", "malformed",
         reason="control characters passed the host check"),
    _row("http://e\x01x.com/", "malformed",
         reason="control characters passed the host check"),
]

RELATIVE_REJECTED = [
    ("javascript:void(0)", "scheme_javascript"),
    ("mailto:a@b", "scheme_mailto"),
    ("tel:1", "scheme_tel"),
    ("http://[oops/", "malformed"),
    ("//[::1/x", "malformed"),
    ("http://a]b/", "malformed"),
    ("http://evil.com\uff0fx", "malformed"),  # a fullwidth solidus maps to "/" in a host
]


@pytest.mark.parametrize(("raw", "expected"), CANONICAL)
def test_canonical_form(raw: str, expected: str) -> None:
    assert canonicalize(raw) == expected


@pytest.mark.parametrize(("raw", "base", "expected"), RELATIVE)
def test_relative_link(raw: str, base: str, expected: str) -> None:
    assert canonicalize(raw, base) == expected


@pytest.mark.parametrize(("raw", "reason"), REJECTED)
def test_rejected(raw: str, reason: str) -> None:
    with pytest.raises(URLRejected) as info:
        canonicalize(raw)
    assert info.value.reason == reason


@pytest.mark.parametrize(("raw", "reason"), RELATIVE_REJECTED)
def test_rejected_relative(raw: str, reason: str) -> None:
    with pytest.raises(URLRejected) as info:
        canonicalize(raw, BASE)
    assert info.value.reason == reason


def _assert_idempotent(url: str) -> None:
    try:
        once = canonicalize(url)
    except URLRejected:
        return
    assert canonicalize(once) == once


@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow])
@given(urls())
def test_canonical_form_of_generated_urls_is_idempotent(url: str) -> None:
    _assert_idempotent(url)


@settings(max_examples=500)
@given(st.text())
def test_canonical_form_of_any_text_is_idempotent(text: str) -> None:
    _assert_idempotent(text)


URL_PIECES = st.text(alphabet=st.sampled_from(list("ab%2F3E5e9.:/?#&=;@[]+ ~éü€-_A")),
                     max_size=30)


@settings(max_examples=500)
@given(st.sampled_from(["http://", "http://x.com/", "https://x.com/?utm_source=1&", "HTTP://"]),
       URL_PIECES)
@example("http://", "2..")  # a domain whose trailing dots, cut, left an IPv4 address
def test_canonical_form_of_url_like_text_is_idempotent(prefix: str, rest: str) -> None:
    _assert_idempotent(prefix + rest)
