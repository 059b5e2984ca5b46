"""Host authority for the admission path: the scores of the last computation
(crawlapp/ops/authority.py), read once per batch for the hosts its links point to.

  P:authority   HASH host -> authority in [0, 1] (hosts not scored yet are absent: 0)
The database's host_authority table holds the same scores; a computation rewrites both.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from crawlapp.adapters.redis import keys
from crawlapp.adapters.redis.client import Client

WRITE_CHUNK = 10_000


class HostAuthorities:
    """The authority hash."""

    def __init__(self, client: Client, prefix: str) -> None:
        self.client = client
        self.key = keys.AUTHORITY.of(prefix)

    def read(self, hosts: Iterable[str]) -> dict[str, float]:
        """Each host's authority, 0 for a host not scored (one HMGET)."""
        names = list(dict.fromkeys(hosts))
        if not names:
            return {}
        values = self.client.hmget(self.key, names)
        return {host: float(v) if v is not None else 0.0
                for host, v in zip(names, values, strict=True)}

    def store(self, scores: Mapping[str, float]) -> None:
        """Write these hosts' scores (a pipeline of HSETs of WRITE_CHUNK fields)."""
        items = list(scores.items())
        pipe = self.client.pipeline(transaction=False)
        for start in range(0, len(items), WRITE_CHUNK):
            pipe.hset(self.key, mapping=dict(items[start:start + WRITE_CHUNK]))
        pipe.execute()
