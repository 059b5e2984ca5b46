"""`make demo`: crawl a local generated web on the embedded default and print what happened.

It touches nothing it did not create: Redis is a `redis-server` of its own on a free loopback
port, stopped at the end (`CRAWL_DEMO_REDIS_URL` names a Redis database to use instead; one
that holds keys is refused unless `CRAWL_DEMO_FLUSH=1`), and the crawl's state is the folder
`<CRAWL_DATA_DIR>/demo`, made anew at each run (a folder of that name that the demo did not
make is refused).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from crawlapp.adapters.redis.local import NotEmpty, own_redis, refuse_unless_empty
from testweb.site import WebSpec
from testweb.trial import crawlctl, run_trial, trial_env

MARKER = ".crawlapp-demo"  # in the demo's folder: it was made by the demo


def _tree_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) if root.exists() else 0


class Refused(Exception):
    """The demo would overwrite something it did not create."""


@contextlib.contextmanager
def demo_redis(env: dict[str, str]) -> Iterator[str]:
    """The Redis database of the demo: CRAWL_DEMO_REDIS_URL, checked empty, or database 0 of
    a redis-server of its own for the duration of the block."""
    given = env.get("CRAWL_DEMO_REDIS_URL", "").strip()
    if given:
        try:
            refuse_unless_empty(given, "CRAWL_DEMO_REDIS_URL", "CRAWL_DEMO_FLUSH",
                                env.get("CRAWL_DEMO_FLUSH") == "1")
        except NotEmpty as exc:
            raise Refused(str(exc)) from None
        yield given
        return
    with own_redis(databases=1) as base:
        yield f"{base}/0"


def check_data_dir(data_dir: Path) -> None:
    """Refuse a non-empty folder the demo did not make (the demo deletes it first)."""
    if data_dir.is_dir() and any(data_dir.iterdir()) and not (data_dir / MARKER).exists() \
            and not (data_dir / "testweb-requests.jsonl").exists():
        raise Refused(f"{data_dir} exists and was not made by the demo; the demo deletes its "
                      "folder at each run: set CRAWL_DATA_DIR to another folder")


def _size(env: dict[str, str], name: str, default: int) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or not 1 <= int(raw) <= 1000:
        raise Refused(f"{name}={raw!r}: expected a number of 1 to 1000")
    return int(raw)


def main(environ: dict[str, str] | None = None) -> int:
    environ = dict(os.environ if environ is None else environ)
    data_dir = Path(environ.get("CRAWL_DATA_DIR", "./var")).resolve() / "demo"
    try:
        check_data_dir(data_dir)
        spec = WebSpec(hosts=_size(environ, "CRAWL_DEMO_HOSTS", 20),
                       pages_per_host=_size(environ, "CRAWL_DEMO_PAGES", 10), port=0)
        with demo_redis(environ) as redis_url:
            return _run(spec, data_dir, redis_url, environ)
    except (Refused, RuntimeError) as exc:
        print(f"demo: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, Refused) else 1


def _run(spec: WebSpec, data_dir: Path, redis_url: str, environ: dict[str, str]) -> int:
    own = not environ.get("CRAWL_DEMO_REDIS_URL", "").strip()
    env = trial_env(data_dir, redis_url)
    print(f"demo: serving a generated web of {spec.hosts} hosts x {spec.pages_per_host} pages "
          "on 127.0.1.x; crawling it with 1 s between two requests to a host...", flush=True)
    print(f"demo: Redis {redis_url}" + (" (a redis-server of the demo's own, stopped at the end)"
                                        if own else "") + f"; state in {data_dir}", flush=True)
    trial = run_trial(spec, env)
    (data_dir / MARKER).write_text("made by `make demo`; deleted at its next run\n")
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
    samples = sorted(web.expected_pages(5))[:3]
    for url in samples:
        shown = crawlctl(env, "page", "show", url, "--json")
        row = json.loads(shown.stdout)
        print(f"  {row['http_status']} {row['url']}  title={row['title']!r} "
              f"links={row['outbound_links']} key={row['storage_key'][:24]}...")
    if samples:
        print(f"\ninspect: CRAWL_DATA_DIR={data_dir} .venv/bin/crawlctl page show {samples[0]}"
              + ("\n(the demo's Redis is stopped; `page show`, `links` and `export` read only "
                 "the database)" if own else ""))
    clean = verdict["gap_violations"] == verdict["overlaps"] == 0
    return 0 if clean and trial.pages > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
