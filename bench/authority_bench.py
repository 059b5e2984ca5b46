"""Host authority at scale: `python -m bench.authority_bench [HOSTS] [EDGES]` (`make
bench-authority`: 1,000,000 hosts, 10,000,000 edges).

Builds a random host graph whose sources are uniform and whose targets follow a power law
(Zipf, exponent 1.1: a few hosts draw most links, as on the web), without self-links or
repeated pairs, as the host_links table holds it; then times crawlapp.core.authority on it
(PageRank to convergence, log-scaling) and prints the seconds.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from crawlapp.core.authority import authority, pagerank

ZIPF_EXPONENT = 1.1


def host_graph(hosts: int, edges: int, seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    """`edges` distinct (source, target) pairs of different hosts, targets power-law."""
    rng = np.random.default_rng(seed)
    drawn = edges + edges // 5  # repeats and self-links are dropped: draw more
    sources = rng.integers(0, hosts, drawn, dtype=np.int64)
    popularity = rng.permutation(hosts)  # which host is the most linked: any of them
    targets = popularity[(rng.zipf(ZIPF_EXPONENT, drawn) - 1) % hosts]
    pairs = np.unique(sources * hosts + targets)
    pairs = pairs[pairs // hosts != pairs % hosts]
    pairs = np.sort(rng.choice(pairs, min(edges, len(pairs)), replace=False))
    return pairs // hosts, pairs % hosts


def main(argv: list[str]) -> None:
    hosts = int(argv[0]) if argv else 1_000_000
    edges = int(argv[1]) if len(argv) > 1 else 10_000_000
    started = time.perf_counter()
    sources, targets = host_graph(hosts, edges)
    print(f"graph: {hosts:,} hosts, {len(sources):,} distinct edges "
          f"({time.perf_counter() - started:.1f} s to generate)")
    started = time.perf_counter()
    scores = authority(sources, targets, hosts)
    seconds = time.perf_counter() - started
    ranks = pagerank(sources, targets, hosts)
    top = np.argsort(scores)[-3:][::-1]
    print(f"authority of {hosts:,} hosts over {len(sources):,} edges: {seconds:.2f} s "
          f"(PageRank to convergence and log-scaling; top scores "
          f"{', '.join(f'{scores[i]:.3f}' for i in top)}; ranks sum {ranks.sum():.6f})")


if __name__ == "__main__":
    main(sys.argv[1:])
