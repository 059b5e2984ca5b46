"""Rebuilding Redis state from the database after Redis lost it.

What comes back from where, each through the owner of its structure (adapters/redis):
- frontier: every URL row whose status is 'queued' (URLs in flight when Redis was lost are
  still 'queued' in the database, since a row changes only once its page is stored), with
  the conditional-GET validators of the re-crawls among them, and the pages of stored batches
  whose links had not been admitted (links_unread: their messages were lost with the
  broker's queues when it lives on this Redis), fetched again in full;
- the Bloom filter of seen URLs: every URL row;
- per-host URL counts (the pages-per-host budget): the host counters (host_counts);
- the dedup index: the content hash and SimHash fingerprint of every stored original;
- canonical pointers: the canonical_url of every page that defers to another URL;
- the re-crawl tiers: the pages whose next_crawl_at falls within CRAWL_RECRAWL_WINDOW;
- the re-crawl policy's sums per host: the change records of the pages, and the delays;
- robots.txt cache: the hosts table, for what is left of each answer's 24 hours;
- the denylist's Redis copy: the denylist table;
- the seeds' scope rules: the scope_rules table.
Nothing else has a record in the database: redirect hops, fetch retries, trap pattern
budgets, counters, worker reports and the last verify report start again empty.
Running it on a frontier that still holds its data queues nothing twice (a URL a lease holds is
not queued again), except that a URL whose batch is past its fetch but not stored, or a page
whose links are on their way, may be fetched once more.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime

from crawlapp.adapters.context import Context
from crawlapp.adapters.db import links_unread, maintenance, repository, schedule
from crawlapp.adapters.db.batching import chunks
from crawlapp.adapters.redis.change_rates import ALL_HOSTS
from crawlapp.core.errors import FrontierLayoutError
from crawlapp.core.records import Status
from crawlapp.core.recrawl import validators
from crawlapp.core.robots import effective_delay
from crawlapp.core.rows import QueuedRow
from crawlapp.core.settings import MAX_SHARDS
from crawlapp.core.urls import host_of, url_hash
from crawlapp.ops.authority import fleet_importance
from crawlapp.stages.admission import requeue
from crawlapp.stages.recrawling import load_window

CHUNK = 5000  # rows read (and hosts held) at a time: small rows, few round trips
log = logging.getLogger(__name__)


def _host_delays(ctx: Context) -> dict[str, float]:
    """Each host's delay from its recorded robots.txt Crawl-delay (default for the rest)."""
    settings = ctx.settings
    with ctx.sessions() as session:
        rows = maintenance.crawl_delays(session)
    return {host_of(origin + "/"): effective_delay(delay, settings.default_delay,
                                                   settings.max_crawl_delay)
            for origin, delay in rows}


def _hold_hosts(ctx: Context) -> None:
    """The hosts' last request times are gone with Redis: every known host waits the longest
    delay from the last moment a lease handed out before the loss may still start a request
    (now + the dispatch lookahead), whatever was queued for it meanwhile."""
    settings = ctx.settings
    until = time.time() + settings.dispatch_lookahead + max(
        [settings.default_delay, *_host_delays(ctx).values()])
    with ctx.sessions() as session:
        hosts = list(repository.host_status_counts(session))
    for chunk in chunks(hosts, CHUNK):
        ctx.frontier.hold(chunk, until)


def _links_unread(ctx: Context) -> int:
    """Mark queued the pages of stored batches whose links never reached the links stage
    (its messages went with the broker's Redis), to be fetched again in full; out of the
    re-crawl sets, which may have kept them."""
    with ctx.sessions.begin() as session:
        pages = links_unread.refetch(session)
    ctx.recrawls.forget(list(pages))
    return len(pages)


def _requeue(ctx: Context, progress: Callable[[int], None]) -> int:
    """Queue every 'queued' row again (a re-crawl with its validators), each host waiting its
    delay (see _hold_hosts)."""
    delays = _host_delays(ctx)
    queued = 0
    for rows in maintenance.queued_rows(ctx.sessions, CHUNK):
        ctx.validators.store({r.url: v for r in rows if (v := validators(r.etag, r.last_modified))})
        by_delay: dict[float, list[QueuedRow]] = defaultdict(list)
        for r in rows:
            by_delay[delays.get(r.host, ctx.settings.default_delay)].append(r)
        for delay, items in by_delay.items():
            requeue(ctx, items, time.time() + ctx.settings.dispatch_lookahead + delay,
                    unless_leased=True)
        queued += len(rows)
        progress(queued)
    return queued


