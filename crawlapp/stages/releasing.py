"""How a fetch batch gives its hosts, or their politeness slots, back as each host's last
request ends rather than at the batch's end (stages/fetching.py)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping

from crawlapp.adapters.context import Context
from crawlapp.core import hostpatterns
from crawlapp.core.ports import Frontier
from crawlapp.core.records import Fetched, Lease, Release
from crawlapp.core.settings import Settings

log = logging.getLogger(__name__)


class EarlyRelease:
    """Hosts released as their last request ends rather than at the end of their batch, so
    that a host's next request never waits for the slowest one of the batch. Releases made
    within FLUSH_SECONDS of each other go to Redis together, from the fetch loop's executor
    (the loop itself never waits on Redis): a host is due again a delay after its request,
    so holding its release that long costs it nothing while the delay is longer than that
    and the dispatcher's interval together. `released` holds the releases sent, by URL."""

    FLUSH_SECONDS = 0.2

    def __init__(self, frontier: Frontier,
                 ended: Callable[[list[Lease], list[Fetched]], list[Release] | None]) -> None:
        self.frontier, self.ended = frontier, ended
        self.pending: list[Release] = []
        self.flushes: list[asyncio.Future[None]] = []
        self.released: dict[str, Release] = {}

    def answered(self, leases: list[Lease], results: list[Fetched]) -> None:
        """A host's last request of the batch ended (`results` of its first `leases`):
        release its leases if `ended` says how."""
        releases = self.ended(leases, results)
        if releases is None:
            return
        if not self.pending:
            asyncio.get_running_loop().call_later(self.FLUSH_SECONDS, self._flush)
        self.pending += releases

    def _flush(self) -> None:
        batch, self.pending = self.pending, []
        if batch:
            self.flushes.append(asyncio.get_running_loop().run_in_executor(
                None, self._release, batch))

    def _release(self, batch: list[Release]) -> None:
        self.frontier.release(batch)
        self.released.update((r.lease.url, r) for r in batch)

    async def drain(self) -> None:
        """Send what is pending and wait for every release; one that failed is left to the
        end of the batch."""
        self._flush()
        for outcome in await asyncio.gather(*self.flushes, return_exceptions=True):
            if isinstance(outcome, Exception):
                log.warning("releasing hosts early failed (%s); they are released with the "
                            "batch", outcome)


class EarlySlotReturn(EarlyRelease):
    """With politeness slots, each key given back as its host's last request ends (free from
    the host's next time), rather than at the end of the batch, so that a host that renders
    load from is not held through the batch's slowest chain; the leases go with the batch
    (`released` stays empty)."""

    def __init__(self, ctx: Context, holder: str, taken: Mapping[str, str],
                 ended: Callable[[list[Lease], list[Fetched]], list[Release] | None]) -> None:
        """`taken`: the batch's slots, key -> the host asking under it; `holder` the batch."""
        super().__init__(ctx.frontier, ended)
        self.ctx, self.holder = ctx, holder
        self.key_of = {host: key for key, host in taken.items()}

    def _release(self, batch: list[Release]) -> None:
        self.ctx.slots.give_back({self.key_of[r.lease.host]: r.next_time for r in batch
                                  if r.lease.host in self.key_of}, self.holder)


def chain_rule(settings: Settings, next_start: Callable[[Lease, Fetched], float | None]
               ) -> Callable[[Lease, Fetched], float | None]:
    """`next_start`, but a host that renders may load from (CRAWL_RENDER_OTHER_HOSTS) is
    asked one URL a batch: its slot then goes back between its requests, and the renders
    waiting for it get their turn (no chain holds it for seconds)."""
    others = settings.render_other_hosts if settings.render else ()
    if not others:
        return next_start

    def after(lease: Lease, result: Fetched) -> float | None:
        start = next_start(lease, result)
        return None if hostpatterns.denied_by(lease.host, others) else start
    return after
