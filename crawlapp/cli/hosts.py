"""`crawlctl hosts`: the crawl per host."""

from __future__ import annotations

import time
from typing import Any

import click

from crawlapp.cli.common import context, emit, json_option

HEADER = (f"{'host':<32} {'pages':>6} {'fetched':>7} {'failed':>6} {'blocked':>7} "
          f"{'queued':>6} {'robots':>6} {'delay':>5} {'fails':>5} {'auth':>5}  state")


def _line(h: dict[str, Any]) -> str:
    """One host of `host_report` as a row of the table."""
    return (f"{h['host']:<32} {h['pages']:>6} {h['fetched']:>7} {h['failed']:>6} "
            f"{h['blocked']:>7} {h['queued']:>6} {h['robots_status'] or '-':>6} "
            f"{h['crawl_delay'] or '-':>5} {h['failures_in_a_row']:>5} "
            f"{'-' if h['authority'] is None else format(h['authority'], '.2f'):>5}  "
            f"{h['frontier_state']}"
            + (f" (until {time.strftime('%H:%M:%S', time.localtime(h['until']))})"
               if h["until"] and h["frontier_state"] not in ("ready", "idle") else "")
            + (f": {h['deferred']}" if h["deferred"] and h["frontier_state"] == "waiting" else "")
            + (f", denied by {h['denied_by']}" if h["denied_by"] else "")
            + (f" ({h['given_up']})" if h["given_up"] else ""))


@click.command()
@click.option("--top", type=click.IntRange(min=1), default=20, show_default=True,
              help="How many hosts to show.")
@click.option("--errors", is_flag=True,
              help="Only hosts with failed or blocked pages, a backoff, parked or deferred (not due "
                   "within CRAWL_IDLE_HORIZON); most failures first.")
@json_option
def hosts(top: int, errors: bool, as_json: bool) -> None:
    """Per host: pages fetched, failed, blocked and queued, robots.txt answer and crawl delay,
    failures in a row, authority (from the host graph, 0 to 1; - before it is scored),
    frontier state (ready, waiting, leased, idle, parked or paused) and backoff, and why a
    host deferred waits.

    Example: crawlctl hosts --top 10 --errors
    """
    from crawlapp.observe.stats import host_report

    rows = host_report(context(), top, errors)
    emit(rows, as_json, "\n".join([HEADER, *map(_line, rows)]) if rows else "no hosts")
