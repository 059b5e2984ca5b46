"""The store stage's re-crawl plan: when each fetched page is fetched again.

The `optimal` policy (core/freshness.py): each page's visit adds to its change record (a 304,
the same content hash or the same visible text: unchanged; a new version: changed, at its
Last-Modified when the server says), its change rate is estimated against its host's, and its
next visit follows from its host's Lagrange multiplier, solved from the host's sums in Redis
(adapters/redis/change_rates.py) at most every few seconds. A page in a sitemap that is
trusted (sitemaps.py: its lastmods proved true) waits the maximum interval: the sitemap says
when it changes. The `adaptive` policy halves or grows the interval. Both keep within an
operator's rules."""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

from crawlapp.adapters.context import Context
from crawlapp.adapters.redis.change_rates import ALL_HOSTS
from crawlapp.core.freshness import (
    SOLVE_SECONDS,
    ChangeRecord,
    HostPlan,
    HostRates,
    Planning,
    Visit,
    best_interval,
    bucket_of,
    count_visit,
    expected_freshness,
    http_time,
    hub_driven,
    importance,
    kind_of,
    links_digest,
    observe,
    past_copy,
)
from crawlapp.core.priority import depth_priority
from crawlapp.core.records import Page, Status
from crawlapp.core.recrawl import (
    Bounds,
    Planned,
    Unrefreshed,
    next_schedule,
    recheck_after,
    tier_of,
    timestamp,
)
from crawlapp.core.robots import effective_delay
from crawlapp.core.rows import Previous
from crawlapp.core.urls import host_of, url_hash

SERVED_NOW = 2.0  # seconds: a Last-Modified this close to its fetch is the time it was served


@dataclass
class Plan:
    """A batch's next fetches, the change record and link digest of each page fetched, and
    what its hosts' sums in Redis gain (written after the commit: `commit`)."""

    planned: list[Planned] = field(default_factory=list)
    records: dict[str, tuple[bytes | None, int | None]] = field(default_factory=dict)
    deltas: dict[str, dict[str, float]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(float)))
    settings: dict[str, dict[str, float]] = field(default_factory=dict)
    counts: Counter[str] = field(default_factory=Counter)  # recrawl:<what> counters

    def set_delays(self, ctx: Context, robots_pages: list[Page]) -> None:
        """Keep the delay each robots.txt answer sets for its host (its capacity)."""
        s = ctx.settings
        for page in robots_pages:
            if page.robots is not None:
                delay = effective_delay(page.robots.crawl_delay, s.default_delay,
                                        s.max_crawl_delay)
                self.settings.setdefault(page.host, {})["d"] = delay + s.delay_margin

    def commit(self, ctx: Context) -> None:
        """The hosts' sums and the counters, in one round trip."""
        pipe = ctx.redis.pipeline(transaction=False)
        ctx.change_rates.add(self.deltas, self.settings, pipe)
        ctx.counters.bump(dict(self.counts), pipe=pipe)
        if len(pipe):
            pipe.execute()


def planning(ctx: Context) -> Planning:
    s = ctx.settings
    return Planning(s.recrawl_min_interval, s.recrawl_max_interval, s.recrawl_first_interval,
                    s.recrawl_share, s.default_delay + s.delay_margin)


