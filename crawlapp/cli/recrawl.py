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
@click.option("--rules", "rules", is_flag=True,
              help="Only show the interval bounds that apply to each URL (CRAWL_RECRAWL_RULES).")
def recrawl(urls: tuple[str, ...], host: str | None, all_: bool, now: bool, rules: bool) -> None:
    """Make pages due for a fetch again (a running crawl's beat picks them up).

    Example: crawlctl recrawl --host example.com --now
    """
    from crawlapp.ops.recrawl import recrawl as make_due

    if bool(urls) + bool(host) + all_ != 1:
        raise click.UsageError("give URLs, or --host HOST, or --all")
    if rules:
        _show_rules(urls)
        return
    ctx = context()
    moved = make_due(ctx, [request_url(u, max_length=ctx.settings.max_url_length) for u in urls]
                     if urls else None, host_arg(host) if host else None, now)
    click.echo(f"{moved} page(s) due {'now' if now else 'at their next crawl time'}")


def _show_rules(urls: tuple[str, ...]) -> None:
    """Each URL's interval bounds in seconds and the rule they come from."""
    from crawlapp.core.settings import get_settings
    from crawlapp.core.urls import host_of

    settings = get_settings()
    default = settings.recrawl_bounds
    for raw in urls:
        url = request_url(raw, max_length=settings.max_url_length)
        rule = settings.recrawl_rule_set.rule_for(url, host_of(url))
        bounds = default if rule is None else rule.bounds(default)
        shown = (f"ttl={bounds.fixed:.0f}" if bounds.fixed is not None
                 else f"min={bounds.low:.0f} max={bounds.high:.0f}")
        click.echo(f"{url}: {shown} ({'rule ' + rule.pattern if rule else 'the settings'})")
