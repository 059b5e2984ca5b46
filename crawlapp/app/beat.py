"""Periodic tasks driven by Celery beat."""

from __future__ import annotations

from crawlapp.adapters.context import get_context
from crawlapp.app import app, preload
from crawlapp.app.chain import send_batch

# The modules of beat's tasks, imported in their bodies: beat only sends them, and the worker
# that consumes `control` imports these when it starts (see `preload`).
CONTROL_MODULES = ("crawlapp.adapters.db.engine", "crawlapp.adapters.db.repository",
                   "crawlapp.ops.authority", "crawlapp.ops.dispatcher",
                   "crawlapp.stages.recrawling")
preload({"control": CONTROL_MODULES})


@app.task(name="crawl.dispatch")
def dispatch() -> int:
    """Safety net for the dispatcher process: lease ready hosts and send their batches."""
    from crawlapp.ops.dispatcher import dispatch_once  # imported here: see CONTROL_MODULES
    largest, _ = dispatch_once(get_context(), send_batch)
    return largest


@app.task(name="crawl.recrawl")
def recrawl() -> int:
    """Queue the pages whose next crawl time has come (claimed atomically, crash-safe)."""
    from crawlapp.stages.recrawling import drain  # imported here: see CONTROL_MODULES
    return drain(get_context())


@app.task(name="crawl.authority")
def host_authority() -> int:
    """Score the hosts of the host graph again (PageRank); returns how many were scored."""
    from crawlapp.ops import authority  # imported here: see CONTROL_MODULES
    return authority.compute(get_context())


@app.task(name="crawl.partitions")
def fetch_partitions() -> list[str]:
    """Give the fetch history its partitions for this month and the next (Postgres)."""
    from crawlapp.adapters.db import repository  # imported here: see CONTROL_MODULES
    with get_context().sessions.begin() as session:
        return repository.add_fetch_months(session)


@app.task(name="crawl.host_counts")
def fold_host_counts() -> int:
    """Fold the per-statement deltas of the host counters into their totals (Postgres)."""
    from crawlapp.adapters.db import repository  # imported here: see CONTROL_MODULES
    with get_context().sessions.begin() as session:
        return repository.fold_host_counts(session)
