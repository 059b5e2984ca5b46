"""Keeping a collection fresh: each page's change rate learned from its visits, and revisits
allocated to maximise the collection's freshness within each host's politeness. Pure: times are
passed in.

**Change rates.** A page's changes are taken as a Poisson process of rate lambda. Each visit,
`t` seconds after the previous one, adds one observation (`observe`):
- unchanged (a 304, or the same content hash): no change for `t` seconds;
- changed, with a Last-Modified inside the interval: the last change happened at that moment,
  none since (an exact observation: likelihood lambda * exp(-lambda * since));
- changed without one: at least one change within `t` (interval-censored: 1 - exp(-lambda t)).
The estimate (`ChangeRecord.rate`) maximises that likelihood (Cho & Garcia-Molina, "Estimating
frequency of change", ACM TOIT 2003, for irregular visits with and without the modification
date) with a Gamma prior of weight PRIOR_WEIGHT centred on the rate the host's other pages show
(the smoothing Kolobov et al., NeurIPS 2019, recommend, so that one visit does not decide a rate
of 0 or infinity); censored intervals enter through their mean (the record keeps sums, not
every interval). Old visits fade: each observation keeps DECAY of what came before (a memory
of ~32 visits), so a page whose habits change is followed.

**Allocation.** A page of rate lambda visited every 1/f seconds is fresh a share
F(lambda, f) = (f / lambda)(1 - exp(-lambda / f)) of the time. Maximising the sum of w * F over
a host's pages with sum f <= the host's refresh capacity (Cho & Garcia-Molina, "Effective page
refresh policies", ACM TODS 2003; per host, as in Kolobov, Peres, Lubetzky and Horvitz,
"Optimal freshness crawl under politeness constraints", SIGIR 2019) gives, for one Lagrange
multiplier mu per host, w * dF/df = mu, that is g(x) = mu * lambda / w with x = lambda / f and
g(x) = 1 - (1 + x) exp(-x): pages that change faster than mu allows (mu * lambda / w >= 1) are
not chased (they wait the maximum interval), pages that never change back off to it, and the
others get f = lambda / g^-1(mu lambda / w). The multiplier is solved per host from a histogram
of its pages' lambda / w (`solve_multiplier`), which the store stage keeps up to date in Redis,
so a host of a million pages costs what one of ten does.

**Hubs.** A page whose links reveal new URLs (a home page listing new articles: a link to a
page of its host the crawl has not seen; a sitemap whose URLs or lastmods move) is also worth
visiting for what it reveals: those link changes get a rate of their own, and it is visited
at least HUB_VISITS times per link change, and every HUB_POLL seconds where that costs at most
HUB_MOST visits per change (capped by the minimum interval and by HUB_SHARE of its host's
capacity): a new link is found within a fraction of the time between two of them, and within
seconds on a hub that changes every few minutes (a quiet spell of a news site's home page,
which lowers its rate, does not leave the next article waiting a minute). In its host's queue
a hub goes as a new URL does (discovery), ahead of re-crawls. A host's hubs together take at
most HUBS_SHARE of its capacity: on the real web some pages reveal a URL at every visit (a
token in a link), and each would otherwise claim HUB_SHARE and starve its host's re-crawls;
past that share every hub of the host is visited less, in proportion.
"""

from __future__ import annotations

import bisect
import math
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC
from email.utils import parsedate_to_datetime
from typing import NamedTuple
from urllib.parse import urlsplit

import mmh3
import numpy as np

from crawlapp.core.recrawl import Bounds, refresh_interval

