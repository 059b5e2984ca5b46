from dataclasses import replace
from datetime import date

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.provisional import urls

from crawlapp.core.settings import load_settings
from crawlapp.core.traps import (
    SESSION_KEYS,
    PatternBudget,
    TrapRules,
    url_length,
    url_pattern,
)

TODAY = date(2026, 11, 22)
RULES = load_settings({}).traps


def only(max_repeats: int = 1000, max_years: int = 10_000, max_segments: int = 1000) -> TrapRules:
    """The trap rules with the limits given; the others so high that no URL of these tests
    reaches them, which leaves one rule to test."""
    return replace(RULES, max_repeats=max_repeats, max_years=max_years,
                   max_segments=max_segments, max_length=10**6)


@pytest.mark.parametrize(("url", "pattern"), [
    ("http://a.com/cal/2024/05/page?id=3&b=1", "/cal/<n>/<n>/page?b&id"),
    ("http://a.com/cal/2031/12/page?b=9&id=400", "/cal/<n>/<n>/page?b&id"),
    ("http://a.com/", "/"),
    ("http://a.com", "/"),
    ("http://a.com/about", "/about"),
    ("http://a.com/page2.html", "/page<n>.html"),
    ("http://a.com/s/3f2a9c4e1b7d/x", "/s/<h>/x"),
    ("http://a.com/s/550e8400-e29b-41d4-a716-446655440000", "/s/<h>"),
    ("http://a.com/deadbeefcafe", "/deadbeefcafe"),
    ("http://a.com/20240501", "/<n>"),
    ("http://a.com/a1b2c3d", "/a<n>b<n>c<n>d"),
    ("http://a.com/x?b=1&a=2&b=3", "/x?a&b"),
    ("http://a.com/x?flag&&v=", "/x?flag&v"),
    ("http://a.com/x?", "/x"),
    ("http://a.com/x#frag?not=query", "/x"),
])
def test_url_pattern(url: str, pattern: str) -> None:
    assert url_pattern(url) == pattern


@pytest.mark.parametrize(("path", "reason"), [
    ("/x/x/x/x", "repeating_path"),
    ("/x/x/x", "repeating_path"),
    ("/a/b/a/b/a/b/", "repeating_path"),
    ("/a/b/c/a/b/c/a/b/c", "repeating_path"),
    ("/start/a/b/c/a/b/c/a/b/c/end", "repeating_path"),
    ("/x//x//x", "repeating_path"),
    ("/x/x", None),
    ("/a/b/a/b", None),
    ("/a/b/c/a/b/c", None),
    ("/a/b/c/d/a/b/c/d/a/b/c/d", None),
    ("/2024/01/01/", None),
    ("/products/123/reviews/456", None),
    ("/", None),
    ("", None),
])
def test_repeating_segments(path: str, reason: str | None) -> None:
    assert only(max_repeats=2).refusal("http://a.com" + path, TODAY) == reason


def test_repeating_segments_limit() -> None:
    assert only(max_repeats=3).refusal("http://a.com/x/x/x", TODAY) is None
    assert only(max_repeats=3).refusal("http://a.com/x/x/x/x", TODAY) == "repeating_path"


