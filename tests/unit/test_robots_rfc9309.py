"""RFC 9309 conformance of crawlapp.core.robots, one table per section of the RFC.

Each row of an allow/disallow table is (robots.txt, URL, allowed) or (robots.txt, URL,
allowed, user agent); the user agent defaults to our product token. A robots.txt given as
bytes goes through decode_robots first, as a fetched file does. Rows marked "regression"
cover the departures from the RFC reported against the previous Protego-based module.
"""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crawlapp.core.robots import RobotsDecision, RobotsPolicy, decode_robots

UA = "crawlapp"
FULL_UA = "crawlapp/1.0 (+http://x)"
H = "http://h.example"

Row = tuple[object, ...]


def _policy(body: str | bytes) -> RobotsPolicy:
    return RobotsPolicy(200, decode_robots(body) if isinstance(body, bytes) else body)


def _params(rows: list[Row]) -> list[object]:
    return [pytest.param(*row[:3], row[3] if len(row) > 3 else UA, id=f"{i}") for i, row in
            enumerate(rows)]


def _check(body: str | bytes, url: str, allowed: bool, agent: str) -> None:
    decision = _policy(body).decide(url, agent)
    assert decision.allowed is allowed, (body, url, agent, decision)
    if not allowed:
        assert decision.rule is not None and decision.rule.startswith("Disallow: ")


# --- 2.2.1 The User-Agent line: the whole product token, case-insensitively ------------

STAR_DISALLOWS = "User-agent: *\nDisallow: /\n"

USER_AGENT_ROWS: list[Row] = [
    # regression: Protego chose a group whose name is a prefix of our token
    ("User-agent: crawl\nDisallow: /\n", f"{H}/x", True),
    ("User-agent: crawl\nDisallow: /\nUser-agent: *\nDisallow: /star/\n", f"{H}/x", True),
    ("User-agent: crawl\nDisallow: /\nUser-agent: *\nDisallow: /star/\n", f"{H}/star/x", False),
    ("User-agent: craw\nDisallow: /\n", f"{H}/x", True, FULL_UA),
    ("User-agent: crawlappbot\nDisallow: /\n", f"{H}/x", True),
    ("User-agent: crawlapp-beta\nDisallow: /\n", f"{H}/x", True),
    ("User-agent: crawl_app\nDisallow: /\n", f"{H}/x", True),
    ("User-agent: app\nDisallow: /\n", f"{H}/x", True),
    ("User-agent: crawlapp\nDisallow: /\n", f"{H}/x", False),
    ("User-agent: CRAWLAPP\nDisallow: /\n", f"{H}/x", False),
    ("User-agent: CrawlApp\nDisallow: /\n", f"{H}/x", False),
    ("User-agent: crawlapp\nDisallow: /\n", f"{H}/x", False, "CrawlApp"),
    ("User-agent: crawlapp\nDisallow: /\n", f"{H}/x", False, FULL_UA),
    # a User-agent line's value is its first word; an agent that is not one token matches none
    ("User-Agent: *\nDisallow: /\nUser-Agent: Foo Bar\nAllow: /x/\nDisallow: /\n",
     f"{H}/x/y", True, "Foo"),
    ("User-Agent: *\nDisallow: /\nUser-Agent: Foo Bar\nAllow: /x/\nDisallow: /\n",
     f"{H}/x/y", False, "Foo Bar"),
    ("User-agent: crawlapp\nDisallow: /\n", f"{H}/x", False, "crawlapp (+http://x/bot)"),
    ("User-agent: crawlapp\nDisallow: /\n", f"{H}/x", False, "crawlapp (compatible)"),
    ("User-agent: crawlapp\nDisallow: /\n", f"{H}/x", True, "crawl/1.0"),
    # the value names the token up to the first character outside [A-Za-z_-]
    ("User-agent: crawlapp/2.1\nDisallow: /\n", f"{H}/x", False),
    ("User-agent: CrawlApp/2.1 (+http://crawlapp.invalid)\nDisallow: /\n", f"{H}/x", False),
    ("User-agent: crawlapp bot\nDisallow: /\n", f"{H}/x", False),
    ("User-agent: crawlapp*\nDisallow: /\n", f"{H}/x", False),
    ("User-agent: crawlapp1\nDisallow: /\n", f"{H}/x", False),
    # the * group applies when no group names us, and only then
    (STAR_DISALLOWS, f"{H}/x", False),
    ("User-agent: * \nDisallow: /\n", f"{H}/x", False),
    ("User-agent: * # everyone\nDisallow: /\n", f"{H}/x", False),
    ("User-agent: *bot\nDisallow: /\n", f"{H}/x", True),
    ("User-agent: *\nDisallow: /\n\nUser-agent: crawlapp\nDisallow: /x\n", f"{H}/y", True),
    ("User-agent: *\nDisallow: /\n\nUser-agent: crawlapp\nDisallow: /x\n", f"{H}/x", False),
    ("User-agent: *\nDisallow: /\n\nUser-agent: crawlapp\nDisallow: /x\n", f"{H}/y", False,
     "otherbot"),
    ("User-agent: crawlapp\nDisallow: /x\n\nUser-agent: *\nDisallow: /\n", f"{H}/y", True),
    # a group that names us but has no rules still wins over the * group
    ("User-agent: *\nDisallow: /\n\nUser-agent: crawlapp\n", f"{H}/y", True),
    ("User-agent: *\nDisallow: /\n\nUser-agent: crawlapp\nDisallow:\n", f"{H}/y", True),
    # no group for us and no * group: everything is allowed
    ("User-agent: otherbot\nDisallow: /\n", f"{H}/x", True),
    ("User-agent: a\nAllow: /\nUser-agent: b\nDisallow: /\nUser-agent: c\nDisallow: /\n",
     f"{H}/x", True),
    ("", f"{H}/x", True),
    ("# nothing but a comment\n", f"{H}/x", True),
    # several user-agent lines make one group
    ("User-agent: googlebot\nUser-agent: crawlapp\nDisallow: /p\n", f"{H}/p", False),
    ("User-agent: googlebot\nUser-agent: crawlapp\nDisallow: /p\n", f"{H}/p", False, "googlebot"),
    ("User-agent: googlebot\nUser-agent: crawlapp\nDisallow: /p\n", f"{H}/p", True, "bingbot"),
    # all the groups naming us are merged (and the * groups, when none does)
    ("User-agent: crawlapp\nDisallow: /a\n\nUser-agent: *\nDisallow: /b\n\n"
     "User-agent: crawlapp\nDisallow: /c\n", f"{H}/a", False),
    ("User-agent: crawlapp\nDisallow: /a\n\nUser-agent: *\nDisallow: /b\n\n"
     "User-agent: crawlapp\nDisallow: /c\n", f"{H}/c", False),
    ("User-agent: crawlapp\nDisallow: /a\n\nUser-agent: *\nDisallow: /b\n\n"
     "User-agent: CRAWLAPP\nDisallow: /c\n", f"{H}/b", True),
    ("User-agent: *\nDisallow: /a\nUser-agent: other\nDisallow: /b\nUser-agent: *\n"
     "Disallow: /c\n", f"{H}/c", False),
    ("User-agent: *\nDisallow: /a\nUser-agent: other\nDisallow: /b\nUser-agent: *\n"
     "Disallow: /c\n", f"{H}/b", True),
    ("User-agent: crawlapp\nDisallow: /a\nUser-agent: x\nDisallow: /\n"
     "User-agent: crawlapp\nAllow: /a/b\n", f"{H}/a/b/c", True),
    ("User-agent: crawlapp\nDisallow: /a\nUser-agent: x\nDisallow: /\n"
     "User-agent: crawlapp\nAllow: /a/b\n", f"{H}/a/x", False),
]


