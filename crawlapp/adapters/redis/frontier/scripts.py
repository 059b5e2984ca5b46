"""Lua scripts of the Redis frontier. Each runs atomically on the keys of ONE shard.

Keys of shard s (adapters/redis/keys.py; the hash tag `{P:f:s}` keeps a shard on one
cluster slot):
  {P:f:s}:ready   ZSET host -> time the host may next be fetched (hosts with queued URLs)
  {P:f:s}:idle    ZSET host -> next allowed time of a host with nothing queued, dropped
                  once passed (a time past is no constraint)
  {P:f:s}:leases  ZSET host -> lease deadline (hosts handed to a fetch task)
  {P:f:s}:token   HASH host -> token of the current lease
  {P:f:s}:leased  HASH host -> the URLs handed out under the lease, "score\\tmember" lines
  {P:f:s}:parked  ZSET host -> time the host comes back (inf while paused by an operator)
  {P:f:s}:why     HASH host -> why the host is parked
  {P:f:s}:paused  HASH host -> 1 for a host paused by an operator
  {P:f:s}:fails   HASH host -> failures in a row (absent after a success)
  {P:f:s}:q:HOST  ZSET member -> score, the host's URLs; lowest score pops first
  {P:f:s}:queued  STRING number of URLs waiting in the shard's host queues
  {P:f:s}:boost   HASH host -> authority (ops/authority.py): which due hosts go first when
                  more are due than a dispatch takes
  {P:f:s}:warm    ZSET host -> when its warm session began: hosts leased lately, which go
                  first among those due (their connections are still open)
  {P:f:s}:yield   HASH host -> token of its lease asked to end early (ENQUEUE), dropped as
                  the lease ends (RELEASE; a lease that expires leaves it, under a token
                  no lease has any more)
A member is "depth\\t<h|s>path?query", "depth.hops\\t..." off scope (see encode_member).

A host with URLs queued is in exactly one of ready, leases, parked:

  idle --enqueue--> ready --dispatch--> leases --release--> ready (URLs left) or idle (none)
   ^                  |                  |  |
   `--dispatch, drop--'                  |  `--release, parking or paused--> parked
      (queue empty)                      `--lease expired (dispatch): URLs requeued--> ready
  (a lease of several URLs ends with the release of its last URL)
  parked --its time comes (dispatch), or resume--> ready (URLs queued) or idle (none)
  pause: a ready or idle host is parked at once, a leased one when its lease ends

A script that works on hosts it learns while running (from ARGV or from a sorted set) gets
the prefix of the shard's host queues, `{P:f:s}:q:`, as a KEYS entry and appends the host to
it: the queue key has the shard's hash tag, so it is in the same slot as the other KEYS.
"""

from crawlapp.adapters.redis.lua import Lua

# Lua functions the scripts that end leases share (they need their locals leases, token,
# leased, queued and q). A lease holds one or more URLs of its host, which `leased` lists
# (a line "score<TAB>member" each). put_back returns a URL to its host's queue, where it keeps its
# better score; or, with `behind`, goes after the queue's last URL (a URL to try again after
# the host's others). hand_back takes one URL out of `host`'s lease, putting it back with
# `back`, and returns how many URLs the lease still holds; end_lease ends the lease, with
# `back` putting every URL it still holds back.
END_LEASE = """
local function held_urls(host)
  local urls = {}
  for line in string.gmatch(redis.call('HGET', leased, host) or '', '[^\\n]+') do
    local tab = string.find(line, '\\t', 1, true)
    table.insert(urls, {string.sub(line, 1, tab - 1), string.sub(line, tab + 1)})
  end
  return urls
end
local function put_back(host, score, member, behind)
  score = tonumber(score)
  if behind then
    local last = redis.call('ZRANGE', q .. host, -1, -1, 'WITHSCORES')
    if #last > 0 then score = math.max(score, tonumber(last[2]) + 0.001) end
  end
  redis.call('INCRBY', queued, redis.call('ZADD', q .. host, 'LT', score, member))
end
local function hand_back(host, member, back, behind)
  local left = {}
  for _, url in ipairs(held_urls(host)) do
    if url[2] == member then
      if back then put_back(host, url[1], member, behind) end
    else
      table.insert(left, url[1] .. '\\t' .. url[2])
    end
  end
  if #left > 0 then redis.call('HSET', leased, host, table.concat(left, '\\n')) end
  return #left
end
local function end_lease(host, back)
  if back then
    for _, url in ipairs(held_urls(host)) do put_back(host, url[1], url[2], false) end
  end
  redis.call('ZREM', leases, host)
  redis.call('HDEL', leased, host)
  redis.call('HDEL', token, host)
end
"""

