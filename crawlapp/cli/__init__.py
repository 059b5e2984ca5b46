"""crawlctl: the management command line of the crawler, one module per command or group."""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from typing import Any

import click

from crawlapp.adapters.errors import transient_errors
from crawlapp.cli import (
    checks,
    crawl,
    db,
    dispatcher,
    export,
    frontier,
    hosts,
    metrics,
    pages,
    queues,
    recrawl,
    seeds,
    stats,
    takedown,
    verify,
)
from crawlapp.core.errors import CrawlError, InputError
from crawlapp.core.settings import get_settings
from crawlapp.core.urls import URLRejected


class CrawlCtl(click.Group):
    """Turns every failure into one line on stderr and its exit status: 2 for bad usage or
    input (click's usage errors, InputError), 1 for a declined confirmation, a server that
    is down (TransientError) or any other runtime error (with --debug: its traceback)."""

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,  # type: ignore[override]
             complete_var: str | None = None, standalone_mode: bool = True,
             **extra: Any) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, **extra)
        try:
            code = super().main(args, prog_name, complete_var, False, **extra)
        except click.exceptions.NoArgsIsHelpError as exc:
            exc.show()  # a group without its command: its help, on stderr
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            hint = (f" (see '{exc.ctx.command_path} --help')"
                    if isinstance(exc, click.UsageError) and exc.ctx is not None else "")
            click.echo(f"Error: {exc.format_message()}{hint}", err=True)
            sys.exit(exc.exit_code)
        except click.Abort:
            click.echo("Aborted, nothing changed.", err=True)
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            with transient_errors():
                return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except InputError as exc:
            raise click.UsageError(_sentence(exc)) from None
        except Exception as exc:
            if ctx.obj and ctx.obj.get("debug"):
                raise
            raise click.ClickException(_sentence(exc)) from None


def _sentence(exc: Exception) -> str:
    """A failure in one line for people: a refused URL with its reason in words and its code,
    the crawler's own errors as they say (a server that is down names itself), anything
    else with its type."""
    if isinstance(exc, URLRejected):
        return f"{exc.url[:200]!r}: {exc.sentence} ({exc.reason})"
    if isinstance(exc, CrawlError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


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


for _command in (db.db, seeds.seed, crawl.crawl, dispatcher.dispatcher, stats.stats,
                hosts.hosts, pages.page, pages.links, checks.url_group, checks.robots_group,
                recrawl.recrawl, export.export, verify.verify, frontier.frontier,
                queues.queues, takedown.block, takedown.unblock, takedown.delete,
                metrics.metrics):
    cli.add_command(_command)


def main() -> None:
    cli(prog_name="crawlctl")
