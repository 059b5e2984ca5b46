"""Crawl statistics from the database, the frontier, the counters and the broker."""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Any

from crawlapp import denylist, recrawl_sets, workers
from crawlapp.context import Context
from crawlapp.db import repository
from crawlapp.pipeline import counters
from crawlapp.urls import host_of


def queue_lengths(queue_names: list[str]) -> dict[str, int]:
    """Messages waiting in each Celery queue (works for the Redis and AMQP brokers)."""
    from crawlapp.celery_app import app

    out: dict[str, int] = {}
    with app.connection_for_read() as conn:
        channel = conn.default_channel
        for name in queue_names:
            try:
                out[name] = int(channel.queue_declare(queue=name, passive=True).message_count)
            except Exception:  # a queue nobody declared yet is empty
                out[name] = 0
    return out


def render_summary(counts: dict[str, int], stage_cpu: dict[str, float]) -> dict[str, Any]:
    """Pages through the render stage, rendered or not (by error), their wall and CPU time
    (browser included), sub-requests fetched and refused (by reason). Pure."""
    render = {k.removeprefix("render:"): v for k, v in counts.items() if k.startswith("render:")}
    pages = render.get("pages", 0)
    return {
        "pages": pages, "rendered": render.get("rendered", 0),
        "errors": {k.removeprefix("error_"): v for k, v in render.items()
                   if k.startswith("error_")},
        "lease_lost": render.get("lease_lost", 0),
        "seconds": round(render.get("ms", 0) / 1000, 3),
        "seconds_per_page": round(render.get("ms", 0) / 1000 / pages, 3) if pages else 0.0,
        "cpu_seconds": round(stage_cpu.get("render", 0.0), 3),
        "subrequests": render.get("subrequests", 0),
        "cached": render.get("cached", 0),
        "refused": {k.removeprefix("refused_"): v for k, v in render.items()
                    if k.startswith("refused_")},
    }


def collect(ctx: Context, with_queues: bool = True) -> dict[str, Any]:
    """Everything `crawlctl stats` shows, as one JSON-ready dict."""
    with ctx.sessions() as session:
        by_status = repository.status_counts(session)
        duplicates = repository.dedup_count(session)
        stored = repository.stored_bodies(session)
        first, last = repository.fetch_window(session)
    counts = counters.read(ctx)
    fetched = by_status.get("fetched", 0)
    requested = fetched + by_status.get("redirected", 0) + by_status.get("failed", 0)
    window = (last - first).total_seconds() if first and last else 0.0
    now = time.time()
    shards = ctx.frontier.stats(now)
    stats: dict[str, Any] = {
        "discovered": sum(by_status.values()),
        "queued": by_status.get("queued", 0),
        "fetched": fetched,
        "redirected": by_status.get("redirected", 0),
        "failed": by_status.get("failed", 0),
        "blocked_robots": by_status.get("blocked", 0),
        "too_deep": by_status.get("too_deep", 0),
        "stored": stored,
        "duplicates": duplicates,
        "pages_per_second": round(requested / window, 2) if window > 0 else 0.0,
        "crawl_seconds": round(window, 3),
        "by_status": by_status,
        "frontier": {
            "urls_queued": sum(s.urls_queued for s in shards),
            "hosts_ready": sum(s.hosts_ready for s in shards),
            "hosts_waiting": sum(s.hosts_waiting for s in shards),
            "hosts_leased": sum(s.hosts_leased for s in shards),
            "batches_in_flight": ctx.frontier.batches_in_flight(now),
            "shards": [asdict(s) for s in shards],
        },
        "counters": counts,
        "stage_cpu_seconds": counters.read_stage_cpu(ctx),
        "render": render_summary(counts, counters.read_stage_cpu(ctx)),
        "recrawl": recrawl_sets.stats(ctx, now),
        "workers": workers.read(ctx),
    }
    if with_queues:
        from celeryconfig import FETCH_QUEUES, PIPELINE_QUEUES, RENDER_QUEUES

        stats["queues"] = queue_lengths([*FETCH_QUEUES, *RENDER_QUEUES, *PIPELINE_QUEUES])
    return stats


def host_report(ctx: Context, top: int, errors_only: bool = False) -> list[dict[str, Any]]:
    """Per host: pages by outcome, robots.txt answer and delay, frontier state, denylist.

    The `top` hosts by pages known, or with `errors_only` those with failed or blocked
    pages or a backoff, most failures first.
    """
    with ctx.sessions() as session:
        by_host = repository.host_status_counts(session)
        robots = {host_of(h.origin + "/"): h for h in repository.hosts_table(session)}
        patterns = [d.pattern for d in repository.denylist(session)]
    hosts: list[dict[str, Any]] = [{"host": host, "pages": sum(counts.values()),
              "fetched": counts.get("fetched", 0), "failed": counts.get("failed", 0),
              "blocked": counts.get("blocked", 0), "queued": counts.get("queued", 0),
              "deleted": counts.get("deleted", 0)} for host, counts in by_host.items()]
    states = ctx.frontier.host_states([h["host"] for h in hosts], time.time())
    for h in hosts:
        state = states[h["host"]]
        known = robots.get(h["host"])
        h.update(frontier_state=state.state, frontier_queued=state.queued,
                 failures_in_a_row=state.failures, until=state.until,
                 robots_status=known.robots_status if known else None,
                 crawl_delay=known.crawl_delay if known else None,
                 denied_by=denylist.denied_by(h["host"], patterns))
    if errors_only:
        hosts = [h for h in hosts if h["failed"] or h["blocked"] or h["failures_in_a_row"]
                 or h["denied_by"] or h["frontier_state"] not in ("ready", "waiting", "leased",
                                                                  "idle")]
        hosts.sort(key=lambda h: (-h["failed"], -h["blocked"], -h["failures_in_a_row"], h["host"]))
    else:
        hosts.sort(key=lambda h: (-h["pages"], h["host"]))
    return hosts[:top]
