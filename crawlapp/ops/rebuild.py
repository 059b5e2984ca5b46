"""Rebuilding Redis state from the database after Redis lost it.

What comes back from where:
- frontier: every URL row whose status is 'queued' (URLs in flight when Redis was lost are
  still 'queued' in the database, since a row changes only once its page is stored);
- the Bloom filter of seen URLs: every URL row;
- per-host URL counts (the pages-per-host budget): counted from the URL rows;
- exact-content claims: the content hash of every stored original;
- the SimHash band index: the fingerprint of every original;
- the re-crawl tiers: every page's next_crawl_at;
- robots.txt cache: the hosts table, for what is left of each answer's 24 hours;
- the denylist's Redis copy: the denylist table.
Running it on a frontier that still holds its data queues nothing twice, except that a URL
being fetched at that moment may be fetched once more.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import msgpack
from sqlalchemy import func, select

from crawlapp.adapters.context import Context
from crawlapp.adapters.db.models import Deny, Host, Url
from crawlapp.adapters.redis import denylist, recrawl_sets
from crawlapp.core.records import QueuedURL, Status
from crawlapp.core.recrawl import tier_of
from crawlapp.core.robots import effective_delay
from crawlapp.core.simhash import from_signed
from crawlapp.core.urls import host_of
from crawlapp.stages.dedup import band_keys

CHUNK = 5000


def _host_delays(ctx: Context) -> dict[str, float]:
    """Each host's delay from its recorded robots.txt Crawl-delay (default for the rest)."""
    settings = ctx.settings
    with ctx.sessions() as session:
        rows = session.execute(select(Host.origin, Host.crawl_delay)
                               .where(Host.crawl_delay.is_not(None))).all()
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
        hosts = session.scalars(select(Url.host).distinct()).all()
    for start in range(0, len(hosts), CHUNK):
        ctx.frontier.hold(hosts[start:start + CHUNK], until)


def _requeue(ctx: Context, progress: Callable[[int], None]) -> int:
    """Queue every 'queued' row again, each host waiting its delay (see _hold_hosts)."""
    delays = _host_delays(ctx)
    queued = 0
    last_id = 0
    while True:
        with ctx.sessions() as session:
            rows = session.execute(
                select(Url.id, Url.url, Url.host, Url.depth, Url.priority)
                .where(Url.status == Status.QUEUED, Url.id > last_id).order_by(Url.id).limit(CHUNK)
            ).all()
        if not rows:
            return queued
        last_id = rows[-1].id
        by_delay: dict[float, list[QueuedURL]] = defaultdict(list)
        for r in rows:
            by_delay[delays.get(r.host, ctx.settings.default_delay)].append(
                QueuedURL(r.url, r.depth, r.priority))
        for delay, items in by_delay.items():
            ctx.frontier.add(items, time.time() + ctx.settings.dispatch_lookahead + delay)
        queued += len(rows)
        progress(queued)


def _host_counts(ctx: Context) -> int:
    with ctx.sessions() as session:
        rows = session.execute(
            select(Url.host, func.count()).where(Url.status.not_in((Status.TOO_DEEP, Status.OVER_BUDGET)))
            .group_by(Url.host)).all()
    if rows:
        ctx.redis.hset(ctx.key("hostcount"), mapping={host: int(n) for host, n in rows})
    return len(rows)


def _url_seen(ctx: Context) -> int:
    """Every known URL back in the Bloom filter."""
    last_id, added = 0, 0
    while True:
        with ctx.sessions() as session:
            rows = session.execute(select(Url.id, Url.url_hash).where(Url.id > last_id)
                                   .order_by(Url.id).limit(CHUNK)).all()
        if not rows:
            return added
        last_id = rows[-1].id
        ctx.url_seen.add([bytes.fromhex(r.url_hash) for r in rows])
        added += len(rows)


def _content_claims(ctx: Context) -> int:
    with ctx.sessions() as session:
        rows = session.execute(
            select(Url.content_hash, Url.url_hash)
            .where(Url.content_hash.is_not(None), Url.content_dedup.is_(False),
                   Url.storage_key.is_not(None))).all()
    pipe = ctx.redis.pipeline(transaction=False)
    for content_hash, owner in rows:
        pipe.set(ctx.key("content", content_hash), owner, nx=True)
    pipe.execute()
    return len(rows)


