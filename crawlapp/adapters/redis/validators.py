"""Conditional-GET validators: the ETag and Last-Modified a re-crawl sends with its URL.

`P:validators:<part>` (hash url -> the packed validators of crawlapp.core.recrawl, a URL's part
following the URL; parts.py) is written when the re-crawl drain queues a page again, and
from the page's row when a rebuild or a lost batch's recovery queues a re-crawl again; read
by the fetch stage, and forgotten when the URL is fetched (or given up) or queued afresh. A
URL queued without its validators is fetched in full.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from redis.typing import EncodableT, FieldT

from crawlapp.adapters.redis import keys
from crawlapp.adapters.redis.client import Client, Pipeline
from crawlapp.adapters.redis.parts import Parts
from crawlapp.adapters.redis.pipeline import Reply, joined

CHUNK = 1000  # URLs per HDEL


class Validators:
    """One hash per part, url -> packed validators."""

    def __init__(self, client: Client, prefix: str, parts: Parts) -> None:
        self.client = client
        self.parts = parts
        self.keys = [keys.VALIDATORS.of(prefix, part=tag) for tag in parts.tags]

    def _by_key(self, urls: Sequence[str]) -> dict[str, list[str]]:
        return {self.keys[part]: mine for part, mine in self.parts.group(urls).items()}

    def store(self, packed: Mapping[str, str]) -> None:
        pipe = self.client.pipeline(transaction=False)
        for key, urls in self._by_key(list(packed)).items():
            fields: dict[FieldT, EncodableT] = {url: packed[url] for url in urls}
            pipe.hset(key, mapping=fields)
        pipe.execute()

    def read(self, urls: Sequence[str], pipe: Pipeline) -> Reply[dict[str, str]]:
        """The packed validators of the URLs that have some, in the caller's round trip."""
        at = len(pipe)
        asked = list(self._by_key(urls).items())
        for key, mine in asked:
            pipe.hmget(key, mine)
        return lambda replies: {url: v.decode() for i, (_, mine) in enumerate(asked)
                                for url, v in zip(mine, replies[at + i], strict=True) if v}

    def forget(self, urls: Sequence[str], pipe: Pipeline | None = None) -> None:
        with joined(self.client, pipe) as p:
            for key, mine in self._by_key(urls).items():
                for start in range(0, len(mine), CHUNK):
                    p.hdel(key, *mine[start:start + CHUNK])
