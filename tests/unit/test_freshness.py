"""The re-crawl policy's estimator and allocation (core/freshness.py), against simulated
Poisson changes and the Lagrangian optimum computed directly."""

import math
import random

import numpy as np
import pytest

from crawlapp.core.freshness import (
    BUCKETS,
    HUB_MOST,
    HUB_POLL,
    HUB_SHARE,
    HUBS_SHARE,
    PRICE,
    ChangeRecord,
    HostRates,
    Planning,
    Visit,
    bucket_of,
    bucket_rate,
    count_visit,
    expected_freshness,
    http_time,
    importance,
    kind_of,
    links_digest,
    mean_importance,
    observe,
    refresh_budget,
    solve_multiplier,
    sums_of,
    visit_rate,
    visit_rates,
)


def _visits(rate: float, intervals: list[float], rng: random.Random,
            with_last_modified: bool) -> ChangeRecord:
    """The record of visits at `intervals` to a page changing as a Poisson process of `rate`
    (with Last-Modified: the time of its last change)."""
    horizon = sum(intervals)
    changes, t = [], -rng.expovariate(rate)
    while t <= horizon:
        changes.append(t)
        t += rng.expovariate(rate)
    record, now, previous, seen = ChangeRecord(), 0.0, None, 0
    for interval in [0.0, *intervals]:
        now += interval
        before = seen
        while seen < len(changes) and changes[seen] <= now:
            seen += 1
        modified = changes[seen - 1] if with_last_modified and seen else None
        record = observe(record, Visit(now, previous, previous is not None and seen > before,
                                       modified, False))
        previous = now
    return record


