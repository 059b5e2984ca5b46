"""Crawl statistics from the database, the frontier, the counters and the broker."""

from __future__ import annotations

import math
import time
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

from crawlapp.adapters.broker import queue_lengths
from crawlapp.adapters.context import Context
from crawlapp.adapters.db import repository, schedule
from crawlapp.adapters.db.models import Host
from crawlapp.adapters.redis.change_rates import ALL_HOSTS
from crawlapp.core import hostpatterns
from crawlapp.core.deferral import Deferred, waiting_reason
from crawlapp.core.politeness import unreachable_sentence
from crawlapp.core.queues import Queues
from crawlapp.core.records import ParkKind, Status
from crawlapp.core.recrawl import TIERS
from crawlapp.core.urls import host_of


def render_summary(counts: dict[str, int], stage_cpu: dict[str, float]) -> dict[str, Any]:
    """Pages through the render stage, rendered or not (by error), their wall and CPU time
    (browser included), sub-requests fetched and refused (by reason), robots.txt files of
    other hosts fetched for them. Pure."""
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
        "robots_learned": render.get("robots_learned", 0),
        "refused": {k.removeprefix("refused_"): v for k, v in render.items()
                    if k.startswith("refused_")},
    }


def crawl_started(ctx: Context) -> bool:
    """Whether the crawl's database has its tables (never creates a SQLite file)."""
    from crawlapp.adapters.db.engine import has_tables

    return has_tables(ctx.settings)


def where_the_crawl_is(ctx: Context) -> str:
    """The crawl's database, for people (no password). Pure."""
    from crawlapp.adapters.db.engine import location

    return location(ctx.settings)


def given_up_hosts(ctx: Context) -> dict[str, str]:
    """Hosts given up as unreachable (address guard, DNS, invalid name, TLS): host -> error."""
    return {host: why.detail for host, (_, why) in ctx.frontier.parked().items()
            if why.kind is ParkKind.UNREACHABLE}


def given_up_lines(hosts: dict[str, str], limit: int = 10) -> list[str]:
    """`host: why` for people, `limit` at most. Pure."""
    lines = [f"{host}: {unreachable_sentence(error)}"
             for host, error in sorted(hosts.items())[:limit]]
    if len(hosts) > limit:
        lines.append(f"... and {len(hosts) - limit} more (crawlctl hosts --errors)")
    return lines


DEFERRED_PER_SHARD = 1000  # waiting hosts read from each shard for a report


def deferred_hosts(ctx: Context, now: float,
                   robots: dict[str, Host] | None = None) -> list[Deferred]:
    """Hosts with work that is not due within CRAWL_IDLE_HORIZON (a crawl run until idle
    leaves them for later), soonest first: parked ones with why they are parked, waiting ones
    with why they wait (robots.txt to ask again, throttled, backing off, asked to wait).
    Paused and given-up hosts come back only when resumed: they are not deferred. `robots`:
    robots_rows(), read here only if a waiting host has failed (None)."""
    after = now + ctx.settings.idle_horizon
    found = [Deferred(host, str(why), until) for host, (until, why) in ctx.frontier.parked().items()
             if after < until < math.inf]
    waiting = ctx.frontier.waiting_after(after, DEFERRED_PER_SHARD)
    if waiting:
        states = ctx.frontier.host_states(list(waiting), now)
        pipe = ctx.throttles.client.pipeline(transaction=False)
        throttles = ctx.throttles.read(waiting, pipe)(pipe.execute())
        if robots is None:
            robots = robots_rows(ctx) if any(states[h].failures for h in waiting) else {}
        found += [Deferred(host, waiting_reason(
            states[host].failures, host in throttles and throttles[host].level_at(now) > 0,
            robots[host].robots_status if host in robots else None), until)
            for host, until in waiting.items()]
    return sorted(found, key=lambda d: (d.until, d.host))


