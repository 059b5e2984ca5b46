"""Blocking hosts and deleting pages: the denylist, takedowns and their audit trail."""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import UTC, datetime

from crawlapp.adapters.context import Context
from crawlapp.adapters.db import dedup_rows, maintenance, repository, schedule
from crawlapp.adapters.db.repository import Session
from crawlapp.adapters.redis.dedup_index import Held
from crawlapp.core import hostpatterns
from crawlapp.core.records import QueueEntry, Status
from crawlapp.core.rows import UrlRow
from crawlapp.core.simhash import from_signed
from crawlapp.core.urls import host_of, url_hash
from crawlapp.ops.rebuild import restore_recrawls
from crawlapp.stages import dedup
from crawlapp.stages.admission import requeue, send_back

DENIED_PREFIX = "denylist"  # last_error of rows blocked by the denylist: "denylist: <pattern>"


def audit(ctx: Context, command: str, target: str, counts: dict[str, int]) -> None:
    """Append one JSON line to <data dir>/audit.log."""
    path = ctx.settings.data_dir / "audit.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    line = {"time": datetime.now(UTC).isoformat(timespec="seconds"), "command": command,
            "target": target, "counts": counts}
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(line) + "\n")


def block(ctx: Context, pattern: str, reason: str | None) -> dict[str, int] | None:
    """Deny `pattern` (normalized): drop its hosts' queued URLs and re-crawls and mark their
    queued rows blocked. None if it was on the denylist already."""
    with ctx.sessions.begin() as session:
        if not maintenance.deny(session, pattern, reason, datetime.now(UTC)):
            return None
        ctx.denylist.add(pattern)  # before the commit: the hot path stops first
        rows = maintenance.rows_of_pattern(session, pattern)
        queued = [r.url_hash for r in rows if r.status == Status.QUEUED]
        maintenance.block_rows(session, queued, f"{DENIED_PREFIX}: {pattern}")
        stopped = schedule.count(session, [r.url_hash for r in rows])
    hosts = sorted({r.host for r in rows})
    ctx.recrawls.forget([r.url_hash for r in rows])  # and the drain skips denied hosts
    counts = {"hosts": len(hosts),
              "urls_dropped": sum(ctx.frontier.drop(host) for host in hosts),
              "rows_blocked": len(queued),
              "recrawls_stopped": stopped}
    ctx.validators.forget([r.url for r in rows if r.status == Status.QUEUED])
    audit(ctx, "block", pattern, counts)
    return counts


def unblock(ctx: Context, pattern: str) -> dict[str, int] | None:
    """Lift `pattern`: rows it blocked are queued again and re-crawls come back, for hosts no
    other pattern still denies. None if it was not on the denylist."""
    with ctx.sessions.begin() as session:
        others = maintenance.lift(session, pattern)
        if others is None:
            return None
        ctx.denylist.remove(pattern)
        rows = [r for r in maintenance.rows_of_pattern(session, pattern)
                if hostpatterns.denied_by(r.host, others) is None]
        requeued = [r for r in rows if r.status == Status.BLOCKED
                    and (r.last_error or "").startswith(DENIED_PREFIX)]
        repository.set_status(session, [r.url_hash for r in requeued], Status.QUEUED)
        requeue(ctx, requeued)
    counts = {"hosts": len({r.host for r in rows}), "urls_queued": len(requeued),
              "recrawls_restored": restore_recrawls(ctx, [r.url_hash for r in rows])}
    audit(ctx, "unblock", pattern, counts)
    return counts


def _tombstone(session: Session, url: str) -> None:
    """A row for a URL never seen, so that it is never queued when a link finds it."""
    repository.add_urls(session, [UrlRow(url_hash(url), url, host_of(url), 0, Status.DELETED,
                                         datetime.now(UTC))])


def delete(ctx: Context, url: str | None = None, host: str | None = None) -> dict[str, int]:
    """Take down one URL or every URL of a host: bodies no other page points to are removed,
    rows become 'deleted' (never crawled again), and they leave the frontier and the
    re-crawl sets. Running it again changes nothing."""
    key = url_hash(url) if url else None
    with ctx.sessions.begin() as session:
        rows = maintenance.rows_to_take_down(session, key, host)
        if url and not rows:
            _tombstone(session, url)
        live = [r for r in rows if r.status != Status.DELETED]
        hashes = [r.url_hash for r in live]
        stopped = schedule.count(session, hashes)
        keys, shared, history = maintenance.take_down(session, rows, hashes, key, host)
    by_host: dict[str, list[QueueEntry]] = defaultdict(list)
    for r in live:
        if r.status == Status.QUEUED:
            by_host[r.host].append(QueueEntry(r.depth, r.url, r.hops))
    dropped = (ctx.frontier.drop(host) if host
               else sum(ctx.frontier.drop(h, urls) for h, urls in by_host.items()))
    # Dedup must not point new pages at deleted ones: their claims, table members and canonical
    # pointers go, and their copies are handed to another original (or fetched again when
    # none is left).
    ctx.dedup_index.release([Held(r.url_hash, r.content_hash,
                                  from_signed(r.simhash) if r.simhash is not None else None)
                             for r in live])
    ctx.canonicals.forget(hashes)
    ctx.validators.forget([r.url for r in live])
    ctx.retries.forget([r.url for r in live])
    ctx.recrawls.forget(hashes)
    with ctx.sessions.begin() as session:
        orphans = dedup_rows.mark_refetch(session, dedup.adopt(ctx, session, hashes),
                                          "requeued: its original was taken down")
    send_back(ctx, orphans)
    counts = {"rows_deleted": len(live) + (1 if url and not rows else 0),
              "bodies_removed": sum(ctx.blobs.delete(k) for k in keys if k not in shared),
              "bodies_kept_shared": len(shared),
              "urls_dropped": dropped,
              "recrawls_stopped": stopped,
              "copies_requeued": len(orphans),
              "fetches_forgotten": history}
    audit(ctx, "delete", url or f"host {host}", counts)
    return counts
