"""`crawlctl export warc`: stored pages as a WARC file."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import click

from crawlapp.cli.common import context, host_arg


@click.group()
def export() -> None:
    """Export stored pages.  Example: crawlctl export warc --out crawl.warc.gz"""


@export.command("warc")
@click.option("--out", "out", type=click.Path(path_type=Path), required=True,
              help="The .warc.gz file to write.")
@click.option("--since", type=click.DateTime(), help="Only pages fetched at or after this time.")
@click.option("--host", "host", help="Only pages of this host.")
def export_warc(out: Path, since: datetime | None, host: str | None) -> None:
    """Write stored pages as WARC/1.1 request and response records (gzip per record).

    Example: crawlctl export warc --host example.com --out example.warc.gz
    """
    from crawlapp.ops.exporting import export_warc as export_pages

    ctx = context()
    name = host_arg(host) if host else None
    with open(out, "wb") as fh:
        exported = export_pages(ctx, fh, since=since, host=name,
                                progress=lambda n: click.echo(f"  {n} pages", err=True))
    click.echo(f"{exported.written} pages written to {out}")
    if exported.skipped:
        click.echo(exported.describe() + " (crawlctl verify --repair queues them again)")
