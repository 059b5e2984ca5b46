"""The one way URLs enter the frontier.

- `admit`: URLs found (seeds, links, sitemaps, a redirect's target). Their rows are recorded
  (a known URL found closer to a seed has its depth lowered, and passes the shorter distance
  on through its recorded links), the per-host and per-pattern budgets are charged, and what
  is to be fetched is queued.
- `requeue`: known rows going back (re-crawl, unblock, rebuild, lost batches, copies handed
  back), queued with their stored depth and priority.

A URL found is scored by core/priority.py: its host's authority (read by the links stage in
its one round trip for the batch's link hosts), neutral freshness and the link context; the
row keeps all three.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Protocol

from crawlapp.adapters.context import Context
from crawlapp.adapters.db import links_unread, repository
from crawlapp.adapters.db.repository import Session
from crawlapp.adapters.errors import transient_errors
from crawlapp.core.errors import NotQueued, TransientError
from crawlapp.core.priority import NEW_FRESHNESS, depth_priority
from crawlapp.core.records import QueuedURL, Status
from crawlapp.core.rows import LinkEdge, UrlRow
from crawlapp.core.traps import PatternBudget, url_pattern
from crawlapp.core.urls import dedup_key, host_of, url_hash

Rows = dict[str, UrlRow]  # by url_hash
# status of a page -> depth its links add (a robots.txt record's sitemaps are at depth 0)
FOLLOWED_STATUSES: dict[str, int] = {Status.FETCHED: 1, Status.REDIRECTED: 0, Status.ROBOTS: 1}


class Known(Protocol):
    """A row known to the database, as `requeue` reads it."""

    @property
    def url(self) -> str: ...
    @property
    def depth(self) -> int: ...
    @property
    def priority(self) -> float: ...
    @property
    def hops(self) -> int: ...


def url_row(url: str, depth: int, max_depth: int, now: datetime,
            link_context: float | None = None, hops: int = 0, host: str | None = None,
            key: str | None = None) -> UrlRow:
    """A URL found, to be admitted (its priority is set on admission: `_scored`); `host`
    and `key` (its url_hash) when the caller has them."""
    return UrlRow(url_hash(url) if key is None else key, url,
                  host_of(url) if host is None else host, depth,
                  Status.QUEUED if depth <= max_depth else Status.TOO_DEEP, now, hops,
                  depth_priority(depth) if link_context is None else link_context)


def _scored(ctx: Context, rows: Rows, known: Mapping[str, float]) -> Rows:
    """The rows with their host's authority (from `known`, else read) and their priority (a
    new URL's freshness is neutral; a row without a link context gets its depth's)."""
    missing = {row.host for row in rows.values()} - known.keys()
    authority = {**known, **ctx.authority.load(missing)} if missing else known
    weights = ctx.settings.priority_weights
    scored: Rows = {}
    for h, row in rows.items():
        context = depth_priority(row.depth) if row.link_context is None else row.link_context
        score = authority[row.host]
        scored[h] = row.scored(score, weights.priority(score, NEW_FRESHNESS, context), context)
    return scored


def add_row(rows: Rows, row: UrlRow) -> None:
    """Add `row` unless `rows` has its URL at a depth no greater (and as few off-scope hops)."""
    known = rows.get(row.url_hash)
    if known is None or (known.depth, known.hops) > (row.depth, row.hops):
        rows[row.url_hash] = row


def _room(counts: Counter[str], totals: list[int], cap: int) -> dict[str, int]:
    """How many of this batch's URLs each key may still admit, from the totals after adding."""
    return {key: cap - (int(total) - n) for (key, n), total in zip(counts.items(), totals,
                                                                    strict=True)}


def _within_budget(ctx: Context, session: Session, candidates: list[QueuedURL]
                   ) -> list[QueuedURL]:
    """Count newly queued URLs per host and per (host, URL pattern) in one round trip.

    URLs past CRAWL_MAX_PAGES_PER_HOST become 'over_budget', and URLs past
    CRAWL_TRAP_PATTERN_CAP of one pattern on one host become 'trap', instead of queued.
    """
    if not candidates:
        return candidates
    hosts = [host_of(item.url) for item in candidates]
    patterns = [PatternBudget.key(host, url_pattern(dedup_key(item.url)))
                for host, item in zip(hosts, candidates, strict=True)]
    per_host, per_pattern = Counter(hosts), Counter(patterns)
    host_totals, pattern_totals = ctx.budgets.add(per_host, per_pattern)
    host_room = _room(per_host, host_totals, ctx.settings.max_pages_per_host)
    pattern_room = _room(per_pattern, pattern_totals, ctx.settings.trap_pattern_cap)
    kept: list[QueuedURL] = []
    refused: dict[str, list[str]] = {Status.OVER_BUDGET: [], Status.TRAP: []}
    for host, pattern, item in zip(hosts, patterns, candidates, strict=True):
        host_room[host] -= 1
        pattern_room[pattern] -= 1
        if host_room[host] < 0:
            refused[Status.OVER_BUDGET].append(url_hash(item.url))
        elif pattern_room[pattern] < 0:
            refused[Status.TRAP].append(url_hash(item.url))
        else:
            kept.append(item)
    for status, hashes in refused.items():
        repository.set_status(session, hashes, status)
    return kept


