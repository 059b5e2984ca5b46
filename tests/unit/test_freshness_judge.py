"""The freshness judge (testweb/freshness.py) on hand-made logs with known answers, and its
baselines: the optimum against closed forms, round robin simulated against its expectation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from testweb.changing import ChangingSpec, ChangingWeb
from testweb.freshness import (
    achieved_capacity,
    baselines,
    discovery,
    expected_freshness,
    g_inverse,
    informed_visits,
    instants,
    judge,
    nominal_capacity,
    optimal_rates,
    periodic_visits,
    round_robin_fresh,
    visited_fresh,
)
from testweb.serverlog import Request

T0 = 1_700_000_000.0
# Three pages, each changing about every 30 s; no articles, no sitemap.
THREE = ChangingSpec(hosts=1, pages_per_host=3, port=8080, duration=300, static_fraction=0.0,
                     min_interval=30.0, max_interval=30.0, news_hosts=0, sitemap_hosts=0)


def _get(web: ChangingWeb, path: str, at: float, status: int = 200, took: float = 0.1,
         host: int = 0, aborted: bool = False) -> Request:
    """A request for `path` started `at` seconds after t0, answered with the version then."""
    return Request(web.netloc(host), path, T0 + at, T0 + at + took, status, aborted=aborted,
                   ver=web.version(host, path, at))


def _known(value: float | None) -> float:
    assert value is not None
    return value


@pytest.fixture(scope="module")
def three() -> ChangingWeb:
    return ChangingWeb(THREE, T0)


def test_instants() -> None:
    assert list(instants(10, 16, 2)) == [10, 12, 14, 16]
    assert list(instants(10, 15, 2)) == [10, 12, 14]


def test_fetched_after_each_change_is_fresh_never_fetched_is_stale(three: ChangingWeb) -> None:
    changes = three.schedule.changes[0]
    assert all(len(c) >= 3 for c in changes)
    log = [_get(three, "/p/0.html", at) for at in [0.0, *changes[0]]]  # right after each change
    log.append(_get(three, "/p/2.html", 0.0))  # once, then only 304s to its first validators
    first_change = changes[2][0]
    log += [_get(three, "/p/2.html", at, status=304) for at in np.arange(5.0, 300, 10)]
    verdict = judge(three, log, T0, 1, 300, step=1)
    times = instants(1, 300, 1)
    page2 = np.mean(times < first_change)  # fresh until its first change only
    assert verdict.pages.overall == pytest.approx((1 + 0 + page2) / 3)
    assert verdict.pages.no_sitemap == verdict.pages.overall and verdict.pages.sitemap is None
    assert verdict.with_articles == verdict.pages  # no articles
    assert verdict.pages.per_host == {three.host_addr(0): verdict.pages.overall}
    assert verdict.discovery.articles == 0 and verdict.discovery.missed == 0
    assert verdict.requests == len(log) and verdict.disallowed == 0


def test_what_counts_as_the_copy(three: ChangingWeb) -> None:
    change = float(three.schedule.changes[0][0][0])
    second = float(three.schedule.changes[0][0][1])
    window = (change + 0.7, second - 0.2)  # between the first two changes of page 0
    times = instants(*window, step=0.1)

    def share(*log: Request) -> float:  # page 0's: the other two are never fetched
        return 3 * _known(judge(three, list(log), T0, *window, step=0.1).pages.overall)

    old = _get(three, "/p/0.html", 0.0)
    assert share(old) == 0.0  # version 0, changed since
    assert share(old, _get(three, "/p/0.html", change + 0.1, status=304)) == 0.0  # 304: still v0
    assert share(_get(three, "/p/0.html", change + 0.1)) == 1.0
    assert share(_get(three, "/p/0.html", change + 0.1, aborted=True)) == 0.0
    # an answer counts from the end of its response
    slow = _get(three, "/p/0.html", change + 0.1, took=times[len(times) // 2] - change - 0.1)
    assert share(slow) == pytest.approx(np.mean(times >= slow.end - T0), abs=0.02)
    # without `ver` (an older log) the version live as the request started counts
    unversioned = Request(three.netloc(0), "/p/0.html", T0 + change + 0.1, T0 + change + 0.2, 200)
    assert share(unversioned) == 1.0


def test_articles_and_discovery() -> None:
    spec = ChangingSpec(hosts=2, pages_per_host=2, port=8080, duration=600, news_hosts=1,
                        sitemap_hosts=1, article_interval=20.0)
    web = ChangingWeb(spec, T0)
    news = web.news_hosts[0]
    articles = [a for a in web.articles() if 100 <= a.born <= 400 - 30]
    assert len(articles) >= 6 and all(a.host == news for a in articles)
    delays = [1.0 + k for k in range(len(articles) - 1)]  # the last one is never asked for
    log = [_get(web, a.path, a.born + d, host=news) for a, d in zip(articles, delays, strict=False)]
    log.append(_get(web, articles[0].path, articles[0].born + 0.5, status=404, host=news))
    found = discovery(web, log, T0, 100, 400)
    assert (found.articles, found.missed) == (len(articles), 1)
    assert found.median == pytest.approx(np.median([0.5, *delays[1:]]))
    assert found.p90 == pytest.approx(np.percentile([0.5, *delays[1:]], 90))
    verdict = judge(web, log, T0, 100, 400)
    # with articles: those fetched (all but the last) are fresh from their fetch on
    assert verdict.pages.overall == 0.0 and _known(verdict.with_articles.overall) > 0.0
    assert _known(verdict.with_articles.per_host[web.host_addr(news)]) > 0.0
    nothing = discovery(web, [], T0, 100, 400)
    assert (nothing.median, nothing.missed) == (None, len(articles))


def test_politeness_from_the_log(three: ChangingWeb) -> None:
    log = [_get(three, "/robots.txt", 0.0), _get(three, "/p/0.html", 0.5),  # gap 0.4 < 1 s
           _get(three, "/p/1.html", 2.0, took=1.0), _get(three, "/p/2.html", 2.5),  # overlap
           _get(three, "/private/secret.html", 10.0)]
    verdict = judge(three, log, T0, 0, 20, delay=1.0)
    assert (verdict.overlaps, verdict.gaps, verdict.disallowed) == (1, 2, 1)
    assert verdict.window_requests == 5
    assert list(achieved_capacity(three, log, T0, 0, 20)) == [5 / 20]
    assert list(nominal_capacity(three, 2.0)) == [0.5]


def test_g_inverse_inverts_g() -> None:
    x = np.logspace(-2, 1.2, 200)  # where 1 - (1 + x) exp(-x) loses nothing to rounding
    y = 1 - (1 + x) * np.exp(-x)
    assert np.allclose(g_inverse(y), x, rtol=1e-9)
    small = np.logspace(-8, -3, 20)  # g by its series: x^2 / 2 - x^3 / 3 + x^4 / 8
    assert np.allclose(g_inverse(small**2 / 2 - small**3 / 3 + small**4 / 8), small, rtol=1e-9)
    tiny = np.array([1e-20, 1e-12])
    assert np.allclose(g_inverse(tiny), np.sqrt(2 * tiny), rtol=1e-6)  # g(x) ~ x^2 / 2


def test_expected_freshness() -> None:
    assert list(expected_freshness(np.array([0.0, 1.0, 1.0, 0.5]),
                                   np.array([0.0, 0.0, np.inf, 1.0]))) == [
        1.0, 0.0, 1.0, pytest.approx(2 * (1 - math.exp(-0.5)))]
    assert expected_freshness(np.array([1e-9]), np.array([1.0]))[0] == pytest.approx(1.0)


def test_optimum_closed_forms() -> None:
    # a page that never changes gets no visit: the other one all the capacity
    assert optimal_rates(np.array([0.0, 0.01]), 0.5) == pytest.approx([0.0, 0.5])
    # equal rates: an equal split
    assert optimal_rates(np.full(4, 0.02), 1.0) == pytest.approx(np.full(4, 0.25))
    assert optimal_rates(np.full(4, 0.02), 0.0).tolist() == [0.0] * 4
    assert optimal_rates(np.zeros(3), 1.0).tolist() == [0.0] * 3
    # a page changing far faster than the others when capacity is scarce is given up
    rates = np.array([10.0, 0.001, 0.002])
    visits = optimal_rates(rates, 0.01)
    assert visits[0] == 0.0 and visits.sum() == pytest.approx(0.01)


def test_optimum_beats_every_other_split() -> None:
    rates, capacity = np.array([0.05, 0.01]), 0.1
    best = optimal_rates(rates, capacity)
    assert best.sum() == pytest.approx(capacity)
    split = np.linspace(0, capacity, 10001)
    values = (expected_freshness(np.full_like(split, rates[0]), split)
              + expected_freshness(np.full_like(split, rates[1]), capacity - split))
    assert expected_freshness(rates, best).sum() == pytest.approx(values.max(), abs=1e-9)
    assert best[0] == pytest.approx(split[values.argmax()], abs=2e-5)
    # the optimality condition: dF/df = g(rate / f) / rate is the same for every page
    x = rates / best
    assert np.ptp((1 - (1 + x) * np.exp(-x)) / rates) < 1e-9


def _poisson(rng: np.random.Generator, rate: float, horizon: float) -> np.ndarray:
    count = rng.poisson(rate * horizon)
    return np.sort(rng.uniform(0, horizon, count))


def test_round_robin_and_optimum_simulated_against_their_expectation() -> None:
    rng = np.random.default_rng(5)
    pages, capacity, horizon = 300, 1.0, 30_000.0
    rates = np.exp(-rng.uniform(math.log(20), math.log(3600), pages))
    rates[rng.uniform(size=pages) < 0.2] = 0.0
    changes = [_poisson(rng, rate, horizon) for rate in rates]
    times = instants(2000, horizon, 5)
    simulated = round_robin_fresh(changes, capacity, times).mean()
    expected = expected_freshness(rates, np.full(pages, capacity / pages)).mean()
    assert simulated == pytest.approx(expected, abs=0.02)
    best = optimal_rates(rates, capacity)
    periods = np.divide(1.0, best, out=np.full(pages, np.inf), where=best > 0)
    phases = rng.uniform(size=pages) * np.where(best > 0, periods, 0)
    optimum = np.mean([visited_fresh(c, periodic_visits(p, t, horizon), times)
                       for c, p, t in zip(changes, phases, periods, strict=True)])
    assert optimum == pytest.approx(expected_freshness(rates, best).mean(), abs=0.02)
    assert optimum > simulated


def test_informed_policy_visits_changed_pages_lowest_rate_first() -> None:
    changes = [np.array([1.5, 2.5]), np.array([1.5]), np.array([])]
    rates = np.array([0.5, 0.01, 0.0])
    visits = informed_visits(changes, rates, capacity=1.0, until=5.0)
    # turn 2: both changed, the slower first; turn 3: page 0 (changed again at 2.5); no more
    assert [list(v) for v in visits] == [[3.0], [2.0], []]
    assert list(visited_fresh(changes[0], visits[0], np.array([1.0, 2.0, 2.7, 3.0]))) == [
        True, False, False, True]
    assert informed_visits(changes, rates, capacity=0.0, until=5.0)[0].size == 0


def test_baselines_of_a_web() -> None:
    spec = ChangingSpec(hosts=4, pages_per_host=30, port=8080, duration=900, news_hosts=1,
                        sitemap_hosts=2)
    web = ChangingWeb(spec, T0)
    capacity = nominal_capacity(web, 1.0) / 4
    result = baselines(web, capacity, 300, 900)
    for shares in (result.round_robin, result.optimum, result.optimum_expected,
                   result.informed, result.round_robin_expected):
        assert shares.overall is not None and 0 < shares.overall <= 1
        assert shares.sitemap is not None and shares.no_sitemap is not None
        assert set(shares.per_host) == {web.host_addr(i) for i in range(spec.hosts)}
    for host in shares.per_host:
        assert (_known(result.optimum_expected.per_host[host])
                >= _known(result.round_robin_expected.per_host[host]))
    assert _known(result.informed.overall) >= _known(result.optimum.overall)
    more = baselines(web, capacity * 4, 300, 900)
    assert _known(more.optimum_expected.overall) > _known(result.optimum_expected.overall)
