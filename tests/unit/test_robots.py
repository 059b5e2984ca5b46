import pytest

from crawlapp.robots import RobotsPolicy, decode_robots, effective_delay

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


def test_bom_and_crlf_are_handled() -> None:
    body = decode_robots(b"\xef\xbb\xbfUser-agent: *\r\nDisallow: /x\r\n")
    assert not RobotsPolicy(200, body).allowed("http://h/x/y", UA)
    assert RobotsPolicy(200, body).allowed("http://h/y", UA)


def test_only_the_first_500_kib_are_read() -> None:
    assert len(decode_robots(b"#" * (600 * 1024))) == 500 * 1024
