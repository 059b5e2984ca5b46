"""Stage 1, fetch: renew the leases, learn robots.txt, fetch the batch (a host's URLs one
after the other), release the hosts (or hand pages to render over to the render stage,
leases held)."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import NamedTuple

from crawlapp.adapters.context import Context
from crawlapp.adapters.errors import Outage
from crawlapp.adapters.http import Fetcher, run_on_fetch_loop, start_at
from crawlapp.adapters.redis import robots_cache
from crawlapp.adapters.redis.pipeline import Pipeline, joined
from crawlapp.core.ledger import LeaseLedger, given_up
from crawlapp.core.politeness import Throttle, politeness_key, unreachable_sentence
from crawlapp.core.records import Fetched, Handover, Lease, Page, Release, Status
from crawlapp.core.recrawl import conditional_headers
from crawlapp.core.render_rule import shares_slots, wants_render
from crawlapp.core.retry import UrlTry, fetch_rule
from crawlapp.core.robots import MAX_ROBOTS_BYTES, RobotsPolicy, robots_url
from crawlapp.core.scope import hostname, is_address
from crawlapp.core.urls import origin_of
from crawlapp.stages.pages import (
    apply_fetch,
    blocked,
    page_for,
    robots_page,
    robots_policy,
    sitemap_links,
)
from crawlapp.stages.releasing import EarlyRelease, EarlySlotReturn, chain_rule
from crawlapp.stages.tallies import fetch_counts
from crawlapp.stages.turns import host_turns

log = logging.getLogger(__name__)
# The looks of every batch of the process at leases asked to end early, told as one.
_YIELD_LOOKS = Outage(log, "looking for leases to end early", "they run on")
RUN_KEPT = 60.0  # seconds a batch's retry counts are kept past the ride-out
YIELD_POLL = 0.5  # seconds between two looks for the batch's leases asked to end early


@dataclass
class Plan:
    """What the batch does with each held lease."""

    robots: list[Lease]      # origin's robots.txt unknown: fetch it in this slot, URL waits
    pages: list[Lease]       # allowed: fetch the URL (a host's one after the other)
    refused: list[tuple[Lease, str]]  # not fetched, with the reason
    waiting: list[Lease]     # the other URLs of a host fetching a robots.txt: they go back


def plan_batch(leases: list[Lease], policies: dict[str, RobotsPolicy | None],
               user_agent: str, denied: frozenset[str] = frozenset()) -> Plan:
    """Sort leases by the denylist (`denied` hosts) and what robots.txt says of their URL; a
    host asks one robots.txt at most, and nothing else in that batch. Pure."""
    plan = Plan([], [], [], [])
    asking: set[str] = set()  # hosts fetching a robots.txt
    for lease in leases:
        policy = policies.get(origin_of(lease.url))
        if lease.host in denied:
            plan.refused.append((lease, "denylist"))
        elif policy is None or policy.mode == "redirect":
            (plan.waiting if lease.host in asking else plan.robots).append(lease)
            asking.add(lease.host)
        elif policy.allowed(lease.url, user_agent):
            plan.pages.append(lease)
        else:
            plan.refused.append((lease, policy.refusal(lease.url, user_agent)))
    if asking:
        plan.waiting += [lease for lease in plan.pages if lease.host in asking]
        plan.pages = [lease for lease in plan.pages if lease.host not in asking]
    return plan


def host_chains(leases: list[Lease]) -> list[list[int]]:
    """The positions of each host's leases, in order: the requests asked one after the
    other. Pure."""
    chains: dict[str, list[int]] = {}
    for i, lease in enumerate(leases):
        chains.setdefault(lease.host, []).append(i)
    return list(chains.values())


class Yields:
    """The hosts of a batch whose lease was asked to end early (ports.Frontier.yielding), as
    its watcher learns them; a chain waiting for its next request hears of its host at once."""

    def __init__(self) -> None:
        self.hosts: set[str] = set()
        self._heard = asyncio.Event()

    def add(self, hosts: set[str]) -> None:
        if hosts - self.hosts:
            self.hosts |= hosts
            self._heard.set()
            self._heard = asyncio.Event()

    async def before(self, when: float, host: str) -> bool:
        """Wait until the UNIX time `when`, or until `host` is asked to yield: whether it was."""
        while host not in self.hosts:
            wait = when - time.time()
            if wait <= 0:
                return False
            try:
                await asyncio.wait_for(self._heard.wait(), wait)
            except TimeoutError:
                return False
        return True


async def fetch_chain(leases: list[Lease], get: Callable[[Lease], Awaitable[Fetched]],
                      after: Callable[[Lease, Fetched], float | None], cutoff: float,
                      yields: Yields | None = None) -> list[Fetched]:
    """Ask one host's leases one after the other: the first at its not_before, each next one
    no sooner than `after` says of the previous answer (None: the host is asked nothing more
    in this batch), none but the first later than `cutoff`, and none once `yields` has its
    host (its lease asked to end early, heard while waiting for the next). Returns the
    answers of the leases asked, the first ones."""
    results: list[Fetched] = []
    start = leases[0].not_before
    for lease in leases:
        if results and (start > cutoff
                        or (yields is not None and await yields.before(start, lease.host))):
            break
        results.append(await start_at(start, get(lease)))
        after_this = after(lease, results[-1])
        if after_this is None:
            break
        start = after_this
    return results


async def _watch_yields(yielding: Callable[[list[Lease]], set[str]],
                        running: dict[str, Lease], yields: Yields) -> None:
    """Every YIELD_POLL seconds, the hosts of `running` (host -> a lease of its chain, while
    it has a request to go) whose lease was asked to end early join `yields`; cancelled as
    the batch's chains end. A Redis that does not answer costs a look, not the batch."""
    loop = asyncio.get_running_loop()
    while True:
        await asyncio.sleep(YIELD_POLL)
        watched = [lease for host, lease in running.items() if host not in yields.hosts]
        if not watched:
            continue
        try:
            yields.add(await loop.run_in_executor(None, yielding, watched))
        except Exception as exc:  # noqa: BLE001 - any failure of the look: the leases run on
            _YIELD_LOOKS.failed(exc)
        else:
            _YIELD_LOOKS.ended()


