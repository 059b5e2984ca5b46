"""What of a page's visible text is a change (core/textchanges.py): the times a page shows are
not, the rest is, and an operator's pattern runs in linear time."""

import pytest

from crawlapp.core.textchanges import VOLATILE_TEXT, IgnoredText, text_digest


@pytest.mark.parametrize(("one", "two"), [
    ("updated 11:22:09 utc. served at 11:22", "updated 11:23:40 utc. served at 09:01"),
    ("generated 2026-11-28t11:22:09.123z for you", "generated 2026-11-29T00:00:01+01:00 for you"),
    ("generated 2026-11-28 11:22 today", "generated 2026-11-28 11:29 today"),
    ("the last comment 5 minutes ago", "the last comment an hour ago"),
    ("posted just now", "posted 3h ago"),
    ("posted a few seconds ago", "posted 2 days ago"),
    ("open until 9:05 p.m.", "open until 10:30am"),
])
def test_the_times_a_page_shows_are_no_change(one: str, two: str) -> None:
    ignore = IgnoredText(VOLATILE_TEXT)
    assert text_digest(one, ignore) == text_digest(two, ignore)
    assert text_digest(one) != text_digest(two)  # every character counts without it


@pytest.mark.parametrize(("one", "two"), [
    ("the score is 2:1", "the score is 3:1"),        # not a time of day
    ("chapter 123:45", "chapter 123:46"),
    ("the concert is on 2026-11-28", "the concert is on 2026-12-05"),  # a date is content
    ("price 10.30 eur", "price 10.40 eur"),
    ("version 1.2.3", "version 1.2.4"),
    ("updated 11:22:09 utc: all well", "updated 11:22:09 utc: all down"),
    ("11:225 units", "11:226 units"),
])
def test_what_the_times_leave_counts(one: str, two: str) -> None:
    ignore = IgnoredText(VOLATILE_TEXT)
    assert text_digest(one, ignore) != text_digest(two, ignore)


def test_an_operators_pattern_never_backtracks() -> None:
    """A pattern Python's re takes 2^n steps for on n letters (hours for this page) runs in
    time linear in the text."""
    page = b"a" * 60 + b"!"
    assert IgnoredText("(a|a)*b").strip(page) == page
    assert IgnoredText("(a|a)*!").strip(page) == b"\x00"
