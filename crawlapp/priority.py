"""Priority of a URL in [0, 1]: higher is fetched first within its host."""

from __future__ import annotations

DEPTH_DECAY = 0.8


def depth_priority(depth: int, seed_priority: float = 1.0) -> float:
    """A URL's score from its distance to the seed: each hop keeps 80 % of the score."""
    return round(max(0.0, min(1.0, seed_priority)) * DEPTH_DECAY ** max(depth, 0), 4)


def queue_score(priority: float) -> float:
    """The frontier's sort key: lower pops first, so the best URL has the lowest score."""
    return round(1.0 - priority, 4)
