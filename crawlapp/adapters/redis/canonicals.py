"""Canonical pointers: `P:canonical-of:<url_hash>` names the URL a page defers to with its
<link rel=canonical>, so that of two pages naming each other one is stored (stages/dedup.py).
The urls table keeps the same pointer (canonical_url): a rebuild restores them, and a
takedown forgets those of the pages it deletes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from crawlapp.adapters.redis import keys
from crawlapp.adapters.redis.client import Client


class CanonicalPointers:
    """One string key per page that defers to another URL: the target's url_hash. Each
    command touches one key (pipelined), so the keys may spread over a cluster's slots."""

    def __init__(self, client: Client, prefix: str) -> None:
        self.client = client
        self.prefix = prefix

    def _key(self, url_hash: str) -> str:
        return keys.CANONICAL.of(self.prefix, url_hash=url_hash)

    def deferring(self, url_hashes: Iterable[str]) -> list[bool]:
        """Per page, whether it defers to another URL (one round trip)."""
        pipe = self.client.pipeline(transaction=False)
        for h in url_hashes:
            pipe.exists(self._key(h))
        return [bool(n) for n in pipe.execute()]

    def point(self, targets: Mapping[str, str]) -> None:
        """Record that each page (url_hash) defers to its target's url_hash (a rebuild
        restores the pointers of the rows the same way)."""
        pipe = self.client.pipeline(transaction=False)
        for h, target in targets.items():
            pipe.set(self._key(h), target)
        pipe.execute()

    def forget(self, url_hashes: Iterable[str]) -> None:
        pipe = self.client.pipeline(transaction=False)
        for h in url_hashes:
            pipe.delete(self._key(h))
        pipe.execute()
