"""`crawlctl page show` and `crawlctl links`: what the crawler knows of one page."""

from __future__ import annotations

import click

from crawlapp.cli.common import context, emit, json_option
from crawlapp.core.urls import request_url


def _not_known(url: str) -> click.BadParameter:
    return click.BadParameter(f"not known: {url}", param_hint="URL")


@click.group()
def page() -> None:
    """Stored pages.  Example: crawlctl page show https://example.com/"""


@page.command("show")
@click.argument("url")
@json_option
@click.option("--body", is_flag=True, help="Print the stored body too.")
def page_show(url: str, as_json: bool, body: bool) -> None:
    """What the crawler knows of one URL.  Example: crawlctl page show https://example.com/ --json"""
    from crawlapp.ops import inspecting

    ctx = context()
    wanted = request_url(url, max_length=ctx.settings.max_url_length)
    data = inspecting.page(ctx, wanted, with_body=body)
    if data is None:
        raise _not_known(wanted)
    emit(data, as_json, "\n".join(f"{k:>16}: {v}" for k, v in data.items()))


@click.command()
@click.argument("url")
@click.option("--in/--out", "inbound", default=False, help="Links into the page, or out of it (default).")
@click.option("--limit", type=click.IntRange(min=1), default=1000, show_default=True)
@json_option
def links(url: str, inbound: bool, limit: int, as_json: bool) -> None:
    """The recorded links out of a page (or into it, with --in): URL, anchor, nofollow, and
    what the crawler knows of the other page.

    Example: crawlctl links https://example.com/ --in --json
    """
    from crawlapp.ops import inspecting

    ctx = context()
    wanted = request_url(url, max_length=ctx.settings.max_url_length)
    data = inspecting.links(ctx, wanted, inbound, limit)
    if data is None:
        raise _not_known(wanted)
    arrow = "<-" if inbound else "->"
    emit(data, as_json, "\n".join(
        f"{arrow} {d['url']}  [{d['status']}]" + (" nofollow" if d["nofollow"] else "")
        + (f"  {d['anchor']!r}" if d["anchor"] else "") for d in data)
        or f"no links {'into' if inbound else 'out of'} {wanted}")
