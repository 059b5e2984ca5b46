import pytest

from crawlapp.core.robots import RobotsDecision, RobotsPolicy, decode_robots, effective_delay

UA = "crawlapp"
BODY = """User-agent: *
Disallow: /private/
Crawl-delay: 2

User-agent: crawlapp
Disallow: /only-us/
Allow: /only-us/open
"""


def test_product_token_group_beats_the_star_group() -> None:
    policy = RobotsPolicy(200, BODY)
    assert not policy.allowed("http://h/only-us/x", UA)
    assert policy.allowed("http://h/only-us/open", UA)
    assert policy.allowed("http://h/private/x", UA)  # the star group does not apply to us
    assert not policy.allowed("http://h/private/x", "otherbot")


@pytest.mark.parametrize(("status", "allowed"), [(404, True), (410, True), (403, True),
                                                  (500, False), (503, False), (0, False)])
def test_status_decides_when_there_are_no_rules(status: int, allowed: bool) -> None:
    assert RobotsPolicy(status).allowed("http://h/anything", UA) is allowed


def test_crawl_delay_is_capped_and_never_below_the_default() -> None:
    policy = RobotsPolicy(200, "User-agent: *\nCrawl-delay: 100\n")
    assert policy.crawl_delay(UA) == 100
    assert effective_delay(policy.crawl_delay(UA), 1.0, 30.0) == 30.0
    assert effective_delay(0.1, 1.0, 30.0) == 1.0
    assert effective_delay(None, 1.0, 30.0) == 1.0


@pytest.mark.parametrize("bom", [b"\xef\xbb\xbf", b"\xef\xbb", b"\xef", b""])
def test_bom_whole_or_partial_and_crlf_are_handled(bom: bytes) -> None:
    body = decode_robots(bom + b"User-agent: *\r\nDisallow: /x\r\n")
    assert not RobotsPolicy(200, body).allowed("http://h/x/y", UA)
    assert RobotsPolicy(200, body).allowed("http://h/y", UA)


def test_a_whole_user_agent_string_is_matched_by_its_product_token() -> None:
    policy = RobotsPolicy(200, BODY + "Crawl-delay: 3\n")
    full = "crawlapp/0.1 (+https://github.com/crawlapp/crawlapp; crawler@crawlapp.invalid)"
    assert not policy.allowed("http://h/only-us/x", full)
    assert policy.crawl_delay(full) == 3.0
    assert policy.blocking_rule("http://h/only-us/x", full) == "Disallow: /only-us/"


def test_a_group_named_by_a_prefix_of_our_token_does_not_apply() -> None:
    policy = RobotsPolicy(200, "User-agent: crawl\nDisallow: /\n")
    assert policy.allowed("http://h/x", UA)
    assert policy.decide("http://h/x", UA) == RobotsDecision(True, None, None, None)


def test_decide_explains_what_applied() -> None:
    decision = RobotsPolicy(200, BODY).decide("http://h/only-us/open/1", UA)
    assert decision == RobotsDecision(True, "crawlapp", "Allow: /only-us/open", None)
    star = RobotsPolicy(200, BODY).decide("http://h/private/1", "otherbot/2.0")
    assert star == RobotsDecision(False, "*", "Disallow: /private/", 2.0)


def test_query_strings_are_matched_as_sent() -> None:
    policy = RobotsPolicy(200, "User-agent: *\nDisallow: /*?sort=\nDisallow: /?q=user/login/\n")
    assert policy.blocking_rule("http://h/list?sort=price&color=red", UA) == "Disallow: /*?sort="
    assert not policy.allowed("http://h/?q=user/login/", UA)
    assert policy.allowed("http://h/list?color=red", UA)


def test_only_the_first_500_kib_are_read() -> None:
    assert len(decode_robots(b"#" * (600 * 1024))) == 500 * 1024


def test_redirects_are_followed_on_the_same_host_up_to_five_hops() -> None:
    from crawlapp.core.robots import robots_answer, robots_url

    first = robots_answer("http://h.com/robots.txt", 301, None, b"", "/robots-real.txt", 0)
    assert first.mode == "redirect" and not first.allowed("http://h.com/x", UA)
    assert robots_url("http://h.com", first) == "http://h.com/robots-real.txt"
    assert robots_url("http://h.com", None) == "http://h.com/robots.txt"
    final = robots_answer("http://h.com/robots-real.txt", 200, None,
                          b"User-agent: *\nDisallow: /blocked/", None, first.redirect[0])
    assert not final.allowed("http://h.com/blocked/x", UA)
    https = robots_answer("http://h.com/robots.txt", 301, None, b"", "https://h.com/robots.txt", 0)
    assert https.redirect == (1, "https://h.com/robots.txt")
    too_many = robots_answer("http://h.com/r5", 302, None, b"", "/r6", 5)
    assert too_many.mode == "allow_all"
    elsewhere = robots_answer("http://h.com/robots.txt", 302, None, b"", "http://other.com/r", 0)
    assert elsewhere.mode == "allow_all"
    assert robots_answer("http://h.com/robots.txt", 302, None, b"", None, 0).mode == "allow_all"


@pytest.mark.parametrize(("url", "rule"), [
    ("http://h.com/private/x", "Disallow: /private/"),
    ("http://h.com/private/open/1", None),
    ("http://h.com/file.PDF", None),
    ("http://h.com/a/file.pdf", "Disallow: /*.pdf$"),
    ("http://h.com/public", None),
])
def test_the_rule_that_blocks_a_url_is_named(url: str, rule: str | None) -> None:
    policy = RobotsPolicy(200, "User-agent: *\nDisallow: /private/\nAllow: /private/open/\n"
                               "Disallow: /*.pdf$\n")
    assert policy.allowed(url, "crawlapp") is (rule is None)
    if rule is not None:
        assert policy.blocking_rule(url, "crawlapp") == rule


@pytest.mark.parametrize(("status", "text"), [(503, "robots.txt 503: nothing allowed"),
                                              (0, "robots.txt unreachable: nothing allowed")])
def test_an_unavailable_robots_txt_is_named_as_the_reason(status: int, text: str) -> None:
    assert RobotsPolicy(status).blocking_rule("http://h.com/", "crawlapp") == text
