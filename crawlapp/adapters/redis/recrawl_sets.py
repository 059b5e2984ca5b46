"""The re-crawl schedule in Redis: one sorted set per tier (score = next fetch time), and a
claim set that makes draining crash-safe, in each of CRAWL_REDIS_PARTS parts (a page's part
follows its url_hash; parts.py):

  P:recrawl:<part>:tier:<tier>   ZSET url_hash -> next fetch time
  P:recrawl:<part>:claimed       ZSET "<tier>|<url_hash>" -> claim deadline
A part's keys share its hash tag, so a drain claims from every tier of a part in one script
(one per part, in one round trip). The database keeps next_crawl_at too, so `crawlctl
frontier rebuild` restores the sets.
"""

from __future__ import annotations

from collections.abc import Iterable

from crawlapp.adapters.redis import keys
from crawlapp.adapters.redis.client import Client
from crawlapp.adapters.redis.lua import Lua
from crawlapp.adapters.redis.parts import Parts
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


class _Part:
    """One part's tier sets and claim set."""

    def __init__(self, prefix: str, tag: str) -> None:
        self.tiers = {tier: keys.RECRAWL_TIER.of(prefix, part=tag, tier=tier) for tier in TIER_NAMES}
        self.claimed = keys.RECRAWL_CLAIMED.of(prefix, part=tag)


class RecrawlSets:
    """The tiers and the claim set of every part."""

    def __init__(self, client: Client, prefix: str, parts: Parts) -> None:
        self.client = client
        self.parts = parts
        self._parts = [_Part(prefix, tag) for tag in parts.tags]

    def schedule(self, items: Iterable[tuple[str, str, float]]) -> None:
        """Put each (url_hash, tier, next time) in its tier, and out of the other tiers (the
        last item of a url_hash wins): a ZADD and a ZREM per tier of each part touched."""
        latest = {url_hash: (tier, when) for url_hash, tier, when in items}
        pipe = self.client.pipeline(transaction=False)
        for index, hashes in self.parts.group(latest).items():
            for tier, key in self._parts[index].tiers.items():
                scores = {h: latest[h][1] for h in hashes if latest[h][0] == tier}
                others = [h for h in hashes if latest[h][0] != tier]
                if scores:
                    pipe.zadd(key, scores)
                if others:
                    pipe.zrem(key, *others)
        pipe.execute()

    def claim(self, now: float, limit: int, claim_seconds: float) -> list[str]:
        """Claim up to `limit` due members (as many from each part); returns
        "<tier>|<url_hash>" strings."""
        each = -(-limit // len(self._parts))
        pipe = self.client.pipeline(transaction=False)
        for part in self._parts:
            CLAIM(pipe, [part.claimed, *part.tiers.values()],
                  [now, each, claim_seconds, *TIER_NAMES])
        return [m.decode() for claimed in pipe.execute() for m in claimed]

    def acknowledge(self, claims: list[str]) -> None:
        """The claimed URLs are in the frontier: forget the claims."""
        pipe = self.client.pipeline(transaction=False)
        for part, mine in self.parts.group(claims, lambda c: c.split("|", 1)[1]).items():
            pipe.zrem(self._parts[part].claimed, *mine)
        pipe.execute()

    def make_due(self, url_hashes: list[str] | None, when: float) -> int:
        """Make the given pages (every page when None) due at `when`; returns how many."""
        sets = [key for part in self._parts for key in part.tiers.values()]
        pipe = self.client.pipeline(transaction=False)
        for key in sets:
            pipe.zrange(key, 0, -1)
        members = pipe.execute()
        wanted = None if url_hashes is None else set(url_hashes)
        pipe = self.client.pipeline(transaction=False)
        moved = 0
        for key, found in zip(sets, members, strict=True):
            due = [m for m in found if wanted is None or m.decode() in wanted]
            for start in range(0, len(due), 1000):
                pipe.zadd(key, dict.fromkeys(due[start:start + 1000], when))
            moved += len(due)
        pipe.execute()
        return moved

    def forget(self, url_hashes: list[str]) -> int:
        """Take pages out of every tier and claim; returns how many were scheduled."""
        pipe = self.client.pipeline(transaction=False)
        for index, hashes in self.parts.group(url_hashes).items():
            part = self._parts[index]
            for start in range(0, len(hashes), 1000):
                chunk = hashes[start:start + 1000]
                for tier, key in part.tiers.items():
                    pipe.zrem(key, *chunk)
                    pipe.zrem(part.claimed, *(f"{tier}|{h}" for h in chunk))
        return sum(int(n) for n in pipe.execute())

    def stats(self, now: float) -> dict[str, dict[str, int]]:
        """Pages per tier, and how many of them are overdue."""
        pipe = self.client.pipeline(transaction=False)
        for part in self._parts:
            for key in part.tiers.values():
                pipe.zcard(key)
                pipe.zcount(key, "-inf", now)
        raw = iter(pipe.execute())
        out = {tier: {"pages": 0, "overdue": 0} for tier in TIER_NAMES}
        for _ in self._parts:
            for tier in TIER_NAMES:
                out[tier]["pages"] += int(next(raw))
                out[tier]["overdue"] += int(next(raw))
        return out

    def pending(self, now: float) -> int:
        """Pages due now or claimed by a drain that has not finished: the crawl is not idle."""
        pipe = self.client.pipeline(transaction=False)
        for part in self._parts:
            for key in part.tiers.values():
                pipe.zcount(key, "-inf", now)
            pipe.zcard(part.claimed)
        return sum(int(n) for n in pipe.execute())
