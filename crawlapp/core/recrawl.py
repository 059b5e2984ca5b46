"""When to fetch a page again. Pure: times are passed in.

A page's interval between two fetches adapts to what the last fetch saw:
- changed content (a new content hash): the interval halves, down to MIN_INTERVAL;
- unchanged (304 Not Modified, or the same content hash): it grows by half, up to
  MAX_INTERVAL;
- first fetch: a day for important pages (priority >= 0.5), a week for the others.
The interval decides the page's tier, one Redis sorted set per tier (score = next fetch
time), so an operator sees at a glance how much is hourly, daily, weekly or monthly. The
database keeps every page's next fetch (urls.next_crawl_at); Redis only those due within
CRAWL_RECRAWL_WINDOW (adapters/redis/recrawl_sets.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import NamedTuple

from crawlapp.core.records import Status

HOUR = 3600.0
DAY = 24 * HOUR
MIN_INTERVAL = HOUR
MAX_INTERVAL = 60 * DAY
FIRST_INTERVAL_IMPORTANT = DAY
FIRST_INTERVAL = 7 * DAY
# tier name -> the longest interval it holds
TIERS = (("hourly", 6 * HOUR), ("daily", 2 * DAY), ("weekly", 14 * DAY), ("monthly", MAX_INTERVAL))
# The statuses of the rows a drain queues again (a row of another status keeps its
# next_crawl_at but is not re-crawled: queued already, blocked, deleted).
RECRAWLED_STATUSES = (Status.FETCHED, Status.REDIRECTED, Status.FAILED)


@dataclass(frozen=True)
class Schedule:
    interval: float
    next_at: float
    tier: str


class Planned(NamedTuple):
    """A page's next fetch, as its re-crawl tier keeps it."""

    url_hash: str
    tier: str
    next_at: float


def tier_of(interval: float) -> str:
    return next(name for name, longest in TIERS if interval <= longest)


def timestamp(at: datetime) -> float:
    """A time the database gave (naive from SQLite: UTC) as a POSIX timestamp."""
    return at.replace(tzinfo=at.tzinfo or UTC).timestamp()



def next_schedule(fetched_at: float, previous_interval: float | None, changed: bool,
                  priority: float) -> Schedule:
    """The next fetch of a page fetched at `fetched_at`."""
    if previous_interval is None:
        interval = FIRST_INTERVAL_IMPORTANT if priority >= 0.5 else FIRST_INTERVAL
    elif changed:
        interval = max(MIN_INTERVAL, previous_interval / 2)
    else:
        interval = min(MAX_INTERVAL, previous_interval * 1.5)
    return Schedule(interval, fetched_at + interval, tier_of(interval))


def validators(etag: str | None, last_modified: str | None) -> str | None:
    """A page's stored validators, packed as "etag<TAB>last-modified" (None if neither)."""
    if not etag and not last_modified:
        return None
    return f"{etag or ''}\t{last_modified or ''}"


def conditional_headers(packed: str) -> dict[str, str]:
    """The If-None-Match / If-Modified-Since headers of packed validators."""
    etag, _, last_modified = packed.partition("\t")
    headers = {}
    if etag:
        headers["If-None-Match"] = etag
    if last_modified:
        headers["If-Modified-Since"] = last_modified
    return headers
