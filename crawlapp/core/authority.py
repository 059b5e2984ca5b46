"""Host authority from the host graph: PageRank, log-scaled into [0, 1]. Pure: arrays in,
scores out.

The graph has one edge per (source host, target host) pair of different hosts that link
(set semantics: a host linking a thousand times counts once), so a site cannot raise a
target by repeating links. Large crawlers rank hosts by harmonic centrality (Common Crawl
orders its crawl by it), but that needs a breadth-first search from every host, O(N·E):
out of reach for millions of hosts. PageRank is O(E) per iteration and converges in a few
dozen iterations; it is computed here with numpy (a gather and a `bincount` per
iteration), with no Python loop over edges.

Raw PageRank values are tiny and span orders of magnitude; the stored score is
log(rank / lowest) / log(highest / lowest): the top host is 1, a host nothing links to is 0.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

DAMPING = 0.85
TOLERANCE = 1e-9  # L1 change of the rank vector at which the iteration stops
MAX_ITERATIONS = 100

Ids = npt.NDArray[np.int64]
Scores = npt.NDArray[np.float64]


def pagerank(sources: Ids, targets: Ids, hosts: int, damping: float = DAMPING,
             tolerance: float = TOLERANCE, max_iterations: int = MAX_ITERATIONS) -> Scores:
    """PageRank of `hosts` nodes (ids 0..hosts-1) over the edges sources[i] -> targets[i]
    (no duplicates expected: each edge weighs 1 / its source's out-degree). A node with no
    edge out (dangling) spreads its rank over every node. The ranks sum to 1."""
    if hosts == 0:
        return np.zeros(0)
    out_degree = np.bincount(sources, minlength=hosts).astype(np.float64)
    weight = 1.0 / out_degree[sources]  # every source has out-degree >= 1
    dangling = out_degree == 0
    rank = np.full(hosts, 1.0 / hosts)
    for _ in range(max_iterations):
        spread = np.bincount(targets, weights=rank[sources] * weight, minlength=hosts)
        new = damping * (spread + rank[dangling].sum() / hosts) + (1.0 - damping) / hosts
        change = float(np.abs(new - rank).sum())
        rank = new
        if change < tolerance:
            break
    return rank


def scaled(rank: Scores) -> Scores:
    """Ranks log-scaled into [0, 1]: the highest 1, the lowest 0 (all 0 when they are equal,
    as in a graph where no host stands out)."""
    if rank.size == 0:
        return rank
    logs = np.log(rank)
    low, high = float(logs.min()), float(logs.max())
    if high - low < 1e-12:
        return np.zeros_like(rank)
    return np.clip((logs - low) / (high - low), 0.0, 1.0)


def authority(sources: Ids, targets: Ids, hosts: int) -> Scores:
    """Each host's authority in [0, 1] (see the module's docstring)."""
    return scaled(pagerank(sources, targets, hosts))
