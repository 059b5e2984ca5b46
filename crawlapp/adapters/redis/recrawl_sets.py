"""The re-crawl schedule in Redis: one sorted set per tier (score = next fetch time), and a
claim set that makes draining crash-safe.

  {P:recrawl}:tier:<tier>   ZSET url_hash -> next fetch time
  {P:recrawl}:claimed       ZSET "<tier>|<url_hash>" -> claim deadline
The hash tag keeps them in one cluster slot (a drain claims from every tier in one script).
The database keeps next_crawl_at too, so `crawlctl frontier rebuild` restores the sets.
"""

from __future__ import annotations

from collections.abc import Iterable

from crawlapp.adapters.redis import keys
from crawlapp.adapters.redis.client import Client
from crawlapp.adapters.redis.lua import Lua
from crawlapp.core.recrawl import TIERS

TIER_NAMES = tuple(name for name, _ in TIERS)

# KEYS: the claim set, then one set per tier, in the order of the tier names
# ARGV: now, limit, claim_seconds, then the tier names
# First puts claims whose deadline passed back into their tier (due now): a drain that
# died between claim and enqueue loses nothing. Then claims up to `limit` due members,
# moving each from its tier to the claim set. Returns the claimed "<tier>|<url_hash>".
CLAIM = Lua("""
local claimed, now, limit, ttl = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local tier_key = {}
for i = 4, #ARGV do tier_key[ARGV[i]] = KEYS[i - 2] end
local expired = redis.call('ZRANGEBYSCORE', claimed, '-inf', now, 'LIMIT', 0, 10000)
for _, claim in ipairs(expired) do
  local bar = string.find(claim, '|', 1, true)
  redis.call('ZADD', tier_key[string.sub(claim, 1, bar - 1)], now, string.sub(claim, bar + 1))
  redis.call('ZREM', claimed, claim)
end
local out = {}
for i = 4, #ARGV do
  if #out >= limit then break end
  local tier = ARGV[i]
  local due = redis.call('ZRANGEBYSCORE', tier_key[tier], '-inf', now, 'LIMIT', 0, limit - #out)
  for _, member in ipairs(due) do
    redis.call('ZREM', tier_key[tier], member)
    redis.call('ZADD', claimed, now + ttl, tier .. '|' .. member)
    table.insert(out, tier .. '|' .. member)
  end
end
return out
""")


class RecrawlSets:
    """The tiers and the claim set."""

    def __init__(self, client: Client, prefix: str) -> None:
        self.client = client
        self.tiers = {tier: keys.RECRAWL_TIER.of(prefix, tier=tier) for tier in TIER_NAMES}
        self.claimed = keys.RECRAWL_CLAIMED.of(prefix)

    def schedule(self, items: Iterable[tuple[str, str, float]]) -> None:
        """Put each (url_hash, tier, next time) in its tier, and out of the other tiers."""
        pipe = self.client.pipeline(transaction=False)
        for url_hash, tier, when in items:
            for other, key in self.tiers.items():
                if other != tier:
                    pipe.zrem(key, url_hash)
            pipe.zadd(self.tiers[tier], {url_hash: when})
        pipe.execute()

    def claim(self, now: float, limit: int, claim_seconds: float) -> list[str]:
        """Claim up to `limit` due members; returns "<tier>|<url_hash>" strings."""
        return [m.decode() for m in CLAIM(self.client, [self.claimed, *self.tiers.values()],
                                          [now, limit, claim_seconds, *self.tiers])]

    def acknowledge(self, claims: list[str]) -> None:
        """The claimed URLs are in the frontier: forget the claims."""
        if claims:
            self.client.zrem(self.claimed, *claims)

    def make_due(self, url_hashes: list[str] | None, when: float) -> int:
        """Make the given pages (every page when None) due at `when`; returns how many."""
        pipe = self.client.pipeline(transaction=False)
        for key in self.tiers.values():
            pipe.zrange(key, 0, -1)
        members = pipe.execute()
        wanted = None if url_hashes is None else set(url_hashes)
        pipe = self.client.pipeline(transaction=False)
        moved = 0
        for key, found in zip(self.tiers.values(), members, strict=True):
            due = [m for m in found if wanted is None or m.decode() in wanted]
            for start in range(0, len(due), 1000):
                pipe.zadd(key, dict.fromkeys(due[start:start + 1000], when))
            moved += len(due)
        pipe.execute()
        return moved

    def forget(self, url_hashes: list[str]) -> int:
        """Take pages out of every tier and claim; returns how many were scheduled."""
        pipe = self.client.pipeline(transaction=False)
        for start in range(0, len(url_hashes), 1000):
            chunk = url_hashes[start:start + 1000]
            for tier, key in self.tiers.items():
                pipe.zrem(key, *chunk)
                pipe.zrem(self.claimed, *(f"{tier}|{h}" for h in chunk))
        return sum(int(n) for n in pipe.execute())

    def stats(self, now: float) -> dict[str, dict[str, int]]:
        """Pages per tier, and how many of them are overdue."""
        pipe = self.client.pipeline(transaction=False)
        for key in self.tiers.values():
            pipe.zcard(key)
            pipe.zcount(key, "-inf", now)
        raw = pipe.execute()
        return {tier: {"pages": int(raw[2 * i]), "overdue": int(raw[2 * i + 1])}
                for i, tier in enumerate(self.tiers)}

    def pending(self, now: float) -> int:
        """Pages due now or claimed by a drain that has not finished: the crawl is not idle."""
        pipe = self.client.pipeline(transaction=False)
        for key in self.tiers.values():
            pipe.zcount(key, "-inf", now)
        pipe.zcard(self.claimed)
        return sum(int(n) for n in pipe.execute())
