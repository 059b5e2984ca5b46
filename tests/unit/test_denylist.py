"""The denylist's pattern rules."""

from __future__ import annotations

import pytest

from crawlapp.core.hostpatterns import BadPattern, candidates, denied_by, matches, normalize, sql_host_filter


@pytest.mark.parametrize(("host", "pattern", "expected"), [
    ("example.com", "example.com", True),
    ("example.com:8080", "example.com", True),          # a host pattern covers every port
    ("example.com:8080", "example.com:8080", True),
    ("example.com:8081", "example.com:8080", False),
    ("example.com", "example.com:8080", False),
    ("www.example.com", "example.com", False),          # exact means exact
    ("example.com", "*.example.com", True),             # the domain itself
    ("a.b.example.com:81", "*.example.com", True),      # and every subdomain, any port
    ("badexample.com", "*.example.com", False),         # not a suffix of another label
    ("example.com.evil.org", "*.example.com", False),
    ("example.org", "*.example.com", False),
    ("127.0.0.5:8000", "127.0.0.5", True),
])
def test_matches(host: str, pattern: str, expected: bool) -> None:
    assert matches(host, pattern) is expected


def test_denied_by_names_the_first_matching_pattern() -> None:
    assert denied_by("shop.example.com", ["other.org", "*.example.com"]) == "*.example.com"
    assert denied_by("example.net", ["other.org", "*.example.com"]) is None
    assert candidates("a.example.com:81") == ["a.example.com:81", "a.example.com",
                                              "*.a.example.com", "*.example.com", "*.com"]


@pytest.mark.parametrize(("text", "expected"), [
    ("Example.COM", "example.com"),
    ("https://example.com/some/path", "example.com"),
    ("example.com.", "example.com"),
    ("*.Example.com", "*.example.com"),
    (" example.com:8080 ", "example.com:8080"),
])
def test_normalize(text: str, expected: str) -> None:
    assert normalize(text) == expected


@pytest.mark.parametrize("text", ["", "*", "*.", "exa mple.com", "*.example.com:80", "ex*.com",
                                  "example.com:0", "example.com:99999", "-bad.com", "a..b"])
def test_normalize_refuses(text: str) -> None:
    with pytest.raises(BadPattern):
        normalize(text)


@pytest.mark.parametrize(("pattern", "hosts", "others"), [
    ("*.example.com", ["example.com", "example.com:81", "a.example.com", "a.b.example.com:9"],
     ["badexample.com", "example.org"]),
    ("example.com", ["example.com", "example.com:81"], ["a.example.com"]),
    ("example.com:81", ["example.com:81"], ["example.com", "example.com:8"]),
])
def test_sql_filter_agrees_with_matches(pattern: str, hosts: list[str], others: list[str]) -> None:
    from fnmatch import fnmatchcase

    exact, likes = sql_host_filter(pattern)

    def selected(host: str) -> bool:
        return host in exact or any(fnmatchcase(host, like.replace("%", "*")) for like in likes)

    for host in hosts + others:
        assert selected(host) is matches(host, pattern), host


def test_a_denied_host_is_refused_before_fetch_and_when_linked() -> None:
    from datetime import UTC, datetime

    from crawlapp.core.records import Lease, Link, Page, Status
    from crawlapp.core.robots import robots_answer
    from crawlapp.core.settings import load_settings
    from crawlapp.stages.fetching import plan_batch
    from crawlapp.stages.linking import plan_links

    allow = robots_answer("http://a.com/robots.txt", 404, None, b"", None, 0)
    leases = [Lease(0, "a.com", "t1", "http://a.com/x", 1), Lease(0, "b.com", "t2", "http://b.com/", 1)]
    plan = plan_batch(leases, {"http://a.com": allow}, "crawlapp", frozenset({"b.com"}))
    assert plan.pages == leases[:1] and plan.refused == [(leases[1], "denylist")] and not plan.robots

    page = Page(url="http://a.com/", url_hash="0" * 32, depth=0, status=Status.FETCHED,
                links=[Link("http://a.com/1"), Link("http://b.com/1"),
                       Link("http://b.com/2", nofollow=True)])
    rows, edges, refused = plan_links([page], 5, datetime.now(UTC), load_settings({}).traps,
                                      frozenset({"b.com"}))
    assert [r.url for r in rows.values()] == ["http://a.com/1"] and len(edges) == 3
    assert refused == {("denylist", "b.com"): 1, ("nofollow", "b.com"): 1}
