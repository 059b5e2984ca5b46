"""`crawlctl stats --watch`: a live terminal view of the crawl, drawn with rich."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.table import Table

from crawlapp.adapters.context import Context
from crawlapp.core.queues import fetch_queue

WINDOW = 60.0  # seconds the rate is measured over
REQUESTS = ("pages:fetched", "pages:redirected", "pages:failed")


def requests_done(counts: Mapping[str, int]) -> int:
    """Page requests answered so far (fetched, redirected or failed). Pure."""
    return sum(counts.get(name, 0) for name in REQUESTS)


def rate(samples: deque[tuple[float, int]], now: float, done: int,
         window: float = WINDOW) -> float | None:
    """Add the sample (now, done) and return requests per second over the last `window`
    seconds (None until two samples exist); older samples are dropped. Pure."""
    samples.append((now, done))
    while len(samples) > 2 and samples[1][0] <= now - window:
        samples.popleft()
    (t0, n0) = samples[0]
    return (done - n0) / (now - t0) if now > t0 else None


def error_kinds(counts: Mapping[str, int]) -> dict[str, int]:
    """Failures and refusals by kind from the crawl counters, largest first. Pure."""
    kinds = {"http 4xx": counts.get("http:4xx", 0), "http 5xx": counts.get("http:5xx", 0),
             "network": counts.get("http:error", 0), "retried": counts.get("fetch:retried", 0),
             "not fetched (robots, denylist)": counts.get("pages:blocked", 0)}
    for name, n in counts.items():
        group, _, reason = name.partition(":")
        if group in ("refused", "rejected", "unread", "parse_error"):
            kinds[f"{group} {reason}"] = n
    return dict(sorted(((k, v) for k, v in kinds.items() if v), key=lambda kv: -kv[1]))


def _table(title: str, *columns: str) -> Table:
    table = Table(title=title, title_justify="left", expand=False)
    for i, column in enumerate(columns):
        table.add_column(column, justify="left" if i == 0 else "right")
    return table


def render(data: dict[str, Any], per_second: float | None, hosts: list[dict[str, Any]]
           ) -> RenderableType:
    """The whole view from `stats.collect` output, the rate and the top hosts."""
    front = data["frontier"]
    summary = _table("crawl", "", "")
    for label, value in (
            ("rate, last minute", "…" if per_second is None else f"{per_second:.2f} pages/s"),
            ("queued", data["queued"]), ("in flight (batches)", front["batches_in_flight"]),
            ("hosts leased / ready / waiting",
             f"{front['hosts_leased']} / {front['hosts_ready']} / {front['hosts_waiting']}"),
            ("fetched", data["fetched"]), ("failed", data["failed"]),
            ("stored / duplicates", f"{data['stored']} / {data['duplicates']}")):
        summary.add_row(label, str(value))
    shards = _table("shards", "shard", "urls", "hosts ready", "leased", "parked", "fetch queue")
    queues = data.get("queues", {})
    for s in front["shards"]:
        shards.add_row(str(s["shard"]), str(s["urls_queued"]), str(s["hosts_ready"]),
                       str(s["hosts_leased"]), str(s["hosts_parked"]),
                       str(queues.get(fetch_queue(s["shard"]), "-")))
    pipeline = _table("pipeline queues", "queue", "messages")
    fetch_queues = {fetch_queue(s["shard"]) for s in front["shards"]}
    for name, n in queues.items():
        if name not in fetch_queues:
            pipeline.add_row(name, str(n))
    errors = _table("errors by kind", "kind", "count")
    for kind, n in error_kinds(data["counters"]).items():
        errors.add_row(kind, str(n))
    top = _table("top hosts", "host", "pages", "fetched", "failed", "queued", "state")
    for h in hosts:
        top.add_row(h["host"], str(h["pages"]), str(h["fetched"]), str(h["failed"]),
                    str(h["frontier_queued"]), h["frontier_state"])
    return Group(summary, shards, pipeline, errors, top, f"[dim]{time.strftime('%H:%M:%S')}  "
                 "Ctrl-C to quit[/dim]")


def run(ctx: Context, interval: float, stop: threading.Event,
        console: Console | None = None) -> None:
    """Redraw every `interval` seconds until `stop` is set; to a file or pipe, each frame is
    printed after the previous one. The caller's signal handler sets `stop`, where a
    KeyboardInterrupt was once lost (a view went on drawing after its Ctrl-C, in the tests
    under load; where it was lost is not known)."""
    from crawlapp.observe.stats import collect, host_report

    console = console or Console()
    samples: deque[tuple[float, int]] = deque()

    def frames() -> Iterator[RenderableType]:
        while not stop.is_set():
            data = collect(ctx)
            per_second = rate(samples, time.monotonic(), requests_done(data["counters"]))
            yield render(data, per_second, host_report(ctx, top=10))
            stop.wait(interval)

    if not console.is_terminal:
        for frame in frames():
            console.print(frame)
            console.file.flush()
        return
    with Live(console=console, auto_refresh=False) as live:
        for frame in frames():
            live.update(frame, refresh=True)
