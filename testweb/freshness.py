"""How fresh a crawl kept the changing web (testweb/changing.py), judged from the server's
request log, and what classic refresh policies would have done within the same politeness.
Pure: numbers in, numbers out. Times are offsets in seconds from the server's t0.

**Freshness.** At an instant t a page is fresh when the crawler's copy of it is the version
live at t. The copy is the version (the log's `ver`) of the last 200 answer, not aborted, whose
response had ended by t. A 304 confirms the copy the crawler holds and changes nothing: when
the page changed since that copy (a 304 to stale validators), it stays stale. A page never
fetched is stale. The share of fresh pages among those existing at t (the regular pages
/p/<j>.html; with articles, also those published by t) is averaged over the instants start,
start + step, ... <= end: whole seconds for whole start and step, never on a change (changes
happen at half seconds). Overall, for the hosts without a sitemap, for the sitemap hosts, and
per host.

**Discovery.** For each article published in [start, end - DISCOVERY_TAIL]: the seconds from
its publication to the first request for it (median, 90th percentile), and how many were not
requested by `end` (missed).

**Baselines** on the regular pages, simulated on the web's true changes over the same window,
each starting at t0 with every page as it was then, within a capacity per host (page visits a
second: the request rate the crawler achieved on that host, or one per delay):
- round robin: a host's pages visited in turn, one every 1/capacity seconds;
- the optimum of Cho & Garcia-Molina ("Effective page refresh policies", ACM TODS 2003): each
  page visited periodically at the rate f that maximises the sum of
  F(lambda, f) = (f / lambda)(1 - exp(-lambda / f)) over the host's pages with sum f =
  capacity, knowing the true rates lambda. Its expected freshness is the mean of F; it is also
  simulated (periodic visits, random phases);
- the informed bound: a policy told of every change as it happens that, at each of its turns,
  fetches the stale page of lowest change rate (the one that then stays fresh longest).
"""

from __future__ import annotations

import heapq
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from testweb.changing import ChangingWeb
from testweb.serverlog import Request, gap_violations, overlaps

DISCOVERY_TAIL = 30.0  # articles published this close to the window's end are not counted
BISECTIONS = 64  # halvings of a log-scale bracket: far below a double's precision
_SERIES_BELOW = 1e-3  # g(x) by its Taylor series below this x
_NONE = np.zeros(0)


@dataclass(frozen=True)
class Shares:
    """Mean share of fresh pages over a window: all hosts, hosts without a sitemap, sitemap
    hosts, and each host by address, 127.0.1.x (None where there is no page)."""

    overall: float | None
    no_sitemap: float | None
    sitemap: float | None
    per_host: dict[str, float | None]


@dataclass(frozen=True)
class Discovery:
    """Seconds from an article's publication to the first request for it."""

    articles: int  # published in [start, end - DISCOVERY_TAIL]
    median: float | None
    p90: float | None
    missed: int  # never requested by the window's end


@dataclass(frozen=True)
class Verdict:
    """What the log says of a crawl of the changing web."""

    pages: Shares  # the regular pages
    with_articles: Shares  # the regular pages and the articles published
    discovery: Discovery
    requests: int  # in the whole log
    window_requests: int  # started within the window
    overlaps: int  # pairs of requests to one host in flight at once (whole log)
    gaps: int  # requests started less than the host's delay after the previous one ended
    disallowed: int  # requests for URLs robots.txt disallows


@dataclass(frozen=True)
class Baselines:
    """The classic policies' freshness of the regular pages (see the module's docstring)."""

    round_robin: Shares
    round_robin_expected: Shares  # F(lambda, capacity / pages) of every page
    optimum_expected: Shares
    optimum: Shares  # simulated
    informed: Shares


def instants(start: float, end: float, step: float) -> np.ndarray:
    """start, start + step, ... up to end (included when it is on the grid)."""
    count = int(math.floor((end - start) / step + 1e-9)) + 1
    return start + step * np.arange(max(count, 0))


# --- the crawler's copies --------------------------------------------------------------------

def fresh_at(changes: np.ndarray, got_at: np.ndarray, got: np.ndarray, times: np.ndarray,
             initial: int = -1) -> np.ndarray:
    """Whether the copy held at each of `times` is the live version: the copy is the version
    `got[k]` of the last copy taken at `got_at[k]` <= t (sorted), `initial` before the first
    (-1: none); version v is live from changes[v - 1] on."""
    live = np.searchsorted(changes, times, side="right")
    if len(got_at) == 0:
        return np.full(len(times), initial) == live
    k = np.searchsorted(got_at, times, side="right") - 1
    held = np.where(k >= 0, got[np.maximum(k, 0)], initial)
    return np.asarray(held == live)