class Fetches(NamedTuple):
    """What a batch's requests got (`_fetch_all`)."""

    robots: list[Fetched]          # the robots.txt answers, in the order of Plan.robots
    pages: list[Fetched | None]    # the pages' answers, in the order of Plan.pages (None: not asked)
    yielded: set[str]              # the hosts whose chain ended early, its lease asked to
    held: set[str]                 # the hosts whose first request waited for its turn (turns.py)


async def _fetch_all(fetcher: Fetcher, plan: Plan, policies: dict[str, RobotsPolicy | None],
                     validators: dict[str, dict[str, str]],
                     after: Callable[[Lease, Fetched], float | None], cutoff: float,
                     early: EarlyRelease | None = None,
                     yielding: Callable[[list[Lease]], set[str]] | None = None,
                     min_delay: float = 0.0) -> Fetches:
    """The batch's hosts at once, each starting no earlier than its lease allows and asking
    its pages one after the other (`fetch_chain`; its host released as soon as the last
    ends, with `early`), a chain of several ending early when `yielding` says its lease was
    asked to. Each host takes its turn in the process's HostTurns: none is asked sooner
    than `min_delay` after the last answer it gave this process, nor than `after` allowed
    after it."""
    def get(lease: Lease) -> Awaitable[Fetched]:
        return fetcher.get(lease.url, validators.get(lease.url))

    yields = Yields()
    running: dict[str, Lease] = {}
    ended_early: set[str] = set()
    turns = host_turns()
    held: set[str] = set()

    next_starts: dict[str, float] = {}  # host -> when `after` allowed its next request

    def noted(lease: Lease, result: Fetched) -> float | None:
        start = after(lease, result)
        if start is not None:
            next_starts[lease.host] = start
        return start

    async def in_turn(lease: Lease, ask: Callable[[Lease], Awaitable[list[Fetched]]]
                      ) -> list[Fetched]:
        start, too_soon = await turns.begin(lease)
        if too_soon:
            held.add(lease.host)
        results: list[Fetched] = []
        try:
            results = await ask(replace(lease, not_before=start))
        finally:
            ended = results[-1].ended if results else time.time()
            turns.end(lease.host, max(ended + min_delay, next_starts.pop(lease.host, 0.0)))
        return results

    async def chain(leases: list[Lease]) -> list[Fetched]:
        try:
            results = await in_turn(leases[0], lambda first: fetch_chain(
                [first, *leases[1:]], get, noted, cutoff, yields))
        finally:
            running.pop(leases[0].host, None)
        if len(results) < len(leases) and leases[0].host in yields.hosts:
            ended_early.add(leases[0].host)
        if early is not None:
            early.answered(leases, results)
        return results

    async def robots_txt(lease: Lease) -> list[Fetched]:
        origin = origin_of(lease.url)
        return [await start_at(lease.not_before, fetcher.get(
            robots_url(origin, policies.get(origin)), max_bytes=MAX_ROBOTS_BYTES, truncate=True))]

    robots_calls = [in_turn(lease, robots_txt) for lease in plan.robots]
    chains = host_chains(plan.pages)
    watcher = None
    if yielding is not None:
        running.update((plan.pages[c[0]].host, plan.pages[c[0]]) for c in chains if len(c) > 1)
        if running:
            watcher = asyncio.ensure_future(_watch_yields(yielding, running, yields))
    try:
        robots, answers = await asyncio.gather(
            asyncio.gather(*robots_calls),
            asyncio.gather(*(chain([plan.pages[i] for i in c]) for c in chains)))
    finally:
        if watcher is not None:
            watcher.cancel()
        if early is not None:
            await early.drain()
    pages: list[Fetched | None] = [None] * len(plan.pages)
    for positions, results in zip(chains, answers, strict=True):
        for i, result in zip(positions, results, strict=False):
            pages[i] = result
    return Fetches([answer for (answer,) in robots], pages, ended_early, held)


