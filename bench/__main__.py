"""`make bench`: crawl generated webs with this crawler (embedded default; Postgres and S3) and
with Scrapy, and report medians of the runs on the terminal and in bench/results.json.

Settings (environment):
  BENCH_SIZES     webs as HOSTSxPAGES, comma-separated   (default 300x50,1000x10; quick: 100x10;
                  empty: none)
  BENCH_FEW       the few-hosts web as HOSTSxPAGES@DELAY (default 4x300@1; quick: 2x30@1;
                  empty: none): every host allows one request per DELAY seconds, no case hosts;
                  crawled once by each crawler after the rounds of BENCH_SIZES, outside the budget
  BENCH_TLS       the TLS regime's webs as HOSTSxPAGES (default 100x10; quick: 30x10; empty:
                  none): the plain web (no case hosts) crawled over plain HTTP (`http`), over
                  TLS with HTTP/1.1 (`https`) and with HTTP/2 (`h2`, this crawler only), in the
                  rounds with the webs of BENCH_SIZES
  BENCH_RUNS      runs of each web of BENCH_SIZES and BENCH_TLS and crawler (default 3; quick: 1)
  BENCH_CRAWLERS  of embedded, postgres-s3, scrapy       (default all three)
  BENCH_BUDGET    seconds; no further round of runs starts if it would end later (default 1500)
  BENCH_DATABASE_URL  Postgres for postgres-s3; its crawler tables are dropped first
                      (default postgresql://postgres@127.0.0.1:5432/crawl_bench, created if missing)
  BENCH_REDIS_URL     a Redis database to flush and use (default: a redis-server of the bench's own)
  BENCH_OUT       the results file                       (default bench/results.json)
CRAWL_* variables reach this crawler as usual (CRAWL_DEFAULT_DELAY sets the politeness of every
crawler on the webs of BENCH_SIZES, CRAWL_MAX_DEPTH the depth of every crawl).

Besides pages, time and CPU per page, each run reports the crawler's CPU-seconds per minute of
wall time (`cpu_s_per_minute`: what a politeness-bound crawl costs while it waits), the
connections each host served (`log.conns_per_host_median`, `_max`, `log.requests_per_conn`, from
the server log's connection numbers) and the seconds from the crawl command's start to the first
request (`first_request_seconds`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import re
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench import services
from bench.crawlers import CRAWLERS, ROOT, Setup, run, tidy
from bench.report import aggregate, politeness_floor, table, transport_table
from crawlapp.core.settings import load_settings
from testweb.site import Web, WebSpec

# Cheap case groups on top of the plain web (heavy and odd cost minutes per crawl, not pages).
# The few-hosts web has none: its case hosts would outnumber its hosts and set its figures.
CASES = {"robots_cases": True, "link_cases": True, "trap_cases": True, "sitemap_cases": True,
         "dedup_cases": True}
_FEW = re.compile(r"(\d+)x(\d+)@(\d+(?:\.\d*)?)")


@dataclass(frozen=True)
class Few:
    """The few-hosts web: `hosts` hosts of `pages` pages, each allowing one request every
    `delay` seconds (no Crawl-delay of its own, no case hosts)."""

    hosts: int
    pages: int
    delay: float

    @property
    def name(self) -> str:
        return f"{self.hosts}x{self.pages}@{self.delay:g}"

    def spec(self) -> WebSpec:
        return WebSpec(hosts=self.hosts, pages_per_host=self.pages, port=0, crawl_delay_every=0)


@dataclass(frozen=True)
class Regime:
    """A web as one row of the table crawls it: its spec, politeness and transport (`http`,
    `https`: TLS with HTTP/1.1, `h2`: TLS with CRAWL_HTTP2=true)."""

    spec: WebSpec
    delay: float
    transport: str = "http"


TRANSPORTS = ("http", "https", "h2")


def tls_regimes(text: str, delay: float) -> dict[str, Regime]:
    """The TLS regime's webs ("100x10", comma-separated; "": none) in each transport, by
    row name."""
    regimes = {}
    for hosts, pages in parse_sizes(text):
        for transport in TRANSPORTS:
            spec = WebSpec(hosts=hosts, pages_per_host=pages, port=0, crawl_delay_every=0,
                           tls=transport != "http")
            regimes[f"{hosts}x{pages} {transport}"] = Regime(spec, delay, transport)
    return regimes


@dataclass(frozen=True)
class Plan:
    sizes: tuple[tuple[int, int], ...]
    runs: int
    crawlers: tuple[str, ...]
    budget: float
    few: Few | None
    out: Path
    tls: str = ""


def parse_sizes(text: str) -> tuple[tuple[int, int], ...]:
    """"300x50,1000x10" -> ((300, 50), (1000, 10)); "" -> ()."""
    sizes = []
    for item in filter(str.strip, text.split(",")):
        hosts, _, pages = item.strip().lower().partition("x")
        sizes.append((int(hosts), int(pages)))
    return tuple(sizes)


def parse_few(text: str) -> Few | None:
    """"4x300@1" -> Few(4, 300, 1.0); "" -> None."""
    if not text.strip():
        return None
    match = _FEW.fullmatch(text.strip().lower())
    if match is None:
        raise SystemExit(f"BENCH_FEW: {text!r} is not HOSTSxPAGES@DELAY (as 4x300@1) or empty")
    return Few(int(match[1]), int(match[2]), float(match[3]))


def plan_from_env(quick: bool, env: dict[str, str]) -> Plan:
    crawlers = tuple(c.strip() for c in env.get("BENCH_CRAWLERS", ",".join(CRAWLERS)).split(","))
    unknown = set(crawlers) - set(CRAWLERS)
    if unknown:
        raise SystemExit(f"BENCH_CRAWLERS: unknown {', '.join(sorted(unknown))}; "
                         f"choose from {', '.join(CRAWLERS)}")
    return Plan(sizes=parse_sizes(env.get("BENCH_SIZES", "100x10" if quick else "300x50,1000x10")),
                runs=int(env.get("BENCH_RUNS", "1" if quick else "3")),
                crawlers=crawlers,
                budget=float(env.get("BENCH_BUDGET", "300" if quick else "1500")),
                few=parse_few(env.get("BENCH_FEW", "2x30@1" if quick else "4x300@1")),
                tls=env.get("BENCH_TLS", "30x10" if quick else "100x10"),
                out=Path(env.get("BENCH_OUT", str(ROOT / "bench" / "results.json"))))


@contextlib.contextmanager
def redis_for_bench(env: dict[str, str]) -> Iterator[str]:
    if env.get("BENCH_REDIS_URL"):
        yield env["BENCH_REDIS_URL"]
    else:
        with services.own_redis() as url:
            yield url


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one short run, for development")
    args = parser.parse_args()
    env = dict(os.environ)
    plan = plan_from_env(args.quick, env)
    crawl_settings = load_settings(env)
    database_url = env.get("BENCH_DATABASE_URL",
                           "postgresql://postgres@127.0.0.1:5432/crawl_bench")
    delay = crawl_settings.default_delay
    webs = {f"{h}x{p}": Regime(WebSpec(hosts=h, pages_per_host=p, port=0, **CASES), delay)
            for h, p in plan.sizes}
    webs.update(tls_regimes(plan.tls, delay))
    few = None
    if plan.few is not None:
        few = plan.few.name
        webs[few] = Regime(plan.few.spec(), plan.few.delay)
    floors = {name: politeness_floor(Web(regime.spec), crawl_settings.max_depth, regime.delay)
              for name, regime in webs.items()}
    # Scrapy speaks HTTP/1.1 only as the bench installs it: no h2 row.
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {
        (name, crawler): [] for name in webs for crawler in plan.crawlers
        if not (crawler == "scrapy" and webs[name].transport == "h2")}
    last_took: dict[tuple[str, str], float] = {}
    started = time.monotonic()
    with redis_for_bench(env) as redis_url:
        setup = Setup(ROOT / "bench" / "out", redis_url, database_url,
                      crawl_settings.max_depth, crawl_settings.default_delay)

        def one_run(name: str, crawler: str, label: str) -> None:
            regime = webs[name]
            print(f"[bench] {name} {crawler} {label} (floor {floors[name]:.0f} s) ...", flush=True)
            t0 = time.monotonic()
            result = run(crawler, regime.spec, replace(setup, delay=regime.delay), floors[name],
                         f"{name.replace(' ', '_')}-{crawler}", regime.transport)
            last_took[(name, crawler)] = time.monotonic() - t0
            runs[(name, crawler)].append(result)
            print(f"[bench]   {result['pages']} pages in {result['wall_seconds']} s, "
                  f"{result['crawler_cpu_ms_per_page']} CPU-ms/page, "
                  f"{result['cpu_s_per_minute']} CPU-s/min, exit {result['returncode']}",
                  flush=True)

        for round_no in range(1, plan.runs + 1):
            for key in runs:
                name, crawler = key
                if name == few:
                    continue
                if key in last_took and time.monotonic() - started + last_took[key] > plan.budget:
                    print(f"[bench] budget: no run {round_no} of {crawler} on {name}", flush=True)
                    continue
                one_run(name, crawler, f"run {round_no}/{plan.runs}")
        if few is not None:  # politeness sets its wall time: once, whatever the budget
            for crawler in plan.crawlers:
                one_run(few, crawler, "run 1/1")
    tidy(setup.out)
    results: list[dict[str, Any]] = [
        {"web": name, "crawler": crawler, "runs": len(done), "stats": aggregate(done),
         "each_run": done}
        for (name, crawler), done in runs.items() if done]
    report = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                          "platform": platform.platform()},
              "plan": {"sizes": [f"{h}x{p}" for h, p in plan.sizes],
                       "few": few, "tls": plan.tls,
                       "runs": plan.runs, "crawlers": list(plan.crawlers),
                       "cases": sorted(CASES), "delay": crawl_settings.default_delay,
                       "max_depth": crawl_settings.max_depth},
              "total_seconds": round(time.monotonic() - started, 1),
              "results": results}
    plan.out.write_text(json.dumps(report, indent=1) + "\n")
    print()
    print(table(results))
    transports = transport_table(results)
    if transports:
        print(f"\n{transports}")
    print(f"\n[bench] {report['total_seconds']} s in all; details in {plan.out}")
    if any(r["returncode"] != 0 for result in results for r in result["each_run"]):
        sys.exit(1)


if __name__ == "__main__":
    main()
