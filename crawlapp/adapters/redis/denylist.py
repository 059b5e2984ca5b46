"""The denylist: hosts the crawler must never fetch or queue.

A pattern (crawlapp.core.hostpatterns) is an exact host or `*.domain`. The table `denylist` is the
record; the Redis set `P:denylist` holds the same patterns for the hot path, which
asks about a whole batch's hosts in one SMISMEMBER.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from crawlapp.adapters.redis import keys
from crawlapp.adapters.redis.client import Client, Pipeline
from crawlapp.adapters.redis.pipeline import Reply
from crawlapp.core.hostpatterns import candidates


class Denylist:
    """The Redis copy of the denylist table: one set of patterns."""

    def __init__(self, client: Client, prefix: str) -> None:
        self.client = client
        self.key = keys.DENYLIST.of(prefix)

    def denied_hosts(self, hosts: Iterable[str]) -> frozenset[str]:
        """Which of `hosts` the denylist covers, in one round trip."""
        pipe = self.client.pipeline(transaction=False)
        denied = self.read(hosts, pipe)
        return denied(pipe.execute())

    def read(self, hosts: Iterable[str], pipe: Pipeline) -> Reply[frozenset[str]]:
        """`denied_hosts`, in the caller's round trip."""
        hosts = list(set(hosts))
        per_host = [candidates(h) for h in hosts]
        flat = [p for names in per_host for p in names]
        at = len(pipe)
        if flat:
            pipe.smismember(self.key, flat)

        def denied(replies: Sequence[Any]) -> frozenset[str]:
            if not flat:
                return frozenset()
            found = dict(zip(flat, replies[at], strict=True))
            return frozenset(h for h, names in zip(hosts, per_host, strict=True)
                             if any(found[p] for p in names))
        return denied

    def load(self, patterns: Iterable[str]) -> int:
        """Replace the Redis copy with `patterns` (the table's); returns how many."""
        patterns = list(patterns)
        pipe = self.client.pipeline(transaction=True)
        pipe.delete(self.key)
        if patterns:
            pipe.sadd(self.key, *patterns)
        pipe.execute()
        return len(patterns)

    def add(self, pattern: str) -> None:
        self.client.sadd(self.key, pattern)

    def remove(self, pattern: str) -> None:
        self.client.srem(self.key, pattern)
