"""The content dedup index: which stored original holds each content hash and each SimHash
fingerprint, and the fingerprints filed under each band value.

  P:dedup:<bucket>  HASH  "c" + 12 bytes of a content hash -> the owner's url_hash (16 bytes)
                          "f" + a fingerprint (8 bytes)   -> the owner's url_hash (16 bytes)
  P:bands:<band>    HASH  the low BAND_FIELD_BITS bits of a band value -> the fingerprints
                          filed under it, 8 bytes each, one after the other
  P:dedup-lock      the token of the task filing originals, expiring

Sized for memory: most of what the dedup Redis holds grows with every stored page, so the
index keeps binary digests in small hashes, which Redis stores as listpacks (a few bytes of
overhead an entry instead of a key's hundred). A content hash's bucket is its first 4 bytes
modulo `buckets` (a power of two from CRAWL_EXPECTED_URLS: parts.buckets), and 12 more bytes
name it in the bucket: 112 bits in all, so two bodies share a claim once in 10^15 at a billion
pages (the store stage compares the full hash of a copy's original before it keeps the copy
without a body: dedup.recheck). A band value's 16 bits pick one of 4 x 2048 hashes and its
field; a band's fingerprints are a string of 8-byte values, appended and cut by a script
(atomic on its one key). A near copy's candidates are the fingerprints sharing a band value;
those within `max_distance` bits are resolved to their owners through the "f" fields (a
second round trip, only when there are candidates). Every key is a hash of its own, so a
Redis Cluster spreads them over its masters.

`claim` takes a batch of pages in order: a page whose hash another page claimed is an exact
copy of it; else a page within `max_distance` bits of a filed fingerprint is a near copy of
that original and claims nothing; else it claims its hash and files its fingerprint
(stages/dedup.py says what the stages do with the answers). Two pages' entries lie on
different keys, often on different masters, so no one script can look them all up and file a
page at once; instead a batch files under the dedup lock: look up, decide here, in order, each
page against what is filed and what the batch filed before it, then file (one round trip).
Of two near copies in two workers' batches, the second to take the lock finds the first. The
lock is held for those round trips; at 50 pages a batch that bounds a fleet at thousands of
batches a second. A task that dies holding it holds it `LOCK_SECONDS` at most; what it filed
for pages never stored is released by verify, as after any crash between dedup and store.

Only stored originals are filed: what a page stops being one of is released (`release`), and
a rebuild files every stored original of the database again (`restore`). Two stored originals
with the same fingerprint (a rebuild after CRAWL_NEAR_DUPLICATE_BITS changed) share its band
entries; the first filed owns the fingerprint, and its band entries stay while it does.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import mmh3
from redis.cluster import RedisCluster

from crawlapp.adapters.redis import keys
from crawlapp.adapters.redis.client import Client, Pipeline
from crawlapp.adapters.redis.lua import Lua
from crawlapp.core.errors import TransientError
from crawlapp.core.simhash import bands

# KEYS: a bucket or the lock. ARGV: a field (a bucket's) or nothing (the lock), then a
# url_hash or a lock holder's token. Deletes the field (or key) if it still holds that value;
# returns 1 if deleted, 0 if another value holds it, -1 if it was not there.
DELETE_IF = Lua("""
local held
if #ARGV == 2 then held = redis.call('HGET', KEYS[1], ARGV[1])
else held = redis.call('GET', KEYS[1]) end
if not held then return -1 end
if held ~= ARGV[#ARGV] then return 0 end
if #ARGV == 2 then redis.call('HDEL', KEYS[1], ARGV[1]) else redis.call('DEL', KEYS[1]) end
return 1
""")

# KEYS: band hashes (one may come more than once). ARGV: for each key a field, how many
# fingerprints of 8 bytes follow, then those. Appends to each field the ones it does not hold
# yet; returns how many in all.
BAND_ADD = Lua("""
local added, a = 0, 1
for k = 1, #KEYS do
  local field, n = ARGV[a], tonumber(ARGV[a + 1])
  local blob = redis.call('HGET', KEYS[k], field) or ''
  local grew = false
  for j = a + 2, a + 1 + n do
    local found = false
    for i = 1, #blob, 8 do
      if string.sub(blob, i, i + 7) == ARGV[j] then found = true break end
    end
    if not found then blob = blob .. ARGV[j] added = added + 1 grew = true end
  end
  if grew then redis.call('HSET', KEYS[k], field, blob) end
  a = a + 2 + n
end
return added
""")

# KEYS and ARGV as BAND_ADD's. Cuts each fingerprint out of its field (a field left empty
# goes); returns how many in all.
BAND_DROP = Lua("""
local dropped, a = 0, 1
for k = 1, #KEYS do
  local field, n = ARGV[a], tonumber(ARGV[a + 1])
  local blob = redis.call('HGET', KEYS[k], field)
  if blob then
    local cut = false
    for j = a + 2, a + 1 + n do
      for i = 1, #blob, 8 do
        if string.sub(blob, i, i + 7) == ARGV[j] then
          blob = string.sub(blob, 1, i - 1) .. string.sub(blob, i + 8)
          dropped = dropped + 1
          cut = true
          break
        end
      end
    end
    if #blob == 0 then redis.call('HDEL', KEYS[k], field)
    elseif cut then redis.call('HSET', KEYS[k], field, blob) end
  end
  a = a + 2 + n
end
return dropped
""")

# KEYS: hashes (one may come more than once). ARGV: a field of each. Returns each field's
# value (nil where it has none).
HGET_EACH = Lua("""
local values = {}
for k = 1, #KEYS do values[k] = redis.call('HGET', KEYS[k], ARGV[k]) end
return values
""")

ORIGINAL, EXACT, NEAR = "original", "exact", "near"
FILE, LOOK = "file", "look"
NO_NEAR = -1  # max distance that skips the near look-up
LOCK_SECONDS = 10.0  # the lock expires this long after it was taken
LOCK_WAIT = 30.0  # a batch waits this long for the lock, then fails as a TransientError
BAND_FIELD_BITS = 5  # a band hash holds 32 band values: small enough to stay a listpack
# Expected URLs per bucket (parts.buckets): two entries per stored original, about a hundred
# a bucket at CRAWL_EXPECTED_URLS.
URLS_PER_BUCKET = 512
CLAIM, FINGERPRINT = b"c", b"f"  # the two kinds of a bucket's fields
Slot = tuple[str, bytes]  # a bucket or band key and a field of it


@dataclass(frozen=True)
class Claim:
    """A page's content as dedup files it: its content hash and SimHash fingerprint."""

    url_hash: str
    content_hash: str
    fingerprint: int | None


@dataclass(frozen=True)
class Outcome:
    kind: str  # ORIGINAL, EXACT or NEAR
    owner: str | None = None  # the original it is a copy of


@dataclass(frozen=True)
class Held:
    """What a page may hold in Redis: the claim of a content hash, band entries of a fingerprint."""

    url_hash: str
    content_hash: str | None
    fingerprint: int | None


@dataclass(frozen=True)
class Filed:
    """One entry of a bucket: a claim or a fingerprint, and the original holding it."""

    key: str
    field: bytes
    owner: str

    @property
    def is_claim(self) -> bool:
        return self.field[:1] == CLAIM


@dataclass(frozen=True)
class BandEntry:
    """One fingerprint filed under one band value, and the original that owns the
    fingerprint (None when no bucket names one)."""

    key: str
    field: bytes
    fingerprint: int
    owner: str | None


def _digest(content_hash: str) -> bytes:
    """A content hash's bytes: its hex SHA-256, or (any other text) the SHA-256 of it."""
    try:
        digest = bytes.fromhex(content_hash)
    except ValueError:
        digest = b""
    return digest if len(digest) == 32 else hashlib.sha256(content_hash.encode()).digest()


def _owner(url_hash: str) -> bytes:
    owner = bytes.fromhex(url_hash)
    if len(owner) != 16:
        raise ValueError(f"not a url_hash: {url_hash!r}")
    return owner


def _fingerprints(blob: bytes) -> list[int]:
    return [int.from_bytes(blob[i:i + 8], "big") for i in range(0, len(blob), 8)]


class DedupIndex:
    """Content claims, fingerprints, band values and the lock under which a batch files."""

    def __init__(self, client: Client, prefix: str, buckets: int) -> None:
        if buckets < 1 or buckets & (buckets - 1):
            raise ValueError(f"buckets must be a power of two: {buckets}")
        self.client = client
        self.prefix = prefix
        self.buckets = buckets
        self._bucket_prefix = keys.DEDUP_BUCKET.of(prefix, bucket="")
        self._band_prefix = keys.BANDS.of(prefix, band="")
        self._lock = keys.DEDUP_LOCK.of(prefix)

    def _bucket(self, number: int) -> str:
        return f"{self._bucket_prefix}{number & (self.buckets - 1):x}"

    def claim_slot(self, content_hash: str) -> Slot:
        digest = _digest(content_hash)
        return self._bucket(int.from_bytes(digest[:4], "big")), CLAIM + digest[4:16]

    def fingerprint_slot(self, fingerprint: int) -> Slot:
        value = fingerprint.to_bytes(8, "big")
        return self._bucket(mmh3.hash(value, signed=False)), FINGERPRINT + value

    def band_slots(self, fingerprint: int) -> list[Slot]:
        low = (1 << BAND_FIELD_BITS) - 1
        return [(f"{self._band_prefix}{band >> BAND_FIELD_BITS:x}", bytes([band & low]))
                for band in bands(fingerprint)]

    def _groups(self, slots: Iterable[Slot]) -> list[list[Slot]]:
        """`slots` by what one script may touch: all of them on one Redis; on a cluster, the
        slots of one hash slot (a key of its own each, as a rule, spread over the masters)."""
        if not isinstance(self.client, RedisCluster):
            return [list(slots)]
        by_hash_slot: dict[int, list[Slot]] = defaultdict(list)
        for slot in slots:
            by_hash_slot[self.client.keyslot(slot[0])].append(slot)
        return list(by_hash_slot.values())

    def read(self, slots: Sequence[Slot]) -> dict[Slot, bytes | None]:
        """The value of each slot, in one round trip: a script a group of slots (`_groups`),
        a plain HGET for a slot alone (a thousand commands a batch cost their client more
        than the look-ups cost Redis)."""
        pipe = self.client.pipeline(transaction=False)
        groups = [group for group in self._groups(dict.fromkeys(slots)) if group]
        for group in groups:
            if len(group) == 1:
                pipe.hget(*group[0])
            else:
                HGET_EACH(pipe, [key for key, _ in group], [field for _, field in group])
        values: dict[Slot, bytes | None] = {}
        for group, reply in zip(groups, pipe.execute() if groups else [], strict=True):
            values.update(zip(group, [reply] if len(group) == 1 else reply, strict=True))
        return values

    def files(self, held: Held, entry: Filed) -> bool:
        """Whether `held` files exactly `entry` (its claim or its fingerprint, owned by it)."""
        if entry.owner != held.url_hash:
            return False
        if entry.is_claim:
            return held.content_hash is not None and \
                self.claim_slot(held.content_hash) == (entry.key, entry.field)
        return held.fingerprint is not None and \
            self.fingerprint_slot(held.fingerprint) == (entry.key, entry.field)

    def claim(self, claims: Sequence[Claim], max_distance: int, mode: str = FILE
              ) -> list[Outcome]:
        """Each page's outcome, in order (module docstring). FILE claims and files the
        originals, under the lock; LOOK writes nothing (a claimed hash counts as a near copy)."""
        if not claims:
            return []
        if mode == LOOK:
            return _Filing(self, claims, max_distance).decide(mode)
        with self._locked():
            filing = _Filing(self, claims, max_distance)
            outcomes = filing.decide(mode)
            filing.write()
        return outcomes

    @contextmanager
    def _locked(self) -> Iterator[None]:
        token = uuid.uuid4().hex
        deadline, pause = time.monotonic() + LOCK_WAIT, 0.002
        while not self.client.set(self._lock, token, nx=True, px=int(LOCK_SECONDS * 1000)):
            if time.monotonic() > deadline:
                raise TransientError("Redis", f"the dedup lock stayed taken {LOCK_WAIT:.0f} s")
            time.sleep(pause)
            pause = min(2 * pause, 0.05)
        try:
            yield
        finally:
            DELETE_IF(self.client, [self._lock], [token])

    def release(self, held: Iterable[Held]) -> None:
        """Drop the claims and fingerprints the pages still hold, and the band entries of the
        fingerprints no other original holds (a second round trip, when there are any)."""
        pages = list(held)
        fingerprints = [h for h in pages if h.fingerprint]
        pipe = self.client.pipeline(transaction=False)
        for h in fingerprints:  # first: their replies lead the pipeline's
            key, field = self.fingerprint_slot(h.fingerprint or 0)
            DELETE_IF(pipe, [key], [field, _owner(h.url_hash)])
        for h in pages:
            if h.content_hash:
                key, field = self.claim_slot(h.content_hash)
                DELETE_IF(pipe, [key], [field, _owner(h.url_hash)])
        replies = pipe.execute()
        gone = [h.fingerprint or 0 for h, reply in zip(fingerprints, replies, strict=False)
                if int(reply) != 0]
        if gone:
            self._band_write(BAND_DROP, {fp: self.band_slots(fp) for fp in gone},
                             self.client.pipeline(transaction=False))

    def restore(self, originals: Iterable[Held]) -> None:
        """File stored originals again (a claim or fingerprint already held is kept), in one
        round trip."""
        pipe = self.client.pipeline(transaction=False)
        fingerprints = []
        for h in originals:
            owner = _owner(h.url_hash)
            if h.content_hash:
                pipe.hsetnx(*self.claim_slot(h.content_hash), owner)
            if h.fingerprint:
                pipe.hsetnx(*self.fingerprint_slot(h.fingerprint), owner)
                fingerprints.append(h.fingerprint)
        self._band_write(BAND_ADD, {fp: self.band_slots(fp) for fp in fingerprints}, pipe)

    def _band_write(self, script: Lua, slots: Mapping[int, list[Slot]], pipe: Pipeline
                    ) -> None:
        """Add (BAND_ADD) or cut (BAND_DROP) each fingerprint under its band values (`slots`:
        fingerprint -> its band slots), a script a group of band fields (`_groups`), on
        `pipe`, which it sends."""
        by_slot: dict[Slot, list[bytes]] = defaultdict(list)
        for fp, mine in slots.items():
            for slot in mine:
                by_slot[slot].append(fp.to_bytes(8, "big"))
        self._band_scripts(script, by_slot, pipe)
        pipe.execute()

    def _band_scripts(self, script: Lua, by_slot: Mapping[Slot, list[bytes]], pipe: Pipeline
                      ) -> None:
        """BAND_ADD or BAND_DROP of the fingerprints of each band field, queued on `pipe`."""
        for group in self._groups(by_slot):
            args: list[bytes | int] = []
            for slot in group:
                args += [slot[1], len(by_slot[slot]), *by_slot[slot]]
            script(pipe, [key for key, _ in group], args)

    def _scan(self, pattern: str, chunk: int) -> Iterator[list[tuple[str, dict[bytes, bytes]]]]:
        """The keys matching `pattern` and their fields, `chunk` keys at a time (SCAN)."""
        names: list[str] = []
        for key in self.client.scan_iter(match=pattern, count=chunk):
            names.append(key.decode())
            if len(names) == chunk:
                yield self._contents(names)
                names = []
        if names:
            yield self._contents(names)

    def _contents(self, names: list[str]) -> list[tuple[str, dict[bytes, bytes]]]:
        pipe = self.client.pipeline(transaction=False)
        for name in names:
            pipe.hgetall(name)
        return list(zip(names, pipe.execute(), strict=True))

    def entries(self, chunk: int) -> Iterator[list[Filed]]:
        """Every claim and fingerprint filed, the entries of `chunk` buckets at a time."""
        for contents in self._scan(self._bucket_prefix + "*", chunk):
            yield [Filed(name, field, owner.hex())
                   for name, fields in contents for field, owner in fields.items()]

    def band_entries(self, chunk: int) -> Iterator[list[BandEntry]]:
        """Every fingerprint filed under a band value, with its owner, the fields of `chunk`
        band hashes at a time."""
        for contents in self._scan(self._band_prefix + "*", chunk):
            found = [(name, field, fp) for name, fields in contents
                     for field, blob in fields.items() for fp in _fingerprints(blob)]
            slots = [self.fingerprint_slot(fp) for _, _, fp in found]
            owners = self.read(slots)
            yield [BandEntry(name, field, fp, owner.hex() if (owner := owners[slot]) else None)
                   for (name, field, fp), slot in zip(found, slots, strict=True)]

    def forget(self, entries: Iterable[Filed]) -> None:
        """Take these claims and fingerprints out of their buckets if their owner still holds
        them, in one round trip (their band entries: `drop`)."""
        pipe = self.client.pipeline(transaction=False)
        for e in entries:
            DELETE_IF(pipe, [e.key], [e.field, _owner(e.owner)])
        pipe.execute()

    def drop(self, entries: Iterable[BandEntry]) -> None:
        """Take these fingerprints out of their band values, in one round trip."""
        by_slot: dict[Slot, list[bytes]] = defaultdict(list)
        for e in entries:
            by_slot[(e.key, e.field)].append(e.fingerprint.to_bytes(8, "big"))
        pipe = self.client.pipeline(transaction=False)
        self._band_scripts(BAND_DROP, by_slot, pipe)
        pipe.execute()


class _Filing:
    """One batch's claims: what Redis holds of their hashes and bands (one round trip, and one
    more for the owners of near candidates), the outcomes decided in order, and the writes of
    the originals."""

    def __init__(self, index: DedupIndex, claims: Sequence[Claim], max_distance: int) -> None:
        self.index = index
        self.claims = claims
        self.max_distance = max_distance
        self.owners: dict[str, str] = {}  # content hash -> owner, as read and as claimed here
        self.filed: dict[Slot, list[tuple[int, str]]] = defaultdict(list)  # band -> entries
        self.new_claims: dict[str, str] = {}
        self.new_fingerprints: dict[int, str] = {}
        # each fingerprint's band slots, worked out once for the look-up and the decisions
        self.slots = {c.fingerprint: index.band_slots(c.fingerprint)
                      for c in claims if c.fingerprint}
        self._read()

    def _read(self) -> None:
        index = self.index
        claimed = {h: index.claim_slot(h) for h in dict.fromkeys(c.content_hash
                                                                 for c in self.claims)}
        near = [(c.fingerprint, self.slots[c.fingerprint]) for c in self.claims
                if c.fingerprint and self.max_distance >= 0]
        values = index.read([*claimed.values(), *(slot for _, mine in near for slot in mine)])
        self.owners = {h: owner.hex() for h, slot in claimed.items() if (owner := values[slot])}
        # The candidates: fingerprints within max_distance of a page of the batch sharing
        # one of its band values; only their owners are read.
        candidates: dict[Slot, set[int]] = defaultdict(set)
        for fingerprint, mine in near:
            for slot in mine:
                for fp in _fingerprints(values[slot] or b""):
                    if (fp ^ fingerprint).bit_count() <= self.max_distance:
                        candidates[slot].add(fp)
        wanted = {fp: index.fingerprint_slot(fp)
                  for fp in sorted({fp for fps in candidates.values() for fp in fps})}
        if not wanted:
            return
        found = index.read(list(wanted.values()))
        owners = {fp: owner.hex() for fp, slot in wanted.items() if (owner := found[slot])}
        for slot, fps in candidates.items():
            self.filed[slot] = [(fp, owners[fp]) for fp in sorted(fps) if fp in owners]

    def decide(self, mode: str) -> list[Outcome]:
        return [self._one(c, mode) for c in self.claims]

    def _one(self, c: Claim, mode: str) -> Outcome:
        owner = self.owners.get(c.content_hash)
        if owner and owner != c.url_hash:
            return Outcome(NEAR if mode == LOOK else EXACT, owner)
        slots = self.slots[c.fingerprint] if c.fingerprint else []
        if not owner or mode == LOOK:
            near = self._nearest(c, slots)
            if near is not None:
                return Outcome(NEAR, near)
            if mode == LOOK:
                return Outcome(ORIGINAL)
            self.owners[c.content_hash] = self.new_claims[c.content_hash] = c.url_hash
        if c.fingerprint:
            for slot in slots:
                self.filed[slot].append((c.fingerprint, c.url_hash))
            self.new_fingerprints.setdefault(c.fingerprint, c.url_hash)
        return Outcome(ORIGINAL)

    def _nearest(self, c: Claim, slots: list[Slot]) -> str | None:
        """The closest filed original within max_distance (not the page itself), if any."""
        if not c.fingerprint or self.max_distance < 0:
            return None
        best, best_distance = None, self.max_distance + 1
        for slot in slots:
            for fingerprint, other in self.filed[slot]:
                distance = (fingerprint ^ c.fingerprint).bit_count()
                if other != c.url_hash and distance < best_distance:
                    best, best_distance = other, distance
        return best

    def write(self) -> None:
        index = self.index
        pipe = index.client.pipeline(transaction=False)
        for content_hash, owner in self.new_claims.items():
            pipe.hset(*index.claim_slot(content_hash), _owner(owner))
        for fp, owner in self.new_fingerprints.items():
            pipe.hsetnx(*index.fingerprint_slot(fp), _owner(owner))
        index._band_write(BAND_ADD, {fp: self.slots[fp] for fp in self.new_fingerprints}, pipe)