def _retries(ctx: Context, run: str, asked: list[tuple[Lease, Fetched]], refused: list[Lease],
             known: _Known) -> set[str]:
    """The asked URLs that go back to be tried again, as core/retry.py rules: their retry
    counts are bumped (but for those back uncounted) and those past CRAWL_MAX_RETRIES are
    done with, as are the URLs answered and `refused` (their retries, validators and hops
    forgotten); the batch's fetch counters are added in the same round trip. Safe to run
    again (a Redis fault, `Context.steady`): the counts are the batch's `run`'s, bumped once
    (the counters are added twice at worst)."""
    rules = [(lease, fetch_rule(r.status, r.error)) for lease, r in asked]
    ours = {lease.url for lease, rule in rules if rule.url is UrlTry.UNCOUNTED}
    to_retry = [(lease, rule) for lease, rule in rules if rule.url is UrlTry.COUNTED]
    done = [lease for lease, rule in rules if rule.url is UrlTry.FINAL] + refused
    if not asked and not refused:
        return set()
    pipe = ctx.redis.pipeline(transaction=False)
    counts = ctx.retries.count(run, [lease.url for lease, _ in to_retry],
                               [lease.url for lease in done], ctx.settings.max_retries,
                               ctx.settings.redis_ride_out + RUN_KEPT, pipe)
    _forget_url_state(ctx, [lease.url for lease in done], known, pipe)
    ctx.counters.bump(fetch_counts(r for _, r in asked), pipe=pipe)
    retry = {lease.url for (lease, rule), n in zip(to_retry, counts(pipe.execute()), strict=True)
             if rule.url_again(n, ctx.settings.max_retries)}
    _forget_url_state(ctx, [lease.url for lease, _ in to_retry if lease.url not in retry], known)
    return retry | ours


def _forget_url_state(ctx: Context, urls: list[str], known: _Known,
                      pipe: Pipeline | None = None) -> None:
    """The URLs are done with (fetched, refused or given up; their retries went with
    FetchRetries.count): the validators and hops of those that had some when the batch read
    them go (`known`: most URLs have neither, and are asked nothing more), in one round trip
    (the caller's, with `pipe`)."""
    with joined(ctx.redis, pipe) as p:
        ctx.validators.forget([url for url in urls if url in known.validators], p)
        ctx.hops.forget([url for url in urls if known.hops.get(url)], p)


