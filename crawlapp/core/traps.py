"""Spider-trap rules: each returns None (fine) or a short reason code. Pure: no I/O."""

from __future__ import annotations

import re
from calendar import monthrange
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import MAXYEAR, MINYEAR, date
from urllib.parse import parse_qsl

# RFC 3986, appendix B: splits any string, never fails.
_URI = re.compile(r"^(?:[^:/?#]+:)?(?://[^/?#]*)?([^?#]*)(?:\?([^#]*))?", re.S)
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)
_HEX = re.compile(r"(?<![0-9a-z])(?=[a-f]*[0-9])(?=[0-9]*[a-f])[0-9a-f]{8,}(?![0-9a-z])", re.I)
_DIGITS = re.compile(r"[0-9]+")
_MAYBE_YEAR = re.compile(r"[0-9]{4}|%")
_DATE = re.compile(r"(?<![0-9])([0-9]{4})([/-])([0-9]{1,2})(?:\2([0-9]{1,2}))?(?![0-9])")
_COMPACT_DATE = re.compile(r"(?<![0-9])([0-9]{4})([0-9]{2})([0-9]{2})(?![0-9])")
_DATE_KEY = re.compile(r"(?i:(?:^|[^a-z])date)|[a-z]Date")  # date, start_date, eventDate
_PATH_SESSION = re.compile(
    r";(?:jsessionid|phpsessid|sessionid|sid)="           # /page;jsessionid=...
    r"|/(?:sid|sessionid|session|sess)/[0-9a-f]{8,}(?:/|$)"  # /sid/<hex>/
    r"|/\((?:[a-z]\([a-z0-9_-]*\))+\)(?:/|$)",            # ASP.NET cookieless /(S(...))/
    re.I,
)
SESSION_KEYS = frozenset({
    "sid", "sessid", "sessionid", "session_id", "phpsessid", "jsessionid", "aspsessionid",
    "cfid", "cftoken",
})
_MAYBE_SESSION = re.compile(r"sid|session|cf|%", re.I)  # in every key above, or escaped
YEAR_KEYS = frozenset({"year", "yr", "y"})
MONTH_KEYS = frozenset({"month", "mon", "mo", "m"})
DAY_KEYS = frozenset({"day", "d"})
# Files a crawler of web pages has no use for: images, media, archives, binaries, fonts.
BINARY_EXTENSIONS = frozenset("""
    png jpg jpeg gif webp bmp tif tiff ico svgz heic avif psd
    mp3 wav ogg oga flac aac m4a wma mid midi opus
    mp4 m4v mov avi wmv mkv webm flv mpg mpeg 3gp
    zip gz tgz bz2 xz 7z rar tar zst lz cab jar war apk dmg iso img
    exe msi bin dll so deb rpm pkg
    woff woff2 ttf otf eot
""".split())
COMPRESSED = frozenset({"gz", "bz2", "xz", "zst"})
TEXT_EXTENSIONS = frozenset({"xml", "txt", "html", "htm", "json", "csv"})


def _path_and_query(url: str) -> tuple[str, str]:
    match = _URI.match(url)
    assert match is not None  # the pattern matches every string
    return match.group(1), match.group(2) or ""


def _query_pairs(query: str) -> list[tuple[str, str]]:
    return parse_qsl(query, keep_blank_values=True)


def url_pattern(url: str) -> str:
    """The shape of a URL: its path with ids abstracted, plus its sorted query keys.

    A uuid or a run of 8+ hex characters holding both a digit and a letter becomes `<h>`,
    any other run of digits `<n>`; query values are dropped:
    `http://a.com/cal/2024/05/page?id=3&b=1` -> `/cal/<n>/<n>/page?b&id`.
    """
    path, query = _path_and_query(url)
    path = _DIGITS.sub("<n>", _HEX.sub("<h>", _UUID.sub("<h>", path or "/")))
    keys = sorted({part.split("=", 1)[0] for part in query.split("&")} - {""})
    return f"{path}?{'&'.join(keys)}" if keys else path


def _repeats(segments: list[str], start: int, width: int) -> int:
    """How many times segments[start:start+width] occurs back to back from `start`."""
    run = segments[start:start + width]
    count = 1
    while segments[start + count * width:start + (count + 1) * width] == run:
        count += 1
    return count


def _repeating(segments: list[str], max_repeats: int) -> str | None:
    """'repeating_path' when a segment, or a run of 2-3, occurs > `max_repeats` times in a row."""
    if len(set(segments)) == len(segments):  # no segment twice: nothing repeats (most paths)
        return None
    for width in (1, 2, 3):
        for start in range(len(segments) - width * (max_repeats + 1) + 1):
            if _repeats(segments, start, width) > max_repeats:
                return "repeating_path"
    return None


def _period(year: str, month: str | None = None, day: str | None = None
            ) -> tuple[date, date] | None:
    """The first and last day of a year, month or day given as digits; None when not a date."""
    try:
        y = int(year)
        if month is None:
            return date(y, 1, 1), date(y, 12, 31)
        m = int(month)
        if day is None:
            return date(y, m, 1), date(y, m, monthrange(y, m)[1])
        return date(y, m, int(day)), date(y, m, int(day))
    except ValueError:
        return None


