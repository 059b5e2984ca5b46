"""The line `crawlctl crawl` prints every `--progress` seconds, as Scrapy's LogStats does every
minute: what the crawl asked since the last line, new pages and pages again (changed or not),
failures, and what waits. Read from Redis alone (the counters, the frontier, the fleet's sums
of the re-crawl policy): no database query, whatever the crawl's size."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from crawlapp.adapters.context import Context
from crawlapp.observe.stats import estimated_freshness
from crawlapp.observe.watch import requests_done


@dataclass(frozen=True)
class Sample:
    """The crawl's counters at one time, with what waits then."""

    at: float
    counts: Mapping[str, int]
    queued: int = 0  # URLs in the frontier
    in_flight: int = 0  # batches between dispatch and the links stage
    freshness: float | None = None  # the collection's, as the policy estimates it


def line(before: Sample, now: Sample, label: str = "") -> str:
    """The progress line from `before` to `now`, after the time and `label`. Pure."""
    def grew(name: str) -> int:
        return now.counts.get(name, 0) - before.counts.get(name, 0)

    seconds = max(now.at - before.at, 1e-9)
    asked = requests_done(now.counts) - requests_done(before.counts)
    parts = [f"{asked} pages in {seconds:.0f} s ({asked / seconds:.2f}/s): "
             f"{grew('recrawl:discovery')} new, {grew('recrawl:refresh')} again "
             f"({grew('recrawl:changed')} changed, {grew('recrawl:unchanged')} unchanged), "
             f"{grew('pages:failed')} failed",
             f"{now.counts.get('pages:fetched', 0)} fetched in all",
             f"{now.queued} URLs queued, {now.in_flight} batches in flight"]
    if now.freshness is not None:
        parts.append(f"freshness {now.freshness:.1%} estimated")
    return f"{time.strftime('%H:%M:%S', time.localtime(now.at))}  {label}" + "; ".join(parts)


def sample(ctx: Context) -> Sample:
    """The crawl's counters and queues now (a few Redis round trips)."""
    at = time.time()
    return Sample(at, ctx.counters.read(),
                  sum(s.urls_queued for s in ctx.frontier.stats(at)), ctx.batches.in_flight(),
                  estimated_freshness(ctx)[0])


class Progress:
    """Called at each look of the crawl's main loop: the first call reads where the crawl
    starts from, and a line is printed (`echo`) every `every` seconds after (none for 0);
    `summary` says what the whole run did. A read that fails (Redis away) prints why
    instead: the crawl goes on."""

    def __init__(self, ctx: Context, every: float, echo: Callable[[str], None],
                 clock: Callable[[], float] = time.time) -> None:
        self.ctx, self.every, self.echo, self.clock = ctx, every, echo, clock
        self.first: Sample | None = None
        self.last: Sample | None = None
        self.tried = -math.inf

    def __call__(self) -> None:
        if self.first is not None and (
                self.every <= 0 or self.clock() - self.tried < self.every):
            return
        self.tried = self.clock()
        now = self._read()
        if now is None:
            return
        if self.last is not None:
            self.echo(line(self.last, now))
        self.first, self.last = self.first or now, now

    def summary(self) -> None:
        """The line from the first read to now: what this run did (Ctrl-C's last word)."""
        if self.first is not None and (now := self._read()) is not None:
            self.echo(line(self.first, now, "this run: "))

    def _read(self) -> Sample | None:
        try:
            return sample(self.ctx)
        except Exception as exc:  # a line missed, never the crawl
            self.echo(f"{time.strftime('%H:%M:%S')}  progress not read: "
                      f"{type(exc).__name__}: {exc}")
            return None