PRIOR_WEIGHT = 0.3  # pseudo-changes of the prior: the host's rate weighs as 0.3 of a change
DECAY = 1.0 - 1.0 / 32  # share of the past an observation keeps
LASTMOD_SLACK = 2.0  # seconds a lastmod may differ from the server's clock as the crawler saw it
HUB_VISITS = 3.0  # visits of a hub per change of its links, at least...
HUB_POLL = 20.0  # ...and one every this many seconds, for one whose links change every
HUB_MOST = 20.0  # 400 s or more often (at most this many visits per change)...
HUB_SHARE = 0.10  # ...at most this share of its host's capacity (a sitemap whose lastmods move
# at every visit would otherwise take the host's minimum interval: 20 % of it at 5 s a delay)
HUBS_SHARE = 0.25  # the share of its host's capacity all its hubs together claim at most
TOP_WEIGHT = 2.0  # a seed (depth 0) weighs twice any other page of its host...
SEED_INTERVAL = 86400.0  # ...and is fetched again within a day at most
MIN_RATE, MAX_RATE = 1e-10, 10.0  # changes per second the estimates stay within
# The histogram of lambda / w: BUCKETS_PER_DECADE buckets a decade from 10 ** LOW_DECADE.
BUCKETS_PER_DECADE = 6
LOW_DECADE = -10
BUCKETS = 11 * BUCKETS_PER_DECADE  # 1e-10 to 10 changes a second
NO_BUCKET = -1


def _g(x: np.ndarray) -> np.ndarray:
    out: np.ndarray = -np.expm1(-x) - x * np.exp(-x)
    return out


# g^-1 by interpolation on a log grid of x (g rises from 0 to 1 with x, as x^2 / 2 near 0).
_X = np.logspace(-7, 3, 4000)
_G = _g(_X)


def _g_inverse(y: np.ndarray) -> np.ndarray:
    """x with g(x) = y, for y in (0, 1); log-log interpolation (g ~ x^2 / 2 below the grid)."""
    y = np.asarray(y, dtype=float)
    small = y < _G[0]
    out = np.exp(np.interp(np.log(np.maximum(y, 1e-300)), np.log(_G), np.log(_X)))
    inverse: np.ndarray = np.where(small, np.sqrt(2 * np.maximum(y, 0.0)), out)
    return inverse


_LOG_G = np.log(_G).tolist()
_LOG_X = np.log(_X).tolist()


def visit_rate(rate: float, multiplier: float) -> float:
    """`visit_rates` of one page, without numpy's per-call cost (the store stage plans a page
    at a time)."""
    if multiplier <= 0:
        return math.inf
    y = multiplier * rate
    if not (0 < y < 1.0):
        return 0.0
    if y < _G[0]:
        x = math.sqrt(2 * y)
    else:
        log_y = math.log(y)
        i = min(bisect.bisect_left(_LOG_G, log_y), len(_LOG_G) - 1)
        lo_g, hi_g = _LOG_G[i - 1], _LOG_G[i]
        share = (log_y - lo_g) / (hi_g - lo_g) if hi_g > lo_g else 0.0
        x = math.exp(_LOG_X[i - 1] + share * (_LOG_X[i] - _LOG_X[i - 1]))
    return rate / x


def visit_rates(rates: np.ndarray, multiplier: float) -> np.ndarray:
    """The optimal visits per second of pages of `rates` (lambda / w) at Lagrange multiplier
    `multiplier`, divided by their weight: lambda / g^-1(mu lambda), 0 where mu lambda >= 1
    (changes too fast to chase); inf where mu is 0 (capacity to spare)."""
    rates = np.asarray(rates, dtype=float)
    if multiplier <= 0:
        return np.full(rates.shape, np.inf)
    y = multiplier * rates
    chased = (y < 1.0) & (rates > 0)
    x = _g_inverse(np.where(chased, y, 0.5))
    visits: np.ndarray = np.where(chased, rates / np.maximum(x, 1e-300), 0.0)
    return visits


def bucket_of(rate_per_weight: float) -> int:
    """The histogram bucket of a page's lambda / w."""
    position = (math.log10(max(rate_per_weight, MIN_RATE)) - LOW_DECADE) * BUCKETS_PER_DECADE
    return min(BUCKETS - 1, max(0, int(position)))


def bucket_rate(bucket: int | np.ndarray) -> np.ndarray:
    """The lambda / w a bucket stands for (its geometric centre)."""
    rate: np.ndarray = 10.0 ** ((np.asarray(bucket, dtype=float) + 0.5) / BUCKETS_PER_DECADE
                                + LOW_DECADE)
    return rate