# KEYS: ready, idle, leases, parked, queued, host queue prefix, token, leased, yield
# ARGV: now, margin, "1" to leave out URLs their host's lease holds, then (host, member, score,
# replaces) quadruplets
# Adds URLs to their host queues (a URL already queued keeps its better score) and makes
# each host that is not ready, leased or parked ready at its remembered next time. A leased
# host given a new URL whose score is lower by more than `margin` than the worst its lease
# holds is asked to yield (`yield`: host -> its lease's token): its fetch ends the lease
# before that URL's turn, which puts it back, and the new one goes with the next lease.
# `replaces`, when not empty, is the member the URL was queued under before (the same URL
# found again closer to a seed): the URL is requeued under the new member only if the old
# one was still waiting, so a URL being fetched right now is never queued twice. Nor, when
# asked (a re-crawl come due, a rebuild), is a URL its host's lease holds (at whatever depth):
# that fetch's outcome plans what comes next (a re-crawl, a retry, or the URL put back), and a
# second copy queued meanwhile would be fetched again after it, and then each copy's fetch
# would plan one more (a URL requeued by a rebuild while a batch that had it was still on its
# way). A lost batch's URLs are queued whatever their leases, which are as lost.
# Returns the number of URLs newly queued.
ENQUEUE = Lua("""
local ready, idle, leases, parked, queued, q = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local token, leased, yielding = KEYS[7], KEYS[8], KEYS[9]
local now, margin, unless_leased = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3] == '1'
local added = 0
local touched = {}  -- host -> the lowest score of the URLs it was newly given
local held = {}  -- host -> the URLs (members less their depth) its lease holds
local function in_lease(host, member)
  if held[host] == nil then
    held[host] = {}
    for line in string.gmatch(redis.call('HGET', leased, host) or '', '[^\\n]+') do
      held[host][string.match(line, '^[^\\t]*\\t[^\\t]*\\t(.*)$')] = true
    end
  end
  return held[host][string.sub(member, string.find(member, '\\t', 1, true) + 1)] == true
end
local function worst_held(host)
  local worst = -math.huge
  for line in string.gmatch(redis.call('HGET', leased, host) or '', '[^\\n]+') do
    worst = math.max(worst, tonumber(string.sub(line, 1, string.find(line, '\\t', 1, true) - 1)))
  end
  return worst
end
for i = 4, #ARGV, 4 do
  local host, member, score, replaces = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  if unless_leased and in_lease(host, member) then
    -- being fetched: not queued again
  elseif replaces == '' then
    local new = redis.call('ZADD', q .. host, 'LT', score, member)
    added = added + new
    touched[host] = math.min(touched[host] or math.huge, new == 1 and tonumber(score) or math.huge)
  elseif redis.call('ZREM', q .. host, replaces) == 1 then
    redis.call('ZADD', q .. host, 'LT', score, member)
  end
end
for host, best in pairs(touched) do
  if redis.call('ZSCORE', leases, host) then
    if best + margin < worst_held(host) then
      redis.call('HSET', yielding, host, redis.call('HGET', token, host))
    end
  elseif not redis.call('ZSCORE', parked, host) then
    local nxt = tonumber(redis.call('ZSCORE', idle, host) or '0')
    redis.call('ZADD', ready, 'NX', math.max(nxt, now), host)
    redis.call('ZREM', idle, host)
  end
end
redis.call('INCRBY', queued, added)
return added
""")

# DISPATCH in steps: each step is a Lua function of its own, on the locals of DISPATCH_KEYS
# (and END_LEASE's functions), and DISPATCH's main body calls them in order, so that each
# step can be read, and run (tests/integration/test_dispatch_steps.py), alone. Each says
# first which keys it reads and writes.