# --- 2.2.4 / 2.1 Grouping: only an Allow/Disallow line followed by User-agent ends a group

GOOGLE_STYLE_GROUPS = (
    "allow: /foo/bar/\n"
    "\n"
    "user-agent: FooBot\n"
    "disallow: /\n"
    "allow: /x/\n"
    "user-agent: BarBot\n"
    "disallow: /\n"
    "allow: /y/\n"
    "\n\n"
    "allow: /w/\n"
    "user-agent: BazBot\n"
    "\n"
    "user-agent: FooBot\n"
    "allow: /z/\n"
    "disallow: /\n"
)

GROUPING_ROWS: list[Row] = [
    # regression: a Crawl-delay, Sitemap or unknown line between User-agent lines split the group
    ("User-agent: crawlapp\nCrawl-delay: 5\nUser-agent: a\nDisallow: /x\n", f"{H}/x", False),
    ("User-agent: a\nCrawl-delay: 5\nUser-agent: crawlapp\nDisallow: /x\n", f"{H}/x", False),
    ("User-agent: a\nCrawl-delay: 5\nUser-agent: crawlapp\nDisallow: /x\n", f"{H}/x", False, "a"),
    ("User-agent: crawlapp\nUnknown-field: value\nUser-agent: a\nDisallow: /x\n", f"{H}/x", False),
    ("User-agent: crawlapp\nSitemap: http://h.example/s.xml\nUser-agent: *\nDisallow: /\n",
     f"{H}/x", False),
    ("User-agent: BarBot\nSitemap: https://h.example/sitemap\nUser-agent: *\nDisallow: /\n",
     f"{H}/x", False, "barbot"),
    ("User-agent: crawlapp\nInvalid-Unknown-Line: unknown\nUser-agent: *\nDisallow: /\n",
     f"{H}/x", False),
    ("User-agent: crawlapp\nno colon and many words\nUser-agent: a\nDisallow: /x\n", f"{H}/x", False),
    # blank lines and comments do not end a group either
    ("User-agent: crawlapp\n\nUser-agent: a\nDisallow: /x\n", f"{H}/x", False),
    ("User-agent: crawlapp\n# comment\nUser-agent: a\nDisallow: /x\n", f"{H}/x", False),
    ("User-agent: crawlapp\nDisallow: /a\n\n\nDisallow: /b\n", f"{H}/b", False),
    # a rule line then a User-agent line starts the next group
    ("User-agent: a\nDisallow: /x\nUser-agent: crawlapp\nDisallow: /y\n", f"{H}/x", True),
    ("User-agent: a\nDisallow: /x\nUser-agent: crawlapp\nDisallow: /y\n", f"{H}/y", False),
    ("User-agent: a\nDisallow: /x\nCrawl-delay: 1\nUser-agent: crawlapp\nDisallow: /y\n",
     f"{H}/x", True),
    ("User-agent: a\nDisallow:\nUser-agent: crawlapp\nDisallow: /y\n", f"{H}/y", True, "a"),
    ("User-agent: a\nDisallow:\nUser-agent: crawlapp\nDisallow: /y\n", f"{H}/y", False),
    ("User-agent: a\nAllow: /q\nUser-agent: crawlapp\nDisallow: /y\n", f"{H}/y", True, "a"),
    # rules before the first User-agent line belong to no group
    ("Disallow: /\nUser-agent: crawlapp\nDisallow: /y\n", f"{H}/x", True),
    ("Disallow: /\n", f"{H}/x", True),
    ("Disallow: /\n\nUser-agent: *\nAllow: /x\n", f"{H}/y", True),
    # Google's grouping example, reworded
    (GOOGLE_STYLE_GROUPS, f"{H}/x/b", True, "FooBot"),
    (GOOGLE_STYLE_GROUPS, f"{H}/z/d", True, "FooBot"),
    (GOOGLE_STYLE_GROUPS, f"{H}/y/c", False, "FooBot"),
    (GOOGLE_STYLE_GROUPS, f"{H}/y/c", True, "BarBot"),
    (GOOGLE_STYLE_GROUPS, f"{H}/w/a", True, "BarBot"),
    (GOOGLE_STYLE_GROUPS, f"{H}/z/d", False, "BarBot"),
    (GOOGLE_STYLE_GROUPS, f"{H}/z/d", True, "BazBot"),
    (GOOGLE_STYLE_GROUPS, f"{H}/foo/bar/", False, "FooBot"),
    (GOOGLE_STYLE_GROUPS, f"{H}/foo/bar/", False, "BarBot"),
    (GOOGLE_STYLE_GROUPS, f"{H}/foo/bar/", False, "BazBot"),
]


