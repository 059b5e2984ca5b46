import random

import pytest

from crawlapp.core.seeds import read_seeds
from crawlapp.core.urls import (
    URLRejected,
    _canonical_dedup_key,
    _plain_dedup_key,
    dedup_key,
    host_of,
    origin_of,
    request_url,
    request_urls,
    shard_of,
    url_hash,
)


def canonicalize(href: str, base: str | None = None, max_length: int = 2048) -> str:
    """The dedup key of a link `href` found on a page at `base`."""
    return dedup_key(request_url(href, base, max_length=max_length))

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
    ("http://", "malformed"),
    ("http://example.com:99999/", "malformed"),
    ("not a url", "scheme_missing"),
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


# The request URL: the link as a browser resolves it (WHATWG), fragment dropped, nothing else
# rewritten; each row is a way the canonical form used to change what was fetched.
REQUEST = [
    ("index.php?/blog/post-1", "http://h.org/d/index.php?/blog/post-1"),
    ("/p?print", "http://h.org/p?print"),
    ("img.jpg?w=200&h=100&sig=abc", "http://h.org/d/img.jpg?w=200&h=100&sig=abc"),
    ("/list?sort=price&color=red", "http://h.org/list?sort=price&color=red"),
    ("/?q=user/login/", "http://h.org/?q=user/login/"),
    ("/?utm_source=x&a=1#frag", "http://h.org/?utm_source=x&a=1"),
    ("\\x", "http://h.org/x"),
    ("http:/example.com/", "http://h.org/example.com/"),
    ("http://faß.example/", "http://xn--fa-hia.example/"),
    ("http://straße.de/", "http://xn--strae-oqa.de/"),
    ("http://2130706433/", "http://127.0.0.1/"),
    ("http://0x7f000001/", "http://127.0.0.1/"),
    ("http://127.1/", "http://127.0.0.1/"),
    ("HTTP://H.org:80/a/./b/../c?Q=1", "http://h.org/a/c?Q=1"),
    ("/a b?c d", "http://h.org/a%20b?c%20d"),
    ("?", "http://h.org/d/page?"),
]


@pytest.mark.parametrize(("href", "expected"), REQUEST)
def test_request_url_is_the_link_as_a_browser_resolves_it(href: str, expected: str) -> None:
    assert request_url(href, "http://h.org/d/page?x=1#top") == expected


def test_one_server_one_politeness_key_whatever_the_spelling() -> None:
    spellings = ["http://2130706433/a", "http://0x7f000001/b", "http://127.1/c",
                 "http://127.0.0.1/d", "http://user:pw@127.0.0.1:80/e", "http://127.0.0.1./f"]
    assert {host_of(request_url(s)) for s in spellings} == {"127.0.0.1"}
    assert origin_of(request_url("https://u@Example.com.:8443/x?y")) == "https://example.com:8443"


def test_links_with_one_key_are_one_row_under_the_first_request_url() -> None:
    urls, rejected = request_urls(["/a?b=1&a=2#x", "/a?a=2&b=1", "/a?b=1&a=2&utm_source=z",
                                   "http://[oops/"], "http://h.org/")
    assert urls == ["http://h.org/a?b=1&a=2", "http://h.org/a?a=2&b=1",
                    "http://h.org/a?b=1&a=2&utm_source=z"]
    assert len({url_hash(u) for u in urls}) == 1
    assert [r.reason for r in rejected] == ["malformed"]


@pytest.mark.parametrize(("raw", "expected"), [
    ("http://a.com/s/page.html;jsessionid=0123ABCD", "http://a.com/s/page.html"),
    ("http://a.com/x;JSESSIONID=1/y.html?b=2", "http://a.com/x/y.html?b=2"),
    ("http://a.com/x;type=a/y", "http://a.com/x;type=a/y"),
])
def test_session_ids_in_the_path_are_dropped(raw: str, expected: str) -> None:
    assert canonicalize(raw) == expected


@pytest.mark.parametrize(("href", "encoding", "expected"), [
    ("find?q=café", "cp1252", "http://h.org/d/find?q=caf%E9"),
    ("find?q=日本", "shift_jis", "http://h.org/d/find?q=%93%FA%96%7B"),
    ("find?q=€", "iso-8859-1", "http://h.org/d/find?q=%26%238364%3B"),  # not in the codec
    ("café/?q=é#é", "iso-8859-1", "http://h.org/d/caf%C3%A9/?q=%E9"),   # the path is UTF-8
    ("find?q=é", "no-such-codec", "http://h.org/d/find?q=%C3%A9"),
])
def test_link_queries_are_encoded_in_the_pages_encoding(href: str, encoding: str,
                                                         expected: str) -> None:
    assert request_url(href, "http://h.org/d/page", encoding=encoding) == expected


def _urls(rng: random.Random, path_chars: str, query_chars: str, count: int) -> list[str]:
    hosts = ["a.b", "h1.test", "EX.com", "a.b.", "a..b", "2..", "x_y.z", "1.2.3.4", "ab--c.d",
             "xn--ls8h.la", "u:p@h.c", "[::1]", "a" * 70 + ".com"]
    ports = ["", ":80", ":8080", ":65535", ":65536", ":0", ":099999", ":"]
    made = []
    for _ in range(count):
        path = "/" + "".join(rng.choices(path_chars, k=rng.randint(0, 12)))
        query = "?" + "".join(rng.choices(query_chars, k=rng.randint(0, 14)))
        if rng.random() < 0.3:
            query += "&utm_source=x&b=2&a=1&a=0&sid=3&a&A=1&_=0&~=z"
        made.append(f"{rng.choice(['http', 'https'])}://{rng.choice(hosts)}"
                    f"{rng.choice(ports)}{path if rng.random() < 0.95 else ''}"
                    f"{query if rng.random() < 0.7 else ''}")
    return made


def test_the_plain_urls_shortcut_gives_w3libs_dedup_key() -> None:
    """A URL of the plain shape (most links) gets its key without w3lib: the same key, on
    URLs drawn from plain characters and from every character w3lib would escape or fold."""
    rng = random.Random(41)
    plain = _urls(rng, "aZ09-._~:/@!$&'()*+,=", "aZ09-._~=&", 20_000)
    odd = _urls(rng, "aZ09-._~:/@!$&'()*+,=;|%2f[] éE.#\\", "aZ09-._~=&+%/?é #", 20_000)
    shortcut = [(url, key) for url in plain + odd if (key := _plain_dedup_key(url)) is not None]
    assert len(shortcut) > 4_000
    assert [key for _, key in shortcut] == [_canonical_dedup_key(url) for url, _ in shortcut]
    assert _plain_dedup_key("http://h7.test:8080/s/p.html?b=2&a=1&utm_source=x") == \
        "http://h7.test:8080/s/p.html?a=1&b=2"
    assert _plain_dedup_key("http://h.test/a?x=1=2") is None  # w3lib writes x=1%3D2
    assert _plain_dedup_key("http://h.test/a/./b") is None
