"""The near future of the re-crawl schedule in Redis: one sorted set per tier (score = next
fetch time), and a claim set that makes draining crash-safe, in each of CRAWL_REDIS_PARTS parts
(a page's part follows its url_hash; parts.py), and the horizon the sets are loaded up to:

  P:recrawl:<part>:tier:<tier>   ZSET url_hash -> next fetch time
  P:recrawl:<part>:claimed       ZSET "<tier>|<url_hash>" -> claim deadline
  P:recrawl:horizon              HASH until, from, lease
A part's keys share its hash tag, so a drain claims from every tier of a part in one script
(one per part, in one round trip).

The database keeps every page's next fetch (urls.next_crawl_at); the sets hold the pages due
before `until` only, a window of CRAWL_RECRAWL_WINDOW ahead of the last load (the rest, days
or weeks ahead, would cost ~100 B a page fetched). Two writers fill them:
- the store stage commits a page's row, then reads `until` and writes the page only if it is
  due before it (`schedule`);
- a load (the drain's top-up, a rebuild) sets `until` first, then reads the database's pages
  due from the previous `until` (`from`) up to the new one and writes them (`load`).
A page stored while a load runs is thus either seen by the load's query (its row committed
before the load set `until`, so before the query) or written by the store (which read the
new `until`), or both, which is harmless: a load never raises a score (ZADD LT). No `until`
(a new or emptied Redis) means nothing is loaded: the next load reads everything due before
its `until`, overdue pages included. A load that dies leaves `from`, so the next one starts
where it did.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import NamedTuple

from crawlapp.adapters.redis import keys
from crawlapp.adapters.redis.client import Client
from crawlapp.adapters.redis.lua import Lua
from crawlapp.adapters.redis.parts import Parts
from crawlapp.core.recrawl import TIERS

TIER_NAMES = tuple(name for name, _ in TIERS)
LOAD_LEASE = 300.0  # seconds a load holds off the others (a longer one is only redundant)

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


# KEYS: the horizon. ARGV: until, now, lease deadline, "1" for a full load (a rebuild)
# Starts a load up to `until` unless another one holds its lease (returns false): from the
# start of a load that did not finish, else from the last `until`, else (or for a full load)
# from the beginning (""). Sets `until` before the caller reads the database.
BEGIN_LOAD = Lua("""
local k, full = KEYS[1], ARGV[4] == '1'
if not full and tonumber(redis.call('HGET', k, 'lease') or '0') > tonumber(ARGV[2]) then
  return false
end
local since = redis.call('HGET', k, 'from') or redis.call('HGET', k, 'until') or ''
if full then since = '' end
redis.call('HSET', k, 'from', since, 'until', ARGV[1], 'lease', ARGV[3])
return since
""")

# KEYS: the horizon. ARGV: the load's until and lease deadline, "1" if it wrote every page
# Ends a load: gives its lease back; if it finished and no load began since, forgets `from`.
END_LOAD = Lua("""
local k = KEYS[1]
if ARGV[3] == '1' and redis.call('HGET', k, 'until') == ARGV[1] then redis.call('HDEL', k, 'from') end
if redis.call('HGET', k, 'lease') == ARGV[2] then redis.call('HDEL', k, 'lease') end
return 0
""")


class Load(NamedTuple):
    """A load of the pages due in [since, until) (since None: every page due before until)."""

    since: float | None
    until: float
    lease: str


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
        self.horizon = keys.RECRAWL_HORIZON.of(prefix)

    def until(self) -> float | None:
        """The sets hold every page due before this (None: nothing is loaded)."""
        raw = self.client.hget(self.horizon, "until")
        return None if raw is None else float(raw)

    def schedule(self, items: Iterable[tuple[str, str, float]]) -> None:
        """The store stage's pages, their rows committed: each (url_hash, tier, next time)
        due before the horizon goes in its tier, out of the others; the others out of every
        tier (the last item of a url_hash wins). Read the horizon after the commit: see the
        module's docstring."""
        until = self.until()
        self._write(items, -math.inf if until is None else until)

    def make_due(self, items: Iterable[tuple[str, str, float]]) -> None:
        """Put each (url_hash, tier, time) in its tier, out of the others, whatever the
        horizon (an operator's `recrawl --now`)."""
        self._write(items, math.inf)

    def _write(self, items: Iterable[tuple[str, str, float]], before: float) -> None:
        """A ZADD and a ZREM per tier of each part touched."""
        latest = {url_hash: (tier, when) for url_hash, tier, when in items}
        pipe = self.client.pipeline(transaction=False)
        for index, hashes in self.parts.group(latest).items():
            for tier, key in self._parts[index].tiers.items():
                scores = {h: latest[h][1] for h in hashes
                          if latest[h][0] == tier and latest[h][1] < before}
                others = [h for h in hashes if h not in scores]
                if scores:
                    pipe.zadd(key, scores)
                if others:
                    pipe.zrem(key, *others)
        pipe.execute()

    def begin_load(self, until: float, now: float, full: bool = False) -> Load | None:
        """Move the horizon to `until` before reading the database's pages (`full`: a
        rebuild's, from the beginning, whatever runs); None while another load holds its
        lease."""
        lease = repr(now + LOAD_LEASE)
        since = BEGIN_LOAD(self.client, [self.horizon],
                           [repr(until), repr(now), lease, "1" if full else "0"])
        if since is None:
            return None
        return Load(float(since) if since else None, until, lease)

    def load(self, items: Iterable[tuple[str, str, float]]) -> None:
        """Put a load's pages in their tier (ZADD LT: a page made due earlier stays so)."""
        by_tier: dict[str, dict[str, float]] = {}
        for url_hash, tier, when in items:
            by_tier.setdefault(tier, {})[url_hash] = when
        pipe = self.client.pipeline(transaction=False)
        for tier, scores in by_tier.items():
            for index, hashes in self.parts.group(list(scores)).items():
                pipe.zadd(self._parts[index].tiers[tier], {h: scores[h] for h in hashes},
                          lt=True)
        pipe.execute()

    def end_load(self, load: Load, done: bool) -> None:
        """A load ends; `done`: it wrote every page (else the next load starts where it
        did)."""
        END_LOAD(self.client, [self.horizon], [repr(load.until), load.lease, "1" if done else "0"])

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

    def forget(self, url_hashes: list[str]) -> None:
        """Take pages out of every tier and claim."""
        pipe = self.client.pipeline(transaction=False)
        for index, hashes in self.parts.group(url_hashes).items():
            part = self._parts[index]
            for start in range(0, len(hashes), 1000):
                chunk = hashes[start:start + 1000]
                for tier, key in part.tiers.items():
                    pipe.zrem(key, *chunk)
                    pipe.zrem(part.claimed, *(f"{tier}|{h}" for h in chunk))
        pipe.execute()

    def pending(self, now: float) -> int:
        """Pages due now or claimed by a drain that has not finished: the crawl is not idle."""
        pipe = self.client.pipeline(transaction=False)
        for part in self._parts:
            for key in part.tiers.values():
                pipe.zcount(key, "-inf", now)
            pipe.zcard(part.claimed)
        return sum(int(n) for n in pipe.execute())