# --- 2.2.2 The Allow and Disallow lines -----------------------------------------------

def star(*lines: str) -> str:
    return "User-agent: *\n" + "".join(line + "\n" for line in lines)


RULE_ROWS: list[Row] = [
    # prefix match on the path, case-sensitive
    (star("Disallow: /fish"), f"{H}/fish", False),
    (star("Disallow: /fish"), f"{H}/fish.html", False),
    (star("Disallow: /fish"), f"{H}/fish/salmon.html", False),
    (star("Disallow: /fish"), f"{H}/fishheads/yummy.html", False),
    (star("Disallow: /fish"), f"{H}/fish.php?id=anything", False),
    (star("Disallow: /fish"), f"{H}/Fish.asp", True),
    (star("Disallow: /fish"), f"{H}/catfish", True),
    (star("Disallow: /fish"), f"{H}/?id=fish", True),
    (star("Disallow: /fish/"), f"{H}/fish", True),
    (star("Disallow: /fish/"), f"{H}/fish/", False),
    (star("Disallow: /X/"), f"{H}/x/y", True),
    (star("Disallow: /x/"), f"{H}/X/y", True),
    (star("Disallow: /x/"), f"{H}/x/y", False),
    (star("Disallow: /"), f"{H}/", False),
    (star("Disallow: /"), H, False),
    # the longest pattern wins, whatever the order; Allow wins a tie
    (star("Disallow: /a", "Allow: /a/b"), f"{H}/a/b/c", True),
    (star("Disallow: /a", "Allow: /a/b"), f"{H}/a/c", False),
    (star("Allow: /a/b", "Disallow: /a"), f"{H}/a/b", True),
    (star("Allow: /a", "Disallow: /a/b"), f"{H}/a/b", False),
    (star("Allow: /a", "Disallow: /a/b"), f"{H}/a/c", True),
    (star("Disallow: /x/page.html", "Allow: /x/page.html"), f"{H}/x/page.html", True),
    (star("Allow: /x/page.html", "Disallow: /x/page.html"), f"{H}/x/page.html", True),
    (star("Allow: /", "Disallow: /"), f"{H}/page", True),
    (star("Allow: /page", "Disallow: /*.html"), f"{H}/page.html", False),
    (star("Allow: /page", "Disallow: /*.html"), f"{H}/page", True),
    (star("Allow: /x/page.", "Disallow: /*.html"), f"{H}/x/page.html", True),
    (star("Allow: /x/page.", "Disallow: /*.html"), f"{H}/x/y.html", False),
    (star("Disallow: /", "Allow: /$"), f"{H}/", True),
    (star("Disallow: /", "Allow: /$"), f"{H}/page", False),
    (star("Disallow: /p", "Allow: /p$"), f"{H}/p", True),
    (star("Disallow: /p", "Allow: /p$"), f"{H}/pq", False),
    (star("Allow: /a", "Disallow: /a*"), f"{H}/ab", False),  # the `*` is an octet of the rule
    (star("Disallow: /%C3%A9", "Allow: /\u00e9"), f"{H}/%C3%A9x", True),  # same octets: a tie
    (star("Disallow: /folder", "Allow: /folder/"), f"{H}/folder/page", True),
    (star("Disallow: /folder", "Allow: /folder/"), f"{H}/folder", False),
    # an empty Disallow (or Allow) is no rule
    (star("Disallow:"), f"{H}/x", True),
    (star("Disallow: "), f"{H}/x", True),
    (star("Disallow:    # nothing"), f"{H}/x", True),
    (star("Disallow:", "Disallow: /x"), f"{H}/x", False),
    (star("Disallow:", "Disallow: /x"), f"{H}/y", True),
    (star("Allow:", "Disallow: /"), f"{H}/x", False),
    # /robots.txt is always allowed
    (star("Disallow: /"), f"{H}/robots.txt", True),
    (star("Disallow: /robots.txt"), f"{H}/robots.txt", True),
    (star("Disallow: /"), f"{H}/robots.txt?x=1", True),
    (star("Disallow: /"), f"{H}/robots%2Etxt", True),
    (star("Disallow: /"), f"{H}/robots.txtx", False),
    (star("Disallow: /"), f"{H}/a/robots.txt", False),
    (star("Disallow: /"), f"{H}/Robots.txt", False),
    # the path and query as they go on the wire (regression rows: sort parameters, Drupal's ?q=)
    (star("Disallow: /*?sort="), f"{H}/list?sort=price&color=red", False),
    (star("Disallow: /*?sort="), f"{H}/list?color=red&sort=price", True),
    (star("Disallow: /*?sort="), f"{H}/list", True),
    (star("Disallow: /*sort="), f"{H}/list?color=red&sort=price", False),
    (star("Disallow: /?q=user/login/"), f"{H}/?q=user/login/", False),
    (star("Disallow: /?q=user/login/"), f"{H}/?q=user/login/x", False),
    (star("Disallow: /?q=user/login/"), f"{H}/?q=user/logout", True),
    (star("Disallow: /?q=user/login/"), f"{H}/", True),
    (star("Disallow: /search?"), f"{H}/search?q=1", False),
    (star("Disallow: /search?"), f"{H}/search", True),
    (star("Disallow: /page?"), f"{H}/page?", False),
    (star("Disallow: /*?"), f"{H}/a?b", False),
    (star("Disallow: /*?"), f"{H}/a", True),
    (star("Disallow: /a;b"), f"{H}/a;b=1", False),
    (star("Disallow: /a$"), f"{H}/a#fragment", False),
    (star("Disallow: /$"), H, False),
    (star("Disallow: /x"), H, True),
    (star("Disallow: /p"), "/p", False),  # a bare path is taken as it is
]