# The keys of DISPATCH, in the order of ShardKeys.dispatch_keys.
DISPATCH_KEYS = """
local ready, idle, leases, token, leased = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local parked, why, queued, q, boost = KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10]
local dispatched, warm = KEYS[11], KEYS[12]
"""


def dispatch_script(*steps: str, main: str) -> Lua:
    """A script on the keys of DISPATCH: the functions of `steps`, in order (a step after
    those it calls), then `main`."""
    return Lua(DISPATCH_KEYS + "".join(steps) + main)


# Reads dispatched. The reply of the shard's last dispatch if `call` (the token prefix) made it,
# else nil: a dispatch called again with the call of the last (its reply was lost: a
# failover, a connection cut) returns that reply and changes nothing, so the caller gets the
# leases it took instead of leaving them to expire.
REPLAY_LOST_REPLY = """
local function replay_lost_reply(call)
  if call == '' then return nil end
  local last = redis.call('GET', dispatched)
  if not last then return nil end
  local cut = string.find(last, '\\n', 1, true)
  if string.sub(last, 1, cut - 1) == call then
    return cmsgpack.unpack(string.sub(last, cut + 1))
  end
end
"""

# Reads and writes leases, token, leased, the host queues, queued; writes ready. Ends up to
# 1000 leases whose deadline is past, their URLs back in their queues (END_LEASE), each host
# with URLs queued ready `now`.
RETURN_EXPIRED = """
local function return_expired(now)
  for _, host in ipairs(redis.call('ZRANGEBYSCORE', leases, '-inf', now, 'LIMIT', 0, 1000)) do
    end_lease(host, true)
    if redis.call('EXISTS', q .. host) == 1 then
      redis.call('ZADD', ready, now, host)
    end
  end
end
"""

# Reads and writes parked, why; reads the host queues; writes ready, idle. Up to 1000 hosts
# parked until `now` or before come back at that time: ready with URLs queued, else idle.
BRING_BACK_PARKED = """
local function bring_back_parked(now)
  local back = redis.call('ZRANGEBYSCORE', parked, '-inf', now, 'WITHSCORES', 'LIMIT', 0, 1000)
  for i = 1, #back, 2 do
    local host = back[i]
    redis.call('ZREM', parked, host)
    redis.call('HDEL', why, host)
    if redis.call('EXISTS', q .. host) == 1 then
      redis.call('ZADD', ready, back[i + 1], host)
    else
      redis.call('ZADD', idle, back[i + 1], host)
    end
  end
end
"""

# Reads and writes idle. Forgets up to 1000 idle hosts' next times that have passed by `now`.
FORGET_IDLE = """
local function forget_idle(now)
  local passed = redis.call('ZRANGEBYSCORE', idle, '-inf', now, 'LIMIT', 0, 1000)
  if #passed > 0 then redis.call('ZREM', idle, unpack(passed)) end
end
"""

# Reads and writes warm. A host is warm from a lease on (`warm`: host -> when its session
# began) until its session is warm_seconds old or warm_hosts hosts joined after it (LEASE_URLS
# ends those); with warm_hosts 0, none is (ports.Frontier.dispatch says why). Ends the
# sessions warm_seconds old by `now`; returns the warm hosts, the oldest session first.
WARM_SESSIONS = """
local function warm_sessions(now, warm_hosts, warm_seconds)
  if not (warm_hosts > 0) then return {} end
  redis.call('ZREMRANGEBYSCORE', warm, '-inf', now - warm_seconds)
  return redis.call('ZRANGE', warm, 0, -1)
end
"""

# Reads boost. The first `room` of the candidates in `window` ((host, ready time) pairs, in one
# list): the warm hosts (`is_warm`: host -> 1) first, then those with the highest boost
# (ties: the earliest, then by name).
FIRST_BY_BOOST = """
local function first_by_boost(window, is_warm, room)
  local names = {}
  for i = 1, #window, 2 do table.insert(names, window[i]) end
  local boosts = redis.call('HMGET', boost, unpack(names))
  local order = {}
  for n, host in ipairs(names) do
    table.insert(order, {host, tonumber(window[2 * n]), tonumber(boosts[n] or '0'),
                         window[2 * n], is_warm[host] or 0})
  end
  table.sort(order, function(a, b)
    if a[5] ~= b[5] then return a[5] > b[5] end
    if a[3] ~= b[3] then return a[3] > b[3] end
    if a[2] ~= b[2] then return a[2] < b[2] end
    return a[1] < b[1]
  end)
  local hosts = {}
  for n = 1, room do
    table.insert(hosts, order[n][1])
    table.insert(hosts, order[n][4])  -- the time as Redis wrote it: no precision lost
  end
  return hosts
end
"""