def copies(web: ChangingWeb, requests: Sequence[Request], t0: float
           ) -> dict[tuple[int, str], tuple[np.ndarray, np.ndarray]]:
    """For each (host, path) the crawler got a whole 200 for: when each such response ended
    (offset from t0) and the version it carried (the log's `ver`; in a log without it, the
    version live as the request started), in order of end."""
    found: defaultdict[tuple[int, str], list[tuple[float, int]]] = defaultdict(list)
    for request in requests:
        i = web.host_index(request.host)
        if request.status != 200 or request.aborted or i is None:
            continue
        version = request.ver
        if version is None:
            version = web.version(i, request.path, request.start - t0)
        if version is not None:
            found[(i, request.path)].append((request.end - t0, version))
    out = {}
    for key, answers in found.items():
        answers.sort()
        out[key] = (np.array([end for end, _ in answers]), np.array([v for _, v in answers]))
    return out


def _shares(web: ChangingWeb, hosts: np.ndarray, fresh: np.ndarray, exist: np.ndarray) -> Shares:
    """Shares of `fresh` (rows: pages of `hosts`; columns: instants; booleans, or expected
    values) among the rows that `exist`, averaged over the instants where any does."""
    count = web.spec.hosts
    fresh_by_host = np.zeros((count, fresh.shape[1]))
    exist_by_host = np.zeros((count, fresh.shape[1]))
    np.add.at(fresh_by_host, hosts, np.where(exist, fresh, 0.0))
    np.add.at(exist_by_host, hosts, exist)

    def mean(chosen: np.ndarray) -> float | None:
        total = exist_by_host[chosen].sum(axis=0)
        some = total > 0
        if not some.any():
            return None
        return float(np.mean(fresh_by_host[chosen].sum(axis=0)[some] / total[some]))

    sitemap = np.isin(np.arange(count), web.sitemap_hosts)
    return Shares(mean(np.ones(count, bool)), mean(~sitemap), mean(sitemap),
                  {web.host_addr(i): mean(np.arange(count) == i) for i in range(count)})


def judge(web: ChangingWeb, log_requests: Sequence[Request], t0: float, start: float,
          end: float, step: float = 2.0, delay: float = 1.0) -> Verdict:
    """The crawl's freshness over [t0 + start, t0 + end] every `step` seconds, its discovery
    of articles and its politeness (`delay`: the crawler's default delay; a host's
    Crawl-delay counts where longer)."""
    times = instants(start, end, step)
    answers = copies(web, log_requests, t0)
    tracked = web.pages() + web.articles()
    fresh = np.zeros((len(tracked), len(times)), bool)
    exist = np.zeros((len(tracked), len(times)), bool)
    for row, page in enumerate(tracked):
        got_at, got = answers.get((page.host, page.path), (_NONE, _NONE))
        fresh[row] = fresh_at(page.changes, got_at, got, times)
        exist[row] = times >= page.born
    hosts = np.array([page.host for page in tracked], dtype=int)
    regular = web.spec.hosts * web.spec.pages_per_host
    window = [r for r in log_requests if start <= r.start - t0 <= end]
    gaps = gap_violations(log_requests, lambda host: web.delay_for(host, delay))
    return Verdict(
        pages=_shares(web, hosts[:regular], fresh[:regular], exist[:regular]),
        with_articles=_shares(web, hosts, fresh, exist),
        discovery=discovery(web, log_requests, t0, start, end),
        requests=len(log_requests),
        window_requests=len(window),
        overlaps=len(overlaps(log_requests)),
        gaps=len(gaps),
        disallowed=sum(web.disallowed(r.url) for r in log_requests),
    )


def discovery(web: ChangingWeb, requests: Sequence[Request], t0: float, start: float,
              end: float) -> Discovery:
    """Delays from publication to the first request (started by `end`) of the articles
    published in [start, end - DISCOVERY_TAIL]."""
    asked: defaultdict[tuple[int, str], list[float]] = defaultdict(list)
    for request in requests:
        i = web.host_index(request.host)
        if i is not None and request.start - t0 <= end:
            asked[(i, request.path)].append(request.start - t0)
    delays, counted = [], 0
    for article in web.articles():
        if not start <= article.born <= end - DISCOVERY_TAIL:
            continue
        counted += 1
        after = [at for at in asked.get((article.host, article.path), ()) if at >= article.born]
        if after:
            delays.append(min(after) - article.born)
    if not delays:
        return Discovery(counted, None, None, counted)
    median, p90 = np.percentile(delays, [50, 90])
    return Discovery(counted, float(median), float(p90), counted - len(delays))


