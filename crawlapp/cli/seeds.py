"""`crawlctl seed add`, and the seed file and preparation `crawl --seeds` shares."""

from __future__ import annotations

from pathlib import Path

import click

from crawlapp.cli.common import context
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


def prepare_and_seed(urls: list[str]) -> int:
    """Make the stores ready (saying so if Redis had lost the frontier) and add the seeds;
    returns how many were new."""
    from crawlapp.ops.crawling import prepare
    from crawlapp.ops.seeding import add_seeds

    ctx = context()
    # On a first crawl there is nothing to rebuild and nothing to say.
    restored = prepare(ctx)
    if restored and any(restored.values()):
        click.echo("Redis had lost the frontier; rebuilt from the database: "
                   + ", ".join(f"{k}={v}" for k, v in restored.items()), err=True)
    return add_seeds(ctx, urls) if urls else 0


@seed.command("add")
@click.argument("urls", nargs=-1)
@click.option("--file", "file_", type=click.Path(path_type=Path), help="One URL per line.")
def seed_add(urls: tuple[str, ...], file_: Path | None) -> None:
    """Add seed URLs.  Example: crawlctl seed add https://example.com/ --file more.txt"""
    if not urls and file_ is None:
        raise click.UsageError("give URLs or --file PATH")
    seeds = [request_url(u, max_length=get_settings().max_url_length) for u in urls]
    if file_ is not None:
        seeds += read_seed_file(file_, "--file")
    added = prepare_and_seed(seeds)
    click.echo(f"{added} new seed(s) queued, {len(seeds) - added} already known")
