"""Lua scripts of the Redis frontier. Each runs atomically on the keys of ONE shard.

Key layout of shard s (prefix P; the `{P:s}` hash tag keeps a shard on one cluster slot):
  {P:s}:ready   ZSET host -> time the host may next be fetched (hosts with queued URLs)
  {P:s}:idle    HASH host -> next allowed time of a host with nothing queued
  {P:s}:leases  ZSET host -> lease deadline (hosts handed to a fetch task)
  {P:s}:token   HASH host -> token of the current lease
  {P:s}:leased  HASH host -> "score\\tmember" of the URL handed out under the lease
  {P:s}:parked  ZSET host -> time the host comes back (inf while paused by an operator)
  {P:s}:why     HASH host -> why the host is parked
  {P:s}:paused  HASH host -> 1 for a host paused by an operator
  {P:s}:fails   HASH host -> failures in a row (absent after a success)
  {P:s}:q:HOST  ZSET member -> score, the host's URLs; lowest score pops first
  {P:s}:queued  STRING number of URLs waiting in the shard's host queues
A member is "depth\\t<h|s>path?query" (see encode_member). A host with URLs is in exactly
one of ready, leases, parked.
"""

# KEYS: none (every key is built from ARGV[1], the shard's key prefix "{P:s}")
# ARGV: prefix, now, then (host, member, score, replaces) quadruplets
# Adds URLs to their host queues (a URL already queued keeps its better score) and makes
# each host that is not ready, leased or parked ready at its remembered next time.
# `replaces`, when not empty, is the member the URL was queued under before (the same URL
# found again closer to a seed): the URL is requeued under the new member only if the old
# one was still waiting, so a URL being fetched right now is never queued twice.
# Returns the number of URLs newly queued.
ENQUEUE = """
local p, now = ARGV[1], tonumber(ARGV[2])
local added = 0
local touched = {}
for i = 3, #ARGV, 4 do
  local host, member, score, replaces = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  local q = p .. ':q:' .. host
  if replaces == '' then
    added = added + redis.call('ZADD', q, 'LT', score, member)
    touched[host] = true
  elseif redis.call('ZREM', q, replaces) == 1 then
    redis.call('ZADD', q, 'LT', score, member)
  end
end
for host, _ in pairs(touched) do
  if not redis.call('ZSCORE', p .. ':leases', host)
     and not redis.call('ZSCORE', p .. ':parked', host) then
    local nxt = tonumber(redis.call('HGET', p .. ':idle', host) or '0')
    redis.call('ZADD', p .. ':ready', 'NX', math.max(nxt, now), host)
    redis.call('HDEL', p .. ':idle', host)
  end
end
redis.call('INCRBY', p .. ':queued', added)
return added
"""

