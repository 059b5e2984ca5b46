"""One measured crawl of a generated web by each crawler of the benchmark: this crawler on the
embedded default or on Postgres and S3, and Scrapy. Each returns the run's figures."""

from __future__ import annotations

import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis

from bench import services
from bench.procs import Group, ProcStat, Sampler, cmdline, descendants
from bench.redis_memory import per_url, snapshot
from bench.report import STAGES, connections, covered_at, first_request_seconds, stop_seconds
from testweb.cases import canonical_url
from testweb.server import start_in_background
from testweb.serverlog import ROBOTS_PATH, Request, load, summary
from testweb.site import Web, WebSpec
from testweb.tls import Authority, web_certificate
from testweb.trial import crawlctl, trial_env

ROOT = Path(__file__).resolve().parents[1]
SCRAPY_PYTHON = ROOT / "bench" / ".venv-scrapy" / "bin" / "python"
CRAWLERS = ("embedded", "postgres-s3", "scrapy")
MB = 1024 * 1024


@dataclass(frozen=True)
class Setup:
    """What every run shares: where to write, the bench's Redis, Postgres, depth and delay
    (CRAWL_DEFAULT_DELAY of this crawler, DOWNLOAD_DELAY of Scrapy)."""

    out: Path
    redis_url: str
    database_url: str
    max_depth: int
    delay: float


@dataclass
class Measured:
    """What measure() saw of one crawl command."""

    returncode: int
    started: float  # time.time() at the command's start: the server log's clock
    wall: float
    cpu: float  # the command and all its descendants
    peak_rss: int
    services: dict[str, float]  # CPU seconds by service
    processes: dict[str, float]  # CPU seconds of the tree by role (sampled: see Group)


def role(pid: int) -> str:
    """What a process of a measured crawl is, from its command line."""
    command = cmdline(pid)
    if " worker " in command:
        queues = command.split(" -Q ", 1)[-1].split(" ", 1)[0]
        return ("fetch" if "fetch." in queues else "render" if "render." in queues
                else "pipeline") + " worker"
    if "crawlapp.cli crawl " in command:
        return "crawlctl crawl"
    return "other"


Selector = Callable[[dict[int, ProcStat]], Iterable[int]]


