"""Trap budgets: URLs admitted per host (CRAWL_MAX_PAGES_PER_HOST) and per host and URL
pattern (CRAWL_TRAP_PATTERN_CAP, keyed as crawlapp.core.traps.PatternBudget says).

  P:hostcount:<part>   HASH host -> URLs admitted
  P:patterns:<part>    HASH "host pattern" -> URLs admitted
a host's counts in the host's part (parts.py).
The links stage adds each batch's new URLs; a rebuild counts the host budgets again from the
URL rows (the pattern budgets start again from zero).
"""

from __future__ import annotations

from collections.abc import Mapping

from redis.typing import EncodableT, FieldT

from crawlapp.adapters.redis import keys
from crawlapp.adapters.redis.client import Client
from crawlapp.adapters.redis.parts import Parts


class TrapBudgets:
    """The two budget hashes of every part."""

    def __init__(self, client: Client, prefix: str, parts: Parts) -> None:
        self.client = client
        self.parts = parts
        self.hosts = [keys.HOSTCOUNT.of(prefix, part=tag) for tag in parts.tags]
        self.patterns = [keys.PATTERNS.of(prefix, part=tag) for tag in parts.tags]

    def add(self, per_host: Mapping[str, int], per_pattern: Mapping[str, int]
            ) -> tuple[list[int], list[int]]:
        """Add the URLs counted per host and per pattern ("host pattern"); the totals after
        adding, in the order given (one round trip)."""
        pipe = self.client.pipeline(transaction=False)
        for host, n in per_host.items():
            pipe.hincrby(self.hosts[self.parts.of(host)], host, n)
        for pattern, n in per_pattern.items():
            pipe.hincrby(self.patterns[self.parts.of(pattern.split(" ", 1)[0])], pattern, n)
        totals = [int(n) for n in pipe.execute()]
        return totals[:len(per_host)], totals[len(per_host):]

    def restore_hosts(self, counts: Mapping[str, int]) -> None:
        """Set the host budgets to these counts (a rebuild's, from the URL rows)."""
        pipe = self.client.pipeline(transaction=False)
        for part, hosts in self.parts.group(counts).items():
            fields: dict[FieldT, EncodableT] = {host: counts[host] for host in hosts}
            pipe.hset(self.hosts[part], mapping=fields)
        pipe.execute()
