"""Tier 1 of URL dedup: a Bloom filter on Redis bitmaps, one round trip per batch.

"Definitely new" is certain; "maybe seen" is wrong at the filter's false-positive rate
and must be confirmed by tier 2 (the database's unique url_hash).

Items are arbitrary bytes; the crawler passes the 16 bytes of its URL hash,
`bytes.fromhex(crawlapp.core.urls.url_hash(url))`.

Key layout (prefix P): `P:bloom:<part>` (keys.BLOOM) is shard s of the filter, a bitmap of
`bits_per_shard` bits, `<part>` the hash tag of part s (parts.py). Each item touches one key
only, so the shards spread evenly over a cluster's masters; the filter has at least
CRAWL_REDIS_PARTS shards.

The client hashes; a Lua script per shard gets the items' (start, step) pairs packed as
little-endian uint32s in one argument and walks offset_i = (start + i * step) mod m.
Sending BITFIELD directly would take four arguments per bit, and redis-py's packing of
those costs the client more than the script costs Redis.

Nothing to forget: the filter has a fixed size. A rebuild adds every URL row again.
`P:dedup-alive`, next to the filter, notes that the Redis of the dedup role (the filter,
content claims, canonical pointers, re-crawl sets; CRAWL_DEDUP_REDIS_URL) holds them whole:
a Redis restarted empty has no such note, and these are rebuilt from the database.
"""

from __future__ import annotations

import struct
from collections import defaultdict
from collections.abc import Sequence

from crawlapp.adapters.redis import keys
from crawlapp.adapters.redis.client import Client
from crawlapp.adapters.redis.lua import Lua
from crawlapp.adapters.redis.parts import tag
from crawlapp.core.bloom import BloomShape, probe

# KEYS: the shard's bitmap. ARGV: bits_per_shard, hashes, packed (start, step) pairs.
# Returns 1 (maybe seen) or 0 (definitely new) per item, stopping at an item's first 0 bit.
CHECK = Lua("""
local key, m, k, pairs = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
local seen = {}
for pos = 1, #pairs, 8 do
  local bit, step = struct.unpack('<I4I4', pairs, pos)
  local found = 1
  for _ = 1, k do
    if redis.call('GETBIT', key, bit) == 0 then
      found = 0
      break
    end
    bit = bit + step
    if bit >= m then bit = bit - m end
  end
  seen[#seen + 1] = found
end
return seen
""")

# KEYS and ARGV as CHECK. Sets each item's k bits with one BITFIELD, which returns the
# bits as they were: the item was maybe seen iff they were all 1. Items go in order, so
# a repeat later in the batch finds the bits of the earlier one.
CHECK_AND_ADD = Lua("""
local key, m, k, pairs = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
local seen, ops = {}, {}
for i = 0, k - 1 do
  ops[4 * i + 1], ops[4 * i + 2], ops[4 * i + 4] = 'SET', 'u1', 1
end
for pos = 1, #pairs, 8 do
  local bit, step = struct.unpack('<I4I4', pairs, pos)
  for i = 0, k - 1 do
    ops[4 * i + 3] = bit
    bit = bit + step
    if bit >= m then bit = bit - m end
  end
  local old = redis.call('BITFIELD', key, unpack(ops, 1, 4 * k))
  local found = 1
  for i = 1, k do
    if old[i] == 0 then
      found = 0
      break
    end
  end
  seen[#seen + 1] = found
end
return seen
""")


# KEYS: a shard's bitmap. ARGV: its length in bytes. Makes it that long (zero bits added) if it
# is shorter; the bits it holds stay.
ALLOCATE = Lua("""
if redis.call('STRLEN', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('SETRANGE', KEYS[1], tonumber(ARGV[1]) - 1, '\\0')
end
return 0
""")