def solve_multiplier(weights: dict[int, float], budget: float, min_interval: float,
                     max_interval: float) -> float:
    """The host's Lagrange multiplier: the mu at which its pages (the summed weight of each
    bucket of lambda / w) use `budget` visits a second, each visit rate kept within
    [1 / max_interval, 1 / min_interval]; 0 when even every page at the minimum interval fits."""
    filled = {b: w for b, w in weights.items() if w > 0 and 0 <= b < BUCKETS}
    if not filled or budget <= 0:
        return math.inf if filled else 0.0
    buckets = np.fromiter(filled, dtype=float)
    mass = np.fromiter(filled.values(), dtype=float)
    rates = bucket_rate(buckets)
    low, high = 1.0 / max_interval, 1.0 / min_interval

    def used(mu: float) -> float:
        return float(np.sum(mass * np.clip(visit_rates(rates, mu), low, high)))

    if used(1e-300) <= budget:
        return 0.0
    slowest = float(rates.min())
    if used(1.0 / slowest) >= budget:  # even the slowest beyond reach: the maximum everywhere
        return 1.0 / slowest
    lo, hi = -300.0, math.log(1.0 / slowest)  # bisection on log mu
    for _ in range(60):
        mid = (lo + hi) / 2
        if used(math.exp(mid)) > budget:
            lo = mid
        else:
            hi = mid
    return math.exp(hi)


def expected_freshness(rate: float, visits: float) -> float:
    """F(lambda, f): the share of time a page of change rate `rate` visited every 1 / `visits`
    seconds is fresh."""
    if rate <= 0:
        return 1.0
    if visits <= 0:
        return 0.0
    x = rate / visits
    return -math.expm1(-x) / x


class ChangeRecord(NamedTuple):
    """What a page's visits saw of its changes (decayed sums), packed in its row (`pack`)."""

    changes: float = 0.0          # changes whose time Last-Modified told
    censored: float = 0.0         # changes seen without their time
    censored_time: float = 0.0    # the seconds of the intervals those were seen in
    exposure: float = 0.0         # seconds known to pass without a change
    link_changes: float = 0.0     # visits whose links revealed a URL (stages/revisiting.py)
    link_time: float = 0.0        # the seconds of the intervals those were seen in
    link_exposure: float = 0.0    # seconds of intervals with the same links
    hub_rate: float = 0.0         # the visits a second its links claim (counted for its host)
    freshness: float = 0.0        # its expected freshness under its schedule (counted too)
    bucket: int = NO_BUCKET       # its place in its host's histogram of lambda / w
    changed_after: float = 0.0    # its last change seen: after this visit...
    changed_by: float = 0.0       # ...and by this one (0: none seen)

    def pack(self) -> bytes:
        return _RECORD.pack(*self)

    @classmethod
    def unpack(cls, raw: bytes | None) -> ChangeRecord:
        """The record of a row (a new one for None or bytes of another layout)."""
        if not raw or len(raw) != _RECORD.size:
            return cls()
        return cls._make(_RECORD.unpack(raw))

    @property
    def seen(self) -> bool:
        """At least one visit after the first was observed."""
        return self.exposure + self.censored_time > 0 or self.changes > 0

    def rate(self, prior: float) -> float:
        """The change rate (per second) these visits and the `prior` rate give."""
        return _rate(self.changes, self.censored, self.censored_time, self.exposure, prior)

    def link_rate(self, prior: float) -> float:
        """The rate at which the page's links change (0 if they never did)."""
        if self.link_changes <= 0:
            return 0.0
        return _rate(0.0, self.link_changes, self.link_time, self.link_exposure, prior)


_RECORD = struct.Struct("<9fh2d")  # a ChangeRecord as its row keeps it: 54 bytes


