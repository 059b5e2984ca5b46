"""The crawl's Celery tasks, for `celery -A tasks`: the app, its stage tasks and beat's tasks
live in crawlapp.app."""

from crawlapp.app import app
from crawlapp.app.beat import dispatch, recrawl
from crawlapp.app.stages import dedup, extract_links, fetch, parse, render, store

__all__ = ["app", "dedup", "dispatch", "extract_links", "fetch", "parse", "recrawl", "render", "store"]
