"""Arbitrary input to the parsers: nothing raises past each module's declared errors."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from crawlapp.core.html import decode_body, parse_html
from crawlapp.core.robots import RobotsPolicy, decode_robots, robots_answer
from crawlapp.core.settings import SettingsError, load_settings

SETTINGS = ("CRAWL_MAX_DEPTH", "CRAWL_SHARDS", "CRAWL_DEFAULT_DELAY", "CRAWL_ALLOWED_NETWORKS",
            "DATABASE_URL", "S3_ENDPOINT_URL", "CELERY_BROKER_URL", "CRAWL_BLOOM_FP_RATE",
            "CRAWL_FROM", "CRAWL_FETCH_BINARIES", "CRAWL_DNS_TTL")


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=4096), st.sampled_from(["crawlapp", "*", "OtherBot"]))
def test_robots_bodies_never_raise(body: bytes, agent: str) -> None:
    policy = RobotsPolicy(200, decode_robots(body))
    assert policy.allowed("http://h.com/some/path?q=1", agent) in (True, False)
    delay = policy.crawl_delay(agent)
    assert delay is None or isinstance(delay, float)
    policy.sitemaps()


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=999), st.one_of(st.none(), st.text(max_size=80)))
def test_robots_answers_never_raise(status: int, location: str | None) -> None:
    policy = robots_answer("http://h.com/robots.txt", status, None, b"Disallow: /x", location, 0)
    assert policy.mode in ("rules", "allow_all", "disallow_all", "redirect")


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=4096), st.one_of(st.none(), st.text(max_size=60)))
def test_html_and_encodings_never_raise(body: bytes, content_type: str | None) -> None:
    assert isinstance(decode_body(body, content_type), str)
    page = parse_html(body, content_type)
    assert all(isinstance(link.url, str) for link in page.links)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(SETTINGS), st.text(max_size=40))
def test_settings_fail_only_with_a_settings_error(name: str, value: str) -> None:
    try:
        load_settings({name: value})
    except SettingsError as exc:
        assert name in str(exc).split(":", 1)[0] or str(exc).startswith("S3_BUCKET")