# Reads ready, boost (FIRST_BY_BOOST); reads and writes warm (WARM_SESSIONS). The hosts to
# lease, as (host, ready time) pairs in one list, and the earliest candidate's ready time.
# The candidates are the earliest BOOST_WINDOW x max_hosts hosts ready by `horizon` (not x
# room: a slot freed alone must not shrink the choice to the hosts that waited longest) and
# the warm hosts ready by then; when more than `room`, the first `room` by FIRST_BY_BOOST.
CHOOSE_CANDIDATES = """
local BOOST_WINDOW = 4
local function choose_candidates(now, horizon, room, max_hosts, warm_hosts, warm_seconds)
  local window = redis.call('ZRANGEBYSCORE', ready, '-inf', horizon, 'WITHSCORES',
                            'LIMIT', 0, BOOST_WINDOW * max_hosts)
  local is_warm = {}
  local sessions = warm_sessions(now, warm_hosts, warm_seconds)
  if #sessions > 0 then
    local listed = {}
    for i = 1, #window, 2 do listed[window[i]] = true end
    for _, host in ipairs(sessions) do
      is_warm[host] = 1
      local at = not listed[host] and redis.call('ZSCORE', ready, host)
      if at and tonumber(at) <= horizon then
        table.insert(window, host)
        table.insert(window, at)
      end
    end
  end
  if #window > 2 * room then return first_by_boost(window, is_warm, room), window[2] end
  return window, window[2]
end
"""

# Reads no key. `hosts` ((host, ready time) pairs), or none while they are fewer than
# max_hosts and the earliest candidate's ready time is after `due_by`: batches grow without
# making any host late.
HOLD_UNTIL_FULL_OR_DUE = """
local function hold_until_full_or_due(hosts, earliest, max_hosts, due_by)
  if #hosts > 0 and #hosts < 2 * max_hosts and tonumber(earliest) > due_by then
    return {}  -- not full and nothing due yet: let the batch grow until the next tick
  end
  return hosts
end
"""

# Writes ready, idle, leases, token, leased, queued, warm, the host queues. Leases each of
# `hosts` ((host, ready time) pairs) under the token "call:n", from its ready time (or `now`
# if later: the fetch must not start before it) for `lease` seconds; a host with nothing
# queued goes idle instead. While the hosts are fewer than max_hosts, each lease takes up to
# per_lease of its host's best URLs, as many as keep the batch within max_hosts URLs (the
# fetch asks them one after the other), else its best one; never one whose score is above
# the best one's by more than `margin`: a URL well ahead of the rest (a new URL or a hub
# before re-crawls) is leased alone, so that its page goes down the pipeline at once. A host
# leased begins a warm session unless in one; with more than warm_hosts, the oldest end.
# Appends to `out` (host, token, member, not_before) per URL, in the order to fetch them.
LEASE_URLS = """
local function lease_urls(out, hosts, now, lease, call, max_hosts, per_lease, warm_hosts,
                          margin)
  local take = 1
  if #hosts > 0 and #hosts < 2 * max_hosts then
    take = math.max(1, math.min(per_lease, math.floor(2 * max_hosts / #hosts)))
  end
  for i = 1, #hosts, 2 do
    local host, ready_at = hosts[i], hosts[i + 1]
    redis.call('ZREM', ready, host)
    local popped = redis.call('ZPOPMIN', q .. host, take)
    for j = #popped - 1, 3, -2 do  -- the URLs well behind the best go back
      if tonumber(popped[j + 1]) > tonumber(popped[2]) + margin then
        redis.call('ZADD', q .. host, popped[j + 1], popped[j])
        popped[j + 1], popped[j] = nil, nil
      end
    end
    if #popped == 0 then
      redis.call('ZADD', idle, ready_at, host)
    else
      local tok = call .. ':' .. i
      local not_before = math.max(now, tonumber(ready_at))
      local held = {}
      redis.call('ZADD', leases, not_before + lease, host)
      redis.call('HSET', token, host, tok)
      for j = 1, #popped, 2 do
        table.insert(held, popped[j + 1] .. '\\t' .. popped[j])
        table.insert(out, host)
        table.insert(out, tok)
        table.insert(out, popped[j])
        table.insert(out, tostring(not_before))
      end
      redis.call('HSET', leased, host, table.concat(held, '\\n'))
      redis.call('DECRBY', queued, #held)
      if warm_hosts > 0 then redis.call('ZADD', warm, 'NX', now, host) end
    end
  end
  local over = warm_hosts > 0 and redis.call('ZCARD', warm) - warm_hosts or 0
  if over > 0 then redis.call('ZREMRANGEBYRANK', warm, 0, over - 1) end
end
"""