def _rate(exact: float, censored: float, censored_time: float, exposure: float,
          prior: float) -> float:
    """The maximum a posteriori rate: the root of
    (exact + a) / lambda - (exposure + a / prior) + censored * t / (exp(lambda t) - 1),
    with t the censored intervals' mean and a = PRIOR_WEIGHT; it falls with lambda, so a
    bisection on log lambda finds it."""
    prior = min(MAX_RATE, max(MIN_RATE, prior))
    a, b = exact + PRIOR_WEIGHT, exposure + PRIOR_WEIGHT / prior
    if censored <= 0 or censored_time <= 0:
        return min(MAX_RATE, max(MIN_RATE, a / b))
    mean = censored_time / censored
    lo, hi = math.log(MIN_RATE), math.log(MAX_RATE)
    for _ in range(36):  # the log range over 2^36: a rate to 1e-9 of itself
        mid = (lo + hi) / 2
        rate = math.exp(mid)
        slope = a / rate - b + censored * mean / math.expm1(min(rate * mean, 700.0))
        if slope > 0:
            lo = mid
        else:
            hi = mid
    return math.exp((lo + hi) / 2)


class Visit(NamedTuple):
    """What one visit saw, for `observe`."""

    at: float                    # when it was fetched
    previous: float | None       # the previous visit (None: the first)
    changed: bool                # a new body (not a 304, not the same content hash)
    last_modified: float | None  # its Last-Modified, if the server gave one
    links_changed: bool          # its set of links differs from the previous visit's
    first_change: float | None = None  # the first change since the previous visit, as a
    # trusted sitemap's lastmod told it (the visit it brought about)


def observe(record: ChangeRecord, visit: Visit) -> ChangeRecord:
    """The record with one more visit. A first visit teaches only how long the page has been
    as it is when Last-Modified says so; a visit no later than the previous one (its batch
    stored again) changes nothing."""
    if visit.previous is None:
        if visit.last_modified is not None and visit.last_modified < visit.at:
            return record._replace(exposure=visit.at - visit.last_modified)
        return record
    span = visit.at - visit.previous
    if span <= 0:
        return record
    kept = [v * DECAY for v in record[:7]]
    changes, censored, censored_time, exposure, link_changes, link_time, link_exposure = kept
    changed_after, changed_by = record.changed_after, record.changed_by
    if not visit.changed:
        exposure += span
    else:
        changed_after, changed_by = visit.previous, visit.at
        modified, first = visit.last_modified, visit.first_change
        if first is not None and visit.previous < first <= visit.at:
            # none until the first change, then perhaps more (nothing known) until the last
            # one Last-Modified gives, then none: a visit a sitemap brings about comes soon
            # after a change, and taken as "at least one since the last" it would make its
            # page look as if it changed as often as it is visited
            changes += 1
            exposure += first - visit.previous
            if modified is not None and first < modified <= visit.at:
                changes += 1 if modified - first > LASTMOD_SLACK else 0
                exposure += visit.at - modified
        elif modified is not None and visit.previous < modified <= visit.at:
            changes += 1
            exposure += visit.at - modified
        else:
            censored += 1
            censored_time += span
    if visit.links_changed:
        link_changes += 1
        link_time += span
    else:
        link_exposure += span
    return ChangeRecord(changes, censored, censored_time, exposure, link_changes, link_time,
                        link_exposure, record.hub_rate, record.freshness, record.bucket,
                        changed_after, changed_by)


@dataclass(frozen=True)
class HostPlan:
    """What the allocation of one host's visits needs: its Lagrange multiplier and the change
    rate its pages show (the prior of a page without history)."""

    multiplier: float
    prior: float
    informed: bool = True  # its pages were seen again: `prior` is learned, not assumed
    importance: float = 1.0  # the weight of its pages: 1 + its authority
    capacity: float = math.inf  # its requests a second (one a delay)
    kinds: Mapping[int, tuple[float, float]] = field(default_factory=dict)  # HostRates.kinds
    hub_scale: float = 1.0  # the share of its hubs' claims it grants (`hub_scale`)

    def prior_of(self, kind: int) -> float:
        """The change rate of a page of `kind` (`kind_of`) not seen twice: what its kind's
        pages showed (changes seen in seconds watched), weighed with PRIOR_WEIGHT changes at
        its host's rate. A host's articles that never change and its index pages that change
        every minute then each start from their own."""
        changes, seconds = self.kinds.get(kind, (0.0, 0.0))
        return (changes + PRIOR_WEIGHT) / (seconds + PRIOR_WEIGHT / self.prior)

    def hub_claim(self, link_rate: float) -> float:
        """The visits a second a page whose links change at `link_rate` claims for them (what
        its host's sums count: HostRates.hubs)."""
        visits = max(HUB_VISITS * link_rate, min(1.0 / HUB_POLL, HUB_MOST * link_rate))
        return min(visits, HUB_SHARE * self.capacity)

    def hub_visits(self, link_rate: float) -> float:
        """The visits a second it earns for them: its claim, less where its host's hubs claim
        more than HUBS_SHARE of its capacity together."""
        return self.hub_claim(link_rate) * self.hub_scale

    def interval(self, rate: float, weight: float, link_rate: float) -> float:
        """The seconds until a page of change rate `rate`, importance `weight` and link change
        rate `link_rate` is best visited again (inf: not for its content nor its links)."""
        fresh = visit_rate(rate / weight, self.multiplier) * weight
        visits = max(fresh, self.hub_visits(link_rate))
        return math.inf if visits <= 0 else 1.0 / visits