def measure(command: list[str], env: dict[str, str], log: Path,
            service_pids: dict[str, Selector]) -> Measured:
    """Run `command` to its end, with the CPU of its process tree (from the kernel's account
    of waited-for children) and of each service, and the peak RSS of the tree."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started_at = time.time()
    started = time.monotonic()
    with open(log, "wb") as out:
        proc = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT)
    tree = Group(lambda stats: descendants(proc.pid, stats), role)
    groups = {"tree": tree, **{name: Group(pick) for name, pick in service_pids.items()}}
    with Sampler(groups):
        proc.wait()
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Measured(proc.returncode, started_at, wall, cpu, tree.peak_rss,
                    {name: groups[name].cpu for name in service_pids}, tree.by_label())


def judge(requests: list[Request], web: Web, delay: float) -> dict[str, Any]:
    """What the server log says of a crawl: requests, politeness faults, repeated fetches, the
    busy window (first request's start to last one's end) and connections per host."""
    verdict = summary(requests, web, delay)
    canonical = Counter(canonical_url(r.url) for r in requests if r.path != ROBOTS_PATH)
    busy = (max(r.end for r in requests) - min(r.start for r in requests)) if requests else 0.0
    return {
        "requests": verdict["requests"],
        "gap_violations": verdict["gap_violations"],
        "overlaps": verdict["overlaps"],
        "robots_violations": verdict["robots_first_violations"] + verdict["disallowed_requests"],
        "duplicate_fetches": sum(1 for n in canonical.values() if n > 1),
        "busy_seconds": round(busy, 3),
        **connections(requests),
    }


def figures(pages: int, measured: Measured, log: dict[str, Any], floor: float,
            first_request: float | None, covered: float | None = None,
            stopping: float | None = None) -> dict[str, Any]:
    """The figures of one run (results.json's each_run); `first_request`: seconds from the
    command's start to the first request in the server log; `covered`: when the last expected
    page was first requested (covered_at); `stopping`: seconds the crawl took to end once
    idle (stop_seconds). Time to coverage is from the command's start, the tail from
    coverage to the command's exit."""
    per_page = 1000 / max(pages, 1)
    busy = log["busy_seconds"]
    coverage = None if covered is None else covered - measured.started
    return {
        "pages": pages,
        "returncode": measured.returncode,
        "wall_seconds": round(measured.wall, 2),
        "pages_per_second": round(pages / busy, 2) if busy > 0 else None,
        "crawler_cpu_seconds": round(measured.cpu, 2),
        "crawler_cpu_ms_per_page": round(measured.cpu * per_page, 3),
        "cpu_s_per_minute": round(60 * measured.cpu / measured.wall, 2) if measured.wall else None,
        "services_cpu_ms_per_page": (round(sum(measured.services.values()) * per_page, 3)
                                     if measured.services else None),
        "services_cpu_ms_per_page_by": {name: round(cpu * per_page, 3)
                                        for name, cpu in measured.services.items()},
        "process_cpu_ms_per_page": {name: round(cpu * per_page, 3)
                                    for name, cpu in measured.processes.items()},
        "peak_rss_mb": round(measured.peak_rss / MB, 1),
        "floor_seconds": round(floor, 1),
        "wall_over_floor": round(measured.wall / floor, 3) if floor > 0 else None,
        "coverage_seconds": None if coverage is None else round(coverage, 2),
        "tail_seconds": None if coverage is None else round(measured.wall - coverage, 2),
        "coverage_over_floor": (round(coverage / floor, 3)
                                if coverage is not None and floor > 0 else None),
        "stop_seconds": stopping,
        "first_request_seconds": first_request,
        "log": log,
    }


def run(crawler: str, spec: WebSpec, setup: Setup, floor: float, tag: str,
        transport: str = "http") -> dict[str, Any]:
    """One crawl of a fresh server for `spec` by `crawler` over `transport` (`http`; `https`
    and `h2` for a web whose spec says tls: its certificate from a CA of the run's own, which
    this crawler trusts by CRAWL_CA_BUNDLE and Scrapy does not verify); its figures."""
    # Each run writes under a new directory, and nothing is deleted until the bench is over
    # (tidy): on the ext4 this bench was measured on, files created in the minutes after
    # thousands were deleted cost two to four times the system CPU (0.25 ms a body instead
    # of 0.07), which the store stage of the next run was charged.
    setup.out.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix=f"{tag}-", dir=setup.out))
    log_path = workdir / "requests.jsonl"
    tls, extra = None, {}
    if spec.tls:
        authority = Authority(workdir)
        tls = web_certificate(authority, Web(spec))
        extra = {"CRAWL_CA_BUNDLE": str(authority.cert_file),
                 "CRAWL_HTTP2": "true" if transport == "h2" else "false"}
    with start_in_background(Web(spec), str(log_path), tls=tls) as server:
        seeds = workdir / "seeds.txt"
        seeds.write_text("\n".join(server.web.seeds()) + "\n")
        redis_cost: dict[str, Any] | None = None
        if crawler == "scrapy":
            pages, measured = _scrapy(seeds, workdir, setup)
            stages: dict[str, float] = {}
        else:
            pages, measured, stages, redis_cost = _ours(crawler, seeds, workdir, setup, extra)
        web = server.web
    requests = load(str(log_path))
    log = judge(requests, web, setup.delay)
    covered, log["expected_missed"] = covered_at(requests, web.expected_pages(setup.max_depth))
    result = figures(pages, measured, log, floor, first_request_seconds(requests, measured.started),
                     covered, stop_seconds((workdir / "crawl.out").read_text(errors="replace")))
    if stages:
        result["stage_cpu_ms_per_page"] = {
            stage: round(1000 * stages.get(stage, 0.0) / max(pages, 1), 3) for stage in STAGES}
        result["pages_per_fetch_batch"] = round(pages / max(stages.get("fetch:batches", 0), 1), 1)
    if redis_cost is not None:
        result["redis"] = redis_cost
    return result