# --- capacity --------------------------------------------------------------------------------

def achieved_capacity(web: ChangingWeb, requests: Sequence[Request], t0: float, start: float,
                      end: float) -> np.ndarray:
    """Requests a second the crawler made to each host within the window (all of them:
    robots.txt, home pages, sitemaps and 404s too)."""
    counts = np.zeros(web.spec.hosts)
    for request in requests:
        i = web.host_index(request.host)
        if i is not None and start <= request.start - t0 <= end:
            counts[i] += 1
    return counts / (end - start)


def nominal_capacity(web: ChangingWeb, delay: float) -> np.ndarray:
    """One request a delay (> 0) per host: the default delay, or its Crawl-delay if longer."""
    return np.array([1.0 / web.delay_for(host, delay) for host in web.hosts()])


# --- the optimum -----------------------------------------------------------------------------

def expected_freshness(rates: np.ndarray, visits: np.ndarray) -> np.ndarray:
    """F(lambda, f) = (f / lambda)(1 - exp(-lambda / f)): the share of the time a page changing
    at `rates` (a Poisson process) is fresh when visited every 1 / `visits` seconds; 1 for a
    page that never changes, 0 for a changing page never visited."""
    rates, visits = np.broadcast_arrays(np.asarray(rates, float), np.asarray(visits, float))
    out = np.ones(rates.shape)
    changing = rates > 0
    out[changing & (visits <= 0)] = 0.0
    seen = changing & (visits > 0)
    x = rates[seen] / visits[seen]
    with np.errstate(invalid="ignore", divide="ignore"):
        out[seen] = np.where(x > 0, -np.expm1(-x) / x, 1.0)
    return out


def _g(x: np.ndarray) -> np.ndarray:
    """g(x) = 1 - (1 + x) exp(-x), lambda times dF/df at x = lambda / f (rising from 0 to 1)."""
    series = x * x * (0.5 - x * (1 / 3 - x * (1 / 8 - x / 30)))
    return np.where(x < _SERIES_BELOW, series, -np.expm1(-x) - x * np.exp(-x))


def g_inverse(y: np.ndarray) -> np.ndarray:
    """x with g(x) = y, for y in (0, 1): bisection in log x between sqrt(2y) (g(x) <= x^2 / 2)
    and sqrt(6y) below 1/6 (g(x) >= x^2 / 6 for x <= 1), else 50 (g(50) = 1 within 1e-20)."""
    y = np.asarray(y, float)
    low = np.sqrt(2 * y)
    high = np.where(y < 1 / 6, np.sqrt(6 * y), 50.0)
    for _ in range(BISECTIONS):
        middle = np.sqrt(low * high)
        below = _g(middle) < y
        low, high = np.where(below, middle, low), np.where(below, high, middle)
    return np.sqrt(low * high)


def optimal_rates(rates: np.ndarray, capacity: float) -> np.ndarray:
    """Visits a second of each page (changing at `rates`) that maximise the sum of
    F(rate, visits) with the visits summing to `capacity`: for the Lagrange multiplier mu,
    dF/df = g(rate / f) / rate = mu, so a page with mu * rate >= 1 gets none and the others
    rate / g^-1(mu * rate); mu by bisection (in log mu) on the sum. A page that never changes
    gets none."""
    rates = np.asarray(rates, float)
    out = np.zeros(rates.shape)
    changing = rates > 0
    if capacity <= 0 or not changing.any():
        return out
    lam = rates[changing]

    def visits(mu: float) -> np.ndarray:
        y = mu * lam
        chased = y < 1
        f = np.zeros(lam.shape)
        f[chased] = lam[chased] / g_inverse(y[chased])
        return f

    high = 1.0 / lam.min()  # no page chased: no visit
    low = high
    while visits(low).sum() < capacity:  # the sum grows without bound as mu goes to 0
        low /= 64
    for _ in range(BISECTIONS):
        middle = math.sqrt(low * high)
        if visits(middle).sum() > capacity:
            low = middle
        else:
            high = middle
    out[changing] = visits(high)
    return out


# --- simulated policies ----------------------------------------------------------------------

def visited_fresh(changes: np.ndarray, visits: np.ndarray, times: np.ndarray) -> np.ndarray:
    """Whether a page visited at `visits` (sorted; each takes the version live then) and held
    as it was at t0 before, is fresh at each of `times`."""
    got = np.searchsorted(changes, visits, side="right")
    return fresh_at(changes, visits, got, times, initial=0)


