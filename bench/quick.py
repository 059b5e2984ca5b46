"""A quick measured crawl for development: `python bench/quick.py HOSTS PAGES [RUNS]`.

CRAWL_* variables in the environment reach the crawler (e.g. CRAWL_BATCH_SIZE=10).
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from crawlapp.testweb.site import WebSpec
from crawlapp.testweb.trial import run_trial, trial_env


def main() -> None:
    hosts, pages = int(sys.argv[1]), int(sys.argv[2])
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    env = trial_env(Path("var/bench").resolve(), "redis://127.0.0.1:6379/4")
    results = []
    for _ in range(runs):
        trial = run_trial(WebSpec(hosts=hosts, pages_per_host=pages, port=0), env, quiet=True)
        per_page = 1000 * trial.cpu / max(trial.pages, 1)
        results.append((trial.pages / trial.wall, per_page))
        print(f"pages={trial.pages} wall={trial.wall:.1f}s rate={trial.pages / trial.wall:.1f}/s "
              f"busy_rate={trial.stats.get('pages_per_second')}/s cpu={trial.cpu:.1f}s "
              f"cpu/page={per_page:.1f}ms verdict={trial.verdict}", flush=True)
    print(f"median: {statistics.median(r[0] for r in results):.1f} pages/s, "
          f"{statistics.median(r[1] for r in results):.1f} CPU-ms/page")


if __name__ == "__main__":
    main()
