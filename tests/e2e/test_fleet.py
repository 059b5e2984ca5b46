"""A fleet on one machine, started process by process as the README's "Running a fleet" lists
them (two fetch workers on disjoint shards, a pipeline worker, beat, two dispatchers), on a
Redis Cluster and Postgres: judged from the server log."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from crawlapp.adapters.context import Context
from crawlapp.core.settings import load_settings
from tests.conftest import crawl_env
from tests.e2e.helpers import CRAWLCTL, crawlctl
from testweb.server import start_in_background
from testweb.serverlog import fetched_urls, load, summary
from testweb.site import Web, WebSpec

pytestmark = pytest.mark.e2e
DELAY = 0.4
SPEC = WebSpec(hosts=8, pages_per_host=6, port=0, crawl_delay_every=4)
CELERY = [sys.executable, "-m", "celery", "-A", "crawlapp.app"]
QUIET = ["--loglevel", "WARNING"]
WORKER = ["worker", "--without-gossip", "--without-mingle", *QUIET]


def _fleet(tmp_path: Path) -> dict[str, list[str]]:
    return {
        "fetch-a": [*CELERY, *WORKER, "-P", "threads", "-c", "8", "-Q", "fetch.0,fetch.1",
                    "-n", "fetch-a@%h"],
        "fetch-b": [*CELERY, *WORKER, "-P", "threads", "-c", "8", "-Q", "fetch.2,fetch.3",
                    "-n", "fetch-b@%h"],
        "pipeline": [*CELERY, *WORKER, "-P", "prefork", "-c", "2",
                     "-Q", "parse,dedup,store,links,control", "-n", "pipeline@%h"],
        "beat": [*CELERY, "beat", *QUIET, "-s", str(tmp_path / "celerybeat-schedule")],
        "dispatcher-1": [*CRAWLCTL, "dispatcher"],
        "dispatcher-2": [*CRAWLCTL, "dispatcher"],
    }


def _wait_until_idle(ctx: Context, deadline: float, readings: int = 12) -> None:
    """Until the frontier is empty and no batch is in flight for `readings` looks in a row."""
    idle = 0
    while idle < readings:
        assert time.monotonic() < deadline, "the fleet did not finish the crawl in time"
        time.sleep(0.25)
        idle = idle + 1 if (ctx.frontier.is_idle(time.time())
                            and not ctx.batches.in_flight()) else 0


def test_a_fleet_started_process_by_process(tmp_path: Path, redis_url: str, pg_url: str,
                                           redis_cluster_url: str) -> None:
    env = crawl_env(tmp_path, redis_url, DATABASE_URL=pg_url, CRAWL_REDIS_CLUSTER="true",
                    CRAWL_REDIS_URL=redis_cluster_url, CRAWL_DEFAULT_DELAY=str(DELAY))
    full_env = {**os.environ, **env}
    assert crawlctl(env, "db", "upgrade").returncode == 0
    log = str(tmp_path / "requests.jsonl")
    procs: dict[str, subprocess.Popen[bytes]] = {}
    with start_in_background(Web(SPEC), log) as server:
        seeds = crawlctl(env, "seed", "add", *server.web.seeds())
        assert seeds.returncode == 0, seeds.stderr
        try:
            for name, command in _fleet(tmp_path).items():
                with open(tmp_path / f"{name}.log", "wb") as out:
                    procs[name] = subprocess.Popen(command, env=full_env, stdout=out,
                                                   stderr=subprocess.STDOUT)
            ctx = Context(load_settings(full_env))
            _wait_until_idle(ctx, time.monotonic() + 180)
            assert all(p.poll() is None for p in procs.values()), {
                n: (tmp_path / f"{n}.log").read_text()[-2000:] for n, p in procs.items()
                if p.poll() is not None}
        finally:
            for proc in procs.values():
                proc.send_signal(signal.SIGTERM)
            for proc in procs.values():
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    proc.kill()
    requests = load(log)
    verdict = summary(requests, server.web, DELAY)
    assert verdict["gap_violations"] == 0 and verdict["overlaps"] == 0, verdict
    assert verdict["duplicate_fetches"] == 0, verdict
    assert server.web.expected_pages(5) <= set(fetched_urls(requests))
