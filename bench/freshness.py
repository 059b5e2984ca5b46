"""`make bench-freshness`: how fresh each re-crawl policy keeps a web whose pages change
(testweb/changing.py), against the classic refresh policies with the same politeness
(testweb/freshness.py), and whether the crawl's memory and state stay flat over time.

For each policy: the changing web served afresh (the same changes, from its own start), a
redis-server of its own, `crawlctl crawl --seeds FILE` (no --until-idle) on a fresh
CRAWL_DATA_DIR with CRAWL_RECRAWL_POLICY set to it for BENCH_FRESH_MINUTES, then SIGINT (and
SIGTERM, SIGKILL if it lingers; any process of its tree left behind is ended by its pid). Its
log is judged over [BENCH_FRESH_WINDOW_START, its end], seconds from the web's start.

Settings (environment):
  BENCH_FRESH_POLICIES      CRAWL_RECRAWL_POLICY of each run, comma-separated (default
                            optimal,adaptive)
  BENCH_FRESH_MINUTES       minutes each crawl runs (default 15)
  BENCH_FRESH_WINDOW_START  seconds from the web's start where the judged window begins
                            (default 300); the growth slopes are fitted from there on too
  BENCH_FRESH_SEED          the web's seed (default 7)
  BENCH_FRESH_HOSTS, BENCH_FRESH_PAGES      the web's size (default 20 hosts x 200 pages)
  BENCH_FRESH_NEWS, BENCH_FRESH_SITEMAPS    news and sitemap hosts (default 7 and 4 of 20
                            hosts: the same shares of BENCH_FRESH_HOSTS, rounded, at least 1)
  BENCH_FRESH_WEB           other fields of the web (testweb/changing.py: ChangingSpec), as
                            `name=value,...`: e.g. `min_interval=60,max_interval=86400,
                            static_fraction=0.3,crawl_delay_every=5,article_interval=120`
CRAWL_* variables reach the crawler; CRAWL_RECRAWL_MIN_INTERVAL=5, CRAWL_RECRAWL_MAX_INTERVAL=7200
and CRAWL_RECRAWL_FIRST_INTERVAL=120 unless set. Every figure goes to bench/freshness-results.json,
working files (server logs, crawl output, data dirs) to bench/out/freshness/<policy>/.

A quick try (about 7 minutes):
  BENCH_FRESH_MINUTES=3 BENCH_FRESH_HOSTS=4 BENCH_FRESH_PAGES=40 BENCH_FRESH_WINDOW_START=60 \\
      make bench-freshness
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import numpy as np
import redis

from bench import services
from bench.crawlers import ROOT, role
from bench.procs import all_stats, cmdline, descendants
from bench.report import _grid
from crawlapp.core.settings import load_settings
from testweb.changing import ChangingSpec, ChangingWeb
from testweb.freshness import (
    Shares,
    achieved_capacity,
    baselines,
    judge,
    nominal_capacity,
)
from testweb.server import start_changing_in_background
from testweb.serverlog import load
from testweb.trial import crawlctl, trial_env

OUT = ROOT / "bench" / "out" / "freshness"
RESULTS = ROOT / "bench" / "freshness-results.json"
RECRAWL_DEFAULTS = {"CRAWL_RECRAWL_MIN_INTERVAL": "5", "CRAWL_RECRAWL_MAX_INTERVAL": "7200",
                    "CRAWL_RECRAWL_FIRST_INTERVAL": "120"}
SAMPLE_EVERY = 60.0  # seconds between two samples of the crawl's growth
STOP_GRACE = 60.0  # seconds the crawl has to stop on SIGINT, then again on SIGTERM
SLACK = 120.0  # seconds of changes drawn beyond the crawl (the server starts first)
STEP = 2.0  # seconds between the instants freshness is judged at
MB = 1024 * 1024


def web_spec(env: Mapping[str, str], duration: float) -> ChangingSpec:
    """The changing web of BENCH_FRESH_SEED, _HOSTS, _PAGES, _NEWS, _SITEMAPS and _WEB (module
    docstring) whose changes are drawn over `duration` seconds."""
    hosts = int(env.get("BENCH_FRESH_HOSTS", "20"))

    def share(name: str, of_twenty: int) -> int:
        if env.get(name):
            return int(env[name])
        return min(hosts, max(1, round(of_twenty * hosts / 20)))

    spec = ChangingSpec(hosts=hosts, pages_per_host=int(env.get("BENCH_FRESH_PAGES", "200")),
                        seed=int(env.get("BENCH_FRESH_SEED", "7")), duration=duration,
                        news_hosts=share("BENCH_FRESH_NEWS", 7),
                        sitemap_hosts=share("BENCH_FRESH_SITEMAPS", 4))
    types = {f.name: type(getattr(spec, f.name)) for f in fields(ChangingSpec)}
    overrides: dict[str, Any] = {}
    for item in filter(None, (part.strip() for part in env.get("BENCH_FRESH_WEB", "").split(","))):
        name, _, value = item.partition("=")
        if name not in types or name in ("hosts", "pages_per_host", "seed", "duration", "port"):
            raise SystemExit(f"BENCH_FRESH_WEB: {name!r} is no field of the changing web here "
                             f"(testweb/changing.py: ChangingSpec)")
        try:
            overrides[name] = types[name](value)
        except ValueError:
            raise SystemExit(f"BENCH_FRESH_WEB: {item!r} is not {name}=<{types[name].__name__}>"
                             ) from None
    try:
        return replace(spec, **overrides)
    except ValueError as error:
        raise SystemExit(f"BENCH_FRESH_WEB: {error}") from None


@dataclass(frozen=True)
class Plan:
    policies: tuple[str, ...]
    minutes: float
    window_start: float
    spec: ChangingSpec
    delay: float  # the crawler's CRAWL_DEFAULT_DELAY

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Plan:
        minutes = float(env.get("BENCH_FRESH_MINUTES", "15"))
        spec = web_spec(env, minutes * 60 + SLACK)
        policies = tuple(p.strip() for p in env.get("BENCH_FRESH_POLICIES",
                                                     "optimal,adaptive").split(",") if p.strip())
        return cls(policies, minutes, float(env.get("BENCH_FRESH_WINDOW_START", "300")), spec,
                   load_settings(env).default_delay)


# --- the crawl's growth --------------------------------------------------------------------------

@dataclass
class Growth:
    """What could grow as a crawl runs, sampled every SAMPLE_EVERY seconds: the RSS of each
    process of its tree, Redis's used memory and keys, the SQLite file and its rows of
    `urls` and `fetches`. `seen` keeps the command line of every process of the tree."""

    pid: int
    redis_url: str
    db: Path
    started: float = field(default_factory=time.monotonic)
    samples: list[dict[str, Any]] = field(default_factory=list)
    seen: dict[int, str] = field(default_factory=dict)

    def watch(self) -> None:
        """Note the processes of the crawl's tree now (for stop_crawl)."""
        for pid in descendants(self.pid, all_stats()):
            self.seen.setdefault(pid, cmdline(pid))

    def sample(self) -> None:
        stats = all_stats()
        tree = descendants(self.pid, stats)
        by_role: dict[str, float] = {}
        for pid in tree:
            self.seen.setdefault(pid, cmdline(pid))
            name = role(pid)
            by_role[name] = by_role.get(name, 0.0) + stats[pid].rss / MB
        client = redis.Redis.from_url(self.redis_url)
        try:
            used, keys = round(client.info("memory")["used_memory"] / MB, 2), client.dbsize()
        except redis.RedisError:
            used, keys = None, None
        finally:
            client.close()
        self.samples.append({
            "minute": round((time.monotonic() - self.started) / 60, 2),
            "rss_mb": round(sum(by_role.values()), 1),
            "rss_mb_by_role": {name: round(mb, 1) for name, mb in sorted(by_role.items())},
            "redis_used_mb": used, "redis_keys": keys,
            "db_mb": _size_mb(self.db), "db_wal_mb": _size_mb(Path(f"{self.db}-wal")),
            **_rows(self.db, ("urls", "fetches")),
        })

    def run(self, stop: threading.Event) -> None:
        while not stop.wait(SAMPLE_EVERY):
            self.sample()

    def report(self, since_minute: float) -> dict[str, Any]:
        """The samples, the first and the last, and each figure's least-squares slope per
        minute over the samples from `since_minute` on (None with fewer than two)."""
        figures = [name for name, value in (self.samples[0] if self.samples else {}).items()
                   if name != "minute" and not isinstance(value, dict)]
        later = [s for s in self.samples if s["minute"] >= since_minute]
        slopes = {name: _slope([(s["minute"], s[name]) for s in later if s[name] is not None])
                  for name in figures}
        return {"first": self.samples[0] if self.samples else None,
                "last": self.samples[-1] if self.samples else None,
                "slope_per_minute": slopes, "since_minute": since_minute,
                "samples": self.samples}


