"""`crawlctl verify`: the stored state checked against itself, and repaired."""

from __future__ import annotations

import sys
from dataclasses import asdict

import click

from crawlapp.cli.common import context, emit, host_arg, json_option


@click.command()
@click.option("--host", "host", help="Only the pages of this host (and the claims they own).")
@click.option("--sample", type=click.IntRange(min=1),
              help="Check N rows picked at random (and up to N claims and band entries).")
@click.option("--repair", is_flag=True,
              help="Clear what cannot be trusted and queue those pages again.")
@json_option
@click.pass_context
def verify(click_ctx: click.Context, host: str | None, sample: int | None, repair: bool,
           as_json: bool) -> None:
    """Check that every body a row names is in the blob store, that the content claims and
    SimHash tables in Redis name stored originals, and that every copy's duplicate_of chain
    ends at one. Exit 1 if problems were found and not repaired.

    Example: crawlctl verify --sample 10000, or crawlctl verify --host example.com --repair
    """
    from crawlapp.ops import verify as checks

    ctx = context()
    name = host_arg(host) if host else None
    if name and not checks.host_known(ctx, name):
        raise click.BadParameter(f"no pages of {name}", param_hint="--host")
    with click.progressbar(length=checks.rows_to_check(ctx, name, sample), label="rows",
                           file=sys.stderr) as bar:
        report = checks.verify(ctx, name, sample, repair, bar.update)
    emit(asdict(report), as_json, checks.describe(report))
    if report.total and not repair:
        click_ctx.exit(1)
