"""End to end: `crawlctl crawl --scope` keeps a crawl of two sites, which link to many other
hosts, on those sites (host), their subdomains too (domain), or one hop off them
(CRAWL_SCOPE_HOPS=1). What was fetched is judged from the test web's request log; the links
refused are counted by reason in `crawlctl stats --json` and the Prometheus metrics.

The sites are named hosts (`site1.test`, `docs.site1.test`, ...) served on the test web's
loopback addresses: the crawl's shared DNS cache is given their addresses before it starts.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import redis

from crawlapp.adapters.context import Context
from crawlapp.adapters.redis import keys
from crawlapp.adapters.redis.dnscache import Resolution
from crawlapp.core.settings import load_settings
from crawlapp.observe.metrics import CrawlCollector
from tests.conftest import crawl_env
from tests.e2e.helpers import crawl_web, crawlctl
from testweb.serverlog import Request
from testweb.site import Web, WebSpec

pytestmark = pytest.mark.e2e
NAMES = ("site1.test", "docs.site1.test", "site2.test", "www.site2.test")
SPEC = WebSpec(hosts=30, pages_per_host=15, port=0, crawl_delay_every=0, names=NAMES)
SITES = (0, 2)  # the seeds' hosts; 1 and 3 are their subdomains, 4..29 other hosts
EXCLUDE = r"re:/p/5\.html$"


def resolve_names(env: dict[str, str]):  # type: ignore[no-untyped-def]
    """A `before` for crawl_web: the web's host names into the crawl's DNS cache."""
    settings = load_settings(env)

    def before(web: Web) -> None:
        client = redis.Redis.from_url(settings.redis_url)
        for name, address in web.name_addresses().items():
            client.set(keys.DNS.of(settings.redis_prefix, host=name),
                       Resolution((address,)).encode(), px=3_600_000)
    return before


def site_seeds(web: Web) -> list[str]:
    return [web.base_url(i) + "/" for i in SITES]


def crawl(tmp_path: Path, redis_url: str, scope: str, **settings: str
          ) -> tuple[Web, list[Request], dict[str, int], dict[str, float]]:
    """Crawl the two sites with `--scope scope`; the web, the request log, the links refused
    by reason (stats --json) and crawl_links_refused by reason (metrics)."""
    env = crawl_env(tmp_path, redis_url, CRAWL_DEFAULT_DELAY="0.2", **settings)
    web, requests, out = crawl_web(tmp_path, env, SPEC, seeds_of=site_seeds,
                                   before=resolve_names(env), args=("--scope", scope))
    stats = json.loads(crawlctl(env, "stats", "--json").stdout)
    metrics = {sample.labels["reason"]: sample.value
               for family in CrawlCollector(Context(load_settings(env)), False).collect()
               if family.name == "crawl_links_refused" for sample in family.samples}
    return web, requests, stats["refused_links"], metrics


def hosts_fetched(web: Web, requests: list[Request]) -> set[int]:
    return {i for r in requests if (i := web.host_index(r.host)) is not None}


def named(web: Web, r: Request) -> str:
    """The URL of a logged request as the web's links spell it (by name)."""
    i = web.host_index(r.host)
    assert i is not None
    return web.base_url(i) + r.path


def refusals(web: Web, requests: list[Request], in_scope: set[int]) -> Counter[str]:
    """The scope refusals the links of the pages fetched call for: an excluded URL (wherever
    it is), a link to a host out of scope."""
    counts: Counter[str] = Counter()
    for r in requests:
        if r.status != 200 or r.path == "/robots.txt":
            continue
        for link in web.outlinks(named(web, r)) or []:
            if link.endswith("/p/5.html"):
                counts["excluded"] += 1
            elif web.host_index(urlsplit(link).netloc) not in in_scope:
                counts["out_of_scope"] += 1
    return counts


def test_scope_host_fetches_only_the_seeds_hosts(tmp_path: Path, redis_url: str) -> None:
    web, requests, refused, metrics = crawl(tmp_path, redis_url, "host",
                                            CRAWL_SCOPE_EXCLUDE=EXCLUDE)
    assert hosts_fetched(web, requests) == set(SITES)
    assert not [r for r in requests if r.path.endswith("/p/5.html")]
    fetched = {r.path for r in requests if r.status == 200}
    assert {"/", "/p/0.html", "/p/4.html"} <= fetched
    expected = refusals(web, requests, set(SITES))
    assert expected["out_of_scope"] > 10 and expected["excluded"] > 0
    assert {k: refused.get(k, 0) for k in expected} == dict(expected)
    assert {k: metrics.get(k, 0) for k in expected} == dict(expected)
    print(f"scope host: hosts fetched {sorted(NAMES[i] for i in hosts_fetched(web, requests))}, "
          f"{len(requests)} requests, refused {refused}")


def test_scope_domain_takes_the_subdomains(tmp_path: Path, redis_url: str) -> None:
    web, requests, refused, metrics = crawl(tmp_path, redis_url, "domain")
    sites = {0, 1, 2, 3}
    assert hosts_fetched(web, requests) == sites
    expected = refusals(web, requests, sites)
    assert expected["out_of_scope"] > 10
    assert refused.get("out_of_scope") == metrics.get("out_of_scope") == expected["out_of_scope"]
    print(f"scope domain: hosts fetched {sorted(NAMES[i] for i in hosts_fetched(web, requests))}"
          f", {len(requests)} requests, refused {refused}")


def test_one_hop_off_scope(tmp_path: Path, redis_url: str) -> None:
    web, requests, refused, _ = crawl(tmp_path, redis_url, "host", CRAWL_SCOPE_HOPS="1")
    linked_from_sites = {link for r in requests if web.host_index(r.host) in SITES
                         and r.status == 200 and r.path != "/robots.txt"
                         for link in web.outlinks(named(web, r)) or []}
    off_site = [r for r in requests if web.host_index(r.host) not in SITES
                and r.path != "/robots.txt"]
    assert off_site, "the pages the sites link to are fetched"
    assert {named(web, r) for r in off_site} <= linked_from_sites  # and nothing beyond them
    assert refused["out_of_scope"] > 0
    print(f"scope host, 1 hop: {len(hosts_fetched(web, requests))} hosts, {len(off_site)} "
          f"off-site pages, refused {refused}")


def test_bad_scope_arguments_change_nothing(tmp_path: Path, redis_url: str) -> None:
    env = crawl_env(tmp_path, redis_url)
    bad = crawlctl(env, "seed", "add", "http://site1.test/", "--scope", "site")
    assert bad.returncode == 2 and "'site' is not one of" in bad.stderr
    alone = crawlctl(env, "crawl", "--scope", "host", "--until-idle")
    assert alone.returncode == 2 and "--scope applies to the seeds of --seeds FILE" in alone.stderr
    setting = crawlctl({**env, "CRAWL_SCOPE": "site"}, "seed", "add", "http://site1.test/")
    assert setting.returncode == 2 and "CRAWL_SCOPE='site'" in setting.stderr
    assert not (tmp_path / "var" / "crawl.db").exists()