# Reads ready. The earliest ready time of a host not leased, -1 with none.
NEXT_READY_TIME = """
local function next_ready_time()
  local first = redis.call('ZRANGE', ready, 0, 0, 'WITHSCORES')
  return first[2] or -1
end
"""

# Writes dispatched. Keeps the reply `out` of `call` as long as a lease, for REPLAY_LOST_REPLY.
RECORD_REPLY = """
local function record_reply(call, out, lease)
  if call == '' then return end
  redis.call('SET', dispatched, call .. '\\n' .. cmsgpack.pack(out), 'EX',
             math.max(1, math.ceil(lease)))
end
"""

# KEYS: DISPATCH_KEYS (ready, idle, leases, token, leased, parked, why, queued, host queue
#       prefix, boost, dispatched, warm)
# ARGV: now, max_hosts, lease_seconds, max_leased, call (the token prefix), lookahead, due_by,
#       per_lease, warm_hosts, warm_seconds, margin
# The steps above in order: leases up to max_hosts hosts ready by now + lookahead, while
# fewer than max_leased hosts of the shard are leased, once the batch is full or due.
# Returns {next_ready_time or -1, host1, token1, member1, not_before1, ...}: a lease of
# several URLs is one such quadruplet per URL, in the order to fetch them.
DISPATCH = dispatch_script(
    END_LEASE, REPLAY_LOST_REPLY, RETURN_EXPIRED, BRING_BACK_PARKED, FORGET_IDLE, WARM_SESSIONS,
    FIRST_BY_BOOST, CHOOSE_CANDIDATES, HOLD_UNTIL_FULL_OR_DUE, LEASE_URLS, NEXT_READY_TIME,
    RECORD_REPLY, main="""
local now, max_hosts, lease = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local max_leased, call, horizon = tonumber(ARGV[4]), ARGV[5], now + tonumber(ARGV[6])
local due_by, per_lease = tonumber(ARGV[7]), tonumber(ARGV[8])
local warm_hosts, warm_seconds, margin = tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11])
local replayed = replay_lost_reply(call)
if replayed then return replayed end
return_expired(now)
bring_back_parked(now)
forget_idle(now)
local out = {-1}
local room = math.min(max_hosts, max_leased - redis.call('ZCARD', leases))
if room > 0 then
  local hosts, earliest = choose_candidates(now, horizon, room, max_hosts, warm_hosts,
                                            warm_seconds)
  hosts = hold_until_full_or_due(hosts, earliest, max_hosts, due_by)
  lease_urls(out, hosts, now, lease, call, max_hosts, per_lease, warm_hosts, margin)
end
out[1] = next_ready_time()
record_reply(call, out, lease)
return out
""")

# KEYS: leases, token, fails
# ARGV: now, lease_seconds, then (host, token) pairs
# Confirms that each lease is still held and extends it. Returns, per pair, -1 for a
# lease no longer held, else the host's failures in a row.
RENEW = Lua("""
local leases, token, fails = KEYS[1], KEYS[2], KEYS[3]
local now, lease = tonumber(ARGV[1]), tonumber(ARGV[2])
local out = {}
for i = 3, #ARGV, 2 do
  local host, tok = ARGV[i], ARGV[i + 1]
  if redis.call('HGET', token, host) == tok then
    redis.call('ZADD', leases, now + lease, host)
    table.insert(out, tonumber(redis.call('HGET', fails, host) or '0'))
  else
    table.insert(out, -1)
  end
end
return out
""")

