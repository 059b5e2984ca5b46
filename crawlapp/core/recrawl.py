"""When to fetch a page again. Pure: times are passed in.

The `optimal` policy (CRAWL_RECRAWL_POLICY, the default) learns each page's change rate and
allocates its host's capacity (core/freshness.py). The `adaptive` one is the fixed rule of
Heritrix's and StormCrawler's adaptive revisits (`next_schedule`):
- changed content (a new content hash): the interval halves, down to the minimum interval;
- unchanged (304 Not Modified, or the same content hash): it grows by half, up to the maximum;
- first fetch: CRAWL_RECRAWL_FIRST_INTERVAL for important pages (priority >= 0.5), seven times
  that for the others.
Either way an operator's rules (`RecrawlRules`, CRAWL_RECRAWL_RULES) bound or fix a host's or a
URL prefix's interval. The interval decides the page's tier, one Redis sorted set per tier
(score = next fetch time), so an operator sees at a glance how much is hourly, daily, weekly or
monthly. The database keeps every page's next fetch (urls.next_crawl_at); Redis only those due
within CRAWL_RECRAWL_WINDOW (adapters/redis/recrawl_sets.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import NamedTuple

from crawlapp.core import hostpatterns
from crawlapp.core.errors import InputError
from crawlapp.core.records import Status
from crawlapp.core.robots import REFUSAL

HOUR = 3600.0
DAY = 24 * HOUR
UNIMPORTANT_FIRST = 7  # `adaptive`: a page of priority below 0.5 waits this many first intervals
# `optimal`: the share of its interval a page is queued before it is due. Its host fetches its
# re-crawls earliest due first (core/priority.py: refresh_priority), so a host whose pages come
# due at scattered times never idles its politeness slot while a page is nearly due (at no lead
# it idled 12-14 % of it, measured by make bench-freshness), and the early one is the one that
# costs least. The drain reckons the due time again from the host's plan of the moment
# (stages/recrawling.py: rescore), so half the interval ahead buys the queue more choice
# without the plan going stale (`make bench-freshness-sim`, minutes 5-15: 0.953 of the
# optimum at a half, 0.952 at a third, 0.948 at a third without the reckoning again).
EARLY = 1.0 / 2.0
# ...but never more than this many seconds ahead: a re-crawl's queue value tells due times
# apart only up to 1,134 s ahead at the default weights (core/priority.py: refresh_priority,
# clamped at 0), beyond which pages queued early would go by when they were queued.
MAX_LEAD = 900.0
# tier name -> the longest interval it holds (the last one holds every longer interval)
TIERS = (("minutes", 600.0), ("hourly", 6 * HOUR), ("daily", 2 * DAY), ("weekly", 14 * DAY),
         ("monthly", float("inf")))
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



@dataclass(frozen=True)
class Bounds:
    """The interval between two fetches of a page: at least `low`, at most `high`, `first`
    the prior of a page without history; `fixed` (a rule's ttl) overrides them all."""

    low: float
    high: float
    first: float
    fixed: float | None = None

    def clamp(self, interval: float) -> float:
        if self.fixed is not None:
            return self.fixed
        return min(self.high, max(self.low, interval))

    def queue_after(self, interval: float) -> float:
        """Seconds after a fetch that its page, due again after `interval` (clamped), is
        queued: EARLY of the interval before, MAX_LEAD at most, never sooner than `low`; a
        fixed ttl on time."""
        if self.fixed is not None:
            return interval
        return max(self.low, interval - min(EARLY * interval, MAX_LEAD))

    def due_after(self, queued_after: float) -> float:
        """The interval a page queued `queued_after` seconds after its fetch is due at (the
        inverse of `queue_after`; `low` for a page queued at the minimum)."""
        if self.fixed is not None or queued_after <= self.low:
            return queued_after
        if queued_after <= MAX_LEAD * (1.0 - EARLY) / EARLY:
            return queued_after / (1.0 - EARLY)
        return queued_after + MAX_LEAD


def refresh_interval(best: float, seen: bool, informed: bool, bounds: Bounds) -> float:
    """The interval of the `optimal` policy for a page whose host's plan gives it `best`: at
    least the first interval while neither the page (`seen`) nor its host (`informed`) was
    seen again, the plan alone teaching nothing yet; within the bounds."""
    if not seen and not informed:
        return bounds.clamp(max(bounds.first, best))
    return bounds.clamp(best)


class Unrefreshed(StrEnum):
    """Why a re-crawl of a page the collection holds left its copy as it was, to be tried
    again: a refresh that does not succeed is no news of the page (`unrefreshed`)."""

    FAILED = "failed"    # no answer, or a 5xx or 429 past its retries: the server's trouble
    REFUSED = "refused"  # robots.txt disallows it now


def unrefreshed(status: Status, http_status: int | None, error: str | None
                ) -> Unrefreshed | None:
    """Why a fetch's outcome leaves a held copy as it was; None when the outcome is the page's
    new state (content, a redirect, a 4xx such as a 404 or 410: the page moved or is gone, or
    the operator's denylist)."""
    if status == Status.BLOCKED:
        return Unrefreshed.REFUSED if (error or "").startswith(REFUSAL) else None
    if status == Status.FAILED and (http_status is None or http_status >= 500
                                    or http_status == 429):
        return Unrefreshed.FAILED
    return None


def recheck_after(why: Unrefreshed, unconfirmed: float, robots_ttl: float, bounds: Bounds
                  ) -> float:
    """Seconds until a page whose re-crawl left its copy (`why`) is tried again: as long as
    its copy has gone unconfirmed (`unconfirmed`: since its last fetch that succeeded, so that
    each try in a row that fails doubles the wait), a refused one no sooner than its host's
    robots.txt is read again (`robots_ttl`); within the bounds."""
    wait = unconfirmed if why is Unrefreshed.FAILED else max(unconfirmed, robots_ttl)
    return bounds.clamp(wait)


def next_schedule(fetched_at: float, previous_interval: float | None, changed: bool,
                  priority: float, bounds: Bounds) -> Schedule:
    """The `adaptive` policy's next fetch of a page fetched at `fetched_at`."""
    if previous_interval is None:
        interval = bounds.first * (1 if priority >= 0.5 else UNIMPORTANT_FIRST)
    elif changed:
        interval = previous_interval / 2
    else:
        interval = previous_interval * 1.5
    interval = bounds.clamp(interval)
    return Schedule(interval, fetched_at + interval, tier_of(interval))


@dataclass(frozen=True)
class Rule:
    """An operator's re-crawl rule for a host pattern or a URL prefix: bounds of the interval
    (`low`, `high`) or a fixed one (`ttl`), in seconds; None: the setting's."""

    pattern: str
    low: float | None = None
    high: float | None = None
    ttl: float | None = None

    def bounds(self, default: Bounds) -> Bounds:
        low = default.low if self.low is None else self.low
        high = default.high if self.high is None else self.high
        return Bounds(min(low, high), max(low, high), default.first, self.ttl)


class BadRule(InputError):
    """A line of the re-crawl rules that is not `PATTERN min=S max=S` or `PATTERN ttl=S`."""


_RULE_FIELDS = {"min": "low", "max": "high", "ttl": "ttl"}


@dataclass(frozen=True)
class RecrawlRules:
    """CRAWL_RECRAWL_RULES: for a URL, the rule of the longest URL prefix that starts it, else
    that of the most specific host pattern (`host:port`, `host`, `*.host`, `*.parent`...)."""

    rules: tuple[Rule, ...]

    @classmethod
    def parse(cls, text: str) -> RecrawlRules:
        """One rule a line (`#` starts a comment): `https://example.com/news/ ttl=600`,
        `*.example.org min=3600 max=604800`."""
        rules = []
        for number, line in enumerate(text.splitlines(), 1):
            words = line.split("#", 1)[0].split()
            if not words:
                continue
            pattern, values = words[0], {}
            try:
                if "://" not in pattern:
                    pattern = hostpatterns.normalize(pattern)
                for word in words[1:]:
                    name, _, raw = word.partition("=")
                    seconds = float(raw)
                    if name not in _RULE_FIELDS or not 0 < seconds < 1e10:
                        raise ValueError(word)
                    values[_RULE_FIELDS[name]] = seconds
            except (ValueError, InputError):
                raise BadRule(f"line {number}: expected PATTERN min=S max=S or PATTERN ttl=S "
                              f"(seconds > 0), got {line.strip()!r}") from None
            if not values:
                raise BadRule(f"line {number}: {pattern} names no min=, max= or ttl=")
            rules.append(Rule(pattern, **values))
        return cls(tuple(rules))

    def shortest(self, default: float) -> float:
        """The shortest interval any rule allows, `default` if none is shorter."""
        shortest = [r.ttl if r.ttl is not None else r.low for r in self.rules]
        return min([default, *(s for s in shortest if s is not None)])

    def rule_for(self, url: str, host: str) -> Rule | None:
        prefixes = [r for r in self.rules if "://" in r.pattern and url.startswith(r.pattern)]
        if prefixes:
            return max(prefixes, key=lambda r: len(r.pattern))
        hosts = {r.pattern: r for r in self.rules if "://" not in r.pattern}
        return next((hosts[p] for p in hostpatterns.candidates(host) if p in hosts), None)

    def bounds(self, url: str, host: str, default: Bounds) -> Bounds:
        """The bounds of `url`'s interval (`default` where no rule applies)."""
        if not self.rules:
            return default
        rule = self.rule_for(url, host)
        return default if rule is None else rule.bounds(default)


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
