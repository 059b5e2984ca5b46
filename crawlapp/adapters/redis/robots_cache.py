"""robots.txt answers per origin: cached in Redis (CRAWL_ROBOTS_TTL, 24 h by default), kept in
the hosts table (`record`, `write`: the store stage writes them with its batch)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import msgpack
import redis

from crawlapp.adapters.redis import keys
from crawlapp.adapters.redis.client import Client, Pipeline
from crawlapp.adapters.redis.pipeline import Reply
from crawlapp.core.records import RobotsAnswer
from crawlapp.core.robots import RobotsPolicy

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

FAILURE_TTL = 600  # a robots.txt that could not be fetched is asked again after 10 minutes


class RobotsCache:
    """`P:robots:<origin>`: msgpack [status, body], expiring; one key per origin, each command
    on one key (pipelined)."""

    def __init__(self, client: Client, prefix: str, ttl: int) -> None:
        self.client = client
        self.prefix = prefix
        self.ttl = ttl

    def _key(self, origin: str) -> str:
        return keys.ROBOTS.of(self.prefix, origin=origin)

    def load(self, origins: Iterable[str]) -> dict[str, RobotsPolicy | None]:
        """The cached policy of each origin, None where it is not known yet (one round trip)."""
        pipe = self.client.pipeline(transaction=False)
        policies = self.read(origins, pipe)
        return policies(pipe.execute())

    def read(self, origins: Iterable[str], pipe: Pipeline) -> Reply[dict[str, RobotsPolicy | None]]:
        """`load`, in the caller's round trip."""
        origins = list(origins)
        at = len(pipe)
        for origin in origins:
            pipe.get(self._key(origin))

        def policies(replies: Sequence[Any]) -> dict[str, RobotsPolicy | None]:
            out: dict[str, RobotsPolicy | None] = {}
            for origin, value in zip(origins, replies[at:at + len(origins)], strict=True):
                if value is None:
                    out[origin] = None
                else:
                    status, body = msgpack.unpackb(value)
                    out[origin] = RobotsPolicy(int(status), body)
            return out
        return policies

    def save(self, policies: dict[str, RobotsPolicy]) -> None:
        """Cache each policy: a usable answer for the TTL, a failure for FAILURE_TTL."""
        pipe = self.client.pipeline(transaction=False)
        for origin, policy in policies.items():
            ttl = self.ttl if policy.mode in ("rules", "allow_all") else FAILURE_TTL
            self._set(pipe, origin, policy.status, policy.body, ttl)
        pipe.execute()

    def restore(self, answers: Iterable[tuple[str, int, str, datetime]], now: datetime) -> int:
        """Cache again the answers of the hosts table, (origin, status, body, fetched at),
        for what is left of their TTL (2xx-4xx only: a failure is asked again); returns how
        many."""
        pipe = self.client.pipeline(transaction=False)
        restored = 0
        for origin, status, body, fetched_at in answers:
            left = self.ttl - int((now - fetched_at.replace(tzinfo=fetched_at.tzinfo or UTC))
                                  .total_seconds())
            if left > 0 and 200 <= status < 500:
                self._set(pipe, origin, status, body, left)
                restored += 1
        pipe.execute()
        return restored

    def _set(self, pipe: redis.client.Pipeline, origin: str, status: int, body: str,
             ttl: int) -> None:
        pipe.set(self._key(origin), msgpack.packb([status, body]), ex=ttl)


def record(origin: str, policy: RobotsPolicy, user_agent: str) -> RobotsAnswer:
    """What the hosts row keeps of a policy. Pure."""
    return RobotsAnswer(origin, policy.status, policy.body, policy.crawl_delay(user_agent))


def write(session: Session, records: Iterable[RobotsAnswer], when: Iterable[float]) -> None:
    """Record each robots.txt answer on its hosts row."""
    # Imported here: the fetch workers read this cache and never load the database's modules.
    from crawlapp.adapters.db import repository
    repository.save_robots(session, records, (datetime.fromtimestamp(at, UTC) for at in when))