# --- 2.2.2 Percent-encoding: both sides normalised before comparison --------------------

ENCODING_ROWS: list[Row] = [
    # the table of RFC 9309 2.2.2
    (star("Disallow: /foo/bar?baz=quz"), f"{H}/foo/bar?baz=quz", False),
    (star("Disallow: /foo/bar?baz=https://www.example.com"),
     f"{H}/foo/bar?baz=https://www.example.com", False),
    (star("Disallow: /foo/bar?qux=taz&baz=http://foo.example.com"),
     f"{H}/foo/bar?qux=taz&baz=http://foo.example.com", False),
    (star("Disallow: /foo/bar/\u30c4"), f"{H}/foo/bar/%E3%83%84", False),
    (star("Disallow: /foo/bar/%E3%83%84"), f"{H}/foo/bar/%E3%83%84", False),
    (star("Disallow: /foo/bar/%62%61%7A"), f"{H}/foo/bar/baz", False),
    (star("Disallow: /foo/bar/baz"), f"{H}/foo/bar/%62%61%7A", False),
    (star("Disallow: /foo/bar/%E3%83%84"), f"{H}/foo/bar/\u30c4", False),
    # hex digits compared case-insensitively
    (star("Disallow: /foo/bar/%e3%83%84"), f"{H}/foo/bar/%E3%83%84", False),
    (star("Disallow: /foo/bar/%E3%83%84"), f"{H}/foo/bar/%e3%83%84", False),
    (star("Disallow: /caf\u00e9"), f"{H}/caf%c3%a9", False),
    # unreserved characters decoded
    (star("Disallow: /%7Euser"), f"{H}/~user", False),
    (star("Disallow: /~user"), f"{H}/%7euser", False),
    (star("Disallow: /a%2Db%5Fc%2Ed"), f"{H}/a-b_c.d", False),
    (star("Disallow: /%41"), f"{H}/a", True),  # %41 is "A", and paths are case-sensitive
    # reserved characters keep their encoding
    (star("Disallow: /a%2Fb"), f"{H}/a/b", True),
    (star("Disallow: /a%2Fb"), f"{H}/a%2fb", False),
    (star("Disallow: /a/b"), f"{H}/a%2Fb", True),
    (star("Disallow: /a%3Fb"), f"{H}/a?b", True),
    (star("Disallow: /a?b"), f"{H}/a%3Fb", True),
    (star("Disallow: /a%3Db"), f"{H}/a%3db", False),
    # other characters compared %-encoded
    (star("Disallow: /a b"), f"{H}/a%20b", False),
    (star("Disallow: /a%20b"), f"{H}/a%20b", False),
    (star("Disallow: /a|b"), f"{H}/a|b", False),
    (star("Disallow: /a|b"), f"{H}/a%7Cb", False),
    (star("Disallow: /%zz"), f"{H}/%zz", False),
    (star("Disallow: /a%"), f"{H}/a%", False),
    # 2.2.3: a special character meant literally is %-encoded in the rule
    (star("Disallow: /path/file-with-a-%2A.html"), f"{H}/path/file-with-a-*.html", False),
    (star("Disallow: /path/file-with-a-%2A.html"), f"{H}/path/file-with-a-x.html", True),
    (star("Disallow: /path/foo-%24"), f"{H}/path/foo-$", False),
    (star("Disallow: /path/foo-$"), f"{H}/path/foo-", False),
]