def _size_mb(path: Path) -> float | None:
    try:
        return round(path.stat().st_size / MB, 3)
    except OSError:
        return None


def _rows(db: Path, tables: tuple[str, ...]) -> dict[str, int | None]:
    """Rows of each table (None where the database cannot be read yet)."""
    counts: dict[str, int | None] = dict.fromkeys(tables)
    if not db.exists():
        return counts
    connection = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    try:
        for table in tables:
            with contextlib.suppress(sqlite3.Error):
                counts[table] = int(connection.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
    finally:
        connection.close()
    return counts


def _slope(points: list[tuple[float, float]]) -> float | None:
    if len(points) < 2:
        return None
    minutes, values = (np.array(column, dtype=float) for column in zip(*points, strict=True))
    return round(float(np.polyfit(minutes, values, deg=1)[0]), 4)


# --- one crawl -----------------------------------------------------------------------------------

def stop_crawl(crawl: subprocess.Popen[bytes], growth: Growth) -> list[int]:
    """SIGINT the crawl (its own shutdown: workers end their batches), SIGTERM it after
    STOP_GRACE, SIGKILL after as long again; then end, by pid, every process of its tree
    still running the command it ran (a child that outlived it). Those pids."""
    growth.watch()
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        if crawl.poll() is not None:
            break
        crawl.send_signal(signum)
        with contextlib.suppress(subprocess.TimeoutExpired):
            crawl.wait(STOP_GRACE)
    crawl.wait()
    left = [pid for pid, command in growth.seen.items()
            if pid != crawl.pid and command and cmdline(pid) == command]
    for signum in (signal.SIGTERM, signal.SIGKILL):
        alive = [pid for pid in left if cmdline(pid) == growth.seen[pid]]
        for pid in alive:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signum)
        deadline = time.monotonic() + 10
        while alive and time.monotonic() < deadline:
            time.sleep(0.2)
            alive = [pid for pid in alive if cmdline(pid) == growth.seen[pid]]
    return left