HUB_DRIVEN = 0.99  # a hub's visits a second times its interval: its links set the interval


def hub_driven(hub_rate: float, interval: float) -> bool:
    """Whether a page's `interval` is its hub visits' (`hub_rate`, HostPlan.hub_visits): a
    visit for its links, queued as discovery when due, not early (it goes before its host's
    re-crawls, and ends a lease of them: ports.Frontier.yielding)."""
    return hub_rate * interval >= HUB_DRIVEN


class Best(NamedTuple):
    """A page's next interval under its host's plan, and what it follows from."""

    rate: float       # its change rate (per second)
    link_rate: float  # the rate its links change at
    weight: float     # its importance
    interval: float   # seconds from its last visit to its next


def best_interval(record: ChangeRecord, host_plan: HostPlan, bounds: Bounds, depth: int,
                  kind: int, in_trusted_sitemap: bool) -> Best:
    """The interval of the `optimal` policy for a page of change `record` and `depth` under
    its host's plan now, its `kind`'s prior: the store stage's at a visit (stages/
    revisiting.py), the drain's again as the page is queued (stages/recrawling.py: its host's
    multiplier may have moved since)."""
    rate = record.rate(host_plan.prior_of(kind))
    link_rate = record.link_rate(1.0 / bounds.first)
    weight = host_plan.importance * (TOP_WEIGHT if depth == 0 else 1.0)
    if in_trusted_sitemap:
        interval = bounds.clamp(bounds.high)  # the sitemap tells its changes
    else:
        interval = refresh_interval(host_plan.interval(rate, weight, link_rate), record.seen,
                                    host_plan.informed, bounds)
    if depth == 0 and bounds.fixed is None:  # a seed: within a day whatever it does
        interval = min(interval, max(SEED_INTERVAL, bounds.low))
    return Best(rate, link_rate, weight, interval)


def importance(authority: float) -> float:
    """The weight of a host's pages against other hosts': 1 + its authority ([0, 1])."""
    return 1.0 + authority


def mean_importance(authorities: Mapping[str, float], pages: Mapping[str, float]) -> float:
    """The importance of the fleet's pages on average (`pages` per host, a host without an
    authority at 0): the weight the fleet's budget is solved at, its histogram being of
    lambda / w with every page counted once."""
    total = sum(pages.values())
    if total <= 0:
        return 1.0
    return sum(importance(authorities.get(host, 0.0)) * n for host, n in pages.items()) / total


def host_prior(changes: float, seconds: float, first_interval: float) -> float:
    """The change rate a host's pages show (`changes` seen in `seconds` watched), weighed with
    a prior of PRIOR_WEIGHT changes per `first_interval`: the rate of a page not seen twice."""
    return (changes + PRIOR_WEIGHT) / (seconds + PRIOR_WEIGHT * first_interval)


def refresh_budget(capacity: float, share: float, hubs: float) -> float:
    """The visits a second a host's refreshes are planned for: `share` of its `capacity`,
    less what its hubs take (what they claim, HUBS_SHARE of it at most), never below half of
    that share (discovery keeps the rest: new URLs go first in the host's queue)."""
    planned = share * capacity
    return max(0.5 * planned, planned - min(hubs, HUBS_SHARE * capacity))


