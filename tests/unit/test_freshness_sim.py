"""The re-crawl policy simulated on the changing web (bench/freshness_sim.py)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from bench.freshness import RECRAWL_DEFAULTS, web_spec
from bench.freshness_sim import simulate, visits
from crawlapp.core.settings import load_settings
from testweb.changing import ChangingSpec, ChangingWeb

SETTINGS = load_settings(RECRAWL_DEFAULTS)
WEB = ChangingWeb(ChangingSpec(hosts=2, pages_per_host=30, seed=3, duration=600, news_hosts=0,
                               sitemap_hosts=0))


def test_a_host_is_visited_one_page_a_delay_new_pages_first() -> None:
    delay = SETTINGS.default_delay + SETTINGS.delay_margin
    seen = visits(WEB, 0, SETTINGS, 600.0, true_rates=False)
    times = np.sort(np.concatenate([np.array(at) for at in seen]))
    assert np.diff(times).min() >= delay - 1e-9
    assert [at[0] for at in seen] == sorted(at[0] for at in seen)  # discovery in turn
    assert times[len(seen) - 1] == max(at[0] for at in seen)  # ... before any re-crawl
    assert len(times) > 2 * len(seen)  # and re-crawls after


def test_pages_that_never_change_wait_the_maximum_once_their_rate_is_known() -> None:
    rates = WEB.schedule.rates[1]
    seen = visits(WEB, 1, SETTINGS, 600.0, true_rates=True)
    static = [at for at, rate in zip(seen, rates, strict=True) if rate == 0]
    assert static and all(len(at) == 1 for at in static)
    changing = [at for at, rate in zip(seen, rates, strict=True) if rate > 1 / 600]
    assert max(len(at) for at in changing) > 2


def test_knowing_the_rates_keeps_the_web_fresher_than_learning_them() -> None:
    window = simulate(WEB, SETTINGS, 120.0, 600.0)
    assert 0 < window.learned < window.true <= 1
    assert 0 < window.optimum <= 1


def test_the_first_pass_goes_in_the_order_given_and_orders_give_a_range() -> None:
    order = list(range(29, -1, -1))
    seen = visits(WEB, 0, SETTINGS, 600.0, true_rates=False, order=order)
    firsts = sorted(range(30), key=lambda page: seen[page][0])
    assert firsts == order
    window = simulate(WEB, SETTINGS, 120.0, 600.0, orders=3)
    assert window.learned_low <= window.learned <= window.learned_high
    assert window.learned_low < window.learned_high  # the orders are different draws


def test_the_web_of_the_environment_and_a_hosts_crawl_delay() -> None:
    spec = web_spec({"BENCH_FRESH_HOSTS": "4", "BENCH_FRESH_PAGES": "30",
                     "BENCH_FRESH_WEB": "crawl_delay_every=2, crawl_delay=3,min_interval=60"}, 600)
    assert (spec.hosts, spec.pages_per_host, spec.news_hosts, spec.sitemap_hosts) == (4, 30, 1, 1)
    assert (spec.crawl_delay_every, spec.crawl_delay, spec.min_interval) == (2, 3.0, 60.0)
    for wrong in ("seed=3", "colour=blue", "crawl_delay=soon", "min_interval=0"):
        with pytest.raises(SystemExit, match="BENCH_FRESH_WEB"):
            web_spec({"BENCH_FRESH_WEB": wrong}, 600)
    web = ChangingWeb(replace(spec, news_hosts=0, sitemap_hosts=0))
    slow = web.delay_for(web.netloc(1), SETTINGS.default_delay) + SETTINGS.delay_margin
    assert slow == 3.0 + SETTINGS.delay_margin  # host 1 has "Crawl-delay: 3"
    seen = visits(web, 1, SETTINGS, 300.0, true_rates=False)
    times = np.sort(np.concatenate([np.array(at) for at in seen]))
    assert np.diff(times).min() >= slow - 1e-9
