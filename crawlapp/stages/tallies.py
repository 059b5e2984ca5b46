"""What a batch adds to the crawl's counters (the Redis hash crawlapp.observe.metrics exports):
page requests by answer class, bytes, latency buckets, bodies stored and copies found. Pure."""

from __future__ import annotations

from collections.abc import Iterable

from crawlapp.core.bodies import bodies_of
from crawlapp.core.records import Fetched, Page

LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, float("inf"))
STATUS_CLASSES = ("2xx", "3xx", "4xx", "5xx", "error")


def status_class(status: int | None, error: str | None) -> str:
    """'2xx' … '5xx' for an HTTP answer, 'error' for no answer (timeout, refused, guard). Pure."""
    if error or status is None or not 200 <= status < 600:
        return "error"
    return f"{status // 100}xx"


def bucket_label(seconds: float) -> str:
    return "+Inf" if seconds == float("inf") else f"{seconds:g}"


def latency_field(seconds: float) -> str:
    """The counter field of the histogram bucket a request of this duration falls in. Pure."""
    return "latency:le:" + bucket_label(next(b for b in LATENCY_BUCKETS if seconds <= b))


def fetch_counts(results: Iterable[Fetched]) -> dict[str, int]:
    """Counter increments for the page requests of one batch. Pure."""
    counts: dict[str, int] = {}
    for r in results:
        for name, n in ((f"http:{status_class(r.status, r.error)}", 1),
                        ("bytes:fetched", len(r.body)),
                        (latency_field(max(0.0, r.ended - r.started)), 1),
                        ("latency:sum_ms", round(1000 * max(0.0, r.ended - r.started)))):
            counts[name] = counts.get(name, 0) + n
    return counts


def store_counts(pages: list[Page]) -> dict[str, int]:
    """Counter increments for a batch the store stage is about to write. Pure."""
    own = [b.content.gz for b in map(bodies_of, pages) if b.content is not None and not b.copy]
    return {"store:bodies": len(own), "bytes:stored": sum(len(gz) for gz in own),
            "dedup:exact": sum(1 for p in pages if p.content_dedup and not p.near_duplicate),
            "dedup:near": sum(1 for p in pages if p.near_duplicate),
            "archive:truncated": sum(1 for p in pages if p.truncated)}
