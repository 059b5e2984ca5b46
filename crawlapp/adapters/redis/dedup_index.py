"""The content dedup index: which stored original holds each content hash and each SimHash
fingerprint, and the tables of permuted fingerprints in which a near copy finds them.

  P:dedup:<bucket>        HASH  "c" + 12 bytes of a content hash -> the owner's url_hash
                                "f" + a fingerprint (8 bytes)   -> the owner's url_hash
  P:near:<table>:<bucket> ZSET  a table's permuted fingerprints whose top bits are
                                <bucket>, each without the whole bytes <bucket> holds
  P:dedup-lock            the token of the task filing originals, expiring

Sized for memory: most of what the dedup Redis holds grows with every stored page, so the
index keeps binary digests in small hashes and sorted sets, which Redis stores as listpacks
(a few bytes of overhead an entry instead of a key's hundred). A content hash's bucket is its
first 4 bytes modulo `buckets` (a power of two from CRAWL_EXPECTED_URLS: parts.buckets), and
12 more bytes name it in the bucket: 112 bits in all, so two bodies share a claim once in
10^15 at a billion pages (the store stage compares the full hash of a copy's original before
it keeps the copy without a body: dedup.recheck).

Near copies (core/near_tables.py): each table files every original's fingerprint, its bits
permuted, under a prefix of them, and a page's look-up reads, in each table, the members
under its own prefix: a ZRANGEBYLEX, since members sort as their bits do. Every fingerprint
within `max_distance` bits is among them, and about `Tables.strangers` others, whatever the
number filed, as long as it stays near the originals planned for (CRAWL_EXPECTED_URLS /
URLS_PER_ORIGINAL: `planned`). A table's members are spread over
`table_buckets` keys by their top bits (ENTRIES_PER_KEY to twice that each at the plan:
listpacks);
filing an original adds one member to one key a table, releasing it removes that member.
Those within `max_distance` bits are resolved to their owners through the "f" fields (a
second round trip, only when there are any). Every key is a key of its own, so a Redis
Cluster spreads them over its masters.

`claim` takes a batch of pages in order: a page whose hash another page claimed is an exact
copy of it; else a page within `max_distance` bits of a filed fingerprint is a near copy of
that original and claims nothing; else it claims its hash and files its fingerprint
(stages/dedup.py says what the stages do with the answers). Two pages' entries lie on
different keys, often on different masters, so no one script can look them all up and file a
page at once; instead a batch files under the dedup lock: look up, decide here, in order, each
page against what is filed and what the batch filed before it, then file (one round trip).
Of two near copies in two workers' batches, the second to take the lock finds the first. The
lock is held for those round trips (docs/sizing.md has the batches a second it admits). A
task that dies holding it holds it `LOCK_SECONDS` at most; what it filed for pages never
stored is released by verify, as after any crash between dedup and store.

Only stored originals are filed: what a page stops being one of is released (`release`), and
a rebuild files every stored original of the database again (`restore`). Two stored originals
with the same fingerprint (a rebuild after CRAWL_NEAR_DUPLICATE_BITS changed) share its table
members; the first filed owns the fingerprint, and its members stay while it does. The tables'
shape follows CRAWL_EXPECTED_URLS and CRAWL_NEAR_DUPLICATE_BITS: a change of either needs the
dedup role rebuilt (docs/sizing.md, "Upgrading a live crawl").
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NamedTuple

import mmh3
import numpy as np
from redis.cluster import RedisCluster

from crawlapp.adapters.redis import keys
from crawlapp.adapters.redis.client import Client, Pipeline
from crawlapp.adapters.redis.lua import Lua
from crawlapp.adapters.redis.parts import buckets
from crawlapp.core.errors import TransientError
from crawlapp.core.near_tables import WIDTH, Tables, plan

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

# KEYS: hashes (one may come more than once). ARGV: a field of each. Returns each field's
# value (nil where it has none).
HGET_EACH = Lua("""
local values = {}
for k = 1, #KEYS do values[k] = redis.call('HGET', KEYS[k], ARGV[k]) end
return values
""")

# KEYS: table keys. ARGV: each key's lowest and highest member of a range. Returns in one
# string the members of each key within its range, each after its key's number (2 bytes).
RANGE_EACH = Lua("""
local found = {}
for k = 1, #KEYS do
  local tag = string.char(math.floor((k - 1) / 256), (k - 1) % 256)
  for _, m in ipairs(redis.call('ZRANGEBYLEX', KEYS[k], '[' .. ARGV[2 * k - 1],
                                '[' .. ARGV[2 * k])) do
    found[#found + 1] = tag .. m
  end
end
return table.concat(found)
""")

# KEYS: table keys (one may come more than once). ARGV: 'ZADD' or 'ZREM', then a member of
# each key. Adds (score 0) or removes each; returns how many in all.
MEMBER_EACH = Lua("""
local changed = 0
for k = 1, #KEYS do
  if ARGV[1] == 'ZADD' then changed = changed + redis.call('ZADD', KEYS[k], 0, ARGV[k + 1])
  else changed = changed + redis.call('ZREM', KEYS[k], ARGV[k + 1]) end
end
return changed
""")

ORIGINAL, EXACT, NEAR = "original", "exact", "near"
FILE, LOOK = "file", "look"
NO_NEAR = -1  # max distance that skips the near look-up
LOCK_SECONDS = 10.0  # the lock expires this long after it was taken
LOCK_WAIT = 30.0  # a batch waits this long for the lock, then fails as a TransientError
# Expected URLs per bucket (parts.buckets): two entries per stored original, about a hundred
# a bucket at CRAWL_EXPECTED_URLS.
URLS_PER_BUCKET = 512
# The originals the tables are planned for: CRAWL_EXPECTED_URLS / URLS_PER_ORIGINAL (a crawl
# knows about 4 URLs for each page it fetched, docs/sizing.md; copies are not filed).
URLS_PER_ORIGINAL = 4
# Members of a table key at the plan: 32 to 64 (parts.buckets rounds down), so that a key
# stays a listpack (up to 128 members) past twice the originals planned for.
ENTRIES_PER_KEY = 32
SCRIPT_KEYS = 1000  # keys a script touches at most, to keep each one short
CLAIM, FINGERPRINT = b"c", b"f"  # the two kinds of a bucket's fields
Slot = tuple[str, bytes]  # a bucket key and a field of it
_ALL = (1 << WIDTH) - 1


class Range(NamedTuple):
    """The members of a table key under one prefix: `top` holds the bits of a permuted
    fingerprint that the key's members leave out."""

    table: int
    key: str
    low: bytes
    high: bytes
    top: int


class Place(NamedTuple):
    """Where a table files a fingerprint: its member, and the range of its prefix."""

    member: bytes
    range: Range


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
    """What a page may hold in Redis: the claim of a content hash, table members of a
    fingerprint."""

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
class TableEntry:
    """One fingerprint filed in one table (its key and member), and the original that owns
    the fingerprint (None when no bucket names one)."""

    key: str
    member: bytes
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


class DedupIndex:
    """Content claims, fingerprints, their tables and the lock under which a batch files."""

    def __init__(self, client: Client, prefix: str, buckets: int, tables: Tables,
                 table_buckets: int) -> None:
        if buckets < 1 or buckets & (buckets - 1):
            raise ValueError(f"buckets must be a power of two: {buckets}")
        if tables.width != WIDTH or table_buckets < 1 or table_buckets & (table_buckets - 1):
            raise ValueError(f"tables of {tables.width} bits in {table_buckets} keys each")
        self.client = client
        self.prefix = prefix
        self.buckets = buckets
        self.tables = tables
        # a table key holds the top `bits` bits of its members (never more than a prefix),
        # which leave out the `cut` whole bytes of them
        self.bits = min(table_buckets.bit_length() - 1, *tables.prefixes)
        self.cut = self.bits // 8
        self.digits = (self.bits + 3) // 4  # of a key's bucket, in hex: keys of a table align
        self._bucket_prefix = keys.DEDUP_BUCKET.of(prefix, bucket="")
        self._table_prefix = keys.NEAR_TABLE.of(prefix, table="", bucket="").removesuffix(":")
        self._table_stems = [f"{self._table_prefix}{table}:" for table in range(len(tables.keys))]
        # of a permuted fingerprint: each table's prefix bits (the rest of a range spans), and
        # the bits a table key's members leave out (a Range's `top`)
        self._heads = np.array([~((1 << (WIDTH - p)) - 1) & _ALL for p in tables.prefixes],
                               dtype=np.uint64)[:, None]
        self._kept = np.uint64(~((1 << 8 * (8 - self.cut)) - 1) & _ALL)
        self._lock = keys.DEDUP_LOCK.of(prefix)

    @classmethod
    def planned(cls, client: Client, prefix: str, expected_urls: int, distance: int
                ) -> DedupIndex:
        """The index for CRAWL_EXPECTED_URLS and CRAWL_NEAR_DUPLICATE_BITS: buckets of claims
        for the URLs, tables for a URLS_PER_ORIGINAL-th as many originals."""
        originals = expected_urls // URLS_PER_ORIGINAL
        return cls(client, prefix, buckets(expected_urls, URLS_PER_BUCKET),
                   plan(originals, distance), buckets(originals, ENTRIES_PER_KEY))

    def _bucket(self, number: int) -> str:
        return f"{self._bucket_prefix}{number & (self.buckets - 1):x}"

    def claim_slot(self, content_hash: str) -> Slot:
        digest = _digest(content_hash)
        return self._bucket(int.from_bytes(digest[:4], "big")), CLAIM + digest[4:16]

    def fingerprint_slot(self, fingerprint: int) -> Slot:
        value = fingerprint.to_bytes(8, "big")
        return self._bucket(mmh3.hash(value, signed=False)), FINGERPRINT + value

    def places(self, fingerprints: Iterable[int]) -> dict[int, list[Place]]:
        """Where each table files each fingerprint, and the range its look-up reads (every
        table's worked out at once, in numpy)."""
        wanted = list(dict.fromkeys(fingerprints))
        found: dict[int, list[Place]] = {fp: [] for fp in wanted}
        if not wanted:
            return found
        permuted = self.tables.permute(wanted)
        low = permuted & self._heads
        members, lows, highs = (values.astype(">u8").tobytes()
                                for values in (permuted, low, low | ~self._heads))
        tops = (low & self._kept).tolist()
        buckets = (permuted >> np.uint64(WIDTH - self.bits) if self.bits
                   else np.zeros_like(permuted)).tolist()
        cut, digits, count = self.cut, self.digits, len(wanted)
        for table, stem in enumerate(self._table_stems):
            at = 8 * table * count
            for i, fp in enumerate(wanted):
                start, end = at + 8 * i + cut, at + 8 * i + 8
                found[fp].append(Place(members[start:end], Range(
                    table, f"{stem}{buckets[table][i]:0{digits}x}", lows[start:end],
                    highs[start:end], tops[table][i])))
        return found

    def table_key(self, table: int, bucket: int) -> str:
        return f"{self._table_stems[table]}{bucket:0{self.digits}x}"

    def _groups(self, keyed: Iterable[Any], key: Callable[[Any], str]) -> list[list[Any]]:
        """`keyed` by what one script may touch, SCRIPT_KEYS at most: any of them on one
        Redis; on a cluster, those of one hash slot (a key of its own each, as a rule, spread
        over the masters)."""
        client = self.client
        if not isinstance(client, RedisCluster):
            items = list(keyed)
            return [items[i:i + SCRIPT_KEYS] for i in range(0, len(items), SCRIPT_KEYS)]
        by_hash_slot: dict[int, list[Any]] = defaultdict(list)
        for item in keyed:
            by_hash_slot[client.keyslot(key(item))].append(item)
        return [group[i:i + SCRIPT_KEYS] for group in by_hash_slot.values()
                for i in range(0, len(group), SCRIPT_KEYS)]

    def look(self, slots: Sequence[Slot], ranges: Iterable[Range]
             ) -> tuple[dict[Slot, bytes | None], dict[Range, list[int]]]:
        """The value of each slot and the fingerprints filed in each range, in one round
        trip: a script a group of slots or of ranges (`_groups`), a plain command for one
        alone (a thousand commands a batch cost their client more than the look-ups cost
        Redis)."""
        pipe = self.client.pipeline(transaction=False)
        fields = self._groups(dict.fromkeys(slots), lambda slot: slot[0])
        spans = self._groups(dict.fromkeys(ranges), lambda span: span.key)
        for group in fields:
            if len(group) == 1:
                pipe.hget(*group[0])
            else:
                HGET_EACH(pipe, [key for key, _ in group], [field for _, field in group])
        for spans_group in spans:
            if len(spans_group) == 1:
                (span,) = spans_group
                pipe.zrangebylex(span.key, b"[" + span.low, b"[" + span.high)
            else:
                RANGE_EACH(pipe, [span.key for span in spans_group],
                           [edge for span in spans_group for edge in (span.low, span.high)])
        replies = iter(pipe.execute() if fields or spans else [])
        values: dict[Slot, bytes | None] = {}
        for group, reply in zip(fields, replies, strict=False):
            values.update(zip(group, [reply] if len(group) == 1 else reply, strict=True))
        members: dict[Range, list[bytes]] = {span: [] for group in spans for span in group}
        width = 2 + 8 - self.cut
        for spans_group, reply in zip(spans, replies, strict=True):
            if len(spans_group) == 1:
                members[spans_group[0]] = reply
                continue
            for i in range(0, len(reply), width):
                members[spans_group[int.from_bytes(reply[i:i + 2], "big")]].append(
                    reply[i + 2:i + width])
        return values, self._fingerprints(members)

    def _fingerprints(self, members: dict[Range, list[bytes]]) -> dict[Range, list[int]]:
        """The fingerprints of each range's members, unpermuted (every table's at once)."""
        spans = list(members)
        tables = [span.table for span in spans for _ in members[span]]
        permuted = [span.top | int.from_bytes(m, "big") for span in spans for m in members[span]]
        fps = iter(self.tables.unpermute(tables, permuted).tolist() if permuted else [])
        return {span: [next(fps) for _ in members[span]] for span in spans}

    def read(self, slots: Sequence[Slot]) -> dict[Slot, bytes | None]:
        """The value of each slot, in one round trip."""
        return self.look(slots, ())[0]

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
        if max_distance > self.tables.distance:
            raise ValueError(f"the near-copy tables find copies within {self.tables.distance} "
                             f"bits, not {max_distance}")
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
        """Drop the claims and fingerprints the pages still hold, and the table members of the
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
            pipe = self.client.pipeline(transaction=False)
            self._members(pipe, "ZREM", self._placed(gone))
            pipe.execute()

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
        self._members(pipe, "ZADD", self._placed(fingerprints))
        pipe.execute()

    def _placed(self, fingerprints: Iterable[int]) -> list[tuple[str, bytes]]:
        """Each table's key and member of each fingerprint."""
        return [(place.range.key, place.member)
                for places in self.places(fingerprints).values() for place in places]

    def _members(self, pipe: Pipeline, command: str, members: Sequence[tuple[str, bytes]]
                 ) -> None:
        """ZADD (score 0) or ZREM each (key, member), queued on `pipe`: a script a group
        (`_groups`), a plain command for one alone."""
        for group in self._groups(members, lambda member: member[0]):
            if len(group) > 1:
                MEMBER_EACH(pipe, [key for key, _ in group], [command, *(m for _, m in group)])
            elif command == "ZADD":
                pipe.zadd(group[0][0], {group[0][1]: 0})
            else:
                pipe.zrem(*group[0])

    def _scan(self, pattern: str, chunk: int, read: Callable[[Pipeline, str], object]
              ) -> Iterator[list[tuple[str, Any]]]:
        """The keys matching `pattern` and what `read` queues for each, `chunk` keys at a
        time (SCAN)."""
        names: list[str] = []
        for key in self.client.scan_iter(match=pattern, count=chunk):
            names.append(key.decode())
            if len(names) == chunk:
                yield self._contents(names, read)
                names = []
        if names:
            yield self._contents(names, read)

    def _contents(self, names: list[str], read: Callable[[Pipeline, str], object]
                  ) -> list[tuple[str, Any]]:
        pipe = self.client.pipeline(transaction=False)
        for name in names:
            read(pipe, name)
        return list(zip(names, pipe.execute(), strict=True))

    def entries(self, chunk: int) -> Iterator[list[Filed]]:
        """Every claim and fingerprint filed, the entries of `chunk` buckets at a time."""
        for contents in self._scan(self._bucket_prefix + "*", chunk,
                                   lambda pipe, name: pipe.hgetall(name)):
            yield [Filed(name, field, owner.hex())
                   for name, fields in contents for field, owner in fields.items()]

    def table_entries(self, chunk: int) -> Iterator[list[TableEntry]]:
        """Every fingerprint filed in a table, with its owner, the members of `chunk` table
        keys at a time."""
        low_bits = 8 * (8 - self.cut)
        for contents in self._scan(self._table_prefix + "*", chunk,
                                   lambda pipe, name: pipe.zrange(name, 0, -1)):
            spans: dict[Range, list[bytes]] = {}
            for name, found in contents:
                table, bucket = name.removeprefix(self._table_prefix).split(":")
                top = int(bucket, 16) << (WIDTH - self.bits) >> low_bits << low_bits
                spans[Range(int(table), name, b"", b"", top)] = found
            fps = self._fingerprints(spans)
            filed = [(span.key, member, fp) for span, found in spans.items()
                     for member, fp in zip(found, fps[span], strict=True)]
            slots = [self.fingerprint_slot(fp) for _, _, fp in filed]
            owners = self.read(slots)
            yield [TableEntry(key, member, fp, owner.hex() if (owner := owners[slot]) else None)
                   for (key, member, fp), slot in zip(filed, slots, strict=True)]

    def forget(self, entries: Iterable[Filed]) -> None:
        """Take these claims and fingerprints out of their buckets if their owner still holds
        them, in one round trip (their table members: `drop`)."""
        pipe = self.client.pipeline(transaction=False)
        for e in entries:
            DELETE_IF(pipe, [e.key], [e.field, _owner(e.owner)])
        pipe.execute()

    def drop(self, entries: Iterable[TableEntry]) -> None:
        """Take these members out of their tables, in one round trip."""
        pipe = self.client.pipeline(transaction=False)
        self._members(pipe, "ZREM", [(e.key, e.member) for e in entries])
        pipe.execute()


class _Filing:
    """One batch's claims: what Redis holds of their hashes and of the ranges of their
    fingerprints (one round trip, and one more for the owners of near candidates), the
    outcomes decided in order, and the writes of the originals."""

    def __init__(self, index: DedupIndex, claims: Sequence[Claim], max_distance: int) -> None:
        self.index = index
        self.claims = claims
        self.max_distance = max_distance
        self.owners: dict[str, str] = {}  # content hash -> owner, as read and as claimed here
        self.filed: dict[Range, list[tuple[int, str]]] = defaultdict(list)  # range -> entries
        self.new_claims: dict[str, str] = {}
        self.new_fingerprints: dict[int, str] = {}
        # each fingerprint's places, worked out once for the look-up, decisions and writes
        self.places = index.places(c.fingerprint for c in claims if c.fingerprint)
        self._read()

    def _read(self) -> None:
        index = self.index
        claimed = {h: index.claim_slot(h) for h in dict.fromkeys(c.content_hash
                                                                 for c in self.claims)}
        near = [(c.fingerprint, self.places[c.fingerprint]) for c in self.claims
                if c.fingerprint and self.max_distance >= 0]
        values, found = index.look(list(claimed.values()),
                                   (place.range for _, mine in near for place in mine))
        self.owners = {h: owner.hex() for h, slot in claimed.items() if (owner := values[slot])}
        # The candidates: fingerprints within max_distance of a page of the batch filed
        # under one of its prefixes; only their owners are read.
        candidates: dict[Range, set[int]] = defaultdict(set)
        for fingerprint, mine in near:
            for place in mine:
                for fp in found[place.range]:
                    if (fp ^ fingerprint).bit_count() <= self.max_distance:
                        candidates[place.range].add(fp)
        wanted = {fp: index.fingerprint_slot(fp)
                  for fp in sorted({fp for fps in candidates.values() for fp in fps})}
        if not wanted:
            return
        owned = index.read(list(wanted.values()))
        owners = {fp: owner.hex() for fp, slot in wanted.items() if (owner := owned[slot])}
        for span, fps in candidates.items():
            self.filed[span] = [(fp, owners[fp]) for fp in sorted(fps) if fp in owners]

    def decide(self, mode: str) -> list[Outcome]:
        return [self._one(c, mode) for c in self.claims]

    def _one(self, c: Claim, mode: str) -> Outcome:
        owner = self.owners.get(c.content_hash)
        if owner and owner != c.url_hash:
            return Outcome(NEAR if mode == LOOK else EXACT, owner)
        spans = [place.range for place in self.places[c.fingerprint]] if c.fingerprint else []
        if not owner or mode == LOOK:
            near = self._nearest(c, spans)
            if near is not None:
                return Outcome(NEAR, near)
            if mode == LOOK:
                return Outcome(ORIGINAL)
            self.owners[c.content_hash] = self.new_claims[c.content_hash] = c.url_hash
        if c.fingerprint:
            for span in spans:
                self.filed[span].append((c.fingerprint, c.url_hash))
            self.new_fingerprints.setdefault(c.fingerprint, c.url_hash)
        return Outcome(ORIGINAL)

    def _nearest(self, c: Claim, spans: list[Range]) -> str | None:
        """The closest filed original within max_distance (not the page itself), if any."""
        if not c.fingerprint or self.max_distance < 0:
            return None
        best, best_distance = None, self.max_distance + 1
        for span in spans:
            for fingerprint, other in self.filed[span]:
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
        index._members(pipe, "ZADD", [(place.range.key, place.member)
                                      for fp in self.new_fingerprints for place in self.places[fp]])
        pipe.execute()
