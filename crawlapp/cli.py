"""crawlctl: the management command line of the crawler."""

from __future__ import annotations

import json
import logging
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import click

from crawlapp.settings import SettingsError, get_settings
from crawlapp.urls import URLRejected, canonicalize, url_hash


class CrawlCtl(click.Group):
    """Turns failures into one line on stderr: exit 2 for bad input, 1 for runtime errors."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except (SettingsError, URLRejected) as exc:
            raise click.UsageError(str(exc)) from None
        except Exception as exc:
            if ctx.obj and ctx.obj.get("debug"):
                raise
            raise click.ClickException(f"{type(exc).__name__}: {exc}") from None


def _context():  # type: ignore[no-untyped-def]
    from crawlapp.context import get_context

    return get_context()


def _emit(data: Any, as_json: bool, text: str) -> None:
    click.echo(json.dumps(data, indent=2, default=str) if as_json else text)


@click.group(cls=CrawlCtl)
@click.option("--debug", is_flag=True, help="Show tracebacks.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Drive the crawler: migrate, seed, crawl, inspect.

    Example: crawlctl crawl --seeds seeds.txt --until-idle
    """
    ctx.obj = {"debug": debug}
    logging.basicConfig(level=logging.DEBUG if debug else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    get_settings()  # a bad setting fails here, with the variable named


@cli.group()
def db() -> None:
    """Database schema."""


@db.command("upgrade")
def db_upgrade() -> None:
    """Run migrations to the newest schema.  Example: crawlctl db upgrade"""
    from crawlapp.db.engine import upgrade

    upgrade(get_settings())
    click.echo("database is at the newest schema")


@cli.group()
def seed() -> None:
    """Seed URLs."""


def _read_seed_file(path: Path) -> list[str]:
    from crawlapp.seeds import read_seeds

    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as exc:
        raise click.BadParameter(f"cannot read {path}: {exc.strerror}", param_hint="--seeds") from None
    urls, problems = read_seeds(lines, get_settings().max_url_length)
    for problem in problems:
        click.echo(f"{path}:{problem.line}: skipped ({problem.reason}): {problem.text}", err=True)
    return urls


def _prepare_and_seed(urls: list[str]) -> int:
    from crawlapp.blobstore import S3BlobStore
    from crawlapp.db.engine import upgrade
    from crawlapp.seeding import add_seeds

    ctx = _context()
    upgrade(ctx.settings)
    if isinstance(ctx.blobs, S3BlobStore):
        ctx.blobs.ensure_bucket()
    return add_seeds(ctx, urls) if urls else 0


@seed.command("add")
@click.argument("urls", nargs=-1)
@click.option("--file", "file_", type=click.Path(path_type=Path), help="One URL per line.")
def seed_add(urls: tuple[str, ...], file_: Path | None) -> None:
    """Add seed URLs.  Example: crawlctl seed add https://example.com/ --file more.txt"""
    if not urls and file_ is None:
        raise click.UsageError("give URLs or --file PATH")
    canonical = [canonicalize(u, max_length=get_settings().max_url_length) for u in urls]
    if file_ is not None:
        canonical += _read_seed_file(file_)
    added = _prepare_and_seed(canonical)
    click.echo(f"{added} new seed(s) queued, {len(canonical) - added} already known")


@cli.command()
@click.option("--seeds", type=click.Path(path_type=Path), help="Seed file, one URL per line.")
@click.option("--until-idle", is_flag=True, help="Exit once nothing is queued or in flight.")
@click.option("--workers", type=click.IntRange(1, 64), default=None,
              help="Pipeline worker processes (default CRAWL_WORKER_CONCURRENCY).")
def crawl(seeds: Path | None, until_idle: bool, workers: int | None) -> None:
    """Run workers, beat and the dispatcher here until idle or Ctrl-C.

    Example: crawlctl crawl --seeds seeds.txt --until-idle
    """
    from crawlapp import runner, stats

    urls = _read_seed_file(seeds) if seeds is not None else []
    ctx = _context()
    added = _prepare_and_seed(urls)
    if seeds is not None:
        click.echo(f"{added} new seed(s) queued")
    fleet = runner.Fleet(ctx.settings.data_dir / "logs")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = time.time()
    fleet.start(runner.child_commands(ctx, workers or ctx.settings.worker_concurrency))
    try:
        if until_idle:
            runner.wait_until_idle(ctx, fleet)
        else:
            runner.wait_forever(fleet)
    except KeyboardInterrupt:
        click.echo("stopping", err=True)
        raise SystemExit(130) from None
    finally:
        fleet.stop()
    summary = stats.collect(ctx, with_queues=False)
    peak = max((w["peak_rss_mib"] for w in summary["workers"].values()), default=0.0)
    click.echo(f"idle after {time.time() - started:.1f} s: {summary['fetched']} fetched, "
               f"{summary['failed']} failed, {summary['blocked_robots']} blocked by robots, "
               f"{summary['duplicates']} duplicates; {fleet.restarted} restart(s), "
               f"peak worker memory {peak:.0f} MiB; logs in {fleet.log_dir}")


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def stats(as_json: bool) -> None:
    """Counts, rate, frontier and queue lengths.  Example: crawlctl stats --json"""
    from crawlapp.stats import collect

    data = collect(_context())
    lines = [f"{k:>18}: {data[k]}" for k in ("discovered", "queued", "fetched", "redirected",
                                             "failed", "blocked_robots", "too_deep", "stored", "duplicates",
                                             "pages_per_second")]
    lines.append(f"{'frontier':>18}: " + ", ".join(
        f"{k}={v}" for k, v in data["frontier"].items() if k != "shards"))
    lines.append(f"{'queues':>18}: " + ", ".join(f"{k}={v}" for k, v in data["queues"].items()))
    lines.append(f"{'recrawl':>18}: " + ", ".join(
        f"{tier}={v['pages']} ({v['overdue']} overdue)" for tier, v in data["recrawl"].items()))
    _emit(data, as_json, "\n".join(lines))


@cli.group()
def page() -> None:
    """Stored pages."""


@page.command("show")
@click.argument("url")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--body", is_flag=True, help="Print the stored body too.")
def page_show(url: str, as_json: bool, body: bool) -> None:
    """What the crawler knows of one URL.  Example: crawlctl page show https://example.com/ --json"""
    import gzip

    from crawlapp.db import repository

    ctx = _context()
    canonical = canonicalize(url, max_length=ctx.settings.max_url_length)
    with ctx.sessions() as session:
        row = repository.get_url(session, url_hash(canonical))
        if row is None:
            raise click.ClickException(f"not known: {canonical}")
        data = {col: getattr(row, col) for col in (
            "url", "url_hash", "host", "depth", "status", "priority", "http_status",
            "content_type", "content_length", "content_hash", "content_dedup", "duplicate_of",
            "storage_key", "title", "etag", "last_modified", "redirect_to", "redirect_hops",
            "canonical_url", "noindex", "discovered_at",
            "last_fetched_at", "next_crawl_at", "fail_count", "last_error")}
        data["simhash"] = f"{row.simhash & (2**64 - 1):016x}" if row.simhash is not None else None
        data["outbound_links"] = repository.outbound_links(session, row.url_hash)
    if body and data["storage_key"]:
        data["body"] = gzip.decompress(ctx.blobs.get(data["storage_key"])).decode(
            "utf-8", errors="replace")
    _emit(data, as_json, "\n".join(f"{k:>16}: {v}" for k, v in data.items()))


@cli.command()
@click.argument("urls", nargs=-1)
@click.option("--host", "host", help="Every page of this host.")
@click.option("--all", "all_", is_flag=True, help="Every page.")
@click.option("--now", is_flag=True, help="Due now, instead of at each page's next time.")
def recrawl(urls: tuple[str, ...], host: str | None, all_: bool, now: bool) -> None:
    """Make pages due for a fetch again (a running crawl's beat picks them up).

    Example: crawlctl recrawl --host example.com --now
    """
    from sqlalchemy import select

    from crawlapp import recrawl_sets
    from crawlapp.db.models import Url

    if bool(urls) + bool(host) + all_ != 1:
        raise click.UsageError("give URLs, or --host HOST, or --all")
    ctx = _context()
    hashes: list[str] | None = None
    if urls:
        hashes = [url_hash(canonicalize(u, max_length=ctx.settings.max_url_length)) for u in urls]
    elif host:
        with ctx.sessions() as session:
            hashes = list(session.scalars(select(Url.url_hash).where(Url.host == _host_arg(host))))
    if now:
        moved = recrawl_sets.make_due(ctx, hashes, time.time())
    else:
        from crawlapp.rebuild import restore_recrawls

        moved = restore_recrawls(ctx, hashes)
    click.echo(f"{moved} page(s) due {'now' if now else 'at their next crawl time'}")


@cli.group()
def export() -> None:
    """Export stored pages."""


@export.command("warc")
@click.option("--out", "out", type=click.Path(path_type=Path), required=True,
              help="The .warc.gz file to write.")
@click.option("--since", type=click.DateTime(), help="Only pages fetched at or after this time.")
@click.option("--host", "host", help="Only pages of this host.")
def export_warc(out: Path, since: Any, host: str | None) -> None:
    """Write stored pages as WARC/1.1 request and response records (gzip per record).

    Example: crawlctl export warc --host example.com --out example.warc.gz
    """
    from crawlapp.exporting import export_warc as export_pages

    ctx = _context()
    with open(out, "wb") as fh:
        written = export_pages(ctx, fh, since=since, host=_host_arg(host) if host else None,
                               progress=lambda n: click.echo(f"  {n} pages", err=True))
    click.echo(f"{written} pages written to {out}")


@cli.group()
def frontier() -> None:
    """The frontier: host states, pausing, rebuilding."""


@frontier.command("stats")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def frontier_stats(as_json: bool) -> None:
    """Hosts ready, waiting, leased and parked, URLs queued per shard.

    Example: crawlctl frontier stats --json
    """
    from dataclasses import asdict

    ctx = _context()
    now = time.time()
    shards = ctx.frontier.stats(now)
    parked = ctx.frontier.parked()
    data = {
        "shards": [asdict(s) for s in shards],
        "totals": {k: sum(getattr(s, k) for s in shards) for k in (
            "hosts_ready", "hosts_waiting", "hosts_leased", "hosts_parked", "urls_queued")},
        "parked": {host: {"until": until if until != float("inf") else None, "reason": why}
                   for host, (until, why) in parked.items()},
        "batches_in_flight": ctx.frontier.batches_in_flight(now),
    }
    lines = [" ".join(f"{k}={v}" for k, v in data["totals"].items()),
             *(f"shard {s.shard}: ready={s.hosts_ready} waiting={s.hosts_waiting} "
               f"leased={s.hosts_leased} parked={s.hosts_parked} urls={s.urls_queued}"
               for s in shards),
             *(f"parked {host}: {info['reason']}" for host, info in data["parked"].items())]
    _emit(data, as_json, "\n".join(lines))


def _host_arg(host: str) -> str:
    from crawlapp.urls import host_of

    value = host.strip()
    canonical = canonicalize(value if "://" in value else f"http://{value}/")
    return host_of(canonical)


@frontier.command("pause")
@click.argument("host")
def frontier_pause(host: str) -> None:
    """Stop fetching from HOST (its URLs stay queued).  Example: crawlctl frontier pause example.com"""
    name = _host_arg(host)
    _context().frontier.pause(name)
    click.echo(f"paused {name}")


@frontier.command("resume")
@click.argument("host")
def frontier_resume(host: str) -> None:
    """Fetch from a paused or parked HOST again.  Example: crawlctl frontier resume example.com"""
    name = _host_arg(host)
    if not _context().frontier.resume(name, time.time()):
        raise click.ClickException(f"{name} was neither paused nor parked")
    click.echo(f"resumed {name}")


@frontier.command("rebuild")
def frontier_rebuild() -> None:
    """Restore the frontier and caches from the database after Redis lost them.

    Example: crawlctl frontier rebuild
    """
    from crawlapp.rebuild import rebuild

    restored = rebuild(_context(), lambda n: click.echo(f"  {n} URLs queued", err=True))
    click.echo(", ".join(f"{k}={v}" for k, v in restored.items()))


@cli.command()
def dispatcher() -> None:
    """Lease ready hosts and send fetch batches until stopped (one or more per fleet)."""
    from crawlapp import dispatcher as dispatching
    from tasks.chain import send_batch

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    dispatching.run(_context(), send_batch, stop)


@cli.group()
def metrics() -> None:
    """Prometheus metrics of the crawl."""


@metrics.command("serve")
@click.option("--port", type=click.IntRange(1, 65535), default=None,
              help="Port to listen on (default CRAWL_METRICS_PORT, else 9108).")
@click.option("--addr", default=None, help="Address to listen on (default CRAWL_METRICS_ADDR).")
def metrics_serve(port: int | None, addr: str | None) -> None:
    """Serve /metrics for Prometheus until stopped: counters of every worker, frontier,
    re-crawl and queue lengths.  Example: crawlctl metrics serve --port 9108 --addr 0.0.0.0
    """
    from crawlapp.metrics import serve

    ctx = _context()
    port = port or ctx.settings.metrics_port or 9108
    addr = addr or ctx.settings.metrics_addr
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    click.echo(f"serving crawl metrics on http://{addr}:{port}/metrics", err=True)
    serve(ctx, port, addr, stop)


def main() -> None:
    cli(prog_name="crawlctl")


if __name__ == "__main__":
    main()