# --- 2.2.3 Special characters: `*`, `$`, `#` ------------------------------------------

LONG = "/" + "a" * 20_000

SPECIAL_ROWS: list[Row] = [
    (star("Disallow: /*.php$"), f"{H}/x.php", False),
    (star("Disallow: /*.php$"), f"{H}/a/b/x.php", False),
    (star("Disallow: /*.php$"), f"{H}/x.php?y", True),
    (star("Disallow: /*.php$"), f"{H}/x.php/", True),
    (star("Disallow: /*.php$"), f"{H}/x.PHP", True),
    (star("Disallow: /*.php"), f"{H}/x.php?y", False),
    (star("Disallow: /*.php"), f"{H}/x.phpx", False),
    (star("Disallow: /fish*.php"), f"{H}/fish.php", False),
    (star("Disallow: /fish*.php"), f"{H}/fishheads/catfish.php?parameters", False),
    (star("Disallow: /fish*.php"), f"{H}/Fish.PHP", True),
    (star("Disallow: /fish*"), f"{H}/fishy", False),
    (star("Disallow: *"), f"{H}/anything", False),
    (star("Disallow: /*"), f"{H}/anything", False),
    (star("Disallow: /a**b"), f"{H}/axxb", False),
    (star("Disallow: /a*b*c"), f"{H}/a-c-b", True),
    (star("Disallow: /a*b*c"), f"{H}/a-b-c", False),
    (star("Disallow: /a*b$"), f"{H}/a-b-b", False),
    (star("Disallow: /a*b$"), f"{H}/a-b-bc", True),
    (star("Disallow: /a*$"), f"{H}/ab", False),
    (star("Disallow: /*/private/"), f"{H}/x/private/y", False),
    (star("Disallow: /*/private/"), f"{H}/private/", True),
    (star("Disallow: /$"), f"{H}/", False),
    (star("Disallow: /$"), f"{H}/a", True),
    (star("Disallow: /a$b"), f"{H}/a$b", False),  # `$` is an anchor only at the end
    (star("Disallow: /a$b"), f"{H}/a", True),
    (star("Disallow: /foo/bar$", "Allow: /foo/bar/qux"), f"{H}/foo/bar", False),
    (star("Disallow: /foo/bar$", "Allow: /foo/bar/qux"), f"{H}/foo/bar/qux", True),
    (star("Disallow: /foo/bar$", "Allow: /foo/bar/qux"), f"{H}/foo/bar/", True),
    (star("Disallow: /foo/bar$", "Allow: /foo/bar/qux"), f"{H}/foo/bar/baz", True),
    (star("Disallow: /foo/bar/quz", "Allow: /foo/*/qux"), f"{H}/foo/bar/quz", False),
    (star("Disallow: /foo/bar/quz", "Allow: /foo/*/qux"), f"{H}/foo/quz", True),
    (star("Disallow: /foo/bar/quz", "Allow: /foo/*/qux"), f"{H}/foo//quz", True),
    (star("Disallow: /foo/bar/quz", "Allow: /foo/*/qux"), f"{H}/foo/bax/quz", True),
    ("User-agent: *\n# Disallow: /\nDisallow: /foo/quz#qux\nAllow: /\n", f"{H}/foo/bar", True),
    ("User-agent: *\n# Disallow: /\nDisallow: /foo/quz#qux\nAllow: /\n", f"{H}/foo/quz", False),
    # no backtracking: many wildcards against a long path answer at once
    (star("Disallow: /*a*a*a*a*a*a*a*a*b"), H + LONG, True),
    (star("Disallow: /*a*a*a*a*a*a*a*a*b$"), H + LONG + "b", False),
]


# --- 2.3 / 2.2 Syntax: line endings, keys, whitespace, comments, misspellings, BOM ------

