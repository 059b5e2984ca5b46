"""Fetch retries: how many times a URL failed transiently (429, 5xx, no answer) in a row.

`P:retries` (hash url -> failures) is bumped by the fetch stage at each transient failure
and forgotten when the URL is fetched, refused or given up (CRAWL_MAX_RETRIES). No rebuild:
a lost count gives a URL its retries again.
"""

from __future__ import annotations

from collections.abc import Sequence

from crawlapp.adapters.redis import keys
from crawlapp.adapters.redis.client import Client, Pipeline
from crawlapp.adapters.redis.pipeline import Reply, joined

CHUNK = 1000  # URLs per HDEL


class FetchRetries:
    """One hash, url -> transient failures so far."""

    def __init__(self, client: Client, prefix: str) -> None:
        self.client = client
        self.key = keys.RETRIES.of(prefix)

    def bump(self, urls: Sequence[str], pipe: Pipeline) -> Reply[list[int]]:
        """Count one more failure of each URL; its count now, in the caller's round trip."""
        at = len(pipe)
        for url in urls:
            pipe.hincrby(self.key, url, 1)
        return lambda replies: [int(n) for n in replies[at:at + len(urls)]]

    def forget(self, urls: Sequence[str], pipe: Pipeline | None = None) -> None:
        with joined(self.client, pipe) as p:
            for start in range(0, len(urls), CHUNK):
                p.hdel(self.key, *urls[start:start + CHUNK])