def _host_counts(ctx: Context) -> int:
    """Each host's pages against its budget: its URL rows but those too deep or over budget."""
    with ctx.sessions() as session:
        by_host = repository.host_status_counts(session)
    counted = {host: n for host, counts in by_host.items()
               if (n := sum(v for status, v in counts.items()
                            if status not in (Status.TOO_DEEP, Status.OVER_BUDGET)))}
    ctx.budgets.restore_hosts(counted)
    return len(counted)


def _url_seen(ctx: Context) -> int:
    """Every known URL back in the Bloom filter (its parts made their full size first)."""
    ctx.url_seen.allocate()
    added = 0
    for rows in maintenance.url_keys(ctx.sessions, CHUNK):
        ctx.url_seen.add([bytes.fromhex(r.url_hash) for r in rows])
        added += len(rows)
    return added


def _dedup_index(ctx: Context) -> tuple[int, int]:
    """File every stored original's content hash and fingerprint again; returns how many of
    each."""
    # Imported here: SimHash's modules (numpy, lxml) are for a rebuild, not every dispatcher.
    from crawlapp.adapters.redis.dedup_index import Held
    from crawlapp.core.simhash import from_signed

    claims, fingerprints = 0, 0
    for rows in maintenance.stored_contents(ctx.sessions, CHUNK):
        ctx.dedup_index.restore(
            Held(r.url_hash, r.content_hash,
                 from_signed(r.simhash) if r.simhash is not None else None) for r in rows)
        claims += sum(1 for r in rows if r.content_hash is not None)
        fingerprints += sum(1 for r in rows if r.simhash is not None)
    return claims, fingerprints


def _canonicals(ctx: Context) -> int:
    """The pointer of every page that defers to its canonical URL."""
    restored = 0
    for rows in maintenance.canonical_pointers(ctx.sessions, CHUNK):
        ctx.canonicals.point({r.url_hash: url_hash(r.canonical_url) for r in rows})
        restored += len(rows)
    return restored


def restore_recrawls(ctx: Context, hashes: list[str] | None = None, at: float | None = None
                     ) -> int:
    """Pages with a next crawl time (those of `hashes`, or all) back at that time (in Redis
    if it falls within the loaded window, out of it otherwise), or due at `at`; returns how
    many."""
    restored = 0
    rows_read = (schedule.scheduled(ctx.sessions, CHUNK, hashes) if hashes is not None
                 else schedule.due(ctx.sessions, None, None, CHUNK))
    for rows in rows_read:
        items = [r.planned(at) for r in rows]
        if at is None:
            ctx.recrawls.schedule(items)
        else:
            ctx.recrawls.make_due(items)
        restored += len(rows)
    return restored


def _change_rates(ctx: Context) -> int:
    """Each host's sums summed again from its pages' change records (a rebuild's, where
    the store stage adds a visit at a time); returns how many hosts."""
    from crawlapp.core.freshness import (  # numpy: for this step only
        ChangeRecord,
        kind_of,
        sums_of,
    )
    records: dict[str, list[tuple[ChangeRecord, int]]] = defaultdict(list)
    for rows in maintenance.change_records(ctx.sessions, CHUNK):
        for row in rows:
            records[row.host].append((ChangeRecord.unpack(row.changes), kind_of(row.url)))
    sums = {host: sums_of(found) for host, found in records.items()}
    fleet: dict[str, float] = defaultdict(float)
    for host_sums in sums.values():
        for name, amount in host_sums.items():
            fleet[name] += amount
    delays = _host_delays(ctx)
    margin = ctx.settings.delay_margin
    for host, host_sums in sums.items():
        if host in delays:
            host_sums["d"] = delays[host] + margin
    fleet["wi"] = fleet_importance(ctx)
    ctx.change_rates.restore({**sums, ALL_HOSTS: dict(fleet)})
    return len(sums)