@pytest.mark.parametrize("with_last_modified", [False, True])
@pytest.mark.parametrize("true_rate", [1 / 30, 1 / 300, 1 / 3000])
def test_the_estimate_finds_the_true_rate_from_irregular_visits(true_rate: float,
                                                                with_last_modified: bool) -> None:
    rng = random.Random(7)
    estimates = []
    for _ in range(40):
        intervals = [rng.uniform(30, 600) for _ in range(30)]
        record = _visits(true_rate, intervals, rng, with_last_modified)
        estimates.append(record.rate(1 / 120))
    median = sorted(estimates)[len(estimates) // 2]
    # Censored visits far apart tell little of a fast rate: within a factor of 2 there; a
    # slow page changes ~3 times in these visits: within 70 % (the prior, 1/120, pulls up);
    # within 35 % elsewhere.
    tolerance = (1.0 if true_rate > 1 / 300 and not with_last_modified
                 else 0.7 if true_rate < 1 / 1000 else 0.35)
    assert abs(math.log(median / true_rate)) < math.log1p(tolerance), (median, true_rate)


@pytest.mark.parametrize("true_rate", [1 / 30, 1 / 300, 1 / 3000])
def test_visits_a_sitemap_brings_about_find_the_true_rate_from_its_first_changes(
        true_rate: float) -> None:
    """A page visited only once a sitemap polled every 10 s tells of a change (then 0-30 s
    in its host's queue), its row keeping the first lastmod past its copy: with that first
    change the estimate finds the rate; taken as "changed since the last visit" (with its
    Last-Modified or without), each visit soon after a change makes it look several times
    faster than it is."""
    rng = random.Random(11)
    first_seen, without = [], []
    for _ in range(40):
        changes, t = [], 0.0
        while t < 40 / true_rate:
            t += rng.expovariate(true_rate)
            changes.append(t)
        record, plain, previous = ChangeRecord(), ChangeRecord(), 0.0
        record = plain = observe(record, Visit(0.0, None, False, None, False))
        for _ in range(30):
            after = [c for c in changes if c > previous]
            if not after:
                break
            poll = math.ceil(after[0] / 10) * 10
            first = max(c for c in changes if c <= poll)
            at = poll + rng.uniform(0, 30)
            modified = max(c for c in changes if c <= at)
            record = observe(record, Visit(at, previous, True, modified, False, first))
            plain = observe(plain, Visit(at, previous, True, modified, False))
            previous = at
        first_seen.append(record.rate(1 / 120))
        without.append(plain.rate(1 / 120))
    median = sorted(first_seen)[len(first_seen) // 2]
    assert abs(math.log(median / true_rate)) < math.log1p(0.35), (median, true_rate)
    if true_rate < 1 / 30:
        assert sorted(without)[len(without) // 2] > 2 * true_rate


def test_a_page_that_never_changes_backs_off_and_one_visit_decides_nothing() -> None:
    record = ChangeRecord()
    record = observe(record, Visit(0.0, None, False, None, False))
    assert record.rate(1 / 120) == pytest.approx(1 / 120)  # the prior alone
    for i in range(1, 20):
        record = observe(record, Visit(i * 600.0, (i - 1) * 600.0, False, None, False))
    assert record.rate(1 / 120) < 1 / 5000
    changed = observe(ChangeRecord(), Visit(100.0, 0.0, True, None, False))
    assert 0 < changed.rate(1 / 120) < 10  # finite: the prior smooths one change


def test_a_visit_stored_twice_is_counted_once_and_a_first_visit_learns_its_age() -> None:
    record = observe(ChangeRecord(), Visit(50.0, None, False, 20.0, False))
    assert record.exposure == 30.0
    assert observe(record, Visit(50.0, 50.0, True, None, True)) == record


def test_the_record_packs_into_its_row_and_a_foreign_layout_is_a_new_record() -> None:
    record = observe(ChangeRecord(), Visit(300.0, 100.0, True, 250.0, True))
    assert record.changes == 1 and record.exposure == 50.0 and record.link_changes == 1
    assert (record.changed_after, record.changed_by) == (100.0, 300.0)
    assert ChangeRecord.unpack(record.pack()) == record
    assert len(record.pack()) == 54
    assert ChangeRecord.unpack(None) == ChangeRecord.unpack(b"junk") == ChangeRecord()


def _optimum(rates: np.ndarray, budget: float) -> float:
    """Freshness of the Lagrangian optimum, mu by bisection on the exact rates."""
    lo, hi = -40.0, 40.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if visit_rates(rates, math.exp(mid)).sum() > budget:
            lo = mid
        else:
            hi = mid
    visits = visit_rates(rates, math.exp(hi))
    return float(np.mean([expected_freshness(r, v) for r, v in zip(rates, visits, strict=True)]))


def test_the_multiplier_from_the_histogram_reaches_the_optimum_of_the_true_rates() -> None:
    rng = np.random.default_rng(3)
    rates = np.concatenate([1 / np.exp(rng.uniform(math.log(20), math.log(3600), 160)),
                            np.full(40, 1e-9)])
    budget = 0.9
    counts: dict[int, float] = {}
    for rate in rates:
        counts[bucket_of(rate)] = counts.get(bucket_of(rate), 0) + 1
    mu = solve_multiplier(counts, budget, 1e-3, 1e9)
    visits = visit_rates(rates, mu)
    assert visits.sum() == pytest.approx(budget, rel=0.1)
    ours = np.mean([expected_freshness(r, v) for r, v in zip(rates, visits, strict=True)])
    assert ours >= 0.99 * _optimum(rates, budget)
    assert visits[rates > 1 / 25].max() == 0  # too fast to chase
    assert np.all(visits[-40:] < visits[:160][visits[:160] > 0].min())  # static: least


def test_round_robin_is_worse_than_the_allocation() -> None:
    rates = np.array([1 / 20] * 50 + [1 / 600] * 100 + [1e-9] * 50)
    budget = 1.0
    uniform = np.mean([expected_freshness(r, budget / len(rates)) for r in rates])
    assert _optimum(rates, budget) > uniform + 0.02


def test_the_multiplier_is_zero_with_capacity_to_spare_and_honours_the_bounds() -> None:
    assert solve_multiplier({bucket_of(1 / 60): 10}, 10.0, 5, 7200) == 0.0
    assert solve_multiplier({}, 1.0, 5, 7200) == 0.0
    assert solve_multiplier({bucket_of(1e-3): 100_000}, 1.0, 5, 7200) == pytest.approx(
        1 / bucket_rate(bucket_of(1e-3)))  # not even the maximum interval fits


def test_a_host_plan_spends_its_price_and_visits_hubs_for_their_links() -> None:
    planning = Planning(5, 7200, 120, 0.9, 1.0)
    plan = planning.host_plan(HostRates({}), 0.0)
    assert plan.multiplier == pytest.approx(PRICE * 120)
    # a page of the prior rate: about twice per first interval
    assert plan.interval(1 / 120, 1.0, 0.0) == pytest.approx(60, rel=0.05)
    assert plan.interval(1.0, 1.0, 0.0) == math.inf  # changes every second: not chased
    assert plan.interval(1.0, 1.0, 1 / 60) == pytest.approx(20)  # ...but a hub
    assert plan.interval(1.0, 1.0, 1 / 300) == pytest.approx(HUB_POLL)  # every 20 s...
    assert plan.interval(1.0, 1.0, 1 / 3600) == pytest.approx(3600 / HUB_MOST)  # ...or 20 a change
    assert plan.interval(1.0, 1.0, 1 / 86400) == pytest.approx(86400 / HUB_MOST)
    # a sitemap whose lastmods move at every visit: HUB_SHARE of its host's capacity
    assert plan.interval(1.0, 1.0, 1.0) == pytest.approx(1 / HUB_SHARE)
    slow_host = planning.host_plan(HostRates({}, delay=4.0), 0.0)
    assert slow_host.interval(1.0, 1.0, 1.0) == pytest.approx(4 / HUB_SHARE)
    assert plan.interval(1 / 600, 2.0, 0.0) < plan.interval(1 / 600, 1.0, 0.0)


def test_a_hosts_hubs_together_take_a_quarter_of_its_capacity_at_most() -> None:
    """Twenty pages whose links change at every visit (a "random posts" block) each claim a
    tenth of their host's capacity: together they get a quarter of it, shared in proportion,
    and the host's re-crawls keep what their share leaves beside that quarter."""
    planning = Planning(5, 7200, 120, 0.9, 1.0)
    claim = planning.host_plan(HostRates({}), 0.0).hub_claim(1.0)
    assert claim == pytest.approx(HUB_SHARE)
    crowded = planning.host_plan(HostRates({}, hubs=20 * claim), 0.0)
    assert crowded.hub_claim(1.0) == pytest.approx(claim)  # what the sums count: the claim
    assert 20 * crowded.hub_visits(1.0) == pytest.approx(HUBS_SHARE)
    assert crowded.interval(1.0, 1.0, 1.0) == pytest.approx(20 / HUBS_SHARE)
    assert crowded.hub_visits(1 / 60) == pytest.approx(3 / 60 * HUBS_SHARE / (20 * claim))
    # one news site's home page (an article a minute) claims less than a quarter: all of it
    single = planning.host_plan(HostRates({}, hubs=3 / 60), 0.0)
    assert single.interval(1.0, 1.0, 1 / 60) == pytest.approx(20)
    sums = HostRates({bucket_of(1 / 120): 200}, pages=200)
    budget = {hubs: solve_multiplier(sums.buckets, refresh_budget(1.0, 0.9, hubs), 5, 7200)
              for hubs in (0.0, HUBS_SHARE, 20 * claim)}
    assert budget[HUBS_SHARE] == budget[20 * claim] > budget[0.0]  # hubs take a quarter, no more


def test_the_host_multiplier_counts_unseen_pages_and_keeps_discoverys_share() -> None:
    planning = Planning(5, 7200, 120, 0.5, 1.0)
    sums = HostRates({bucket_of(1 / 120): 100}, pages=100)
    alone, solved = planning.multiplier(sums, 100, now=1000.0)
    crowded, _ = planning.multiplier(sums, 1000, now=1000.0)
    assert solved and crowded > alone > 0
    kept = HostRates(sums.buckets, pages=100, multiplier=3.0, solved_at=995.0)
    assert planning.multiplier(kept, 100, now=1000.0) == (3.0, False)
    old = HostRates(sums.buckets, pages=100, multiplier=3.0, solved_at=900.0)
    assert planning.multiplier(old, 100, now=1000.0) == (alone, True)  # older than 10 s
    assert planning.multiplier(old, 100, now=1000.0, kept_for=math.inf) == (3.0, False)


def test_buckets_cover_every_rate() -> None:
    assert bucket_of(0.0) == 0 and bucket_of(1e6) == BUCKETS - 1
    for rate in (1e-8, 1 / 3600, 1 / 20, 1.0):
        assert bucket_rate(bucket_of(rate)) == pytest.approx(rate, rel=0.5)


def test_links_digest_and_http_time() -> None:
    assert links_digest(["b", "a", "a"]) == links_digest(["a", "b"]) != links_digest(["a"])
    assert http_time("Wed, 21 Oct 2015 07:28:00 GMT") == 1445412480.0
    assert http_time("yesterday") is None and http_time(None) is None


def test_one_page_s_visit_rate_is_the_vectors() -> None:
    rates = np.logspace(-9, 1, 400)
    for mu in (0.0, 1e-3, 2.5, 31.7, 1e4):
        one = np.array([visit_rate(r, mu) for r in rates])
        assert np.allclose(one, visit_rates(rates, mu), rtol=1e-6), mu




def test_a_pages_kind_is_its_paths_first_segment() -> None:
    assert kind_of("http://h.test/a/1.html") == kind_of("https://h.test:8443/a/9.html?x=/p/")
    assert kind_of("http://h.test/index.html") == kind_of("http://h.test/") == kind_of(
        "http://h.test") == kind_of("http://h.test/?p=/a/b")
    kinds = {kind_of(f"http://h.test/{segment}/x") for segment in ("a", "p", "news", "static")}
    assert len(kinds) == 4  # these four fall in slots of their own


def test_a_page_without_history_starts_from_what_its_kind_showed() -> None:
    """A host whose articles (/a/) never changed in an hour and whose index pages (/p/)
    changed every minute: a new article is planned from the articles' rate, a new index page
    from the index pages', each pulled a little towards the host's."""
    article, index = kind_of("http://h.test/a/1.html"), kind_of("http://h.test/p/1.html")
    sums: dict[str, float] = {}
    before = ChangeRecord(bucket=bucket_of(1 / 600))
    for _ in range(60):
        count_visit(sums, before, before.bucket, 0.0, 0.5, False, 60.0, article)
        count_visit(sums, before, before.bucket, 0.0, 0.5, True, 60.0, index)
    rates = HostRates.parse(sums)
    assert rates.kinds[article] == (0.0, 3600.0) and rates.kinds[index] == (60.0, 3600.0)
    plan = Planning(5, 7200, 120, 1.0, 1.0).host_plan(rates, 0.0)
    assert plan.prior == pytest.approx(60.3 / 7236, rel=1e-6)  # the host's, both kinds
    assert plan.prior_of(article) < plan.prior / 50
    assert plan.prior_of(index) == pytest.approx(1 / 60, rel=0.01)
    assert plan.prior_of(kind_of("http://h.test/new/1.html")) == pytest.approx(plan.prior)
    # a rebuild sums the kinds again from the records
    rebuilt = sums_of([(ChangeRecord(exposure=3600.0, bucket=3), article),
                       (ChangeRecord(censored=60.0, censored_time=3600.0, bucket=9), index)])
    assert HostRates.parse(rebuilt).kinds == rates.kinds


def test_a_host_of_authority_plans_its_pages_within_its_capacity_all_the_same() -> None:
    """Its pages weigh more against other hosts', not more than its capacity: the visits
    its plan gives them sum to its budget whatever its authority."""
    planning = Planning(5, 7200, 120, 1.0, 1.0)
    rng = random.Random(3)
    rates = [math.exp(rng.uniform(math.log(1 / 3600), math.log(1 / 20))) for _ in range(200)]
    for authority in (0.0, 0.5, 1.0):
        weight = importance(authority)
        sums = HostRates({}, pages=200.0, delay=1.0)
        for rate in rates:
            bucket = bucket_of(rate / weight)
            sums.buckets[bucket] = sums.buckets.get(bucket, 0.0) + 1
        multiplier, _ = planning.multiplier(sums, 200, now=0.0, importance=weight)
        plan = planning.host_plan(sums, multiplier, authority)
        visits = sum(1 / plan.interval(bucket_rate(bucket_of(r / weight)) * weight, weight, 0.0)
                     for r in rates)
        assert visits == pytest.approx(1.0, rel=0.02)


def test_the_fleet_budget_is_solved_at_its_pages_mean_importance() -> None:
    """Two hosts of 100 pages each, of authority 1 and 0: their pages are visited 2 and 1
    times as often as the fleet's histogram counts them, 1.5 on average."""
    assert mean_importance({"a.test": 1.0}, {"a.test": 100, "b.test": 100}) == 1.5
    assert mean_importance({}, {}) == 1.0
    planning = Planning(5, 7200, 120, 1.0, 1.0)
    rng = random.Random(5)
    rates = {host: [math.exp(rng.uniform(math.log(1 / 3600), math.log(1 / 20)))
                    for _ in range(100)] for host in ("a.test", "b.test")}
    weights = {"a.test": importance(1.0), "b.test": importance(0.0)}
    fleet: dict[str, float] = {"wi": 1.5}
    for host, host_rates in rates.items():
        for rate in host_rates:
            key = f"b{bucket_of(rate / weights[host])}"
            fleet[key] = fleet.get(key, 0.0) + 1
    multiplier = planning.fleet_multiplier(HostRates.parse(fleet), 0.5)
    visits = sum(visit_rate(bucket_rate(bucket_of(rate / weights[host])), multiplier)
                 * weights[host] for host, host_rates in rates.items() for rate in host_rates)
    assert visits == pytest.approx(0.5, rel=0.1)  # the mean stands for each host's
