"""`make demo`: crawl a local generated web on the embedded default and print what happened."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from crawlapp.testweb.server import start_in_background
from crawlapp.testweb.serverlog import load, summary
from crawlapp.testweb.site import Web, WebSpec

DEMO_REDIS = os.environ.get("CRAWL_DEMO_REDIS_URL", "redis://127.0.0.1:6379/3")


def _crawlctl(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "crawlapp.cli", *args], env=env, text=True,
                          capture_output=True, check=False)


def _tree_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) if root.exists() else 0


def main() -> int:
    import redis

    data_dir = Path(os.environ.get("CRAWL_DATA_DIR", "./var")).resolve() / "demo"
    shutil.rmtree(data_dir, ignore_errors=True)
    data_dir.mkdir(parents=True)
    redis.Redis.from_url(DEMO_REDIS).flushdb()  # the demo's own database: a fresh crawl
    env = {**os.environ, "CRAWL_DATA_DIR": str(data_dir), "CELERY_BROKER_URL": DEMO_REDIS,
           "CRAWL_REDIS_URL": DEMO_REDIS, "CRAWL_ALLOWED_NETWORKS": "127.0.0.0/8"}
    env.pop("DATABASE_URL", None)
    env.pop("S3_BUCKET", None)
    log = str(data_dir / "testweb-requests.jsonl")
    spec = WebSpec(hosts=20, pages_per_host=10, port=0)
    print(f"demo: serving a generated web of {spec.hosts} hosts x {spec.pages_per_host} pages "
          "on 127.0.1.x; crawling it with 1 s between two requests to a host...", flush=True)
    with start_in_background(Web(spec), log) as server:
        web = server.web
        seeds = Path(tempfile.mkstemp(suffix=".txt", dir=data_dir)[1])
        seeds.write_text("\n".join(web.seeds()) + "\n")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.monotonic()
        crawl = subprocess.run([sys.executable, "-m", "crawlapp.cli", "crawl", "--seeds",
                                str(seeds), "--until-idle"], env=env, check=False)
        wall = time.monotonic() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if crawl.returncode != 0:
        print(f"demo: the crawl failed (exit {crawl.returncode}); logs in {data_dir / 'logs'}")
        return 1
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    stats = json.loads(_crawlctl(env, "stats", "--json").stdout)
    verdict = summary(load(log), web, 1.0)
    pages = stats["fetched"]
    print()
    print(f"pages fetched      {pages} of {len(web.expected_pages(5))} reachable, "
          f"on {len(web.hosts())} hosts")
    print(f"wall time          {wall:.1f} s for the whole command; "
          f"{stats['pages_per_second']} pages/s while crawling")
    print(f"crawler CPU        {cpu:.1f} s ({1000 * cpu / max(pages, 1):.1f} ms per page, "
          "workers, beat and dispatcher together)")
    print(f"errors             {stats['failed']} failed (the web links to some missing pages), "
          f"{stats['blocked_robots']} blocked by robots.txt")
    print(f"stored             {stats['stored']} bodies, "
          f"{_tree_bytes(data_dir / 'blobs') / 1024:.0f} KiB gzip")
    print(f"server's verdict   {verdict['gap_violations']} gap violations, "
          f"{verdict['overlaps']} overlaps, {verdict['disallowed_requests']} disallowed requests")
    print(f"data               {data_dir / 'crawl.db'} (SQLite), {data_dir / 'blobs'} (bodies)")
    print("\nsample pages:")
    for url in sorted(web.expected_pages(5))[:3]:
        row = json.loads(_crawlctl(env, "page", "show", url, "--json").stdout)
        print(f"  {row['http_status']} {row['url']}  title={row['title']!r} "
              f"links={row['outbound_links']} key={row['storage_key'][:24]}...")
    print(f"\ninspect: CRAWL_DATA_DIR={data_dir} CELERY_BROKER_URL={DEMO_REDIS} "
          ".venv/bin/crawlctl stats")
    clean = verdict["gap_violations"] == verdict["overlaps"] == 0
    return 0 if clean and pages > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
