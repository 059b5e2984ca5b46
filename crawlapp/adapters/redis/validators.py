"""Conditional-GET validators: the ETag and Last-Modified a re-crawl sends with its URL.

`P:validators` (hash url -> the packed validators of crawlapp.core.recrawl) is written when
the re-crawl drain queues a page again, read by the fetch stage, and forgotten when the URL
is fetched (or given up) or queued afresh. No rebuild: a URL queued without its validators
is fetched in full.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from redis.typing import EncodableT, FieldT

from crawlapp.adapters.redis import keys
from crawlapp.adapters.redis.client import Client, Pipeline
from crawlapp.adapters.redis.pipeline import Reply, joined

CHUNK = 1000  # URLs per HDEL


class Validators:
    """One hash, url -> packed validators."""

    def __init__(self, client: Client, prefix: str) -> None:
        self.client = client
        self.key = keys.VALIDATORS.of(prefix)

    def store(self, packed: Mapping[str, str]) -> None:
        if packed:
            fields: dict[FieldT, EncodableT] = dict(packed)
            self.client.hset(self.key, mapping=fields)

    def read(self, urls: Sequence[str], pipe: Pipeline) -> Reply[dict[str, str]]:
        """The packed validators of the URLs that have some, in the caller's round trip."""
        at = len(pipe)
        pipe.hmget(self.key, urls)
        return lambda replies: {url: v.decode() for url, v in zip(urls, replies[at], strict=True)
                                if v}

    def forget(self, urls: Sequence[str], pipe: Pipeline | None = None) -> None:
        with joined(self.client, pipe) as p:
            for start in range(0, len(urls), CHUNK):
                p.hdel(self.key, *urls[start:start + CHUNK])