SYNTAX_ROWS: list[Row] = [
    ("User-agent: *\r\nDisallow: /x\r\n", f"{H}/x", False),
    ("User-agent: *\rDisallow: /x\r", f"{H}/x", False),
    ("User-agent: *\rDisallow: /a\r\nDisallow: /b\nDisallow: /x", f"{H}/x", False),
    ("User-agent: *\rDisallow: /a\r\nDisallow: /b\nDisallow: /x", f"{H}/a", False),
    ("User-agent: *\nDisallow: /x", f"{H}/x", False),  # no final newline
    ("User-agent: crawlapp\r\nDisallow: /\r\n\r\nUser-agent: *\r\nAllow: /\r\n", f"{H}/x", False),
    # keys are case-insensitive; whitespace around key and value is ignored
    ("USER-AGENT: *\nDISALLOW: /x\n", f"{H}/x", False),
    ("uSeR-aGeNt: *\ndIsAlLoW: /x\n", f"{H}/x", False),
    ("user-agent: *\ndisallow: /\nALLOW: /x\n", f"{H}/x", True),
    ("  User-agent  :   *  \n\tDisallow\t:\t/x\t\n", f"{H}/x", False),
    ("User-agent:crawlapp\nDisallow:/x\n", f"{H}/x", False),
    ("User-agent : crawlapp\nDisallow : /x\n", f"{H}/x", False),
    # the misspellings Google's reference parser accepts
    ("User-agent: *\ndisalow: /x\n", f"{H}/x", False),
    ("User-agent: *\ndissallow: /x\n", f"{H}/x", False),
    ("User-agent: *\ndissalow: /x\n", f"{H}/x", False),
    ("User-agent: *\ndisallaw: /x\n", f"{H}/x", False),
    ("User-agent: *\ndiasllow: /x\n", f"{H}/x", False),
    ("useragent: crawlapp\nDisallow: /x\n", f"{H}/x", False),
    ("user agent: crawlapp\nDisallow: /x\n", f"{H}/x", False),
    ("User Agent: crawlapp\nDisallow: /x\n", f"{H}/x", False),
    ("UserAgent: crawlapp\nDisallow: /x\n", f"{H}/x", False),
    # a missing colon, when key and value are separated by whitespace
    ("User-agent crawlapp\nDisallow /x\n", f"{H}/x", False),
    ("User-agent *\nDisallow /x\n", f"{H}/x", False),
    ("user-agent FooBot\ndisallow /\n", f"{H}/x", False, "foobot"),
    ("user agent crawlapp\nDisallow /x\n", f"{H}/x", False),
    ("User-agent: *\nDisallow /x /y\n", f"{H}/x", True),  # three words: not a rule
    # unknown keys are ignored
    ("foo: crawlapp\nbar: /\n", f"{H}/x", True),
    ("User-agent: *\nNoindex: /x\n", f"{H}/x", True),
    ("User-agent: *\nDis-allow: /x\n", f"{H}/x", True),
    # comments
    ("User-agent: * # all\nDisallow: /x # not x\n", f"{H}/x", False),
    ("User-agent: * # all\nDisallow: /x # not x\n", f"{H}/y", True),
    ("#User-agent: *\n#Disallow: /\n", f"{H}/x", True),
    ("User-agent: *\nDisallow: /x#y\n", f"{H}/xz", False),
    ("User-agent: *\n   # indented comment\nDisallow: /x\n", f"{H}/x", False),
    # regression: a partial UTF-8 BOM lost the first group; a whole BOM is skipped too
    (b"\xef\xbb\xbfUser-agent: crawlapp\nDisallow: /x\n", f"{H}/x", False),
    (b"\xef\xbbUser-agent: crawlapp\nDisallow: /x\n", f"{H}/x", False),
    (b"\xefUser-agent: crawlapp\nDisallow: /x\n", f"{H}/x", False),
    (b"\xef\xbb\xbfUser-agent: *\nDisallow: /x\n", f"{H}/x", False),
    (b"\xef\xbbUser-agent: *\nDisallow: /x\n", f"{H}/x", False),
    (b"\xefUser-agent: *\nDisallow: /x\n", f"{H}/x", False),
    ("\ufeffUser-agent: crawlapp\nDisallow: /x\n", f"{H}/x", False),
    ("\ufffdUser-agent: crawlapp\nDisallow: /x\n", f"{H}/x", False),  # cached before the fix
    (b"User-agent: *\nDisallow: /caf\xc3\xa9\n", f"{H}/caf%C3%A9", False),
    (b"User-agent: *\nDisallow: /\xff\n", f"{H}/%EF%BF%BD", False),  # bad bytes replaced
]


ALL_ROWS = {
    "2.2.1-user-agent": USER_AGENT_ROWS,
    "2.2.4-grouping": GROUPING_ROWS,
    "2.2.2-rules": RULE_ROWS,
    "2.2.2-encoding": ENCODING_ROWS,
    "2.2.3-special": SPECIAL_ROWS,
    "2.3-syntax": SYNTAX_ROWS,
}


def test_there_are_enough_rows() -> None:
    assert sum(map(len, ALL_ROWS.values())) >= 200


@pytest.mark.parametrize(("body", "url", "allowed", "agent"), _params(USER_AGENT_ROWS))
def test_2_2_1_user_agent(body: str | bytes, url: str, allowed: bool, agent: str) -> None:
    _check(body, url, allowed, agent)


@pytest.mark.parametrize(("body", "url", "allowed", "agent"), _params(GROUPING_ROWS))
def test_2_2_4_grouping(body: str | bytes, url: str, allowed: bool, agent: str) -> None:
    _check(body, url, allowed, agent)


@pytest.mark.parametrize(("body", "url", "allowed", "agent"), _params(RULE_ROWS))
def test_2_2_2_allow_and_disallow(body: str | bytes, url: str, allowed: bool, agent: str) -> None:
    _check(body, url, allowed, agent)


