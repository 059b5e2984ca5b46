"""`crawlctl export warc`: the fetch history as WARC files."""

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
@click.option("--since", type=click.DateTime(), help="Only fetches at or after this time.")
@click.option("--host", "host", help="Only fetches of this host.")
@click.option("--max-size", type=click.IntRange(min=1), default=1_000_000_000, show_default=True,
              help="Past this many bytes, go on in a next file: OUT becomes <stem>-00000.warc.gz, "
                   "then -00001 ...")
@click.option("--cdxj", is_flag=True, help="Also write a CDXJ index, <stem>.cdxj, beside OUT.")
def export_warc(out: Path, since: datetime | None, host: str | None, max_size: int,
                cdxj: bool) -> None:
    """Write every kept fetch, oldest first, as WARC/1.1 (gzip per record): request and
    response records (redirects and error answers too), revisit records for a 304 or an
    unchanged body, robots.txt answers, a warcinfo record first in each file.

    Example: crawlctl export warc --host example.com --out example.warc.gz --cdxj
    """
    from crawlapp.ops.exporting import cdxj_path, write_cdxj
    from crawlapp.ops.exporting import export_warc as export_pages

    if not out.parent.is_dir():
        raise click.BadParameter(f"no folder {out.parent}", param_hint="--out")
    ctx = context()
    name = host_arg(host) if host else None
    exported = export_pages(ctx, out, since=since, host=name, max_size=max_size,
                            progress=lambda n: click.echo(f"  {n} pages", err=True))
    files = ", ".join(str(p) for p in exported.paths)
    click.echo(f"{exported.written} pages written to {files}")
    click.echo(f"  of them {exported.revisits} revisit(s), {exported.answers} redirect(s), "
               f"error answer(s) and answers too large ({exported.truncated} cut: "
               "WARC-Truncated); "
               f"{exported.robots} robots.txt answer(s) besides")
    if cdxj:
        index = cdxj_path(out)
        write_cdxj(exported.paths, index)
        click.echo(f"index: {index}")
    if exported.skipped:
        click.echo(exported.describe())