def tidy(out: Path) -> None:
    """Delete every run's directory but the newest of each web and crawler."""
    newest: dict[str, Path] = {}
    for path in sorted(out.glob("*-*-*"), key=lambda p: p.stat().st_mtime):
        if path.is_dir():
            tag = path.name.rsplit("-", 1)[0]
            if tag in newest:
                shutil.rmtree(newest[tag], ignore_errors=True)
            newest[tag] = path


Ours = tuple[int, Measured, dict[str, float], dict[str, Any]]


def _ours(crawler: str, seeds: Path, workdir: Path, setup: Setup, extra: dict[str, str]
          ) -> Ours:
    redis.Redis.from_url(setup.redis_url).flushdb()
    redis_pid = services.redis_pid(setup.redis_url)
    pick: dict[str, Selector] = {"redis": lambda stats: [redis_pid]}
    command = [sys.executable, "-m", "crawlapp.cli", "crawl", "--seeds", str(seeds), "--until-idle"]
    env = trial_env(workdir / "var", setup.redis_url, CRAWL_DEFAULT_DELAY=f"{setup.delay:g}",
                    **extra)
    # The web's robots-500 host is asked again a minute later, as a real server is
    # (CRAWL_ROBOTS_RETRY): the crawl ends without waiting for it, and its tail says so.
    if crawler == "embedded":
        return _crawl(command, env, workdir, pick, setup.redis_url)
    postmaster = services.reset_postgres(setup.database_url)
    database = setup.database_url.rsplit("/", 1)[1]
    pick["postgres"] = lambda stats: services.postgres_pids(postmaster, database, stats)
    with services.moto_s3() as (endpoint, moto_pid):
        pick["s3"] = lambda stats: descendants(moto_pid, stats)
        env.update(DATABASE_URL=setup.database_url, S3_ENDPOINT_URL=endpoint,
                   S3_BUCKET="crawl-bench", AWS_ACCESS_KEY_ID="bench",
                   AWS_SECRET_ACCESS_KEY="bench", AWS_DEFAULT_REGION="us-east-1")
        return _crawl(command, env, workdir, pick, setup.redis_url)


def _crawl(command: list[str], env: dict[str, str], workdir: Path, pick: dict[str, Selector],
           redis_url: str) -> Ours:
    """The crawl measured, then its pages, stage CPU and Redis bytes per known URL."""
    measured = measure(command, env, workdir / "crawl.out", pick)
    stats = json.loads(crawlctl(env, "stats", "--json").stdout or "{}")
    cost = per_url(snapshot(redis.Redis.from_url(redis_url)), int(stats.get("discovered", 0)))
    return int(stats.get("fetched", 0)), measured, stats.get("stage_cpu_seconds", {}), cost


def _scrapy(seeds: Path, workdir: Path, setup: Setup) -> tuple[int, Measured]:
    if not SCRAPY_PYTHON.exists():
        raise RuntimeError(f"{SCRAPY_PYTHON} is missing: run `make bench` (it installs Scrapy)")
    command = [str(SCRAPY_PYTHON), str(ROOT / "bench" / "scrapy_spider.py"), str(seeds),
               str(workdir), str(setup.max_depth), f"{setup.delay:g}"]
    measured = measure(command, {"PATH": "/usr/bin:/bin"}, workdir / "crawl.out", {})
    with open(workdir / "items.jsonl", encoding="utf-8") as items:
        pages = sum(1 for line in items if 200 <= json.loads(line)["status"] < 300)
    return pages, measured