def _shift_years(day: date, years: int) -> date:
    """`day` moved by whole years (Feb 29 may become Feb 28), clamped to date.min/date.max."""
    year = day.year + years
    if not MINYEAR <= year <= MAXYEAR:
        return date.min if year < MINYEAR else date.max
    return day.replace(year=year, day=min(day.day, monthrange(year, day.month)[1]))


def _text_periods(text: str) -> list[tuple[date, date]]:
    periods = (_period(m.group(1), m.group(3), m.group(4)) for m in _DATE.finditer(text))
    return [period for period in periods if period is not None]


def _compact_periods(pairs: list[tuple[str, str]]) -> list[tuple[date, date]]:
    """Dates written yyyymmdd under a key naming a date (`?date=20240501`)."""
    periods = (_period(*m.groups()) for key, value in pairs if _DATE_KEY.search(key)
               for m in _COMPACT_DATE.finditer(value))
    return [period for period in periods if period is not None]


def _fields_period(pairs: list[tuple[str, str]]) -> tuple[date, date] | None:
    """The period named by `?year=` with optional `&month=` and `&day=`."""
    fields = {key.lower(): value.strip() for key, value in pairs}
    year = next((fields[key] for key in YEAR_KEYS if key in fields), "")
    if not re.fullmatch(r"[0-9]{4}", year):
        return None
    month = next((fields[key] for key in MONTH_KEYS if fields.get(key, "").isdigit()), None)
    day = next((fields[key] for key in DAY_KEYS if fields.get(key, "").isdigit()), None)
    return _period(year, month, day if month else None) or _period(year)


def _query_periods(query: str) -> list[tuple[date, date]]:
    pairs = _query_pairs(query)
    field_period = _fields_period(pairs)
    return ([p for _, value in pairs for p in _text_periods(value)] + _compact_periods(pairs)
            + ([field_period] if field_period else []))


def _calendar(path: str, query: str, today: date, max_years: int) -> str | None:
    """'calendar' when the path or query names a date over `max_years` years from `today`."""
    # Most paths name no date, and most queries have no year: every date rule needs four
    # digits in a row, once the query is decoded (`%` may hide them).
    periods = ((_text_periods(path) if _DATE.search(path) else [])
               + (_query_periods(query) if _MAYBE_YEAR.search(query) else []))
    if not periods:
        return None
    earliest, latest = _shift_years(today, -max_years), _shift_years(today, max_years)
    for first, last in periods:
        if last < earliest or first > latest:
            return "calendar"
    return None


def _session_id(path: str, query: str) -> str | None:
    """'session_id' for a session id in the path (;jsessionid=, /sid/<hex>/, /(S(..))/) or query."""
    if _PATH_SESSION.search(path):
        return "session_id"
    if _MAYBE_SESSION.search(query) and any(key.lower() in SESSION_KEYS
                                            for key, _ in _query_pairs(query)):
        return "session_id"
    return None


def _too_deep(segments: list[str], max_segments: int) -> str | None:
    return "path_too_deep" if len(segments) > max_segments else None


def url_length(url: str, max_length: int = 2048) -> str | None:
    return "too_long" if len(url) > max_length else None


def _binary_path(path: str) -> str | None:
    """'binary' when the path's last segment ends in an extension of BINARY_EXTENSIONS
    (compressed text, such as a gzipped sitemap `.xml.gz`, is not binary)."""
    names = path.rsplit("/", 1)[-1].lower().split(".")
    if len(names) < 2 or names[-1] not in BINARY_EXTENSIONS:
        return None
    compressed_text = names[-1] in COMPRESSED and len(names) > 2 and names[-2] in TEXT_EXTENSIONS
    return None if compressed_text else "binary"


class PatternBudget:
    """The per-host, per-pattern cap, as pure logic over counts kept elsewhere.

    The counts mapping is keyed `f"{host} {pattern}"` (see `key`): a canonical host holds no
    space, so the first space splits the two. Whoever stores the counts (e.g. a Redis hash)
    increments that key once per URL admitted with `url_pattern(url)` on `host`.
    """

    @staticmethod
    def key(host: str, pattern: str) -> str:
        return f"{host} {pattern}"

    @staticmethod
    def check(host: str, pattern: str, counts: Mapping[str, int], cap: int) -> str | None:
        """'pattern_cap' once `cap` URLs of this pattern were admitted on this host."""
        return "pattern_cap" if counts.get(PatternBudget.key(host, pattern), 0) >= cap else None


@dataclass(frozen=True, kw_only=True)
class TrapRules:
    """The trap limits; `refusal` runs the stateless rules, `pattern_cap` is for PatternBudget.
    The last three come from the settings (`Settings.traps`), the others are fixed rules."""

    max_repeats: int = 2
    max_years: int = 1
    max_segments: int = 12
    max_length: int
    pattern_cap: int
    skip_binaries: bool

    def refusal(self, url: str, today: date) -> str | None:
        """The first reason among length, binary file, repeating path, depth, session id
        and calendar."""
        if too_long := url_length(url, self.max_length):
            return too_long
        path, query = _path_and_query(url)
        segments = [segment for segment in path.split("/") if segment]
        return ((_binary_path(path) if self.skip_binaries else None)
                or _repeating(segments, self.max_repeats)
                or _too_deep(segments, self.max_segments)
                or _session_id(path, query)
                or _calendar(path, query, today, self.max_years))
