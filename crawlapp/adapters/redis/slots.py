"""Politeness slots, for CRAWL_POLITENESS_KEY=domain or ip: one request at a time per key (a
registrable domain, a server address) across every fetch worker, the delay between them.

`P:slot:<key>` is "<holder> <time>": taken by a batch (`holder`, its id) until it gives it
back, `time` being the deadline after which a holder is taken for dead (its lease deadline);
or given back ("-"), `time` being the key's next allowed time. One key per command (a
script on one key), so the keys may spread over a cluster's slots. An entry expires an hour
after its last use. No rebuild: a lost slot is free at once, as after a restart of Redis the
frontier's own host times are (see ops/rebuild: hosts wait the longest delay first). A slot
taken or given back is acknowledged by replicas (adapters/redis/replicas.py,
CRAWL_REDIS_REPLICA_ACKS) before the batch fetches or ends, so a failover does not lose it.
"""

from __future__ import annotations

from collections.abc import Mapping

from crawlapp.adapters.redis import keys
from crawlapp.adapters.redis.client import Client
from crawlapp.adapters.redis.lua import Lua
from crawlapp.adapters.redis.replicas import ReplicaAcks

KEEP = 3600  # seconds an entry outlives its last use

# KEYS: the slot. ARGV: holder, now, deadline, seconds to keep the entry.
# Takes the slot unless a live holder has it. Returns -1 (held by another) or the time the
# key may next be asked (0 when there is no constraint).
_TAKE = Lua("""
local held = redis.call('GET', KEYS[1])
local next_time = 0
if held then
  local sep = string.find(held, ' ', 1, true)
  local who, at = string.sub(held, 1, sep - 1), tonumber(string.sub(held, sep + 1))
  if who ~= '-' and who ~= ARGV[1] and at > tonumber(ARGV[2]) then return -1 end
  if who == '-' then next_time = at end
end
redis.call('SET', KEYS[1], ARGV[1] .. ' ' .. ARGV[3], 'EX', ARGV[4])
return tostring(next_time)
""")

# KEYS: the slot. ARGV: holder, next allowed time, seconds to keep the entry.
# Gives the slot back if `holder` has it.
_GIVE_BACK = Lua("""
local held = redis.call('GET', KEYS[1])
if held and string.sub(held, 1, #ARGV[1] + 1) == ARGV[1] .. ' ' then
  redis.call('SET', KEYS[1], '- ' .. ARGV[2], 'EX', ARGV[3])
  return 1
end
return 0
""")


class PolitenessSlots:
    """The slots; taken and given back acknowledged by replicas per `acks`."""

    def __init__(self, client: Client, prefix: str, acks: ReplicaAcks | None = None) -> None:
        self.client = client
        self.prefix = prefix
        self._acks = acks or ReplicaAcks(client)

    def _key(self, key: str) -> str:
        return keys.SLOT.of(self.prefix, key=key)

    def take(self, wanted: list[str], holder: str, now: float, deadline: float
             ) -> dict[str, float | None]:
        """Take each slot for `holder` (one round trip): the key's next allowed time, or None
        for a slot another holder has."""
        pipe = self.client.pipeline(transaction=False)
        for key in wanted:
            _TAKE(pipe, [self._key(key)], [holder, now, deadline, KEEP])
        replies = self._acks.execute(pipe, map(self._key, wanted))
        return {key: None if float(got) < 0 else float(got)
                for key, got in zip(wanted, replies, strict=True)}

    def give_back(self, next_times: Mapping[str, float], holder: str) -> None:
        """Give back `holder`'s slots, each free from its next allowed time (one round trip)."""
        if not next_times:
            return
        pipe = self.client.pipeline(transaction=False)
        for key, at in next_times.items():
            _GIVE_BACK(pipe, [self._key(key)], [holder, repr(at), KEEP])
        self._acks.execute(pipe, map(self._key, next_times))
