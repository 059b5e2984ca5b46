"""The `optimal` re-crawl policy simulated on the changing web's true changes, in seconds
instead of a crawl's minutes: `python -m bench.freshness_sim`.

What `make bench-freshness` measures costs a quarter of an hour a run; this replays the
policy's decisions alone, on each host without a sitemap of the same web (testweb/changing.py;
BENCH_FRESH_SEED, _HOSTS, _PAGES, _NEWS, _SITEMAPS and _WEB as there), to tell what a change to
the estimator or the allocation is worth before a crawl measures it, and how much of the
distance to the optimum is learning. A host's regular pages get one visit every delay (the
crawler's, or the host's Crawl-delay if longer) plus margin: first each page in turn
(discovery), then the re-crawl queued earliest due first, as the frontier hands them out
(queued `Bounds.queue_after` after a visit, due as the drain reckons it then from the host's
plan of the moment). Each visit goes into the page's change record (`observe`: changed or
not, and the Last-Modified where the host sends one) and into the host's sums
(`count_visit`), its multiplier is solved every SOLVE_SECONDS, and the page's interval planned
by the host's plan (`best_interval`, as the store stage and the drain plan it) from

  learned   the rate its record gives (`ChangeRecord.rate` against the host's prior), or
  true      the rate it truly changes at, every page's known to its host's plan from the
            start (its histogram whole before the first visit): the policy with nothing to
            learn, which keeps the optimum at one request a delay plus margin.

The first pass goes in page-number order, or in BENCH_FRESH_SIM_ORDERS orders (default 1:
that one; more: random ones too, seeded), whose mean and range it reports: early estimates
amplify small differences, so one order (or one crawl) is one draw, and a change to the policy
must beat that spread (about a point over seven orders in minutes 5-15).

Freshness is judged as `testweb/freshness.py` judges a crawl, over each window of
BENCH_FRESH_SIM_WINDOWS (default `300-900,300-3600,1800-3600`, seconds from the web's start),
against the optimum knowing the true rates at one request a delay. Left out: the home page,
robots.txt and the articles of news hosts, which take a crawl's capacity too, and the
dispatch's own delays. Writes var/bench/freshness_sim.json.
"""

from __future__ import annotations

import heapq
import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from bench.crawlers import ROOT
from bench.freshness import RECRAWL_DEFAULTS, web_spec
from crawlapp.core.freshness import (
    SOLVE_SECONDS,
    Best,
    ChangeRecord,
    HostPlan,
    HostRates,
    Planning,
    Visit,
    best_interval,
    bucket_of,
    count_visit,
    kind_of,
    observe,
    sums_of,
)
from crawlapp.core.recrawl import HOUR, refresh_interval
from crawlapp.core.settings import Settings, load_settings
from testweb.changing import ChangingWeb, sitemap_hosts
from testweb.freshness import expected_freshness, instants, optimal_rates, visited_fresh

RESULTS = ROOT / "var" / "bench" / "freshness_sim.json"
STEP = 2.0  # seconds between the instants freshness is judged at
KIND = kind_of("/p/0.html")  # the regular pages' (testweb/changing.py)


def visits(web: ChangingWeb, host: int, settings: Settings, until: float, *,
           true_rates: bool, order: Sequence[int] | None = None) -> list[list[float]]:
    """When the policy visits each regular page of `host`, up to `until` (module docstring),
    its first pass in `order` (page numbers by default)."""
    changes, rates = web.schedule.changes[host], web.schedule.rates[host]
    last_modified = "Last-Modified" in web.validators(host)
    delay = web.delay_for(web.netloc(host), settings.default_delay) + settings.delay_margin
    bounds = settings.recrawl_bounds
    planning = Planning(bounds.low, bounds.high, bounds.first, settings.recrawl_share, delay)
    records = [ChangeRecord() for _ in changes]
    sums: dict[str, float] = {}  # the host's, as the store stage keeps them
    if true_rates:  # nothing to learn: every page in its bucket from the start, its host informed
        records = [ChangeRecord(bucket=bucket_of(max(float(rate), 1e-10))) for rate in rates]
        sums = sums_of((record, KIND) for record in records)
        sums["t"] = sums["n"] * HOUR
        sums["c"] = float(np.sum(rates)) * HOUR
    seen: list[list[float]] = [[] for _ in changes]
    versions = [0] * len(changes)
    queued: list[tuple[float, int]] = []  # planned re-crawls: (queued at, page)
    due: list[tuple[float, int]] = []  # queued re-crawls: (due at, page)
    solved: dict[str, float] = {}  # the host's multiplier and when it was solved
    first_pass = list(range(len(changes))) if order is None else list(order)
    discovered, at = 0, 0.0

    def plan_now(kept_for: float = SOLVE_SECONDS) -> HostPlan:
        nonlocal solved
        host_rates = HostRates.parse({**sums, "d": delay, **solved})
        multiplier, fresh = planning.multiplier(host_rates, len(changes), at, kept_for)
        if fresh:
            solved = {"mu": multiplier, "mu_at": at}
        return planning.host_plan(host_rates, multiplier)

    def best(page: int, record: ChangeRecord, plan: HostPlan) -> Best:
        if not true_rates:
            return best_interval(record, plan, bounds, 1, KIND, False)
        rate = max(float(rates[page]), 1e-10)
        return Best(rate, 0.0, 1.0, refresh_interval(plan.interval(rate, 1.0, 0.0), record.seen,
                                                     plan.informed, bounds))

    while (at := at + delay) <= until:
        while queued and queued[0][0] <= at:  # the drain: due as the host's plan has it now
            _, page = heapq.heappop(queued)
            plan = plan_now(math.inf)  # the drain takes the multiplier kept
            heapq.heappush(due, (seen[page][-1] + best(page, records[page], plan).interval, page))
        if discovered < len(changes):  # new URLs first: each page in turn
            page, discovered = first_pass[discovered], discovered + 1
        elif due:
            page = heapq.heappop(due)[1]
        else:  # nothing queued: the host waits for its next re-crawl
            at = max(at, queued[0][0] - delay) if queued else until
            continue
        version = int(np.searchsorted(changes[page], at, side="right"))
        previous = seen[page][-1] if seen[page] else None
        modified = (math.floor(changes[page][version - 1]) if version else 0.0) \
            if last_modified else None
        changed = previous is None or version != versions[page]
        record = observe(records[page], Visit(at, previous, changed, modified, False))
        planned = best(page, record, plan_now())
        bucket = bucket_of(planned.rate)
        count_visit(sums, records[page], bucket, 0.0, 0.0, changed,
                    at - previous if previous is not None else 0.0, KIND)
        records[page] = record._replace(bucket=bucket)
        seen[page].append(at)
        versions[page] = version
        heapq.heappush(queued, (at + bounds.queue_after(planned.interval), page))
    return seen