# KEYS: none (keys built from ARGV[1], the shard's key prefix)
# ARGV: prefix, now, max_hosts, lease_seconds, max_leased, token_prefix, lookahead, due_by
# First returns the URLs of expired leases to their queues and brings back parked hosts
# whose time has come. Then leases up to max_hosts hosts whose next time is at most
# now + lookahead, while fewer than max_leased hosts are leased, popping each host's best
# URL; but only once the batch is full or its earliest host is due by `due_by`, so
# batches grow without making any host late. A lease carries its host's next time: the
# fetch must not start before it.
# Returns {next_ready_time or -1, host1, token1, member1, not_before1, ...}.
DISPATCH = """
local p, now = ARGV[1], tonumber(ARGV[2])
local max_hosts, lease, max_leased = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local token_prefix, horizon, due_by = ARGV[6], now + tonumber(ARGV[7]), tonumber(ARGV[8])
local expired = redis.call('ZRANGEBYSCORE', p .. ':leases', '-inf', now, 'LIMIT', 0, 1000)
for _, host in ipairs(expired) do
  local held = redis.call('HGET', p .. ':leased', host)
  if held then
    local tab = string.find(held, '\\t', 1, true)
    local added = redis.call('ZADD', p .. ':q:' .. host, 'LT',
                             string.sub(held, 1, tab - 1), string.sub(held, tab + 1))
    redis.call('INCRBY', p .. ':queued', added)
  end
  redis.call('ZREM', p .. ':leases', host)
  redis.call('HDEL', p .. ':leased', host)
  redis.call('HDEL', p .. ':token', host)
  if redis.call('EXISTS', p .. ':q:' .. host) == 1 then
    redis.call('ZADD', p .. ':ready', now, host)
  end
end
local back = redis.call('ZRANGEBYSCORE', p .. ':parked', '-inf', now, 'WITHSCORES',
                        'LIMIT', 0, 1000)
for i = 1, #back, 2 do
  local host = back[i]
  redis.call('ZREM', p .. ':parked', host)
  redis.call('HDEL', p .. ':why', host)
  if redis.call('EXISTS', p .. ':q:' .. host) == 1 then
    redis.call('ZADD', p .. ':ready', back[i + 1], host)
  else
    redis.call('HSET', p .. ':idle', host, back[i + 1])
  end
end
local out = {-1}
local room = math.min(max_hosts, max_leased - redis.call('ZCARD', p .. ':leases'))
if room > 0 then
  local hosts = redis.call('ZRANGEBYSCORE', p .. ':ready', '-inf', horizon, 'WITHSCORES',
                           'LIMIT', 0, room)
  if #hosts > 0 and #hosts < 2 * max_hosts and tonumber(hosts[2]) > due_by then
    hosts = {}  -- not full and nothing due yet: let the batch grow until the next tick
  end
  for i = 1, #hosts, 2 do
    local host, ready_at = hosts[i], hosts[i + 1]
    redis.call('ZREM', p .. ':ready', host)
    local popped = redis.call('ZPOPMIN', p .. ':q:' .. host)
    if #popped == 0 then
      redis.call('HSET', p .. ':idle', host, ready_at)
    else
      local token = token_prefix .. ':' .. i
      local not_before = math.max(now, tonumber(ready_at))
      redis.call('ZADD', p .. ':leases', not_before + lease, host)
      redis.call('HSET', p .. ':token', host, token)
      redis.call('HSET', p .. ':leased', host, popped[2] .. '\\t' .. popped[1])
      redis.call('DECR', p .. ':queued')
      table.insert(out, host)
      table.insert(out, token)
      table.insert(out, popped[1])
      table.insert(out, tostring(not_before))
    end
  end
end
local first = redis.call('ZRANGE', p .. ':ready', 0, 0, 'WITHSCORES')
if #first > 0 then out[1] = first[2] end
return out
"""

# KEYS: none (keys built from ARGV[1], the shard's key prefix)
# ARGV: prefix, now, lease_seconds, then (host, token) pairs
# Confirms that each lease is still held and extends it. Returns, per pair, -1 for a
# lease no longer held, else the host's failures in a row.
RENEW = """
local p, now, lease = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local out = {}
for i = 4, #ARGV, 2 do
  local host, token = ARGV[i], ARGV[i + 1]
  if redis.call('HGET', p .. ':token', host) == token then
    redis.call('ZADD', p .. ':leases', now + lease, host)
    table.insert(out, tonumber(redis.call('HGET', p .. ':fails', host) or '0'))
  else
    table.insert(out, -1)
  end
end
return out
"""

