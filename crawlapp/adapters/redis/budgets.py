"""Trap budgets: URLs admitted per host (CRAWL_MAX_PAGES_PER_HOST) and per host and URL
pattern (CRAWL_TRAP_PATTERN_CAP, keyed as crawlapp.core.traps.PatternBudget says).

  P:hostcount   HASH host -> URLs admitted
  P:patterns    HASH "host pattern" -> URLs admitted
The links stage adds each batch's new URLs; a rebuild counts the host budgets again from the
URL rows (the pattern budgets start again from zero).
"""

from __future__ import annotations

from collections.abc import Mapping

from redis.typing import EncodableT, FieldT

from crawlapp.adapters.redis import keys
from crawlapp.adapters.redis.client import Client


class TrapBudgets:
    """The two budget hashes."""

    def __init__(self, client: Client, prefix: str) -> None:
        self.client = client
        self.hosts = keys.HOSTCOUNT.of(prefix)
        self.patterns = keys.PATTERNS.of(prefix)

    def add(self, per_host: Mapping[str, int], per_pattern: Mapping[str, int]
            ) -> tuple[list[int], list[int]]:
        """Add the URLs counted per host and per pattern; the totals after adding, in the
        order given (one round trip)."""
        pipe = self.client.pipeline(transaction=False)
        for host, n in per_host.items():
            pipe.hincrby(self.hosts, host, n)
        for pattern, n in per_pattern.items():
            pipe.hincrby(self.patterns, pattern, n)
        totals = [int(n) for n in pipe.execute()]
        return totals[:len(per_host)], totals[len(per_host):]

    def restore_hosts(self, counts: Mapping[str, int]) -> None:
        """Set the host budgets to these counts (a rebuild's, from the URL rows)."""
        if counts:
            fields: dict[FieldT, EncodableT] = dict(counts)
            self.client.hset(self.hosts, mapping=fields)
