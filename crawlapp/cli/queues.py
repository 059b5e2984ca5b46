"""`crawlctl queues`: the Celery queues' lengths, and purging them."""

from __future__ import annotations

import click

from crawlapp.cli.common import context, emit, json_option
from crawlapp.core.settings import get_settings


def crawl_queues() -> list[str]:
    """Every queue of the crawler, in the order `queues` lists them."""
    from crawlapp.core.queues import Queues

    return list(Queues.of(get_settings()).all)


@click.group(invoke_without_command=True)
@json_option
@click.pass_context
def queues(ctx: click.Context, as_json: bool) -> None:
    """Messages waiting in every Celery queue; `queues purge` empties them.

    Example: crawlctl queues --json
    """
    if ctx.invoked_subcommand is not None:
        return
    from crawlapp.adapters.broker import queue_lengths

    lengths = queue_lengths(get_settings().broker_url, crawl_queues())
    emit(lengths, as_json, "\n".join(f"{name:>8}: {n}" for name, n in lengths.items()))


@queues.command("purge")
@click.argument("names", nargs=-1)
@click.option("--all", "all_", is_flag=True, help="Every queue of the crawler.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def queues_purge(names: tuple[str, ...], all_: bool, yes: bool) -> None:
    """Delete the waiting messages of queues. The URLs of a purged batch go back to the
    frontier once its deadline passes, like those of a batch lost with a worker.

    Example: crawlctl queues purge fetch.3 --yes
    """
    from crawlapp.ops.purging import purge_queues

    known = crawl_queues()
    if bool(names) == all_:
        raise click.UsageError("give queue NAMEs or --all")
    unknown = [n for n in names if n not in known]
    if unknown:
        raise click.BadParameter(f"no such queue: {', '.join(unknown)} (queues: {', '.join(known)})",
                                 param_hint="NAME")
    chosen = known if all_ else list(dict.fromkeys(names))
    if not yes:
        click.confirm(f"Purge {', '.join(chosen)}?", abort=True)
    purged = purge_queues(context(), chosen)
    click.echo(f"{sum(purged.values())} message(s) purged from {', '.join(chosen)}")