# KEYS: none (keys built from ARGV[1], the shard's key prefix)
# ARGV: prefix, then (host, token, next_time, requeue, failures, park_reason) sextuplets;
# requeue is "1" to put the leased URL back (it was not fetched), "0" when it was handled;
# failures is the host's new count of failures in a row; park_reason, when not empty,
# parks the host until next_time.
# Ends each lease still held with that token: a host paused meanwhile is parked until
# resumed; else it becomes ready at next_time if it has URLs queued, or remembers
# next_time. Returns the number of leases ended.
RELEASE = """
local p = ARGV[1]
local ended = 0
for i = 2, #ARGV, 6 do
  local host, token, nxt, requeue = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  local failures, park_reason = ARGV[i + 4], ARGV[i + 5]
  if redis.call('HGET', p .. ':token', host) == token then
    if requeue == '1' then
      local held = redis.call('HGET', p .. ':leased', host)
      local tab = string.find(held, '\\t', 1, true)
      local added = redis.call('ZADD', p .. ':q:' .. host, 'LT',
                               string.sub(held, 1, tab - 1), string.sub(held, tab + 1))
      redis.call('INCRBY', p .. ':queued', added)
    end
    redis.call('ZREM', p .. ':leases', host)
    redis.call('HDEL', p .. ':leased', host)
    redis.call('HDEL', p .. ':token', host)
    if failures == '0' then
      redis.call('HDEL', p .. ':fails', host)
    else
      redis.call('HSET', p .. ':fails', host, failures)
    end
    if redis.call('HEXISTS', p .. ':paused', host) == 1 then
      redis.call('ZADD', p .. ':parked', 'inf', host)
      redis.call('HSET', p .. ':why', host, 'paused')
    elseif park_reason ~= '' then
      redis.call('ZADD', p .. ':parked', nxt, host)
      redis.call('HSET', p .. ':why', host, park_reason)
    elseif redis.call('EXISTS', p .. ':q:' .. host) == 1 then
      redis.call('ZADD', p .. ':ready', nxt, host)
    else
      redis.call('HSET', p .. ':idle', host, nxt)
    end
    ended = ended + 1
  end
end
return ended
"""

# KEYS: none (keys built from ARGV[1], the shard's key prefix)
# ARGV: prefix, host, reason
# Pauses a host: it is parked at once if waiting, or when its current lease ends.
PAUSE = """
local p, host, reason = ARGV[1], ARGV[2], ARGV[3]
redis.call('HSET', p .. ':paused', host, 1)
if not redis.call('ZSCORE', p .. ':leases', host) then
  local at = redis.call('ZSCORE', p .. ':ready', host)
  redis.call('ZREM', p .. ':ready', host)
  if at then redis.call('HSET', p .. ':idle', host, at) end
  redis.call('ZADD', p .. ':parked', 'inf', host)
  redis.call('HSET', p .. ':why', host, reason)
end
return 1
"""

# KEYS: none (keys built from ARGV[1], the shard's key prefix)
# ARGV: prefix, host, now
# Resumes a paused or parked host: it is ready now if it has URLs queued.
# Returns 1 if the host was paused or parked.
RESUME = """
local p, host, now = ARGV[1], ARGV[2], tonumber(ARGV[3])
local was = redis.call('HDEL', p .. ':paused', host)
if redis.call('ZREM', p .. ':parked', host) == 1 then
  was = 1
  redis.call('HDEL', p .. ':why', host)
  redis.call('HDEL', p .. ':fails', host)
  local nxt = tonumber(redis.call('HGET', p .. ':idle', host) or '0')
  if redis.call('EXISTS', p .. ':q:' .. host) == 1 then
    redis.call('ZADD', p .. ':ready', math.max(nxt, now), host)
    redis.call('HDEL', p .. ':idle', host)
  end
end
return was
"""

# KEYS: none (keys built from ARGV[1], the shard's key prefix)
# ARGV: prefix, host, then the members to remove (none: the host's whole queue)
# Removes URLs from a host's queue; a host left with nothing queued goes from ready to idle
# (keeping its next time). A URL leased right now is not in the queue and is not touched.
# Returns the number of URLs removed.
DROP = """
local p, host = ARGV[1], ARGV[2]
local q = p .. ':q:' .. host
local removed = 0
if #ARGV > 2 then
  for i = 3, #ARGV, 500 do
    removed = removed + redis.call('ZREM', q, unpack(ARGV, i, math.min(i + 499, #ARGV)))
  end
else
  removed = redis.call('ZCARD', q)
  redis.call('DEL', q)
end
redis.call('DECRBY', p .. ':queued', removed)
if redis.call('EXISTS', q) == 0 then
  local at = redis.call('ZSCORE', p .. ':ready', host)
  if at then
    redis.call('ZREM', p .. ':ready', host)
    redis.call('HSET', p .. ':idle', host, at)
  end
end
return removed
"""
