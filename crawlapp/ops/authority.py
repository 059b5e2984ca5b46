"""Host authority: PageRank over the host graph (crawlapp/core/authority.py), computed every
CRAWL_AUTHORITY_INTERVAL seconds by beat and stored three ways: the host_authority table
(`crawlctl hosts`), the authority hash the links stage scores new URLs by, and the
frontier's boost (hosts competing for fetch slots), so a host that becomes important is
preferred without rewriting its queued URLs; and the fleet's mean importance, which its
re-crawl budget is solved at (core/freshness.py: mean_importance)."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import numpy as np

from crawlapp.adapters.context import Context
from crawlapp.adapters.db import repository
from crawlapp.adapters.redis.change_rates import ALL_HOSTS
from crawlapp.core.authority import Ids, authority
from crawlapp.core.freshness import mean_importance

LOAD_CHUNK = 100_000  # edges read per query
log = logging.getLogger(__name__)


def load_graph(ctx: Context) -> tuple[list[str], Ids, Ids]:
    """The host names (by id) and the edges as two id arrays, read in chunks."""
    ids: dict[str, int] = {}
    sources: list[Ids] = []
    targets: list[Ids] = []
    with ctx.sessions() as session:
        for chunk in repository.host_link_chunks(session, LOAD_CHUNK):
            sources.append(np.fromiter((ids.setdefault(s, len(ids)) for s, _ in chunk),
                                       np.int64, len(chunk)))
            targets.append(np.fromiter((ids.setdefault(t, len(ids)) for _, t in chunk),
                                       np.int64, len(chunk)))
    empty = np.zeros(0, np.int64)
    return (list(ids), np.concatenate(sources) if sources else empty,
            np.concatenate(targets) if targets else empty)


def compute(ctx: Context) -> int:
    """Score every host of the host graph and store the scores; returns how many hosts."""
    hosts, sources, targets = load_graph(ctx)
    if not hosts:
        return 0
    scores = dict(zip(hosts, np.round(authority(sources, targets, len(hosts)), 4).tolist(),
                      strict=True))
    with ctx.sessions.begin() as session:
        repository.save_authority(session, list(scores.items()), datetime.now(UTC))
    ctx.authority.store(scores)
    ctx.frontier.boost(scores)
    pipe = ctx.redis.pipeline(transaction=False)
    ctx.change_rates.add({}, {ALL_HOSTS: {"wi": fleet_importance(ctx, scores)}}, pipe)
    pipe.execute()
    ctx.counters.bump({"authority:runs": 1, "authority:hosts_scored": len(hosts)})
    log.info("host authority: %d hosts, %d edges", len(hosts), len(sources))
    return len(hosts)


def fleet_importance(ctx: Context, scores: dict[str, float] | None = None) -> float:
    """The mean importance of the fleet's pages (core/freshness.py: mean_importance), each
    host's URL rows at its authority (`scores`, else the stored ones): the weight its
    re-crawl budget is solved at (`wi` in the fleet's sums)."""
    with ctx.sessions() as session:
        pages = {host: sum(counts.values())
                 for host, counts in repository.host_status_counts(session).items()}
    return mean_importance(ctx.authority.load(pages) if scores is None else scores, pages)