@pytest.mark.parametrize(("body", "url", "allowed", "agent"), _params(ENCODING_ROWS))
def test_2_2_2_percent_encoding(body: str | bytes, url: str, allowed: bool, agent: str) -> None:
    _check(body, url, allowed, agent)


@pytest.mark.parametrize(("body", "url", "allowed", "agent"), _params(SPECIAL_ROWS))
def test_2_2_3_special_characters(body: str | bytes, url: str, allowed: bool, agent: str) -> None:
    started = time.perf_counter()
    _check(body, url, allowed, agent)
    assert time.perf_counter() - started < 1.0


@pytest.mark.parametrize(("body", "url", "allowed", "agent"), _params(SYNTAX_ROWS))
def test_2_3_syntax(body: str | bytes, url: str, allowed: bool, agent: str) -> None:
    _check(body, url, allowed, agent)


# --- What decided: the group and the rule, as an operator sees them ---------------------

DECISION_ROWS: list[tuple[str, str, str, RobotsDecision]] = [
    ("User-agent: CrawlApp/2.1\nDisallow: /x\n", f"{H}/x/1", UA,
     RobotsDecision(False, "CrawlApp/2.1", "Disallow: /x", None)),
    ("User-agent: *\nDisallow: /x\nCrawl-delay: 2\n", f"{H}/x", FULL_UA,
     RobotsDecision(False, "*", "Disallow: /x", 2.0)),
    ("User-agent: *\nDisallow: /x\n", f"{H}/y", UA, RobotsDecision(True, "*", None, None)),
    ("User-agent: other\nDisallow: /x\n", f"{H}/x", UA, RobotsDecision(True, None, None, None)),
    ("", f"{H}/x", UA, RobotsDecision(True, None, None, None)),
    ("User-agent: crawlapp\nDisallow: /a\n\nUser-agent: *\nDisallow: /\n\n"
     "User-agent: CRAWLAPP\nAllow: /a/b\n", f"{H}/a/b", UA,
     RobotsDecision(True, "crawlapp, CRAWLAPP", "Allow: /a/b", None)),
    ("User-agent: *\nDisallow: /a\nUser-agent: o\nDisallow: /\nUser-agent: *\nDisallow: /b\n",
     f"{H}/b", UA, RobotsDecision(False, "*", "Disallow: /b", None)),
    ("User-agent: googlebot\nUser-agent: crawlapp\ndisalow: /x\n", f"{H}/x", UA,
     RobotsDecision(False, "crawlapp", "Disallow: /x", None)),
    ("User-agent: *\nDisallow: /*.pdf$\n", f"{H}/a.pdf", UA,
     RobotsDecision(False, "*", "Disallow: /*.pdf$", None)),
    ("User-agent: *\nDISALLOW:/caf\u00e9 # comment\n", f"{H}/caf%C3%A9", UA,
     RobotsDecision(False, "*", "Disallow: /caf\u00e9", None)),
    ("User-agent: *\nDisallow: /\n", f"{H}/robots.txt", UA, RobotsDecision(True, "*", None, None)),
]


@pytest.mark.parametrize(("body", "url", "agent", "decision"), DECISION_ROWS)
def test_the_decision_names_the_group_and_the_rule(body: str, url: str, agent: str,
                                                   decision: RobotsDecision) -> None:
    policy = RobotsPolicy(200, body)
    assert policy.decide(url, agent) == decision
    assert policy.allowed(url, agent) is decision.allowed
    if not decision.allowed:
        assert policy.blocking_rule(url, agent) == decision.rule


@pytest.mark.parametrize(("status", "allowed"), [(404, True), (503, False), (0, False),
                                                  (301, False)])
def test_without_rules_no_group_or_rule_decides(status: int, allowed: bool) -> None:
    body = "1\thttp://h.example/r" if status == 301 else ""
    assert RobotsPolicy(status, body).decide(f"{H}/x", UA) == RobotsDecision(allowed, None, None,
                                                                             None)


# --- Crawl-delay: a non-negative number, in the group it appears in ---------------------

CRAWL_DELAY_ROWS: list[tuple[str, str, float | None]] = [
    ("User-agent: *\nCrawl-delay: 2\n", UA, 2.0),
    ("User-agent: *\nCrawl-delay: 1.5\n", UA, 1.5),
    ("User-agent: *\nCrawl-delay: 0\n", UA, 0.0),
    ("User-agent: *\nCrawl-delay:  10  # seconds\n", UA, 10.0),
    ("User-agent: *\ncrawl-DELAY: 3\n", UA, 3.0),
    ("User-agent: *\nCrawl-delay: -1\n", UA, None),
    ("User-agent: *\nCrawl-delay: soon\n", UA, None),
    ("User-agent: *\nCrawl-delay: nan\n", UA, None),
    ("User-agent: *\nCrawl-delay:\n", UA, None),
    ("User-agent: *\nCrawl-delay: x\nCrawl-delay: 4\n", UA, 4.0),
    ("User-agent: *\nCrawl-delay: 4\nCrawl-delay: 8\n", UA, 4.0),
    ("Crawl-delay: 5\nUser-agent: *\nDisallow: /\n", UA, None),
    ("User-agent: *\nCrawl-delay: 7\nDisallow: /x\nUser-agent: crawlapp\nCrawl-delay: 3\n"
     "Disallow: /y\n", UA, 3.0),
    ("User-agent: *\nCrawl-delay: 7\nDisallow: /x\nUser-agent: crawlapp\nCrawl-delay: 3\n"
     "Disallow: /y\n", "otherbot", 7.0),
    ("User-agent: *\nCrawl-delay: 7\nDisallow: /x\nUser-agent: crawlapp\nDisallow: /y\n", UA, None),
    ("User-agent: crawlapp\nCrawl-delay: 6\nUser-agent: other\nDisallow: /x\n", "other", 6.0),
    ("User-agent: crawlapp\nDisallow: /a\nUser-agent: *\nCrawl-delay: 9\nDisallow: /\n"
     "User-agent: crawlapp\nCrawl-delay: 4\nDisallow: /b\nUser-agent: crawlapp\n"
     "Crawl-delay: 5\nDisallow: /c\n", FULL_UA, 4.0),
    ("User-agent: crawl\nCrawl-delay: 9\n", UA, None),
]


