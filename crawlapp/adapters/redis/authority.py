"""Host authority for the admission path: the scores of the last computation
(crawlapp/ops/authority.py), read once per batch for the hosts its links point to.

  P:authority   HASH host -> authority in [0, 1] (hosts not scored yet are absent: 0)
The database's host_authority table holds the same scores; a computation rewrites both.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from crawlapp.adapters.redis import keys
from crawlapp.adapters.redis.client import Client, Pipeline
from crawlapp.adapters.redis.pipeline import Reply

WRITE_CHUNK = 10_000


class HostAuthorities:
    """The authority hash."""

    def __init__(self, client: Client, prefix: str) -> None:
        self.client = client
        self.key = keys.AUTHORITY.of(prefix)

    def load(self, hosts: Iterable[str]) -> dict[str, float]:
        """Each host's authority, 0 for a host not scored (one HMGET; none for no host)."""
        names = list(dict.fromkeys(hosts))
        if not names:
            return {}
        pipe = self.client.pipeline(transaction=False)
        scores = self.read(names, pipe)
        return scores(pipe.execute())

    def read(self, hosts: Iterable[str], pipe: Pipeline) -> Reply[dict[str, float]]:
        """`load`, in the caller's round trip."""
        names = list(dict.fromkeys(hosts))
        if not names:
            return lambda replies: {}
        at = len(pipe)
        pipe.hmget(self.key, names)

        def scores(replies: Sequence[Any]) -> dict[str, float]:
            return {host: float(v) if v is not None else 0.0
                    for host, v in zip(names, replies[at], strict=True)}
        return scores

    def store(self, scores: Mapping[str, float]) -> None:
        """Write these hosts' scores (a pipeline of HSETs of WRITE_CHUNK fields)."""
        items = list(scores.items())
        pipe = self.client.pipeline(transaction=False)
        for start in range(0, len(items), WRITE_CHUNK):
            pipe.hset(self.key, mapping=dict(items[start:start + WRITE_CHUNK]))
        pipe.execute()