@dataclass(frozen=True)
class Window:
    start: float
    end: float
    learned: float  # mean share of fresh pages, hosts without a sitemap (mean over orders)
    learned_low: float  # the lowest and highest of the orders
    learned_high: float
    true: float
    optimum: float  # expected, knowing the true rates, one request a delay

    @property
    def learned_of_optimum(self) -> float:
        return self.learned / self.optimum


def simulate(web: ChangingWeb, settings: Settings, start: float, end: float,
             orders: int = 1) -> Window:
    """The window's shares; the learned one over `orders` first passes: page numbers, then
    random orders (seeded). Early estimates amplify small differences, so one order is one
    draw: the spread over orders is what a change to the policy must beat."""
    times = instants(start, end, STEP)
    hosts = sorted(set(range(web.spec.hosts)) - set(sitemap_hosts(web.spec)))
    learned: list[float] = []
    for k in range(orders):
        rng = np.random.default_rng(k)
        shares = []
        for host in hosts:
            changes = web.schedule.changes[host]
            order = None if k == 0 else rng.permutation(len(changes)).tolist()
            seen = visits(web, host, settings, end, true_rates=False, order=order)
            shares += [float(visited_fresh(page, np.array(at), times).mean())
                       for page, at in zip(changes, seen, strict=True)]
        learned.append(float(np.mean(shares)))
    true, optimum = [], []
    for host in hosts:
        changes, rates = web.schedule.changes[host], web.schedule.rates[host]
        seen = visits(web, host, settings, end, true_rates=True)
        true += [float(visited_fresh(page, np.array(at), times).mean())
                 for page, at in zip(changes, seen, strict=True)]
        capacity = 1.0 / web.delay_for(web.netloc(host), settings.default_delay)
        optimum += expected_freshness(rates, optimal_rates(rates, capacity)).tolist()
    return Window(start, end, float(np.mean(learned)), min(learned), max(learned),
                  float(np.mean(true)), float(np.mean(optimum)))


def windows(env: Mapping[str, str]) -> list[tuple[float, float]]:
    raw = env.get("BENCH_FRESH_SIM_WINDOWS", "300-900,300-3600,1800-3600")
    return [(float(a), float(b)) for a, b in (part.split("-") for part in raw.split(","))]


def main() -> None:
    env = {**RECRAWL_DEFAULTS, **os.environ}
    settings = load_settings(env)
    spans = windows(env)
    web = ChangingWeb(web_spec(env, max(end for _, end in spans)))
    orders = int(env.get("BENCH_FRESH_SIM_ORDERS", "1"))
    print(f"| window (s) | learned ({orders} first-pass orders: mean, range) | true rates | "
          "optimum, 1/delay | learned / optimum (mean, range) |")
    print("|---|---|---|---|---|")
    results = []
    for start, end in spans:
        window = simulate(web, settings, start, end, orders)
        results.append({**asdict(window), "learned_of_optimum": window.learned_of_optimum})
        low, high = window.learned_low / window.optimum, window.learned_high / window.optimum
        print(f"| {start:.0f}-{end:.0f} | {window.learned:.3f} ({window.learned_low:.3f}-"
              f"{window.learned_high:.3f}) | {window.true:.3f} | {window.optimum:.3f} | "
              f"{window.learned_of_optimum:.3f} ({low:.3f}-{high:.3f}) |", flush=True)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