class _Known(NamedTuple):
    """What Redis knows of a batch's leases: the robots.txt policy of each origin (None: not
    cached), the hosts the denylist covers, how many redirects led to each URL, the
    validators a re-crawl sends with it and the hosts' throttles."""

    policies: dict[str, RobotsPolicy | None]
    denied: frozenset[str]
    hops: dict[str, int]
    validators: dict[str, dict[str, str]]
    throttles: dict[str, Throttle]


def _known(ctx: Context, leases: list[Lease]) -> _Known:
    """`_Known` of the leases, in one round trip."""
    if not leases:
        return _Known({}, frozenset(), {}, {}, {})
    urls = [lease.url for lease in leases]
    pipe = ctx.redis.pipeline(transaction=False)
    policies = ctx.robots.read({origin_of(url) for url in urls}, pipe)
    denied = ctx.denylist.read((lease.host for lease in leases), pipe)
    hops, validators = ctx.hops.read(urls, pipe), ctx.validators.read(urls, pipe)
    throttles = ctx.throttles.read({lease.host for lease in leases}, pipe)
    replies = pipe.execute()
    return _Known(policies(replies), denied(replies), hops(replies),
                  {url: conditional_headers(v) for url, v in validators(replies).items()},
                  throttles(replies))


@dataclass
class _Slots:
    """The politeness slots a batch took (CRAWL_POLITENESS_KEY domain or ip): the host that
    asks under each key taken, and the leases turned away because their key was busy."""

    holder: str
    taken: dict[str, str]  # key -> host
    busy: list[Lease]


async def _addresses(fetcher: Fetcher, hosts: set[str]) -> dict[str, str]:
    """The address each host name resolves to (first one), for the `ip` politeness key."""
    names = [host for host in hosts if not is_address(hostname(host))]
    if fetcher.dns is None or not names:
        return {}
    answers = await asyncio.gather(*(fetcher.dns.resolve(hostname(h)) for h in names))
    return {host: answer.addresses[0] for host, answer in zip(names, answers, strict=True)
            if answer.addresses}


def _take_slots(ctx: Context, plan: Plan) -> _Slots:
    """Take the politeness slot of each key the batch asks (one host per key; the others
    are turned away and their URLs go back); a request waits for its key's next time."""
    settings = ctx.settings
    asking = plan.robots + plan.pages + plan.waiting
    addresses: dict[str, str] = {}
    if settings.politeness_key == "ip":
        hosts = {lease.host for lease in asking}
        addresses = run_on_fetch_loop(settings, ctx.dns_cache, lambda f: _addresses(f, hosts))
    key_of = {lease.host: politeness_key(settings.politeness_key, lease.host,
                                         addresses.get(lease.host)) for lease in asking}
    first: dict[str, str] = {}
    for lease in asking:
        first.setdefault(key_of[lease.host], lease.host)
    now = time.time()
    slots = _Slots(uuid.uuid4().hex[:16], {}, [])
    got = ctx.steady(lambda: ctx.slots.take(list(first), slots.holder, now,
                                             now + settings.lease_seconds), "taking slots")
    for key, next_time in got.items():
        if next_time is not None:
            slots.taken[key] = first[key]
    allowed = {host: got[key] or 0.0 for key, host in slots.taken.items()}
    slots.busy = [lease for lease in asking if lease.host not in allowed]

    def waiting(leases: list[Lease]) -> list[Lease]:
        return [replace(lease, not_before=max(lease.not_before, allowed[lease.host]))
                for lease in leases if lease.host in allowed]
    plan.robots, plan.pages = waiting(plan.robots), waiting(plan.pages)
    plan.waiting = [lease for lease in plan.waiting if lease.host in allowed]
    if slots.busy:
        ctx.counters.bump({"politeness:key_busy": len(slots.busy)})
    return slots


