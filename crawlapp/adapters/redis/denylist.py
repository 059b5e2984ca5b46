"""The denylist: hosts the crawler must never fetch or queue.

A pattern (crawlapp.core.hostpatterns) is an exact host or `*.domain`. The table `denylist` is the
record; the Redis set `<prefix>:denylist` holds the same patterns for the hot path, which
asks about a whole batch's hosts in one SMISMEMBER.
"""

from __future__ import annotations

from collections.abc import Iterable

from crawlapp.adapters.context import Context
from crawlapp.core.hostpatterns import candidates


def _key(ctx: Context) -> str:
    return ctx.key("denylist")


def denied_hosts(ctx: Context, hosts: Iterable[str]) -> frozenset[str]:
    """Which of `hosts` the denylist covers, in one round trip."""
    hosts = list(set(hosts))
    if not hosts:
        return frozenset()
    per_host = [candidates(h) for h in hosts]
    flat = [p for names in per_host for p in names]
    found = dict(zip(flat, ctx.redis.smismember(_key(ctx), flat), strict=True))
    return frozenset(h for h, names in zip(hosts, per_host, strict=True)
                     if any(found[p] for p in names))


def load(ctx: Context, patterns: Iterable[str]) -> int:
    """Replace the Redis copy with `patterns` (the table's); returns how many."""
    patterns = list(patterns)
    pipe = ctx.redis.pipeline(transaction=True)
    pipe.delete(_key(ctx))
    if patterns:
        pipe.sadd(_key(ctx), *patterns)
    pipe.execute()
    return len(patterns)


def add(ctx: Context, pattern: str) -> None:
    ctx.redis.sadd(_key(ctx), pattern)


def remove(ctx: Context, pattern: str) -> None:
    ctx.redis.srem(_key(ctx), pattern)
