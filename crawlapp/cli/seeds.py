"""`crawlctl seed add`, and the seed file and preparation `crawl --seeds` shares."""

from __future__ import annotations

from pathlib import Path

import click

from crawlapp.cli.common import context
from crawlapp.core.scope import SCOPES
from crawlapp.core.settings import get_settings
from crawlapp.core.urls import request_url


@click.group()
def seed() -> None:
    """Seed URLs.  Example: crawlctl seed add https://example.com/"""


def read_seed_file(path: Path, option: str) -> list[str]:
    """The seed URLs of a file; a line that is not a URL refuses the whole file (exit 2,
    nothing added), as a bad URL argument does."""
    from crawlapp.core.seeds import read_seeds

    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as exc:
        raise click.BadParameter(f"cannot read {path}: {exc.strerror}", param_hint=option) from None
    urls, problems = read_seeds(lines, get_settings().max_url_length)
    if problems:
        shown = "; ".join(f"line {p.line}: {p.text[:80]!r}: {p.sentence}" for p in problems[:3])
        more = f"; and {len(problems) - 3} more" if len(problems) > 3 else ""
        raise click.BadParameter(
            f"{path}: {len(problems)} line(s) are not URLs, nothing added ({shown}{more}); "
            "fix or remove them (a line starting with # is a comment)", param_hint=option)
    return urls


SCOPE_OPTION = click.option(
    "--scope", type=click.Choice(SCOPES, case_sensitive=False), default=None,
    help="What the seeds' links may reach: any, host (the seed's host), domain (its "
         "registrable domain and subdomains), prefix (its URL up to the last /). "
         "Default CRAWL_SCOPE.")


def prepare_and_seed(urls: list[str], scope: str | None = None, lay_out: bool = False) -> int:
    """Make the stores ready (saying so if Redis had lost the frontier; `lay_out`: laying the
    frontier out in CRAWL_SHARDS shards if it was in another number) and add the seeds with
    their scope; returns how many were new."""
    from crawlapp.ops.crawling import prepare
    from crawlapp.ops.seeding import add_seeds

    ctx = context()
    # On a first crawl there is nothing to rebuild and nothing to say.
    restored = prepare(ctx, lay_out)
    if restored and any(restored.values()):
        click.echo("Redis had lost the frontier; rebuilt from the database: "
                   + ", ".join(f"{k}={v}" for k, v in restored.items()), err=True)
    return add_seeds(ctx, urls, scope) if urls else 0


@seed.command("add")
@click.argument("urls", nargs=-1)
@click.option("--file", "file_", type=click.Path(path_type=Path), help="One URL per line.")
@SCOPE_OPTION
def seed_add(urls: tuple[str, ...], file_: Path | None, scope: str | None) -> None:
    """Add seed URLs.  Example: crawlctl seed add https://example.com/ --scope domain"""
    if not urls and file_ is None:
        raise click.UsageError("give URLs or --file PATH")
    seeds = [request_url(u, max_length=get_settings().max_url_length) for u in urls]
    if file_ is not None:
        seeds += read_seed_file(file_, "--file")
    added = prepare_and_seed(seeds, scope)
    click.echo(f"{added} new seed(s) queued, {len(seeds) - added} already known")
