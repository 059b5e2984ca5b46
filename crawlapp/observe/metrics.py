"""Crawl metrics for Prometheus, built from the counters every worker keeps in Redis.

The workers never hold a metric in memory: each stage adds to one Redis hash (see
`adapters/redis/counters.py`) in a round trip it makes anyway, and one exporter process turns
that hash and the frontier's state into the exposition at each scrape. So the numbers are
the same whichever process, host or restart produced them, and a scrape costs a few Redis
reads whatever the number of workers.

Counter fields this module reads (all integers in the hash `<prefix>:counters`):
  pages:<status>          fetch outcomes (fetched, redirected, failed, blocked)
  http:<class>            page requests by answer: 2xx, 3xx, 4xx, 5xx, error (retries too)
  bytes:fetched           page body bytes received (decoded)
  latency:le:<bound>      page requests whose duration fell in the bucket ending at <bound>
  latency:sum_ms          their total duration in milliseconds
  store:bodies, bytes:stored   bodies written to the object store, and their gzip bytes
  dedup:exact, dedup:near, urls:known   content and URL dedup hits
  archive:truncated       bodies archived cut (WARC-Truncated): answers, robots.txt, too large
  refused:<reason>, rejected:<reason>, fetch:retried
  unread:<reason>, parse_error:<exception class>   pages read as nothing, and why
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector, CollectorRegistry
from prometheus_client.utils import floatToGoString

from crawlapp.adapters.redis.change_rates import ALL_HOSTS
from crawlapp.core.records import ShardStats
from crawlapp.stages.tallies import LATENCY_BUCKETS, STATUS_CLASSES, bucket_label


@dataclass
class Snapshot:
    """Everything one scrape exports, read from Redis (and the broker) in a few round trips."""

    counters: Mapping[str, int]
    shards: list[ShardStats]
    batches_in_flight: int
    recrawl: Mapping[str, Mapping[str, int]]
    queues: Mapping[str, int]
    last_verify: Mapping[str, Any] | None = None  # the last verify's report (VerifyReport.last)
    fleet_rates: Mapping[str, float] = field(default_factory=dict)  # change_rates' fleet sums


def _with_prefix(counters: Mapping[str, int], prefix: str) -> dict[str, int]:
    return {k[len(prefix):]: v for k, v in counters.items() if k.startswith(prefix)}


def _labelled(family: CounterMetricFamily | GaugeMetricFamily,
              values: Mapping[str, int]) -> CounterMetricFamily | GaugeMetricFamily:
    for label, value in sorted(values.items()):
        family.add_metric([label], value)
    return family


def verify_families(last: Mapping[str, Any] | None) -> Iterator[Metric]:
    """The last `crawlctl verify`: when it ran, rows checked, problems found by kind. Pure."""
    if not last:
        return
    yield GaugeMetricFamily("crawl_verify_last_run_timestamp_seconds",
                            "When the last crawlctl verify started.",
                            value=datetime.fromisoformat(last["started_at"]).timestamp())
    yield GaugeMetricFamily("crawl_verify_rows_checked", "Rows the last crawlctl verify checked.",
                            value=last["rows"])
    yield _labelled(GaugeMetricFamily(
        "crawl_verify_problems", "Problems the last crawlctl verify found: missing_body, "
        "broken_chain, stale_claim, stale_band.", labels=["kind"]), last["problems"])


def families(snap: Snapshot) -> Iterator[Metric]:
    """The exposition of one snapshot. Pure."""
    c = snap.counters
    yield _labelled(CounterMetricFamily(
        "crawl_pages", "Pages by fetch outcome (fetched, redirected, failed, blocked).",
        labels=["status"]), _with_prefix(c, "pages:"))
    yield _labelled(CounterMetricFamily(
        "crawl_responses", "Page requests by status class; 'error' had no HTTP answer.",
        labels=["status_class"]),
        {k: c.get(f"http:{k}", 0) for k in STATUS_CLASSES})
    yield CounterMetricFamily("crawl_fetched_bytes", "Page body bytes received.",
                              value=c.get("bytes:fetched", 0))
    yield CounterMetricFamily("crawl_stored_bytes",
                              "Gzip bytes written to the object store (after dedup).",
                              value=c.get("bytes:stored", 0))
    yield CounterMetricFamily("crawl_stored_bodies", "Bodies written to the object store.",
                              value=c.get("store:bodies", 0))
    yield CounterMetricFamily("crawl_archive_truncated",
                              "Bodies archived cut (WARC-Truncated): redirect and error answers at "
                              "CRAWL_ARCHIVE_ANSWER_BYTES, robots.txt at 500 KiB, answers too large.",
                              value=c.get("archive:truncated", 0))
    cumulative, buckets = 0, []
    for bound in LATENCY_BUCKETS:
        cumulative += c.get(f"latency:le:{bucket_label(bound)}", 0)
        buckets.append((floatToGoString(bound), cumulative))
    yield HistogramMetricFamily("crawl_fetch_duration_seconds",
                                "Duration of page requests, body included.",
                                buckets=buckets, sum_value=c.get("latency:sum_ms", 0) / 1000)
    yield CounterMetricFamily("crawl_robots_blocked", "URLs not fetched because of robots.txt.",
                              value=c.get("pages:blocked", 0))
    yield _labelled(CounterMetricFamily(
        "crawl_links_refused", "Links not queued, by reason (trap rules, nofollow, too deep, "
        "out_of_scope, excluded).",
        labels=["reason"]), _with_prefix(c, "refused:"))
    yield _labelled(CounterMetricFamily(
        "crawl_dedup_hits", "Duplicates found: url (link to a known URL), exact and near content.",
        labels=["kind"]),
        {"url": c.get("urls:known", 0), "exact": c.get("dedup:exact", 0),
         "near": c.get("dedup:near", 0)})
    yield CounterMetricFamily("crawl_fetch_retries", "Page requests handed back to be tried again.",
                              value=c.get("fetch:retried", 0))
    yield _labelled(CounterMetricFamily(
        "crawl_parse_rejected", "Links and redirects refused by the parse stage (not a URL, "
        "not http(s), too long).", labels=["reason"]), _with_prefix(c, "rejected:"))
    yield _labelled(CounterMetricFamily(
        "crawl_pages_unread", "HTML pages that yielded no text and no links, by reason.",
        labels=["reason"]), _with_prefix(c, "unread:"))
    yield _labelled(CounterMetricFamily(
        "crawl_parse_errors", "Pages whose parsing raised, by exception class (recorded failed).",
        labels=["exception"]), _with_prefix(c, "parse_error:"))
    yield GaugeMetricFamily("crawl_frontier_urls", "URLs queued in the frontier.",
                            value=sum(s.urls_queued for s in snap.shards))
    hosts = GaugeMetricFamily(
        "crawl_frontier_hosts", "Hosts with queued URLs by state: ready (due now), waiting "
        "(politeness delay), busy (leased to a batch), backing_off (failing), parked.",
        labels=["state"])
    for state, attr in (("ready", "hosts_ready"), ("waiting", "hosts_waiting"),
                        ("busy", "hosts_leased"), ("backing_off", "hosts_backing_off"),
                        ("parked", "hosts_parked")):
        hosts.add_metric([state], sum(getattr(s, attr) for s in snap.shards))
    yield hosts
    shard_urls = GaugeMetricFamily("crawl_frontier_shard_urls", "URLs queued per shard.",
                                   labels=["shard"])
    for s in snap.shards:
        shard_urls.add_metric([str(s.shard)], s.urls_queued)
    yield shard_urls
    yield GaugeMetricFamily("crawl_batches_in_flight", "Fetch batches between dispatch and links.",
                            value=snap.batches_in_flight)
    yield _labelled(GaugeMetricFamily("crawl_recrawl_pages", "Pages scheduled for a re-crawl.",
                                      labels=["tier"]),
                    {t: v["pages"] for t, v in snap.recrawl.items()})
    yield _labelled(GaugeMetricFamily("crawl_recrawl_overdue", "Re-crawls whose time has passed.",
                                      labels=["tier"]),
                    {t: v["overdue"] for t, v in snap.recrawl.items()})
    planned = snap.fleet_rates.get("n", 0.0)
    yield GaugeMetricFamily("crawl_recrawl_planned_pages",
                            "Pages whose re-crawl the optimal policy planned.", value=planned)
    yield GaugeMetricFamily(
        "crawl_freshness_estimated", "Estimated share of the planned pages that are fresh "
        "(their change rates under their schedules); NaN before any is planned.",
        value=snap.fleet_rates.get("F", 0.0) / planned if planned else math.nan)
    yield _labelled(CounterMetricFamily(
        "crawl_fetches", "Pages fetched for the first time (discovery) and again (refresh).",
        labels=["kind"]), {k: c.get(f"recrawl:{k}", 0) for k in ("discovery", "refresh")})
    yield _labelled(CounterMetricFamily(
        "crawl_refreshes", "Pages fetched again by what they showed (changed, unchanged; "
        "markup_only: of the unchanged, a new body with the same visible text), those a "
        "sitemap's lastmod made due (sitemap_due), and those whose fetch failed or robots.txt "
        "refused (failed, refused: their copies kept, tried again later).", labels=["outcome"]),
        {k: c.get(f"recrawl:{k}", 0)
         for k in ("changed", "unchanged", "markup_only", "sitemap_due", "failed", "refused")})
    yield CounterMetricFamily(
        "crawl_leases_yielded", "Leases of several URLs that ended early for a better URL "
        "queued meanwhile (a new URL, a hub falling due).", value=c.get("lease:yielded", 0))
    yield CounterMetricFamily(
        "crawl_politeness_held_up", "Requests a fetch process held for their host's turn: the "
        "host leased again while that process was still asking it, or less than a delay "
        "after (0 unless the frontier errs).", value=c.get("politeness:held_up", 0))
    yield _labelled(GaugeMetricFamily("crawl_queue_messages", "Messages waiting per Celery queue.",
                                      labels=["queue"]), snap.queues)
    yield from verify_families(snap.last_verify)


class CrawlCollector(Collector):
    """Reads a fresh snapshot at every scrape."""

    def __init__(self, ctx: Any, with_queues: bool = True) -> None:
        self.ctx = ctx
        self.with_queues = with_queues

    def snapshot(self) -> Snapshot:
        from crawlapp.adapters.broker import queue_lengths
        from crawlapp.core.queues import Queues
        from crawlapp.observe.stats import recrawl_tiers

        now = time.time()
        queues: dict[str, int] = {}
        if self.with_queues:
            settings = self.ctx.settings
            queues = queue_lengths(settings.broker_url, Queues.of(settings).all)
        return Snapshot(self.ctx.counters.read(), self.ctx.frontier.stats(now),
                        self.ctx.batches.in_flight(),
                        recrawl_tiers(self.ctx, now), queues, self.ctx.verify_report.last(),
                        self.ctx.change_rates.load(())[ALL_HOSTS])

    def collect(self) -> Iterator[Metric]:
        return families(self.snapshot())


def serve(ctx: Any, port: int, addr: str, stop: threading.Event) -> None:
    """Serve /metrics on addr:port until `stop` is set."""
    from prometheus_client import start_http_server

    registry = CollectorRegistry(auto_describe=False)
    registry.register(CrawlCollector(ctx))
    server, thread = start_http_server(port, addr, registry)
    try:
        stop.wait()
    finally:
        server.shutdown()
        thread.join(5)
