"""Crawl scope (crawlapp.core.scope): registrable domains, SURT, seed rules, include and
exclude patterns, off-scope hops; and how the link planner refuses and counts."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from crawlapp.adapters.redis.scope import fields_of
from crawlapp.core.records import Link, Page, Status
from crawlapp.core.scope import (
    EXCLUDED,
    OUT_OF_SCOPE,
    Patterns,
    Scope,
    ScopeRules,
    registrable_domain,
    seed_rule,
    surt,
)
from crawlapp.core.settings import SettingsError, load_settings
from crawlapp.core.urls import host_of, request_url
from crawlapp.stages.linking import plan_links

NOW = datetime(2026, 11, 22, tzinfo=UTC)


@pytest.mark.parametrize(("host", "domain"), [
    ("www.example.com", "example.com"),
    ("WWW.Example.COM", "example.com"),
    ("www.example.com.", "example.com"),           # trailing dot
    ("www.example.com:8080", "example.com"),       # a politeness key, port and all
    ("news.bbc.co.uk", "bbc.co.uk"),
    ("bbc.co.uk", "bbc.co.uk"),
    ("co.uk", "co.uk"),                            # a public suffix is its own domain
    ("a.b.github.io", "b.github.io"),              # private section of the list
    ("xn--bcher-kva.example.de", "example.de"),    # IDN, as request URLs carry it
    ("www.xn--80aswg.xn--p1ai", "xn--80aswg.xn--p1ai"),  # сайт.рф
    ("127.0.0.1:8080", "127.0.0.1"),
    ("10.1.2.3", "10.1.2.3"),
    ("[::1]:8080", "::1"),
    ("localhost", "localhost"),
    ("localhost:5000", "localhost"),
    ("docs.site1.test", "site1.test"),
])
def test_registrable_domain(host: str, domain: str) -> None:
    assert registrable_domain(host) == domain


@pytest.mark.parametrize(("url", "expected"), [
    ("http://www.example.com/docs/a.html", "http://(com,example,www,)/docs/a.html"),
    ("HTTPS://Docs.Example.COM.:8443/a?b=1#frag", "https://(com,example,docs,:8443)/a?b=1"),
    ("http://example.com", "http://(com,example,)/"),
    ("http://127.0.0.1:8080/x", "http://(127.0.0.1,:8080)/x"),
    ("http://[::1]:8080/x", "http://(::1,:8080)/x"),
    ("http://xn--bcher-kva.example.de/", "http://(de,example,xn--bcher-kva,)/"),
])
def test_surt(url: str, expected: str) -> None:
    assert surt(url) == expected


def test_seed_rules_of_each_scope() -> None:
    seed = request_url("https://Docs.Python.org:8443/3/library/index.html?x=1")
    assert seed_rule(seed, "any") is None
    assert seed_rule(seed, "host") == ("host", "docs.python.org")
    assert seed_rule(seed, "domain") == ("domain", "python.org")
    assert seed_rule(seed, "prefix") == ("prefix", "https://docs.python.org:8443/3/library/")
    assert seed_rule("http://www.bbc.co.uk", "domain") == ("domain", "bbc.co.uk")
    assert seed_rule("http://127.0.0.1:8080/a/b", "prefix") == ("prefix",
                                                                 "http://127.0.0.1:8080/a/")
    with pytest.raises(ValueError, match="expected one of any, host, domain, prefix"):
        seed_rule(seed, "site")


def rules_of(*rules: tuple[str, str]) -> ScopeRules:
    """The ScopeRules adapters/redis/scope.py would read for these seed rules."""
    fields = fields_of(rules)
    if fields.get("*", "1") == "1":
        return ScopeRules()
    return ScopeRules(
        any=False,
        hosts=frozenset(k[2:] for k in fields if k.startswith("h:")),
        domains=frozenset(k[2:] for k in fields if k.startswith("d:")),
        prefixes={k[2:]: tuple(v.split("\n")) for k, v in fields.items() if k.startswith("p:")})


def covered(rules: ScopeRules, url: str) -> bool:
    url = request_url(url)
    return rules.covers(url, host_of(url))


def test_host_scope_is_the_host_name_on_any_scheme_or_port() -> None:
    rules = rules_of(seed_rule("https://www.example.com/", "host") or ("any", ""))
    assert covered(rules, "http://WWW.EXAMPLE.COM:8080/x")
    assert covered(rules, "https://www.example.com./x")
    assert not covered(rules, "https://example.com/")
    assert not covered(rules, "https://docs.example.com/")


def test_domain_scope_takes_subdomains_but_not_siblings_under_a_public_suffix() -> None:
    rules = rules_of(("domain", registrable_domain("www.bbc.co.uk")),
                     ("domain", registrable_domain("a.b.github.io")))
    assert covered(rules, "http://news.bbc.co.uk/")
    assert covered(rules, "http://bbc.co.uk/")
    assert not covered(rules, "http://itv.co.uk/")
    assert covered(rules, "http://x.b.github.io/")
    assert not covered(rules, "http://c.github.io/")  # github.io is a public suffix


def test_prefix_scope_is_wget_no_parent() -> None:
    rules = rules_of(("prefix", "https://docs.python.org/3/library/"),
                     ("prefix", "https://docs.python.org/3/tutorial/"))
    assert covered(rules, "https://docs.python.org/3/library/os.html")
    assert covered(rules, "https://docs.python.org/3/tutorial/")
    assert not covered(rules, "https://docs.python.org/3/")
    assert not covered(rules, "http://docs.python.org/3/library/os.html")  # another scheme
    assert not covered(rules, "https://docs.python.org:8443/3/library/")


def test_any_wins_the_union_and_no_rule_at_all_is_any() -> None:
    assert rules_of(("host", "a.com"), ("any", "")).any
    assert rules_of().any
    assert not rules_of(("host", "a.com")).any


def test_patterns_parse_surt_prefixes_urls_and_regular_expressions() -> None:
    p = Patterns.parse("http://(COM,Example,)/docs,  https://www.python.org/3/\nre:\\.pdf$ "
                       "http://(org,friend, re:^https://a\\.com/x{1,3}$")
    assert p.surts == ("http://(com,example,)/docs", "https://(org,python,www,)/3/",
                       "http://(org,friend,")
    assert p.match("http://example.com/docs/x")
    assert not p.match("http://www.example.com/docs/x")  # the host ends at ")"
    assert p.match("http://www.friend.org/") and p.match("http://friend.org:81/")
    assert not p.match("http://friendly.org/")
    assert not p.match("https://example.com/docs")         # SURT prefixes keep the scheme
    assert not p.match("http://example.org/docs")
    assert p.match("https://www.python.org/3/library/")
    assert p.match("http://elsewhere.net/a.pdf")
    assert p.match("https://a.com/xx") and not p.match("https://a.com/xxxx")
    assert not Patterns.parse("")
    for bad in ("example.com", "re:(unclosed", "ftp://x/"):
        with pytest.raises(ValueError):
            Patterns.parse(bad)


@pytest.mark.parametrize(("env", "message"), [
    ({"CRAWL_SCOPE": "site"}, "CRAWL_SCOPE='site': expected one of any, host, domain, prefix"),
    ({"CRAWL_SCOPE_INCLUDE": "example.com"}, "CRAWL_SCOPE_INCLUDE='example.com': "),
    ({"CRAWL_SCOPE_EXCLUDE": "re:[a-"}, "CRAWL_SCOPE_EXCLUDE='re:[a-': "),
    ({"CRAWL_SCOPE_HOPS": "-1"}, "CRAWL_SCOPE_HOPS='-1': must be between 0 and 100"),
])
def test_bad_scope_settings_name_the_variable(env: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError) as err:
        load_settings(env)
    assert str(err.value).startswith(message)


def test_scope_settings() -> None:
    s = load_settings({"CRAWL_SCOPE": "Domain", "CRAWL_SCOPE_HOPS": "1",
                       "CRAWL_SCOPE_EXCLUDE": "re:/private/ http://(com,example,)/tmp"})
    assert (s.scope, s.scope_hops) == ("domain", 1)
    assert s.scope_exclude.match("http://example.com/tmp/x")
    assert load_settings({}).scope == "any" and not load_settings({}).scope_include


def test_check_hops_include_and_exclude() -> None:
    scope = Scope(rules_of(("host", "a.com")), include=Patterns.parse("http://(org,friend,"),
                  exclude=Patterns.parse("re:/private/"), max_hops=1)
    assert scope.check("http://a.com/x", "a.com", 0) == (None, 0)
    assert scope.check("http://a.com/x", "a.com", 1) == (None, 0)   # back in scope: 0 again
    assert scope.check("http://b.com/", "b.com", 0) == (None, 1)    # one hop off is allowed
    assert scope.check("http://c.com/", "c.com", 1) == (OUT_OF_SCOPE, 2)
    assert scope.check("http://www.friend.org/", "www.friend.org", 1) == (None, 0)
    assert scope.check("http://a.com/private/1", "a.com", 0) == (EXCLUDED, 0)
    assert Scope(rules_of(("host", "a.com"))).check("http://b.com/", "b.com", 0) == (
        OUT_OF_SCOPE, 1)


def page(url: str, links: list[str], status: Status = Status.FETCHED, hops: int = 0,
         depth: int = 0) -> Page:
    return Page(url=url, url_hash=url, host=host_of(url), depth=depth, status=status,
                links=[Link(link) for link in links], hops=hops)


def test_plan_links_refuses_and_counts_out_of_scope_links_redirects_and_sitemaps() -> None:
    scope = Scope(rules_of(("host", "a.com")), exclude=Patterns.parse("re:\\?print=1"),
                  max_hops=1)
    pages = [
        page("http://a.com/", ["http://a.com/1", "http://a.com/1?print=1", "http://b.com/",
                               "https://sub.a.com/"]),
        page("http://b.com/", ["http://c.com/", "http://b.com/more", "http://a.com/2"], hops=1),
        page("http://a.com/r", ["http://d.com/landing"], Status.REDIRECTED),
        page("http://e.com/r", ["http://f.com/x"], Status.REDIRECTED, hops=1),
        page("http://a.com/robots.txt", ["http://g.com/sitemap.xml"], Status.ROBOTS, depth=-1),
    ]
    rows, edges, refused = plan_links(pages, 5, NOW, load_settings({}).traps, scope=scope)
    hops = {row.url: row.hops for row in rows.values()}
    assert hops == {"http://a.com/1": 0, "http://b.com/": 1, "https://sub.a.com/": 1,
                    "http://a.com/2": 0, "http://d.com/landing": 1,
                    "http://g.com/sitemap.xml": 1}
    assert refused == {(EXCLUDED, "a.com"): 1, (OUT_OF_SCOPE, "c.com"): 1,
                       (OUT_OF_SCOPE, "b.com"): 1, (OUT_OF_SCOPE, "f.com"): 1}
    assert len(edges) == 10  # refused links are still recorded as edges


def test_plan_links_without_a_scope_follows_everything_at_zero_hops() -> None:
    rows, _, refused = plan_links([page("http://a.com/", ["http://b.com/", "http://c.com/"])],
                                  5, NOW, load_settings({}).traps)
    assert not refused and {row.hops for row in rows.values()} == {0}


def test_the_shallowest_then_fewest_hops_wins_within_a_batch() -> None:
    scope = Scope(rules_of(("host", "a.com"), ("host", "b.com")), max_hops=2)
    pages = [page("http://x.com/", ["http://y.com/"], hops=1),
             page("http://a.com/", ["http://y.com/"])]
    rows, _, _ = plan_links(pages, 5, NOW, load_settings({}).traps, scope=scope)
    assert [row.hops for row in rows.values()] == [1]


def test_redis_fields_of_rules() -> None:
    assert fields_of([]) == {}
    assert fields_of([("host", "a.com"), ("domain", "b.co.uk"),
                      ("prefix", "https://c.com:8443/docs/"), ("prefix", "http://c.com/api/")]) == {
        "*": "0", "h:a.com": "1", "d:b.co.uk": "1",
        "p:c.com": "http://c.com/api/\nhttps://c.com:8443/docs/"}
    assert fields_of([("host", "a.com"), ("any", "")])["*"] == "1"