def deferred_lines(deferred: dict[str, dict[str, Any]], limit: int = 10) -> list[str]:
    """`host: reason, asked again at HH:MM:SS` for people, `limit` at most."""
    lines = [f"{host}: {d['reason']}, asked again at "
             f"{time.strftime('%H:%M:%S', time.localtime(d['until']))}"
             for host, d in list(deferred.items())[:limit]]
    if len(deferred) > limit:
        lines.append(f"... and {len(deferred) - limit} more (crawlctl hosts --errors)")
    return lines


def robots_rows(ctx: Context) -> dict[str, Host]:
    """The hosts table's rows (robots.txt answers, crawl delays) by host."""
    with ctx.sessions() as session:
        return {host_of(h.origin + "/"): h for h in repository.hosts_table(session)}


OUTCOMES = ("fetched", "failed", "blocked_robots", "duplicates")


def outcomes(ctx: Context) -> dict[str, int]:
    """Pages fetched, failed, blocked by robots.txt, and content duplicates so far: two
    queries, for `crawl`'s figures of one run (zeros before the crawl's database exists)."""
    if not crawl_started(ctx):
        return dict.fromkeys(OUTCOMES, 0)
    with ctx.sessions() as session:
        by_status = repository.status_counts(session)
        duplicates = repository.dedup_count(session)
    return {"fetched": by_status.get(Status.FETCHED, 0), "failed": by_status.get(Status.FAILED, 0),
            "blocked_robots": by_status.get(Status.BLOCKED, 0), "duplicates": duplicates}


def recrawl_tiers(ctx: Context, now: float, started: bool | None = None
                  ) -> dict[str, dict[str, int]]:
    """Pages per re-crawl tier and how many are overdue, from the database (Redis holds only
    the schedule's near future); zeros before the crawl's database exists (`started`: known
    already)."""
    if not (crawl_started(ctx) if started is None else started):
        return {name: {"pages": 0, "overdue": 0} for name, _ in TIERS}
    with ctx.sessions() as session:
        return schedule.tiers(session, datetime.fromtimestamp(now, UTC))


def estimated_freshness(ctx: Context) -> tuple[float | None, int]:
    """The collection's freshness as the policy estimates it (the mean over the pages it
    planned of each one's expected freshness under its schedule; None before any) and how
    many pages that is: the fleet's sums, one Redis read."""
    fleet = ctx.change_rates.load(())[ALL_HOSTS]
    planned = int(fleet.get("n", 0))
    return (fleet.get("F", 0.0) / planned if planned else None), planned


def freshness_summary(ctx: Context, counts: dict[str, int], tiers: dict[str, dict[str, int]]
                      ) -> dict[str, Any]:
    """How fresh the collection is estimated to be (the mean over the pages the policy planned
    of the share of time each is fresh under its schedule, core/freshness.py), the re-crawls
    due now, and the fetches of new pages against those of known ones."""
    estimated, planned = estimated_freshness(ctx)
    return {
        "policy": ctx.settings.recrawl_policy,
        "estimated": None if estimated is None else round(estimated, 4),
        "pages_planned": planned,
        "due": sum(t["overdue"] for t in tiers.values()),
        "fetches": {"discovery": counts.get("recrawl:discovery", 0),
                    "refresh": counts.get("recrawl:refresh", 0)},
        "leases_yielded": counts.get("lease:yielded", 0),
        "refreshes": {"changed": counts.get("recrawl:changed", 0),
                      "unchanged": counts.get("recrawl:unchanged", 0),
                      "markup_only": counts.get("recrawl:markup_only", 0),
                      "made_due_by_sitemaps": counts.get("recrawl:sitemap_due", 0),
                      "failed": counts.get("recrawl:failed", 0),
                      "refused": counts.get("recrawl:refused", 0)},
    }


