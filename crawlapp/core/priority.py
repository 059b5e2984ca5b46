"""Priority of a URL in [0, 1], and its place in its host's queue.

priority = (w_a * authority + w_f * freshness + w_l * link_context) / (w_a + w_f + w_l)

  authority     the URL's host's authority in [0, 1] (core/authority.py: PageRank over the
                host graph, log-scaled); 0 for a host not scored yet.
  freshness     0.5 for a URL never fetched; for a re-crawl, a quarter of the time since its
                last fetch over its re-crawl interval (the one that put it in its tier,
                core/recrawl.py), capped at 0.25: the staler, the sooner, and new URLs first
                (discovery is never starved by re-crawls; ageing lets these in: a re-crawl
                queued 4.5 minutes before a new URL found as close to a seed goes first).
                A re-crawl planned by the `optimal` policy goes by when it is due instead
                (`refresh_priority`): a host's re-crawls earliest due first.
  link_context  seed priority * 0.8 ** depth * context, where each hop from a seed keeps
                80 % of the score, and the context of the link that found the URL weighs
                it: 0.7 for a link in navigation, header, footer or aside, 0.9 for a link
                with no anchor text (both: 0.63), 1 for a link with words in the page's
                content.
  w_a, w_f, w_l CRAWL_PRIORITY_WEIGHTS, "0.4,0.3,0.3" by default (the design's domain
                authority 0.4, freshness decay 0.3, link context 0.3); dividing by their
                sum keeps the priority in [0, 1] whatever weights are set.
queue  = (1 - priority) + hours waited: the lowest value is fetched first, so within a host
         the best URL goes first, and a URL that has waited an hour beats any newer one
         (ageing: a low score never waits forever).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

DEPTH_DECAY = 0.8
AGEING_SECONDS = 3600.0
_EPOCH = 1_700_000_000.0  # keeps queue values small enough for exact float arithmetic


BOILERPLATE_WEIGHT = 0.7
NO_ANCHOR_WEIGHT = 0.9
NEW_FRESHNESS = 0.5
REFRESH_FRESHNESS = 0.25  # at most, for a page due again: below a new URL's


@dataclass(frozen=True)
class Weights:
    """The weights of authority, freshness and link context (non-negative, sum > 0)."""

    authority: float = 0.4
    freshness: float = 0.3
    link_context: float = 0.3

    def __post_init__(self) -> None:
        values = (self.authority, self.freshness, self.link_context)
        if any(not 0 <= w < math.inf for w in values) or sum(values) <= 0:
            raise ValueError("weights must be finite, non-negative, with a sum above 0")

    @classmethod
    def parse(cls, raw: str) -> Weights:
        """"authority,freshness,link_context", e.g. "0.4,0.3,0.3"."""
        parts = raw.split(",")
        if len(parts) != 3:
            raise ValueError("expected three weights: authority,freshness,link_context")
        try:
            values = [float(p) for p in parts]
        except ValueError:
            raise ValueError("expected three numbers such as 0.4,0.3,0.3") from None
        return cls(*values)

    def priority(self, authority: float, freshness: float, link_context: float) -> float:
        """The combined priority (module docstring), in [0, 1]."""
        total = self.authority + self.freshness + self.link_context
        return round((self.authority * authority + self.freshness * freshness
                      + self.link_context * link_context) / total, 4)


def freshness(since_fetch: float, interval: float | None) -> float:
    """How due a re-crawl is: seconds since the last fetch over the page's re-crawl
    interval, capped at 1, times REFRESH_FRESHNESS (NEW_FRESHNESS without an interval): a
    page due again never goes before a new URL of its host found as close to a seed, and
    one that waits long enough goes before any (ageing)."""
    if interval is None or interval <= 0:
        return NEW_FRESHNESS
    return round(REFRESH_FRESHNESS * min(1.0, max(0.0, since_fetch / interval)), 4)


def refresh_priority(weights: Weights, authority: float, due_in: float) -> float:
    """The priority of a re-crawl due in `due_in` seconds (< 0: overdue): that of a page due
    now one link from a seed, less one per AGEING_SECONDS until it is due, so that its queue
    score is its due time's (the same offset for every re-crawl of a host): earliest due
    first, after new URLs until overdue by 4.5 minutes (clamped to [0, 1])."""
    due_now = weights.priority(authority, REFRESH_FRESHNESS, DEPTH_DECAY)
    return round(min(1.0, max(0.0, due_now - due_in / AGEING_SECONDS)), 6)


def depth_priority(depth: int, seed_priority: float = 1.0) -> float:
    """A URL's score from its distance to the seed."""
    return round(max(0.0, min(1.0, seed_priority)) * DEPTH_DECAY ** max(depth, 0), 4)


def link_priority(depth: int, boilerplate: bool, anchor: str) -> float:
    """The link context of a URL found by a link: its depth, weighed by the link's context."""
    weight = (BOILERPLATE_WEIGHT if boilerplate else 1.0) * (1.0 if anchor else NO_ANCHOR_WEIGHT)
    return round(depth_priority(depth) * weight, 4)


# A host's lease of several URLs ends early for a URL queued meanwhile whose queue value is
# lower by more than this than one it still holds (adapters/redis/frontier: ENQUEUE): three
# minutes of ageing. A new URL one link from a seed goes 0.075 before a re-crawl due now at the
# default weights, and a host whose plan fits its capacity leases re-crawls due 20-100 s ahead
# (make bench-freshness), so a new article ends a lease of them; a hub queued for its links
# goes 0.135 before. A content link goes before a navigation link one hop deeper by 0.03 at
# most, and before one of the same depth by more than this only one or two links from a seed:
# a crawl's first pass keeps its leases nearly whole.
YIELD_MARGIN = 0.05


def queue_score(priority: float, queued_at: float) -> float:
    """The frontier's sort key: lower pops first."""
    return round((1.0 - priority) + (queued_at - _EPOCH) / AGEING_SECONDS, 6)
