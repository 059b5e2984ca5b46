"""Whether a page's visible text changed between two visits: a digest of the text the parse
stage reads, less what CRAWL_CHANGE_IGNORE matches (by default the times and ages a page shows
of its own serving). Pure; loaded by every process (the settings hold the pattern), so it
imports neither numpy nor the parsers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import mmh3
import re2

# What a page's visible text shows of the moment it was served rather than of its content (in
# RE2's syntax, over the lower-cased text `text_of` gives): a date with a time of day
# (2026-11-28t11:22:09z), a time of day (11:22, 11:22:09.5, 9:05 p.m.), an age (5 minutes ago,
# an hour ago, 3h ago, just now). The default of CRAWL_CHANGE_IGNORE; a date alone is content
# (an event's), not left out.
_UNITS = (r"(?:seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h|days?|d|weeks?|wks?|w|months?"
          r"|mos?|years?|yrs?|y)")
VOLATILE_TEXT = (
    r"\b\d{4}-\d{2}-\d{2}[t ]\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:z|[+-]\d{2}:?\d{2})?\b"
    r"|\b\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:\s*[ap]\.?m\b\.?|\b)"
    rf"|\b(?:\d+|an?|one|a few|few|several)\s*{_UNITS}\s+ago\b"
    r"|\bjust now\b|\bmoments? ago\b")


@dataclass(frozen=True)
class IgnoredText:
    """What of a page's visible text is no change (CRAWL_CHANGE_IGNORE): a regular expression,
    case ignored, run by RE2, whose time is linear in the text whatever the pattern: an
    operator's pattern runs over every page of the web, where Python's backtracking `re` can
    take minutes on one page, and takes 35 times as long on an ordinary one for the default.
    RE2 has no lookaround and no backreference; ValueError says so."""

    pattern: str
    _regex: Any = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        options = re2.Options()
        options.case_sensitive = False
        options.log_errors = False
        try:
            regex = re2.compile(self.pattern.encode(), options)
        except re2.error as exc:
            reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) \
                else str(exc)
            raise ValueError(f"not a regular expression RE2 reads ({reason})") from None
        object.__setattr__(self, "_regex", regex)

    @classmethod
    def parse(cls, raw: str) -> IgnoredText | None:
        """CRAWL_CHANGE_IGNORE's value: a pattern, or `none` for none."""
        return None if raw.lower() == "none" else cls(raw)

    def strip(self, text: bytes) -> bytes:
        """`text` (UTF-8) with each stretch the pattern matches made one NUL."""
        return bytes(self._regex.sub(b"\x00", text))


def text_digest(text: str, ignore: IgnoredText | None = None) -> int:
    """A signed 64-bit digest of a page's visible text (core/html.py `text_of`: scripts, styles,
    comments and markup left out, whitespace and case folded) without what `ignore` matches
    (CRAWL_CHANGE_IGNORE: by default the times and ages it shows, VOLATILE_TEXT), as its row
    keeps it: a new body with the same text has not changed for its readers (a token in an
    attribute, a timestamp in a script, an ad's markup, "updated 5 minutes ago"). Heritrix's
    adaptive revisiting digests a page the same way, less its `strip-reg-expr`."""
    data = text.encode("utf-8", "surrogatepass")
    if ignore is not None:
        data = ignore.strip(data)
    return int(mmh3.hash64(data, signed=True)[0])