@dataclass
class Crawl:
    process: subprocess.Popen[bytes]
    growth: Growth
    left_behind: list[int] = field(default_factory=list)  # pids stop_crawl() had to end


@contextlib.contextmanager
def _running(command: list[str], env: dict[str, str], out: Path, redis_url: str,
             db: Path) -> Iterator[Crawl]:
    """The crawl command with its growth sampled in a thread, stopped however the block ends."""
    with open(out, "wb") as output:
        process = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=output,
                                   stderr=subprocess.STDOUT)
    crawl = Crawl(process, Growth(process.pid, redis_url, db))
    stop = threading.Event()
    sampler = threading.Thread(target=crawl.growth.run, args=(stop,), daemon=True)
    sampler.start()
    try:
        yield crawl
    finally:
        stop.set()
        sampler.join()
        if process.poll() is None:
            crawl.growth.sample()  # the last one, as the crawl ends
        crawl.left_behind = stop_crawl(process, crawl.growth)
        if crawl.left_behind:
            print(f"[bench]   ended {len(crawl.left_behind)} process(es) the crawl left behind: "
                  f"{crawl.left_behind}", flush=True)


def run(policy: str, plan: Plan) -> dict[str, Any]:
    """One crawl of the changing web under `policy`; its figures."""
    workdir = OUT / policy
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    log = workdir / "requests.jsonl"
    with services.own_redis() as redis_url, start_changing_in_background(plan.spec,
                                                                         str(log)) as server:
        env = trial_env(workdir / "var", redis_url, **{
            **RECRAWL_DEFAULTS, **{k: v for k, v in os.environ.items() if k in RECRAWL_DEFAULTS},
            "CRAWL_RECRAWL_POLICY": policy})
        seeds = workdir / "seeds.txt"
        seeds.write_text("\n".join(server.seeds()) + "\n")
        command = [sys.executable, "-m", "crawlapp.cli", "crawl", "--seeds", str(seeds)]
        end = time.time() - server.t0 + plan.minutes * 60
        with _running(command, env, workdir / "crawl.out", redis_url,
                      workdir / "var" / "crawl.db") as crawl:
            with contextlib.suppress(subprocess.TimeoutExpired):
                crawl.process.wait(max(0.0, server.t0 + end - time.time()))
            if crawl.process.returncode is not None:
                print(f"[bench]   the crawl ended early (exit {crawl.process.returncode}): "
                      f"see {workdir / 'crawl.out'}", flush=True)
        stats = _stats(env)
        web, t0 = server.web, server.t0
    requests = load(str(log))
    verdict = judge(web, requests, t0, plan.window_start, end, STEP, plan.delay)
    capacity = achieved_capacity(web, requests, t0, plan.window_start, end)
    (workdir / "started.json").write_text(json.dumps({"t0": t0, "port": web.spec.port,
                                                      "spec": asdict(web.spec)}) + "\n")
    return {
        "returncode": crawl.process.returncode, "t0": t0,
        "window": [plan.window_start, round(end, 1)],
        "crawler": asdict(verdict),
        "capacity": _by_host(web, capacity),
        "baselines": asdict(baselines(web, capacity, plan.window_start, end, STEP, plan.spec.seed)),
        "growth": crawl.growth.report(plan.window_start / 60),
        "left_behind": crawl.left_behind,
        "stats": stats,
    }