def _recrawl_window(ctx: Context) -> int:
    """The re-crawl window loaded anew, its horizon reset: the pages due before now +
    CRAWL_RECRAWL_WINDOW, overdue ones included."""
    return load_window(ctx, time.time(), full=True) or 0


def _robots(ctx: Context) -> int:
    with ctx.sessions() as session:
        answers = maintenance.robots_answers(session)
    return ctx.robots.restore(answers, datetime.now(UTC))


def _denylist(ctx: Context) -> int:
    with ctx.sessions() as session:
        return ctx.denylist.load(maintenance.denied_patterns(session))


def _scope_rules(ctx: Context) -> int:
    with ctx.sessions() as session:
        return ctx.scopes.load(repository.scope_rules(session))


def rebuild(ctx: Context, progress: Callable[[int], None] = lambda n: None, *,
            hot: bool = True, dedup: bool = True) -> dict[str, int]:
    """Restore the frontier and caches (`hot`: CRAWL_REDIS_URL's) and the dedup role's
    structures (`dedup`: CRAWL_DEDUP_REDIS_URL's) from the database; returns what was
    restored."""
    restored: dict[str, int] = {}
    if hot:
        _hold_hosts(ctx)
        restored |= {"denylist": _denylist(ctx), "scope_rules": _scope_rules(ctx),
                     "links_unread": _links_unread(ctx), "urls_queued": _requeue(ctx, progress),
                     "hosts_counted": _host_counts(ctx), "hosts_planned": _change_rates(ctx)}
    if dedup:
        restored["urls_seen"] = _url_seen(ctx)
        restored["content_claims"], restored["fingerprints"] = _dedup_index(ctx)
        restored |= {"canonical_pointers": _canonicals(ctx), "recrawls": _recrawl_window(ctx)}
        ctx.url_seen.mark_alive(time.time())
    if hot:
        restored["robots_cached"] = _robots(ctx)
        ctx.frontier.mark_alive(time.time())
    return restored


def mark_alive(ctx: Context) -> None:
    """Note in each role's Redis that it holds its structures whole (a restarted Redis has no
    such note)."""
    now = time.time()
    ctx.frontier.mark_alive(now)
    ctx.url_seen.mark_alive(now)


def is_alive(ctx: Context) -> bool:
    """Whether Redis holds the crawl state whole (each role's Redis, when they are two)."""
    return ctx.frontier.layout() is not None and ctx.url_seen.alive()


def reshard(ctx: Context) -> int:
    """Lay the frontier out in CRAWL_SHARDS shards, every host in its own with its state
    (while no host is leased); returns how many hosts moved."""
    moved, held = ctx.frontier.reshard(time.time(), MAX_SHARDS)
    if held:
        raise FrontierLayoutError(ctx.frontier.layout() or 0, ctx.settings.shards, held)
    return moved


def _check_layout(ctx: Context, layout: int, lay_out: bool) -> None:
    """Make sure the frontier is laid out in CRAWL_SHARDS shards: lay it out anew if
    `lay_out`, else raise FrontierLayoutError. A frontier of a release that did not note its
    number of shards is taken as it is when no shard past CRAWL_SHARDS holds a host."""
    shards = ctx.settings.shards
    if lay_out:
        moved = reshard(ctx)
        if moved:
            log.warning("the frontier was laid out in %s shards: %d host(s) moved to their "
                        "shard of %d", layout or "another number of", moved, shards)
    elif layout == 0 and max(ctx.frontier.shards_holding(MAX_SHARDS), default=0) < shards:
        ctx.frontier.mark_alive(time.time())
    else:
        raise FrontierLayoutError(layout, shards)


def ensure_frontier(ctx: Context, *, lay_out: bool = False) -> dict[str, int] | None:
    """Rebuild from the database what a Redis that lost its data held, and make sure the
    frontier is laid out in CRAWL_SHARDS shards (`lay_out`: moving the hosts of a frontier
    laid out in another number; else a FrontierLayoutError); returns what was restored
    (None: nothing was lost)."""
    layout = ctx.frontier.layout()
    if layout is not None and layout != ctx.settings.shards:
        _check_layout(ctx, layout, lay_out)
    hot, dedup = layout is None, not ctx.url_seen.alive()
    if not hot and not dedup:
        return None
    return rebuild(ctx, hot=hot, dedup=dedup)