def collect(ctx: Context, with_queues: bool = True, now: float | None = None) -> dict[str, Any]:
    """Everything `crawlctl stats` shows, as one JSON-ready dict (zeros for the database's
    part before the crawl's database exists); the frontier as of `now` (default: now)."""
    started = crawl_started(ctx)
    now = time.time() if now is None else now
    by_status: dict[str, int] = {}
    duplicates = stored = 0
    first = last = None
    tiers = recrawl_tiers(ctx, now, started)
    if started:
        with ctx.sessions() as session:
            by_status = repository.status_counts(session)
            duplicates = repository.dedup_count(session)
            stored = repository.stored_bodies(session)
            first, last = repository.fetch_window(session)
    counts = ctx.counters.read()
    fetched = by_status.get(Status.FETCHED, 0)
    requested = fetched + by_status.get(Status.REDIRECTED, 0) + by_status.get(Status.FAILED, 0)
    window = (last - first).total_seconds() if first and last else 0.0
    shards = ctx.frontier.stats(now)
    given_up = given_up_hosts(ctx)
    deferred = deferred_hosts(ctx, now) if started else []
    stats: dict[str, Any] = {
        "started": started,
        "discovered": sum(by_status.values()),
        "queued": by_status.get(Status.QUEUED, 0),
        "fetched": fetched,
        "redirected": by_status.get(Status.REDIRECTED, 0),
        "failed": by_status.get(Status.FAILED, 0),
        "blocked_robots": by_status.get(Status.BLOCKED, 0),
        "too_deep": by_status.get(Status.TOO_DEEP, 0),
        "stored": stored,
        "duplicates": duplicates,
        "pages_per_second": round(requested / window, 2) if window > 0 else 0.0,
        "crawl_seconds": round(window, 3),
        "by_status": by_status,
        "unread": _by_reason(counts, "unread:"),
        "parse_errors": _by_reason(counts, "parse_error:"),
        "rejected_links": _by_reason(counts, "rejected:"),
        "refused_links": _by_reason(counts, "refused:"),
        "hosts_given_up": dict(sorted(given_up.items())),
        "politeness_held_up": counts.get("politeness:held_up", 0),
        "hosts_deferred": {d.host: {"reason": d.reason, "until": d.until} for d in deferred},
        "frontier": {
            "urls_queued": sum(s.urls_queued for s in shards),
            "hosts_ready": sum(s.hosts_ready for s in shards),
            "hosts_waiting": sum(s.hosts_waiting for s in shards),
            "hosts_leased": sum(s.hosts_leased for s in shards),
            "batches_in_flight": ctx.batches.in_flight(),
            "shards": [asdict(s) for s in shards],
        },
        "counters": counts,
        "stage_cpu_seconds": ctx.counters.read_stage_cpu(),
        "render": render_summary(counts, ctx.counters.read_stage_cpu()),
        "recrawl": tiers,
        "freshness": freshness_summary(ctx, counts, tiers),
        "workers": ctx.workers.read(),
        "last_verify": ctx.verify_report.last(),
    }
    if with_queues:
        stats["queues"] = queue_lengths(ctx.settings.broker_url, Queues.of(ctx.settings).all)
    return stats


def _by_reason(counts: dict[str, int], prefix: str) -> dict[str, int]:
    """The counters under `prefix`, by reason, largest first. Pure."""
    found = {k.removeprefix(prefix): v for k, v in counts.items() if k.startswith(prefix) and v}
    return dict(sorted(found.items(), key=lambda kv: -kv[1]))


def verify_line(last: dict[str, Any] | None) -> str:
    """The `stats` line of the last `crawlctl verify`. Pure."""
    if not last:
        return "never run (crawlctl verify)"
    found = ", ".join(f"{k} {v}" for k, v in last["problems"].items() if v) or "no problems"
    repaired = f", {sum(last['repaired'].values())} repaired" if last.get("repaired") else ""
    return (f"{last['started_at']} ({last['scope']}): {last['rows']} rows in {last['seconds']} s, "
            f"{found}{repaired}")