class RedisBloom:
    """A Bloom filter of `shape` under `key_prefix`; True means maybe seen."""

    def __init__(self, client: Client, key_prefix: str, shape: BloomShape,
                 items_per_call: int = 1000) -> None:
        """`items_per_call` bounds the work of one script call, so Redis is never blocked
        for long; a batch still takes one round trip."""
        if items_per_call < 1:
            raise ValueError(f"items_per_call must be positive, got {items_per_call}")
        self.client = client
        self.key_prefix = key_prefix
        self.shape = shape
        self.items_per_call = items_per_call
        self._alive = keys.DEDUP_ALIVE.of(key_prefix)
        self._keys = [keys.BLOOM.of(key_prefix, part=tag(shard, shape.shards))
                      for shard in range(shape.shards)]

    def mark_alive(self, now: float) -> None:
        """Note that this Redis holds the dedup role's structures whole (module docstring)."""
        self.client.set(self._alive, str(now))

    def alive(self) -> bool:
        return bool(self.client.exists(self._alive))

    def allocate(self) -> None:
        """Make every shard's bitmap its full size at once (a rebuild, the first start's
        included). Left to SETBIT, a bitmap grows as far as its highest bit set so far, and
        Redis doubles a short string as it grows, so shards of one size end up taking from
        one to two times it; grown at once they take the same, which keeps a cluster's
        masters even."""
        size = -(-self.shape.bits_per_shard // 8)
        pipe = self.client.pipeline(transaction=False)
        for shard in range(self.shape.shards):
            ALLOCATE(pipe, [self.key(shard)], [size])
        pipe.execute()

    def key(self, shard: int) -> str:
        return self._keys[shard]

    def check(self, items: Sequence[bytes]) -> list[bool]:
        """Per item: True if maybe seen, False if definitely new. Adds nothing."""
        return self._run(CHECK, items)

    def add(self, items: Sequence[bytes]) -> None:
        self._run(CHECK_AND_ADD, items)

    def check_and_add(self, items: Sequence[bytes]) -> list[bool]:
        """Add the items; per item, whether it was maybe seen before (earlier in the batch
        included). Atomic per item: of two clients adding the same new item, one sees it new."""
        return self._run(CHECK_AND_ADD, items)

    def memory_bytes(self) -> int:
        """Memory Redis uses for the shards' bitmaps."""
        pipe = self.client.pipeline(transaction=False)
        for shard in range(self.shape.shards):
            pipe.memory_usage(self.key(shard), samples=0)
        return sum(int(n or 0) for n in pipe.execute())

    def _run(self, script: Lua, items: Sequence[bytes]) -> list[bool]:
        """Run the script over the items, grouped into calls per shard, in one pipeline."""
        calls = self._calls(items)
        if not calls:
            return []
        pipe = self.client.pipeline(transaction=False)
        for shard, _, pairs in calls:
            script(pipe, [self.key(shard)], [self.shape.bits_per_shard, self.shape.hashes, pairs])
        seen = [False] * len(items)
        for (_, indices, _), reply in zip(calls, pipe.execute(), strict=True):
            for i, found in zip(indices, reply, strict=True):
                seen[i] = found == 1
        return seen

    def _calls(self, items: Sequence[bytes]) -> list[tuple[int, list[int], bytes]]:
        """Script calls for the items: (shard, item indices, packed (start, step) pairs),
        keeping the items' order within a shard."""
        indices: dict[int, list[int]] = defaultdict(list)
        pairs: dict[int, list[int]] = defaultdict(list)
        for i, item in enumerate(items):
            shard, start, step = probe(self.shape, item)
            indices[shard].append(i)
            pairs[shard] += (start, step)
        size = self.items_per_call
        return [(shard, idx[lo:lo + size], _pack(pairs[shard][2 * lo:2 * (lo + size)]))
                for shard, idx in indices.items() for lo in range(0, len(idx), size)]


def _pack(values: list[int]) -> bytes:
    return struct.pack(f"<{len(values)}I", *values)
