"""Hosts throttled by 429 or 503 answers without Retry-After (core.politeness.Throttle): one
hash, `P:throttle`, host -> "level forgive_at". The fetch stage reads the entries of a batch's
hosts with its other lookups, writes a host's entry when an answer raises its level and
deletes an entry once forgiven, when its host is next fetched. No rebuild: a lost level only
starts its host's doubling again from CRAWL_THROTTLE_SECONDS."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from crawlapp.adapters.redis import keys
from crawlapp.adapters.redis.client import Client, Pipeline
from crawlapp.adapters.redis.pipeline import Reply
from crawlapp.core.politeness import Throttle


class Throttles:
    def __init__(self, client: Client, prefix: str) -> None:
        self.client = client
        self.key = keys.THROTTLE.of(prefix)

    def read(self, hosts: Collection[str], pipe: Pipeline) -> Reply[dict[str, Throttle]]:
        """The entries of `hosts` that exist, in the caller's round trip (one HMGET)."""
        names = list(hosts)
        if not names:
            return lambda replies: {}
        at = len(pipe)
        pipe.hmget(self.key, names)

        def throttles(replies: Sequence[Any]) -> dict[str, Throttle]:
            out = {}
            for host, value in zip(names, replies[at], strict=True):
                if value is not None:
                    level, forgive_at = value.split()
                    out[host] = Throttle(int(level), float(forgive_at))
            return out
        return throttles

    def update(self, raised: Mapping[str, Throttle], forgiven: Iterable[str]) -> None:
        """Write the raised levels and delete the forgiven entries, in one round trip."""
        forgiven = [host for host in forgiven if host not in raised]
        if not raised and not forgiven:
            return
        pipe = self.client.pipeline(transaction=False)
        if raised:
            pipe.hset(self.key, mapping={host: f"{t.level} {t.forgive_at:.3f}"
                                         for host, t in raised.items()})
        if forgiven:
            pipe.hdel(self.key, *forgiven)
        pipe.execute()