@pytest.mark.parametrize(("url", "reason"), [
    ("http://a.com/2025/11/22/", None),
    ("http://a.com/2027/11/22/", None),
    ("http://a.com/2025/11/21/", "calendar"),
    ("http://a.com/2027/11/23/", "calendar"),
    ("http://a.com/2025/11/", None),
    ("http://a.com/2025/10/", "calendar"),
    ("http://a.com/1999/01/", "calendar"),
    ("http://a.com/2031/01", "calendar"),
    ("http://a.com/events/2031-01-05/", "calendar"),
    ("http://a.com/events/2026-05-05", None),
    ("http://a.com/blog/2026/post-title", None),
    ("http://a.com/blog/1998/post-title", None),
    ("http://a.com/products/123/reviews/456", None),
    ("http://a.com/item/1234/56", None),
    ("http://a.com/cal?date=2024-05-01", "calendar"),
    ("http://a.com/cal?date=2026-05-01", None),
    ("http://a.com/cal?date=20300101", "calendar"),
    ("http://a.com/cal?date=20261231", None),
    ("http://a.com/cal?id=20300101", None),
    ("http://a.com/cal?update=20300101", None),
    ("http://a.com/cal?start_date=20300101", "calendar"),
    ("http://a.com/cal?eventDate=20300101", "calendar"),
    ("http://a.com/cal?DATE=20300101", "calendar"),
    ("http://a.com/cal?year=2030&month=1", "calendar"),
    ("http://a.com/cal?Year=2020", "calendar"),
    ("http://a.com/cal?year=2026&month=13", None),
    ("http://a.com/cal?y=2027&m=11&d=22", None),
    ("http://a.com/cal?y=2027&m=11&d=23", "calendar"),
    ("http://a.com/cal?year=abcd", None),
    ("http://a.com/cal?year=%32%30%33%30", "calendar"),  # a year spelled in escapes
    ("http://a.com/cal?date=2030%2D01%2D05", "calendar"),
    ("http://a.com/cal?page=203&date=none", None),
    ("http://a.com/cal?month=2031-02", "calendar"),
    ("http://a.com/2024/02/30/", None),
])
def test_calendar(url: str, reason: str | None) -> None:
    assert only(max_years=1).refusal(url, TODAY) == reason


def test_calendar_window_and_leap_day() -> None:
    assert only(max_years=5).refusal("http://a.com/2022/01/", TODAY) is None
    assert only(max_years=5).refusal("http://a.com/2021/10/", TODAY) == "calendar"
    assert only(max_years=1).refusal("http://a.com/2023/02/28/", date(2024, 2, 29)) is None
    assert only(max_years=1).refusal("http://a.com/2023/02/27/", date(2024, 2, 29)) == "calendar"
    assert only(max_years=10_000).refusal("http://a.com/0001/01/", date(1, 6, 1)) is None


@pytest.mark.parametrize(("url", "reason"), [
    ("http://a.com/shop;jsessionid=0AB12CD34EF", "session_id"),
    ("http://a.com/shop;JSESSIONID=0ab12", "session_id"),
    ("http://a.com/app/sid/3f2a9c4e1b7d/page", "session_id"),
    ("http://a.com/app/session/3f2a9c4e1b7d", "session_id"),
    ("http://a.com/(S(lit3py55t21z5v55vlm25s55))/default.aspx", "session_id"),
    ("http://a.com/(X(1)S(lit3py55t21z5v55vlm25s55))/default.aspx", "session_id"),
    ("http://a.com/page?sessionid=abc", "session_id"),
    ("http://a.com/page?SID=abc&x=1", "session_id"),
    ("http://a.com/page?PHPSESSID=abc", "session_id"),
    ("http://a.com/page?jsessionid=abc", "session_id"),
    ("http://a.com/page;v=2", None),
    ("http://a.com/sid/about", None),
    ("http://a.com/sidebar/3f2a9c4e1b7d", None),
    ("http://a.com/wiki/Foo_(bar)", None),
    ("http://a.com/page?side=left&session=1", None),
    ("http://a.com/products/123/reviews/456", None),
])
def test_session_id(url: str, reason: str | None) -> None:
    assert only().refusal(url, TODAY) == reason


@pytest.mark.parametrize("key", sorted(SESSION_KEYS))
def test_every_session_key_is_found_in_any_case_and_escaped(key: str) -> None:
    escaped = "".join(f"%{ord(char):02X}" for char in key)
    for query in (f"{key}=1", f"x=2&{key.upper()}=1", f"{escaped}=1"):
        assert only().refusal(f"http://a.com/page?{query}", TODAY) == "session_id", query


@pytest.mark.parametrize(("url", "reason"), [
    ("http://a.com/" + "/".join("abcdefghijkl"), None),
    ("http://a.com/" + "/".join("abcdefghijklm"), "path_too_deep"),
    ("http://a.com/" + "/".join("abcdefghijkl") + "/", None),
    ("http://a.com/a//b?x=/1/2/3/4/5/6/7/8/9/10/11/12/13", None),
    ("http://a.com/", None),
])
def test_path_depth(url: str, reason: str | None) -> None:
    assert only(max_segments=12).refusal(url, TODAY) == reason