# KEYS: ready, idle, leases, token, leased, parked, why, paused, fails, queued,
#   host queue prefix, yield
# ARGV: (host, token, next_time, requeue, failures, park_reason, member) septuplets, one
# per URL of a lease; requeue is "1" to put the URL (`member`) back (it was not fetched),
# "2" to put it back behind the host's other URLs (to try it again), "0" when it was
# handled; failures is the host's new count of failures in a row; park_reason, when not
# empty, parks the host until next_time.
# Takes each URL out of its lease if still held with that token; the release of a lease's
# last URL ends it, with the host's state from that release: a host paused meanwhile is
# parked until resumed; else it becomes ready at next_time if it has URLs queued, or
# remembers next_time. Returns the number of leases ended.
RELEASE = Lua("""
local ready, idle, leases, token, leased = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local parked, why, paused, fails = KEYS[6], KEYS[7], KEYS[8], KEYS[9]
local queued, q, yielding = KEYS[10], KEYS[11], KEYS[12]
""" + END_LEASE + """
local ended = 0
for i = 1, #ARGV, 7 do
  local host, tok, nxt, requeue = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  local failures, park_reason, member = ARGV[i + 4], ARGV[i + 5], ARGV[i + 6]
  local held = redis.call('HGET', token, host) == tok
  if not held and requeue == '0' then
    -- answered after its lease expired (its worker rode out a failover): the URL, put back
    -- by the expiry, is not fetched again unless leased again already, and a host waiting
    -- is not asked before its next time
    if redis.call('ZREM', q .. host, member) == 1 then redis.call('DECR', queued) end
    if redis.call('ZSCORE', ready, host) then redis.call('ZADD', ready, 'GT', nxt, host) end
  elseif held and hand_back(host, member, requeue ~= '0', requeue == '2') == 0 then
    end_lease(host, false)
    redis.call('HDEL', yielding, host)
    if failures == '0' then
      redis.call('HDEL', fails, host)
    else
      redis.call('HSET', fails, host, failures)
    end
    if redis.call('HEXISTS', paused, host) == 1 then
      redis.call('ZADD', parked, 'inf', host)
      redis.call('HSET', why, host, 'paused')
    elseif park_reason ~= '' then
      redis.call('ZADD', parked, nxt, host)
      redis.call('HSET', why, host, park_reason)
    elseif redis.call('EXISTS', q .. host) == 1 then
      redis.call('ZADD', ready, nxt, host)
    else
      redis.call('ZADD', idle, nxt, host)
    end
    ended = ended + 1
  end
end
return ended
""")

# KEYS: ready, idle, leases, parked, why, paused
# ARGV: host, reason
# Pauses a host: it is parked at once if waiting, or when its current lease ends.
PAUSE = Lua("""
local ready, idle, leases = KEYS[1], KEYS[2], KEYS[3]
local parked, why, paused = KEYS[4], KEYS[5], KEYS[6]
local host, reason = ARGV[1], ARGV[2]
redis.call('HSET', paused, host, 1)
if not redis.call('ZSCORE', leases, host) then
  local at = redis.call('ZSCORE', ready, host)
  redis.call('ZREM', ready, host)
  if at then redis.call('ZADD', idle, at, host) end
  redis.call('ZADD', parked, 'inf', host)
  redis.call('HSET', why, host, reason)
end
return 1
""")

# KEYS: ready, idle, parked, why, paused, fails, the host's queue
# ARGV: host, now
# Resumes a paused or parked host: it is ready now if it has URLs queued.
# Returns 1 if the host was paused or parked.
RESUME = Lua("""
local ready, idle, parked, why = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local paused, fails, q = KEYS[5], KEYS[6], KEYS[7]
local host, now = ARGV[1], tonumber(ARGV[2])
local was = redis.call('HDEL', paused, host)
if redis.call('ZREM', parked, host) == 1 then
  was = 1
  redis.call('HDEL', why, host)
  redis.call('HDEL', fails, host)
  local nxt = tonumber(redis.call('ZSCORE', idle, host) or '0')
  if redis.call('EXISTS', q) == 1 then
    redis.call('ZADD', ready, math.max(nxt, now), host)
    redis.call('ZREM', idle, host)
  end
end
return was
""")