def _bands(ctx: Context) -> int:
    """File every original's SimHash fingerprint under its band values again."""
    last_id, filed = 0, 0
    while True:
        with ctx.sessions() as session:
            rows = session.execute(
                select(Url.id, Url.url_hash, Url.simhash)
                .where(Url.simhash.is_not(None), Url.content_dedup.is_(False),
                       Url.storage_key.is_not(None), Url.id > last_id)
                .order_by(Url.id).limit(CHUNK)).all()
        if not rows:
            return filed
        last_id = rows[-1].id
        pipe = ctx.redis.pipeline(transaction=False)
        for row in rows:
            fingerprint = from_signed(row.simhash)
            for key in band_keys(ctx, fingerprint):
                pipe.sadd(key, f"{fingerprint:016x}{row.url_hash}")
        pipe.execute()
        filed += len(rows)


def _schedule_rows(ctx: Context, rows: list[Any]) -> None:
    recrawl_sets.schedule(ctx, [
        (r.url_hash,
         tier_of((r.next_crawl_at - (r.last_fetched_at or r.next_crawl_at)).total_seconds()),
         r.next_crawl_at.replace(tzinfo=r.next_crawl_at.tzinfo or UTC).timestamp())
        for r in rows])


def restore_recrawls(ctx: Context, hashes: list[str] | None = None) -> int:
    """Pages with a next crawl time (those of `hashes`, or all) back in their tier."""
    query = (select(Url.id, Url.url_hash, Url.last_fetched_at, Url.next_crawl_at)
             .where(Url.next_crawl_at.is_not(None), Url.status != Status.QUEUED))
    scheduled = 0
    if hashes is not None:
        for start in range(0, len(hashes), CHUNK):
            with ctx.sessions() as session:
                rows = session.execute(
                    query.where(Url.url_hash.in_(hashes[start:start + CHUNK]))).all()
            _schedule_rows(ctx, list(rows))
            scheduled += len(rows)
        return scheduled
    last_id = 0
    while True:
        with ctx.sessions() as session:
            rows = session.execute(
                query.where(Url.id > last_id).order_by(Url.id).limit(CHUNK)).all()
        if not rows:
            return scheduled
        last_id = rows[-1].id
        _schedule_rows(ctx, list(rows))
        scheduled += len(rows)


def _robots(ctx: Context) -> int:
    now = datetime.now(UTC)
    with ctx.sessions() as session:
        hosts = session.execute(select(Host)).scalars().all()
    pipe = ctx.redis.pipeline(transaction=False)
    restored = 0
    for host in hosts:
        if host.robots_fetched_at is None or host.robots_status is None:
            continue
        fetched = host.robots_fetched_at.replace(tzinfo=host.robots_fetched_at.tzinfo or UTC)
        left = ctx.settings.robots_ttl - int((now - fetched).total_seconds())
        if left > 0 and 200 <= host.robots_status < 500:
            pipe.set(ctx.key("robots", host.origin),
                     msgpack.packb([host.robots_status, host.robots_body or ""]), ex=left)
            restored += 1
    pipe.execute()
    return restored


def _denylist(ctx: Context) -> int:
    with ctx.sessions() as session:
        return denylist.load(ctx, session.scalars(select(Deny.pattern)).all())


def rebuild(ctx: Context, progress: Callable[[int], None] = lambda n: None) -> dict[str, int]:
    """Restore the frontier and caches from the database; returns what was restored."""
    _hold_hosts(ctx)
    restored = {"denylist": _denylist(ctx),
                "urls_queued": _requeue(ctx, progress), "urls_seen": _url_seen(ctx),
                "hosts_counted": _host_counts(ctx),
                "content_claims": _content_claims(ctx), "fingerprints": _bands(ctx),
                "recrawls": restore_recrawls(ctx), "robots_cached": _robots(ctx)}
    mark_alive(ctx)
    return restored


def mark_alive(ctx: Context) -> None:
    """Note in Redis that its frontier is complete (a restarted Redis has no such note)."""
    ctx.redis.set(ctx.key("frontier", "alive"), str(time.time()))


def is_alive(ctx: Context) -> bool:
    return bool(ctx.redis.exists(ctx.key("frontier", "alive")))


def ensure_frontier(ctx: Context) -> dict[str, int] | None:
    """Rebuild from the database if Redis lost the frontier; returns what was restored."""
    if is_alive(ctx):
        return None
    return rebuild(ctx)
