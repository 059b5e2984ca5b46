"""`crawlctl recrawl`: pages due for a fetch again."""

from __future__ import annotations

import click

from crawlapp.cli.common import context, host_arg
from crawlapp.core.urls import request_url


@click.command()
@click.argument("urls", nargs=-1)
@click.option("--host", "host", help="Every page of this host.")
@click.option("--all", "all_", is_flag=True, help="Every page.")
@click.option("--now", is_flag=True, help="Due now, instead of at each page's next time.")
def recrawl(urls: tuple[str, ...], host: str | None, all_: bool, now: bool) -> None:
    """Make pages due for a fetch again (a running crawl's beat picks them up).

    Example: crawlctl recrawl --host example.com --now
    """
    from crawlapp.ops.recrawl import recrawl as make_due

    if bool(urls) + bool(host) + all_ != 1:
        raise click.UsageError("give URLs, or --host HOST, or --all")
    ctx = context()
    moved = make_due(ctx, [request_url(u, max_length=ctx.settings.max_url_length) for u in urls]
                     if urls else None, host_arg(host) if host else None, now)
    click.echo(f"{moved} page(s) due {'now' if now else 'at their next crawl time'}")
