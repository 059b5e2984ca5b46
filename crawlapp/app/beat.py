"""Periodic tasks driven by Celery beat."""

from __future__ import annotations

from crawlapp.adapters.context import get_context
from crawlapp.adapters.db import repository
from crawlapp.app import app
from crawlapp.app.chain import send_batch
from crawlapp.ops import authority
from crawlapp.ops.dispatcher import dispatch_once
from crawlapp.stages.recrawling import drain


@app.task(name="crawl.dispatch")
def dispatch() -> int:
    """Safety net for the dispatcher process: lease ready hosts and send their batches."""
    largest, _ = dispatch_once(get_context(), send_batch)
    return largest


@app.task(name="crawl.recrawl")
def recrawl() -> int:
    """Queue the pages whose next crawl time has come (claimed atomically, crash-safe)."""
    return drain(get_context())


@app.task(name="crawl.authority")
def host_authority() -> int:
    """Score the hosts of the host graph again (PageRank); returns how many were scored."""
    return authority.compute(get_context())


@app.task(name="crawl.partitions")
def fetch_partitions() -> list[str]:
    """Give the fetch history its partitions for this month and the next (Postgres)."""
    with get_context().sessions.begin() as session:
        return repository.add_fetch_months(session)