def host_report(ctx: Context, top: int, errors_only: bool = False) -> list[dict[str, Any]]:
    """Per host: pages by outcome, robots.txt answer and delay, frontier state, denylist,
    authority (None before the host graph scored it).

    The `top` hosts by pages known, or with `errors_only` those with failed or blocked
    pages, a backoff, or deferred, most failures first. A host given up as unreachable has
    its reason in words (`given_up`), a deferred one why it waits (`deferred`; its time is
    `until`).
    """
    if not crawl_started(ctx):
        return []
    with ctx.sessions() as session:
        by_host = repository.host_status_counts(session)
        patterns = [d.pattern for d in repository.denylist(session)]
        authority = repository.authority_of(session, list(by_host))
    hosts: list[dict[str, Any]] = [{"host": host, "pages": sum(counts.values()),
              "fetched": counts.get(Status.FETCHED, 0), "failed": counts.get(Status.FAILED, 0),
              "blocked": counts.get(Status.BLOCKED, 0), "queued": counts.get(Status.QUEUED, 0),
              "deleted": counts.get(Status.DELETED, 0)} for host, counts in by_host.items()]
    robots = robots_rows(ctx)
    now = time.time()
    states = ctx.frontier.host_states([h["host"] for h in hosts], now)
    deferred = {d.host: d.reason for d in deferred_hosts(ctx, now, robots)}
    for h in hosts:
        state = states[h["host"]]
        known = robots.get(h["host"])
        park = state.park
        h.update(frontier_state=state.label, frontier_queued=state.queued,
                 failures_in_a_row=state.failures, until=state.until,
                 robots_status=known.robots_status if known else None,
                 crawl_delay=known.crawl_delay if known else None,
                 denied_by=hostpatterns.denied_by(h["host"], patterns),
                 authority=authority.get(h["host"]), deferred=deferred.get(h["host"]),
                 given_up=unreachable_sentence(park.detail, park.note)
                 if park is not None and park.kind is ParkKind.UNREACHABLE else None)
    if errors_only:
        hosts = [h for h in hosts if h["failed"] or h["blocked"] or h["failures_in_a_row"]
                 or h["denied_by"] or h["deferred"]
                 or h["frontier_state"] not in ("ready", "waiting", "leased", "idle")]
        hosts.sort(key=lambda h: (-h["failed"], -h["blocked"], -h["failures_in_a_row"], h["host"]))
    else:
        hosts.sort(key=lambda h: (-h["pages"], h["host"]))
    return hosts[:top]


def frontier_report(ctx: Context) -> dict[str, Any]:
    """What `crawlctl frontier stats` shows: every shard, their totals, the parked hosts
    (until None: paused or given up) and the batches in flight."""
    now = time.time()
    shards = ctx.frontier.stats(now)
    return {
        "shards": [asdict(s) for s in shards],
        "totals": {k: sum(getattr(s, k) for s in shards) for k in (
            "hosts_ready", "hosts_waiting", "hosts_leased", "hosts_parked", "urls_queued")},
        "parked": {host: {"until": until if until != float("inf") else None, "reason": str(why)}
                   for host, (until, why) in ctx.frontier.parked().items()},
        "batches_in_flight": ctx.batches.in_flight(),
    }


def run_report(ctx: Context, before: dict[str, int], idle_at: float | None) -> dict[str, Any]:
    """What `crawl` says at its end: this run's outcomes (against `outcomes` read at its
    start), the crawl's totals, the workers' peak memory, the hosts given up, and those
    deferred as it was seen idle at `idle_at` (None: now)."""
    summary = collect(ctx, with_queues=False, now=idle_at)
    return {
        "run": {k: summary[k] - before[k] for k in OUTCOMES},
        "fetched": summary["fetched"], "failed": summary["failed"],
        "peak_rss_mib": max((w["peak_rss_mib"] for w in summary["workers"].values()),
                            default=0.0),
        "hosts_given_up": summary["hosts_given_up"],
        "hosts_deferred": summary["hosts_deferred"],
    }