def plan(ctx: Context, pages: list[Page], previous: dict[str, Previous],
         held: Mapping[str, Unrefreshed] | None = None) -> Plan:
    """The plan of a batch's pages (`previous`: what their rows held). Pages fetched again
    are recorded once: a page no newer than its row (its batch stored again) keeps its record
    and its schedule. A page whose copy the batch leaves as it was (`held`: why its re-crawl
    did not refresh it) is tried again later (`recheck_after`)."""
    out = Plan()
    settings = ctx.settings
    default = settings.recrawl_bounds
    for page in pages:
        why = (held or {}).get(page.url_hash)
        before = previous.get(page.url_hash)
        if why is not None and before is not None and before.last_fetched_at is not None:
            at = page.fetched_at or time.time()
            wait = recheck_after(why, at - timestamp(before.last_fetched_at), settings.robots_ttl,
                                 settings.recrawl_rule_set.bounds(page.url, page.host, default))
            out.planned.append(Planned(page.url_hash, tier_of(wait), at + wait))
            out.counts[f"recrawl:{why}"] += 1
    fetched = [p for p in pages if p.status == Status.FETCHED]
    for page in fetched:
        before = previous.get(page.url_hash)
        out.counts["recrawl:refresh" if before and before.last_fetched_at
                   else "recrawl:discovery"] += 1
    if settings.recrawl_policy == "adaptive":
        for page in fetched:
            before = previous.get(page.url_hash)
            schedule = next_schedule(
                page.fetched_at, before.interval if before else None,
                _changed(page, before, _last(before)),
                before.priority if before else depth_priority(page.depth),
                settings.recrawl_rule_set.bounds(page.url, page.host, default))
            out.planned.append(Planned(page.url_hash, schedule.tier, schedule.next_at))
        return out
    plans, trusted = host_plans(ctx, {p.host for p in fetched}, out.settings)
    digests = {page.url_hash: _links_digest(page, previous.get(page.url_hash))
               for page in fetched}
    revealing = _revealing(ctx, [page for page in fetched
                                 if _moved(digests[page.url_hash], previous.get(page.url_hash))])
    for page in fetched:
        before = previous.get(page.url_hash)
        last = _last(before)
        if before is not None and last is not None and page.fetched_at <= last:
            if before.next_crawl_at is not None:  # stored already: its row has this visit
                next_at = timestamp(before.next_crawl_at)
                out.planned.append(Planned(page.url_hash, tier_of(next_at - last), next_at))
            continue
        bounds = settings.recrawl_rule_set.bounds(page.url, page.host, default)
        _visit(out, page, before, last, plans[page.host], bounds,
               page.host in trusted and before is not None and before.sitemap_lastmod is not None,
               digests[page.url_hash], page.url_hash in revealing)
    return out


def _last(before: Previous | None) -> float | None:
    """When the page was fetched before (None: never)."""
    return timestamp(before.last_fetched_at) if before and before.last_fetched_at else None


def _links_digest(page: Page, before: Previous | None) -> int | None:
    """The digest of a page's links, with a sitemap's lastmods (a 304: its row's)."""
    if page.not_modified:
        return before.links_digest if before else None
    return links_digest([link.url for link in page.links]
                        + [f"{url} {at}" for url, at in (page.lastmods or {}).items()])


def _moved(digest: int | None, before: Previous | None) -> bool:
    """The links differ from those of the page's previous visit."""
    return (before is not None and before.links_digest is not None and digest is not None
            and digest != before.links_digest)


def _revealing(ctx: Context, moved: list[Page]) -> set[str]:
    """Of pages whose links `moved`, those that are worth visiting for them: a sitemap whose
    URLs or lastmods moved, and a page with a link to its own host that the crawl has not seen
    yet (the URL-seen filter says "definitely new", one round trip for the batch). A page whose
    links change among pages already known (a "random posts" block) reveals nothing. Links to
    other hosts are left out: one the scope refuses is never seen, and would look new at every
    visit."""
    revealing = {page.url_hash for page in moved if page.lastmods}
    asked: list[tuple[str, bytes]] = []
    for page in moved:
        if not page.lastmods:
            asked += [(page.url_hash, bytes.fromhex(url_hash(link.url))) for link in page.links
                      if not link.nofollow and host_of(link.url) == page.host]
    if asked:
        seen = ctx.url_seen.check([item for _, item in asked])
        revealing |= {page for (page, _), maybe in zip(asked, seen, strict=True) if not maybe}
    return revealing


def _changed(page: Page, before: Previous | None, last: float | None) -> bool:
    """A new version: not a 304, not the content hash of the row, and not the same visible
    text (`_markup_only`)."""
    return not page.not_modified and (before is None or (
        before.content_hash != page.content_hash and not _markup_only(page, before, last)))


def _markup_only(page: Page, before: Previous, last: float | None) -> bool:
    """A new body whose visible text is the row's: its markup alone moved (a token in a form,
    a timestamp in a script, an ad), which many dynamic pages do at every request; taken for
    changes, they would look as if they changed faster than any visit could follow. Unless
    its Last-Modified tells of a modification since the last visit (`last`), older than
    SERVED_NOW: the server then says the page changed (a link's target, an image), where a
    dynamic page's Last-Modified, if it sends one, is the time it is served."""
    if page.text_digest is None or page.text_digest != before.text_digest \
            or page.content_hash == before.content_hash:
        return False
    modified = http_time(page.last_modified)
    return modified is None or last is None \
        or not last < modified <= page.fetched_at - SERVED_NOW