def _stats(env: dict[str, str]) -> dict[str, Any]:
    """`crawlctl stats --json` after the crawl ({"error": ...} if it did not answer JSON)."""
    done = crawlctl(env, "stats", "--json")
    try:
        stats: dict[str, Any] = json.loads(done.stdout)
    except ValueError:
        return {"error": (done.stderr or done.stdout).strip()[-2000:]}
    return stats


def _by_host(web: ChangingWeb, values: np.ndarray) -> dict[str, float]:
    """Values by host address (127.0.1.x: the same in every run, whatever its port)."""
    return {web.host_addr(i): round(float(v), 4) for i, v in enumerate(values)}


# --- the report ----------------------------------------------------------------------------------

def _number(value: float | None, fmt: str) -> str:
    return "-" if value is None else fmt.format(value)


def _ratio(value: float | None, base: float | None) -> str:
    return f"{value / base:.3f}" if value is not None and base else "-"


BASELINES = (("round robin", "round_robin"), ("optimum (expected)", "optimum_expected"),
             ("optimum (simulated)", "optimum"), ("informed bound", "informed"))
COLUMNS = ["row", "fresh", "no-sitemap", "sitemap", "+articles", "/optimum", "/informed",
           "disc. med s", "disc. p90 s", "missed", "requests", "overlaps", "gaps"]


def table(runs: dict[str, dict[str, Any]], nominal: dict[str, Any]) -> str:
    """Freshness by row: each crawl, then the baselines at its achieved request rates, then
    at one request a delay; ratios to the simulated optimum (hosts without a sitemap) and to
    the informed bound (sitemap hosts) of the same capacity."""
    rows = []
    blocks = [(policy, result["baselines"], result["crawler"]) for policy, result in runs.items()]
    for label, found, crawler in [*blocks, ("1/delay", nominal["baselines"], None)]:
        optimum, informed = Shares(**found["optimum"]), Shares(**found["informed"])
        if crawler is not None:
            rows.append(_row(f"{label}: crawler", Shares(**crawler["pages"]), optimum, informed,
                             crawler))
        rows += [_row(f"{label}: {name}", Shares(**found[key]), optimum, informed)
                 for name, key in BASELINES]
    return _grid(COLUMNS, rows)


