"""`crawlctl crawl`: a whole crawl on this machine, and what it did."""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import click

from crawlapp.cli.common import context
from crawlapp.cli.seeds import SCOPE_OPTION, prepare_and_seed, read_seed_file
from crawlapp.core.settings import TLS_VERIFY_OFF

MIB = 1 << 20


def _interrupt_once() -> Callable[..., None]:
    """A SIGINT handler that stops the crawl on the first Ctrl-C and ignores the next ones
    (a terminal sends one to every process of the group, and people press it twice), so
    the shutdown is never cut short."""
    seen = threading.Event()

    def handler(*_: object) -> None:
        if not seen.is_set():
            seen.set()
            raise KeyboardInterrupt

    return handler


def _stopping() -> None:
    click.echo("stopping: workers end their batches; the crawl's state is kept, and "
               "`crawlctl crawl` goes on from it", err=True)


@click.command()
@click.option("--seeds", type=click.Path(path_type=Path), help="Seed file, one URL per line.")
@click.option("--until-idle", is_flag=True,
              help="Exit once nothing is in flight or due within CRAWL_IDLE_HORIZON.")
@click.option("--workers", type=click.IntRange(1, 64), default=None,
              help="Pipeline worker processes (default CRAWL_WORKER_CONCURRENCY).")
@click.option("--progress", type=click.FloatRange(min=0), default=60.0, show_default=True,
              metavar="SECONDS", help="Print a line of progress this often (0: never).")
@SCOPE_OPTION
def crawl(seeds: Path | None, until_idle: bool, workers: int | None, progress: float,
          scope: str | None) -> None:
    """Run workers, beat and the dispatcher here until idle or Ctrl-C.

    Without --until-idle it keeps the collection fresh for as long as it runs: every
    --progress seconds a line says what it fetched since the last (new pages, pages again,
    changed or not), what waits and how fresh the collection is estimated to be.

    Example: crawlctl crawl --seeds seeds.txt --scope host --until-idle
    """
    from crawlapp.app.beat import BeatThread
    from crawlapp.app.chain import send_batch
    from crawlapp.observe import stats
    from crawlapp.observe.progress import Progress
    from crawlapp.ops import crawling

    urls = read_seed_file(seeds, "--seeds") if seeds is not None else []
    ctx = context()
    if scope is not None and seeds is None:
        raise click.UsageError("--scope applies to the seeds of --seeds FILE")
    if not ctx.settings.tls_verify:
        click.echo(f"WARNING: {TLS_VERIFY_OFF}", err=True)
    # This crawl starts every process it needs, with its own settings: the frontier may be
    # laid out anew for its CRAWL_SHARDS.
    added = prepare_and_seed(urls, scope, lay_out=True)
    if seeds is not None:
        click.echo(f"{added} new seed(s) queued")
    before = stats.outcomes(ctx)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    signal.signal(signal.SIGINT, _interrupt_once())
    shown = Progress(ctx, progress, click.echo)
    try:
        beat = BeatThread(ctx.settings.data_dir / "celerybeat-schedule")
        done = crawling.crawl(ctx, send_batch, beat, workers or ctx.settings.worker_concurrency,
                              until_idle, on_interrupt=_stopping, tick=shown)
    except KeyboardInterrupt:
        shown.summary()
        raise SystemExit(130) from None
    report = stats.run_report(ctx, before, done.idle_at)
    run = report["run"]
    click.echo(f"idle after {done.seconds:.1f} s (stopped in {done.stopping:.1f} s): this run "
               f"{run['fetched']} fetched, {run['failed']} failed, {run['blocked_robots']} "
               f"blocked by robots, {run['duplicates']} duplicates (the crawl so far: {report['fetched']} "
               f"fetched, {report['failed']} failed); {done.restarted} restart(s), "
               f"peak worker memory {report['peak_rss_mib']:.0f} MiB; logs in {done.log_dir}")
    click.echo(f"peak memory of the crawl's processes {done.peak_memory / MIB:.0f} MiB (PSS: "
               + ", ".join(f"{kind} {size / MIB:.0f}" for kind, size in done.memory_shares.items())
               + ")")
    given_up = report["hosts_given_up"]
    if given_up:
        _echo_hosts(f"{len(given_up)} host(s) given up as unreachable (crawlctl frontier "
                    "resume HOST tries again):", stats.given_up_lines(given_up))
    deferred = report["hosts_deferred"]
    if deferred:
        _echo_hosts(f"{len(deferred)} host(s) deferred, not due within CRAWL_IDLE_HORIZON: "
                    "their URLs wait in the frontier, and the next crawl asks them at their "
                    "time:", stats.deferred_lines(deferred))


def _echo_hosts(heading: str, lines: list[str]) -> None:
    click.echo(heading)
    for line in lines:
        click.echo(f"  {line}")
