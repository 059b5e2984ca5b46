"""`crawlctl frontier`: host states, pausing and resuming hosts, rebuilding from the database."""

from __future__ import annotations

import time

import click

from crawlapp.cli.common import context, emit, host_arg, json_option


@click.group()
def frontier() -> None:
    """The frontier: host states, pausing, rebuilding.  Example: crawlctl frontier stats"""


@frontier.command("stats")
@json_option
def frontier_stats(as_json: bool) -> None:
    """Hosts ready, waiting, leased and parked, URLs queued per shard.

    Example: crawlctl frontier stats --json
    """
    from crawlapp.observe.stats import frontier_report

    data = frontier_report(context())
    lines = [" ".join(f"{k}={v}" for k, v in data["totals"].items()),
             *(f"shard {s['shard']}: ready={s['hosts_ready']} waiting={s['hosts_waiting']} "
               f"leased={s['hosts_leased']} parked={s['hosts_parked']} urls={s['urls_queued']}"
               for s in data["shards"]),
             *(f"parked {host}: {info['reason']}" for host, info in data["parked"].items())]
    emit(data, as_json, "\n".join(lines))


@frontier.command("pause")
@click.argument("host")
def frontier_pause(host: str) -> None:
    """Stop fetching from HOST (its URLs stay queued).  Example: crawlctl frontier pause example.com"""
    name = host_arg(host)
    context().frontier.pause(name)
    click.echo(f"paused {name}")


@frontier.command("resume")
@click.argument("host")
def frontier_resume(host: str) -> None:
    """Fetch from a paused or parked HOST again.  Example: crawlctl frontier resume example.com"""
    name = host_arg(host)
    if not context().frontier.resume(name, time.time()):
        raise click.BadParameter(f"{name} was neither paused nor parked", param_hint="HOST")
    click.echo(f"resumed {name}")


@frontier.command("reshard")
def frontier_reshard() -> None:
    """Lay the frontier out in CRAWL_SHARDS shards after that number changed (the crawl's
    dispatcher and workers stopped first; they start again with the new number, set as here).

    Example: crawlctl frontier reshard
    """
    from crawlapp.ops.rebuild import reshard

    ctx = context()
    moved = reshard(ctx)
    click.echo(f"laid out in {ctx.settings.shards} shards: {moved} host(s) moved")


@frontier.command("rebuild")
def frontier_rebuild() -> None:
    """Restore the frontier and caches from the database after Redis lost them.

    Example: crawlctl frontier rebuild
    """
    from crawlapp.ops.rebuild import rebuild

    restored = rebuild(context(), lambda n: click.echo(f"  {n} URLs queued", err=True))
    click.echo(", ".join(f"{k}={v}" for k, v in restored.items()))
