"""Priority of a URL in [0, 1], and its place in its host's queue.

score  = seed priority * 0.8 ** depth * context, where each hop from a seed keeps 80 % of
         the score, and the context of the link that found the URL weighs it: 0.7 for a
         link in navigation, header, footer or aside, 0.9 for a link with no anchor text
         (both: 0.63), 1 for a link with words in the page's content.
queue  = (1 - score) + hours waited: the lowest value is fetched first, so within a host
         the best URL goes first, and a URL that has waited an hour beats any newer one
         (ageing: a low score never waits forever).
"""

from __future__ import annotations

DEPTH_DECAY = 0.8
AGEING_SECONDS = 3600.0
_EPOCH = 1_700_000_000.0  # keeps queue values small enough for exact float arithmetic


BOILERPLATE_WEIGHT = 0.7
NO_ANCHOR_WEIGHT = 0.9


def depth_priority(depth: int, seed_priority: float = 1.0) -> float:
    """A URL's score from its distance to the seed."""
    return round(max(0.0, min(1.0, seed_priority)) * DEPTH_DECAY ** max(depth, 0), 4)


def link_priority(depth: int, boilerplate: bool, anchor: str) -> float:
    """The score of a URL found by a link: its depth, weighed by the link's context."""
    weight = (BOILERPLATE_WEIGHT if boilerplate else 1.0) * (1.0 if anchor else NO_ANCHOR_WEIGHT)
    return round(depth_priority(depth) * weight, 4)


def queue_score(priority: float, queued_at: float) -> float:
    """The frontier's sort key: lower pops first."""
    return round((1.0 - priority) + (queued_at - _EPOCH) / AGEING_SECONDS, 6)