def periodic_visits(first: float, period: float, until: float) -> np.ndarray:
    """first, first + period, ... <= until (none for an infinite period)."""
    if not math.isfinite(period) or first > until:
        return _NONE
    return first + period * np.arange(int((until - first) // period) + 1)


def round_robin_fresh(changes: Sequence[np.ndarray], capacity: float,
                      times: np.ndarray) -> np.ndarray:
    """Fresh (pages x instants) when a host's pages are visited in turn, one every
    1 / capacity seconds from t0: page j at (j + 1) / capacity, then every pages / capacity."""
    out = np.zeros((len(changes), len(times)), bool)
    until = float(times[-1]) if len(times) else 0.0
    for j, page in enumerate(changes):
        visits = (periodic_visits((j + 1) / capacity, len(changes) / capacity, until)
                  if capacity > 0 else _NONE)
        out[j] = visited_fresh(page, visits, times)
    return out


def informed_visits(changes: Sequence[np.ndarray], rates: np.ndarray, capacity: float,
                    until: float) -> list[np.ndarray]:
    """Each page's visits by the informed policy: at every turn (one each 1 / capacity
    seconds from t0), of the pages changed since their last visit (each change known as it
    happens) the one of lowest rate is visited; no stale page, no visit."""
    visits: list[list[float]] = [[] for _ in changes]
    if capacity <= 0 or not changes:
        return [_NONE for _ in changes]
    at = np.concatenate(changes)
    page = np.repeat(np.arange(len(changes)), [len(c) for c in changes])
    order = np.argsort(at, kind="stable")
    at, page = at[order], page[order]
    stale = np.zeros(len(changes), bool)
    waiting: list[tuple[float, int]] = []
    k = 0
    for turn in np.arange(1, int(until * capacity) + 1) / capacity:
        while k < len(at) and at[k] <= turn:
            j = int(page[k])
            if not stale[j]:
                stale[j] = True
                heapq.heappush(waiting, (float(rates[j]), j))
            k += 1
        if waiting:
            _, j = heapq.heappop(waiting)
            stale[j] = False
            visits[j].append(float(turn))
    return [np.array(v) for v in visits]


def baselines(web: ChangingWeb, capacity: np.ndarray, start: float, end: float,
              step: float = 2.0, seed: int = 0) -> Baselines:
    """The baselines over the window at `capacity` (page visits a second, per host);
    `seed` draws the optimum's phases."""
    times = instants(start, end, step)
    rng = np.random.default_rng(seed)
    schedule, count = web.schedule, web.spec.pages_per_host
    rows = (web.spec.hosts * count,)
    hosts = np.repeat(np.arange(web.spec.hosts), count)
    simulated = {name: np.zeros(rows + (len(times),), bool)
                 for name in ("round_robin", "optimum", "informed")}
    expected = {name: np.zeros(rows + (1,)) for name in ("round_robin", "optimum")}
    for i in range(web.spec.hosts):
        changes, rates = schedule.changes[i], schedule.rates[i]
        block = slice(i * count, (i + 1) * count)
        simulated["round_robin"][block] = round_robin_fresh(changes, capacity[i], times)
        expected["round_robin"][block, 0] = expected_freshness(rates, capacity[i] / count)
        visits = optimal_rates(rates, capacity[i])
        expected["optimum"][block, 0] = expected_freshness(rates, visits)
        periods = np.divide(1.0, visits, out=np.full(count, np.inf), where=visits > 0)
        phases = rng.uniform(0.0, 1.0, count) * np.where(visits > 0, periods, 0.0)
        for j in range(count):
            simulated["optimum"][i * count + j] = visited_fresh(
                changes[j], periodic_visits(phases[j], periods[j], end), times)
        for j, seen in enumerate(informed_visits(changes, rates, capacity[i], end)):
            simulated["informed"][i * count + j] = visited_fresh(changes[j], seen, times)
    everywhere = np.ones(rows + (len(times),), bool)
    once = np.ones(rows + (1,), bool)
    return Baselines(
        round_robin=_shares(web, hosts, simulated["round_robin"], everywhere),
        round_robin_expected=_shares(web, hosts, expected["round_robin"], once),
        optimum_expected=_shares(web, hosts, expected["optimum"], once),
        optimum=_shares(web, hosts, simulated["optimum"], everywhere),
        informed=_shares(web, hosts, simulated["informed"], everywhere),
    )