def hub_scale(hubs: float, capacity: float) -> float:
    """The share of its hubs' claims (`hubs` visits a second together) a host of `capacity`
    grants: all of them up to HUBS_SHARE of its capacity, that much in all beyond."""
    return 1.0 if hubs <= HUBS_SHARE * capacity else HUBS_SHARE * capacity / hubs


# g(1/2): at mu = PRICE * first interval, a page of the prior rate (one change per first
# interval) is visited twice per first interval, when its host has capacity to spare.
PRICE = 1.0 - 1.5 / math.exp(0.5)
SOLVE_SECONDS = 10.0  # a host's multiplier is solved again when older than this
UNSEEN_SHARE = 0.02  # pages not fetched yet beyond this share of a host's: discovery has work


@dataclass(frozen=True)
class HostRates:
    """A host's summed page records (adapters/redis/change_rates.py), or the fleet's."""

    buckets: dict[int, float]
    pages: float = 0.0
    changes: float = 0.0
    seconds: float = 0.0
    hubs: float = 0.0
    freshness: float = 0.0
    delay: float | None = None
    multiplier: float | None = None
    solved_at: float = 0.0
    kinds: dict[int, tuple[float, float]] = field(default_factory=dict)  # kind: (c, t)
    importance: float = 1.0  # the fleet's: its pages' mean importance (`mean_importance`)

    @classmethod
    def parse(cls, fields: dict[str, float]) -> HostRates:
        # A kind whose pages never changed has no `kc` field: Redis keeps no zero delta.
        kinds = {int(k[2:]): (fields.get(f"kc{k[2:]}", 0.0), fields.get(f"kt{k[2:]}", 0.0))
                 for k in fields if k[:2] in ("kc", "kt")}
        return cls({int(k[1:]): v for k, v in fields.items() if k.startswith("b") and v > 0.5},
                   fields.get("n", 0.0), fields.get("c", 0.0), fields.get("t", 0.0),
                   max(0.0, fields.get("h", 0.0)), fields.get("F", 0.0), fields.get("d"),
                   fields.get("mu"), fields.get("mu_at", 0.0), kinds,
                   max(1.0, fields.get("wi", 1.0)))


@dataclass(frozen=True)
class Planning:
    """The settings the allocation follows."""

    min_interval: float
    max_interval: float
    first_interval: float
    share: float  # of a host's capacity, for refreshes
    default_delay: float

    @property
    def price(self) -> float:
        """The least multiplier: the freshness a visit must buy (a page of the prior rate is
        visited twice per first interval when its host has capacity to spare)."""
        return PRICE * self.first_interval

    def prior(self, rates: HostRates) -> float:
        return host_prior(rates.changes, rates.seconds, self.first_interval)

    def multiplier(self, rates: HostRates, admitted: float, now: float,
                   kept_for: float = SOLVE_SECONDS, importance: float = 1.0
                   ) -> tuple[float, bool]:
        """The host's multiplier and whether it was solved now (else the one kept, younger
        than `kept_for`): its pages' histogram, and `unseen` pages admitted but not yet
        fetched at the prior's bucket, within `share` of one request per delay less its hubs.
        The histogram is of lambda / w, and a page of weight w is visited w times as often as
        one of rate lambda / w and weight 1: the budget is solved for at its host's
        `importance` (HostPlan.importance)."""
        if rates.multiplier is not None and now - rates.solved_at < kept_for:
            return rates.multiplier, False
        weights = dict(rates.buckets)
        unseen = max(0.0, admitted - rates.pages)
        if unseen > 0:
            prior = bucket_of(self.prior(rates))
            weights[prior] = weights.get(prior, 0.0) + unseen
        capacity = self.capacity(rates)
        share = self.share if unseen > UNSEEN_SHARE * admitted + 1 else 1.0
        budget = refresh_budget(capacity, share, rates.hubs) / importance
        return solve_multiplier(weights, budget, self.min_interval, self.max_interval), True

    def capacity(self, rates: HostRates) -> float:
        """The host's requests a second: one a delay (its robots.txt's, else the default)."""
        return 1.0 / max(rates.delay or self.default_delay, 0.01)

    def fleet_multiplier(self, fleet: HostRates, budget: float | None) -> float:
        """The multiplier of CRAWL_RECRAWL_BUDGET over every host's pages (0: no budget), at
        their mean importance (as `multiplier` a host's at its own)."""
        if budget is None:
            return 0.0
        return solve_multiplier(fleet.buckets, budget / fleet.importance, self.min_interval,
                                self.max_interval)

    def host_plan(self, rates: HostRates, multiplier: float, authority: float = 0.0
                  ) -> HostPlan:
        """A host's plan; its `authority` (in [0, 1]) weighs its pages against other hosts'
        (the fleet's budget, the price of a visit), never within the host."""
        capacity = self.capacity(rates)
        return HostPlan(max(multiplier, self.price), self.prior(rates), rates.seconds > 0,
                        importance(authority), capacity, rates.kinds,
                        hub_scale(rates.hubs, capacity))


