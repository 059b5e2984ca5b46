"""Trap budgets: URLs admitted per host (CRAWL_MAX_PAGES_PER_HOST) and per host and URL
pattern (CRAWL_TRAP_PATTERN_CAP, keyed as crawlapp.core.traps.PatternBudget says).

  P:hostcount:<part>   HASH host -> URLs admitted, a host's count in the host's part
                       (parts.py)
  P:patterns:<bucket>  HASH the 64-bit MurmurHash3 of "host pattern" (8 bytes) -> URLs
                       admitted, in one of `buckets` small hashes (by that hash)
A crawl meets several patterns per host, so their budgets are kept as Redis keeps small
hashes (listpacks, a few bytes an entry): a 64-bit hash in place of the text, which two
patterns share once in 10^9 at a billion patterns (they then share a budget).
The links stage adds each batch's new URLs; a rebuild counts the host budgets again from the
URL rows (the pattern budgets start again from zero).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import mmh3
from redis.typing import EncodableT, FieldT

from crawlapp.adapters.redis import keys
from crawlapp.adapters.redis.client import Client, Pipeline
from crawlapp.adapters.redis.parts import Parts
from crawlapp.adapters.redis.pipeline import Reply

# Expected URLs per bucket of pattern budgets (parts.buckets): a crawl meets about a pattern
# for every three or four URLs, so a bucket holds about 100 at CRAWL_EXPECTED_URLS.
PATTERNS_PER_URL_BUCKET = 2048


class TrapBudgets:
    """The host budgets of every part and the buckets of pattern budgets."""

    def __init__(self, client: Client, prefix: str, parts: Parts, buckets: int) -> None:
        self.client = client
        self.parts = parts
        self.hosts = [keys.HOSTCOUNT.of(prefix, part=tag) for tag in parts.tags]
        self._patterns = keys.PATTERNS.of(prefix, bucket="")
        self.buckets = buckets

    def add(self, per_host: Mapping[str, int], per_pattern: Mapping[str, int]
            ) -> tuple[list[int], list[int]]:
        """Add the URLs counted per host and per pattern ("host pattern"); the totals after
        adding, in the order given (one round trip)."""
        pipe = self.client.pipeline(transaction=False)
        for host, n in per_host.items():
            pipe.hincrby(self.hosts[self.parts.of(host)], host, n)
        for pattern, n in per_pattern.items():
            digest = mmh3.hash_bytes(pattern)[:8]
            bucket = int.from_bytes(digest[:4], "big") % self.buckets
            pipe.hincrby(f"{self._patterns}{bucket:x}", digest, n)
        totals = [int(n) for n in pipe.execute()]
        return totals[:len(per_host)], totals[len(per_host):]

    def admitted(self, hosts: list[str], pipe: Pipeline) -> Reply[dict[str, int]]:
        """The URLs admitted of each of these hosts, in the caller's round trip."""
        at = len(pipe)
        for host in hosts:
            pipe.hget(self.hosts[self.parts.of(host)], host)

        def counts(replies: Sequence[Any]) -> dict[str, int]:
            return {host: int(n or 0)
                    for host, n in zip(hosts, replies[at:at + len(hosts)], strict=True)}
        return counts

    def restore_hosts(self, counts: Mapping[str, int]) -> None:
        """Set the host budgets to these counts (a rebuild's, from the URL rows)."""
        pipe = self.client.pipeline(transaction=False)
        for part, hosts in self.parts.group(counts).items():
            fields: dict[FieldT, EncodableT] = {host: counts[host] for host in hosts}
            pipe.hset(self.hosts[part], mapping=fields)
        pipe.execute()
