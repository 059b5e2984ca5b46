"""Periodic tasks driven by Celery beat."""

from __future__ import annotations

from crawlapp.celery_app import app
from crawlapp.context import get_context
from crawlapp.dispatcher import dispatch_once
from tasks.chain import send_batch


@app.task(name="crawl.dispatch")
def dispatch() -> int:
    """Safety net for the dispatcher process: lease ready hosts and send their batches."""
    largest, _ = dispatch_once(get_context(), send_batch)
    return largest
