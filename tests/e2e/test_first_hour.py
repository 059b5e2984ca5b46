"""The first hour of a new user: a crawl that cannot reach its only seed ends and says why;
`stats` on a fresh data folder; seed input refused in words; the summary of this run only."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import crawl_env
from tests.e2e.helpers import CRAWLCTL, crawlctl, start_crawl, wait_for_child
from testweb.server import start_in_background
from testweb.site import Web, WebSpec

pytestmark = pytest.mark.e2e
SMALL = {"CRAWL_WORKER_CONCURRENCY": "1", "CRAWL_FETCH_PROCESSES": "1",
         "CRAWL_DEFAULT_DELAY": "0.2"}


def test_a_crawl_whose_only_seed_the_address_guard_refuses_ends_and_says_why(
        tmp_path: Path, redis_url: str) -> None:
    log = str(tmp_path / "requests.jsonl")
    with start_in_background(Web(WebSpec(hosts=1, pages_per_host=2, port=0)), log) as server:
        seed = server.web.seeds()[0]  # http://127.0.1.1:PORT/: loopback
        host = seed.split("/")[2]
        seeds = tmp_path / "seeds.txt"
        seeds.write_text(seed + "\n")
        env = crawl_env(tmp_path, redis_url, CRAWL_ALLOWED_NETWORKS="", **SMALL)
        started = time.monotonic()
        crawl = crawlctl(env, "crawl", "--seeds", str(seeds), "--until-idle", timeout=60)
        took = time.monotonic() - started
    assert crawl.returncode == 0, crawl.stdout + crawl.stderr
    assert took < 60
    assert not Path(log).exists() or Path(log).read_text() == ""  # the site got no request
    out = crawl.stdout
    assert "this run 0 fetched, 1 failed" in out
    assert "1 host(s) given up" in out and host in out
    assert "private-address guard" in out and "CRAWL_ALLOWED_NETWORKS" in out
    assert "lost the frontier" not in crawl.stderr  # a first crawl has nothing to rebuild

    stats = crawlctl(env, "stats")
    assert stats.returncode == 0 and "hosts given up: 1" in stats.stdout
    assert host in stats.stdout and "private-address guard" in stats.stdout
    data = json.loads(crawlctl(env, "stats", "--json").stdout)
    assert data["hosts_given_up"] == {host: "ssrf_loopback"}
    errors = crawlctl(env, "hosts", "--errors")
    assert host in errors.stdout and "unreachable: ssrf_loopback" in errors.stdout
    row = json.loads(crawlctl(env, "page", "show", seed, "--json").stdout)
    assert (row["status"], row["fail_count"], row["last_error"]) == (
        "failed", 1, "unreachable: ssrf_loopback")
    logs = "".join(p.read_text() for p in (tmp_path / "var" / "logs").glob("*.log"))
    assert logs.count(f"giving up {host}") == 1


def test_a_second_crawl_reports_its_own_figures(tmp_path: Path, redis_url: str) -> None:
    """Two crawls on one state, of two webs that do not link to each other."""
    env = crawl_env(tmp_path, redis_url, **SMALL)
    runs, fetched = [], []
    for name in ("one", "two"):
        spec = WebSpec(hosts=1, pages_per_host=2, port=0, crawl_delay_every=0)
        with start_in_background(Web(spec), str(tmp_path / f"{name}.jsonl")) as server:
            (tmp_path / f"{name}.txt").write_text(server.web.seeds()[0] + "\n")
            runs.append(crawlctl(env, "crawl", "--seeds", str(tmp_path / f"{name}.txt"),
                                 "--until-idle"))
        assert runs[-1].returncode == 0, runs[-1].stdout + runs[-1].stderr
        fetched.append(json.loads(crawlctl(env, "stats", "--json").stdout)["fetched"])
    line = next(x for x in runs[1].stdout.splitlines() if x.startswith("idle after"))
    assert f"this run {fetched[1] - fetched[0]} fetched" in line, (line, fetched)
    assert f"the crawl so far: {fetched[1]} fetched" in line and 0 < fetched[0] < fetched[1]
    assert "lost the frontier" not in runs[0].stderr + runs[1].stderr


def test_stats_on_a_fresh_data_folder_creates_nothing(tmp_path: Path, redis_url: str) -> None:
    env = crawl_env(tmp_path, redis_url)
    shown = crawlctl(env, "stats")
    assert shown.returncode == 0, shown.stderr
    assert "no crawl yet" in shown.stdout and "no such table" not in shown.stdout + shown.stderr
    data = json.loads(crawlctl(env, "stats", "--json").stdout)
    assert (data["started"], data["discovered"], data["fetched"]) == (False, 0, 0)
    hosts = crawlctl(env, "hosts", "--errors")
    assert (hosts.returncode, hosts.stdout.strip()) == (0, "no hosts")
    assert not (tmp_path / "var").exists()  # no empty crawl.db, no folder


def test_seed_input_is_refused_whole_and_in_words(tmp_path: Path, redis_url: str) -> None:
    env = crawl_env(tmp_path, redis_url)
    missing = crawlctl(env, "seed", "add", "--file", str(tmp_path / "nope.txt"))
    assert missing.returncode == 2 and "--file" in missing.stderr
    assert "--seeds" not in missing.stderr and "cannot read" in missing.stderr
    bad = tmp_path / "seeds.txt"
    bad.write_text("# ours\nhttp://a.example/\nhtp://x\nnot a url\n")
    refused = crawlctl(env, "seed", "add", "--file", str(bad))
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    assert "line 3" in refused.stderr and "line 4" in refused.stderr
    assert "only http and https URLs are crawled" in refused.stderr
    assert "no scheme such as http://" in refused.stderr and "nothing added" in refused.stderr
    argument = crawlctl(env, "seed", "add", "htp://x")
    assert argument.returncode == 2
    assert "'htp://x': only http and https URLs are crawled, not htp:" in argument.stderr
    crawl = crawlctl(env, "crawl", "--seeds", str(bad), "--until-idle")
    assert crawl.returncode == 2 and "--seeds" in crawl.stderr
    stats = json.loads(crawlctl(env, "stats", "--json").stdout)
    assert stats["discovered"] == 0  # nothing was added


def test_ctrl_c_stops_a_crawl_once_and_keeps_its_state(tmp_path: Path, redis_url: str) -> None:
    """A terminal's Ctrl-C reaches every process of the group, and people press it twice:
    the crawl still stops cleanly, says so, and a later crawl goes on from its state."""
    with start_in_background(Web(WebSpec(hosts=2, pages_per_host=30, port=0)),
                             str(tmp_path / "requests.jsonl")) as server:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("\n".join(server.web.seeds()) + "\n")
        env = crawl_env(tmp_path, redis_url, **SMALL)
        out = tmp_path / "crawl.out"
        crawl = start_crawl(env, seeds, out)
        wait_for_child(crawl.pid, "-P threads")
        deadline = time.monotonic() + 60
        while _fetched(env) == 0:  # until fetching has begun (workers start slowly when busy)
            assert time.monotonic() < deadline and crawl.poll() is None, out.read_text()
            time.sleep(0.2)
        crawl.send_signal(signal.SIGINT)
        time.sleep(0.05)
        crawl.send_signal(signal.SIGINT)
        assert crawl.wait(60) == 130, out.read_text()
        said = out.read_text()
        assert "stopping: workers end their batches" in said and "Aborted" not in said
        reachable = len(server.web.expected_pages(5))
        assert 0 < _fetched(env) < reachable
        resumed = subprocess.run([*CRAWLCTL, "crawl", "--until-idle"],
                                 env={**os.environ, **env}, capture_output=True, text=True,
                                 timeout=300)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        assert _fetched(env) == reachable


def _fetched(env: dict[str, str]) -> int:
    return int(json.loads(crawlctl(env, "stats", "--json").stdout)["fetched"])
