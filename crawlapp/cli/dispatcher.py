"""`crawlctl dispatcher`: the dispatcher alone, for a fleet."""

from __future__ import annotations

import click

from crawlapp.cli.common import context, stop_on_signals


@click.command()
def dispatcher() -> None:
    """Lease ready hosts and send fetch batches until stopped (one or more per fleet).

    Example: crawlctl dispatcher
    """
    stop = stop_on_signals()  # before the imports: loading the Celery app takes seconds
    from crawlapp.app.chain import send_batch
    from crawlapp.ops import dispatcher as dispatching

    dispatching.run(context(), send_batch, stop)
