"""`python -m crawlapp.app worker ...`: the workers of `crawlctl crawl`, started without
Celery's command line, which loads every installed Celery plugin (Flower with its web server,
an interactive shell) at half a second of CPU and 25 MB a process. A fleet runs the same
workers with `celery -A crawlapp.app worker` (README, "Running a fleet"); `crawlctl crawl`
runs beat as a thread of its own (crawlapp.app.beat.BeatThread).

Workers never gossip or synchronise with each other at start (`--without-gossip
--without-mingle`), as in the fleet's commands.
"""

from __future__ import annotations

import argparse
import sys

from celery.utils.nodenames import default_nodename, host_format

from crawlapp.app import app


def _arguments() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m crawlapp.app")
    roles = parser.add_subparsers(dest="role", required=True)
    worker = roles.add_parser("worker")
    worker.add_argument("-Q", "--queues", required=True, help="comma-separated")
    worker.add_argument("-P", "--pool", required=True, choices=("threads", "prefork", "solo"))
    worker.add_argument("-c", "--concurrency", type=int, required=True)
    worker.add_argument("-n", "--hostname", required=True, help="node name; %%h is the host")
    worker.add_argument("-E", "--task-events", action="store_true")
    worker.add_argument("--loglevel", default="WARNING")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _arguments().parse_args(argv)
    worker = app.Worker(hostname=host_format(default_nodename(args.hostname)),
                        pool_cls=args.pool, concurrency=args.concurrency,
                        queues=args.queues.split(","), loglevel=args.loglevel,
                        task_events=args.task_events, without_gossip=True,
                        without_mingle=True)
    worker.start()
    return int(worker.exitcode or 0)


if __name__ == "__main__":
    sys.exit(main())
