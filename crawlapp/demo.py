"""`make demo`: crawl a local generated web on the embedded default and print what happened."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from crawlapp.testweb.site import WebSpec
from crawlapp.testweb.trial import crawlctl, run_trial, trial_env

DEMO_REDIS = os.environ.get("CRAWL_DEMO_REDIS_URL", "redis://127.0.0.1:6379/3")


def _tree_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) if root.exists() else 0


def main() -> int:
    data_dir = Path(os.environ.get("CRAWL_DATA_DIR", "./var")).resolve() / "demo"
    env = trial_env(data_dir, DEMO_REDIS)  # the demo's own Redis database, flushed first
    spec = WebSpec(hosts=20, pages_per_host=10, port=0)
    print(f"demo: serving a generated web of {spec.hosts} hosts x {spec.pages_per_host} pages "
          "on 127.0.1.x; crawling it with 1 s between two requests to a host...", flush=True)
    trial = run_trial(spec, env)
    if trial.returncode != 0:
        print(f"demo: the crawl failed (exit {trial.returncode}); logs in {data_dir / 'logs'}")
        return 1
    stats, verdict, web = trial.stats, trial.verdict, trial.web
    print()
    print(f"pages fetched      {trial.pages} of {len(web.expected_pages(5))} reachable, "
          f"on {len(web.hosts())} hosts")
    print(f"wall time          {trial.wall:.1f} s for the whole command; "
          f"{stats['pages_per_second']} pages/s while crawling")
    print(f"crawler CPU        {trial.cpu:.1f} s ({1000 * trial.cpu / max(trial.pages, 1):.1f} "
          "ms per page: workers, beat and dispatcher, start-up included)")
    print(f"errors             {stats['failed']} failed (404s: pages the web links to but lacks, "
          f"and /sitemap.xml probes), {stats['blocked_robots']} blocked by robots.txt")
    print(f"stored             {stats['stored']} bodies, "
          f"{_tree_bytes(data_dir / 'blobs') / 1024:.0f} KiB gzip")
    print(f"server's verdict   {verdict['gap_violations']} gap violations, "
          f"{verdict['overlaps']} overlaps, {verdict['disallowed_requests']} disallowed requests")
    print(f"data               {data_dir / 'crawl.db'} (SQLite), {data_dir / 'blobs'} (bodies)")
    print("\nsample pages:")
    for url in sorted(web.expected_pages(5))[:3]:
        shown = crawlctl(env, "page", "show", url, "--json")
        row = json.loads(shown.stdout)
        print(f"  {row['http_status']} {row['url']}  title={row['title']!r} "
              f"links={row['outbound_links']} key={row['storage_key'][:24]}...")
    print(f"\ninspect: CRAWL_DATA_DIR={data_dir} CELERY_BROKER_URL={DEMO_REDIS} "
          ".venv/bin/crawlctl stats")
    clean = verdict["gap_violations"] == verdict["overlaps"] == 0
    return 0 if clean and trial.pages > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
