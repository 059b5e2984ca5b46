"""The re-crawl schedule in Redis: one sorted set per tier (score = next fetch time), and a
claim set that makes draining crash-safe.

  {P}:recrawl:<tier>    ZSET url_hash -> next fetch time
  {P}:recrawl:claimed   ZSET "<tier>|<url_hash>" -> claim deadline
The database keeps next_crawl_at too, so `crawlctl frontier rebuild` restores the sets.
"""

from __future__ import annotations

from collections.abc import Iterable

from crawlapp.adapters.context import Context
from crawlapp.core.recrawl import TIERS

TIER_NAMES = tuple(name for name, _ in TIERS)

# KEYS: none (keys built from ARGV[1], the "{P}:recrawl" prefix)
# ARGV: prefix, now, limit, claim_seconds, then the tier names
# First puts claims whose deadline passed back into their tier (due now): a drain that
# died between claim and enqueue loses nothing. Then claims up to `limit` due members,
# moving each from its tier to the claim set. Returns the claimed "<tier>|<url_hash>".
CLAIM = """
local p, now, limit, ttl = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local expired = redis.call('ZRANGEBYSCORE', p .. ':claimed', '-inf', now, 'LIMIT', 0, 10000)
for _, claim in ipairs(expired) do
  local bar = string.find(claim, '|', 1, true)
  redis.call('ZADD', p .. ':' .. string.sub(claim, 1, bar - 1), now, string.sub(claim, bar + 1))
  redis.call('ZREM', p .. ':claimed', claim)
end
local out = {}
for i = 5, #ARGV do
  if #out >= limit then break end
  local tier = ARGV[i]
  local due = redis.call('ZRANGEBYSCORE', p .. ':' .. tier, '-inf', now, 'LIMIT', 0, limit - #out)
  for _, member in ipairs(due) do
    redis.call('ZREM', p .. ':' .. tier, member)
    redis.call('ZADD', p .. ':claimed', now + ttl, tier .. '|' .. member)
    table.insert(out, tier .. '|' .. member)
  end
end
return out
"""


def _prefix(ctx: Context) -> str:
    return ctx.key("recrawl")


def schedule(ctx: Context, items: Iterable[tuple[str, str, float]]) -> None:
    """Put each (url_hash, tier, next time) in its tier, and out of the other tiers."""
    pipe = ctx.redis.pipeline(transaction=False)
    for url_hash, tier, when in items:
        for other in TIER_NAMES:
            if other != tier:
                pipe.zrem(f"{_prefix(ctx)}:{other}", url_hash)
        pipe.zadd(f"{_prefix(ctx)}:{tier}", {url_hash: when})
    pipe.execute()


def claim(ctx: Context, now: float, limit: int, claim_seconds: float) -> list[str]:
    """Claim up to `limit` due members; returns "<tier>|<url_hash>" strings."""
    script = ctx.script(CLAIM)
    return [m.decode() for m in script(args=[_prefix(ctx), now, limit, claim_seconds,
                                              *TIER_NAMES])]


def acknowledge(ctx: Context, claims: list[str]) -> None:
    """The claimed URLs are in the frontier: forget the claims."""
    if claims:
        ctx.redis.zrem(f"{_prefix(ctx)}:claimed", *claims)


def make_due(ctx: Context, url_hashes: list[str] | None, when: float) -> int:
    """Make the given pages (every page when None) due at `when`; returns how many."""
    pipe = ctx.redis.pipeline(transaction=False)
    for tier in TIER_NAMES:
        pipe.zrange(f"{_prefix(ctx)}:{tier}", 0, -1)
    members = pipe.execute()
    wanted = None if url_hashes is None else set(url_hashes)
    pipe = ctx.redis.pipeline(transaction=False)
    moved = 0
    for tier, found in zip(TIER_NAMES, members, strict=True):
        due = [m for m in found if wanted is None or m.decode() in wanted]
        for start in range(0, len(due), 1000):
            pipe.zadd(f"{_prefix(ctx)}:{tier}", dict.fromkeys(due[start:start + 1000], when))
        moved += len(due)
    pipe.execute()
    return moved


def forget(ctx: Context, url_hashes: list[str]) -> int:
    """Take pages out of every tier and claim; returns how many were scheduled."""
    pipe = ctx.redis.pipeline(transaction=False)
    for start in range(0, len(url_hashes), 1000):
        chunk = url_hashes[start:start + 1000]
        for tier in TIER_NAMES:
            pipe.zrem(f"{_prefix(ctx)}:{tier}", *chunk)
            pipe.zrem(f"{_prefix(ctx)}:claimed", *(f"{tier}|{h}" for h in chunk))
    return sum(int(n) for n in pipe.execute())


def stats(ctx: Context, now: float) -> dict[str, dict[str, int]]:
    """Pages per tier, and how many of them are overdue."""
    pipe = ctx.redis.pipeline(transaction=False)
    for tier in TIER_NAMES:
        pipe.zcard(f"{_prefix(ctx)}:{tier}")
        pipe.zcount(f"{_prefix(ctx)}:{tier}", "-inf", now)
    raw = pipe.execute()
    return {tier: {"pages": int(raw[2 * i]), "overdue": int(raw[2 * i + 1])}
            for i, tier in enumerate(TIER_NAMES)}


def pending(ctx: Context, now: float) -> int:
    """Pages due now or claimed by a drain that has not finished: the crawl is not idle."""
    pipe = ctx.redis.pipeline(transaction=False)
    for tier in TIER_NAMES:
        pipe.zcount(f"{_prefix(ctx)}:{tier}", "-inf", now)
    pipe.zcard(f"{_prefix(ctx)}:claimed")
    return sum(int(n) for n in pipe.execute())
