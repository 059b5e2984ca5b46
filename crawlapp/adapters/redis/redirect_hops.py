"""How many redirects led to a URL waiting to be fetched (the parse stage stops a chain at
CRAWL_MAX_REDIRECTS). One key per redirect target, `P:hops:<url hash>`, written by the
links stage, read and deleted by the fetch stage, and expiring after TTL whatever happens to
the URL (a target refused or never fetched leaves nothing behind for long). No rebuild: a
lost count only lets a chain run CRAWL_MAX_REDIRECTS hops more."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from crawlapp.adapters.redis import keys
from crawlapp.adapters.redis.client import Client, Pipeline
from crawlapp.adapters.redis.pipeline import Reply, joined
from crawlapp.core.urls import url_hash

TTL = 7 * 86400


class RedirectHops:
    """One expiring string per redirect target; each command on one key (pipelined)."""

    def __init__(self, client: Client, prefix: str) -> None:
        self.client = client
        self.prefix = prefix

    def key(self, url: str) -> str:
        return keys.HOPS.of(self.prefix, url_hash=url_hash(url))

    def record(self, hops: Mapping[str, int]) -> None:
        """Remember the hops that led to each redirect target, in one round trip."""
        pipe = self.client.pipeline(transaction=False)
        for url, n in hops.items():
            pipe.set(self.key(url), n, ex=TTL)
        pipe.execute()

    def read(self, urls: Sequence[str], pipe: Pipeline) -> Reply[dict[str, int]]:
        """The hops that led to each URL (0 when none), in the caller's round trip."""
        at = len(pipe)
        for url in urls:
            pipe.get(self.key(url))
        return lambda replies: {url: int(n or 0) for url, n in
                                zip(urls, replies[at:at + len(urls)], strict=True)}

    def forget(self, urls: Sequence[str], pipe: Pipeline | None = None) -> None:
        """The URLs were fetched: their counts go."""
        with joined(self.client, pipe) as p:
            for url in urls:
                p.delete(self.key(url))
