"""How each lease of a fetch batch ends, and the releases that end them. Pure: times and
answers are passed in.

A fetch batch holds leases of several hosts, some with several URLs. Each lease ends one
way (`End`): its origin's robots.txt was asked under it, its URL was refused, it waited
for its host's robots.txt, it was not asked, or its URL was asked and answered (done, or
to be retried). Whatever way, every release of a host carries the host's state after its
last request in the batch: its next allowed time, its failures in a row and why it is
parked, so the frontier gets one story per host whichever release ends the lease.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import TYPE_CHECKING

from crawlapp.core.politeness import Answer, Throttle, host_next, requeues_url
from crawlapp.core.records import Fetched, Lease, ParkKind, Release
from crawlapp.core.robots import RobotsPolicy, effective_delay
from crawlapp.core.urls import origin_of

if TYPE_CHECKING:
    from crawlapp.core.settings import Settings


class End(StrEnum):
    """How a lease of a batch ends."""

    ROBOTS = "robots"        # its origin's robots.txt was asked; its URL waits (given up: not)
    REFUSED = "refused"      # robots.txt or the denylist refuses its URL
    WAITING = "waiting"      # its host asked robots.txt in this batch; its URL goes back
    NOT_ASKED = "not_asked"  # its host was asked nothing more (out of standing or of time)
    ANSWERED = "answered"    # its URL was asked: done, or back behind its host's others


@dataclass(slots=True)
class _Entry:
    end: End
    release: Release


class LeaseLedger:
    """Records how each lease of one batch ends and settles their releases.

    `failures` are the hosts' failures in a row as the batch found them (a host answering in
    good standing is reset as the batch goes), `policies` the robots.txt policy of each
    origin (None: unknown), `throttles` the hosts' throttles. Hosts whose throttle a request
    raised are in `raised`.
    """

    def __init__(self, settings: Settings, policies: dict[str, RobotsPolicy | None],
                 throttles: Mapping[str, Throttle], failures: Mapping[str, int],
                 jitter: Callable[[], float] = random.random) -> None:
        self.settings = settings
        self.policies = policies
        self.throttles = throttles
        self.failures = dict(failures)
        self.jitter = jitter
        self.raised: dict[str, Throttle] = {}
        self._entries: dict[str, _Entry] = {}   # by URL, in the order they ended
        self._last: dict[str, Release] = {}     # by host: its state after its last request
        self._early: dict[str, Release] = {}    # by URL: released as their host's chain ended
        self._kept: set[str] = set()            # URLs whose lease goes on held (to render)

    # --- while the batch fetches --------------------------------------------------------

    def next_start(self, lease: Lease, result: Fetched) -> float | None:
        """When the host may be asked its next URL of the batch: its next time after an
        answer that leaves it in good standing; None after one to retry or a failure."""
        if result.status is None or requeues_url(result.status, result.error):
            return None
        ended = self._outcome(lease, result, requeue=False)
        if ended.failures or ended.park_reason:
            return None
        self.failures[lease.host] = 0
        return ended.next_time

    def host_answered(self, leases: list[Lease], results: list[Fetched]) -> list[Release] | None:
        """The releases of a host whose chain ended with an answer that will not be retried
        (`results` of its first `leases`; those not asked go back to the queue); None for
        the others, whose retry counts are read with the batch."""
        last = results[-1]
        if last.status is None or requeues_url(last.status, last.error):
            return None
        ended = self._outcome(leases[len(results) - 1], last, requeue=False)
        return [replace(ended, lease=lease, requeue=n >= len(results))
                for n, lease in enumerate(leases)]

    # --- once it has fetched ------------------------------------------------------------

    def sent_early(self, released: Mapping[str, Release]) -> None:
        """The releases (by URL) the frontier already took as their hosts' chains ended."""
        self._early.update(released)

    def learn(self, policies: Mapping[str, RobotsPolicy]) -> None:
        """robots.txt policies the batch fetched: the delays of their hosts."""
        self.policies.update(policies)

    def robots(self, lease: Lease, result: Fetched) -> Release:
        """The lease asked its origin's robots.txt: its URL waits for the host's next time,
        unless the host is given up. Returns how it ends."""
        ended = self._outcome(lease, result, requeue=True, robots=True)
        if given_up(ended):
            ended = replace(ended, requeue=False)
        self._record(End.ROBOTS, ended, host_state=True)
        return ended

    def refused(self, lease: Lease, now: float) -> None:
        """The lease's URL is refused (robots.txt, denylist): nothing was asked under it."""
        self._record(End.REFUSED, Release(lease, max(now, lease.not_before),
                                          failures=self.failures[lease.host]))

    def waiting(self, lease: Lease) -> None:
        """The lease's host asked robots.txt in this batch: its URL goes back as it was."""
        self._record(End.WAITING, Release(lease, lease.not_before, requeue=True))

    def not_asked(self, lease: Lease) -> None:
        """The host was asked nothing more before this lease's URL: it goes back as it was."""
        if lease.url not in self._early:  # else released, requeued, with its host's chain
            self._record(End.NOT_ASKED, Release(lease, lease.not_before, requeue=True))

    def answered(self, lease: Lease, result: Fetched, retry: bool) -> None:
        """The lease's URL was asked; `retry`: it goes back behind its host's other URLs."""
        ended = self._early.get(lease.url) or self._outcome(lease, result, requeue=retry)
        self._record(End.ANSWERED, ended, host_state=True)

    def keep(self, lease: Lease) -> None:
        """The lease goes on held (its page is rendered under it): not released here."""
        self._kept.add(lease.url)

    def settled(self, lease: Lease) -> Release:
        """How the lease ends, with its host's state after its last request."""
        entry = self._entries[lease.url]
        if entry.end is End.WAITING:
            return replace(self._last[lease.host], lease=lease, requeue=True, behind=False)
        state = self._last.get(lease.host)
        return entry.release if state is None else replace(
            entry.release, next_time=state.next_time, failures=state.failures,
            park_reason=state.park_reason)

    def releases(self) -> list[Release]:
        """Every release still to send, settled: all but those sent early and those kept,
        the robots.txt askers first, then the refused, waiting, not asked and answered."""
        rank = {end: n for n, end in enumerate(End)}
        entries = sorted(self._entries.items(), key=lambda item: rank[item[1].end])
        return [self.settled(entry.release.lease) for url, entry in entries
                if url not in self._kept
                and not (entry.end is End.ANSWERED and url in self._early)]

    # --- inside -------------------------------------------------------------------------

    def _record(self, end: End, release: Release, host_state: bool = False) -> None:
        self._entries[release.lease.url] = _Entry(end, release)
        if host_state:
            self._last[release.lease.host] = release

    def _outcome(self, lease: Lease, result: Fetched, requeue: bool,
                 robots: bool = False) -> Release:
        """How a request ends its lease; a retried URL (not robots.txt's) goes behind its
        host's others."""
        settings = self.settings
        policy = self.policies.get(origin_of(lease.url))
        delay = effective_delay(policy.crawl_delay(settings.product_token) if policy else None,
                                settings.default_delay, settings.max_crawl_delay)
        throttle = self.throttles.get(lease.host)
        # The margin covers a server that logs a response as ended a little after the
        # crawler has read all of it (a busy server resumes its writer late).
        nxt = host_next(result.ended + settings.delay_margin, delay,
                        Answer(result.status, result.error, result.headers.get("retry-after"),
                               result.error_note),
                        self.failures[lease.host], settings.backoff,
                        throttled=throttle.level_at(result.ended) if throttle else 0,
                        jitter=self.jitter(), robots=robots)
        if nxt.throttle is not None:
            self.raised[lease.host] = nxt.throttle
        return Release(lease, nxt.next_time, requeue, nxt.failures, nxt.park_reason,
                       behind=requeue and not robots)


def given_up(ended: Release) -> bool:
    """The release gives its host up (unreachable: parked until resumed)."""
    return ended.park_reason is not None and ended.park_reason.kind is ParkKind.UNREACHABLE