def _settle(ctx: Context, session: Session, rows: Rows, now: datetime,
            authority: Mapping[str, float], insert: bool = True
            ) -> tuple[set[str], Rows, list[QueuedURL]]:
    """Insert new rows (with `insert`), lower known depths; return the rows that are new,
    the next wave of rows (the recorded link targets of fetched pages whose depth went down,
    which only lower known rows: a link target without a row was refused, by nofollow, the
    denylist, a trap or the scope) and what is to be queued.

    Two-tier URL dedup: the Bloom filter answers for the whole batch in one round trip;
    "definitely new" rows are inserted (ON CONFLICT still guards a Bloom filter that lost
    its state), "maybe seen" rows are looked up, and those the database does not know (a
    Bloom false positive) are inserted too, so a false positive never loses a URL.
    """
    max_depth = ctx.settings.max_depth
    rows = _scored(ctx, rows, authority)
    new: set[str] = set()
    if insert:
        maybe_seen = ctx.url_seen.check_and_add([bytes.fromhex(h) for h in rows])
        new = repository.add_urls(session, [row for row, seen in zip(rows.values(), maybe_seen,
                                                                        strict=True) if not seen])
    known, lowered = repository.lower_depths(
        session, [row for h, row in rows.items() if h not in new])
    if insert:
        new |= repository.add_urls(session, [row for h, row in rows.items()
                                             if h not in new and h not in known])
    fresh = [QueuedURL(row.url, row.depth, row.priority, hops=row.hops)
             for row in (rows[h] for h in new) if row.status == Status.QUEUED]
    unblocked = [item for item in lowered
                 if item.status == Status.TOO_DEEP and item.new_depth <= max_depth]
    repository.set_status(session, [item.url_hash for item in unblocked], Status.QUEUED)
    fresh += [QueuedURL(item.url, item.new_depth, item.priority, hops=item.hops)
              for item in unblocked]
    queue = _within_budget(ctx, session, fresh)
    queue += [QueuedURL(item.url, item.new_depth, item.priority, replaces_depth=item.old_depth,
                        hops=item.hops)
              for item in lowered if item.status == Status.QUEUED]
    passed_on = {item.url_hash: item.new_depth + FOLLOWED_STATUSES[item.status]
                 for item in lowered if item.status in FOLLOWED_STATUSES}
    wave: Rows = {}
    for source, target, nofollow in repository.link_targets(session, list(passed_on)):
        if not nofollow:
            add_row(wave, url_row(target, passed_on[source], max_depth, now))
    return new, wave, queue


def admit(ctx: Context, rows: Rows, edges: list[LinkEdge] | None = None,
          host_links: set[tuple[str, str]] | None = None,
          authority: Mapping[str, float] | None = None,
          carried: Sequence[QueuedURL] = (), carried_since: float | None = None,
          batch_id: str | None = None) -> set[str]:
    """Record the rows, edges and host graph edges (`host_links`: source host, target
    host) and queue what is new; returns the url_hash of the rows that are new (a known
    URL's next waves add none). `authority`: the hosts' scores the caller has read already
    (the others are read here). `batch_id`: the stored batch whose links these are, its
    note in links_unread dropped with the commit.

    The frontier gets the URLs once the rows are committed: a URL fetched before its row
    exists would have no row to record its fetch on. A server failing at the commit or at
    the frontier raises NotQueued with those URLs: the caller tries again with them as
    `carried` (and the failed try's start as `carried_since`), queued again if their rows
    are still 'queued' (a commit whose answer was lost went through, and its rows are known
    by then: nothing else would queue them). A row found after the failed try began is not
    one it wrote: that try's commit did not go through, and the batch that found the URL
    since has queued it (it may be fetched already, its row still 'queued' until stored).
    """
    now = datetime.now(UTC)
    added: set[str] = set()
    queue: list[QueuedURL] = []
    with ctx.sessions() as session:
        if edges:
            repository.add_links(session, edges)
        if host_links:
            repository.add_host_links(session, host_links)
        insert = True
        while rows:
            new, rows, more = _settle(ctx, session, rows, now, authority or {}, insert)
            added |= new
            queue += more
            insert = False
        if carried:
            waiting = repository.priorities_with_status(
                session, [url_hash(item.url) for item in carried], Status.QUEUED,
                None if carried_since is None else datetime.fromtimestamp(carried_since, UTC))
            queue += [item for item in carried if url_hash(item.url) in waiting]
        if batch_id is not None:
            links_unread.read(session, batch_id)
        try:
            with transient_errors():
                session.commit()
                ctx.frontier.add(queue, time.time())
        except TransientError as exc:
            raise NotQueued(exc, queue, now.timestamp()) from exc
    return added


def requeue(ctx: Context, rows: Iterable[Known], not_before: float | None = None,
            unless_leased: bool = False) -> int:
    """Queue known rows again (marked queued by the caller) with their depth and priority,
    from `not_before` (now by default; `unless_leased`: see Frontier.add). Returns how many
    URLs the frontier took."""
    return ctx.frontier.add([QueuedURL(r.url, r.depth, r.priority, hops=r.hops) for r in rows],
                            time.time() if not_before is None else not_before, unless_leased)


def send_back(ctx: Context, queued: dict[str, QueuedURL]) -> None:
    """Put pages marked queued back in the frontier, out of the re-crawl sets, without the
    validators of a conditional GET."""
    if not queued:
        return
    ctx.recrawls.forget(list(queued))
    ctx.validators.forget([q.url for q in queued.values()])
    requeue(ctx, queued.values())