def _row(name: str, share: Shares, optimum: Shares, informed: Shares,
         crawler: dict[str, Any] | None = None) -> list[str]:
    row = [name, _number(share.overall, "{:.3f}"), _number(share.no_sitemap, "{:.3f}"),
           _number(share.sitemap, "{:.3f}"),
           _number(crawler["with_articles"]["overall"], "{:.3f}") if crawler else "-",
           _ratio(share.no_sitemap, optimum.no_sitemap), _ratio(share.sitemap, informed.sitemap)]
    if crawler is None:
        return row + ["-"] * 6
    found = crawler["discovery"]
    return row + [_number(found["median"], "{:.1f}"), _number(found["p90"], "{:.1f}"),
                  f"{found['missed']}/{found['articles']}", str(crawler["requests"]),
                  str(crawler["overlaps"]), str(crawler["gaps"])]


GROWTH = (("rss_mb", "RSS MB (tree)"), ("redis_used_mb", "Redis MB"), ("redis_keys", "Redis keys"),
          ("db_mb", "SQLite MB"), ("urls", "urls rows"), ("fetches", "fetches rows"))


def growth_table(runs: dict[str, dict[str, Any]]) -> str:
    rows = []
    for policy, result in runs.items():
        growth = result["growth"]
        first, last = growth["first"] or {}, growth["last"] or {}
        for name, heading in GROWTH:
            rows.append([policy, heading, _number(first.get(name), "{:g}"),
                         _number(last.get(name), "{:g}"),
                         _number(growth["slope_per_minute"].get(name), "{:+.3f}")])
    since = next(iter(runs.values()))["growth"]["since_minute"] if runs else 0
    return _grid(["policy", "figure", "first", "last", f"slope/min from min {since:.3g}"], rows)


def main() -> int:
    plan = Plan.from_env(os.environ)
    OUT.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    runs: dict[str, dict[str, Any]] = {}
    for policy in plan.policies:
        print(f"[bench] {policy}: {plan.spec.hosts} hosts x {plan.spec.pages_per_host} pages, "
              f"{plan.minutes:g} min ...", flush=True)
        runs[policy] = run(policy, plan)
        crawler = runs[policy]["crawler"]["pages"]
        print(f"[bench]   freshness {_number(crawler['overall'], '{:.3f}')}, exit "
              f"{runs[policy]['returncode']}", flush=True)
    web = ChangingWeb(plan.spec)
    end = next(iter(runs.values()))["window"][1] if runs else plan.minutes * 60
    capacity = nominal_capacity(web, plan.delay)
    nominal = {"capacity": _by_host(web, capacity),
               "baselines": asdict(baselines(web, capacity, plan.window_start, end, STEP,
                                             plan.spec.seed))}
    report = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "platform": platform.platform()},
        "plan": {"policies": list(plan.policies), "minutes": plan.minutes,
                 "window_start": plan.window_start, "step": STEP, "delay": plan.delay,
                 "spec": asdict(plan.spec), "news_hosts": list(web.news_hosts),
                 "sitemap_hosts": list(web.sitemap_hosts),
                 "crawl_settings": {k: os.environ.get(k, v) for k, v in RECRAWL_DEFAULTS.items()}},
        "total_seconds": round(time.monotonic() - started, 1),
        "runs": runs,
        "nominal": nominal,
    }
    RESULTS.write_text(json.dumps(report, indent=1) + "\n")
    print(f"\nFreshness of the regular pages over [{plan.window_start:g} s, end] (sitemap hosts "
          f"{list(web.sitemap_hosts)}, news hosts {list(web.news_hosts)}); baselines at each "
          "crawl's achieved request rate per host, then at one request a delay\n"
          + table(runs, nominal))
    print("\nGrowth of the crawl (sampled every minute)\n" + growth_table(runs))
    print(f"\n[bench] {report['total_seconds']} s in all; details in {RESULTS}")
    return 0 if all(r["returncode"] in (0, 130) for r in runs.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