def _visit(out: Plan, page: Page, before: Previous | None, last: float | None,
           host_plan: HostPlan, bounds: Bounds, in_trusted_sitemap: bool, digest: int | None,
           revealing: bool) -> None:
    """One page's visit into its change record (a link change when it is `revealing`), its
    next visit and its host's sums; `digest`: its links' (`_links_digest`)."""
    record = ChangeRecord.unpack(before.changes if before else None)
    changed = _changed(page, before, last)
    if last is not None:
        out.counts["recrawl:changed" if changed else "recrawl:unchanged"] += 1
        if before is not None and not page.not_modified and _markup_only(page, before, last):
            out.counts["recrawl:markup_only"] += 1
    first = _first_change(before, last, page.fetched_at) if in_trusted_sitemap and changed \
        else None
    record = observe(record, Visit(page.fetched_at, last, changed,
                                   http_time(page.last_modified), revealing, first))
    kind = kind_of(page.url)
    best = best_interval(record, host_plan, bounds, page.depth, kind, in_trusted_sitemap)
    claim = min(host_plan.hub_claim(best.link_rate), 1.0 / bounds.low)
    hub = claim * host_plan.hub_scale  # what its host grants the claim
    bucket = bucket_of(best.rate / best.weight)
    if first is not None and last is not None:
        # brought about by its sitemap's lastmod: fresh from the last visit to that change
        fresh = (first - last) / (page.fetched_at - last)
    else:
        # A page a trusted sitemap tells of waits the maximum interval and is fetched when
        # its lastmod moves: fresh at least as its host's plan would keep it without it.
        planned = best_interval(record, host_plan, bounds, page.depth, kind, False) \
            if in_trusted_sitemap else best
        fresh = expected_freshness(best.rate, 1.0 / planned.interval)
    # its host's and its kind's changes in seconds watched: to its first change, if known
    watched = 0.0 if last is None else (first if first is not None else page.fetched_at) - last
    _count(out.deltas, page.host, record, bucket, claim, fresh, changed, watched, kind)
    record = record._replace(bucket=bucket, hub_rate=claim, freshness=fresh)
    out.records[page.url_hash] = (record.pack(), digest)
    queued = best.interval if hub_driven(hub, best.interval) else bounds.queue_after(best.interval)
    out.planned.append(Planned(page.url_hash, tier_of(queued), page.fetched_at + queued))


def _first_change(before: Previous | None, last: float | None, at: float) -> float | None:
    """The first change since the last visit (`last`) that a trusted sitemap's lastmod told
    (stages/sitemapping.py keeps it on the row), if it came before this visit (`at`)."""
    if before is None or before.sitemap_lastmod is None or last is None:
        return None
    first = timestamp(before.sitemap_lastmod)
    return first if past_copy(first, last) and first <= at else None


def _count(deltas: dict[str, dict[str, float]], host: str, before: ChangeRecord, bucket: int,
           hub: float, fresh: float, changed: bool, span: float, kind: int) -> None:
    """A page's move in its host's sums and the fleet's."""
    for name in (host, ALL_HOSTS):
        count_visit(deltas[name], before, bucket, hub, fresh, changed, span, kind)


def host_plans(ctx: Context, hosts: set[str], solved: dict[str, dict[str, float]],
               kept_for: float = SOLVE_SECONDS) -> tuple[dict[str, HostPlan], frozenset[str]]:
    """Each host's plan: its sums read, its multiplier solved again where older than
    `kept_for` (added to `solved`, for the caller to keep for the other processes), the
    fleet's budget applied; and the hosts whose sitemaps' lastmods are believed (all read in
    one round trip)."""
    if not hosts:
        return {}, frozenset()
    rules = planning(ctx)
    now = time.time()
    pipe = ctx.redis.pipeline(transaction=False)
    read_sums = ctx.change_rates.read(hosts, pipe)
    read_admitted = ctx.budgets.admitted(sorted(hosts), pipe)
    read_authority = ctx.authority.read(hosts, pipe)
    read_trust = ctx.sitemap_trust.read(hosts, pipe)
    replies = pipe.execute()
    sums = {host: HostRates.parse(raw) for host, raw in read_sums(replies).items()}
    admitted, authority = read_admitted(replies), read_authority(replies)
    fleet = rules.fleet_multiplier(sums[ALL_HOSTS], ctx.settings.recrawl_budget)
    plans = {}
    for host in hosts:
        multiplier, fresh = rules.multiplier(sums[host], admitted[host], now, kept_for,
                                             importance(authority[host]))
        if fresh:
            solved.setdefault(host, {}).update(mu=multiplier, mu_at=now)
        plans[host] = rules.host_plan(sums[host], max(multiplier, fleet), authority[host])
    return plans, frozenset(h for h, trust in read_trust(replies).items() if trust.trusted)
