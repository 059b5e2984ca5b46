"""`crawlctl metrics serve`: the crawl's Prometheus endpoint."""

from __future__ import annotations

import click

from crawlapp.cli.common import context, stop_on_signals


@click.group()
def metrics() -> None:
    """Prometheus metrics of the crawl.  Example: crawlctl metrics serve --port 9108"""


@metrics.command("serve")
@click.option("--port", type=click.IntRange(1, 65535), default=None,
              help="Port to listen on (default CRAWL_METRICS_PORT, else 9108).")
@click.option("--addr", default=None, help="Address to listen on (default CRAWL_METRICS_ADDR).")
def metrics_serve(port: int | None, addr: str | None) -> None:
    """Serve /metrics for Prometheus until stopped: counters of every worker, frontier,
    re-crawl and queue lengths.  Example: crawlctl metrics serve --port 9108 --addr 0.0.0.0
    """
    stop = stop_on_signals()
    from crawlapp.observe.metrics import serve

    ctx = context()
    port = port or ctx.settings.metrics_port or 9108
    addr = addr or ctx.settings.metrics_addr
    click.echo(f"serving crawl metrics on http://{addr}:{port}/metrics", err=True)
    serve(ctx, port, addr, stop)