def _give_back_slots(ctx: Context, slots: _Slots, releases: list[Release],
                     handovers: list[Handover], ledger: LeaseLedger) -> list[Release]:
    """Give the batch's slots back, each free from its host's next allowed time; the leases
    turned away end with their URL back in the queue, to be asked a delay later."""
    next_of = {r.lease.host: r.next_time for r in releases}
    next_of |= {h.lease.host: h.next_time for h in handovers}
    ctx.slots.give_back({key: next_of.get(host, time.time())
                         for key, host in slots.taken.items()}, slots.holder)
    later = time.time() + ctx.settings.default_delay
    return [Release(lease, max(later, lease.not_before), requeue=True,
                    failures=ledger.failures[lease.host]) for lease in slots.busy]


def fetch_batch(ctx: Context, leases: list[Lease]
                ) -> tuple[list[Page], int, list[Handover]]:
    """Fetch one batch; every held lease is released with the host's next allowed time,
    except those of pages to render, which go on held with their page. A host's URLs are
    asked one after the other, each a delay after the previous answer, while the host
    answers in good standing and its lease, renewed here, has half its time left; the URLs
    not asked go back to its queue.

    Returns the page records, how many URLs went back to the frontier to be retried, and
    the pages to render.
    """
    settings = ctx.settings
    renewed = time.time()
    failures = ctx.steady(lambda: ctx.frontier.renew(leases, renewed, settings.lease_seconds),
                      "renewing leases")
    held = [lease for lease, f in zip(leases, failures, strict=True) if f is not None]
    if len(held) < len(leases):
        log.warning("%d lease(s) expired before the batch ran; their URLs were requeued",
                    len(leases) - len(held))
    known = ctx.steady(lambda: _known(ctx, held), "reading the hosts' state")
    plan = plan_batch(held, known.policies, settings.product_token, known.denied)
    slots = _take_slots(ctx, plan) if shares_slots(settings) else None
    ledger = LeaseLedger(settings, known.policies, known.throttles,
                         {lease.host: f for lease, f in zip(leases, failures, strict=True)
                          if f is not None})
    # As a host's last request ends: with politeness slots, its slot goes back (its leases go
    # with the batch; a page to render keeps its lease, not its slot); else its leases, unless
    # pages may be rendered (a page to render stays leased until rendered).
    early: EarlyRelease | None = None
    if slots is not None:
        early = EarlySlotReturn(ctx, slots.holder, slots.taken, ledger.host_answered)
    elif not settings.render:
        early = EarlyRelease(ctx.frontier, ledger.host_answered)
    cutoff = renewed + settings.lease_seconds / 2 - settings.fetch_timeout
    robots, fetched, yielded, held_up = run_on_fetch_loop(
        settings, ctx.dns_cache, lambda f: _fetch_all(
            f, plan, known.policies, known.validators, chain_rule(settings, ledger.next_start),
            cutoff, early, ctx.frontier.yielding, settings.default_delay))
    if early is not None:
        ledger.sent_early(early.released)
    if yielded or held_up:
        ctx.counters.bump({"lease:yielded": len(yielded), "politeness:held_up": len(held_up)})

    pages = _robots_answers(ctx, ledger, plan.robots, robots)
    now = time.time()
    for lease, reason in plan.refused:
        pages.append(blocked(page_for(lease), reason, now))
        ledger.refused(lease, now)
    for lease in plan.waiting:
        ledger.waiting(lease)
    asked = [(lease, r) for lease, r in zip(plan.pages, fetched, strict=True) if r is not None]
    for lease, r in zip(plan.pages, fetched, strict=True):
        if r is None:
            ledger.not_asked(lease)
    run = uuid.uuid4().hex  # the same through the tries again
    retry = ctx.steady(lambda: _retries(ctx, run, asked, [lease for lease, _ in plan.refused],
                                        known), "counting retries")
    for lease, result in asked:
        ledger.answered(lease, result, lease.url in retry)
    answered, handovers = _answered_pages(ctx, ledger, asked, known.hops)
    pages += answered

    releases = ledger.releases()
    if slots is not None:
        releases += ctx.steady(lambda: _give_back_slots(ctx, slots, releases, handovers,
                                                         ledger), "giving slots back")
    ctx.steady(lambda: ctx.frontier.release(releases), "releasing hosts")
    forgiven = [host for host, t in known.throttles.items() if t.level_at(now) == 0]
    ctx.steady(lambda: ctx.throttles.update(ledger.raised, forgiven), "updating throttles")
    _report_given_up(ctx, [r for r in releases if given_up(r)])
    return pages, len(retry), handovers