@pytest.mark.parametrize(("length", "reason"), [(2048, None), (2049, "too_long"), (20, None)])
def test_url_length(length: int, reason: str | None) -> None:
    url = "http://a.com/" + "x" * (length - len("http://a.com/"))
    assert url_length(url, max_length=2048) == reason


def test_pattern_budget_counts_per_host_and_pattern() -> None:
    counts = {"a.com /p/<n>": 200, "a.com /q/<n>": 199, "b.com:8080 /p/<n>": 3}
    assert PatternBudget.key("a.com", "/p/<n>") == "a.com /p/<n>"
    assert PatternBudget.check("a.com", "/p/<n>", counts, cap=200) == "pattern_cap"
    assert PatternBudget.check("a.com", "/q/<n>", counts, cap=200) is None
    assert PatternBudget.check("b.com:8080", "/p/<n>", counts, cap=3) == "pattern_cap"
    assert PatternBudget.check("c.com", "/p/<n>", counts, cap=1) is None


@pytest.mark.parametrize(("url", "reason"), [
    ("http://a.com/blog/2026/post-title", None),
    ("http://a.com/products/123/reviews/456", None),
    ("http://a.com/" + "x" * 3000, "too_long"),
    ("http://a.com/a/b/c/a/b/c/a/b/c", "repeating_path"),
    ("http://a.com/" + "/".join("abcdefghijklmnop"), "path_too_deep"),
    ("http://a.com/shop;jsessionid=0AB12", "session_id"),
    ("http://a.com/1999/01/", "calendar"),
    ("http://a.com/1999/01/1999/01/1999/01/", "repeating_path"),
    ("http://a.com/x;jsessionid=1/2031/01/", "session_id"),
])
def test_refusal_returns_the_first_reason(url: str, reason: str | None) -> None:
    assert RULES.refusal(url, TODAY) == reason


def test_refusal_uses_the_limits() -> None:
    rules = replace(RULES, max_repeats=3, max_years=30, max_segments=2, max_length=30)
    assert rules.refusal("http://a.com/x/x/x", TODAY) == "path_too_deep"
    assert rules.refusal("http://a.com/1999/01/", TODAY) is None
    assert rules.refusal("http://a.com/" + "x" * 20, TODAY) == "too_long"


@settings(max_examples=500)
@given(st.text())
def test_refusal_never_raises_on_text(url: str) -> None:
    RULES.refusal(url, TODAY)
    url_pattern(url)


@settings(max_examples=300)
@given(urls(), st.dates())
def test_refusal_never_raises_on_urls(url: str, today: date) -> None:
    RULES.refusal(url, today)
    url_pattern(url)


@settings(max_examples=300)
@given(st.lists(st.sampled_from(["2024", "01", "13", "99", "x", "(S(ab))", ";sid=1", "9999"]),
                max_size=8),
       st.dates())
def test_refusal_never_raises_on_date_like_paths(segments: list[str], today: date) -> None:
    replace(RULES, max_years=100).refusal("http://a.com/" + "/".join(segments), today)


@pytest.mark.parametrize(("url", "reason"), [
    ("http://a.com/img/logo.PNG", "binary"),
    ("http://a.com/dl/setup.exe?v=2", "binary"),
    ("http://a.com/archive.tar.gz", "binary"),
    ("http://a.com/video.mp4#t=10", "binary"),
    ("http://a.com/fonts/x.woff2", "binary"),
    ("http://a.com/page.html", None),
    ("http://a.com/report.pdf", None),
    ("http://a.com/zip", None),
    ("http://a.com/v1.2/", None),
    ("http://a.com/search?file=a.zip", None),
    ("http://a.com/.png", "binary"),
    ("http://a.com/sitemap-1.xml.gz", None),
    ("http://a.com/data.tar.gz", "binary"),
    ("http://a.com/gz", None),
])
def test_obvious_binaries_by_extension(url: str, reason: str | None) -> None:
    assert RULES.refusal(url, TODAY) == reason
    assert replace(RULES, skip_binaries=False).refusal(url, TODAY) is None
