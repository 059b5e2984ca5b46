"""`crawlctl stats`: the crawl's figures, once or as a live view (--watch)."""

from __future__ import annotations

import signal
from typing import Any

import click

from crawlapp.cli.common import context, emit, json_option, stop_on_signals

# The counts `stats` shows first, one a line.
COUNTS = ("discovered", "queued", "fetched", "redirected", "failed", "blocked_robots",
          "too_deep", "stored", "duplicates", "pages_per_second")


def _pairs(values: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in values.items())


def _text(data: dict[str, Any], where: str) -> str:
    """The stats of `collect` for people; `where` is the crawl's database."""
    from crawlapp.observe.stats import given_up_lines, verify_line

    lines = [] if data["started"] else [
        f"no crawl yet in {where} (crawlctl crawl --seeds FILE --until-idle starts one)"]
    lines += [f"{k:>18}: {data[k]}" for k in COUNTS]
    lines.append(f"{'frontier':>18}: "
                 + _pairs({k: v for k, v in data["frontier"].items() if k != "shards"}))
    lines.append(f"{'queues':>18}: " + _pairs(data["queues"]))
    render = data["render"]
    if render["pages"]:
        lines.append(f"{'render':>18}: " + ", ".join([
            f"{render['rendered']} of {render['pages']} rendered",
            f"{render['seconds']} s ({render['seconds_per_page']} s/page, "
            f"{render['cpu_seconds']} CPU s)", f"{render['subrequests']} sub-requests",
            *(f"{k}={v}" for k, v in {**render["errors"], **render["refused"]}.items())]))
    for label, key in (("pages unread", "unread"), ("parse errors", "parse_errors"),
                       ("links rejected", "rejected_links"), ("links refused", "refused_links")):
        if data[key]:
            lines.append(f"{label:>18}: " + _pairs(data[key]))
    lines.append(f"{'last verify':>18}: {verify_line(data['last_verify'])}")
    lines.append(f"{'recrawl':>18}: " + ", ".join(
        f"{tier}={v['pages']} ({v['overdue']} overdue)" for tier, v in data["recrawl"].items()))
    fresh = data["freshness"]
    if fresh["pages_planned"]:
        fetches, refreshes = fresh["fetches"], fresh["refreshes"]
        lines.append(f"{'freshness':>18}: {fresh['estimated']:.1%} estimated over "
                     f"{fresh['pages_planned']} pages ({fresh['policy']}), {fresh['due']} due; "
                     f"fetches {fetches['discovery']} new, {fetches['refresh']} again "
                     f"({refreshes['changed']} changed, {refreshes['unchanged']} unchanged "
                     f"({refreshes['markup_only']} in their markup only), "
                     f"{refreshes['made_due_by_sitemaps']} by sitemaps, "
                     f"{refreshes['failed']} failed and {refreshes['refused']} refused by "
                     "robots.txt, their copies kept); "
                     f"{fresh['leases_yielded']} leases ended early for a better URL")
    if data["politeness_held_up"]:
        lines.append(f"{'held for a turn':>18}: {data['politeness_held_up']} host(s) leased "
                     "while still being asked: the fetch workers' log says which (error)")
    if data["hosts_given_up"]:
        lines.append(f"{'hosts given up':>18}: {len(data['hosts_given_up'])}")
        lines += [f"{'':>20}{line}" for line in given_up_lines(data["hosts_given_up"])]
    return "\n".join(lines)


@click.command()
@json_option
@click.option("--watch", is_flag=True, help="A live view, redrawn until Ctrl-C.")
@click.option("--interval", type=click.FloatRange(min=0.5), default=2.0, show_default=True,
              help="Seconds between redraws of --watch.")
def stats(as_json: bool, watch: bool, interval: float) -> None:
    """Counts, rate, frontier and queue lengths.

    --watch shows the rate over the last minute, what is queued and in flight, every
    shard's queue, errors by kind and the top hosts, redrawn every --interval seconds.

    Example: crawlctl stats --json, or crawlctl stats --watch --interval 5
    """
    if watch:
        if as_json:
            raise click.UsageError("--watch draws a live view: it does not go with --json")
        from crawlapp.observe import watch as live

        stop = stop_on_signals()

        def interrupted(*_: object) -> None:
            stop.set()  # the view ends after this frame, whatever swallows the interrupt
            raise KeyboardInterrupt  # and a query waiting (on a lock) is cancelled at once

        signal.signal(signal.SIGINT, interrupted)
        try:
            live.run(context(), interval, stop)
        except KeyboardInterrupt:
            pass
        return
    from crawlapp.observe.stats import collect, where_the_crawl_is

    ctx = context()
    data = collect(ctx)
    emit(data, as_json, _text(data, where_the_crawl_is(ctx)))