def _robots_answers(ctx: Context, ledger: LeaseLedger, leases: list[Lease],
                    answers: list[Fetched]) -> list[Page]:
    """Learn the robots.txt answers the batch got (asked under `leases`): their policies
    cached, their leases ended, their records (and those of hosts given up) made.

    A robots.txt that could not be fetched (5xx, no answer) is asked again with the host's
    backoff while its URL waits; only after CRAWL_MAX_RETRIES more failures does the answer
    "nothing allowed" stand (cached, and the host's URLs recorded as blocked). A host that
    cannot be reached at all (address guard, DNS, invalid name, TLS) is given up after
    CRAWL_GIVE_UP_AFTER tries instead: its waiting URL is recorded failed with the reason,
    and nothing is cached, so that `frontier resume` asks for robots.txt again.
    """
    ua = ctx.settings.product_token
    learned = {origin_of(lease.url): robots_policy(r, ledger.policies.get(origin_of(lease.url)))
               for lease, r in zip(leases, answers, strict=True)}
    ledger.learn(learned)
    pages: list[Page] = []
    standing: set[str] = set()  # origins whose answer is cached
    for lease, result in zip(leases, answers, strict=True):
        origin = origin_of(lease.url)
        ended = ledger.robots(lease, result)
        if (learned[origin].mode != "disallow_all"
                or fetch_rule(result.status, result.error).robots_final(
                    ended.failures, ctx.settings.max_retries)):
            standing.add(origin)
        pages.append(robots_page(result, lease.host, sitemap_links(origin, learned[origin]),
                                 robots_cache.record(origin, learned[origin], ua), lease.hops))
        if given_up(ended):
            page = apply_fetch(page_for(lease), result, ctx.settings.archive_answer_bytes)
            page.error = str(ended.park_reason)
            pages.append(page)
    ctx.steady(lambda: ctx.robots.save({origin: learned[origin] for origin in standing}),
           "caching robots.txt")
    return pages


def _answered_pages(ctx: Context, ledger: LeaseLedger, asked: list[tuple[Lease, Fetched]],
                    hops: Mapping[str, int]) -> tuple[list[Page], list[Handover]]:
    """The records of the pages answered and not to be retried, and those of them to render
    (their leases go on held, with the host's state after the batch); an answer to try again
    is a record for the fetch history only (RETRIED)."""
    pages: list[Page] = []
    handovers: list[Handover] = []
    for lease, result in asked:
        ended = ledger.settled(lease)
        page = apply_fetch(page_for(lease), result, ctx.settings.archive_answer_bytes)
        if ended.requeue:
            if page.http_status is not None and page.status != Status.FETCHED:
                page.status = Status.RETRIED
                pages.append(page)
            continue
        page.redirect_hops = hops[lease.url]
        page.render_reason = wants_render(ctx.settings, page, result.body)
        if page.render_reason:  # rendered under this lease, released by the render stage
            handovers.append(Handover(page, lease, ended.next_time, ended.failures))
            ledger.keep(lease)
        else:
            pages.append(page)
    return pages, handovers


def _report_given_up(ctx: Context, ended: list[Release]) -> None:
    """One warning per host given up, and the counters `unreachable:<error>` (stats)."""
    if not ended:
        return
    errors: Counter[str] = Counter()
    for release in {r.lease.host: r for r in ended}.values():  # a host's URLs alike
        reason = release.park_reason
        error, note = (reason.detail, reason.note) if reason else ("", "")
        log.warning("giving up %s after %d tries: %s (its URLs stay queued; crawlctl frontier "
                    "resume %s tries again)", release.lease.host, release.failures,
                    unreachable_sentence(error, note), release.lease.host)
        errors[error] += 1
    ctx.steady(lambda: ctx.counters.bump(errors, prefix="unreachable:"), "counting")
