import pytest

from crawlapp.seeds import read_seeds
from crawlapp.urls import URLRejected, canonicalize, host_of, shard_of, url_hash

CANONICAL = [
    ("HTTP://Example.COM/", "http://example.com/"),
    ("http://example.com", "http://example.com/"),
    ("http://example.com:80/a", "http://example.com/a"),
    ("https://example.com:443/a", "https://example.com/a"),
    ("http://example.com:8080/a", "http://example.com:8080/a"),
    ("http://example.com/a#frag", "http://example.com/a"),
    ("http://example.com/a/./b/../c", "http://example.com/a/c"),
    ("http://example.com/?b=2&a=1", "http://example.com/?a=1&b=2"),
    ("http://example.com/?utm_source=x&a=1", "http://example.com/?a=1"),
    ("http://example.com/?fbclid=1&gclid=2&msclkid=3", "http://example.com/"),
    ("http://example.com/?PHPSESSID=abc&x=1", "http://example.com/?x=1"),
    ("  http://example.com/x  ", "http://example.com/x"),
    ("http://user:pw@example.com/x", "http://example.com/x"),
    ("http://example.com/%7euser", "http://example.com/~user"),
    ("http://bücher.de/", "http://xn--bcher-kva.de/"),
    ("http://example.com/caf\u00e9", "http://example.com/caf%C3%A9"),
]


@pytest.mark.parametrize(("raw", "expected"), CANONICAL)
def test_canonical_form(raw: str, expected: str) -> None:
    assert canonicalize(raw) == expected


@pytest.mark.parametrize("raw", CANONICAL)
def test_canonical_form_is_idempotent(raw: tuple[str, str]) -> None:
    once = canonicalize(raw[0])
    assert canonicalize(once) == once


@pytest.mark.parametrize(("raw", "reason"), [
    ("javascript:alert(1)", "scheme_javascript"),
    ("mailto:a@b.c", "scheme_mailto"),
    ("ftp://example.com/", "scheme_ftp"),
    ("data:text/html,hi", "scheme_data"),
    ("http:///path", "no_host"),
    ("http://example.com:99999/", "malformed"),
    ("", "empty"),
])
def test_rejected_urls_carry_a_reason(raw: str, reason: str) -> None:
    with pytest.raises(URLRejected) as info:
        canonicalize(raw)
    assert info.value.reason == reason


def test_relative_links_resolve_against_the_base() -> None:
    base = "http://example.com/a/b/page.html"
    assert canonicalize("../c.html", base) == "http://example.com/a/c.html"
    assert canonicalize("/root", base) == "http://example.com/root"
    assert canonicalize("//other.org/x", base) == "http://other.org/x"
    assert canonicalize("?q=1", base) == "http://example.com/a/b/page.html?q=1"


def test_too_long_urls_are_rejected() -> None:
    with pytest.raises(URLRejected) as info:
        canonicalize("http://example.com/" + "a" * 3000, max_length=2048)
    assert info.value.reason == "too_long"


def test_hash_host_and_shard_are_stable() -> None:
    url = canonicalize("http://Example.com:8080/x")
    assert host_of(url) == "example.com:8080"
    assert url_hash(url) == url_hash("http://example.com:8080/x")
    assert len(url_hash(url)) == 32
    shards = {shard_of(f"host{i}.example", 8) for i in range(200)}
    assert shards == set(range(8))


def test_seed_file_reports_bad_lines_with_numbers() -> None:
    seeds, problems = read_seeds(["# comment", "http://a.com/", "not a url", "",
                                  "mailto:x@y", "http://A.com/"])
    assert seeds == ["http://a.com/"]
    assert [(p.line, p.reason) for p in problems] == [(3, "scheme_missing"), (5, "scheme_mailto")]


@pytest.mark.parametrize(("raw", "expected"), [
    ("http://a.com/s/page.html;jsessionid=0123ABCD", "http://a.com/s/page.html"),
    ("http://a.com/x;JSESSIONID=1/y.html?b=2", "http://a.com/x/y.html?b=2"),
    ("http://a.com/x;type=a/y", "http://a.com/x;type=a/y"),
])
def test_session_ids_in_the_path_are_dropped(raw: str, expected: str) -> None:
    assert canonicalize(raw) == expected