def count_visit(sums: dict[str, float], before: ChangeRecord, bucket: int, hub: float,
                fresh: float, changed: bool, span: float, kind: int) -> None:
    """A page's move in its host's `sums` (adapters/redis/change_rates.py) at a visit that
    found it `changed` or not `span` seconds after the one before (0: its first), its record
    `before` the visit: its bucket, hub rate and freshness now these, its `kind`'s changes and
    seconds watched too; the store stage's, a visit at a time."""
    if before.bucket != NO_BUCKET:
        sums[f"b{before.bucket}"] = sums.get(f"b{before.bucket}", 0.0) - 1
    else:
        sums["n"] = sums.get("n", 0.0) + 1
    sums[f"b{bucket}"] = sums.get(f"b{bucket}", 0.0) + 1
    sums["h"] = sums.get("h", 0.0) + hub - before.hub_rate
    sums["F"] = sums.get("F", 0.0) + fresh - before.freshness
    if span > 0:
        for name, amount in (("c", 1 if changed else 0), ("t", span),
                             (f"kc{kind}", 1 if changed else 0), (f"kt{kind}", span)):
            sums[name] = sums.get(name, 0.0) + amount


def sums_of(records: Iterable[tuple[ChangeRecord, int]]) -> dict[str, float]:
    """What a host's pages' records (each with its kind) add up to in its sums
    (adapters/redis/change_rates.py): a rebuild's, where the store stage adds them a visit at
    a time."""
    sums: dict[str, float] = {}
    for record, kind in records:
        if record.bucket == NO_BUCKET:
            continue
        changes = record.changes + record.censored
        seconds = record.exposure + record.censored_time
        for name, amount in ((f"b{record.bucket}", 1.0), ("n", 1.0), ("h", record.hub_rate),
                             ("F", record.freshness), ("c", changes), ("t", seconds),
                             (f"kc{kind}", changes), (f"kt{kind}", seconds)):
            sums[name] = sums.get(name, 0.0) + amount
    return sums


KINDS = 16  # a host's sums keep the changes and seconds watched of this many kinds of page


def kind_of(url: str) -> int:
    """A page's kind, as its host's sums keep it: its path's first segment (`/news/a.html`:
    "news"; a page at the root: ""), hashed into KINDS slots."""
    segments = urlsplit(url).path.split("/")
    first = segments[1] if len(segments) > 2 else ""
    return int(mmh3.hash(first, signed=False)) % KINDS


def past_copy(lastmod: float, fetched: float) -> bool:
    """A lastmod (a sitemap's) after a fetch of its page: a change that fetch's copy lacks."""
    return lastmod > fetched + LASTMOD_SLACK


def http_time(value: str | None) -> float | None:
    """A Last-Modified header as a POSIX time (None: absent or not an HTTP date)."""
    if not value:
        return None
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp()


def links_digest(urls: Iterable[str]) -> int:
    """A signed 64-bit digest of a set of links (with a sitemap's lastmods), as its row keeps
    it: equal sets, equal digests, whatever their order."""
    return int(mmh3.hash64("\n".join(sorted(set(urls))), signed=True)[0])
