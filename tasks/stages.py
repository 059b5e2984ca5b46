"""The five chained stages: fetch, parse, dedup, store, extract_links. Each takes a batch."""

from __future__ import annotations

from collections import Counter
from typing import Any

import redis
from botocore.exceptions import BotoCoreError, ClientError
from sqlalchemy.exc import OperationalError

from crawlapp.celery_app import app
from crawlapp.context import get_context
from crawlapp.frontier import Lease
from crawlapp.pipeline import counters
from crawlapp.pipeline.dedup import dedup_pages
from crawlapp.pipeline.fetching import fetch_batch
from crawlapp.pipeline.linking import extract_links as extract_links_stage
from crawlapp.pipeline.pages import Page
from crawlapp.pipeline.parsing import parse_pages
from crawlapp.pipeline.storing import store_pages

# Infrastructure failures retry with backoff; politeness never waits through a retry.
RETRY = {"autoretry_for": (redis.ConnectionError, redis.TimeoutError, OperationalError,
                           BotoCoreError, ClientError),
         "retry_backoff": 2, "retry_backoff_max": 60, "max_retries": 20}


@app.task(name="crawl.fetch")
def fetch(batch_id: str, leases: list[list[Any]]) -> list[Page]:
    pages = fetch_batch(get_context(), [Lease.from_wire(raw) for raw in leases])
    counters.bump(get_context(), Counter(p["status"] for p in pages), "pages:")
    return pages


@app.task(name="crawl.parse", **RETRY)
def parse(pages: list[Page]) -> list[Page]:
    ctx = get_context()
    parsed, rejected = parse_pages(pages, ctx.settings)
    counters.bump(ctx, rejected, "rejected:")
    return parsed


@app.task(name="crawl.dedup", **RETRY)
def dedup(pages: list[Page]) -> list[Page]:
    return dedup_pages(get_context(), pages)


@app.task(name="crawl.store", **RETRY)
def store(pages: list[Page]) -> list[Page]:
    return store_pages(get_context(), pages)


@app.task(name="crawl.extract_links", **RETRY)
def extract_links(pages: list[Page], batch_id: str) -> int:
    ctx = get_context()
    added, refused = extract_links_stage(ctx, pages)
    counters.bump(ctx, refused, "refused:")
    ctx.frontier.finish_batch(batch_id)
    return added
