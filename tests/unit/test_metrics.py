"""Pure parts of the metrics: status classes, latency buckets, counts and the exposition."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import CollectorRegistry

from crawlapp.core.records import Fetched, Page, ShardStats
from crawlapp.observe.metrics import Snapshot, families
from crawlapp.stages.tallies import fetch_counts, latency_field, status_class, store_counts


def test_status_class() -> None:
    assert [status_class(s, None) for s in (200, 304, 404, 503)] == ["2xx", "3xx", "4xx", "5xx"]
    assert status_class(None, "timeout") == "error"
    assert status_class(200, "too_large") == "error"


def test_latency_field_picks_the_first_bucket_that_holds_the_duration() -> None:
    assert latency_field(0.0) == "latency:le:0.05"
    assert latency_field(0.05) == "latency:le:0.05"
    assert latency_field(0.051) == "latency:le:0.1"
    assert latency_field(31) == "latency:le:+Inf"


def test_fetch_and_store_counts() -> None:
    results = [Fetched("u1", 200, body=b"abc", started=10.0, ended=10.2),
               Fetched("u2", None, error="timeout", started=10.0, ended=41.0)]
    assert fetch_counts(results) == {"http:2xx": 1, "http:error": 1, "bytes:fetched": 3,
                                     "latency:le:0.25": 1, "latency:le:+Inf": 1,
                                     "latency:sum_ms": 31200}
    pages = [Page(body_gz=b"12345"), Page(content_dedup=True),
             Page(content_dedup=True, near_duplicate=True), Page(truncated=True)]
    assert store_counts(pages) == {"store:bodies": 1, "bytes:stored": 5, "dedup:exact": 1,
                                   "dedup:near": 1, "archive:truncated": 1}


def test_exposition_of_a_snapshot() -> None:
    counters = {"pages:fetched": 7, "latency:le:0.05": 2, "latency:le:1": 3, "latency:sum_ms": 1500,
                "refused:calendar": 4, "urls:known": 9, "lease:yielded": 6,
                "politeness:held_up": 2}
    snap = Snapshot(counters, [ShardStats(0, 1, 2, 3, 0, 10, 1), ShardStats(1, 0, 1, 0, 1, 5, 1)],
                    2, {"daily": {"pages": 5, "overdue": 1}}, {"fetch.0": 3})

    class Fixed:
        def collect(self):  # type: ignore[no-untyped-def]
            return families(snap)

    registry = CollectorRegistry(auto_describe=False)
    registry.register(Fixed())  # type: ignore[arg-type]
    from prometheus_client import generate_latest

    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for f in text_string_to_metric_families(generate_latest(registry).decode())
               for s in f.samples}
    assert samples[("crawl_pages_total", (("status", "fetched"),))] == 7
    assert samples[("crawl_fetch_duration_seconds_bucket", (("le", "0.05"),))] == 2
    assert samples[("crawl_fetch_duration_seconds_bucket", (("le", "1.0"),))] == 5
    assert samples[("crawl_fetch_duration_seconds_bucket", (("le", "+Inf"),))] == 5
    assert samples[("crawl_fetch_duration_seconds_sum", ())] == 1.5
    assert samples[("crawl_links_refused_total", (("reason", "calendar"),))] == 4
    assert samples[("crawl_dedup_hits_total", (("kind", "url"),))] == 9
    assert samples[("crawl_frontier_urls", ())] == 15
    assert samples[("crawl_frontier_hosts", (("state", "busy"),))] == 3
    assert samples[("crawl_frontier_hosts", (("state", "backing_off"),))] == 2
    assert samples[("crawl_recrawl_overdue", (("tier", "daily"),))] == 1
    assert samples[("crawl_queue_messages", (("queue", "fetch.0"),))] == 3
    assert samples[("crawl_leases_yielded_total", ())] == 6
    assert samples[("crawl_politeness_held_up_total", ())] == 2
