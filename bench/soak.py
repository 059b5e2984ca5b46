"""Soak: crawl a large generated web while a fetch worker is killed every minute and Redis is
restarted once; report pages lost, pages stored twice, gap violations and worker RSS.

    SOAK_MINUTES=10 SOAK_HOSTS=1000 SOAK_PAGES=30 .venv/bin/python bench/soak.py   (make soak)

Redis is a private redis-server on 127.0.0.1:SOAK_REDIS_PORT (6391), started and restarted
here; the database is SQLite in the data dir (SOAK_DATABASE_URL for another). Writes
soak.json, rss.csv and rss.svg (the RSS trend) to SOAK_DIR (var/soak).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from crawlapp.adapters.redis.local import binary  # noqa: E402
from tests.e2e.helpers import children, kill, start_crawl  # noqa: E402
from testweb.server import start_in_background  # noqa: E402
from testweb.serverlog import fetched_urls, load, summary  # noqa: E402
from testweb.site import Web, WebSpec  # noqa: E402
from testweb.trial import crawlctl, trial_env  # noqa: E402

RSS_EVERY = 10.0


def start_redis(port: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([binary("redis-server"), "--bind", "127.0.0.1", "--port", str(port),
                             "--save", "", "--appendonly", "no"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while subprocess.run([binary("redis-cli"), "-p", str(port), "ping"], capture_output=True,
                         check=False).stdout.strip() != b"PONG":
        if time.monotonic() > deadline:
            raise RuntimeError(f"redis-server did not start on port {port}")
        time.sleep(0.1)
    return proc


def rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def worker_rss(crawl_pid: int) -> dict[str, int]:
    """RSS (KiB) of the fetch workers and of the pipeline worker with its pool processes."""
    out = {"fetch": 0, "pipeline": 0}
    for pid, cmdline in children(crawl_pid).items():
        if " worker " not in cmdline:
            continue
        role = "fetch" if "-P threads" in cmdline else "pipeline"
        out[role] += rss_kib(pid) + sum(rss_kib(c) for c in children(pid))
    return out


def slope_mib_per_min(samples: list[tuple[float, int]]) -> float:
    """Least-squares slope of RSS over time, MiB per minute."""
    if len(samples) < 2:
        return 0.0
    n = len(samples)
    mt = sum(t for t, _ in samples) / n
    mv = sum(v for _, v in samples) / n
    var = sum((t - mt) ** 2 for t, _ in samples) or 1.0
    return sum((t - mt) * (v - mv) for t, v in samples) / var * 60 / 1024


def svg(series: dict[str, list[tuple[float, int]]], path: Path) -> None:
    """A line per series: RSS (MiB) against minutes."""
    width, height, pad = 640, 320, 40
    points = [p for s in series.values() for p in s]
    if not points:
        return
    t_max = max(t for t, _ in points) or 1.0
    v_max = max(v for _, v in points) / 1024 or 1.0
    colors = ["#1f77b4", "#d62728", "#2ca02c"]
    lines = []
    for (name, samples), color in zip(series.items(), colors, strict=False):
        coords = " ".join(f"{pad + t / t_max * (width - 2 * pad):.1f},"
                          f"{height - pad - v / 1024 / v_max * (height - 2 * pad):.1f}"
                          for t, v in samples)
        lines.append(f'<polyline fill="none" stroke="{color}" points="{coords}"/>'
                     f'<text x="{width - pad - 120}" y="{pad + 16 * len(lines)}" fill="{color}">'
                     f'{name}</text>')
    path.write_text(
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="sans-serif" font-size="12">'
        f'<rect width="100%" height="100%" fill="white"/>'
        f'<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" stroke="black"/>'
        f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{height - pad}" stroke="black"/>'
        f'<text x="{pad}" y="{pad - 8}">worker RSS, MiB (max {v_max:.0f})</text>'
        f'<text x="{width - pad - 60}" y="{height - 8}">{t_max / 60:.1f} min</text>'
        + "".join(lines) + "</svg>")


def main() -> int:
    minutes = float(os.environ.get("SOAK_MINUTES", "10"))
    spec = WebSpec(hosts=int(os.environ.get("SOAK_HOSTS", "1000")),
                   pages_per_host=int(os.environ.get("SOAK_PAGES", "30")), port=0,
                   crawl_delay_every=0)
    port = int(os.environ.get("SOAK_REDIS_PORT", "6391"))
    out_dir = Path(os.environ.get("SOAK_DIR", "var/soak")).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    data_dir = out_dir / "data"
    subprocess.run(["rm", "-rf", str(data_dir)], check=True)
    redis_url = f"redis://127.0.0.1:{port}/0"
    delay = 1.0
    extra = {"CRAWL_DEFAULT_DELAY": str(delay), "CRAWL_FETCH_TIMEOUT": "5",
             "CRAWL_LEASE_SECONDS": "20"}
    if os.environ.get("SOAK_DATABASE_URL"):
        extra["DATABASE_URL"] = os.environ["SOAK_DATABASE_URL"]
    env = trial_env(data_dir, redis_url, **extra)
    redis_proc = start_redis(port)
    events: list[str] = []
    rss: dict[str, list[tuple[float, int]]] = {"fetch": [], "pipeline": []}
    log = str(out_dir / "requests.jsonl")
    Path(log).unlink(missing_ok=True)
    try:
        with start_in_background(Web(spec), log) as server:
            seeds = out_dir / "seeds.txt"
            seeds.write_text("\n".join(server.web.seeds()) + "\n")
            started = time.monotonic()
            crawl = start_crawl(env, seeds, out_dir / "crawl.out")
            stop = threading.Event()

            def sample() -> None:
                while not stop.wait(RSS_EVERY):
                    t = time.monotonic() - started
                    for role, kib in worker_rss(crawl.pid).items():
                        if kib:  # not while the crawl is stopping
                            rss[role].append((t, kib))

            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            restarted = False
            next_kill = 60.0
            while crawl.poll() is None and time.monotonic() - started < minutes * 60:
                time.sleep(1)
                t = time.monotonic() - started
                if t >= next_kill:
                    next_kill += 60
                    victims = [p for p, c in children(crawl.pid).items() if "-P threads" in c]
                    if victims:
                        kill(victims[0])
                        events.append(f"{t:.0f}s: fetch worker {victims[0]} killed")
                if not restarted and t >= minutes * 30 + 15:
                    restarted = True
                    redis_proc.kill()
                    redis_proc.wait()
                    redis_proc = start_redis(port)
                    events.append(f"{t:.0f}s: redis-server restarted (all its data lost)")
            code = crawl.wait(3600)
            wall = time.monotonic() - started
            stop.set()
            sampler.join()
        requests = load(log)
        web = server.web
        expected = web.expected_pages(5)
        fetched = fetched_urls(requests)
        verdict = summary(requests, web, delay)
        stats = json.loads(crawlctl(env, "stats", "--json").stdout or "{}")
        db = data_dir / "crawl.db"
        keys = ({k for (k,) in sqlite3.connect(db).execute(
            "SELECT storage_key FROM urls WHERE storage_key IS NOT NULL "
            "UNION SELECT storage_key FROM fetches WHERE storage_key IS NOT NULL")}
            if db.exists() else set())
        bodies = list((data_dir / "blobs").rglob("*.gz"))
        report = {
            "minutes": round(wall / 60, 2), "exit_code": code, "hosts": spec.hosts,
            "expected_pages": len(expected),
            "pages_lost": len(expected - set(fetched)),
            "pages_not_fetched_in_db": len(expected) - int(stats.get("fetched", 0)),
            "pages_stored_twice": len(bodies) - len(keys),
            "pages_fetched_again_after_a_kill": verdict["duplicate_fetches"],
            "gap_violations": verdict["gap_violations"], "overlaps": verdict["overlaps"],
            "requests": verdict["requests"], "events": events,
            "rss_mib_first_last": {r: [round(s[0][1] / 1024, 1), round(s[-1][1] / 1024, 1)]
                                   for r, s in rss.items() if s},
            "rss_trend_mib_per_min": {r: round(slope_mib_per_min(s), 2) for r, s in rss.items()},
        }
        with open(out_dir / "rss.csv", "w") as fh:
            fh.write("seconds,role,rss_kib\n")
            for role, samples in rss.items():
                fh.writelines(f"{t:.0f},{role},{kib}\n" for t, kib in samples)
        svg(rss, out_dir / "rss.svg")
        (out_dir / "soak.json").write_text(json.dumps(report, indent=2))
        print(json.dumps(report, indent=2))
        ok = (code == 0 and report["pages_lost"] == 0 and report["pages_stored_twice"] == 0
              and report["gap_violations"] == 0)
        return 0 if ok else 1
    finally:
        redis_proc.kill()
        redis_proc.wait()


if __name__ == "__main__":
    sys.exit(main())
