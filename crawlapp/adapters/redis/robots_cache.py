"""robots.txt answers per origin: cached in Redis (24 h by default), kept in the hosts table."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

import msgpack
from sqlalchemy.orm import Session

from crawlapp.adapters.context import Context
from crawlapp.adapters.db import repository
from crawlapp.core.records import RobotsAnswer
from crawlapp.core.robots import RobotsPolicy

FAILURE_TTL = 600  # a robots.txt that could not be fetched is asked again after 10 minutes


def load(ctx: Context, origins: Iterable[str]) -> dict[str, RobotsPolicy | None]:
    """The cached policy of each origin, None where it is not known yet (one round trip)."""
    origins = list(origins)
    if not origins:
        return {}
    raw = ctx.redis.mget([ctx.key("robots", o) for o in origins])
    out: dict[str, RobotsPolicy | None] = {}
    for origin, value in zip(origins, raw, strict=True):
        if value is None:
            out[origin] = None
        else:
            status, body = msgpack.unpackb(value)
            out[origin] = RobotsPolicy(int(status), body)
    return out


def save(ctx: Context, policies: dict[str, RobotsPolicy]) -> None:
    """Cache each policy in Redis (its hosts row is written by the store stage, with its batch)."""
    if not policies:
        return
    pipe = ctx.redis.pipeline(transaction=False)
    for origin, policy in policies.items():
        ttl = ctx.settings.robots_ttl if policy.mode in ("rules", "allow_all") else FAILURE_TTL
        pipe.set(ctx.key("robots", origin), msgpack.packb([policy.status, policy.body]), ex=ttl)
    pipe.execute()


def record(origin: str, policy: RobotsPolicy, user_agent: str) -> RobotsAnswer:
    """What the hosts row keeps of a policy. Pure."""
    return RobotsAnswer(origin, policy.status, policy.body, policy.crawl_delay(user_agent))


def write(session: Session, records: Iterable[RobotsAnswer], when: Iterable[float]) -> None:
    """Record each robots.txt answer on its hosts row."""
    for (origin, status, body, crawl_delay), fetched_at in zip(records, when, strict=True):
        repository.save_robots(session, origin, status, body, crawl_delay,
                               datetime.fromtimestamp(fetched_at, UTC))