# A Lua function of DROP and REMOVE_HOST (their locals q and queued): takes ARGV[2..] out
# of the host queue q, counting them off the shard's queued URLs; returns how many.
_REMOVE_ARGV = """
local function remove_argv()
  local removed = 0
  for i = 2, #ARGV, 500 do
    removed = removed + redis.call('ZREM', q, unpack(ARGV, i, math.min(i + 499, #ARGV)))
  end
  redis.call('DECRBY', queued, removed)
  return removed
end
"""

# KEYS: ready, idle, queued, the host's queue
# ARGV: host, then the members to remove (none: the host's whole queue)
# Removes URLs from a host's queue; a host left with nothing queued goes from ready to idle
# (keeping its next time). A URL leased right now is not in the queue and is not touched.
# Returns the number of URLs removed.
DROP = Lua("""
local ready, idle, queued, q = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local host = ARGV[1]
local removed = 0
""" + _REMOVE_ARGV + """
if #ARGV > 1 then
  removed = remove_argv()
else
  removed = redis.call('ZCARD', q)
  redis.call('DEL', q)
  redis.call('DECRBY', queued, removed)
end
if redis.call('EXISTS', q) == 0 then
  local at = redis.call('ZSCORE', ready, host)
  if at then
    redis.call('ZREM', ready, host)
    redis.call('ZADD', idle, at, host)
  end
end
return removed
""")

# The KEYS and host of MERGE_HOST and REMOVE_HOST, which move a host between shards.
_HOST_STATE_KEYS = """
local ready, idle, parked, why, paused, fails = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local boost, queued, q = KEYS[7], KEYS[8], KEYS[9]
local host = ARGV[1]
"""

# KEYS: ready, idle, parked, why, paused, fails, boost, queued, the host's queue
# ARGV: host, ready_at, idle_at, parked_until, why, paused, fails, boost (each '' when the
#       shard it comes from had none), then (score, member) pairs
# Takes in a host moved from another shard (a frontier laid out in another number of
# shards): its URLs (one queued here already keeps its better score), its parking, failures
# and boost, and its next time, the later of the two shards' when both knew it. A host
# parked in either shard stays parked; else it is ready with URLs queued, idle without.
# Run once per chunk of the host's URLs; returns the number of URLs newly queued.
MERGE_HOST = Lua(_HOST_STATE_KEYS + """
local added = 0
for i = 9, #ARGV, 2 do
  added = added + redis.call('ZADD', q, 'LT', ARGV[i], ARGV[i + 1])
end
redis.call('INCRBY', queued, added)
for n, key in ipairs({why, paused, fails, boost}) do
  if ARGV[n + 4] ~= '' then redis.call('HSET', key, host, ARGV[n + 4]) end
end
if ARGV[4] ~= '' then redis.call('ZADD', parked, 'GT', ARGV[4], host) end
local nxt = 0
for _, at in ipairs({ARGV[2], ARGV[3], redis.call('ZSCORE', ready, host) or '',
                     redis.call('ZSCORE', idle, host) or ''}) do
  if at ~= '' then nxt = math.max(nxt, tonumber(at)) end
end
redis.call('ZREM', ready, host)
redis.call('ZREM', idle, host)
if not redis.call('ZSCORE', parked, host) then
  if redis.call('EXISTS', q) == 1 then
    redis.call('ZADD', ready, nxt, host)
  elseif nxt > 0 then
    redis.call('ZADD', idle, nxt, host)
  end
end
return added
""")

# KEYS: ready, idle, parked, why, paused, fails, boost, queued, the host's queue
# ARGV: host, then the members MERGE_HOST took to the host's new shard
# Takes those URLs out of the host's queue here; a host left with none is forgotten here
# (its state went with them). Returns the number of URLs removed.
REMOVE_HOST = Lua(_HOST_STATE_KEYS + """
""" + _REMOVE_ARGV + """
local removed = remove_argv()
if redis.call('EXISTS', q) == 0 then
  for _, key in ipairs({ready, idle, parked}) do redis.call('ZREM', key, host) end
  for _, key in ipairs({why, paused, fails, boost}) do redis.call('HDEL', key, host) end
end
return removed
""")
