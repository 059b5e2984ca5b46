"""Blocking hosts and deleting pages: the denylist, takedowns and their audit trail."""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import CursorResult, or_, select, update
from sqlalchemy import delete as delete_rows
from sqlalchemy.orm import Session

from crawlapp.adapters.context import Context
from crawlapp.adapters.db import repository
from crawlapp.adapters.db.models import Deny, Fetch, Url
from crawlapp.adapters.redis.dedup_index import Held
from crawlapp.core import hostpatterns
from crawlapp.core.records import Status
from crawlapp.core.simhash import from_signed
from crawlapp.core.urls import host_of, url_hash
from crawlapp.ops.rebuild import restore_recrawls
from crawlapp.stages import dedup
from crawlapp.stages.admission import requeue
from crawlapp.stages.storing import mark_refetch, send_back

DENIED_PREFIX = "denylist"  # last_error of rows blocked by the denylist: "denylist: <pattern>"


def audit(ctx: Context, command: str, target: str, counts: dict[str, int]) -> None:
    """Append one JSON line to <data dir>/audit.log."""
    path = ctx.settings.data_dir / "audit.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    line = {"time": datetime.now(UTC).isoformat(timespec="seconds"), "command": command,
            "target": target, "counts": counts}
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(line) + "\n")


def _host_clause(pattern: str) -> Any:
    exact, likes = hostpatterns.sql_host_filter(pattern)
    return or_(Url.host.in_(exact), *(Url.host.like(p) for p in likes))


def block(ctx: Context, pattern: str, reason: str | None) -> dict[str, int] | None:
    """Deny `pattern` (normalized): drop its hosts' queued URLs and re-crawls and mark their
    queued rows blocked. None if it was on the denylist already."""
    with ctx.sessions.begin() as session:
        if session.get(Deny, pattern) is not None:
            return None
        session.add(Deny(pattern=pattern, reason=reason, created_at=datetime.now(UTC)))
        ctx.denylist.add(pattern)  # before the commit: the hot path stops first
        rows = session.execute(select(Url.url_hash, Url.url, Url.host, Url.status)
                               .where(_host_clause(pattern))).all()
        queued = [r.url_hash for r in rows if r.status == Status.QUEUED]
        for start in range(0, len(queued), 500):
            session.execute(update(Url).where(Url.url_hash.in_(queued[start:start + 500]))
                            .values(status=Status.BLOCKED, last_error=f"{DENIED_PREFIX}: {pattern}"))
    hosts = sorted({r.host for r in rows})
    counts = {"hosts": len(hosts),
              "urls_dropped": sum(ctx.frontier.drop(host) for host in hosts),
              "rows_blocked": len(queued),
              "recrawls_stopped": ctx.recrawls.forget([r.url_hash for r in rows])}
    ctx.validators.forget([r.url for r in rows if r.status == Status.QUEUED])
    audit(ctx, "block", pattern, counts)
    return counts


def unblock(ctx: Context, pattern: str) -> dict[str, int] | None:
    """Lift `pattern`: rows it blocked are queued again and re-crawls come back, for hosts no
    other pattern still denies. None if it was not on the denylist."""
    with ctx.sessions.begin() as session:
        entry = session.get(Deny, pattern)
        if entry is None:
            return None
        session.delete(entry)
        ctx.denylist.remove(pattern)
        others = list(session.scalars(select(Deny.pattern).where(Deny.pattern != pattern)))
        rows = [r for r in session.execute(
            select(Url.url_hash, Url.url, Url.host, Url.depth, Url.priority, Url.hops,
                   Url.status, Url.last_error).where(_host_clause(pattern))).all()
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
    repository.add_urls(session, [{"url_hash": url_hash(url), "url": url, "host": host_of(url),
                                   "depth": 0, "priority": 0.0, "status": Status.DELETED,
                                   "discovered_at": datetime.now(UTC)}])


def delete(ctx: Context, url: str | None = None, host: str | None = None) -> dict[str, int]:
    """Take down one URL or every URL of a host: bodies no other page points to are removed,
    rows become 'deleted' (never crawled again), and they leave the frontier and the
    re-crawl sets. Running it again changes nothing."""
    with ctx.sessions.begin() as session:
        where = Url.url_hash == url_hash(url) if url else Url.host == host
        rows = session.execute(select(Url.url_hash, Url.url, Url.host, Url.depth, Url.hops,
                                      Url.status, Url.storage_key, Url.raw_storage_key, Url.content_hash,
                                      Url.simhash)
                               .where(where)).all()
        if url and not rows:
            _tombstone(session, url)
        live = [r for r in rows if r.status != Status.DELETED]
        hashes = [r.url_hash for r in live]
        # A rendered page may keep its body as fetched too (raw_storage_key), and the fetch
        # history names the bodies of earlier fetches (and, of a host, its robots.txt).
        in_history = Fetch.url_hash == url_hash(url) if url else Fetch.host == host
        keys = sorted({k for r in rows for k in (r.storage_key, r.raw_storage_key) if k}
                      | {k for k in session.scalars(select(Fetch.storage_key).where(in_history))
                         if k})
        shared: set[str] = set()
        for start in range(0, len(keys), 500):
            chunk = keys[start:start + 500]
            for column in (Url.storage_key, Url.raw_storage_key):
                shared.update(session.scalars(select(column).where(column.in_(chunk), ~where)))
            shared.update(session.scalars(select(Fetch.storage_key).where(
                Fetch.storage_key.in_(chunk), ~in_history)))
        forgotten: CursorResult[Any] = session.execute(  # type: ignore[assignment]
            delete_rows(Fetch).where(in_history))
        history = forgotten.rowcount
        for start in range(0, len(hashes), 500):
            session.execute(update(Url).where(Url.url_hash.in_(hashes[start:start + 500])).values(
                status=Status.DELETED, storage_key=None, raw_storage_key=None, content_hash=None,
                simhash=None, title=None,
                etag=None, last_modified=None, next_crawl_at=None, last_error="deleted"))
    by_host: dict[str, list[tuple[int, str, int]]] = defaultdict(list)
    for r in live:
        if r.status == Status.QUEUED:
            by_host[r.host].append((r.depth, r.url, r.hops))
    dropped = (ctx.frontier.drop(host) if host
               else sum(ctx.frontier.drop(h, urls) for h, urls in by_host.items()))
    # Dedup must not point new pages at deleted ones: their claims, band entries and canonical
    # pointers go, and their copies are handed to another original (or fetched again when
    # none is left).
    ctx.dedup_index.release([Held(r.url_hash, r.content_hash,
                                  from_signed(r.simhash) if r.simhash is not None else None)
                             for r in live])
    ctx.canonicals.forget(hashes)
    ctx.validators.forget([r.url for r in live])
    ctx.retries.forget([r.url for r in live])
    with ctx.sessions.begin() as session:
        orphans = mark_refetch(session, dedup.adopt(ctx, session, hashes),
                          "requeued: its original was taken down")
    send_back(ctx, orphans)
    counts = {"rows_deleted": len(live) + (1 if url and not rows else 0),
              "bodies_removed": sum(ctx.blobs.delete(k) for k in keys if k not in shared),
              "bodies_kept_shared": len(shared),
              "urls_dropped": dropped,
              "recrawls_stopped": ctx.recrawls.forget(hashes),
              "copies_requeued": len(orphans),
              "fetches_forgotten": history}
    audit(ctx, "delete", url or f"host {host}", counts)
    return counts