@pytest.mark.parametrize(("body", "agent", "delay"), CRAWL_DELAY_ROWS)
def test_crawl_delay_belongs_to_its_group(body: str, agent: str, delay: float | None) -> None:
    policy = RobotsPolicy(200, body)
    assert policy.crawl_delay(agent) == delay
    assert policy.decide(f"{H}/z", agent).crawl_delay == delay


# --- Sitemap: global, wherever it appears -----------------------------------------------

SITEMAP_ROWS: list[tuple[str, list[str]]] = [
    ("Sitemap: http://h.example/s.xml\n", ["http://h.example/s.xml"]),
    ("User-agent: *\nDisallow: /\nSitemap: http://h.example/a.xml\n\nUser-agent: x\n"
     "sitemap: http://h.example/b.xml # b\n", ["http://h.example/a.xml", "http://h.example/b.xml"]),
    ("SITEMAP:http://h.example/s.xml\nSitemap: http://h.example/s.xml\n",
     ["http://h.example/s.xml"]),
    ("Sitemap http://h.example/s.xml\n", ["http://h.example/s.xml"]),
    ("Site-map: http://h.example/s.xml\r\n", ["http://h.example/s.xml"]),
    ("Sitemap:\nUser-agent: *\n", []),
    ("", []),
]


@pytest.mark.parametrize(("body", "sitemaps"), SITEMAP_ROWS)
def test_sitemaps_are_global(body: str, sitemaps: list[str]) -> None:
    assert RobotsPolicy(200, body).sitemaps() == sitemaps


# --- 2.5 Limits and the bytes of the file ------------------------------------------------

@pytest.mark.parametrize(("raw", "text"), [
    (b"\xef\xbb\xbfUser-agent: *", "User-agent: *"),
    (b"\xef\xbbUser-agent: *", "User-agent: *"),
    (b"\xefUser-agent: *", "User-agent: *"),
    (b"User-agent: *", "User-agent: *"),
    (b"\xef\xbb\xbf\xef\xbb\xbfx", "\ufeffx"),  # only the first BOM is a BOM
    (b"a\xffb", "a\ufffdb"),
    (b"", ""),
])
def test_decode_skips_a_whole_or_partial_bom(raw: bytes, text: str) -> None:
    assert decode_robots(raw) == text


def test_only_the_first_500_kib_are_parsed() -> None:
    body = b"User-agent: *\n" + b"#" * (500 * 1024) + b"\nDisallow: /\n"
    assert _policy(body).allowed(f"{H}/x", UA)
    assert not _policy(b"User-agent: *\nDisallow: /\n" + b"#" * (600 * 1024)).allowed(f"{H}/x", UA)


# --- Arbitrary input ------------------------------------------------------------------

ROBOTS_WORDS = st.sampled_from([
    "User-agent:", "user agent", "*", "crawlapp", "crawl", "Disallow:", "disalow", "Allow:",
    "Crawl-delay:", "Sitemap:", "/", "/a", "*", "$", "%", "%2F", "%zz", "?", "#", " ", "\t",
    "\n", "\r", "\r\n", "\ufeff", "\ufffd", "\u30c4", "\x00", "-1", "1.5", ":",
])
TEXT = st.text(alphabet=st.characters(exclude_categories=[]), max_size=200)


@settings(max_examples=300, deadline=None)
@given(st.one_of(TEXT, st.lists(ROBOTS_WORDS, max_size=60).map("".join)),
       st.one_of(TEXT, st.lists(ROBOTS_WORDS, max_size=20).map("".join)),
       st.sampled_from([UA, FULL_UA, "*", "", " ", "crawl", "\u30c4"]),
       st.booleans())
def test_decide_never_raises(body: str, path: str, agent: str, as_url: bool) -> None:
    policy = RobotsPolicy(200, body)
    decision = policy.decide(H + "/" + path if as_url else path, agent)
    assert isinstance(decision.allowed, bool)
    assert decision.rule is None or decision.rule.startswith(("Allow: ", "Disallow: "))
    assert decision.allowed or decision.rule is not None
    assert decision.crawl_delay is None or decision.crawl_delay >= 0
    assert policy.allowed(f"{H}/robots.txt", agent)
    policy.sitemaps()
